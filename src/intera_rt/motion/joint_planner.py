"""JOINT interpolation: a jerk-limited, time-optimal joint trajectory through the waypoints.

Each segment (previous waypoint → next) is one ruckig trajectory (time-optimal under the
segment's velocity, acceleration and jerk limits, all joints synchronised; phase
synchronisation makes single rest-to-rest moves straight lines in joint space). The limits
of a segment are those of the waypoint it moves to: velocity = max_joint_speed_ratio ×
joint velocity limit, acceleration = max_joint_accel, jerk = accel / JERK_TIME.

Intermediate waypoints are passed without stopping when the joints keep their direction:
each joint crosses the waypoint at the lower of its cruise speeds in the two adjacent
segments (the speed it would hold there if the segment ran at its time-optimal duration),
bounded so that it can still brake before the next waypoint and before its position limits.
A joint that reverses at a waypoint stops there. When ruckig cannot reach a crossing
velocity within the segment (or would overshoot the waypoint), that velocity is halved until
it can (at worst the joint stops at the waypoint).
"""
import math

import numpy as np
from ruckig import InputParameter, Result, Ruckig, Synchronization, Trajectory

from intera_rt.motion.errors import FAILED_TO_PARAMETERIZE, MotionError
from intera_rt.motion.plan import HoldPlan, PiecewisePlan, RuckigPiece

JERK_TIME = 0.02           # s to ramp the acceleration from 0 to its limit (jerk = accel / 0.02)
MAX_DURATION = 3600.0      # s: longer trajectories are refused (FAILED_TO_PARAMETERIZE)
MIN_SEGMENT = 1e-6         # rad: a waypoint this close to the previous one is already reached
OVERSHOOT_TOL = 1e-4       # rad a joint may pass a waypoint (or its start) within a segment
_OK = (Result.Working, Result.Finished)


class JointSegmentLimits:
    def __init__(self, vmax, amax, jmax=None):
        self.vmax = np.asarray(vmax, dtype=float)
        self.amax = np.asarray(amax, dtype=float)
        self.jmax = np.asarray(jmax, dtype=float) if jmax is not None else self.amax / JERK_TIME


class JointPlanner:
    def __init__(self, lower, upper):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.n = len(self.lower)
        self._otg = Ruckig(self.n)

    def _calc(self, p0, v0, p1, v1, lim, phase=True):
        inp = InputParameter(self.n)
        inp.current_position = list(p0)
        inp.current_velocity = list(v0)
        inp.current_acceleration = [0.0] * self.n
        inp.target_position = list(p1)
        inp.target_velocity = list(v1)
        inp.target_acceleration = [0.0] * self.n
        inp.max_velocity = list(lim.vmax)
        inp.max_acceleration = list(lim.amax)
        inp.max_jerk = list(lim.jmax)
        inp.min_position = list(self.lower)
        inp.max_position = list(self.upper)
        inp.synchronization = Synchronization.Phase if phase else Synchronization.Time
        traj = Trajectory(self.n)
        try:
            result = self._otg.calculate(inp, traj)
        except RuntimeError:
            return None
        return traj if result in _OK else None

    def plan(self, q0, targets, limits):
        """q0 (current angles) → each of `targets` in turn. limits[i] (JointSegmentLimits)
        applies to the segment ending at targets[i]. Returns a PiecewisePlan whose
        waypoint_times has one entry per target."""
        points = [np.asarray(q0, dtype=float)] + [np.asarray(t, dtype=float) for t in targets]
        m = len(targets)
        deltas = [points[k + 1] - points[k] for k in range(m)]
        moving = [float(np.abs(d).max()) > MIN_SEGMENT for d in deltas]
        # A quick bound first: a huge duration means a degenerate request (tiny speed ratio).
        for k in range(m):
            if moving[k]:
                bound = float(np.max(np.abs(deltas[k]) / limits[k].vmax))
                if bound > MAX_DURATION:
                    raise MotionError(FAILED_TO_PARAMETERIZE,
                                      'segment to waypoint %d would take at least %.0f s (> %.0f s): '
                                      'speed ratio too small for the distance' % (k, bound, MAX_DURATION))
        # Rest-to-rest durations and the limiting joint's ramp time per segment.
        rest = []
        for k in range(m):
            if not moving[k]:
                rest.append(None)
                continue
            traj = self._calc(points[k], np.zeros(self.n), points[k + 1], np.zeros(self.n), limits[k])
            if traj is None:
                raise MotionError(FAILED_TO_PARAMETERIZE,
                                  'no time-optimal trajectory from waypoint %d to %d (ruckig failed)' % (k - 1, k))
            rest.append(traj)
        cruise = []
        for k in range(m):
            if not moving[k]:
                cruise.append(np.zeros(self.n))
                continue
            T = rest[k].duration
            lim = limits[k]
            d = np.abs(deltas[k])
            j = int(np.argmax(np.array(rest[k].independent_min_durations)))
            peak = min(lim.vmax[j], math.sqrt(d[j] * lim.amax[j]))
            ramp = peak / lim.amax[j] + lim.amax[j] / lim.jmax[j]
            cruise.append(np.minimum(d / max(T - ramp, 0.5 * T), lim.vmax))
        # Crossing velocities at the intermediate waypoints.
        vel = [np.zeros(self.n) for _ in range(m + 1)]
        for k in range(1, m):
            if not (moving[k - 1] and moving[k]):
                continue
            d_in, d_out = deltas[k - 1], deltas[k]
            same = (np.sign(d_in) == np.sign(d_out)) & (np.abs(d_in) > MIN_SEGMENT) & (np.abs(d_out) > MIN_SEGMENT)
            speed = np.minimum(cruise[k - 1], cruise[k])
            speed = np.minimum(speed, np.minimum(limits[k - 1].vmax, limits[k].vmax))
            # Room to brake before the position limits in the direction of travel.
            room = np.where(d_out > 0, self.upper - points[k], points[k] - self.lower)
            amin = np.minimum(limits[k - 1].amax, limits[k].amax)
            speed = np.minimum(speed, 0.8 * np.sqrt(2.0 * amin * np.maximum(room, 0.0)))
            vel[k] = np.where(same, np.sign(d_out) * speed, 0.0)
        # Forward / backward passes: each crossing speed reachable from, and able to brake
        # to, its neighbours' over the segment length (bang-bang bound, jerk ignored).
        for k in range(1, m):
            a = limits[k - 1].amax
            cap = np.sqrt(vel[k - 1] ** 2 + 2.0 * a * np.abs(deltas[k - 1]))
            vel[k] = np.clip(vel[k], -cap, cap)
        for k in range(m - 1, 0, -1):
            a = limits[k].amax
            cap = np.sqrt(vel[k + 1] ** 2 + 2.0 * a * np.abs(deltas[k]))
            vel[k] = np.clip(vel[k], -cap, cap)

        pieces = [None] * m
        k = 0
        backtracks = 0
        while k < m:
            if not moving[k]:
                k += 1
                continue
            traj = None
            v1 = vel[k + 1].copy()
            for scale in (1.0, 0.5, 0.25, 0.125, 0.0):
                traj = self._calc(points[k], vel[k], points[k + 1], v1 * scale, limits[k],
                                  phase=not (np.any(vel[k]) or np.any(v1 * scale)))
                if traj is not None and self._monotone(traj, points[k], points[k + 1]):
                    vel[k + 1] = v1 * scale
                    break
                traj = None
            if traj is None and k > 0 and moving[k - 1] and np.any(vel[k]) and backtracks < 4 * m:
                # Arriving too fast to reach the next waypoint cleanly: cross slower.
                backtracks += 1
                vel[k] = vel[k] * 0.5 if backtracks % 4 else vel[k] * 0.0
                k -= 1
                continue
            if traj is None:
                # Last resort: allow the joints to pass their target and come back.
                vel[k + 1] = np.zeros(self.n)
                traj = self._calc(points[k], vel[k], points[k + 1], vel[k + 1], limits[k], phase=False)
            if traj is None:
                raise MotionError(FAILED_TO_PARAMETERIZE,
                                  'no jerk-limited trajectory from waypoint %d to %d within the joint '
                                  'limits (ruckig failed)' % (k - 1, k))
            pieces[k] = RuckigPiece(traj)
            k += 1
        times = []
        t = 0.0
        for k in range(m):
            if pieces[k] is not None:
                t += pieces[k].duration
            times.append(t)
        pieces = [p for p in pieces if p is not None]
        if t > MAX_DURATION:
            raise MotionError(FAILED_TO_PARAMETERIZE,
                              'the trajectory would take %.0f s (> %.0f s)' % (t, MAX_DURATION))
        if not pieces:
            return HoldPlan(points[0], waypoint_count=m)
        return PiecewisePlan(pieces, times)

    def _monotone(self, traj, p0, p1):
        """No joint leaves the span between its start and its target (no overshoot loops)."""
        lo = np.minimum(p0, p1) - OVERSHOOT_TOL
        hi = np.maximum(p0, p1) + OVERSHOOT_TOL
        for j, bound in enumerate(traj.position_extrema):
            if bound.min < lo[j] or bound.max > hi[j]:
                return False
        return True
