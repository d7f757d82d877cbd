"""An SDK-style client picks a block from a table on the gazebo backend against the Gazebo
stand-in, carries it and places it (issue 22 items 1 and 3, through ROS): the same client
and judgement as test_pick_place_mujoco (the demo's kind of table and a 4 cm block spawned
with /gazebo/spawn_sdf_model, IK on right_gripper_tip, joint positions streamed at 100 Hz,
the gripper's IO signals as intera_interface.Gripper, /gazebo/get_model_state), here with
the fingers as Gazebo drives them: the gripper device commands gripper_controller (an
effort_controllers/JointGroupPositionController over the finger joints, a PID each) through
the gazebo backend, and reads them back from the stand-in's joint_states. The block is held
by the fingers' squeeze and friction in the stand-in's physics (MuJoCo as Gazebo sees the
URDF and the SDF), not attached. The stand-in runs at a quarter of real time, so the client
paces its 100 Hz stream by the robot's clock, as rospy.Rate does under /use_sim_time, and
moves at test_pick_place_mujoco's speed in the robot's time."""
import numpy as np

from rosharness import wait_for
from test_pick_place_mujoco import (  # noqa: F401 - the fixture and client, on this module's robot
    BLOCK, CLOSED, OPEN, PLACE, TABLE_TOP, TIMEOUT, block, cell, grip, move, pick_and_place)

SAWYER_ARGS = ['--sim-time', '--backend', 'gazebo', '--backend-option', 'standin=true',
               '--backend-option', 'real_time_factor=0.25', '--gripper']


def test_an_sdk_client_picks_a_block_carries_it_and_places_it(cell):
    """test_pick_place_mujoco's client and judgement, aimed at the block's centre."""
    pick_and_place(cell, aim_off=np.zeros(3), clock='robot')


def _closing_rate(series, t0, upper, lower):
    """m/s: how fast the finger separation (Gazebo's joint states from t0 on) went from
    `upper` down to `lower`."""
    from clients import stamp
    seen = []
    for m in series.between(t0):
        q = dict(zip(m.name, m.position))
        seen.append((stamp(m), q['right_gripper_l_finger_joint'] - q['right_gripper_r_finger_joint']))
    t_hi = next(t for t, sep in seen if sep < upper)
    t_lo = next(t for t, sep in seen if sep < lower)
    return (upper - lower) / (t_lo - t_hi)


def test_the_fingers_are_gazebos(robot, cell):
    """The gripper device follows the stand-in's finger joints (the seam's state comes from
    Gazebo's joint_states through the gazebo backend) and moves them at its speed as far as
    Gazebo lets them: 0.15 m/s as asked; 1.5 m/s held back by the URDF's finger velocity
    limit (0.1 m/s a finger), which gazebo_ros_control enforces once per 1 ms step (no push
    while a finger is faster), so a light finger overshoots it by a step's acceleration; a
    move with nothing between the fingers grips nothing."""
    from sensor_msgs.msg import JointState
    from clients import Series, stamp
    wait_for(lambda: block(cell)[1] < 1e-6, TIMEOUT, 'the block at rest on the table')
    g = grip(cell, OPEN, lambda g: g.value('position_response_m') > OPEN - 0.002, 'open')
    gazebo = Series('/sawyer_gazebo/joint_states', JointState)
    try:
        for speed, (low, high) in ((0.15, (0.1275, 0.1725)), (1.5, (0.2, 0.75))):
            assert g.set('speed_mps', speed) == ''
            t0 = stamp(gazebo.last())
            g = grip(cell, 0.01, lambda g: abs(g.value('position_response_m') - 0.01) < 0.001,
                     'the fingers at 1 cm')
            q = dict(zip(gazebo.last().name, gazebo.last().position))
            assert abs(q['right_gripper_l_finger_joint'] - q['right_gripper_r_finger_joint']
                       - g.value('position_response_m')) < 0.001
            assert g.value('is_gripping') is False
            closing = _closing_rate(gazebo, t0, 0.035, 0.015)
            assert low < closing < high, (speed, closing)
            grip(cell, OPEN, lambda g: g.value('position_response_m') > OPEN - 0.002, 'open again')
    finally:
        gazebo.unregister()
    at, _ = block(cell)
    assert abs(at[2] - (TABLE_TOP + BLOCK / 2)) < 2e-3
