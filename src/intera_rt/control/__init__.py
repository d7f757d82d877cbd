"""control: the realtime core — robot state, joint command modes, timeout, gravity
compensation. Pure objects ticked with an explicit time; no ROS, no clock reads."""
from intera_rt.control.state_machine import RobotStateMachine, EstopButton, EstopSource
from intera_rt.control.joint_control import (JointController, JointCommandData, CommandMode,
                                             CommandRejected, ControllerOutput, model_effort)

__all__ = ['RobotStateMachine', 'EstopButton', 'EstopSource', 'JointController',
           'JointCommandData', 'CommandMode', 'CommandRejected', 'ControllerOutput', 'model_effort']
