"""What the Gazebo backend and its stand-in compute from the robot model: the brakes'
stand-in (Gazebo has no brakes) and the bodies Gazebo lumps links into (where it applies
external wrenches). No ROS here.

Both work on the robot's shared Pinocchio model (RobotModel.pinocchio), each caller in data
of its own: the backend holds the arm from the loop's thread and from the thread that
receives joint states (its watchdog), so each of them has a BrakeHold.
"""
import numpy as np
import pinocchio as pin

# The brakes' stand-in: a PD about the position where they engaged, on the plant's own
# inertia (the mass matrix at the pose, plus the drives' armature where the plant has one):
# u = ω²·e − 2ω·q̇, critically damped at ω rad/s, well inside what a step or two of
# latency allows (2ω·dt = 0.08), whatever each joint's inertia.
BRAKE_OMEGA = 40.0                    # rad/s


class BrakeHold:
    """The torque holding the boards' joints where the brakes engaged: M(q)·u + g(q) (+ the
    armature's I·u) with u the PD above — as well as the model matches the simulated arm —
    computed in data of its own: one per thread that calls it.

    Args:
        model: the RobotModel.
        joint_names: the boards' joints, in their order.
        armature: the plant's drive armature (JointBoards.plant_armature: None, the model's).
    """

    def __init__(self, model, joint_names, armature=None):
        models = model.pinocchio
        self.pin = models.full
        self.data = self.pin.createData()
        self._idx = models.idx_q(joint_names)       # (= idx_v: revolute joints)
        self._q = pin.neutral(self.pin)
        self._u = np.zeros(self.pin.nv)
        self._zero = np.zeros(self.pin.nv)
        if armature is None:
            armature = model.limit_arrays(joint_names)['armature']
        self.armature = np.broadcast_to(np.asarray(armature, float), (len(joint_names),))
        self.kp = BRAKE_OMEGA ** 2
        self.kd = 2.0 * BRAKE_OMEGA

    def torque(self, held, q, qd):
        """Joint torques (boards' order) holding joints at q, moving at qd, to `held`."""
        self._q[self._idx] = q
        u = self.kp * (held - q) - self.kd * qd
        self._u[self._idx] = u
        tau = pin.rnea(self.pin, self.data, self._q, self._zero, self._u)[self._idx]
        return tau + self.armature * u


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
