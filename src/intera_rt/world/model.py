"""The world's models as data: poses, shapes, links, fixed joints, models, the world.

Everything here is validated when it is made, so a backend or the world service can trust
what it gets: sizes and masses positive and finite, quaternions unit, names unique. What
is refused raises WorldError naming the element or field and the value.
"""
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional, Tuple

import numpy as np
import PyKDL as kdl

from intera_rt.model.joint_frames import pose_matrix

MAX_XML_BYTES = 4 << 20      # a model or world file; a detailed one is tens of kB
MAX_SIZE = 1000.0            # m: any larger shape or offset is a unit mistake (a plane may be larger)
MAX_NAME_LENGTH = 128
_NAME = re.compile(r'^[A-Za-z0-9_.\-]+$')
WORLD_NAMES = ('', 'world', 'map')   # reference frames meaning the world (gazebo_ros' set)


class WorldError(ValueError):
    """A model, world or request refused; the message names the element or field and the value."""


def check_name(name, what):
    """`name` if it is a usable entity name (letters, digits, _ . -; no '::'), else WorldError."""
    if not isinstance(name, str) or not name:
        raise WorldError('%s: a name is required, got %r' % (what, name))
    if len(name) > MAX_NAME_LENGTH or not _NAME.match(name):
        raise WorldError('%s: name %r: a name is letters, digits, _ . - (at most %d)'
                         % (what, name[:MAX_NAME_LENGTH], MAX_NAME_LENGTH))
    return name


def finite(values, n, what):
    """`values` as a tuple of n finite floats, or WorldError naming `what` and the value."""
    try:
        arr = np.array(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise WorldError('%s: expected %d numbers, got %r' % (what, n, values)) from None
    if arr.shape != (n,):
        raise WorldError('%s: expected %d numbers, got %r' % (what, n, values))
    if np.count_nonzero(~np.isfinite(arr)):
        raise WorldError('%s: expected finite numbers, got %s' % (what, _fmt(arr)))
    return tuple(float(v) for v in arr)


def positive(values, n, what, limit=MAX_SIZE):
    """n finite numbers each in (0, limit], or WorldError naming `what` and the value."""
    out = finite(values, n, what)
    if any(v <= 0.0 for v in out):
        raise WorldError('%s: sizes must be > 0, got %s' % (what, _fmt(out)))
    if any(v > limit for v in out):
        raise WorldError('%s: sizes must be at most %g m, got %s' % (what, limit, _fmt(out)))
    return out


def _fmt(values):
    return '(%s)' % ', '.join('%.6g' % v for v in values)


# --- poses ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pose:
    """A rigid transform: `position` (m) and unit `quaternion` (x, y, z, w), of a child
    frame in its parent. Pose(a) * Pose(b) composes (b expressed in a's frame). The
    arithmetic is KDL's, as in the robot's model."""
    position: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    quaternion: Tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)

    @classmethod
    def make(cls, position, quaternion, what='pose'):
        """A checked pose: finite position within MAX_SIZE, a non-zero finite quaternion
        (normalised, as Gazebo does). WorldError naming `what`.position/.orientation."""
        p = finite(position, 3, what + '.position')
        if any(abs(v) > MAX_SIZE for v in p):
            raise WorldError('%s.position: coordinates must be within %g m, got %s'
                             % (what, MAX_SIZE, _fmt(p)))
        q = finite(quaternion, 4, what + '.orientation')
        norm = math.sqrt(sum(v * v for v in q))
        if norm < 1e-9:
            raise WorldError('%s.orientation: the quaternion (x, y, z, w) = %s is zero'
                             % (what, _fmt(q)))
        return cls(p, tuple(v / norm for v in q))

    @classmethod
    def from_xyz_rpy(cls, values, what='pose'):
        """From x y z roll pitch yaw (rad, fixed axes X then Y then Z: URDF's and SDF's)."""
        v = finite(values, 6, what)
        if any(abs(c) > MAX_SIZE for c in v[:3]):
            raise WorldError('%s: coordinates must be within %g m, got %s' % (what, MAX_SIZE, _fmt(v)))
        return cls(v[:3], kdl.Rotation.RPY(*v[3:]).GetQuaternion())

    @classmethod
    def from_matrix(cls, m):
        m = np.asarray(m, dtype=float)
        return cls(tuple(float(v) for v in m[:3, 3]),
                   kdl.Rotation(*(float(v) for v in m[:3, :3].reshape(-1))).GetQuaternion())

    @classmethod
    def _of(cls, frame):
        p = frame.p
        return cls((p[0], p[1], p[2]), frame.M.GetQuaternion())

    @cached_property
    def frame(self):
        """The kdl.Frame (computed once: a Pose is immutable)."""
        return kdl.Frame(kdl.Rotation.Quaternion(*self.quaternion), kdl.Vector(*self.position))

    @property
    def rotation(self):
        """3×3 rotation matrix."""
        return self.matrix()[:3, :3]

    def matrix(self):
        """4×4 homogeneous transform."""
        return pose_matrix(self.position, self.quaternion)

    def __mul__(self, other):
        return Pose._of(self.frame * other.frame)

    def inverse(self):
        return Pose._of(self.frame.Inverse())

    def apply(self, points):
        """Points (…, 3) in the child frame → in the parent frame."""
        return np.asarray(points, dtype=float) @ self.rotation.T + np.asarray(self.position)


IDENTITY = Pose()


# --- shapes -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Box:
    size: Tuple[float, float, float]          # full edge lengths along the shape's axes (m)
    kind = 'box'


@dataclass(frozen=True)
class Cylinder:
    radius: float
    length: float                              # along the shape's z axis, centred
    kind = 'cylinder'


@dataclass(frozen=True)
class Sphere:
    radius: float
    kind = 'sphere'


@dataclass(frozen=True)
class Plane:
    normal: Tuple[float, float, float]         # unit, in the shape's frame; the plane holds its origin
    size: Tuple[float, float]                  # m, for display (physics treats it as infinite)
    kind = 'plane'


@dataclass(frozen=True, eq=False)
class Mesh:
    """A triangle mesh file, scaled into metres, and its convex hull (what physics uses).
    `vertices`/`faces`: the whole mesh (for display); `hull_vertices`/`hull_faces`: its
    convex hull (faces outward, counter-clockwise)."""
    uri: str                                   # as written in the model
    path: str                                  # the file it resolved to
    scale: Tuple[float, float, float]
    vertices: np.ndarray = field(repr=False)   # (n, 3) m, in the shape's frame
    faces: np.ndarray = field(repr=False)      # (m, 3) vertex indices
    hull_vertices: np.ndarray = field(repr=False)
    hull_faces: np.ndarray = field(repr=False)
    kind = 'mesh'


SHAPES = ('box', 'cylinder', 'sphere', 'plane', 'mesh')


# --- links, joints, models ----------------------------------------------------------------
@dataclass(frozen=True)
class Friction:
    """Coulomb friction coefficients along the contact's first and second directions (ODE's
    mu and mu2; SDF's default 1 each)."""
    mu: float = 1.0
    mu2: float = 1.0

    @classmethod
    def make(cls, mu, mu2, what='friction'):
        values = finite((mu, mu2), 2, what + ' (mu, mu2)')
        if min(values) < 0.0:
            raise WorldError('%s (mu, mu2): coefficients must be ≥ 0, got %s' % (what, _fmt(values)))
        return cls(*values)


@dataclass(frozen=True)
class Collision:
    name: str
    pose: Pose                                 # in the link's frame
    geometry: object                           # Box | Cylinder | Sphere | Plane | Mesh
    friction: Friction = Friction()


@dataclass(frozen=True)
class Visual:
    name: str
    pose: Pose                                 # in the link's frame
    geometry: object


@dataclass(frozen=True)
class Inertial:
    """Mass (kg) and inertia (kg·m², about the centre of mass, in the frame `pose` gives in
    the link's frame: `pose.position` is the centre of mass)."""
    mass: float
    inertia: Tuple[float, float, float, float, float, float]   # ixx ixy ixz iyy iyz izz
    pose: Pose = IDENTITY

    @classmethod
    def make(cls, mass, inertia, pose=IDENTITY, what='inertial'):
        """Checked: mass > 0, the inertia matrix symmetric positive definite with principal
        moments obeying the triangle inequality (what a physical body has, and what MuJoCo
        requires)."""
        (m,) = finite([mass], 1, what + '.mass')
        if m <= 0.0:
            raise WorldError('%s.mass: must be > 0 kg, got %.6g' % (what, m))
        i = finite(inertia, 6, what + '.inertia (ixx ixy ixz iyy iyz izz)')
        matrix = np.array([[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]])
        moments = np.linalg.eigvalsh(matrix)
        scale = max(abs(moments).max(), 1e-30)
        if moments[0] <= 1e-12 * scale or moments[0] <= 0.0:
            raise WorldError('%s.inertia (ixx ixy ixz iyy iyz izz): must be positive definite, '
                             'got %s' % (what, _fmt(i)))
        a, b, c = moments
        if a + b < c * (1.0 - 1e-6):
            raise WorldError('%s.inertia (ixx ixy ixz iyy iyz izz): principal moments %s break '
                             'the triangle inequality (no body has them), got %s'
                             % (what, _fmt(moments), _fmt(i)))
        return cls(m, i, pose)

    def matrix(self):
        i = self.inertia
        return np.array([[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]])


# SDF's default for a link without <inertial> (libsdformat: mass 1 kg, unit diagonal inertia).
SDF_DEFAULT_INERTIAL = Inertial(1.0, (1.0, 0.0, 0.0, 1.0, 0.0, 1.0))


@dataclass(frozen=True)
class Link:
    name: str
    pose: Pose                                 # in the model's frame
    inertial: Optional[Inertial]               # None: massless (a URDF link without one)
    collisions: Tuple[Collision, ...] = ()
    visuals: Tuple[Visual, ...] = ()


@dataclass(frozen=True)
class Joint:
    """A fixed joint: `child` is welded to `parent` (a link of the model, or 'world')."""
    name: str
    parent: str
    child: str


@dataclass(frozen=True)
class Model:
    """A model as spawned: its links (the first is the canonical link), fixed joints, and
    its pose in the world. `static`: it never moves (Gazebo's <static>)."""
    name: str
    links: Tuple[Link, ...]
    joints: Tuple[Joint, ...] = ()
    pose: Pose = IDENTITY
    static: bool = False
    source: str = 'sdf'                        # 'sdf' or 'urdf'

    def link(self, name):
        """The link named `name` or WorldError naming it and the model."""
        for link in self.links:
            if link.name == name:
                return link
        raise WorldError('link %r: model %r has no such link (its links: %s)'
                         % (name, self.name, ', '.join(l.name for l in self.links)))

    @property
    def link_names(self):
        return tuple(l.name for l in self.links)

    @property
    def canonical_link(self):
        return self.links[0].name

    @property
    def anchored(self):
        """True when nothing of it moves: static, or welded to the world."""
        return self.static or any(j.parent == 'world' for j in self.joints)

    def collision_names(self):
        """Every link's collision names, in order (GetModelProperties' geom_names)."""
        return tuple(c.name for l in self.links for c in l.collisions)

    def with_pose(self, pose, name=None):
        """The same model placed at `pose` (and renamed to `name`)."""
        return Model(name or self.name, self.links, self.joints, pose, self.static, self.source)

    def bodies(self):
        """The model's rigid bodies: links welded by fixed joints become one body. Returns
        a tuple of RigidBody, the first holding the canonical link."""
        return rigid_bodies(self)


def check_model(model, what=None):
    """Structure checks (names unique, joints between known links, a tree): the model, or
    WorldError naming the part."""
    what = what or 'model %r' % model.name
    check_name(model.name, what)
    if model.name in WORLD_NAMES:
        raise WorldError('%s: %r names the world frame and cannot name a model' % (what, model.name))
    if not model.links:
        raise WorldError('%s: a model needs at least one <link>' % what)
    names = set()
    for link in model.links:
        check_name(link.name, '%s: link' % what)
        if link.name in names:
            raise WorldError('%s: link %r is defined twice' % (what, link.name))
        names.add(link.name)
        seen = set()
        for c in link.collisions:
            if c.name in seen:
                raise WorldError('%s: link %r: collision %r is defined twice' % (what, link.name, c.name))
            seen.add(c.name)
    children = {}
    for joint in model.joints:
        check_name(joint.name, '%s: joint' % what)
        for role, name in (('parent', joint.parent), ('child', joint.child)):
            if name not in names and not (role == 'parent' and name == 'world'):
                raise WorldError('%s: joint %r: %s link %r is not a link of the model'
                                 % (what, joint.name, role, name))
        if joint.child == joint.parent:
            raise WorldError('%s: joint %r joins link %r to itself' % (what, joint.name, joint.child))
        if joint.child in children:
            raise WorldError('%s: link %r is the child of two joints, %r and %r'
                             % (what, joint.child, children[joint.child], joint.name))
        children[joint.child] = joint.name
    # no loops: walking up from any link ends at a root
    parent_of = {j.child: j.parent for j in model.joints}
    for start in names:
        seen, current = set(), start
        while current in parent_of:
            if current in seen:
                raise WorldError('%s: joints form a loop through link %r' % (what, current))
            seen.add(current)
            current = parent_of[current]
    return model


@dataclass(frozen=True)
class RigidBody:
    """Links welded into one body: `links` with their poses in the body's frame (the root
    link's frame), the combined inertial (None when massless), every collision with its
    pose in the body's frame. `anchored`: welded to the world."""
    name: str                                  # the root link's name
    pose: Pose                                 # the root link's pose in the model's frame
    links: Tuple[Tuple[str, Pose], ...]
    collisions: Tuple[Collision, ...]
    inertial: Optional[Inertial]
    anchored: bool = False


def combine_inertials(parts):
    """One Inertial of several (Inertial, pose of its link in a common frame): total mass,
    the common centre of mass, the inertia about it by the parallel-axis theorem (in the
    common frame's axes). None when `parts` holds no mass."""
    parts = [(i, p) for i, p in parts if i is not None]
    if not parts:
        return None
    mass = sum(i.mass for i, _ in parts)
    coms = [(p * i.pose).position for i, p in parts]
    com = sum(i.mass * np.asarray(c) for (i, _), c in zip(parts, coms)) / mass
    total = np.zeros((3, 3))
    for (i, p), c in zip(parts, coms):
        r = (p * i.pose).rotation
        d = np.asarray(c) - com
        total += r @ i.matrix() @ r.T + i.mass * (float(d @ d) * np.eye(3) - np.outer(d, d))
    total = 0.5 * (total + total.T)
    return Inertial(mass, (total[0, 0], total[0, 1], total[0, 2], total[1, 1], total[1, 2], total[2, 2]),
                    Pose(tuple(float(v) for v in com)))


def rigid_bodies(model):
    """See Model.bodies."""
    below = {}
    welded_to_world = set()
    parent_of = {}
    for j in model.joints:
        if j.parent == 'world':
            welded_to_world.add(j.child)
        else:
            below.setdefault(j.parent, []).append(j.child)
            parent_of[j.child] = j.parent
    by_name = {l.name: l for l in model.links}
    roots = [l.name for l in model.links if l.name not in parent_of]
    top = model.links[0].name                  # the canonical link's body comes first
    while top in parent_of:
        top = parent_of[top]
    roots.sort(key=lambda n: n != top)
    bodies = []
    for root in roots:
        root_pose = by_name[root].pose
        to_root = root_pose.inverse()
        members, todo = [], [root]
        while todo:
            name = todo.pop(0)
            members.append(name)
            todo.extend(below.get(name, ()))
        links = tuple((n, to_root * by_name[n].pose) for n in members)
        collisions = tuple(Collision(c.name, p * c.pose, c.geometry, c.friction)
                           for n, p in links for c in by_name[n].collisions)
        inertial = combine_inertials([(by_name[n].inertial, p) for n, p in links])
        bodies.append(RigidBody(root, root_pose, links, collisions, inertial,
                                anchored=model.static or bool(welded_to_world.intersection(members))))
    return tuple(bodies)


def lump_fixed_joints(model):
    """The model with every link welded to another merged into its root link, as Gazebo's
    URDF import does: one link per rigid body, collisions and inertia carried over; joints
    to the world kept."""
    by_name = {l.name: l for l in model.links}
    links, joints = [], []
    for body in rigid_bodies(model):
        members = dict(body.links)
        visuals = tuple(Visual(v.name, p * v.pose, v.geometry)
                        for n, p in body.links for v in by_name[n].visuals)
        links.append(Link(body.name, body.pose, body.inertial, body.collisions, visuals))
        joints.extend(Joint(j.name, 'world', body.name) for j in model.joints
                      if j.parent == 'world' and j.child in members)
    return Model(model.name, tuple(links), tuple(joints), model.pose, model.static, model.source)


# --- the world ------------------------------------------------------------------------------
@dataclass
class World:
    """The models in the world, by name, in the order added; `reserved`: names taken by
    something that is not a model of this description (the robot, 'sawyer')."""
    models: dict = field(default_factory=dict)
    reserved: Tuple[str, ...] = ()

    def add(self, model):
        """Add a checked model; WorldError on a duplicate name (the world unchanged)."""
        check_model(model)
        if model.name in self.models or model.name in self.reserved:
            raise WorldError('model_name: a model named %r already exists' % model.name)
        self.models[model.name] = model
        return model

    def remove(self, name):
        """Remove and return the model `name`; WorldError if there is none."""
        if name in self.reserved:
            raise WorldError('model_name: %r is the robot, which cannot be deleted' % name)
        try:
            return self.models.pop(name)
        except KeyError:
            raise WorldError('model_name: no model named %r (models: %s)'
                             % (name, ', '.join(self.names()) or 'none')) from None

    def get(self, name):
        """The model `name`; WorldError if there is none."""
        try:
            return self.models[name]
        except KeyError:
            raise WorldError('model_name: no model named %r (models: %s)'
                             % (name, ', '.join(self.names()) or 'none')) from None

    def names(self):
        return tuple(self.reserved) + tuple(self.models)


def at_line(el, what):
    """`what` and the line of its XML element, for an error message."""
    return '%s (line %s)' % (what, el.sourceline)


def fixed_joint(el, what):
    """(name, its description for messages) of a model's <joint> element (SDF or URDF);
    WorldError unless it is fixed: the world's models are rigid."""
    name = check_name(el.get('name'), at_line(el, what + ' <joint>'))
    described = "%s joint '%s'" % (what, name)
    if el.get('type') != 'fixed':
        raise WorldError('%s: type %r: a model\'s links are joined by fixed joints only'
                         % (at_line(el, described), el.get('type')))
    return name, described
