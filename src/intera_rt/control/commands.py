"""Typed commands to the realtime core: what the ROS adapter sends it (over the pipe, in a
realtime.pipe.Apply) and what it applies between two ticks through an explicit table
(realtime.core). Plain data, validated by whoever applies them; built with keywords only
(InteractionCommand has 14 fields: a positional call could swap two unnoticed)."""
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple


# --- the robot's interface ----------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class JointCommand:
    """/robot/limb/right/joint_command. `stamp`: the loop time the TRAJECTORY_MODE sample
    refers to (from header.stamp; None = now)."""
    mode: int
    names: Tuple[str, ...]
    position: Tuple[float, ...] = ()
    velocity: Tuple[float, ...] = ()
    acceleration: Tuple[float, ...] = ()
    effort: Tuple[float, ...] = ()
    stamp: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class InteractionCommand:
    """/robot/limb/right/interaction_control_command (intera_core_msgs/
    InteractionControlCommand), field for field but the header; interaction_frame as its
    position (x, y, z) and orientation (x, y, z, w). Arrays as sent (empty = the robot's
    default); control.interaction validates them."""
    interaction_control_active: bool
    interaction_control_mode: Tuple[int, ...] = ()
    K_impedance: Tuple[float, ...] = ()
    max_impedance: Tuple[bool, ...] = ()
    D_impedance: Tuple[float, ...] = ()
    K_nullspace: Tuple[float, ...] = ()
    force_command: Tuple[float, ...] = ()
    frame_position: Tuple[float, ...] = (0.0, 0.0, 0.0)
    frame_orientation: Tuple[float, ...] = (0.0, 0.0, 0.0, 1.0)
    endpoint_name: str = 'right_hand'
    in_endpoint_frame: bool = False
    disable_damping_in_force_control: bool = False
    disable_reference_resetting: bool = False
    rotations_for_constrained_zeroG: bool = False


@dataclass(frozen=True, kw_only=True)
class SetEnable:
    """/robot/set_super_enable."""
    on: bool


@dataclass(frozen=True, kw_only=True)
class Stop:
    """/robot/set_super_stop."""


@dataclass(frozen=True, kw_only=True)
class Reset:
    """/robot/set_super_reset."""


@dataclass(frozen=True, kw_only=True)
class SetTimeout:
    """/robot/limb/right/joint_command_timeout (s)."""
    seconds: float


@dataclass(frozen=True, kw_only=True)
class SetSpeedRatio:
    """/robot/limb/right/set_speed_ratio."""
    ratio: float


@dataclass(frozen=True, kw_only=True)
class Suppress:
    """One message on a suppress_* topic; `what` is a value of robot.SUPPRESS_TOPICS."""
    what: str


@dataclass(frozen=True, kw_only=True)
class HeadCommand:
    """/robot/head/command_head_pan; pan_mode None = no change."""
    target: float
    speed_ratio: float
    pan_mode: Optional[int] = None


@dataclass(frozen=True, kw_only=True)
class HomingCommand:
    """/robot/set_homing_mode: per joint NONE (0), MANUAL (1) or AUTO (2)
    (control.homing)."""
    names: Tuple[str, ...]
    commands: Tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class CuffInput:
    """What the cuff's sensors report: grasped (its groove held), or the navigator's circle
    button held — either asks for zero-G. `source` names which input, so both may be held
    at once."""
    source: str          # 'cuff' | 'navigator'
    pressed: bool


@dataclass(frozen=True, kw_only=True)
class BypassSpeedScaling:
    """/intera_rt/bypass_speed_scaling (beyond the robot, seed 002): `on` lifts the speed
    scaling for the safety_status stage's bypass_timeout, `off` re-arms it now. Answers
    (success, message)."""
    on: bool


@dataclass(frozen=True, kw_only=True)
class SetTool:
    """The robot's model changed what it carries (a gripper, a /robot/urdf fragment):
    `tool` is a model.tool.Tool, None for nothing. The dynamics (gravity compensation,
    collision detection's expected torques) and a simulated plant carry it from the next tick.
    `shapes`: collision avoidance's shapes with the tool's (model.avoidance.ToolShapes,
    prepared by the adapter: the core only installs them), None for the armnav ones alone."""
    tool: object = None
    shapes: object = None


# --- sim control: each answers (success, message) --------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SimEstop:
    pressed: bool


@dataclass(frozen=True, kw_only=True)
class SimError:
    on: bool


@dataclass(frozen=True, kw_only=True)
class SimWrench:
    """Push `wrench` (force N; torque N·m; in base, about the link origin) on `link` for
    `duration` s, from `start` s of the core's loop time on (at or before now: at once)."""
    link: str
    wrench: Tuple[float, ...]
    duration: float
    start: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SimClearWrenches:
    """Stop the wrenches SimWrench pushes on the arm's `link` (those waiting for their start
    too): gazebo_ros' clear_body_wrenches on a link of the robot."""
    link: str


@dataclass(frozen=True, kw_only=True)
class SimJointPositions:
    """Teleport joints (empty names = right_j0..6); velocities zeroed, wrenches cleared."""
    names: Tuple[str, ...]
    positions: Tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class SimAddObstacle:
    """A fixed obstacle in base: shape 'box' (size = 3 full edge lengths, m) or 'sphere'
    (size = [radius]); quaternion x, y, z, w."""
    name: str
    shape: str
    position: Tuple[float, ...]
    quaternion: Tuple[float, ...]
    size: Tuple[float, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class SimRemoveObstacle:
    name: str


# --- the world (boards capability 'world'); poses are intera_rt.world.Pose in base --------------
@dataclass(frozen=True, kw_only=True)
class SimSpawnModel:
    """Place a validated world.Model with its frame at `pose`."""
    model: Any
    pose: Any


@dataclass(frozen=True, kw_only=True)
class SimDeleteModel:
    name: str


@dataclass(frozen=True, kw_only=True)
class SimSetModelState:
    """Model `name`'s frame at `pose`, moving at `twist` (linear xyz m/s, angular xyz rad/s)."""
    name: str
    pose: Any
    twist: Tuple[float, ...] = (0.0,) * 6


@dataclass(frozen=True, kw_only=True)
class SimBodyWrench:
    """Force (N) and torque (N·m), base axes, at `point` (m, the body's frame) on a model's
    body for `duration` s (< 0: until cleared), from `start` s of the core's loop time on
    (gazebo_ros' start_time; at or before now: at once)."""
    model: str
    body: str
    force: Tuple[float, ...]
    torque: Tuple[float, ...]
    point: Tuple[float, ...] = (0.0, 0.0, 0.0)
    duration: float = -1.0
    start: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SimClearBodyWrenches:
    model: str
    body: str


@dataclass(frozen=True, kw_only=True)
class SimGripper:
    """The gripper device's command to the plant's fingers (boards.base.GripperCommand's
    fields)."""
    separation: float
    speed: float
    force: float


@dataclass(frozen=True, kw_only=True)
class SimPause:
    """Physics (and, under sim time, time) stops while paused: the core does not tick."""
    paused: bool
