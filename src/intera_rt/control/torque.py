"""TORQUE_MODE: the user's joint torques, saturated at the effort limits, on top of gravity
compensation (and collision avoidance, which stays active). Joints a command leaves out get
no added torque."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.base import Controller, Output


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
        warnings = []
        parsed.effort = joint_command.saturate('effort', parsed.effort,
                                               parsed.joints.effort_limit, parsed.names,
                                               warnings, digits=2)
        return parsed, warnings

    def command(self, parsed, state):
        effort = np.zeros(7)                      # new: an Output may hold the old one
        effort[parsed.idx] = parsed.effort
        self.effort = effort

    def update(self, state):
        # No reference: the measured state is reported as commanded.
        return Output(self.effort, state.q, state.qd, self._zero, self.effort)
