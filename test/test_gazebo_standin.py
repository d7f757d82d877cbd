"""The Gazebo stand-in as launch/sawyer_gazebo.launch starts Gazebo, through ROS (its own
master, the stand-in in its own process, this process a client): started paused, nothing
runs — no joint states, no /clock, and the controller spawner's switch_controller waits —
until /gazebo/unpause_physics; then the arm is where the spawner put it (-J), /clock comes at
/gazebo/pub_clock_frequency, efforts sent to the effort group controller move the joints,
and set_model_configuration puts them where asked, at rest. The gazebo backend waits for a
Gazebo that comes up late, unpausing it once it does. The robot on it: test_gazebo_robot."""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import rosharness
from clients import Series, stamp
from rosharness import wait_for
from intera_rt.tooling.robot_process import free_port

pytestmark = pytest.mark.ros        # its own master and stand-in, without the robot fixture

REPO = Path(__file__).resolve().parents[1]
NS = '/sawyer_gazebo'
SPAWN = {'right_j0': 0.3, 'right_j1': -1.0, 'right_j3': 1.9, 'right_j5': 0.6}
CLOCK_HZ = 50


class World:
    """The master and this process's node; `start()` starts a stand-in (paused, spawned at
    SPAWN, the spawner's controllers), `stop()` ends it."""

    def __init__(self, env, log):
        self.env, self.log, self.proc = env, log, None

    def start(self):
        args = [sys.executable, '-m', 'intera_rt.ros.gazebo_standin', '--paused',
                '-z', '0.93', '--controllers-yaml', str(REPO / 'share/gazebo/controllers.yaml'),
                '--spawn-controllers', 'joint_state_controller', 'effort_controller']
        for name, value in SPAWN.items():
            args += ['-J', name, str(value)]
        self.proc = subprocess.Popen(args, env=self.env, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self.proc

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    import os
    port = free_port()
    uri = 'http://127.0.0.1:%d' % port
    env = dict(os.environ, ROS_MASTER_URI=uri, ROS_IP='127.0.0.1', PYTHONUNBUFFERED='1',
               ROS_LOG_DIR=str(tmp_path_factory.mktemp('standin_ros_log')))
    env.pop('ROS_HOSTNAME', None)
    for key in ('ROS_MASTER_URI', 'ROS_IP', 'ROS_LOG_DIR'):
        os.environ[key] = env[key]
    log = open(tmp_path_factory.mktemp('standin') / 'standin.log', 'wb')
    procs = [subprocess.Popen(['rosmaster', '--core', '-p', str(port)], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        import rosgraph
        wait_for(lambda: rosgraph.is_master_online(uri), 20.0, 'the master')
        rosharness.ensure_node(uri)
        import rospy
        rospy.set_param('/use_sim_time', True)
        rospy.set_param('/gazebo/pub_clock_frequency', CLOCK_HZ)     # as the launch file
        world = World(env, log)
        yield world
        world.stop()
    finally:
        rosharness.shutdown_node('stand-in fixture teardown')
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


@pytest.fixture(scope='module')
def standin(world):
    return world.start()


def _call(name, srv_type, **kwargs):
    import rospy
    rospy.wait_for_service(name, 20.0)
    return rospy.ServiceProxy(name, srv_type)(**kwargs)


def test_paused_until_unpaused_then_at_the_spawn_pose_with_clock_at_its_frequency(standin):
    from rosgraph_msgs.msg import Clock, Log
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Empty
    import rospy
    logs = []
    sub_log = rospy.Subscriber('/rosout', Log, lambda m: logs.append(m.msg), queue_size=100)
    joints = Series(NS + '/joint_states', JointState)
    clocks = []
    clock = rospy.Subscriber('/clock', Clock, lambda m: clocks.append(m.clock.to_sec()),
                             queue_size=1000)
    try:
        rospy.wait_for_service('/gazebo/unpause_physics', 20.0)
        wait_for(lambda: any("Loaded 'effort_controller'" in line for line in logs), 20.0,
                 'the spawner loading the controllers')
        time.sleep(1.0)                 # (a second of nothing: what is asserted is absence)
        assert not joints.between(-1.0) and not clocks
        assert not any('Controller Spawner' in line for line in logs), logs
        _call('/gazebo/unpause_physics', Empty)
        wait_for(lambda: any('Controller Spawner: started joint_state_controller, '
                             'effort_controller' in line for line in logs), 10.0,
                 "the spawner's switch done")
        joints.last()                   # (the first joint state)
        first = joints.between(-1.0)[0]
        expected = np.zeros(8)
        for name, value in SPAWN.items():
            expected[first.name.index(name)] = value
        np.testing.assert_allclose(first.position, expected, atol=1e-3)
        assert first.name[:8] == ['right_j%d' % i for i in range(7)] + ['head_pan']
        # /clock at its frequency: ~50 messages a second of sim time, not 1000.
        wait_for(lambda: clocks and clocks[-1] >= clocks[0] + 1.0, 20.0, 'a second of sim time')
        n = len([t for t in clocks if clocks[0] < t <= clocks[0] + 1.0])
        assert abs(n - CLOCK_HZ) <= 1, (n, clocks[:5])
        # Joint states stamped with sim time, every step (publish_rate 1000).
        t1 = stamp(joints.last())
        joints.wait_until(t1 + 0.2)
        assert len(joints.between(t1, t1 + 0.2)) >= 150
    finally:
        sub_log.unregister()
        joints.unregister()
        clock.unregister()


def test_efforts_move_the_joints_and_set_model_configuration_places_them_at_rest(standin):
    from gazebo_msgs.srv import SetModelConfiguration
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    import rospy
    from rosgraph_msgs.msg import Log
    joints = Series(NS + '/joint_states', JointState)
    pub = rospy.Publisher(NS + '/effort_controller/command', Float64MultiArray, queue_size=1)
    logs = []
    sub_log = rospy.Subscriber('/rosout', Log, lambda m: logs.append(m.msg), queue_size=100)
    try:
        q = [0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161, 0.0]
        reply = _call('/gazebo/set_model_configuration', SetModelConfiguration,
                      model_name='sawyer', urdf_param_name='',
                      joint_names=['right_j%d' % i for i in range(7)] + ['head_pan'],
                      joint_positions=q)
        assert reply.success, reply.status_message
        t0 = stamp(joints.last())
        first = joints.wait(lambda m: stamp(m) > t0 + 0.002 and abs(m.position[5] - 0.57) < 0.01,
                            10.0, 'the arm at the configuration')
        assert np.abs(np.array(first.position[:7]) - q[:7]).max() < 0.02
        # A torque on head_pan (no gravity about its axis) turns it the way it pushes, and
        # the effort reported is the one applied.
        start = first.position[7]
        wait_for(lambda: pub.get_num_connections() > 0, 10.0, 'the controller subscribed')
        command = [0.0] * 7 + [2.0]
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            pub.publish(Float64MultiArray(data=command))
            m = joints.last()
            if m.effort[7] == 2.0 and m.position[7] > start + 0.05:
                break
            time.sleep(0.01)
        else:
            pytest.fail('head_pan did not turn under 2 N·m: %s' % (joints.last().position,))
        refused = Float64MultiArray(data=[1.0] * 3)
        pub.publish(refused)            # (the wrong length: refused and logged, nothing applied)
        wait_for(lambda: any('Dimension of command (3)' in line for line in logs), 10.0,
                 'the stand-in refusing the 3-element command')
        said = stamp(joints.last())
        assert joints.wait(lambda m: stamp(m) > said, 5.0, 'a joint state after the refusal').effort[7] == 2.0
    finally:
        pub.publish(Float64MultiArray(data=[0.0] * 8))
        pub.unregister()
        joints.unregister()
        sub_log.unregister()


def test_the_backend_waits_for_a_slow_gazebo_and_unpauses_it_when_it_comes(world, standin):
    """A gzserver that offers nothing for seconds: the gazebo backend keeps waiting (its
    connect_timeout), tries unpause_physics every few seconds saying so, and connects once
    Gazebo is up — paused, its controllers waiting for the world to run."""
    import threading
    import rospy
    from rosgraph_msgs.msg import Log
    from intera_rt.boards import make_boards
    from intera_rt.model import RobotModel
    world.stop()
    wait_for(lambda: not rospy.get_published_topics(NS), 20.0, 'the stand-in gone')
    logs = []
    sub_log = rospy.Subscriber('/rosout', Log, lambda m: logs.append(m.msg), queue_size=100)
    boards = make_boards('gazebo', RobotModel.from_file(), {'connect_timeout': 60.0})
    done = []
    thread = threading.Thread(target=lambda: done.append(boards.configure()), daemon=True)
    try:
        thread.start()
        wait_for(lambda: any('Gazebo not up yet' in line for line in logs), 20.0,
                 'a try while Gazebo is not up')
        wait_for(lambda: sum('Gazebo not up yet' in line for line in logs) >= 2, 20.0,
                 'a second try')
        assert thread.is_alive()                      # still waiting, within connect_timeout
        world.start()
        thread.join(40.0)
        assert done, 'the backend did not connect to the late Gazebo'
        # (/rosout reaches this subscriber after configure() returns: wait for the line)
        wait_for(lambda: any('Gazebo unpaused' in line for line in logs), 5.0,
                 'the unpause logged')
        q = boards.read().position
        for name, value in SPAWN.items():
            assert abs(q[boards.joint_names.index(name)] - value) < 0.05, (name, q)
    finally:
        sub_log.unregister()
        boards.shutdown()
