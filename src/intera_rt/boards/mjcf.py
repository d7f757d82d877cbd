"""MJCF of the Sawyer and its cell from the project's URDF, for the MuJoCo backend
(boards.mujoco_boards) and the MuJoCo cameras (ros.io.mujoco_cameras). Text only: MuJoCo
itself is not imported here.

Every URDF link a body (the URDF root, base, is MuJoCo's world); every revolute joint a hinge
with the URDF's inertias, damping, friction (frictionloss) and the drives' reflected inertia
(armature, as the embedded plant adds it), its range the mechanical stops HARD_STOP_MARGIN
beyond the joint limits; one torque motor per joint (ctrlrange = the effort limit). The cell:
the floor under the pedestal's feet, the pedestal, controller box and feet (touching nothing,
as on the robot), an optional table, light. The arm's and head's collision primitives touch
the world (floor, table, obstacles), not each other (collision groups ARM_BITS, WORLD_BITS).
A tool's prismatic joints (a gripper's fingers) are slides with a force-limited position
actuator each (after the joints' motors), a mimic finger coupled to the one it copies.
"""
import math

import numpy as np

from intera_rt.robot import BOARD_JOINTS, GRAVITY, HARD_STOP_MARGIN, LOOP_PERIOD

PEDESTAL_LINKS = ('pedestal', 'controller_box', 'pedestal_feet', 'right_arm_base_link', 'torso')
CONTACT_TIMECONST = 0.005     # s: MuJoCo solref of the arm's contacts (stiff, stable at 1 ms)
LIMIT_TIMECONST = 0.002       # s: the hard stops (as stiff as 1 ms steps allow)
# The table (option `table`): a block from the floor to 0.75 m above it, its near edge
# 0.5 m in front of the arm's base, 0.8 m deep and 1.2 m wide.
TABLE_HEIGHT, TABLE_NEAR, TABLE_DEPTH, TABLE_WIDTH = 0.75, 0.5, 0.8, 1.2
# Collision groups (contype / conaffinity bits): the arm touches the world, not itself.
ARM_BITS = (1, 0)
WORLD_BITS = (0, 1)
INERT_BITS = (0, 0)
# A gripper's fingers (the prismatic joints of a tool grafted at right_hand): position
# servos whose force is capped per command (boards.mujoco_boards). KP saturates the 20 N
# finger effort at 2 mm of error: the squeeze is the force limit, not the servo's error;
# KV damps a 0.07 kg finger critically enough.
FINGER_KP = 10000.0           # N/m
FINGER_KV = 40.0              # N·s/m
FINGER_ARMATURE = 0.01        # kg: the finger drive's reflected mass (steadies contact at 1 ms)
# Finger pads: compliant, as the fingers' bending and their drive make a fingertip. Their
# contacts' solref time constant spreads a pad's strike on a block over ~20 ms instead of
# one stiff 1 ms step (an impulse the arm's collision detection would take for a knock);
# ~0.7 mm per pad under the 10 N a finger squeezes with (docs/world.md). At the spawned
# models' priority (MODEL_PRIORITY) and a dominant solmix the pads' solref/solimp govern
# their contacts; the pads' geoms have no friction of their own (against the cell a pad
# slides), and with a spawned model a pad's contact is an explicit pair
# (mujoco_world.add_model) taking the smaller of PAD_MU and the model's mu, as ODE
# (Gazebo's) does: a pad of friction 1 on a block of 1 on a table of 1 wedges the block
# when one pad shoves it (docs/world.md). condim 4: a block held off its centre of mass
# does not pivot between two pads.
MODEL_PRIORITY = 1            # spawned models' geoms (boards.mujoco_world): their friction wins
PAD_TIMECONST = 0.02          # s: MuJoCo solref of a finger pad's contacts
PAD_SOLMIX = 1000.0
PAD_MU = 0.5                  # the fingertips' (hard plastic) sliding friction
FINGER_FRICTION = (0.0, 0.0, 0.0)
FINGER_CONDIM = 4
IMPRATIO = 10.0               # MuJoCo's friction-to-normal impedance ratio (grasps hold)


def _fmt(values):
    return ' '.join('%.10g' % float(v) for v in values)


def _origin(origin):
    xyz = origin.xyz if origin is not None and origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin is not None and origin.rpy is not None else (0.0, 0.0, 0.0)
    # URDF's rpy: about the fixed X, then Y, then Z axes = MuJoCo's eulerseq "XYZ".
    return 'pos="%s" euler="%s"' % (_fmt(xyz), _fmt(rpy))


def _rpy_matrix(rpy):
    """URDF's rotation Rz(yaw)·Ry(pitch)·Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _geometry(geometry):
    """(MuJoCo type, size) of a URDF primitive; None for meshes."""
    kind = type(geometry).__name__
    if kind == 'Sphere':
        return 'sphere', (geometry.radius,)
    if kind == 'Cylinder':
        return 'cylinder', (geometry.radius, 0.5 * geometry.length)
    if kind == 'Box':
        return 'box', tuple(0.5 * s for s in geometry.size)
    return None


FINGER_PREFIX = 'finger/'       # the finger actuators' names: finger/<joint>


def _slide_range(joint):
    """A prismatic joint's (lower, upper) travel, m."""
    lim = joint.limit
    if lim is None or lim.lower is None or lim.upper is None or not lim.lower < lim.upper:
        raise ValueError('URDF joint %s: a prismatic joint needs <limit lower upper> for the '
                         'MuJoCo backend' % joint.name)
    return lim.lower, lim.upper


def finger_side(lower, upper):
    """+1 when opening a finger of travel (lower, upper) moves it toward `upper`, else −1
    (the side of the larger travel)."""
    return 1.0 if abs(upper) >= abs(lower) else -1.0


def finger_position(lower, upper, separation):
    """A finger's joint position (m) for the gap `separation` between two fingers: half
    of it, on the finger's side, within its travel."""
    return min(max(finger_side(lower, upper) * 0.5 * separation, lower), upper)


def _floor_height(robot):
    """The lowest point of the pedestal's collision boxes (the floor they stand on)."""
    lowest = 0.0
    for link in robot.links:
        if link.name not in PEDESTAL_LINKS:
            continue
        for collision in link.collisions:
            shape = _geometry(collision.geometry)
            z = collision.origin.xyz[2] if collision.origin is not None else 0.0
            if shape is not None:
                half = shape[1][2] if shape[0] == 'box' else shape[1][-1]
                lowest = min(lowest, z - half)
    return lowest


def mjcf_from_urdf(robot, limits, joint_names=BOARD_JOINTS, table=False,
                   contact_timeconst=CONTACT_TIMECONST, substeps=1, welded=()):
    """MJCF text of the Sawyer and its cell.

    Args:
        robot: urdf_parser_py URDF (RobotModel.urdf).
        limits: {joint: JointLimit} (RobotModel.limits: limits, effort, damping, friction,
            armature).
        joint_names: the actuated joints, in the boards' order.
        table: put the table in the cell.
        contact_timeconst: s, MuJoCo's solref time constant of the arm's contacts.
        substeps: physics steps per 1 ms tick.
        welded: joints built as fixed ones (a tool's fingers, at rest).
    """
    children = {}
    for joint in robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    colours = {m.name: m.color.rgba for m in robot.materials if m.color is not None}
    solref = 'solref="%.6g 1"' % contact_timeconst
    pad_solref = 'solref="%.6g 1" solmix="%g" priority="%d"' % (PAD_TIMECONST, PAD_SOLMIX, MODEL_PRIORITY)

    def link_colour(link):
        for visual in link.visuals:
            material = visual.material
            if material is not None:
                if material.color is not None:
                    return material.color.rgba
                if material.name in colours:
                    return colours[material.name]
        return (0.6, 0.6, 0.6, 1.0)

    def geoms(link, indent, bits, surface='', pad=False):
        out = []
        rgba = link_colour(link)
        for k, collision in enumerate(link.collisions):
            shape = _geometry(collision.geometry)
            if shape is None:
                continue
            out.append('%s<geom name="collision/%s/%d" type="%s" size="%s" %s contype="%d" '
                       'conaffinity="%d" group="3" %s%s rgba="%s"/>'
                       % (indent, link.name, k, shape[0], _fmt(shape[1]), _origin(collision.origin),
                          bits[0], bits[1], pad_solref if pad else solref, surface, _fmt(rgba)))
        for k, visual in enumerate(link.visuals):
            shape = _geometry(visual.geometry)
            if shape is None:
                continue
            out.append('%s<geom name="visual/%s/%d" type="%s" size="%s" %s contype="0" '
                       'conaffinity="0" group="1" rgba="%s"/>'
                       % (indent, link.name, k, shape[0], _fmt(shape[1]), _origin(visual.origin),
                          _fmt(link_colour(link))))
        return out

    def inertial(link, indent):
        i = link.inertial
        if i is None or i.mass < 1e-6:
            return []              # placeholder frames (1e-8 kg): massless, welded to their parent
        t = i.inertia
        tensor = np.array([[t.ixx, t.ixy, t.ixz], [t.ixy, t.iyy, t.iyz], [t.ixz, t.iyz, t.izz]])
        xyz, rpy = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if i.origin is not None:
            xyz = i.origin.xyz if i.origin.xyz is not None else xyz
            rpy = i.origin.rpy if i.origin.rpy is not None else rpy
        rot = _rpy_matrix(rpy)                  # fullinertia takes no orientation: rotate it
        tensor = rot @ tensor @ rot.T
        return ['%s<inertial pos="%s" mass="%.10g" fullinertia="%s"/>'
                % (indent, _fmt(xyz), i.mass,
                   _fmt((tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2],
                         tensor[1, 2])))]

    def body(joint, depth):
        link = robot.link_map[joint.child]
        indent = '  ' * depth
        out = ['%s<body name="%s" %s>' % (indent, link.name, _origin(joint.origin))]
        inner = indent + '  '
        out += inertial(link, inner)
        finger = joint.type == 'prismatic' and joint.name not in welded
        if joint.type in ('revolute', 'continuous') and joint.name not in welded:
            lim = limits[joint.name]
            axis = joint.axis if joint.axis is not None else (1.0, 0.0, 0.0)
            rng = ''
            if joint.type == 'revolute':
                rng = 'range="%.10g %.10g" solreflimit="%.6g 1"' % (
                    lim.lower - HARD_STOP_MARGIN, lim.upper + HARD_STOP_MARGIN, LIMIT_TIMECONST)
            out.append('%s<joint name="%s" type="hinge" axis="%s" %s damping="%.10g" '
                       'frictionloss="%.10g" armature="%.10g"/>'
                       % (inner, joint.name, _fmt(axis), rng, lim.damping, lim.friction, lim.armature))
        elif finger:                              # a gripper's finger
            lo, hi = _slide_range(joint)
            axis = joint.axis if joint.axis is not None else (1.0, 0.0, 0.0)
            out.append('%s<joint name="%s" type="slide" axis="%s" range="%.10g %.10g" '
                       'armature="%.10g"/>' % (inner, joint.name, _fmt(axis), lo, hi, FINGER_ARMATURE))
            fingers.append(joint)
        elif joint.type != 'fixed' and joint.name not in welded:
            raise ValueError('URDF joint %s: type %s is not supported by the MuJoCo backend'
                             % (joint.name, joint.type))
        bits = INERT_BITS if link.name in PEDESTAL_LINKS else ARM_BITS
        surface = ''
        if finger:
            surface = ' condim="%d" friction="%s"' % (FINGER_CONDIM, _fmt(FINGER_FRICTION))
        out += geoms(link, inner, bits, surface, pad=finger)
        for child in children.get(link.name, []):
            out += body(child, depth + 1)
        out.append('%s</body>' % indent)
        return out

    fingers = []
    root = robot.get_root()
    floor = _floor_height(robot)
    world = ['    <light name="sun" pos="0 0 3" dir="0 0 -1" directional="true"/>',
             '    <geom name="floor" type="plane" size="0 0 0.05" pos="0 0 %.6g" contype="%d" '
             'conaffinity="%d" %s material="floor"/>' % (floor, WORLD_BITS[0], WORLD_BITS[1], solref)]
    if table:
        world.append('    <geom name="table" type="box" size="%.6g %.6g %.6g" pos="%.6g 0 %.6g" '
                     'contype="%d" conaffinity="%d" %s rgba="0.55 0.42 0.3 1"/>'
                     % (TABLE_DEPTH / 2, TABLE_WIDTH / 2, TABLE_HEIGHT / 2,
                        TABLE_NEAR + TABLE_DEPTH / 2, floor + TABLE_HEIGHT / 2,
                        WORLD_BITS[0], WORLD_BITS[1], solref))
    base = robot.link_map[root]
    world += geoms(base, '    ', INERT_BITS)
    for joint in children.get(root, []):
        world += body(joint, 2)
    actuators = []
    for name in joint_names:
        lim = limits[name]
        actuators.append('    <motor name="%s" joint="%s" gear="1" ctrlrange="%.10g %.10g"/>'
                         % (name, name, -lim.effort, lim.effort))
    for joint in fingers:                          # after the joints' motors: ctrl[n:]
        lo, hi = _slide_range(joint)
        effort = joint.limit.effort if joint.limit is not None and joint.limit.effort else 1.0
        actuators.append('    <position name="%s%s" joint="%s" kp="%.10g" kv="%.10g" '
                         'ctrlrange="%.10g %.10g" forcerange="%.10g %.10g"/>'
                         % (FINGER_PREFIX, joint.name, joint.name, FINGER_KP, FINGER_KV, lo, hi,
                            -effort, effort))
    # A mimic finger (the URDF's <mimic>) moves with the finger it copies, as the gripper's
    # linkage makes them: without the coupling two force-limited fingers squeezing a block
    # would let the pair drift sideways together.
    equalities = ['    <joint joint1="%s" joint2="%s" polycoef="%.10g %.10g 0 0 0" solref="%.6g 1"/>'
                  % (j.name, j.mimic.joint, j.mimic.offset or 0.0,
                     1.0 if j.mimic.multiplier is None else j.mimic.multiplier, LIMIT_TIMECONST)
                  for j in fingers if j.mimic is not None]
    if equalities:
        equalities = ['  <equality>'] + equalities + ['  </equality>']
    return '\n'.join([
        '<mujoco model="sawyer">',
        '  <compiler angle="radian" eulerseq="XYZ" inertiafromgeom="false" autolimits="true"/>',
        # Elliptic friction cones and a high impratio: a block squeezed between two fingers
        # holds instead of creeping down through soft friction (docs/world.md). Sleep:
        # bodies at rest (blocks on a table) drop out of the solver until something
        # touches or moves them; the actuated arm never sleeps.
        '  <option timestep="%.10g" integrator="implicitfast" gravity="%s" cone="elliptic" '
        'impratio="%g">' % (LOOP_PERIOD / substeps, _fmt(GRAVITY), IMPRATIO),
        '    <flag sleep="enable"/>',
        '  </option>',
        '  <visual><global offwidth="1280" offheight="960"/></visual>',
        '  <asset>',
        '    <texture name="grid" type="2d" builtin="checker" rgb1="0.35 0.37 0.4" '
        'rgb2="0.3 0.32 0.35" width="256" height="256"/>',
        '    <material name="floor" texture="grid" texrepeat="8 8"/>',
        '  </asset>',
        '  <worldbody>'] + world + [
        '  </worldbody>',
        '  <actuator>'] + actuators + [
        '  </actuator>'] + equalities + [
        '</mujoco>'])
