"""VELOCITY_MODE: each joint's reference velocity ramps to the commanded one at the
acceleration limit. Joints a command leaves out stop. A command that would carry a joint past
its limit (its position after the command timeout plus its braking distance) is rejected
whole: the arm holds."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.base import CommandRejected, Controller, Output
from intera_rt.numeric import clip, count_nonzero


class VelocityController(Controller):
    name = 'velocity'
    joint_command_mode = 2
    speed_scaling = True

    def __init__(self, context):
        super().__init__(context)
        self.arm = context.arm
        self.p = self.v = self.a = self.cmd = np.zeros(7)

    def start(self, state, previous):
        if previous is None:
            self.p, self.v = np.array(state.q, float), np.zeros(7)
        else:
            self.p, self.v = previous.position, previous.velocity
        self.a = np.zeros(7)
        self.cmd = np.zeros(7)

    def heading(self):
        return self.cmd

    def validate(self, cmd, state):
        arm = self.arm
        parsed = joint_command.parse(arm, cmd, velocity=joint_command.REQUIRED)
        idx, names, vel = parsed.idx, parsed.names, parsed.velocity
        warnings = []
        vmax = arm.vel_limit[idx]
        if count_nonzero(np.abs(vel) > vmax):
            j = int(np.argmax(np.abs(vel) - vmax))
            warnings.append('velocity %.3f for %s saturated at %.3f' % (vel[j], names[j], vmax[j]))
            vel = clip(vel, -vmax, vmax)
        # Where the joint would be if this command ran to its timeout and then braked.
        q = state.q[idx]
        reach = q + vel * arm.timeout + vel * np.abs(vel) / (2.0 * arm.acc_limit[idx])
        past = (reach < arm.lower[idx]) | (reach > arm.upper[idx])
        if count_nonzero(past):
            j = int(np.argmax(past))
            raise CommandRejected('velocity %.3f would carry %s past its limit (at %.4f, limits '
                                  '[%.4f, %.4f]); command rejected, arm holds'
                                  % (vel[j], names[j], q[j], arm.lower[idx][j], arm.upper[idx][j]),
                                  'velocity-limit')
        parsed.velocity = vel
        return parsed, warnings

    def command(self, parsed, state):
        cmd = np.zeros(7)
        cmd[parsed.idx] = parsed.velocity
        self.cmd = cmd

    def update(self, state):
        arm, dt = self.arm, state.period
        cmd = self.cmd if state.speed_scale == 1.0 else self.cmd * state.speed_scale
        dv = clip(cmd - self.v, -arm.acc_limit * dt, arm.acc_limit * dt)
        v = self.v + dv
        p = self.p + 0.5 * (self.v + v) * dt
        at_limit = (p <= arm.lower) | (p >= arm.upper)
        v[at_limit] = 0.0
        self.p, self.v, self.a = clip(p, arm.lower, arm.upper), v, dv / dt
        return Output(arm.track(state, self.p, self.v, self.a), self.p, self.v, self.a)
