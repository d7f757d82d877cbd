"""head_pan: moves to a target at speed_ratio × its velocity limit. Not part of the arm's
pipeline: the head has a controller of its own, ticked beside it."""
import math

import numpy as np

from intera_rt.control.arm import trapezoid_step
from intera_rt.control.base import CommandRejected


class HeadController:
    TOLERANCE = 0.1          # rad: HeadState.isTurning until within this of the target

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
            p, v, acc = trapezoid_step(np.array([self.p_ref]), np.array([self.v_ref]),
                                       np.array([self.target]), np.array([self.vmax * self.speed_ratio]),
                                       np.array([self.amax]), dt)
            self.p_ref, self.v_ref, a = float(p[0]), float(v[0]), float(acc[0])
        u = a + self.kp * (self.p_ref - q) + self.kd * (self.v_ref - qd)
        return min(self.effort, max(-self.effort, self.inertia * u))
