"""control: the realtime core's stages — the robot state machine, the joint controllers
(hold, position, velocity, torque, trajectory, zero-G), monitors and additive torques, and
the head's controller. Pure objects ticked with an explicit time; no ROS, no clock reads.
control.base describes the pipeline, control.registry lists its stages."""
from intera_rt.control.state_machine import RobotStateMachine, EstopButton, EstopSource
from intera_rt.control.base import CommandRejected
from intera_rt.control.arm import Arm, model_effort

__all__ = ['RobotStateMachine', 'EstopButton', 'EstopSource', 'CommandRejected', 'Arm',
           'model_effort']
