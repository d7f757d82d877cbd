"""The electric gripper's shapes through ROS (`scripts/sawyer --gripper`; issue 21 item 1):
collision avoidance keeps the gripper off the arm's own links, and the embedded plant feels
the gripper on an obstacle.

- The arm folded (elbow and wrist) so that the gripper's fingers reach into the shoulder's
  avoidance shapes while the bare arm's are ~40 mm clear: in the hold the robot pushes and
  names the gripper's shapes; with the cuff grasped (zero-G) the links are pushed apart and
  the robot stops pushing.
- A box placed with /intera_rt/sim/add_obstacle 3.5 cm below the fingertips' tip, the arm
  sent 10 cm further down: the arm stops on the box with the tip above its top.

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from clients import (Arm, Series, add_box, arm_positions, grasp_cuff, now, sim,  # noqa: F401
                     teleport)
from contract import ARM, NEUTRAL, NS
from rosharness import wait_for

SAWYER_ARGS = ['--gripper', '--sim-time', '--speed', '1']
GRIPPER = {'right_gripper_base', 'right_gripper_l_finger', 'right_gripper_r_finger'}
SHOULDER = {'right_l1', 'right_l1_2'}
FOLD = np.array(NEUTRAL, dtype=float)
FOLD[3], FOLD[5] = 2.0, 1.9             # as test_tool_shapes: ~24 mm into the shoulder's shapes


@pytest.fixture(scope='module')
def ros(robot, sim):
    import rospy
    from intera_core_msgs.msg import CollisionAvoidanceState
    from intera_rt_msgs.msg import RealtimeState
    from sensor_msgs.msg import JointState
    from intera_rt.model import RobotModel
    from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml, tool_shapes
    from intera_rt.model.urdf_fragments import electric_gripper_fragment
    wait_for(lambda: 'right_gripper_tip' in rospy.get_param('/robot_description'), 20.0,
             'the gripper in /robot_description')
    armnav = default_armnav_xml()
    out = {'sim': sim, 'arm': Arm(),
           'joints': Series('/robot/joint_states', JointState),
           'realtime': Series('/intera_rt/realtime_state', RealtimeState),
           'avoid': Series(NS + 'collision_avoidance_state', CollisionAvoidanceState),
           # What the test measures with: the avoidance shapes with the gripper's, and the
           # grafted model's kinematics.
           'shapes': AvoidanceModel(armnav).with_tool(tool_shapes(armnav, electric_gripper_fragment())),
           'kin': RobotModel(rospy.get_param('/robot_description')).arm_dynamics}
    for key in ('joints', 'realtime'):
        out[key].last()
    yield out
    for key in ('joints', 'realtime', 'avoid'):
        out[key].unregister()


def overlap(ros, q):
    return max(0.0, -float(ros['shapes'].clearances(q, 0.0).min()))


def hold_at(ros, q):
    teleport(ros['sim'], q)
    ros['realtime'].wait(lambda m: m.controller == 'hold' and not m.collision, 10.0, 'holding')


def test_zero_g_pushes_the_gripper_out_of_the_shoulder(ros):
    commanded = overlap(ros, FOLD)
    assert commanded > 0.015
    try:
        hold_at(ros, FOLD)
        names = ros['avoid'].wait(lambda m: set(m.collision_object) & GRIPPER, 10.0,
                                  'the gripper among the overlapping shapes').collision_object
        assert set(names) & SHOULDER, names
        grasp_cuff(True)
        m = ros['realtime'].wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
        t_g = m.header.stamp.to_sec()
        ros['joints'].wait_until(t_g + 2.0)
        q = arm_positions(ros['joints'].between(t_g + 1.5, t_g + 2.0)[-1])
        assert overlap(ros, q) < 0.1 * commanded, \
            'not pushed apart: %.1f mm of %.1f mm left' % (overlap(ros, q) * 1e3, commanded * 1e3)
        after = ros['realtime'].between(t_g + 1.5, t_g + 2.0)
        assert after and not any(m.collision_avoidance_active for m in after)
    finally:
        grasp_cuff(False)
        hold_at(ros, NEUTRAL)


def test_the_gripper_lowered_onto_a_box_stops_on_it(ros):
    import rospy
    kin, arm = ros['kin'], ros['arm']
    hold_at(ros, NEUTRAL)
    tip = kin.tip('right_gripper_tip', np.array(NEUTRAL))[0]
    top = tip[2] - 0.035
    add_box(ros['sim'], 'table', (tip[0] - 0.1, tip[1], top - 0.05), (0.6, 0.6, 0.1))
    try:
        target = np.array(NEUTRAL, dtype=float)
        target[1] += 0.3                    # the tip 10 cm lower: 6.5 cm into the box
        t0 = now()
        rate = rospy.Rate(100)
        while now() < t0 + 3.0:
            arm.set_positions(dict(zip(ARM, target)))
            rate.sleep()
        ros['joints'].wait_until(t0 + 3.0)
        qs = [arm_positions(m) for m in ros['joints'].between(t0, t0 + 3.0)]
        lowest = min(kin.tip('right_gripper_tip', np.array(q))[0][2] for q in qs)
        assert lowest > top - 0.005, 'the tip went %.1f mm into the box' % ((top - lowest) * 1e3)
        assert qs[-1][1] < target[1] - 0.05, 'the arm reached its target through the box'
    finally:
        ros['sim']['remove_obstacle']('table')
        hold_at(ros, NEUTRAL)
