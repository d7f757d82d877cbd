"""Position hold: the controller the arm falls back to (boot, brakes released, command
timeout, a collision stop, the end of zero-G). From a moving reference it brakes at the
acceleration limits and holds where it comes to rest; it never jumps."""
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

    def start(self, state, previous):
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
        elif count_nonzero(self.a):
            self.a = np.zeros(7)               # the landing step's deceleration is over
        return Output(self.arm.track(state, self.p, self.v, self.a), self.p, self.v, self.a)
