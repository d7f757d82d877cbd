"""The motion controller's messages out: MotionCommand results (with the plan's and the run's
TrajectoryAnalysis) and feedback, the interpolated path, joint and interaction commands."""
import numpy as np
import rospy
from intera_core_msgs.msg import InteractionControlCommand, JointCommand
from intera_motion_msgs.msg import (InterpolatedPath, MotionCommandFeedback, MotionCommandResult,
                                    TrajectoryAnalysis, WaypointSimple)

from intera_rt.motion import analysis as motion_analysis
from intera_rt.motion.errors import HAVE_NOT_REACHED_FIRST_WAYPOINT
from intera_rt.robot import ARM_JOINTS


def result(ok, error_id, planned=None, tracker=None, last=None):
    """A MotionCommandResult: the plan's analysis when planned, the run's when tracked;
    last: the last waypoint reached (None: not even the first)."""
    r = MotionCommandResult(result=bool(ok), errorId=error_id or '')
    r.last_successful_waypoint = HAVE_NOT_REACHED_FIRST_WAYPOINT if last is None else int(last)
    a = TrajectoryAnalysis()
    if planned is not None:
        an = planned.analysis
        a.planned_duration = an['planned_duration']
        a.min_angle_command = list(an['min_angle_command'])
        a.max_angle_command = list(an['max_angle_command'])
        a.peak_speed_command = list(an['peak_speed_command'])
        a.peak_accel_command = list(an['peak_accel_command'])
        a.peak_jerk_command = list(an['peak_jerk_command'])
        a.min_time_rate = a.max_time_rate = 1.0
    if tracker is not None:
        a.measured_duration = tracker.measured_duration
        a.min_time_rate = tracker.min_rate_used
        a.max_time_rate = tracker.max_rate_used
        a.max_position_error = list(tracker.max_position_error)
        a.max_velocity_error = list(tracker.max_velocity_error)
    r.trajectory_analysis = a
    return r


def feedback(gh, status, label, waypoint, rid):
    """Publish a MotionCommandFeedback on the goal (a finished goal: nothing)."""
    fb = MotionCommandFeedback()
    fb.status.header.stamp = rospy.Time.now()
    fb.status.motion_status = status
    fb.status.current_trajectory = label
    fb.status.current_waypoint = max(0, int(waypoint))
    fb.status.motion_request = rid
    try:
        gh.publish_feedback(fb)
    except Exception:  # noqa: BLE001 - a finished goal: nothing to tell
        pass


def interpolated_path(model, planned, label):
    """The InterpolatedPath message of a plan (every path_interpolation_step s)."""
    try:
        endpoint = model.planner.endpoint(planned.request.endpoint)
    except Exception:  # noqa: BLE001
        endpoint = None
    points = motion_analysis.interpolated_path(planned.plan, planned.request.path_interpolation_step,
                                               endpoint)
    msg = InterpolatedPath(label=label, joint_names=list(ARM_JOINTS))
    msg.header.stamp = rospy.Time.now()
    msg.header.frame_id = 'base'
    for t, q, pose, seg in points:
        w = WaypointSimple(joint_positions=list(q), active_endpoint=planned.request.endpoint,
                           segment_index=seg, time=t)
        if pose is not None:
            (w.pose.position.x, w.pose.position.y, w.pose.position.z) = pose[0]
            (w.pose.orientation.x, w.pose.orientation.y, w.pose.orientation.z,
             w.pose.orientation.w) = pose[1]
        msg.interpolated_path.append(w)
    return msg


def joint_command(p, v, a, lower, upper, t):
    """A TRAJECTORY_MODE setpoint of the plan at time t (s), stamped t: the loop takes the
    stamp as the time the sample refers to and extrapolates it from there, so a later
    reading of the clock (a millisecond or more further under sim time on a loaded machine)
    would put the reference behind the plan by that much of its speed, a ripple from one
    setpoint to the next. (A spline can graze a joint limit by float noise; the loop refuses
    positions beyond, so positions are clipped to [lower, upper].)"""
    msg = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=list(ARM_JOINTS),
                       position=list(np.clip(p, lower, upper)), velocity=list(v), acceleration=list(a))
    msg.header.stamp = rospy.Time.from_sec(t)
    return msg


def interaction_command(params):
    """The goal's interaction_params as an InteractionControlCommand."""
    msg = InteractionControlCommand()
    for slot in msg.__slots__:
        setattr(msg, slot, getattr(params, slot))
    msg.header.stamp = rospy.Time.now()
    return msg
