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
a board fault and the arm braked where it was. Option `viewer`: MuJoCo's passive viewer in
this process (needs a display).

The world (capability 'world', docs/world.md): spawned models are MuJoCo bodies
(boards.mujoco_world) that rest, slide and are pushed by their own physics, also while the
arm is braked. A tool (set_tool, option `gripper`) is grafted into the arm's model; its
prismatic joints are fingers, position servos whose setpoint slews at the commanded speed
and whose force is capped at the commanded squeeze: a block is held by friction alone.
"""
import math
import os
import threading
import xml.etree.ElementTree as ET
from typing import NamedTuple

import mujoco
import numpy as np
from urdf_parser_py.urdf import URDF

from intera_rt import native
from intera_rt.boards import mujoco_world
from intera_rt.boards.base import (CAPABILITIES, BackendOption, BodyState, BoardsError, Contact,
                                   GripperCommand, GripperState, SimulatedPlant, check_obstacle)
from intera_rt.boards.mjcf import (CONTACT_TIMECONST, FINGER_PREFIX, WORLD_BITS,  # noqa: F401
                                   finger_position, finger_side, mjcf_from_urdf)
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, LOOP_PERIOD
from intera_rt.model.fragment_parse import FragmentError, parse_xml
from intera_rt.model.robot_model import default_urdf_path
from intera_rt.world.model import Pose, WorldError

GRIPPER_BASE = 'right_gripper_base'    # the electric gripper's root link

VIEWER_EVERY = 16             # ticks between viewer syncs (~60 Hz of sim time)
GRIP_CONTACT_FORCE = 0.2      # N: a finger pressing a model harder than this touches it
_REST = (0.0,) * 6
_YZX, _ZXY = np.array([1, 2, 0]), np.array([2, 0, 1])


class MujocoBoards(SimulatedPlant):
    name = 'mujoco'
    capabilities = frozenset(CAPABILITIES)     # every sim-only ability, the world included
    OPTIONS = {
        'substeps': BackendOption(int, 1, 'MuJoCo steps per 1 ms tick'),
        'table': BackendOption(bool, False, 'a table in front of the robot (0.75 m high, near '
                               'edge 0.5 m ahead of the base, 0.8 x 1.2 m)'),
        'contact_timeconst': BackendOption(float, CONTACT_TIMECONST,
                                           'contact stiffness as MuJoCo solref time constant (s, '
                                           '>= 2 steps)'),
        'viewer': BackendOption(bool, False, "open MuJoCo's interactive viewer (needs a display)"),
        'gripper': BackendOption(bool, False, 'the electric gripper on right_hand, its fingers '
                                 'MuJoCo bodies (urdf/fragments/electric_gripper.urdf)'),
    }

    def __init__(self, model, joint_names=BOARD_JOINTS, substeps=1, table=False,
                 contact_timeconst=CONTACT_TIMECONST, viewer=False, gripper=False):
        """Args:
            model: intera_rt.model.RobotModel (its URDF).
            joint_names: the joints the boards drive, in their order.
            substeps: MuJoCo steps per advance() of 1 ms.
            table: put the table in the cell.
            contact_timeconst: s, the contacts' MuJoCo solref time constant.
            viewer: open the interactive viewer on activate() (needs a display).
            gripper: graft the electric gripper (set_tool) before the first step.
        """
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError('substeps must be >= 1, got %r' % (substeps,))
        h = LOOP_PERIOD / substeps
        if not (math.isfinite(contact_timeconst) and contact_timeconst >= 2 * h):
            raise ValueError('contact_timeconst must be >= 2 MuJoCo steps (%g s), got %r'
                             % (2 * h, contact_timeconst))
        self._init_plant(model, joint_names)
        self.model = model
        self.substeps = substeps
        self.table = bool(table)
        self.viewer = bool(viewer)
        self._contact_tc = float(contact_timeconst)
        self._steps = 0                 # physics steps taken (contacts are cached per step)
        self._wrenches = []             # mujoco_world.BodyWrench, in the order applied
        self._obstacles = {}            # name → Obstacle record, in the order first added
        self._models = {}               # name → world.Model spawned, in the order spawned
        self._grip = None               # the latest GripperCommand
        self._grip_moving = False       # the fingers' setpoint or force still to be updated
        self._grip_target = 0.0         # m: the fingers' separation setpoint, slewed
        self._grip_at = -1
        self._grip_state = None
        self._contacts_at = -1
        self._contacts = []
        self._viewer = None
        self._viewer_threads = ()
        self.m = self.d = None
        self._build(model.urdf)
        self._fit_fingers(False)
        if gripper and not model.has_frame(GRIPPER_BASE):
            self.set_tool(gripper_fragment())
        self._hold()

    def _build(self, urdf):
        """(Re)build the MuJoCo model of `urdf` (urdf_parser_py: the robot, its tool) with the
        cell's obstacles and spawned models, keeping every joint's state that carries over."""
        # A tool's joints other than fingers (prismatic) are welded at rest.
        welded = {j.name for j in urdf.joints
                  if j.type not in ('fixed', 'prismatic') and j.name not in self.model.limits}
        xml = mjcf_from_urdf(urdf, self.model.limits, self.joint_names, self.table,
                             self._contact_tc, self.substeps, welded=welded)
        spec = mujoco.MjSpec.from_string(xml)
        fingers = {j.child: j for j in urdf.joints if j.type == 'prismatic' and j.name not in welded}
        # The fingers' drive moves each at most at its joint's velocity limit (none: no cap).
        self._finger_speed = {j.name: j.limit.velocity for j in fingers.values()
                              if j.limit is not None and j.limit.velocity}
        self._pads = [(g.name, link) for link in sorted(fingers) for g in spec.geoms
                      if g.name.startswith('collision/%s/' % link)]
        for record in self._obstacles.values():
            self._place_obstacle(spec, record)
        for name, (world_model, pose) in self._models.items():
            mujoco_world.add_model(spec, world_model, pose, self._solref(), pads=self._pads)
        m = spec.compile()
        d = mujoco.MjData(m)
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        if min(jids) < 0:
            raise BoardsError('the MuJoCo model lacks joint %s'
                              % self.joint_names[jids.index(min(jids))])
        if self.m is not None:
            _carry_state(self.m, self.d, m, d)
        self.xml, self._spec, self.m, self.d = xml, spec, m, d
        self._qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self._dof = np.array([m.jnt_dofadr[j] for j in jids])
        self._reindex()

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
            self.d.qvel[self._dof] = 0.0
            self.qd = np.zeros(len(self.qd))
            if engaged:
                self._hold()                # the static load where the brakes catch the arm

    def advance(self, dt):
        d = self.d
        if self._wrenches:
            self._apply_wrenches()
        if self._grip_moving:
            self._drive_fingers(dt)
        if self.brakes:
            if self._models or self._fingers:
                self._step_held()
            else:
                self._hold()
        else:
            q_before = self.q
            if self._native is not None:
                stepped = self._native.step(self.tau_cmd)
            else:
                self._ctrl[:] = self.tau_cmd
                bad = self._bad_qacc.number
                mujoco.mj_step(self.m, d, self.substeps)
                stepped = None if self._bad_qacc.number != bad else \
                    (self._qpos.take(self._qadr), self._qvel.take(self._dof), self._transmitted())
            if stepped is None:
                # MuJoCo has reset its state: put the arm back where it was, braked.
                self.report_fault('MuJoCo: simulation unstable (bad accelerations) at t = %.3f s'
                                  % self.time)
                d.qpos[self._qadr] = q_before
                self.brakes = True
                self._hold()
            else:
                self.q, self.qd, self.tau_transmitted = stepped
        self._steps += 1
        self.time += dt
        if self._wrenches:
            left = mujoco_world.expire(self._wrenches, dt)
            if len(left) != len(self._wrenches):
                self._wrenches = left
                d.xfrc_applied[:] = 0.0
        if self._viewer is not None and self._steps % VIEWER_EVERY == 0:
            if self._viewer.is_running():
                self._viewer.sync()

    def _transmitted(self):
        """What each drive transmits after a step: motor torque, less viscous damping
        (passive) and dry friction (the friction-loss rows of the constraint solver)."""
        d, dof = self.d, self._dof
        # (the sum over the dofs up to the boards' last, then theirs: fewer numpy calls)
        tau = np.add(self._actuator_force, self._passive_force, out=self._drive_sum).take(dof)
        nf = d.nf
        if nf == self._friction_rows:
            # (the friction rows come in dof order, one per dof with friction loss: here
            # exactly the boards' joints, in their order)
            ne = d.ne
            tau += d.efc_force[ne:ne + nf]
        elif nf:
            full = d.qfrc_actuator + d.qfrc_passive
            rows = np.arange(d.ne, d.ne + nf)
            rows = rows[d.efc_type[rows] == mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF]
            full[d.efc_id[rows]] += d.efc_force[rows]
            tau = full[dof]
        return tau

    def _step_held(self):
        """Braked with a world that moves (models, fingers): step the physics with the drives
        carrying the static load, then put the arm back where the brakes hold it."""
        d = self.d
        d.ctrl[:self._n] = self._held_tau
        mujoco.mj_step(self.m, d, nstep=self.substeps)
        d.qpos[self._qadr] = self.q
        d.qvel[self._dof] = 0.0

    def _hold(self):
        """Braked (or just placed): at rest where it is; the drives carry the static load
        (inverse dynamics at zero velocity and acceleration, less the external wrenches).
        The world's bodies keep their motion."""
        m, d = self.m, self.d
        dof = self._dof
        qvel, qacc = d.qvel.copy(), d.qacc.copy()
        qvel[dof] = 0.0
        qacc[dof] = 0.0
        d.qvel[:] = qvel
        d.qacc[:] = qacc
        mujoco.mj_inverse(m, d)
        tau = d.qfrc_inverse.copy()
        d.qacc[:] = qacc                    # mj_inverse leaves it, but say so
        if self._wrenches:
            ext = self._scratch
            ext[:] = 0.0
            for w in self._wrenches:
                at = d.xmat[w.body].reshape(3, 3) @ w.point + d.xpos[w.body]
                mujoco.mj_applyFT(m, d, w.force, w.torque, at, w.body, ext)
            tau -= ext
        self.q = d.qpos[self._qadr]
        self.qd = np.zeros(len(self.qd))
        self.tau_transmitted = tau[dof]
        self._held_tau = self.tau_transmitted

    # --- sim control -------------------------------------------------------------------
    def apply_wrench(self, link, wrench, duration):
        """Push `wrench` (force xyz, torque xyz; in base, about the link origin) on `link`."""
        body = 0 if link == 'base' else mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, link)
        if body < 0:
            raise KeyError('no link named %r' % link)
        w = np.asarray(wrench, float)
        self._wrenches.append(mujoco_world.BodyWrench(
            body, 'world' if body == 0 else link, w[:3].copy(), w[3:].copy(), float(duration),
            point=np.zeros(3)))

    def clear_wrenches(self, link):
        name = 'world' if link == 'base' else link
        if name != 'world' and mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, link) < 0:
            raise KeyError('no link named %r' % link)
        self._wrenches = mujoco_world.drop_link_wrenches(self._wrenches, name)
        self.d.xfrc_applied[:] = 0.0

    def _apply_wrenches(self):
        """xfrc_applied from the wrenches: MuJoCo applies them at each body's centre of mass."""
        d = self.d
        xfrc = d.xfrc_applied
        xfrc[:] = 0.0
        for w in self._wrenches:
            body, force = w.body, w.force
            # from the centre of mass to where the force acts
            arm = d.xmat[body].reshape(3, 3) @ w.point + d.xpos[body] - d.xipos[body]
            xfrc[body, :3] += force
            xfrc[body, 3:] += w.torque + np.cross(arm, force)

    def reset_pose(self, positions):
        """At rest at `positions` (clipped to the limits); drops the external wrenches, keeps
        the obstacles and the world's models."""
        d = self.d
        d.qpos[self._qadr] = _clip(np.asarray(positions, float), self.lower, self.upper)
        self._wrenches = []
        d.xfrc_applied[:] = 0.0
        self._hold()
        self._contacts_at = self._grip_at = -1

    def add_obstacle(self, name, shape, position, quaternion, size):
        """See JointBoards.add_obstacle: a static MuJoCo geom (the model is recompiled)."""
        record = check_obstacle(name, shape, position, quaternion, size)
        self._place_obstacle(self._spec, record)
        self._recompile()
        self._obstacles[record.name] = record

    def _place_obstacle(self, spec, record):
        geom = spec.geom('obstacle/' + record.name)
        if geom is None:
            geom = spec.worldbody.add_geom()
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
        geom.solref = self._solref()
        geom.rgba = [0.2, 0.45, 0.8, 0.6]

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
        obstacle, the table, the floor or a static spawned model: list of Contact (obstacle,
        link, depth m, force N in base: normal and friction, point m in base)."""
        if self._contacts_at != self._steps:
            self._contacts_at = self._steps
            self._contacts = self._read_contacts()
        return list(self._contacts)

    # --- the world ---------------------------------------------------------------------
    def spawn_model(self, model, pose):
        """See JointBoards.spawn_model: its bodies as MuJoCo bodies (boards.mujoco_world),
        the model recompiled keeping every other body's state."""
        if model.name in self._models:
            raise WorldError('model_name: a model named %r already exists' % model.name)
        mujoco_world.check(model)
        mujoco_world.add_model(self._spec, model, pose, self._solref(), pads=self._pads)
        self._models[model.name] = (model, pose)
        try:
            self._recompile()
        except Exception as exc:        # noqa: BLE001 - MuJoCo's compiler says why in a ValueError
            mujoco_world.remove_model(self._spec, model)
            del self._models[model.name]
            raise WorldError("model '%s': MuJoCo cannot simulate it: %s" % (model.name, exc)) from exc

    def delete_model(self, name):
        model, _ = self._model(name)
        mujoco_world.remove_model(self._spec, model)
        del self._models[name]
        self._wrenches = mujoco_world.drop_wrenches(self._wrenches, name)
        self.d.xfrc_applied[:] = 0.0
        self._recompile()

    def set_model_state(self, name, pose, twist):
        """See JointBoards.set_model_state: every body placed with the model's frame at `pose`;
        each moves as a point of the model would (linear v + w × r, angular w)."""
        model, _ = self._model(name)
        mujoco_world.set_state(self._spec, self.m, self.d, model, pose, twist)
        self._models[name] = (model, pose)
        self._contacts_at = self._grip_at = -1
        self._states = None                     # (an anchored body may have moved)

    def body_states(self):
        """See JointBoards.body_states. Only the bodies that moved since the previous call
        are read anew (resting bodies asleep in MuJoCo keep their state bit for bit); while
        none did this is the very tuple of the previous call, so that the core sends the
        world's bodies only when they changed."""
        q = self._qpos[self._free_q]
        v = self._qvel[self._free_v]
        states = self._states
        if states is not None and q.tobytes() == self._states_qb and v.tobytes() == self._states_vb:
            return self._states_tuple                    # (at once: every body as it was)
        q = q.reshape(-1, 7)                             # x y z, w, qx qy qz
        v = v.reshape(-1, 6)                             # linear (world), angular (body axes)
        if states is None:
            states = self._states = [self._anchored_state(b) for b in self._bodies]
            moved = np.ones(len(q), bool)
        else:
            moved = (q != self._states_q).any(axis=1) | (v != self._states_v).any(axis=1)
            if not moved.any():
                return self._states_tuple
        self._states_q, self._states_v = q, v
        self._states_qb, self._states_vb = q.tobytes(), v.tobytes()
        q, v = q[moved], v[moved]
        w, u, a = q[:, 3:4], q[:, 4:7], v[:, 3:]
        t = 2.0 * _cross(u, a)                           # the angular velocity into base axes
        rows = np.hstack((q[:, :3], u, w, v[:, :3], a + w * t + _cross(u, t))).tolist()
        for k, r in zip(self._free_index[moved], rows):
            model, body = self._bodies[k][:2]
            states[k] = BodyState(model, body, Pose(tuple(r[:3]), tuple(r[3:7])), tuple(r[7:]))
        self._states_tuple = tuple(states)
        return self._states_tuple

    def _anchored_state(self, body):
        """The BodyState of an anchored body of _bodies (where it is built), None for a free
        one."""
        model, name, bid, qadr, _ = body
        if qadr >= 0:
            return None
        pos, (qw, qx, qy, qz) = self.m.body_pos[bid].tolist(), self.m.body_quat[bid].tolist()
        return BodyState(model, name, Pose(tuple(pos), (qx, qy, qz, qw)), _REST)

    def apply_body_wrench(self, model, body, force, torque, point, duration):
        self._wrenches.append(mujoco_world.body_wrench(
            self.m, self._model(model)[0], model, body, force, torque, point, duration))

    def clear_body_wrenches(self, model, body):
        self._model(model)
        self._wrenches = mujoco_world.drop_wrenches(self._wrenches, model, body)
        self.d.xfrc_applied[:] = 0.0

    def _model(self, name):
        return mujoco_world.model_named(self._models, name)

    # --- the gripper -------------------------------------------------------------------
    def set_tool(self, tool):
        """See JointBoards.set_tool. `tool`: a model.tool.Tool (its `fragment`: the tool's
        links and joints as one <robot>, hanging from the robot's links), a fragment's XML,
        or None. The plant is rebuilt with it (mass, inertia, collisions; its prismatic
        joints as fingers the gripper commands drive, opened fully), keeping the arm's and
        the world's state."""
        fragment = getattr(tool, 'fragment', tool)
        urdf = self.model.urdf if fragment is None else _grafted(self.model.urdf_xml, fragment)
        had = bool(self._fingers)
        self._build(urdf)
        self._fit_fingers(had)
        self._hold()
        self._contacts_at = self._grip_at = -1
        if self._viewer is not None:            # the viewer shows one model: reopen it
            self._close_viewer()
            self._open_viewer()

    def _fit_fingers(self, had):
        """Fingers new to the model start fully open, as the gripper device boots."""
        if self._fingers and not had:
            self._grip = GripperCommand(self._finger_span, 1.0, self._finger_force)
            self._grip_target = self._finger_span
            self._finger_ctrl()
            for f in self._fingers:
                self.d.qpos[f.qadr] = self.d.ctrl[f.actuator]
            mujoco.mj_forward(self.m, self.d)
        elif not self._fingers:
            self._grip = None

    def set_gripper(self, command):
        """See JointBoards.set_gripper: the fingers' setpoint moves toward `separation` at
        `speed`, each finger at most at its joint's velocity limit (its drive's top speed, as
        its effort caps its force); each finger pushes with at most half of `force` (the
        device's holding force is both fingers' together)."""
        if not self._fingers:
            raise BoardsError('%s has no gripper: put one on the robot first' % self.describe())
        for field in ('separation', 'speed', 'force'):
            value = getattr(command, field)
            if not (isinstance(value, (int, float)) and value >= 0.0 and not math.isnan(value)):
                raise ValueError('gripper %s must be a number >= 0, got %r' % (field, value))
        self._grip = command
        self._grip_moving = True

    def gripper_state(self):
        """The fingers' separation (m), the model both press on ('' if none) and the force
        they press it with (N, both fingers' normal forces added)."""
        if not self._fingers:
            return None
        if self._grip_at != self._steps:
            self._grip_at = self._steps
            self._grip_state = self._read_grip()
        return self._grip_state

    def _drive_fingers(self, dt):
        cmd = self._grip
        target = min(max(cmd.separation, 0.0), self._finger_span)
        step = min(cmd.speed, self._finger_top_speed) * dt
        self._grip_target += min(max(target - self._grip_target, -step), step)
        self._finger_ctrl()
        self._grip_moving = self._grip_target != target      # until the setpoint arrives

    def _finger_ctrl(self):
        """Each finger's setpoint (half the separation, on its side) and force limit."""
        force = 0.5 * self._grip.force
        ctrl, frange = self.d.ctrl, self.m.actuator_forcerange
        for f in self._fingers:
            ctrl[f.actuator] = finger_position(f.lower, f.upper, self._grip_target)
            limit = min(force, f.effort)
            if frange[f.actuator, 1] != limit:
                frange[f.actuator] = (-limit, limit)

    def _read_grip(self):
        d = self.d
        separation = sum(f.sign * float(d.qpos[f.qadr]) for f in self._fingers)
        n = d.ncon
        pressed = {}                            # model → [normal force per finger]
        if n:
            geoms = d.contact.geom[:n]
            finger = self._geom_finger[geoms]
            owner = self._geom_model[geoms]
            f6 = np.zeros(6)
            for i in np.flatnonzero(((finger[:, 0] >= 0) & (owner[:, 1] >= 0))
                                    | ((finger[:, 1] >= 0) & (owner[:, 0] >= 0))):
                k, j = (0, 1) if finger[i, 0] >= 0 else (1, 0)
                mujoco.mj_contactForce(self.m, d, int(i), f6)
                forces = pressed.setdefault(int(owner[i, j]), [0.0] * len(self._fingers))
                forces[int(finger[i, k])] += f6[0]
        held, squeeze = '', 0.0
        for owner, forces in pressed.items():
            if min(forces) > GRIP_CONTACT_FORCE and sum(forces) > squeeze:
                held, squeeze = self._model_names[owner], sum(forces)
        return GripperState(separation, held, squeeze)

    # --- internals -----------------------------------------------------------------------
    def _solref(self):
        return [self._contact_tc, 1.0]

    def _reindex(self):
        """After a (re)compile: the geoms' owners (arm link, obstacle, finger, spawned
        model), the fingers' actuators, the spawned bodies' state addresses, the wrenches'
        body ids."""
        m = self.m
        d = self.d
        self._n = len(self.joint_names)
        self._scratch = np.zeros(m.nv)
        self._bad_qacc = d.warning[mujoco.mjtWarning.mjWARN_BADQACC]    # (a live view)
        # The compiled step (intera_rt.native), bound to this MjModel and MjData
        self._native, self.native_note = native.mujoco_step(m, d, self._qadr, self._dof,
                                                            self.substeps)
        # Views the step reads and writes (MjData's arrays stay where they are for its life;
        # each attribute access builds a new view)
        self._ctrl, self._qpos, self._qvel = d.ctrl[:self._n], d.qpos, d.qvel
        span = int(self._dof.max()) + 1
        self._actuator_force, self._passive_force = d.qfrc_actuator[:span], d.qfrc_passive[:span]
        self._drive_sum = np.empty(span)
        # The friction-loss rows (one per dof with friction loss, in dof order) when they
        # are exactly the boards' joints' in the boards' order: _transmitted's shortcut.
        friction = np.flatnonzero(m.dof_frictionloss > 0)
        self._friction_rows = len(self._dof) if np.array_equal(friction, self._dof) \
            and not (m.tendon_frictionloss > 0).any() else -1
        self._geom_link, self._geom_obstacle = {}, {}
        self._geom_finger = np.full(m.ngeom, -1)
        self._geom_model = np.full(m.ngeom, -1)
        self._model_names = list(self._models)
        model_index = {name: k for k, name in enumerate(self._model_names)}
        self._fingers = []
        for aid in range(m.nu):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, aid) or ''
            if name.startswith(FINGER_PREFIX):
                jid = m.actuator_trnid[aid, 0]
                lo, hi = m.jnt_range[jid]
                joint = name[len(FINGER_PREFIX):]
                self._fingers.append(_Finger(
                    joint, aid, m.jnt_qposadr[jid], m.jnt_bodyid[jid],
                    finger_side(lo, hi), lo, hi, m.actuator_forcerange[aid, 1],
                    self._finger_speed.get(joint, math.inf)))
        finger_of = {f.body: k for k, f in enumerate(self._fingers)}
        self._finger_span = sum(f.upper - f.lower for f in self._fingers)
        self._finger_top_speed = sum(f.speed for f in self._fingers)
        self._finger_force = 2.0 * min((f.effort for f in self._fingers), default=0.0)
        for gid in range(m.ngeom):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, gid) or ''
            if name.startswith('collision/') and m.geom_contype[gid]:
                self._geom_link[gid] = name.split('/')[1]
                self._geom_finger[gid] = finger_of.get(m.geom_bodyid[gid], -1)
            elif name.startswith('obstacle/'):
                self._geom_obstacle[gid] = name[len('obstacle/'):]
            elif name in ('floor', 'table'):
                self._geom_obstacle[gid] = name
            elif name.startswith(mujoco_world.PREFIX):
                owner = name[len(mujoco_world.PREFIX):].split('/')[0]
                self._geom_model[gid] = model_index[owner]
                if m.geom_conaffinity[gid] and not m.geom_contype[gid]:
                    self._geom_obstacle[gid] = owner          # static: an obstacle for the arm
        self._link_geom = np.zeros(m.ngeom, bool)
        self._link_geom[list(self._geom_link)] = True
        self._obstacle_geom = np.zeros(m.ngeom, bool)
        self._obstacle_geom[list(self._geom_obstacle)] = True
        self._bodies = []
        for name, (model, _) in self._models.items():
            for body in model.bodies():
                bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY,
                                        mujoco_world.body_name(name, body.name))
                jnt = m.body_jntadr[bid]
                qa = m.jnt_qposadr[jnt] if jnt >= 0 else -1
                da = m.jnt_dofadr[jnt] if jnt >= 0 else -1
                self._bodies.append((name, body.name, bid, qa, da))
        # the free bodies: their index in _bodies, their qpos (7) and qvel (6) addresses
        free = [b for b in self._bodies if b[3] >= 0]
        self._free_index = np.array([k for k, b in enumerate(self._bodies) if b[3] >= 0], int)
        self._free_q = np.array([b[3] + k for b in free for k in range(7)], int)
        self._free_v = np.array([b[4] + k for b in free for k in range(6)], int)
        self._states = None                     # body_states() read anew
        self._grip_moving = bool(self._fingers)           # a recompile resets the force limits
        self._wrenches = mujoco_world.rebind(m, self._wrenches)

    def _recompile(self):
        """Rebuild the model after the cell changed, keeping every joint's state and the
        commands."""
        ctrl = self.d.ctrl.copy()
        self.m, self.d = self._spec.recompile(self.m, self.d)
        self.d.ctrl[:len(ctrl)] = ctrl[:self.m.nu]
        self._reindex()
        mujoco.mj_forward(self.m, self.d)
        if self.brakes:
            self._hold()
        self._contacts_at = self._grip_at = -1
        if self._viewer is not None:            # the viewer shows one model: reopen it
            self._close_viewer()
            self._open_viewer()

    def _read_contacts(self):
        m, d = self.m, self.d
        out = []
        n = d.ncon
        if not n:
            return out
        f6 = np.zeros(6)
        # (the arm's contacts with the cell picked out at once: reading every contact of a
        # world of blocks one by one in Python costs more than the rest of the tick)
        geoms = d.contact.geom[:n]
        is_link, is_obstacle = self._link_geom[geoms], self._obstacle_geom[geoms]
        arm = (is_link[:, 0] & is_obstacle[:, 1]) | (is_link[:, 1] & is_obstacle[:, 0])
        for i in np.flatnonzero(arm).tolist():
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


def _cross(a, b):
    """Row-wise cross products of two (n, 3) arrays (numpy.cross is slow on small arrays)."""
    return a[:, _YZX] * b[:, _ZXY] - a[:, _ZXY] * b[:, _YZX]


class _Finger(NamedTuple):
    joint: str
    actuator: int
    qadr: int
    body: int
    sign: float               # +1: opening moves it toward its upper limit
    lower: float
    upper: float
    effort: float             # N: the most it pushes with
    speed: float              # m/s: the fastest it moves (its joint's velocity limit)


def _carry_state(m_old, d_old, m_new, d_new):
    """Copy every joint's position and velocity, the actuators' commands and the time from
    one model's data to another's, by name (a rebuilt model: a tool on or off)."""
    for jid in range(m_new.njnt):
        name = mujoco.mj_id2name(m_new, mujoco.mjtObj.mjOBJ_JOINT, jid)
        old = mujoco.mj_name2id(m_old, mujoco.mjtObj.mjOBJ_JOINT, name) if name else -1
        if old < 0 or m_old.jnt_type[old] != m_new.jnt_type[jid]:
            continue
        nq = {0: 7, 1: 4}.get(int(m_new.jnt_type[jid]), 1)
        nv = {0: 6, 1: 3}.get(int(m_new.jnt_type[jid]), 1)
        qa, qb = m_new.jnt_qposadr[jid], m_old.jnt_qposadr[old]
        va, vb = m_new.jnt_dofadr[jid], m_old.jnt_dofadr[old]
        d_new.qpos[qa:qa + nq] = d_old.qpos[qb:qb + nq]
        d_new.qvel[va:va + nv] = d_old.qvel[vb:vb + nv]
    for aid in range(m_new.nu):
        name = mujoco.mj_id2name(m_new, mujoco.mjtObj.mjOBJ_ACTUATOR, aid)
        old = mujoco.mj_name2id(m_old, mujoco.mjtObj.mjOBJ_ACTUATOR, name) if name else -1
        if old >= 0:
            d_new.ctrl[aid] = d_old.ctrl[old]
    d_new.time = d_old.time
    mujoco.mj_forward(m_new, d_new)


def gripper_fragment():
    """The electric gripper's URDF fragment (urdf/fragments/electric_gripper.urdf)."""
    path = os.path.join(os.path.dirname(default_urdf_path()), 'fragments', 'electric_gripper.urdf')
    with open(path) as f:
        return f.read()


def _grafted(description, fragment):
    """The robot's URDF (urdf_parser_py) with the tool `fragment`'s elements (a <robot>
    already checked as /robot/urdf fragments are) inside it; BoardsError naming what the
    parser refuses."""
    try:
        root = parse_xml(fragment, what='tool')
        inner = ''.join(ET.tostring(e, encoding='unicode') for e in root
                        if e.tag in ('link', 'joint', 'material'))
        end = description.rindex('</robot>')
        return URDF.from_xml_string((description[:end] + inner + description[end:]).encode())
    except (FragmentError, ValueError) as exc:
        raise BoardsError('tool: %s' % exc) from None
