"""TORQUE_MODE: the user's joint torques, saturated at the effort limits, on top of gravity
compensation (and collision avoidance, which stays active). Joints a command leaves out get
no added torque."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.base import Controller, Output
from intera_rt.numeric import clip, count_nonzero


class TorqueController(Controller):
    name = 'torque'
    joint_command_mode = 3

    def __init__(self, context):
        super().__init__(context)
        self.arm = context.arm
        self.effort = np.zeros(7)
        self._zero = np.zeros(7)

    def start(self, state, previous):
        self.effort = np.zeros(7)

    def validate(self, cmd, state):
        parsed = joint_command.parse(self.arm, cmd, effort=joint_command.REQUIRED)
        eff, names = parsed.effort, parsed.names
        emax = parsed.joints.effort_limit
        warnings = []
        if count_nonzero(np.abs(eff) > emax):
            j = int(np.argmax(np.abs(eff) - emax))
            warnings.append('effort %.2f for %s saturated at %.2f' % (eff[j], names[j], emax[j]))
            parsed.effort = clip(eff, -emax, emax)
        return parsed, warnings

    def command(self, parsed, state):
        effort = np.zeros(7)                      # new: an Output may hold the old one
        effort[parsed.idx] = parsed.effort
        self.effort = effort

    def update(self, state):
        # No reference: the measured state is reported as commanded.
        return Output(self.effort, state.q, state.qd, self._zero, self.effort)
