"""Embedded physics: rigid-body dynamics of right_j0..6 and head_pan from the URDF inertias
(Pinocchio CRBA + RNEA on the robot's shared model, in the plant's own data), reflected
motor inertia, viscous and Coulomb friction, effort limits and hard stops just beyond the
joint limits, integrated semi-implicitly at `substeps` × the loop rate.

Obstacles (boxes, spheres; add_obstacle) are fixed in base and push the moving links
(boards.embedded_contact); the world's spawned models are boards.embedded_world's. Design
notes: docs/backends.md.
"""
import math

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import dsymv
from scipy.linalg.lapack import dposv

from intera_rt import native
from intera_rt.boards.base import CAPABILITIES, BackendOption, SimulatedPlant, check_obstacle
from intera_rt.boards.embedded_contact import CONTACT_DAMPING, CONTACT_STIFFNESS, ObstacleContacts
from intera_rt.boards.embedded_world import EmbeddedWorld
from intera_rt.model.joint_frames import JointFrames, pose_matrix
from intera_rt.native import kernels
from intera_rt.numeric import clip as _clip
from intera_rt.robot import ARM_JOINTS, HARD_STOP_MARGIN, HEAD_JOINTS

GRIPPER_TIP = 'right_gripper_tip'   # the frame the fingers close about (a grafted gripper)


class EmbeddedBoards(ObstacleContacts, SimulatedPlant):
    name = 'embedded'
    capabilities = frozenset(CAPABILITIES)
    OPTIONS = {
        'substeps': BackendOption(int, 1, 'physics steps per 1 ms tick'),
        'contact_stiffness': BackendOption(float, CONTACT_STIFFNESS, 'obstacle contact stiffness k (N/m)'),
        'contact_damping': BackendOption(float, CONTACT_DAMPING, 'obstacle contact damping c (N·s/m)'),
    }

    def __init__(self, model, joint_names=ARM_JOINTS + HEAD_JOINTS, substeps=1,
                 contact_stiffness=CONTACT_STIFFNESS, contact_damping=CONTACT_DAMPING):
        """Args:
            model: intera_rt.model.RobotModel (its URDF: inertias, limits, collision shapes).
            joint_names: the joints the boards drive, in their order.
            substeps: physics steps per advance().
            contact_stiffness: k of the obstacle contacts (N/m), > 0.
            contact_damping: c of the obstacle contacts (N·s/m), ≥ 0.
        """
        k, c = float(contact_stiffness), float(contact_damping)
        if not (math.isfinite(k) and k > 0.0):
            raise ValueError('contact_stiffness must be finite and > 0 N/m, got %r'
                             % (contact_stiffness,))
        if not (math.isfinite(c) and c >= 0.0):
            raise ValueError('contact_damping must be finite and >= 0 N·s/m, got %r'
                             % (contact_damping,))
        self.contact_stiffness, self.contact_damping = k, c
        lim = self._init_plant(model, joint_names)
        self.substeps = int(substeps)
        if self.substeps < 1:
            raise ValueError('substeps must be >= 1, got %r' % (substeps,))
        self._urdf_xml = model.urdf_xml
        models = self._models = model.pinocchio
        self.pin = models.full                  # the robot's (shared, read-only) ...
        self.data = self.pin.createData()       # ... and the plant's own data
        self._rigid = native.rigid(self.pin, self.data)   # (its free step from C++; None: Python)
        self._idx = models.idx_v(self.joint_names)      # (idx_q: the same, revolute joints)
        # The hard stops sit a little beyond the limits the software keeps to (as on an arm:
        # a controller holding a joint at its limit must not press on the stop).
        self.stop_lower, self.stop_upper = self.lower - HARD_STOP_MARGIN, self.upper + HARD_STOP_MARGIN
        self.damping, self.coulomb = lim['damping'], lim['friction']
        # Pinocchio 2.x leaves model.armature out of ABA/CRBA: add it to M ourselves.
        self._armature_matrix = np.zeros((self.pin.nv, self.pin.nv))
        self._armature_matrix[self._idx, self._idx] = lim['armature']
        self._wrenches = []          # [frame_id, 6-vector in base (force; torque), remaining s]
        self._full_q = pin.neutral(self.pin)
        self._full_v = np.zeros(self.pin.nv)
        self._full_tau = np.zeros(self.pin.nv)
        self._full_removed = np.zeros(self.pin.nv)
        # Contact torques act on our joints only (columns of the others zeroed).
        self._others = np.setdiff1d(np.arange(self.pin.nv), self._idx)
        # Obstacles: name → (Obstacle record, hpp-fcl shape, placement in the world, bounding
        # radius). What each step checks is rebuilt from them (_rebuild_pairs).
        self._obstacles = {}
        self._link_shapes = None       # built with the first obstacle
        self._arm_shapes = None        # the robot's own, of _link_shapes (built once)
        self._tool_shapes = ()         # model.tool.welded_shapes of the tool carried
        self._geom = self._gdata = None  # None: nothing within reach, nothing to check
        self._pairs = ()               # per pair: (its result, (link, obstacle, joint, witness))
        self._contacts = []
        # Obstacles and contacts are in base, which need not be the URDF's root.
        self._world_base = models.world_base
        # The world (spawned models; embedded_world): static models' collisions are
        # obstacles too, named "model::link::collision".
        self._world_shapes = {}
        has_gripper = self.pin.existFrame(GRIPPER_TIP)
        self._tip = self.pin.getFrameId(GRIPPER_TIP) if has_gripper else None
        self._tip_offset = np.eye(4)   # the tip in frame _tip (a gripper carried as a tool)
        self._world = EmbeddedWorld(has_gripper)

    # --- joint-boards interface -------------------------------------------------------
    def set_brakes(self, engaged):
        self.brakes = bool(engaged)
        if self.brakes:
            self.qd = np.zeros(len(self.qd))

    def advance(self, dt):
        h = dt / self.substeps
        for _ in range(self.substeps):
            self._step(h)
        self.time += dt
        world = self._world
        if world.models or world.has_gripper:
            world.step(dt, self._tip_pose())
        if self._wrenches:
            for w in self._wrenches:
                w[2] -= dt
            self._wrenches = [w for w in self._wrenches if w[2] > 0.0]

    # --- sim control ------------------------------------------------------------------
    def apply_wrench(self, link, wrench, duration):
        """Push `wrench` (force xyz, torque xyz; in base, about the link origin) on `link`."""
        # Fixed joints often share their child link's name: ask for the body frame.
        if not self.pin.existFrame(link, pin.FrameType.BODY):
            raise KeyError('no link named %r' % link)
        frame_id = self.pin.getFrameId(link, pin.FrameType.BODY)
        self._wrenches.append([frame_id, np.asarray(wrench, float), float(duration)])

    def clear_wrenches(self, link):
        if not self.pin.existFrame(link, pin.FrameType.BODY):
            raise KeyError('no link named %r' % link)
        frame_id = self.pin.getFrameId(link, pin.FrameType.BODY)
        self._wrenches = [w for w in self._wrenches if w[0] != frame_id]

    def set_tool(self, tool):
        """See JointBoards.set_tool: the tool's mass and inertia on the bodies it hangs from
        (model.tool: its fingers welded at rest), and its collision shapes among the links
        that touch obstacles."""
        self.pin = self._models.full if tool is None else tool.apply(self._models.full)
        self.data = self.pin.createData()
        self._rigid = native.rigid(self.pin, self.data)
        self.carry_gripper(tool.fragment if tool is not None else None)
        self._tool_shapes = () if tool is None else tool.shapes
        if self._link_shapes is not None:
            self._link_shapes = self._build_link_shapes()
            self._rebuild_pairs()

    def reset_pose(self, positions):
        """At rest at `positions` (clipped to the limits); drops the external wrenches and the
        contacts of the last step (until the next step), keeps the obstacles."""
        self.q = _clip(np.asarray(positions, float), self.lower, self.upper)
        self.qd = np.zeros(len(self.qd))
        self._wrenches = []
        self._contacts = []

    def add_obstacle(self, name, shape, position, quaternion, size):
        """See JointBoards.add_obstacle. Replaces an obstacle of the same name; the contacts
        of the last step are dropped (until the next step)."""
        self._place_obstacle(check_obstacle(name, shape, position, quaternion, size))

    def remove_obstacle(self, name):
        if name not in self._obstacles:
            raise KeyError('no obstacle named %r' % (name,))
        del self._obstacles[name]
        self._rebuild_pairs()

    def obstacles(self):
        return [entry[0] for entry in self._obstacles.values()]

    def contacts(self):
        """The contacts of the latest physics step (the last substep of the last advance):
        list of Contact (obstacle, link, depth m, force N in base, point m in base)."""
        return list(self._contacts)

    # --- the world (embedded_world) ---------------------------------------------------------
    def spawn_model(self, model, pose):
        shapes = self._static_shapes(model, pose) if model.anchored else {}
        self._world.spawn(model, pose)
        if shapes:
            if self._link_shapes is None:
                self._link_shapes = self._build_link_shapes()
            self._world_shapes.update(shapes)
            self._rebuild_pairs()

    def delete_model(self, name):
        self._world.delete(name)
        prefix = name + '::'
        if any(k.startswith(prefix) for k in self._world_shapes):
            self._world_shapes = {k: v for k, v in self._world_shapes.items() if not k.startswith(prefix)}
            self._rebuild_pairs()

    def set_model_state(self, name, pose, twist):
        placed = self._world.models.get(name)
        if placed is not None and placed.static:
            shapes = self._static_shapes(placed.model, pose)
            self._world.set_state(name, pose, twist)
            prefix = name + '::'
            self._world_shapes = {k: v for k, v in self._world_shapes.items() if not k.startswith(prefix)}
            self._world_shapes.update(shapes)
            self._rebuild_pairs()
            return
        self._world.set_state(name, pose, twist)

    def body_states(self):
        return self._world.body_states()

    def apply_body_wrench(self, model, body, force, torque, point, duration):
        self._world.apply_wrench(model, body, force, duration)

    def clear_body_wrenches(self, model, body):
        self._world.clear_wrenches(model, body)

    def set_gripper(self, command):
        self._world.command_gripper(command)

    def gripper_state(self):
        return self._world.gripper_state()

    def carry_gripper(self, fragment_xml):
        """The fingers of a gripper carried as a tool (a URDF fragment with right_gripper_tip
        on a link of the robot, e.g. urdf/fragments/electric_gripper.urdf; None or one
        without it: no gripper). set_tool calls it with the tool's fragment."""
        self._tip, self._tip_offset = None, np.eye(4)
        if fragment_xml:
            frames = JointFrames.from_xml(fragment_xml)
            parents = {child: (parent, pose_matrix(xyz, quat)) for parent, child, xyz, quat in frames.fixed}
            link, offset = GRIPPER_TIP, np.eye(4)
            while link in parents and not self.pin.existFrame(link, pin.FrameType.BODY):
                link, m = parents[link]
                offset = m @ offset
            if link != GRIPPER_TIP and self.pin.existFrame(link, pin.FrameType.BODY):
                self._tip = self.pin.getFrameId(link, pin.FrameType.BODY)
                self._tip_offset = offset
        self._world.has_gripper = self._tip is not None

    def _tip_pose(self):
        """The gripper tip's 4×4 pose in base (None without a gripper)."""
        if self._tip is None:
            return None
        self._full_q[self._idx] = self.q
        pin.framesForwardKinematics(self.pin, self.data, self._full_q)
        placement = self.data.oMf[self._tip]
        if self._world_base is not None:
            placement = self._world_base.actInv(placement)
        return placement.homogeneous @ self._tip_offset

    # --- physics ----------------------------------------------------------------------
    def _external_torques(self):
        """Joint torques produced by the external wrenches (J^T w, world-aligned frame); only
        called while there are some."""
        tau = np.zeros(len(self.joint_names))
        pin.computeJointJacobians(self.pin, self.data, self._full_q)
        pin.updateFramePlacements(self.pin, self.data)
        for frame_id, w, _ in self._wrenches:
            jac = pin.getFrameJacobian(self.pin, self.data, frame_id, pin.LOCAL_WORLD_ALIGNED)
            tau += (jac.T @ w)[self._idx]
        return tau

    def _step(self, h):
        idx = self._idx
        self._full_q[idx] = self.q
        hits = None if self._geom is None else self._touching()
        if self.brakes:
            # The brake holds the motor side; the SEA still carries the static load, what
            # pushes on the arm included.
            tau = pin.computeGeneralizedGravity(self.pin, self.data, self._full_q)[idx]
            if self._wrenches:
                tau -= self._external_torques()
            if hits:
                tau -= self._contact_torques_at_rest(hits)
            self.tau_transmitted = tau
            if np.count_nonzero(self.qd):
                self.qd = np.zeros(len(self.qd))
            return
        external = self._external_torques() if self._wrenches else None
        if self._rigid is not None and not hits:
            # The same step from C++ (the Python below is its twin, and takes the contacts).
            done = self._rigid.plant_step(
                self.q, self.qd, self.tau_cmd, external, idx, self._full_q, self._full_v,
                self._full_tau, self._full_removed, self.damping, self.coulomb,
                self._armature_matrix, self.stop_lower, self.stop_upper, h)
            if type(done) is tuple:
                self.q, self.qd, self.tau_transmitted = done
                return
            if done is not None:
                self._not_positive_definite()
                return
        self._full_v[idx] = self.qd
        mass = pin.crba(self.pin, self.data, self._full_q)     # upper triangle only
        bias = pin.nonLinearEffects(self.pin, self.data, self._full_q, self._full_v)
        # The drives' damping taken at the step's end velocity (implicit: (M + h·B) q̈ =
        # τ − B·q̇ − b), stable however stiff, and what the joints transmit below is then
        # exactly what moved the links. M is symmetric positive definite: a Cholesky solve
        # that reads its upper triangle.
        args = (self.tau_cmd, self.damping, self.qd, external, idx, self._full_tau, mass,
                self._armature_matrix, bias, h)
        system = None if kernels is None else kernels.plant_system(*args)
        solve, rhs = _plant_system(*args) if system is None else system
        solved = None if kernels is None else kernels.posv(solve, rhs)
        chol, qdd_full, info = dposv(solve, rhs, lower=0) if solved is None else solved
        if info != 0:               # cannot happen for a valid model; never integrate junk
            self._not_positive_definite()
            return
        if hits:
            self._contact_forces(hits, chol, qdd_full, h)
        # Coulomb friction as a bounded impulse: it removes up to `reach` of each joint's
        # velocity this step, and sticks the joint when that is all of it.
        args = (self.qd, qdd_full, idx, self.coulomb, mass, h, self._full_removed)
        free = None if kernels is None else kernels.plant_friction(*args)
        qd_free, qd_new = _plant_friction(*args) if free is None else free
        # The friction torque that velocity change amounts to, M·removed/h: the impulse at
        # one joint moves the others through M's off-diagonal terms, so the torque each
        # joint transmits to its link (what its series elastic spring measures) is the
        # drive's less this, consistent with the links' dynamics (the joints' torques
        # explain the motion exactly, whatever sticks).
        friction = None if kernels is None else kernels.symv(1.0 / h, mass, self._full_removed)
        if friction is None:
            friction = dsymv(1.0 / h, mass, self._full_removed, lower=0)
        # Hard stops (inelastic contact at the joint limits), and what each joint transmits:
        # the drive torque less the damping and friction it loses to.
        args = (self.q, qd_new, h, self.stop_lower, self.stop_upper, self.tau_cmd,
                self.damping, qd_free, friction, idx)
        moved = None if kernels is None else kernels.plant_integrate(*args)
        q_new, self.tau_transmitted = _plant_integrate(*args) if moved is None else moved
        self.q, self.qd = q_new, qd_new

    def _not_positive_definite(self):
        self.report_fault('embedded plant: mass matrix not positive definite at q = %s'
                          % np.round(self.q, 4).tolist())
        self.set_brakes(True)


# The step's arithmetic around Pinocchio's and LAPACK's calls; the compiled kernels'
# plant_system, plant_friction and plant_integrate compute exactly these.
def _plant_system(tau_cmd, damping, qd, external, idx, full_tau, mass, armature, bias, h):
    """(M + h·B, τ − b) of the implicit step: the drives' torque less their damping (and
    plus the external wrenches' torques) into full_tau, the reflected motor inertia added
    to mass (both in place)."""
    tau = tau_cmd - damping * qd
    if external is not None:
        tau += external
    mass += armature
    full_tau[idx] = tau
    solve = mass.copy()
    solve[idx, idx] += h * damping
    return solve, full_tau - bias


def _plant_friction(qd, qdd_full, idx, coulomb, mass, h, full_removed):
    """(qd_free, qd_new): the velocity the step's acceleration gives, and that less what
    Coulomb friction removes (at most `reach` a joint), which goes into full_removed[idx]."""
    qd_free = qd + h * qdd_full[idx]
    m_eff = mass.diagonal()[idx]
    reach = (coulomb * h) / m_eff
    removed = _clip(qd_free, -reach, reach)
    full_removed[idx] = removed
    return qd_free, qd_free - removed


def _plant_integrate(q, qd_new, h, stop_lower, stop_upper, tau_cmd, damping, qd_free,
                     friction_full, idx):
    """(q_new, tau_transmitted): the positions, held at the hard stops (qd_new zeroed in
    place where a joint lands on one, moving into it), and the torque each joint transmits."""
    q_new = q + h * qd_new
    below, above = q_new < stop_lower, q_new > stop_upper
    if np.count_nonzero(below | above):
        q_new = _clip(q_new, stop_lower, stop_upper)
        qd_new[(below & (qd_new < 0)) | (above & (qd_new > 0))] = 0.0
    return q_new, tau_cmd - damping * qd_free - friction_full[idx]
