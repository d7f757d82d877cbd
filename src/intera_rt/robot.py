"""Facts about the Sawyer that every layer shares, each with one home.

What the robot also serves as ROS parameters (joint names, named poses, acceleration
limits) is read from config/robot_params.yaml, the file the launch loads onto the parameter
server: the robot and the code see the same numbers. The rest are behaviours of the
robot's software. No ROS here.
"""
import os
from typing import NamedTuple

import yaml

_REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
PARAMS_FILE = os.path.join(_REPO, 'config', 'robot_params.yaml')


class Drive(NamedTuple):
    """One joint's drive: reflected inertia (kg m²), viscous damping (N·m·s/rad), Coulomb
    friction (N·m)."""
    armature: float
    damping: float
    friction: float


def _load_params(path=PARAMS_FILE):
    with open(path) as f:
        return yaml.safe_load(f)


PARAMS = _load_params()

ARM_JOINTS = tuple(PARAMS['robot_config']['right_config']['joint_names'])
HEAD_JOINTS = tuple(PARAMS['robot_config']['head_config']['joint_names'])
BOARD_JOINTS = ARM_JOINTS + HEAD_JOINTS          # the joint boards' (and realtime core's) order
BASE_FRAME = 'base'

# Named poses (/named_poses/<limb>/poses/<name>): 7 arm angles, 1 head angle.
NAMED_POSES = {name: tuple(float(v) for v in values)
               for name, values in PARAMS['named_poses']['right']['poses'].items()}
HEAD_NAMED_POSES = {name: float(values[0])
                    for name, values in PARAMS['named_poses']['head']['poses'].items()}
NEUTRAL = NAMED_POSES['neutral']
SHIPPING = NAMED_POSES['shipping']

# rad/s²; not in the URDF: the robot keeps them in its joint config.
ACCEL_LIMITS = {name: float(v) for name, v in
                PARAMS['robot_config']['joint_config']['joint_acceleration_limit'].items()}

LOOP_PERIOD = 0.001          # s: the realtime loop runs at 1 kHz
STATE_PERIOD = 0.01          # s: state topics at 100 Hz
# The suppress_* topics (std_msgs/Empty) suppress their behaviour while they arrive at
# ≥ 5 Hz: each message suppresses it for this long.
SUPPRESS_WINDOW = 0.2        # s
# What a suppress topic under /robot/limb/right/ suppresses (topic suffix → behaviour).
SUPPRESS_TOPICS = {
    'suppress_gravity_compensation': 'gravity',
    'suppress_collision_avoidance': 'collision_avoidance',
    'suppress_contact_safety': 'contact_safety',
    'suppress_hand_overwrench_safety': 'hand_overwrench_safety',
    'suppress_cuff_interaction': 'cuff_interaction',
}
COLLISION_HOLD = 0.5         # s the arm stops and holds after a detected collision
# Each joint's drive as the plants simulate it and the controllers model it (docs/model.md
# gives each figure's source): the motor's inertia reflected through its gearbox (kg m²,
# added to M's diagonal), viscous damping (N·m·s/rad) and Coulomb friction (N·m) at the
# joint. Behind gearboxes of ratio ~100-160 the drives, not the light links, set how the arm
# feels when a person pushes it in zero-G.
DRIVES = {
    #             armature  damping  friction
    'right_j0': Drive(0.6, 0.7, 0.5),
    'right_j1': Drive(0.6, 0.7, 0.5),
    'right_j2': Drive(0.3, 0.7, 0.5),
    'right_j3': Drive(0.3, 0.7, 0.5),
    'right_j4': Drive(0.08, 0.2, 0.1),
    'right_j5': Drive(0.08, 0.2, 0.1),
    'right_j6': Drive(0.05, 0.1, 0.05),
    'head_pan': Drive(0.05, 0.2, 0.1),
}
ARMATURE = {name: drive.armature for name, drive in DRIVES.items()}
# N·m·s/rad: the drag zero-G renders at each arm joint moving faster than ZERO_G_FREE_SPEED
# (rad/s; slower, the arm moves freely: collision avoidance eases links apart unhindered):
# a push of up to 30 N at the hand leaves every joint below its velocity limit, from any pose.
ZERO_G_DAMPING = (20.0, 25.0, 10.0, 10.0, 3.0, 2.0, 1.0)
ZERO_G_FREE_SPEED = 0.1
GRAVITY = (0.0, 0.0, -9.81)  # m/s², in base: the models' and the simulators' gravity
# rad: each joint's mechanical stop lies this far beyond its URDF limit (the limit the
# software keeps to), so a joint held at its limit does not press on the stop.
HARD_STOP_MARGIN = 0.01
