"""realtime_loop: the node that owns the arm.

One 1 kHz loop reads the joint boards, runs the robot state machine and the joint
controller, writes torques and publishes the robot's state topics. ROS callbacks never
touch the core: they queue closures that the loop runs at the start of its next tick, so
every input takes effect at a tick boundary (deterministic under sim time).

Pacing: wall clock by default; with /use_sim_time the loop is the clock — it publishes
/clock and advances 1 ms of sim time per tick at `~speed` × real time (`max`: flat out).
"""
import collections
import math
import os
import sys
import threading
import time

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Pose, Twist, Wrench
from intera_core_msgs.msg import (CollisionDetectionState, EndpointState, EndpointStates,
                                  HeadPanCommand, HeadState, HomingCommand, HomingState,
                                  InteractionControlCommand, JointCommand, JointLimits, RobotAssemblyState, SEAJointState)
from intera_rt_msgs.srv import (ApplyWrench, ApplyWrenchResponse, SetJointPositions,
                                SetJointPositionsResponse)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Bool, Empty, Float64, Header
from std_srvs.srv import SetBool, SetBoolResponse

from intera_rt.boards import make_boards
from intera_rt.control import (CommandRejected, JointCommandData, JointController,
                               RobotStateMachine)
from intera_rt.control.joint_control import HeadController
from intera_rt.model import ARM_JOINTS, HEAD_JOINTS, RobotModel

PERIOD = 0.001                        # s, one tick
PUBLISH_EVERY = 10                    # ticks: state topics at 100 Hz
# Joint order of /robot/joint_states (documented in README): head first, as the robot does.
JOINT_STATE_ORDER = HEAD_JOINTS + ARM_JOINTS
TIP_NAMES = ('right_hand', 'right_hand_camera')
SIM_NS = '/intera_rt/sim/'
LOG_EVERY = 2.0                       # s between repeats of one throttled log line


class Throttle:
    """Logs a given kind of complaint at most once per LOG_EVERY wall seconds."""

    def __init__(self):
        self._last = {}

    def __call__(self, log, key, text):
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) >= LOG_EVERY:
            self._last[key] = now
            log(text)


class TickStats:
    """Tick compute times (s) over the last second, and totals since boot. With a log
    path, every full window is appended to it as float32 pairs (compute µs, lateness µs:
    how far past its deadline the tick ended), for scripts/bench's percentiles."""

    def __init__(self, window=1000, log_path=''):
        self.window = np.zeros(window)
        self.late = np.zeros(window)
        self.count = 0
        self.overruns = 0
        self.max_ever = 0.0
        self.log_path = log_path
        if log_path:
            open(log_path, 'wb').close()

    def add(self, compute, overrun, late=0.0):
        k = self.count % len(self.window)
        self.window[k] = compute
        self.late[k] = late
        self.count += 1
        self.overruns += int(overrun)
        self.max_ever = max(self.max_ever, compute)
        if self.log_path and k == len(self.window) - 1:
            with open(self.log_path, 'ab') as f:
                f.write((1e6 * np.column_stack([self.window, self.late])).astype(np.float32).tobytes())

    def summary(self):
        w = self.window[:min(self.count, len(self.window))]
        if not len(w):
            return {}
        return {'mean_us': 1e6 * float(w.mean()), 'p99_us': 1e6 * float(np.percentile(w, 99)),
                'max_us': 1e6 * float(w.max()), 'max_since_boot_us': 1e6 * self.max_ever,
                'overruns': self.overruns, 'ticks': self.count}


def parse_pose(text, named):
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


class RealtimeLoop:
    def __init__(self):
        self.log_throttled = Throttle()
        self.sim_time = bool(rospy.get_param('/use_sim_time', False))
        speed = str(rospy.get_param('~speed', '1.0')).strip().lower()
        self.speed = math.inf if speed == 'max' else float(speed)
        if not self.speed > 0:
            raise ValueError('~speed must be > 0 or "max", got %r' % speed)
        urdf = rospy.get_param('/robot_description', None)
        self.model = RobotModel(urdf) if urdf else RobotModel.from_file()
        self.boards = make_boards(rospy.get_param('~backend', 'embedded'), self.model)
        self.arm_idx = np.array([self.boards.joint_names.index(n) for n in ARM_JOINTS])
        self.head_idx = self.boards.joint_names.index('head_pan')
        self.state = RobotStateMachine(enabled=not rospy.get_param('~disabled', False))
        self.control = JointController(self.model)
        self.head = HeadController(self.model)
        named = rospy.get_param('/named_poses/right/poses', {})
        q_arm = parse_pose(rospy.get_param('~pose', 'neutral'), named)
        lim = self.model.limit_arrays(ARM_JOINTS)
        for name, v, lo, hi in zip(ARM_JOINTS, q_arm, lim['lower'], lim['upper']):
            if not lo <= v <= hi:
                raise ValueError('pose: %s = %.4f is outside its limits [%.4f, %.4f]' % (name, v, lo, hi))
        q_head = float(rospy.get_param('/named_poses/head/poses/neutral', [0.0])[0])
        self._set_positions(dict(zip(ARM_JOINTS + HEAD_JOINTS, list(q_arm) + [q_head])))
        self.inbox = collections.deque()
        self.now = 0.0                  # s of loop time since boot (sim time under lockstep)
        self.tick_count = 0
        self.stats = TickStats(log_path=rospy.get_param('~tick_log', os.environ.get(
            'INTERA_RT_TICK_LOG', '')))
        self.priority = int(rospy.get_param('~realtime_priority', 50))
        # /clock once per tick in real time; faster than real time, at most ~1 kHz of wall
        # time and at least every 10 ms of sim time: every sim-time node wakes on each one.
        self.clock_every = 1 if self.speed <= 1.0 else int(math.ceil(min(10.0, self.speed)))
        self.collision = False
        self._last_reading = self.boards.read()
        self._last_output = None
        self._tip_msgs = []
        self.head_display = None        # last image sent to the head screen
        self._cuff_suppressed_until = -math.inf
        self._setup_ros()

    # --- ROS wiring ------------------------------------------------------------------
    def _setup_ros(self):
        pub = rospy.Publisher
        self.pub_state = pub('/robot/state', RobotAssemblyState, queue_size=10)
        self.pub_joints = pub('/robot/joint_states', JointState, queue_size=10, tcp_nodelay=True)
        ns = '/robot/limb/right/'
        self.pub_endpoint = pub(ns + 'endpoint_state', EndpointState, queue_size=10, tcp_nodelay=True)
        self.pub_tips = pub(ns + 'tip_states', EndpointStates, queue_size=10, tcp_nodelay=True)
        self.pub_sea = pub(ns + 'gravity_compensation_torques', SEAJointState, queue_size=10)
        self.pub_collision = pub(ns + 'collision_detection_state', CollisionDetectionState, queue_size=10)
        self.pub_head = pub('/robot/head/head_state', HeadState, queue_size=10)
        self.pub_homing = pub('/robot/homing_states', HomingState, queue_size=10, latch=True)
        self.pub_diag = pub('/diagnostics', DiagnosticArray, queue_size=10)
        self.pub_limits = pub('/robot/joint_limits', JointLimits, queue_size=1, latch=True)
        self.pub_clock = pub('/clock', Clock, queue_size=10) if self.sim_time else None
        self.pub_limits.publish(self._joint_limits_msg())
        self.pub_homing.publish(HomingState(name=list(ARM_JOINTS), state=[HomingState.HOMED] * 7))

        def queued(handler):
            return lambda msg: self.inbox.append(lambda: handler(msg))

        sub = rospy.Subscriber
        sub('/robot/set_super_enable', Bool, queued(self._on_enable), queue_size=10)
        sub('/robot/set_super_stop', Empty, queued(self._on_stop), queue_size=10)
        sub('/robot/set_super_reset', Empty, queued(self._on_reset), queue_size=10)
        sub('/robot/set_homing_mode', HomingCommand, queued(self._on_homing), queue_size=10)
        sub(ns + 'joint_command', JointCommand, queued(self._on_joint_command), queue_size=20,
            tcp_nodelay=True)
        sub(ns + 'joint_command_timeout', Float64, queued(self._on_timeout), queue_size=10)
        sub(ns + 'set_speed_ratio', Float64, queued(self._on_speed_ratio), queue_size=10)
        sub(ns + 'suppress_gravity_compensation', Empty,
            queued(lambda _: self.control.suppress_gravity(self.now)), queue_size=10)
        sub('/robot/head/command_head_pan', HeadPanCommand, queued(self._on_head), queue_size=10)
        sub('/robot/head_display', Image, queued(self._on_head_display), queue_size=2)
        # Accepted now so clients work; cuff zero-G and interaction control come later.
        sub(ns + 'suppress_cuff_interaction', Empty,
            queued(lambda _: setattr(self, '_cuff_suppressed_until', self.now + 0.2)), queue_size=10)
        sub(ns + 'interaction_control_command', InteractionControlCommand,
            queued(self._on_interaction), queue_size=10)
        # Sim control (one namespace): E-stop button, error, external wrench, pose reset.
        if self.boards.simulated:
            rospy.Service(SIM_NS + 'estop_button', SetBool, self._sync(self._sim_estop, SetBoolResponse))
            rospy.Service(SIM_NS + 'error', SetBool, self._sync(self._sim_error, SetBoolResponse))
            rospy.Service(SIM_NS + 'apply_wrench', ApplyWrench,
                          self._sync(self._sim_wrench, ApplyWrenchResponse))
            rospy.Service(SIM_NS + 'set_joint_positions', SetJointPositions,
                          self._sync(self._sim_positions, SetJointPositionsResponse))

    def _sync(self, handler, response_type):
        """A service handler that runs `handler(req)` inside the loop and returns its
        (success, message) once the loop has applied it."""
        def serve(req):
            done = threading.Event()
            result = {}

            def apply():
                try:
                    result['r'] = handler(req)
                except Exception as exc:  # a bad request must never stop the loop
                    result['r'] = (False, '%s: %s' % (type(exc).__name__, exc))
                done.set()
            self.inbox.append(apply)
            if not done.wait(10.0):
                return response_type(False, 'the realtime loop did not answer within 10 s')
            return response_type(*result['r'])
        return serve

    # --- inputs (run inside the loop) ------------------------------------------------
    def _on_enable(self, msg):
        why = self.state.set_enable(msg.data)
        if why:
            self.log_throttled(rospy.logwarn, 'enable', 'set_super_enable: ' + why)

    def _on_stop(self, _msg):
        self.state.stop()

    def _on_reset(self, _msg):
        why = self.state.reset()
        if why:
            self.log_throttled(rospy.logwarn, 'reset', 'set_super_reset: ' + why)

    def _on_homing(self, msg):
        # The arm boots homed (absolute encoders); homing requests succeed at once.
        self.pub_homing.publish(HomingState(name=list(ARM_JOINTS), state=[HomingState.HOMED] * 7))

    def _on_joint_command(self, msg):
        why = self.state.why_not_moving()
        if why:
            self.log_throttled(rospy.logwarn, 'cmd-ignored', 'joint_command ignored: %s' % why)
            return
        stamp = msg.header.stamp
        # header.stamp in loop time (loop time = ROS time under sim time; offset otherwise).
        t_cmd = None if stamp.is_zero() else self.now + (stamp.to_sec() - self.stamp().to_sec())
        cmd = JointCommandData(msg.mode, msg.names, msg.position, msg.velocity,
                               msg.acceleration, msg.effort, t_cmd)
        try:
            warnings = self.control.command(cmd, self.now, self._last_reading.position[self.arm_idx])
        except CommandRejected as exc:
            # One throttled line per kind of problem: a stream of differing bad values
            # must not flood the log.
            self.log_throttled(rospy.logerr, 'cmd-rejected:' + exc.kind,
                               'joint_command rejected: %s' % exc)
            return
        for w in warnings:
            self.log_throttled(rospy.logwarn, 'cmd-saturated', 'joint_command: %s' % w)

    def _on_timeout(self, msg):
        try:
            value = self.control.set_timeout(msg.data)
        except CommandRejected as exc:
            self.log_throttled(rospy.logerr, 'timeout', str(exc))
            return
        if value != msg.data:
            self.log_throttled(rospy.logwarn, 'timeout-clamped', 'joint_command_timeout %r clamped '
                               'to %.1f s' % (msg.data, value))

    def _on_speed_ratio(self, msg):
        try:
            self.control.set_speed_ratio(msg.data)
        except CommandRejected as exc:
            self.log_throttled(rospy.logerr, 'speed', str(exc))

    def _on_head(self, msg):
        why = self.state.why_not_moving()
        if why:
            self.log_throttled(rospy.logwarn, 'head-ignored', 'command_head_pan ignored: %s' % why)
            return
        try:
            self.head.command(msg.target, msg.speed_ratio,
                              None if msg.pan_mode == HeadPanCommand.NO_MODE_CHANGE else msg.pan_mode)
        except CommandRejected as exc:
            self.log_throttled(rospy.logerr, 'head', 'command_head_pan rejected: %s' % exc)

    def _on_head_display(self, msg):
        self.head_display = msg
        self.log_throttled(rospy.loginfo, 'display', 'head display: %dx%d %s image'
                           % (msg.width, msg.height, msg.encoding))

    def _on_interaction(self, msg):
        if msg.interaction_control_active:
            self.log_throttled(rospy.logwarn, 'interaction',
                               'interaction_control_command accepted, but interaction control is not '
                               'implemented yet: the arm stays position-controlled')

    def _sim_estop(self, req):
        if req.data:
            self.state.press_estop()
            return True, 'E-stop button pressed'
        self.state.release_estop()
        return True, 'E-stop button released (the robot stays stopped until reset)'

    def _sim_error(self, req):
        self.state.set_error(req.data)
        return True, 'error %s' % ('set' if req.data else 'cleared')

    def _sim_wrench(self, req):
        w = req.wrench
        values = [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]
        if not all(math.isfinite(v) for v in values) or not (math.isfinite(req.duration) and req.duration > 0):
            return False, 'wrench and duration must be finite, duration > 0 (got duration %r)' % req.duration
        if not self.model.has_frame(req.link):
            return False, 'no link named %r in the robot model' % req.link
        self.boards.apply_wrench(req.link, values, req.duration)
        return True, 'applying %s on %s for %.3f s' % (values, req.link, req.duration)

    def _sim_positions(self, req):
        names = list(req.names) or list(ARM_JOINTS)
        if len(names) != len(req.positions):
            return False, '%d names but %d positions' % (len(names), len(req.positions))
        for name, value in zip(names, req.positions):
            if name not in self.model.limits or name not in self.boards.joint_names:
                return False, 'unknown joint %r' % name
            lim = self.model.limits[name]
            if not (math.isfinite(value) and lim.lower <= value <= lim.upper):
                return False, '%s = %r is outside its limits [%.4f, %.4f]' % (name, value, lim.lower, lim.upper)
        self._set_positions(dict(zip(names, req.positions)))
        return True, 'joints set'

    def _set_positions(self, values):
        q = self.boards.read().position
        for name, v in values.items():
            q[self.boards.joint_names.index(name)] = v
        self.boards.reset_pose(q)
        self.control.reset(q[self.arm_idx])
        self.head.reset(q[self.head_idx])
        self._last_reading = self.boards.read()

    # --- the tick --------------------------------------------------------------------
    def tick(self):
        while self.inbox:
            self.inbox.popleft()()
        reading = self.boards.read()
        self._last_reading = reading
        q, qd = reading.position, reading.velocity
        moving = self.state.motion_allowed
        torque = np.zeros(len(self.boards.joint_names))
        if moving:
            if self.boards.brakes:
                self.control.reset(q[self.arm_idx])
                self.head.reset(q[self.head_idx])
                self.boards.set_brakes(False)
            out = self.control.tick(self.now, PERIOD, q[self.arm_idx], qd[self.arm_idx])
            torque[self.arm_idx] = out.torque
            torque[self.head_idx] = self.head.tick(PERIOD, q[self.head_idx], qd[self.head_idx])
            self._last_output = out
        elif not self.boards.brakes:
            self.boards.set_brakes(True)
            self._last_output = None
        self.boards.write(torque)
        self.boards.advance(PERIOD)
        self.now = (self.tick_count + 1) * PERIOD
        self.tick_count += 1
        self._publish(self.tick_count % PUBLISH_EVERY)

    def stamp(self):
        return rospy.Time.from_sec(self.now) if self.sim_time else rospy.Time.now()

    def _publish(self, phase):
        # Spread the 100 Hz topics over the ten ticks of each 10 ms.
        if self.pub_clock is not None and self.tick_count % self.clock_every == 0:
            self.pub_clock.publish(Clock(clock=rospy.Time.from_sec(self.now)))
        if phase == 0:
            self.pub_joints.publish(self._joint_state_msg())
        elif phase == 1:
            self._tip_msgs = [self._endpoint_msg(TIP_NAMES[0])]
            self.pub_endpoint.publish(self._tip_msgs[0])
        elif phase == 6:
            self._tip_msgs += [self._endpoint_msg(tip) for tip in TIP_NAMES[1:]]
            self.pub_tips.publish(EndpointStates(header=self._header('base'), names=list(TIP_NAMES),
                                                 states=self._tip_msgs))
        elif phase == 2:
            self.pub_state.publish(self._robot_state_msg())
        elif phase == 3:
            self.pub_sea.publish(self._sea_msg())
        elif phase == 4:
            self.pub_head.publish(self._head_state_msg())
            self.pub_collision.publish(CollisionDetectionState(
                header=self._header(), collision_state=self.collision))
        elif phase == 5 and self.tick_count % 1000 == 5:
            self.pub_diag.publish(self._diagnostics_msg())

    def _header(self, frame_id=''):
        return Header(stamp=self.stamp(), frame_id=frame_id)

    def _joint_state_msg(self):
        r = self._last_reading
        order = [self.boards.joint_names.index(n) for n in JOINT_STATE_ORDER]
        return JointState(header=self._header(), name=list(JOINT_STATE_ORDER),
                          position=r.position[order].tolist(), velocity=r.velocity[order].tolist(),
                          effort=r.effort[order].tolist())

    def _endpoint_msg(self, tip):
        r = self._last_reading
        q, qd = r.position[self.arm_idx], r.velocity[self.arm_idx]
        chain = self.model.chain(tip)
        n = chain.n
        p, quat = chain.fk(q[:n])
        jac = chain.jacobian(q[:n])
        twist = jac @ qd[:n]
        # The wrench the arm exerts at the tip, from what the joints transmit beyond gravity.
        tau_ext = r.effort[self.arm_idx][:n] - chain.gravity(q[:n])
        wrench = np.linalg.lstsq(jac.T, tau_ext, rcond=1e-3)[0]
        msg = EndpointState(header=self._header('base'), valid=True)
        msg.pose = Pose()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = p
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = quat
        msg.twist = Twist()
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = twist[:3]
        msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z = twist[3:]
        msg.wrench = Wrench()
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = wrench[:3]
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = wrench[3:]
        return msg

    def _robot_state_msg(self):
        s = self.state
        return RobotAssemblyState(homed=s.homed, ready=s.ready, enabled=s.enabled, stopped=s.stopped,
                                  error=s.error, lowVoltage=s.low_voltage, estop_button=s.estop_button,
                                  estop_source=s.estop_source)

    def _sea_msg(self):
        r = self._last_reading
        q, qd, eff = (r.position[self.arm_idx], r.velocity[self.arm_idx], r.effort[self.arm_idx])
        out = self._last_output
        zeros = [0.0] * 7
        gravity = self.model.arm.gravity(q).tolist()
        msg = SEAJointState(header=self._header(), name=list(ARM_JOINTS),
                            actual_position=q.tolist(), actual_velocity=qd.tolist(),
                            actual_effort=eff.tolist(), interaction_torque=zeros,
                            hysteresis_model_effort=zeros, crosstalk_model_effort=zeros)
        if out is None:                       # brakes on: nothing commanded
            msg.commanded_position, msg.commanded_velocity = q.tolist(), zeros
            msg.commanded_acceleration, msg.commanded_effort = zeros, zeros
            msg.gravity_model_effort, msg.gravity_only = gravity, gravity
        else:
            msg.commanded_position = out.commanded_position.tolist()
            msg.commanded_velocity = out.commanded_velocity.tolist()
            msg.commanded_acceleration = out.commanded_acceleration.tolist()
            msg.commanded_effort = out.commanded_effort.tolist()
            msg.gravity_model_effort = out.gravity_model_effort.tolist()
            msg.gravity_only = out.gravity_only.tolist()
        return msg

    def _head_state_msg(self):
        q = float(self._last_reading.position[self.head_idx])
        return HeadState(pan=q, isTurning=self.head.turning(q), isBlocked=False,
                         panMode=self.head.pan_mode)

    def _joint_limits_msg(self):
        names = list(ARM_JOINTS + HEAD_JOINTS)
        lim = self.model.limit_arrays(names)
        return JointLimits(joint_names=names, position_lower=lim['lower'].tolist(),
                           position_upper=lim['upper'].tolist(), velocity=lim['velocity'].tolist(),
                           accel=lim['accel'].tolist(), effort=lim['effort'].tolist())

    def _diagnostics_msg(self):
        summary = self.stats.summary()
        level = DiagnosticStatus.OK if not summary.get('overruns') else DiagnosticStatus.WARN
        status = DiagnosticStatus(level=level, name='Realtime Control Loop', hardware_id='sawyer',
                                  message='%d overruns' % summary.get('overruns', 0))
        status.values = [KeyValue(k, '%.1f' % v if isinstance(v, float) else str(v))
                         for k, v in summary.items()]
        status.values.append(KeyValue('rate_hz', '%.0f' % (1.0 / PERIOD)))
        status.values.append(KeyValue('command_timeouts', str(self.control.timeouts)))
        return DiagnosticArray(header=self._header(), status=[status])

    # --- pacing ----------------------------------------------------------------------
    def run(self):
        rospy.loginfo('realtime_loop: %s backend, %s, %s', type(self.boards).__name__,
                      'sim time at %s x real time' % ('max' if math.isinf(self.speed) else self.speed)
                      if self.sim_time else 'wall clock',
                      'enabled' if self.state.enabled else 'disabled')
        wall_period = 0.0 if (self.sim_time and math.isinf(self.speed)) else PERIOD / (
            self.speed if self.sim_time else 1.0)
        if not self.sim_time:        # sim time may run flat out: keep it an ordinary thread
            self._realtime_priority()
        start = time.perf_counter()
        k = 0
        while not rospy.is_shutdown():
            t0 = time.perf_counter()
            self.tick()
            t1 = time.perf_counter()
            k += 1
            deadline = start + k * wall_period
            late = t1 - deadline
            overrun = (t1 - t0) > PERIOD or late > PERIOD
            self.stats.add(t1 - t0, overrun and wall_period > 0, max(0.0, late))
            if wall_period == 0.0:
                continue
            if late > 10 * PERIOD:
                start, k = t1, 0          # fell far behind (debugger, suspend): resync
                continue
            # Sleep most of the way, then spin the last few tens of µs for a precise edge.
            remaining = deadline - time.perf_counter()
            if remaining > 2e-4:
                time.sleep(remaining - 1.5e-4)
            while time.perf_counter() < deadline:
                pass


    def _realtime_priority(self):
        """SCHED_FIFO for the loop thread, as on the robot: the loop then runs the moment its
        tick is due instead of queueing behind client processes. It sleeps most of each
        period, so it never starves them. Needs root or CAP_SYS_NICE; without, it says so."""
        if self.priority <= 0:
            return
        try:
            # rospy's threads in this process get the priority just below: the loop waits
            # for whichever of them holds the GIL, so they must not queue behind other
            # processes either (priority inversion). Threads they start inherit it.
            for tid in os.listdir('/proc/self/task'):
                if int(tid) != threading.get_native_id():
                    os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(self.priority - 1))
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))
            rospy.loginfo('realtime_loop: SCHED_FIFO priority %d', self.priority)
        except (OSError, AttributeError) as exc:
            rospy.logwarn('realtime_loop: runs without realtime priority (%s); ticks may be late '
                          'under load', exc)


class _LoopThreadDoesNotYield:
    """Stands in for the `time` module inside rospy.impl.tcpros_pubsub. rospy's queued
    publisher ends every publish() with time.sleep(0) per subscriber connection, handing
    the GIL to that connection's writer thread at once: a third of the loop's tick time.
    From the loop thread that yield is skipped; the writers send when the loop sleeps."""

    def __init__(self, loop_thread):
        self._loop_thread = loop_thread

    def sleep(self, seconds):
        if seconds == 0 and threading.get_ident() == self._loop_thread:
            return
        time.sleep(seconds)

    def __getattr__(self, name):
        return getattr(time, name)


def main(argv=None):
    # A waiting thread takes the GIL after this long: keeps rospy's threads from holding
    # the loop off its next tick for the default 5 ms.
    sys.setswitchinterval(1e-4)
    import rospy.impl.tcpros_pubsub as tcpros_pubsub
    tcpros_pubsub.time = _LoopThreadDoesNotYield(threading.get_ident())
    rospy.init_node('realtime_loop', argv=argv)
    try:
        loop = RealtimeLoop()
    except (ValueError, KeyError) as exc:
        rospy.logfatal('realtime_loop: %s', exc)
        sys.exit(2)
    loop.run()


if __name__ == '__main__':
    main(sys.argv)
