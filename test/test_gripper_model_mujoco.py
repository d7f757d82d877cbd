"""The gripper in the robot's model on the MuJoCo plant (`--gripper --backend mujoco`),
through ROS: the same checks as test_gripper_model (the reported gravity carries the
gripper; the arm holds still in position, torque and zero-G with no false collision; a 2 kg
tool on /robot/urdf is carried), with the tool's bodies in MuJoCo. Issue 21 item 1."""
from clients import realtime_state  # noqa: F401 - a fixture
from test_gripper_model import (  # noqa: F401 - the tests, run on this module's robot
    ros, test_a_2kg_tool_on_robot_urdf_is_carried, test_the_arm_with_the_gripper_holds_still,
    test_the_reported_gravity_carries_the_gripper)

SAWYER_ARGS = ['--gripper', '--backend', 'mujoco', '--sim-time', '--speed', '1']
