"""Position hold: the controller the arm falls back to (boot, brakes released, command
timeout, a collision stop, the end of zero-G). From a moving reference it brakes at the
acceleration limits and holds where it comes to rest; it never jumps. At rest, on a plant
whose drives' friction the feedback alone does not beat, a bounded integral makes it up
(Arm.hold_friction)."""
import numpy as np

from intera_rt.control.arm import trapezoid_step
from intera_rt.control.base import Controller, Output
from intera_rt.numeric import count_nonzero


class HoldController(Controller):
    name = 'hold'
    role = 'hold'
    command_timeout = False

    def __init__(self, context):
        super().__init__(context)
        self.arm = context.arm
        self.p = self.v = self.a = self.target = np.zeros(7)
        self._settled = True
        self._friction = np.zeros(7)         # N·m the hold's friction integral adds

    def start(self, state, previous):
        self._friction = np.zeros(7)
        if previous is None:                  # at rest where the arm is
            self.p, self.v, self.a = np.array(state.q, float), np.zeros(7), np.zeros(7)
            self.target = self.p
            self._settled = True
        else:
            self.p, self.v, self.a = previous.position, previous.velocity, np.zeros(7)
            self.target = self.arm.stop_point(self.p, self.v)
            self._settled = False

    def max_velocity(self, state):
        return self.arm.vel_limit

    def update(self, state):
        if not self._settled:
            self.p, self.v, self.a = trapezoid_step(self.p, self.v, self.target, self.max_velocity(state),
                                                    self.arm.acc_limit, state.period)
            self._settled = not (count_nonzero(self.v) or count_nonzero(self.p != self.target))
            if count_nonzero(self._friction):
                self._friction = np.zeros(7)   # (made up anew where the reference lands)
        elif count_nonzero(self.a):
            self.a = np.zeros(7)               # the landing step's deceleration is over
        tau = self.arm.track(state, self.p, self.v, self.a)
        if self._settled and self.arm.feeds_friction:
            self._friction = self.arm.hold_friction(self._friction, self.p - state.q, state.period)
            tau = tau + self._friction
        return Output(tau, self.p, self.v, self.a)
