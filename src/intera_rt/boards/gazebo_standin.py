"""A stand-in for Gazebo 11 with gazebo_ros_control, for machines that cannot install it:
the embedded plant behind the topics and services the gazebo backend uses
(intera_rt.boards.gazebo), with Gazebo's semantics where the backend can tell.

    python -m intera_rt.boards.gazebo_standin [--namespace NS] [--controller NAME]
        [--model-name NAME] [--real-time-factor F] [--urdf FILE] [--paused]

(`rosrun intera_rt gazebo_standin` runs the same; the gazebo backend's option `standin`
starts it.) Without --urdf the URDF is read from stdin when it is not a terminal, else
/robot_description, else the project's.

It is a node named /gazebo, as Gazebo's is. Each 1 ms step of sim time, paced by the wall
clock at the real-time factor (a late step is not made up: the count restarts, as Gazebo
falls behind real time rather than bursting):
    1. publish <ns>/joint_states: the plant's state at the step's start, stamped with sim
       time; effort = the effort applied in the step before (gazebo_ros_control reports the
       effort it commanded, not a measurement)
    2. apply the newest <ns>/<controller>/command (Float64MultiArray over BOARD_JOINTS,
       saturated at the URDF's effort limits; a command of the wrong length is refused and
       logged, as JointGroupEffortController does; zero until the first command)
    3. step the plant 1 ms
    4. publish /clock at /gazebo/pub_clock_frequency (default 1000 Hz, as
       launch/sawyer_gazebo.launch sets it; Gazebo's own default is 100 Hz)
So the robot's loop is not in lockstep with it: a command reaches the plant at the first
step after it arrives, as in Gazebo.

Services: /gazebo/pause_physics, /gazebo/unpause_physics (std_srvs/Empty: paused, no step,
no joint state, no /clock), /gazebo/set_model_configuration (the named joints at those
positions, at rest; unknown joints ignored), /gazebo/apply_body_wrench (a body Gazebo would
have: the child link of a movable joint, named model::link; force in the world frame at the
body's centre of mass and torque, as Gazebo applies them; reference_frame '' / world only;
start_time ignored: applied at once). The plant has no brakes here: Gazebo has none.

What it does not emulate: Gazebo's physics (ODE's constraint solver, contacts, its joint
damping and friction model: the embedded plant's own apply), the spawn service, the
controller_manager's services, model states.
"""
import argparse
import os
import sys
import threading
import time

import numpy as np
import pinocchio as pin

from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.boards.pacing import WallPacer
from intera_rt.direct_writes import direct_publisher
from intera_rt.boards.gazebo import CONTROLLER, MODEL, NAMESPACE
from intera_rt.boards.gazebo_model import _shift, body_com, gazebo_body
from intera_rt.model import RobotModel
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, HEAD_NAMED_POSES, LOOP_PERIOD, NEUTRAL

CLOCK_FREQUENCY = 1000.0              # Hz of /clock unless /gazebo/pub_clock_frequency says
# The stand-in yields to the robot: when the CPU is short, Gazebo's time slows (as Gazebo's
# does under load) rather than the robot's loop falling steps behind a plant that runs on.
NICE = 5
RESYNC_AFTER = 2                      # steps late before the pacing restarts its count
                                      # (Gazebo falls behind real time, it does not burst)


class GazeboStandin:
    """The plant and its ROS side; `step()` runs one physics step (tests may call it)."""

    def __init__(self, model, namespace=NAMESPACE, controller=CONTROLLER, model_name=MODEL,
                 real_time_factor=1.0, dt=LOOP_PERIOD):
        self.plant = EmbeddedBoards(model, joint_names=BOARD_JOINTS)
        self.plant.reset_pose(np.r_[NEUTRAL, HEAD_NAMED_POSES['neutral']])
        self.plant.set_brakes(False)
        self.namespace = '/' + namespace.strip('/')
        self.controller = controller.strip('/')
        self.model_name = model_name
        self.real_time_factor = float(real_time_factor)
        self.dt = dt
        self.time = 0.0
        self.paused = False
        self.command = np.zeros(len(BOARD_JOINTS))
        self.applied = np.zeros(len(BOARD_JOINTS))
        self._limit = self.plant.effort_limit
        self._lock = threading.Lock()
        self._clock_next = 0.0
        self.steps = 0
        self.stats = {'dropped': 0}     # joint states and clocks a subscriber could not take

    # --- ROS ------------------------------------------------------------------------------
    def setup_ros(self):
        import rospy
        from gazebo_msgs.srv import ApplyBodyWrench, SetModelConfiguration
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from std_srvs.srv import Empty, EmptyResponse
        self._rospy = rospy
        self.clock_period = 1.0 / float(rospy.get_param('/gazebo/pub_clock_frequency',
                                                         CLOCK_FREQUENCY))
        self._js = JointState(name=list(BOARD_JOINTS))
        self._clock = Clock()
        self.pub_js = self._direct(self.namespace + '/joint_states', JointState)
        self.pub_clock = self._direct('/clock', Clock)
        rospy.Subscriber('%s/%s/command' % (self.namespace, self.controller), Float64MultiArray,
                         self._on_command, queue_size=1, tcp_nodelay=True)

        def pause(paused):
            def handler(_req):
                with self._lock:
                    self.paused = paused
                return EmptyResponse()
            return handler
        rospy.Service('/gazebo/pause_physics', Empty, pause(True))
        rospy.Service('/gazebo/unpause_physics', Empty, pause(False))
        rospy.Service('/gazebo/set_model_configuration', SetModelConfiguration,
                      self._on_set_configuration)
        rospy.Service('/gazebo/apply_body_wrench', ApplyBodyWrench, self._on_wrench)

    def _direct(self, topic, msg_type):
        """A publisher written from the stepping thread (no writer thread to wake: 1 kHz
        of two topics through rospy's queues cost more than the physics; Gazebo's C++
        publishers do not); a subscriber that stops reading loses messages, never stalls
        the physics."""
        def dropped(_conn):
            self.stats['dropped'] += 1
        return direct_publisher(topic, msg_type, dropped, tcp_nodelay=True)

    def _on_command(self, msg):
        data = msg.data
        if len(data) != len(BOARD_JOINTS):
            self._rospy.logerr('Dimension of command (%d) does not match number of joints '
                               '(%d)! Not executing!' % (len(data), len(BOARD_JOINTS)))
            return
        command = np.array(data, dtype=float)
        with self._lock:
            self.command = command

    def _on_set_configuration(self, req):
        from gazebo_msgs.srv import SetModelConfigurationResponse
        if req.model_name != self.model_name:
            return SetModelConfigurationResponse(
                False, 'SetModelConfiguration: model does not exist')
        if len(req.joint_names) != len(req.joint_positions):
            return SetModelConfigurationResponse(
                False, 'SetModelConfiguration: joint name and position list have different '
                'lengths')
        with self._lock:
            q = self.plant.read().position.copy()
            for name, value in zip(req.joint_names, req.joint_positions):
                if name in BOARD_JOINTS:
                    q[BOARD_JOINTS.index(name)] = value
            self.plant.reset_pose(q)
        return SetModelConfigurationResponse(True, 'SetModelConfiguration: success')

    def _on_wrench(self, req):
        from gazebo_msgs.srv import ApplyBodyWrenchResponse
        model, _, body = req.body_name.partition('::')
        try:
            if model != self.model_name or gazebo_body(self.plant.pin, body)[0] != body:
                raise KeyError(body)
        except KeyError:
            return ApplyBodyWrenchResponse(False, 'ApplyBodyWrench: body does not exist')
        if req.reference_frame not in ('', 'world', 'map', '/map'):
            return ApplyBodyWrenchResponse(False, 'the Gazebo stand-in takes wrenches in the '
                                           'world frame only (reference_frame empty)')
        duration = req.duration.to_sec()
        if duration == 0.0:
            return ApplyBodyWrenchResponse(True, '')                 # Gazebo: do nothing
        f, t, p = req.wrench.force, req.wrench.torque, req.reference_point
        force = np.array([f.x, f.y, f.z])
        torque = np.array([t.x, t.y, t.z]) + np.cross([p.x, p.y, p.z], force)
        plant = self.plant
        with self._lock:
            jid = gazebo_body(plant.pin, body)[1]
            data = plant.pin.createData()
            full = pin.neutral(plant.pin)
            full[plant._idx] = plant.read().position
            pin.framesForwardKinematics(plant.pin, data, full)
            origin = data.oMf[plant.pin.getFrameId(body, pin.FrameType.BODY)].translation
            # Gazebo applies force and torque at the body's centre of mass; the plant takes
            # them about the link's origin.
            about_origin = _shift(torque, force, origin - body_com(plant.pin, data, jid))
            plant.apply_wrench(body, np.r_[force, about_origin],
                               duration if duration > 0.0 else float('inf'))
        return ApplyBodyWrenchResponse(True, '')

    # --- the physics step -------------------------------------------------------------------
    def step(self):
        """One physics step (False while paused)."""
        with self._lock:
            if self.paused:
                return False
            plant = self.plant
            r = plant.read()
            self._publish_state(r)
            self.applied = _clip(self.command, -self._limit, self._limit)
            plant.write(self.applied)
            plant.advance(self.dt)
            self.steps += 1
            self.time = self.steps * self.dt
            if self.time >= self._clock_next - 1e-9:
                self._clock_next = self.time + self.clock_period
                self._clock.clock = self._rospy.Time.from_sec(self.time)
                self.pub_clock.publish(self._clock)
        return True

    def _publish_state(self, r):
        js = self._js
        js.header.stamp = self._rospy.Time.from_sec(self.time)
        js.position, js.velocity, js.effort = (r.position.tolist(), r.velocity.tolist(),
                                              self.applied.tolist())
        self.pub_js.publish(js)

    def run(self):
        """Step at real_time_factor × real time until ROS shuts down."""
        rospy = self._rospy
        period = self.dt / self.real_time_factor
        pacer = WallPacer(period, RESYNC_AFTER)
        while not rospy.is_shutdown():
            if not self.step():
                time.sleep(0.005)
                pacer.restart()                          # unpaused: pace from then
                continue
            pacer.wait()


def main(argv=None):
    p = argparse.ArgumentParser(prog='gazebo_standin', description=__doc__.split('\n\n')[0])
    p.add_argument('--namespace', default=NAMESPACE)
    p.add_argument('--controller', default=CONTROLLER)
    p.add_argument('--model-name', default=MODEL)
    p.add_argument('--real-time-factor', type=float, default=1.0)
    p.add_argument('--urdf', default=None)
    p.add_argument('--paused', action='store_true', help='start paused (Gazebo paused:=true)')
    import rospy
    a = p.parse_args(rospy.myargv(sys.argv if argv is None else argv)[1:])
    if not a.real_time_factor > 0.0:
        p.error('--real-time-factor must be > 0, got %r' % a.real_time_factor)
    try:
        os.nice(NICE)
    except OSError:
        pass
    rospy.init_node('gazebo')
    text = ''
    if not a.urdf:
        text = sys.stdin.read() if not sys.stdin.isatty() else ''
        text = text or rospy.get_param('/robot_description', '')
    model = RobotModel.load(a.urdf, text)
    standin = GazeboStandin(model, a.namespace, a.controller, a.model_name, a.real_time_factor)
    standin.paused = a.paused
    standin.setup_ros()
    rospy.loginfo('Gazebo stand-in: the embedded plant behind %s/joint_states and %s/%s/command, '
                  'at %g x real time', standin.namespace, standin.namespace, standin.controller,
                  standin.real_time_factor)
    try:
        standin.run()
    except (KeyboardInterrupt, rospy.ROSInterruptException):
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
