"""realtime_loop: the node that owns the arm.

The 1 kHz loop itself (joint boards → monitors → the active controller → additive torques
→ joint boards) runs in a process of its own, intera_rt.realtime.process, so that rospy's
threads never hold it off a tick. This node is its ROS adapter: subscriptions and the
sim-control services become typed commands (control.commands) the core applies between two
ticks (every input takes effect at a tick boundary: deterministic under sim time); the state
the core sends every 10 ticks becomes the robot's state topics.

Homing: /robot/homing_states (latched) on every change and every HOMING_STATES_PERIOD;
/robot/set_homing_mode becomes a HomingCommand (control.homing). `~unhomed` boots the arm
NOT_HOMED: it refuses motion commands until homed.

Zero-G input: the cuff's grasp (right_cuff in /io/robot/cuff/state) and the navigator's
circle buttons (/io/robot/navigator/state), as the IO devices report them.

Pacing: wall clock by default; with /use_sim_time the loop is the clock — the core
advances 1 ms of sim time per tick at `~speed` × real time (`max`: flat out) and this node
publishes /clock.
"""
import itertools
import json
import math
import os
import struct
import sys
import threading
import time

import genpy
import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3, Wrench
from intera_core_msgs.msg import (CollisionAvoidanceState, CollisionDetectionState,
                                  EndpointState, EndpointStates, HeadPanCommand, HeadState,
                                  HomingCommand, HomingState, InteractionControlCommand,
                                  InteractionControlState, IODeviceStatus, JointCommand,
                                  JointLimits, RobotAssemblyState, SEAJointState)
from intera_rt_msgs.msg import RealtimeState
from intera_rt_msgs.srv import (AddObstacle, AddObstacleResponse, ApplyWrench,
                                ApplyWrenchResponse, RemoveObstacle, RemoveObstacleResponse,
                                SetJointPositions, SetJointPositionsResponse)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64, Header, String
from std_srvs.srv import SetBool, SetBoolResponse

from intera_rt.boards import backend_class, check_backend
from intera_rt.boards.base import check_obstacle
from intera_rt.control import commands as cmds
from intera_rt.control import model_effort
from intera_rt.control.registry import ADDITIVES, CONTROLLERS, MONITORS, check_stage_options
from intera_rt.model import RobotModel
from intera_rt.model.avoidance import default_armnav_path, objects_from_mask, shape_links
from intera_rt.realtime import process as rt_process
from intera_rt.realtime.core import CONTROLLER_NAMES, PERIOD, STATE_SLICES, state_field
from intera_rt.robot import (ARM_JOINTS, BOARD_JOINTS, HEAD_JOINTS, HEAD_NAMED_POSES,
                             NAMED_POSES, SUPPRESS_TOPICS)
from intera_rt.ros.direct import (SerializedMessage, Throttle, joint_command_key, periodic_publisher,
                                  raw_class, wire_string)
from intera_rt.ros.node import init_node
from intera_rt.ros.urdf_fragments import REQUESTED_TIPS_TOPIC, UrdfFragments, normal_priority
# Joint order of /robot/joint_states (documented in README): head first, as the robot does.
JOINT_STATE_ORDER = HEAD_JOINTS + ARM_JOINTS
_JS_INDEX = [BOARD_JOINTS.index(n) for n in JOINT_STATE_ORDER]
_JS_COUNT = struct.pack('<I', len(JOINT_STATE_ORDER))
_JS_NAMES = _JS_COUNT + b''.join(wire_string(n) for n in JOINT_STATE_ORDER)
TIP_NAMES = ('right_hand', 'right_hand_camera')   # the robot's own; URDF fragments add theirs
SIM_NS = '/intera_rt/sim/'
WRENCH_DAMPING = 1e-6                 # λ² of the endpoint wrench's damped least squares
# Zero-G inputs: the cuff's grasp, and the navigators' circle buttons (seed 000).
CUFF_SIGNALS = ('right_cuff',)
NAVIGATOR_SIGNALS = ('right_button_circle', 'head_button_circle')
REALTIME_STATE_PERIOD = 0.1           # s of loop time between unchanged realtime_states
HOMING_STATES_PERIOD = 1.0            # s of loop time between unchanged homing_states
CALL_TIMEOUT = 10.0                   # s a sim-control service waits for the core
BOOT_TIMEOUT = 60.0                   # s the core may take to build its model


def parse_pose(text, named=NAMED_POSES):
    """'neutral' / 'shipping' / 7 comma- or space-separated angles → 7 floats."""
    text = str(text).strip()
    if text in named:
        return [float(x) for x in named[text]]
    parts = text.replace(',', ' ').split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 7 or not all(math.isfinite(v) for v in values):
        raise ValueError('pose %r: expected neutral, shipping or 7 finite joint angles' % text)
    return values


def _signal_value(signal):
    """An IO signal's value: the first element of its JSON `data` array (None if empty or
    unreadable)."""
    try:
        data = json.loads(signal.data)
    except (TypeError, ValueError):
        return None
    return data[0] if isinstance(data, list) and data else None


class RealtimeLoop:
    def __init__(self):
        self.log_throttled = Throttle()
        self.sim_time = bool(rospy.get_param('/use_sim_time', False))
        speed = str(rospy.get_param('~speed', '1.0')).strip().lower()
        self.speed = math.inf if speed == 'max' else float(speed)
        if not self.speed > 0:
            raise ValueError('~speed must be > 0 or "max", got %r' % speed)
        backend = rospy.get_param('~backend', 'embedded')
        backend_options = rospy.get_param('~backend_options', {}) or {}
        if not isinstance(backend_options, dict):
            raise ValueError('~backend_options must be a dictionary, got %r' % (backend_options,))
        # Before spawning the core: a clear error at once.
        backend_options = check_backend(backend, backend_options)
        # A simulator that publishes /clock itself (Gazebo): this node does not.
        self._sim_clock = backend_class(backend).sim_clock
        urdf = rospy.get_param('/robot_description', None)
        self.model = RobotModel(urdf) if urdf else RobotModel.from_file()
        q_arm = parse_pose(rospy.get_param('~pose', 'neutral'))
        lim = self.model.limit_arrays(ARM_JOINTS)
        for name, v, lo, hi in zip(ARM_JOINTS, q_arm, lim['lower'], lim['upper']):
            if not lo <= v <= hi:
                raise ValueError('pose: %s = %.4f is outside its limits [%.4f, %.4f]' % (name, v, lo, hi))
        q_head = HEAD_NAMED_POSES['neutral']
        # The model terms SEAJointState reports are computed here, off the realtime path.
        self._armature = self.model.limit_arrays(ARM_JOINTS)['armature']
        self._zero_g_inputs = {}         # device → pressed, as last sent to the core
        self._realtime_key, self._realtime_at = None, -math.inf   # last realtime_state sent
        self._homing_key, self._homing_at = None, -math.inf       # last homing_states sent
        # The avoidance shapes' links, in the order the core's collision_avoidance stage
        # numbers them.
        armnav = rospy.get_param('/robot/armnav_robot_description', None)
        if armnav is None:
            with open(default_armnav_path()) as f:
                armnav = f.read()
        self._avoidance_links = shape_links(armnav) if 'collision_avoidance.objects' in STATE_SLICES else None
        # Tip kinematics (tip_states) follow /robot/urdf fragments: (model, tip names),
        # swapped whole. Gravity stays the boot model's: the arm's core and plant do not
        # carry a tool's mass.
        self._tip_view = (self.model, TIP_NAMES)
        self._requested_tips = []        # tips clients asked IK/FK for
        self._tips_lock = threading.Lock()
        self._state = None               # the core's latest state vector
        self._state_wall = 0.0           # wall time of that state's tick
        self._joint_state_seq = 0        # header.seq of /robot/joint_states
        self._stats = {}
        self._replies = {}
        self._reply_ids = itertools.count()
        self._send_lock = threading.Lock()
        self._reply_cond = threading.Condition()
        self.proc, self.conn = rt_process.start(dict(
            urdf=urdf, backend=backend, backend_options=backend_options, q_arm=q_arm,
            q_head=q_head, options=self._stage_options(),
            enabled=not rospy.get_param('~disabled', False),
            homed=not rospy.get_param('~unhomed', False), sim_time=self.sim_time,
            speed=self.speed, priority=int(rospy.get_param('~realtime_priority', 50)),
            tick_log=rospy.get_param('~tick_log', os.environ.get('INTERA_RT_TICK_LOG', ''))))
        if not self.conn.poll(BOOT_TIMEOUT):
            raise RuntimeError('the realtime core did not start within %.0f s' % BOOT_TIMEOUT)
        ready = self.conn.recv()
        if ready[0] != 'ready':
            raise RuntimeError('the realtime core failed to start: %s' % (ready[1],))
        self._state, self._state_wall = ready[1], time.time()
        self.simulated = ready[3]
        rospy.loginfo('realtime_loop: %s backend%s, %s, %s%s; core process %d: %s', backend,
                      ' %s' % backend_options if backend_options else '',
                      'sim time at %s x real time' % ('max' if math.isinf(self.speed) else self.speed)
                      if self.sim_time else 'wall clock',
                      'disabled' if rospy.get_param('~disabled', False) else 'enabled',
                      ', not homed' if rospy.get_param('~unhomed', False) else '',
                      self.proc.pid, ready[2])
        self._setup_ros()

    @staticmethod
    def _stage_options():
        """Each stage's options: the private parameter named after it (a dict, e.g.
        ~collision_detection/squish_threshold), plus the avoidance shapes the robot serves."""
        options = {}
        for stage in MONITORS + ADDITIVES + CONTROLLERS:
            value = rospy.get_param('~' + stage.name, {})
            if not isinstance(value, dict):
                raise ValueError('~%s must be a dictionary of options, got %r' % (stage.name, value))
            options[stage.name] = dict(value)
        armnav = rospy.get_param('/robot/armnav_robot_description', None)
        if armnav:
            options.setdefault('collision_avoidance', {}).setdefault('armnav_urdf', armnav)
        # Before spawning the core: a misspelt or mistyped option stops boot at once.
        return check_stage_options(options)

    # --- talking to the core ---------------------------------------------------------
    def _send(self, command, reply=False):
        """Send a typed command (control.commands) to the core."""
        reply_id = next(self._reply_ids) if reply else None
        with self._send_lock:
            self.conn.send(('cmd', reply_id, command))
        return reply_id

    def _call(self, command):
        """Apply a sim-control command in the core and return its (success, message)."""
        reply_id = self._send(command, reply=True)
        deadline = time.monotonic() + CALL_TIMEOUT
        with self._reply_cond:
            while reply_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or not self.proc.is_alive():
                    return False, 'the realtime loop did not answer within %.0f s' % CALL_TIMEOUT
                self._reply_cond.wait(left)
            return self._replies.pop(reply_id)

    def _field(self, name):
        return state_field(self._state, name)

    def loop_time_offset(self):
        """ROS time minus loop time (0 under sim time, where they are one clock)."""
        return 0.0 if self.sim_time else self._state_wall - self._field('t')

    # --- ROS wiring ------------------------------------------------------------------
    def _setup_ros(self):
        pub = rospy.Publisher

        def periodic(topic, msg_type, **kwargs):
            return periodic_publisher(topic, msg_type, self.log_throttled, **kwargs)
        self.pub_state = periodic('/robot/state', RobotAssemblyState)
        self.pub_joints = periodic('/robot/joint_states', JointState, tcp_nodelay=True)
        ns = '/robot/limb/right/'
        self.pub_endpoint = periodic(ns + 'endpoint_state', EndpointState, tcp_nodelay=True)
        self.pub_tips = periodic(ns + 'tip_states', EndpointStates, tcp_nodelay=True)
        self.pub_sea = periodic(ns + 'gravity_compensation_torques', SEAJointState, tcp_nodelay=True)
        self.pub_collision = periodic(ns + 'collision_detection_state', CollisionDetectionState)
        self.pub_avoidance = periodic(ns + 'collision_avoidance_state', CollisionAvoidanceState)
        self.pub_interaction = periodic(ns + 'interaction_control_state', InteractionControlState) \
            if 'interaction.K_impedance' in STATE_SLICES else None
        self.pub_realtime = periodic('/intera_rt/realtime_state', RealtimeState)
        self.pub_head = periodic('/robot/head/head_state', HeadState)
        self.pub_homing = pub('/robot/homing_states', HomingState, queue_size=10, latch=True)
        self.pub_diag = pub('/diagnostics', DiagnosticArray, queue_size=10)
        self.pub_limits = pub('/robot/joint_limits', JointLimits, queue_size=1, latch=True)
        self.pub_clock = periodic('/clock', Clock) if self.sim_time and not self._sim_clock else None
        self.pub_limits.publish(self._joint_limits_msg())
        self._publish_homing()

        sub = rospy.Subscriber
        send = self._send
        sub('/robot/set_super_enable', Bool, lambda m: send(cmds.SetEnable(m.data)), queue_size=10)
        sub('/robot/set_super_stop', Empty, lambda _: send(cmds.Stop()), queue_size=10)
        sub('/robot/set_super_reset', Empty, lambda _: send(cmds.Reset()), queue_size=10)
        sub('/robot/set_homing_mode', HomingCommand, self._on_homing, queue_size=10)
        # Read in batches (every message one read of a connection brings), coalesced: of the
        # commands with the same mode and names only the latest is deserialized and sent to
        # the core. A client streaming at 10 kHz sends ten per tick; taken one by one
        # (deserialized ~30 µs, pickled, applied) they cost this node 13-14 % of a core,
        # coalesced 7.8 % (test_faults floods it).
        commands = sub(ns + 'joint_command', raw_class(JointCommand), lambda m: None,
                       queue_size=20, tcp_nodelay=True)
        commands.impl.receive_callback = self._on_joint_commands
        sub(ns + 'joint_command_timeout', Float64, lambda m: send(cmds.SetTimeout(m.data)),
            queue_size=10)
        sub(ns + 'set_speed_ratio', Float64, lambda m: send(cmds.SetSpeedRatio(m.data)),
            queue_size=10)
        for topic, what in SUPPRESS_TOPICS.items():
            sub(ns + topic, Empty, lambda _, what=what: send(cmds.Suppress(what)), queue_size=10)
        sub('/robot/head/command_head_pan', HeadPanCommand, self._on_head, queue_size=10)
        # URDF fragments (/robot/urdf) and the tips clients ask for: tip_states.
        self.fragments = UrdfFragments(self.model.urdf_xml, self._on_model_change)
        sub(REQUESTED_TIPS_TOPIC, String, self._on_requested_tips, queue_size=2)
        sub(ns + 'interaction_control_command', InteractionControlCommand, self._on_interaction,
            queue_size=10)
        # Zero-G inputs, as the IO devices report them.
        sub('/io/robot/cuff/state', IODeviceStatus,
            lambda m: self._on_zero_g_input('cuff', m, CUFF_SIGNALS), queue_size=10)
        sub('/io/robot/navigator/state', IODeviceStatus,
            lambda m: self._on_zero_g_input('navigator', m, NAVIGATOR_SIGNALS), queue_size=10)
        # Sim control (one namespace): E-stop button, error, external wrench, pose reset,
        # obstacles.
        if self.simulated:
            call = self._call
            rospy.Service(SIM_NS + 'estop_button', SetBool,
                          lambda r: SetBoolResponse(*call(cmds.SimEstop(r.data))))
            rospy.Service(SIM_NS + 'error', SetBool,
                          lambda r: SetBoolResponse(*call(cmds.SimError(r.data))))
            rospy.Service(SIM_NS + 'apply_wrench', ApplyWrench, self._sim_wrench)
            rospy.Service(SIM_NS + 'set_joint_positions', SetJointPositions,
                          lambda r: SetJointPositionsResponse(
                              *call(cmds.SimJointPositions(tuple(r.names), tuple(r.positions)))))
            rospy.Service(SIM_NS + 'add_obstacle', AddObstacle, self._sim_add_obstacle)
            rospy.Service(SIM_NS + 'remove_obstacle', RemoveObstacle, self._sim_remove_obstacle)
            # Read-only: the obstacles placed (for viewers such as rviz_markers).
            self._obstacles = {}
            self._obstacles_lock = threading.Lock()
            self.pub_obstacles = pub(SIM_NS + 'obstacles', String, queue_size=1, latch=True)
            self._publish_obstacles()

    # --- inputs -----------------------------------------------------------------------
    def _on_homing(self, msg):
        self._send(cmds.HomingCommand(tuple(msg.name), tuple(msg.command)))

    def _on_joint_commands(self, raws, connection):
        """The joint commands one read of a connection brought (wire form), in order: the
        latest of each (mode, names) is applied, in the order of those latest ones."""
        latest = {}
        for i, raw in enumerate(raws):
            key = joint_command_key(raw.data) or ('unreadable', i)
            latest.pop(key, None)
            latest[key] = raw
        for raw in latest.values():
            try:
                msg = JointCommand().deserialize(raw.data)
            except (genpy.DeserializationError, struct.error, UnicodeDecodeError, ValueError) as exc:
                self.log_throttled(rospy.logerr, 'joint_command-unreadable',
                                   'joint_command: a message from %s is no JointCommand (%d bytes: '
                                   '%s); ignored' % (getattr(connection, 'callerid_pub', '?'),
                                                     len(raw.data), exc))
                continue
            self._on_joint_command(msg)

    def _on_joint_command(self, msg):
        stamp = msg.header.stamp
        # header.stamp in loop time (loop time = ROS time under sim time; offset otherwise).
        t_cmd = None if stamp.is_zero() else stamp.to_sec() - self.loop_time_offset()
        self._send(cmds.JointCommand(msg.mode, tuple(msg.names), tuple(msg.position),
                                     tuple(msg.velocity), tuple(msg.acceleration),
                                     tuple(msg.effort), t_cmd))

    def _on_head(self, msg):
        self._send(cmds.HeadCommand(msg.target, msg.speed_ratio,
                                    None if msg.pan_mode == HeadPanCommand.NO_MODE_CHANGE else msg.pan_mode))

    def _on_model_change(self, change):
        """A fragment changed the robot's description: tip_states follows it."""
        self._set_tips(change.model)

    def _on_requested_tips(self, msg):
        normal_priority()                # builds KDL chains: not at the adapter's priority
        try:
            names = json.loads(msg.data)
        except ValueError:
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            rospy.logwarn('realtime_loop: %s: expected a JSON list of link names, got %r'
                          % (REQUESTED_TIPS_TOPIC, msg.data[:200]))
            return
        self._requested_tips = names
        self._set_tips()

    def _set_tips(self, model=None):
        """tip_states' tips for `model` (None: the current one): the robot's own, the
        fragments' links on the arm, the tips clients asked for."""
        with self._tips_lock:
            model = model or self._tip_view[0]
            tips = TIP_NAMES + tuple(self.fragments.manager.tips(model, self._requested_tips,
                                                                  exclude=TIP_NAMES))
            for tip in tips:             # KDL chains built here, not at 100 Hz
                model.chain(tip)
            if tips != self._tip_view[1]:
                rospy.loginfo('realtime_loop: tip_states: %s', ', '.join(tips))
            self._tip_view = (model, tips)

    def _on_interaction(self, msg):
        """interaction_control_command → the core (which validates it: control.interaction)."""
        f = msg.interaction_frame
        p, o = f.position, f.orientation
        self._send(cmds.InteractionCommand(
            bool(msg.interaction_control_active),
            tuple(int(m) for m in msg.interaction_control_mode),     # uint8[]: bytes on the wire
            tuple(msg.K_impedance), tuple(bool(b) for b in msg.max_impedance),
            tuple(msg.D_impedance), tuple(msg.K_nullspace), tuple(msg.force_command),
            (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), msg.endpoint_name, bool(msg.in_endpoint_frame),
            bool(msg.disable_damping_in_force_control), bool(msg.disable_reference_resetting),
            bool(msg.rotations_for_constrained_zeroG)))

    def _on_zero_g_input(self, source, msg, signals):
        """A device state: any of `signals` nonzero asks for zero-G (the core decides)."""
        pressed = False
        for sig in msg.signals:
            if sig.name in signals:
                pressed = pressed or _signal_value(sig) not in (None, 0, False)
        if pressed != self._zero_g_inputs.get(source):
            self._zero_g_inputs[source] = pressed
            self._send(cmds.CuffInput(source, pressed))

    def _sim_wrench(self, req):
        w = req.wrench
        values = (w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z)
        return ApplyWrenchResponse(*self._call(cmds.SimWrench(req.link, values, req.duration)))

    def _sim_add_obstacle(self, req):
        p, o = req.pose.position, req.pose.orientation
        position, quaternion, size = (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), tuple(req.size)
        success, message = self._call(cmds.SimAddObstacle(req.name, req.shape, position,
                                                          quaternion, size))
        if success:                      # the core accepted it: the values are valid
            obstacle = check_obstacle(req.name, req.shape, position, quaternion, size)
            with self._obstacles_lock:
                self._obstacles[req.name] = obstacle
                self._publish_obstacles()
        return AddObstacleResponse(success, message)

    def _sim_remove_obstacle(self, req):
        success, message = self._call(cmds.SimRemoveObstacle(req.name))
        if success:
            with self._obstacles_lock:
                self._obstacles.pop(req.name, None)
                self._publish_obstacles()
        return RemoveObstacleResponse(success, message)

    def _publish_obstacles(self):
        """The latched /intera_rt/sim/obstacles: a JSON list of the obstacles placed, in the
        order placed, each {name, shape, position, quaternion (x, y, z, w), size} as
        add_obstacle took them (quaternion normalised)."""
        self.pub_obstacles.publish(String(json.dumps(
            [o._asdict() for o in self._obstacles.values()])))

    # --- outputs ------------------------------------------------------------------------
    def run(self):
        """Receive what the core sends and publish it, until shutdown."""
        if not self.sim_time:
            self._adapter_priority()
        rospy.on_shutdown(self._quit)
        log = {'warn': rospy.logwarn, 'error': rospy.logerr, 'info': rospy.loginfo}
        while not rospy.is_shutdown():
            try:
                if not self.conn.poll(0.5):
                    if not self.proc.is_alive():
                        rospy.logfatal('realtime_loop: the realtime core exited (code %s)',
                                       self.proc.exitcode)
                        rospy.signal_shutdown('realtime core exited')
                    continue
                msg = self.conn.recv()
            except (EOFError, OSError):
                if not rospy.is_shutdown():
                    rospy.logfatal('realtime_loop: lost the realtime core')
                    rospy.signal_shutdown('realtime core lost')
                break
            kind = msg[0]
            if kind == 'clock':
                self.pub_clock.publish(Clock(clock=rospy.Time.from_sec(msg[1])))
            elif kind == 'state':
                self._state, self._state_wall = msg[1], msg[2]
                if msg[3]:               # /clock first: the state's stamp is not in the future
                    self.pub_clock.publish(Clock(clock=rospy.Time.from_sec(self._field('t'))))
                self._publish_state()
                if self.sim_time:        # lockstep: the core may go on (process.RUN_AHEAD)
                    tick = int(self._field('tick'))
                    if self.proc.lockstep.published(tick):      # it waits for this: wake it
                        with self._send_lock:
                            self.conn.send(('published', tick))
            elif kind == 'logs':
                for level, key, text in msg[1]:
                    self.log_throttled(log[level], key, text)
            elif kind == 'stats':
                self._stats = msg[1]
                self.pub_diag.publish(self._diagnostics_msg())
            elif kind == 'reply':
                with self._reply_cond:
                    self._replies[msg[1]] = msg[2]
                    self._reply_cond.notify_all()

    def _adapter_priority(self):
        """Under the wall clock this node's threads run SCHED_FIFO just below the core: a
        command or a state waiting here is latency the robot's clients see. Threads rospy
        starts later inherit it. Its work is bounded (100 Hz states, commands as they come)."""
        priority = int(rospy.get_param('~realtime_priority', 50)) - 10
        if priority <= 0:
            return
        try:
            for tid in os.listdir('/proc/self/task'):
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, AttributeError) as exc:
            rospy.logwarn('realtime_loop: adapter runs without realtime priority (%s)', exc)

    def _quit(self):
        try:
            with self._send_lock:
                self.conn.send(('quit',))
        except (OSError, ValueError):
            pass
        self.proc.join(2.0)
        if self.proc.is_alive():
            self.proc.terminate()

    def stamp(self):
        t = self._field('t')
        return rospy.Time.from_sec(t if self.sim_time else self._state_wall)

    def _publish_state(self):
        # A publisher nobody listens to is skipped: building its message is the cost.
        def wanted(pub):
            return pub.get_num_connections() > 0
        header = Header(stamp=self.stamp())
        if wanted(self.pub_joints):
            self.pub_joints.publish(self._joint_state_msg(header))
        if wanted(self.pub_sea):
            self.pub_sea.publish(self._sea_msg(header))
        all_tips = wanted(self.pub_tips)
        if all_tips or wanted(self.pub_endpoint):
            model, names = self._tip_view
            names = names if all_tips else names[:1]
            tips = [self._endpoint_msg(model, tip, header.stamp) for tip in names]
            self.pub_endpoint.publish(tips[0])
            if all_tips:
                self.pub_tips.publish(EndpointStates(header=Header(stamp=header.stamp, frame_id='base'),
                                                     names=list(names), states=tips))
        self.pub_state.publish(self._robot_state_msg())
        if wanted(self.pub_head):
            self.pub_head.publish(self._head_state_msg())
        if wanted(self.pub_collision):
            self.pub_collision.publish(CollisionDetectionState(
                header=header, collision_state=bool(self._field('collision'))))
        if wanted(self.pub_avoidance):
            self.pub_avoidance.publish(CollisionAvoidanceState(
                header=header, other_arm=False, collision_object=self._avoidance_objects()))
        if wanted(self.pub_realtime):
            self._publish_realtime_state(header)
        self._publish_homing()
        if self.pub_interaction is not None and wanted(self.pub_interaction):
            self.pub_interaction.publish(self._interaction_state_msg(header))

    def _joint_state_msg(self, header):
        """/robot/joint_states in its wire form (the most listened-to state: its latency is
        every client's): header, the constant names, then positions, velocities, efforts."""
        self._joint_state_seq += 1
        stamp = header.stamp
        return SerializedMessage(JointState, b''.join((
            struct.pack('<IIII', self._joint_state_seq, stamp.secs, stamp.nsecs, 0),
            _JS_NAMES, _JS_COUNT, self._field('q')[_JS_INDEX].astype('<f8').tobytes(),
            _JS_COUNT, self._field('qd')[_JS_INDEX].astype('<f8').tobytes(),
            _JS_COUNT, self._field('effort')[_JS_INDEX].astype('<f8').tobytes())))

    def _endpoint_msg(self, model, tip, stamp):
        q, qd, eff = self._field('q')[:7], self._field('qd')[:7], self._field('effort')[:7]
        n = model.chain(tip).n                       # the joints that move the tip
        p, quat, jac = model.arm_dynamics.tip(tip, q)
        jac = jac[:, :n]
        twist = jac @ qd[:n]
        # The wrench the arm exerts at the tip, from what the joints transmit beyond the
        # whole arm's weight (links past the tip included: their weight is not external).
        # The boot model's weight: the core and plant carry no fragment's mass.
        tau_ext = (eff - self.model.arm_dynamics.gravity(q))[:n]
        # τ = Jᵀ w, solved in the least-squares sense with a little damping (it stays
        # bounded at a singular wrist instead of blowing up along the lost direction).
        jjt = jac @ jac.T
        jjt.flat[::7] += WRENCH_DAMPING
        wrench = np.linalg.solve(jjt, jac @ tau_ext)
        p, quat, twist, wrench = p.tolist(), quat.tolist(), twist.tolist(), wrench.tolist()
        return EndpointState(
            header=Header(stamp=stamp, frame_id='base'), valid=True,
            pose=Pose(position=Point(*p), orientation=Quaternion(*quat)),
            twist=Twist(linear=Vector3(*twist[:3]), angular=Vector3(*twist[3:])),
            wrench=Wrench(force=Vector3(*wrench[:3]), torque=Vector3(*wrench[3:])))

    def _robot_state_msg(self):
        f = self._field
        stopped, error = bool(f('stopped')), bool(f('error'))
        return RobotAssemblyState(homed=bool(f('homed')), ready=not stopped and not error,
                                  enabled=bool(f('enabled')), stopped=stopped, error=error,
                                  lowVoltage=bool(f('low_voltage')),
                                  estop_button=int(f('estop_button')),
                                  estop_source=int(f('estop_source')))

    def _sea_msg(self, header):
        """SEAJointState as seed 000 defines its fields: gravity_only is the model's gravity
        torque (even while suppressed), gravity_model_effort what was applied of the model
        terms, interaction_torque the interaction controller's torques and what the plugins
        added (collision avoidance, ...)."""
        f = self._field
        q, qd, eff = f('q')[:7], f('qd')[:7], f('effort')[:7]
        zeros = [0.0] * 7
        msg = SEAJointState(header=header, name=list(ARM_JOINTS),
                            actual_position=q.tolist(), actual_velocity=qd.tolist(),
                            actual_effort=eff.tolist(), interaction_torque=f('interaction').tolist(),
                            hysteresis_model_effort=zeros, crosstalk_model_effort=zeros,
                            commanded_position=f('cmd_p').tolist(),
                            commanded_velocity=f('cmd_v').tolist(),
                            commanded_acceleration=f('cmd_a').tolist(),
                            commanded_effort=f('cmd_effort').tolist())
        if f('controlled'):
            applied, gravity = model_effort(self.model.arm_dynamics, self._armature, q, f('cmd_a'),
                                            bool(f('gravity_compensation.suppressed')))
            msg.gravity_model_effort, msg.gravity_only = applied.tolist(), gravity.tolist()
        else:                                  # brakes on: nothing commanded
            gravity = self.model.arm_dynamics.gravity(q).tolist()
            msg.gravity_model_effort, msg.gravity_only = zeros, gravity
        return msg

    def _loop_stamp(self, t):
        """A loop time as a ROS time (0 for none: NaN)."""
        return rospy.Time.from_sec(t + self.loop_time_offset()) if math.isfinite(t) and t > 0 \
            else rospy.Time()

    def _optional(self, name, default=0.0):
        """A stage's state field, or `default` when that stage is not registered."""
        return self._field(name) if name in STATE_SLICES else default

    def _avoidance_objects(self):
        """The links whose avoidance shapes overlap (CollisionAvoidanceState)."""
        if self._avoidance_links is None or not self._optional('collision_avoidance.active'):
            return []
        return objects_from_mask(int(self._field('collision_avoidance.objects')), self._avoidance_links)

    def _publish_realtime_state(self, header):
        """/intera_rt/realtime_state on every change of what it reports (controller,
        zero-G, suppressions, avoidance, detections, contacts), else every
        REALTIME_STATE_PERIOD of loop time: its listeners (the motion controller and the
        JTAS, for zero-G) need changes at once, not 100 Hz of the same."""
        f, opt = self._field, self._optional
        key = (f('controller'), f('cuff'), tuple(f('suppress.' + w) for w in SUPPRESS_TOPICS.values()),
               opt('collision_avoidance.active'), f('collision'), opt('collision_detection.impact'),
               opt('collision_detection.squish'), opt('collision_detection.hand_overwrench'),
               f('contacts'), f('contact_at'), opt('collision_detection.detected_at'))
        key = tuple(None if isinstance(k, float) and math.isnan(k) else k for k in key)
        t = f('t')
        if key == self._realtime_key and t - self._realtime_at < REALTIME_STATE_PERIOD - 1e-9:
            return
        self._realtime_key, self._realtime_at = key, t
        self.pub_realtime.publish(self._realtime_state_msg(header))

    def _publish_homing(self):
        """/robot/homing_states on every change, else every HOMING_STATES_PERIOD of loop time
        (latched: a new subscriber has the latest at once)."""
        key = tuple(int(s) for s in self._field('homing'))
        t = self._field('t')
        if key == self._homing_key and t - self._homing_at < HOMING_STATES_PERIOD - 1e-9:
            return
        self._homing_key, self._homing_at = key, t
        self.pub_homing.publish(HomingState(name=list(ARM_JOINTS), state=list(key)))

    def _realtime_state_msg(self, header):
        f, opt = self._field, self._optional
        controller = CONTROLLER_NAMES[int(f('controller'))]
        detected = opt('collision_detection.detected_at')
        return RealtimeState(
            header=header, controller=controller, zero_g=controller == 'zero_g',
            cuff=bool(f('cuff')),
            suppressed=[what for what in SUPPRESS_TOPICS.values() if f('suppress.' + what)],
            collision_avoidance_active=bool(opt('collision_avoidance.active')),
            collision_avoidance_torque=list(opt('collision_avoidance.torque', np.zeros(7))),
            collision=bool(f('collision')), impact=bool(opt('collision_detection.impact')),
            squish=bool(opt('collision_detection.squish')),
            hand_overwrench=bool(opt('collision_detection.hand_overwrench')),
            halt_remaining=f('halt_left'),
            last_detection=self._loop_stamp(detected),
            external_torque=list(opt('collision_detection.external_torque', np.zeros(7))),
            sim_contacts=int(f('contacts')),
            sim_contact_began=self._loop_stamp(f('contact_at')))

    def _interaction_state_msg(self, header):
        """InteractionControlState: whether interaction control is active, and the parameters
        in force (the latest applied: after caps, max_impedance resolved for the pose,
        damping defaulted; stiffness and damping 0 on axes a force mode leaves them out)."""
        f = self._field
        flags = f('interaction.flags')
        return InteractionControlState(
            header=header, interaction_control_active=CONTROLLER_NAMES[int(f('controller'))] == 'interaction',
            K_impedance=f('interaction.K_impedance').tolist(), D_impedance=f('interaction.D_impedance').tolist(),
            endpoint_force_command=f('interaction.force_command').tolist(), endpoint_name='right_hand',
            in_endpoint_frame=bool(flags[0]), disable_damping_in_force_control=bool(flags[1]),
            disable_reference_resetting=bool(flags[2]), rotations_for_constrained_zeroG=bool(flags[3]))

    def _head_state_msg(self):
        return HeadState(pan=float(self._field('q')[7]), isTurning=bool(self._field('head_turning')),
                         isBlocked=False, panMode=int(self._field('pan_mode')))

    def _joint_limits_msg(self):
        names = list(ARM_JOINTS + HEAD_JOINTS)
        lim = self.model.limit_arrays(names)
        return JointLimits(joint_names=names, position_lower=lim['lower'].tolist(),
                           position_upper=lim['upper'].tolist(), velocity=lim['velocity'].tolist(),
                           accel=lim['accel'].tolist(), effort=lim['effort'].tolist())

    def _diagnostics_msg(self):
        summary = dict(self._stats)
        timeouts = summary.pop('command_timeouts', 0)
        level = DiagnosticStatus.OK if not summary.get('overruns') else DiagnosticStatus.WARN
        status = DiagnosticStatus(level=level, name='Realtime Control Loop', hardware_id='sawyer',
                                  message='%d overruns' % summary.get('overruns', 0))
        status.values = [KeyValue(k, '%.1f' % v if isinstance(v, float) else str(v))
                         for k, v in summary.items()]
        status.values.append(KeyValue('rate_hz', '%.0f' % (1.0 / PERIOD)))
        status.values.append(KeyValue('command_timeouts', str(timeouts)))
        return DiagnosticArray(header=Header(stamp=self.stamp()), status=[status])


def main(argv=None):
    # A thread waiting for the GIL gets it after 0.5 ms instead of 5: the subscriber
    # threads (commands) must not wait behind the state-building thread.
    sys.setswitchinterval(5e-4)
    init_node('realtime_loop', argv=argv, restore_params=True)
    try:
        loop = RealtimeLoop()
    except (ValueError, KeyError, RuntimeError, ImportError) as exc:
        rospy.logfatal('realtime_loop: %s', exc)
        sys.exit(2)
    loop.run()


if __name__ == '__main__':
    main(sys.argv)
