"""The motion controller's process (node motion_controller, nodes/motion_controller): the
services it hosts, declared in HOSTED and started in that order.

One process for several services because each robot process costs its own interpreter,
numpy and Pinocchio, and each subscriber process wakes for every state message; here they
share one process and one subscription to each state topic. Each service also runs alone
where it has a node of its own (nodes/kinematics, nodes/joint_trajectory_action_server).
"""
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import rospy

from intera_rt.ros.node import init_node


@dataclass(frozen=True)
class Hosted:
    """A service of the process: `start()` makes it serve; a `required` one that cannot start
    (ValueError, KeyError: e.g. a /robot_description refused) stops the process, another is
    left out with an error line. `enabled_by`: a private bool parameter (default true) that
    leaves it out when false."""
    name: str
    start: Callable[[], object]
    required: bool = True
    enabled_by: Optional[str] = None


def _kinematics():
    from intera_rt.ros.kinematics_node import PositionKinematicsNode
    return PositionKinematicsNode()


def _motion_controller():
    from intera_rt.ros.motion_controller import MotionController
    return MotionController()


def _calibration():
    from intera_rt.ros.calibration import ArmCalibration
    return ArmCalibration()


def _jtas():
    from intera_rt.ros import joint_trajectory_action_server as jtas
    return jtas.serve(rospy.get_name() + '/joint_trajectory_action_server/')


HOSTED = (
    # IK and FK first: the SDK's Limb waits 5 s for them (robot_contract G5).
    Hosted('/ExternalTools/right/PositionKinematicsNode (IK, FK)', _kinematics),
    Hosted('/motion/motion_command', _motion_controller),
    # a client of /motion/motion_command
    Hosted('/calibration_command', _calibration),
    # parameters under ~joint_trajectory_action_server/; it waits for the robot's state
    Hosted('joint_trajectory_action_server', _jtas, required=False, enabled_by='~jtas'),
)


def main(argv=None):
    init_node('motion_controller', argv=argv)
    sys.setswitchinterval(0.0005)     # the executor thread must not wait on the planner's CPU
    for service in HOSTED:
        if service.enabled_by is not None and not rospy.get_param(service.enabled_by, True):
            continue
        try:
            service.start()
        except (ValueError, KeyError) as exc:
            if service.required:
                rospy.logfatal('motion_controller: %s', exc)
                sys.exit(2)
            rospy.logerr('%s not started: %s', service.name, exc)
    rospy.spin()


if __name__ == '__main__':
    main(sys.argv)
