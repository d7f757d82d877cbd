"""Joint trajectories for the joint trajectory action server: goal validation, the
interpolating spline, sampling, the stop ramp and the tolerance checks.

Pure: no ROS, no clock. Every time is an absolute time in seconds that the caller passes in
(the ROS adapter uses the robot's time: the stamps of /robot/joint_states), so the same
trajectory can be sampled at command time and at the time a measurement was taken.

Goal → trajectory (``plan_goal``)
    * joint names: known, unique; a subset is allowed and the joints left out are held
      (brought to rest from whatever they were doing, then held);
    * points: non-empty; ``time_from_start`` finite, >= 0 and strictly increasing;
      ``positions`` one per joint; ``velocities`` / ``accelerations`` empty or one per joint
      (accelerations only together with velocities); every value finite; positions within
      the joint limits;
    * tolerances: names must be arm joints, values finite;
    * timing: the trajectory starts at ``header.stamp`` (0 = now). A trajectory whose last
      point is already in the past is OLD_HEADER_TIMESTAMP. Points at or before now are
      dropped; the spline then starts from the current state at ``now``. When the first
      point is due now (``time_from_start`` ~0 after the stamp) it must be within the start
      tolerance of the current position (the joint's path tolerance, or 0.2 rad when that
      is disabled), otherwise INVALID_GOAL: the arm would have to jump;
    * the interpolated path must stay within the position limits (a hair of overshoot is
      clipped) and its speed within 1.1 x the velocity limits (checked at 64 points of
      every segment).

Spline, per segment, by what the goal's points carry:
    * positions + velocities + accelerations at both ends: quintic (p, v, a);
    * positions + velocities at both ends: cubic (p, v);
    * otherwise "smooth": a quintic through estimated velocities and accelerations. The
      velocity of an interior point is the weighted harmonic mean of the slopes on either
      side (zero where the direction reverses, so the path never overshoots a point), the
      acceleration the smaller of what the two neighbouring cubic Hermite segments have
      there (0 if they disagree); the goal's last point is reached at rest (v = a = 0)
      unless it says otherwise.
    The first knot is always the current state (position, velocity, acceleration) at the
    time the goal is accepted, so a new goal continues from where the arm or a preempted
    trajectory is, without a jump.

After its last knot a trajectory holds its last position with zero velocity.

Tolerances (control_msgs/JointTolerance semantics): > 0 sets a tolerance, 0 keeps the
default, < 0 disables the check. Internally a disabled check is ``inf``.
"""
import bisect
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

# control_msgs/FollowJointTrajectoryResult error codes
SUCCESSFUL = 0
INVALID_GOAL = -1
INVALID_JOINTS = -2
OLD_HEADER_TIMESTAMP = -3
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5
CODE_NAMES = {SUCCESSFUL: 'SUCCESSFUL', INVALID_GOAL: 'INVALID_GOAL',
              INVALID_JOINTS: 'INVALID_JOINTS', OLD_HEADER_TIMESTAMP: 'OLD_HEADER_TIMESTAMP',
              PATH_TOLERANCE_VIOLATED: 'PATH_TOLERANCE_VIOLATED',
              GOAL_TOLERANCE_VIOLATED: 'GOAL_TOLERANCE_VIOLATED'}

NOW_EPSILON = 1e-3          # s: a point due within this of now is "now"
START_TOLERANCE = 0.2       # rad: how far a point due now may be when path tolerance is off
LIMIT_CLIP = 2e-3           # rad the interpolated path may overshoot a limit (clipped)
VELOCITY_MARGIN = 1.1       # the path's speed may reach this x the velocity limit
STOP_DECEL_FRACTION = 0.5   # stop ramps decelerate at up to this x the acceleration limit
MIN_STOP_TIME = 0.05        # s, shortest stop ramp


class GoalError(ValueError):
    """A goal the server must refuse: ``code`` is a FollowJointTrajectoryResult code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Point:
    """One trajectory_msgs/JointTrajectoryPoint (times in s)."""
    time: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()


@dataclass
class JointTol:
    """One control_msgs/JointTolerance."""
    name: str
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass
class Limits:
    """Joint limits of the arm, in the order of ``names``."""
    names: Sequence[str]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    accel: np.ndarray

    def __post_init__(self):
        self.names = list(self.names)
        for f in ('lower', 'upper', 'velocity', 'accel'):
            setattr(self, f, np.asarray(getattr(self, f), float))


@dataclass
class State:
    """Position, velocity and acceleration of every arm joint."""
    p: np.ndarray
    v: np.ndarray = None
    a: np.ndarray = None

    def __post_init__(self):
        self.p = np.array(self.p, float)
        self.v = np.zeros_like(self.p) if self.v is None else np.array(self.v, float)
        self.a = np.zeros_like(self.p) if self.a is None else np.array(self.a, float)


def _tol_value(x, default):
    return default if x == 0 else (math.inf if x < 0 else float(x))


@dataclass
class Tolerances:
    """Per arm joint; ``inf`` = not checked. ``goal_velocity`` is the stopped-velocity
    tolerance the arm must be under at the end."""
    path_position: np.ndarray
    path_velocity: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    goal_time: float

    @classmethod
    def uniform(cls, n, path=0.2, goal=0.0, stopped_velocity=0.2, goal_time=0.1):
        """Defaults given as scalars with JointTolerance semantics (<= 0: disabled)."""
        def arr(x):
            return np.full(n, float(x) if x > 0 else math.inf)
        return cls(arr(path), np.full(n, math.inf), arr(goal), arr(stopped_velocity),
                   max(0.0, float(goal_time)))

    def copy(self):
        return Tolerances(self.path_position.copy(), self.path_velocity.copy(),
                          self.goal_position.copy(), self.goal_velocity.copy(), self.goal_time)


def resolve_tolerances(defaults, names, path_tolerance=(), goal_tolerance=(),
                       goal_time_tolerance=0.0):
    """The goal's tolerances over the defaults. ``names`` are the arm's joints."""
    tol = defaults.copy()
    index = {n: i for i, n in enumerate(names)}
    for field_name, items, pos_arr, vel_arr in (
            ('path_tolerance', path_tolerance, tol.path_position, tol.path_velocity),
            ('goal_tolerance', goal_tolerance, tol.goal_position, tol.goal_velocity)):
        for k, item in enumerate(items):
            if item.name not in index:
                raise GoalError(INVALID_JOINTS, '%s[%d].name %r is not a joint of this arm (%s)'
                                % (field_name, k, item.name, ', '.join(names)))
            for attr in ('position', 'velocity', 'acceleration'):
                value = getattr(item, attr)
                if not math.isfinite(value):
                    raise GoalError(INVALID_GOAL, '%s[%d].%s for %s is %r; must be finite'
                                    % (field_name, k, attr, item.name, value))
            i = index[item.name]
            pos_arr[i] = _tol_value(item.position, pos_arr[i])
            vel_arr[i] = _tol_value(item.velocity, vel_arr[i])
    if not math.isfinite(goal_time_tolerance) or goal_time_tolerance < 0:
        raise GoalError(INVALID_GOAL, 'goal_time_tolerance is %r s; must be finite and >= 0'
                        % goal_time_tolerance)
    if goal_time_tolerance > 0:
        tol.goal_time = float(goal_time_tolerance)
    return tol


# --- the spline ---------------------------------------------------------------------------
ORDER = 6                   # coefficients per segment: up to quintic


class JointTrajectory:
    """All arm joints as one piecewise polynomial over absolute time: breakpoints ``x``
    (M+1) and coefficients ``c`` (ORDER, M, joints), ascending powers of (t - x[i]).
    ``sample(t)`` → p, v, a. Before the first breakpoint the joints are at their start
    state; after the last they hold their last position at rest."""

    def __init__(self, names, x, c, segment_kinds=(), knot_times=()):
        self.names = list(names)
        self.x = np.asarray(x, float)
        self.c = np.asarray(c, float)
        # derivative coefficients: k·c[k] of position → velocity, k·(k-1)·c[k] → acceleration
        k = np.arange(ORDER, dtype=float)[:, None, None]
        self._cv = (k * self.c)[1:]
        self._ca = (k[1:] * (k[1:] - 1.0) * self.c[1:])[1:]
        # p, v and a in one Horner pass: (ORDER, M, 3, joints), v and a padded with zeros
        pva = np.zeros(self.c.shape[:2] + (3,) + self.c.shape[2:])
        pva[:, :, 0] = self.c
        pva[:-1, :, 1] = self._cv
        pva[:-2, :, 2] = self._ca
        self._cpva = pva
        self.t_start, self.t_end = float(self.x[0]), float(self.x[-1])
        self._x_list = self.x.tolist()
        self._hold = self._eval(self.c, self.t_end)
        self.segment_kinds = list(segment_kinds)   # of the goal's segments
        self.knot_times = list(knot_times)
        self._clip_lo = self._clip_hi = None

    def set_clip(self, lower, upper):
        self._clip_lo, self._clip_hi = np.asarray(lower, float), np.asarray(upper, float)

    def sample(self, t):
        if t >= self.t_end:
            n = len(self.names)
            p, v, a = self._hold.copy(), np.zeros(n), np.zeros(n)
        else:
            tt = self.t_start if t < self.t_start else t
            p, v, a = self._eval(self._cpva, tt)
        if self._clip_lo is not None:
            p = np.clip(p, self._clip_lo, self._clip_hi)
        return p, v, a

    def end_positions(self):
        return self.sample(self.t_end)[0]

    def dense(self, per_segment=64):
        """Times, positions and velocities at ``per_segment`` points of every segment."""
        s = np.linspace(0.0, 1.0, per_segment)
        t = (self.x[:-1, None] + np.diff(self.x)[:, None] * s).ravel()
        return t, self._eval(self.c, t), self._eval(self._cv, t)

    def _eval(self, coeffs, t):
        """The piecewise polynomial with ascending `coeffs` (n, M, joints) at time(s) t in
        [x[0], x[-1]] (a segment includes its right end): (joints,) or (len(t), joints).
        numpy rather than scipy's PPoly: importing scipy.interpolate cost the JTAS ~36 MB."""
        x = self.x
        if np.ndim(t) == 0:                            # the control loop's case: bisect, Horner
            i = min(max(bisect.bisect_right(self._x_list, t) - 1, 0), len(x) - 2)
            dt = t - self._x_list[i]
            out = coeffs[-1, i]
            for ck in coeffs[-2::-1]:
                out = out * dt + ck[i]
            return out
        tt = np.asarray(t, float)
        seg = np.clip(np.searchsorted(x, tt, side='right') - 1, 0, len(x) - 2)
        dt = (tt - x[seg])[:, None]
        out = coeffs[-1][seg]
        for ck in coeffs[-2::-1]:                     # Horner
            out = out * dt + ck[seg]
        return out


def quintic_coeffs(h, p0, v0, a0, p1, v1, a1):
    """Ascending coefficients of the quintic on [0, h] with the given p, v, a at both ends
    (array arguments broadcast)."""
    d = p1 - p0
    return np.array([p0, v0, 0.5 * a0,
                     (20 * d - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h**2) / (2 * h**3),
                     (-30 * d + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h**2) / (2 * h**4),
                     (12 * d - 6 * (v1 + v0) * h + (a1 - a0) * h**2) / (2 * h**5)])


def cubic_coeffs(h, p0, v0, p1, v1):
    """Ascending coefficients (padded to ORDER) of the cubic on [0, h] through p, v."""
    d = p1 - p0
    zero = np.zeros_like(d * h)
    return np.array([p0 + zero, v0 + zero, (3 * d / h - 2 * v0 - v1) / h,
                     (-2 * d / h + v0 + v1) / h**2, zero, zero])


_BINOM = np.array([[math.comb(i, k) for k in range(ORDER)] for i in range(ORDER)], float)


def _merge(pieces):
    """Per-joint piecewise polynomials [(x_j, c_j (ORDER, m_j))] → one over the union of
    their breakpoints, each joint re-expanded (Taylor shift) on the finer intervals and held
    at its last position after its own end."""
    x = np.unique(np.concatenate([xj for xj, _ in pieces]))
    if len(x) < 2:
        x = np.array([x[0], x[0] + MIN_STOP_TIME])
    u = x[:-1]
    out = np.zeros((ORDER, len(u), len(pieces)))
    for j, (xj, cj) in enumerate(pieces):
        seg = np.clip(np.searchsorted(xj, u, side='right') - 1, 0, len(xj) - 2)
        delta = u - xj[seg]
        src = cj[:, seg]                                   # (ORDER, M)
        powers = delta[None, :] ** np.arange(ORDER)[:, None]
        shifted = np.zeros_like(src)
        for k in range(ORDER):
            for i in range(k, ORDER):
                shifted[k] += _BINOM[i, k] * src[i] * powers[i - k]
        end = u >= xj[-1]
        if end.any():
            h = xj[-1] - xj[-2]
            p_end = np.polyval(cj[::-1, -1], h)
            shifted[:, end] = 0.0
            shifted[0, end] = p_end
        out[:, :, j] = shifted
    return x, out


def estimate_velocities(t, y, v_given):
    """Interior velocities for position-only points: the weighted harmonic mean of the
    neighbouring slopes, 0 where the direction reverses or stays. Entries of ``v_given``
    that are not NaN are kept; the last point defaults to rest."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    v = np.array(v_given, float)
    h = np.diff(t)
    s = np.diff(y) / h
    for k in range(1, len(t) - 1):
        if not math.isnan(v[k]):
            continue
        s0, s1 = s[k - 1], s[k]
        if s0 * s1 <= 0.0:
            v[k] = 0.0
        else:
            w0, w1 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
            v[k] = (w0 + w1) / (w0 / s0 + w1 / s1)
    if math.isnan(v[0]):
        v[0] = 0.0
    if math.isnan(v[-1]):
        v[-1] = 0.0
    return v


def estimate_accelerations(t, y, v, a_given):
    """Interior accelerations for points that carry none. Each of the two neighbouring
    cubic Hermite segments (through p and v) has an acceleration at the point; take the one
    of smaller magnitude when they agree in sign, else 0 (a "minmod" choice: it keeps the
    quintic from overshooting the points, which the plain mean does when the intervals are
    uneven). 0 next to a dwell. Entries of ``a_given`` that are not NaN are kept; the ends
    default to 0."""
    t, y, v = np.asarray(t, float), np.asarray(y, float), np.asarray(v, float)
    a = np.array(a_given, float)
    h = np.diff(t)
    for k in range(1, len(t) - 1):
        if not math.isnan(a[k]):
            continue
        h0, h1 = h[k - 1], h[k]
        if y[k - 1] == y[k] or y[k + 1] == y[k]:
            a[k] = 0.0
            continue
        from_left = 6 * (y[k - 1] - y[k]) / h0 ** 2 + (2 * v[k - 1] + 4 * v[k]) / h0
        from_right = 6 * (y[k + 1] - y[k]) / h1 ** 2 - (4 * v[k] + 2 * v[k + 1]) / h1
        if from_left * from_right <= 0.0:
            a[k] = 0.0
        else:
            a[k] = from_left if abs(from_left) < abs(from_right) else from_right
    a[np.isnan(a)] = 0.0
    return a


def stop_duration(v, accel_limit, fraction=STOP_DECEL_FRACTION):
    """Seconds to bring velocity v (per joint) to rest at ≤ fraction × accel_limit."""
    v = np.abs(np.asarray(v, float))
    return max(MIN_STOP_TIME, float(np.max(1.5 * v / (fraction * np.asarray(accel_limit, float)))))


def stop_coeffs(p, v, a, duration):
    """Coefficients from (p, v, a) to rest after ``duration`` with continuous acceleration:
    the velocity is a cubic Hermite from (v, a) to (0, 0), so the arm ends at
    p + v T/2 + a T²/12 (the quintic through these ends is that quartic)."""
    p_end = p + v * duration / 2.0 + a * duration ** 2 / 12.0
    return quintic_coeffs(duration, p, v, a, p_end, 0.0 * p, 0.0 * p)


def stop_trajectory(now, state, limits, fraction=STOP_DECEL_FRACTION):
    """Bring every joint to rest from ``state`` in one common time, with continuous
    acceleration, then hold: what the server runs after a cancel or an abort."""
    duration = stop_duration(state.v, limits.accel, fraction)
    c = stop_coeffs(state.p, state.v, state.a, duration)[:, None, :]
    traj = JointTrajectory(limits.names, [now, now + duration], c, ['stop'], [now, now + duration])
    traj.set_clip(limits.lower, limits.upper)
    return traj


# --- goal validation and planning -----------------------------------------------------------
@dataclass
class Plan:
    """An accepted goal: its trajectory (all arm joints), tolerances, and which arm joints
    the goal names (in goal order)."""
    trajectory: JointTrajectory
    tolerances: Tolerances
    goal_joints: list           # indices into limits.names, in the goal's order
    joint_names: list           # the goal's joint names
    t_start: float              # header.stamp (or acceptance time when 0)
    t_end: float
    kinds: list = field(default_factory=list)


def _check_names(joint_names, arm_names):
    if not joint_names:
        raise GoalError(INVALID_JOINTS, 'trajectory.joint_names is empty')
    index = {n: i for i, n in enumerate(arm_names)}
    seen = set()
    idx = []
    for k, name in enumerate(joint_names):
        if name not in index:
            raise GoalError(INVALID_JOINTS, 'trajectory.joint_names[%d] %r is not a joint of this '
                            'arm (%s)' % (k, name, ', '.join(arm_names)))
        if name in seen:
            raise GoalError(INVALID_JOINTS, 'trajectory.joint_names[%d] %r appears twice' % (k, name))
        seen.add(name)
        idx.append(index[name])
    return idx


def _check_points(points, joint_names, idx, limits):
    n = len(joint_names)
    if not points:
        raise GoalError(INVALID_GOAL, 'trajectory.points is empty')
    prev = None
    for k, pt in enumerate(points):
        where = 'trajectory.points[%d]' % k
        if not math.isfinite(pt.time) or pt.time < 0:
            raise GoalError(INVALID_GOAL, '%s.time_from_start is %r s; must be finite and >= 0'
                            % (where, pt.time))
        if prev is not None and not pt.time > prev:
            raise GoalError(INVALID_GOAL, '%s.time_from_start %.6f s is not after the previous '
                            "point's %.6f s (times must strictly increase)" % (where, pt.time, prev))
        prev = pt.time
        if len(pt.positions) != n:
            raise GoalError(INVALID_GOAL, '%s.positions has %d values for %d joint names'
                            % (where, len(pt.positions), n))
        for fld in ('velocities', 'accelerations'):
            m = len(getattr(pt, fld))
            if m not in (0, n):
                raise GoalError(INVALID_GOAL, '%s.%s has %d values for %d joint names (must be '
                                'empty or one per joint)' % (where, fld, m, n))
        if len(pt.accelerations) and not len(pt.velocities):
            raise GoalError(INVALID_GOAL, '%s has accelerations but no velocities' % where)
        for fld in ('positions', 'velocities', 'accelerations'):
            for j, value in enumerate(getattr(pt, fld)):
                if not math.isfinite(value):
                    raise GoalError(INVALID_GOAL, '%s.%s[%d] for %s is %r; must be finite'
                                    % (where, fld, j, joint_names[j], value))
        for j, value in enumerate(pt.positions):
            lo, hi = limits.lower[idx[j]], limits.upper[idx[j]]
            if not lo <= value <= hi:
                raise GoalError(INVALID_GOAL, '%s.positions[%d] = %.4f for %s is outside its '
                                'limits [%.4f, %.4f]' % (where, j, value, joint_names[j], lo, hi))


def plan_goal(joint_names, points, *, limits, now, stamp, current, defaults,
              path_tolerance=(), goal_tolerance=(), goal_time_tolerance=0.0):
    """Validate a FollowJointTrajectory goal and build its trajectory.

    ``stamp``: header.stamp in s (0 = start now); ``now``: the current time;
    ``current``: State of every arm joint now (the preempted trajectory's desired state,
    or the measured position at rest). Raises GoalError."""
    joint_names = list(joint_names)
    idx = _check_names(joint_names, limits.names)
    _check_points(points, joint_names, idx, limits)
    tol = resolve_tolerances(defaults, limits.names, path_tolerance, goal_tolerance,
                             goal_time_tolerance)
    if not math.isfinite(stamp):
        raise GoalError(INVALID_GOAL, 'trajectory.header.stamp is %r' % stamp)
    t_start = stamp if stamp > 0 else now
    times = np.array([t_start + pt.time for pt in points])
    if times[-1] < now:
        raise GoalError(OLD_HEADER_TIMESTAMP, 'the trajectory ended %.3f s ago (header.stamp %.3f '
                        's is %.3f s before now and the last point is at time_from_start %.3f s)'
                        % (now - times[-1], stamp, now - t_start, points[-1].time))
    # A point due now must be where the arm is.
    if times[0] <= now + NOW_EPSILON:
        p0 = np.asarray(points[0].positions, float)
        for j, i in enumerate(idx):
            limit = tol.path_position[i] if math.isfinite(tol.path_position[i]) else START_TOLERANCE
            dist = abs(p0[j] - current.p[i])
            if dist > limit:
                raise GoalError(INVALID_GOAL, 'trajectory.points[0] is due now (time_from_start '
                                '%.3f s) but its position %.4f for %s is %.4f rad from the current '
                                'position %.4f (start tolerance %.3f rad); start the trajectory at '
                                'the current position, or give the first point a time_from_start '
                                '> 0 so the arm moves there'
                                % (points[0].time, p0[j], joint_names[j], dist, current.p[i], limit))
    keep = [k for k in range(len(points)) if times[k] > now + NOW_EPSILON]
    if not keep:
        keep = [len(points) - 1]
    knot_t = np.concatenate([[now], np.maximum(times[keep], now + NOW_EPSILON)])
    has_v = [True] + [len(points[k].velocities) > 0 for k in keep]
    has_a = [True] + [len(points[k].accelerations) > 0 for k in keep]
    kinds = []
    for s in range(len(knot_t) - 1):
        if has_a[s + 1] and has_a[s]:
            kinds.append('quintic')
        elif has_v[s + 1] and has_v[s]:
            kinds.append('cubic')
        else:
            kinds.append('smooth')

    # The goal's joints: all segments at once, (segments, joints).
    h = np.diff(knot_t)[:, None]
    y = np.vstack([current.p[idx]] + [np.asarray(points[k].positions, float) for k in keep])
    nan = np.full(len(idx), math.nan)
    v_in = np.vstack([current.v[idx]] + [np.asarray(points[k].velocities, float)
                                         if has_v[s + 1] else nan for s, k in enumerate(keep)])
    a_in = np.vstack([current.a[idx]] + [np.asarray(points[k].accelerations, float)
                                         if has_a[s + 1] else nan for s, k in enumerate(keep)])
    v, a = np.empty_like(y), np.empty_like(y)
    for j in range(len(idx)):
        v[:, j] = estimate_velocities(knot_t, y[:, j], v_in[:, j])
        a[:, j] = estimate_accelerations(knot_t, y[:, j], v[:, j], a_in[:, j])
    quintic = quintic_coeffs(h, y[:-1], v[:-1], a[:-1], y[1:], v[1:], a[1:])
    cubic = cubic_coeffs(h, y[:-1], v[:-1], y[1:], v[1:])
    is_cubic = np.array([k == 'cubic' for k in kinds])[None, :, None]
    goal_c = np.where(is_cubic, cubic, quintic)           # (ORDER, segments, joints)
    pieces = [None] * len(limits.names)
    for j, i in enumerate(idx):
        pieces[i] = (knot_t, goal_c[:, :, j])
    # Joints the goal leaves out: brought to rest, then held.
    for i in range(len(limits.names)):
        if pieces[i] is None:
            duration = stop_duration([current.v[i]], [limits.accel[i]])
            c = stop_coeffs(current.p[i], current.v[i], current.a[i], duration)
            pieces[i] = (np.array([now, now + duration]), c[:, None])
    x, c = _merge(pieces)
    traj = JointTrajectory(limits.names, x, c, kinds, list(knot_t))
    _check_path(traj, limits, joint_names, idx)
    traj.set_clip(limits.lower, limits.upper)
    return Plan(traj, tol, idx, joint_names, t_start, float(knot_t[-1]), kinds)


def _check_path(traj, limits, joint_names, idx):
    """The goal's joints must stay within their limits and (nearly) their speed limits,
    checked at 64 points of every segment. Joints the server only brings to rest are
    clipped at their limits, not checked."""
    t, p, v = traj.dense()
    for j, i in enumerate(idx):
        lo_p, hi_p = p[:, i].min(), p[:, i].max()
        k = int(np.argmax(np.abs(v[:, i])))
        vmax, t_vmax = abs(v[k, i]), t[k]
        label = joint_names[j]
        if lo_p < limits.lower[i] - LIMIT_CLIP or hi_p > limits.upper[i] + LIMIT_CLIP:
            raise GoalError(INVALID_GOAL, 'the interpolated path of %s reaches %.4f, outside its '
                            'limits [%.4f, %.4f]; move the points away from the limit or add '
                            'velocities' % (label, lo_p if lo_p < limits.lower[i] else hi_p,
                                            limits.lower[i], limits.upper[i]))
        if vmax > VELOCITY_MARGIN * limits.velocity[i]:
            raise GoalError(INVALID_GOAL, 'the trajectory needs %.3f rad/s on %s at %.3f s after its '
                            'start, above its velocity limit %.3f rad/s; slow it down (later '
                            'time_from_start)' % (vmax, label, t_vmax - traj.t_start,
                                                  limits.velocity[i]))


# --- execution monitoring ---------------------------------------------------------------------
@dataclass
class Outcome:
    code: int
    message: str

    @property
    def succeeded(self):
        return self.code == SUCCESSFUL


class GoalMonitor:
    """Decides, from measurements, whether a goal runs on, succeeded or failed.

    ``update(t, q, qd)`` with the time the measurement was taken: None while running;
    an Outcome once decided. Path tolerance is checked on every measurement up to the end
    of the trajectory; afterwards the goal succeeds as soon as every joint is within its
    goal tolerance and under its stopped-velocity tolerance, and fails with
    GOAL_TOLERANCE_VIOLATED if that has not happened goal_time after the end."""

    def __init__(self, plan):
        self.plan = plan
        self.names = plan.trajectory.names
        self.worst_path_error = 0.0

    def update(self, t, q, qd):
        traj, tol = self.plan.trajectory, self.plan.tolerances
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        if t <= self.plan.t_end:
            p_d, v_d, _ = traj.sample(t)
            return check_path(self.names, p_d, v_d, q, qd, tol, t - traj.t_start, self)
        p_end = traj.end_positions()
        why = check_goal(self.names, p_end, q, qd, tol)
        if why is None:
            return Outcome(SUCCESSFUL, 'trajectory executed (worst path error %.4f rad)'
                           % self.worst_path_error)
        late = t - self.plan.t_end
        if late > tol.goal_time:
            return Outcome(GOAL_TOLERANCE_VIOLATED, '%s %.3f s after the end of the trajectory '
                           '(goal_time tolerance %.3f s)' % (why, late, tol.goal_time))
        return None


def check_path(names, p_d, v_d, q, qd, tol, t_rel=0.0, stats=None):
    """None, or an Outcome(PATH_TOLERANCE_VIOLATED) naming the worst joint."""
    err = np.abs(p_d - q)
    if stats is not None:
        stats.worst_path_error = max(stats.worst_path_error, float(err.max()))
    over = err - tol.path_position
    if (over > 0).any():
        j = int(np.argmax(over))
        return Outcome(PATH_TOLERANCE_VIOLATED, '%s is %.4f rad from its desired position %.4f '
                       '(at %.4f) at %.3f s into the trajectory; path tolerance %.4f rad'
                       % (names[j], err[j], p_d[j], q[j], t_rel, tol.path_position[j]))
    verr = np.abs(v_d - qd)
    over = verr - tol.path_velocity
    if (over > 0).any():
        j = int(np.argmax(over))
        return Outcome(PATH_TOLERANCE_VIOLATED, '%s velocity is %.4f rad/s from the desired %.4f '
                       'at %.3f s into the trajectory; path velocity tolerance %.4f rad/s'
                       % (names[j], verr[j], v_d[j], t_rel, tol.path_velocity[j]))
    return None


def check_goal(names, p_end, q, qd, tol):
    """None when every joint is within its goal tolerance and stopped, else the reason."""
    err = np.abs(p_end - q)
    over = err - tol.goal_position
    if (over > 0).any():
        j = int(np.argmax(over))
        return ('%s is %.4f rad from its goal position %.4f (at %.4f; goal tolerance %.4f rad)'
                % (names[j], err[j], p_end[j], q[j], tol.goal_position[j]))
    over = np.abs(qd) - tol.goal_velocity
    if (over > 0).any():
        j = int(np.argmax(over))
        return ('%s still moves at %.4f rad/s (stopped velocity tolerance %.4f rad/s)'
                % (names[j], qd[j], tol.goal_velocity[j]))
    return None
