"""Inverse (and forward) position kinematics of the arm, for any arm tip: IKSolver, what the
IK/FK services answer with. No ROS here.

Each seed goes through KDL's Levenberg–Marquardt solver (fast, unaware of limits), whose
answer starts a damped least-squares solver that enforces the joint limits (clamping, and
dropping pinned joints from the Jacobian), applies the nullspace goal (drift steps within a
guard band, then converge again) and polishes to a tenth of the tolerances. Seeds follow
SolvePositionIK.seed_mode (model.ik_request); when they do not converge the search widens
around the seed, from a generator seeded per call (the same request gives the same answer),
so solutions near the seed come first. A solution in self-collision (with a collision
model) is set aside; only when every one found collides is the result IK_IN_COLLISION.
An arm tip is a frame whose chain from base runs through right_j0… in order (a prefix for
frames on the arm such as right_hand_camera); anything else raises UnknownTipError.
Design notes: docs/model.md.
"""
import math

import numpy as np
from scipy.linalg import lapack

from intera_rt.model.ik_request import (  # noqa: F401 (re-exported: the services' vocabulary)
    DEFAULT_NULLSPACE_GAIN, IK_ENDPOINT_DOES_NOT_EXIST, IK_FAILED, IK_IN_COLLISION,
    ORIENTATION_TOLERANCE, POSITION_TOLERANCE, QUATERNION_NORM_TOLERANCE, SEED_AUTO,
    SEED_CURRENT, SEED_MODES, SEED_NS_MAP, SEED_USER, IKInputError, IKResult, UnknownTipError,
    _fmt, joint_values, validate_pose)
from intera_rt.model.tip_kinematics import TipKinematics
from intera_rt.robot import ARM_JOINTS

DEFAULT_MAX_RESTARTS = 60
WIDEN_RESTARTS = 8                 # restarts over which the window around the seed grows to the range
MAX_STEP = 0.5                     # rad, largest joint change of one iteration
MAX_ITERATIONS = 150
NULLSPACE_ITERATIONS = 200         # most iterations spent drifting toward the nullspace goal
NULLSPACE_MAX_STEP = 0.1           # rad per drift iteration
NULLSPACE_DONE = 1e-4              # rad: drift stops when the step gets this small
NULLSPACE_LAMBDA2 = 1e-6
NULLSPACE_POS_GUARD = 1e-3         # m / rad: pose error allowed while drifting (it is
NULLSPACE_ROT_GUARD = 1e-2         # corrected on the way and converged again after)
LAMBDA2_START = 1e-4
LAMBDA2_MIN = 1e-10
LAMBDA2_MAX = 1e3
TWO_PI = 2.0 * math.pi
STALL_WINDOW = 10                  # iterations ...
STALL_RATIO = 0.5                  # ... over which the squared error must at least halve

_posv = lapack.get_lapack_funcs('posv', (np.zeros((6, 6)),))


class IKSolver:
    """IK/FK for the arm's tips. Not thread-safe (reuses buffers): one caller at a time."""

    def __init__(self, model, collision=None, rng_seed=0, max_restarts=DEFAULT_MAX_RESTARTS,
                 use_kdl_lma=True, position_tolerance=POSITION_TOLERANCE,
                 orientation_tolerance=ORIENTATION_TOLERANCE):
        self.model = model
        self.collision = collision
        self.rng_seed = rng_seed
        self.max_restarts = max_restarts
        self.use_kdl_lma = use_kdl_lma
        self.tol_p = position_tolerance
        self.tol_r = orientation_tolerance
        lim = model.limit_arrays(ARM_JOINTS)
        self.lo = lim['lower']
        self.hi = lim['upper']
        self._tips = {}

    # --- tips & FK ----------------------------------------------------------------------
    def tip(self, name):
        """TipKinematics of an arm tip; UnknownTipError otherwise."""
        tk = self._tips.get(name)
        if tk is not None:
            return tk
        if not isinstance(name, str) or not self.model.has_frame(name):
            raise UnknownTipError('tip %r is not a frame of the robot model' % (name,))
        names = tuple(self.model.chain(name).joint_names)
        if not names or names != ARM_JOINTS[:len(names)]:
            raise UnknownTipError('tip %r is not on the arm (its chain from base has joints %s)'
                                  % (name, list(names)))
        tk = self._tips[name] = TipKinematics(self.model, name)
        return tk

    def is_arm_tip(self, name):
        try:
            self.tip(name)
            return True
        except UnknownTipError:
            return False

    def fk(self, tip, q_arm):
        """Pose of an arm tip in base for the 7 arm angles: (position[3], quaternion xyzw[4])."""
        tk = self.tip(tip)
        q = self._arm_vector(q_arm, 'q_arm')
        return tk.pose(q[:tk.n])

    def fk_named(self, frame, values):
        """Pose in base of any frame of the model, given {joint: angle} for every joint on its
        chain (arm and head). UnknownTipError for an unknown frame, IKInputError for a
        missing or non-finite joint value."""
        if not isinstance(frame, str) or not self.model.has_frame(frame):
            raise UnknownTipError('tip %r is not a frame of the robot model' % (frame,))
        chain = self.model.chain(frame)
        q = []
        for name in chain.joint_names:
            if name not in values:
                raise IKInputError('configuration: no angle for joint %s (needed for %s)' % (name, frame))
            v = float(values[name])
            if not math.isfinite(v):
                raise IKInputError('configuration: %s = %r is not finite' % (name, v))
            q.append(v)
        return chain.fk(np.array(q))

    def in_collision(self, q_arm, q_head=0.0):
        return bool(self.collision is not None and self.collision.in_collision(q_arm, q_head))

    # --- IK -----------------------------------------------------------------------------
    def solve(self, tip, position, orientation, current, seed_mode=SEED_AUTO, user_seed=None,
              nullspace_goal=None, nullspace_gain=DEFAULT_NULLSPACE_GAIN, check_collision=True,
              q_head=0.0):
        """Joint angles putting `tip` at the pose (position[3], orientation quaternion xyzw[4])
        in base.

        current: the 7 current arm angles (array in ARM_JOINTS order, or {name: angle}).
        user_seed / nullspace_goal: {arm joint: angle} (any subset) or None.
        nullspace_gain: ≥ 0 (1 = full correction toward the goal each iteration; > 1 is
        clamped to 1).
        Raises UnknownTipError / IKInputError for a bad request; returns an IKResult."""
        tk = self.tip(tip)
        target = validate_pose(position, orientation)
        if seed_mode not in SEED_MODES:
            raise IKInputError('seed_mode: %r is not one of SEED_AUTO (0), SEED_USER (1), '
                               'SEED_CURRENT (2), SEED_NS_MAP (3)' % (seed_mode,))
        cur = self._arm_vector(current, 'current')
        user = self._fill(user_seed, cur, 'seed_angles') if user_seed else None
        if seed_mode == SEED_USER and user is None:
            raise IKInputError('seed_angles: seed_mode is SEED_USER but no seed angles were given')
        ns = None
        if nullspace_goal:
            gain = float(nullspace_gain)
            if not math.isfinite(gain) or gain < 0:
                raise IKInputError('nullspace_gain: %r must be a finite number ≥ 0' % (nullspace_gain,))
            goal = self._fill(nullspace_goal, cur, 'nullspace_goal')
            mask = np.array([1.0 if n in nullspace_goal else 0.0 for n in ARM_JOINTS])[:tk.n]
            if gain > 0:
                ns = (goal[:tk.n], mask * min(gain, 1.0))
        ns_map = self._fill(nullspace_goal, cur, 'nullspace_goal') if nullspace_goal else cur

        seeds = []
        if seed_mode == SEED_AUTO:
            if user is not None:
                seeds.append((SEED_USER, 'user', user))
            seeds.append((SEED_CURRENT, 'current', cur))
            if nullspace_goal:
                seeds.append((SEED_NS_MAP, 'ns_map', ns_map))
            widen = (SEED_CURRENT, 'current', cur)
        elif seed_mode == SEED_NS_MAP and not nullspace_goal:
            # No nullspace goal: the "NS map" would be the current angles, and that is the
            # seed used — reported as such.
            widen = (SEED_CURRENT, 'current', cur)
            seeds.append(widen)
        else:
            seed_q = {SEED_USER: user, SEED_CURRENT: cur, SEED_NS_MAP: ns_map}[seed_mode]
            label = {SEED_USER: 'user', SEED_CURRENT: 'current', SEED_NS_MAP: 'ns_map'}[seed_mode]
            widen = (seed_mode, label, seed_q)
            seeds.append(widen)

        tk.set_target(target)
        colliding = None
        attempts = 0
        rng = None
        total = len(seeds) + self.max_restarts
        while attempts < total:
            if attempts < len(seeds):
                result_type, label, q0 = seeds[attempts]
            else:
                # Restarts widen the search around the seed (the current angles in SEED_AUTO):
                # restart k draws each joint within a window around it, growing from a
                # sixth of the joint's range to all of it over WIDEN_RESTARTS restarts.
                if rng is None:
                    rng = np.random.default_rng(self.rng_seed)
                k = attempts - len(seeds)
                result_type, label, base = widen
                label += ', perturbed'
                half = (tk.hi - tk.lo) * min(1.0, (k + 1) / WIDEN_RESTARTS) * 0.5 + \
                    (tk.hi - tk.lo) / 12.0
                q0 = base.copy()
                q0[:tk.n] = rng.uniform(np.maximum(tk.lo, base[:tk.n] - half),
                                        np.minimum(tk.hi, base[:tk.n] + half))
            attempts += 1
            q = self._solve_from(tk, q0, target, ns)
            if q is None:
                continue
            if check_collision and self.in_collision(q, q_head):
                if colliding is None:
                    colliding = q
                continue
            ep, er = self._errors(tk, q, target)
            return IKResult(result_type, q, label, attempts, ep, er)
        if colliding is not None:
            ep, er = self._errors(tk, colliding, target)
            return IKResult(IK_IN_COLLISION, colliding, '', attempts, ep, er,
                            'every solution found is in self-collision')
        return IKResult(IK_FAILED, None, '', attempts,
                        message='no solution within the joint limits from %d seeds/restarts' % attempts)

    # --- internals ----------------------------------------------------------------------
    def _arm_vector(self, values, field):
        if isinstance(values, dict):
            missing = [n for n in ARM_JOINTS if n not in values]
            if missing:
                raise IKInputError('%s: no angle for %s' % (field, ', '.join(missing)))
            values = [values[n] for n in ARM_JOINTS]
        q = np.array(values, dtype=float).reshape(-1)
        if q.shape != (7,) or not np.all(np.isfinite(q)):
            raise IKInputError('%s: expected 7 finite arm joint angles, got %s' % (field, _fmt(q)))
        return q

    def _fill(self, values, base, field):
        q = base.copy()
        for name, value in values.items():
            if name not in ARM_JOINTS:
                raise IKInputError('%s: %r is not an arm joint' % (field, name))
            value = float(value)
            if not math.isfinite(value):
                raise IKInputError('%s: %s = %r is not finite' % (field, name, value))
            q[ARM_JOINTS.index(name)] = value
        return np.clip(q, self.lo, self.hi)

    def _errors(self, tk, q, target):
        e = tk.error(q[:tk.n], target)
        return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])

    def _solve_from(self, tk, q0, target, ns):
        """One seed → a 7-vector within limits reaching the target, or None."""
        n = tk.n
        seed = np.clip(q0[:n], tk.lo, tk.hi)
        if self.use_kdl_lma:
            q1 = tk.lma(seed)
            if not np.all(np.isfinite(q1)):
                return None
            ep, er = self._errors(tk, q1, target)
            if ep > 10 * self.tol_p or er > 10 * self.tol_r:
                # LMA stalled in a local minimum: the damped solver below, from the same
                # seed, mostly stalls there too; a fresh seed is cheaper.
                return None
            start = np.clip(self._wrap_into_limits(q1, tk.lo, tk.hi), tk.lo, tk.hi)
        else:
            start = seed
        q = self._lm(tk, start, target, ns)
        if q is None:
            return None
        out = q0.copy()
        out[:n] = q
        return out

    @staticmethod
    def _wrap_into_limits(q, lo, hi):
        """Shift each angle by whole turns to land within [lo, hi] when possible (else the
        shift that lands nearest the middle of the range)."""
        mid = 0.5 * (lo + hi)
        k = np.round((q - mid) / TWO_PI)
        w = q - k * TWO_PI
        # A range wider than a turn (right_j6) may hold the angle twice: keep it unshifted then.
        keep = (q >= lo) & (q <= hi)
        return np.where(keep, q, w)

    def _lm(self, tk, q, target, ns):
        """From q (within limits): converge on the target, then (with a nullspace goal) drift
        toward the goal along the solutions and converge again. None when no solution."""
        q = self._converge(tk, q, target)
        if q is None or ns is None:
            return q
        drifted = self._nullspace_drift(tk, q, target, ns)
        if drifted is not None:
            polished = self._converge(tk, drifted, target)
            if polished is not None:
                return polished
        return q

    def _converge(self, tk, q, target):
        """Damped least squares / LM with clamping on the primary task only."""
        lo, hi = tk.lo, tk.hi
        tp, tr = self.tol_p * 0.1, self.tol_r * 0.1
        tp2, tr2 = tp * tp, tr * tr
        eye6 = tk.eye6
        e = tk.error(q, target)
        ep2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2]
        er2 = e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
        err = ep2 + er2
        lam2 = LAMBDA2_START
        J = None
        check_at, err_then = STALL_WINDOW, err
        for it in range(MAX_ITERATIONS):
            if ep2 < tp2 and er2 < tr2:
                return q
            if it == check_at:
                # Stalled (a local minimum, or pinned against limits): give up on this start.
                if err > STALL_RATIO * err_then:
                    break
                check_at, err_then = it + STALL_WINDOW, err
            if J is None:
                J = tk.jacobian_loaded()
            dq = self._step(J, e, None, lam2, eye6)
            # Joints at a limit that the step pushes outward: drop them and solve again.
            pinned = ((q <= lo) & (dq < 0)) | ((q >= hi) & (dq > 0))
            if pinned.any():
                Jp = J.copy()
                Jp[:, pinned] = 0.0
                dq = self._step(Jp, e, None, lam2, eye6)
            big = np.abs(dq).max()
            if big > MAX_STEP:
                dq *= MAX_STEP / big
            q_new = np.minimum(np.maximum(q + dq, lo), hi)
            e_new = tk.error(q_new, target)
            ep2n = e_new[0] * e_new[0] + e_new[1] * e_new[1] + e_new[2] * e_new[2]
            er2n = e_new[3] * e_new[3] + e_new[4] * e_new[4] + e_new[5] * e_new[5]
            if ep2n + er2n < err:
                q, e, ep2, er2, err = q_new, e_new, ep2n, er2n, ep2n + er2n
                J = None
                lam2 = max(lam2 * 0.2, LAMBDA2_MIN)
            else:
                lam2 *= 10.0        # rejected: same J (still that of q), more damping
                if lam2 > LAMBDA2_MAX:
                    break
        if ep2 < self.tol_p ** 2 and er2 < self.tol_r ** 2:
            return q
        return None

    def _nullspace_drift(self, tk, q, target, ns):
        """Secondary task: steps z = gain·mask·(goal − q) projected into the Jacobian's
        nullspace, with the primary correction, while the pose stays near the target."""
        goal, weights = ns
        lo, hi = tk.lo, tk.hi
        eye6 = tk.eye6
        scale = 1.0
        e = tk.error(q, target)
        for _ in range(NULLSPACE_ITERATIONS):
            J = tk.jacobian_loaded()
            z = scale * weights * (goal - q)
            z[((q <= lo) & (z < 0)) | ((q >= hi) & (z > 0))] = 0.0
            dq = self._step(J, e, z, NULLSPACE_LAMBDA2, eye6)
            big = np.abs(dq).max()
            if big < NULLSPACE_DONE:
                break
            if big > NULLSPACE_MAX_STEP:
                dq *= NULLSPACE_MAX_STEP / big
            q_new = np.minimum(np.maximum(q + dq, lo), hi)
            e_new = tk.error(q_new, target)
            if (e_new[0] * e_new[0] + e_new[1] * e_new[1] + e_new[2] * e_new[2] > NULLSPACE_POS_GUARD ** 2
                    or e_new[3] * e_new[3] + e_new[4] * e_new[4] + e_new[5] * e_new[5] > NULLSPACE_ROT_GUARD ** 2):
                scale *= 0.5          # drifted off the pose: smaller steps from the last iterate
                if scale < 1e-3:
                    break
                tk.error(q, target)
                continue
            q, e = q_new, e_new
        return q

    @staticmethod
    def _step(J, e, z, lam2, eye6):
        A = J @ J.T
        A += lam2 * eye6
        rhs = e if z is None else e - J @ z
        _, y, info = _posv(A, rhs)
        if info != 0:
            y = np.linalg.lstsq(A, rhs, rcond=None)[0]
        dq = J.T @ y
        if z is not None:
            dq += z
        return dq
