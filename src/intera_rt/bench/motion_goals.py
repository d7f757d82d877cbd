"""The motion section's goals: MotionCommand trajectories as the benches send them (JOINT
random walks, CARTESIAN poses), and as the SDK's go_to_cartesian_pose.py sends them."""
import numpy as np

from intera_rt import robot
from intera_rt.model import ARM_JOINTS

NEUTRAL = np.array(robot.NEUTRAL)
BIAS = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
FAST = [7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0]
DOWN = (0.0, 1.0, 0.0, 0.0)
RATIO = 0.7
# go_to_cartesian_pose.py's waypoint options (max_joint_speed_ratio 1.0, its default
# Cartesian speeds, the SDK's default 'fast' joint accelerations).
SDK_RATIO = 1.0


def _messages():
    from intera_motion_msgs.msg import Trajectory, Waypoint
    return Trajectory, Waypoint


def joint_goal(targets):
    Trajectory, Waypoint = _messages()
    t = Trajectory(label='bench', joint_names=list(ARM_JOINTS))
    t.trajectory_options.interpolation_type = 'JOINT'
    for q in targets:
        w = Waypoint(joint_positions=list(q), active_endpoint='right_hand')
        w.options.max_joint_speed_ratio = RATIO
        w.options.max_joint_accel = list(FAST)
        t.waypoints.append(w)
    return t


def cartesian_goal(poses, corner=0.0, bias=None):
    Trajectory, Waypoint = _messages()
    t = Trajectory(label='bench', joint_names=list(ARM_JOINTS))
    t.trajectory_options.interpolation_type = 'CARTESIAN'
    for p, q in poses:
        w = Waypoint(active_endpoint='right_hand')
        w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z = p
        o = w.pose.pose.orientation
        o.x, o.y, o.z, o.w = q
        if bias is not None:
            w.joint_positions = list(bias)
        w.options.max_joint_speed_ratio = RATIO
        w.options.max_linear_speed = w.options.max_linear_accel = 0.6
        w.options.max_rotational_speed = w.options.max_rotational_accel = 1.57
        w.options.corner_distance = corner
        t.waypoints.append(w)
    return t


def sdk_cartesian_goal(poses, current, corner=0.0):
    """What go_to_cartesian_pose.py sends for each pose: max_joint_speed_ratio 1.0, 0.6 m/s,
    0.6 m/s², 1.57 rad/s and rad/s², the 'fast' joint accelerations, and the current joint
    angles as the nullspace bias (no -q given)."""
    traj = cartesian_goal(poses, corner=corner, bias=current)
    for w in traj.waypoints:
        w.options.max_joint_speed_ratio = SDK_RATIO
        w.options.max_joint_accel = list(FAST)
    return traj
