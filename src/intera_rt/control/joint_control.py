"""Joint command modes of the realtime loop: position, trajectory, velocity and torque, the
command timeout, the speed ratio and gravity compensation.

The controller is a pure object: `command()` takes a JointCommand's content, `tick()` turns
the measured state into one torque per joint for the next cycle. Time is passed in.

Every mode but torque tracks a joint reference (position, velocity, acceleration) with a
computed-torque law: u = a_ref + Kp·e + Kd·ė, τ = ID(q, q̇, u) (gravity included). Torque
mode adds the user's torques to gravity compensation. Gravity is left out while
suppress_gravity_compensation keeps arriving.
"""
import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from intera_rt.model import ARM_JOINTS
from intera_rt.numeric import clip as _clip

DEFAULT_TIMEOUT = 0.2          # s, joint_command_timeout
MAX_TIMEOUT = 1.0              # s: longer timeouts are clamped (a lost client must stop the arm)
DEFAULT_SPEED_RATIO = 0.3      # set_speed_ratio
SUPPRESS_WINDOW = 0.2          # s: suppress_* topics must arrive at ≥ 5 Hz
LIMIT_SLACK = 1e-6             # rad a position may exceed a joint limit by (float noise)
SETTLE_SNAP = 1e-5             # rad: the position reference lands on its target below this
STAMP_WINDOW = 0.1             # s: a TRAJECTORY_MODE header.stamp further from now is ignored


class CommandMode(IntEnum):
    HOLD = 0            # position hold after boot, timeout or exit; not commandable
    POSITION = 1
    VELOCITY = 2
    TORQUE = 3
    TRAJECTORY = 4


# Which JointCommand arrays each mode reads (the others may hold anything).
_REQUIRED = {CommandMode.POSITION: ('position',), CommandMode.VELOCITY: ('velocity',),
             CommandMode.TORQUE: ('effort',), CommandMode.TRAJECTORY: ('position',)}
_OPTIONAL = {CommandMode.TRAJECTORY: ('velocity', 'acceleration')}


class CommandRejected(ValueError):
    """A JointCommand the controller refused; the message names the problem and `kind` the
    sort of problem, so that a stream of differing bad values is logged as one line."""

    def __init__(self, text, kind='invalid'):
        super().__init__(text)
        self.kind = kind


@dataclass
class JointCommandData:
    mode: int
    names: list
    position: list = field(default_factory=list)
    velocity: list = field(default_factory=list)
    acceleration: list = field(default_factory=list)
    effort: list = field(default_factory=list)
    # Controller time the TRAJECTORY_MODE sample refers to (from header.stamp); None = now.
    stamp: float = None


@dataclass
class ControllerOutput:
    """One cycle's output. Its arrays belong to it: the controller never writes into them
    afterwards (so they are not copied every tick)."""
    torque: np.ndarray                 # to the joint boards
    commanded_position: np.ndarray
    commanded_velocity: np.ndarray
    commanded_acceleration: np.ndarray
    commanded_effort: np.ndarray
    gravity_suppressed: bool = False   # gravity left out of `torque` this cycle


def model_effort(chain, armature, q, qd, a_ref, gravity_suppressed):
    """SEAJointState's model terms, (gravity_model_effort, gravity_only): the model
    feed-forward (gravity plus the inertial terms of the reference acceleration) and
    gravity alone, each without gravity while it is suppressed. Computed by whoever
    publishes them (100 Hz), not on the 1 kHz path."""
    ff = chain.inverse_dynamics(q, qd, a_ref) + armature * a_ref
    if gravity_suppressed:
        return ff - chain.gravity(q), np.zeros(len(q))
    return ff, chain.gravity(q)


def _trapezoid_step(p, v, target, vmax, amax, dt):
    """One step of an online, acceleration-limited approach to `target` (per joint)."""
    d = target - p
    v_des = np.sign(d) * np.minimum(vmax, np.sqrt(2.0 * amax * np.abs(d)))
    v_new = v + _clip(v_des - v, -amax * dt, amax * dt)
    p_new = p + 0.5 * (v + v_new) * dt
    # Land exactly on the target instead of dithering around it.
    done = (np.abs(target - p_new) < np.maximum(SETTLE_SNAP, amax * dt * dt)) & \
        (np.abs(v_new) <= amax * dt)
    overshoot = np.sign(target - p_new) != np.sign(d)
    land = done | (overshoot & (np.abs(v_new) <= 2.0 * amax * dt))
    p_new = np.where(land, target, p_new)
    v_new = np.where(land, 0.0, v_new)
    return p_new, v_new, (v_new - v) / dt


class JointController:
    """The arm's joint-level controller (right_j0..6)."""

    def __init__(self, model, omega=40.0, zeta=1.0):
        self.chain = model.arm_dynamics          # the same model as model.arm, faster
        self.names = list(ARM_JOINTS)
        self.index = {n: i for i, n in enumerate(self.names)}
        lim = model.limit_arrays(self.names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.acc_limit = lim['velocity'], lim['accel']
        self.effort_limit, self.armature = lim['effort'], lim['armature']
        self.kp = omega * omega
        self.kd = 2.0 * zeta * omega
        self.timeout = DEFAULT_TIMEOUT
        self.speed_ratio = DEFAULT_SPEED_RATIO
        self.mode = CommandMode.HOLD
        self._gravity_suppressed_until = -math.inf
        n = len(self.names)
        self.p_ref, self.v_ref, self.a_ref = np.zeros(n), np.zeros(n), np.zeros(n)
        self.target = np.zeros(n)            # position / hold target
        self._settled = True                 # HOLD/POSITION reference at rest on its target
        self._traj = (np.zeros(n), np.zeros(n), np.zeros(n), 0.0)   # p, v, a at time t
        self._vel_cmd = np.zeros(n)
        self._effort_cmd = np.zeros(n)
        self._last_command = -math.inf
        self.timeouts = 0

    # --- configuration topics ----------------------------------------------------------
    def set_timeout(self, seconds):
        """Clamped to (0, 1] s like the robot's; returns the value in force."""
        if not math.isfinite(seconds) or seconds <= 0.0:
            raise CommandRejected('joint_command_timeout must be a finite number > 0, got %r'
                                  % seconds, 'timeout')
        self.timeout = min(MAX_TIMEOUT, float(seconds))
        return self.timeout

    def set_speed_ratio(self, ratio):
        if not math.isfinite(ratio):
            raise CommandRejected('set_speed_ratio must be finite, got %r' % ratio, 'speed-ratio')
        self.speed_ratio = min(1.0, max(0.0, float(ratio)))
        return self.speed_ratio

    def suppress_gravity(self, now):
        self._gravity_suppressed_until = now + SUPPRESS_WINDOW

    def gravity_suppressed(self, now):
        return now < self._gravity_suppressed_until

    # --- mode changes ---------------------------------------------------------------
    def reset(self, q):
        """Track the measured pose exactly (boot, brakes on, pose reset)."""
        self.mode = CommandMode.HOLD
        self.p_ref, self.v_ref, self.a_ref = np.array(q, float), np.zeros(7), np.zeros(7)
        self.target = self.p_ref.copy()
        self._settled = True

    def hold(self):
        """Exit the current mode to position hold: a smooth stop where the reference can
        brake to, without a jump."""
        stop = self.p_ref + self.v_ref * np.abs(self.v_ref) / (2.0 * self.acc_limit)
        self.target = _clip(stop, self.lower, self.upper)
        self.mode = CommandMode.HOLD
        self._settled = False

    def command(self, cmd, now, q):
        """Apply a JointCommand. Returns a list of warnings (saturations); raises
        CommandRejected, leaving the previous behaviour untouched, when it is invalid."""
        try:
            mode = CommandMode(cmd.mode)
        except ValueError:
            raise CommandRejected('unknown mode %r (POSITION_MODE=1, VELOCITY_MODE=2, '
                                  'TORQUE_MODE=3, TRAJECTORY_MODE=4)' % (cmd.mode,), 'mode') from None
        if mode == CommandMode.HOLD:
            raise CommandRejected('unknown mode 0', 'mode')
        names = list(cmd.names)
        if not names:
            raise CommandRejected('names is empty', 'names')
        idx = []
        for name in names:
            if name not in self.index:
                raise CommandRejected('unknown joint name %r' % (name,), 'names')
            if self.index[name] in idx:
                raise CommandRejected('joint %r named twice' % (name,), 'names')
            idx.append(self.index[name])
        idx = np.array(idx)
        arrays = {}
        for fld in _REQUIRED[mode] + _OPTIONAL.get(mode, ()):
            values = getattr(cmd, fld)
            if fld in _OPTIONAL.get(mode, ()) and len(values) == 0:
                continue
            if len(values) < len(names):
                raise CommandRejected('%s has %d values for %d names' % (fld, len(values), len(names)),
                                      'length')
            arr = np.array(values[:len(names)], dtype=float)
            bad = ~np.isfinite(arr)
            if np.count_nonzero(bad):
                j = int(np.argmax(bad))
                raise CommandRejected('%s[%d] for %s is %r' % (fld, j, names[j], arr[j]), 'not-finite')
            arrays[fld] = arr
        warnings = []
        if 'position' in arrays:
            pos = arrays['position']
            lo, hi = self.lower[idx], self.upper[idx]
            out = (pos < lo - LIMIT_SLACK) | (pos > hi + LIMIT_SLACK)
            if np.count_nonzero(out):
                j = int(np.argmax(out))
                raise CommandRejected('position %.4f for %s is outside its limits [%.4f, %.4f]'
                                      % (pos[j], names[j], lo[j], hi[j]), 'position-limit')
            arrays['position'] = _clip(pos, lo, hi)
        if mode == CommandMode.VELOCITY:
            vel = arrays['velocity']
            vmax = self.vel_limit[idx]
            if np.count_nonzero(np.abs(vel) > vmax):
                j = int(np.argmax(np.abs(vel) - vmax))
                warnings.append('velocity %.3f for %s saturated at %.3f' % (vel[j], names[j], vmax[j]))
                vel = _clip(vel, -vmax, vmax)
            # Where the joint would be if this command ran to its timeout and then braked.
            reach = q[idx] + vel * self.timeout + vel * np.abs(vel) / (2.0 * self.acc_limit[idx])
            past = (reach < self.lower[idx]) | (reach > self.upper[idx])
            if np.count_nonzero(past):
                j = int(np.argmax(past))
                raise CommandRejected('velocity %.3f would carry %s past its limit (at %.4f, limits '
                                      '[%.4f, %.4f]); command rejected, arm holds'
                                      % (vel[j], names[j], q[idx][j], self.lower[idx][j], self.upper[idx][j]),
                                      'velocity-limit')
            arrays['velocity'] = vel
        if mode == CommandMode.TORQUE:
            eff = arrays['effort']
            emax = self.effort_limit[idx]
            if np.count_nonzero(np.abs(eff) > emax):
                j = int(np.argmax(np.abs(eff) - emax))
                warnings.append('effort %.2f for %s saturated at %.2f' % (eff[j], names[j], emax[j]))
                arrays['effort'] = _clip(eff, -emax, emax)
        t_ref = now
        if mode == CommandMode.TRAJECTORY and cmd.stamp and abs(cmd.stamp - now) <= STAMP_WINDOW:
            t_ref = cmd.stamp
        self._enter(mode, idx, arrays, now, q, t_ref)
        self._last_command = now
        return warnings

    def _enter(self, mode, idx, arrays, now, q, t_ref):
        if mode != self.mode:
            # Joints the command leaves out keep what the reference is doing now.
            self.target = self.p_ref.copy()
            if mode == CommandMode.TRAJECTORY:
                self._traj = (self.p_ref.copy(), np.zeros(7), np.zeros(7), now)
            if mode == CommandMode.TORQUE:
                self.p_ref, self.v_ref, self.a_ref = np.array(q, float), np.zeros(7), np.zeros(7)
        self.mode = mode
        self._settled = False
        # Joints a velocity, torque or trajectory command leaves out stop (zero velocity,
        # zero added torque, hold where their reference is): a joint whose commands stopped
        # arriving must not keep moving. Position mode keeps their targets (the SDK relies
        # on it).
        if mode == CommandMode.POSITION:
            self.target[idx] = arrays['position']
        elif mode == CommandMode.VELOCITY:
            self._vel_cmd = np.zeros(7)
            self._vel_cmd[idx] = arrays['velocity']
        elif mode == CommandMode.TORQUE:
            self._effort_cmd = np.zeros(7)             # new: an output may hold the old one
            self._effort_cmd[idx] = arrays['effort']
        elif mode == CommandMode.TRAJECTORY:
            # The sample refers to t_ref; it is extrapolated from there (backwards too, for
            # a command stamped slightly ahead).
            p, _, _ = self._sample_traj(now)
            v, a = np.zeros(7), np.zeros(7)
            p[idx] = arrays['position']
            v[idx] = arrays.get('velocity', np.zeros(len(idx)))
            a[idx] = arrays.get('acceleration', np.zeros(len(idx)))
            dt = now - t_ref
            if dt:
                p[idx] += v[idx] * dt + 0.5 * a[idx] * dt * dt
                v[idx] += a[idx] * dt
            self._traj = (p, v, a, now)

    def _sample_traj(self, now):
        p, v, a, t0 = self._traj
        tau = max(0.0, now - t0)
        return p + v * tau + 0.5 * a * tau * tau, v + a * tau, a.copy()

    def _step_position(self, mode, dt):
        vmax = self.vel_limit * (self.speed_ratio if mode == CommandMode.POSITION else 1.0)
        self.p_ref, self.v_ref, self.a_ref = _trapezoid_step(
            self.p_ref, self.v_ref, self.target, vmax, self.acc_limit, dt)
        self._settled = not (np.count_nonzero(self.v_ref) or np.count_nonzero(self.p_ref != self.target))

    # --- the cycle ------------------------------------------------------------------
    def timed_out(self, now):
        return self.mode != CommandMode.HOLD and now - self._last_command > self.timeout

    def tick(self, now, dt, q, qd):
        """q, qd: measured (arrays of 7, not modified)."""
        if self.timed_out(now):
            self.timeouts += 1
            if self.mode == CommandMode.TORQUE:
                self.reset(q)
            else:
                self.hold()
        mode = self.mode
        if mode == CommandMode.HOLD or mode == CommandMode.POSITION:
            if not self._settled:
                self._step_position(mode, dt)
            elif np.count_nonzero(self.a_ref):
                self.a_ref = np.zeros(7)              # the landing step's deceleration is over
        elif mode == CommandMode.VELOCITY:
            dv = _clip(self._vel_cmd - self.v_ref, -self.acc_limit * dt, self.acc_limit * dt)
            v_new = self.v_ref + dv
            p_new = self.p_ref + 0.5 * (self.v_ref + v_new) * dt
            at_limit = (p_new <= self.lower) | (p_new >= self.upper)
            v_new[at_limit] = 0.0
            self.p_ref, self.v_ref, self.a_ref = _clip(p_new, self.lower, self.upper), v_new, dv / dt
        elif mode == CommandMode.TRAJECTORY:
            p, v, a = self._sample_traj(now)
            at_limit = (p <= self.lower) | (p >= self.upper)
            if np.count_nonzero(at_limit):              # extrapolated into a limit: stop there
                v[at_limit], a[at_limit] = 0.0, 0.0
                self._traj = (_clip(p, self.lower, self.upper), v, a, now)
            self.p_ref, self.v_ref, self.a_ref = _clip(p, self.lower, self.upper), v, a
        suppressed = self.gravity_suppressed(now)
        if mode == CommandMode.TORQUE:
            self.p_ref, self.v_ref, self.a_ref = np.array(q, float), np.array(qd, float), np.zeros(7)
            tau = self._effort_cmd if suppressed else self._effort_cmd + self.chain.gravity(q)
        else:
            u = self.a_ref + self.kp * (self.p_ref - q) + self.kd * (self.v_ref - qd)
            tau = self.chain.inverse_dynamics(q, qd, u) + self.armature * u
            if suppressed:
                tau = tau - self.chain.gravity(q)
        tau = _clip(tau, -self.effort_limit, self.effort_limit)
        return ControllerOutput(
            torque=tau, commanded_position=self.p_ref, commanded_velocity=self.v_ref,
            commanded_acceleration=self.a_ref,
            commanded_effort=self._effort_cmd if mode == CommandMode.TORQUE else tau,
            gravity_suppressed=suppressed)


class HeadController:
    """head_pan: moves to a target at speed_ratio × its velocity limit."""

    TOLERANCE = 0.1

    def __init__(self, model, omega=30.0):
        lim = model.limit_arrays(['head_pan'])
        self.lower, self.upper = float(lim['lower'][0]), float(lim['upper'][0])
        self.vmax, self.amax = float(lim['velocity'][0]), float(lim['accel'][0])
        self.effort = float(lim['effort'][0])
        # The head's inertia about its vertical axis plus its drive's.
        self.inertia = float(lim['armature'][0]) + 0.005
        self.kp, self.kd = omega * omega, 2.0 * omega
        self.p_ref, self.v_ref = 0.0, 0.0
        self.target = 0.0
        self.speed_ratio = 0.0
        self.pan_mode = 1

    def reset(self, q):
        self.p_ref, self.v_ref, self.target = float(q), 0.0, float(q)

    def command(self, target, speed_ratio, pan_mode=None):
        if not (math.isfinite(target) and math.isfinite(speed_ratio)):
            raise CommandRejected('head pan target %r / speed_ratio %r must be finite' % (target, speed_ratio))
        self.target = min(self.upper, max(self.lower, float(target)))
        self.speed_ratio = min(1.0, max(0.0, float(speed_ratio)))
        if pan_mode in (0, 1, 2):
            self.pan_mode = pan_mode

    def turning(self, q):
        return abs(self.v_ref) > 1e-6 or abs(q - self.target) > self.TOLERANCE

    def tick(self, dt, q, qd):
        a = 0.0
        if self.v_ref != 0.0 or self.p_ref != self.target:
            p, v, acc = _trapezoid_step(np.array([self.p_ref]), np.array([self.v_ref]),
                                        np.array([self.target]), np.array([self.vmax * self.speed_ratio]),
                                        np.array([self.amax]), dt)
            self.p_ref, self.v_ref, a = float(p[0]), float(v[0]), float(acc[0])
        u = a + self.kp * (self.p_ref - q) + self.kd * (self.v_ref - qd)
        return min(self.effort, max(-self.effort, self.inertia * u))
