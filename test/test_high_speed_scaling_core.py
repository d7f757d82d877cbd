"""High-speed scaling (seed 003) and the speed scaling's status and bypass (seed 002) without
ROS: the high-speed shapes, the limb's speed, and a realtime core on the embedded plant
folding the elbow into the shoulder fast and slowly, bypassed and re-armed."""
import math

import numpy as np
import pytest

from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
from intera_rt.model.high_speed import HighSpeedShapes, inflate_shapes
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

VELOCITY = 2
FOLD_FROM = 2.3            # rad of right_j3; the armnav shapes meet at 2.62 (hand vs shoulder)
MEET = 2.62


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def armnav_xml():
    return default_armnav_xml()


@pytest.fixture(scope='module')
def armnav(armnav_xml):
    return AvoidanceModel(armnav_xml)


@pytest.fixture(scope='module')
def shapes(armnav_xml):
    return HighSpeedShapes(armnav_xml)


def elbow(j3):
    q = np.array(NEUTRAL, dtype=float)
    q[3] = j3
    return q


def test_the_high_speed_shapes_are_the_armnav_shapes_grown_on_every_face(armnav_xml):
    grown = inflate_shapes(armnav_xml, 0.05)
    assert grown.count('<collision') == armnav_xml.count('<collision')
    # the first sphere, cylinder and box of each, compared
    import xml.etree.ElementTree as ET
    before, after = ET.fromstring(armnav_xml), ET.fromstring(grown)
    for tag, attr, grow in (('sphere', 'radius', 0.05), ('cylinder', 'radius', 0.05),
                            ('cylinder', 'length', 0.1)):
        a, b = before.find('.//collision//%s' % tag), after.find('.//collision//%s' % tag)
        if a is not None:
            assert float(b.get(attr)) == pytest.approx(float(a.get(attr)) + grow)
    a, b = before.find('.//collision//box'), after.find('.//collision//box')
    assert [float(v) for v in b.get('size').split()] == pytest.approx(
        [float(v) + 0.1 for v in a.get('size').split()])
    with pytest.raises(ValueError, match='margin'):
        inflate_shapes(armnav_xml, -0.01)


def test_the_high_speed_shapes_close_in_before_the_armnav_shapes_and_only_on_a_closing_heading(
        shapes, armnav):
    fold, unfold = np.eye(7)[3], -np.eye(7)[3]
    # free at neutral, a fraction left well before the armnav shapes meet
    assert shapes.velocity_scale(elbow(2.2), 0.0, fold) == 1.0
    at_meeting = shapes.velocity_scale(elbow(MEET), 0.0, fold)
    assert 0.0 < at_meeting < 0.5
    assert shapes.velocity_scale(elbow(2.52), 0.0, fold) < 1.0 == armnav.velocity_scale(
        elbow(2.45), 0.0, fold)
    assert shapes.velocity_scale(elbow(MEET), 0.0, unfold) == 1.0


def test_the_limb_speed_is_the_fastest_of_its_points(shapes, model):
    q = elbow(2.2)
    qd = np.eye(7)[3]
    _, _, jac = model.arm_dynamics.tip('right_hand', q)
    hand = float(np.linalg.norm(jac[:3] @ qd))
    assert shapes.limb_speed(q, 0.0, qd) == pytest.approx(hand, rel=1e-6)
    assert shapes.limb_speed(q, 0.0, np.zeros(7)) == 0.0


def fold(model, speed, seconds=0.45, bypass=False, options=None):
    """VELOCITY_MODE right_j3 at `speed` from FOLD_FROM toward the shoulder for `seconds`,
    then 0; returns per 10 ms (j3, j3 speed, armnav min clearance, the state view)."""
    core = RealtimeCore(model, q_arm=list(elbow(FOLD_FROM)), options=options)
    if bypass:
        ok, message = core.apply(cmds.BypassSpeedScaling(on=True))
        assert ok and 'bypassed' in message
    armnav = AvoidanceModel(default_armnav_xml())
    rows = []
    for i in range(int(round((seconds + 0.5) / 0.001))):
        if i % 10 == 0:
            v = speed if i * 0.001 < seconds else 0.0
            core.apply(cmds.JointCommand(mode=VELOCITY, names=('right_j3',), velocity=(v,)))
            r = core.boards.read()
            rows.append((r.position[3], r.velocity[3], float(min(armnav.clearances(r.position[:7]))),
                         StateView(core.state_vector().copy())))
        core.tick()
    return rows


def test_a_fast_fold_is_slowed_as_the_blocks_close_in_and_goes_less_deep(model):
    """1.5 rad/s (0.78 m/s at the hand) for 0.45 s: where the armnav shapes are about to
    meet, at most 60 % of the unscaled speed (bypassed: full), and the hand ends at least
    2 cm less deep in the shoulder's shape."""
    slowed, free = fold(model, 1.5), fold(model, 1.5, bypass=True)
    near = [v for q, v, _, _ in slowed if 2.56 < q < MEET]
    near_free = [v for q, v, _, _ in free if 2.56 < q < MEET]
    assert near and max(near) < 0.6 * 1.5, near
    assert near_free and min(near_free) > 0.95 * 1.5, near_free
    depth = min(c for _, _, c, _ in slowed)
    depth_free = min(c for _, _, c, _ in free)
    assert depth > depth_free + 0.02, (depth, depth_free)
    # its state: active with a scale below 1 and the speed it judged by; the status saw it
    views = [s for _, _, _, s in slowed]
    assert any(s.high_speed_scaling.active and s.high_speed_scaling.scale < 0.6
               and s.high_speed_scaling.speed > 0.7 for s in views)
    assert min(s.safety_status.speed_scale for s in views) < 0.6
    assert all(s.safety_status.speed_scale == 1.0 and not s.high_speed_scaling.active
               for _, _, _, s in free)
    # never slower than the threshold speed at the hand before the armnav shapes meet
    moving = [v for q, v, c, s in slowed if c > 0.0 and s.high_speed_scaling.active]
    assert min(moving) * 0.518 > 0.2 * 0.9, min(moving)


def test_a_slow_fold_is_not_slowed(model):
    """0.3 rad/s (0.16 m/s at the hand, under 0.2): full speed until the armnav shapes are
    3 mm from meeting, and high-speed scaling never acts."""
    rows = fold(model, 0.3, seconds=1.4)
    near = [v for q, v, c, _ in rows if 2.5 < q and c > 0.003]
    assert near and min(near) > 0.95 * 0.3, near
    assert not any(s.high_speed_scaling.active for _, _, _, s in rows)


def test_the_threshold_is_an_option(model):
    """threshold 1.0 m/s: the 0.78 m/s fold is no longer slowed."""
    rows = fold(model, 1.5, options={'high_speed_scaling': {'threshold': 1.0}})
    near = [v for q, v, _, _ in rows if 2.56 < q < MEET]
    assert near and min(near) > 0.95 * 1.5
    with pytest.raises(ValueError, match='high_speed_scaling threshold'):
        RealtimeCore(model, options={'high_speed_scaling': {'threshold': 0.0}})
    with pytest.raises(ValueError, match='high_speed_scaling margin'):
        RealtimeCore(model, options={'high_speed_scaling': {'margin': -0.1}})


def test_the_status_names_the_closest_pair_and_its_clearance(model, armnav):
    core = RealtimeCore(model, q_arm=list(elbow(2.58)))
    for _ in range(12):
        core.tick()
    st = StateView(core.state_vector()).safety_status
    clearances = armnav.clearances(core.boards.read().position[:7])
    k = int(np.argmin(clearances))
    assert st.min_clearance == pytest.approx(clearances[k], abs=2e-3)
    assert tuple(int(i) for i in st.pair) == tuple(armnav.candidates[k])
    assert st.speed_scale == 1.0 and not st.bypassed


def test_the_status_names_the_nearest_pair_at_every_state_looking_at_few_pairs_held(model, armnav):
    """Each state's status names the pair and clearance that every pair's distance at that
    tick's pose names, through a fast fold toward the shoulder, a hold there and a fast move
    out; held, it looks at one or two pairs a state, not at all of them, and at none once
    the arm rests to the bit where the last look was made."""
    core = RealtimeCore(model, q_arm=list(elbow(FOLD_FROM)))
    stage = next(s for s in core.additives if s.name == 'safety_status')
    looked = []
    distance = stage.model.nearest

    def counted(q, head, bounds):
        before = bounds.copy()
        found = distance(q, head, bounds)
        looked.append(int(np.count_nonzero(bounds != before)))
        return found
    stage.model.nearest = counted
    core.apply(cmds.SetSpeedRatio(ratio=1.0))
    plan = [('fold', elbow(2.55), 700), ('hold', elbow(2.55), 1000), ('out', elbow(1.5), 700)]
    held, sweeps = [], []
    for phase, target, ticks in plan:
        for i in range(ticks):
            if i % 10 == 0:
                core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS),
                                             position=tuple(target)))
            position = core.boards.read().position
            q, head = position[:7].copy(), float(position[7])
            core.tick()
            if i % 10:
                continue
            calls = len(looked)
            st = StateView(core.state_vector()).safety_status
            sweeps.append(len(looked) - calls)
            clearances = armnav.clearances(q, head)
            k = int(np.argmin(clearances))
            assert tuple(int(j) for j in st.pair) == tuple(armnav.candidates[k]), (phase, i)
            # (GJK's answers for one pair at one pose differ by ~1e-9 m from call to call)
            assert st.min_clearance == pytest.approx(clearances[k], abs=1e-6), (phase, i)
            if phase == 'hold' and i >= 200:
                held.append(looked[-1] if sweeps[-1] else 0)
    assert len(sweeps) == 240 and looked[0] == len(armnav.candidates)       # the first: all
    assert set(sweeps) == {0, 1}           # at most one look a state; none at the same pose
    assert sweeps.count(0) >= 10, 'the arm never rested to the bit: %s' % sweeps
    assert np.mean(held) <= 2, 'held, a state looked at %s pairs' % held


def test_the_bypass_re_arms_itself_after_its_timeout_or_when_turned_off(model):
    core = RealtimeCore(model, q_arm=list(NEUTRAL), options={'safety_status': {'bypass_timeout': 0.5}})
    ok, message = core.apply(cmds.BypassSpeedScaling(on=True))
    assert ok and '0.5 s' in message
    core.tick()
    st = StateView(core.state_vector()).safety_status
    assert st.bypassed and 0.45 < st.bypass_left <= 0.5
    for _ in range(500):
        core.tick()
    assert not StateView(core.state_vector()).safety_status.bypassed
    core.apply(cmds.BypassSpeedScaling(on=True))
    core.tick()
    assert core.apply(cmds.BypassSpeedScaling(on=False)) == (True, 'speed scaling re-armed')
    core.tick()
    assert not StateView(core.state_vector()).safety_status.bypassed
    for bad in (0.0, -1.0, 601.0, math.nan):
        with pytest.raises(ValueError, match='bypass_timeout'):
            RealtimeCore(model, options={'safety_status': {'bypass_timeout': bad}})


@pytest.mark.parametrize('hold', [0.5, 2.0])
def test_the_stop_after_an_impact_lasts_the_hold_option(model, hold):
    """Seed 000 stops the arm 0.5 s after an impact (the default, robot.COLLISION_HOLD),
    seed 003 2 s: collision_detection.hold chooses. A 15 N hit on the moving hand: the arm
    is held, refusing the client's position commands, for `hold` s, then moves on."""
    core = RealtimeCore(model, q_arm=list(NEUTRAL), options={'collision_detection': {'hold': hold}})
    core.apply(cmds.SetSpeedRatio(ratio=0.5))
    target = (1.2, -0.6, 1.0, 1.5, 1.0, 0.0, 3.0)

    def run(seconds):
        views = []
        for i in range(int(round(seconds / 0.001))):
            if i % 10 == 0:
                core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=target))
                views.append(StateView(core.state_vector().copy()))
            core.tick()
        return views
    run(1.0)
    core.boards.apply_wrench('right_hand', np.array([0.0, 9.0, 12.0, 0.0, 0.0, 0.0]), 0.02)
    views = run(hold + 0.5)
    held = [v for v in views if v.collision]
    assert held, 'no impact'
    t_stop, t_last = held[0].t, held[-1].t
    assert held[0].collision_detection.impact and held[0].halt_left == pytest.approx(hold, abs=0.011)
    assert t_last - t_stop == pytest.approx(hold, abs=0.011)
    after = [v for v in views if v.t > t_last + 0.2]
    assert after and np.abs(after[-1].qd[:7]).max() > 0.1, 'the arm did not move on'
