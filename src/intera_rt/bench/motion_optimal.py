"""Time-optimal durations computed independently of the planner, for the motion section's
optimality figures: the closed-form jerk-limited and trapezoid rest-to-rest bounds, and
TOPP-RA (jerk-free) on a plan's own joint path."""
import logging
import math

import numpy as np


def scurve_time(d, v, a, j):
    """Closed-form minimum time of a jerk-limited rest-to-rest move over distance d."""
    d = abs(d)
    if d == 0:
        return 0.0

    def accel_phase(vp):
        t = vp / a + a / j if vp >= a * a / j else 2.0 * math.sqrt(vp / j)
        return t, 0.5 * vp * t
    t_acc, d_acc = accel_phase(v)
    if 2 * d_acc <= d:
        return 2 * t_acc + (d - 2 * d_acc) / v
    vp = 0.5 * a * (-a / j + math.sqrt((a / j) ** 2 + 4 * d / a))
    if vp < a * a / j:
        vp = (0.5 * d * math.sqrt(j)) ** (2.0 / 3.0)
    return 2 * accel_phase(vp)[0]


def trapezoid_time(d, v, a):
    """Minimum time of a rest-to-rest move over distance d under v and a (no jerk limit)."""
    d = abs(d)
    return d / v + v / a if d >= v * v / a else 2.0 * math.sqrt(d / a)


def toppra_time(plan, vmax, amax):
    """TOPP-RA's time-optimal (jerk-free) duration of the plan's own joint path, split where
    the plan comes to rest (a cusp of the path)."""
    logging.getLogger('toppra').setLevel(logging.ERROR)
    import toppra
    stops = [0.0] + [t for t in plan.waypoint_times[:-1] if np.abs(plan.sample(t)[1]).max() < 1e-9] + \
        [plan.duration]
    total = 0.0
    for t0, t1 in zip(stops[:-1], stops[1:]):
        if t1 - t0 < 1e-6:
            continue
        ts = np.linspace(t0, t1, 3000)
        P, _, _ = plan.sample_many(ts)
        s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
        grid = np.linspace(0.0, s[-1], 600)             # uniform in arc length: no close knots
        Q = np.column_stack([np.interp(grid, s, P[:, j]) for j in range(P.shape[1])])
        path = toppra.SplineInterpolator(grid, Q)
        inst = toppra.algorithm.TOPPRA([toppra.constraint.JointVelocityConstraint(vmax),
                                        toppra.constraint.JointAccelerationConstraint(amax)],
                                       path, gridpoints=np.linspace(0, grid[-1], 1500), solver_wrapper='seidel')
        total += inst.compute_trajectory(0, 0).duration
    return total
