"""Collision detection (control.collision_detection) without ROS: the realtime core (the
embedded plant, the controller pipeline and every registered stage) ticked by hand, with the
monitor's verdicts recorded as they are returned and applied by the core (stop and hold,
commands refused while held; a compliant hold yields to what pushes).

Normal use never halts the arm; impacts, squishes and hand over-wrenches made with
apply_wrench do, with the robot's log lines."""
import math
import re

import numpy as np
import pinocchio as pin
import pytest

from intera_rt.control import commands as cmds
from intera_rt.control.base import PluginContext
from intera_rt.control.collision_detection import CollisionDetection
from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.robot import COLLISION_HOLD, NEUTRAL, SUPPRESS_WINDOW

DT = 0.001
POSITION, VELOCITY, TORQUE, TRAJECTORY = 1, 2, 3, 4
IMPACT_LINE = re.compile(r'^impact: (\d+\.\d{3}) > 0\.750, largest contributor: (right_j\d), '
                         r'with value: (\d+\.\d{3})$')
SQUISH_LINE = re.compile(r'^squish on joint (right_j\d) - (\d+\.\d{3}) > (\d+\.\d{3})$')
OVERWRENCH_LINE = re.compile(r'^hand over-wrench: (force|torque) (\d+\.\d{3}) > (\d+\.\d{3}) ')


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


class Arm:
    """A realtime core ticked by hand; its collision_detection monitor's verdicts recorded."""

    def __init__(self, model, q=NEUTRAL, options=None, stages=None):
        """options: collision_detection's; stages: other stages' options."""
        self.model = model
        self.core = RealtimeCore(model, q_arm=list(q),
                                 options={'collision_detection': options or {}, **(stages or {})})
        self.boards = self.core.boards
        self.monitor = next(m for m in self.core.monitors if m.name == 'collision_detection')
        self.halts = []              # (t, Halt) each time a new Halt object arrives
        self.halt_ticks = []         # t of every tick that returned a Halt
        self._last = None
        self.max_level = 0.0
        self.max_r = np.zeros(7)
        update = self.monitor.update

        def recorded(state, controller):
            halt = update(state, controller)
            if halt is not None:
                self.halt_ticks.append(state.now)
                if halt is not self._last:
                    self.halts.append((state.now, halt))
            self._last = halt
            self.max_level = max(self.max_level, self.monitor.level)
            np.maximum(self.max_r, np.abs(self.monitor.r), out=self.max_r)
            return halt
        self.monitor.update = recorded
        self.core.tick()                      # brakes released: hold where it boots

    @property
    def t(self):
        return self.core.now

    @property
    def q(self):
        return self.boards.read().position[:7]

    @property
    def qd(self):
        return self.boards.read().velocity[:7]

    @property
    def controller(self):
        return self.core.active.name

    def reading(self):
        return self.core._arm_state()

    def command(self, mode, **arrays):
        """A JointCommand of all seven joints (the core refuses it while a halt holds the arm)."""
        self.core.apply(cmds.JointCommand(mode=mode, names=tuple(ARM_JOINTS),
                                          **{k: tuple(v) for k, v in arrays.items()}))

    def set_speed_ratio(self, ratio):
        self.core.apply(cmds.SetSpeedRatio(ratio=ratio))

    def set_timeout(self, seconds):
        self.core.apply(cmds.SetTimeout(seconds=seconds))

    def suppress(self, what):
        self.core.apply(cmds.Suppress(what=what))

    def step(self):
        self.core.tick()

    def run(self, seconds, each=None, every=0.001):
        """Tick for `seconds`; each(arm) every `every` s (a client's command rate)."""
        n = int(round(every / DT))
        for i in range(int(round(seconds / DT))):
            if each is not None and i % n == 0:
                each(self)
            self.step()

    def field(self, name):
        out = {}
        self.monitor.report(lambda key, value: out.__setitem__(key, value))
        return out[name]

    def joint_torque(self, link, wrench):
        """Joint torques a wrench (base-aligned, about the link origin) makes at the
        current pose: what the plant applies."""
        m, d = self.boards.pin, self.boards.data
        qf = pin.neutral(m)
        qf[self.boards._idx] = self.boards.q
        jac = pin.computeFrameJacobian(m, d, qf, m.getFrameId(link, pin.FrameType.BODY),
                                       pin.LOCAL_WORLD_ALIGNED)
        return (jac.T @ np.asarray(wrench, float))[self.boards._idx][:7]


def no_halt(arm, what):
    lines = ['%.3f %s' % (t, h.message) for t, h in arm.halts]
    assert not arm.halts, '%s halted the arm: %s (max level %.3f, max |r| %s)' % (
        what, lines, arm.max_level, np.round(arm.max_r, 2))


def position_moves(arm, targets, seconds):
    for target in targets:
        arm.run(seconds, lambda a: a.command(POSITION, position=list(target)), 0.01)


# --- no detection in normal use ---------------------------------------------------------
def test_fast_position_moves_across_the_joint_ranges(model):
    # High-speed scaling off: the second move sweeps the wrist through the arm base's
    # avoidance shapes (up to 0.19 m of overlap), where it would be slowed to 0.2 m/s
    # (seed 003); this test is about full-speed moves.
    arm = Arm(model, stages={'high_speed_scaling': {'enabled': False}})
    arm.set_speed_ratio(1.0)
    # (poses clear of the avoidance shapes' overlaps: avoidance would hold the arm short)
    targets = [np.array([1.5, -0.6, 2.0, 0.5, 2.0, -1.5, 3.0]),
               np.array([-1.5, 0.5, -2.0, 2.0, -2.0, 1.5, -3.0]),
               np.array(NEUTRAL)]
    peak = np.zeros(7)

    def each(a, target):
        a.command(POSITION, position=list(target))
        np.maximum(peak, np.abs(a.qd), out=peak)
    for target in targets:
        arm.run(3.5, lambda a: each(a, target), 0.01)
        assert np.abs(arm.q - target).max() < 0.01
    vmax = model.limit_arrays(ARM_JOINTS)['velocity']
    assert (peak > 0.9 * vmax).sum() >= 5, np.round(peak / vmax, 2)     # full speed
    no_halt(arm, 'position moves at speed ratio 1.0')
    # Free motion: the estimate stays near 0 (the transmitted torques explain the motion,
    # friction included: < 0.04 N m).
    assert arm.max_r.max() < 0.1, np.round(arm.max_r, 3)


def test_moves_onto_the_joint_limits(model):
    """Position targets at the limits: the controller overshoots onto the plant's hard
    stops (inelastic contacts); the arm's own stops are no collision."""
    lim = model.limit_arrays(ARM_JOINTS)
    arm = Arm(model)
    arm.set_speed_ratio(1.0)
    at_limits = np.array([lim['lower'][0], lim['upper'][1], 0.0, lim['lower'][3],
                          lim['upper'][4], lim['lower'][5], lim['upper'][6]])
    position_moves(arm, [at_limits, np.array(NEUTRAL)], 4.0)
    assert np.abs(arm.q - np.array(NEUTRAL)).max() < 0.01
    no_halt(arm, 'moves onto the joint limits')


def test_torque_springs(model):
    """joint_torque_springs: τ = −k(q − q0) − d q̇ with the SDK's default stiffness and
    damping at 1 kHz, after the arm was pushed away from q0 (it springs back)."""
    k = np.array([10.0, 15.0, 5.0, 5.0, 3.0, 2.0, 1.5])
    d = 0.1
    q0 = np.array(NEUTRAL)
    arm = Arm(model)
    arm.set_speed_ratio(1.0)
    away = q0 + np.array([0.4, -0.3, 0.4, -0.4, 0.5, -0.5, 0.8])
    position_moves(arm, [away], 2.0)
    arm.set_timeout(0.02)
    arm.run(5.0, lambda a: a.command(TORQUE, effort=list(-k * (a.q - q0) - d * a.qd)))
    assert np.abs(arm.q - q0).max() < 0.1          # it sprang back (to within friction)
    no_halt(arm, 'torque springs')


def test_velocity_wobbler(model):
    """joint_velocity_wobbler's sinusoids at 500 Hz (amplitudes 0.1-0.2 rad/s, periods
    0.5-1 s per joint), then the same with 6 × the amplitude."""
    rng = np.random.default_rng(7)
    arm = Arm(model)
    for gain, seconds in ((1.0, 4.0), (6.0, 3.0)):
        amp = gain * rng.uniform(0.1, 0.2, 7)
        freq = 1.0 / rng.uniform(0.5, 1.0, 7)
        t0 = arm.t
        arm.run(seconds, lambda a: a.command(
            VELOCITY, velocity=list(amp * np.sin(2.0 * math.pi * freq * (a.t - t0)))), 0.002)
    assert arm.max_r.max() < 1.5
    no_halt(arm, 'velocity wobbler')


def test_fast_quintic_in_trajectory_mode(model):
    q0 = np.array(NEUTRAL)
    q1 = np.array([1.2, -0.2, 1.5, 0.8, 1.5, -1.0, 0.5])
    span = 1.3                          # s: peak velocities near the joints' limits

    def sample(t):
        s = min(max(t / span, 0.0), 1.0)
        return (q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5),
                (q1 - q0) * (30 * s**2 - 60 * s**3 + 30 * s**4) / span,
                (q1 - q0) * (60 * s - 180 * s**2 + 120 * s**3) / span**2)
    arm = Arm(model)
    peak = np.zeros(7)

    def each(a):
        p, v, acc = sample(a.t - 0.1)
        a.command(TRAJECTORY, position=list(p), velocity=list(v), acceleration=list(acc))
        np.maximum(peak, np.abs(a.qd), out=peak)
    arm.run(2.0, each)
    assert np.abs(arm.q - q1).max() < 0.01
    vmax = model.limit_arrays(ARM_JOINTS)['velocity']
    assert (peak > 0.8 * vmax).sum() >= 4, np.round(peak / vmax, 2)
    no_halt(arm, 'a fast quintic in trajectory mode')


def test_gravity_compensation_suppressed_briefly(model):
    """suppress_gravity_compensation for a while in position hold (the stiff hold gives a
    little), then in torque mode with zero torques: the arm falls for 0.25 s until the
    client holds it where it is."""
    arm = Arm(model)
    arm.run(0.3)
    q_before = arm.q.copy()
    arm.run(0.6, lambda a: a.suppress('gravity'), 0.1)     # topic at 10 Hz
    assert np.abs(arm.q - q_before).max() > 0.002
    arm.run(0.5)
    q_before = arm.q.copy()
    arm.set_timeout(0.05)
    arm.run(0.25, lambda a: (a.suppress('gravity'),
                             a.command(TORQUE, effort=[0.0] * 7)), 0.01)
    sag = np.abs(arm.q - q_before).max()
    assert sag > 0.1, 'the arm did not sag (%.4f rad)' % sag
    hold = list(arm.q)
    arm.run(1.5, lambda a: a.command(POSITION, position=hold), 0.01)
    no_halt(arm, 'suppressed gravity compensation')


# --- impact -----------------------------------------------------------------------------
@pytest.mark.parametrize('link, force', [('right_l4', 30.0), ('right_hand', 15.0)])
def test_sudden_push_while_moving_is_an_impact(model, link, force):
    arm = Arm(model)
    arm.set_speed_ratio(0.5)
    target = np.array([1.2, -0.6, 1.0, 1.5, 1.0, 0.0, 3.0])
    arm.run(1.0, lambda a: a.command(POSITION, position=list(target)), 0.01)
    assert np.abs(arm.qd).max() > 0.3                                  # moving
    wrench = np.array([0.0, 0.6 * force, 0.8 * force, 0.0, 0.0, 0.0])
    expected = arm.joint_torque(link, wrench) / arm.monitor.impact_scale
    t_hit = arm.t
    arm.boards.apply_wrench(link, wrench, 0.02)             # a hit: 20 ms
    arm.run(0.6, lambda a: a.command(POSITION, position=list(target)), 0.01)
    assert arm.halts, 'no detection (max level %.3f)' % arm.max_level
    t, halt = arm.halts[0]
    assert halt.kind == 'impact' and not halt.compliant and halt.hold == COLLISION_HOLD
    assert t - t_hit <= 0.010, 'impact detected %.1f ms after the push' % (1e3 * (t - t_hit))
    m = IMPACT_LINE.match(halt.message.split('\n')[0])
    assert m, halt.message
    level, joint, value = float(m.group(1)), m.group(2), float(m.group(3))
    assert level > 0.75 and 0.0 < value <= level + 1e-3
    # The joint the push loads most, relative to its scale.
    assert joint == ARM_JOINTS[int(np.argmax(np.abs(expected)))], (joint, np.round(expected, 2))
    assert arm.field('detected_at') == pytest.approx(t)
    # One halt for the event.
    assert [h.kind for _, h in arm.halts] == ['impact']
    assert arm.t >= t + COLLISION_HOLD
    assert arm.field('impact') == 0.0


def test_impact_holds_the_arm_and_reports_while_held(model):
    """The halt applied as the core does: the arm stops, refuses commands and reports
    `impact` for the hold, then moves again."""
    arm = Arm(model)
    arm.set_speed_ratio(0.5)
    target = np.array([1.2, -0.6, 1.0, 1.5, 1.0, 0.0, 3.0])
    arm.run(0.8, lambda a: a.command(POSITION, position=list(target)), 0.01)
    arm.boards.apply_wrench('right_hand', [0.0, 30.0, 0.0, 0.0, 0.0, 0.0], 0.05)
    arm.run(0.01)
    assert arm.halts and arm.halts[0][1].kind == 'impact'
    t = arm.halts[0][0]
    arm.run(0.3, lambda a: a.command(POSITION, position=list(target)), 0.01)
    assert arm.field('impact') == 1.0
    assert np.abs(arm.qd).max() < 0.02                 # stopped, commands refused
    arm.run(t + COLLISION_HOLD + 0.01 - arm.t)
    assert arm.field('impact') == 0.0
    arm.run(0.3, lambda a: a.command(POSITION, position=list(target)), 0.01)
    assert np.abs(arm.qd).max() > 0.1                  # accepts commands again
    assert len(arm.halts) == 1


# --- squish -----------------------------------------------------------------------------
def test_ramped_push_is_a_squish_while_it_lasts(model):
    """A push on the forearm (right_l3, along base x) ramped over 1.5 s: right_j1, the
    joint it loads most against its threshold, squishes; the halt yields (compliant) and
    is reported every tick while pushed; it clears once the push ends."""
    arm = Arm(model)
    t0, ramp, peak, t_release = 0.3, 1.5, 80.0, 2.6

    def push(a):
        if t0 <= a.t < t_release:
            a.boards.apply_wrench('right_l3', [peak * min(1.0, (a.t - t0) / ramp), 0, 0, 0, 0, 0], DT)
    estimate_err = []

    def check(a):
        push(a)
        if a.t == round(t0 + ramp, 9):                 # steady push: the estimate matches
            true = a.joint_torque('right_l3', [peak, 0, 0, 0, 0, 0])
            estimate_err.append(np.abs(a.monitor.r - true).max() / np.abs(true).max())
    arm.run(t_release - 0.3, check)
    assert arm.halts, 'no squish (max |r| %s)' % np.round(arm.max_r, 2)
    t, halt = arm.halts[0]
    m = SQUISH_LINE.match(halt.message)
    assert halt.kind == 'squish' and halt.compliant and m, halt.message
    loads = arm.joint_torque('right_l3', [1.0, 0, 0, 0, 0, 0]) / arm.monitor.squish_threshold
    assert m.group(1) == ARM_JOINTS[int(np.argmax(np.abs(loads)))] == 'right_j1'
    assert m.group(3) == '20.000' and float(m.group(2)) > 20.0
    assert estimate_err and estimate_err[0] < 0.03
    q_before = arm.q.copy()
    arm.run(t_release - arm.t, push)
    # A halt every tick since, the same event (one log line), the arm yielding.
    ticks = np.array(arm.halt_ticks)
    assert len(ticks) == int(round((t_release - t) / DT)), (len(ticks), t, t_release)
    assert [h.kind for _, h in arm.halts] == ['squish']
    assert arm.field('squish') == 1.0
    assert abs(arm.q[1] - q_before[1]) > 0.01                     # it gave way
    # Released: the squish clears at once, its hold 0.5 s later; no impact from letting go.
    arm.run(0.05)
    assert arm.halt_ticks[-1] < t_release + 0.03
    arm.run(COLLISION_HOLD)
    assert arm.field('squish') == 0.0
    assert [h.kind for _, h in arm.halts] == ['squish']
    assert np.abs(arm.field('external_torque')).max() < 0.5


# --- hand over-wrench -------------------------------------------------------------------
def test_large_force_at_the_hand_with_contact_safety_suppressed(model):
    arm = Arm(model)
    arm.run(0.4, lambda a: a.suppress('contact_safety'), 0.1)
    wrench = [0.0, 0.0, -100.0, 0.0, 0.0, 0.0]      # the arm withstands it
    t_on = arm.t
    arm.boards.apply_wrench('right_hand', wrench, 1.2)

    def each(a):
        a.suppress('contact_safety')
    arm.run(1.2, each, 0.1)
    kinds = [h.kind for _, h in arm.halts]
    assert kinds and set(kinds) == {'hand_overwrench'}, [h.message for _, h in arm.halts]
    t, halt = arm.halts[0]
    assert not halt.compliant and t - t_on < 0.02
    m = OVERWRENCH_LINE.match(halt.message)
    assert m and m.group(1) == 'force' and m.group(3) == '80.000', halt.message
    # Held as long as the hand stays overloaded: one halt per hold.
    assert len(kinds) == 3
    assert np.allclose(np.diff([t for t, _ in arm.halts]), COLLISION_HOLD, atol=0.0015)
    assert np.abs(arm.field('hand_wrench') - wrench).max() < 0.05 * 100.0


# --- suppressions and guidance ---------------------------------------------------------
def test_suppressed_contact_safety_and_hand_overwrench_safety(model):
    arm = Arm(model)

    def suppress_both(a):
        a.suppress('contact_safety')
        a.suppress('hand_overwrench_safety')
    # Holding: 100 N down on the hand, far above every threshold.
    arm.run(0.3, suppress_both, 0.1)
    arm.boards.apply_wrench('right_hand', [0.0, 0.0, -100.0, 0.0, 0.0, 0.0], 0.5)
    arm.run(0.4, suppress_both, 0.1)
    assert np.linalg.norm(arm.field('hand_wrench')[:3]) > 90.0
    arm.run(0.2, suppress_both, 0.1)
    assert arm.max_r[1] > 30.0                                       # felt
    # Moving: a hit on the hand.
    arm.set_speed_ratio(0.5)
    target = np.array([1.2, -0.6, 1.0, 1.5, 1.0, 0.0, 3.0])
    arm.run(0.6, lambda a: (suppress_both(a), a.command(POSITION, position=list(target))), 0.1)
    arm.boards.apply_wrench('right_hand', [0.0, 30.0, 0.0, 0.0, 0.0, 0.0], 0.03)
    arm.run(0.4, lambda a: (suppress_both(a), a.command(POSITION, position=list(target))), 0.1)
    assert arm.max_level > 1.0                                       # felt
    no_halt(arm, 'with contact and hand over-wrench safety suppressed')
    # A push that outlasts the suppression: a squish once the topic stops arriving.
    arm.boards.apply_wrench('right_hand', [0.0, 0.0, -40.0, 0.0, 0.0, 0.0], 1.5)
    arm.run(0.5, lambda a: a.suppress('contact_safety'), 0.1)
    lapse = arm.t - 0.1 + SUPPRESS_WINDOW         # the last message was 0.1 s ago
    arm.run(lapse - arm.t - 0.002)
    assert not arm.halts                                             # still suppressed
    arm.run(0.01)
    assert [h.kind for _, h in arm.halts] == ['squish']
    assert arm.halts[0][0] == pytest.approx(lapse)


@pytest.mark.parametrize('settle', [None, 0.001])
def test_guided_arm_is_no_collision_until_it_settles(model, settle):
    """While a person guides the arm in zero-G (the cuff grasped) nothing is detected;
    letting go as the core hands back to hold is no impact — it would be without the
    settle time (settle 1 ms) —; after the settle time a hit is."""
    arm = Arm(model, options={} if settle is None else {'settle': settle})
    arm.core.apply(cmds.CuffInput(source='cuff', pressed=True))
    grip = [16.0, 8.0, 0.0, 0.0, 0.0, 0.0]
    q0 = arm.q.copy()
    arm.run(0.3, lambda a: a.boards.apply_wrench('right_hand', grip, 0.01), 0.01)
    assert arm.controller == 'zero_g'
    assert np.abs(arm.q - q0).max() > 0.2                       # the person moved it
    true = arm.joint_torque('right_hand', grip)
    assert np.abs(arm.monitor.r - true).max() < 0.1 * np.abs(true).max()    # felt
    assert not arm.halts
    # Let go of the cuff and of the arm at once: hold where it is.
    arm.core.apply(cmds.CuffInput(source='cuff', pressed=False))
    arm.run(0.4)
    assert arm.controller == 'hold'
    if settle is not None:
        assert [h.kind for _, h in arm.halts] == ['impact']
        return
    no_halt(arm, 'letting go of the guided arm')
    arm.boards.apply_wrench('right_hand', [0.0, 15.0, 0.0, 0.0, 0.0, 0.0], 0.02)
    arm.run(0.1)
    assert [h.kind for _, h in arm.halts] == ['impact']


def test_load_present_at_reset_is_no_impact(model):
    """reset() restarts the observer from the current momentum: a load already on the arm
    appears as a step of the estimate, which is neither an impact nor missed."""
    arm = Arm(model)
    load = [0.0, 0.0, -15.0, 0.0, 0.0, 0.0]           # 15 N resting on the hand
    arm.boards.apply_wrench('right_hand', load, 2.0)
    arm.run(0.5)
    arm.monitor.reset(arm.reading())                   # e.g. brakes released
    assert np.abs(arm.monitor.r).max() == 0.0
    arm.run(1.0)
    no_halt(arm, 'a load present at reset')
    true = arm.joint_torque('right_hand', load)
    assert np.abs(arm.monitor.r - true).max() < 0.05 * np.abs(true).max()


# --- options and report -------------------------------------------------------------------
def test_options(model):
    def build(**opts):
        return CollisionDetection(PluginContext(model, None, {'collision_detection': opts}))
    mon = build()
    assert mon.squish_threshold[1] == 20.0 and mon.squish_threshold[6] < mon.squish_threshold[3]
    assert mon.impact_threshold == 0.75 and mon.hold == COLLISION_HOLD
    assert build(squish_threshold={'right_j5': 3.0}).squish_threshold[5] == 3.0
    assert list(build(impact_scale=2.0).impact_scale) == [2.0] * 7
    for opts, words in [({'impact_threshold': -1}, ('impact_threshold', '-1')),
                        ({'squish_threshold': [1.0] * 6}, ('squish_threshold', '7', '6')),
                        ({'squish_threshold': {'right_j9': 1.0}}, ('right_j9',)),
                        ({'overwrench_force': 'big'}, ('overwrench_force', 'big')),
                        ({'impact_scale': [1, 1, 1, float('nan'), 1, 1, 1]}, ('right_j3', 'nan'))]:
        with pytest.raises(ValueError) as err:
            build(**opts)
        assert all(w in str(err.value) for w in words), str(err.value)
    arm = Arm(model)
    arm.run(0.01)
    got = {}
    arm.monitor.report(lambda key, value: got.__setitem__(key, np.atleast_1d(value)))
    assert {k: len(v) for k, v in got.items()} == dict(CollisionDetection.state_fields)
    assert math.isnan(got['detected_at'][0])


def test_gain_memo_computes_each_key_once_and_stays_bounded():
    from intera_rt.control.momentum_observer import GAIN_MEMO, GainMemo
    asked = []
    memo = GainMemo(lambda h: asked.append(h) or 1.0 - math.exp(-h / 0.05))
    assert memo[0.001] == 1.0 - math.exp(-0.001 / 0.05) and memo[0.001] == memo[0.001]
    assert asked == [0.001]                     # computed once, then looked up
    for n in range(3 * GAIN_MEMO):
        memo[n * 1e-6]
    assert 0 < len(memo) <= GAIN_MEMO and len(asked) == 1 + 3 * GAIN_MEMO
    assert 0.001 not in memo                    # emptied on the way; asked again it is computed
    memo[0.001]
    assert asked[-1] == 0.001
