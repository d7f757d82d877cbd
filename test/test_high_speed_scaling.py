"""High-speed scaling through ROS (seed 003): VELOCITY_MODE folding the elbow into the
shoulder fast (1.5 rad/s: 0.78 m/s at the hand) is slowed as the high-speed shapes close in
and the hand goes less deep into the shoulder's avoidance shape than with the speed scaling
bypassed; a slow fold (0.3 rad/s: 0.16 m/s, under the 0.2 m/s threshold) is not slowed.
Judged by right_j3's speed in /robot/joint_states and the armnav clearance its positions
give (model.avoidance, the shapes collision avoidance pushes).

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from clients import Arm, Series, arm_positions, arm_velocities, now, pace, sim_service
from contract import ARM, NEUTRAL

SAWYER_ARGS = ['--sim-time', '--speed', '1']

FAST, SLOW = 1.5, 0.3        # rad/s on right_j3
FROM = 2.3                   # rad of right_j3


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool
    from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
    armnav = AvoidanceModel(default_armnav_xml())
    rospy.wait_for_service('/intera_rt/bypass_speed_scaling', 10.0)
    out = {'teleport': sim_service('set_joint_positions', SetJointPositions),
           'bypass': rospy.ServiceProxy('/intera_rt/bypass_speed_scaling', SetBool),
           'joints': Series('/robot/joint_states', JointState), 'arm': Arm(), 'armnav': armnav}
    out['joints'].last()
    yield out
    out['bypass'](False)
    out['joints'].unregister()


def fold(ros, speed, seconds):
    """right_j3 at `speed` from FROM for `seconds`, then 0: (j3, j3 speed, armnav min
    clearance) per joint state from the start until 0.5 s after."""
    q = np.array(NEUTRAL)
    q[3] = FROM
    resp = ros['teleport'](list(ARM), list(q))
    assert resp.success, resp.message
    ros['joints'].wait_until(now() + 0.3)
    arm = ros['arm']
    t0, t1, _ = pace(100, lambda t: arm.set_velocities({'right_j3': speed}), seconds)
    pace(100, lambda t: arm.set_velocities({'right_j3': 0.0}), 0.5)
    msgs = ros['joints'].between(t0, t1 + 0.5)
    assert msgs, 'no joint states'
    rows = []
    for m in msgs:
        p = arm_positions(m)
        rows.append((p[3], arm_velocities(m)[3], float(min(ros['armnav'].clearances(p)))))
    return rows


def test_a_fast_fold_is_slowed_and_goes_less_deep_than_bypassed(ros):
    """Where the armnav shapes are 2–20 mm from meeting, right_j3 moves at most 60 % of
    1.5 rad/s (bypassed: at least 95 %), and the deepest overlap it reaches is at least
    2 cm shallower than bypassed."""
    slowed = fold(ros, FAST, 0.45)
    resp = ros['bypass'](True)
    assert resp.success and 'bypassed' in resp.message, resp.message
    free = fold(ros, FAST, 0.45)
    ros['bypass'](False)
    near = [v for _, v, c in slowed if 0.002 < c < 0.02]
    near_free = [v for _, v, c in free if 0.002 < c < 0.02]
    assert near and max(near) < 0.6 * FAST, 'not slowed: %s' % np.round(near, 2)
    assert near_free and min(near_free) > 0.95 * FAST, 'bypassed but slowed: %s' % np.round(near_free, 2)
    depth, depth_free = min(c for _, _, c in slowed), min(c for _, _, c in free)
    assert depth > depth_free + 0.02, 'overlap %.3f m scaled, %.3f m bypassed' % (-depth, -depth_free)


def test_a_slow_fold_is_not_slowed(ros):
    """0.3 rad/s until the armnav shapes are 3 mm from meeting: the commanded speed (±5 %)
    once the acceleration ramp is done."""
    rows = fold(ros, SLOW, 1.4)
    near = [v for q, v, c in rows if q > 2.45 and c > 0.003]
    assert near and min(near) > 0.95 * SLOW and max(near) < 1.05 * SLOW, np.round(near, 3)
