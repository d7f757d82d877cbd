"""POSITION_MODE: each joint moves to its commanded angle at speed_ratio × its velocity limit,
acceleration-limited. Joints a command leaves out keep their targets (the SDK's keyboard and
joystick examples send one joint at a time)."""
from intera_rt.control import joint_command
from intera_rt.control.hold import HoldController


class PositionController(HoldController):
    name = 'position'
    joint_command_mode = 1
    command_timeout = True
    speed_scaling = True

    def start(self, state, previous):
        # Until commanded, each joint brakes to rest (the hold's target).
        super().start(state, previous)

    def max_velocity(self, state):
        return self.arm.vel_limit * (self.arm.speed_ratio * state.speed_scale)

    def heading(self):
        return None if self._settled else self.target - self.p

    def validate(self, cmd, state):
        return joint_command.parse(self.arm, cmd, ('position',)), []

    def command(self, parsed, state):
        target = self.target.copy()               # an Output may hold the old one
        target[parsed.idx] = parsed.arrays['position']
        self.target = target
        self._settled = False
