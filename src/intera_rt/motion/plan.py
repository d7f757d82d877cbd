"""Planned joint trajectories of the 7 arm joints (ARM_JOINTS order).

A Plan answers sample(t) → (position, velocity, acceleration) for 0 ≤ t ≤ duration (clamped
outside), knows when it passes each of the goal's waypoints (waypoint_times), and can derive

* stop_plan(t, 0.3 s): a smooth, path-following stop: the same path, re-timed so that the
  path speed falls from its current value to zero over (at least) the stop time with zero
  path acceleration at both ends — positions stay on the planned path, velocity and
  acceleration stay continuous. The stop is lengthened where the joints' acceleration
  limits require it (a fast wrist cannot stop from full speed in 0.3 s);
* scaled(k): the same path run k times slower (end_time).

Time is always passed in. `progress(t)` maps a derived plan's time back to the time of the
plan it was derived from (which waypoints have been passed).
"""
import bisect
import math

import numpy as np

STOP_DURATION = 0.3        # s, Intera 5.3's path-following stop


class Plan:
    duration = 0.0
    waypoint_times = ()    # s, one per goal waypoint (in the original plan's time)

    def sample(self, t):
        raise NotImplementedError

    def sample_many(self, ts):
        out = [self.sample(t) for t in ts]
        return (np.array([o[0] for o in out]), np.array([o[1] for o in out]),
                np.array([o[2] for o in out]))

    def progress(self, t):
        """Time in the original plan reached at time t of this plan."""
        return min(max(t, 0.0), self.duration)

    @property
    def start(self):
        return self.sample(0.0)[0]

    @property
    def end(self):
        return self.sample(self.duration)[0]

    def scaled(self, k):
        """The same path, k ≥ 1 times slower (velocities / k, accelerations / k²)."""
        if k <= 1.0:
            return self
        return RetimedPlan(self, LinearLaw(1.0 / k, self.duration))

    def stop_plan(self, t, duration=STOP_DURATION, rate=1.0, accel_limit=None):
        """A smooth path-following stop beginning at time t of this plan, where the plan is
        being run at `rate` (path time per second). Lengthened (never shortened) when the
        joint accelerations would exceed accel_limit (per joint)."""
        t = min(max(t, 0.0), self.duration)
        rate = max(rate, 0.0)
        remaining = self.duration - t
        if rate <= 1e-9 or remaining <= 1e-9:
            return RetimedPlan(self, HoldLaw(t))
        if remaining <= rate * duration:
            # The plan itself comes to rest within the stop time: let it.
            return RetimedPlan(self, LinearLaw(rate, self.duration, start=t))
        T = duration
        for _ in range(8):
            if rate * T / 2.0 >= remaining:
                return RetimedPlan(self, LinearLaw(rate, self.duration, start=t))
            plan = RetimedPlan(self, StopLaw(t, rate, T))
            if accel_limit is None:
                return plan
            ts = np.linspace(0.0, T, 31)
            _, _, a = plan.sample_many(ts)
            worst = float(np.max(np.abs(a) / accel_limit))
            if worst <= 1.0 + 1e-6:
                return plan
            T *= worst * 1.05
        return plan


class HoldPlan(Plan):
    """Stay at p (a goal already reached)."""

    def __init__(self, p, waypoint_count=0):
        self.p = np.array(p, dtype=float)
        self.duration = 0.0
        self.waypoint_times = np.zeros(waypoint_count)

    def sample(self, t):
        return self.p.copy(), np.zeros(7), np.zeros(7)


class Piece:
    """One time-parameterised piece of a PiecewisePlan, on its own clock [0, duration]."""
    duration = 0.0

    def sample(self, tau):
        raise NotImplementedError

    def sample_many(self, taus):
        out = [self.sample(t) for t in taus]
        return (np.array([o[0] for o in out]), np.array([o[1] for o in out]),
                np.array([o[2] for o in out]))


class RuckigPiece(Piece):
    """A ruckig.Trajectory (jerk-limited, analytic).

    sample_many evaluates the trajectory's constant-jerk phases (Trajectory.profiles) with
    numpy, the way ruckig's at_time does (same phase lookup, same integration formula):
    at_time called once per sample from Python costs several times more. Trajectories with
    more than one section or with a brake/accel pre-profile fall back to at_time."""

    def __init__(self, trajectory):
        self.trajectory = trajectory
        self.duration = float(trajectory.duration)
        self._phases = self._read_phases(trajectory)

    @staticmethod
    def _read_phases(trajectory):
        """(ends, table): per joint (rows), the phase end times, and table[:, joint, k] =
        (start time, p, v, a, j) of phase k; the last phase (k = 7) is the state at the
        profile's end, held with zero jerk. None when the vectorised form does not apply."""
        sections = trajectory.profiles
        if len(sections) != 1:
            return None
        profiles = sections[0]
        if any(pr.brake.duration > 0.0 or pr.accel.duration > 0.0 for pr in profiles):
            return None
        # one row per joint: 7 phase durations, 7 jerks, then p, v, a at the 8 phase starts
        rows = np.array([pr.t + pr.j + [0.0] + pr.p + pr.v + pr.a for pr in profiles])
        ends = np.cumsum(rows[:, :7], axis=1)
        table = np.empty((5, len(rows), 8))
        table[0, :, 0] = 0.0
        table[0, :, 1:] = ends
        table[4] = rows[:, 7:15]
        table[1:4] = rows[:, 15:].reshape(len(rows), 3, 8).transpose(1, 0, 2)
        return ends, table

    def sample(self, tau):
        p, v, a = self.trajectory.at_time(min(max(tau, 0.0), self.duration))
        return np.array(p), np.array(v), np.array(a)

    def sample_many(self, taus):
        taus = np.clip(np.asarray(taus, dtype=float), 0.0, self.duration)
        if self._phases is None:
            at = self.trajectory.at_time
            out = np.array([at(t) for t in taus.tolist()]).reshape(len(taus), 3, -1)
            return out[:, 0], out[:, 1], out[:, 2]
        ends, table = self._phases
        t = taus[:, None]
        # The phase holding t (ruckig: upper_bound over the phase end times); from the
        # trajectory's duration on, the end state (as at_time does past the end).
        k = (ends[None, :, :] <= t[:, :, None]).sum(axis=2)
        k[taus >= self.duration] = ends.shape[1]
        start, p, v, a, j = table[:, np.arange(len(ends))[None, :], k]
        dt = t - start
        return (p + dt * (v + dt * (a / 2 + dt * j / 6)), v + dt * (a + dt * j / 2), a + dt * j)


class PathPiece(Piece):
    """A geometric joint path q(s) (cubic spline) run with a piecewise-constant path
    acceleration between gridpoints (the TOPP-RA parameterisation)."""

    def __init__(self, spline, gridpoints, sd):
        self.spline = spline                 # scipy CubicSpline over s, values (n, 7)
        self.d1 = spline.derivative(1)
        self.d2 = spline.derivative(2)
        ss = np.asarray(gridpoints, dtype=float)
        sd = np.maximum(np.asarray(sd, dtype=float), 0.0)
        ds = np.diff(ss)
        self.ss, self.sd = ss, sd
        self.us = (sd[1:] ** 2 - sd[:-1] ** 2) / (2.0 * ds)
        dt = 2.0 * ds / np.maximum(sd[:-1] + sd[1:], 1e-12)
        self.ts = np.concatenate([[0.0], np.cumsum(dt)])
        self.duration = float(self.ts[-1])

    def path_state(self, taus):
        taus = np.clip(np.atleast_1d(np.asarray(taus, dtype=float)), 0.0, self.duration)
        i = np.clip(np.searchsorted(self.ts, taus, side='right') - 1, 0, len(self.us) - 1)
        dt = taus - self.ts[i]
        u = self.us[i]
        sd = np.maximum(self.sd[i] + u * dt, 0.0)
        s = np.minimum(self.ss[i] + self.sd[i] * dt + 0.5 * u * dt * dt, self.ss[-1])
        return s, sd, u

    def time_at(self, s):
        """Time at which the path parameter reaches s."""
        i = int(np.clip(np.searchsorted(self.ss, s, side='right') - 1, 0, len(self.us) - 1))
        ds = s - self.ss[i]
        v0, u = self.sd[i], self.us[i]
        if abs(u) < 1e-12:
            dt = ds / max(v0, 1e-12)
        else:
            disc = max(v0 * v0 + 2.0 * u * ds, 0.0)
            dt = (math.sqrt(disc) - v0) / u
        return float(min(self.ts[i] + max(dt, 0.0), self.duration))

    def sample_many(self, taus):
        s, sd, u = self.path_state(taus)
        d1 = self.d1(s)
        p = self.spline(s)
        v = d1 * sd[:, None]
        a = self.d2(s) * (sd * sd)[:, None] + d1 * u[:, None]
        return p, v, a

    def sample(self, tau):
        p, v, a = self.sample_many([tau])
        return p[0], v[0], a[0]


class PiecewisePlan(Plan):
    """Pieces run one after another (each starts where the previous one came to rest, or
    carries on at the velocity it ended with)."""

    def __init__(self, pieces, waypoint_times):
        self.pieces = list(pieces)
        self.starts = [0.0]
        for piece in self.pieces:
            self.starts.append(self.starts[-1] + piece.duration)
        self.duration = self.starts[-1]
        self.waypoint_times = np.asarray(waypoint_times, dtype=float)

    def _locate(self, t):
        t = min(max(t, 0.0), self.duration)
        k = min(bisect.bisect_right(self.starts, t) - 1, len(self.pieces) - 1)
        return k, t - self.starts[k]

    def sample(self, t):
        k, tau = self._locate(t)
        return self.pieces[k].sample(tau)

    def sample_many(self, ts):
        ts = np.clip(np.asarray(ts, dtype=float), 0.0, self.duration)
        p = np.empty((len(ts), 7))
        v = np.empty((len(ts), 7))
        a = np.empty((len(ts), 7))
        ks = np.clip(np.searchsorted(self.starts, ts, side='right') - 1, 0, len(self.pieces) - 1)
        for k in np.unique(ks):
            sel = ks == k
            p[sel], v[sel], a[sel] = self.pieces[k].sample_many(ts[sel] - self.starts[k])
        return p, v, a


# --- time laws: s(τ), ṡ(τ), s̈(τ) over a base plan's time ---------------------------------
class LinearLaw:
    """s = start + rate·τ until the base plan's end."""

    def __init__(self, rate, base_duration, start=0.0):
        self.rate, self.start = rate, start
        self.duration = (base_duration - start) / rate if rate > 0 else 0.0

    def __call__(self, tau):
        tau = min(max(tau, 0.0), self.duration)
        return self.start + self.rate * tau, self.rate, 0.0


class HoldLaw:
    def __init__(self, s):
        self.s = s
        self.duration = 0.0

    def __call__(self, tau):
        return self.s, 0.0, 0.0


class StopLaw:
    """Path speed r0 → 0 over T: ṡ = r0 (1 − 3u² + 2u³), u = τ/T; s̈ = 0 at both ends."""

    def __init__(self, s0, r0, T):
        self.s0, self.r0, self.duration = s0, r0, T

    def __call__(self, tau):
        T = self.duration
        u = min(max(tau / T, 0.0), 1.0)
        s = self.s0 + self.r0 * T * (u - u ** 3 + 0.5 * u ** 4)
        sd = self.r0 * (1.0 - 3.0 * u * u + 2.0 * u ** 3)
        sdd = -self.r0 * (6.0 * u - 6.0 * u * u) / T
        return s, sd, sdd


class RetimedPlan(Plan):
    """A base plan run on a time law: p = p(s), v = p'(s)·ṡ, a = p''(s)·ṡ² + p'(s)·s̈."""

    def __init__(self, base, law):
        self.base, self.law = base, law
        self.duration = law.duration
        self.waypoint_times = base.waypoint_times

    def sample(self, t):
        s, sd, sdd = self.law(t)
        p, v, a = self.base.sample(s)
        return p, v * sd, a * (sd * sd) + v * sdd

    def sample_many(self, ts):
        laws = np.array([self.law(t) for t in ts]).reshape(-1, 3)
        p, v, a = self.base.sample_many(laws[:, 0])
        sd, sdd = laws[:, 1:2], laws[:, 2:3]
        return p, v * sd, a * (sd * sd) + v * sdd

    def progress(self, t):
        return self.base.progress(self.law(t)[0])
