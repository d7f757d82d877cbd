"""The speed scaling's status and bypass through ROS (beyond the robot, after seed 002):
/intera_rt/safety_status names the closest pair of avoidance shapes and the scale
--velocity-scaling applies while the elbow folds toward the shoulder; the
/intera_rt/bypass_speed_scaling service lets the same fold through at full speed and
re-arms itself after safety_status.bypass_timeout (3 s here), after which the fold is slowed
again. Judged by right_j3's angle and speed in /robot/joint_states.

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from clients import Arm, Series, arm_positions, arm_velocities, now, pace, sim_service
from contract import ARM, NEUTRAL

BYPASS_TIMEOUT = 3.0
SAWYER_ARGS = ['--sim-time', '--speed', '1', '--velocity-scaling',
               '--stage-option', 'safety_status.bypass_timeout=%g' % BYPASS_TIMEOUT]

SPEED = 0.3             # rad/s on right_j3 (0.16 m/s at the hand: no high-speed scaling)
STOP = 2.62             # rad: --velocity-scaling's scale is 0 from here (the overlap begins)


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_rt_msgs.msg import SafetyStatus
    from intera_rt_msgs.srv import SetJointPositions
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool
    from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
    armnav = AvoidanceModel(default_armnav_xml())
    rospy.wait_for_service('/intera_rt/bypass_speed_scaling', 10.0)
    out = {'teleport': sim_service('set_joint_positions', SetJointPositions),
           'bypass': rospy.ServiceProxy('/intera_rt/bypass_speed_scaling', SetBool),
           'joints': Series('/robot/joint_states', JointState),
           'status': Series('/intera_rt/safety_status', SafetyStatus), 'arm': Arm(),
           'armnav': armnav}
    out['joints'].last()
    out['status'].last()
    yield out
    out['bypass'](False)
    out['joints'].unregister()
    out['status'].unregister()


def fold(ros, start, seconds):
    """right_j3 at SPEED from `start` for `seconds`, then 0: (t0, t1, j3 angles, j3 speeds)."""
    q = np.array(NEUTRAL)
    q[3] = start
    resp = ros['teleport'](list(ARM), list(q))
    assert resp.success, resp.message
    ros['joints'].wait_until(now() + 0.3)
    arm = ros['arm']
    t0, t1, _ = pace(100, lambda t: arm.set_velocities({'right_j3': SPEED}), seconds)
    arm.set_velocities({'right_j3': 0.0})
    msgs = ros['joints'].between(t0, t1)
    assert msgs, 'no joint states'
    return t0, t1, np.array([arm_positions(m)[3] for m in msgs]), \
        np.array([arm_velocities(m)[3] for m in msgs])


def closest(ros, j3):
    q = np.array(NEUTRAL)
    q[3] = j3
    clearances = ros['armnav'].clearances(q)
    k = int(np.argmin(clearances))
    return set(ros['armnav'].pairs[k]), float(clearances[k])


def test_the_status_names_the_closest_pair_and_the_scale_during_a_fold(ros):
    """Folding from 2.45 rad for 2.5 s: the status reports a scale under 0.5 with
    velocity_scaling on, its clearance within 5 mm of the model's at the elbow's angle then,
    naming that pair."""
    t0, t1, q3, _ = fold(ros, 2.45, 2.5)
    statuses = ros['status'].between(t0, t1)
    assert statuses, 'no safety_status during the fold'
    assert all(s.velocity_scaling and not s.bypassed for s in statuses)
    slowed = [s for s in statuses if s.scale < 0.5]
    assert slowed, 'no scale under 0.5: %s' % sorted({round(s.scale, 2) for s in statuses})
    joints = ros['joints']
    for s in slowed[-3:]:
        near = min(joints.between(s.header.stamp.to_sec() - 0.02, s.header.stamp.to_sec() + 0.02),
                   key=lambda m: abs(m.header.stamp.to_sec() - s.header.stamp.to_sec()))
        pair, clearance = closest(ros, arm_positions(near)[3])
        assert set(s.closest_pair) == pair, (s.closest_pair, pair)
        assert s.min_clearance == pytest.approx(clearance, abs=0.005)
        assert s.min_clearance < 0.05


def test_the_bypass_lets_the_fold_through_at_full_speed_and_re_arms_itself(ros):
    """Bypassed: from 2.45 rad the elbow keeps 0.3 rad/s (±5 %) past 2.55 (where the scale
    would be under 0.5) and passes STOP; the status says bypassed. After 3 s the bypass is
    off by itself (status), and the same fold stops short of STOP again."""
    t_asked = now()
    resp = ros['bypass'](True)
    assert resp.success and 'bypassed for 3 s' in resp.message, resp.message
    t_on = now()
    _, t1, q3, v3 = fold(ros, 2.45, 0.6)
    fast = v3[(q3 > 2.55) & (q3 < 2.6)]
    assert len(fast) and np.min(fast) > 0.95 * SPEED, np.round(fast, 3)
    assert q3.max() > 2.6, q3.max()
    assert any(s.bypassed and 0 < s.bypass_remaining <= BYPASS_TIMEOUT
               for s in ros['status'].between(t_on, t1))
    ros['status'].wait(lambda s: not s.bypassed and s.header.stamp.to_sec() > t_on,
                       3.0 * BYPASS_TIMEOUT + 10.0, 'the bypass re-armed')
    re_armed = min(s.header.stamp.to_sec() for s in ros['status'].between(t_on)
                   if not s.bypassed)
    # (the bypass began between asking and the answer; states come every 10 ms)
    assert re_armed - t_asked >= BYPASS_TIMEOUT - 0.02 and re_armed - t_on <= BYPASS_TIMEOUT + 0.1, (
        're-armed %.3f s after asking, %.3f s after the answer' % (re_armed - t_asked, re_armed - t_on))
    _, _, q3, v3 = fold(ros, 2.45, 2.5)
    assert q3.max() < STOP, 're-armed, yet the elbow reached %.3f rad' % q3.max()
    slowed = v3[(q3 > 2.58)]
    assert len(slowed) and np.max(slowed) < 0.5 * SPEED, np.round(slowed, 3)
