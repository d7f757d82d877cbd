"""The motion controller's error ids (intera_motion_msgs/MotionCommand result.errorId) and
the exception that carries one out of the planners. No ROS here."""

INVALID_TRAJECTORY_MESSAGE = 'INVALID_TRAJECTORY_MESSAGE'
ENDPOINT_DOES_NOT_EXIST = 'ENDPOINT_DOES_NOT_EXIST'
PLANNED_JOINT_ACCEL_LIMIT = 'PLANNED_JOINT_ACCEL_LIMIT'
CARTESIAN_INTERPOLATION_FAILED = 'CARTESIAN_INTERPOLATION_FAILED'
FAILED_TO_PARAMETERIZE = 'FAILED_TO_PARAMETERIZE'
PLANNED_MOTION_COLLISION = 'PLANNED_MOTION_COLLISION'
FINAL_POSE_NOT_WITHIN_TOLERANCE = 'FINAL_POSE_NOT_WITHIN_TOLERANCE'
CONTROLLER_NOT_FOLLOWING = 'CONTROLLER_NOT_FOLLOWING'
ZERO_G_ACTIVATED_DURING_TRAJECTORY = 'ZERO_G_ACTIVATED_DURING_TRAJECTORY'

ERROR_IDS = (INVALID_TRAJECTORY_MESSAGE, ENDPOINT_DOES_NOT_EXIST, PLANNED_JOINT_ACCEL_LIMIT,
             CARTESIAN_INTERPOLATION_FAILED, FAILED_TO_PARAMETERIZE, PLANNED_MOTION_COLLISION,
             FINAL_POSE_NOT_WITHIN_TOLERANCE, CONTROLLER_NOT_FOLLOWING,
             ZERO_G_ACTIVATED_DURING_TRAJECTORY)

# result.last_successful_waypoint special values
HAVE_NOT_REACHED_FIRST_WAYPOINT = -1
GENERAL_TRAJECTORY_FAILURE = -2


class MotionError(Exception):
    """A goal the controller refuses or cannot complete: `error_id` is one of ERROR_IDS,
    the message names the field / waypoint / joint and the offending value."""

    def __init__(self, error_id, message):
        assert error_id in ERROR_IDS, error_id
        super().__init__(message)
        self.error_id = error_id
        self.message = message

    def __str__(self):
        return '%s: %s' % (self.error_id, self.message)
