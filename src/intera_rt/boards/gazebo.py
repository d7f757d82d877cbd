"""Gazebo joint boards (`--backend gazebo`): the arm simulated by Gazebo 11 through
gazebo_ros_control (ROS Noetic), over its standard topics and services: <namespace>/joint_states
(a JointStateController at 1000 Hz, stamped with Gazebo's time), <namespace>/<controller>/command
(one JointGroupEffortController over BOARD_JOINTS: a cycle's efforts in one message, applied
whole in one physics step), /clock, /gazebo/set_model_configuration (teleport),
/gazebo/apply_body_wrench and /gazebo/{spawn_sdf,delete}_model (obstacles: static models).

Gazebo owns the clock: the loop ticks once per joint state, on the newest one (first on a
state period's first state when a newer one overtook it: the state topics go out on it,
every STATE_PERIOD of Gazebo time), and its time is the state's stamp. Gazebo's physics is
not in lockstep with the loop: a command reaches the plant a step or more after the state it
answers. Gazebo's joints have no drive armature (plant_armature 0: the controllers and the
observer use the plant's inertia) and no brakes: while the boards' are engaged, and whenever
the loop has not commanded for WATCHDOG of Gazebo time, the arm is held by a PD on its
inertia plus gravity (gazebo_model.BrakeHold). The effort reported is the one applied: the
URDF's damping and friction, which Gazebo applies on its own, are taken off it. No joint
state for `stall_timeout` wall seconds faults the boards.

This module talks ROS (rospy and message packages, imported when the boards are configured;
never intera_rt.ros); it runs in the realtime core's process as the node `realtime_boards`.
Option `standin` starts intera_rt.ros.gazebo_standin (MuJoCo as Gazebo sees the URDF,
behind the same topics and services) as a child process (boards.gazebo_launch). Design
notes: docs/backends.md.
"""
import math
import struct
import threading
import time

import numpy as np
import pinocchio as pin

from intera_rt.boards.base import (BackendOption, BoardsError, BoardsReading, JointBoards,
                                   check_obstacle, state_slot)
from intera_rt.boards import gazebo_launch
from intera_rt.boards.embedded_contact import ObstacleContacts
from intera_rt.boards.gazebo_fingers import CONTROLLER as FINGER_CONTROLLER, GazeboFingers
from intera_rt.boards.gazebo_launch import SPAWN_Z, UNPAUSE_AFTER, UNPAUSE_EVERY  # noqa: F401 (SPAWN_Z re-exported)
from intera_rt.boards.gazebo_model import BrakeHold, _shift, body_com, gazebo_body  # noqa: F401 (re-exported)
from intera_rt.direct_writes import direct_publisher
from intera_rt.model.urdf_fragments import with_electric_gripper
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS

NAMESPACE = '/sawyer_gazebo'
CONTROLLER = 'effort_controller'
MODEL = 'sawyer'
STALL_TIMEOUT = 0.5                   # wall s without a joint state before the boards fault
CONNECT_TIMEOUT = 180.0               # wall s for Gazebo's first joint state: a first
                                      # gzserver start (model database, plugins) is slow;
                                      # the adapter waits this long more for the core
SERVICE_TIMEOUT = 5.0                 # wall s a Gazebo service may take
WATCHDOG = 0.02                       # s of Gazebo time without a command from the loop
                                      # before the boards hold the arm themselves
STANDIN_CONTROLLERS = ('joint_state_controller', CONTROLLER)
TELEPORT_MATCH = 0.01                 # rad: a joint state this near a teleport's pose shows it
TELEPORT_WINDOW = 0.05                # s of Gazebo time a teleport's states may take to come
STICK_SPEED = 0.01                    # rad/s: below it a joint's dry friction is taken as
                                      # growing with speed (at rest: unknown, taken as 0)
CLOCK_RAN_ON = 0.1                    # s of Gazebo time past the last joint state: its clock
                                      # runs without them
NODE_NAME = 'realtime_boards'


class _Efforts:
    """The effort command (std_msgs/Float64MultiArray: no layout dims, data_offset 0, the
    efforts) in its wire form: packing it directly costs a fraction of building and
    serializing the message object, once per tick."""
    __slots__ = ('data', '_pack')
    _type = 'std_msgs/Float64MultiArray'
    _md5sum = '4b7d974086d4060e7db4613a7e6c3ba4'
    _has_header = False

    def __init__(self, n):
        self.data = b''
        self._pack = struct.Struct('<III%dd' % n).pack

    def set(self, torque):
        self.data = self._pack(0, 0, len(torque), *torque)
        return self

    def serialize(self, buff):
        buff.write(self.data)


class GazeboBoards(ObstacleContacts, JointBoards):
    name = 'gazebo'
    simulated = True
    owns_clock = True
    sim_clock = True
    # Obstacles are static models spawned into Gazebo's world: its physics stops the arm on
    # them. Their contacts (sim truth) are where the arm's collision shapes, Gazebo's too,
    # meet the obstacles' at the joint state's pose (forces unknown: zero).
    capabilities = frozenset({'teleport', 'wrench', 'obstacles', 'contacts', 'fault_injection'})
    # A URDF has no drive armature and Gazebo adds none: the controllers, the brakes' PD and
    # the momentum observer must not count on the robot's.
    plant_armature = 0.0
    plant_stop_margin = 0.0             # ODE's joint stops are at the URDF limits
    plant_latency = 1                   # not in lockstep: a command acts a step late or more
    OPTIONS = {
        'namespace': BackendOption(str, NAMESPACE, "gazebo_ros_control's robotNamespace: "
                                   'joint_states and the controller live under it'),
        'controller': BackendOption(str, CONTROLLER, 'the JointGroupEffortController '
                                    '(its command topic: <namespace>/<controller>/command)'),
        'model_name': BackendOption(str, MODEL, "the arm's model name in Gazebo (its "
                                    'services)'),
        'stall_timeout': BackendOption(float, STALL_TIMEOUT, 'wall s without a joint state '
                                       'before the boards fault'),
        'connect_timeout': BackendOption(float, CONNECT_TIMEOUT, "wall s to wait for Gazebo's "
                                         'first joint state'),
        'standin': BackendOption(bool, False, 'start the Gazebo stand-in (MuJoCo as Gazebo '
                                 'sees the URDF, behind the same topics and services) instead '
                                 'of talking to a Gazebo already running'),
        'real_time_factor': BackendOption(float, 1.0, "the stand-in's real-time factor"),
        'gripper': BackendOption(bool, False, "Gazebo's model carries the electric gripper "
                                 '(scripts/sawyer --gripper sets it; the stand-in is given the '
                                 'URDF with it): Gazebo weighs what its model carries, set_tool '
                                 'cannot change it'),
        'unpause': BackendOption(bool, True, 'unpause Gazebo when no joint state comes within '
                                 '%g s of connecting, again every %g s until one comes (the '
                                 'launch file starts Gazebo paused, so that the arm does not '
                                 'fall before the robot holds it)' % (UNPAUSE_AFTER, UNPAUSE_EVERY)),
    }

    @classmethod
    def configure_timeout(cls, options):
        return float(options.get('connect_timeout', CONNECT_TIMEOUT))

    def __init__(self, model, joint_names=BOARD_JOINTS, namespace=NAMESPACE,
                 controller=CONTROLLER, model_name=MODEL, stall_timeout=STALL_TIMEOUT,
                 connect_timeout=CONNECT_TIMEOUT, standin=False, real_time_factor=1.0,
                 unpause=True, gripper=False):
        """Args: model, the RobotModel (limits, inertias); joint_names, the boards' order;
        the rest are the OPTIONS."""
        if gripper:                     # Gazebo's model carries it: so do the brakes' model
            model = with_electric_gripper(model)
        for key, value in (('stall_timeout', stall_timeout), ('connect_timeout', connect_timeout),
                           ('real_time_factor', real_time_factor)):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError('%s must be finite and > 0, got %r' % (key, value))
        for key, value in (('namespace', namespace), ('controller', controller),
                           ('model_name', model_name)):
            if not value.strip('/') or any(c.isspace() for c in value):
                raise ValueError('%s must be a ROS name, got %r' % (key, value))
        self.joint_names = tuple(joint_names)
        self.namespace = '/' + namespace.strip('/')
        self.controller = controller.strip('/')
        self.model_name = model_name.strip('/')
        self.stall_timeout = float(stall_timeout)
        self.connect_timeout = float(connect_timeout)
        self.standin = bool(standin)
        self.real_time_factor = float(real_time_factor)
        self.unpause = bool(unpause)
        self.gripper = bool(gripper)
        self.state_topic = self.namespace + '/joint_states'
        self.command_topic = '%s/%s/command' % (self.namespace, self.controller)
        self._urdf = model.urdf_xml
        lim = model.limit_arrays(self.joint_names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.effort_limit = lim['effort']
        # What Gazebo applies on its own (the URDF's <dynamics>, ODE's joint damping and
        # friction): not in the effort gazebo_ros_control reports, taken off it here so that
        # the measured torque is what each joint transmits, as on the other plants.
        self._damping, self._friction = lim['damping'], lim['friction']
        self._neg_effort_limit = -self.effort_limit
        # The brakes' stand-in, one per thread that holds the arm (the loop's, the watchdog's).
        self._brake = BrakeHold(model, self.joint_names, self.plant_armature)
        self._wd_brake = BrakeHold(model, self.joint_names, self.plant_armature)
        # The bodies' centres of mass (wrenches): the robot's model, the loop thread's data.
        self.pin = model.pinocchio.full
        self.data = self.pin.createData()
        self._idx = model.pinocchio.idx_q(self.joint_names)
        self._full_q = pin.neutral(self.pin)
        n = len(self.joint_names)
        self._reading = BoardsReading(np.zeros(n), np.zeros(n), np.zeros(n), 0.0, True, '')
        self.brakes = True
        self._held = None               # where the brakes hold the joints
        self._lock = threading.Condition()
        self._latest = None             # (stamp, position, velocity, effort) from the callback
        self._kept = None               # a state period's first state, overtaken before the
                                        # loop took it: the loop ticks on it first
        self._received = 0              # joint states received
        self._taken = 0                 # ... of which the loop has taken the last
        self._state_wall = -math.inf    # monotonic time of the latest joint state
        self._clock = math.nan          # Gazebo's latest /clock (s)
        self._skip_until = -math.inf    # joint states stamped before this predate a teleport
        self._teleported = None         # the teleport's pose until a joint state shows it
        self._teleport_effort = None    # what the watchdog sends while a teleport is under way
        self._pushed = set()            # Gazebo bodies apply_wrench has pushed (a teleport clears them)
        self._order = None              # (names in Gazebo's order, their indices in ours)
        self._written_at = -math.inf    # Gazebo time of the state the loop last wrote after
        self._wd_hold = None            # where the watchdog holds the joints (None: idle)
        self._wd_msg = None
        self.watchdog_holds = 0         # joint states the watchdog answered
        self._rospy = self._pub = self._msg = None
        self._standin = None
        self._fingers = None            # GazeboFingers with option gripper, once configured
        # Obstacles: name → (Obstacle, hpp-fcl shape, placement, bounding radius), each a
        # static model in Gazebo; their contacts as embedded_contact finds them.
        self._obstacles = {}
        self._urdf_xml = model.urdf_xml
        self._others = np.setdiff1d(np.arange(self.pin.nv), model.pinocchio.idx_v(self.joint_names))
        self._world_base = model.pinocchio.world_base
        self._link_shapes = self._arm_shapes = None
        self._tool_shapes, self._world_shapes = (), {}
        self._geom = self._gdata = None
        self._pairs = ()
        self._contacts = []
        self._contacts_at = math.nan    # the reading time of _contacts
        # received: joint states that came; states: those the loop ticked on (the others
        # were overtaken by a newer one before the loop took them); skipped: dropped after a
        # teleport; stale_ticks: waits that timed out; dropped_commands: commands a
        # subscriber's socket could not take.
        self.stats = {'received': 0, 'states': 0, 'skipped': 0, 'stale_ticks': 0,
                      'dropped_commands': 0}

    # --- lifecycle -----------------------------------------------------------------------
    def on_configure(self):
        try:
            import rospy
            from rosgraph_msgs.msg import Clock
            from sensor_msgs.msg import JointState
            from std_msgs.msg import Float64MultiArray
        except ImportError as exc:
            raise BoardsError('the gazebo backend needs rospy and the ROS message packages: '
                              '%s' % exc) from exc
        self._rospy = rospy
        if not rospy.core.is_initialized():
            # argv=[]: the core's process inherits the adapter's command line, whose
            # __name:=realtime_loop would make this node take the adapter's name.
            rospy.init_node(NODE_NAME, argv=[], anonymous=False, disable_signals=True)
        if not rospy.get_param('/use_sim_time', False):
            raise BoardsError('the gazebo backend needs /use_sim_time true (Gazebo is the '
                              'clock): run scripts/sawyer --sim-time, or the Gazebo launch file')
        if self.standin:
            self._start_standin()
        if self.gripper:                # the fingers, through Gazebo's finger controller
            self._fingers = GazeboFingers(rospy, self.namespace)
        n = len(self.joint_names)
        self._msg, self._wd_msg = _Efforts(n), _Efforts(n)     # (one per publishing thread)
        # Written by the loop's thread: no writer thread to wake, the command on the wire
        # when write() returns; one the socket cannot take is dropped, never blocking a tick.
        self._pub = direct_publisher(self.command_topic, Float64MultiArray,
                                     self._dropped_command, tcp_nodelay=True)
        self._subs = [rospy.Subscriber(self.state_topic, JointState, self._on_joint_state,
                                       queue_size=1, tcp_nodelay=True),
                      rospy.Subscriber('/clock', Clock, self._on_clock, queue_size=1)]
        start = time.monotonic()
        deadline = start + self.connect_timeout
        unpause_at = start + UNPAUSE_AFTER if self.unpause else math.inf
        with self._lock:
            while not self._received:
                now = time.monotonic()
                if now >= unpause_at:
                    unpause_at = now + UNPAUSE_EVERY
                    self._lock.release()
                    try:
                        self._unpause(now - start)
                    finally:
                        self._lock.acquire()
                    continue
                left = deadline - time.monotonic()
                if left <= 0.0 or (self._standin is not None and self._standin.poll() is not None):
                    self.on_shutdown()
                    raise BoardsError('no joint state from Gazebo on %s within %.0f s (is '
                                      'Gazebo running with gazebo_ros_control and a '
                                      'joint_state_controller under %s?)'
                                      % (self.state_topic, self.connect_timeout, self.namespace))
                self._lock.wait(min(left, 0.1))
        self._take()

    def _dropped_command(self, _conn):
        self.stats['dropped_commands'] += 1

    def _unpause(self, waited):
        gazebo_launch.unpause(self._rospy, self.state_topic, waited, self.connect_timeout)

    def _start_standin(self):
        self._standin = gazebo_launch.start_standin(
            self._rospy, self._urdf, self.namespace, self.controller, self.model_name,
            self.real_time_factor,
            STANDIN_CONTROLLERS + ((FINGER_CONTROLLER,) if self.gripper else ()))

    def on_shutdown(self):
        if self._pub is not None:
            try:
                self._publish(self._hold_torque())     # the last command Gazebo keeps applying
            except Exception:  # noqa: BLE001 - shutting down
                pass
            for sub in getattr(self, '_subs', ()):
                sub.unregister()
            self._pub.unregister()
            self._pub = None
        if self._fingers is not None:
            self._fingers.close()
            self._fingers = None
        if self._standin is not None:
            gazebo_launch.stop_standin(self._standin)
            self._standin = None

    def describe(self):
        return 'the gazebo backend'

    # --- rospy's threads ------------------------------------------------------------------
    def _on_joint_state(self, msg):
        names = msg.name
        order = self._order
        if order is None or order[0] != names:
            try:
                order = (list(names), np.array([names.index(n) for n in self.joint_names]))
            except ValueError:
                return                  # not our joints (a different controller's state)
            self._order = order
        idx = order[1]
        stamp = msg.header.stamp.to_sec()
        if self._fingers is not None:
            self._fingers.on_joint_state(msg, stamp)
        qd = np.asarray(msg.velocity)[idx]
        transmitted = (np.asarray(msg.effort)[idx] - self._damping * qd
                       - self._friction * _clip(qd / STICK_SPEED, -1.0, 1.0))
        state = (stamp, np.asarray(msg.position)[idx], qd, transmitted)
        with self._lock:
            if stamp <= self._skip_until or self._predates_teleport(stamp, state[1]):
                self.stats['skipped'] += 1
                return
            prev = self._latest
            if self._kept is None and self._taken != self._received \
                    and state_slot(prev[0]) > state_slot(self._reading.time):
                # (the loop publishes the state topics on a period's first state)
                self._kept = prev
            self._latest = state
            self._received += 1
            self.stats['received'] += 1
            self._state_wall = time.monotonic()
            self._lock.notify_all()
        if stamp - self._written_at > WATCHDOG:
            self._watchdog(state[1], state[2])

    def _predates_teleport(self, stamp, q):
        """A joint state sent before the teleport but received after the service's reply
        (another connection): not yet at the teleported pose, within TELEPORT_WINDOW of
        Gazebo time after the last state the loop had (a stale tick at the old pose would
        kick the arm hard)."""
        if self._teleported is None:
            return False
        if np.abs(q - self._teleported).max() < TELEPORT_MATCH \
                or stamp > self._skip_until + TELEPORT_WINDOW:
            self._teleported = None
            return False
        return True

    def _watchdog(self, q, qd):
        """The loop has not commanded for WATCHDOG s of Gazebo time (booting, stalled): hold
        the joints where they were, as the brakes would (a Gazebo joint commanded nothing
        falls; gazebo_ros_control keeps applying the last effort it got)."""
        pub = self._pub
        if pub is None:
            return
        if self._teleport_effort is not None:
            pub.publish(self._wd_msg.set(self._teleport_effort))
            return
        if self._wd_hold is None:
            held = self._held
            self._wd_hold = held.copy() if self.brakes and held is not None else q.copy()
        tau = self._wd_brake.torque(self._wd_hold, q, qd)
        pub.publish(self._wd_msg.set(_clip(tau, self._neg_effort_limit, self.effort_limit).tolist()))
        self.watchdog_holds += 1

    def _on_clock(self, msg):
        self._clock = msg.clock.to_sec()

    # --- the cycle -----------------------------------------------------------------------
    def _take(self):
        """The kept state, else the newest, becomes the reading (under the lock or
        single-threaded)."""
        if self._kept is not None:
            (stamp, q, qd, eff), self._kept = self._kept, None
        else:
            stamp, q, qd, eff = self._latest
            self._taken = self._received
        self._reading = BoardsReading(q, qd, eff, max(stamp, self._reading.time), self.brakes,
                                      self._fault)
        self.stats['states'] += 1

    def wait_cycle(self, timeout):
        """The next joint state from Gazebo (at most `timeout` s); False when none came, and
        the boards fault once none has come for stall_timeout."""
        with self._lock:
            if self._taken == self._received:
                self._lock.wait(timeout)
            if self._taken != self._received:
                self._take()
                return True
            silent = time.monotonic() - self._state_wall
            clock, last = self._clock, self._latest[0]
        self.stats['stale_ticks'] += 1
        if silent >= self.stall_timeout:
            if clock - last > CLOCK_RAN_ON:
                self.report_fault('no joint states from Gazebo on %s for %.2f s while its '
                                  'clock ran on to %.3f s (is the joint_state_controller '
                                  'running?)' % (self.state_topic, silent, clock))
            else:
                self.report_fault('Gazebo stopped: no joint states on %s and no /clock for '
                                  '%.2f s (Gazebo gone or paused)' % (self.state_topic, silent))
        return False

    def read(self, time=None, period=None):
        r = self._reading
        if r.fault != self._fault or r.brakes != self.brakes:
            r = self._reading = BoardsReading(r.position, r.velocity, r.effort, r.time,
                                              self.brakes, self._fault)
        return r

    def _hold_torque(self):
        """The brakes' stand-in: PD to where they engaged, plus gravity."""
        r = self._reading
        held = r.position if self._held is None else self._held
        return self._brake.torque(held, r.position, r.velocity)

    def write(self, torque, time=None, period=None):
        if self.brakes:
            torque = self._hold_torque()
        else:
            torque = np.asarray(torque, dtype=float)
            if not np.isfinite(torque.sum()):
                torque = np.where(np.isfinite(torque), torque, 0.0)
        self._publish(_clip(torque, self._neg_effort_limit, self.effort_limit))
        self._written_at = self._reading.time
        self._wd_hold = None

    def _publish(self, torque):
        self._pub.publish(self._msg.set(torque.tolist()))

    def set_brakes(self, engaged):
        engaged = bool(engaged)
        if engaged and not self.brakes:
            self._held = self._reading.position.copy()
        self.brakes = engaged

    def on_clear_fault(self):
        silent = time.monotonic() - self._state_wall
        if silent >= self.stall_timeout:
            return 'still no joint states from Gazebo on %s (%.1f s)' % (self.state_topic, silent)
        return ''

    # --- sim-only abilities, through Gazebo's services -------------------------------------
    def set_gripper(self, command):
        """The fingers through Gazebo's finger controller (boards.gazebo_fingers)."""
        if self._fingers is None:
            raise BoardsError('%s has no gripper: boot it with --gripper' % self.describe())
        self._fingers.setpoints.set(command)

    def gripper_state(self):
        return None if self._fingers is None else self._fingers.latest

    def _service(self, name, srv_type):
        rospy = self._rospy
        try:
            rospy.wait_for_service(name, SERVICE_TIMEOUT)
        except rospy.ROSException:
            raise BoardsError('%s: Gazebo offers no %s' % (self.describe(), name)) from None
        return rospy.ServiceProxy(name, srv_type)

    def reset_pose(self, positions):
        """Teleport through /gazebo/set_model_configuration (Gazebo pauses its world to set
        the joints, which leaves them at rest); the reading is the new pose at once, and
        joint states stamped before the call are dropped. The wrenches apply_wrench pushed
        are cleared first (/gazebo/clear_body_wrenches), as every backend's teleport drops
        them: Gazebo keeps a body's wrench for its duration whatever the joints do."""
        from gazebo_msgs.srv import SetModelConfiguration
        q = _clip(np.asarray(positions, float), self.lower, self.upper)
        for body in sorted(self._pushed):
            self._clear_body(body)
        call = self._service('/gazebo/set_model_configuration', SetModelConfiguration)
        # Gazebo applies the last effort it got until the next comes: the one holding the new
        # pose goes first, or the first steps there would push it with the old pose's.
        hold = _clip(self._brake.torque(q, q, np.zeros(len(q))), self._neg_effort_limit,
                     self.effort_limit).tolist()
        self._teleport_effort = hold
        try:
            self._pub.publish(self._msg.set(hold))
            reply = call(model_name=self.model_name, urdf_param_name='',
                         joint_names=list(self.joint_names), joint_positions=q.tolist())
        finally:
            self._teleport_effort = None
        if not reply.success:
            raise BoardsError('%s: set_model_configuration refused: %s'
                              % (self.describe(), reply.status_message))
        n = len(q)
        with self._lock:
            # (best effort: what was stamped by the time the call returned predates it)
            self._skip_until = self._latest[0]
            self._teleported = q
            self._latest = (self._reading.time, q, np.zeros(n), self._reading.effort)
            self._kept = None
            self._take()
            self._taken = self._received
        self._held = q.copy()
        self._wd_hold = None            # (the watchdog holds the new pose)

    def add_obstacle(self, name, shape, position, quaternion, size):
        """A static model named `name` spawned through /gazebo/spawn_sdf_model, placed
        relative to the arm's model (its frame is the base's), so that Gazebo's physics
        stops the arm on it; one of the same name (an obstacle) is deleted first. A name
        Gazebo already has for another model, or a spawn Gazebo refuses: ValueError."""
        from gazebo_msgs.srv import SpawnModel
        from geometry_msgs.msg import Point, Pose, Quaternion
        record = check_obstacle(name, shape, position, quaternion, size)
        if record.name in self._obstacles:
            self.remove_obstacle(record.name)
        call = self._service('/gazebo/spawn_sdf_model', SpawnModel)
        reply = call(model_name=record.name, model_xml=obstacle_sdf(record), robot_namespace='',
                     initial_pose=Pose(Point(*record.position), Quaternion(*record.quaternion)),
                     reference_frame=self.model_name)
        if not reply.success:
            raise ValueError('%s: obstacle %r not spawned: %s'
                             % (self.describe(), record.name, reply.status_message))
        self._place_obstacle(record)
        self._contacts_at = math.nan

    def remove_obstacle(self, name):
        """The obstacle's model deleted through /gazebo/delete_model; KeyError when there is
        no obstacle named `name`."""
        from gazebo_msgs.srv import DeleteModel
        if name not in self._obstacles:
            raise KeyError('no obstacle named %r' % (name,))
        reply = self._service('/gazebo/delete_model', DeleteModel)(model_name=name)
        if not reply.success:
            raise BoardsError('%s: obstacle %r not deleted: %s'
                              % (self.describe(), name, reply.status_message))
        del self._obstacles[name]
        self._rebuild_pairs()
        self._contacts_at = math.nan

    def obstacles(self):
        return [entry[0] for entry in self._obstacles.values()]

    def contacts(self):
        """Where the arm's collision shapes meet an obstacle's at the latest joint state: list
        of Contact (obstacle, link, depth m, force zero: Gazebo's is not known here, point m
        in base)."""
        r = self._reading
        if self._contacts_at != r.time:
            self._contacts_at = r.time
            hits = None
            if self._geom is not None:
                self._full_q[self._idx] = r.position
                hits = self._touching()
            self._contacts = [self._record(obstacle, link, depth, 0.0, n, point)
                              for link, obstacle, depth, n, point, _ in hits or ()]
        return list(self._contacts)

    def apply_wrench(self, link, wrench, duration):
        """Through /gazebo/apply_body_wrench: Gazebo applies the force at the centre of mass
        of the body `link` is lumped into, in the world frame (whose axes are the base's: the
        launch file spawns the arm unrotated, -z only), so the torque about the link's
        origin is moved there (τ_com = τ_o − (c − o) × F)."""
        from gazebo_msgs.srv import ApplyBodyWrench
        from geometry_msgs.msg import Point, Vector3, Wrench
        body, jid = gazebo_body(self.pin, link)
        self._full_q[self._idx] = self._reading.position
        pin.framesForwardKinematics(self.pin, self.data, self._full_q)
        origin = self.data.oMf[self.pin.getFrameId(link, pin.FrameType.BODY)].translation
        w = np.asarray(wrench, float)
        torque = _shift(w[3:], w[:3], body_com(self.pin, self.data, jid) - origin)
        seconds = float(duration)
        call = self._service('/gazebo/apply_body_wrench', ApplyBodyWrench)
        name = '%s::%s' % (self.model_name, body)
        reply = call(body_name=name, reference_frame='',
                     reference_point=Point(0.0, 0.0, 0.0),
                     wrench=Wrench(Vector3(*w[:3].tolist()), Vector3(*torque.tolist())),
                     start_time=self._rospy.Time(0),
                     duration=self._rospy.Duration.from_sec(seconds))
        if not reply.success:
            raise BoardsError('%s: apply_body_wrench refused: %s'
                              % (self.describe(), reply.status_message))
        self._pushed.add(name)

    def clear_wrenches(self, link):
        """Through /gazebo/clear_body_wrenches on the body `link` is lumped into (which
        clears every wrench on that body)."""
        self._clear_body('%s::%s' % (self.model_name, gazebo_body(self.pin, link)[0]))

    def _clear_body(self, name):
        from gazebo_msgs.srv import BodyRequest
        self._service('/gazebo/clear_body_wrenches', BodyRequest)(body_name=name)
        self._pushed.discard(name)

    def __del__(self):
        try:
            self.on_shutdown()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def obstacle_sdf(record):
    """An add_obstacle obstacle (a boards.Obstacle) as a static SDF model: one link, its
    shape as collision and visual at the model's frame (the spawn's initial_pose places it)."""
    from xml.sax.saxutils import quoteattr
    if record.shape == 'box':
        geometry = '<box><size>%r %r %r</size></box>' % tuple(record.size)
    else:
        geometry = '<sphere><radius>%r</radius></sphere>' % record.size[0]
    geometry = '<geometry>%s</geometry>' % geometry
    return ('<sdf version="1.6"><model name=%s><static>true</static><link name="link">'
            '<collision name="collision">%s</collision><visual name="visual">%s</visual>'
            '</link></model></sdf>' % (quoteattr(record.name), geometry, geometry))
