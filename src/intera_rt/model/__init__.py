"""model: the Sawyer as data — URDF → kinematics, dynamics, limits. No ROS here."""
from intera_rt.model.robot_model import RobotModel, JointLimit, ARM_JOINTS, HEAD_JOINTS, default_urdf_path

__all__ = ['RobotModel', 'JointLimit', 'ARM_JOINTS', 'HEAD_JOINTS', 'default_urdf_path']
