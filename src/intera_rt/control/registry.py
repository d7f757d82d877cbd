"""The realtime core's stages, by kind: adding a controller or plugin is one module plus one
line here. Order matters within a kind: monitors run in this order, and the first controller
is where the arm starts and what it falls back to."""
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.control.collision_detection import CollisionDetection
from intera_rt.control.gravity import GravityCompensation
from intera_rt.control.hold import HoldController
from intera_rt.control.interaction import InteractionController
from intera_rt.control.joint_speed import JointSpeedLimit
from intera_rt.control.position import PositionController
from intera_rt.control.torque import TorqueController
from intera_rt.control.trajectory import TrajectoryController
from intera_rt.control.velocity import VelocityController
from intera_rt.control.zero_g import ZeroGController

CONTROLLERS = (
    HoldController,
    PositionController,
    VelocityController,
    TorqueController,
    TrajectoryController,
    ZeroGController,
    InteractionController,
)

MONITORS = (
    JointSpeedLimit,
    CollisionDetection,
)

ADDITIVES = (
    GravityCompensation,
    CollisionAvoidance,
)
