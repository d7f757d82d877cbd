"""head_pan: moves to a target at speed_ratio × its velocity limit. Not part of the arm's
pipeline: the head has a controller of its own, ticked beside it."""
import math

import numpy as np

from intera_rt.control.arm import trapezoid_step
from intera_rt.control.base import CommandRejected

# HeadPanCommand.pan_mode values (NO_MODE_CHANGE = 3 arrives here as None).
PAN_MODES = {0: 'SET_PASSIVE_MODE', 1: 'SET_ACTIVE_MODE', 2: 'SET_ACTIVE_CANCELLATION_MODE'}


class HeadController:
    TOLERANCE = 0.1          # rad: HeadState.isTurning until within this of the target

    def __init__(self, model, omega=30.0):
        lim = model.limit_arrays(['head_pan'])
        self.lower, self.upper = float(lim['lower'][0]), float(lim['upper'][0])
        self.vmax, self.amax = float(lim['velocity'][0]), float(lim['accel'][0])
        self.effort = float(lim['effort'][0])
        # The head's inertia about its vertical axis plus its drive's.
        self.inertia = float(lim['armature'][0]) + 0.005
        self.damping = float(lim['damping'][0])      # its drive's viscous damping, fed forward
        self.kp, self.kd = omega * omega, 2.0 * omega
        self.p_ref, self.v_ref = 0.0, 0.0
        self.target = 0.0
        self.speed_ratio = 0.0
        self.pan_mode = 1

    def reset(self, q):
        self.p_ref, self.v_ref, self.target = float(q), 0.0, float(q)

    def command(self, target, speed_ratio, pan_mode=None):
        """A HeadPanCommand (pan_mode None: no change). Raises CommandRejected, changing
        nothing, for a non-finite value, an unknown pan_mode or a speed_ratio that would
        never reach the target (≤ 0). Returns warnings: a speed_ratio above 1 or a target
        beyond a limit (the SDK's head_wobbler sends 0.95) is clipped."""
        if not math.isfinite(target):
            raise CommandRejected('target %r is not finite' % target)
        if not math.isfinite(speed_ratio):
            raise CommandRejected('speed_ratio %r is not finite' % speed_ratio)
        if pan_mode is not None and pan_mode not in PAN_MODES:
            raise CommandRejected('pan_mode %r is not one of %s' % (pan_mode, ', '.join(
                '%s=%d' % (n, v) for v, n in sorted(PAN_MODES.items()))))
        if speed_ratio <= 0.0:
            raise CommandRejected('speed_ratio %r: the head would never reach target %.4f (a '
                                  'ratio in (0, 1] is needed); the head stays' % (speed_ratio, target))
        warnings = []
        if speed_ratio > 1.0:
            warnings.append('speed_ratio %r clipped to 1.0' % speed_ratio)
        clipped = min(self.upper, max(self.lower, float(target)))
        if clipped != target:
            warnings.append('target %.4f clipped to head_pan\'s limit %.4f' % (target, clipped))
        self.target = clipped
        self.speed_ratio = min(1.0, float(speed_ratio))
        if pan_mode is not None:
            self.pan_mode = pan_mode
        return warnings

    def turning(self, q):
        return abs(self.v_ref) > 1e-6 or abs(q - self.target) > self.TOLERANCE

    def tick(self, dt, q, qd):
        a = 0.0
        if self.v_ref != 0.0 or self.p_ref != self.target:
            p, v, acc = trapezoid_step(np.array([self.p_ref]), np.array([self.v_ref]),
                                       np.array([self.target]), np.array([self.vmax * self.speed_ratio]),
                                       np.array([self.amax]), dt)
            self.p_ref, self.v_ref, a = float(p[0]), float(v[0]), float(acc[0])
        u = a + self.kp * (self.p_ref - q) + self.kd * (self.v_ref - qd)
        tau = self.inertia * u + self.damping * self.v_ref
        return min(self.effort, max(-self.effort, tau))
