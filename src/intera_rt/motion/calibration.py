"""The arm calibration routine's plan and checks (what /calibration_command runs). No ROS.

The routine moves the arm from where it is through POSES (a fixed set around neutral that
loads each joint differently), and at each pose, at rest, compares the torque every joint
transmits with the robot model's gravity torque there: a difference beyond
torque_threshold(joint) means a load the model does not know of (a gripper or tool left
on, someone leaning on the arm) and fails the calibration (torquesExceededThreshold, as
intera_core_msgs/CalibrationCommand names it). Then it returns to where it started.

Status ids: intera_core_msgs/CalibrationCommandResult's constants (the SDK's calibrate_arm.py
takes the run as successful iff "success" appears in the result).
"""
import numpy as np

from intera_rt.motion.errors import (CARTESIAN_INTERPOLATION_FAILED, ENDPOINT_DOES_NOT_EXIST,
                                     FAILED_TO_PARAMETERIZE, INVALID_TRAJECTORY_MESSAGE,
                                     PLANNED_JOINT_ACCEL_LIMIT, PLANNED_MOTION_COLLISION)
from intera_rt.robot import NEUTRAL

SUCCESS = 'Success'
STOPPED = 'Stopped'
GENERIC_FAILURE = 'calibrationFailure'
GRIPPER_ON = 'cannotCalibrateWithGripper'
TORQUES_EXCEEDED_THRESHOLD = 'torquesExceededThreshold'
PLANNER_FAILURE = 'plannerFailure'

# Offsets from neutral (rad), right_j0..6: each pose loads some joints differently.
_OFFSETS = (
    (0.40, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00),
    (-0.40, 0.30, 0.00, 0.00, 0.00, 0.00, 0.00),
    (0.00, 0.00, 0.50, -0.40, 0.00, 0.00, 0.00),
    (0.00, 0.00, 0.00, 0.00, 0.60, -0.50, 0.00),
    (0.00, 0.00, -0.40, 0.00, 0.00, 0.40, -0.80),
    (0.00, -0.30, 0.00, 0.40, -0.50, 0.00, 0.60),
)
POSES = tuple(tuple(n + d for n, d in zip(NEUTRAL, off)) for off in _OFFSETS)
SPEED_RATIO = 0.3               # of each joint's velocity limit, moving between poses
SETTLE_TIME = 0.3               # s at rest at a pose before measuring
MEASURE_TIME = 0.3              # s the torques are averaged over
TORQUE_FRACTION = 0.1           # of a joint's effort limit: the allowed model mismatch
TORQUE_MIN = 1.0                # N·m: ... but never less than this

# Motion controller errors that mean the routine's path could not be planned.
PLANNER_ERRORS = (INVALID_TRAJECTORY_MESSAGE, ENDPOINT_DOES_NOT_EXIST, PLANNED_JOINT_ACCEL_LIMIT,
                  CARTESIAN_INTERPOLATION_FAILED, FAILED_TO_PARAMETERIZE, PLANNED_MOTION_COLLISION)


def motion_status(error_id):
    """The calibration's status id for a motion that failed with `error_id`."""
    return PLANNER_FAILURE if error_id in PLANNER_ERRORS else GENERIC_FAILURE


def torque_thresholds(effort_limits):
    """N·m per joint: how far a transmitted torque at rest may differ from the model's."""
    return np.maximum(TORQUE_FRACTION * np.asarray(effort_limits, float), TORQUE_MIN)


def torque_excess(measured, model_gravity, thresholds, names):
    """The joints whose mean transmitted torque at rest differs from the model's gravity
    torque by more than their threshold: [(name, difference N·m, threshold)]."""
    diff = np.asarray(measured, float) - np.asarray(model_gravity, float)
    return [(n, float(d), float(t)) for n, d, t in zip(names, diff, thresholds) if abs(d) > t]
