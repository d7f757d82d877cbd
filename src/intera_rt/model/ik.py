"""Inverse (and forward) position kinematics of the arm, for any arm tip. No ROS here.

Solver
------
Damped least squares with Levenberg–Marquardt damping on the KDL chain base → tip
(`RobotModel.chain`): the error is KDL's twist between the current and target frames (tip
position difference and rotation vector, both in base), the Jacobian is KDL's analytic
geometric Jacobian at the tip, and each step

    dq = z + Jᵀ (J Jᵀ + λ² I)⁻¹ (e − J z),     z = gain · mask · (q_goal − q)

is the damped least-squares correction plus the nullspace goal `z` projected into the
Jacobian's (damped) nullspace. λ² shrinks after a step that reduced the error and grows
after one that did not (the step is then retried). Joint limits: every iterate is clamped to
the limits, and joints pinned at a limit that the step pushes outward are taken out of the
Jacobian for that step. Steps are capped at MAX_STEP rad.

To be fast, each seed first goes through KDL's own Levenberg–Marquardt solver
(ChainIkSolverPos_LMA, C++, unaware of limits and nullspace goals); its answer, moved into
the limits by whole turns where possible and clamped, is the start of the solver above,
which enforces the limits, applies the nullspace goal and polishes to a tenth of the
tolerances. When LMA stalls away from the target the seed is abandoned for the next one
(the damped solver from the same seed mostly stalls too, and a fresh seed is cheaper).
`IKSolver(..., use_kdl_lma=False)` runs the damped solver alone from each seed.
A nullspace goal is applied after convergence: drift steps (primary correction + projected
goal, ≤ NULLSPACE_MAX_STEP) while the pose stays within a guard band, then converge again.

Seeds (SolvePositionIK.seed_mode)
---------------------------------
SEED_USER (1)     the user's angles (any subset, any order; the rest from current)
SEED_CURRENT (2)  the current angles
SEED_NS_MAP (3)   the nullspace goal's angles (the rest from current)
SEED_AUTO (0)     user seed (if given), then current, then the NS map (if a goal is given).
SEED_NS_MAP without a nullspace goal is the current angles: it is reported SEED_CURRENT.
When the seed(s) of the mode do not converge, the search widens around the seed (SEED_AUTO:
around the current angles): up to `max_restarts` restarts, each joint drawn within a window
around the seed that grows from a sixth of its range to all of it over WIDEN_RESTARTS
restarts (from a generator seeded
per call: the same request gives the same answer), so solutions near the seed come first.
`IKResult.result_type` is the seed mode the solution was found from — the seed it actually
used; `IKResult.seed` says which ('user', 'current', 'ns_map', with ', perturbed' for a
widened search).

Solutions are accepted within POSITION_TOLERANCE (m) and ORIENTATION_TOLERANCE (rad) of the
target. With a collision model, a solution in self-collision is set aside and the search
goes on; only when every solution found collides is the result IK_IN_COLLISION (with that
solution).

Tips: a frame is an arm tip when its chain from base runs through right_j0… in order (all
seven joints for right_hand, right_l6 and anything fixed to them; a prefix for frames on
the arm such as right_hand_camera on right_l5, whose other arm joints keep the seed's value).
Anything else raises UnknownTipError (→ IK_ENDPOINT_DOES_NOT_EXIST).
"""
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import PyKDL as kdl
from scipy.linalg import lapack

from intera_rt.model.robot_model import ARM_JOINTS

SEED_AUTO = 0
SEED_USER = 1
SEED_CURRENT = 2
SEED_NS_MAP = 3
SEED_MODES = (SEED_AUTO, SEED_USER, SEED_CURRENT, SEED_NS_MAP)
IK_FAILED = -1
IK_IN_COLLISION = -2
IK_ENDPOINT_DOES_NOT_EXIST = -3

POSITION_TOLERANCE = 1e-4          # m
ORIENTATION_TOLERANCE = 1e-3       # rad
QUATERNION_NORM_TOLERANCE = 1e-3   # |‖q‖ − 1| accepted (then normalised)
DEFAULT_NULLSPACE_GAIN = 0.4       # the SDK's default
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


class UnknownTipError(LookupError):
    """The requested tip is not a frame of the model, or not on the arm."""


class IKInputError(ValueError):
    """A request field is malformed (NaN, non-unit quaternion, bad joint name, ...).
    The message names the field and the value."""


@dataclass
class IKResult:
    result_type: int                    # > 0 seed mode that produced the solution, < 0 failure
    q: Optional[np.ndarray] = None      # the 7 arm angles (ARM_JOINTS order), None on failure
    seed: str = ''                      # 'user', 'current' or 'ns_map' (+ ', perturbed')
    attempts: int = 0                   # seeds + restarts tried
    position_error: float = math.inf    # m
    orientation_error: float = math.inf  # rad
    message: str = ''

    @property
    def ok(self):
        return self.result_type > 0

    @property
    def joints(self):
        return dict(zip(ARM_JOINTS, self.q)) if self.q is not None else {}


def validate_pose(position, quaternion, field='pose'):
    """(position[3], quaternion xyzw[4]) → KDL frame; IKInputError naming the bad field."""
    p = np.asarray(position, dtype=float).reshape(-1)
    r = np.asarray(quaternion, dtype=float).reshape(-1)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise IKInputError('%s.position: expected 3 finite numbers, got %s' % (field, _fmt(position)))
    if r.shape != (4,) or not np.all(np.isfinite(r)):
        raise IKInputError('%s.orientation: expected a finite quaternion (x, y, z, w), got %s'
                           % (field, _fmt(quaternion)))
    norm = math.sqrt(float(r @ r))
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise IKInputError('%s.orientation: quaternion (x, y, z, w) = %s has norm %.6g, expected 1'
                           % (field, _fmt(quaternion), norm))
    r = r / norm
    return kdl.Frame(kdl.Rotation.Quaternion(*r), kdl.Vector(*p))


def _fmt(values):
    try:
        return '(%s)' % ', '.join('%.6g' % float(v) for v in values)
    except (TypeError, ValueError):
        return repr(values)


def joint_values(names, positions, field, allowed=ARM_JOINTS):
    """A JointState-like (names, positions) → {joint: angle} for the joints in `allowed`;
    other names are ignored (e.g. head_pan in a seed). IKInputError on a length mismatch
    or a non-finite value of an allowed joint."""
    names = list(names)
    positions = list(positions)
    if len(names) != len(positions):
        raise IKInputError('%s: %d names but %d positions' % (field, len(names), len(positions)))
    out = {}
    for name, value in zip(names, positions):
        if name not in allowed:
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise IKInputError('%s: %s = %r is not a number' % (field, name, value))
        if not math.isfinite(value):
            raise IKInputError('%s: %s = %r is not finite' % (field, name, value))
        out[name] = value
    return out


class TipKinematics:
    """KDL chain base → tip with preallocated KDL objects (one per tip, reused)."""

    def __init__(self, model, tip):
        chain = model.chain(tip)
        n = chain.n
        self.tip = tip
        self.n = n
        self.names = list(chain.joint_names)
        self.chain = chain.chain
        lim = model.limit_arrays(self.names)
        self.lo = lim['lower']
        self.hi = lim['upper']
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self._lma = kdl.ChainIkSolverPos_LMA(self.chain, 1e-7, 300, 1e-12)
        self._q = kdl.JntArray(n)
        self._q_out = kdl.JntArray(n)
        self._frame = kdl.Frame()
        self._jac = kdl.Jacobian(n)
        self._jac_get = self._jac.__getitem__
        self._jac_keys = [(r, c) for r in range(6) for c in range(n)]
        self._range = range(n)
        self.eye6 = np.eye(6)

    def _load(self, q):
        arr = self._q
        for i in self._range:
            arr[i] = q[i]

    def frame(self, q):
        self._load(q)
        self._fk.JntToCart(self._q, self._frame)
        return self._frame

    def pose(self, q):
        f = self.frame(q)
        return np.array([f.p[0], f.p[1], f.p[2]]), np.array(f.M.GetQuaternion())

    def error(self, q, target):
        """Twist (dx, dy, dz, rx, ry, rz) from the tip at q to the target, in base; loads q."""
        self._load(q)
        self._fk.JntToCart(self._q, self._frame)
        tw = kdl.diff(self._frame, target)
        v = tw.vel
        r = tw.rot
        return np.array((v[0], v[1], v[2], r[0], r[1], r[2]))

    def jacobian_loaded(self):
        """6×n Jacobian at the q of the last error()/frame() call."""
        self._jac_solver.JntToJac(self._q, self._jac)
        return np.fromiter(map(self._jac_get, self._jac_keys), float, 6 * self.n).reshape(6, self.n)

    def jacobian(self, q):
        self._load(q)
        return self.jacobian_loaded()

    def lma(self, q):
        """KDL's LMA from q (no limits); returns the joint vector it ends at."""
        self._load(q)
        self._lma.CartToJnt(self._q, self._frame_target, self._q_out)
        out = self._q_out
        return np.array([out[i] for i in self._range])

    def set_target(self, target):
        self._frame_target = target


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
                # seed, mostly stalls there too (measured); a fresh seed is cheaper.
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
