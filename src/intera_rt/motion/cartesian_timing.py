"""Timing of a Cartesian run: each stop-to-stop run is time-parameterised by TOPP-RA
(toppra) on the cubic joint spline through its IK points, time-optimal under the endpoint's
max_linear_speed / accel and max_rotational_speed / accel of each segment, and
max_joint_speed_ratio x the joint velocity limits. The joint limits are maxima: the plan is
checked densely and the limits tightened where it exceeds them between gridpoints, then, as
a last resort, the run is slowed as a whole. Pure.
"""
import logging
import math

import numpy as np
from scipy.interpolate import CubicSpline, PPoly
from scipy.linalg import solve_banded

from intera_rt.motion.errors import FAILED_TO_PARAMETERIZE, MotionError
from intera_rt.motion.plan import PathPiece


def _import_toppra():
    """toppra, imported without matplotlib: it imports matplotlib.pyplot for its debugging
    plots only, which would weigh on every process that plans. Stand-in modules take matplotlib's place while toppra is imported (its plot
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
# (several per goal); the answer does not change while the process runs.
_SOLVERS = toppra.solverwrapper.available_solvers(output_msg=False)
toppra.solverwrapper.available_solvers = lambda output_msg=True: _SOLVERS

MAX_GRIDPOINTS = 250           # TOPP-RA gridpoints per run
PATH_H = 5e-4                  # path parameter step for the endpoint's rates along a run
LIMIT_SLACK = 1.01             # joint velocity² / acceleration over the limit before re-timing
TOPPRA_MARGIN = 0.99           # joint limits given to TOPP-RA, of the limits (rates vary between gridpoints)
ACCEL_RETRIES = 3              # re-timings with locally tightened limits, then the run is slowed


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


class SplinePath(toppra.interpolator.AbstractGeometricPath):
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


def joint_spline(ss, joints, breaks):
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


def parameterize(inst):
    """Path velocities ṡ at the gridpoints, at rest at both ends; None when infeasible."""
    sd = inst.compute_parameterization(0.0, 0.0)[1]
    if sd is None or not np.all(np.isfinite(sd)):
        return None
    return np.maximum(sd, 0.0)


def joint_excess(piece, grid, vmax, amax):
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


def time_run(tip, ss, joints, segs, breaks, wps, vel_limit, accel_limit):
    """The PathPiece of a run followed at the joint points (ss, joints), the segment
    (waypoint) of each point in segs, the spline kept C1 only at the breaks: time-optimal
    under the waypoints' limits. Raises MotionError(FAILED_TO_PARAMETERIZE)."""
    spline = joint_spline(ss, joints, breaks)
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
    vmax = np.array([l.speed_ratio for l in lims])[:, None] * vel_limit[None, :]
    amax = np.minimum(np.array([l.joint_accel for l in lims]), accel_limit[None, :])
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
    path = SplinePath(spline)
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
            sd_vec = parameterize(inst)
        except Exception as exc:       # toppra raises assorted errors on degenerate paths
            raise MotionError(FAILED_TO_PARAMETERIZE, 'TOPP-RA failed on the Cartesian path to waypoint %d: %s'
                              % (seg_end, exc)) from None
        if sd_vec is None:
            raise MotionError(FAILED_TO_PARAMETERIZE, 'TOPP-RA found no feasible timing for the Cartesian '
                              'path to waypoint %d' % seg_end)
        piece = PathPiece(spline, grid, sd_vec)
        over, worst = joint_excess(piece, grid, vmax, amax)
        if worst <= LIMIT_SLACK:
            break
        if attempt < ACCEL_RETRIES:
            scale[over] /= worst * LIMIT_SLACK
    else:
        # Slowing the whole run by k scales velocities by 1/k and accelerations by 1/k².
        piece = PathPiece(spline, grid, sd_vec / math.sqrt(worst * LIMIT_SLACK))
    return piece


def time_joint_path(s, pts, vmax, amax):
    """The PathPiece of a joint path (points pts at arc lengths s) under per-joint
    velocity and acceleration limits, or None when TOPP-RA finds no timing."""
    if len(s) < 3:
        return None
    spline = CubicSpline(s, pts, bc_type='not-a-knot')
    path = SplinePath(spline)
    grid = s if len(s) <= MAX_GRIDPOINTS else np.linspace(s[0], s[-1], MAX_GRIDPOINTS)
    cons = [toppra.constraint.JointVelocityConstraint(vmax),
            toppra.constraint.JointAccelerationConstraint(
                amax, discretization_scheme=DiscretizationType.Collocation)]
    inst = toppra.algorithm.TOPPRA(cons, path, gridpoints=grid, solver_wrapper='seidel')
    sd = parameterize(inst)
    if sd is None:
        return None
    return PathPiece(spline, grid, sd)
