"""TRAJECTORY_MODE: track position, velocity and acceleration samples (inverse-dynamics
feed-forward), extrapolating each sample with its velocity and acceleration until the next
one arrives. Velocities and accelerations are bounded by the joint limits (saturated and
reported), and so is the extrapolation: a joint's velocity stops growing at its limit, and a
joint extrapolated into a position limit stops there. Joints a command leaves out stop.
No collision avoidance in this mode (seed 000: it goes straight to the joints)."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.base import Controller, Output
from intera_rt.native import kernels
from intera_rt.numeric import count_nonzero

STAMP_WINDOW = 0.1      # s: a header.stamp further from now is ignored (the sample is "now")


def extrapolate(p, v, a, dt, vmax):
    """(p, v, a) after dt s of constant acceleration, the velocity held at ±vmax once it
    gets there (its acceleration then 0). dt may be slightly negative (a sample stamped
    ahead of now): extrapolated backwards without bounds."""
    if dt <= 0.0:
        return p + v * dt + 0.5 * a * dt * dt, v + a * dt, a
    v_end = v + a * dt
    capped = np.abs(v_end) > vmax
    if not count_nonzero(capped):
        return p + v * dt + 0.5 * a * dt * dt, v_end, a
    cap = np.sign(a) * vmax
    # When each capped joint reaches its cap (0 if it started beyond it).
    with np.errstate(divide='ignore', invalid='ignore'):
        t_cap = np.where(capped, np.maximum(0.0, (cap - v) / np.where(a == 0.0, 1.0, a)), dt)
    t_cap = np.minimum(t_cap, dt)
    v_cap = np.where(capped, cap, v_end)
    p_new = p + v * t_cap + 0.5 * a * t_cap * t_cap + v_cap * (dt - t_cap)
    return p_new, v_cap, np.where(capped, 0.0, a)


def extrapolate_within_limits(p, v, a, dt, arm):
    """arm.stop_at_limits(*extrapolate(p, v, a, dt, arm.vel_limit)): every tick's work of a
    TRAJECTORY_MODE stream, in one call to the compiled kernels' extrapolate_step (the same
    results) when they are there."""
    if kernels is not None:
        out = kernels.extrapolate_step(p, v, a, dt, arm.vel_limit, arm.lower, arm.upper)
        if out is not None:
            return out
    return arm.stop_at_limits(*extrapolate(p, v, a, dt, arm.vel_limit))


def sample_reference(parsed, base, now, arm):
    """The joint reference (p, v, a) a TRAJECTORY_MODE sample sets at `now`: its joints'
    values over `base` (the reference in force: the joints it leaves out keep their
    position, at rest), extrapolated from its stamp to now and stopped at the limits."""
    idx = parsed.idx
    p = base.copy()
    v, a = np.zeros(7), np.zeros(7)
    p[idx] = parsed.position
    if parsed.velocity is not None:
        v[idx] = parsed.velocity
    if parsed.acceleration is not None:
        a[idx] = parsed.acceleration
    return extrapolate_within_limits(p, v, a, now - parsed.stamp, arm)


class TrajectoryController(Controller):
    name = 'trajectory'
    joint_command_mode = 4
    role = 'planned'

    def __init__(self, context):
        super().__init__(context)
        self.arm = context.arm
        self.p = self.v = self.a = np.zeros(7)
        self.t = 0.0

    def start(self, state, previous):
        self.p = np.array(state.q if previous is None else previous.position, float)
        self.v, self.a, self.t = np.zeros(7), np.zeros(7), state.now

    def validate(self, cmd, state):
        arm = self.arm
        parsed = joint_command.parse(arm, cmd, position=joint_command.REQUIRED,
                                     velocity=joint_command.OPTIONAL,
                                     acceleration=joint_command.OPTIONAL)
        warnings = []
        joints = parsed.joints
        saturate = joint_command.saturate
        parsed.velocity = saturate('velocity', parsed.velocity, joints.vel_limit, parsed.names,
                                   warnings)
        parsed.acceleration = saturate('acceleration', parsed.acceleration, joints.acc_limit,
                                       parsed.names, warnings)
        stamp = parsed.stamp
        parsed.stamp = stamp if stamp and abs(stamp - state.now) <= STAMP_WINDOW else state.now
        return parsed, warnings

    def command(self, parsed, state):
        now = state.now
        # The sample refers to parsed.stamp: extrapolated to now.
        self.p, self.v, self.a = sample_reference(parsed, self._advance(now)[0], now, self.arm)
        self.t = now

    def _advance(self, now):
        if now != self.t:
            self.p, self.v, self.a = extrapolate_within_limits(self.p, self.v, self.a, now - self.t,
                                                               self.arm)
            self.t = now
        return self.p, self.v, self.a

    def update(self, state):
        p, v, a = self._advance(state.now)
        return Output(self.arm.track(state, p, v, a), p, v, a)
