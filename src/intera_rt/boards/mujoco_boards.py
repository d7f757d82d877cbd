"""MuJoCo joint boards (`--backend mujoco`): the Sawyer in MuJoCo, built from the project's own
URDF (boards.mjcf), stepped once per tick in lockstep with the realtime core (implicit-in-velocity
integration, 1 ms / substeps).

Contacts: the arm's collision primitives touch the floor, the table and the obstacles placed
through the sim-control API (real MuJoCo geoms: the model is recompiled, keeping the state,
when one is added or removed); stiffness is MuJoCo's solref time constant (option
`contact_timeconst`). Measured (transmitted) torque is what each drive transmits to its link,
as on the robot's SEA and in the embedded plant: motor torque less viscous damping and dry
friction; contacts and wrenches show in it through the arm's dynamics. Braked: the joints do
not move and the drive carries the static load. External wrenches go in as xfrc_applied
(moved from the link origin to the body's centre of mass). A MuJoCo instability is reported as
a board fault and the arm braked where it was. A tool (set_tool: a gripper, a /robot/urdf
fragment) becomes bodies under the links it hangs from, with its mass, inertia and
collision shapes, its own joints (the fingers) welded at rest. Option `viewer`: MuJoCo's
passive viewer in this process (needs a display).
"""
import math
import os
import threading
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
from urdf_parser_py.urdf import URDF

from intera_rt.boards.base import (BackendOption, BoardsError, Contact,
                                   SimulatedPlant, check_obstacle)
from intera_rt.boards.mjcf import CONTACT_TIMECONST, WORLD_BITS, mjcf_from_urdf  # noqa: F401 (re-exported)
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, LOOP_PERIOD

VIEWER_EVERY = 16             # ticks between viewer syncs (~60 Hz of sim time)
TOOL_PREFIX = 'tool:'
TOOL_OBJECTS = (mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_GEOM, mujoco.mjtObj.mjOBJ_SITE,
                mujoco.mjtObj.mjOBJ_JOINT)


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
        self._model = model
        self._contact_timeconst_arg = contact_timeconst
        self._tool_bodies = []          # names of the tool's root bodies (set_tool)
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

    def set_tool(self, tool):
        """See JointBoards.set_tool: the fragment's links as bodies under the robot's links
        (recompiled, keeping the state), its joints welded at rest."""
        for name in self._tool_bodies:
            self._spec.delete(self._spec.body(name))
        self._tool_bodies = []
        if tool is not None:
            fragment = ET.fromstring(tool.fragment)
            links = {e.get('name') for e in fragment.findall('link')}
            joints = fragment.findall('joint')
            roots = [(j.find('parent').get('link'), j.find('child').get('link')) for j in joints
                     if j.find('parent').get('link') not in links]
            # The robot's description with the fragment grafted (its elements before </robot>).
            base = self._model.urdf_xml
            inner = ''.join(ET.tostring(e, encoding='unicode') for e in fragment)
            robot = URDF.from_xml_string((base[:base.rfind('</robot>')] + inner + '</robot>').encode())
            welded = {j.get('name') for j in joints if j.get('type') != 'fixed'}
            child = mujoco.MjSpec.from_string(mjcf_from_urdf(
                robot, self._model.limits, self.joint_names, False,
                self._contact_timeconst_arg, self.substeps, welded=welded))
            for item in list(child.textures) + list(child.materials) + list(child.actuators):
                child.delete(item)              # the cell's and arm's, which this model has
            for parent, link in roots:
                target = self._spec.body(parent)
                if target is None:
                    raise KeyError('the tool hangs from %r, which the MuJoCo model lacks' % parent)
                body = target.add_frame().attach_body(child.body(link), TOOL_PREFIX, '')
                # (attached under a prefix, as MuJoCo wants; the URDF's names back)
                for item in [body] + [x for kind in TOOL_OBJECTS for x in body.find_all(kind)]:
                    item.name = item.name[len(TOOL_PREFIX):]
                self._tool_bodies.append(link)
        self._recompile()

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
