"""What the Gazebo backend and its stand-in compute from the robot model: the brakes'
stand-in (Gazebo has no brakes) and the bodies Gazebo lumps links into (where it applies
external wrenches). No ROS here.

Both work on the robot's shared Pinocchio model (RobotModel.pinocchio), each caller in data
of its own: the backend holds the arm from the loop's thread and from the thread that
receives joint states (its watchdog), so each of them has a BrakeHold.
"""
import numpy as np
import pinocchio as pin

# The brakes' stand-in: a PD about the position where they engaged, on the drives'
# reflected inertia I (armature): kp = I·ω², kd = 2·I·ω (critically damped at ω rad/s,
# well inside what a step or two of latency allows: kd·dt/I = 0.08).
BRAKE_OMEGA = 40.0                    # rad/s


class BrakeHold:
    """The torque holding the boards' joints where the brakes engaged: the PD above plus the
    model's gravity torques (as well as the model matches the simulated arm), computed in
    data of its own: one per thread that calls it.

    Args:
        model: the RobotModel.
        joint_names: the boards' joints, in their order.
    """

    def __init__(self, model, joint_names):
        models = model.pinocchio
        self.pin = models.full
        self.data = self.pin.createData()
        self._idx = models.idx_q(joint_names)       # (= idx_v: revolute joints)
        self._q = pin.neutral(self.pin)
        armature = model.limit_arrays(joint_names)['armature']
        self.kp = armature * BRAKE_OMEGA ** 2
        self.kd = 2.0 * armature * BRAKE_OMEGA

    def torque(self, held, q, qd):
        """Joint torques (boards' order) holding joints at q, moving at qd, to `held`."""
        self._q[self._idx] = q
        g = pin.computeGeneralizedGravity(self.pin, self.data, self._q)[self._idx]
        return g + self.kp * (held - q) - self.kd * qd


def gazebo_body(model, link):
    """Gazebo's body for `link` of Pinocchio model `model`: Gazebo lumps a link hung on a
    fixed joint into its parent, so the body is the child link of the nearest movable joint
    above it (the root link when there is none). Returns (body name, joint id);
    KeyError when there is no such link."""
    if not model.existFrame(link, pin.FrameType.BODY):
        raise KeyError('no link named %r' % link)
    jid = model.frames[model.getFrameId(link, pin.FrameType.BODY)].parent
    for frame in model.frames:
        if frame.type == pin.FrameType.BODY and frame.parent == jid and (
                jid == 0 or model.frames[frame.previousFrame].type == pin.FrameType.JOINT):
            return frame.name, jid
    raise KeyError('no body for link %r' % link)


def body_com(model, data, jid):
    """The lumped body's centre of mass in the world (the joint placements in `data` are
    those of the last forwardKinematics)."""
    return data.oMi[jid].act(model.inertias[jid].lever)


def _shift(torque, force, arm):
    """The torque of wrench (force, torque) about a point moved by `arm` (m): τ − arm × F."""
    return np.asarray(torque, float) - np.cross(arm, force)
