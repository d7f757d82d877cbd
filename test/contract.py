"""The robot's interface as a client sees it: the names and constants the tests share.

Robot facts (joint names, the neutral pose) come from their one home, intera_rt.robot; the
rest are constants of the Sawyer's ROS interface (topic namespaces, intera_core_msgs'
JointCommand modes, actionlib's goal states, the robot's log lines) that an SDK script
would write down the same way. Helpers that talk to the robot: clients.py.
"""
import re

import numpy as np

from intera_rt import robot

ARM = list(robot.ARM_JOINTS)                    # right_j0..6
NEUTRAL = np.array(robot.NEUTRAL)
TOL = 0.008726646                       # intera_interface JOINT_ANGLE_TOLERANCE

NS = '/robot/limb/right/'
CAMERA_NS = '/io/internal_camera/'

# intera_core_msgs/JointCommand.mode
POSITION_MODE, VELOCITY_MODE, TORQUE_MODE, TRAJECTORY_MODE = 1, 2, 3, 4

# actionlib_msgs/GoalStatus: the states a goal ends in
TERMINAL = {2: 'PREEMPTED', 3: 'SUCCEEDED', 4: 'ABORTED', 5: 'REJECTED', 8: 'RECALLED'}

# The robot's /rosout lines for a detected collision (seed 000's wording)
IMPACT_LINE = re.compile(r'^impact: \d+\.\d{3} > 0\.750, largest contributor: right_j\d, '
                         r'with value: \d+\.\d{3}')
SQUISH_LINE = re.compile(r'^squish on joint right_j\d - \d+\.\d{3} > \d+\.\d{3}$')
