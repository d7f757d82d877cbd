"""The arm as Gazebo 11 (ODE) simulates our URDF, in MuJoCo: the physics of the Gazebo
stand-in (boards.gazebo_standin). No ROS here.

What Gazebo makes of the URDF, and how it is reproduced:
- no drive armature (a URDF has none; Gazebo adds none): MuJoCo armature 0;
- `<dynamics damping>` as ODE applies it, an explicit force −d·q̇ each step (ODEJoint's
  explicit stiffness-damping; it is not in the effort reported): MuJoCo's Euler integrator
  with its implicit damping switched off;
- `<dynamics friction>` as ODE's joint friction, a constraint of at most that torque
  holding the joint's velocity at zero: MuJoCo friction loss;
- hard stops exactly at the URDF limits (ODE's joint stops): MuJoCo's range;
- the effort limit as gazebo_ros_control saturates the command: the motor's ctrlrange;
- the ground plane at world z = 0 with the model spawned at (x, y, z) (spawn_model -x -y
  -z): the model's base is MuJoCo's world, the floor at −z under it (yaw and a rotated base
  are not modelled: the base's axes are the world's);
- the spawn pose: every joint at 0 unless given (spawn_model -J), at rest;
- links hung on fixed joints lumped into their parent, which is where external wrenches
  act (at the lumped body's centre of mass, force and torque in the world frame).
The MJCF is boards.mjcf's, changed through MuJoCo's model editing (MjSpec).
"""
import dataclasses

import mujoco
import numpy as np

from intera_rt.boards.mjcf import mjcf_from_urdf
from intera_rt.numeric import clip as _clip
from intera_rt.robot import BOARD_JOINTS, LOOP_PERIOD


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
        limits = {n: dataclasses.replace(l, armature=0.0) for n, l in model.limits.items()}
        spec = mujoco.MjSpec.from_string(mjcf_from_urdf(model.urdf, limits, BOARD_JOINTS))
        spec.option.timestep = self.dt
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
        for name in BOARD_JOINTS:
            lim = model.limits[name]
            spec.joint(name).range = [lim.lower, lim.upper]
        spec.geom('floor').pos = [0.0, 0.0, -self.spawn[2]]
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        m = self.m
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in BOARD_JOINTS]
        self._qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self._dof = np.array([m.jnt_dofadr[j] for j in jids])
        lim = model.limit_arrays(BOARD_JOINTS)
        self.lower, self.upper, self.effort_limit = lim['lower'], lim['upper'], lim['effort']
        self.applied = np.zeros(len(BOARD_JOINTS))
        self.time = 0.0
        self._wrenches = []             # [body, its lumped bodies, force, torque, s left]
        q = np.zeros(len(BOARD_JOINTS))
        for name, value in (joints or {}).items():
            q[BOARD_JOINTS.index(name)] = value
        self.set_positions(q)

    @property
    def position(self):
        return self.d.qpos[self._qadr].copy()

    @property
    def velocity(self):
        return self.d.qvel[self._dof].copy()

    def step(self, effort):
        """One physics step with `effort` (N·m, BOARD_JOINTS order) saturated at the effort
        limits, as gazebo_ros_control applies it; the effort applied is `applied`."""
        d = self.d
        self.applied = _clip(np.asarray(effort, float), -self.effort_limit, self.effort_limit)
        d.ctrl[:] = self.applied
        if self._wrenches:
            self._apply_wrenches()
        mujoco.mj_step(self.m, d)
        self.time += self.dt
        if self._wrenches:
            for w in self._wrenches:
                w[4] -= self.dt
            self._wrenches = [w for w in self._wrenches if w[4] > 0.0]
            if not self._wrenches:
                d.qfrc_applied[:] = 0.0

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
            raise KeyError(link)
        return bid

    def apply_wrench(self, link, force, torque, duration):
        """Force (at the lumped body's centre of mass) and torque, world frame, for
        `duration` s (< 0: until cleared)."""
        bid = self.body(link)
        m = self.m
        lumped = [b for b in range(1, m.nbody) if self._lumped_into(b) == bid]
        self._wrenches.append([bid, lumped, np.asarray(force, float), np.asarray(torque, float),
                               float(duration) if duration > 0.0 else np.inf])

    def clear_wrenches(self):
        self._wrenches = []
        self.d.qfrc_applied[:] = 0.0

    def _lumped_into(self, b):
        m = self.m
        while b > 0 and m.body_jntnum[b] == 0:
            b = m.body_parentid[b]
        return b

    def _apply_wrenches(self):
        m, d = self.m, self.d
        d.qfrc_applied[:] = 0.0
        for bid, lumped, force, torque, _ in self._wrenches:
            mass = m.body_mass[lumped]
            com = (mass[:, None] * d.xipos[lumped]).sum(axis=0) / mass.sum()
            mujoco.mj_applyFT(m, d, force, torque, com, bid, d.qfrc_applied)
