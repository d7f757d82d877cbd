"""What the motion planners need from the arm's kinematics, for one endpoint:

  EndpointKinematics(model, tip): n (joints on base → tip, a prefix of right_j0..6), fk(q) →
  (p[3], R[3×3]) in base, jacobian(q) → 6×n (linear; angular, at the tip origin, in base),
  lower / upper limits; and follow(...) — differential IK along a densely sampled Cartesian
  path with a nullspace bias, the path-following solver of the Cartesian planner.

FK and Jacobian come from model.ik.TipKinematics (preallocated KDL solvers) when available,
else from the RobotModel chain directly.
"""
import numpy as np
from scipy.linalg import lapack

from intera_rt.model.robot_model import ARM_JOINTS
from intera_rt.motion.geometry import rotation_error

try:                                   # the shared IK module (model/ik.py)
    from intera_rt.model.ik import TipKinematics as _TipKinematics
except ImportError:                    # pragma: no cover - older model layer
    _TipKinematics = None

POSITION_TOLERANCE = 1e-5        # m: a path point is reached when the tip is this close
ORIENTATION_TOLERANCE = 1e-4     # rad
MAX_ITERATIONS = 8               # per path point
DAMPING = 1e-6                   # λ² of the damped least squares
MAX_JOINT_STEP = 0.2             # rad a joint may move between neighbouring path points

_posv = lapack.get_lapack_funcs('posv', (np.zeros((6, 6)),))


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
        self._chain = chain
        self._tk = _TipKinematics(model, tip) if _TipKinematics is not None else None

    def fk(self, q):
        if self._tk is not None:
            f = self._tk.frame(q)
            p, m = f.p, f.M
            return (np.array([p[0], p[1], p[2]]),
                    np.array([[m[0, 0], m[0, 1], m[0, 2]], [m[1, 0], m[1, 1], m[1, 2]],
                              [m[2, 0], m[2, 1], m[2, 2]]]))
        frame = self._chain.fk_frame(q)
        p, m = frame.p, frame.M
        return np.array([p[0], p[1], p[2]]), np.array([[m[i, j] for j in range(3)] for i in range(3)])

    def jacobian(self, q):
        if self._tk is not None:
            return self._tk.jacobian(q)
        return self._chain.jacobian(q)

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
        n = self.n
        out = np.empty((4, len(q_at), 3))
        if self._tk is not None:
            import PyKDL as kdl
            tk = self._tk
            for i, (a, b, c) in enumerate(zip(q_before, q_at, q_after)):
                fa = kdl.Frame(tk.frame(a[:n]))
                fb = kdl.Frame(tk.frame(b[:n]))
                fc = tk.frame(c[:n])
                t1 = kdl.diff(fa, fb)
                t2 = kdl.diff(fb, fc)
                v1, v2, r1, r2 = t1.vel, t2.vel, t1.rot, t2.rot
                for k in range(3):
                    out[0, i, k] = (v1[k] + v2[k]) / (2 * h)
                    out[1, i, k] = (v2[k] - v1[k]) / (h * h)
                    out[2, i, k] = (r1[k] + r2[k]) / (2 * h)
                    out[3, i, k] = (r2[k] - r1[k]) / (h * h)
            return out[0], out[1], out[2], out[3]
        for i, (a, b, c) in enumerate(zip(q_before, q_at, q_after)):
            pa, ra = self.fk(a[:n])
            pb, rb = self.fk(b[:n])
            pc, rc = self.fk(c[:n])
            v1, v2 = pb - pa, pc - pb
            r1, r2 = rotation_error(rb, ra), rotation_error(rc, rb)
            out[:, i] = [(v1 + v2) / (2 * h), (v2 - v1) / (h * h), (r1 + r2) / (2 * h), (r2 - r1) / (h * h)]
        return out[0], out[1], out[2], out[3]

    # --- differential IK along a path ---------------------------------------------------
    def _dls(self, J, e, z):
        A = J @ J.T
        A[np.diag_indices(6)] += DAMPING
        rhs = e if z is None else e - J @ z
        _, y, info = _posv(A, rhs)
        if info != 0:
            y = np.linalg.lstsq(A, rhs, rcond=None)[0]
        dq = J.T @ y
        return dq if z is None else dq + z

    def _errors(self, targets):
        """A function (q, i) → 6-vector twist from the tip at q to path point i, in base,
        leaving q loaded for jacobian_loaded()."""
        positions, rotations = targets
        if self._tk is not None:
            import PyKDL as kdl
            frames = [kdl.Frame(kdl.Rotation(*r.reshape(9)), kdl.Vector(*p))
                      for p, r in zip(positions, rotations)]
            tk = self._tk
            return (lambda q, i: tk.error(q, frames[i])), tk.jacobian_loaded
        state = {}

        def error(q, i):
            p, R = self.fk(q)
            state['q'] = q
            return np.concatenate([positions[i] - p, rotation_error(rotations[i], R)])
        return error, (lambda: self.jacobian(state['q']))

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
                    if e[0] * e[0] + e[1] * e[1] + e[2] * e[2] < tp2 and \
                            e[3] * e[3] + e[4] * e[4] + e[5] * e[5] < tr2:
                        ok = True
                        break
                    J = jacobian_loaded()
                dq = self._dls(J, e, z if it == 0 else None)
                q_new = qn + dq
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
