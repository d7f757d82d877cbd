"""POSITION_MODE: each joint moves to its commanded angle at speed_ratio × its velocity limit,
acceleration-limited. Joints a command leaves out keep their targets (the SDK's keyboard and
joystick examples send one joint at a time).

A stream of targets (a joint commanded again within STREAM_GAP: file playback, JTAS
`--mode position`, a Cartesian approach by IK at 100 Hz) is followed along the lines between
its points: each point is reached over STREAM_SPAN × the interval since the joint's previous
one, from where the moving target is when it comes. A line longer than the interval keeps
the target moving through a point that comes late (the target trails an even stream by a
point). Chased point by point, the approach braked to rest at every point and started
again: the arm shook at the stream's rate with the acceleration limit's torque (±20 N·m on
right_j0 at 100 Hz), which Gazebo's late effort made a false impact. A target after a pause,
or the same one repeated (move_to_joint_positions), is approached at once, as before."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.hold import HoldController
from intera_rt.native import kernels
from intera_rt.numeric import count_nonzero

STREAM_GAP = 0.1            # s: a joint's targets closer than this are one stream (≥ 10 Hz)
STREAM_SPAN = 2.0           # × its interval: how long the line to a stream's point takes


class PositionController(HoldController):
    name = 'position'
    role = None                  # a hold's mechanics, not its role
    joint_command_mode = 1
    command_timeout = True
    speed_scaling = True
    _told_ratio_zero = None      # the speed-ratio setting of 0 already warned about

    def start(self, state, previous):
        # Until commanded, each joint brakes to rest (the hold's target).
        super().start(state, previous)
        # Per joint: the latest commanded target, and the line the moving target follows
        # toward it (from `_from` at `_t0` over `_span` s; 0: none, the target is the goal).
        self._goal = self.target.copy()
        self._from = self.target.copy()
        self._t0 = np.zeros(7)
        self._span = np.zeros(7)
        self._commanded_at = np.full(7, -np.inf)
        self._ramping = False

    def max_velocity(self, state):
        return self.arm.vel_limit * (self.arm.speed_ratio * state.speed_scale)

    def heading(self):
        return None if self._settled else self._goal - self.p

    def validate(self, cmd, state):
        parsed = joint_command.parse(self.arm, cmd, position=joint_command.REQUIRED)
        arm = self.arm
        if arm.speed_ratio == 0.0 and self._told_ratio_zero != arm.speed_ratio_serial:
            # Accepted (the targets are kept), but say once per setting that nothing moves.
            self._told_ratio_zero = arm.speed_ratio_serial
            return parsed, ['set_speed_ratio is 0: POSITION_MODE targets are kept but the arm '
                            'does not move toward them until a ratio > 0 is set']
        return parsed, []

    def command(self, parsed, state):
        idx, now = parsed.idx, state.now
        if self._ramping:
            self._move_target(now)              # (where the lines have it this tick)
        interval = now - self._commanded_at[idx]
        self._commanded_at[idx] = now
        goal = self._goal.copy()
        goal[idx] = parsed.position
        # A stream's next point starts a line from where the target is now; a second
        # command in the same tick keeps the line and changes its end; anything else jumps.
        stream = (interval > 0.0) & (interval <= STREAM_GAP)
        fresh = idx[stream]
        self._from[fresh] = self.target[fresh]
        self._t0[fresh] = now
        self._span[fresh] = STREAM_SPAN * interval[stream]
        self._span[idx[interval > STREAM_GAP]] = 0.0
        self._goal = goal
        self._ramping = bool(count_nonzero(self._span))
        self._settled = False
        self._move_target(now)

    def _move_target(self, now):
        """The target where the streams' lines put it at `now` (an Output may hold the old
        array: a new one). While a stream's lines run this is every tick's work: the
        compiled kernels' line_target (~10 µs of numpy's masks less) when they are there."""
        if self._ramping and kernels is not None:
            moved = kernels.line_target(self._goal, self._from, self._t0, self._span, now)
            if moved is not None:
                self.target, self._ramping = moved
                return
        self._move_target_python(now)

    def _move_target_python(self, now):
        """_move_target's Python twin (kernels.line_target computes exactly this)."""
        target = self._goal.copy()
        span = self._span
        ramp = span > 0.0
        if self._ramping:
            frac = np.minimum((now - self._t0[ramp]) / span[ramp], 1.0)
            target[ramp] = self._from[ramp] + (target[ramp] - self._from[ramp]) * frac
            span[ramp & (now - self._t0 >= span)] = 0.0     # arrived: the goal from now on
            self._ramping = bool(count_nonzero(span))
        self.target = target

    def update(self, state):
        if self._ramping:
            self._move_target(state.now)
            self._settled = False
        return super().update(state)
