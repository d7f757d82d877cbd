"""The world's frames, as gazebo_ros names them, and the conversions between them.

A reference frame is "" / "world" / "map" (the world), a model's name (its model frame)
or "model::link" (a link's frame). The robot is model `sawyer` whose model frame is its
`base`, at ROBOT_POSE in the world (sawyer_simulator's sawyer_world.launch spawns it at
z 0.93 m). The sim-control API places obstacles in `base`: base_to_world / world_to_base.

A Snapshot holds every model's and link's pose (and twist) in the world at one instant;
the backends fill it, the world service answers from it. Twists follow gazebo_ros: set in
a frame, they are rotated into the world; read in a frame, they are the difference to
the frame's own velocity, rotated into the frame.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from intera_rt.robot import BASE_FRAME
from intera_rt.world.model import (
    WORLD_NAMES, Box, Collision, Link, Model, Pose, Sphere, Visual, WorldError, check_model, positive)

ROBOT_MODEL = 'sawyer'
ROBOT_POSE = Pose((0.0, 0.0, 0.93))       # base in the world: sawyer_world.launch's -z 0.93
ZERO_TWIST = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def parse_reference(name, what='reference_frame'):
    """(model, link) a reference frame names: (None, None) for the world, (model, None) for
    a model frame, (model, link) for "model::link". WorldError for a malformed name."""
    if not isinstance(name, str):
        raise WorldError('%s: expected a frame name, got %r' % (what, name))
    name = name.strip()
    if name in WORLD_NAMES:
        return None, None
    parts = name.split('::')
    if len(parts) == 1:
        return name, None
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise WorldError('%s: %r: expected "", "world", a model name or "model::link"' % (what, name))


def scoped(model, link):
    """The "model::link" name gazebo_ros uses for a link."""
    return '%s::%s' % (model, link)


@dataclass
class Snapshot:
    """Poses and twists in the world at one instant.

    models: model name → Pose of its model frame; links: "model::link" → Pose.
    model_twists / link_twists: the same keys → ((vx, vy, vz), (wx, wy, wz)) in the world
    (absent: at rest). time: the instant, in the loop's time (s; NaN: not known)."""
    models: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    model_twists: dict = field(default_factory=dict)
    link_twists: dict = field(default_factory=dict)
    time: float = math.nan

    def frame(self, reference, what='reference_frame'):
        """(Pose, twist) of a reference frame in the world; WorldError naming an unknown
        model or link."""
        model, link = parse_reference(reference, what)
        if model is None:
            return Pose(), ZERO_TWIST
        if model not in self.models:
            raise WorldError('%s: %r: no model named %r (models: %s)'
                             % (what, reference, model, ', '.join(self.models) or 'none'))
        if link is None:
            return self.models[model], self.model_twists.get(model, ZERO_TWIST)
        key = scoped(model, link)
        if key not in self.links:
            known = [k.split('::', 1)[1] for k in self.links if k.startswith(model + '::')]
            raise WorldError('%s: %r: model %r has no link %r (its links: %s)'
                             % (what, reference, model, link, ', '.join(known) or 'none'))
        return self.links[key], self.link_twists.get(key, ZERO_TWIST)

    def model_state(self, name, reference='', what='model_name'):
        """(pose, twist) of model `name` in `reference` (GetModelState)."""
        if name not in self.models:
            raise WorldError('%s: no model named %r (models: %s)'
                             % (what, name, ', '.join(self.models) or 'none'))
        return self._relative(self.models[name], self.model_twists.get(name, ZERO_TWIST), reference)

    def link_state(self, name, reference='', what='link_name'):
        """(pose, twist) of link "model::link" `name` in `reference` (GetLinkState)."""
        model, link = parse_reference(name, what)
        if model is None or link is None:
            raise WorldError('%s: %r: expected "model::link"' % (what, name))
        pose, twist = self.frame(name, what)
        return self._relative(pose, twist, reference)

    def _relative(self, pose, twist, reference):
        frame, frame_twist = self.frame(reference, 'reference_frame')
        return from_world(pose, frame), twist_from_world(twist, frame, frame_twist)


def to_world(pose, frame):
    """A pose given in `frame` (a Pose in the world) → in the world."""
    return frame * pose


def from_world(pose, frame):
    """A pose in the world → in `frame` (a Pose in the world)."""
    return frame.inverse() * pose


def twist_to_world(twist, frame):
    """A twist given in `frame` → in the world (gazebo_ros' set_model_state: rotated only)."""
    r = frame.rotation
    return tuple(tuple(float(x) for x in r @ np.asarray(v, dtype=float)) for v in twist)


def twist_from_world(twist, frame, frame_twist=ZERO_TWIST):
    """A twist in the world → relative to `frame` moving with `frame_twist`, in its axes
    (gazebo_ros' get_model_state)."""
    r = frame.rotation
    return tuple(tuple(float(x) for x in r.T @ (np.asarray(v, dtype=float) - np.asarray(f, dtype=float)))
                 for v, f in zip(twist, frame_twist))


# --- the robot's base ------------------------------------------------------------------------
def base_to_world(pose, robot_pose=ROBOT_POSE):
    """A pose in the robot's `base` frame → in the world."""
    return robot_pose * pose


def world_to_base(pose, robot_pose=ROBOT_POSE):
    """A pose in the world → in the robot's `base` frame."""
    return robot_pose.inverse() * pose


def robot_frames(link_poses, robot_pose=ROBOT_POSE):
    """The robot as Snapshot entries: ({'sawyer': pose}, {'sawyer::link': pose}) from its
    links' poses in `base` (link name → Pose, e.g. from forward kinematics)."""
    links = {scoped(ROBOT_MODEL, name): robot_pose * pose for name, pose in link_poses.items()}
    links.setdefault(scoped(ROBOT_MODEL, BASE_FRAME), robot_pose)
    return {ROBOT_MODEL: robot_pose}, links


# --- models' links ----------------------------------------------------------------------------
def model_frames(model, pose=None, body_poses=None):
    """A world model as Snapshot entries: ({name: pose}, {'name::link': pose}).

    Args:
        pose: the model frame's pose in the world (default: its own); its links are placed
            rigidly from it.
        body_poses: instead, where a backend has each of Model.bodies() (root link name →
            Pose in the world): links from their bodies, the model frame from the first
            (canonical) body."""
    if body_poses is None:
        pose = model.pose if pose is None else pose
        return ({model.name: pose},
                {scoped(model.name, link.name): pose * link.pose for link in model.links})
    bodies = model.bodies()
    links = {}
    for body in bodies:
        at = body_poses[body.name]
        links.update((scoped(model.name, name), at * rel) for name, rel in body.links)
    return {model.name: model_pose_of_body(bodies[0], body_poses[bodies[0].name])}, links


def model_pose_of_body(body, body_pose):
    """The model frame's pose in the world when the rigid body `body` (Model.bodies()) is
    at `body_pose` (its root link's pose in the world)."""
    return body_pose * body.pose.inverse()


def spawn_pose(model_pose, initial_pose, frame=Pose()):
    """Where SpawnModel puts a model: its own <pose> composed after `initial_pose`, which is
    given in `frame` (the reference frame's Pose in the world), as gazebo_ros does."""
    return frame * initial_pose * model_pose


def placed_collisions(model, pose=None, frame=Pose()):
    """Every collision of `model` at `pose` (default: its own) with its pose in `frame` (a
    Pose in the world: Pose() for the world, ROBOT_POSE for the robot's base) and its name
    scoped "model::link::collision" — the static obstacles a backend places."""
    pose = model.pose if pose is None else pose
    to_frame = frame.inverse() * pose
    return tuple(Collision('%s::%s' % (scoped(model.name, link.name), c.name),
                           to_frame * link.pose * c.pose, c.geometry, c.friction)
                 for link in model.links for c in link.collisions)


def obstacle_model(name, shape, size, pose_in_base, robot_pose=ROBOT_POSE):
    """The static world model of a sim-control obstacle (/intera_rt/sim/add_obstacle: a box
    of 3 edge lengths or a sphere of (radius,), placed in `base`), so that obstacles and
    spawned models are one scene. WorldError naming a bad field."""
    if shape == 'box':
        geometry = Box(positive(size, 3, 'size'))
    elif shape == 'sphere':
        geometry = Sphere(positive(size, 1, 'size')[0])
    else:
        raise WorldError("shape: expected 'box' or 'sphere', got %r" % (shape,))
    link = Link('link', Pose(), None, (Collision('collision', Pose(), geometry),),
                (Visual('visual', Pose(), geometry),))
    return check_model(Model(name, (link,), (), base_to_world(pose_in_base, robot_pose), True, 'sdf'))
