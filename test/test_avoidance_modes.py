"""Collision avoidance in zero-G, VELOCITY_MODE and TORQUE_MODE through ROS: the elbow folded
until the hand's avoidance shape overlaps the shoulder's, then the cuff grasped, or the SDK's
velocity or torque commands folding it further. What is checked is what a user sees: the
elbow's angle in joint_states (pushed out of the overlap, or held off at its edge), the
robot pushing or not, and no collision detected. test_realtime_plugins covers position mode, hold and the
suppressed / trajectory cases.

In the armnav model at neutral with only right_j3 changed, the hand's shape overlaps the
shoulder's beyond its allowance from right_j3 ≈ 2.61 rad (2.62: 5 mm, 2.66: 20 mm).

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from rosharness import CollisionWatch
from clients import Arm, Series, arm_positions, arm_velocities, grasp_cuff, now, pace
from contract import ARM, NEUTRAL, NS

SAWYER_ARGS = ['--sim-time', '--speed', '1']

OVERLAP = 2.62          # rad of right_j3 (others at neutral): 5 mm of overlap
DEEP = 2.66             # 20 mm of overlap: where test_realtime_plugins' position fold aims


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_core_msgs.msg import CollisionAvoidanceState
    from intera_rt_msgs.msg import RealtimeState
    from intera_rt_msgs.srv import SetJointPositions
    from sensor_msgs.msg import JointState
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    out = {'teleport': rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions),
           'joints': Series('/robot/joint_states', JointState),
           'realtime': Series('/intera_rt/realtime_state', RealtimeState),
           'avoid': Series(NS + 'collision_avoidance_state', CollisionAvoidanceState)}
    out['joints'].last()
    out['realtime'].last()
    watch = CollisionWatch()
    yield out
    watch.close()
    for key in ('joints', 'realtime', 'avoid'):
        out[key].unregister()
    watch.check('collision avoidance pushing links apart')


def at_j3(ros, j3):
    """Teleport to neutral with right_j3 at j3 and wait for the hold there."""
    q = np.array(NEUTRAL)
    q[3] = j3
    resp = ros['teleport'](list(ARM), list(q))
    assert resp.success, resp.message
    ros['realtime'].wait(lambda m: m.controller == 'hold' and not m.collision, 10.0, 'holding')
    return q


@pytest.fixture
def folded(ros):
    """Each test starts holding with the elbow bent to 2.45 rad, clear of the shoulder."""
    at_j3(ros, 2.45)
    yield ros
    grasp_cuff(False)
    at_j3(ros, NEUTRAL[3])


def elbow(ros, t0, t1):
    msgs = ros['joints'].between(t0, t1)
    assert msgs, 'no joint states between %.2f and %.2f' % (t0, t1)
    return np.array([arm_positions(m)[3] for m in msgs]), np.array([arm_velocities(m)[3] for m in msgs])


def pushing(ros, t0, t1):
    """What the robot reported doing from t0 to t1, for a failure's message."""
    msgs = ros['realtime'].between(t0, t1)
    active = [m for m in msgs if m.collision_avoidance_active]
    peak = max((max(abs(x) for x in m.collision_avoidance_torque) for m in active), default=0.0)
    return ('avoidance active in %d of %d realtime states (peak %.1f N·m), controllers %s, '
            'collision in %d' % (len(active), len(msgs), peak, sorted({m.controller for m in msgs}),
                                 sum(m.collision for m in msgs)))


def test_zero_g_lets_overlapping_links_be_pushed_apart(folded):
    """The elbow set 20 mm into the shoulder: position hold keeps part of the overlap (the
    robot pushing, the shapes named); the cuff grasped: in zero-G nothing holds the elbow in
    and the robot pushes the links apart, out of the overlap, and stops pushing."""
    ros = folded
    at_j3(ros, DEEP)
    t_hold = now()
    ros['joints'].wait_until(t_hold + 0.5)
    q3, _ = elbow(ros, t_hold + 0.2, t_hold + 0.5)
    assert q3.min() > OVERLAP, 'the hold did not keep the elbow in the overlap (%.3f rad)' % q3.min()
    held = ros['realtime'].between(t_hold + 0.2, t_hold + 0.5)
    assert held and all(m.collision_avoidance_active for m in held)
    names = ros['avoid'].wait(lambda m: m.collision_object, 5.0, 'named shapes').collision_object
    assert 'right_hand' in names and ({'right_l1', 'right_l1_2'} & set(names)), names
    grasp_cuff(True)
    m = ros['realtime'].wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
    t_g = m.header.stamp.to_sec()
    ros['joints'].wait_until(t_g + 1.5)
    apart, _ = elbow(ros, t_g + 1.0, t_g + 1.5)
    assert apart.max() < q3.min() - 0.01, \
        'the links were not pushed apart: right_j3 %.3f rad in zero-G, %.3f in hold; %s' % (
            apart.max(), q3.min(), pushing(ros, t_g, t_g + 1.5))
    after = ros['realtime'].between(t_g + 1.0, t_g + 1.5)
    assert after and not any(m.collision_avoidance_active for m in after), pushing(ros, t_g + 1.0, t_g + 1.5)


def fold_on(ros, send, seconds=2.0):
    """Stream an SDK command at 100 Hz (send(arm)) for `seconds` of robot time from the
    folded pose; then back to position hold where the arm is. Returns (t0, t1)."""
    arm = Arm()
    t0 = now()
    try:
        pace(100, lambda t: send(arm), seconds)
    finally:
        arm.set_positions(dict(zip(ARM, arm_positions(ros['joints'].last()))))
    return t0, now()


def test_velocity_mode_folding_the_elbow_is_held_off_the_shoulder(folded):
    """VELOCITY_MODE +0.3 rad/s on right_j3 from 2.45 rad, the other joints at 0: the elbow
    stops within 5 mm of overlap (right_j3 ≤ 2.62 rad) instead of running on to its limit,
    and stays there while the command keeps arriving."""
    ros = folded
    t0, t1 = fold_on(ros, lambda arm: arm.set_velocities(dict(zip(ARM, [0, 0, 0, 0.3, 0, 0, 0]))))
    q3, _ = elbow(ros, t0, t1)
    assert q3.max() <= OVERLAP, 'the elbow folded to %.3f rad (overlap from ~2.61); %s' % (
        q3.max(), pushing(ros, t0, t1))
    late, _ = elbow(ros, t1 - 0.5, t1)
    assert late.max() - late.min() < 0.005, 'the elbow did not stay held off'
    assert q3.max() > 2.55, 'the elbow never reached the shoulder (%.3f rad)' % q3.max()


def test_torque_mode_folding_the_elbow_is_held_off_the_shoulder(folded):
    """TORQUE_MODE +2 N·m on right_j3 (0 on the others) from 2.45 rad: the robot cancels the
    folding torque once the shapes overlap and pushes them apart: right_j3 stays within 20 mm
    of overlap (≤ 2.67 rad; before, it folded to 2.81 rad), the robot acting on the torque
    command (avoidance active) while the torque controller stays in charge."""
    ros = folded
    t0, t1 = fold_on(ros, lambda arm: arm.set_torques(dict(zip(ARM, [0, 0, 0, 2.0, 0, 0, 0]))))
    q3, _ = elbow(ros, t0, t1)
    assert q3.max() <= DEEP + 0.01, 'the elbow folded to %.3f rad; %s' % (q3.max(), pushing(ros, t0, t1))
    assert q3.max() > 2.55, 'the elbow never reached the shoulder (%.3f rad)' % q3.max()
    active = [m for m in ros['realtime'].between(t0 + 0.5, t1) if m.collision_avoidance_active]
    assert active and all(m.controller == 'torque' for m in active), pushing(ros, t0, t1)
