"""Bringing Gazebo up for the gazebo boards (boards.gazebo): the stand-in started as a child
process as launch/sawyer_gazebo.launch starts Gazebo, and the unpause the boards retry while
no joint state comes (the launch file starts Gazebo paused, so that the arm does not fall
before the robot holds it). rospy is passed in: the boards import it when configured."""
import os
import subprocess
import sys

UNPAUSE_AFTER = 1.0                   # wall s of silence at connect before unpausing Gazebo
UNPAUSE_EVERY = 5.0                   # wall s between unpause attempts while none comes
CLOCK_FREQUENCY = 50.0                # Hz of Gazebo's /clock (launch/sawyer_gazebo.launch):
                                      # the robot's own sim-time /clock step (20 ms); the
                                      # loop ticks on joint states, not on /clock
SPAWN_Z = 0.93                        # m: the base above Gazebo's ground plane (the
                                      # pedestal's height; sawyer_simulator's -z)


def unpause(rospy, state_topic, waited, connect_timeout):
    """/gazebo/unpause_physics, if Gazebo offers it yet (logged either way: the caller
    tries again until joint states come or connect_timeout runs out)."""
    from std_srvs.srv import Empty
    what = ('gazebo backend: no joint state on %s after %.0f s (of connect_timeout %.0f s)'
            % (state_topic, waited, connect_timeout))
    try:
        rospy.wait_for_service('/gazebo/unpause_physics', 1.0)
        rospy.ServiceProxy('/gazebo/unpause_physics', Empty)()
        rospy.loginfo('%s: Gazebo unpaused; waiting for its controllers' % what)
    except (rospy.ROSException, rospy.ServiceException) as exc:
        rospy.loginfo('%s: Gazebo not up yet (%s); trying again in %g s'
                      % (what, exc, UNPAUSE_EVERY))


def start_standin(rospy, urdf, namespace, controller, model_name, real_time_factor, controllers):
    """The stand-in (intera_rt.ros.gazebo_standin) as launch/sawyer_gazebo.launch starts
    Gazebo: paused, /clock at CLOCK_FREQUENCY, the arm at SPAWN_Z (at the zero pose: the
    launch file's -J is the boot pose, which the core teleports to anyway), `controllers`
    loaded and started. Returns its Popen; it dies with this process."""
    if not rospy.has_param('/gazebo/pub_clock_frequency'):
        rospy.set_param('/gazebo/pub_clock_frequency', CLOCK_FREQUENCY)
    share = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..',
                         'share', 'gazebo', 'controllers.yaml')
    args = [sys.executable, '-m', 'intera_rt.ros.gazebo_standin',
            '--namespace', namespace, '--controller', controller,
            '--model-name', model_name, '--real-time-factor', repr(real_time_factor),
            '--paused', '-z', repr(SPAWN_Z), '--controllers-yaml', os.path.normpath(share),
            '--spawn-controllers'] + list(controllers)
    from intera_rt.boards.remote import _die_with_parent
    proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                            env=dict(os.environ, PYTHONUNBUFFERED='1'),
                            preexec_fn=_die_with_parent)
    proc.stdin.write(urdf.encode())
    proc.stdin.close()
    return proc


def stop_standin(proc):
    """Terminate the stand-in, killing it if it does not end within 5 s."""
    proc.terminate()
    try:
        proc.wait(5.0)
    except subprocess.TimeoutExpired:
        proc.kill()
