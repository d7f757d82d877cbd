"""The realtime loop's plugins through ROS, as a user meets them: the suppress_* topics,
zero-G, collision avoidance and collision detection with sim obstacles, and the JTAS and
motion controller reacting to what the robot detects. Conditions are made to happen through
the sim-control API (obstacles, wrenches, the cuff); no test publishes the robot's own
topics.

The robot runs on sim time at 1x: durations asserted are robot time (state stamps)."""
import numpy as np
import pytest

from clients import (Arm, Sent, Series, add_box, clean, collisions, grasp_cuff, mc,  # noqa: F401
                     moveit_goal, now, pace, realtime_state, rosout, sim, smooth_motion, stamp,
                     sync_publisher, wall_in_j0_path)
from contract import ARM, IMPACT_LINE, NS, SQUISH_LINE, TERMINAL
from rosharness import wait_connected, wait_for

from intera_rt.robot import NEUTRAL, SUPPRESS_TOPICS, SUPPRESS_WINDOW

SAWYER_ARGS = ['--sim-time', '--speed', '1']
STATE_PERIOD = 0.01            # s between two realtime_state messages


@pytest.mark.parametrize('topic', sorted(SUPPRESS_TOPICS))
def test_a_suppress_topic_suppresses_while_it_arrives_and_stops_within_0_2_s(realtime_state, topic):
    from std_msgs.msg import Empty
    what = SUPPRESS_TOPICS[topic]
    pub = sync_publisher(NS + topic, Empty)
    wait_connected(pub, '/realtime_loop')
    sent = []

    def publish(t):
        pub.publish(Empty())
        sent.append(t)
    pace(8, publish, 1.0)                               # 8 Hz: above the 5 Hz the robot needs
    last = sent[-1]
    after = realtime_state.wait(lambda m: what not in m.suppressed and stamp(m) > last, 10.0,
                                '%s no longer suppressed' % what)
    pub.unregister()
    during = realtime_state.between(sent[0] + 0.05, last)
    assert during and all(what in m.suppressed for m in during), \
        '%s must stay suppressed while %s arrives at 8 Hz' % (what, topic)
    ended = stamp(after) - last
    # The robot holds it for 0.2 s after the last message (which may reach it a few ms after
    # this node sent it) and publishes the change in the state of that tick (states are
    # 10 ms apart; realtime_state goes out on every change).
    assert SUPPRESS_WINDOW - STATE_PERIOD <= ended <= SUPPRESS_WINDOW + STATE_PERIOD + 0.02, \
        '%s ended %.3f s after the last %s, not 0.2 s' % (what, ended, topic)


# --- collision detection with sim obstacles -------------------------------------------------


def test_a_joint_motion_into_a_box_stops_within_10_ms_of_contact(sim, realtime_state, rosout, mc, clean):
    """The motion controller moves right_j0 through a box: the robot detects the impact and
    stops the arm within 10 ms of the first contact (sim truth), reports
    collision_detection_state for about 0.5 s, the motion ends CONTROLLER_NOT_FOLLOWING,
    and a new motion (away from the box) then succeeds."""
    from intera_core_msgs.msg import CollisionDetectionState
    wall_in_j0_path(sim)
    t0 = now()
    target = np.array(NEUTRAL)
    target[0] = 0.6
    detection = Series(NS + 'collision_detection_state', CollisionDetectionState)
    try:
        state, result = mc(target)
        assert result.result is False and result.errorId == 'CONTROLLER_NOT_FOLLOWING', result
        hit = realtime_state.wait(lambda m: m.collision and stamp(m) > t0, 10.0, 'a collision')
        assert hit.impact and hit.sim_contacts >= 0
        began, detected = hit.sim_contact_began.to_sec(), hit.last_detection.to_sec()
        assert began > t0 and 0.0 <= detected - began <= 0.010, \
            'contact at %.4f, stopped at %.4f' % (began, detected)
        realtime_state.wait_until(detected + 1.5)
        (first, last, msgs), = collisions(realtime_state, t0)
        assert 0.45 <= last - first <= 1.2, 'collision reported for %.3f s' % (last - first)
        # collision_detection_state said so too, for the same stretch
        seen = [m for m in detection.between(first, last + STATE_PERIOD) if m.collision_state]
        assert seen and abs(stamp(seen[0]) - first) <= STATE_PERIOD
    finally:
        detection.unregister()
    wait_for(lambda: any(IMPACT_LINE.match(line) for line in list(rosout)), 10.0,
             'the impact log line in the robot\'s form')
    # Stopped short of the goal, clear of the box; a motion away from it succeeds.
    state, result = mc(np.array(NEUTRAL))
    assert result.result is True, result.errorId


def test_a_jtas_goal_into_a_box_aborts_and_the_arm_holds(sim, realtime_state, clean):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    client = actionlib.SimpleActionClient('/robot/limb/right/follow_joint_trajectory',
                                          FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    wall_in_j0_path(sim)
    t0 = now()
    sent = Sent(client, moveit_goal(smooth_motion(NEUTRAL, [0.7, 0, 0, 0, 0, 0, 0], 1.5), 1.5))
    assert client.wait_for_result(rospy.Duration(30.0))
    result = client.get_result()
    assert (TERMINAL[client.get_state()], result.error_code) == ('ABORTED', -4), result.error_string
    assert 'collision' in result.error_string
    (first, last, _), = collisions(realtime_state, t0)[:1]
    # The robot holds the arm where it stopped: after the hold it stays put.
    from sensor_msgs.msg import JointState
    js = Series('/robot/joint_states', JointState)
    try:
        js.wait_until(first + 1.5)
        held = [np.array([m.position[m.name.index(n)] for n in ARM]) for m in js.between(first + 0.6, first + 1.5)]
        assert held and np.abs(np.array(held) - held[0]).max() < 0.01
    finally:
        js.unregister()
    assert sent.feedback


def test_pressing_on_a_box_in_torque_mode_is_a_squish(sim, realtime_state, rosout, clean):
    """The hand is lowered gently onto a table (position mode, speed ratio 0.02), then a
    torque-mode client presses it down with a force ramped at 20 N/s (τ = Jᵀ·f): a squish,
    not an impact, in the robot's log form; the robot then keeps refusing the push."""
    model = sim['model']
    hand = model.arm_dynamics.tip('right_hand', np.array(NEUTRAL))[0]
    add_box(sim, 'table', (hand[0], hand[1], hand[2] - 0.05 - 0.1), (0.4, 0.4, 0.2))
    arm = Arm()
    realtime_state.wait(lambda m: m.sim_contacts == 0, 5.0, 'the table clear of the arm')
    lowered = np.array(NEUTRAL)
    lowered[1] += 0.1
    t0 = now()
    try:
        arm.set_speed_ratio(0.02)
        touch = pace(100, lambda t: arm.set_positions(dict(zip(ARM, lowered)))
                     or realtime_state.last().sim_contacts > 0, 8.0)
        assert touch[2], 'the hand never reached the table'
        t_touch = now()

        def press(t):
            _, _, jac = model.arm_dynamics.tip('right_hand', arm.q())
            force = min(60.0, 20.0 * (t - t_touch))
            arm.set_torques(dict(zip(ARM, jac.T @ np.array([0.0, 0.0, -force, 0.0, 0.0, 0.0]))))
            return realtime_state.last().collision
        _, _, stopped = pace(500, press, 4.0)
        assert stopped, 'pressing up to 60 N on the table was never detected'
        (first, _, msgs), = collisions(realtime_state, t0)[:1]
        assert msgs[0].squish and not msgs[0].impact, 'the first detection was not a squish'
    finally:
        arm.set_speed_ratio(0.3)
        arm.set_timeout(0.2)
        arm.set_positions(dict(zip(ARM, arm.q())))
    wait_for(lambda: any(SQUISH_LINE.match(line) for line in list(rosout)), 10.0,
             "the squish log line in the robot's form")


def test_a_large_force_at_the_hand_is_a_hand_overwrench(sim, realtime_state, rosout, clean):
    """With contact safety suppressed (≥ 5 Hz) a 100 N push at the hand is a hand
    over-wrench; the arm stops and holds."""
    from geometry_msgs.msg import Wrench
    from std_msgs.msg import Empty
    pub = sync_publisher(NS + 'suppress_contact_safety', Empty)
    wait_connected(pub, '/realtime_loop')
    t0 = now()
    pushed = []

    def suppress(t):
        pub.publish(Empty())
        if not pushed and t - t0 > 0.3:
            w = Wrench()
            w.force.z = -100.0
            assert sim['apply_wrench']('right_hand', w, 1.0).success
            pushed.append(t)
        msgs = realtime_state.between(t0)
        return bool(msgs) and msgs[-1].hand_overwrench
    try:
        _, _, hit = pace(10, suppress, 2.0)
        assert hit, 'no hand over-wrench'
        m = realtime_state.last()
        assert m.collision and not m.squish and not m.impact
    finally:
        pub.unregister()
    wait_for(lambda: any(line.startswith('hand over-wrench: force') for line in list(rosout)),
             10.0, 'the hand over-wrench log line')



def test_a_push_begun_under_hand_overwrench_suppression_is_detected_when_it_lapses(
        sim, realtime_state, rosout, clean):
    """A 100 N push at the hand begun while suppress_hand_overwrench_safety arrives (and
    suppress_contact_safety throughout): no detection while it arrives; when it stops, the
    robot stops the arm as soon as the suppression lapses (SUPPRESS_WINDOW after the last
    message), long before the push ends."""
    from geometry_msgs.msg import Wrench
    from std_msgs.msg import Empty
    contact = sync_publisher(NS + 'suppress_contact_safety', Empty)
    overwrench = sync_publisher(NS + 'suppress_hand_overwrench_safety', Empty)
    wait_connected(contact, '/realtime_loop')
    wait_connected(overwrench, '/realtime_loop')
    t0 = now()
    pushed, last = [], []

    def suppress(t):
        contact.publish(Empty())
        if t - t0 < 1.0:
            overwrench.publish(Empty())
            last[:] = [t]
        if not pushed and t - t0 > 0.3:
            w = Wrench()
            w.force.z = -100.0
            assert sim['apply_wrench']('right_hand', w, 3.0).success
            pushed.append(t)
        msgs = realtime_state.between(t0)
        return bool(msgs) and msgs[-1].hand_overwrench
    try:
        _, _, hit = pace(10, suppress, 2.5)
    finally:
        contact.unregister()
        overwrench.unregister()
    assert hit, 'the push was not detected once the suppression lapsed'
    first = next(m for m in realtime_state.between(t0) if m.hand_overwrench)
    late = stamp(first) - last[0]
    # The last message may reach the robot a few ms after it was sent; states are 10 ms apart.
    assert SUPPRESS_WINDOW - STATE_PERIOD <= late <= SUPPRESS_WINDOW + STATE_PERIOD + 0.03, \
        'hand over-wrench detected %.3f s after the last suppress message, not %.1f s' % (
            late, SUPPRESS_WINDOW)
    assert first.collision and not first.squish and not first.impact


# --- zero-G -------------------------------------------------------------------------------
def push_hand(sim, force, seconds):
    from geometry_msgs.msg import Wrench
    w = Wrench()
    w.force.x, w.force.y, w.force.z = force
    assert sim['apply_wrench']('right_hand', w, seconds).success


def test_zero_g_moves_under_a_push_and_holds_where_let_go(sim, realtime_state, clean):
    """Grasping the cuff: the joint controllers let go (gravity compensation stays) and an
    8 N push moves the arm; released, it holds where it was let go, with no collision
    detected on the person guiding it."""
    from sensor_msgs.msg import JointState
    js = Series('/robot/joint_states', JointState)
    t0 = now()
    try:
        q0 = np.array([js.last().position[js.last().name.index(n)] for n in ARM])
        grasp_cuff(True)
        realtime_state.wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
        push_hand(sim, (0.0, 8.0, 0.0), 0.3)
        t_push = now()
        js.wait_until(t_push + 1.0)
        grasp_cuff(False)
        released = realtime_state.wait(lambda m: not m.zero_g, 10.0, 'zero-G to end')
        t_rel = stamp(released)
        js.wait_until(t_rel + 1.3)
        # (what was still moving when let go is stopped at once, then held)
        q = [np.array([m.position[m.name.index(n)] for n in ARM]) for m in js.between(t_rel + 0.3, t_rel + 1.3)]
        assert np.abs(q[0] - q0).max() > 0.05, 'the push did not move the arm in zero-G'
        assert np.abs(np.array(q) - q[0]).max() < 0.01, 'the arm did not hold where it was let go'
        assert released.controller == 'hold'
        hits = [m for m in realtime_state.between(t0) if m.collision]
        assert not hits, 'a collision reported at %.3f (impact %s, squish %s, over-wrench %s; ' \
            'detected at %.3f; the test began at %.3f, zero-G ended at %.3f, checked at %.3f)' % (
                stamp(hits[0]), hits[0].impact, hits[0].squish, hits[0].hand_overwrench,
                hits[0].last_detection.to_sec(), t0, t_rel, now())
    finally:
        grasp_cuff(False)
        js.unregister()


def test_the_same_push_without_zero_g_and_with_cuff_interaction_suppressed(sim, realtime_state, clean):
    """suppress_cuff_interaction at ≥ 5 Hz: grasping the cuff does nothing and the arm
    holds against the same push."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Empty
    pub = sync_publisher(NS + 'suppress_cuff_interaction', Empty)
    wait_connected(pub, '/realtime_loop')
    js = Series('/robot/joint_states', JointState)
    q0 = np.array([js.last().position[js.last().name.index(n)] for n in ARM])
    t0 = now()
    pushed = []

    def body(t):
        pub.publish(Empty())
        if not pushed and t - t0 > 0.3:
            grasp_cuff(True)
            push_hand(sim, (0.0, 20.0, 0.0), 0.6)
            pushed.append(t)
    try:
        pace(10, body, 1.5)
        msgs = realtime_state.between(pushed[0], now())
        assert msgs and all(m.cuff and not m.zero_g and m.controller == 'hold' for m in msgs[5:])
        q = np.array([js.last().position[js.last().name.index(n)] for n in ARM])
        assert np.abs(q - q0).max() < 0.02, 'the arm gave way with cuff interaction suppressed'
    finally:
        grasp_cuff(False)
        pub.unregister()
        js.unregister()


def test_zero_g_ends_a_motion_with_zero_g_activated_during_trajectory(sim, realtime_state, mc, clean):
    import threading
    target = np.array(NEUTRAL)
    target[0] = 1.2
    out = {}
    mover = threading.Thread(target=lambda: out.update(result=mc(target, ratio=0.3)))
    mover.start()
    try:
        realtime_state.wait(lambda m: m.controller == 'trajectory', 30.0, 'the motion running')
        grasp_cuff(True)
        mover.join(60.0)
        state, result = out['result']
        assert result.result is False and result.errorId == 'ZERO_G_ACTIVATED_DURING_TRAJECTORY', result
        # while grasped, a new motion is refused the same way
        state, result = mc(np.array(NEUTRAL))
        assert result.errorId == 'ZERO_G_ACTIVATED_DURING_TRAJECTORY'
    finally:
        grasp_cuff(False)
    realtime_state.wait(lambda m: not m.zero_g, 10.0, 'zero-G to end')
    state, result = mc(np.array(NEUTRAL))
    assert result.result is True, result.errorId


# --- collision avoidance --------------------------------------------------------------------
def _fold_elbow(arm, q_target, mode, seconds, during=None):
    """Stream q_target in POSITION_MODE or TRAJECTORY_MODE (zero velocity) at 100 Hz."""
    def body(t):
        if during is not None:
            during(t)
        if mode == 'position':
            arm.set_positions(dict(zip(ARM, q_target)))
        else:
            arm.set_trajectory(ARM, q_target, [0.0] * 7, [0.0] * 7)
    return pace(100, body, seconds)


ELBOW_INTO_SHOULDER = np.array(NEUTRAL) + np.array([0.0, 0.0, 0.0, 2.66 - NEUTRAL[3], 0.0, 0.0, 0.0])


def test_links_driven_toward_each_other_are_pushed_apart(sim, realtime_state, clean):
    """POSITION_MODE folding the elbow until the hand's avoidance shape overlaps the
    shoulder's: the robot pushes the links apart (the arm stops short of the target), names
    the shapes in collision_avoidance_state and reports the torque in SEAJointState's
    interaction_torque; no collision is detected."""
    from intera_core_msgs.msg import CollisionAvoidanceState, SEAJointState
    arm = Arm()
    avoid = Series(NS + 'collision_avoidance_state', CollisionAvoidanceState)
    sea = Series(NS + 'gravity_compensation_torques', SEAJointState)
    t0 = now()
    try:
        arm.set_speed_ratio(0.5)
        _, t1, _ = _fold_elbow(arm, ELBOW_INTO_SHOULDER, 'position', 4.0)
        short = ELBOW_INTO_SHOULDER[3] - arm.q()[3]
        assert short > 0.02, 'the elbow was not held off (%.4f rad short of the target)' % short
        last = realtime_state.between(t1 - 0.5, t1)
        assert last and all(m.collision_avoidance_active for m in last)
        assert not any(m.collision for m in realtime_state.between(t0))
        names = avoid.wait(lambda m: m.collision_object, 5.0, 'named shapes').collision_object
        assert 'right_hand' in names and ({'right_l1', 'right_l1_2'} & set(names)), names
        pushed = sea.wait(lambda m: max(abs(x) for x in m.interaction_torque) > 1.0, 5.0,
                          'interaction_torque')
        assert np.allclose(pushed.interaction_torque,
                           realtime_state.last().collision_avoidance_torque, atol=5.0)
    finally:
        avoid.unregister()
        sea.unregister()
        arm.set_speed_ratio(0.3)


@pytest.mark.parametrize('how', ['suppressed', 'trajectory'])
def test_links_are_not_pushed_apart_while_suppressed_or_in_trajectory_mode(sim, realtime_state, clean, how):
    from std_msgs.msg import Empty
    arm = Arm()
    pub = sync_publisher(NS + 'suppress_collision_avoidance', Empty)
    wait_connected(pub, '/realtime_loop')
    sent = [0.0]

    def suppress(t):
        if how == 'suppressed' and t - sent[0] >= 0.1:
            pub.publish(Empty())
            sent[0] = t
    try:
        arm.set_speed_ratio(0.5)
        if how == 'trajectory':       # ramp there first: a trajectory sample is where it puts the arm
            _fold_elbow(arm, np.array(NEUTRAL), 'trajectory', 0.2)
            q0 = arm.q()
            for k in range(1, 301):
                arm.set_trajectory(ARM, q0 + (ELBOW_INTO_SHOULDER - q0) * k / 300.0, [0.0] * 7, [0.0] * 7)
                pace(100, lambda t: False, 0.01)
        _, t1, _ = _fold_elbow(arm, ELBOW_INTO_SHOULDER, 'position' if how == 'suppressed' else 'trajectory',
                               3.0, suppress)
        assert abs(arm.q()[3] - ELBOW_INTO_SHOULDER[3]) < 0.01, 'the target was not reached'
        assert not any(m.collision_avoidance_active for m in realtime_state.between(t1 - 0.5, t1))
    finally:
        pub.unregister()
        arm.set_speed_ratio(0.3)
        arm.set_positions(dict(zip(ARM, arm.q())))


# --- joint-speed safety -----------------------------------------------------------------------
def test_a_huge_torque_command_is_braked_not_flung(sim, realtime_state, rosout, clean):
    """A single TORQUE_MODE command of 1e6 N·m on right_j0 (saturated at 80 N·m and
    reported): the joint-speed monitor brakes the arm once a joint passes 1.5 × its
    velocity limit, and its log line names that joint and speed (right_j0 on the robot's
    drives; on a plant without drive armature, Gazebo's, right_j0's torque flings the
    light right_j2 past it first); right_j0 never reaches 1.8 ×, nor moves far; no
    collision is reported."""
    import re
    from sensor_msgs.msg import JointState
    arm = Arm()
    js = Series('/robot/joint_states', JointState)
    t0 = now()
    try:
        arm.set_timeout(0.2)
        arm.set_torques({'right_j0': 1e6})
        js.wait_until(t0 + 1.0)
        msgs = js.between(t0, t0 + 1.0)
        speed = max(abs(m.velocity[m.name.index('right_j0')]) for m in msgs)
        moved = max(abs(m.position[m.name.index('right_j0')] - NEUTRAL[0]) for m in msgs)
        assert speed < 1.8 * 1.74 and moved < 0.6, (speed, moved)
        assert not any(m.collision for m in realtime_state.between(t0))
    finally:
        js.unregister()
    braking = re.compile(r'(right_j\d) moving at ([\d.]+) rad/s, over its ([\d.]+) rad/s limit.*braking')

    def braked():
        for line in list(rosout):
            m = braking.search(line)
            if m and float(m.group(2)) > 1.5 * float(m.group(3)):
                return True
        return False
    wait_for(braked, 10.0, 'the braking log line')
