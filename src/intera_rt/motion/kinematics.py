"""What the motion planners need from the arm's kinematics, for one endpoint:

  EndpointKinematics(model, tip): n (joints on base → tip, a prefix of right_j0..6), fk(q) →
  (p[3], R[3×3]) in base, jacobian(q) → 6×n (linear; angular, at the tip origin, in base),
  lower / upper limits; and follow(...) — differential IK along a densely sampled Cartesian
  path with a nullspace bias, the path-following solver of the Cartesian planner.

FK and Jacobian are pinocchio's, on the RobotModel's Pinocchio model (model.pinocchio.arm:
the same URDF as its KDL chains, equal to ~1e-15), with a data of its own: a pinocchio
call returns numpy directly, where reading a KDL frame or Jacobian into numpy element by
element costs ~10× the kinematics itself — and the planner evaluates both once per path
point.
"""
import math

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from intera_rt.model.robot_model import ARM_JOINTS, BASE_FRAME
from intera_rt.motion.geometry import rotation_error_many

POSITION_TOLERANCE = 1e-5        # m: the end of a path is reached when the tip is this close
ORIENTATION_TOLERANCE = 1e-4     # rad
POINT_POSITION_TOLERANCE = 1e-4  # m / rad: the points before it (what is left is corrected
POINT_ORIENTATION_TOLERANCE = 1e-3  # at the next point)
# The stated path tolerance: where the least squares are damped (near a singular
# configuration) or a point is not reached within the iterations, the tip may stay this far
# from the path; the next points correct what is left.
PATH_POSITION_TOLERANCE = 1e-3   # m
PATH_ORIENTATION_TOLERANCE = 1e-2  # rad
MAX_ITERATIONS = 10              # per path point
BACKTRACKS = 4                   # halvings of a step that made the error grow
DAMPING = 1e-6                   # λ² of the least squares away from singular configurations
SINGULAR_SIGMA = 0.05            # smallest singular value of J below which λ² grows ...
MAX_DAMPING = 4e-4               # ... to this at a singular configuration (λ = 0.02)
AVOID_SIGMA = 0.12               # below this, the nullspace steers toward larger σ_min
AVOID_STEP = 0.03                # rad per nominal path step, at σ_min = 0
LIMIT_MARGIN = 0.3               # rad from a joint limit where the nullspace pushes away ...
LIMIT_STEP = 0.03                # ... by up to this per nominal path step
MAX_AVOID_STEP = 0.05            # rad: largest avoidance step per nominal path step
SIGMA_EVERY = 4                  # path points between fresh σ_min computations ...
SIGMA_WATCH = 0.15               # ... below which it is computed at every point
MAX_JOINT_STEP = 0.2             # rad a joint may move between neighbouring path points ...
MAX_REFINE = 6                   # ... else the step is halved, up to this many times
MAX_POINTS = 4000                # path points per run, refinements included

_posv = lapack.get_lapack_funcs('posv', (np.zeros((6, 6)),))
_log3 = pin.log3


class PathFollowError(Exception):
    """The tip cannot follow the path: `index` is the path point (`s` its path parameter,
    when known), the message says why."""

    def __init__(self, index, message, s=None):
        super().__init__(message)
        self.index = index
        self.s = s


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
        pm = model.pinocchio.arm         # the robot's Pinocchio model, built once per URDF
        base = pm.frames[pm.getFrameId(BASE_FRAME, pin.BODY)]
        if base.parent != 0 or not base.placement.isIdentity():
            raise ValueError('the URDF root must be %r (poses are in base)' % BASE_FRAME)
        self._model, self._data = pm, pm.createData()
        self._frame = pm.getFrameId(tip, pin.BODY)
        self._iq, self._iv = model.pinocchio.idx_q(self.names), model.pinocchio.idx_v(self.names)
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
    def _dls(J, e, z, lam2=DAMPING, w=None):
        """Damped least squares step for the twist e, with the secondary joint step z (or
        None) projected into the Jacobian's (damped) nullspace: z + Jᵀ(JJᵀ + λ²I)⁻¹(e − Jz).
        w: per-joint weights (weighted least norm: a joint of weight w moves as if 1/√w as
        effective), or None."""
        rhs = e if z is None else e - np.dot(J, z)
        if w is not None:
            r = 1.0 / np.sqrt(w)
            J = J * r
        A = np.dot(J, J.T)
        A.flat[::7] += lam2
        _, y, info = _posv(A, rhs, 0, 1)          # overwrite_a: A is ours
        if info != 0:
            A = np.dot(J, J.T) + lam2 * np.eye(6)
            y = np.linalg.lstsq(A, rhs, rcond=None)[0]
        dq = np.dot(J.T, y)
        if w is not None:
            dq *= r
        return dq if z is None else dq + z

    def _error(self, q, p, R):
        """Twist (position difference; rotation vector, base frame) from the tip at q to the
        pose (p, R); q stays loaded."""
        pq, Rq = self._load(q)
        return np.concatenate([p - pq, _log3(R @ Rq.T)])

    def _manipulability_gradient(self, q, J):
        """∂ log det(J Jᵀ) / ∂q (by finite differences of J): the joint direction that moves
        away from singular configurations fastest. q stays loaded."""
        AiJ = np.linalg.solve(np.dot(J, J.T), J)
        h = 1e-6
        g = np.empty(self.n)
        qq = q.copy()
        for k in range(self.n):
            qq[k] = q[k] + h
            self._load(qq)
            g[k] = 2.0 * np.sum(AiJ * (self._jacobian_loaded() - J)) / h
            qq[k] = q[k]
        self._load(q)
        return g

    def _secondary(self, q, J, sigma, scale, bias, near_limit):
        """The joint step asked of the nullspace at one path point: the caller's bias, plus
        a push away from joint limits within LIMIT_MARGIN (near_limit: some joint is) and
        (below AVOID_SIGMA) a step toward larger manipulability, these two capped at
        MAX_AVOID_STEP per nominal path step (`scale` = this step / the nominal one). None
        when nothing is asked."""
        n = self.n
        avoid = sigma < AVOID_SIGMA and n == 7
        if not near_limit and not avoid:
            return None if bias is None else bias[:n]          # (never written to)
        z = np.zeros(n)
        if near_limit:
            d_lo, d_hi = q - self.lower, self.upper - q
            push = np.where(d_lo < LIMIT_MARGIN, 1.0 - d_lo / LIMIT_MARGIN, 0.0) - \
                np.where(d_hi < LIMIT_MARGIN, 1.0 - d_hi / LIMIT_MARGIN, 0.0)
            z += LIMIT_STEP * scale * push
        if avoid:
            g = self._manipulability_gradient(q, J)
            norm = math.sqrt(float(np.dot(g, g)))
            if norm > 1e-9:
                z += (AVOID_STEP * scale * (1.0 - sigma / AVOID_SIGMA) / norm) * g
        big = float(np.abs(z).max())
        cap = MAX_AVOID_STEP * scale
        if big > cap:
            z *= cap / big
        return z if bias is None else z + bias[:n]

    def _limit_weights(self, d):
        """Weighted least norm: a joint within LIMIT_MARGIN of a limit (d: each joint's
        distance to its nearer limit) weighs (LIMIT_MARGIN / distance)², so the other joints
        take over its motion where the redundancy allows. Continuous in q (a weight that
        switches with the joint's direction makes the solution chatter point to point)."""
        return (LIMIT_MARGIN / np.clip(d, 1e-3, LIMIT_MARGIN)) ** 2

    def _reach(self, q, pq, Rq, J, p, R, bias, scale, heading, tp2, tr2, sigma=None):
        """From q (the chain's n angles; the tip at (pq, Rq), Jacobian J there): iterate
        toward the pose (p, R), the secondary step (bias, see _secondary) in the first
        iteration, until within √tp2 m / √tr2 rad or MAX_ITERATIONS. sigma: J's smallest
        singular value when known. Returns (q, error twist, pq, Rq, J at q, σ_min at the
        start, damped)."""
        lo, hi = self.lower, self.upper
        e = np.empty(6)
        e[:3] = p - pq
        e[3:] = _log3(np.dot(R, Rq.T))
        if sigma is None:
            sigma = math.sqrt(max(float(np.linalg.eigvalsh(np.dot(J, J.T))[0]), 0.0))
        damped = sigma < SINGULAR_SIGMA
        lam2 = DAMPING + (MAX_DAMPING * (1.0 - (sigma / SINGULAR_SIGMA) ** 2) if damped else 0.0)
        d = np.minimum(q - lo, hi - q)
        near_limit = float(d.min()) < LIMIT_MARGIN
        z = self._secondary(q, J, sigma, scale, bias, near_limit)
        w = self._limit_weights(d) if near_limit else None
        err = float(np.dot(e, e))
        for it in range(MAX_ITERATIONS):
            ex, ey, ez, rx, ry, rz = e.tolist()
            if ex * ex + ey * ey + ez * ez < tp2 and rx * rx + ry * ry + rz * rz < tr2 and \
                    (it > 0 or z is None):
                break
            zi = z if it == 0 else None
            dq = self._dls(J, e, zi, lam2, w)
            q_new = q + dq
            # Joints pushed past a limit (the cheap test first: it rarely holds).
            if ((q_new < lo) | (q_new > hi)).any():
                pinned = ((q_new < lo) & (dq < 0)) | ((q_new > hi) & (dq > 0))
                if pinned.any():
                    Jp = J.copy()
                    Jp[:, pinned] = 0.0
                    zp = None
                    if zi is not None:
                        zp = zi.copy()
                        zp[pinned] = 0.0
                    dq = self._dls(Jp, e, zp, lam2, w)
                    dq[pinned] = 0.0
            # Backtrack a step that made the error grow (far from linear: near a singular
            # configuration, or a long step).
            step = 1.0
            for _ in range(BACKTRACKS + 1):
                q_new = np.minimum(np.maximum(q + step * dq, lo), hi)
                pn, Rn = self._load(q_new)
                e_new = np.empty(6)
                e_new[:3] = p - pn
                e_new[3:] = _log3(np.dot(R, Rn.T))
                err_new = float(np.dot(e_new, e_new))
                if err_new < err or zi is not None and err_new < 4.0 * err + 1e-8:
                    break
                step *= 0.5
            else:
                break                              # stalled: keep the best
            q, e, err, pq, Rq = q_new, e_new, err_new, pn, Rn
            J = self._jacobian_loaded()
        return q, e, pq, Rq, J, sigma, damped

    def solve_near(self, q, p, R):
        """The chain's joints moved from q (7 angles) onto the pose (p, R) by the damped least
        squares (no secondary step), within POINT_POSITION_TOLERANCE /
        POINT_ORIENTATION_TOLERANCE, or None: the nearby solution, for a point between two
        neighbouring path points."""
        n = self.n
        qn = np.asarray(q, dtype=float)[:n].copy()
        pq, Rq = self._load(qn)
        J = self._jacobian_loaded()
        tp, tr = POINT_POSITION_TOLERANCE, POINT_ORIENTATION_TOLERANCE
        qn, e, _, _, _, _, _ = self._reach(qn, pq, Rq, J, p, R, None, 0.0, None, tp * tp, tr * tr)
        if float(np.dot(e[:3], e[:3])) < tp * tp and float(np.dot(e[3:], e[3:])) < tr * tr:
            return np.concatenate([qn, np.asarray(q, dtype=float)[n:]])
        return None

    def track(self, q_start, ss, positions, rotations, pose_at=None, nullspace=None,
              free_joints=None, nominal=None):
        """Joint configurations putting the tip on each path point in turn, from q_start
        (whose tip must be at positions[0]), refining the path where needed.

        ss: the path parameter of each point (increasing); positions (N×3), rotations
        (N×3×3). pose_at(s) → (position, rotation): the path anywhere, for the points
        inserted where a step is too long (a joint would move more than MAX_JOINT_STEP, or
        the point is not reached); None: no refinement.
        nullspace(s_before, s, q) → a joint step toward the caller's bias for the point at s,
        or None. free_joints(s) → values of the arm joints beyond the chain (a 6-joint
        endpoint such as right_hand_camera), or None to keep them. nominal: the path's
        sampling step, which the nullspace's avoidance steps are per (default: the median
        step of ss).
        Intermediate points are reached within POINT_POSITION_TOLERANCE /
        POINT_ORIENTATION_TOLERANCE (what is left is corrected at the next point), the last
        one within POSITION_TOLERANCE / ORIENTATION_TOLERANCE; where the least squares are
        damped (σ_min < SINGULAR_SIGMA) or after the last refinement, within the path
        tolerance (PATH_POSITION_TOLERANCE, PATH_ORIENTATION_TOLERANCE).
        Returns (ss, joints N'×7, worst position error m, worst orientation error rad).
        Raises PathFollowError (its `s`: where) when no continuation is found."""
        n = self.n
        ss = np.asarray(ss, dtype=float)
        if nominal is None:
            nominal = float(np.median(np.diff(ss))) if len(ss) > 1 else 1.0
        s_end = float(ss[-1])
        q = np.array(q_start, dtype=float)
        qn = q[:n].copy()
        pq, Rq = self._load(qn)
        J = self._jacobian_loaded()
        out_s, out_q = [float(ss[0])], [q.copy()]
        pending = [(float(ss[i]), positions[i], rotations[i], 0) for i in range(len(ss) - 1, 0, -1)]
        worst_p = worst_r = 0.0
        heading = np.zeros(n)
        sigma, fresh = None, 0
        while pending:
            s, p, R, depth = pending[-1]
            s_prev = out_s[-1]
            scale = min(1.0, (s - s_prev) / nominal) if nominal > 0 else 1.0
            bias = nullspace(s_prev, s, q) if nullspace is not None else None
            if bias is not None and not bias.any():
                bias = None
            end = s >= s_end
            tp = POSITION_TOLERANCE if end else POINT_POSITION_TOLERANCE
            tr = ORIENTATION_TOLERANCE if end else POINT_ORIENTATION_TOLERANCE
            # σ_min changes little between neighbouring points: it is computed afresh every
            # SIGMA_EVERY points, and at every point once it is small.
            if sigma is not None and (fresh >= (SIGMA_EVERY if sigma < 2 * SIGMA_WATCH else 2 * SIGMA_EVERY)
                                      or sigma < SIGMA_WATCH or depth > 0):
                sigma = None
            q_new, e, pn, Rn, Jn, sigma_at, damped = self._reach(qn, pq, Rq, J, p, R, bias, scale, heading,
                                                                tp * tp, tr * tr, sigma)
            fresh = fresh + 1 if sigma is not None else 0
            ep2, er2 = float(np.dot(e[:3], e[:3])), float(np.dot(e[3:], e[3:]))
            jump = float(np.abs(q_new - qn).max())
            reached = ep2 < tp * tp and er2 < tr * tr
            last = depth >= MAX_REFINE or pose_at is None or len(out_s) + len(pending) >= MAX_POINTS
            if jump <= MAX_JOINT_STEP and (reached or (damped or last) and
                                           ep2 < PATH_POSITION_TOLERANCE ** 2 and
                                           er2 < PATH_ORIENTATION_TOLERANCE ** 2):
                pending.pop()
                heading = q_new - qn
                qn, pq, Rq, J, sigma = q_new, pn, Rn, Jn, sigma_at
                q = qn.copy() if n == 7 else np.concatenate([qn, q[n:]])
                if free_joints is not None:
                    extra = free_joints(s)
                    if extra is not None:
                        q[n:] = extra
                out_s.append(s)
                out_q.append(q)
                worst_p, worst_r = max(worst_p, ep2), max(worst_r, er2)
                continue
            if not last:
                sm = 0.5 * (s_prev + s)
                pm, Rm = pose_at(sm)
                pending[-1] = (s, p, R, depth + 1)
                pending.append((sm, pm, Rm, depth + 1))
                self._load(qn)                      # _reach left its last trial loaded
                continue
            ep, er = math.sqrt(ep2), math.sqrt(er2)
            if jump > MAX_JOINT_STEP:
                j = int(np.argmax(np.abs(q_new - qn)))
                raise PathFollowError(len(out_s), 'the joints would jump near (%.4f, %.4f, %.4f): %s moves '
                                      '%.3f rad over %.2g of path (no continuous joint path follows the '
                                      'path here)' % (p[0], p[1], p[2], ARM_JOINTS[j], jump, s - s_prev), s)
            at = [ARM_JOINTS[j] for j in range(n)
                  if q_new[j] <= self.lower[j] + 1e-9 or q_new[j] >= self.upper[j] - 1e-9]
            why = ('joint limits of %s' % ', '.join(at)) if at else 'out of reach or singular'
            raise PathFollowError(len(out_s), 'the tip cannot follow the path at (%.4f, %.4f, %.4f): %.2g m / '
                                  '%.2g rad off (path tolerance %g m / %g rad; %s)'
                                  % (p[0], p[1], p[2], ep, er, PATH_POSITION_TOLERANCE,
                                     PATH_ORIENTATION_TOLERANCE, why), s)
        return np.array(out_s), np.array(out_q), math.sqrt(worst_p), math.sqrt(worst_r)

    def follow(self, q_start, positions, rotations, nullspace=None, free_joints=None):
        """track() over the given points without refinement: the joint configurations
        (len(positions) × 7). nullspace(i, q) and free_joints(i) take the point's index."""
        ss = np.arange(len(positions), dtype=float)
        ns = None if nullspace is None else (lambda a, b, q: nullspace(int(round(b)), q))
        fj = None if free_joints is None else (lambda s: free_joints(int(round(s))))
        return self.track(q_start, ss, positions, rotations, nullspace=ns, free_joints=fj)[1]
