"""CARTESIAN interpolation: the active endpoint moves on straight lines (position) with
slerp (orientation) between the waypoints' poses, starting from its current pose.

Path
----
Segment k runs from pose k-1 to pose k (pose 0 = the endpoint now). At a waypoint whose
corner_distance d > 0 the two straight lines are joined by a circular arc tangent to both,
starting d before the waypoint and ending d after it (d is capped at half of either segment);
in the blend the orientation passes smoothly from the first segment's slerp to the second's
(both continued at their own rate, mixed with a smoothstep weight), so position, orientation
and their rates are continuous. corner_distance 0 stops at the waypoint. A segment that
only rotates is its own stop-to-stop run.

Joints
------
The path is sampled (≤ 3 cm, ≤ 0.05 rad) and followed by differential IK (damped least
squares, warm-started from the previous point). The waypoint's joint_positions bias the
nullspace: along each segment the remaining nullspace offset toward the bias is spread
evenly over the remaining path, so the arm reaches its preferred posture at the waypoint
without sudden joint motion. nso_start_offset_allowed: before the path, the arm may first
move in its nullspace (tip still) to the posture the first waypoint's bias asks for.
nso_check_end_offset: the final posture must be within NSO_END_TOLERANCE of the last
waypoint's nullspace goal (else CARTESIAN_INTERPOLATION_FAILED).

Timing
------
Each stop-to-stop run is time-parameterised by TOPP-RA (toppra) on the cubic joint spline
through the IK points: time-optimal under the endpoint's max_linear_speed / accel and
max_rotational_speed / accel of each segment and max_joint_speed_ratio × the joint velocity
limits. The joint accelerations that result are then checked against the joint
acceleration limits: PLANNED_JOINT_ACCEL_LIMIT ("reduce the Cartesian speeds and
accelerations"), as the robot documents.
"""
import bisect
import logging
import math

import numpy as np
from scipy.interpolate import CubicSpline, PPoly
from scipy.linalg import solve_banded

from intera_rt.model.ik import SEED_CURRENT
from intera_rt.model.robot_model import ARM_JOINTS
from intera_rt.motion import analysis
from intera_rt.motion.errors import (CARTESIAN_INTERPOLATION_FAILED, FAILED_TO_PARAMETERIZE,
                                     PLANNED_MOTION_COLLISION, MotionError)
from intera_rt.motion.geometry import (matrix_to_quat, quat_to_matrix_many, rotation_angle,
                                       rotation_error_many, slerp_many, slerp_pairs)
from intera_rt.motion.kinematics import (PATH_ORIENTATION_TOLERANCE, PATH_POSITION_TOLERANCE,
                                         EndpointKinematics, PathFollowError)
from intera_rt.motion.plan import HoldPlan, PathPiece, PiecewisePlan



def _import_toppra():
    """toppra, imported without matplotlib: it imports matplotlib.pyplot for its debugging
    plots only, which costs every process that plans ~29 MB (the motion controller: 166 →
    137 MB). Stand-in modules take matplotlib's place while toppra is imported (its plot
    helpers then fail, nothing else does) and are removed after, so that a later
    `import matplotlib` gets the real one."""
    import sys
    import types
    stubs = [name for name in ('matplotlib', 'matplotlib.pyplot') if name not in sys.modules]
    for name in stubs:
        sys.modules[name] = types.ModuleType(name)
    if 'matplotlib.pyplot' in stubs:
        sys.modules['matplotlib'].pyplot = sys.modules['matplotlib.pyplot']
    try:
        import toppra
        import toppra.constraint
        return toppra
    finally:
        for name in stubs:
            del sys.modules[name]


logging.getLogger('toppra').setLevel(logging.WARNING)
toppra = _import_toppra()
from toppra.constraint import DiscretizationType, LinearConstraint  # noqa: E402

# toppra looks on disk for its optional solver packages each time an instance is made
# (~1 ms, several per goal); the answer does not change while the process runs.
_SOLVERS = toppra.solverwrapper.available_solvers(output_msg=False)
toppra.solverwrapper.available_solvers = lambda output_msg=True: _SOLVERS

SAMPLE_STEP = 0.03             # m between IK path points
SAMPLE_ANGLE = 0.05            # rad between IK path points
NULLSPACE_STEP = 0.02          # rad per point of a nullspace (start offset) move
MAX_GRIDPOINTS = 250           # TOPP-RA gridpoints per run
PATH_H = 5e-4                  # path parameter step for the endpoint's rates along a run
MIN_LENGTH = 1e-6              # m / rad: shorter segments are "already there"
MAX_TURN = math.radians(179.0)  # sharper corners are not blended (stop instead)
NSO_END_TOLERANCE = 0.1        # rad, nso_check_end_offset
LIMIT_SLACK = 1.01             # joint velocity² / acceleration over the limit before re-timing
MAX_POSTURE_ATTEMPTS = 5       # postures tried per stop-to-stop run (see _plan_run)
SPLINE_REFINE = 3              # re-follows of a run where its spline strays from the path
SPLINE_CHECK_STEP = 0.1        # rad: runs with a joint step this large (or refined) are checked
FALLBACK_REACH = 0.5           # share of a segment over which a fallback posture is taken
TOPPRA_MARGIN = 0.99           # joint limits given to TOPP-RA, of the limits (rates vary between gridpoints)
ACCEL_RETRIES = 3              # re-timings with locally tightened limits, then the run is slowed
MAX_DURATION = 3600.0
ROTATION_SCALE = 0.1           # m per rad: path parameter of a rotation-only run


def _close(a, b, tol=0.05):
    """Two postures (7 angles or None) within tol rad of each other, joint by joint."""
    if a is None or b is None:
        return a is None and b is None
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) < tol


class _Piece:
    """One geometric piece of a run, over its own arc length [0, length]."""

    def __init__(self, seg, length):
        self.seg = seg               # index of the segment (waypoint) it belongs to
        self.length = length


class _Line(_Piece):
    def __init__(self, seg, p0, p1, q0, q1, x0, x1, total):
        super().__init__(seg, x1 - x0)
        self.p0, self.p1, self.q0, self.q1 = p0, p1, q0, q1
        self.x0, self.total = x0, total
        self.e = (p1 - p0) / total

    def at_many(self, xs):
        d = self.x0 + xs
        n = len(xs)
        return (self.p0[None, :] + d[:, None] * self.e[None, :], slerp_many(self.q0, self.q1, d / self.total),
                np.tile(self.e, (n, 1)), np.zeros((n, 3)))


class _Blend(_Piece):
    def __init__(self, seg, corner, e1, e2, d, line_in, line_out):
        cosa = float(np.clip(e1 @ e2, -1.0, 1.0))
        alpha = math.acos(cosa)
        self.corner, self.e1, self.e2, self.d, self.alpha = corner, e1, e2, d, alpha
        self.start = corner - d * e1
        if alpha < 1e-6:
            length = 2.0 * d
            self.rho = math.inf
        else:
            self.rho = d / math.tan(alpha / 2.0)
            normal = e2 - cosa * e1
            self.normal = normal / np.linalg.norm(normal)
            length = self.rho * alpha
        super().__init__(seg, length)
        self.line_in, self.line_out = line_in, line_out   # (q0, q1, total) of each segment

    def at_many(self, xs):
        n = len(xs)
        if math.isinf(self.rho):
            p = self.start[None, :] + xs[:, None] * self.e1[None, :]
            tangent, curvature = np.tile(self.e1, (n, 1)), np.zeros((n, 3))
        else:
            phi = xs / self.rho
            c, s = np.cos(phi)[:, None], np.sin(phi)[:, None]
            center = self.start + self.rho * self.normal
            p = center[None, :] - self.rho * c * self.normal[None, :] + self.rho * s * self.e1[None, :]
            tangent = c * self.e1[None, :] + s * self.normal[None, :]
            curvature = (center[None, :] - p) / (self.rho * self.rho)
        qa0, qa1, la = self.line_in
        qb0, qb1, lb = self.line_out
        qa = slerp_many(qa0, qa1, (la - self.d + xs) / la)
        qb = slerp_many(qb0, qb1, (self.d - (self.length - xs)) / lb)
        w = xs / self.length if self.length > 0 else np.ones(n)
        w = w * w * (3.0 - 2.0 * w)
        return p, slerp_pairs(qa, qb, w), tangent, curvature


class _Rotation(_Piece):
    def __init__(self, seg, p, q0, q1, angle):
        super().__init__(seg, angle * ROTATION_SCALE)
        self.p, self.q0, self.q1 = p, q0, q1

    def at_many(self, xs):
        n = len(xs)
        us = xs / self.length if self.length > 0 else np.ones(n)
        return np.tile(self.p, (n, 1)), slerp_many(self.q0, self.q1, us), np.zeros((n, 3)), np.zeros((n, 3))


class _PathConstraint(LinearConstraint):
    """Endpoint speed/acceleration limits and joint velocity limits along a run, as
    TOPP-RA's canonical linear constraint (x = ṡ², u = s̈), precomputed at the gridpoints:
      x ≤ xmax                                (speeds)
      ±|p'|u + |p''|x ≤ a_lin,  ±|r'|u + |r''|x ≤ a_rot   (accelerations, |·| bounds)"""

    def __init__(self, xmax, dp, ddp, dr, ddr, a_lin, a_rot):
        super().__init__()
        self.discretization_type = DiscretizationType.Collocation
        self.dof = 7
        n = len(xmax)
        self._xbound = np.column_stack([np.zeros(n), xmax])
        self._a = np.column_stack([dp, -dp, dr, -dr])
        self._b = np.column_stack([ddp, ddp, ddr, ddr])
        self._c = np.zeros((n, 4))
        self._F = np.repeat(np.eye(4)[None, :, :], n, axis=0)
        self._g = np.column_stack([a_lin, a_lin, a_rot, a_rot])

    def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
        return self._a, self._b, self._c, self._F, self._g, None, self._xbound


class _JointAccelConstraint(LinearConstraint):
    """|q'(s)·u + q''(s)·x| ≤ amax per joint, amax given per gridpoint, enforced at both
    ends of each interval (TOPP-RA's interpolation discretisation: u is constant over the
    interval and x grows by 2·Δs·u across it), so the plan's piecewise-constant path
    acceleration keeps the joints within their limits at every gridpoint it passes."""

    def __init__(self, amax):
        super().__init__()
        self.discretization_type = DiscretizationType.Interpolation
        self.dof = 7
        self.identical = True
        self._amax = np.asarray(amax, dtype=float)

    def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
        # Each row divided by its limit, so F and g are the same at every gridpoint.
        d1, d2 = path(gridpoints, 1) / self._amax, path(gridpoints, 2) / self._amax
        n = len(gridpoints)
        delta = np.diff(gridpoints)
        a = np.empty((n, 14))
        b = np.empty((n, 14))
        a[:, :7], b[:, :7] = d1, d2
        # the same interval's constant u at its far end, where x = x_i + 2·Δs·u
        a[:-1, 7:] = d1[1:] + 2.0 * delta[:, None] * d2[1:]
        b[:-1, 7:] = d2[1:]
        a[-1, 7:], b[-1, 7:] = d1[-1], d2[-1]
        F = np.vstack([np.eye(14), -np.eye(14)])
        return a, b, np.zeros((n, 14)), F, np.ones(28), None, None


class _SplinePath(toppra.interpolator.AbstractGeometricPath):
    def __init__(self, spline):
        self.spline = spline
        self._d = [spline, spline.derivative(1), spline.derivative(2)]

    def __call__(self, ss, order=0):
        return self._d[order](ss)

    @property
    def dof(self):
        return 7

    @property
    def path_interval(self):
        return np.array([self.spline.x[0], self.spline.x[-1]])


def reference_polyline(plan, spacing=0.001):
    """The designed path of a Cartesian plan as positions ≤ `spacing` apart (the chords
    stay within spacing²/(8·radius) of the arcs)."""
    cached = getattr(plan, '_reference_polyline', None)
    if cached is not None:
        return cached
    out = [np.asarray(plan.start_position)[None, :]]
    for piece in plan.reference_pieces:
        n = max(2, int(math.ceil(piece.length / spacing)) + 1)
        out.append(piece.at_many(np.linspace(0.0, piece.length, n))[0])
    plan._reference_polyline = np.concatenate(out)
    return plan._reference_polyline


class CartesianPlanner:
    def __init__(self, model, ik_solver=None):
        self.model = model
        self.ik = ik_solver
        lim = model.limit_arrays(model.arm.joint_names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']
        self._tips = {}
        self.notes = []

    def endpoint(self, tip):
        if tip not in self._tips:
            self._tips[tip] = EndpointKinematics(self.model, tip)
        return self._tips[tip]

    # --- entry point ------------------------------------------------------------------------
    def path(self, q0, request):
        """The designed path of a CARTESIAN request from the angles q0: one (pose_at(s) →
        (position, rotation matrix), length) per stop-to-stop run (for analysis)."""
        tip = self.endpoint(request.endpoint)
        _, _, runs, _, _ = self._geometry(tip, np.asarray(q0, dtype=float), request)
        return [(self._pose_on(pieces), float(sum(p.length for p in pieces))) for pieces in runs]

    def plan(self, q0, request, collision=None, q_head=0.0):
        """q0: current 7 angles; request: MotionRequest (CARTESIAN). collision: the
        self-collision model a path must keep clear of (None: unchecked). Returns a Plan
        with the designed path's pieces (reference_polyline(plan) for analysis); notes on
        how it was found are in self.notes."""
        self.notes = []
        tip = self.endpoint(request.endpoint)
        q0 = np.asarray(q0, dtype=float)
        p_start, r_start, runs, marks, seg_meta = self._geometry(tip, q0, request)
        wps = request.waypoints
        q = q0.copy()
        plan_pieces = []
        times = [0.0] * len(wps)
        reference = []
        t = 0.0
        first_bias = next((w.q for w in wps if w.q is not None), None)
        if request.nso_start_offset_allowed and first_bias is not None and tip.n == 7:
            piece = self._nullspace_move(tip, q, p_start, r_start, first_bias, wps[0].limits)
            if piece is not None:
                plan_pieces.append(piece)
                t += piece.duration
                q = piece.spline(piece.ss[-1])
        run_times = []
        for r, pieces in enumerate(runs):
            piece, end_q = self._plan_run(tip, q, pieces, wps, seg_meta, collision, q_head)
            reference.extend(pieces)
            run_times.append((t, piece))
            plan_pieces.append(piece)
            t += piece.duration
            q = end_q
        for k, (r, x) in enumerate(marks):
            if r < 0 or r >= len(run_times):
                times[k] = t if r >= len(run_times) else 0.0
                continue
            t0, piece = run_times[r]
            times[k] = t0 + (piece.duration if x is None else piece.time_at(x))
        times = list(np.maximum.accumulate(times))
        if t > MAX_DURATION:
            raise MotionError(FAILED_TO_PARAMETERIZE, 'the trajectory would take %.0f s (> %.0f s)'
                              % (t, MAX_DURATION))
        if request.nso_check_end_offset:
            goal = wps[-1].q
            if goal is not None and tip.n == 7:
                resid = tip.nullspace_residual(q, goal)
                if resid > NSO_END_TOLERANCE:
                    raise MotionError(CARTESIAN_INTERPOLATION_FAILED,
                                      'nso_check_end_offset: the final posture is %.3f rad (> %.3f) from '
                                      'the last waypoint\'s nullspace goal %s'
                                      % (resid, NSO_END_TOLERANCE, np.round(goal, 4).tolist()))
        plan = PiecewisePlan(plan_pieces, times) if plan_pieces else HoldPlan(q0, len(wps))
        plan.reference_pieces = reference
        plan.start_position = p_start
        plan.endpoint = request.endpoint
        return plan

    def _geometry(self, tip, q0, request):
        """(start position, start rotation, runs: the geometric pieces of each stop-to-stop
        run, marks: (run, arc length) where each waypoint is passed, per-segment metadata)."""
        p_start, r_start = tip.fk(q0[:tip.n])
        wps = request.waypoints
        q_start = matrix_to_quat(r_start)
        poses = [(p_start, q_start)]
        for w in wps:
            q = w.orientation.copy()
            if q @ poses[-1][1] < 0:
                q = -q
            poses.append((w.position.copy(), q))

        runs = []              # the geometric pieces of each stop-to-stop run
        seg_meta = []          # per segment: length, rotation angle, limits
        for k in range(1, len(poses)):
            (pa, qa), (pb, qb) = poses[k - 1], poses[k]
            seg_meta.append({'L': float(np.linalg.norm(pb - pa)), 'theta': rotation_angle(qa, qb),
                             'limits': wps[k - 1].limits})
        # Blend distances at interior waypoints (between segment k and k+1, 0-based k).
        blend = [0.0] * len(seg_meta)
        for k in range(len(seg_meta) - 1):
            a, b = seg_meta[k], seg_meta[k + 1]
            d = a['limits'].corner_distance
            if d <= 0 or a['L'] < MIN_LENGTH or b['L'] < MIN_LENGTH:
                continue
            e1 = (poses[k + 1][0] - poses[k][0]) / a['L']
            e2 = (poses[k + 2][0] - poses[k + 1][0]) / b['L']
            if math.acos(float(np.clip(e1 @ e2, -1, 1))) > MAX_TURN:
                continue
            blend[k] = min(d, 0.5 * a['L'], 0.5 * b['L'])
        # Geometric pieces, split into runs at the stops.
        marks = []             # (run index, arc length in run) at which each waypoint is passed
        current = []
        run_len = 0.0
        for k, meta in enumerate(seg_meta):
            (pa, qa), (pb, qb) = poses[k], poses[k + 1]
            L, theta = meta['L'], meta['theta']
            if L < MIN_LENGTH and theta < MIN_LENGTH:
                marks.append((len(runs), run_len) if current else (len(runs) - 1, None))
                continue
            if L < MIN_LENGTH:
                if current:
                    runs.append(current)
                    current, run_len = [], 0.0
                piece = _Rotation(k, pa, qa, qb, theta)
                runs.append([piece])
                marks.append((len(runs) - 1, piece.length))
                continue
            x0 = blend[k - 1] if k > 0 else 0.0
            x1 = L - blend[k]
            if x1 - x0 > 1e-9:
                current.append(_Line(k, pa, pb, qa, qb, x0, x1, L))
                run_len += x1 - x0
            if blend[k] > 0:
                nxt = seg_meta[k + 1]
                e1 = (pb - pa) / L
                e2 = (poses[k + 2][0] - pb) / nxt['L']
                b = _Blend(k, pb, e1, e2, blend[k], (qa, qb, L), (qb, poses[k + 2][1], nxt['L']))
                current.append(b)
                marks.append((len(runs), run_len + 0.5 * b.length))
                run_len += b.length
            else:
                marks.append((len(runs), run_len))
                runs.append(current)
                current, run_len = [], 0.0
        if current:
            runs.append(current)
        return p_start, r_start, runs, marks, seg_meta

    # --- one stop-to-stop run ----------------------------------------------------------
    def _sample(self, pieces):
        """Arc-length samples of a run: s, positions, quaternions, the segment (waypoint)
        each sample belongs to, and the sample indices where pieces meet."""
        ss, ps, qs, segs, breaks = [], [], [], [], []
        s0 = 0.0
        count_so_far = 0
        for i, piece in enumerate(pieces):
            if isinstance(piece, _Rotation):
                angle = rotation_angle(piece.q0, piece.q1)
            elif isinstance(piece, _Line):
                angle = rotation_angle(piece.q0, piece.q1) * piece.length / piece.total
            else:
                angle = rotation_angle(piece.line_in[0], piece.line_in[1]) * piece.length / piece.line_in[2] + \
                    rotation_angle(piece.line_out[0], piece.line_out[1]) * piece.length / piece.line_out[2]
            if isinstance(piece, _Rotation):
                count = max(4, int(math.ceil(angle / SAMPLE_ANGLE)))
            else:
                count = max(4 if isinstance(piece, _Blend) else 2,
                            int(math.ceil(piece.length / SAMPLE_STEP)),
                            int(math.ceil(angle / SAMPLE_ANGLE)))
            xs = np.linspace(0.0, piece.length, count + 1)
            if i > 0:
                xs = xs[1:]
                breaks.append(count_so_far - 1)
            p, q, _, _ = piece.at_many(xs)
            ss.append(s0 + xs)
            ps.append(p)
            qs.append(q)
            # A blend belongs to the segment it leaves until its middle.
            if isinstance(piece, _Blend):
                segs.append(np.where(xs < 0.5 * piece.length, piece.seg, piece.seg + 1))
            else:
                segs.append(np.full(len(xs), piece.seg))
            count_so_far += len(xs)
            s0 += piece.length
        qs = np.concatenate(qs)
        # Keep consecutive quaternions in one hemisphere.
        flip = np.concatenate([[False], np.einsum('ij,ij->i', qs[1:], qs[:-1]) < 0])
        qs[np.logical_xor.accumulate(flip)] *= -1.0
        segs = np.concatenate(segs)
        switches = (np.flatnonzero(np.diff(segs)) + 1).tolist()       # a new waypoint's bias
        breaks = sorted(set(breaks) | set(switches))
        return np.concatenate(ss), np.concatenate(ps), qs, segs, breaks

    @staticmethod
    def _joint_spline(ss, joints, breaks):
        """q(s): a cubic spline through the IK points, C2 except at the breaks (where the
        path's curvature or the nullspace drift changes): there, and at both ends, the joint
        rate is set to its three-point estimate from each side (averaged), so the spline stays
        C1 without ringing across a curvature jump. One banded solve for the whole run."""
        n = len(ss)
        h = np.diff(ss)
        delta = np.diff(joints, axis=0) / h[:, None]

        def slope(i, direction):
            j1, j2 = i + direction, i + 2 * direction
            if not 0 <= j2 < n:
                return delta[min(i, j1)]
            h1, h2 = ss[j1] - ss[i], ss[j2] - ss[i]
            return (-(h1 + h2) / (h1 * h2) * joints[i] + h2 / (h1 * (h2 - h1)) * joints[j1]
                    - h1 / (h2 * (h2 - h1)) * joints[j2])
        fixed = {0: slope(0, +1), n - 1: slope(n - 1, -1)}
        for b in breaks:
            if 0 < b < n - 1:
                fixed[b] = 0.5 * (slope(b, -1) + slope(b, +1))
        ab = np.zeros((3, n))
        rhs = np.zeros((n, joints.shape[1]))
        inner = np.arange(1, n - 1)
        ab[0, inner + 1] = h[inner - 1]                   # coefficient of d[i+1] in row i
        ab[1, inner] = 2.0 * (h[inner - 1] + h[inner])
        ab[2, inner - 1] = h[inner]                       # coefficient of d[i-1] in row i
        rhs[inner] = 3.0 * (h[inner, None] * delta[inner - 1] + h[inner - 1, None] * delta[inner])
        for i, d in fixed.items():
            ab[1, i] = 1.0
            if i + 1 < n:
                ab[0, i + 1] = 0.0
            if i > 0:
                ab[2, i - 1] = 0.0
            rhs[i] = d
        d = solve_banded((1, 1), ab, rhs)
        hh = h[:, None]
        c = np.empty((4, n - 1, joints.shape[1]))
        c[0] = (d[:-1] + d[1:] - 2.0 * delta) / (hh * hh)
        c[1] = (3.0 * delta - 2.0 * d[:-1] - d[1:]) / hh
        c[2] = d[:-1]
        c[3] = joints[:-1]
        return PPoly(c, ss)

    @staticmethod
    def _pose_on(pieces):
        """pose_at(s) → (position, rotation matrix) anywhere on a run's pieces."""
        starts = np.concatenate([[0.0], np.cumsum([p.length for p in pieces])])

        def pose_at(s):
            k = int(np.clip(np.searchsorted(starts, s, side='right') - 1, 0, len(pieces) - 1))
            p, q, _, _ = pieces[k].at_many(np.array([min(max(s - starts[k], 0.0), pieces[k].length)]))
            return p[0], quat_to_matrix_many(q)[0]
        return pose_at

    @staticmethod
    def _poses_on(pieces, ss):
        """Positions (N×3) and rotation matrices (N×3×3) of a run's pieces at each s."""
        starts = np.concatenate([[0.0], np.cumsum([p.length for p in pieces])])
        ks = np.clip(np.searchsorted(starts, ss, side='right') - 1, 0, len(pieces) - 1)
        P, R = np.empty((len(ss), 3)), np.empty((len(ss), 3, 3))
        for k in np.unique(ks):
            sel = ks == k
            x = np.clip(ss[sel] - starts[k], 0.0, pieces[k].length)
            p, q, _, _ = pieces[k].at_many(x)
            P[sel], R[sel] = p, quat_to_matrix_many(q)
        return P, R

    def _plan_run(self, tip, q_start, pieces, wps, seg_meta, collision=None, q_head=0.0):
        ss0, ps, qs, segs0, breaks0 = self._sample(pieces)
        rotations = quat_to_matrix_many(qs)
        # Where each segment's part of this run starts and ends, for the nullspace drift.
        seg_start, seg_end = {}, {}
        for i, (s, seg) in enumerate(zip(ss0, segs0)):
            seg = int(seg)
            seg_start.setdefault(seg, ss0[i - 1] if i > 0 else s)
            seg_end[seg] = s
        run_segs = sorted(seg_start)

        ss0_list, segs0_list = ss0.tolist(), segs0.tolist()

        def seg_of(s):
            """The segment of the path point at s (points inserted between two samples
            belong with the later one)."""
            return segs0_list[min(bisect.bisect_left(ss0_list, s - 1e-12), len(segs0_list) - 1)]

        def remaining_share(seg, s, reach=1.0):
            """Share of the nullspace offset still to go at s: 1 − smoothstep(progress),
            progress reaching 1 at the `reach` share of the segment."""
            a, b = seg_start[seg], seg_end[seg]
            u = 1.0 if b <= a else min(max((s - a) / ((b - a) * reach), 0.0), 1.0)
            return 1.0 - u * u * (3.0 - 2.0 * u)

        start_extra = q_start[tip.n:].copy()
        pose_at = self._pose_on(pieces)
        nominal = float(np.median(np.diff(ss0))) if len(ss0) > 1 else 1.0

        def attempt(biases, reach=1.0, ss_in=None, prefix=None):
            """Follow the run (the samples ss_in, default the run's own) with the nullspace
            biased toward `biases`; prefix = (ss, joints) already followed up to the first of
            ss_in: go on from there."""
            def nullspace(s_prev, s, q):
                seg = seg_of(s)
                goal = biases.get(seg)
                if goal is None:
                    return None
                before = remaining_share(seg, s_prev, reach)
                frac = 1.0 if before <= 1e-12 else 1.0 - remaining_share(seg, s, reach) / before
                return (goal - q) * frac

            def free_joints(s):
                goal = biases.get(seg_of(s))
                if goal is None:
                    return None
                frac = s / ss0[-1] if ss0[-1] > 0 else 1.0
                return start_extra + (goal[tip.n:] - start_extra) * frac
            if ss_in is None:
                ss_in, p_in, r_in = ss0, ps, rotations
            else:
                p_in, r_in = self._poses_on(pieces, ss_in)
            q_from = q_start if prefix is None else prefix[1][-1]
            ss, joints, _, _ = tip.track(q_from, ss_in, p_in, r_in, pose_at=pose_at, nullspace=nullspace,
                                         free_joints=free_joints if tip.n < 7 else None, nominal=nominal)
            if prefix is not None:
                ss = np.concatenate([prefix[0][:-1], ss])
                joints = np.concatenate([prefix[1][:-1], joints])
            return ss, joints

        # The waypoints' joint_positions bias the posture along the path. Where no
        # continuous joint path follows the line near that posture (a joint runs into its
        # limit, or the path only continues on another arm configuration), the posture is
        # steered instead toward IK solutions of the run's waypoints (nearest first, then
        # others): the goal fails only when none of them leads along the whole path.
        first, found, tried = None, None, []
        for biases in self._bias_candidates(tip, q_start, wps, run_segs, q_head):
            if len(tried) >= MAX_POSTURE_ATTEMPTS:
                break
            if any(all(_close(biases.get(k), t.get(k)) for k in run_segs) for t in tried):
                continue
            tried.append(biases)
            try:
                ss, joints = attempt(biases, 1.0 if len(tried) == 1 else FALLBACK_REACH)
            except PathFollowError as exc:
                if first is None:
                    seg = seg_of(exc.s) if exc.s is not None else int(segs0[-1])
                    first = MotionError(CARTESIAN_INTERPOLATION_FAILED, 'segment to waypoint %d: %s%s'
                                        % (seg, exc, self._reachability(tip, wps[seg], q_start)))
                continue
            hit = None if collision is None else \
                analysis.first_collision_on_points(joints, collision, q_head)
            if hit is not None:
                if first is None:
                    k, pairs = hit
                    first = MotionError(PLANNED_MOTION_COLLISION,
                                        'the path to waypoint %d is in self-collision at joints %s (links in '
                                        'contact: %s)' % (seg_of(ss[k]), np.round(joints[k], 3).tolist(),
                                                          ', '.join('%s–%s' % p for p in pairs) or '?'))
                continue
            found = ss, joints, biases, 1.0 if len(tried) == 1 else FALLBACK_REACH
            break
        if found is None:
            raise first
        ss, joints, biases, reach = found
        breaks_s = ss0[breaks0] if breaks0 else np.zeros(0)
        # The spline through the points must stay on the path too: where it strays beyond
        # the path tolerance between two points (joints moving fast and unevenly, near a
        # singular stretch), the points are made denser there and the run followed again.
        for _ in range(SPLINE_REFINE):
            # Evenly spaced points with slow joints (the common case) need no check.
            if len(ss) == len(ss0) and float(np.abs(np.diff(joints, axis=0)).max()) < SPLINE_CHECK_STEP:
                break
            spline = self._joint_spline(ss, joints, np.searchsorted(ss, breaks_s).tolist())
            mids = 0.5 * (ss[:-1] + ss[1:])
            P, R = self._poses_on(pieces, mids)
            qm = spline(mids)
            Pq, Rq = tip.fk_many(qm[:, :tip.n])
            dev_p = np.linalg.norm(Pq - P, axis=1)
            dev_r = np.linalg.norm(rotation_error_many(R, Rq), axis=1)
            bad = np.flatnonzero((dev_p > 0.5 * PATH_POSITION_TOLERANCE) | (dev_r > 0.5 * PATH_ORIENTATION_TOLERANCE))
            if not len(bad):
                break
            # The IK solution next to the spline there becomes a point of the path.
            added = [(mids[i], tip.solve_near(qm[i], P[i], R[i])) for i in bad]
            added = [(s, q) for s, q in added if q is not None]
            if not added:
                break
            ss = np.concatenate([ss, [s for s, _ in added]])
            joints = np.concatenate([joints, [q for _, q in added]])
            order = np.argsort(ss, kind='stable')
            ss, joints = ss[order], joints[order]
        if len(tried) > 1:
            self.notes.append('waypoint(s) %s: no continuous joint path follows the path near the requested '
                              'posture (%s); the arm takes the posture of an IK solution of the waypoint '
                              'instead (attempt %d)' % (', '.join(map(str, run_segs)), first.message,
                                                        len(tried)))
        segs = segs0[np.minimum(np.searchsorted(ss0, ss - 1e-12, side='left'), len(segs0) - 1)]
        breaks = np.searchsorted(ss, breaks_s).tolist()
        spline = self._joint_spline(ss, joints, breaks)
        # Gridpoints: at most MAX_GRIDPOINTS, always including both ends and the breaks;
        # evenly spread over the points, so denser where the path was refined.
        if len(ss) <= MAX_GRIDPOINTS:
            idx = np.arange(len(ss))
        else:
            idx = np.unique(np.concatenate([np.round(np.linspace(0, len(ss) - 1, MAX_GRIDPOINTS)).astype(int),
                                            np.asarray(breaks, dtype=int)]))
        grid = ss[idx]
        seg_g = segs[idx]
        lims = [wps[int(k)].limits for k in seg_g]
        v_lin = np.array([l.linear_speed for l in lims])
        a_lin = np.array([l.linear_accel for l in lims])
        v_rot = np.array([l.rotational_speed for l in lims])
        a_rot = np.array([l.rotational_accel for l in lims])
        vmax = np.array([l.speed_ratio for l in lims])[:, None] * self.vel_limit[None, :]
        amax = np.minimum(np.array([l.joint_accel for l in lims]), self.accel_limit[None, :])
        # Joint rates: at each gridpoint the largest of its own and those halfway to its
        # neighbours (ṡ is monotonic over an interval, q'(s) is not: it may bulge inside).
        dq = np.abs(spline(grid, 1))
        if len(grid) > 1:
            mid = np.abs(spline(0.5 * (grid[:-1] + grid[1:]), 1))
            dq[:-1] = np.maximum(dq[:-1], mid)
            dq[1:] = np.maximum(dq[1:], mid)
        # Rates of the endpoint along the joint spline actually followed (not the designed
        # path: the spline's curvature overshoots a little where a line meets an arc).
        h = min(PATH_H, 0.25 * float(np.min(np.diff(grid))))
        g = np.clip(grid, grid[0] + h, grid[-1] - h)
        dp, ddp, dr, ddr = tip.path_rates(spline(g - h), spline(g), spline(g + h), h)
        with np.errstate(divide='ignore'):
            x_joint = np.min((vmax / np.maximum(np.abs(dq), 1e-12)) ** 2, axis=1)
            dp_n = np.linalg.norm(dp, axis=1)
            ddp_n = np.linalg.norm(ddp, axis=1)
            dr_n = np.linalg.norm(dr, axis=1)
            ddr_n = np.linalg.norm(ddr, axis=1)
            x_lin = np.where(dp_n > 1e-9, (v_lin / np.maximum(dp_n, 1e-12)) ** 2, np.inf)
            x_rot = np.where(dr_n > 1e-9, (v_rot / np.maximum(dr_n, 1e-12)) ** 2, np.inf)
        # TOPP-RA holds a gridpoint's path acceleration over the interval after it: bound
        # each interval by the larger rates and curvatures of its two ends (a line meeting an
        # arc changes curvature at the junction).
        for arr in (dp_n, ddp_n, dr_n, ddr_n):
            arr[:-1] = np.maximum(arr[:-1], arr[1:])
        xmax = np.minimum(np.minimum(x_joint, x_lin), x_rot)
        xmax = np.minimum(xmax, 1e8)
        path = _SplinePath(spline)
        seg_end = int(segs[-1])
        # The joint limits are maxima: where the Cartesian speeds would ask more of a joint,
        # the path is slowed there. TOPP-RA holds them at the gridpoints; between them the
        # spline's rates vary a little, so the plan is checked densely and the limits
        # tightened where it exceeds them (then, as a last resort, the run slowed as a whole).
        scale = np.ones(len(grid))
        for attempt in range(ACCEL_RETRIES + 1):
            constraints = [_PathConstraint(xmax * (scale * TOPPRA_MARGIN ** 2), dp_n, ddp_n, dr_n, ddr_n, a_lin,
                                           a_rot),
                           _JointAccelConstraint(amax * (scale * TOPPRA_MARGIN)[:, None])]
            try:
                inst = toppra.algorithm.TOPPRA(constraints, path, gridpoints=grid, solver_wrapper='seidel')
                sd_vec = self._parameterize(inst)
            except Exception as exc:       # toppra raises assorted errors on degenerate paths
                raise MotionError(FAILED_TO_PARAMETERIZE, 'TOPP-RA failed on the Cartesian path to waypoint %d: %s'
                                  % (seg_end, exc)) from None
            if sd_vec is None:
                raise MotionError(FAILED_TO_PARAMETERIZE, 'TOPP-RA found no feasible timing for the Cartesian '
                                  'path to waypoint %d' % seg_end)
            piece = PathPiece(spline, grid, sd_vec)
            over, worst = self._joint_excess(piece, grid, vmax, amax)
            if worst <= LIMIT_SLACK:
                break
            if attempt < ACCEL_RETRIES:
                scale[over] /= worst * LIMIT_SLACK
        else:
            # Slowing the whole run by k scales velocities by 1/k and accelerations by 1/k².
            piece = PathPiece(spline, grid, sd_vec / math.sqrt(worst * LIMIT_SLACK))
        return piece, joints[-1]

    def _joint_excess(self, piece, grid, vmax, amax):
        """Where (gridpoints around each excess) and by how much (worst ratio, 1 = at the
        limit) the run's joint velocities and accelerations exceed vmax / amax (per
        gridpoint), sampled every ~5 ms."""
        ts = np.linspace(0.0, piece.duration, max(20, int(piece.duration / 0.005)))
        s, _, _ = piece.path_state(ts)
        _, v, a = piece.sample_many(ts)
        k = np.clip(np.searchsorted(grid, s, side='right') - 1, 0, len(grid) - 1)
        k1 = np.minimum(k + 1, len(grid) - 1)
        ratio = np.maximum(np.max(np.abs(a) / np.minimum(amax[k], amax[k1]), axis=1),
                           np.max(np.abs(v) / np.minimum(vmax[k], vmax[k1]), axis=1) ** 2)
        bad = ratio > LIMIT_SLACK
        over = np.zeros(len(grid), dtype=bool)
        over[k[bad]] = over[k1[bad]] = True
        return over, float(ratio.max()) if ratio.size else 0.0

    def _bias_candidates(self, tip, q_start, wps, run_segs, q_head):
        """Postures to steer a run's path toward, {segment: 7 angles or None}: the
        waypoints' own joint_positions first; then chains of IK solutions of the run's
        waypoints (each seeded from the one before), from the current angles (drawn toward
        joint_positions where given) and then from random seeds (deterministic)."""
        yield {k: wps[k].q for k in run_segs}
        if self.ik is None:
            return
        rng = np.random.default_rng(0)
        for attempt in range(2 * MAX_POSTURE_ATTEMPTS):
            prev = q_start if attempt == 0 else rng.uniform(self.lower, self.upper)
            chain = {}
            for k in run_segs:
                w = wps[k]
                goal = dict(zip(ARM_JOINTS, w.q)) if w.q is not None and attempt == 0 else None
                try:
                    found = self.ik.solve(tip.tip, w.position, w.orientation, prev, seed_mode=SEED_CURRENT,
                                          nullspace_goal=goal, check_collision=True, q_head=q_head)
                except Exception:  # noqa: BLE001 - alternatives only
                    found = None
                if found is None or not found.ok:
                    break
                chain[k] = prev = found.q
            else:
                yield chain

    def _reachability(self, tip, waypoint, q_seed):
        """Why a path could not be followed, as far as the IK solver can tell: is the
        waypoint itself out of reach?"""
        if self.ik is None:
            return ''
        try:
            bias = dict(zip(tip.names, waypoint.q)) if waypoint.q is not None else None
            found = self.ik.solve(tip.tip, waypoint.position, waypoint.orientation, q_seed,
                                  nullspace_goal=bias, check_collision=False)
        except Exception:  # noqa: BLE001 - only a diagnostic
            return ''
        if found.ok:
            return '; the waypoint itself is reachable, the straight path to it is not'
        return '; the waypoint is out of reach of %s (no IK solution)' % tip.tip

    @staticmethod
    def _parameterize(inst):
        """Path velocities ṡ at the gridpoints, at rest at both ends; None when infeasible."""
        sd = inst.compute_parameterization(0.0, 0.0)[1]
        if sd is None or not np.all(np.isfinite(sd)):
            return None
        return np.maximum(sd, 0.0)

    # --- nso_start_offset_allowed ------------------------------------------------------------
    def _nullspace_move(self, tip, q0, p0, r0, bias, limits):
        """A joint move that keeps the tip still while the posture drifts toward `bias`."""
        q = q0.copy()
        points = [q.copy()]
        for _ in range(400):
            J = tip.jacobian(q)
            d = bias - q
            step = d - np.linalg.pinv(J, rcond=1e-6) @ (J @ d)
            size = np.abs(step).max()
            if size < 1e-3:
                break
            if size > NULLSPACE_STEP:
                step *= NULLSPACE_STEP / size
            try:
                q = tip.follow(q, [p0, p0], [r0, r0], nullspace=lambda i, qq, s=step: s)[1]
            except PathFollowError:
                break
            points.append(q.copy())
        if len(points) < 3:
            return None
        pts = np.array(points)
        s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
        keep = np.concatenate([[True], np.diff(s) > 1e-9])
        pts, s = pts[keep], s[keep]
        if len(s) < 3:
            return None
        spline = CubicSpline(s, pts, bc_type='not-a-knot')
        vmax = limits.speed_ratio * self.vel_limit
        amax = np.minimum(limits.joint_accel, self.accel_limit)
        path = _SplinePath(spline)
        grid = s if len(s) <= MAX_GRIDPOINTS else np.linspace(s[0], s[-1], MAX_GRIDPOINTS)
        cons = [toppra.constraint.JointVelocityConstraint(vmax),
                toppra.constraint.JointAccelerationConstraint(
                    amax, discretization_scheme=DiscretizationType.Collocation)]
        inst = toppra.algorithm.TOPPRA(cons, path, gridpoints=grid, solver_wrapper='seidel')
        sd = self._parameterize(inst)
        if sd is None:
            return None
        return PathPiece(spline, grid, sd)
