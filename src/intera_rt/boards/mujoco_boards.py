"""MuJoCo joint boards (`--backend mujoco`): the Sawyer in MuJoCo, built from the project's own
URDF, stepped once per tick in lockstep with the realtime core.

The model (mjcf_from_urdf): every URDF link a body (the URDF root, base, is MuJoCo's world),
every revolute joint a hinge with the URDF's inertias, damping (viscous), friction (MuJoCo's
frictionloss: dry friction) and the drives' reflected inertia (armature, as the embedded plant
adds it), its range the mechanical stops HARD_STOP_MARGIN beyond the joint limits; one torque
motor per joint (ctrlrange = the effort limit), 1 ms steps (timestep = 1 ms / substeps),
implicit-in-velocity integration. The scene: the floor under the pedestal's feet, the
pedestal, controller box and feet as in the URDF (no contacts with the arm, as on the robot
and in the embedded plant), an optional table (option `table`), light.

Contacts: the arm's and head's URDF collision primitives touch the floor, the table and the
obstacles placed through the sim-control API (real MuJoCo geoms: the model is recompiled
when one is added or removed, keeping the state); links do not touch each other or the
pedestal (collision avoidance keeps them apart, as in the embedded plant). Contact stiffness
is MuJoCo's soft-constraint time constant (option `contact_timeconst`).

Measured (transmitted) torque: what each drive transmits to its link, as on the robot's SEA
and in the embedded plant: the motor torque less viscous damping and dry friction (MuJoCo's
actuator, passive and friction-loss forces). A contact or an external wrench shows in it
through the arm's dynamics (the controller's response), which is what collision detection
reads. Braked: the joints do not move and the drive carries the static load (inverse
dynamics at rest: gravity, less what wrenches and contacts push with).

External wrenches go in as xfrc_applied (converted from "about the link origin" to MuJoCo's
"about the body's centre of mass"), held for their duration.

A MuJoCo instability (bad accelerations: MuJoCo resets its state) is reported as a board
fault and the arm is braked where it was.

The viewer (option `viewer`, `scripts/sawyer --viewer`): MuJoCo's interactive passive
viewer in this process, synchronised at ~60 Hz of sim time; it needs a display.
"""
import math
import os
import threading

import mujoco
import numpy as np

from intera_rt.boards.base import (BackendOption, BoardsError, Contact,
                                   SimulatedPlant, check_obstacle)
from intera_rt.model.robot_model import GRAVITY
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, HARD_STOP_MARGIN, LOOP_PERIOD

PEDESTAL_LINKS = ('pedestal', 'controller_box', 'pedestal_feet', 'right_arm_base_link', 'torso')
CONTACT_TIMECONST = 0.005     # s: MuJoCo solref of the arm's contacts (stiff, stable at 1 ms)
LIMIT_TIMECONST = 0.002       # s: the hard stops (as stiff as 1 ms steps allow)
VIEWER_EVERY = 16             # ticks between viewer syncs (~60 Hz of sim time)
# The table (option `table`): a block from the floor to 0.75 m above it, its near edge
# 0.5 m in front of the arm's base, 0.8 m deep and 1.2 m wide.
TABLE_HEIGHT, TABLE_NEAR, TABLE_DEPTH, TABLE_WIDTH = 0.75, 0.5, 0.8, 1.2
# Collision groups (contype / conaffinity bits): the arm touches the world, not itself.
ARM_BITS = (1, 0)
WORLD_BITS = (0, 1)
INERT_BITS = (0, 0)


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
                   contact_timeconst=CONTACT_TIMECONST, substeps=1):
    """MJCF text of the Sawyer and its cell.

    Args:
        robot: urdf_parser_py URDF (RobotModel.urdf).
        limits: {joint: JointLimit} (RobotModel.limits: limits, effort, damping, friction,
            armature).
        joint_names: the actuated joints, in the boards' order.
        table: put the table in the cell.
        contact_timeconst: s, MuJoCo's solref time constant of the arm's contacts.
        substeps: physics steps per 1 ms tick.
    """
    children = {}
    for joint in robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    colours = {m.name: m.color.rgba for m in robot.materials if m.color is not None}
    solref = 'solref="%.6g 1"' % contact_timeconst

    def link_colour(link):
        for visual in link.visuals:
            material = visual.material
            if material is not None:
                if material.color is not None:
                    return material.color.rgba
                if material.name in colours:
                    return colours[material.name]
        return (0.6, 0.6, 0.6, 1.0)

    def geoms(link, indent, bits):
        out = []
        rgba = link_colour(link)
        for k, collision in enumerate(link.collisions):
            shape = _geometry(collision.geometry)
            if shape is None:
                continue
            out.append('%s<geom name="collision/%s/%d" type="%s" size="%s" %s contype="%d" '
                       'conaffinity="%d" group="3" %s rgba="%s"/>'
                       % (indent, link.name, k, shape[0], _fmt(shape[1]), _origin(collision.origin),
                          bits[0], bits[1], solref, _fmt(rgba)))
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
        if joint.type in ('revolute', 'continuous'):
            lim = limits[joint.name]
            axis = joint.axis if joint.axis is not None else (1.0, 0.0, 0.0)
            rng = ''
            if joint.type == 'revolute':
                rng = 'range="%.10g %.10g" solreflimit="%.6g 1"' % (
                    lim.lower - HARD_STOP_MARGIN, lim.upper + HARD_STOP_MARGIN, LIMIT_TIMECONST)
            out.append('%s<joint name="%s" type="hinge" axis="%s" %s damping="%.10g" '
                       'frictionloss="%.10g" armature="%.10g"/>'
                       % (inner, joint.name, _fmt(axis), rng, lim.damping, lim.friction, lim.armature))
        elif joint.type != 'fixed':
            raise ValueError('URDF joint %s: type %s is not supported by the MuJoCo backend'
                             % (joint.name, joint.type))
        bits = INERT_BITS if link.name in PEDESTAL_LINKS else ARM_BITS
        out += geoms(link, inner, bits)
        for child in children.get(link.name, []):
            out += body(child, depth + 1)
        out.append('%s</body>' % indent)
        return out

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
    return '\n'.join([
        '<mujoco model="sawyer">',
        '  <compiler angle="radian" eulerseq="XYZ" inertiafromgeom="false" autolimits="true"/>',
        '  <option timestep="%.10g" integrator="implicitfast" gravity="%s"/>'
        % (LOOP_PERIOD / substeps, _fmt(GRAVITY)),
        '  <visual><global offwidth="1280" offheight="960"/></visual>',
        '  <asset>',
        '    <texture name="grid" type="2d" builtin="checker" rgb1="0.35 0.37 0.4" '
        'rgb2="0.3 0.32 0.35" width="256" height="256"/>',
        '    <material name="floor" texture="grid" texrepeat="8 8"/>',
        '  </asset>',
        '  <worldbody>'] + world + [
        '  </worldbody>',
        '  <actuator>'] + actuators + [
        '  </actuator>',
        '</mujoco>'])


class MujocoBoards(SimulatedPlant):
    name = 'mujoco'
    OPTIONS = {
        'substeps': BackendOption(int, 1, 'MuJoCo steps per 1 ms tick'),
        'table': BackendOption(bool, False, 'a table in front of the robot (0.75 m high, near '
                               'edge 0.5 m ahead of the base, 0.8 x 1.2 m)'),
        'contact_timeconst': BackendOption(float, CONTACT_TIMECONST,
                                           'contact stiffness as MuJoCo solref time constant (s, '
                                           '>= 2 steps)'),
        'viewer': BackendOption(bool, False, "open MuJoCo's interactive viewer (needs a display)"),
    }

    def __init__(self, model, joint_names=BOARD_JOINTS, substeps=1, table=False,
                 contact_timeconst=CONTACT_TIMECONST, viewer=False):
        """Args:
            model: intera_rt.model.RobotModel (its URDF).
            joint_names: the joints the boards drive, in their order.
            substeps: MuJoCo steps per advance() of 1 ms.
            table: put the table in the cell.
            contact_timeconst: s, the contacts' MuJoCo solref time constant.
            viewer: open the interactive viewer on activate() (needs a display).
        """
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError('substeps must be >= 1, got %r' % (substeps,))
        h = LOOP_PERIOD / substeps
        if not (math.isfinite(contact_timeconst) and contact_timeconst >= 2 * h):
            raise ValueError('contact_timeconst must be >= 2 MuJoCo steps (%g s), got %r'
                             % (2 * h, contact_timeconst))
        self._init_plant(model, joint_names)
        self.substeps = substeps
        self.table = bool(table)
        self.viewer = bool(viewer)
        self.xml = mjcf_from_urdf(model.urdf, model.limits, self.joint_names, self.table,
                                  contact_timeconst, substeps)
        self._spec = mujoco.MjSpec.from_string(self.xml)
        self.m = self._spec.compile()
        self.d = mujoco.MjData(self.m)
        m = self.m
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        if min(jids) < 0:
            raise BoardsError('the MuJoCo model lacks joint %s'
                              % self.joint_names[jids.index(min(jids))])
        self._qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self._dof = np.array([m.jnt_dofadr[j] for j in jids])
        self._steps = 0                 # physics steps taken (contacts are cached per step)
        self._wrenches = []             # [body id, force (3), torque about the origin (3), s left]
        self._obstacles = {}            # name → Obstacle record, in the order first added
        self._contacts_at = -1
        self._contacts = []
        self._viewer = None
        self._viewer_threads = ()
        self._scratch = np.zeros(m.nv)
        self._index()
        self._hold()

    # --- lifecycle -----------------------------------------------------------------------
    def on_activate(self):
        if self.viewer:
            self._open_viewer()

    def on_shutdown(self):
        self._close_viewer()

    def _close_viewer(self):
        """Close the viewer and wait for its thread (GLFW torn down under a live window
        thread crashes the interpreter at exit)."""
        if self._viewer is not None:
            self._viewer.close()
            for thread in self._viewer_threads:
                thread.join(2.0)
            self._viewer = None

    def _open_viewer(self):
        if not (os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')):
            raise BoardsError("the MuJoCo viewer needs a display (DISPLAY is not set): run "
                              "without --viewer, or under X (e.g. xvfb-run)")
        import mujoco.viewer
        before = set(threading.enumerate())
        try:
            self._viewer = mujoco.viewer.launch_passive(self.m, self.d)
        except Exception as exc:  # noqa: BLE001 - GLFW's errors come in many types
            raise BoardsError('the MuJoCo viewer could not open: %s' % exc) from exc
        self._viewer_threads = set(threading.enumerate()) - before

    # --- the cycle -----------------------------------------------------------------------
    def set_brakes(self, engaged):
        engaged = bool(engaged)
        if engaged != self.brakes:
            self.brakes = engaged
            self.d.qvel[:] = 0.0
            self.qd = np.zeros(len(self.qd))

    def advance(self, dt):
        d = self.d
        if self._wrenches:
            self._apply_wrenches()
        if self.brakes:
            self._hold()
        else:
            d.ctrl[:] = self.tau_cmd
            q_before = self.q
            bad = d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number
            mujoco.mj_step(self.m, d, nstep=self.substeps)
            if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number != bad:
                # MuJoCo has reset its state: put the arm back where it was, braked.
                self.report_fault('MuJoCo: simulation unstable (bad accelerations) at t = %.3f s'
                                  % self.time)
                d.qpos[self._qadr] = q_before
                self.brakes = True
                self._hold()
            else:
                dof = self._dof
                self.q = d.qpos[self._qadr]
                self.qd = d.qvel[dof]
                # What each drive transmits: motor torque, less viscous damping (passive)
                # and dry friction (the friction-loss rows of the constraint solver).
                tau = d.qfrc_actuator + d.qfrc_passive
                nf = d.nf
                if nf:
                    rows = slice(d.ne, d.ne + nf)
                    tau[d.efc_id[rows]] += d.efc_force[rows]
                self.tau_transmitted = tau[dof]
        self._steps += 1
        self.time += dt
        if self._wrenches:
            for w in self._wrenches:
                w[3] -= dt
            left = [w for w in self._wrenches if w[3] > 0.0]
            if len(left) != len(self._wrenches):
                self._wrenches = left
                d.xfrc_applied[:] = 0.0
        if self._viewer is not None and self._steps % VIEWER_EVERY == 0:
            if self._viewer.is_running():
                self._viewer.sync()

    def _hold(self):
        """Braked (or just placed): at rest where it is; the drives carry the static load
        (inverse dynamics at zero velocity and acceleration, less the external wrenches)."""
        m, d = self.m, self.d
        d.qvel[:] = 0.0
        d.qacc[:] = 0.0
        mujoco.mj_inverse(m, d)
        tau = d.qfrc_inverse.copy()
        if self._wrenches:
            ext = self._scratch
            ext[:] = 0.0
            for body, force, torque, _ in self._wrenches:
                mujoco.mj_applyFT(m, d, force, torque, d.xpos[body], body, ext)
            tau -= ext
        self.q = d.qpos[self._qadr]
        self.qd = np.zeros(len(self.qd))
        self.tau_transmitted = tau[self._dof]

    # --- sim control -------------------------------------------------------------------
    def apply_wrench(self, link, wrench, duration):
        """Push `wrench` (force xyz, torque xyz; in base, about the link origin) on `link`."""
        body = 0 if link == 'base' else mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, link)
        if body < 0:
            raise KeyError('no link named %r' % link)
        w = np.asarray(wrench, float)
        self._wrenches.append([body, w[:3].copy(), w[3:].copy(), float(duration)])

    def _apply_wrenches(self):
        """xfrc_applied from the wrenches: MuJoCo applies them at each body's centre of mass."""
        d = self.d
        xfrc = d.xfrc_applied
        xfrc[:] = 0.0
        for body, force, torque, _ in self._wrenches:
            arm = d.xpos[body] - d.xipos[body]          # from the centre of mass to the origin
            xfrc[body, :3] += force
            xfrc[body, 3:] += torque + np.cross(arm, force)

    def reset_pose(self, positions):
        """At rest at `positions` (clipped to the limits); drops the external wrenches, keeps
        the obstacles."""
        d = self.d
        d.qpos[self._qadr] = _clip(np.asarray(positions, float), self.lower, self.upper)
        self._wrenches = []
        d.xfrc_applied[:] = 0.0
        self._hold()
        self._contacts_at = -1

    def add_obstacle(self, name, shape, position, quaternion, size):
        """See JointBoards.add_obstacle: a static MuJoCo geom (the model is recompiled)."""
        record = check_obstacle(name, shape, position, quaternion, size)
        geom = self._spec.geom('obstacle/' + record.name)
        if geom is None:
            geom = self._spec.worldbody.add_geom()
            geom.name = 'obstacle/' + record.name
        if record.shape == 'box':
            geom.type = mujoco.mjtGeom.mjGEOM_BOX
            geom.size = [0.5 * s for s in record.size]
        else:
            geom.type = mujoco.mjtGeom.mjGEOM_SPHERE
            geom.size = [record.size[0], 0.0, 0.0]
        geom.pos = list(record.position)
        x, y, z, w = record.quaternion
        geom.quat = [w, x, y, z]
        geom.contype, geom.conaffinity = WORLD_BITS
        geom.solref = [self._contact_timeconst(), 1.0]
        geom.rgba = [0.2, 0.45, 0.8, 0.6]
        self._recompile()
        self._obstacles[record.name] = record

    def remove_obstacle(self, name):
        if name not in self._obstacles:
            raise KeyError('no obstacle named %r' % (name,))
        self._spec.delete(self._spec.geom('obstacle/' + name))
        del self._obstacles[name]
        self._recompile()

    def obstacles(self):
        return list(self._obstacles.values())

    def contacts(self):
        """The contacts of the latest physics step between a link of the arm (or head) and an
        obstacle, the table or the floor: list of Contact (obstacle, link, depth m, force N
        in base: normal and friction, point m in base)."""
        if self._contacts_at != self._steps:
            self._contacts_at = self._steps
            self._contacts = self._read_contacts()
        return list(self._contacts)

    # --- internals -----------------------------------------------------------------------
    def _contact_timeconst(self):
        return float(self.m.geom_solref[mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_GEOM, 'floor'), 0])

    def _index(self):
        """Geom id → the link (arm) or obstacle name (world) it belongs to."""
        m = self.m
        self._geom_link, self._geom_obstacle = {}, {}
        for gid in range(m.ngeom):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, gid) or ''
            if name.startswith('collision/') and m.geom_contype[gid]:
                self._geom_link[gid] = name.split('/')[1]
            elif name.startswith('obstacle/'):
                self._geom_obstacle[gid] = name[len('obstacle/'):]
            elif name in ('floor', 'table'):
                self._geom_obstacle[gid] = name

    def _recompile(self):
        """Rebuild the model after the cell changed, keeping the arm's state and commands."""
        ctrl = self.d.ctrl.copy()
        self.m, self.d = self._spec.recompile(self.m, self.d)
        self.d.ctrl[:] = ctrl
        self._scratch = np.zeros(self.m.nv)
        self._index()
        mujoco.mj_forward(self.m, self.d)
        if self.brakes:
            self._hold()
        self._contacts_at = -1
        if self._viewer is not None:            # the viewer shows one model: reopen it
            self._close_viewer()
            self._open_viewer()

    def _read_contacts(self):
        m, d = self.m, self.d
        out = []
        f6 = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            g1, g2 = c.geom1, c.geom2
            if g1 in self._geom_link and g2 in self._geom_obstacle:
                link, obstacle, sign = self._geom_link[g1], self._geom_obstacle[g2], -1.0
            elif g2 in self._geom_link and g1 in self._geom_obstacle:
                link, obstacle, sign = self._geom_link[g2], self._geom_obstacle[g1], 1.0
            else:
                continue
            depth = -float(c.dist)
            if depth <= 0.0:
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            frame = np.array(c.frame).reshape(3, 3)    # rows: the normal (geom1 → geom2), tangents
            normal = frame[0]
            # The contact force (normal ≥ 0, and friction) in the world: it pushes geom2,
            # and geom1 the opposite way; sign turns it into what the obstacle pushes the link
            # with.
            force = sign * (frame.T @ f6[:3])
            # c.pos lies midway between the surfaces; the link's deepest point is half a
            # depth further into the obstacle.
            into = -sign * normal
            point = np.array(c.pos) + 0.5 * depth * into
            out.append(Contact(obstacle, link, depth, force, point))
        return out
