"""io: the robot's IO nodes in one ROS node (one process): 'robot' (cuff, navigators,
lights: robot_node), 'end_effector' (optionally the electric gripper: end_effector_node),
'internal_camera' (the cameras and their images: camera_node) and the head's screen
(/robot/head_display: head_display); and /tf from /robot/joint_states
(intera_rt.ros.state_publisher, which also runs alone as nodes/robot_state_publisher).

One process rather than three: under sim time every ROS node hears /clock, and at many
times real time each idle node costs lockstep speed. The price: while a camera streams,
its rendering shares this interpreter with the device updates (a cuff grasp may wait for a
frame's Python part). The same holds for robot_state_publisher (docs/reliability.md#memory).

Private parameters: ~gripper (bool), ~render_scale, ~<camera>/width|height|rate,
~publish_frequency (robot_state_publisher's).
"""
import sys

import rospy

from intera_rt.ros.io.camera_node import CameraIO
from intera_rt.ros.io.end_effector_node import EndEffectorIO
from intera_rt.ros.io.head_display import HeadDisplayIO
from intera_rt.ros.io.robot_node import RobotIO
from intera_rt.ros.node import init_node
from intera_rt.ros.state_publisher import StatePublisher


def main():
    init_node('io')
    try:
        RobotIO()
        EndEffectorIO(bool(rospy.get_param('~gripper', False)))
        CameraIO(display=HeadDisplayIO())
        StatePublisher('/robot/joint_states')
    except (ValueError, RuntimeError) as exc:   # e.g. a /robot_description refused (model.safe_xml)
        rospy.logfatal('io: %s', exc)
        sys.exit(2)
    rospy.spin()


if __name__ == '__main__':
    main()
