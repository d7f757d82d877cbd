"""POSITION_MODE: each joint moves to its commanded angle at speed_ratio × its velocity limit,
acceleration-limited. Joints a command leaves out keep their targets (the SDK's keyboard and
joystick examples send one joint at a time)."""
from intera_rt.control import joint_command
from intera_rt.control.hold import HoldController


class PositionController(HoldController):
    name = 'position'
    role = None                  # a hold's mechanics, not its role
    joint_command_mode = 1
    command_timeout = True
    speed_scaling = True
    _told_ratio_zero = None      # the speed-ratio setting of 0 already warned about

    def start(self, state, previous):
        # Until commanded, each joint brakes to rest (the hold's target).
        super().start(state, previous)

    def max_velocity(self, state):
        return self.arm.vel_limit * (self.arm.speed_ratio * state.speed_scale)

    def heading(self):
        return None if self._settled else self.target - self.p

    def validate(self, cmd, state):
        parsed = joint_command.parse(self.arm, cmd, position=joint_command.REQUIRED)
        arm = self.arm
        if arm.speed_ratio == 0.0 and self._told_ratio_zero != arm.speed_ratio_serial:
            # Accepted (the targets are kept), but say once per setting that nothing moves.
            self._told_ratio_zero = arm.speed_ratio_serial
            return parsed, ['set_speed_ratio is 0: POSITION_MODE targets are kept but the arm '
                            'does not move toward them until a ratio > 0 is set']
        return parsed, []

    def command(self, parsed, state):
        target = self.target.copy()               # an Output may hold the old one
        target[parsed.idx] = parsed.position
        self.target = target
        self._settled = False
