"""A stand-in for the SDK's joint_trajectory_action_server.py, for test_sdk_jtas (the SDK
is not installed here). It starts the way the SDK's server does — the same start-up gates
(robot_contract §1: /manifest/robot_class, /robot/state within 10 s, the cuff IO device's
config within 5 s, joint states, endpoint and tip states within 5 s, the IK and FK
services within 5 s each) — then serves control_msgs/FollowJointTrajectory on
/robot/limb/right/follow_joint_trajectory (a SimpleActionServer) and drives the arm through
the robot's public interface: POSITION_MODE commands at 100 Hz along straight lines between
the goal's points. Its results say error_string 'stand-in', so a test can tell which server
answered. Logs "Joint Trajectory Action Server Running" once serving, as the SDK's does.

    python sdk_jtas_standin.py [__name:=sdk_position_joint_trajectory_action_server_right]
"""
import sys
import time

import actionlib
import numpy as np
import rospy
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryResult
from intera_core_msgs.msg import (EndpointState, EndpointStates, IODeviceConfiguration,
                                  JointCommand, RobotAssemblyState)
from sensor_msgs.msg import JointState

ACTION = 'robot/limb/right/follow_joint_trajectory'
RATE = 100.0


def gate(topic, msg_type, timeout, predicate=lambda m: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = rospy.wait_for_message(topic, msg_type, timeout=max(0.1, deadline - time.monotonic()))
        except rospy.ROSException:
            break
        if predicate(msg):
            return msg
    rospy.logfatal('stand-in: no %s within %.0f s', topic, timeout)
    sys.exit(1)


class StandIn:
    def __init__(self):
        if not str(rospy.get_param('/manifest/robot_class', '')).lower():
            rospy.logfatal('stand-in: no /manifest/robot_class')
            sys.exit(1)
        gate('robot/state', RobotAssemblyState, 10.0)
        gate('/io/robot/cuff/config', IODeviceConfiguration, 5.0,
             lambda m: m.device is not None and m.device.name == 'cuff' and m.time.secs != 0)
        self.arm = rospy.get_param('robot_config/right_config/joint_names')
        gate('/robot/joint_states', JointState, 5.0, lambda m: all(n in m.name for n in self.arm))
        gate('/robot/limb/right/endpoint_state', EndpointState, 5.0)
        gate('/robot/limb/right/tip_states', EndpointStates, 5.0)
        for svc in ('IKService', 'FKService'):
            rospy.wait_for_service('ExternalTools/right/PositionKinematicsNode/' + svc, 5.0)
        self.q = None
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joints, queue_size=1)
        self.pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1)
        self.server = actionlib.SimpleActionServer(ACTION, FollowJointTrajectoryAction,
                                                   self._execute, auto_start=False)
        self.server.start()
        rospy.loginfo('Joint Trajectory Action Server Running (stand-in)')

    def _on_joints(self, msg):
        self.q = np.array([msg.position[msg.name.index(n)] for n in self.arm])

    def _execute(self, goal):
        names = list(goal.trajectory.joint_names)
        idx = [names.index(n) for n in self.arm]
        times = [0.0] + [p.time_from_start.to_sec() for p in goal.trajectory.points]
        points = [self.q.copy()] + [np.array(p.positions)[idx] for p in goal.trajectory.points]
        rate = rospy.Rate(RATE)
        t0 = rospy.get_time()
        while not rospy.is_shutdown():
            if self.server.is_preempt_requested():
                self.server.set_preempted(FollowJointTrajectoryResult(error_string='stand-in'))
                return
            t = rospy.get_time() - t0
            p = np.array([np.interp(t, times, [q[j] for q in points]) for j in range(7)])
            self.pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=self.arm,
                                          position=p.tolist()))
            if t > times[-1] and np.abs(self.q - points[-1]).max() < 0.01:
                break
            if t > times[-1] + 5.0:
                self.server.set_aborted(FollowJointTrajectoryResult(
                    error_code=FollowJointTrajectoryResult.GOAL_TOLERANCE_VIOLATED,
                    error_string='stand-in'))
                return
            rate.sleep()
        rospy.loginfo('stand-in: Joint Trajectory Action Succeeded')
        self.server.set_succeeded(FollowJointTrajectoryResult(error_string='stand-in'))


if __name__ == '__main__':
    rospy.init_node('sdk_position_joint_trajectory_action_server_right')
    StandIn()
    rospy.spin()
