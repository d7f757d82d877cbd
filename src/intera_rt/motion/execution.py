"""Running a plan, pure: the tracker turns (time, measured joints) into TRAJECTORY_MODE
setpoints (position, velocity, acceleration) and decides when the motion is done.

    tracker = Tracker(plan, request.tracking, tolerances, now, accel_limit)
    sp = tracker.step(now, measurement)     # Setpoint or None once finished
    tracker.request_stop(now)               # smooth path-following stop (→ preempted)
    tracker.abort(error_id, why)            # e.g. CONTROLLER_NOT_FOLLOWING

Time rate: the plan is run on a path clock s with rate ṡ ∈ [min_time_rate, max_time_rate]
(TrackingOptions). While any joint's tracking error exceeds its joint_tolerances (of the
waypoint being moved to), the rate is lowered toward min_time_rate; once every joint has
been within them for RATE_RECOVERY, it returns to max_time_rate (never beyond what the joint
limits leave room for). The wait keeps an error that hovers about the tolerance from holding
the rate near its maximum. The rate changes by at most RATE_SLEW per second and the setpoint
accounts for it (v = p'ṡ, a = p''ṡ² + p's̈).

Finishing: at the end of the plan the final position is held (v = a = 0) until every joint
is within goal_joint_tolerance and slower than SETTLE_VELOCITY (done, result true) or
settling_time_at_goal runs out (FINAL_POSE_NOT_WITHIN_TOLERANCE).
"""
import collections
from dataclasses import dataclass

import numpy as np

from intera_rt.motion.analysis import sample_plan
from intera_rt.motion.errors import (FINAL_POSE_NOT_WITHIN_TOLERANCE,
                                     HAVE_NOT_REACHED_FIRST_WAYPOINT)
from intera_rt.motion.plan import STOP_DURATION

RATE_SLEW = 1.0              # 1/s: fastest change of the time rate
RATE_RECOVERY = 0.1          # s within tolerance before the rate rises again
SETTLE_VELOCITY = 0.05       # rad/s: the arm has settled when every joint is this slow (and in tolerance)
HISTORY = 200                # setpoints kept to compare measurements against

RUNNING = 'running'
STOPPING = 'stopping'
SETTLING = 'settling'
DONE = 'done'
PREEMPTED = 'preempted'
FAILED = 'error'


@dataclass
class Setpoint:
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray


@dataclass
class Measurement:
    stamp: float
    position: np.ndarray
    velocity: np.ndarray


class Tracker:
    def __init__(self, plan, tracking, tolerances, now, accel_limit=None, vel_limit=None):
        self.plan = plan
        self.tracking = tracking
        self.tolerances = [np.asarray(t, dtype=float) for t in tolerances]   # per waypoint
        self.accel_limit = accel_limit
        self.min_rate = tracking.min_time_rate
        self.max_rate = tracking.max_time_rate
        if self.max_rate > 1.0 and vel_limit is not None and accel_limit is not None:
            self.max_rate = min(self.max_rate, self._headroom(vel_limit, accel_limit))
        self.max_rate = max(self.max_rate, self.min_rate)
        self.start_time = now
        self.last_time = now
        self.s = 0.0
        self.sd = min(1.0, self.max_rate)
        self.sdd = 0.0
        self.phase = RUNNING
        self.stop_plan = None
        self.stop_start = 0.0
        self.end_time = None
        self.finish_time = None
        self.final = plan.sample(plan.duration)[0]
        self.error_id = ''
        self.message = ''
        self.history = collections.deque(maxlen=HISTORY)
        n = len(self.final)
        self.max_position_error = np.zeros(n)
        self.max_velocity_error = np.zeros(n)
        self.min_rate_used = self.sd
        self.max_rate_used = self.sd
        self._progress = 0.0
        self._last_error = None
        self._within_since = now     # when every joint last came within its tolerance
        if plan.duration <= 0:
            self._enter_settling(now)

    # --- state ----------------------------------------------------------------------------
    @property
    def finished(self):
        return self.phase in (DONE, PREEMPTED, FAILED)

    @property
    def result(self):
        return self.phase == DONE

    @property
    def status(self):
        return {RUNNING: 'running', SETTLING: 'running', STOPPING: 'stopping', DONE: 'done',
                PREEMPTED: 'preempted', FAILED: 'error'}[self.phase]

    @property
    def last_successful_waypoint(self):
        times = np.asarray(self.plan.waypoint_times)
        if not len(times):
            return HAVE_NOT_REACHED_FIRST_WAYPOINT
        passed = int(np.searchsorted(times, self._progress + 1e-9, side='right')) - 1
        if self.phase != DONE:
            passed = min(passed, len(times) - 2)      # the last one counts once settled
        return max(passed, HAVE_NOT_REACHED_FIRST_WAYPOINT)

    @property
    def current_waypoint(self):
        n = len(self.plan.waypoint_times)
        return max(0, min(self.last_successful_waypoint + 1, n - 1))

    @property
    def measured_duration(self):
        end = self.finish_time if self.finish_time is not None else self.last_time
        return end - self.start_time

    def _headroom(self, vel_limit, accel_limit):
        _, _, V, A = sample_plan(self.plan)
        v = np.abs(V).max(axis=0)
        a = np.abs(A).max(axis=0)
        with np.errstate(divide='ignore'):
            rv = np.min(np.where(v > 1e-9, vel_limit / np.maximum(v, 1e-12), np.inf))
            ra = np.min(np.where(a > 1e-9, np.sqrt(accel_limit / np.maximum(a, 1e-12)), np.inf))
        return float(max(1.0, min(rv, ra) * 0.98))

    # --- commands ------------------------------------------------------------------------
    def request_stop(self, now):
        """Smooth path-following stop from where the motion is now."""
        if self.phase == RUNNING:
            self.stop_plan = self.plan.stop_plan(self.s, STOP_DURATION, rate=self.sd,
                                                 accel_limit=self.accel_limit)
            self.stop_start = now
            self.phase = STOPPING
        elif self.phase == SETTLING:
            self._finish(now, PREEMPTED)

    def abort(self, now, error_id, message):
        if not self.finished:
            self.error_id, self.message = error_id, message
            self._finish(now, FAILED)

    def _finish(self, now, phase):
        self.phase = phase
        self.finish_time = now

    def _enter_settling(self, now):
        self.phase = SETTLING
        self.end_time = now
        self._progress = self.plan.progress(self.plan.duration)

    # --- the cycle ------------------------------------------------------------------------
    def step(self, now, measurement=None):
        """The setpoint for `now` (None once finished). measurement: the latest joint state
        (Measurement) or None."""
        dt = max(0.0, now - self.last_time)
        self.last_time = now
        if measurement is not None:
            self._observe(measurement)
        if self.phase == RUNNING:
            sd_before = self.sd
            self._update_rate(now, dt)
            self.s += 0.5 * (sd_before + self.sd) * dt
            if self.s >= self.plan.duration:
                self.s = self.plan.duration
                self._enter_settling(now)
            else:
                self._progress = self.plan.progress(self.s)
                p, v, a = self.plan.sample(self.s)
                return self._emit(now, p, v * self.sd, a * self.sd * self.sd + v * self.sdd)
        if self.phase == STOPPING:
            tau = now - self.stop_start
            self._progress = self.stop_plan.progress(tau)
            if tau >= self.stop_plan.duration:
                p = self.stop_plan.sample(self.stop_plan.duration)[0]
                self._finish(now, PREEMPTED)
                return self._emit(now, p, np.zeros_like(p), np.zeros_like(p))
            p, v, a = self.stop_plan.sample(tau)
            return self._emit(now, p, v, a)
        if self.phase == SETTLING:
            if measurement is not None and measurement.stamp >= self.end_time - 1e-9:
                err = np.abs(measurement.position - self.final)
                goal = self.tracking.goal_tolerance
                still = measurement.velocity is None or np.all(np.abs(measurement.velocity) <= SETTLE_VELOCITY)
                if np.all(err <= goal) and still:
                    self._finish(now, DONE)
                elif now - self.end_time >= self.tracking.settling_time:
                    j = int(np.argmax(err - goal))
                    self.error_id = FINAL_POSE_NOT_WITHIN_TOLERANCE
                    if np.all(err <= goal):
                        self.message = ('the arm is still moving (%.3f rad/s) %.2f s after the trajectory ended'
                                        % (float(np.abs(measurement.velocity).max()), now - self.end_time))
                    else:
                        self.message = ('right_j%d is %.5f rad from its goal (tolerance %.5f) %.2f s after the '
                                        'trajectory ended' % (j, err[j], goal[j], now - self.end_time))
                    self._finish(now, FAILED)
            zero = np.zeros_like(self.final)
            return self._emit(now, self.final.copy(), zero, zero.copy())
        return None

    def _emit(self, now, p, v, a):
        self.history.append((now, p, v, a))
        return Setpoint(p, v, a)

    def _reference_at(self, stamp):
        """The commanded state at `stamp`, from the setpoints sent (extrapolated as the
        realtime loop does)."""
        best = None
        for t, p, v, a in reversed(self.history):
            if t <= stamp + 1e-9:
                best = (t, p, v, a)
                break
        if best is None:
            return None
        t, p, v, a = best
        tau = min(stamp - t, 0.05)
        return p + v * tau + 0.5 * a * tau * tau, v + a * tau

    def _observe(self, m):
        ref = self._reference_at(m.stamp)
        if ref is None:
            return
        p, v = ref
        self.max_position_error = np.maximum(self.max_position_error, np.abs(m.position - p))
        if m.velocity is not None:
            self.max_velocity_error = np.maximum(self.max_velocity_error, np.abs(m.velocity - v))
        self._last_error = np.abs(m.position - p)

    def _update_rate(self, now, dt):
        target = self.max_rate
        err = self._last_error
        if err is not None and self.tolerances:
            tol = self.tolerances[min(self.current_waypoint, len(self.tolerances) - 1)]
            if np.any(err > tol):
                self._within_since = None
            elif self._within_since is None:
                self._within_since = now
            if self._within_since is None:
                target = self.min_rate
            elif now - self._within_since < RATE_RECOVERY:
                target = min(self.sd, self.max_rate)       # hold until the error stays within
        if dt <= 0:
            self.sdd = 0.0
            return
        change = float(np.clip(target - self.sd, -RATE_SLEW * dt, RATE_SLEW * dt))
        self.sd += change
        self.sdd = change / dt
        self.min_rate_used = min(self.min_rate_used, self.sd)
        self.max_rate_used = max(self.max_rate_used, self.sd)
