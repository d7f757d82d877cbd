"""Looking at a plan: its TrajectoryAnalysis figures, limit checks, the pre-motion
self-collision check, the endpoint's deviation from the designed path and the interpolated
path (path_interpolation_step). No ROS here."""
import math

import numpy as np

from intera_rt.motion.cartesian_path import reference_polyline
from intera_rt.motion.geometry import matrix_to_quat

ANALYSIS_DT = 0.005          # s between samples (the streaming period)
MAX_SAMPLES = 600            # coarser than ANALYSIS_DT for plans longer than 3 s
# Pre-motion self-collision check: checked configurations are at most COLLISION_STEP apart,
# measured as Σ reach_j·|Δq_j| — a bound on how far any point of the arm's collision shapes
# moves, with reach_j the largest distance from joint j's axis to the surface of a shape
# beyond it (stock URDF shapes, maximum over 3000 random configurations: 1.148, 1.034, 0.669,
# 0.609, 0.244, 0.193, 0.075 m) plus a margin.
COLLISION_STEP = 0.04        # m (every collision shape is ≥ 7 cm across)
COLLISION_REACH = np.array([1.16, 1.05, 0.69, 0.63, 0.26, 0.21, 0.09])   # m, right_j0..6
MAX_PATH_POINTS = 20000      # interpolated path points returned at most


def sample_plan(plan, dt=ANALYSIS_DT, max_samples=MAX_SAMPLES):
    """(ts, P, V, A) on a uniform grid over [0, duration] (coarser for very long plans)."""
    n = int(math.ceil(plan.duration / dt)) + 1 if plan.duration > 0 else 1
    n = max(2, min(n, max_samples))
    ts = np.linspace(0.0, plan.duration, n)
    P, V, A = plan.sample_many(ts)
    return ts, P, V, A


def analyze(plan, samples=None):
    """The planned part of intera_motion_msgs/TrajectoryAnalysis, ARM_JOINTS order."""
    ts, P, V, A = samples if samples is not None else sample_plan(plan)
    if len(ts) > 1 and ts[-1] > ts[0]:
        jerk = np.abs(np.diff(A, axis=0) / np.diff(ts)[:, None]).max(axis=0)
    else:
        jerk = np.zeros(P.shape[1])
    return {'planned_duration': float(plan.duration),
            'min_angle_command': P.min(axis=0), 'max_angle_command': P.max(axis=0),
            'peak_speed_command': np.abs(V).max(axis=0), 'peak_accel_command': np.abs(A).max(axis=0),
            'peak_jerk_command': jerk}


def limit_ratios(samples, vel_limit, accel_limit):
    """Worst |v|/limit and |a|/limit over the samples (per joint arrays)."""
    _, _, V, A = samples
    return np.abs(V).max(axis=0) / vel_limit, np.abs(A).max(axis=0) / accel_limit


def first_collision(plan, samples, collision, q_head=0.0, step=COLLISION_STEP):
    """Sub-sample the planned path (no point of the arm's shapes moves more than `step`
    between checks; the start and the end are always checked) and return (time, q,
    colliding link pairs) of the first configuration in self-collision, or None."""
    ts, P, _, _ = samples
    gaps = np.abs(np.diff(P, axis=0)) @ COLLISION_REACH          # bound on motion per sample
    # Samples farther apart than the step get intermediate times.
    extra_t = []
    for i in np.flatnonzero(gaps > step):
        k = int(math.ceil(gaps[i] / step))
        extra_t.extend(np.linspace(ts[i], ts[i + 1], k + 1)[1:-1])
    if extra_t:
        Pe = plan.sample_many(np.array(extra_t))[0]
        all_t = np.concatenate([ts, extra_t])
        order = np.argsort(all_t, kind='stable')
        all_t, all_p = all_t[order], np.concatenate([P, Pe])[order]
        gaps = np.abs(np.diff(all_p, axis=0)) @ COLLISION_REACH
    else:
        all_t, all_p = ts, P
    # Greedy: from each checked configuration, the farthest sample within `step` of motion.
    # The next sample from every sample is found at once; only the walk is sequential.
    cum = np.concatenate([[0.0], np.cumsum(gaps)])
    last = len(cum) - 1
    nxt = np.searchsorted(cum, cum + step, side='right') - 1
    nxt = np.maximum(nxt, np.arange(1, len(cum) + 1)).tolist()
    picks, p = [0], 0
    while p < last:
        p = nxt[p]
        picks.append(p)
    k = collision.first_in_collision(all_p[picks], q_head)
    if k is None:
        return None
    i = picks[k]
    return float(all_t[i]), np.array(all_p[i]), collision.colliding_pairs(all_p[i], q_head)


def first_collision_on_points(points, collision, q_head=0.0, step=COLLISION_STEP):
    """The first of a path's joint configurations (N×7, joined by straight joint-space
    segments, which are checked every `step` of motion as in first_collision) in
    self-collision: (index of the point at or after it, colliding link pairs), or None."""
    P = np.asarray(points, dtype=float)
    gaps = np.abs(np.diff(P, axis=0)) @ COLLISION_REACH
    counts = np.maximum(1, np.ceil(gaps / step).astype(int))
    rows, owner = [P[:1]], [0]
    for i in range(len(gaps)):
        k = counts[i]
        u = np.arange(1, k + 1)[:, None] / k
        rows.append(P[i] + u * (P[i + 1] - P[i]))
        owner.extend([i + 1] * k)
    Q = np.concatenate(rows)
    k = collision.first_in_collision(Q, q_head)
    if k is None:
        return None
    return owner[k], collision.colliding_pairs(Q[k], q_head)


def cartesian_deviation(plan, endpoint, samples=None):
    """Largest distance (m) of the endpoint from the designed path (its lines and arcs as a
    dense polyline) over the samples."""
    ts, P, _, _ = samples if samples is not None else sample_plan(plan)
    ref = reference_polyline(plan)
    if len(ref) < 2:
        return 0.0
    a, b = ref[:-1], ref[1:]
    ab = b - a
    ab2 = np.maximum((ab * ab).sum(axis=1), 1e-18)
    worst = 0.0
    for q in P:
        p = endpoint.fk(q[:endpoint.n])[0]
        # nearest chords first (by their start point), then the exact distance to those
        near = np.argpartition(((a - p) ** 2).sum(axis=1), min(20, len(a) - 1))[:21]
        t = np.clip(((p - a[near]) * ab[near]).sum(axis=1) / ab2[near], 0.0, 1.0)
        d = np.linalg.norm(a[near] + t[:, None] * ab[near] - p, axis=1).min()
        worst = max(worst, float(d))
    return worst


def interpolated_path(plan, step, endpoint=None):
    """[(time, q, (position, quaternion) or None, segment index)] every `step` s (≤
    MAX_PATH_POINTS points), the end included. segment index = the waypoint being moved to."""
    if step <= 0:
        return []
    n = int(math.floor(plan.duration / step)) + 1
    if n > MAX_PATH_POINTS:
        n = MAX_PATH_POINTS
        step = plan.duration / (n - 1)
    ts = [i * step for i in range(n)]
    if not ts or ts[-1] < plan.duration - 1e-9:
        ts.append(plan.duration)
    P, _, _ = plan.sample_many(np.array(ts))
    times = np.asarray(plan.waypoint_times)
    out = []
    for t, q in zip(ts, P):
        seg = int(np.searchsorted(times, plan.progress(t) - 1e-9, side='left')) if len(times) else 0
        seg = min(seg, max(len(times) - 1, 0))
        pose = None
        if endpoint is not None:
            p, R = endpoint.fk(q[:endpoint.n])
            pose = (p, matrix_to_quat(R))
        out.append((float(t), q, pose, seg))
    return out
