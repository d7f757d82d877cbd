"""A MotionCommand trajectory → a resolved MotionRequest, or a MotionError naming the field
and the value (INVALID_TRAJECTORY_MESSAGE, ENDPOINT_DOES_NOT_EXIST, PLANNED_JOINT_ACCEL_LIMIT).

Works on the message objects by attribute (intera_motion_msgs/Trajectory and its parts, or
anything shaped like them); imports nothing from ROS.

Defaults (applied when a field is left at zero / empty, as the SDK's MotionWaypointOptions
and the message comments document them):
  max_joint_speed_ratio 0.7          max_joint_accel "fast" preset [7, 5, 8, 8, 8, 8, 8]
  joint_tolerances 0.1 rad            max_linear_speed 0.6 m/s, max_linear_accel 0.6 m/s²
  max_rotational_speed 1.57 rad/s     max_rotational_accel 1.57 rad/s²
  corner_distance 0 m (stop at the waypoint)
  tracking: min_time_rate 0.5, max_time_rate 1.0, goal_joint_tolerance 0.008726646 rad
            (the SDK's JOINT_ANGLE_TOLERANCE), settling_time_at_goal 2.0 s
An empty active_endpoint means right_hand; an empty pose frame_id means base.
"""
import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from intera_rt.model.robot_model import ARM_JOINTS, BASE_FRAME
from intera_rt.motion.errors import (ENDPOINT_DOES_NOT_EXIST, INVALID_TRAJECTORY_MESSAGE,
                                     PLANNED_JOINT_ACCEL_LIMIT, MotionError)
from intera_rt.motion.geometry import matrix_to_quat, quat_mul, quat_to_matrix

JOINT = 'JOINT'
CARTESIAN = 'CARTESIAN'
DEFAULT_ENDPOINT = 'right_hand'

DEFAULT_SPEED_RATIO = 0.7
DEFAULT_JOINT_ACCEL = (7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0)     # SDK 'fast' preset
DEFAULT_JOINT_TOLERANCE = 0.1
DEFAULT_LINEAR_SPEED = 0.6
DEFAULT_LINEAR_ACCEL = 0.6
DEFAULT_ROTATIONAL_SPEED = 1.57
DEFAULT_ROTATIONAL_ACCEL = 1.57
DEFAULT_MIN_TIME_RATE = 0.5
DEFAULT_MAX_TIME_RATE = 1.0
DEFAULT_GOAL_TOLERANCE = 0.008726646
DEFAULT_SETTLING_TIME = 2.0
MAX_SETTLING_TIME = 60.0
QUATERNION_NORM_TOLERANCE = 1e-3
LIMIT_SLACK = 1e-6                  # rad a joint waypoint may exceed a limit by (float noise)

# InteractionControlCommand array fields: allowed lengths (0 = use the robot's default).
_INTERACTION_ARRAYS = {'K_impedance': 6, 'max_impedance': 6, 'D_impedance': 6,
                       'K_nullspace': 7, 'force_command': 6, 'interaction_control_mode': 6}
_INTERACTION_NONNEGATIVE = ('K_impedance', 'D_impedance', 'K_nullspace')
_INTERACTION_MODES = (1, 2, 3, 4)


@dataclass
class SegmentLimits:
    """Options of one waypoint: they apply to the segment moving to it."""
    label: str
    speed_ratio: float
    joint_accel: np.ndarray           # rad/s², ARM_JOINTS order
    joint_tolerances: np.ndarray      # rad, ARM_JOINTS order
    linear_speed: float
    linear_accel: float
    rotational_speed: float
    rotational_accel: float
    corner_distance: float


@dataclass
class WaypointSpec:
    q: Optional[np.ndarray]           # 7 angles, ARM_JOINTS order (JOINT target / Cartesian bias)
    position: Optional[np.ndarray]    # Cartesian: endpoint position in base
    orientation: Optional[np.ndarray]  # Cartesian: unit quaternion (x, y, z, w) in base
    limits: SegmentLimits


@dataclass
class TrackingSpec:
    min_time_rate: float
    max_time_rate: float
    goal_tolerance: np.ndarray        # rad, ARM_JOINTS order
    settling_time: float


@dataclass
class MotionRequest:
    label: str
    interpolation: str
    endpoint: str
    waypoints: List[WaypointSpec]
    tracking: TrackingSpec
    end_time: float = 0.0             # s (same clock as `now`); 0 = as soon as possible
    path_interpolation_step: float = 0.0
    interaction_control: bool = False
    interaction_params: object = None
    nso_start_offset_allowed: bool = False
    nso_check_end_offset: bool = False
    warnings: List[str] = field(default_factory=list)


def _fail(text, error_id=INVALID_TRAJECTORY_MESSAGE):
    raise MotionError(error_id, text)


def _num(value, where):
    try:
        v = float(value)
    except (TypeError, ValueError):
        _fail('%s = %r is not a number' % (where, value))
    if not math.isfinite(v):
        _fail('%s = %r is not finite' % (where, v))
    return v


def _fmt(values):
    return '[%s]' % ', '.join('%.6g' % v for v in values)


def _per_joint(values, order, default, where, positive=True):
    """A per-joint array given in `order` (joint_names) → ARM_JOINTS order. Empty → default,
    one value → every joint."""
    values = list(values)
    if not values:
        return np.array(default, dtype=float)
    arr = np.array([_num(v, '%s[%d]' % (where, i)) for i, v in enumerate(values)])
    if positive and (arr <= 0).any():
        i = int(np.argmax(arr <= 0))
        _fail('%s[%d] = %g must be > 0' % (where, i, arr[i]))
    if len(arr) == 1:
        return np.full(7, arr[0])
    if len(arr) != len(order):
        _fail('%s has %d values, expected %d (one per joint of joint_names) or 1'
              % (where, len(arr), len(order)))
    out = np.array(default, dtype=float)
    for name, v in zip(order, arr):
        out[ARM_JOINTS.index(name)] = v
    return out


def _positive_or_default(value, default, where):
    v = _num(value, where)
    if v < 0:
        _fail('%s = %g must be ≥ 0 (0 = default %g)' % (where, v, default))
    return default if v == 0 else v


class Validator:
    """Checks goals against one robot model (joint limits, frames, endpoints)."""

    def __init__(self, model):
        self.model = model
        lim = model.limit_arrays(list(ARM_JOINTS))
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']

    # --- endpoints and frames ------------------------------------------------------------
    def endpoint_chain_joints(self, name):
        """Joints of base → name when it is an arm endpoint; MotionError otherwise."""
        if not self.model.has_frame(name):
            _fail('active_endpoint %r is not a frame of the robot model (/robot_description)'
                  % name, ENDPOINT_DOES_NOT_EXIST)
        joints = tuple(self.model.chain(name).joint_names)
        if not joints or joints != ARM_JOINTS[:len(joints)]:
            _fail('active_endpoint %r is not on the arm (its chain from base has joints %s)'
                  % (name, list(joints)), ENDPOINT_DOES_NOT_EXIST)
        return joints

    def frame_to_base(self, frame_id, joint_values, where):
        """(p, R) of frame_id in base at the current joint values."""
        frame = frame_id.lstrip('/')
        if frame in ('', BASE_FRAME):
            return np.zeros(3), np.eye(3)
        if not self.model.has_frame(frame):
            _fail('%s.header.frame_id %r is not a frame of the robot model' % (where, frame_id))
        chain = self.model.chain(frame)
        try:
            q = np.array([joint_values[n] for n in chain.joint_names], dtype=float)
        except KeyError as exc:
            _fail('%s.header.frame_id %r: no current angle for joint %s' % (where, frame_id, exc))
        p, quat = chain.fk(q)
        return p, quat_to_matrix(quat)

    # --- the goal --------------------------------------------------------------------------
    def parse(self, traj, joint_values=None):
        """intera_motion_msgs/Trajectory → MotionRequest. joint_values: {joint: angle} now
        (arm and head), used only for poses given in a frame other than base."""
        joint_values = joint_values or {}
        opts = traj.trajectory_options
        interp = opts.interpolation_type
        if interp not in (JOINT, CARTESIAN):
            _fail('trajectory_options.interpolation_type %r is not %r or %r'
                  % (interp, JOINT, CARTESIAN))
        waypoints = list(traj.waypoints)
        if not waypoints:
            _fail('trajectory.waypoints is empty')

        names = list(traj.joint_names)
        if names:
            unknown = [n for n in names if n not in ARM_JOINTS]
            if unknown:
                _fail('joint_names: %r is not a joint of the right arm %s' % (unknown[0], list(ARM_JOINTS)))
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                _fail('joint_names: %r is named twice' % dup)
            if len(names) != 7:
                _fail('joint_names has %d names, expected the 7 arm joints %s'
                      % (len(names), list(ARM_JOINTS)))

        endpoints = [w.active_endpoint or DEFAULT_ENDPOINT for w in waypoints]
        for i, e in enumerate(endpoints):
            if e != endpoints[0]:
                _fail('waypoints[%d].active_endpoint %r differs from waypoints[0].active_endpoint %r '
                      '(one endpoint per trajectory)' % (i, e, endpoints[0]))
        endpoint = endpoints[0]
        self.endpoint_chain_joints(endpoint)

        warnings = []
        specs = []
        for i, w in enumerate(waypoints):
            where = 'waypoints[%d]' % i
            q = None
            positions = list(w.joint_positions)
            if positions:
                if not names:
                    _fail('%s.joint_positions has %d values but trajectory.joint_names is empty'
                          % (where, len(positions)))
                if len(positions) != len(names):
                    _fail('%s.joint_positions has %d values for %d joint_names'
                          % (where, len(positions), len(names)))
                vals = [_num(v, '%s.joint_positions[%d] (%s)' % (where, k, names[k]))
                        for k, v in enumerate(positions)]
                q = np.zeros(7)
                for name, v in zip(names, vals):
                    q[ARM_JOINTS.index(name)] = v
                out = (q < self.lower - LIMIT_SLACK) | (q > self.upper + LIMIT_SLACK)
                if out.any():
                    j = int(np.argmax(out))
                    text = ('%s.joint_positions: %s = %.4f is outside its limits [%.4f, %.4f]'
                            % (where, ARM_JOINTS[j], q[j], self.lower[j], self.upper[j]))
                    if interp == JOINT:
                        _fail(text)
                    warnings.append(text + ' (nullspace bias clipped)')
                q = np.clip(q, self.lower, self.upper)
            elif interp == JOINT:
                _fail('%s.joint_positions is empty: a JOINT trajectory needs joint angles in every '
                      'waypoint (mixed JOINT/CARTESIAN waypoints are not allowed)' % where)

            position = orientation = None
            if interp == CARTESIAN:
                position, orientation = self._pose(w.pose, where, joint_values)
            limits = self._limits(w.options, names or list(ARM_JOINTS), where, interp)
            specs.append(WaypointSpec(q, position, orientation, limits))

        tracking = self._tracking(opts.tracking_options, names or list(ARM_JOINTS))
        step = _num(opts.path_interpolation_step, 'trajectory_options.path_interpolation_step')
        if step < 0:
            _fail('trajectory_options.path_interpolation_step = %g must be ≥ 0' % step)
        end_time = _time_to_sec(opts.end_time)
        if opts.interaction_control:
            self._interaction(opts.interaction_params)
        return MotionRequest(
            label=traj.label, interpolation=interp, endpoint=endpoint, waypoints=specs,
            tracking=tracking, end_time=end_time, path_interpolation_step=step,
            interaction_control=bool(opts.interaction_control),
            interaction_params=opts.interaction_params if opts.interaction_control else None,
            nso_start_offset_allowed=bool(opts.nso_start_offset_allowed),
            nso_check_end_offset=bool(opts.nso_check_end_offset), warnings=warnings)

    def _pose(self, pose_stamped, where, joint_values):
        p = pose_stamped.pose.position
        o = pose_stamped.pose.orientation
        pos = np.array([_num(p.x, where + '.pose.position.x'), _num(p.y, where + '.pose.position.y'),
                        _num(p.z, where + '.pose.position.z')])
        quat = np.array([_num(o.x, where + '.pose.orientation.x'), _num(o.y, where + '.pose.orientation.y'),
                         _num(o.z, where + '.pose.orientation.z'), _num(o.w, where + '.pose.orientation.w')])
        norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
            _fail('%s.pose.orientation (x, y, z, w) = %s has norm %.6g, expected a unit quaternion'
                  % (where, _fmt(quat), norm))
        quat = quat / norm
        fp, fr = self.frame_to_base(pose_stamped.header.frame_id, joint_values, where + '.pose')
        if fp.any() or not np.array_equal(fr, np.eye(3)):
            pos = fp + fr @ pos
            quat = quat_mul(matrix_to_quat(fr), quat)
        return pos, quat

    def _limits(self, o, names, where, interp):
        w = where + '.options'
        ratio = _num(o.max_joint_speed_ratio, w + '.max_joint_speed_ratio')
        if ratio < 0 or ratio > 1:
            _fail('%s.max_joint_speed_ratio = %g is outside [0, 1] (0 = default %g)'
                  % (w, ratio, DEFAULT_SPEED_RATIO))
        ratio = ratio or DEFAULT_SPEED_RATIO
        accel = _per_joint(o.max_joint_accel, names, DEFAULT_JOINT_ACCEL, w + '.max_joint_accel')
        if interp == JOINT:
            over = accel > self.accel_limit * (1 + 1e-9)
            if over.any():
                j = int(np.argmax(over))
                _fail('%s.max_joint_accel for %s = %g rad/s² exceeds the joint acceleration limit %g'
                      % (w, ARM_JOINTS[j], accel[j], self.accel_limit[j]), PLANNED_JOINT_ACCEL_LIMIT)
        else:
            accel = np.minimum(accel, self.accel_limit)
        tol = _per_joint(o.joint_tolerances, names, [DEFAULT_JOINT_TOLERANCE] * 7, w + '.joint_tolerances')
        corner = _num(o.corner_distance, w + '.corner_distance')
        if corner < 0:
            _fail('%s.corner_distance = %g must be ≥ 0' % (w, corner))
        return SegmentLimits(
            label=o.label, speed_ratio=ratio, joint_accel=accel, joint_tolerances=tol,
            linear_speed=_positive_or_default(o.max_linear_speed, DEFAULT_LINEAR_SPEED, w + '.max_linear_speed'),
            linear_accel=_positive_or_default(o.max_linear_accel, DEFAULT_LINEAR_ACCEL, w + '.max_linear_accel'),
            rotational_speed=_positive_or_default(o.max_rotational_speed, DEFAULT_ROTATIONAL_SPEED,
                                                  w + '.max_rotational_speed'),
            rotational_accel=_positive_or_default(o.max_rotational_accel, DEFAULT_ROTATIONAL_ACCEL,
                                                  w + '.max_rotational_accel'),
            corner_distance=corner)

    def _tracking(self, t, names):
        w = 'trajectory_options.tracking_options'
        lo, hi = DEFAULT_MIN_TIME_RATE, DEFAULT_MAX_TIME_RATE
        if t.use_min_time_rate:
            lo = _num(t.min_time_rate, w + '.min_time_rate')
            if not 0 < lo <= 1:
                _fail('%s.min_time_rate = %g must be in (0, 1]' % (w, lo))
        if t.use_max_time_rate:
            hi = _num(t.max_time_rate, w + '.max_time_rate')
            if hi <= 0:
                _fail('%s.max_time_rate = %g must be > 0' % (w, hi))
        if lo > hi:
            if t.use_min_time_rate and t.use_max_time_rate:
                _fail('%s: min_time_rate %g > max_time_rate %g' % (w, lo, hi))
            lo = hi if t.use_max_time_rate else lo
            hi = max(hi, lo)
        tol = _per_joint(t.goal_joint_tolerance, names, [DEFAULT_GOAL_TOLERANCE] * 7,
                         w + '.goal_joint_tolerance')
        settle = DEFAULT_SETTLING_TIME
        if t.use_settling_time_at_goal:
            settle = _num(t.settling_time_at_goal, w + '.settling_time_at_goal')
            if not 0 <= settle <= MAX_SETTLING_TIME:
                _fail('%s.settling_time_at_goal = %g must be in [0, %g] s' % (w, settle, MAX_SETTLING_TIME))
        return TrackingSpec(lo, hi, tol, settle)

    def _interaction(self, p):
        w = 'trajectory_options.interaction_params'
        for name, n in _INTERACTION_ARRAYS.items():
            values = list(getattr(p, name))
            if values and len(values) != n:
                _fail('%s.%s has %d values, expected %d (or none for the default)'
                      % (w, name, len(values), n))
            if name in ('max_impedance',):
                continue
            for i, v in enumerate(values):
                x = _num(v, '%s.%s[%d]' % (w, name, i))
                if name in _INTERACTION_NONNEGATIVE and x < 0:
                    _fail('%s.%s[%d] = %g must be ≥ 0' % (w, name, i, x))
                if name == 'interaction_control_mode' and int(x) not in _INTERACTION_MODES:
                    _fail('%s.interaction_control_mode[%d] = %d is not one of IMPEDANCE_MODE (1), '
                          'FORCE_MODE (2), IMPEDANCE_WITH_FORCE_LIMIT_MODE (3), '
                          'FORCE_WITH_MOTION_LIMIT_MODE (4)' % (w, i, int(x)))
        f = p.interaction_frame
        for axis in ('x', 'y', 'z'):
            _num(getattr(f.position, axis), '%s.interaction_frame.position.%s' % (w, axis))
        quat = np.array([_num(getattr(f.orientation, a), '%s.interaction_frame.orientation.%s' % (w, a))
                         for a in ('x', 'y', 'z', 'w')])
        # An all-zero quaternion is an unset frame (identity); anything else must be unit.
        if quat.any() and abs(np.linalg.norm(quat) - 1.0) > QUATERNION_NORM_TOLERANCE:
            _fail('%s.interaction_frame.orientation (x, y, z, w) = %s is not a unit quaternion'
                  % (w, _fmt(quat)))


def _time_to_sec(t):
    if t is None:
        return 0.0
    if hasattr(t, 'to_sec'):
        return float(t.to_sec())
    if hasattr(t, 'secs'):
        return float(t.secs) + 1e-9 * float(t.nsecs)
    return float(t)
