"""Embedded physics: rigid-body dynamics of right_j0..6 and head_pan from the URDF inertias
(Pinocchio CRBA + RNEA on the robot's shared model, in the plant's own data), reflected
motor inertia, viscous and Coulomb friction, effort limits and hard stops just beyond the
joint limits, integrated semi-implicitly at `substeps` × the loop rate.

Obstacles (boxes, spheres; add_obstacle) are fixed in base. Each step the moving links'
collision shapes (never the base-fixed pedestal, controller box, feet or arm base) are
checked against them with hpp-fcl: depth δ, normal n out of the obstacle, p the link's
deepest point. The obstacle pushes the link at p along n with a stiff spring-damper that
never pulls, f = max(0, k·δ + c·u) (u the closing speed), evaluated at the end of the step
(backward Euler along the normal, one scalar solve per contact): stable for any k, c at the
loop rate, never adding energy. Its torques Jnᵀ f enter the dynamics as an external force,
as apply_wrench's do, so the transmitted (measured) torque keeps its meaning: what each
drive transmits to its link. Contact is frictionless. A broadphase (each link shape's reach
about right_j0's origin against the obstacle's bounding sphere, when it is placed) makes an
obstacle out of reach, and no obstacle, cost nothing per step. Design notes:
docs/backends.md.
"""
import itertools
import math

import hppfcl
import numpy as np
import pinocchio as pin
from scipy.linalg.blas import dsymv
from scipy.linalg.lapack import dposv, dpotrs

from intera_rt.boards.base import (CAPABILITIES, BackendOption, Contact, Obstacle, SimulatedPlant,
                                   check_obstacle)
from intera_rt.boards.embedded_world import EmbeddedWorld
from intera_rt.model.joint_frames import JointFrames, pose_matrix
from intera_rt.model.tool import shape_object
from intera_rt.numeric import clip as _clip
from intera_rt.robot import ARM_JOINTS, HARD_STOP_MARGIN, HEAD_JOINTS
from intera_rt.world.frames import placed_collisions
from intera_rt.world.model import Pose

GRIPPER_TIP = 'right_gripper_tip'   # the frame the fingers close about (a grafted gripper)
PLANE_THICKNESS = 0.05        # m: a <plane> is a slab this thick under its surface
PLANE_EXTENT = 100.0          # m: ... and this wide (physics takes a plane as infinite)
CONTACT_STIFFNESS = 5e4       # N/m
CONTACT_DAMPING = 500.0       # N·s/m


class _LinkShape:
    """One moving link's collision shape and its reach (a sphere fixed in the world that it
    can never leave)."""
    __slots__ = ('obj', 'link', 'joint', 'sphere', 'reach_centre', 'reach')

    def __init__(self, obj, link, sphere, reach_centre, reach):
        self.obj, self.link, self.joint, self.sphere = obj, link, obj.parentJoint, sphere
        self.reach_centre, self.reach = reach_centre, reach


class EmbeddedBoards(SimulatedPlant):
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

    def set_tool(self, tool):
        """See JointBoards.set_tool: the tool's mass and inertia on the bodies it hangs from
        (model.tool: its fingers welded at rest), and its collision shapes among the links
        that touch obstacles."""
        self.pin = self._models.full if tool is None else tool.apply(self._models.full)
        self.data = self.pin.createData()
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
        record = check_obstacle(name, shape, position, quaternion, size)
        if self._link_shapes is None:
            self._link_shapes = self._build_link_shapes()
        if record.shape == 'box':
            geometry = hppfcl.Box(*record.size)
            radius = 0.5 * math.sqrt(sum(s * s for s in record.size))
        else:
            geometry = hppfcl.Sphere(record.size[0])
            radius = record.size[0]
        x, y, z, w = record.quaternion
        rotation = pin.Quaternion(w, x, y, z).toRotationMatrix()
        placement = pin.SE3(rotation, np.array(record.position))
        if self._world_base is not None:
            placement = self._world_base * placement
        self._obstacles[record.name] = (record, geometry, placement, radius)
        self._rebuild_pairs()

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

    def _static_shapes(self, model, pose):
        """A static model's collisions as obstacle shapes: name → (Obstacle record, hpp-fcl
        shape, placement in the URDF's world, bounding radius)."""
        shapes = {}
        for c in placed_collisions(model, pose, Pose()):
            g = c.geometry
            pose_c = c.pose
            if g.kind == 'box':
                geometry, radius, size = hppfcl.Box(*g.size), 0.5 * math.sqrt(sum(s * s for s in g.size)), g.size
            elif g.kind == 'sphere':
                geometry, radius, size = hppfcl.Sphere(g.radius), g.radius, (g.radius,)
            elif g.kind == 'cylinder':
                geometry = hppfcl.Cylinder(g.radius, g.length)
                radius, size = math.hypot(g.radius, 0.5 * g.length), (g.radius, g.length)
            elif g.kind == 'mesh':
                points = np.asarray(g.hull_vertices, dtype=float)
                vertices = hppfcl.StdVec_Vec3f()
                for point in points:
                    vertices.append(point)
                geometry = hppfcl.Convex.convexHull(vertices, False, None)
                radius, size = float(np.linalg.norm(points, axis=1).max()), ()
            else:                                   # plane: a wide slab under its surface
                n = np.asarray(g.normal, dtype=float)
                geometry = hppfcl.Box(PLANE_EXTENT, PLANE_EXTENT, PLANE_THICKNESS)
                turn = pin.Quaternion.FromTwoVectors(np.array((0.0, 0.0, 1.0)), n)
                q = turn.coeffs()                   # x, y, z, w
                pose_c = pose_c * Pose((float(-0.5 * PLANE_THICKNESS * n[0]), float(-0.5 * PLANE_THICKNESS * n[1]),
                                        float(-0.5 * PLANE_THICKNESS * n[2])),
                                       (float(q[0]), float(q[1]), float(q[2]), float(q[3])))
                radius, size = PLANE_EXTENT, ()
            x, y, z, w = pose_c.quaternion
            placement = pin.SE3(pin.Quaternion(w, x, y, z).toRotationMatrix(), np.array(pose_c.position))
            if self._world_base is not None:
                placement = self._world_base * placement
            record = Obstacle(c.name, g.kind, pose_c.position, pose_c.quaternion, tuple(size))
            shapes[c.name] = (record, geometry, placement, radius)
        return shapes

    # --- obstacles: what each step checks ------------------------------------------------
    def _build_link_shapes(self):
        """The moving links' collision shapes, each with its reach about the first joint of
        its chain: the shape's offset and bounding radius plus every joint offset along the
        chain bound where it can ever be (that joint is revolute: its origin stays put)."""
        model = self.pin
        data = model.createData()
        pin.forwardKinematics(model, data, pin.neutral(model))
        if self._arm_shapes is None:
            geom = pin.buildGeomFromUrdfString(model, self._urdf_xml, pin.COLLISION)
            self._arm_shapes = self._reaching(
                [(obj, model.frames[obj.parentFrame].name) for obj in geom.geometryObjects],
                model, data)
        tool = [(shape_object(shape, model, k), shape[0])
                for k, shape in enumerate(self._tool_shapes)]
        return self._arm_shapes + self._reaching(tool, model, data)

    @staticmethod
    def _reaching(objects, model, data):
        """_LinkShapes of the moving ones of `objects` ((GeometryObject on `model`, its
        link)), `data` at the neutral configuration."""
        shapes = []
        for obj, link in objects:
            joint = obj.parentJoint
            if joint == 0:            # fixed in base: pedestal, controller box, feet, arm base
                continue
            obj.geometry.computeLocalAABB()
            centre = obj.placement.act(np.array(obj.geometry.aabb_center))
            reach = float(np.linalg.norm(centre)) + obj.geometry.aabb_radius
            while model.parents[joint] != 0:
                reach += float(np.linalg.norm(model.jointPlacements[joint].translation))
                joint = model.parents[joint]
            if model.joints[joint].shortname().startswith('JointModelP'):   # prismatic, planar
                reach = math.inf
            shapes.append(_LinkShape(obj, link,
                                     isinstance(obj.geometry, hppfcl.Sphere),
                                     data.oMi[joint].translation.copy(), reach))
        return shapes

    def _rebuild_pairs(self):
        """The (link shape, obstacle) pairs whose spheres (reach, bounding) meet, in a
        GeometryModel of their own; none: nothing to check. Drops the last step's contacts."""
        self._contacts = []
        geom, info = pin.GeometryModel(), []
        # The link shapes first: each pair is (link shape, obstacle) in that order, which
        # fixes the direction of hpp-fcl's normal (from the first into the second).
        for shape in self._link_shapes or ():
            geom.addGeometryObject(shape.obj)
        for name, (record, geometry, placement, radius) in itertools.chain(
                self._obstacles.items(), self._world_shapes.items()):
            near = [i for i, shape in enumerate(self._link_shapes)
                    if self._reaches(shape, record, placement, radius)]
            if not near:
                continue
            oid = geom.addGeometryObject(
                pin.GeometryObject('obstacle/' + name, 0, geometry, placement))
            for i in near:
                shape = self._link_shapes[i]
                geom.addCollisionPair(pin.CollisionPair(i, oid))
                # hpp-fcl 2 puts a contact's point midway between the two surfaces' deepest
                # points, except for a sphere against a box (on the box's surface): how far
                # (in depths) the link's deepest point lies beyond it.
                witness = 1.0 if shape.sphere and record.shape == 'box' else 0.5
                info.append((shape.link, name, shape.joint, witness))
        if not info:
            self._geom = self._gdata = None
            self._pairs = ()
            return
        gdata = pin.GeometryData(geom)
        for request in gdata.collisionRequests:
            request.enable_contact = True
        # Each pair's result, held: the elements stay views of gdata's results, which
        # computeCollisions updates in place (cheaper than indexing the vector each step).
        results = [gdata.collisionResults[k] for k in range(len(info))]
        self._geom, self._gdata, self._pairs = geom, gdata, tuple(zip(results, info))

    @staticmethod
    def _reaches(shape, record, placement, radius):
        """Can the link shape ever touch the obstacle (its reach against the obstacle's
        bounding sphere; a plane's slab: against its distance from the plane)?"""
        if record.shape == 'plane':
            normal = placement.rotation[:, 2]
            gap = abs(float(normal @ (shape.reach_centre - placement.translation))) - 0.5 * PLANE_THICKNESS
            return gap <= shape.reach
        return np.linalg.norm(placement.translation - shape.reach_centre) <= shape.reach + radius

    # --- physics ----------------------------------------------------------------------
    def _touching(self):
        """The contacts at _full_q, each (link, obstacle, depth, n, point, jn): n the unit
        normal out of the obstacle and point the link's point deepest in it (world; tuples of
        floats), jn = nᵀ J_point over the full velocity vector (our joints only). None or
        empty when no link shape touches an obstacle (then the contacts record is cleared)."""
        model, data = self.pin, self.data
        # Kinematics and every pair within reach, in C++.
        if not pin.computeCollisions(model, data, self._geom, self._gdata, self._full_q, False):
            if self._contacts:
                self._contacts = []
            return None
        pin.computeJointJacobians(model, data, self._full_q)
        hits = []
        # Scalar arithmetic on 3-vectors: numpy's per-call cost exceeds the work (np.cross).
        for result, (link, obstacle, joint, witness) in self._pairs:
            if not result.isCollision():
                continue
            contact = result.getContact(0)
            depth = contact.penetration_depth
            if not math.isfinite(depth):
                continue
            mx, my, mz = contact.normal.tolist()     # hpp-fcl's: from the link into the obstacle
            nx, ny, nz = -mx, -my, -mz
            px, py, pz = contact.pos.tolist()
            s = witness * depth
            px, py, pz = px + s * mx, py + s * my, pz + s * mz
            # jn = [n; p × n]ᵀ J, J the joint's Jacobian in WORLD (spatial velocity at the
            # origin: v_p = v_O + ω × p).
            wrench = np.array((nx, ny, nz, py * nz - pz * ny, pz * nx - px * nz, px * ny - py * nx))
            jn = wrench @ pin.getJointJacobian(model, data, joint, pin.WORLD)
            if self._others.size:
                jn[self._others] = 0.0
            hits.append((link, obstacle, depth, (nx, ny, nz), (px, py, pz), jn))
        if not hits:
            self._contacts = []
        return hits

    def _contact_forces(self, hits, chol, qdd, h):
        """Add each contact's M⁻¹ Jnᵀ f to qdd (in place; chol: M's upper Cholesky factor) and
        record the contacts."""
        k, c = self.contact_stiffness, self.contact_damping
        kc = k * h + c
        v, dot = self._full_v, np.dot            # np.dot: half the cost of @ on 8-vectors
        contacts = []
        for link, obstacle, depth, n, point, jn in hits:
            y = dpotrs(chol, jn, lower=0)[0]                     # M⁻¹ Jnᵀ
            # The closing speed at the step's end without the contact (u + h·a); the force
            # then solves f = k·(δ + h·u') + c·u' with u' = that speed − h·f/m.
            closing = -float(dot(jn, v)) - h * float(dot(jn, qdd))
            f = (k * depth + kc * closing) / (1.0 + kc * h * float(dot(jn, y)))
            if f > 0.0:
                qdd += f * y
            else:
                f = 0.0                                          # separating: never pulls
            contacts.append(self._record(obstacle, link, depth, f, n, point))
        self._contacts = contacts

    def _contact_torques_at_rest(self, hits):
        """Braked: the joint torques of the contacts' springs (k·δ, nothing moves); records
        the contacts."""
        tau = np.zeros(self.pin.nv)
        contacts = []
        for link, obstacle, depth, n, point, jn in hits:
            f = self.contact_stiffness * depth
            tau += f * jn
            contacts.append(self._record(obstacle, link, depth, f, n, point))
        self._contacts = contacts
        return tau[self._idx]

    def _record(self, obstacle, link, depth, f, n, point):
        force = np.array((f * n[0], f * n[1], f * n[2]))
        point = np.array(point)
        if self._world_base is not None:
            force = self._world_base.rotation.T @ force
            point = self._world_base.actInv(point)
        return Contact(obstacle, link, float(depth), force, point)

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
        self._full_v[idx] = self.qd
        tau = self.tau_cmd - self.damping * self.qd
        if self._wrenches:
            tau += self._external_torques()
        mass = pin.crba(self.pin, self.data, self._full_q)     # upper triangle only
        mass += self._armature_matrix
        bias = pin.nonLinearEffects(self.pin, self.data, self._full_q, self._full_v)
        self._full_tau[idx] = tau
        # The drives' damping taken at the step's end velocity (implicit: (M + h·B) q̈ =
        # τ − B·q̇ − b), stable however stiff, and what the joints transmit below is then
        # exactly what moved the links. M is symmetric positive definite: a Cholesky solve
        # that reads its upper triangle.
        solve = mass.copy()
        solve[idx, idx] += h * self.damping
        chol, qdd_full, info = dposv(solve, self._full_tau - bias, lower=0)
        if info != 0:               # cannot happen for a valid model; never integrate junk
            self.report_fault('embedded plant: mass matrix not positive definite at q = %s'
                              % np.round(self.q, 4).tolist())
            self.set_brakes(True)
            return
        if hits:
            self._contact_forces(hits, chol, qdd_full, h)
        qd_free = self.qd + h * qdd_full[idx]
        # Coulomb friction as a bounded impulse: it removes up to `reach` of each joint's
        # velocity this step, and sticks the joint when that is all of it.
        m_eff = mass.diagonal()[idx]
        reach = (self.coulomb * h) / m_eff
        removed = _clip(qd_free, -reach, reach)
        qd_new = qd_free - removed
        # The friction torque that velocity change amounts to, M·removed/h: the impulse at
        # one joint moves the others through M's off-diagonal terms, so the torque each
        # joint transmits to its link (what its series elastic spring measures) is the
        # drive's less this, consistent with the links' dynamics (the joints' torques
        # explain the motion exactly, whatever sticks).
        full = self._full_removed
        full[idx] = removed
        friction = dsymv(1.0 / h, mass, full, lower=0)[idx]
        q_new = self.q + h * qd_new
        # Hard stops: inelastic contact at the joint limits.
        below, above = q_new < self.stop_lower, q_new > self.stop_upper
        if np.count_nonzero(below | above):
            q_new = _clip(q_new, self.stop_lower, self.stop_upper)
            qd_new[(below & (qd_new < 0)) | (above & (qd_new > 0))] = 0.0
        self.q, self.qd = q_new, qd_new
        # What each joint transmits: the drive torque less the damping and friction it loses to.
        self.tau_transmitted = self.tau_cmd - self.damping * qd_free - friction
