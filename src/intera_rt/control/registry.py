"""The realtime core's stages, by kind: adding a controller or plugin is one module plus one
line here. Order matters within a kind: monitors and additives run in this order. The
controller of role 'hold' is where the arm starts and what it falls back to.

    check_stage_options({'collision_detection': {'squish_threshold': 15}})  # checked, typed
"""
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.control.collision_detection import CollisionDetection
from intera_rt.control.gravity import GravityCompensation
from intera_rt.control.high_speed_scaling import HighSpeedScaling
from intera_rt.control.hold import HoldController
from intera_rt.control.interaction import InteractionController
from intera_rt.control.joint_speed import JointSpeedLimit
from intera_rt.control.position import PositionController
from intera_rt.control.safety_status import SafetyStatus
from intera_rt.control.torque import TorqueController
from intera_rt.control.trajectory import TrajectoryController
from intera_rt.control.velocity import VelocityController
from intera_rt.control.zero_g import ZeroGController
from intera_rt.options import check_options, option_help

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
    HighSpeedScaling,
    SafetyStatus,
)

STAGES = {stage.name: stage for stage in MONITORS + ADDITIVES + CONTROLLERS}


def check_stage_options(options):
    """Validate the stages' options (stage name → {key: value}; string values, as the
    command line gives them, are converted) without building anything. Returns them with
    their declared types; ValueError naming the stage, option and value, and listing the
    valid ones, otherwise."""
    checked = {}
    for name, given in dict(options or {}).items():
        if name not in STAGES:
            raise ValueError('unknown stage %r; stages: %s' % (name, ', '.join(sorted(STAGES))))
        stage = STAGES[name]
        checked[name] = check_options('stage %r' % name, stage.OPTIONS, given or {},
                                      '%s option' % name)
    return checked


def stage_option_help():
    """'stage.key (type, default d): help' lines of every stage's options."""
    return ['%s.%s' % (name, line) for name, stage in sorted(STAGES.items())
            for line in option_help(stage.OPTIONS)]
