"""Zero-G: the joint controllers are off while gravity compensation (and collision avoidance)
stay on, so a person can move the arm freely. The core makes it the active controller while
the cuff is grasped (or the navigator's circle button held) unless suppress_cuff_interaction
keeps arriving, and hands back to the controller in use before when it is let go."""
import numpy as np

from intera_rt.control.base import Controller, Output


class ZeroGController(Controller):
    name = 'zero_g'
    command_timeout = False
    role = 'zero_g'

    def __init__(self, context):
        super().__init__(context)
        self._zero = np.zeros(7)

    def update(self, state):
        return Output(self._zero, state.q, state.qd, self._zero)
