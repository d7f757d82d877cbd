"""Obstacle contact for the embedded plant (boards.embedded), the part of its step that
finds and pushes the contacts.

Each step the moving links' collision shapes (never the base-fixed pedestal, controller box,
feet or arm base) are checked against the obstacles with hpp-fcl: depth δ, normal n out of
the obstacle, p the link's deepest point. The obstacle pushes the link at p along n with a
stiff spring-damper that never pulls, f = max(0, k·δ + c·u) (u the closing speed), evaluated
at the end of the step (backward Euler along the normal, one scalar solve per contact):
stable for any k, c at the loop rate, never adding energy. Its torques Jnᵀ f enter the
dynamics as an external force, as apply_wrench's do, so the transmitted (measured) torque
keeps its meaning: what each drive transmits to its link. Contact is frictionless. A
broadphase (each link shape's reach about right_j0's origin against the obstacle's bounding
sphere, when it is placed) makes an obstacle out of reach, and no obstacle, cost nothing per
step.
"""
import itertools
import math

import hppfcl
import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dpotrs

from intera_rt.boards.base import Contact, Obstacle
from intera_rt.model.tool import shape_object
from intera_rt.world.frames import placed_collisions
from intera_rt.world.model import Pose

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


class ObstacleContacts:
    """EmbeddedBoards' contact machinery. It uses the plant's pin, data, _full_q, _full_v,
    _idx, _others, _world_base, _urdf_xml, contact_stiffness and contact_damping, and keeps
    _obstacles, _world_shapes, _link_shapes, _arm_shapes, _tool_shapes, _geom, _gdata, _pairs
    and _contacts (EmbeddedBoards.__init__ sets them)."""

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

    def _place_obstacle(self, record):
        """An add_obstacle obstacle (its checked Obstacle record) among the shapes checked,
        replacing one of the same name."""
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
