"""The motion controller's options and feedback through ROS, judged by the arm:
max_time_rate and min_time_rate bound the pace seen in /robot/joint_states, tight
joint_tolerances slow a motion to min_time_rate, end_time sets when the arm arrives, the
feedback's current_waypoint / current_trajectory name the waypoint the arm is moving to and
the goal's label; Cartesian goals pass a corner at its corner_distance, keep to
max_linear_speed and max_rotational_speed and to max_linear_accel and max_rotational_accel
(read from endpoint_state); nso_check_end_offset refuses a goal whose final posture would miss
its nullspace goal, nso_start_offset_allowed turns the posture first with the hand still.

Every JOINT goal moves right_j0 alone from neutral (0 rad) to 1.5 rad at speed ratio 0.8: the
time-optimal plan cruises at 0.8 × 1.74 rad/s, the joint's planned peak.

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from clients import Series, arm_positions, arm_velocities, goal, now, recording, stamp, waypoint
from contract import NEUTRAL
from motion_client import ABORTED, BIAS, angles, assert_no_motion, ros, send, teleport  # noqa: F401

SAWYER_ARGS = ['--sim-time', '--speed', '1']

RATIO = 0.8
PLANNED_PEAK = RATIO * 1.74        # rad/s: right_j0's velocity limit × the speed ratio
FAR = np.array(NEUTRAL)
FAR[0] = 1.5


@pytest.fixture
def joints(ros):
    from sensor_msgs.msg import JointState
    series = Series('/robot/joint_states', JointState)
    series.last()
    teleport(ros)
    yield series
    series.unregister()


def run(ros, joints, g):
    """Send g; (result, the right_j0 speeds in joint_states while it ran)."""
    t0 = now()
    _, result = send(ros, g)
    speeds = np.array([arm_velocities(m)[0] for m in joints.between(t0, now())])
    return result, speeds


def far_goal(ros, **tracking):
    g = goal([waypoint(angles(ros), ratio=RATIO), waypoint(FAR, ratio=RATIO)])
    t = g.trajectory.trajectory_options.tracking_options
    for key, value in tracking.items():
        setattr(t, key, value)
    return g


def test_max_time_rate_bounds_the_pace_seen_in_joint_states(ros, joints):
    """max_time_rate 0.5: the plan is run at half pace: right_j0 never moves faster than
    half its planned peak (±10 %), and cruises at it; the motion takes about twice as long."""
    result, speeds = run(ros, joints, far_goal(ros, use_max_time_rate=True, max_time_rate=0.5))
    assert result.result is True, result.errorId
    assert speeds.max() <= 0.5 * PLANNED_PEAK * 1.10, 'peak %.3f rad/s' % speeds.max()
    assert speeds.max() >= 0.5 * PLANNED_PEAK * 0.90, 'peak %.3f rad/s' % speeds.max()
    a = result.trajectory_analysis
    assert a.measured_duration >= 1.8 * a.planned_duration, (a.measured_duration, a.planned_duration)
    assert abs(angles(ros)[0] - FAR[0]) < 0.01


def test_tight_joint_tolerances_slow_the_motion_to_min_time_rate(ros, joints):
    """joint_tolerances 0.0001 rad (less than the arm's tracking error in motion) with
    min_time_rate 0.3: the rate is lowered to its minimum, so once lowered right_j0 cruises
    at 0.3 × its planned peak (±10 %), never slower; the goal still succeeds."""
    g = far_goal(ros, use_min_time_rate=True, min_time_rate=0.3)
    for w in g.trajectory.waypoints:
        w.options.joint_tolerances = [1e-4] * 7
    t0 = now()
    result, _ = run(ros, joints, g)
    assert result.result is True, result.errorId
    # The rate is lowered (at most 1/s) once the tracking error passes the tolerance, which
    # takes a moment after the motion starts: it must be at its minimum within 2 s of the
    # first joint state moving right_j0, then hold there for 1.5 s.
    bound = 0.3 * PLANNED_PEAK * 1.10
    start = next(stamp(m) for m in joints.between(t0) if abs(arm_velocities(m)[0]) > 0.01)
    lowered = next((stamp(m) for m in joints.between(start + 0.3)
                    if abs(arm_velocities(m)[0]) <= bound), None)
    assert lowered is not None and lowered - start < 2.0, (start, lowered)
    cruise = [arm_velocities(m)[0] for m in joints.between(lowered, lowered + 1.5)]
    assert cruise and max(cruise) <= 0.3 * PLANNED_PEAK * 1.10, 'cruised at %.3f rad/s' % max(cruise)
    assert np.median(cruise) >= 0.3 * PLANNED_PEAK * 0.90, 'cruised at %.3f rad/s' % np.median(cruise)


def test_feedback_names_the_trajectory_and_the_waypoint_in_progress(ros, joints):
    """A goal labelled 'three_points' through right_j0 = 0.75 to 1.5: the feedback names the
    label, and current_waypoint is 1 while right_j0 is short of 0.75 and 2 once past it."""
    import rospy
    mid = np.array(NEUTRAL)
    mid[0] = 0.75
    g = goal([waypoint(angles(ros), ratio=0.3), waypoint(mid, ratio=0.3), waypoint(FAR, ratio=0.3)],
             label='three_points')
    seen = []

    def feedback(fb):
        js = joints.last()
        seen.append((js.position[js.name.index('right_j0')], fb.status.current_waypoint,
                     fb.status.current_trajectory, fb.status.motion_status))
    ros['client'].send_goal(g, feedback_cb=feedback)
    assert ros['client'].wait_for_result(rospy.Duration(60.0)), 'no result'
    assert ros['client'].get_result().result is True, ros['client'].get_result().errorId
    running = [s for s in seen if s[3] == 'running']
    assert running, 'no running feedback: %s' % seen[:5]
    assert all(s[2] == 'three_points' for s in running), {s[2] for s in running}
    before = [s[1] for s in running if 0.05 < s[0] < 0.70]
    after = [s[1] for s in running if 0.80 < s[0] < 1.45]
    assert before and set(before) == {1}, 'before the middle waypoint: %s' % sorted(set(before))
    assert after and set(after) == {2}, 'past the middle waypoint: %s' % sorted(set(after))


def test_end_time_stretches_the_motion_to_end_then(ros, joints):
    """trajectory_options.end_time 5 s ahead (the fastest trajectory takes under 2 s): the
    plan is run slower so that right_j0 stops moving (slower than 0.02 rad/s) at its
    target at end_time (±0.2 s), not before."""
    import rospy
    g = far_goal(ros)
    end = now() + 5.0
    g.trajectory.trajectory_options.end_time = rospy.Time.from_sec(end)
    result, _ = run(ros, joints, g)
    assert result.result is True, result.errorId
    moving = [stamp(m) for m in joints.between(end - 3.0, now()) if abs(arm_velocities(m)[0]) > 0.02]
    assert moving, 'right_j0 did not move'
    assert moving[-1] == pytest.approx(end, abs=0.2), 'the motion ended %.2f s from end_time' % (moving[-1] - end)
    assert abs(angles(ros)[0] - FAR[0]) < 0.01


@pytest.fixture
def hand(ros, joints):
    from intera_core_msgs.msg import EndpointState
    yield from recording('/robot/limb/right/endpoint_state', EndpointState)


def hand_pose(msg):
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def quat_multiply(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def test_a_corner_is_passed_at_its_corner_distance_at_the_linear_speed_limit(ros, joints, hand):
    """A CARTESIAN goal 10 cm along −y then 10 cm up, corner_distance 4 cm at the corner and
    max_linear_speed 0.1 m/s: the hand's speed never passes 0.1 m/s (±10 %) and reaches it;
    it does not stop at the corner but passes it on the 90° arc tangent 4 cm either side,
    (√2 − 1) × 4 cm = 16.6 mm from it (±2 mm: the 1 mm path tolerance and the arm's
    tracking). With corner_distance 0 the hand stops at the corner (within 2 mm)."""
    p0, o0 = hand_pose(hand.last())
    corner, end = p0 + [0.0, -0.1, 0.0], p0 + [0.0, -0.1, 0.1]
    q = angles(ros)

    def cartesian(d):
        return goal([waypoint(q, pose=(corner, o0), max_linear_speed=0.1, corner_distance=d),
                     waypoint(q, pose=(end, o0), max_linear_speed=0.1)], 'CARTESIAN')
    t0 = now()
    _, result = send(ros, cartesian(0.04))
    assert result.result is True, result.errorId
    msgs = hand.between(t0, now())
    gaps = [np.linalg.norm(hand_pose(m)[0] - corner) for m in msgs]
    speeds = [np.linalg.norm([m.twist.linear.x, m.twist.linear.y, m.twist.linear.z]) for m in msgs]
    closest = int(np.argmin(gaps))
    assert gaps[closest] == pytest.approx((2 ** 0.5 - 1) * 0.04, abs=0.002), gaps[closest]
    assert speeds[closest] > 0.05, 'the hand slowed to %.3f m/s at the corner' % speeds[closest]
    assert 0.09 <= max(speeds) <= 0.1 * 1.10, 'peak %.3f m/s' % max(speeds)
    teleport(ros)
    t0 = now()
    _, result = send(ros, cartesian(0.0))
    assert result.result is True, result.errorId
    gaps = [np.linalg.norm(hand_pose(m)[0] - corner) for m in hand.between(t0, now())]
    assert min(gaps) < 0.002, 'without a corner distance the hand passed %.4f m from it' % min(gaps)


def test_a_rotation_keeps_to_the_rotational_speed_limit(ros, joints, hand):
    """A CARTESIAN goal turning the hand 0.6 rad about base z in place, max_rotational_speed
    0.3 rad/s: its angular speed in endpoint_state never passes 0.3 rad/s (±10 %), reaches
    it, and the hand ends turned."""
    p0, o0 = hand_pose(hand.last())
    target = quat_multiply([0.0, 0.0, np.sin(0.3), np.cos(0.3)], o0)
    t0 = now()
    _, result = send(ros, goal([waypoint(angles(ros), pose=(p0, target), max_rotational_speed=0.3)],
                               'CARTESIAN'))
    assert result.result is True, result.errorId
    rates = [np.linalg.norm([m.twist.angular.x, m.twist.angular.y, m.twist.angular.z])
             for m in hand.between(t0, now())]
    assert 0.27 <= max(rates) <= 0.3 * 1.10, 'peak %.3f rad/s' % max(rates)
    p, o = hand_pose(hand.last())
    assert 2.0 * np.arccos(min(1.0, abs(float(np.dot(o, target))))) < 0.01 and np.linalg.norm(p - p0) < 0.002


# --- the nullspace flags ----------------------------------------------------------------------
# A CARTESIAN goal 2 cm straight up from neutral whose waypoint's joint_positions (the
# nullspace bias) ask for the elbow posture BIAS: over so short a path the arm cannot turn its
# elbow that far, so without nso_start_offset_allowed it ends 1.25 rad (as the planner
# measures it) short of that posture.
def up_2cm(ros, hand, **flags):
    p0, o0 = hand_pose(hand.last())
    g = goal([waypoint(BIAS, pose=(p0 + [0.0, 0.0, 0.02], o0))], 'CARTESIAN')
    for key, value in flags.items():
        setattr(g.trajectory.trajectory_options, key, value)
    return g, p0


def test_nso_check_end_offset_refuses_a_posture_it_would_not_reach(ros, joints, hand):
    """With nso_check_end_offset the goal is aborted before any motion with
    CARTESIAN_INTERPOLATION_FAILED and the arm stays where it is; the same goal without the
    flag moves the hand 2 cm up."""
    g, p0 = up_2cm(ros, hand, nso_check_end_offset=True)
    before = angles(ros)
    state, result = send(ros, g)
    assert state == ABORTED and result.result is False, (state, result.errorId)
    assert result.errorId == 'CARTESIAN_INTERPOLATION_FAILED', result.errorId
    assert_no_motion(ros, before)
    g, _ = up_2cm(ros, hand)
    _, result = send(ros, g)
    assert result.result is True, result.errorId
    assert np.linalg.norm(hand_pose(hand.last())[0] - (p0 + [0.0, 0.0, 0.02])) < 0.002


def test_nso_start_offset_turns_the_posture_first_with_the_hand_still(ros, joints, hand):
    """With nso_start_offset_allowed (and nso_check_end_offset) the arm first moves in its
    nullspace: the joints move more than 0.3 rad while the hand stays within 2 mm of where it
    was (endpoint_state), then the hand goes 2 cm up; the end check now passes. Without the
    flag the hand leaves its place before any joint has moved 0.05 rad."""
    def first_moves(t0):
        """(largest joint change, largest hand offset) while the hand is within 2 mm."""
        q0 = arm_positions(joints.between(0.0, t0)[-1])
        hands = hand.between(t0, now())
        p_start = hand_pose(hands[0])[0]
        left = next((stamp(m) for m in hands if np.linalg.norm(hand_pose(m)[0] - p_start) > 0.002), now())
        still = [np.abs(arm_positions(m) - q0).max() for m in joints.between(t0, left)]
        return max(still), p_start

    g, p0 = up_2cm(ros, hand, nso_start_offset_allowed=True, nso_check_end_offset=True)
    t0 = now()
    _, result = send(ros, g)
    assert result.result is True, result.errorId
    turned, p_start = first_moves(t0)
    assert turned > 0.3, 'the joints moved %.3f rad before the hand moved 2 mm' % turned
    assert np.linalg.norm(hand_pose(hand.last())[0] - (p0 + [0.0, 0.0, 0.02])) < 0.002
    teleport(ros)
    g, p0 = up_2cm(ros, hand)
    t0 = now()
    _, result = send(ros, g)
    assert result.result is True, result.errorId
    turned, _ = first_moves(t0)
    assert turned < 0.05, 'without the flag the joints moved %.3f rad before the hand moved' % turned


# --- Cartesian acceleration limits ------------------------------------------------------------
# A stop-to-stop run too short to reach its speed limit is planned at full acceleration, then
# at full deceleration. The plan steps its acceleration at the start, at the switch and at the
# end; the arm's tracking rounds each step off with a transient of a few tens of ms in which
# the hand's acceleration passes the limit (up to about 1.3 x over 0.1 s), so the limit is
# asserted outside TRANSIENT s of those three instants. docs/motion.md names the transients.
TRANSIENT = 0.15      # s
WINDOW = 0.1          # s: the acceleration is the slope of the twist over this window


def hand_motion(msgs, angular, floor):
    """(stamps, speeds, accelerations) of the hand from endpoint_state's twist (linear or
    angular), and the (start, switch, end) of its motion: first and last speed over `floor`
    and the peak speed. An acceleration is the slope of a least-squares line through WINDOW
    s of the twist (single 100 Hz differences would measure the tracking's ripple)."""
    ts = np.array([stamp(m) for m in msgs])
    v = np.array([[x.x, x.y, x.z] for x in (m.twist.angular if angular else m.twist.linear for m in msgs)])
    speed = np.linalg.norm(v, axis=1)
    acc = np.full(len(ts), np.nan)
    for i in range(len(ts)):
        sel = np.abs(ts - ts[i]) <= WINDOW / 2
        if sel.sum() >= 3:
            acc[i] = np.linalg.norm(np.polyfit(ts[sel] - ts[i], v[sel], 1)[0])
    moving = ts[speed > floor]
    return ts, speed, acc, (moving[0], ts[int(np.argmax(speed))], moving[-1])


def assert_acceleration_kept(slow, fast, limit, angular, floor, unit):
    """The slow run's acceleration within `limit` ±10 % away from its transients (and at the
    limit there for most of the time), and the run longer than the fast one."""
    ts, _, acc, marks = hand_motion(slow, angular, floor)
    steady = np.all([np.abs(ts - m) > TRANSIENT for m in marks], axis=0) & (ts > marks[0]) & (ts < marks[2])
    assert steady.sum() > 20, 'only %d steady samples' % steady.sum()
    assert np.nanmax(acc[steady]) <= limit * 1.10, 'peak %.3f %s' % (np.nanmax(acc[steady]), unit)
    assert np.nanmedian(acc[steady]) >= limit * 0.90, 'median %.3f %s' % (np.nanmedian(acc[steady]), unit)
    _, _, _, fast_marks = hand_motion(fast, angular, floor)
    slow_s, fast_s = marks[2] - marks[0], fast_marks[2] - fast_marks[0]
    assert slow_s > 1.5 * fast_s, 'it took %.2f s, %.2f s with a high limit' % (slow_s, fast_s)


def test_a_line_keeps_to_the_linear_acceleration_limit(ros, joints, hand):
    """A CARTESIAN goal 10 cm along −y with max_linear_accel 0.2 m/s² (speed limit 0.6 m/s,
    not reached): the hand's acceleration in endpoint_state stays within 0.2 m/s² ±10 %
    (outside the tracking's transients) and the motion takes longer than with
    max_linear_accel 2 m/s²."""
    p0, o0 = hand_pose(hand.last())
    q = angles(ros)

    def line(accel):
        t0 = now()
        _, result = send(ros, goal([waypoint(q, pose=(p0 + [0.0, -0.1, 0.0], o0), max_linear_accel=accel)],
                                   'CARTESIAN'))
        assert result.result is True, result.errorId
        assert np.linalg.norm(hand_pose(hand.last())[0] - (p0 + [0.0, -0.1, 0.0])) < 0.002
        return hand.between(t0, now())
    slow = line(0.2)
    teleport(ros)
    assert_acceleration_kept(slow, line(2.0), 0.2, False, 0.005, 'm/s²')


def test_a_rotation_keeps_to_the_rotational_acceleration_limit(ros, joints, hand):
    """A CARTESIAN goal turning the hand 0.6 rad about base z in place with
    max_rotational_accel 0.5 rad/s² (speed limit 1.57 rad/s, not reached): the hand's angular
    acceleration in endpoint_state stays within 0.5 rad/s² ±10 % (outside the tracking's
    transients) and the turn takes longer than with max_rotational_accel 5 rad/s²."""
    p0, o0 = hand_pose(hand.last())
    target = quat_multiply([0.0, 0.0, np.sin(0.3), np.cos(0.3)], o0)
    q = angles(ros)

    def turn(accel):
        t0 = now()
        _, result = send(ros, goal([waypoint(q, pose=(p0, target), max_rotational_accel=accel)], 'CARTESIAN'))
        assert result.result is True, result.errorId
        return hand.between(t0, now())
    slow = turn(0.5)
    teleport(ros)
    assert_acceleration_kept(slow, turn(5.0), 0.5, True, 0.02, 'rad/s²')
