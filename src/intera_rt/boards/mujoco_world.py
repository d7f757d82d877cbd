"""Spawned world models (intera_rt.world.Model) as MuJoCo bodies, for the MuJoCo plant
(boards.mujoco_boards) and anything else that builds a MuJoCo scene from the world.

Each RigidBody of `Model.bodies()` is one body, a child of MuJoCo's world (the robot's base
frame): a free joint unless the model is anchored (static, or welded to the world), its
inertial given explicitly (mass, centre of mass, full inertia), one geom per collision (box,
cylinder, sphere, plane, mesh as its convex hull's vertices: MuJoCo collides convex shapes).
Friction: the collision's mu is MuJoCo's sliding friction (MuJoCo's is isotropic, so mu2 is
not used), and it governs the model's contacts with the cell and the arm (geom priority;
where two models meet MuJoCo takes the larger mu, ODE the smaller); with a finger pad
(`pads`) the contact is an explicit pair taking the smaller of the pad's and the model's mu,
as ODE does, with the pad's compliance; torsional friction (condim 4) keeps a grasped body
from pivoting between two finger pads.
Collision bits: moving bodies touch everything (the arm, the fingers, the table and floor,
obstacles and each other); anchored ones touch what moves, as the cell's fixed geoms do.
Names: body and free joint 'world/<model>/<body>', geoms '.../<k>', meshes 'mesh/...'.

Wrenches (gazebo_ros' apply_body_wrench, the sim-control API's on a link): one BodyWrench
each, kept by the plant in a list; model_named, body_wrench, rebind, expire,
drop_wrenches and drop_link_wrenches are the bookkeeping both MuJoCo plants (boards.mujoco_boards,
boards.gazebo_physics) share.
"""
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

import mujoco

from intera_rt.boards.mjcf import MODEL_PRIORITY, PAD_MU, PAD_TIMECONST
from intera_rt.world.model import Pose, WorldError

PREFIX = 'world/'
OBJECT_BITS = (1, 1)          # contype, conaffinity: a moving body touches everything
ANCHORED_BITS = (0, 1)        # as the floor and table (mjcf.WORLD_BITS): touched by what moves
MIN_MASS = 1e-6               # kg: MuJoCo refuses a moving body without mass
PLANE_GRID = 0.05             # m: the display grid of a plane


def body_name(model, body):
    return '%s%s/%s' % (PREFIX, model, body)


@dataclass(slots=True)
class BodyWrench:
    """A force and torque (world axes) pushing one body of a MuJoCo model for a while.

    `name` is the MuJoCo body's (it survives a recompile, `body` its id in the model now);
    `owner` (model, body) of a spawned model's body, None for a link of the robot; `point`
    where the force acts in the body's frame (None: at the centre of mass of the bodies
    `lumped` into it, as Gazebo does for a link). `left`: s it still acts (inf: until
    cleared)."""
    body: int
    name: str
    force: np.ndarray
    torque: np.ndarray
    left: float
    owner: Optional[Tuple[str, str]] = None
    point: Optional[np.ndarray] = None
    lumped: Optional[np.ndarray] = None


def model_named(models, name):
    """models[name] (a plant's spawned models by name); KeyError naming the models there
    are."""
    try:
        return models[name]
    except KeyError:
        raise KeyError('no model named %r (models: %s)'
                       % (name, ', '.join(models) or 'none')) from None


def body_wrench(m, world_model, model, body, force, torque, point, duration):
    """The BodyWrench of gazebo_ros' apply_body_wrench: `force` and `torque` (world axes)
    at `point` (the body's frame) on `body` of the spawned `world_model` (named `model`)
    for `duration` s (< 0: until cleared); KeyError naming the model's bodies."""
    name, bid = body_id(m, world_model, model, body)
    duration = float(duration)
    return BodyWrench(bid, name, np.array(force, float), np.array(torque, float),
                      math.inf if duration < 0 else duration, (model, body),
                      np.array(point, float), np.array([bid]))


def rebind(m, wrenches, lumped=None):
    """The wrenches whose body is still in the (re)compiled `m`, their body ids (and, with
    `lumped`, a body id → the ids lumped into it, those of a wrench without a point) taken
    anew from their names."""
    kept = []
    for w in wrenches:
        w.body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, w.name)
        if w.body < 0:
            continue
        if lumped is not None:
            w.lumped = np.array([w.body]) if w.point is not None else np.array(lumped(w.body), int)
        kept.append(w)
    return kept


def expire(wrenches, dt):
    """The wrenches still acting after `dt` s more (each with dt less left)."""
    for w in wrenches:
        w.left -= dt
    return [w for w in wrenches if w.left > 0.0]


def drop_wrenches(wrenches, model, body=None):
    """The wrenches but those on `model`'s bodies (with `body`: on that body only)."""
    if body is None:
        return [w for w in wrenches if w.owner is None or w.owner[0] != model]
    return [w for w in wrenches if w.owner != (model, body)]


def drop_link_wrenches(wrenches, name):
    """The wrenches but those on the robot's MuJoCo body `name` (owner None)."""
    return [w for w in wrenches if w.owner is not None or w.name != name]


def body_id(m, world_model, model, body):
    """(MuJoCo name, body id) of `body` of the spawned `world_model` (named `model`);
    KeyError naming the model's bodies when it has no such body."""
    bodies = [b.name for b in world_model.bodies()]
    if body not in bodies:
        raise KeyError('model %r has no body %r (its bodies: %s)' % (model, body, ', '.join(bodies)))
    name = body_name(model, body)
    return name, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)


def wxyz(quaternion):
    x, y, z, w = quaternion
    return [w, x, y, z]


def _z_to(normal):
    """Quaternion (x, y, z, w) turning +z onto the unit `normal` (a MuJoCo plane's normal is
    its frame's z)."""
    n = np.asarray(normal, float)
    axis = np.cross((0.0, 0.0, 1.0), n)
    s, c = np.linalg.norm(axis), float(n[2])
    if s < 1e-12:
        return (0.0, 0.0, 0.0, 1.0) if c > 0 else (1.0, 0.0, 0.0, 0.0)
    half = 0.5 * np.arctan2(s, c)
    axis = axis / s * np.sin(half)
    return (float(axis[0]), float(axis[1]), float(axis[2]), float(np.cos(half)))


def check(model):
    """WorldError naming the element when MuJoCo cannot simulate `model` as it is: a moving
    body without mass, a plane on a moving body (MuJoCo's planes are static)."""
    for body in model.bodies():
        if body.anchored:
            continue
        what = "model '%s': link '%s'" % (model.name, body.name)
        if body.inertial is None or body.inertial.mass < MIN_MASS:
            raise WorldError('%s: a body that moves needs a mass (<inertial>) on MuJoCo' % what)
        for c in body.collisions:
            if c.geometry.kind == 'plane':
                raise WorldError("%s: collision '%s': a plane can only be static on MuJoCo "
                                 '(make the model <static>)' % (what, c.name))


def add_model(spec, model, pose, solref, friction_extra=(0.005, 0.0001), pads=()):
    """Add `model`'s bodies to `spec` with its frame at `pose` (world.Pose in MuJoCo's world
    frame). `solref`: (time constant, damping ratio) of its contacts; `friction_extra`:
    (torsional, rolling) coefficients; `pads`: the gripper's finger pads in `spec`, (geom
    name, body name) each, whose contacts with the model are explicit pairs (the smaller of
    PAD_MU and the model's mu, the pads' compliance) instead of MuJoCo's own. Returns the
    body names added, in model.bodies() order. check(model) first: this assumes it
    passed."""
    names = []
    for body in model.bodies():
        at = pose * body.pose
        name = body_name(model.name, body.name)
        b = spec.worldbody.add_body(name=name, pos=list(at.position), quat=wxyz(at.quaternion))
        names.append(name)
        bits = ANCHORED_BITS if body.anchored else OBJECT_BITS
        if not body.anchored:
            b.add_freejoint(name=name)
            i = body.inertial
            r = i.pose.rotation
            t = r @ i.matrix() @ r.T                 # about the COM, in the body's axes
            b.mass = i.mass
            b.ipos = list(i.pose.position)
            b.fullinertia = [t[0, 0], t[1, 1], t[2, 2], t[0, 1], t[0, 2], t[1, 2]]
            b.explicitinertial = True
        for k, c in enumerate(body.collisions):
            g = b.add_geom(name='%s/%d' % (name, k))
            shape = c.geometry
            placed = c.pose
            if shape.kind == 'box':
                g.type = mujoco.mjtGeom.mjGEOM_BOX
                g.size = [0.5 * s for s in shape.size]
            elif shape.kind == 'cylinder':
                g.type = mujoco.mjtGeom.mjGEOM_CYLINDER
                g.size = [shape.radius, 0.5 * shape.length, 0.0]
            elif shape.kind == 'sphere':
                g.type = mujoco.mjtGeom.mjGEOM_SPHERE
                g.size = [shape.radius, 0.0, 0.0]
            elif shape.kind == 'plane':
                g.type = mujoco.mjtGeom.mjGEOM_PLANE
                g.size = [0.5 * shape.size[0], 0.5 * shape.size[1], PLANE_GRID]
                placed = placed * Pose((0.0, 0.0, 0.0), _z_to(shape.normal))
            elif shape.kind == 'mesh':
                mesh = spec.add_mesh(name='mesh/%s/%d' % (name, k))
                mesh.uservert = np.asarray(shape.hull_vertices, float).reshape(-1).tolist()
                g.type = mujoco.mjtGeom.mjGEOM_MESH
                g.meshname = mesh.name
            else:                                    # world.model.SHAPES is the whole list
                raise WorldError("model '%s': collision '%s': shape %r"
                                 % (model.name, c.name, shape.kind))
            g.pos = list(placed.position)
            g.quat = wxyz(placed.quaternion)
            g.contype, g.conaffinity = bits
            # The model's friction governs its contacts with the cell, the arm and the
            # fingers (priority); two models meeting take the larger of theirs.
            g.priority = MODEL_PRIORITY
            g.condim = 4
            g.friction = [c.friction.mu, friction_extra[0], friction_extra[1]]
            g.solref = list(solref)
            g.rgba = [0.8, 0.5, 0.2, 1.0] if not body.anchored else [0.5, 0.45, 0.4, 1.0]
            mu = min(PAD_MU, c.friction.mu)
            for pad, _ in pads:
                spec.add_pair(name='%s|%s' % (g.name, pad), geomname1=pad, geomname2=g.name,
                              condim=4, solref=[PAD_TIMECONST, 1.0],
                              friction=[mu, mu, friction_extra[0], friction_extra[1], friction_extra[1]])
        for finger in sorted({b for _, b in pads}):      # no contact of MuJoCo's own besides
            spec.add_exclude(name='%s|%s' % (name, finger), bodyname1=finger, bodyname2=name)
    return names


def remove_model(spec, model):
    """Take `model`'s bodies (and their meshes, pad pairs and exclusions) out of `spec`."""
    for body in model.bodies():
        name = body_name(model.name, body.name)
        for element in list(spec.pairs) + list(spec.excludes):
            if element.name.startswith(name + '/') or element.name.startswith(name + '|'):
                spec.delete(element)
        b = spec.body(name)
        if b is None:
            continue
        for k in range(len(body.collisions)):
            mesh = spec.mesh('mesh/%s/%d' % (name, k))
            if mesh is not None:
                spec.delete(mesh)
        spec.delete(b)


def set_state(spec, m, d, model, pose, twist):
    """`model`'s bodies (in `spec` and compiled into m, d) placed with its frame at `pose`,
    each moving as a point of the model would (linear v + w × r, angular w; `twist` 6 floats,
    MuJoCo's world axes); an anchored body is moved where it is built. Then mj_forward."""
    twist = np.asarray(twist, float)
    v, w = twist[:3], twist[3:]
    for body in model.bodies():
        at = pose * body.pose
        name = body_name(model.name, body.name)
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        if body.anchored:
            b = spec.body(name)
            b.pos, b.quat = list(at.position), wxyz(at.quaternion)
            m.body_pos[bid], m.body_quat[bid] = b.pos, b.quat
            continue
        jnt = m.body_jntadr[bid]
        qa, da = m.jnt_qposadr[jnt], m.jnt_dofadr[jnt]
        d.qpos[qa:qa + 3] = at.position
        d.qpos[qa + 3:qa + 7] = wxyz(at.quaternion)
        d.qvel[da:da + 3] = v + np.cross(w, np.subtract(at.position, pose.position))
        d.qvel[da + 3:da + 6] = at.rotation.T @ w          # a free joint's: body axes
        if not d.qvel[da:da + 6].any():
            # MuJoCo wakes a sleeping body that moves, not one moved to rest elsewhere:
            # a velocity far below anything physical wakes it (and what it rests on).
            d.qvel[da + 2] = -1e-12
        tree = m.body_treeid[bid]
        if d.tree_asleep[tree] < 0:
            # Awake but about to sleep (it came to rest a few steps ago): that counter
            # would put it to sleep where it is now put, in mid-air. It starts over.
            d.tree_asleep[tree] = -(1 + mujoco.mjMINAWAKE)
    mujoco.mj_forward(m, d)
