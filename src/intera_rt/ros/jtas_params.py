"""What the joint trajectory action server starts with: its parameters, read and checked (a
bad one is a ValueError naming it: the server does not start), and the arm's joint limits.

  mode         position_w_id (default): TRAJECTORY_MODE with the spline's position, velocity
               and acceleration (inverse-dynamics feed-forward on the robot); position:
               POSITION_MODE, as the SDK's server sends them, each command ahead of the
               spline by the robot's braking distance at the spline's speed (a goal that
               needs more than set_speed_ratio x max speed is warned about: it lags);
               velocity: VELOCITY_MODE, spline velocity + velocity_kp x position error
  rate         control (= feedback) cycles per second of the robot's clock, default 100
  action_ns    default /robot/limb/right/follow_joint_trajectory
  path_tolerance rad, default 0.2; goal_tolerance rad, default 0 (the SDK server's default);
  stopped_velocity_tolerance rad/s, default 0.2 (position_w_id) / 0.25 (other modes);
  goal_time    s, default 0.1: how long after the end the arm may take to come within goal
               and stopped-velocity tolerance (tolerances <= 0: not checked)
  velocity_kp  1/s, default 5.0 (velocity mode)
  command_lead s, default 0.002: commands are sampled this far ahead of now (transport)
  force_threshold N, default 45: a goal run under interaction control (the JTAS's
               interaction_control_command) ends when the force at the endpoint passes it
               (<= 0: no threshold); read when a goal arrives, so a change applies to the
               goals that follow
"""
import math
from dataclasses import dataclass

import rospy
from intera_core_msgs.msg import JointLimits

from intera_rt import joint_trajectory as jt

MODES = ('position_w_id', 'position', 'velocity')
DEFAULT_ACTION_NS = '/robot/limb/right/follow_joint_trajectory'


@dataclass(frozen=True)
class JtasParams:
    mode: str
    rate: float
    action_ns: str
    tolerances: dict            # jt.Tolerances.uniform's keyword arguments
    kp: float
    lead: float


def read(ns='~'):
    """The parameters under `ns` (a namespace ending in '/', or '~')."""
    def param(name, default):
        return rospy.get_param(ns + name, default)
    mode = str(param('mode', 'position_w_id')).strip()
    if mode not in MODES:
        raise ValueError('~mode %r: expected one of %s' % (mode, ', '.join(MODES)))
    rate = float(param('rate', 100.0))
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError('~rate must be > 0 Hz, got %r' % rate)
    action_ns = str(param('action_ns', DEFAULT_ACTION_NS))
    stopped = 0.2 if mode == 'position_w_id' else 0.25
    tolerances = dict(
        path=float(param('path_tolerance', 0.2)),
        goal=float(param('goal_tolerance', 0.0)),
        stopped_velocity=float(param('stopped_velocity_tolerance', stopped)),
        goal_time=float(param('goal_time', 0.1)))
    for key, value in tolerances.items():
        if not math.isfinite(value):
            raise ValueError('tolerance parameter %s must be finite, got %r' % (key, value))
    kp = float(param('velocity_kp', 5.0))
    if not (math.isfinite(kp) and kp >= 0):
        raise ValueError('~velocity_kp must be finite and >= 0, got %r' % kp)
    lead = float(param('command_lead', 0.002))
    if not (math.isfinite(lead) and 0 <= lead <= 0.1):
        raise ValueError('~command_lead must be within [0, 0.1] s, got %r' % lead)
    return JtasParams(mode, rate, action_ns, tolerances, kp, lead)


def force_threshold(ns='~'):
    """~force_threshold (N) now: <= 0 or inf, none. Cached (the master sends changes), so a
    goal's arrival costs no master call; a value that is not a number is logged and the
    default used."""
    value = rospy.get_param_cached(ns + 'force_threshold', jt.FORCE_THRESHOLD)
    if isinstance(value, dict):           # unset (the cache keeps the master's empty answer)
        return jt.FORCE_THRESHOLD
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if math.isnan(number):
        rospy.logerr_throttle(10.0, 'joint_trajectory_action_server: ~force_threshold %r is not a '
                              'number: using %.1f N' % (value, jt.FORCE_THRESHOLD))
        return jt.FORCE_THRESHOLD
    return number if number > 0 else math.inf


def wait_for_limits(names):
    """The arm's joint limits (jt.Limits, in the order of names) from /robot/joint_limits."""
    while not rospy.is_shutdown():
        try:
            msg = rospy.wait_for_message('/robot/joint_limits', JointLimits, timeout=10.0)
        except rospy.ROSException:
            rospy.logwarn('joint_trajectory_action_server: still waiting for /robot/joint_limits')
            continue
        missing = [n for n in names if n not in msg.joint_names]
        if missing:
            raise ValueError('/robot/joint_limits lacks %s' % ', '.join(missing))
        k = [msg.joint_names.index(n) for n in names]
        return jt.Limits(names, [msg.position_lower[i] for i in k],
                         [msg.position_upper[i] for i in k], [msg.velocity[i] for i in k],
                         [msg.accel[i] for i in k])
    raise rospy.ROSInterruptException('shut down while waiting for /robot/joint_limits')
