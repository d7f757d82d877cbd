"""The motion controller's planning core, without ROS: JOINT and CARTESIAN planners, their
limits and time-optimality against independent bounds, Cartesian straightness and
blending, every pre-motion error id from crafted goals, the path-following stop and the
tracker that runs a plan."""
import math

import numpy as np
import pytest
from intera_motion_msgs.msg import Trajectory, Waypoint

from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.collision import CollisionModel, motion_controller_model
from intera_rt.motion import analysis
from intera_rt.motion.errors import (CARTESIAN_INTERPOLATION_FAILED, ENDPOINT_DOES_NOT_EXIST,
                                     FAILED_TO_PARAMETERIZE, FINAL_POSE_NOT_WITHIN_TOLERANCE,
                                     INVALID_TRAJECTORY_MESSAGE, PLANNED_JOINT_ACCEL_LIMIT,
                                     PLANNED_MOTION_COLLISION, MotionError)
from intera_rt.motion.execution import Measurement, Tracker
from intera_rt.motion.geometry import matrix_to_quat, rotation_angle
from intera_rt.motion.joint_planner import JERK_TIME
from intera_rt.motion.planner import MotionPlanner
# The independent time-optimal references the bench uses too.
from intera_rt.bench.motion_optimal import scurve_time, trapezoid_time  # noqa: E402
from intera_rt import robot  # noqa: E402

NEUTRAL = np.array(robot.NEUTRAL)
BIAS = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
FAST = [7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0]
DOWN = (0.0, 1.0, 0.0, 0.0)          # go_to_cartesian_pose -o 0 1 0 0


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def planner(model):
    """As the motion controller plans: its self-collision model leaves the pedestal's
    collision boxes out (seed 000)."""
    return MotionPlanner(model, motion_controller_model(model.urdf_xml))


@pytest.fixture(scope='module')
def limits(model):
    return model.limit_arrays(list(ARM_JOINTS))


# --- goal builders (the way the SDK's MotionTrajectory fills the message) ---------------------
def joint_goal(targets, ratio=0.5, accel=FAST, names=ARM_JOINTS, **options):
    t = Trajectory(label='test', joint_names=list(names))
    t.trajectory_options.interpolation_type = 'JOINT'
    for q in targets:
        w = Waypoint(joint_positions=list(q), active_endpoint='right_hand')
        w.options.label = 'default'
        w.options.max_joint_speed_ratio = ratio
        w.options.max_joint_accel = list(accel)
        for k, v in options.items():
            setattr(w.options, k, v)
        t.waypoints.append(w)
    return t


def cartesian_goal(poses, bias=None, endpoint='right_hand', corner=0.0, speed=0.6, accel=0.6,
                   rot_speed=1.57, rot_accel=1.57, ratio=0.7):
    t = Trajectory(label='cart', joint_names=list(ARM_JOINTS))
    t.trajectory_options.interpolation_type = 'CARTESIAN'
    for p, q in poses:
        w = Waypoint(active_endpoint=endpoint)
        w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z = p
        o = w.pose.pose.orientation
        o.x, o.y, o.z, o.w = q
        if bias is not None:
            w.joint_positions = list(bias)
        w.options.max_joint_speed_ratio = ratio
        w.options.max_joint_accel = list(FAST)
        w.options.max_linear_speed, w.options.max_linear_accel = speed, accel
        w.options.max_rotational_speed, w.options.max_rotational_accel = rot_speed, rot_accel
        w.options.corner_distance = corner
        t.waypoints.append(w)
    return t


def plan_goal(planner, traj, q0=NEUTRAL, **kw):
    return planner.plan(planner.parse(traj), q0, **kw)


def hand_pose(planner, q, tip='right_hand'):
    ep = planner.endpoint(tip)
    p, r = ep.fk(np.asarray(q)[:ep.n])
    return p, matrix_to_quat(r)


def dense(plan, n=2000):
    ts = np.linspace(0.0, plan.duration, n)
    return (ts,) + plan.sample_many(ts)


def test_joint_single_move_is_time_optimal_straight_and_within_limits(planner, limits):
    target = np.array(BIAS)
    pm = plan_goal(planner, joint_goal([NEUTRAL, target]))
    plan = pm.plan
    vmax = 0.5 * limits['velocity']
    amax = np.array(FAST)
    bound = max(scurve_time(d, v, a, a / JERK_TIME)
                for d, v, a in zip(target - NEUTRAL, vmax, amax))
    assert plan.duration == pytest.approx(bound, rel=1e-3)
    jerk_free = max(trapezoid_time(d, v, a) for d, v, a in zip(target - NEUTRAL, vmax, amax))
    assert plan.duration <= jerk_free * 1.05
    ts, P, V, A = dense(plan)
    assert np.allclose(P[0], NEUTRAL) and np.allclose(P[-1], target, atol=1e-9)
    assert np.allclose(V[[0, -1]], 0) and np.allclose(A[[0, -1]], 0)
    assert np.all(np.abs(V) <= vmax * (1 + 1e-9))
    assert np.all(np.abs(A) <= amax * (1 + 1e-9))
    # A single waypoint moves on a straight line in joint space.
    u = (P - NEUTRAL) @ (target - NEUTRAL) / np.dot(target - NEUTRAL, target - NEUTRAL)
    assert np.abs(P - (NEUTRAL + np.outer(u, target - NEUTRAL))).max() < 1e-6
    assert list(plan.waypoint_times) == [0.0, pytest.approx(plan.duration)]


def test_joint_waypoints_are_passed_without_stopping_and_in_order(planner, limits):
    rng = np.random.default_rng(7)
    q, targets = NEUTRAL.copy(), []
    for _ in range(6):
        q = np.clip(q + rng.uniform(-0.5, 0.5, 7), limits['lower'] + 0.2, limits['upper'] - 0.2)
        targets.append(q)
    pm = plan_goal(planner, joint_goal(targets, ratio=0.6), check_collision=False)
    plan = pm.plan
    times = plan.waypoint_times
    assert np.all(np.diff(times) > 0)
    for t, target in zip(times, targets):
        p, v, _ = plan.sample(t)
        assert np.allclose(p, target, atol=1e-9)
    moving = [np.abs(plan.sample(t)[1]).max() for t in times[:-1]]
    assert min(moving) > 0.05, moving                # never comes to rest in between
    _, P, V, A = dense(plan, 4000)
    assert np.all(np.abs(V) <= 0.6 * limits['velocity'] * (1 + 1e-9))
    assert np.all(np.abs(A) <= np.array(FAST) * (1 + 1e-9))
    assert np.all(P >= limits['lower'] - 1e-9) and np.all(P <= limits['upper'] + 1e-9)


def test_joint_multi_waypoint_duration_close_to_toppra_on_the_same_path(planner, limits):
    """Independent bound: TOPP-RA's time-optimal (jerk-free) timing of the very same path."""
    import toppra
    rng = np.random.default_rng(3)
    q, targets = NEUTRAL.copy(), []
    for _ in range(5):
        q = np.clip(q + rng.uniform(-0.6, 0.6, 7), limits['lower'], limits['upper'])
        targets.append(q)
    plan = plan_goal(planner, joint_goal(targets, ratio=0.7), check_collision=False).plan
    _, P, _, _ = dense(plan, 3000)
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
    keep = np.concatenate([[True], np.diff(s) > 1e-9])
    path = toppra.SplineInterpolator(s[keep], P[keep])
    inst = toppra.algorithm.TOPPRA([toppra.constraint.JointVelocityConstraint(0.7 * limits['velocity']),
                                    toppra.constraint.JointAccelerationConstraint(np.array(FAST))],
                                   path, gridpoints=np.linspace(0, s[-1], 1500), solver_wrapper='seidel')
    optimal = inst.compute_trajectory(0, 0).duration
    assert optimal <= plan.duration <= optimal * 1.06


def test_joint_segment_options_apply_to_the_segment_moving_to_their_waypoint(planner, limits):
    a = NEUTRAL + [0.5, 0, 0, 0, 0, 0, 0]
    b = a + [0.5, 0, 0, 0, 0, 0, 0]
    traj = joint_goal([a, b], ratio=1.0)
    traj.waypoints[1].options.max_joint_speed_ratio = 0.2
    plan = plan_goal(planner, traj).plan
    t1 = plan.waypoint_times[0]
    _, _, V, _ = dense(plan)
    ts = np.linspace(0, plan.duration, 2000)
    assert np.abs(V[ts < t1 - 0.3, 0]).max() > 0.5 * limits['velocity'][0]
    assert np.abs(V[ts > t1 + 0.05, 0]).max() <= 0.2 * limits['velocity'][0] * (1 + 1e-9)


def test_joint_names_in_another_order_and_waypoint_at_current_angles(planner):
    order = list(reversed(ARM_JOINTS))
    target = np.array(BIAS)
    pm = plan_goal(planner, joint_goal([NEUTRAL[::-1], target[::-1]], names=order))
    assert np.allclose(pm.plan.end, target)
    assert pm.plan.waypoint_times[0] == 0.0


def test_goal_equal_to_current_position_is_an_empty_plan(planner):
    pm = plan_goal(planner, joint_goal([NEUTRAL]))
    assert pm.plan.duration == 0.0 and np.allclose(pm.plan.end, NEUTRAL)


def test_end_time_stretches_the_plan_when_feasible(planner):
    traj = joint_goal([NEUTRAL, BIAS])
    fastest = plan_goal(planner, traj).plan.duration
    traj.trajectory_options.end_time.secs = 100
    pm = planner.plan(planner.parse(traj), NEUTRAL, now=100.0 - 2 * fastest)
    assert pm.plan.duration == pytest.approx(2 * fastest)
    assert np.allclose(pm.plan.end, BIAS)
    pm = planner.plan(planner.parse(traj), NEUTRAL, now=100.0 - 0.5 * fastest)
    assert pm.plan.duration == pytest.approx(fastest) and pm.warnings


# --- CARTESIAN ----------------------------------------------------------------------------------
def endpoint_track(planner, plan, tip='right_hand', n=800):
    ts = np.linspace(0.0, plan.duration, n)
    P, _, _ = plan.sample_many(ts)
    ep = planner.endpoint(tip)
    frames = [ep.fk(q[:ep.n]) for q in P]
    return ts, np.array([f[0] for f in frames]), [matrix_to_quat(f[1]) for f in frames]


def test_cartesian_single_waypoint_from_current_pose_is_straight_and_time_optimal(planner, limits):
    p0, q0 = hand_pose(planner, NEUTRAL)
    goal = p0 + np.array([0.0, -0.3, 0.05])
    pm = plan_goal(planner, cartesian_goal([(goal, q0)]))
    plan = pm.plan
    ts, X, _ = endpoint_track(planner, plan)
    assert np.linalg.norm(X[-1] - goal) < 1e-4
    d = (goal - p0) / np.linalg.norm(goal - p0)
    off_line = np.linalg.norm(np.cross(X - p0, d), axis=1)
    assert off_line.max() < 1e-3
    assert analysis.cartesian_deviation(plan, planner.endpoint('right_hand')) < 1e-3
    speed = np.linalg.norm(np.gradient(X, ts, axis=0), axis=1)
    acc = np.linalg.norm(np.gradient(np.gradient(X, ts, axis=0), ts, axis=0), axis=1)
    assert speed.max() <= 0.6 * 1.01
    assert acc[3:-3].max() <= 0.6 * 1.05
    assert plan.duration == pytest.approx(trapezoid_time(np.linalg.norm(goal - p0), 0.6, 0.6), rel=0.02)
    _, _, V, A = dense(plan)
    assert np.all(np.abs(V) <= 0.7 * limits['velocity'] * 1.01)
    assert np.all(np.abs(A) <= limits['accel'] * 1.02)


def test_cartesian_orientation_is_slerped_with_rotational_limits(planner):
    p0, q0 = hand_pose(planner, NEUTRAL)
    goal_p = p0 + np.array([0.0, 0.0, 0.1])
    pm = plan_goal(planner, cartesian_goal([(goal_p, DOWN)], bias=BIAS))
    ts, X, Q = endpoint_track(planner, pm.plan)
    total = rotation_angle(q0, np.array(DOWN))
    assert rotation_angle(Q[-1], np.array(DOWN)) < 1e-3
    # Orientation progress follows position progress (one slerp along one line).
    u_pos = np.linalg.norm(X - p0, axis=1) / np.linalg.norm(goal_p - p0)
    u_rot = np.array([rotation_angle(q0, q) for q in Q]) / total
    assert np.abs(u_pos - u_rot).max() < 1e-2
    rate = np.array([rotation_angle(Q[i], Q[i + 1]) for i in range(len(Q) - 1)]) / np.diff(ts)
    assert rate.max() <= 1.57 * 1.02
    assert pm.plan.duration == pytest.approx(trapezoid_time(total, 1.57, 1.57), rel=0.03)


def test_cartesian_nullspace_bias_moves_the_posture_toward_the_waypoint_angles(planner):
    goal = (np.array([0.45, 0.16, 0.3]), DOWN)          # go_to_cartesian_pose -p … -o 0 1 0 0
    plain = plan_goal(planner, cartesian_goal([goal])).plan
    biased = plan_goal(planner, cartesian_goal([goal], bias=BIAS)).plan
    ep = planner.endpoint('right_hand')
    for plan in (plain, biased):
        p, _ = hand_pose(planner, plan.end)
        assert np.linalg.norm(p - goal[0]) < 1e-4
    assert ep.nullspace_residual(biased.end, BIAS) < ep.nullspace_residual(plain.end, BIAS)
    traj = cartesian_goal([goal], bias=BIAS)
    traj.trajectory_options.nso_check_end_offset = True
    assert plan_goal(planner, traj).plan.duration > 0


def test_nso_start_offset_moves_the_joints_first_with_the_tip_still(planner):
    p0, q0 = hand_pose(planner, NEUTRAL)
    traj = cartesian_goal([(p0 + [0.0, 0.0, 0.02], q0)], bias=BIAS)
    traj.trajectory_options.nso_start_offset_allowed = True
    plan = plan_goal(planner, traj).plan
    first = plan.pieces[0]
    ts = np.linspace(0, first.duration, 50)
    P, _, _ = first.sample_many(ts)
    tips = np.array([hand_pose(planner, q)[0] for q in P])
    assert np.abs(P[-1] - NEUTRAL).max() > 0.1                 # the posture changed ...
    assert np.linalg.norm(tips - p0, axis=1).max() < 1e-3       # ... with the tip in place
    ep = planner.endpoint('right_hand')
    assert ep.nullspace_residual(P[-1], BIAS) < 0.05


def test_cartesian_corners_are_blended_with_arcs_within_corner_distance(planner):
    p0, q0 = hand_pose(planner, NEUTRAL)
    corner = p0 + np.array([0.15, 0.0, 0.0])
    end = corner + np.array([0.0, -0.2, 0.0])
    stop = plan_goal(planner, cartesian_goal([(corner, q0), (end, q0)])).plan
    blend = plan_goal(planner, cartesian_goal([(corner, q0), (end, q0)], corner=0.05)).plan
    ep = planner.endpoint('right_hand')
    for plan, r in ((stop, 0.0), (blend, 0.05)):
        ts, X, _ = endpoint_track(planner, plan, n=1500)
        speed = np.linalg.norm(np.gradient(X, ts, axis=0), axis=1)
        t_corner = plan.waypoint_times[0]
        v_corner = np.interp(t_corner, ts, speed)
        dist = np.linalg.norm(X - corner, axis=1).min()
        if r == 0:
            assert v_corner < 0.01 and dist < 1e-4
        else:
            assert v_corner > 0.1
            # circular arc tangent to both lines 5 cm from the corner: closest approach
            assert dist == pytest.approx(0.05 * (1 / math.cos(math.pi / 4) - 1) / math.tan(math.pi / 4), abs=2e-3)
            # it leaves the first line exactly 5 cm before the corner
            on_first = np.abs(X[:, 1] - p0[1]) < 1e-5
            assert X[on_first, 0].max() == pytest.approx(corner[0] - 0.05, abs=2e-3)
        assert analysis.cartesian_deviation(plan, ep) < 1e-3
        acc = np.linalg.norm(np.gradient(np.gradient(X, ts, axis=0), ts, axis=0), axis=1)
        assert acc[5:-5].max() < 0.6 * 1.1
    assert blend.duration < stop.duration


def test_five_blended_waypoints_stay_on_the_designed_path(planner):
    p0, q0 = hand_pose(planner, NEUTRAL)
    pts = [p0 + d for d in ([0.1, 0, 0.1], [0.1, -0.3, 0.1], [0.2, -0.3, 0.0], [0.2, 0.1, 0.0],
                            [0.05, 0.1, 0.05])]
    plan = plan_goal(planner, cartesian_goal([(p, q0) for p in pts], corner=0.05)).plan
    assert analysis.cartesian_deviation(plan, planner.endpoint('right_hand')) < 1e-3
    assert np.linalg.norm(hand_pose(planner, plan.end)[0] - pts[-1]) < 1e-4
    assert np.all(np.diff(plan.waypoint_times) > 0)


# Goals go_to_cartesian_pose.py sends from its default waypoint (BIAS: -q not given, so the
# current angles are the nullspace bias; max_joint_speed_ratio 1.0) that the planner used to
# refuse.
FROM_DEFAULT_WAYPOINT = {
    # refused with PLANNED_JOINT_ACCEL_LIMIT (right_j4 would need 42 rad/s²)
    'joint accelerations': ((0.5146, 0.1336, 0.3318), (0.0053, 0.9849, 0.1384, 0.1043)),
    # CARTESIAN_INTERPOLATION_FAILED near a wrist-singular stretch (right_j4 racing)
    'wrist-singular stretch': ((0.6594, -0.1728, 0.1817), (0.0132, 0.9984, -0.0237, -0.0495)),
    # CARTESIAN_INTERPOLATION_FAILED: near the requested posture right_j4 runs into its limit
    'joint limit near the requested posture': ((0.4944, 0.2418, 0.2892), (-0.0903, 0.9879, 0.0858, 0.0921)),
}


@pytest.mark.parametrize('case', sorted(FROM_DEFAULT_WAYPOINT))
def test_goals_from_the_sdk_default_waypoint_are_followed_within_limits_and_path_tolerance(planner, limits,
                                                                                           case):
    from intera_rt.motion.kinematics import PATH_POSITION_TOLERANCE
    pos, quat = FROM_DEFAULT_WAYPOINT[case]
    pos, quat = np.array(pos), np.array(quat) / np.linalg.norm(quat)
    pm = plan_goal(planner, cartesian_goal([(pos, quat)], bias=BIAS, ratio=1.0), q0=np.array(BIAS))
    plan = pm.plan
    p, q = hand_pose(planner, plan.end)
    assert np.linalg.norm(p - pos) < 1e-4 and rotation_angle(q, quat) < 1e-3
    # On the straight line within the path tolerance, all the way.
    assert analysis.cartesian_deviation(plan, planner.endpoint('right_hand')) <= PATH_POSITION_TOLERANCE
    # Slowed where the joints need it: every joint within its limits, the endpoint within
    # its speed.
    _, _, V, A = dense(plan, 4000)
    assert np.all(np.abs(V) <= limits['velocity'] * 1.01)
    assert np.all(np.abs(A) <= np.minimum(FAST, limits['accel']) * 1.02)
    ts, X, _ = endpoint_track(planner, plan)
    assert np.linalg.norm(np.gradient(X, ts, axis=0), axis=1).max() <= 0.6 * 1.02
    if case == 'joint limit near the requested posture':
        assert any('posture' in w for w in pm.warnings), pm.warnings


def test_no_continuous_joint_path_is_still_refused(planner):
    """A front pose the IK service reaches without collision, but along whose straight
    path from neutral no continuous joint path exists (the independent continuity check of
    the bench finds none: right_j6, at 3.32 of its 4.71 rad in neutral, would have to turn
    on): CARTESIAN_INTERPOLATION_FAILED, after trying other postures."""
    from intera_rt.bench.continuity import Continuity
    pos, quat = np.array([0.6588, 0.2456, 0.2725]), np.array([-0.7184, 0.6898, -0.0351, -0.0829])
    traj = cartesian_goal([(pos, quat / np.linalg.norm(quat))], bias=NEUTRAL, ratio=1.0)
    err = error_of(planner, traj)
    assert err.error_id == CARTESIAN_INTERPOLATION_FAILED, err
    request = planner.parse(traj)
    found, share = Continuity(planner.endpoint('right_hand'), planner.collision).check(
        NEUTRAL, planner.cartesian.path(NEUTRAL, request))
    assert found is False and share < 1.0


def test_cartesian_other_endpoint_right_hand_camera(planner):
    p0, q0 = hand_pose(planner, NEUTRAL, 'right_hand_camera')
    goal = p0 + np.array([0.05, 0.05, -0.05])
    pm = plan_goal(planner, cartesian_goal([(goal, q0)], endpoint='right_hand_camera'))
    p, q = hand_pose(planner, pm.plan.end, 'right_hand_camera')
    assert np.linalg.norm(p - goal) < 1e-4 and rotation_angle(q, q0) < 1e-3
    assert pm.plan.end[6] == pytest.approx(NEUTRAL[6])       # j6 is not on that chain


def test_cartesian_pose_in_another_frame_and_empty_frame_is_base(planner, model):
    p0, q0 = hand_pose(planner, NEUTRAL)
    traj = cartesian_goal([(p0 + [0, 0, 0.05], q0)])
    traj.waypoints[0].pose.header.frame_id = ''
    a = planner.parse(traj).waypoints[0].position
    traj.waypoints[0].pose.header.frame_id = 'right_arm_base_link'      # fixed to base, identity
    b = planner.parse(traj).waypoints[0].position
    assert np.allclose(a, b)


# --- errors before motion ------------------------------------------------------------------------
def error_of(planner, traj, q0=NEUTRAL, **kw):
    with pytest.raises(MotionError) as info:
        planner.plan(planner.parse(traj), q0, **kw)
    return info.value


def _cart_ok():
    return cartesian_goal([(np.array([0.45, 0.16, 0.3]), DOWN)], bias=BIAS)


def _mutations():
    def m(fn, base=None):
        def make():
            t = (base or (lambda: joint_goal([NEUTRAL, BIAS])))()
            fn(t)
            return t
        return make
    nan = float('nan')
    return {
        'no waypoints': m(lambda t: t.waypoints.clear()),
        'unknown interpolation': m(lambda t: setattr(t.trajectory_options, 'interpolation_type', 'SPLINE')),
        'empty interpolation': m(lambda t: setattr(t.trajectory_options, 'interpolation_type', '')),
        'six joint names': m(lambda t: setattr(t, 'joint_names', list(ARM_JOINTS[:6]))),
        'unknown joint name': m(lambda t: setattr(t, 'joint_names', list(ARM_JOINTS[:6]) + ['head_pan'])),
        'duplicate joint name': m(lambda t: setattr(t, 'joint_names', list(ARM_JOINTS[:6]) + ['right_j0'])),
        'wrong joint count': m(lambda t: setattr(t.waypoints[1], 'joint_positions', BIAS[:6])),
        'NaN angle': m(lambda t: setattr(t.waypoints[1], 'joint_positions', BIAS[:6] + [nan])),
        'angle beyond limit': m(lambda t: setattr(t.waypoints[1], 'joint_positions', BIAS[:6] + [5.0])),
        'mixed: joint waypoint without angles': m(lambda t: setattr(t.waypoints[1], 'joint_positions', [])),
        'mixed endpoints': m(lambda t: setattr(t.waypoints[1], 'active_endpoint', 'right_l6')),
        'negative speed ratio': m(lambda t: setattr(t.waypoints[1].options, 'max_joint_speed_ratio', -0.1)),
        'speed ratio above 1': m(lambda t: setattr(t.waypoints[1].options, 'max_joint_speed_ratio', 1.5)),
        'NaN speed ratio': m(lambda t: setattr(t.waypoints[1].options, 'max_joint_speed_ratio', nan)),
        'negative accel': m(lambda t: setattr(t.waypoints[1].options, 'max_joint_accel', [-1.0] * 7)),
        'accel of 3 joints': m(lambda t: setattr(t.waypoints[1].options, 'max_joint_accel', [1.0] * 3)),
        'zero joint tolerance': m(lambda t: setattr(t.waypoints[1].options, 'joint_tolerances', [0.0] * 7)),
        'negative corner distance': m(lambda t: setattr(t.waypoints[1].options, 'corner_distance', -0.01)),
        'min time rate 0': m(lambda t: (setattr(t.trajectory_options.tracking_options, 'use_min_time_rate', True),
                                        setattr(t.trajectory_options.tracking_options, 'min_time_rate', 0.0))),
        'min rate above max rate': m(lambda t: (
            setattr(t.trajectory_options.tracking_options, 'use_min_time_rate', True),
            setattr(t.trajectory_options.tracking_options, 'min_time_rate', 0.9),
            setattr(t.trajectory_options.tracking_options, 'use_max_time_rate', True),
            setattr(t.trajectory_options.tracking_options, 'max_time_rate', 0.5))),
        'goal tolerance of 2 joints': m(lambda t: setattr(t.trajectory_options.tracking_options,
                                                          'goal_joint_tolerance', [0.01, 0.01])),
        'negative settling time': m(lambda t: (
            setattr(t.trajectory_options.tracking_options, 'use_settling_time_at_goal', True),
            setattr(t.trajectory_options.tracking_options, 'settling_time_at_goal', -1.0))),
        'negative interpolation step': m(lambda t: setattr(t.trajectory_options, 'path_interpolation_step', -0.1)),
        'interaction K of 5 axes': m(lambda t: (setattr(t.trajectory_options, 'interaction_control', True),
                                                setattr(t.trajectory_options.interaction_params,
                                                        'K_impedance', [1.0] * 5))),
        'interaction negative stiffness': m(lambda t: (
            setattr(t.trajectory_options, 'interaction_control', True),
            setattr(t.trajectory_options.interaction_params, 'K_impedance', [-1.0] + [1.0] * 5))),
        'interaction mode 9': m(lambda t: (setattr(t.trajectory_options, 'interaction_control', True),
                                           setattr(t.trajectory_options.interaction_params,
                                                   'interaction_control_mode', [9] * 6))),
        'cartesian non-unit quaternion': m(lambda t: setattr(t.waypoints[0].pose.pose.orientation, 'w', 0.5),
                                           _cart_ok),
        'cartesian zero quaternion': m(lambda t: setattr(t.waypoints[0].pose.pose, 'orientation',
                                                         type(t.waypoints[0].pose.pose.orientation)()), _cart_ok),
        'cartesian NaN position': m(lambda t: setattr(t.waypoints[0].pose.pose.position, 'x', nan), _cart_ok),
        'cartesian unknown frame': m(lambda t: setattr(t.waypoints[0].pose.header, 'frame_id', 'nowhere'),
                                     _cart_ok),
        'cartesian negative speed': m(lambda t: setattr(t.waypoints[0].options, 'max_linear_speed', -1.0),
                                      _cart_ok),
        'cartesian bias of 6 joints': m(lambda t: setattr(t.waypoints[0], 'joint_positions', BIAS[:6]),
                                        _cart_ok),
    }


@pytest.mark.parametrize('case', sorted(_mutations()))
def test_invalid_trajectory_message(planner, case):
    err = error_of(planner, _mutations()[case]())
    assert err.error_id == INVALID_TRAJECTORY_MESSAGE, err
    assert err.message


def test_invalid_messages_name_the_field_and_value(planner):
    err = error_of(planner, _mutations()['angle beyond limit']())
    assert 'waypoints[1]' in err.message and 'right_j6' in err.message and '5.0000' in err.message
    err = error_of(planner, _mutations()['cartesian non-unit quaternion']())
    assert 'orientation' in err.message and 'norm' in err.message


@pytest.mark.parametrize('endpoint', ['no_such_link', 'pedestal', 'head'])
def test_endpoint_does_not_exist(planner, endpoint):
    traj = _cart_ok()
    traj.waypoints[0].active_endpoint = endpoint
    assert error_of(planner, traj).error_id == ENDPOINT_DOES_NOT_EXIST
    assert error_of(planner, _endpoint_joint(endpoint)).error_id == ENDPOINT_DOES_NOT_EXIST


def _endpoint_joint(endpoint):
    t = joint_goal([NEUTRAL, BIAS])
    for w in t.waypoints:
        w.active_endpoint = endpoint
    return t


def test_planned_joint_accel_limit(planner, limits):
    err = error_of(planner, joint_goal([NEUTRAL, BIAS], accel=[20.0] * 7))
    assert err.error_id == PLANNED_JOINT_ACCEL_LIMIT and 'right_j0' in err.message
    # The express preset is exactly the limits: accepted.
    assert plan_goal(planner, joint_goal([NEUTRAL, BIAS], accel=limits['accel'])).plan.duration > 0


def test_cartesian_speeds_beyond_the_joint_limits_are_slowed_not_refused(planner, limits):
    """The joint limits are maxima: a Cartesian move whose speeds and accelerations would
    ask too much of the joints runs slower where it must, within every joint limit and
    within the requested Cartesian speed."""
    p0, q0 = hand_pose(planner, NEUTRAL)
    goal = p0 + [0.0, -0.4, 0.0]
    plan = plan_goal(planner, cartesian_goal([(goal, q0)], speed=3.0, accel=40.0, ratio=1.0)).plan
    _, _, V, A = dense(plan, 4000)
    assert np.abs(V).max(axis=0).max() > 0.9 * limits['velocity'].min()      # it does ask a lot ...
    assert np.all(np.abs(V) <= limits['velocity'] * 1.01)                   # ... within the limits
    assert np.all(np.abs(A) <= np.minimum(FAST, limits['accel']) * 1.02)
    ts, X, _ = endpoint_track(planner, plan)
    assert np.linalg.norm(np.gradient(X, ts, axis=0), axis=1).max() <= 3.0 * 1.01
    assert np.linalg.norm(X[-1] - goal) < 1e-4
    assert plan.duration > trapezoid_time(0.4, 3.0, 40.0) * 1.2              # slowed, not at 3 m/s


def test_cartesian_interpolation_failed(planner):
    err = error_of(planner, cartesian_goal([(np.array([2.0, 0.0, 0.3]), DOWN)]))
    assert err.error_id == CARTESIAN_INTERPOLATION_FAILED
    # Straight through the arm's own base: the joints would have to jump.
    p0, q0 = hand_pose(planner, NEUTRAL)
    err = error_of(planner, cartesian_goal([(np.array([-0.45, 0.16, 0.22]), q0)]))
    assert err.error_id == CARTESIAN_INTERPOLATION_FAILED


def test_failed_to_parameterize(planner):
    err = error_of(planner, joint_goal([NEUTRAL, BIAS], ratio=1e-7))
    assert err.error_id == FAILED_TO_PARAMETERIZE


COLLIDING = [0.0, 0.9, 0.0, 2.5, 0.0, 0.0, 0.0]      # hand folded into the pedestal
AT_CONTROLLER_BOX = [2.46, 1.01, 1.76, 0.82, 0.4, -0.23, 1.78]   # right_l3/l4 in the controller box


def test_pedestal_boxes_are_left_to_external_planners(planner, model):
    """Seed 000: the boxes around the pedestal's base and the controller box are for
    external planners, not used by the Motion Controller. A move into the controller box
    is planned; the same configuration is in collision for the IK/FK services' model (what
    an external planner sees); the pedestal column itself is still checked."""
    full = CollisionModel(model.urdf_xml)
    assert ('controller_box', 'right_l4') in full.colliding_pairs(AT_CONTROLLER_BOX)
    assert not planner.collision.in_collision(AT_CONTROLLER_BOX)
    plan = plan_goal(planner, joint_goal([NEUTRAL, AT_CONTROLLER_BOX])).plan
    assert np.allclose(plan.end, AT_CONTROLLER_BOX)
    assert full.first_in_collision(plan.sample_many(np.linspace(0, plan.duration, 200))[0]) is not None
    for link in ('controller_box', 'pedestal_feet'):
        assert planner.collision.exclusion(link, 'right_hand') == 'unused'
    assert planner.collision.exclusion('pedestal', 'right_hand') == 'checked'


def test_planned_motion_collision_unless_suppressed(planner):
    err = error_of(planner, joint_goal([NEUTRAL, COLLIDING]))
    assert err.error_id == PLANNED_MOTION_COLLISION and 'pedestal' in err.message
    pm = planner.plan(planner.parse(joint_goal([NEUTRAL, COLLIDING])), NEUTRAL, check_collision=False)
    assert np.allclose(pm.plan.end, COLLIDING)


# --- the path-following stop ---------------------------------------------------------------------
def test_stop_plan_is_smooth_path_following_and_brief(planner, limits):
    plan = plan_goal(planner, joint_goal([NEUTRAL, BIAS])).plan
    t = 0.5 * plan.duration
    stop = plan.stop_plan(t, 0.3, accel_limit=limits['accel'])
    assert stop.duration == pytest.approx(0.3)
    ts = np.linspace(0.0, stop.duration, 301)
    P, V, A = stop.sample_many(ts)
    p0, v0, a0 = plan.sample(t)
    assert np.allclose(P[0], p0) and np.allclose(V[0], v0) and np.allclose(A[0], a0, atol=1e-6)
    assert np.allclose(V[-1], 0) and np.allclose(A[-1], 0)
    for tau, p in zip(ts, P):                              # on the planned path
        assert np.allclose(p, plan.sample(stop.progress(tau))[0], atol=1e-12)
    assert np.all(np.abs(A) <= limits['accel'] * (1 + 1e-6))
    jerk = np.abs(np.diff(A, axis=0) / np.diff(ts)[:, None])
    assert jerk.max() < 1e3                                # continuous acceleration
    speed = np.linalg.norm(V, axis=1)
    assert np.all(np.diff(speed) <= 1e-9)                  # decelerates monotonically
    assert stop.progress(stop.duration) < plan.duration    # stops before the goal


def test_stop_is_lengthened_only_where_the_accel_limits_require(planner, limits):
    plan = plan_goal(planner, joint_goal([NEUTRAL, [0, -1.18, 0, 2.18, 0, 0.57, -3.3]], ratio=1.0,
                                         accel=limits['accel'])).plan
    t = 0.5 * plan.duration                                # j6 at full speed (4.5 rad/s)
    stop = plan.stop_plan(t, 0.3, accel_limit=limits['accel'])
    assert stop.duration > 0.3
    _, _, A = stop.sample_many(np.linspace(0, stop.duration, 301))
    assert np.all(np.abs(A) <= limits['accel'] * (1 + 1e-6))
    # Near the end the plan's own deceleration is the stop.
    late = plan.stop_plan(plan.duration - 0.05, 0.3)
    assert late.progress(late.duration) == pytest.approx(plan.duration)


# --- the tracker ---------------------------------------------------------------------------------
def run_tracker(tracker, dt=0.005, until=30.0, lag=0, stop_at=None, offset=None):
    """Perfect (or lagging) tracking: the measurement is the setpoint `lag` steps ago."""
    t, sent = 0.0, []
    while not tracker.finished and t < until:
        meas = None
        if sent:
            p, v = sent[max(0, len(sent) - 1 - lag)]
            if offset is not None:
                p = p + offset
            meas = Measurement(t, p, v)
        if stop_at is not None and t >= stop_at:
            tracker.request_stop(t)
            stop_at = None
        sp = tracker.step(t, meas)
        if sp is not None:
            sent.append((sp.position, sp.velocity))
        t += dt
    return t, sent


def _tracker(planner, traj, q0=NEUTRAL, limits=None):
    req = planner.parse(traj)
    pm = planner.plan(req, q0)
    acc = limits['accel'] if limits is not None else None
    return pm, Tracker(pm.plan, req.tracking, [w.limits.joint_tolerances for w in req.waypoints], 0.0,
                       accel_limit=acc)


def test_tracker_runs_the_plan_to_done(planner):
    pm, tr = _tracker(planner, joint_goal([NEUTRAL, BIAS]))
    t, sent = run_tracker(tr)
    assert tr.result and tr.last_successful_waypoint == 1
    assert np.allclose(sent[-1][0], BIAS) and not np.any(sent[-1][1])
    assert tr.measured_duration == pytest.approx(pm.plan.duration, abs=0.02)
    assert tr.min_rate_used == 1.0


def test_tracker_stop_preempts_on_the_path(planner, limits):
    pm, tr = _tracker(planner, joint_goal([NEUTRAL, BIAS]), limits=limits)
    t, sent = run_tracker(tr, stop_at=0.6)
    assert tr.phase == 'preempted' and not tr.result and tr.error_id == ''
    assert t - 0.6 == pytest.approx(0.3, abs=0.02)
    assert not np.any(sent[-1][1])
    assert tr.last_successful_waypoint == 0


def test_tracker_slows_down_when_tracking_lags_and_settles(planner):
    traj = joint_goal([NEUTRAL, BIAS])
    traj.waypoints[1].options.joint_tolerances = [0.01] * 7
    pm, tr = _tracker(planner, traj)
    run_tracker(tr, lag=8)
    assert tr.result
    assert tr.min_rate_used < 1.0 and tr.measured_duration > pm.plan.duration


def test_tracker_error_hovering_about_the_tolerance_still_lowers_the_rate(planner):
    """An error over the tolerance in every other measurement (as a well-tracking arm's does
    about a tight tolerance) lowers the rate all the way to min_time_rate; once the error
    stays within for RATE_RECOVERY the rate rises back to 1."""
    traj = joint_goal([NEUTRAL, BIAS], ratio=0.2)
    traj.waypoints[1].options.joint_tolerances = [0.01] * 7
    opts = traj.trajectory_options.tracking_options
    opts.use_min_time_rate, opts.min_time_rate = True, 0.3
    pm, tr = _tracker(planner, traj)
    assert pm.plan.duration > 3.0
    t, dt, sent, n, rates = 0.0, 0.005, None, 0, []
    while not tr.finished and t < 30.0:
        meas = None
        if sent is not None:
            hover = t < 1.5 and n % 2 == 0                 # 0.02 rad off, then on the setpoint
            meas = Measurement(t, sent.position + (0.02 if hover else 0.0), sent.velocity)
        sent = tr.step(t, meas) or sent
        rates.append((t, tr.sd))
        t, n = t + dt, n + 1
    assert tr.result
    assert tr.min_rate_used == pytest.approx(0.3)
    assert min(r for s, r in rates if s < 1.5) == pytest.approx(0.3)
    # Within from 1.5 s: held for RATE_RECOVERY, then back up at RATE_SLEW.
    assert max(r for s, r in rates if 1.5 <= s < 1.59) == pytest.approx(0.3)
    assert max(r for s, r in rates if s >= 1.5) == pytest.approx(1.0)


def test_tracker_final_pose_not_within_tolerance(planner):
    traj = joint_goal([NEUTRAL, BIAS])
    opts = traj.trajectory_options.tracking_options
    opts.goal_joint_tolerance = [1e-4]
    opts.use_settling_time_at_goal, opts.settling_time_at_goal = True, 0.2
    pm, tr = _tracker(planner, traj)
    run_tracker(tr, offset=np.full(7, 1e-3))
    assert tr.error_id == FINAL_POSE_NOT_WITHIN_TOLERANCE and not tr.result
    assert tr.last_successful_waypoint == 0


def test_tracker_max_time_rate_speeds_up_only_within_the_limits(planner, limits):
    traj = joint_goal([NEUTRAL, BIAS], ratio=0.3)
    opts = traj.trajectory_options.tracking_options
    opts.use_max_time_rate, opts.max_time_rate = True, 10.0
    req = planner.parse(traj)
    pm = planner.plan(req, NEUTRAL)
    tr = Tracker(pm.plan, req.tracking, [w.limits.joint_tolerances for w in req.waypoints], 0.0,
                 accel_limit=limits['accel'], vel_limit=limits['velocity'])
    _, sent = run_tracker(tr)
    assert tr.result and tr.measured_duration < pm.plan.duration
    V = np.array([v for _, v in sent])
    assert np.all(np.abs(V) <= limits['velocity'] * 1.001)


def test_interpolated_path_every_step(planner):
    pm = plan_goal(planner, joint_goal([NEUTRAL, BIAS]))
    pts = analysis.interpolated_path(pm.plan, 0.1, planner.endpoint('right_hand'))
    assert pts[0][0] == 0.0 and pts[-1][0] == pytest.approx(pm.plan.duration)
    assert np.allclose(np.diff([p[0] for p in pts[:-1]]), 0.1)
    p, q = pts[-1][2]
    assert np.allclose(p, hand_pose(planner, BIAS)[0])
    assert {p[3] for p in pts} <= {0, 1}


# --- the planner's vectorised / batched forms against the per-sample ones ---------------------
def _ruckig_pieces(plan):
    from intera_rt.motion.plan import RuckigPiece
    return [p for p in plan.pieces if isinstance(p, RuckigPiece)]


def test_ruckig_sample_many_equals_at_time(planner):
    mid = [0.3, -0.5, 0.2, 1.5, 0.1, -0.4, 0.5]
    plan = plan_goal(planner, joint_goal([BIAS, mid, NEUTRAL], ratio=0.7), check_collision=False).plan
    pieces = _ruckig_pieces(plan)
    assert len(pieces) == 3 and all(p._phases is not None for p in pieces)
    for piece in pieces:
        ends = np.cumsum([pr.t for pr in piece.trajectory.profiles[0]], axis=1).ravel()
        ts = np.concatenate([np.linspace(-0.01, piece.duration + 0.01, 301), ends, [piece.duration]])
        P, V, A = piece.sample_many(ts)
        ref = np.array([piece.trajectory.at_time(min(max(t, 0.0), piece.duration)) for t in ts])
        for got, want in zip((P, V, A), (ref[:, 0], ref[:, 1], ref[:, 2])):
            assert np.max(np.abs(got - want)) <= 1e-9


def test_ruckig_sample_many_falls_back_on_a_brake_profile():
    from ruckig import InputParameter, Ruckig, Trajectory as RuckigTrajectory
    from intera_rt.motion.plan import RuckigPiece
    inp = InputParameter(2)
    inp.current_position, inp.current_velocity, inp.current_acceleration = [0.0, 0.0], [3.0, -0.5], [0.0, 0.0]
    inp.target_position, inp.target_velocity, inp.target_acceleration = [1.0, 0.5], [0.0, 0.0], [0.0, 0.0]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [1.0, 1.0], [5.0, 5.0], [50.0, 50.0]
    traj = RuckigTrajectory(2)
    Ruckig(2).calculate(inp, traj)
    assert traj.profiles[0][0].brake.duration > 0.0     # starts above the velocity limit
    piece = RuckigPiece(traj)
    assert piece._phases is None
    ts = np.linspace(0.0, piece.duration, 50)
    P, V, A = piece.sample_many(ts)
    ref = np.array([traj.at_time(t) for t in ts])
    assert np.allclose(P, ref[:, 0], atol=1e-12) and np.allclose(A, ref[:, 2], atol=1e-12)


def test_first_in_collision_equals_in_collision_per_configuration(planner):
    coll = planner.collision
    qs = np.linspace(NEUTRAL, COLLIDING, 80)
    flags = [coll.in_collision(q) for q in qs]
    first = flags.index(True)
    assert first > 0
    assert coll.first_in_collision(qs) == first
    assert coll.first_in_collision(qs[:first]) is None
    assert coll.first_in_collision(qs[first:]) == 0
    assert coll.first_in_collision(np.empty((0, 7))) is None
    assert coll.in_collision(NEUTRAL, -3.14) == (coll.first_in_collision([NEUTRAL], -3.14) == 0)
    with pytest.raises(ValueError):
        coll.first_in_collision([[0.0] * 6 + [np.nan]])
    with pytest.raises(ValueError):
        coll.first_in_collision(NEUTRAL)


class _Recorder:
    """A collision model that records the configurations checked (none collide)."""

    def __init__(self):
        self.checked = []

    def first_in_collision(self, qs, q_head=0.0):
        self.checked.extend(np.asarray(qs))
        return None


def test_collision_check_steps_stay_within_collision_step(planner):
    pm = plan_goal(planner, joint_goal([BIAS, COLLIDING, NEUTRAL], ratio=1.0), check_collision=False)
    rec = _Recorder()
    assert analysis.first_collision(pm.plan, pm.samples, rec) is None
    Q = np.array(rec.checked)
    assert np.allclose(Q[0], pm.plan.start) and np.allclose(Q[-1], pm.plan.end)
    moves = np.abs(np.diff(Q, axis=0)) @ analysis.COLLISION_REACH
    assert moves.max() <= analysis.COLLISION_STEP + 1e-12
    # ...and not much denser than needed: two steps always cover more than one step.
    assert np.all(moves[:-1] + moves[1:] > analysis.COLLISION_STEP)
    hit = analysis.first_collision(pm.plan, pm.samples, planner.collision)
    assert hit is not None and planner.collision.in_collision(hit[1]) and hit[2]


def test_endpoint_kinematics_match_the_kdl_chains(model):
    import PyKDL as kdl
    from intera_rt.motion.geometry import quat_to_matrix
    from intera_rt.motion.kinematics import EndpointKinematics
    rng = np.random.default_rng(3)
    h = 5e-4
    for tip in ('right_hand', 'right_hand_camera'):
        ep, chain = EndpointKinematics(model, tip), model.chain(tip)
        qs = rng.uniform(ep.lower, ep.upper, (20, ep.n))
        dirs = rng.normal(size=qs.shape)
        dp, ddp, dr, ddr = ep.path_rates(qs - h * dirs, qs, qs + h * dirs, h)
        for k, q in enumerate(qs):
            p, R = ep.fk(q)
            p_ref, quat = chain.fk(q)
            assert np.allclose(p, p_ref, atol=1e-12) and np.allclose(R, quat_to_matrix(quat), atol=1e-12)
            assert np.allclose(ep.jacobian(q), chain.jacobian(q), atol=1e-12)
            fa, fb, fc = (chain.fk_frame(x) for x in (q - h * dirs[k], q, q + h * dirs[k]))
            t1, t2 = kdl.diff(fa, fb), kdl.diff(fb, fc)
            v1, v2 = np.array(list(t1.vel)), np.array(list(t2.vel))
            r1, r2 = np.array(list(t1.rot)), np.array(list(t2.rot))
            for got, want in ((dp, (v1 + v2) / (2 * h)), (ddp, (v2 - v1) / h ** 2),
                              (dr, (r1 + r2) / (2 * h)), (ddr, (r2 - r1) / h ** 2)):
                assert np.allclose(got[k], want, rtol=1e-6, atol=1e-6)


def test_rotation_error_many_equals_rotation_error():
    from intera_rt.motion.geometry import (quat_to_matrix, rotation_error, rotation_error_many,
                                           rotvec_to_quat)
    rng = np.random.default_rng(4)
    axes = rng.normal(size=(40, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.concatenate([[0.0, 1e-9, 1e-4, 1e-3], rng.uniform(0.0, math.pi, 32), [3.1, 3.14, 3.1415, math.pi]])
    ra = np.array([quat_to_matrix(rotvec_to_quat(v)) for v in rng.normal(size=(40, 3))])
    rb = np.array([quat_to_matrix(rotvec_to_quat(a * x)) @ r for a, x, r in zip(angles, axes, ra)])
    got = rotation_error_many(rb, ra)
    for k in range(40):
        want = rotation_error(rb[k], ra[k])
        if angles[k] > math.pi - 1e-3:      # ±π describe the same rotation
            assert np.allclose(np.abs(got[k]), np.abs(want), atol=1e-6)
        else:
            assert np.allclose(got[k], want, atol=1e-9)
        assert np.linalg.norm(got[k]) == pytest.approx(angles[k], abs=1e-6)
