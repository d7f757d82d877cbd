"""VELOCITY_MODE: each joint's reference velocity ramps to the commanded one at the
acceleration limit. Joints a command leaves out stop. A command that would carry a joint past
its limit (its position after the command timeout plus its braking distance) is rejected
whole: the arm holds."""
import numpy as np

from intera_rt.control import joint_command
from intera_rt.control.base import CommandRejected, Controller, Output
from intera_rt.native import kernels
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
        joints = parsed.joints
        warnings = []
        vel = joint_command.saturate('velocity', vel, joints.vel_limit, names, warnings)
        # Where the joint would be if this command ran to its timeout and then braked.
        q = state.q[idx]
        reach = q + vel * arm.timeout + vel * np.abs(vel) / (2.0 * joints.acc_limit)
        past = (reach < joints.lower) | (reach > joints.upper)
        if count_nonzero(past):
            j = int(np.argmax(past))
            raise CommandRejected('velocity %.3f would carry %s past its limit (at %.4f, limits '
                                  '[%.4f, %.4f]); command rejected, arm holds'
                                  % (vel[j], names[j], q[j], joints.lower[j], joints.upper[j]),
                                  'velocity-limit')
        parsed.velocity = vel
        return parsed, warnings

    def command(self, parsed, state):
        cmd = np.zeros(7)
        cmd[parsed.idx] = parsed.velocity
        self.cmd = cmd

    def update(self, state):
        arm = self.arm
        args = (self.cmd, state.speed_scale, self.p, self.v, arm.acc_limit, state.period,
                arm.lower, arm.upper)
        step = None if kernels is None else kernels.velocity_step(*args)
        self.p, self.v, self.a = _velocity_step(*args) if step is None else step
        return Output(arm.track(state, self.p, self.v, self.a), self.p, self.v, self.a)


def _velocity_step(cmd, scale, p, v, acc_limit, dt, lower, upper):
    """The reference (p, v, a) one step on: its velocity toward cmd·scale at the acceleration
    limit, stopped at a position limit. The compiled kernels' velocity_step computes exactly
    this."""
    cmd = cmd if scale == 1.0 else cmd * scale
    dv = clip(cmd - v, -acc_limit * dt, acc_limit * dt)
    v1 = v + dv
    p1 = p + 0.5 * (v + v1) * dt
    at_limit = (p1 <= lower) | (p1 >= upper)
    v1[at_limit] = 0.0
    return clip(p1, lower, upper), v1, dv / dt
