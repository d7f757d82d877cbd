"""Watching a running goal: from measurements, whether it runs on, succeeded or failed
(path tolerance while it runs, goal tolerance and stopped velocity after its end). Pure."""
from dataclasses import dataclass

import numpy as np

from intera_rt.joint_trajectory.goal import (GOAL_TOLERANCE_VIOLATED, PATH_TOLERANCE_VIOLATED,
                                             SUCCESSFUL)


@dataclass
class Outcome:
    code: int
    message: str

    @property
    def succeeded(self):
        return self.code == SUCCESSFUL


class GoalMonitor:
    """Decides, from measurements, whether a goal runs on, succeeded or failed.

    ``update(t, q, qd)`` with the time the measurement was taken: None while running;
    an Outcome once decided. Path tolerance is checked on every measurement up to the end
    of the trajectory; afterwards the goal succeeds as soon as every joint is within its
    goal tolerance and under its stopped-velocity tolerance, and fails with
    GOAL_TOLERANCE_VIOLATED if that has not happened goal_time after the end."""

    def __init__(self, plan):
        self.plan = plan
        self.names = plan.trajectory.names
        self.worst_path_error = 0.0

    def update(self, t, q, qd):
        traj, tol = self.plan.trajectory, self.plan.tolerances
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        if t <= self.plan.t_end:
            p_d, v_d, _ = traj.sample(t)
            return check_path(self.names, p_d, v_d, q, qd, tol, t - traj.t_start, self)
        p_end = traj.end_positions()
        why = check_goal(self.names, p_end, q, qd, tol)
        if why is None:
            return Outcome(SUCCESSFUL, 'trajectory executed (worst path error %.4f rad)'
                           % self.worst_path_error)
        late = t - self.plan.t_end
        if late > tol.goal_time:
            return Outcome(GOAL_TOLERANCE_VIOLATED, '%s %.3f s after the end of the trajectory '
                           '(goal_time tolerance %.3f s)' % (why, late, tol.goal_time))
        return None


def check_path(names, p_d, v_d, q, qd, tol, t_rel=0.0, stats=None):
    """None, or an Outcome(PATH_TOLERANCE_VIOLATED) naming the worst joint."""
    err = np.abs(p_d - q)
    if stats is not None:
        stats.worst_path_error = max(stats.worst_path_error, float(err.max()))
    over = err - tol.path_position
    if (over > 0).any():
        j = int(np.argmax(over))
        return Outcome(PATH_TOLERANCE_VIOLATED, '%s is %.4f rad from its desired position %.4f '
                       '(at %.4f) at %.3f s into the trajectory; path tolerance %.4f rad'
                       % (names[j], err[j], p_d[j], q[j], t_rel, tol.path_position[j]))
    verr = np.abs(v_d - qd)
    over = verr - tol.path_velocity
    if (over > 0).any():
        j = int(np.argmax(over))
        return Outcome(PATH_TOLERANCE_VIOLATED, '%s velocity is %.4f rad/s from the desired %.4f '
                       'at %.3f s into the trajectory; path velocity tolerance %.4f rad/s'
                       % (names[j], verr[j], v_d[j], t_rel, tol.path_velocity[j]))
    return None


def check_goal(names, p_end, q, qd, tol):
    """None when every joint is within its goal tolerance and stopped, else the reason."""
    err = np.abs(p_end - q)
    over = err - tol.goal_position
    if (over > 0).any():
        j = int(np.argmax(over))
        return ('%s is %.4f rad from its goal position %.4f (at %.4f; goal tolerance %.4f rad)'
                % (names[j], err[j], p_end[j], q[j], tol.goal_position[j]))
    over = np.abs(qd) - tol.goal_velocity
    if (over > 0).any():
        j = int(np.argmax(over))
        return ('%s still moves at %.4f rad/s (stopped velocity tolerance %.4f rad/s)'
                % (names[j], qd[j], tol.goal_velocity[j]))
    return None
