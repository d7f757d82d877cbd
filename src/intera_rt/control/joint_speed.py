"""Joint-speed safety: a monitor that brakes the arm when a joint moves faster than its
velocity limit by more than a margin, whatever the active controller (torque mode and zero-G
included), as a robot's safety layer does. The tracking controllers never command more than
the limits; this catches what they do not command: a torque-mode client's saturated torques,
a push in zero-G.

Options: OPTIONS. The margin leaves room for fast position moves that collision avoidance
pushes off their path; a runaway torque command goes far beyond it.
"""
import math

import numpy as np

from intera_rt.control.base import Halt, Monitor
from intera_rt.native import kernels
from intera_rt.numeric import count_nonzero
from intera_rt.options import Option
from intera_rt.robot import ARM_JOINTS, COLLISION_HOLD

MARGIN = 0.5


class JointSpeedLimit(Monitor):
    name = 'joint_speed_limit'
    OPTIONS = {
        'margin': Option(float, MARGIN, 'a joint is over speed above (1 + margin) × its URDF '
                         'velocity limit (≥ 0)'),
        'hold': Option(float, COLLISION_HOLD, 's the arm is held after braking (> 0)'),
    }
    state_fields = (('tripped_at', 1),)

    def __init__(self, context):
        super().__init__(context)
        margin, hold = self.options['margin'], self.options['hold']
        if not (math.isfinite(margin) and margin >= 0.0):
            raise ValueError('joint_speed_limit margin must be a number ≥ 0, got %r' % (margin,))
        if not (math.isfinite(hold) and hold > 0.0):
            raise ValueError('joint_speed_limit hold must be a number > 0, got %r' % (hold,))
        self.limit = context.model.limit_arrays(ARM_JOINTS)['velocity']
        self.trip = (1.0 + margin) * self.limit
        self.margin, self.hold = margin, hold
        self.tripped_at = math.nan
        self._held_until = -math.inf

    def update(self, state, controller):
        over = None if kernels is None else kernels.any_above(state.qd, self.trip)
        if over is None:
            over = bool(count_nonzero(np.abs(state.qd) > self.trip))
        if not over or state.now < self._held_until:
            return None
        j = int(np.argmax(np.abs(state.qd) / self.trip))
        self.tripped_at = state.now
        self._held_until = state.now + self.hold
        return Halt('joint_speed', '%s moving at %.2f rad/s, over its %.2f rad/s limit by more '
                    'than %d %%: braking' % (ARM_JOINTS[j], abs(state.qd[j]), self.limit[j],
                                             round(100 * self.margin)),
                    self.hold, collision=False)

    def reset(self, state):
        self._held_until = -math.inf

    def report(self, put):
        put('tripped_at', self.tripped_at)
