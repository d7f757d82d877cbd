"""Facts about the Sawyer that every layer shares, each with one home.

What the robot also serves as ROS parameters (joint names, named poses, acceleration
limits) is read from config/robot_params.yaml, the file the launch loads onto the parameter
server: the robot and the code see the same numbers. The rest are behaviours of the
robot's software. No ROS here.
"""
import os

import yaml

_REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
PARAMS_FILE = os.path.join(_REPO, 'config', 'robot_params.yaml')


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
# Reflected motor inertia of each joint's drive (kg m²). Sawyer's links are light; behind
# the gearboxes the rotors dominate the effective inertia of the wrist.
ARMATURE = {'right_j0': 0.6, 'right_j1': 0.6, 'right_j2': 0.3, 'right_j3': 0.3,
            'right_j4': 0.08, 'right_j5': 0.08, 'right_j6': 0.05, 'head_pan': 0.05}
GRAVITY = (0.0, 0.0, -9.81)  # m/s², in base: the models' and the simulators' gravity
# rad: each joint's mechanical stop lies this far beyond its URDF limit (the limit the
# software keeps to), so a joint held at its limit does not press on the stop.
HARD_STOP_MARGIN = 0.01
