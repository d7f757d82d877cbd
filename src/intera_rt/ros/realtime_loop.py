"""realtime_loop: the node that owns the arm.

The 1 kHz loop itself runs in a process of its own (intera_rt.realtime.process), so that
rospy's threads never hold it off a tick. This node is its ROS adapter: subscriptions and
the sim-control services (ros.sim_control) become typed commands (control.commands) the
core applies between two ticks (every input takes effect at a tick boundary:
deterministic under sim time); the state the core sends every 10 ticks becomes the robot's
state topics (ros.realtime_state_msgs builds them). Pipe messages (realtime.pipe) are
dispatched by type.

Homing: /robot/homing_states (latched) on every change and every HOMING_STATES_PERIOD;
/robot/set_homing_mode becomes a HomingCommand. `~unhomed` boots the arm NOT_HOMED.
Zero-G input: the cuff's grasp and the navigator's circle buttons, as the IO devices
report them. Pacing: wall clock by default; with /use_sim_time the core is the clock (1 ms
of sim time per tick at `~speed` × real time, `max`: flat out) and this node publishes
/clock.
"""
import itertools
import math
import os
import select
import struct
import sys
import threading
import time

import genpy
import rospy
from diagnostic_msgs.msg import DiagnosticArray
from intera_core_msgs.msg import (CollisionAvoidanceState, CollisionDetectionState,
                                  EndpointState, EndpointStates, HeadPanCommand, HeadState,
                                  HomingCommand, HomingState, InteractionControlCommand,
                                  InteractionControlState, IODeviceStatus, JointCommand,
                                  JointLimits, RobotAssemblyState, SEAJointState)
from intera_rt_msgs.msg import RealtimeState, SafetyStatus
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64, Header
from std_srvs.srv import SetBool, SetBoolResponse

from intera_rt.boards import backend_class, check_backend
from intera_rt.control import commands as cmds
from intera_rt.control.registry import ADDITIVES, CONTROLLERS, MONITORS, check_stage_options
from intera_rt.model import RobotModel
from intera_rt.realtime import pipe
from intera_rt.realtime import process as rt_process
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, HEAD_NAMED_POSES, NAMED_POSES, SUPPRESS_TOPICS
from intera_rt.ros import realtime_state_msgs as msgs
from intera_rt.ros import robot_commands
from intera_rt.ros.carried_tool import CarriedTool
from intera_rt.ros.clock_timers import be_the_clock
from intera_rt.ros.direct import Throttle, joint_command_key, periodic_publisher, raw_class
from intera_rt.ros.node import init_node
from intera_rt.ros.gazebo_world import GazeboWorld
from intera_rt.ros.sim_control import SimControl
from intera_rt.ros.tip_states import TipStates

REALTIME_STATE_PERIOD = 0.1           # s of loop time between unchanged realtime_states
HOMING_STATES_PERIOD = 1.0            # s of loop time between unchanged homing_states
CALL_TIMEOUT = 10.0                   # s a sim-control service waits for the core
BOOT_TIMEOUT = 60.0                   # s the core may take to build its model
LOGS = {'warn': rospy.logwarn, 'error': rospy.logerr, 'info': rospy.loginfo}


def _wanted(pub):
    """Has the state topic `pub` a subscriber? One nobody listens to is skipped: building
    its message is the cost."""
    return pub.get_num_connections() > 0


def parse_pose(text, named=NAMED_POSES):
    """'neutral' / 'shipping' / 7 comma- or space-separated angles → 7 floats."""
    text = str(text).strip()
    if text in named:
        return [float(x) for x in named[text]]
    if text.startswith('-J'):
        return _gazebo_joint_states(text)
    parts = text.replace(',', ' ').split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 7 or not all(math.isfinite(v) for v in values):
        raise ValueError('pose %r: expected neutral, shipping or 7 finite joint angles' % text)
    return values


def _gazebo_joint_states(text):
    """sawyer_simulator's initial_joint_states ("-J sawyer::right_j0 -0.27 -J ..."), as
    gazebo_ros' spawn_model takes it: 7 arm angles, a joint not named at 0 (head_pan is
    taken and ignored: the head boots at its neutral)."""
    parts = text.split()
    if len(parts) % 3:
        raise ValueError('initial_joint_states %r: expected "-J sawyer::JOINT VALUE" triples' % text)
    angles = dict.fromkeys(ARM_JOINTS, 0.0)
    for flag, joint, value in zip(parts[0::3], parts[1::3], parts[2::3]):
        name = joint.split('::', 1)[-1]
        try:
            angle = float(value)
        except ValueError:
            angle = math.nan
        if flag != '-J' or (name not in angles and name != 'head_pan') or not math.isfinite(angle):
            raise ValueError('initial_joint_states: %s %s %s: expected -J sawyer::JOINT VALUE with '
                             'JOINT one of %s, head_pan and a finite value'
                             % (flag, joint, value, ', '.join(ARM_JOINTS)))
        if name in angles:
            angles[name] = angle
    return [angles[name] for name in ARM_JOINTS]


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
        # Boards with a world serve Gazebo's world API (ros.gazebo_world).
        self._has_world = 'world' in backend_class(backend).capabilities
        self.paused = bool(rospy.get_param('~paused', False))
        urdf = rospy.get_param('/robot_description', None)
        self.model = RobotModel(urdf) if urdf else RobotModel.from_file()
        q_arm = parse_pose(rospy.get_param('~pose', 'neutral'))
        lim = self.model.limit_arrays(ARM_JOINTS)
        for name, v, lo, hi in zip(ARM_JOINTS, q_arm, lim['lower'], lim['upper']):
            if not lo <= v <= hi:
                raise ValueError('pose: %s = %.4f is outside its limits [%.4f, %.4f]' % (name, v, lo, hi))
        q_head = HEAD_NAMED_POSES['neutral']
        self.q_arm = q_arm
        self._urdf = urdf or self.model.urdf_xml
        # The model terms SEAJointState reports are computed here, off the realtime path.
        self._armature = backend_class(backend).plant_model(self.model).limit_arrays(
            ARM_JOINTS)['armature']
        self._zero_g_inputs = {}         # device → pressed, as last sent to the core
        self._realtime_key, self._realtime_at = None, -math.inf   # last realtime_state sent
        self._homing_key, self._homing_at = None, -math.inf       # last homing_states sent
        # The arm's dynamics and avoidance shapes with the tool it carries (the core's).
        self.tool = CarriedTool(self.model, self._send,
                                with_links=msgs.HAS_AVOIDANCE or msgs.HAS_SAFETY_STATUS)
        self._status_key = None          # last safety_status sent
        self.state = None                # the core's latest state (a StateView)
        self._published_any = False      # a state from the core is out
        self._wall_offset = 0.0          # wall time minus loop time of that state's tick (one
                                         # float: read in one step by the service threads)
        self._joint_state_seq = 0        # header.seq of /robot/joint_states
        self._stats = {}
        self._replies = {}
        self._reply_ids = itertools.count()
        self._send_lock = threading.Lock()
        self._reply_cond = threading.Condition()
        self._options = self._stage_options()
        self.proc, self.conn = rt_process.start(dict(
            urdf=urdf, backend=backend, backend_options=backend_options, q_arm=q_arm,
            q_head=q_head, options=self._options,
            enabled=not rospy.get_param('~disabled', False),
            homed=not rospy.get_param('~unhomed', False), paused=self.paused, sim_time=self.sim_time,
            speed=self.speed, priority=int(rospy.get_param('~realtime_priority', 50)),
            tick_log=rospy.get_param('~tick_log', os.environ.get('INTERA_RT_TICK_LOG', ''))))
        # Boards that connect to something slow to start (Gazebo) may take their own timeout
        # on top: theirs fails first, with its reason, never this one.
        boot_timeout = BOOT_TIMEOUT + backend_class(backend).configure_timeout(backend_options)
        if not self.conn.poll(boot_timeout):
            raise RuntimeError('the realtime core did not start within %.0f s' % boot_timeout)
        ready = self.conn.recv()
        if not isinstance(ready, pipe.Ready):
            raise RuntimeError('the realtime core failed to start: %s'
                               % getattr(ready, 'reason', ready))
        self.state = StateView(ready.state)
        self._wall_offset = time.time() - self.state.t
        self.simulated = ready.simulated
        self._handlers = {pipe.StateFrame: self._on_state, pipe.Clock: self._on_clock,
                          pipe.Logs: self._on_logs, pipe.Stats: self._on_stats,
                          pipe.Reply: self._on_reply, pipe.WorldFrame: self._on_world}
        rospy.loginfo('realtime_loop: %s backend%s, %s, %s%s; core process %d: %s', backend,
                      ' %s' % backend_options if backend_options else '',
                      'sim time at %s x real time' % ('max' if math.isinf(self.speed) else self.speed)
                      if self.sim_time else 'wall clock',
                      'disabled' if rospy.get_param('~disabled', False) else 'enabled',
                      ', not homed' if rospy.get_param('~unhomed', False) else '',
                      self.proc.pid, ready.priority)
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
            for stage in MONITORS + ADDITIVES + CONTROLLERS:
                if 'armnav_urdf' in stage.OPTIONS:
                    options[stage.name].setdefault('armnav_urdf', armnav)
        # Before spawning the core: a misspelt or mistyped option stops boot at once.
        return check_stage_options(options)

    # --- talking to the core ---------------------------------------------------------
    def _send(self, command, reply=False):
        """Send a typed command (control.commands) to the core."""
        reply_id = next(self._reply_ids) if reply else None
        with self._send_lock:
            pipe.send(self.conn, pipe.Apply(command=command, reply_id=reply_id))
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

    def loop_time_offset(self):
        """ROS time minus loop time (0 under sim time, where they are one clock)."""
        return 0.0 if self.sim_time else self._wall_offset

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
            if msgs.HAS_INTERACTION else None
        self.pub_realtime = periodic('/intera_rt/realtime_state', RealtimeState)
        self.pub_head = periodic('/robot/head/head_state', HeadState)
        self.pub_safety = pub('/intera_rt/safety_status', SafetyStatus, queue_size=10, latch=True) \
            if msgs.HAS_SAFETY_STATUS else None
        self.pub_homing = pub('/robot/homing_states', HomingState, queue_size=10, latch=True)
        self.pub_diag = pub('/diagnostics', DiagnosticArray, queue_size=10)
        self.pub_limits = pub('/robot/joint_limits', JointLimits, queue_size=1, latch=True)
        self.pub_clock = periodic('/clock', Clock) if self.sim_time and not self._sim_clock else None
        # (this node's own ROS time is set as it publishes /clock, not heard back)
        self._set_time = be_the_clock() if self.pub_clock is not None else None
        self.pub_limits.publish(msgs.joint_limits_msg(self.model))
        self._publish_homing()

        sub = rospy.Subscriber
        send = self._send
        sub('/robot/set_super_enable', Bool, lambda m: send(cmds.SetEnable(on=m.data)), queue_size=10)
        sub('/robot/set_super_stop', Empty, lambda _: send(cmds.Stop()), queue_size=10)
        sub('/robot/set_super_reset', Empty, lambda _: send(cmds.Reset()), queue_size=10)
        sub('/robot/set_homing_mode', HomingCommand,
            lambda m: send(robot_commands.homing_command(m)), queue_size=10)
        # Read in batches (every message one read of a connection brings), coalesced: of the
        # commands with the same mode and names only the latest is deserialized and sent to
        # the core (a client streaming at 10 kHz sends ten per tick; test_faults floods it).
        commands = sub(ns + 'joint_command', raw_class(JointCommand), lambda m: None,
                       queue_size=20, tcp_nodelay=True)
        commands.impl.receive_callback = self._on_joint_commands
        sub(ns + 'joint_command_timeout', Float64, lambda m: send(cmds.SetTimeout(seconds=m.data)),
            queue_size=10)
        sub(ns + 'set_speed_ratio', Float64, lambda m: send(cmds.SetSpeedRatio(ratio=m.data)),
            queue_size=10)
        for topic, what in SUPPRESS_TOPICS.items():
            sub(ns + topic, Empty, lambda _, what=what: send(cmds.Suppress(what=what)), queue_size=10)
        sub('/robot/head/command_head_pan', HeadPanCommand,
            lambda m: send(robot_commands.head_command(m)), queue_size=10)
        # URDF fragments (/robot/urdf; the gripper device sends its own) and the tips clients
        # ask for: tip_states; what the fragments weigh: the core's dynamics and plant.
        self.tips = TipStates(self.model, on_change=lambda _: self.tool.on_model_change(
            self.tips.fragments.manager))
        sub(ns + 'interaction_control_command', InteractionControlCommand,
            lambda m: send(robot_commands.interaction_command(m)), queue_size=10)
        # Zero-G inputs, as the IO devices report them.
        sub('/io/robot/cuff/state', IODeviceStatus,
            lambda m: self._on_zero_g_input('cuff', m, robot_commands.CUFF_SIGNALS), queue_size=10)
        sub('/io/robot/navigator/state', IODeviceStatus,
            lambda m: self._on_zero_g_input('navigator', m, robot_commands.NAVIGATOR_SIGNALS),
            queue_size=10)
        if msgs.HAS_SAFETY_STATUS:
            rospy.Service('/intera_rt/bypass_speed_scaling', SetBool, self._bypass_speed_scaling)
        # Sim control (/intera_rt/sim/*): E-stop button, error, external wrench, pose reset,
        # obstacles.
        # Gazebo's world API (/gazebo/*) where the boards have a world.
        self.gazebo = GazeboWorld(self._call, self._urdf, self, self.q_arm, self.paused, self._send) \
            if self.simulated and self._has_world else None
        self.sim_control = SimControl(self._call, self.gazebo.obstacles_changed if self.gazebo else None) \
            if self.simulated else None
        self._world_file = rospy.get_param('~world', '')
        if self._world_file and self.gazebo is None:
            raise ValueError('~world: the %s backend has no world' % rospy.get_param('~backend', 'embedded'))

    # --- inputs -----------------------------------------------------------------------
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
            self._send(robot_commands.joint_command(msg, self.loop_time_offset()))

    def _bypass_speed_scaling(self, req):
        """/intera_rt/bypass_speed_scaling (std_srvs/SetBool): true lifts the speed scaling
        for safety_status's bypass_timeout, false re-arms it now."""
        ok, message = self._call(cmds.BypassSpeedScaling(on=bool(req.data)))
        (rospy.logwarn if req.data and ok else rospy.loginfo)('bypass_speed_scaling: %s', message)
        return SetBoolResponse(success=ok, message=message)

    def _on_zero_g_input(self, source, msg, signals):
        """A device state: any of `signals` nonzero asks for zero-G (the core decides)."""
        pressed = robot_commands.zero_g_pressed(msg, signals)
        if pressed != self._zero_g_inputs.get(source):
            self._zero_g_inputs[source] = pressed
            self._send(cmds.CuffInput(source=source, pressed=pressed))

    # --- outputs ------------------------------------------------------------------------
    def run(self):
        """Receive what the core sends and publish it, until shutdown."""
        if not self.sim_time:
            self._adapter_priority()
        rospy.on_shutdown(self._quit)
        if self._world_file:            # (its spawns are answered by this loop)
            threading.Thread(target=self._load_world, daemon=True).start()
        # (select.poll once: Connection.poll builds a selector on every call, a tenth of this
        # node's CPU in lockstep)
        poller = select.poll()
        poller.register(self.conn.fileno(), select.POLLIN)
        while not rospy.is_shutdown():
            try:
                if not poller.poll(500):
                    if not self.proc.is_alive():
                        rospy.logfatal('realtime_loop: the realtime core exited (code %s)',
                                       self.proc.exitcode)
                        rospy.signal_shutdown('realtime core exited')
                    continue
                msg = self.conn.recv()
            except (EOFError, OSError):
                self._lost_core()
                break
            handler = self._handlers.get(type(msg))
            if handler is None:
                rospy.logerr('realtime_loop: the core sent a %s, which this node does not take',
                             type(msg).__name__)
            else:
                try:
                    handler(msg)
                except (BrokenPipeError, ConnectionResetError):    # (a reply to the core)
                    self._lost_core()
                    break

    def _lost_core(self):
        if not rospy.is_shutdown():     # (at shutdown the core may exit first: no news)
            rospy.logfatal('realtime_loop: lost the realtime core')
            rospy.signal_shutdown('realtime core lost')

    def _load_world(self):
        try:
            loaded = self.gazebo.load(self._world_file)
        except ValueError as exc:                       # (WorldError)
            rospy.logfatal('realtime_loop: %s', exc)
            rospy.signal_shutdown('bad world file')
            return
        rospy.loginfo('realtime_loop: world %s: %s', self._world_file, ', '.join(loaded.names()))

    def _publish_clock(self, stamp):
        self._set_time(stamp)
        self.pub_clock.publish(Clock(clock=stamp))

    def _on_clock(self, msg):
        self._publish_clock(rospy.Time.from_sec(msg.t))

    def _on_state(self, msg):
        if self._published_any and self.gazebo is not None and self.gazebo.paused \
                and msg.state[0] == self.state.t:
            # Physics paused: the same state again, to show the robot is alive (/robot/state
            # only: the others would repeat their stamps on /tf and to their listeners).
            if msg.clock:                # (the clock stands, as Gazebo's does paused)
                self._publish_clock(self.stamp())
            self.pub_state.publish(msgs.robot_state_msg(self.state))
            return
        state = StateView(msg.state)
        self._wall_offset, self.state = msg.wall_time - state.t, state
        self._published_any = True
        stamp = self.stamp()             # (one ROS time a state: /clock's is the stamp, sim time)
        if msg.clock:                    # /clock first: the state's stamp is not in the future
            self._publish_clock(stamp)
        header = Header(stamp=stamp)
        self._publish_joint_states(header)
        if self.sim_time:
            # Lockstep: the core may go on (process.RUN_AHEAD) once the nodes have the
            # state's time and its joints, what a client keeps time and closes a loop with;
            # the state's other topics go out as it ticks on (waiting for them too cost
            # lockstep 12-16 % of its speed: issue 24).
            tick = int(self.state.tick)
            if self.proc.lockstep.published(tick):      # it waits for this: wake it
                with self._send_lock:
                    pipe.send(self.conn, pipe.Published(tick=tick))
        self._publish_state(header)
        if self.gazebo is not None:
            self.gazebo.publish()

    def _on_world(self, msg):
        if self.gazebo is not None:
            self.gazebo.on_world(msg)

    def _on_logs(self, msg):
        for level, key, text in msg.entries:
            self.log_throttled(LOGS[level], key, text)

    def _on_stats(self, msg):
        self._stats = msg.summary
        self.pub_diag.publish(msgs.diagnostics_msg(self._stats, self.stamp()))

    def _on_reply(self, msg):
        with self._reply_cond:
            self._replies[msg.reply_id] = msg.result
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
                pipe.send(self.conn, pipe.Quit())
        except (OSError, ValueError):
            pass
        self.proc.join(2.0)
        if self.proc.is_alive():
            self.proc.terminate()

    def stamp(self):
        """The latest state's time as a ROS time."""
        return self.stamp_at(self.state.t)

    def stamp_at(self, t):
        """A loop time (s) as a ROS time."""
        return rospy.Time.from_sec(t if self.sim_time else t + self._wall_offset)

    def _publish_joint_states(self, header):
        if _wanted(self.pub_joints):
            self._joint_state_seq += 1
            self.pub_joints.publish(msgs.joint_state_msg(self.state, header.stamp, self._joint_state_seq))

    def _publish_state(self, header):
        """The state's topics but /robot/joint_states (_publish_joint_states)."""
        view = self.state
        if _wanted(self.pub_sea):
            self.pub_sea.publish(msgs.sea_msg(view, header, self.tool.dynamics, self._armature))
        all_tips = _wanted(self.pub_tips)
        if all_tips or _wanted(self.pub_endpoint):
            model, names = self.tips.view
            names = names if all_tips else names[:1]
            tips = [msgs.endpoint_msg(view, model, self.tool.dynamics, tip, header.stamp) for tip in names]
            self.pub_endpoint.publish(tips[0])
            if all_tips:
                self.pub_tips.publish(EndpointStates(header=Header(stamp=header.stamp, frame_id='base'),
                                                     names=list(names), states=tips))
        self.pub_state.publish(msgs.robot_state_msg(view))
        if _wanted(self.pub_head):
            self.pub_head.publish(msgs.head_state_msg(view))
        if _wanted(self.pub_collision):
            self.pub_collision.publish(CollisionDetectionState(
                header=header, collision_state=bool(view.collision)))
        if _wanted(self.pub_avoidance):
            self.pub_avoidance.publish(CollisionAvoidanceState(
                header=header, other_arm=False,
                collision_object=msgs.avoidance_objects(view, self.tool.avoidance_links)))
        if _wanted(self.pub_realtime):
            self._publish_realtime_state(header)
        if self.pub_safety is not None:
            self._publish_safety_status(header)
        self._publish_homing()
        if self.pub_interaction is not None and _wanted(self.pub_interaction):
            self.pub_interaction.publish(msgs.interaction_state_msg(view, header))

    def _loop_stamp(self, t):
        """A loop time as a ROS time (0 for none: NaN)."""
        return self.stamp_at(t) if math.isfinite(t) and t > 0 else rospy.Time()

    def _publish_realtime_state(self, header):
        """/intera_rt/realtime_state on every change of what it reports (controller,
        zero-G, suppressions, avoidance, detections, contacts), else every
        REALTIME_STATE_PERIOD of loop time: its listeners (the motion controller and the
        JTAS, for zero-G) need changes at once, not 100 Hz of the same."""
        key, t = msgs.realtime_state_key(self.state), self.state.t
        if key == self._realtime_key and t - self._realtime_at < REALTIME_STATE_PERIOD - 1e-9:
            return
        self._realtime_key, self._realtime_at = key, t
        self.pub_realtime.publish(msgs.realtime_state_msg(self.state, header, self._loop_stamp))

    def _publish_safety_status(self, header):
        """/intera_rt/safety_status (latched) whenever what it reports changes."""
        key = msgs.safety_status_key(self.state, self.tool.avoidance_links)
        if key == self._status_key:
            return
        self._status_key = key
        scaling = self._options.get('collision_avoidance', {}).get('velocity_scaling', False)
        self.pub_safety.publish(msgs.safety_status_msg(self.state, header, self.tool.avoidance_links,
                                                       scaling))

    def _publish_homing(self):
        """/robot/homing_states on every change, else every HOMING_STATES_PERIOD of loop time
        (latched: a new subscriber has the latest at once)."""
        key, t = msgs.homing_key(self.state), self.state.t
        if key == self._homing_key and t - self._homing_at < HOMING_STATES_PERIOD - 1e-9:
            return
        self._homing_key, self._homing_at = key, t
        self.pub_homing.publish(msgs.homing_msg(self.state))


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
