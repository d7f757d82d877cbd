"""What the motion planners need from the arm's kinematics, for one endpoint:

  EndpointKinematics(model, tip): n (joints on base → tip, a prefix of right_j0..6), fk(q) →
  (p[3], R[3×3]) in base, jacobian(q) → 6×n (linear; angular, at the tip origin, in base),
  lower / upper limits; and follow(...) — differential IK along a densely sampled Cartesian
  path with a nullspace bias, the path-following solver of the Cartesian planner.

FK and Jacobian are pinocchio's, on the RobotModel's Pinocchio model (model.arm_dynamics:
the same URDF as its KDL chains, equal to ~1e-15), with a data of its own: a pinocchio
call returns numpy directly, where reading a KDL frame or Jacobian into numpy element by
element costs ~10× the kinematics itself — and the planner evaluates both once per path
point.
"""
import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from intera_rt.model.robot_model import ARM_JOINTS, BASE_FRAME
from intera_rt.motion.geometry import rotation_error_many

POSITION_TOLERANCE = 1e-5        # m: a path point is reached when the tip is this close
ORIENTATION_TOLERANCE = 1e-4     # rad
MAX_ITERATIONS = 8               # per path point
DAMPING = 1e-6                   # λ² of the damped least squares
MAX_JOINT_STEP = 0.2             # rad a joint may move between neighbouring path points

_posv = lapack.get_lapack_funcs('posv', (np.zeros((6, 6)),))
_DAMPING_EYE = DAMPING * np.eye(6)
_log3 = pin.log3


class PathFollowError(Exception):
    """The tip cannot follow the path: `index` is the path point, the message says why."""

    def __init__(self, index, message):
        super().__init__(message)
        self.index = index


class EndpointKinematics:
    def __init__(self, model, tip):
        chain = model.chain(tip)
        self.tip = tip
        self.n = chain.n
        self.names = list(chain.joint_names)
        if tuple(self.names) != ARM_JOINTS[:self.n] or self.n == 0:
            raise KeyError('%r is not an endpoint of the arm' % tip)
        lim = model.limit_arrays(self.names)
        self.lower, self.upper = lim['lower'], lim['upper']
        pm = model.arm_dynamics.model    # the robot's Pinocchio model, built once per RobotModel
        base = pm.frames[pm.getFrameId(BASE_FRAME, pin.BODY)]
        if base.parent != 0 or not base.placement.isIdentity():
            raise ValueError('the URDF root must be %r (poses are in base)' % BASE_FRAME)
        self._model, self._data = pm, pm.createData()
        self._frame = pm.getFrameId(tip, pin.BODY)
        joints = [pm.joints[pm.getJointId(name)] for name in self.names]
        self._iq = np.array([j.idx_q for j in joints])
        self._iv = np.array([j.idx_v for j in joints])
        self._q = pin.neutral(pm)        # joints off the chain (head) stay at 0: no effect

    def _load(self, q):
        """Pose (p, R) of the tip at the chain's joint angles q[:n]; q stays loaded."""
        self._q[self._iq] = q[:self.n]
        pin.forwardKinematics(self._model, self._data, self._q)
        m = pin.updateFramePlacement(self._model, self._data, self._frame)
        return m.translation, m.rotation

    def _jacobian_loaded(self):
        return pin.computeFrameJacobian(self._model, self._data, self._q, self._frame,
                                        pin.LOCAL_WORLD_ALIGNED)[:, self._iv]

    def fk(self, q):
        return self._load(q)

    def fk_many(self, qs):
        """Positions (N×3) and rotations (N×3×3) of the tip at each row of qs."""
        ps, rs = np.empty((len(qs), 3)), np.empty((len(qs), 3, 3))
        for k, q in enumerate(qs):
            ps[k], rs[k] = self._load(q)
        return ps, rs

    def jacobian(self, q):
        self._load(q)
        return self._jacobian_loaded()

    def nullspace_residual(self, q, goal):
        """|projection of (goal − q) on the Jacobian's nullspace| (rad): how far the
        configuration could still move toward the goal without moving the tip."""
        n = self.n
        J = self.jacobian(q[:n])
        d = (np.asarray(goal, dtype=float) - q)[:n]
        proj = d - np.linalg.pinv(J, rcond=1e-6) @ (J @ d)
        return float(np.linalg.norm(proj))

    def path_rates(self, q_before, q_at, q_after, h):
        """First and second derivatives along a joint path of the tip's position and
        orientation (rotation vector, base frame) by central differences of FK at three
        configurations per point spaced h apart: (dp, ddp, dr, ddr), each (N, 3)."""
        pa, ra = self.fk_many(q_before)
        pb, rb = self.fk_many(q_at)
        pc, rc = self.fk_many(q_after)
        v1, v2 = pb - pa, pc - pb
        r1, r2 = rotation_error_many(rb, ra), rotation_error_many(rc, rb)
        return (v1 + v2) / (2 * h), (v2 - v1) / (h * h), (r1 + r2) / (2 * h), (r2 - r1) / (h * h)

    # --- differential IK along a path ---------------------------------------------------
    @staticmethod
    def _dls(J, e, z):
        A = np.dot(J, J.T)
        A += _DAMPING_EYE
        rhs = e if z is None else e - np.dot(J, z)
        _, y, info = _posv(A, rhs, 0, 1)          # overwrite_a: A is ours
        if info != 0:
            y = np.linalg.lstsq(np.dot(J, J.T) + _DAMPING_EYE, rhs, rcond=None)[0]
        dq = np.dot(J.T, y)
        return dq if z is None else dq + z

    def _errors(self, targets):
        """A function (q, i) → 6-vector twist from the tip at q to path point i, in base,
        leaving q loaded for _jacobian_loaded()."""
        positions, rotations = targets
        load = self._load

        def error(q, i):
            p, R = load(q)
            return np.concatenate([positions[i] - p, _log3(rotations[i] @ R.T)])
        return error, self._jacobian_loaded

    def follow(self, q_start, positions, rotations, nullspace=None, free_joints=None, deltas=None):
        """Joint configurations (len(positions) × 7) putting the tip on each path point in
        turn, starting from q_start (whose tip must be at positions[0]).

        nullspace(i, q) → z: a joint step toward the bias for point i (projected into the
        Jacobian's nullspace), or None. free_joints(i) → values for the arm joints beyond
        the chain (a 6-joint endpoint such as right_hand_camera), or None to keep them.
        deltas: (len − 1) × 6 twists from each path point to the next (position change and
        rotation vector, base frame), when known: they stand in for one FK per point.
        Raises PathFollowError when a point cannot be reached or the joints would jump."""
        n = self.n
        lo, hi = self.lower, self.upper
        error, jacobian_loaded = self._errors((positions, rotations))
        q = np.array(q_start, dtype=float)
        out = np.empty((len(positions), 7))
        out[0] = q
        qn = q[:n].copy()
        e = error(qn, 0)
        J = jacobian_loaded()
        tp2, tr2 = POSITION_TOLERANCE ** 2, ORIENTATION_TOLERANCE ** 2
        for i in range(1, len(positions)):
            prev = qn.copy()
            z = nullspace(i, np.concatenate([qn, q[n:]])) if nullspace is not None else None
            if z is not None:
                z = z[:n]
            # The previous point was reached within tolerance: the error to this one is the
            # step between the two plus that residual.
            e = e + deltas[i - 1] if deltas is not None else error(qn, i)
            ok = False
            for it in range(MAX_ITERATIONS):
                if it > 0:
                    ex, ey, ez, rx, ry, rz = e.tolist()
                    if ex * ex + ey * ey + ez * ez < tp2 and rx * rx + ry * ry + rz * rz < tr2:
                        ok = True
                        break
                    J = jacobian_loaded()
                dq = self._dls(J, e, z if it == 0 else None)
                q_new = qn + dq
                # Joints pushed past a limit (the cheap test first: it rarely holds).
                if ((q_new < lo) | (q_new > hi)).any():
                    pinned = ((q_new < lo) & (dq < 0)) | ((q_new > hi) & (dq > 0))
                    if pinned.any():
                        Jp = J.copy()
                        Jp[:, pinned] = 0.0
                        zp = None
                        if z is not None and it == 0:
                            zp = z.copy()
                            zp[pinned] = 0.0
                        dq = self._dls(Jp, e, zp)
                        dq[pinned] = 0.0
                        q_new = np.minimum(np.maximum(qn + dq, lo), hi)
                qn = q_new
                e = error(qn, i)
            if not ok:
                ep, er = float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:]))
                if not (ep < 10 * POSITION_TOLERANCE and er < 10 * ORIENTATION_TOLERANCE):
                    target_p = positions[i]
                    at = [ARM_JOINTS[j] for j in range(n) if qn[j] <= lo[j] + 1e-9 or qn[j] >= hi[j] - 1e-9]
                    why = ('joint limits of %s' % ', '.join(at)) if at else 'a singular configuration'
                    raise PathFollowError(i, 'the tip cannot follow the path at (%.4f, %.4f, %.4f): '
                                          '%.2g m / %.2g rad off after %d iterations (%s)'
                                          % (target_p[0], target_p[1], target_p[2], ep, er,
                                             MAX_ITERATIONS, why))
            jump = np.abs(qn - prev)
            if jump.max() > MAX_JOINT_STEP:
                j = int(np.argmax(jump))
                target_p = positions[i]
                raise PathFollowError(i, 'the joints would jump near (%.4f, %.4f, %.4f): %s moves %.3f rad '
                                      'between neighbouring path points (singularity)'
                                      % (target_p[0], target_p[1], target_p[2], ARM_JOINTS[j], jump[j]))
            q = np.concatenate([qn, q[n:]])
            if free_joints is not None:
                extra = free_joints(i)
                if extra is not None:
                    q[n:] = extra
            out[i] = q
            J = jacobian_loaded()
        return out
