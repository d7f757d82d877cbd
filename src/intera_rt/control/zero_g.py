"""Zero-G: the joint controllers are off while gravity compensation (and collision avoidance)
stay on, so a person can move the arm; each joint faster than ZERO_G_FREE_SPEED renders the
drag ZERO_G_DAMPING on the excess, so a push guides the arm at a walking pace instead of
flinging it, while slow motion stays free. The core makes it the active
controller while the cuff is grasped (or the navigator's circle button held) unless
suppress_cuff_interaction keeps arriving, and hands back to the controller in use before
when it is let go."""
import numpy as np

from intera_rt.control.base import Controller, Output
from intera_rt.numeric import clip
from intera_rt.robot import ZERO_G_DAMPING, ZERO_G_FREE_SPEED


class ZeroGController(Controller):
    name = 'zero_g'
    command_timeout = False
    role = 'zero_g'

    def __init__(self, context):
        super().__init__(context)
        self._zero = np.zeros(7)
        self._damping = np.array(ZERO_G_DAMPING)

    def update(self, state):
        qd = state.qd
        fast = qd - clip(qd, -ZERO_G_FREE_SPEED, ZERO_G_FREE_SPEED)
        return Output(-self._damping * fast, state.q, state.qd, self._zero)
