"""/calibration_command with a gripper on the flange (`--gripper`): the robot refuses to
calibrate (cannotCalibrateWithGripper), as calibrate_arm.py's own check would have it, and
the arm does not move."""
import numpy as np
import pytest

from intera_rt.robot import ARM_JOINTS

pytestmark = pytest.mark.sawyer_args(['--gripper', '--sim-time', '--speed', 'max'])


def test_refused_with_a_gripper_attached(robot):
    import actionlib
    import rospy
    from actionlib_msgs.msg import GoalStatus
    from intera_core_msgs.msg import (CalibrationCommandAction, CalibrationCommandGoal,
                                      IONodeConfiguration)
    from sensor_msgs.msg import JointState
    from rosharness import latest, wait_for_message

    # What is_gripper_removed() sees: an end-effector device.
    config = wait_for_message('/io/end_effector/config', IONodeConfiguration, 10.0)
    assert [d.name for d in config.devices] == ['right_gripper']
    client = actionlib.SimpleActionClient('/calibration_command', CalibrationCommandAction)
    assert client.wait_for_server(rospy.Duration(10.0))
    with latest('/robot/joint_states', JointState) as joints:
        msg = joints.wait(5.0)
        q0 = np.array([msg.position[msg.name.index(n)] for n in ARM_JOINTS])
        client.send_goal(CalibrationCommandGoal(command='start'))
        assert client.wait_for_result(rospy.Duration(30.0))
        assert client.get_state() == GoalStatus.REJECTED
        res = client.get_result()
        assert res.result is False and res.statusId == 'cannotCalibrateWithGripper'
        assert 'right_gripper' in client.get_goal_status_text()
        msg = joints.wait_new(5.0)
        q = np.array([msg.position[msg.name.index(n)] for n in ARM_JOINTS])
        assert np.abs(q - q0).max() < 1e-3
