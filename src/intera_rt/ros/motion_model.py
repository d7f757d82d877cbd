"""The motion controller's model of the robot: robot model, self-collision model and planner
built from one URDF text, warmed up so that the first goal pays no first-call costs."""
import numpy as np
import rospy

from intera_rt.model import RobotModel
from intera_rt.model.collision import motion_controller_model
from intera_rt.motion.errors import MotionError
from intera_rt.motion.geometry import matrix_to_quat
from intera_rt.motion.planner import MotionPlanner
from intera_rt.robot import ARM_JOINTS, NEUTRAL


class Model:
    """Robot model, collision model and planner built from one URDF text. With `previous`
    (the model this one replaces), a description whose collision model cannot be built
    (e.g. a tool fragment with meshes) keeps the previous collision model."""

    def __init__(self, urdf_xml, previous=None):
        self.urdf_xml = urdf_xml
        self.robot = RobotModel(urdf_xml) if urdf_xml else RobotModel.from_file()
        self.collision = None
        try:
            self.collision = motion_controller_model(self.robot.urdf_xml)
        except Exception as exc:  # noqa: BLE001 - keep planning without collision checks
            if previous is not None and previous.collision is not None:
                self.collision = previous.collision
                rospy.logwarn('motion_controller: %s; keeping the previous self-collision model '
                              '(the new links are not checked)', exc)
            else:
                rospy.logerr('motion_controller: no self-collision model (%s): planned paths are '
                             'not checked for self-collision', exc)
        self.planner = MotionPlanner(self.robot, self.collision)
        lim = self.robot.limit_arrays(list(ARM_JOINTS))
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']
        self._warm_up()

    def _warm_up(self):
        """Plan a small JOINT and CARTESIAN move once, so the first goal does not pay for
        first-call costs (imports, solver set-up, caches)."""
        from intera_motion_msgs.msg import Trajectory, Waypoint
        q0 = np.array(NEUTRAL)
        try:
            for interp in ('JOINT', 'CARTESIAN'):
                t = Trajectory(joint_names=list(ARM_JOINTS))
                t.trajectory_options.interpolation_type = interp
                w = Waypoint(joint_positions=list(q0 + 0.05), active_endpoint='right_hand')
                p, r = self.planner.endpoint('right_hand').fk(q0)
                w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z = p + [0, 0, 0.02]
                o = w.pose.pose.orientation
                o.x, o.y, o.z, o.w = matrix_to_quat(r)
                t.waypoints.append(w)
                self.planner.plan(self.planner.parse(t), q0)
        except MotionError as exc:  # pragma: no cover - a model that cannot plan this
            rospy.logwarn('motion_controller: warm-up plan failed: %s', exc)

