"""Compliant execution's pure parts (after seed 004's trajectory controller with
compliance): the force threshold that ends a goal run under interaction control, and the
controller state a ROS joint_trajectory_controller offers (``~state``: desired, actual and
error at a measurement; ``~query_state``: the spline's sample at a time). Pure: no ROS, no
clock.

The threshold is on the Cartesian force at the endpoint (the norm of the wrench's force,
as the robot's endpoint_state gives it from the measured joint torques); over it, the
goal ends PATH_TOLERANCE_VIOLATED (control_msgs has no code of its own for it) with an
error_string that starts FORCE_THRESHOLD_TEXT and names the threshold and the force seen.
"""
import math
from dataclasses import dataclass

import numpy as np

from intera_rt.joint_trajectory.goal import PATH_TOLERANCE_VIOLATED
from intera_rt.joint_trajectory.monitor import Outcome

FORCE_THRESHOLD = 45.0          # N: the default threshold (seed 004's default per axis)
FORCE_THRESHOLD_TEXT = 'force threshold exceeded'


def force_exceeded(force, threshold, t_rel):
    """None while the endpoint force (N, 3 values) is within ``threshold`` N (≤ 0 or inf:
    no threshold), else the Outcome that ends the goal, ``t_rel`` s into it."""
    if force is None or not (0.0 < threshold < math.inf):
        return None
    f = np.asarray(force, float)
    size = float(math.sqrt(f @ f))
    if size <= threshold:
        return None
    return Outcome(PATH_TOLERANCE_VIOLATED, '%s: %.1f N at the endpoint (force [%.1f, %.1f, '
                   '%.1f] N in base) above the force_threshold %.1f N at %.3f s into the '
                   'trajectory; the arm was brought to rest'
                   % (FORCE_THRESHOLD_TEXT, size, f[0], f[1], f[2], threshold, t_rel))


@dataclass
class ControllerState:
    """Every arm joint's desired, actual and error (desired − actual) at a measurement."""
    desired: tuple              # p, v, a
    actual: tuple               # q, qd
    error: tuple                # p − q, v − qd


def controller_state(traj, t, q, qd):
    """The state at the measurement (t, q, qd) of a running trajectory."""
    p, v, a = traj.sample(t)
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    return ControllerState((p, v, a), (q, qd), (p - q, v - qd))


def query(traj, t):
    """The trajectory's sample (p, v, a) at time t, as query_state gives it; ValueError for
    a time before the trajectory's start (ROS's joint_trajectory_controller refuses those
    too). After its end a trajectory holds its last position at rest."""
    if traj is None:
        raise ValueError('no trajectory has run yet')
    if not math.isfinite(t):
        raise ValueError('time %r is not a time' % t)
    if t < traj.t_start:
        raise ValueError('time %.4f s precedes the trajectory\'s start %.4f s (by %.4f s)'
                         % (t, traj.t_start, traj.t_start - t))
    return traj.sample(t)
