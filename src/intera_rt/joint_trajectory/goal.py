"""A FollowJointTrajectory goal checked and turned into its trajectory (``plan_goal``): the
goal's types, its result codes, its tolerances and the checks that refuse it with a
FollowJointTrajectoryResult code and a message naming the field. Pure: no ROS, no clock."""
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from intera_rt.joint_trajectory.spline import (JointTrajectory, merge_pieces, cubic_coeffs,
                                               estimate_accelerations, estimate_velocities,
                                               quintic_coeffs, stop_coeffs, stop_duration)

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


@dataclass
class AcceptedGoal:
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
    x, c = merge_pieces(pieces)
    traj = JointTrajectory(limits.names, x, c, kinds, list(knot_t))
    _check_path(traj, limits, joint_names, idx)
    traj.set_clip(limits.lower, limits.upper)
    return AcceptedGoal(traj, tol, idx, joint_names, t_start, float(knot_t[-1]), kinds)


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
