"""A stand-in for gzserver with gazebo_ros and gazebo_ros_control (Gazebo 11, ROS Noetic), for
machines that cannot install Gazebo: the arm as Gazebo's ODE simulates our URDF, in MuJoCo
(boards.gazebo_physics: no armature, the URDF's damping and friction as ODE applies them,
stops at the limits, the ground at world z = 0), behind the ROS interface the gazebo backend
and launch/sawyer_gazebo.launch use, over TCPROS.

    python -m intera_rt.ros.gazebo_standin [--namespace NS] [--controller NAME]
        [--model-name NAME] [--real-time-factor F] [--urdf FILE] [--paused]
        [-x X -y Y -z Z] [-J JOINT RAD ...] [--controllers-yaml FILE]
        [--spawn-controllers NAME ...] [--gripper]

(`rosrun intera_rt gazebo_standin`; the gazebo backend's option `standin` starts it.) Without
--urdf the URDF is read from stdin when it is not a terminal, else /robot_description, else
the project's; --gripper grafts the electric gripper (urdf/fragments/electric_gripper.urdf)
onto it, as sawyer_simulator's electric_gripper arg spawns it: its 0.59 kg on the arm, its
finger joints (prismatic) in the physics and in joint_states, pushed by a finger controller
(effort_controllers/JointGroupPositionController: a PID per finger, as ros_control's; zero
effort until it runs). Node /gazebo, as gzserver's is.

Each step of 1 ms of sim time, paced by the wall clock at the real-time factor (a late step
is not made up: Gazebo falls behind real time rather than bursting), under the world's lock:
the controller manager's update (a pending switch_controller done; the
joint_state_controller publishes <ns>/joint_states at its publish_rate, stamped with sim
time, effort = the effort applied the step before, as gazebo_ros_control reports it; the
effort controller's newest command), the physics step, /clock at /gazebo/pub_clock_frequency
(every step when unset or ≤ 0, as gazebo_ros does). Paused (--paused, /gazebo/pause_physics):
no step, no joint state, no /clock, and switch_controller waits.

Services: Gazebo's world API as the robot's own plants serve it (ros.gazebo_world.GazeboWorld
over this physics: spawn_{sdf,urdf}_model as MuJoCo bodies, delete_model, get/set_model_state,
get_model_properties, get_world_properties, get_link_state, apply_body_wrench,
clear_body_wrenches, {pause,unpause}_physics, reset_world, reset_simulation; model_states and
link_states every 10 ms of sim time), /gazebo/set_model_configuration (the world paused
while the joints are set, at rest), and the controller
manager's <ns>/controller_manager/{load,unload,switch}_controller for the controller types
of share/gazebo/controllers.yaml (JointStateController, JointGroupEffortController,
JointGroupPositionController over the finger joints), their
parameters read from <ns>/<name>/ as ros_control does. --spawn-controllers loads and starts
them through those services as controller_manager's spawner does. Gazebo's effort starts at
zero: before the effort controller runs the arm falls. docs/backends.md lists what it does
not emulate.
"""
import argparse
import os
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np

from intera_rt.boards.gazebo import CONTROLLER, MODEL, NAMESPACE
from intera_rt.boards.gazebo_physics import GazeboPhysics
from intera_rt.boards.pacing import WallPacer
from intera_rt.direct_writes import direct_publisher
from intera_rt.model import RobotModel
from intera_rt.model.urdf_fragments import with_electric_gripper
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, LOOP_PERIOD
from intera_rt.world import Pose

# The stand-in yields to the robot: when the CPU is short, Gazebo's time slows (as Gazebo's
# does under load) rather than the robot's loop falling steps behind a plant that runs on.
NICE = 5
RESYNC_AFTER = 2                      # steps late before the pacing restarts its count
JOINT_STATE_CONTROLLER = 'joint_state_controller/JointStateController'
EFFORT_GROUP_CONTROLLER = 'effort_controllers/JointGroupEffortController'
POSITION_GROUP_CONTROLLER = 'effort_controllers/JointGroupPositionController'
WORLD_PERIOD = 0.01                   # s of sim time between model_states / link_states


class GazeboStandin:
    """The world and its ROS side; `step()` runs one physics step (tests may call it)."""

    def __init__(self, model, namespace=NAMESPACE, controller=CONTROLLER, model_name=MODEL,
                 real_time_factor=1.0, spawn=(0.0, 0.0, 0.0), joints=None, paused=False,
                 dt=LOOP_PERIOD):
        self.physics = GazeboPhysics(model, spawn, joints, dt)
        self.namespace = '/' + namespace.strip('/')
        self.controller = controller.strip('/')
        self.model_name = model_name
        self.real_time_factor = float(real_time_factor)
        self.dt = dt
        self._step_ns = int(round(dt * 1e9))
        self.paused = bool(paused)
        self.command = np.zeros(len(BOARD_JOINTS))      # the hardware interface's effort
        self.finger_command = np.zeros(len(self.physics.finger_names))   # the fingers' effort
        # the effort applied the step before (the board joints', then the fingers')
        self.reported = np.zeros(len(BOARD_JOINTS) + len(self.physics.finger_names))
        self.controllers = {}           # name → {'type', 'running', 'rate', 'next'}
        self._switches = []             # (start, stop, [done]) for the next update, in order
        self._lock = threading.Condition()
        self._clock_next = 0.0
        self.clock_period = 0.0
        self.steps = 0
        self.stats = {'dropped': 0}     # joint states and clocks a subscriber could not take
        self.world = None               # ros.gazebo_world.GazeboWorld, by setup_ros
        self._world_next = 0.0
        self._world_due = False
        self._boot = self.physics.position

    # --- what GazeboWorld reads of its host ---------------------------------------------------
    @property
    def state(self):
        """The robot's joints (BOARD_JOINTS order) and the sim time, now."""
        return SimpleNamespace(q=self.physics.position, t=self.physics.time)

    def stamp(self):
        """The sim time as Gazebo stamps it: whole nanoseconds, 1 ms a step exactly (a float
        sum of steps, rounded, would be 1 ns off now and then)."""
        return self._steps_stamp(self.physics.steps)

    def stamp_at(self, t):
        """A sim time (s, this host's state.t) as Gazebo stamps it: its whole step."""
        return self._steps_stamp(round(t * 1e9 / self._step_ns))

    def _steps_stamp(self, steps):
        ns = steps * self._step_ns
        return self._rospy.Time(ns // 1000000000, ns % 1000000000)

    # --- ROS ------------------------------------------------------------------------------
    def setup_ros(self):
        import rospy
        from controller_manager_msgs.srv import (LoadController, SwitchController,
                                                 UnloadController)
        from gazebo_msgs.srv import SetModelConfiguration
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        # Gazebo's world API: the robot's own world adapter (ros layer), this physics behind it.
        from intera_rt.ros.gazebo_world import GazeboWorld
        self._rospy = rospy
        frequency = float(rospy.get_param('/gazebo/pub_clock_frequency', 0.0))
        self.clock_period = 1.0 / frequency if frequency > 0.0 else 0.0
        self._js = JointState(name=list(BOARD_JOINTS) + list(self.physics.finger_names))
        self._clock = Clock()
        self.pub_js = self._direct(self.namespace + '/joint_states', JointState)
        self.pub_clock = self._direct('/clock', Clock)
        rospy.Subscriber('%s/%s/command' % (self.namespace, self.controller), Float64MultiArray,
                         self._on_command, queue_size=1, tcp_nodelay=True)
        rospy.Service('/gazebo/set_model_configuration', SetModelConfiguration,
                      self._on_set_configuration)
        arm = [BOARD_JOINTS.index(j) for j in ARM_JOINTS]
        self.world = GazeboWorld(self._world_call, self.physics.urdf_xml, self,
                                 self._boot[arm].tolist(), self.paused,
                                 robot_pose=Pose(self.physics.spawn))
        threading.Thread(target=self._publish_world, daemon=True, name='model_states').start()
        cm = self.namespace + '/controller_manager/'
        rospy.Service(cm + 'load_controller', LoadController, self._on_load)
        rospy.Service(cm + 'unload_controller', UnloadController, self._on_unload)
        rospy.Service(cm + 'switch_controller', SwitchController, self._on_switch)

    def _direct(self, topic, msg_type):
        """A publisher written from the stepping thread (Gazebo's C++ publishers queue no
        thread wake-ups either); a subscriber that stops reading loses messages, never
        stalls the physics."""
        def dropped(_conn):
            self.stats['dropped'] += 1
        return direct_publisher(topic, msg_type, dropped, tcp_nodelay=True)

    # --- the controller manager -------------------------------------------------------------
    def _on_load(self, req):
        from controller_manager_msgs.srv import LoadControllerResponse
        rospy = self._rospy
        name = req.name
        params = rospy.get_param('%s/%s' % (self.namespace, name), None)
        kind = params.get('type') if isinstance(params, dict) else None
        if name in self.controllers:
            rospy.logerr('A controller named \'%s\' was already loaded inside the controller '
                         'manager' % name)
            return LoadControllerResponse(False)
        if kind is None:
            rospy.logerr('Could not load controller \'%s\' because the type was not specified. '
                         'Did you load the controller configuration on the parameter server '
                         '(namespace: \'%s/%s\')?' % (name, self.namespace, name))
            return LoadControllerResponse(False)
        entry = {'type': kind, 'running': False, 'rate': 0.0, 'next': 0.0}
        if kind == JOINT_STATE_CONTROLLER:
            rate = params.get('publish_rate')
            if not isinstance(rate, (int, float)) or rate <= 0:
                rospy.logerr("Parameter 'publish_rate' not set")
                return LoadControllerResponse(False)
            entry['rate'] = float(rate)
        elif kind == POSITION_GROUP_CONTROLLER:
            error = self._position_group(name, params, entry)
            if error:
                rospy.logerr('Failed to initialize the controller %s: %s' % (name, error))
                return LoadControllerResponse(False)
        elif kind == EFFORT_GROUP_CONTROLLER:
            if name != self.controller or list(params.get('joints') or []) != list(BOARD_JOINTS):
                rospy.logerr('Failed to initialize the controller: the stand-in takes an effort '
                             'group controller named %s over %s' % (self.controller,
                                                                    ', '.join(BOARD_JOINTS)))
                return LoadControllerResponse(False)
        else:
            rospy.logerr('Could not load controller \'%s\' because controller type \'%s\' does '
                         'not exist.' % (name, kind))
            return LoadControllerResponse(False)
        with self._lock:
            self.controllers[name] = entry
        rospy.loginfo('Loaded \'%s\'' % name)
        return LoadControllerResponse(True)

    def _position_group(self, name, params, entry):
        """effort_controllers/JointGroupPositionController's init: its joints (finger joints
        of this model), a PID each from <name>/<joint>/pid, its command topic. Returns an
        error text, or ''."""
        from std_msgs.msg import Float64MultiArray
        joints = list(params.get('joints') or [])
        fingers = self.physics.finger_names
        if not joints or any(j not in fingers for j in joints):
            return ('joints %s: the stand-in drives the finger joints (%s) with it'
                    % (joints, ', '.join(fingers) or 'none: the model has no gripper'))
        gains = []
        for joint in joints:
            pid = (params.get(joint) or {}).get('pid')
            if not isinstance(pid, dict) or not isinstance(pid.get('p'), (int, float)):
                return 'No p gain specified for pid. Namespace: %s/%s/%s/pid' % (
                    self.namespace, name, joint)
            gains.append(Pid(pid))
        entry.update(joints=[fingers.index(j) for j in joints], pids=gains,
                     command=np.zeros(len(joints)))
        entry['sub'] = self._rospy.Subscriber(
            '%s/%s/command' % (self.namespace, name), Float64MultiArray,
            lambda msg: self._on_position_command(name, msg), queue_size=1, tcp_nodelay=True)
        return ''

    def _on_position_command(self, name, msg):
        with self._lock:
            entry = self.controllers.get(name)
            if entry is None:
                return
            if len(msg.data) != len(entry['joints']):
                self._rospy.logerr('Dimension of command (%d) does not match number of joints '
                                   '(%d)! Not executing!' % (len(msg.data), len(entry['joints'])))
                return
            entry['command'] = np.array(msg.data, dtype=float)

    def _on_unload(self, req):
        from controller_manager_msgs.srv import UnloadControllerResponse
        with self._lock:
            entry = self.controllers.get(req.name)
            if entry is None or entry['running']:
                return UnloadControllerResponse(False)
            del self.controllers[req.name]
        if 'sub' in entry:
            entry['sub'].unregister()
        return UnloadControllerResponse(True)

    def _on_switch(self, req):
        """Done by the next update of the controller manager's loop: it waits (forever, as
        ros_control's does) while the world is paused."""
        from controller_manager_msgs.srv import SwitchControllerResponse
        with self._lock:
            names = set(req.start_controllers) | set(req.stop_controllers)
            missing = [n for n in names if n and n not in self.controllers]
            if missing and req.strictness == req.STRICT:
                self._rospy.logerr('Could not switch controllers: %s not loaded'
                                   % ', '.join(missing))
                return SwitchControllerResponse(False)
            request = ([n for n in req.start_controllers if n in self.controllers],
                       [n for n in req.stop_controllers if n in self.controllers], [])
            self._switches.append(request)
            while not request[2] and not self._rospy.is_shutdown():
                self._lock.wait(0.1)
        return SwitchControllerResponse(bool(request[2]))

    def _update_controllers(self):
        """The controller manager's update, at the start of a step (under the lock)."""
        for start, stop, done in self._switches:
            for name in stop:
                self.controllers[name]['running'] = False
            for name in start:
                entry = self.controllers[name]
                entry['running'], entry['next'] = True, self.physics.time
                if entry['type'] == EFFORT_GROUP_CONTROLLER:
                    self.command = np.zeros(len(BOARD_JOINTS))   # its starting(): zero
                elif entry['type'] == POSITION_GROUP_CONTROLLER:
                    # its starting(): hold where the joints are, the PIDs reset
                    entry['command'] = self.physics.finger_position[entry['joints']]
                    for pid in entry['pids']:
                        pid.reset()
            done.append(True)
        if self._switches:
            self._switches = []
            self._lock.notify_all()
        self._update_fingers()
        for entry in self.controllers.values():
            if entry['running'] and entry['type'] == JOINT_STATE_CONTROLLER \
                    and self.physics.time >= entry['next'] - 1e-9:
                entry['next'] += 1.0 / entry['rate']
                self._publish_state()

    def _update_fingers(self):
        """The running position controllers' update: each joint's command clamped to its
        limits, a PID on the error, the effort to the joint (its saturation is the
        physics')."""
        effort = np.zeros(len(self.physics.finger_names))
        q = self.physics.finger_position
        lower, upper = self.physics.finger_limits[:, 0], self.physics.finger_limits[:, 1]
        for entry in self.controllers.values():
            if entry['running'] and entry['type'] == POSITION_GROUP_CONTROLLER:
                idx = entry['joints']
                target = np.clip(entry['command'], lower[idx], upper[idx])
                for k, i in enumerate(idx):
                    effort[i] = entry['pids'][k].command(target[k] - q[i], self.dt)
        self.finger_command = effort

    def _effort_running(self):
        entry = self.controllers.get(self.controller)
        return entry is not None and entry['running']

    def _on_command(self, msg):
        data = msg.data
        if len(data) != len(BOARD_JOINTS):
            self._rospy.logerr('Dimension of command (%d) does not match number of joints '
                               '(%d)! Not executing!' % (len(data), len(BOARD_JOINTS)))
            return
        command = np.array(data, dtype=float)
        with self._lock:
            if self._effort_running():
                self.command = command

    # --- gazebo_ros's services ----------------------------------------------------------------
    def _on_set_configuration(self, req):
        from gazebo_msgs.srv import SetModelConfigurationResponse
        if req.model_name != self.model_name:
            return SetModelConfigurationResponse(
                False, 'SetModelConfiguration: model does not exist')
        if len(req.joint_names) != len(req.joint_positions):
            return SetModelConfigurationResponse(
                False, 'SetModelConfiguration: joint name and position list have different '
                'lengths')
        with self._lock:                # the world paused while the joints are set
            q = self.physics.position
            for name, value in zip(req.joint_names, req.joint_positions):
                if name in BOARD_JOINTS:
                    q[BOARD_JOINTS.index(name)] = value
            self.physics.set_positions(q)
        return SetModelConfigurationResponse(True, 'SetModelConfiguration: success')

    # --- the world API's commands (what the robot's core does with them, on this physics) -----
    def _world_call(self, c):
        """A sim command of ros.gazebo_world → (success, message), applied under the world's
        lock between two steps; the bodies' states go to the world API before the answer."""
        from intera_rt.control import commands as cmds
        p = self.physics
        apply = {
            cmds.SimSpawnModel: lambda: p.spawn_model(c.model, c.pose),
            cmds.SimDeleteModel: lambda: p.delete_model(c.name),
            cmds.SimSetModelState: lambda: p.set_model_state(c.name, c.pose, tuple(c.twist)),
            cmds.SimBodyWrench: lambda: p.apply_body_wrench(c.model, c.body, c.force, c.torque,
                                                            c.point, c.duration),
            cmds.SimClearBodyWrenches: lambda: p.clear_body_wrenches(c.model, c.body),
            cmds.SimWrench: lambda: p.apply_wrench(c.link, c.wrench[:3], c.wrench[3:], c.duration),
            cmds.SimClearWrenches: lambda: p.clear_wrenches(c.link),
            cmds.SimJointPositions: lambda: self._set_arm(c.names or ARM_JOINTS, c.positions),
            cmds.SimPause: lambda: self._pause(c.paused),
        }.get(type(c))
        if apply is None:
            return False, 'the Gazebo stand-in has no %s' % type(c).__name__
        with self._lock:
            try:
                apply()
            except (KeyError, ValueError) as exc:     # as the core answers (realtime.inputs)
                return False, exc.args[0] if exc.args else str(exc)
            bodies, now = p.body_states(), p.time
        self.world.on_world(SimpleNamespace(time=now, bodies=bodies, gripper=None))
        return True, 'done'

    def _set_arm(self, names, positions):
        q = self.physics.position
        for name, value in zip(names, positions):
            q[BOARD_JOINTS.index(name)] = value
        self.physics.set_positions(q)

    def _pause(self, paused):
        self.paused = bool(paused)
        self._lock.notify_all()

    def _publish_world(self):
        """/gazebo/model_states and link_states every WORLD_PERIOD of sim time (gazebo_ros:
        every world update), built off the stepping thread."""
        rospy = self._rospy
        while not rospy.is_shutdown():
            with self._lock:
                while not self._world_due and not rospy.is_shutdown():
                    self._lock.wait(0.1)
                self._world_due = False
                bodies, now = self.physics.body_states(), self.physics.time
            self.world.on_world(SimpleNamespace(time=now, bodies=bodies, gripper=None))
            self.world.publish()

    # --- the physics step -------------------------------------------------------------------
    def step(self):
        """One world update (False while paused)."""
        with self._lock:
            if self.paused:
                return False
            self._update_controllers()
            self.physics.step(self.command, self.finger_command)
            self.reported = np.concatenate((self.physics.applied, self.physics.finger_applied))
            self.steps += 1
            t = self.physics.time
            if t >= self._clock_next - 1e-9:
                self._clock_next = t + self.clock_period
                self._clock.clock = self.stamp()
                self.pub_clock.publish(self._clock)
            if t >= self._world_next - 1e-9 and self.world is not None:
                self._world_next = t + WORLD_PERIOD
                self._world_due = True
                self._lock.notify_all()
        return True

    def _publish_state(self):
        js, physics = self._js, self.physics
        js.header.stamp = self.stamp()
        js.position = physics.position.tolist() + physics.finger_position.tolist()
        js.velocity = physics.velocity.tolist() + physics.finger_velocity.tolist()
        js.effort = self.reported.tolist()
        self.pub_js.publish(js)

    def run(self):
        """Step at real_time_factor × real time until ROS shuts down."""
        rospy = self._rospy
        pacer = WallPacer(self.dt / self.real_time_factor, RESYNC_AFTER)
        while not rospy.is_shutdown():
            if not self.step():
                time.sleep(0.005)
                pacer.restart()                          # unpaused: pace from then
                continue
            pacer.wait()


class Pid:
    """control_toolbox's Pid as ros_control's position controllers use it: computeCommand(
    error, dt) = p·e + i·∫e (clamped to i_clamp) + d·(e − e_last)/dt."""

    def __init__(self, gains):
        self.p, self.i, self.d = (float(gains.get(k, 0.0)) for k in ('p', 'i', 'd'))
        clamp = abs(float(gains.get('i_clamp', 0.0)))
        self.i_min = float(gains.get('i_clamp_min', -clamp))
        self.i_max = float(gains.get('i_clamp_max', clamp))
        self.reset()

    def reset(self):
        self.integral, self.last = 0.0, 0.0

    def command(self, error, dt):
        self.integral = min(max(self.integral + self.i * error * dt, self.i_min), self.i_max)
        derivative = (error - self.last) / dt
        self.last = error
        return self.p * error + self.integral + self.d * derivative


def spawn_controllers(namespace, names):
    """What controller_manager's spawner does: load each controller, then start them all in
    one STRICT switch (which waits while the world is paused). Through ROS services."""
    import rospy
    from controller_manager_msgs.srv import LoadController, SwitchController
    cm = '/' + namespace.strip('/') + '/controller_manager/'
    rospy.wait_for_service(cm + 'load_controller')
    load = rospy.ServiceProxy(cm + 'load_controller', LoadController)
    for name in names:
        if not load(name).ok:
            rospy.logerr('Failed to load %s' % name)
            return False
    switch = rospy.ServiceProxy(cm + 'switch_controller', SwitchController)
    ok = switch(start_controllers=list(names), stop_controllers=[], strictness=2,
                start_asap=False, timeout=0.0).ok
    rospy.loginfo('Controller Spawner: %s %s' % ('started' if ok else 'failed to start',
                                                 ', '.join(names)))
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(prog='gazebo_standin', description=__doc__.split('\n\n')[0])
    p.add_argument('--namespace', default=NAMESPACE)
    p.add_argument('--controller', default=CONTROLLER)
    p.add_argument('--model-name', default=MODEL)
    p.add_argument('--real-time-factor', type=float, default=1.0)
    p.add_argument('--urdf', default=None)
    p.add_argument('--paused', action='store_true', help='start paused (Gazebo paused:=true)')
    for axis in 'xyz':
        p.add_argument('-' + axis, type=float, default=0.0,
                       help='spawn position %s (m, spawn_model -%s)' % (axis, axis))
    p.add_argument('-J', nargs=2, action='append', default=[], metavar=('JOINT', 'RAD'),
                   help='a joint of the spawn pose (spawn_model -J)')
    p.add_argument('--controllers-yaml', default=None,
                   help="load this YAML into the namespace (the launch file's rosparam load)")
    p.add_argument('--spawn-controllers', nargs='*', default=[],
                   help="load and start these controllers (controller_manager's spawner)")
    p.add_argument('--gripper', action='store_true',
                   help='the arm carries the electric gripper (its fingers driven by a '
                   'finger controller)')
    import rospy
    a = p.parse_args(rospy.myargv(sys.argv if argv is None else argv)[1:])
    if not a.real_time_factor > 0.0:
        p.error('--real-time-factor must be > 0, got %r' % a.real_time_factor)
    joints = {}
    for name, value in a.J:
        if name not in BOARD_JOINTS:
            p.error('-J %s: no such joint (one of %s)' % (name, ', '.join(BOARD_JOINTS)))
        try:
            joints[name] = float(value)
        except ValueError:
            p.error('-J %s %s: not a number' % (name, value))
    try:
        os.nice(NICE)
    except OSError:
        pass
    rospy.init_node('gazebo')
    if a.controllers_yaml:
        import yaml
        with open(a.controllers_yaml) as f:
            for key, value in yaml.safe_load(f).items():
                rospy.set_param('%s/%s' % (a.namespace.rstrip('/'), key), value)
    text = ''
    if not a.urdf:
        text = sys.stdin.read() if not sys.stdin.isatty() else ''
        text = text or rospy.get_param('/robot_description', '')
    model = RobotModel.load(a.urdf, text)
    if a.gripper:
        model = with_electric_gripper(model)
    standin = GazeboStandin(model, a.namespace, a.controller, a.model_name, a.real_time_factor,
                            (a.x, a.y, a.z), joints, a.paused)
    standin.setup_ros()
    rospy.loginfo('Gazebo stand-in: MuJoCo as Gazebo sees the URDF, behind %s/joint_states and '
                  '%s/%s/command, at %g x real time%s', standin.namespace, standin.namespace,
                  standin.controller, standin.real_time_factor, ', paused' if a.paused else '')
    if a.spawn_controllers:
        threading.Thread(target=spawn_controllers, args=(a.namespace, a.spawn_controllers),
                         daemon=True, name='spawner').start()
    try:
        standin.run()
    except (KeyboardInterrupt, rospy.ROSInterruptException):
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
