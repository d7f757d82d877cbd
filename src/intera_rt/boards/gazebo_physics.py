"""The arm as Gazebo 11 (ODE) simulates our URDF, in MuJoCo: the physics of the Gazebo
stand-in (ros.gazebo_standin). No ROS here.

What Gazebo makes of the URDF, and how it is reproduced:
- no drive armature (a URDF has none; Gazebo adds none): MuJoCo armature 0;
- `<dynamics damping>` as ODE applies it, an explicit force −d·q̇ each step (ODEJoint's
  explicit stiffness-damping; it is not in the effort reported): MuJoCo's Euler integrator
  with its implicit damping switched off;
- `<dynamics friction>` as ODE's joint friction, a hard constraint of at most that torque
  holding the joint's velocity at zero: MuJoCo friction loss made as stiff as it steps;
- hard stops exactly at the URDF limits (ODE's joint stops): MuJoCo's range;
- the effort limit as gazebo_ros_control saturates the command: the motor's ctrlrange;
- the ground plane at world z = 0 with the model spawned at (x, y, z) (spawn_model -x -y
  -z): the model's base is MuJoCo's world, the floor at −z under it (yaw and a rotated base
  are not modelled: the base's axes are the world's);
- the spawn pose: every joint at 0 unless given (spawn_model -J), at rest;
- links hung on fixed joints lumped into their parent, which is where external wrenches
  act (at the lumped body's centre of mass, force and torque in the world frame);
- a tool's prismatic joints (the gripper's fingers) as Gazebo simulates them: slides with
  the URDF's limits as stops, no armature, no <mimic> coupling (Gazebo 11 ignores it), each
  pushed by the effort its finger controller gives (`step`'s finger_effort), saturated as
  gazebo_ros_control saturates it (effort limit; no push beyond a position or velocity
  limit); other tool joints welded;
- spawned world models (world.Model) as MuJoCo bodies (boards.mujoco_world: free unless
  static), the model recompiled with every state carried across, as gazebo_ros spawns.
The MJCF is boards.mjcf's, changed through MuJoCo's model editing (MjSpec). Poses and twists
of the world methods are in the robot's base frame (boards.base's world interface).
"""
import dataclasses

import mujoco
import numpy as np

from intera_rt.boards import mujoco_world
from intera_rt.boards.base import BodyState
from intera_rt.boards.mjcf import CONTACT_TIMECONST, FINGER_PREFIX, mjcf_from_urdf
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, LOOP_PERIOD
from intera_rt.world.model import Pose, WorldError

_REST = (0.0,) * 6
FRICTION_TIMECONST = 2.0            # physics steps: the joints' friction's solref time
                                    # constant (MuJoCo's smallest stable one)
FRICTION_SOLIMP = [0.9999, 0.9999, 0.001, 0.5, 2.0]


class GazeboPhysics:
    """The world: step(), joint positions and velocities, the effort last applied.

    Args:
        model: the RobotModel (its URDF and limits).
        spawn: (x, y, z) m, where the model's base is spawned in the world.
        joints: {joint: rad}, the spawn pose (spawn_model -J); others at 0.
        dt: s, the physics step (Gazebo's max_step_size).
    """

    def __init__(self, model, spawn=(0.0, 0.0, 0.0), joints=None, dt=LOOP_PERIOD):
        self.joint_names = BOARD_JOINTS
        self.dt = float(dt)
        self.spawn = tuple(float(v) for v in spawn)
        self.urdf_xml = model.urdf_xml
        limits = {n: dataclasses.replace(l, armature=0.0) for n, l in model.limits.items()}
        tool = [j for j in model.urdf.joints if j.type != 'fixed' and j.name not in BOARD_JOINTS]
        fingers = [j for j in tool if j.type == 'prismatic']
        self.finger_names = tuple(j.name for j in fingers)
        spec = mujoco.MjSpec.from_string(mjcf_from_urdf(
            model.urdf, limits, BOARD_JOINTS, welded={j.name for j in tool if j.type != 'prismatic'}))
        for equality in list(spec.equalities):          # the fingers' <mimic> (Gazebo: none)
            spec.delete(equality)
        for j in fingers:                                # effort-driven, no armature
            spec.joint(j.name).armature = 0.0
            act = spec.actuator(FINGER_PREFIX + j.name)
            act.set_to_motor()
            act.ctrlrange = [-j.limit.effort, j.limit.effort]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_FALSE
        self.finger_limits = np.array([(j.limit.lower, j.limit.upper, j.limit.effort,
                                         j.limit.velocity) for j in fingers]).reshape(-1, 4)
        spec.option.timestep = self.dt
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
        for name in BOARD_JOINTS:
            lim = model.limits[name]
            joint = spec.joint(name)
            joint.range = [lim.lower, lim.upper]
            # ODE's joint friction is a hard constraint (a motor held at zero velocity, at most
            # the friction's torque): a push below it leaves the joint still. MuJoCo's default
            # friction loss is soft (a light wrist creeps at 0.09 rad/s under 80 % of it):
            # as stiff as MuJoCo's steps allow.
            joint.solref_friction = [FRICTION_TIMECONST * self.dt, 1.0]
            joint.solimp_friction = FRICTION_SOLIMP
        spec.geom('floor').pos = [0.0, 0.0, -self.spawn[2]]
        self._spec = spec
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        self._models = {}               # name → world.Model spawned, in the order spawned
        self._index()
        lim = model.limit_arrays(BOARD_JOINTS)
        self.lower, self.upper, self.effort_limit = lim['lower'], lim['upper'], lim['effort']
        self.applied = np.zeros(len(BOARD_JOINTS))
        self.finger_applied = np.zeros(len(self.finger_names))
        self.time = 0.0
        self.steps = 0                  # steps made: Gazebo's time is whole nanoseconds
        self._wrenches = []             # mujoco_world.BodyWrench, in the order applied
        q = np.zeros(len(BOARD_JOINTS))
        for name, value in (joints or {}).items():
            q[BOARD_JOINTS.index(name)] = value
        self.set_positions(q)

    def _index(self):
        """The joints' and the wrenched bodies' addresses in the (re)compiled model."""
        m = self.m
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in BOARD_JOINTS]
        self._qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self._dof = np.array([m.jnt_dofadr[j] for j in jids])
        fids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.finger_names]
        self._finger_qadr = np.array([m.jnt_qposadr[j] for j in fids], int)
        self._finger_dof = np.array([m.jnt_dofadr[j] for j in fids], int)
        self._finger_act = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR,
                                                       FINGER_PREFIX + n)
                                     for n in self.finger_names], int)
        self._wrenches = mujoco_world.rebind(m, getattr(self, '_wrenches', []), self._lumped)

    @property
    def position(self):
        return self.d.qpos[self._qadr].copy()

    @property
    def velocity(self):
        return self.d.qvel[self._dof].copy()

    @property
    def finger_position(self):
        return self.d.qpos[self._finger_qadr].copy()

    @property
    def finger_velocity(self):
        return self.d.qvel[self._finger_dof].copy()

    def step(self, effort, finger_effort=None):
        """One physics step with `effort` (N·m, BOARD_JOINTS order) saturated at the effort
        limits, as gazebo_ros_control applies it, and `finger_effort` (N, finger_names
        order; None: 0); the efforts applied are `applied` and `finger_applied`."""
        d = self.d
        self.applied = _clip(np.asarray(effort, float), -self.effort_limit, self.effort_limit)
        d.ctrl[:len(self.applied)] = self.applied
        if len(self.finger_names):
            self.finger_applied = self._saturate_fingers(finger_effort)
            d.ctrl[self._finger_act] = self.finger_applied
        if self._wrenches:
            self._apply_wrenches()
        mujoco.mj_step(self.m, d)
        self.steps += 1
        self.time = self.steps * self.dt
        if self._wrenches:
            self._wrenches = mujoco_world.expire(self._wrenches, self.dt)
            if not self._wrenches:
                d.qfrc_applied[:] = 0.0

    def _saturate_fingers(self, effort):
        """gazebo_ros_control's effort saturation of a joint with limits (joint_limits_interface's
        EffortJointSaturationHandle): within ± the effort limit, and no push further past a
        position limit or faster beyond the velocity limit."""
        lower, upper, limit, vmax = self.finger_limits.T
        e = np.zeros(len(lower)) if effort is None else np.asarray(effort, float)
        lo, hi = -limit.copy(), limit.copy()
        q, qd = self.finger_position, self.finger_velocity
        lo[(q < lower) | (qd < -vmax)] = 0.0
        hi[(q > upper) | (qd > vmax)] = 0.0
        return np.minimum(np.maximum(e, lo), hi)

    def set_positions(self, q):
        """set_model_configuration: the joints at q (BOARD_JOINTS order), the model at rest."""
        d = self.d
        d.qpos[self._qadr] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(self.m, d)

    def body(self, link):
        """The body id Gazebo has for `link` (a link on a movable joint, or the root);
        KeyError for a link Gazebo lumps into its parent, or none."""
        bid = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, link)
        if bid < 0 or (bid > 0 and self.m.body_jntnum[bid] == 0):
            raise KeyError('no body %r in the Gazebo model (links on fixed joints are lumped '
                           'into their parent)' % link)
        return bid

    def apply_wrench(self, link, force, torque, duration):
        """Force (at the lumped body's centre of mass) and torque, world frame, for
        `duration` s (< 0: until cleared)."""
        bid = self.body(link)
        self._wrenches.append(mujoco_world.BodyWrench(
            bid, mujoco.mj_id2name(self.m, mujoco.mjtObj.mjOBJ_BODY, bid), np.asarray(force, float),
            np.asarray(torque, float), float(duration) if duration > 0.0 else np.inf,
            lumped=np.array(self._lumped(bid), int)))

    def clear_wrenches(self, link=None):
        """Every wrench apply_wrench pushes (link None), or those on `link`'s body."""
        if link is None:
            self._wrenches = []
        else:
            name = mujoco.mj_id2name(self.m, mujoco.mjtObj.mjOBJ_BODY, self.body(link))
            self._wrenches = mujoco_world.drop_link_wrenches(self._wrenches, name)
        self.d.qfrc_applied[:] = 0.0

    # --- the world (boards.base's world methods; poses and twists in base) -------------------
    def spawn_model(self, model, pose):
        """`model` (a validated world.Model) with its frame at `pose`, at rest; WorldError
        naming what MuJoCo cannot simulate (nothing changes)."""
        if model.name in self._models:
            raise WorldError('model_name: a model named %r already exists' % model.name)
        mujoco_world.check(model)
        mujoco_world.add_model(self._spec, model, pose, [CONTACT_TIMECONST, 1.0])
        self._models[model.name] = model
        try:
            self._recompile()
        except Exception as exc:        # noqa: BLE001 - MuJoCo's compiler says why in a ValueError
            mujoco_world.remove_model(self._spec, model)
            del self._models[model.name]
            raise WorldError("model '%s': MuJoCo cannot simulate it: %s" % (model.name, exc)) from exc

    def delete_model(self, name):
        model = self._model(name)
        mujoco_world.remove_model(self._spec, model)
        del self._models[name]
        self._wrenches = mujoco_world.drop_wrenches(self._wrenches, name)
        self.d.qfrc_applied[:] = 0.0
        self._recompile()

    def set_model_state(self, name, pose, twist):
        """Every body of `name` placed with the model's frame at `pose`, each moving as a
        point of the model would (linear v + w × r, angular w)."""
        mujoco_world.set_state(self._spec, self.m, self.d, self._model(name), pose, twist)

    def body_states(self):
        """A boards.base.BodyState (in base) for every body of every spawned model."""
        m, d = self.m, self.d
        out = []
        for name, model in self._models.items():
            for body in model.bodies():
                bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY,
                                        mujoco_world.body_name(name, body.name))
                qw, qx, qy, qz = d.xquat[bid].tolist()
                pose = Pose(tuple(d.xpos[bid].tolist()), (qx, qy, qz, qw))
                jnt = m.body_jntadr[bid]
                if jnt < 0:
                    out.append(BodyState(name, body.name, pose, _REST))
                    continue
                da = m.jnt_dofadr[jnt]
                linear = d.qvel[da:da + 3]
                angular = d.xmat[bid].reshape(3, 3) @ d.qvel[da + 3:da + 6]
                out.append(BodyState(name, body.name, pose,
                                     tuple(linear.tolist()) + tuple(angular.tolist())))
        return tuple(out)

    def apply_body_wrench(self, model, body, force, torque, point, duration):
        """`force` and `torque` (base axes) at `point` (the body's frame) on `body` of
        `model` for `duration` s (< 0: until cleared)."""
        self._wrenches.append(mujoco_world.body_wrench(
            self.m, self._model(model), model, body, force, torque, point, duration))

    def clear_body_wrenches(self, model, body):
        self._model(model)
        self._wrenches = mujoco_world.drop_wrenches(self._wrenches, model, body)
        self.d.qfrc_applied[:] = 0.0

    def _model(self, name):
        return mujoco_world.model_named(self._models, name)

    def _recompile(self):
        """The model rebuilt after the world changed, every joint's state and the efforts
        carried across (MjSpec.recompile)."""
        ctrl = self.d.ctrl.copy()
        self.m, self.d = self._spec.recompile(self.m, self.d)
        self.d.ctrl[:] = ctrl[:self.m.nu]
        self._index()
        mujoco.mj_forward(self.m, self.d)

    def _lumped(self, bid):
        """The bodies lumped into body `bid` (Gazebo's link: it and its fixed children)."""
        return [b for b in range(1, self.m.nbody) if self._lumped_into(b) == bid]

    def _lumped_into(self, b):
        m = self.m
        while b > 0 and m.body_jntnum[b] == 0:
            b = m.body_parentid[b]
        return b

    def _apply_wrenches(self):
        m, d = self.m, self.d
        d.qfrc_applied[:] = 0.0
        for w in self._wrenches:
            if w.point is None:
                mass = m.body_mass[w.lumped]
                at = (mass[:, None] * d.xipos[w.lumped]).sum(axis=0) / mass.sum()
            else:
                at = d.xpos[w.body] + d.xmat[w.body].reshape(3, 3) @ w.point
            mujoco.mj_applyFT(m, d, w.force, w.torque, at, w.body, d.qfrc_applied)
