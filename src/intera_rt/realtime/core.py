"""The realtime core: joint boards, robot state machine, joint and head controllers, ticked
1 ms at a time. A pure object: no ROS, no clock reads; inputs are method calls applied
between ticks, outputs are a state vector (`state_vector()`) and log entries (`take_logs()`).

It runs in a process of its own (intera_rt.realtime.process) so that nothing else holds
the interpreter while a tick is due; the ROS adapter (intera_rt.ros.realtime_loop) talks
to it through a pipe.
"""
import math

import numpy as np

from intera_rt.boards import make_boards
from intera_rt.control import CommandRejected, JointCommandData, JointController, RobotStateMachine
from intera_rt.control.joint_control import HeadController
from intera_rt.model import ARM_JOINTS, HEAD_JOINTS

PERIOD = 0.001                        # s, one tick
CUFF_SUPPRESS_WINDOW = 0.2            # s: suppress_cuff_interaction must arrive at ≥ 5 Hz

# Layout of the state vector sent to the ROS adapter (float64; indices below).
N_BOARD = len(ARM_JOINTS + HEAD_JOINTS)          # joints in boards order: right_j0..6, head_pan
_FIELDS = [('t', 1), ('tick', 1), ('q', N_BOARD), ('qd', N_BOARD), ('effort', N_BOARD),
           ('cmd_p', 7), ('cmd_v', 7), ('cmd_a', 7), ('cmd_effort', 7),
           ('controlled', 1), ('suppressed', 1), ('enabled', 1), ('stopped', 1), ('error', 1),
           ('homed', 1), ('estop_button', 1), ('estop_source', 1), ('low_voltage', 1),
           ('head_turning', 1), ('pan_mode', 1), ('collision', 1), ('timeouts', 1)]
STATE_SLICES = {}
_k = 0
for _name, _n in _FIELDS:
    STATE_SLICES[_name] = slice(_k, _k + _n)
    _k += _n
STATE_SIZE = _k


def state_field(vector, name):
    """One field of a state vector: an array, or a float for one-element fields."""
    s = STATE_SLICES[name]
    return vector[s] if s.stop - s.start > 1 else float(vector[s.start])


class RealtimeCore:
    def __init__(self, model, backend='embedded', q_arm=None, q_head=0.0, enabled=True):
        self.model = model
        self.boards = make_boards(backend, model)
        if tuple(self.boards.joint_names) != ARM_JOINTS + HEAD_JOINTS:
            raise ValueError('backend %r orders its joints %s' % (backend, self.boards.joint_names))
        self.arm_idx = slice(0, 7)      # views of the boards' arrays, not copies
        self.head_idx = 7
        self.state = RobotStateMachine(enabled=enabled)
        self.control = JointController(model)
        self.head = HeadController(model)
        self.now = 0.0                  # s of loop time since boot (sim time under lockstep)
        self.tick_count = 0
        self.collision = False          # collision detection does not exist yet
        self.cuff_suppressed_until = -math.inf
        self._logs = []
        self._out = None
        q = self.boards.read().position
        q[:7] = q_arm if q_arm is not None else q[:7]
        q[7] = q_head
        self._reset_pose(q)

    # --- logging: (level, throttle key, text); the adapter throttles and logs ------------
    def _log(self, level, key, text):
        self._logs.append((level, key, text))

    def take_logs(self):
        logs, self._logs = self._logs, []
        return logs

    # --- inputs (applied between ticks) ---------------------------------------------------
    def set_enable(self, on):
        why = self.state.set_enable(on)
        if why:
            self._log('warn', 'enable', 'set_super_enable: ' + why)

    def stop(self):
        self.state.stop()

    def reset(self):
        why = self.state.reset()
        if why:
            self._log('warn', 'reset', 'set_super_reset: ' + why)

    def joint_command(self, mode, names, position, velocity, acceleration, effort, stamp):
        """stamp: loop time the command's sample refers to (None = now)."""
        why = self.state.why_not_moving()
        if why:
            self._log('warn', 'cmd-ignored', 'joint_command ignored: %s' % why)
            return
        cmd = JointCommandData(mode, names, position, velocity, acceleration, effort, stamp)
        try:
            warnings = self.control.command(cmd, self.now, self.boards.read().position[self.arm_idx])
        except CommandRejected as exc:
            # One throttled line per kind of problem: a stream of differing bad values
            # must not flood the log.
            self._log('error', 'cmd-rejected:' + exc.kind, 'joint_command rejected: %s' % exc)
            return
        for w in warnings:
            self._log('warn', 'cmd-saturated', 'joint_command: %s' % w)

    def set_timeout(self, seconds):
        try:
            value = self.control.set_timeout(seconds)
        except CommandRejected as exc:
            self._log('error', 'timeout', str(exc))
            return
        if value != seconds:
            self._log('warn', 'timeout-clamped', 'joint_command_timeout %r clamped to %.1f s'
                      % (seconds, value))

    def set_speed_ratio(self, ratio):
        try:
            self.control.set_speed_ratio(ratio)
        except CommandRejected as exc:
            self._log('error', 'speed', str(exc))

    def suppress_gravity(self):
        self.control.suppress_gravity(self.now)

    def suppress_cuff(self):
        self.cuff_suppressed_until = self.now + CUFF_SUPPRESS_WINDOW

    def head_command(self, target, speed_ratio, pan_mode):
        why = self.state.why_not_moving()
        if why:
            self._log('warn', 'head-ignored', 'command_head_pan ignored: %s' % why)
            return
        try:
            self.head.command(target, speed_ratio, pan_mode)
        except CommandRejected as exc:
            self._log('error', 'head', 'command_head_pan rejected: %s' % exc)

    # --- sim control: each returns (success, message) --------------------------------------
    def sim_estop(self, pressed):
        if pressed:
            self.state.press_estop()
            return True, 'E-stop button pressed'
        self.state.release_estop()
        return True, 'E-stop button released (the robot stays stopped until reset)'

    def sim_error(self, on):
        self.state.set_error(on)
        return True, 'error %s' % ('set' if on else 'cleared')

    def sim_wrench(self, link, values, duration):
        if not all(math.isfinite(v) for v in values) or not (math.isfinite(duration) and duration > 0):
            return False, 'wrench and duration must be finite, duration > 0 (got duration %r)' % duration
        if not self.boards.simulated:
            return False, '%s cannot apply external wrenches' % type(self.boards).__name__
        if not self.model.has_frame(link):
            return False, 'no link named %r in the robot model' % link
        self.boards.apply_wrench(link, values, duration)
        return True, 'applying %s on %s for %.3f s' % (list(values), link, duration)

    def sim_positions(self, names, positions):
        names = list(names) or list(ARM_JOINTS)
        if len(names) != len(positions):
            return False, '%d names but %d positions' % (len(names), len(positions))
        for name, value in zip(names, positions):
            if name not in self.model.limits or name not in self.boards.joint_names:
                return False, 'unknown joint %r' % name
            lim = self.model.limits[name]
            if not (math.isfinite(value) and lim.lower <= value <= lim.upper):
                return False, '%s = %r is outside its limits [%.4f, %.4f]' % (name, value, lim.lower, lim.upper)
        q = self.boards.read().position
        for name, value in zip(names, positions):
            q[self.boards.joint_names.index(name)] = value
        self._reset_pose(q)
        return True, 'joints set'

    def _reset_pose(self, q):
        self.boards.reset_pose(q)
        self.control.reset(q[self.arm_idx])
        self.head.reset(q[self.head_idx])

    # --- the tick ----------------------------------------------------------------------
    def tick(self):
        reading = self.boards.read()
        q, qd = reading.position, reading.velocity
        torque = np.zeros(N_BOARD)
        if self.state.motion_allowed:
            if self.boards.brakes:
                self.control.reset(q[self.arm_idx])
                self.head.reset(q[self.head_idx])
                self.boards.set_brakes(False)
            out = self.control.tick(self.now, PERIOD, q[self.arm_idx], qd[self.arm_idx])
            torque[self.arm_idx] = out.torque
            torque[self.head_idx] = self.head.tick(PERIOD, q[self.head_idx], qd[self.head_idx])
            self._out = out
        elif not self.boards.brakes:
            self.boards.set_brakes(True)
            self._out = None
        self.boards.write(torque)
        self.boards.advance(PERIOD)
        self.tick_count += 1
        self.now = self.tick_count * PERIOD

    def state_vector(self):
        """Everything the robot's state topics need, as one float64 vector (STATE_SLICES)."""
        v = np.zeros(STATE_SIZE)
        r = self.boards.read()
        s, st = STATE_SLICES, self.state

        def put(name, value):
            v[s[name]] = value
        put('t', self.now)
        put('tick', self.tick_count)
        put('q', r.position)
        put('qd', r.velocity)
        put('effort', r.effort)
        out = self._out
        if out is not None:
            put('cmd_p', out.commanded_position)
            put('cmd_v', out.commanded_velocity)
            put('cmd_a', out.commanded_acceleration)
            put('cmd_effort', out.commanded_effort)
            put('controlled', 1.0)
            put('suppressed', float(out.gravity_suppressed))
        else:                               # brakes on: nothing commanded
            put('cmd_p', r.position[self.arm_idx])
        for name in ('enabled', 'stopped', 'error', 'homed', 'low_voltage'):
            put(name, float(getattr(st, name)))
        put('estop_button', st.estop_button)
        put('estop_source', st.estop_source)
        put('head_turning', float(self.head.turning(r.position[self.head_idx])))
        put('pan_mode', self.head.pan_mode)
        put('collision', float(self.collision))
        put('timeouts', self.control.timeouts)
        return v
