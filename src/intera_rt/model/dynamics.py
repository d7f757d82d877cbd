"""The arm's rigid-body dynamics and tip kinematics for the paths that run at the loop's
rates: inverse dynamics and gravity of right_j0..6 (1 kHz), tip poses and Jacobians (the
100 Hz endpoint states), with Pinocchio, which takes and returns numpy arrays where the KDL
chains (RobotModel.arm, RobotModel.chain) spend their time converting them.

The model is the robot's `arm` Pinocchio model (model.pinocchio_model: the URDF's inertias
with the head's left out, the KDL chain base → right_hand's dynamics; test_model_kinematics
checks they agree). An ArmDynamics holds its own data and buffers: one per user
(RobotModel.dynamics()); callers that may interleave never share one.
"""
import numpy as np
import pinocchio as pin

from intera_rt import native
from intera_rt.robot import ARM_JOINTS

MAX_RIGIDS = 8      # callers' data with a compiled Rigid kept (frame_kinematics)


class ArmDynamics:
    """Dynamics and tip kinematics of right_j0..6 on a shared model, in data of its own.

    Args:
        models: the robot's PinocchioModels (RobotModel.pinocchio).
    """

    def __init__(self, models):
        self._models = models
        self._use(models.arm)
        self._idx_q = models.idx_q(ARM_JOINTS)
        self._idx = models.idx_v(ARM_JOINTS)
        self._q = pin.neutral(self.model)
        self._v = np.zeros(self.model.nv)
        self._a = np.zeros(self.model.nv)
        self._base_inv = models.base_inv

    def set_tool(self, tool):
        """Carry `tool` (model.tool.Tool; None: nothing) from now on: the same joints and
        frames, the tool's mass and inertia on the bodies it hangs from. Data made from the
        previous `model` stays valid (same sizes)."""
        self._use(self._models.arm if tool is None else tool.apply(self._models.arm))

    def _use(self, model):
        self.model = model
        self.data = model.createData()
        # (the same algorithms on the same data from C++; None: the Python path)
        self._rigid = native.rigid(model, self.data)
        self._rigids = {id(self.data): self._rigid}   # per data a caller passes (it keeps it alive)

    def inverse_dynamics(self, q, qd, qdd):
        """Joint torques for the motion (gravity included), by recursive Newton-Euler."""
        idx = self._idx
        if self._rigid is not None:
            tau = self._rigid.rnea(q, qd, qdd, self._idx_q, idx, self._q, self._v, self._a)
            if tau is not None:
                return tau
        self._q[self._idx_q], self._v[idx], self._a[idx] = q, qd, qdd
        return pin.rnea(self.model, self.data, self._q, self._v, self._a)[idx]

    def computed_torque(self, q, qd, a, p, v, kp, kd, armature, gravity, damping):
        """(τ + armature·u − gravity) + damping·v, τ the inverse dynamics at (q, qd, u), u = a +
        kp·(p − q) + kd·(v − qd) (control.arm.Arm.track's law) in one compiled call; None
        where the compiled path does not take it (the caller computes it)."""
        if self._rigid is None:
            return None
        return self._rigid.track(a, p, q, v, qd, kp, kd, armature, gravity, damping,
                                 self._idx_q, self._idx, self._q, self._v, self._a)

    def tip(self, name, q):
        """Pose and Jacobian of any link in base: (position[3], quaternion xyzw[4], 6×7
        Jacobian of its origin, linear rows first, base-aligned; columns right_j0..6).
        KeyError when the model has no such link."""
        rotation, position, jac = self.frame_kinematics(self.frame_id(name), q)
        return position, pin.Quaternion(rotation).coeffs(), jac

    def frame_id(self, name):
        """The id of a link's frame, for frame_kinematics (KeyError when the model has no such
        link)."""
        if not self.model.existFrame(name, pin.FrameType.BODY):
            raise KeyError('no link named %r in the robot model' % name)
        return self.model.getFrameId(name, pin.FrameType.BODY)

    def frame_kinematics(self, fid, q, data=None):
        """Pose and Jacobian of frame `fid` (frame_id) at q, computed in `data` (default:
        this object's own): (rotation 3×3, position 3, 6×7 Jacobian of its origin, linear
        rows first, base-aligned; columns right_j0..6), in base."""
        data = self.data if data is None else data
        if self._base_inv is None:
            rigid = self._rigids.get(id(data), False)
            if rigid is False:
                if len(self._rigids) > MAX_RIGIDS:         # (a caller making data per call)
                    self._rigids = {id(self.data): self._rigid}
                rigid = self._rigids[id(data)] = native.rigid(self.model, data)
            out = None if rigid is None else rigid.frame_kinematics(fid, q, self._idx_q, self._idx,
                                                                   self._q)
            if out is not None:
                return out
        full = self._q.copy()
        full[self._idx_q] = q
        pin.computeJointJacobians(self.model, data, full)        # also the placements
        pin.updateFramePlacement(self.model, data, fid)
        pose = data.oMf[fid]
        jac = pin.getFrameJacobian(self.model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:, self._idx]
        if self._base_inv is not None:
            pose = self._base_inv * pose
            rot = self._base_inv.rotation
            jac = np.vstack([rot @ jac[:3], rot @ jac[3:]])
        # (copies: Pinocchio hands out views of `data`, which the next call overwrites)
        return pose.rotation.copy(), pose.translation.copy(), jac

    def mass_matrix(self, q, data=None):
        """M(q) of right_j0..6 (7×7, symmetric; the drives' reflected inertias left out),
        computed in `data` (see frame_kinematics)."""
        data = self.data if data is None else data
        full = self._q.copy()
        full[self._idx_q] = q
        m = pin.crba(self.model, data, full)[np.ix_(self._idx, self._idx)]
        return np.triu(m) + np.triu(m, 1).T            # crba fills the upper triangle

    def gravity(self, q):
        """The model's gravity torque at q (N·m, 7)."""
        if self._rigid is not None:
            g = self._rigid.gravity(q, self._idx_q, self._idx, self._q)
            if g is not None:
                return g
        self._q[self._idx_q] = q
        return pin.computeGeneralizedGravity(self.model, self.data, self._q)[self._idx]
