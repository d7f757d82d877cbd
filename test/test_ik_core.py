"""The IK/FK core and the self-collision model, without ROS: what the IK service will answer
for the poses, seeds and nullspace goals a user sends."""
import math

import numpy as np
import pytest

from contract import NEUTRAL
from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.collision import CollisionModel
from intera_rt.model.ik import (IK_FAILED, IK_IN_COLLISION, ORIENTATION_TOLERANCE,
                                POSITION_TOLERANCE, SEED_AUTO, SEED_CURRENT, SEED_NS_MAP,
                                SEED_USER, IKInputError, IKSolver, UnknownTipError)

# ik_service_client.py's target, its advanced example's seed and nullspace goal.
TARGET_POS = (0.450628752997, 0.161615832271, 0.217447307078)
TARGET_QUAT = (0.704020578925, 0.710172716916, 0.00244101361829, 0.00194372088834)
EXAMPLE_SEED = dict(zip(ARM_JOINTS, [0.7, 0.4, -1.7, 1.4, -1.1, -1.6, -0.4]))
EXAMPLE_GOAL = {'right_j1': 0.1, 'right_j2': -0.3, 'right_j3': 0.5}
# Hand pushed into the pedestal; arm folded back onto the shoulder.
HAND_IN_PEDESTAL = [0.0, 0.8, 0.0, 1.5, 0.0, 0.0, 0.0]
FOLDED = [0.0, -1.18, 0.0, 3.0, 0.0, 0.57, 0.0]


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def collision(model):
    return CollisionModel(model.urdf_xml)


@pytest.fixture(scope='module')
def solver(model, collision):
    return IKSolver(model, collision)


def pose_error(solver, tip, q, pos, quat):
    p, r = solver.fk(tip, q)
    dp = np.linalg.norm(p - np.asarray(pos))
    dot = min(1.0, abs(float(np.dot(r, np.asarray(quat) / np.linalg.norm(quat)))))
    return dp, 2.0 * math.acos(dot)


def assert_solves(solver, result, tip, pos, quat):
    assert result.ok, result
    assert len(result.q) == 7
    assert np.all(result.q >= solver.lo) and np.all(result.q <= solver.hi), result.q
    dp, dr = pose_error(solver, tip, result.q, pos, quat)
    assert dp <= POSITION_TOLERANCE and dr <= ORIENTATION_TOLERANCE, (dp, dr)


def goal_distance(q, goal=EXAMPLE_GOAL):
    return math.sqrt(sum((q[ARM_JOINTS.index(n)] - v) ** 2 for n, v in goal.items()))


def random_configs(solver, n, seed, collision_free=False):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q = rng.uniform(solver.lo, solver.hi)
        if not collision_free or not solver.in_collision(q):
            out.append(q)
    return out


# --- round trips -------------------------------------------------------------------------
def test_fk_ik_fk_round_trip_200_random_poses(solver):
    """SEED_AUTO from neutral, collision checks off: pure kinematics."""
    failures = []
    for q in random_configs(solver, 200, seed=11):
        pos, quat = solver.fk('right_hand', q)
        result = solver.solve('right_hand', pos, quat, NEUTRAL, check_collision=False)
        if not result.ok:
            failures.append(q)
            continue
        assert_solves(solver, result, 'right_hand', pos, quat)
        assert result.result_type in (SEED_CURRENT,)       # AUTO without user seed / NS goal
    assert len(failures) <= 2, failures


def test_round_trip_with_collision_checks_gives_collision_free_solutions(solver, collision):
    for q in random_configs(solver, 40, seed=12, collision_free=True):
        pos, quat = solver.fk('right_hand', q)
        result = solver.solve('right_hand', pos, quat, NEUTRAL)
        assert_solves(solver, result, 'right_hand', pos, quat)
        assert not collision.in_collision(result.q)


def test_pure_numpy_solver_round_trips(model):
    """The damped least-squares solver alone (no KDL LMA stage)."""
    solver = IKSolver(model, None, use_kdl_lma=False)
    ok = 0
    for q in random_configs(solver, 40, seed=13):
        pos, quat = solver.fk('right_hand', q)
        result = solver.solve('right_hand', pos, quat, NEUTRAL)
        if result.ok:
            ok += 1
            assert_solves(solver, result, 'right_hand', pos, quat)
    assert ok >= 39


def test_other_arm_tips_round_trip(solver):
    """right_hand_camera and right_wrist hang off right_l5 (j0..j5 only): j6 keeps the seed."""
    for tip in ('right_hand_camera', 'right_wrist', 'right_l6'):
        for q in random_configs(solver, 10, seed=14):
            pos, quat = solver.fk(tip, q)
            result = solver.solve(tip, pos, quat, NEUTRAL, check_collision=False)
            assert_solves(solver, result, tip, pos, quat)
            if solver.tip(tip).n == 6:
                assert result.q[6] == pytest.approx(NEUTRAL[6])


def test_fk_reference_values(solver):
    """Contract §9.1: FK of fk_service_client's joints and of neutral."""
    p, r = solver.fk('right_hand', [0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347, -0.496337])
    assert p == pytest.approx((0.4506, 0.1616, 0.2156), abs=2e-3)
    assert abs(np.dot(r, (0.704, 0.7102, 0.0024, 0.0019))) == pytest.approx(1.0, abs=1e-4)
    p, r = solver.fk('right_hand', NEUTRAL)
    assert p == pytest.approx((0.4496, 0.1603, 0.2158), abs=2e-3)


# --- seeds -------------------------------------------------------------------------------
def test_seed_user_reports_user(solver):
    r = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_USER, EXAMPLE_SEED)
    assert_solves(solver, r, 'right_hand', TARGET_POS, TARGET_QUAT)
    assert r.result_type == SEED_USER and r.seed == 'user'
    # The solution nearest the seed: the fk_service_client angles the target came from.
    assert r.q == pytest.approx([0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347,
                                 -0.496337], abs=0.05)


def test_seed_current_reports_current(solver):
    r = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_CURRENT)
    assert_solves(solver, r, 'right_hand', TARGET_POS, TARGET_QUAT)
    assert r.result_type == SEED_CURRENT and r.seed == 'current'
    assert r.q == pytest.approx(NEUTRAL, abs=0.05)      # the target is next to neutral


def test_seed_ns_map_reports_ns_map(solver):
    r = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_NS_MAP,
                     nullspace_goal=EXAMPLE_GOAL)
    assert_solves(solver, r, 'right_hand', TARGET_POS, TARGET_QUAT)
    assert r.result_type == SEED_NS_MAP and r.seed == 'ns_map'


def test_seed_auto_tries_user_seed_first_then_current(solver):
    r = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_AUTO, EXAMPLE_SEED)
    assert r.result_type == SEED_USER
    r = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_AUTO)
    assert r.result_type == SEED_CURRENT


def test_seed_auto_widens_the_search_around_the_current_angles(solver):
    """A target far from the current angles' branch: found by the search widened around
    the current angles (SEED_AUTO's seed), reported SEED_CURRENT."""
    found_restart = False
    for q in random_configs(solver, 60, seed=15, collision_free=True):
        pos, quat = solver.fk('right_hand', q)
        r = solver.solve('right_hand', pos, quat, NEUTRAL)
        assert r.ok
        if r.seed == 'current, perturbed':
            found_restart = True
            assert r.result_type == SEED_CURRENT and r.attempts > 1
    assert found_restart


def test_each_mode_reports_the_seed_it_searched_from(solver):
    """The reported seed mode is the seed the solution was found from: an explicit mode
    widens its search around its own seed (the user's seed here), and SEED_NS_MAP without a
    nullspace goal has no NS map — it searches from the current angles and says so."""
    widened = 0
    for q in random_configs(solver, 30, seed=19, collision_free=True):
        pos, quat = solver.fk('right_hand', q)
        r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_USER, dict(zip(ARM_JOINTS, NEUTRAL)))
        assert r.ok and r.result_type == SEED_USER and r.seed.startswith('user')
        widened += r.seed == 'user, perturbed'
        r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_NS_MAP)
        assert r.ok and r.result_type == SEED_CURRENT and r.seed.startswith('current')
    assert widened > 0


def test_user_seed_subset_in_any_order(solver):
    """A seed naming some joints, in any order: the rest come from the current angles."""
    q_target = NEUTRAL.copy()
    q_target[[0, 3, 5]] = [0.6, 1.6, 1.0]
    pos, quat = solver.fk('right_hand', q_target)
    seed = {'right_j5': 1.0, 'right_j0': 0.6, 'right_j3': 1.6}
    r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_USER, seed)
    assert r.result_type == SEED_USER
    assert r.q == pytest.approx(q_target, abs=1e-3)


def test_same_request_same_answer(solver):
    q = random_configs(solver, 1, seed=16)[0]
    pos, quat = solver.fk('right_hand', q)
    a = solver.solve('right_hand', pos, quat, NEUTRAL)
    b = solver.solve('right_hand', pos, quat, NEUTRAL)
    assert a.result_type == b.result_type and np.array_equal(a.q, b.q)
    assert IKSolver(solver.model, solver.collision).solve('right_hand', pos, quat, NEUTRAL).q \
        == pytest.approx(a.q, abs=0)


# --- nullspace ---------------------------------------------------------------------------
@pytest.mark.parametrize('mode,seed', [(SEED_USER, EXAMPLE_SEED), (SEED_CURRENT, None)])
def test_nullspace_goal_moves_solution_toward_goal(solver, mode, seed):
    plain = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, mode, seed)
    biased = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, mode, seed,
                          nullspace_goal=EXAMPLE_GOAL, nullspace_gain=0.4)
    assert_solves(solver, biased, 'right_hand', TARGET_POS, TARGET_QUAT)
    assert biased.result_type == mode
    assert goal_distance(biased.q) < goal_distance(plain.q) - 0.1, (goal_distance(plain.q), goal_distance(biased.q))


def test_nullspace_goal_on_one_joint_reached_when_free(solver):
    """Goal on right_j0 only, reachable in the self-motion: the solution moves to it."""
    q_ref = np.array([0.3, -0.6, 0.4, 1.4, -0.2, 0.8, 0.5])
    pos, quat = solver.fk('right_hand', q_ref)
    plain = solver.solve('right_hand', pos, quat, q_ref, SEED_CURRENT)
    goal = {'right_j2': q_ref[2] + 0.3}
    biased = solver.solve('right_hand', pos, quat, q_ref, SEED_CURRENT, nullspace_goal=goal)
    assert_solves(solver, biased, 'right_hand', pos, quat)
    assert abs(biased.q[2] - goal['right_j2']) < abs(plain.q[2] - goal['right_j2']) - 0.1


def test_zero_gain_is_no_nullspace_goal(solver):
    plain = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_USER, EXAMPLE_SEED)
    zero = solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_USER, EXAMPLE_SEED,
                        nullspace_goal=EXAMPLE_GOAL, nullspace_gain=0.0)
    assert np.array_equal(plain.q, zero.q)


# --- limits ------------------------------------------------------------------------------
def test_joint_limits_respected_even_from_out_of_range_seeds(solver):
    rng = np.random.default_rng(17)
    for q in random_configs(solver, 30, seed=18):
        pos, quat = solver.fk('right_hand', q)
        seed = dict(zip(ARM_JOINTS, rng.uniform(-2 * np.pi, 2 * np.pi, 7)))
        r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_USER, seed, check_collision=False)
        assert_solves(solver, r, 'right_hand', pos, quat)


def test_target_near_a_limit(solver):
    """right_j0 near its upper limit: the unconstrained nearest solution lies past it."""
    q = np.array([3.04, -0.5, 0.3, 1.2, 0.2, 0.4, 0.1])
    pos, quat = solver.fk('right_hand', q)
    seed = dict(zip(ARM_JOINTS, q + 0.08))
    r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_USER, seed, check_collision=False)
    assert_solves(solver, r, 'right_hand', pos, quat)


# --- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize('tip', ['no_such_link', 'head', 'base', '', 'screen'])
def test_unknown_tip_raises(solver, tip):
    with pytest.raises(UnknownTipError, match=repr(tip)):
        solver.solve(tip, TARGET_POS, TARGET_QUAT, NEUTRAL)


@pytest.mark.parametrize('pos,quat,field', [
    ((math.nan, 0.1, 0.2), TARGET_QUAT, 'position'),
    (TARGET_POS, (0.0, 0.0, 0.0, 0.0), 'orientation'),          # a default Pose()
    (TARGET_POS, (0.0, 1.0, 0.0, 0.5), 'orientation'),          # not unit
    (TARGET_POS, (math.inf, 0.0, 0.0, 1.0), 'orientation'),
])
def test_bad_pose_raises_naming_the_field(solver, pos, quat, field):
    with pytest.raises(IKInputError, match=field):
        solver.solve('right_hand', pos, quat, NEUTRAL)


def test_bad_seed_and_goal_raise(solver):
    with pytest.raises(IKInputError, match='seed_angles'):
        solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_USER, None)
    with pytest.raises(IKInputError, match='right_j2'):
        solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, SEED_USER, {'right_j2': math.nan})
    with pytest.raises(IKInputError, match='nullspace_gain'):
        solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, nullspace_goal=EXAMPLE_GOAL,
                     nullspace_gain=-1.0)
    with pytest.raises(IKInputError, match='seed_mode'):
        solver.solve('right_hand', TARGET_POS, TARGET_QUAT, NEUTRAL, seed_mode=7)


def test_unreachable_pose_fails(solver):
    r = solver.solve('right_hand', (2.0, 0.0, 0.5), (0, 0, 0, 1), NEUTRAL)
    assert r.result_type == IK_FAILED and r.q is None


# --- collision ---------------------------------------------------------------------------
def test_collision_flags(collision):
    assert not collision.in_collision(NEUTRAL)
    assert collision.min_distance(NEUTRAL) > 0
    assert collision.in_collision(HAND_IN_PEDESTAL)
    assert ('pedestal', 'right_hand') in collision.colliding_pairs(HAND_IN_PEDESTAL)
    assert collision.in_collision(FOLDED)
    assert ('right_l0', 'right_l4') in collision.colliding_pairs(FOLDED)
    assert collision.min_distance(FOLDED) < 0
    # The head sphere does not depend on head_pan; the shipping pose is allowed.
    assert not collision.in_collision([0.0, -1.57, 0.0, 2.79, 0.0, -2.79, 3.3161], -3.14)


def test_collision_pair_set_is_documented_and_deterministic(model, collision):
    why = collision.exclusion
    assert why('right_l1', 'right_l1_2') == 'rigid'
    assert why('controller_box', 'pedestal') == why('pedestal', 'controller_box') == 'rigid'
    assert why('right_l6', 'right_l5') == 'adjacent'
    assert why('right_l0', 'head') == 'adjacent'
    assert why('right_l1_2', 'right_l2') == 'always'
    assert why('head', 'right_l2') == 'default'
    for pair in [('pedestal', 'right_hand'), ('right_l0', 'right_l4'), ('head', 'right_hand'),
                 ('right_l2', 'right_l5')]:
        assert why(*pair) == 'checked'
    assert why('base', 'right_hand') is None              # base has no shape
    again = CollisionModel(model.urdf_xml)
    assert again.pairs == collision.pairs and again.excluded == collision.excluded


def test_ik_in_collision_when_every_solution_collides(solver):
    """The hand inside the pedestal: every solution puts it there."""
    pos, quat = solver.fk('right_hand', HAND_IN_PEDESTAL)
    r = solver.solve('right_hand', pos, quat, NEUTRAL)
    assert r.result_type == IK_IN_COLLISION
    assert r.q is not None and solver.in_collision(r.q)
    dp, dr = pose_error(solver, 'right_hand', r.q, pos, quat)
    assert dp <= POSITION_TOLERANCE and dr <= ORIENTATION_TOLERANCE
    # Without collision checks the same pose solves.
    assert solver.solve('right_hand', pos, quat, NEUTRAL, check_collision=False).ok


def test_ik_avoids_colliding_solution_when_another_exists(solver):
    pos, quat = solver.fk('right_hand', FOLDED)
    r = solver.solve('right_hand', pos, quat, NEUTRAL, SEED_USER, dict(zip(ARM_JOINTS, FOLDED)))
    assert_solves(solver, r, 'right_hand', pos, quat)
    assert not solver.in_collision(r.q)
