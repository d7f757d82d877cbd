"""The joint trajectory action server's core: a FollowJointTrajectory goal checked and
turned into one spline over every arm joint (``goal``, ``spline``), and the running goal
watched against its tolerances (``monitor``) and, when it runs under interaction control,
its force threshold (``compliance``, with the controller state ROS's trajectory
controller offers).

Pure: no ROS, no clock. Every time is an absolute time in seconds that the caller passes in
(the ROS adapter uses the stamps of /robot/joint_states), so the same trajectory can be
sampled at command time and at the time a measurement was taken. Tolerances follow
control_msgs/JointTolerance: > 0 sets one, 0 keeps the default, < 0 disables the check
(``inf`` inside). The motion controller's planning is apart, in intera_rt.motion.
"""
from intera_rt.joint_trajectory.goal import (
    CODE_NAMES, GOAL_TOLERANCE_VIOLATED, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP,
    PATH_TOLERANCE_VIOLATED, SUCCESSFUL, AcceptedGoal, GoalError, JointTol, Limits, Point, State,
    Tolerances, plan_goal, resolve_tolerances)
from intera_rt.joint_trajectory.monitor import (
    GoalMonitor, Outcome, check_goal, check_path)
from intera_rt.joint_trajectory.compliance import (
    FORCE_THRESHOLD, FORCE_THRESHOLD_TEXT, ControllerState, controller_state, force_exceeded, query)
from intera_rt.joint_trajectory.spline import (
    MIN_STOP_TIME, STOP_DECEL_FRACTION, JointTrajectory, cubic_coeffs, quintic_coeffs,
    stop_duration, stop_trajectory)

__all__ = ['CODE_NAMES', 'GOAL_TOLERANCE_VIOLATED', 'INVALID_GOAL', 'INVALID_JOINTS', 'OLD_HEADER_TIMESTAMP',
           'PATH_TOLERANCE_VIOLATED', 'SUCCESSFUL', 'AcceptedGoal', 'GoalError', 'JointTol', 'Limits', 'Point',
           'State', 'Tolerances', 'plan_goal', 'resolve_tolerances', 'GoalMonitor', 'Outcome', 'check_goal',
           'check_path', 'MIN_STOP_TIME', 'STOP_DECEL_FRACTION', 'JointTrajectory', 'cubic_coeffs',
           'quintic_coeffs', 'stop_duration', 'stop_trajectory', 'FORCE_THRESHOLD',
           'FORCE_THRESHOLD_TEXT', 'ControllerState', 'controller_state', 'force_exceeded', 'query']
