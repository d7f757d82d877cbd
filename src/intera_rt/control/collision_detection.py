"""Collision detection (seed 000), the Monitor stage `collision_detection`: impact, squish
and hand over-wrench, judged on the estimate r of the external joint torques (N·m,
right_j0..6, + = what the world applies) of a momentum observer
(control.momentum_observer).

    impact           ‖(r − r_slow)/impact_scale‖ > impact_threshold: what r did suddenly
    squish           |r_j| > squish_threshold_j, until every |r_j| < squish_release × it
    hand_overwrench  the wrench at right_hand explaining r (damped least squares) beyond
                     overwrench_force or overwrench_torque
update() returns a Halt (squish: compliant, the same object every tick it lasts) or None;
a squish takes precedence (letting go of the arm is a sudden change). While the active
controller presses on purpose (expected_external_torque) the part of r it expects is
excused, fading out when it ends. Nothing is detected under a controller of `idle_roles`
(a person guides the arm), for `settle` s after it, after reset() or a gap in readings, nor
while contact_safety / hand_overwrench_safety is suppressed. Options: OPTIONS (per-joint
ones: a number, 7 numbers or {joint: number}). docs/realtime_loop.md has the derivation.
"""
import math

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv

from intera_rt.control.base import Halt, Monitor
from intera_rt.control.momentum_observer import GainMemo, MomentumObserver
from intera_rt.native import kernels
from intera_rt.numeric import clip, count_nonzero
from intera_rt.options import Option, per_joint
from intera_rt.robot import ARM_JOINTS, COLLISION_HOLD

NAME = 'collision_detection'
HAND = 'right_hand'
MAX_GAP = 0.01          # s between two readings beyond which the observer restarts
WRENCH_PERIOD = 0.005       # s between two evaluations of the hand wrench from r
WRENCH_MAP_PERIOD = 0.02    # s between updates of the map r → hand wrench (the pose's J)
KINDS = ('impact', 'squish', 'hand_overwrench')

OPTIONS = {
    'observer_gain': Option(float, 200.0, 'K, 1/s: r follows the external torque with 1/K lag'),
    'impact_slow_time': Option(float, 0.05, 's, time constant of r_slow'),
    'impact_threshold': Option(float, 0.75, "on the normalised level (the robot's figure)"),
    'impact_scale': Option(float, None, 'N·m per joint: one number, 7 or {joint: number} '
                           '(default 0.15 × its effort limit: a sudden 15 N at the hand is an '
                           'impact, a light touch is not)', per_joint),
    'squish_threshold': Option(float, None, 'N·m per joint: one number, 7 or {joint: number} '
                               '(default 0.25 × its effort limit)', per_joint),
    'squish_release': Option(float, 0.8, 'fraction of its threshold every joint must fall '
                             'below for a squish to end (≤ 1)'),
    'overwrench_force': Option(float, 80.0, 'N at the hand (the 4 kg payload weighs 39 N)'),
    'overwrench_torque': Option(float, 15.0, 'N·m at the hand (more than the wrist drives hold)'),
    'wrench_damping': Option(float, 1e-4, 'λ², bounds the hand wrench near a wrist '
                             'singularity (‖w‖ ≤ ‖r‖/2λ)'),
    'settle': Option(float, 0.3, 's without detection after a restart or guiding'),
    'hold': Option(float, COLLISION_HOLD, 's a halt holds the arm'),
}
IMPACT_SCALE_RATIO = 0.15
SQUISH_RATIO = 0.25


def _positive(key, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError('%s option %s must be a number, got %r' % (NAME, key, value)) from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError('%s option %s must be finite and > 0, got %r' % (NAME, key, value))
    return v


def _per_joint(value, default):
    """A per-joint option as options.per_joint gives it, over `default` (7)."""
    if value is None:
        return default.copy()
    out = default.copy()
    if isinstance(value, dict):
        for name, v in value.items():
            out[ARM_JOINTS.index(name)] = v
        return out
    out[:] = value
    return out


def _gram(jac, damping):
    """J Jᵀ + damping·I of a 6×n J, each sum in index order (as the compiled wrench_map)."""
    rows = jac.tolist()
    out = np.empty((6, 6))
    for a in range(6):
        for b in range(a, 6):
            total = 0.0
            for x, y in zip(rows[a], rows[b]):
                total += x * y
            out[a, b] = out[b, a] = total
        out[a, a] += damping
    return out


def _wrench_of(wrench_map, r, out):
    """out = wrench_map·r, each row summed in index order; (‖force‖², ‖torque‖²) of it, as
    the compiled kernels' hand_wrench."""
    values = r.tolist()
    for a, row in enumerate(wrench_map.tolist()):
        total = 0.0
        for x, y in zip(row, values):
            total += x * y
        out[a] = total
    f0, f1, f2, t0, t1, t2 = out.tolist()
    return f0 * f0 + f1 * f1 + f2 * f2, t0 * t0 + t1 * t1 + t2 * t2


class CollisionDetection(Monitor):
    """The collision_detection monitor stage (see the module docstring)."""
    name = NAME
    OPTIONS = OPTIONS
    # A person guiding the arm (zero-G) is not a collision, nor is letting go.
    idle_roles = ('zero_g',)
    state_fields = (('impact', 1), ('squish', 1), ('hand_overwrench', 1),
                    ('external_torque', 7), ('detected_at', 1), ('impact_level', 1),
                    ('hand_wrench', 6))

    def __init__(self, context):
        super().__init__(context)
        model = context.model
        opts = self.options

        def opt(key):
            return opts[key]

        effort = model.limit_arrays(ARM_JOINTS)['effort']
        self.gain = _positive('observer_gain', opt('observer_gain'))
        self.slow_time = _positive('impact_slow_time', opt('impact_slow_time'))
        self.impact_threshold = _positive('impact_threshold', opt('impact_threshold'))
        self.impact_scale = _per_joint(opt('impact_scale'), IMPACT_SCALE_RATIO * effort)
        self.squish_threshold = _per_joint(opt('squish_threshold'), SQUISH_RATIO * effort)
        self.squish_release = _positive('squish_release', opt('squish_release'))
        if self.squish_release > 1.0:
            raise ValueError('%s option squish_release must be <= 1 (a fraction of the '
                             'threshold), got %r' % (NAME, self.squish_release))
        self.overwrench_force = _positive('overwrench_force', opt('overwrench_force'))
        self.overwrench_torque = _positive('overwrench_torque', opt('overwrench_torque'))
        self.wrench_damping = _positive('wrench_damping', opt('wrench_damping'))
        self.settle = _positive('settle', opt('settle'))
        self.hold = _positive('hold', opt('hold'))

        self.observer = MomentumObserver(model, self.gain)
        self._pin, self._data, self._arm = self.observer.pin, self.observer.data, self.observer.arm
        if not self._pin.existFrame(HAND, pin.FrameType.BODY):
            raise ValueError('%s: the robot model has no link %r' % (NAME, HAND))
        self._hand = self._pin.getFrameId(HAND, pin.FrameType.BODY)
        self._inv_scale = 1.0 / self.impact_scale
        self._gain_memo = GainMemo(self._step_gains)   # h → (k_slow, band_gain)
        self._release = self.squish_release * self.squish_threshold
        self._force2 = self.overwrench_force ** 2
        self._torque2 = self.overwrench_torque ** 2
        self._tmp7 = np.zeros(7)
        self._map = np.zeros((6, 7))         # r → hand wrench
        self._map_due = self._wrench_due = -math.inf
        # Detector state, arm order.
        self.r = self.observer.r             # external torque estimate (the observer's)
        self._judged_r = np.zeros(7)         # what of it counts (_judged)
        self._expected = None                # the active controller's expected_external_torque
        self._fading = None                  # the last one, fading out after it ended
        self.r_slow = np.zeros(7)
        self._band = np.zeros(7)
        self.level = 0.0
        self.wrench = np.zeros(6)
        self._t_prev = None
        self._h_cached = None
        self._k_slow = 0.0
        self._band_gain = self._inv_scale
        self._armed_at = math.inf
        self._hold_until = dict.fromkeys(KINDS, -math.inf)
        self._squish = False
        self._halt = None
        self.detected_at = math.nan
        self._now = 0.0

    def _restart(self, state):
        """Start the observer from the current momentum (r = 0) and disarm for `settle`."""
        self.observer.restart(state)
        self._t_prev = state.now
        self.r_slow[:] = 0.0
        self._expected = self._fading = None
        self.level = 0.0
        self.wrench[:] = 0.0
        self._map_due = self._wrench_due = -math.inf
        self._wrench2 = (0.0, 0.0)
        self._armed_at = state.now + self.settle
        self._squish = False
        self._halt = None
        for kind in KINDS:
            self._hold_until[kind] = -math.inf

    def reset(self, state):
        self._restart(state)
        self._now = state.now

    def _gains(self, h):
        """The detector's per-step gains for steps of h s, remembered per h (exp is most of
        their cost, and h takes few values: n ms less (n − 1) ms differs in its last bits
        from one n to the next, among some twenty values over an hour)."""
        self._h_cached = h
        self._k_slow, self._band_gain = self._gain_memo[h]

    def _step_gains(self, h):
        k_slow = 1.0 - math.exp(-h / self.slow_time)
        return k_slow, (1.0 - k_slow) * self._inv_scale

    def _judged(self, controller, h):
        """What of r counts as a collision: all of it, or, while the controller expects an
        external torque e (expected_external_torque: the reaction to the wrench it presses
        with), what r has beyond it — per joint, the part of r between 0 and e is excused.
        When the expectation starts, r_slow moves by the excused part (the switch itself is
        no sudden change for the impact band); when it ends (another controller takes
        over: what was pressed on lets go), the last one fades out with the settle time
        instead of vanishing."""
        expected = controller.expected_external_torque() if controller is not None else None
        before = self._expected
        self._expected = expected
        if expected is None:
            if before is not None:
                self._fading = before.copy()
            fading = self._fading
            if fading is None:
                return self.r
            fading *= math.exp(-h / self.settle)
            if np.abs(fading).max() < 0.01:
                self._fading = None
            expected = fading
        else:
            self._fading = None
            if before is None:
                self.r_slow -= clip(self.r, np.minimum(expected, 0.0), np.maximum(expected, 0.0))
        excused = clip(self.r, np.minimum(expected, 0.0), np.maximum(expected, 0.0))
        np.subtract(self.r, excused, out=self._judged_r)
        return self._judged_r

    def _slow_step(self, judged):
        """r_slow follows the judged r; the band is what that has beyond it, per joint over
        its scale."""
        band = self._band
        if kernels is not None and kernels.slow_step(judged, self.r_slow, band, self._band_gain,
                                                     self._k_slow):
            return
        np.subtract(judged, self.r_slow, out=band)
        np.multiply(band, self._k_slow, out=self._tmp7)
        self.r_slow += self._tmp7
        band *= self._band_gain

    def _detect_step(self, judged, bound, at_least):
        """_slow_step, then (the impact level ‖band‖, whether some |judged_j| reaches
        bound_j: ≥ with at_least, else >), the sum of squares in joint order as the
        compiled kernels' detect_step takes it."""
        self._slow_step(judged)
        total = 0.0
        for b in self._band.tolist():
            total += b * b
        abs_r = np.abs(judged)
        over = abs_r >= bound if at_least else abs_r > bound
        return math.sqrt(total), bool(count_nonzero(over))

    def _hand_wrench(self, now):
        """The wrench at right_hand that explains r, by damped least squares, into
        self.wrench; returns (‖force‖², ‖torque‖²). Evaluated every WRENCH_PERIOD s (the
        latest values in between), with the 6×7 map (J Jᵀ + λ² I)⁻¹ J of the pose at most
        WRENCH_MAP_PERIOD s old: an over-wrench is a sustained load, and a squish usually
        comes first."""
        self._wrench_due = now + WRENCH_PERIOD
        if now >= self._map_due:
            self._map_due = now + WRENCH_MAP_PERIOD
            rigid = self.observer.rigid
            solved = None if rigid is None else rigid.wrench_map(
                self._hand, self.observer.q, self._arm, self.wrench_damping)
            dls, info = self._wrench_map() if solved is None else solved
            if info == 0:                  # JJᵀ + λ²I is positive definite: always
                self._map = dls
        wrench2 = None if kernels is None else kernels.hand_wrench(self._map, self.r, self.wrench)
        self._wrench2 = _wrench_of(self._map, self.r, self.wrench) if wrench2 is None else wrench2
        return self._wrench2

    def _wrench_map(self):
        """(map, info): the map r → hand wrench at the observer's pose, with dposv's info
        (nonzero: junk) — what the compiled Rigid.wrench_map computes."""
        jac = pin.computeFrameJacobian(self._pin, self._data, self.observer.q, self._hand,
                                       pin.LOCAL_WORLD_ALIGNED)[:, self._arm]   # (a C-order copy)
        jjt = _gram(jac, self.wrench_damping)
        # (kernels.posv: scipy's dposv, bit for bit, without f2py's argument handling)
        solved = None if kernels is None else kernels.posv(jjt, jac)
        _, dls, info = dposv(jjt, jac, lower=0, overwrite_a=1, overwrite_b=1) \
            if solved is None else solved
        return np.ascontiguousarray(dls), info

    # --- the tick ---------------------------------------------------------------------
    def update(self, state, controller):
        now = state.now
        self._now = now
        if self._t_prev is None:
            self._restart(state)
            return None
        h = now - self._t_prev
        if h <= 0.0:                        # the same reading again: nothing new
            return self._halt if self._squish else None
        if h > MAX_GAP:
            self._restart(state)
            return None
        if h != self._h_cached:
            self._gains(h)
        self.observer.update(state, h)
        judged = self._judged(controller, h)
        # (the squish test's bound: the release while a squish holds, else the threshold)
        bound = self._release if self._squish else self.squish_threshold
        step = None if kernels is None else kernels.detect_step(
            judged, self.r_slow, self._band, self._band_gain, self._k_slow, bound, self._squish)
        level, over = step or self._detect_step(judged, bound, self._squish)
        self.level = level
        f2, t2 = self._wrench2 if now < self._wrench_due else self._hand_wrench(now)
        self._t_prev = now
        band = self._band
        if controller is not None and controller.role in self.idle_roles:
            # A person guides the arm: what they do is not a collision, and letting go
            # must not count as one either.
            self._armed_at = now + self.settle
            self._squish = False
            return None
        if now < self._armed_at:
            return None
        # A squish takes precedence: while it holds the arm (and until its hold ends) no
        # impact or over-wrench fires — letting go of the arm is a sudden change, and the
        # arm already yields.
        free = now >= self._hold_until['squish']
        impact = squish = overwrench = None
        if not state.suppressed('contact_safety'):
            if free and level > self.impact_threshold and now >= self._hold_until['impact']:
                j = int(np.argmax(np.abs(band)))
                impact = ('impact: %.3f > %.3f, largest contributor: %s, with value: %.3f'
                          % (level, self.impact_threshold, ARM_JOINTS[j], abs(band[j])))
                self._hold_until['impact'] = now + self.hold
            if self._squish:
                self._squish = over
            elif over:
                self._squish = True
                abs_r = np.abs(judged)
                j = int(np.argmax(abs_r / self.squish_threshold))
                squish = ('squish on joint %s - %.3f > %.3f'
                          % (ARM_JOINTS[j], abs_r[j], self.squish_threshold[j]))
            if self._squish:
                self._hold_until['squish'] = now + self.hold
        else:
            self._squish = False
        if (free and (f2 > self._force2 or t2 > self._torque2)
                and now >= self._hold_until['hand_overwrench']
                and not state.suppressed('hand_overwrench_safety')):
            f, t = math.sqrt(f2), math.sqrt(t2)
            if f2 > self._force2:
                overwrench = ('hand over-wrench: force %.3f > %.3f N, torque %.3f N m'
                              % (f, self.overwrench_force, t))
            else:
                overwrench = ('hand over-wrench: torque %.3f > %.3f N m, force %.3f N'
                              % (t, self.overwrench_torque, f))
            self._hold_until['hand_overwrench'] = now + self.hold
        if impact or squish or overwrench:
            new = [(k, line) for k, line in zip(KINDS, (impact, squish, overwrench)) if line]
            self.detected_at = now
            self._halt = Halt(new[0][0], '\n'.join(line for _, line in new), self.hold,
                              compliant=self._squish)
            return self._halt
        return self._halt if self._squish else None

    # --- state ------------------------------------------------------------------------
    def holding(self, kind):
        """True while `kind` (impact, squish, hand_overwrench) holds the arm."""
        return self._now < self._hold_until[kind]

    def set_tool(self, tool):
        self.observer.set_tool(tool)
        self._pin, self._data = self.observer.pin, self.observer.data

    def report(self, put):
        for kind in KINDS:
            put(kind, float(self.holding(kind)))
        put('external_torque', self.r)
        put('detected_at', self.detected_at)
        put('impact_level', self.level)
        put('hand_wrench', self.wrench)
