"""The joint trajectory action server's spline: every arm joint as one piecewise polynomial
over absolute time (quintic, cubic or "smooth" segments), its coefficients, the velocity and
acceleration estimates of points that carry none, and the stop ramp run after a cancel or an
abort. Pure: no ROS, no clock; times are absolute seconds passed in."""
import bisect
import math

import numpy as np

STOP_DECEL_FRACTION = 0.5   # stop ramps decelerate at up to this x the acceleration limit
MIN_STOP_TIME = 0.05        # s, shortest stop ramp
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
        numpy rather than scipy's PPoly: importing scipy.interpolate would weigh on the JTAS."""
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


def merge_pieces(pieces):
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
