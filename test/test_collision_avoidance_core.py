"""Collision avoidance without ROS: which armnav shape pairs it watches, that the rest poses
are left alone, the hpp-fcl conventions it builds on, and what an arm on the embedded plant
does when a hold or torque mode drives two links' avoidance shapes into each other. Also
the distance-aware velocity scale (seed 002's directional_collision_scaling)."""
import math

import hppfcl
import numpy as np
import pytest

from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.control.base import ArmState, PluginContext, Suppressions
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.model import RobotModel
from intera_rt.model.avoidance import (AvoidanceModel, _separating_normal, default_armnav_xml,
                                       objects_from_mask, shape_links)
from intera_rt.robot import ARM_JOINTS, HEAD_NAMED_POSES, NEUTRAL, SHIPPING, SUPPRESS_WINDOW

SHIPPING_HEAD = HEAD_NAMED_POSES['shipping']
PERIOD = 0.001
OMEGA, ZETA = 40.0, 1.0                  # the position hold's computed-torque PD


def pose(base, **joints):
    """`base` with some joints changed: pose(NEUTRAL, j3=2.66)."""
    q = np.array(base, dtype=float)
    for name, value in joints.items():
        q[int(name[1:])] = value
    return q


# The hand folded into the shoulder from neutral (right_l1, right_l1_2 vs right_hand:
# 20.5 mm beyond their allowance); the elbow folded 0.06 rad beyond shipping (26 pairs).
ELBOW_INTO_SHOULDER = pose(NEUTRAL, j3=2.66)
BEYOND_SHIPPING = pose(SHIPPING, j3=2.85)


class Controller:
    role = None


class TrajectoryController:
    role = 'planned'


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def armnav_xml():
    return default_armnav_xml()


@pytest.fixture(scope='module')
def stage(model):
    return CollisionAvoidance(PluginContext(model, None))


@pytest.fixture(scope='module')
def avoid(stage):
    return stage.model


def arm_state(model, q, qd=None, q_head=0.0, now=0.0, suppressions=None):
    return ArmState(now=now, period=PERIOD, q=np.array(q, float),
                    qd=np.zeros(7) if qd is None else np.array(qd, float), effort=np.zeros(7),
                    q_head=float(q_head), qd_head=0.0, dynamics=model.arm_dynamics,
                    suppressions=suppressions or Suppressions())


def run_arm(model, stage, start, target, q_head=0.0, seconds=1.5, ramp=0.5, torque_mode=False,
            suppress=False):
    """The arm on the embedded plant from rest at `start`: a computed-torque hold whose
    reference moves smoothly to `target` over `ramp` s (torque mode: gravity compensation
    and no user torque), plus the avoidance stage; suppress_collision_avoidance arriving
    at 10 Hz when `suppress`. Returns per tick the smallest clearance, the stage's torque
    and the fastest joint's speed (rad/s), and the final joint angles."""
    boards = EmbeddedBoards(model)
    boards.set_brakes(False)
    boards.reset_pose(np.r_[start, q_head])
    dyn = model.arm_dynamics
    armature = model.limit_arrays(ARM_JOINTS)['armature']
    sup = Suppressions()
    start, target = np.array(start, float), np.array(target, float)
    clearance, torques, speed = [], [], []
    for i in range(int(round(seconds / PERIOD))):
        now = i * PERIOD
        if suppress and i % 100 == 0:
            sup.suppress('collision_avoidance', now)
        r = boards.read()
        q, qd = r.position[:7], r.velocity[:7]
        state = ArmState(now=now, period=PERIOD, q=q, qd=qd, effort=r.effort[:7], q_head=r.position[7],
                         qd_head=r.velocity[7], dynamics=dyn, suppressions=sup)
        if torque_mode:
            tau = state.gravity().copy()
        else:
            s = min(1.0, now / ramp)
            s = s * s * (3.0 - 2.0 * s)
            u = OMEGA ** 2 * (start + s * (target - start) - q) - 2.0 * ZETA * OMEGA * qd
            tau = dyn.inverse_dynamics(q, qd, u) + armature * u
        extra = stage.update(state, Controller, None)
        torques.append(np.zeros(7) if extra is None else extra.copy())
        if extra is not None:
            tau = tau + extra
        head = 20.0 * (q_head - r.position[7]) - 2.0 * r.velocity[7]
        boards.write(np.r_[tau, head])
        boards.advance(PERIOD)
        clearance.append(stage.model.clearances(q, r.position[7]).min())
        speed.append(np.abs(qd).max())
    return np.array(clearance), np.array(torques), np.array(speed), boards.read().position[:7]


def overlap(avoid, q, q_head=0.0):
    """How far (m) the deepest watched pair overlaps beyond its allowance (0: none)."""
    return max(0.0, -float(avoid.clearances(q, q_head).min()))


# --- which pairs ------------------------------------------------------------------------
def test_pairs_leave_out_pedestal_boxes_adjacent_links_and_record_why(avoid, armnav_xml):
    why = avoid.exclusion
    for box in ('pedestal', 'controller_box', 'pedestal_feet'):
        assert all(box not in pair for pair in avoid.pairs)
        assert why(box, 'right_hand') == why('right_l4', box) == 'unused'
    assert why('pedestal', 'controller_box') == 'rigid'
    assert why('right_l1', 'right_l1_2') == 'rigid'
    for a, b in [('right_l5', 'right_l6'), ('right_l0', 'head'), ('right_arm_base_link', 'right_l0'),
                 ('right_l3', 'right_l4')]:
        assert why(a, b) == why(b, a) == 'adjacent'
        assert (a, b) not in avoid.pairs and (b, a) not in avoid.pairs
    assert why('right_l1_2', 'right_l2') == 'always'
    assert why('right_l0', 'screen') == 'unactuated'       # only head_pan between them
    assert why('right_arm_base_link', 'right_l2') == 'often'
    assert set(avoid.excluded.values()) == {'rigid', 'unused', 'adjacent', 'always', 'unactuated',
                                            'often'}
    # The wrist folds into the upper arm at shipping: kept, with an allowance saying so.
    allowance, reason = avoid.allowances[('right_l1_2', 'right_l5')]
    assert why('right_l1_2', 'right_l5') == 'checked' and 0.05 < allowance < 0.15
    assert 'shipping' in reason
    assert why('right_arm_base_link', 'right_hand') == 'checked'
    assert ('right_arm_base_link', 'right_hand') not in avoid.allowances
    # Deterministic: the adapter can rebuild the same model, and name shapes from the URDF.
    again = AvoidanceModel(armnav_xml)
    assert again.pairs == avoid.pairs and again.excluded == avoid.excluded
    assert np.array_equal(again.allowance, avoid.allowance)
    assert shape_links(armnav_xml) == avoid.shape_links


def test_rest_poses_are_left_alone_but_folding_beyond_shipping_is_resisted(model, stage):
    rng = np.random.default_rng(7)
    lo, hi = stage.model.model.lowerPositionLimit, stage.model.model.upperPositionLimit
    head_lo, head_hi = lo[stage.model._head_idx], hi[stage.model._head_idx]
    for q, head in ((NEUTRAL, 0.0), (SHIPPING, SHIPPING_HEAD)):
        heads = [head] + list(rng.uniform(head_lo, head_hi, 5))     # the display may pan
        for h in heads:
            for _ in range(5):                  # resting near the pose: a hold's few mrad
                near = np.array(q) + rng.uniform(-0.003, 0.003, 7)
                assert stage.update(arm_state(model, near, q_head=h), Controller, None) is None
    report = {}
    stage.report(report.__setitem__)
    assert report['active'] == 0.0 and not np.count_nonzero(report['torque'])
    # Folding the elbow further than shipping pushes it back open (the push builds up over
    # a few ticks: its growth is rate-limited).
    for _ in range(10):
        tau = stage.update(arm_state(model, BEYOND_SHIPPING, q_head=SHIPPING_HEAD), Controller, None)
    assert tau is not None and tau[3] < -1.0


def test_no_torque_anywhere_without_overlap(model, stage):
    rng = np.random.default_rng(3)
    lo = np.array([model.limits[n].lower for n in ARM_JOINTS])
    hi = np.array([model.limits[n].upper for n in ARM_JOINTS])
    free = 0
    for _ in range(300):
        q = rng.uniform(lo, hi)
        if stage.model.clearances(q, 0.0).min() > 0.0:
            free += 1
            assert stage.update(arm_state(model, q, qd=rng.normal(0, 1, 7)), Controller, None) is None
    assert free > 50


# --- conventions ------------------------------------------------------------------------
@pytest.mark.parametrize('shape_a, shape_b', [
    (hppfcl.Sphere(0.1), hppfcl.Sphere(0.08)),
    (hppfcl.Sphere(0.1), hppfcl.Cylinder(0.08, 0.4)),
    (hppfcl.Cylinder(0.1, 0.4), hppfcl.Sphere(0.08)),
    (hppfcl.Cylinder(0.1, 0.4), hppfcl.Cylinder(0.08, 0.4))],
    ids=['sphere-sphere', 'sphere-cylinder', 'cylinder-sphere', 'cylinder-cylinder'])
def test_hppfcl_sign_conventions_and_our_separating_direction(shape_a, shape_b):
    """Side by side (cylinders upright, b moved sideways): hpp-fcl 2.4.4 gives the signed
    distance, negative when they overlap; where its witness points differ,
    p_b − p_a = distance · (the direction a → b); and the normal we derive from its answer
    points from a to b whether they overlap or not (its own `normal` does not always)."""
    for angle in (0.0, 2.0, -2.5):
        u = np.array([math.cos(angle), math.sin(angle), 0.0])
        for gap in (0.05, 0.01, -0.01, -0.05):
            centre_b = u * (0.18 + gap)
            result = hppfcl.DistanceResult()
            distance = hppfcl.distance(shape_a, hppfcl.Transform3f(), shape_b,
                                       hppfcl.Transform3f(np.eye(3), centre_b),
                                       hppfcl.DistanceRequest(), result)
            # (GJK/EPA, for cylinder pairs, stop within a few µm; along touching sides their
            # witness points may slide by up to 1 % of the depth)
            assert distance == pytest.approx(gap, abs=1e-5)
            assert result.min_distance == distance
            pa, pb = result.getNearestPoint1(), result.getNearestPoint2()
            if np.linalg.norm(pb - pa) > 1e-6:
                assert (pb - pa) @ u == pytest.approx(gap, abs=1e-5)
                assert np.linalg.norm(pb - pa - gap * u) < 0.01 * abs(gap)
            n = _separating_normal(result.min_distance, pa.tolist(), pb.tolist(),
                                   result.normal.tolist(), [0.0, 0.0, 0.0], centre_b.tolist())
            np.testing.assert_allclose(n, u, atol=1e-2)


def test_gradient_is_the_derivative_of_the_distance(armnav_xml):
    """For every kind of pair, separated and overlapping: the gradient a contact reports is
    the finite-difference derivative of its distance (so g·q̇ is the closing rate and
    pushing along g separates)."""
    wide = AvoidanceModel(armnav_xml, zone=0.3)
    lo, hi = wide.model.lowerPositionLimit[wide._arm_idx], wide.model.upperPositionLimit[wide._arm_idx]
    kinds = lambda k: tuple(sorted(type(wide.geom.geometryObjects[i].geometry).__name__
                                   for i in wide._pair_info[k][:2]))
    rng = np.random.default_rng(5)
    seen = set()
    errors = []
    for _ in range(25):
        q, head = rng.uniform(lo, hi), rng.uniform(-3.0, 0.8)
        for c in wide.contacts(q, head, near_zone=True):
            eps = 1e-4
            fd = np.array([(wide.clearances(q + eps * e, head)[c.pair]
                            - wide.clearances(q - eps * e, head)[c.pair]) / (2 * eps)
                           for e in np.eye(7)])
            assert c.distance == pytest.approx(c.clearance - wide.allowance[c.pair])
            seen.add((kinds(c.pair), c.distance < 0.0))
            errors.append(np.linalg.norm(fd - c.gradient) / max(np.linalg.norm(fd), 0.02))
            assert fd @ c.gradient > -1e-6
            assert np.linalg.norm(c.normal) == pytest.approx(1.0)
    assert seen >= {(k, pen) for k in [('Cylinder', 'Cylinder'), ('Cylinder', 'Sphere'),
                                       ('Sphere', 'Sphere')] for pen in (False, True)}
    assert np.percentile(errors, 95) < 0.02 and np.median(errors) < 0.002


# --- the arm on the plant ----------------------------------------------------------------
@pytest.mark.parametrize('which', ['_push', '_zone'])
def test_the_checks_certificates_flag_what_the_full_checks_flag(armnav_xml, which):
    """AvoidanceModel._flagged checks, near a pose its wider check ran at, only the pairs
    that one flagged (none: no check at all), and makes the plain check for a while when the
    arm outruns its certificates: along a fold into the shoulder and back, with a hold's
    jitter and jumps, it flags exactly the pairs the check over every pair flags."""
    import pinocchio as pin
    fresh = AvoidanceModel(armnav_xml)
    check = getattr(fresh, which)
    gd, hits, cert = check[0], check[1], check[4]
    rng = np.random.default_rng(11)
    path = [NEUTRAL + s * (ELBOW_INTO_SHOULDER - NEUTRAL) for s in np.linspace(0, 1, 400)]
    path += path[::-1] + [SHIPPING] * 200 + [BEYOND_SHIPPING] * 200
    certified = flagged = skipped = plain = 0
    for i, q in enumerate(path):
        q = q + rng.normal(0.0, 2e-6 if i % 50 else 2e-3, 7)
        head = 0.0 if i < 800 else SHIPPING_HEAD
        cfg = fresh._set_q(q, head)
        ref = cert.ref
        ours = [k for _, k in fresh._scan(cfg, check)]
        certified += ref is not None and cert.ref is ref
        skipped += ref is not None and cert.ref is ref and not cert.near
        plain += cert.plain > 0
        pin.computeCollisions(fresh.model, fresh.data, fresh.geom, gd, cfg, False)
        assert ours == [k for k, hit in enumerate(hits) if hit()]
        flagged += bool(ours)
    assert certified > 300 and flagged > 200 and plain > 50
    if which == '_push':
        assert skipped > 150                      # a held arm clear of pushing checks nothing


def test_hold_driven_into_an_overlap_is_pushed_back(model, stage, avoid):
    commanded = overlap(avoid, ELBOW_INTO_SHOULDER)
    assert 0.015 < commanded < 0.025
    clearance, torques, speed, q = run_arm(model, stage, NEUTRAL, ELBOW_INTO_SHOULDER)
    reached = overlap(avoid, q)
    assert reached < 0.4 * commanded, (reached, commanded)        # ≥ 60 % pushed back
    assert reached > 0.0                                             # a push, not a wall
    # Settled without ringing or chatter at 1 kHz, within the effort limits.
    tail = slice(-300, None)
    assert np.ptp(clearance[tail]) < 1e-5 and speed[tail].max() < 1e-3
    assert np.abs(np.diff(torques[tail], axis=0)).max() < 0.01
    limits = model.limit_arrays(ARM_JOINTS)['effort']
    assert np.all(np.abs(torques) <= limits + 1e-9)
    # Suppressed (messages at 10 Hz), the same hold goes all the way into the overlap.
    _, torques, _, q = run_arm(model, stage, NEUTRAL, ELBOW_INTO_SHOULDER, suppress=True)
    assert not np.count_nonzero(torques)
    assert overlap(avoid, q) > 0.95 * commanded


@pytest.mark.parametrize('start, head', [(BEYOND_SHIPPING, SHIPPING_HEAD),
                                         (ELBOW_INTO_SHOULDER, 0.0)],
                         ids=['beyond-shipping', 'elbow-into-shoulder'])
def test_torque_mode_separates_overlapping_links(model, stage, avoid, start, head):
    """Zero user torque, the arm released 2 cm deep in an overlap (as when a suppression
    ends): the links come apart within 0.1 s, gently (damping: without it the wrist leaves
    at 2.8 rad/s), and stay apart."""
    depth = overlap(avoid, start, head)
    assert depth > 0.02
    clearance, torques, speed, _ = run_arm(model, stage, start, start, head, seconds=0.5,
                                           torque_mode=True)
    apart = int(np.argmax(clearance >= 0.0))
    assert clearance[apart] >= 0.0 and apart * PERIOD < 0.1
    assert clearance[apart:].min() >= -1e-4
    assert not np.count_nonzero(torques[apart + 10:])
    assert speed.max() < 1.2
    # Without avoidance nothing moves them.
    clearance, _, _, _ = run_arm(model, stage, start, start, head, seconds=0.3,
                                 torque_mode=True, suppress=True)
    assert clearance[-1] == pytest.approx(-depth, abs=1e-3)


def test_off_in_trajectory_mode_and_while_suppressed_then_back(model, stage):
    sup = Suppressions()
    state = arm_state(model, ELBOW_INTO_SHOULDER, suppressions=sup)
    assert stage.update(state, TrajectoryController, None) is None
    assert stage.update(state, Controller, None) is not None
    sup.suppress('collision_avoidance', 0.0)
    assert stage.update(state, Controller, None) is None
    later = arm_state(model, ELBOW_INTO_SHOULDER, now=SUPPRESS_WINDOW + 0.01, suppressions=sup)
    assert stage.update(later, Controller, None) is not None


def test_state_names_the_overlapping_shapes(model, stage, armnav_xml):
    tau = stage.update(arm_state(model, ELBOW_INTO_SHOULDER), Controller, None)
    report = {}
    stage.report(report.__setitem__)
    assert report['active'] == 1.0
    np.testing.assert_array_equal(report['torque'], tau)
    assert report['depth'] == pytest.approx(overlap(stage.model, ELBOW_INTO_SHOULDER))
    names = objects_from_mask(report['objects'], shape_links(armnav_xml))
    assert names == stage.colliding_objects() == ['right_l1', 'right_l1_2', 'right_hand']
    assert [n for n, size in stage.state_fields] == ['active', 'torque', 'depth', 'objects']


# --- velocity scale ----------------------------------------------------------------------
def test_velocity_scale_slows_only_motion_that_closes_a_near_pair(avoid):
    rng = np.random.default_rng(11)
    far = pose(NEUTRAL, j1=-1.0, j3=1.0, j5=0.5, j6=0.0)
    assert avoid.clearances(far, 0.0).min() > avoid.zone
    for _ in range(20):
        assert avoid.velocity_scale(far, 0.0, rng.normal(0.0, 1.0, 7)) == 1.0
    # The hand 26 mm from the shoulder: folding the elbow further is slowed in proportion,
    # unfolding it is not.
    near = pose(NEUTRAL, j3=2.54)
    fold = np.eye(7)[3]
    nearest = min(c.clearance for c in avoid.contacts(near, 0.0, near_zone=True)
                  if c.gradient @ fold < 0)
    assert 0.02 < nearest < 0.03
    assert avoid.velocity_scale(near, 0.0, fold) == pytest.approx(nearest / avoid.zone)
    assert avoid.velocity_scale(near, 0.0, -fold) == 1.0
    assert avoid.velocity_scale(near, 0.0, np.zeros(7)) == 1.0


def test_scaled_reference_stops_at_the_shapes_and_backs_out_at_full_speed(avoid):
    """A reference folding the elbow at 1 rad/s, scaled each tick: it slows into the zone
    and comes to rest where the avoidance torques would begin, never beyond."""
    q = np.array(NEUTRAL)
    fold = np.eye(7)[3]
    scales = []
    for _ in range(3000):
        s = avoid.velocity_scale(q, 0.0, fold)
        scales.append(s)
        q = q + s * fold * PERIOD
    assert scales[0] == 1.0 and scales[-1] < 0.01
    assert avoid.clearances(q, 0.0).min() > -1e-6
    assert q[3] > 2.55                                      # it did get close
    assert avoid.velocity_scale(q, 0.0, -fold) == 1.0


def test_bad_input_is_refused(model, stage, avoid, armnav_xml):
    bad_q = [np.zeros(6), np.zeros(8), [0.0] * 6 + [float('nan')], 'right_j0', None,
             np.zeros((7, 1))]
    for q in bad_q:
        with pytest.raises(ValueError):
            avoid.velocity_scale(q, 0.0, np.zeros(7))
        with pytest.raises(ValueError):
            avoid.velocity_scale(NEUTRAL, 0.0, q)
        with pytest.raises(ValueError):
            avoid.contacts(q, 0.0)
        with pytest.raises(ValueError):
            avoid.clearances(q)
    for head in (float('nan'), float('inf'), 'left', None, [0.0, 1.0]):
        with pytest.raises(ValueError):
            avoid.velocity_scale(NEUTRAL, head, np.zeros(7))
    state = arm_state(model, NEUTRAL)
    with pytest.raises(ValueError):
        stage.velocity_scale(state, [1.0, float('inf'), 0, 0, 0, 0, 0])
    for key, value in [('stiffness', -1.0), ('damping', float('nan')), ('stiffness', 'stiff')]:
        with pytest.raises(ValueError):
            CollisionAvoidance(PluginContext(model, None, {'collision_avoidance': {
                key: value, 'armnav_urdf': armnav_xml}}))
    with pytest.raises(ValueError):
        AvoidanceModel(armnav_xml, padding=0.05, zone=0.05)
