"""The joint trajectory action server's messages out: the arm commands of its three modes
(see joint_trajectory_action_server) and the goal's feedback. Every command names all seven
arm joints: the robot's TRAJECTORY_MODE would keep extrapolating a joint a command leaves
out. Also the controller state (~state) that ROS's joint_trajectory_controller publishes."""
import numpy as np
import rospy
from control_msgs.msg import FollowJointTrajectoryFeedback, JointTrajectoryControllerState
from intera_core_msgs.msg import JointCommand
from trajectory_msgs.msg import JointTrajectoryPoint

from intera_rt import joint_trajectory as jt


def trajectory_command(mode, names, traj, t_cmd, t_meas, q, limits, kp):
    """The command for `traj` at t_cmd: position_w_id: TRAJECTORY_MODE with the spline's
    position, velocity and acceleration; position: POSITION_MODE ahead of the spline by the
    braking distance at its speed (the robot's approach to a target then runs at that speed,
    without lag); velocity: VELOCITY_MODE, the spline's velocity + kp x the position error
    measured at t_meas (q, None: unknown)."""
    p, v, a = traj.sample(t_cmd)
    msg = JointCommand(names=list(names))
    msg.header.stamp = rospy.Time.from_sec(t_cmd)
    if mode == 'position_w_id':
        msg.mode = JointCommand.TRAJECTORY_MODE
        msg.position, msg.velocity, msg.acceleration = p.tolist(), v.tolist(), a.tolist()
    elif mode == 'position':
        msg.mode = JointCommand.POSITION_MODE
        lead = p + v * np.abs(v) / (2.0 * limits.accel)
        msg.position = np.clip(lead, limits.lower, limits.upper).tolist()
    else:
        msg.mode = JointCommand.VELOCITY_MODE
        if q is not None:
            v = v + kp * (traj.sample(t_meas)[0] - q)
        msg.velocity = v.tolist()
    return msg


def hold_command(mode, names, p, stamp=None):
    """One last command that keeps the arm where `p` is, at rest (stamp: s, None: unset)."""
    msg = JointCommand(names=list(names))
    if stamp is not None:
        msg.header.stamp = rospy.Time.from_sec(stamp)
    if mode == 'position_w_id':
        msg.mode = JointCommand.TRAJECTORY_MODE
        msg.position = list(p)
        msg.velocity = msg.acceleration = [0.0] * len(names)
    elif mode == 'position':
        msg.mode = JointCommand.POSITION_MODE
        msg.position = list(p)
    else:
        msg.mode = JointCommand.VELOCITY_MODE
        msg.velocity = [0.0] * len(names)
    return msg


def _points(state, idx, since):
    """desired, actual, error JointTrajectoryPoints of a jt.ControllerState for the joints
    idx (in that order)."""
    (p_d, v_d, a_d), (q, qd), (e_p, e_v) = state.desired, state.actual, state.error
    return (JointTrajectoryPoint(positions=p_d[idx].tolist(), velocities=v_d[idx].tolist(),
                                 accelerations=a_d[idx].tolist(), time_from_start=since),
            JointTrajectoryPoint(positions=q[idx].tolist(), velocities=qd[idx].tolist(),
                                 time_from_start=since),
            JointTrajectoryPoint(positions=e_p[idx].tolist(), velocities=e_v[idx].tolist(),
                                 time_from_start=since))


def feedback(plan, t_meas, q, qd):
    """FollowJointTrajectoryFeedback of an accepted goal at the measurement (t_meas, q, qd),
    for the goal's joints in the goal's order."""
    since = rospy.Duration.from_sec(max(0.0, t_meas - plan.t_start))
    fb = FollowJointTrajectoryFeedback(joint_names=plan.joint_names)
    fb.header.stamp = rospy.Time.from_sec(t_meas)
    fb.desired, fb.actual, fb.error = _points(jt.controller_state(plan.trajectory, t_meas, q, qd),
                                              plan.goal_joints, since)
    return fb


def controller_state(names, traj, t_meas, q, qd):
    """JointTrajectoryControllerState (~state) of every arm joint at the measurement, as ROS's
    joint_trajectory_controller publishes it: desired at the measurement's stamp, error =
    desired − actual."""
    msg = JointTrajectoryControllerState(joint_names=list(names))
    msg.header.stamp = rospy.Time.from_sec(t_meas)
    since = rospy.Duration.from_sec(max(0.0, t_meas - traj.t_start))
    msg.desired, msg.actual, msg.error = _points(jt.controller_state(traj, t_meas, q, qd),
                                                 slice(None), since)
    return msg


def warn_if_faster_than_ratio(plan, ratio, limits):
    """POSITION_MODE targets move at most at set_speed_ratio × max speed: say so when
    the goal needs more (the server does not change the ratio other clients set)."""
    traj = plan.trajectory
    ts = np.linspace(traj.t_start, traj.t_end, max(2, int((traj.t_end - traj.t_start) / 0.01) + 1))
    peak = np.max(np.abs([traj.sample(t)[1] for t in ts]), axis=0)
    allowed = ratio * limits.velocity
    over = peak > allowed * 1.001
    if over.any():
        j = int(np.argmax(peak / np.maximum(allowed, 1e-9)))
        rospy.logwarn('joint_trajectory_action_server: position mode: %s needs %.2f rad/s but '
                      'set_speed_ratio %.2f allows %.2f rad/s (× max speed %.2f): the arm will lag '
                      'behind the trajectory (publish a higher set_speed_ratio, or use position_w_id)',
                      limits.names[j], peak[j], ratio, allowed[j], limits.velocity[j])
