"""--velocity-scaling through ROS (beyond the robot, seed 002): VELOCITY_MODE folding the
elbow toward the shoulder is slowed as the hand's avoidance shape closes in on the
shoulder's and stops short of the overlap; the same command away from it is not slowed.
Judged by right_j3's angle and speed in /robot/joint_states.

The scale is the armnav model's (model.avoidance.velocity_scale, zone 0.05 m of clearance):
at neutral with only right_j3 changed, 1 up to 2.46 rad, 0.52 at 2.54, 0.20 at 2.58, 0 from
2.62 (where the overlap begins).

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from clients import Arm, Series, arm_positions, arm_velocities, now, pace
from contract import ARM, NEUTRAL

SAWYER_ARGS = ['--sim-time', '--speed', '1', '--velocity-scaling']

SPEED = 0.3             # rad/s commanded on right_j3
STOP = 2.62             # rad: scale 0 (the overlap begins)


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    from sensor_msgs.msg import JointState
    from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    model = AvoidanceModel(default_armnav_xml())
    out = {'teleport': rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions),
           'joints': Series('/robot/joint_states', JointState), 'arm': Arm(), 'model': model}
    out['joints'].last()
    yield out
    out['joints'].unregister()


def at_j3(ros, j3):
    q = np.array(NEUTRAL)
    q[3] = j3
    resp = ros['teleport'](list(ARM), list(q))
    assert resp.success, resp.message
    ros['joints'].wait_until(now() + 0.3)


def elbow(ros, t0, t1):
    msgs = ros['joints'].between(t0, t1)
    assert msgs, 'no joint states'
    return np.array([arm_positions(m)[3] for m in msgs]), np.array([arm_velocities(m)[3] for m in msgs])


def scale(ros, j3, direction):
    q = np.array(NEUTRAL)
    q[3] = j3
    qd = np.zeros(7)
    qd[3] = direction
    return ros['model'].velocity_scale(q, 0.0, qd)


def test_a_fold_toward_the_shoulder_is_slowed_and_stops_short_of_the_overlap(ros):
    """+0.3 rad/s on right_j3 for 3 s from 2.45 rad (unscaled it would reach 3.04): the
    elbow slows as the model's scale falls (never faster than 0.3 × the scale where it is,
    a 10 % margin plus one 100 Hz state's travel), and never reaches the overlap."""
    at_j3(ros, 2.45)
    arm = ros['arm']
    t0, t1, _ = pace(100, lambda t: arm.set_velocities({'right_j3': SPEED}), 3.0)
    q3, v3 = elbow(ros, t0, t1)
    assert q3.max() < STOP, 'the elbow reached %.3f rad: into the overlap' % q3.max()
    assert q3.max() > 2.55, 'the elbow stopped far short (%.3f rad)' % q3.max()
    for q, v in zip(q3, v3):
        bound = SPEED * max(scale(ros, q - SPEED * 0.01, 1.0), scale(ros, q, 1.0)) * 1.10 + 0.01
        assert v <= bound, 'right_j3 at %.3f rad moved at %.3f rad/s (scale allows %.3f)' % (q, v, bound)
    arm.set_velocities({'right_j3': 0.0})


def test_motion_away_from_the_shoulder_is_not_slowed(ros):
    """From 2.58 rad (where a fold would be scaled to 0.2), −0.3 rad/s: the elbow moves away
    at the commanded speed (±5 %) once the acceleration ramp is done."""
    at_j3(ros, 2.58)
    assert scale(ros, 2.58, -1.0) == 1.0 and scale(ros, 2.58, 1.0) < 0.3
    arm = ros['arm']
    t0, t1, _ = pace(100, lambda t: arm.set_velocities({'right_j3': -SPEED}), 1.0)
    _, v3 = elbow(ros, t0 + 0.5, t1)
    assert np.median(v3) == pytest.approx(-SPEED, rel=0.05), np.median(v3)
    arm.set_velocities({'right_j3': 0.0})
