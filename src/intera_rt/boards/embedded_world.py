"""The embedded plant's world (boards capability 'world'): spawned models and the gripper's
fingers, kinematic rather than dynamic, in the robot's base frame.

Static (anchored) models are obstacles: their collisions become the plant's obstacle shapes
(EmbeddedBoards places them; the arm is pushed out of them as out of add_obstacle's boxes).
A model that is not static moves as one rigid unit: it rests where it is supported, falls
under gravity (its orientation kept) onto the highest supporting surface below its footprint
— the top of a static model's collision box (axis-aligned in base) or the floor (world
z = 0) — slides under applied body wrenches against Coulomb friction (its collisions' mu),
and, once the fingers close on it, follows the gripper tip rigidly until they open again.
Torques and rotation by contact are not modelled (MuJoCo does that: docs/world.md).

The fingers (when the robot's model has `right_gripper_tip`) move toward the commanded
separation at the commanded speed; closing on a model whose extent across the fingers fits
between them stops them at that width and grips it. No ROS, no clock: `step(dt, tip)`.
"""
import math

import numpy as np

from intera_rt.boards.base import BodyState, GripperState
from intera_rt.io.gripper import MAX_POSITION
from intera_rt.world.frames import ROBOT_POSE
from intera_rt.world.model import Pose, WorldError

GRAVITY = np.array((0.0, 0.0, -9.81))      # m/s², in base (base is level in the world)
FLOOR_Z = -ROBOT_POSE.position[2]           # the world's z = 0 plane, in base
# The fingers' reach in the tip frame (right_gripper_tip; they slide along its y axis): from
# the gripper's palm to just past the tip (urdf/fragments/electric_gripper.urdf's figures).
FINGER_Z = (-0.082, 0.008)                  # m
CONTACT_SLACK = 0.002                       # m a resting model may sink into its support
RELEASE_GAP = 0.001                         # m the fingers open past a held model to drop it


def _matrix(pose):
    return pose.matrix()


def _pose(m):
    """A 4×4 transform as a Pose, without KDL (body_states runs on the realtime tick):
    Shepperd's method, stable for any rotation."""
    r = m[:3, :3]
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0.0:
        k = 2.0 * math.sqrt(trace + 1.0)
        q = ((r[2, 1] - r[1, 2]) / k, (r[0, 2] - r[2, 0]) / k, (r[1, 0] - r[0, 1]) / k, 0.25 * k)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        k = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = (0.25 * k, (r[0, 1] + r[1, 0]) / k, (r[0, 2] + r[2, 0]) / k, (r[2, 1] - r[1, 2]) / k)
    elif r[1, 1] > r[2, 2]:
        k = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 1] + r[1, 0]) / k, 0.25 * k, (r[1, 2] + r[2, 1]) / k, (r[0, 2] - r[2, 0]) / k)
    else:
        k = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[0, 2] + r[2, 0]) / k, (r[1, 2] + r[2, 1]) / k, 0.25 * k, (r[1, 0] - r[0, 1]) / k)
    n = math.sqrt(sum(v * v for v in q))
    return Pose((float(m[0, 3]), float(m[1, 3]), float(m[2, 3])), tuple(float(v / n) for v in q))


def _points(collision):
    """Points bounding one collision's geometry (its own frame): what extents are taken of."""
    g = collision.geometry
    kind = g.kind
    if kind == 'box':
        h = 0.5 * np.asarray(g.size)
        return np.array([(sx * h[0], sy * h[1], sz * h[2])
                         for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    if kind == 'sphere':
        r = g.radius
        return np.vstack([np.eye(3) * r, -np.eye(3) * r])
    if kind == 'cylinder':
        a = np.linspace(0.0, 2 * math.pi, 12, endpoint=False)
        ring = np.column_stack([g.radius * np.cos(a), g.radius * np.sin(a)])
        half = 0.5 * g.length
        return np.vstack([np.column_stack([ring, np.full(len(a), z)]) for z in (-half, half)])
    if kind == 'mesh':
        return np.asarray(g.hull_vertices, dtype=float)
    return np.zeros((0, 3))                 # a plane bounds nothing


class Placed:
    """One spawned model on the plant: where its frame is (4×4, base), how it moves."""

    def __init__(self, model, frame):
        self.model = model
        self.bodies = model.bodies()
        self.static = model.anchored
        self.frame = frame                  # model frame in base (replaced, never written into)
        self.states, self.states_of = [], None   # body_states of `frame` (its velocity with it)
        self.velocity = np.zeros(3)         # m/s, base
        self.resting = True
        self.grip = None                    # 4×4 model frame in the tip frame, while held
        self.wrenches = []                  # [body, force 3, remaining s (inf: until cleared)]
        self.body_offsets = [_matrix(b.pose) for b in self.bodies]
        # Every collision's bounding points in the model frame, and the friction it slides with.
        pts, mus = [], []
        for body, offset in zip(self.bodies, self.body_offsets):
            for c in body.collisions:
                p = _points(c)
                if len(p):
                    pts.append(p @ c.pose.rotation.T + np.asarray(c.pose.position))
                    pts[-1] = pts[-1] @ offset[:3, :3].T + offset[:3, 3]
                mus.append(min(c.friction.mu, c.friction.mu2))
        self.points = np.vstack(pts) if pts else np.zeros((1, 3))
        self.mu = min(mus) if mus else 1.0
        self.mass = sum(b.inertial.mass for b in self.bodies if b.inertial is not None) or 1.0

    def points_in_base(self):
        return self.points @ self.frame[:3, :3].T + self.frame[:3, 3]

    def box(self):
        """The axis-aligned bounds in base: (min xyz, max xyz)."""
        p = self.points_in_base()
        return p.min(axis=0), p.max(axis=0)


class EmbeddedWorld:
    """The spawned models and the fingers. `has_gripper`: the robot's model carries one."""

    def __init__(self, has_gripper=False):
        self.models = {}                    # name → Placed, in the order spawned
        self.has_gripper = has_gripper
        self.separation = MAX_POSITION      # m, the fingers' gap
        self.target, self.speed, self.force = MAX_POSITION, 0.0, 0.0
        self.held = ''                      # the model between the fingers

    # --- the boards' world calls ----------------------------------------------------------
    def spawn(self, model, pose):
        if model.name in self.models:
            raise WorldError('model_name: a model named %r already exists' % model.name)
        placed = Placed(model, _matrix(pose))
        self.models[model.name] = placed
        if not placed.static:
            self._settle(placed)
        return placed

    def delete(self, name):
        placed = self._get(name)
        del self.models[name]
        if self.held == name:
            self.held = ''
        self._wake()
        return placed

    def set_state(self, name, pose, twist):
        placed = self._get(name)
        placed.frame = _matrix(pose)
        if placed.static:
            return placed
        placed.grip = None
        if self.held == name:
            self.held = ''
        placed.velocity = np.asarray(twist[:3], dtype=float)
        self._wake()
        self._settle(placed)
        return placed

    def body_states(self):
        out = []
        for name, placed in self.models.items():
            if placed.states_of is not placed.frame:        # (moved since: computed again)
                twist = tuple(float(v) for v in placed.velocity) + (0.0, 0.0, 0.0)
                placed.states = [BodyState(name, body.name, _pose(placed.frame @ offset), twist)
                                 for body, offset in zip(placed.bodies, placed.body_offsets)]
                placed.states_of = placed.frame
            out.extend(placed.states)
        return tuple(out)

    def apply_wrench(self, model, body, force, duration):
        placed = self._get(model)
        if body not in [b.name for b in placed.bodies]:
            raise KeyError('body %r: model %r has no such body (its bodies: %s)'
                           % (body, model, ', '.join(b.name for b in placed.bodies)))
        placed.wrenches.append([body, np.asarray(force, dtype=float),
                                math.inf if duration < 0 else float(duration)])
        if not placed.static:
            placed.resting = False

    def clear_wrenches(self, model, body):
        placed = self._get(model)
        placed.wrenches = [w for w in placed.wrenches if w[0] != body]

    def command_gripper(self, command):
        self.target = min(max(float(command.separation), 0.0), MAX_POSITION)
        self.speed, self.force = max(0.0, float(command.speed)), max(0.0, float(command.force))

    def gripper_state(self):
        if not self.has_gripper:
            return None
        return GripperState(self.separation, self.held, self.force if self.held else 0.0)

    def _get(self, name):
        try:
            return self.models[name]
        except KeyError:
            raise KeyError('model_name: no model named %r (models: %s)'
                           % (name, ', '.join(self.models) or 'none')) from None

    # --- motion ----------------------------------------------------------------------------
    def step(self, dt, tip=None):
        """Let dt s pass. `tip`: the gripper tip's 4×4 pose in base (None without a gripper)."""
        if tip is not None:
            self._fingers(dt, tip)
        for placed in self.models.values():
            if placed.static:
                continue
            if placed.wrenches:
                for w in placed.wrenches:
                    w[2] -= dt
                placed.wrenches = [w for w in placed.wrenches if w[2] > 0.0]
            if placed.grip is not None:
                placed.frame = tip @ placed.grip
            elif not placed.resting:
                self._fly(placed, dt)

    def _fingers(self, dt, tip):
        held = self.models.get(self.held)
        if held is not None and self.target > self.separation + RELEASE_GAP:
            # Opening: the model drops from where it is.
            held.grip, held.resting, held.velocity = None, False, np.zeros(3)
            self.held = ''
        travel = self.speed * dt
        if self.held:
            return                          # squeezing the held model: the fingers stay
        if self.target < self.separation:
            new = max(self.target, self.separation - travel)
            width, name = self._between(tip, self.separation)
            if name and new <= width:
                self.separation, self.held = width, name
                placed = self.models[name]
                placed.grip = np.linalg.inv(tip) @ placed.frame
                placed.velocity = np.zeros(3)
                return
            self.separation = new
        else:
            self.separation = min(self.target, self.separation + travel)

    def _between(self, tip, gap):
        """(width across the fingers, name) of the narrowest movable model between the open
        fingers at `tip`, or (0, '')."""
        to_tip = np.linalg.inv(tip)
        best = (0.0, '')
        for name, placed in self.models.items():
            if placed.static:
                continue
            p = placed.points_in_base() @ to_tip[:3, :3].T + to_tip[:3, 3]
            lo, hi = p.min(axis=0), p.max(axis=0)
            # The tip's x within the model, the fingers' height overlapping it, and the model
            # wholly inside the gap across y.
            if not (lo[0] <= 0.0 <= hi[0] and lo[2] <= FINGER_Z[1] and hi[2] >= FINGER_Z[0]):
                continue
            if lo[1] < -0.5 * gap - CONTACT_SLACK or hi[1] > 0.5 * gap + CONTACT_SLACK:
                continue
            width = float(hi[1] - lo[1])
            if not best[1] or width < best[0]:
                best = (width, name)
        return best

    def _support(self, placed):
        """The height (base z) of the highest surface under `placed`'s footprint that lies
        at or below its lowest point: a static model's top or the floor."""
        lo, hi = placed.box()
        best = FLOOR_Z
        for other in self.models.values():
            if other is placed or not (other.static or other.resting) or other.grip is not None:
                continue
            olo, ohi = other.box()
            # (a surface it was spawned or set a little into holds it up, as contact would)
            if olo[0] < hi[0] and ohi[0] > lo[0] and olo[1] < hi[1] and ohi[1] > lo[1] \
                    and ohi[2] <= lo[2] + max(CONTACT_SLACK, 0.5 * (hi[2] - lo[2])):
                best = max(best, float(ohi[2]))
        return best, float(lo[2])

    def _wake(self):
        """The scene changed: every free model looks at its support again."""
        for placed in self.models.values():
            if not placed.static and placed.grip is None:
                placed.resting = False

    def _settle(self, placed):
        """Resting when on a surface and still; else falling."""
        support, bottom = self._support(placed)
        placed.resting = bottom - support <= CONTACT_SLACK and not placed.velocity.any() \
            and not placed.wrenches

    def _fly(self, placed, dt):
        """One step of a free model: gravity, applied forces, its support's normal force and
        Coulomb friction."""
        force = placed.mass * GRAVITY
        for _, f, _ in placed.wrenches:
            force = force + f
        support, bottom = self._support(placed)
        if bottom < support:                # pushed out of a surface it was put into
            placed.frame = placed.frame.copy()
            placed.frame[2, 3] += support - bottom
            bottom = support
        on_surface = bottom - support <= CONTACT_SLACK
        v = placed.velocity + dt * force / placed.mass
        if on_surface and v[2] <= 0.0:
            # Touching (within the slack) and not lifting off: on the surface itself, not
            # hovering where this step's fall happened to end.
            placed.frame = placed.frame.copy()
            placed.frame[2, 3] -= bottom - support
            bottom = support
            normal = max(0.0, -force[2])
            v[2] = 0.0
            horizontal = v[:2]
            speed = float(np.hypot(*horizontal))
            slow = placed.mu * normal / placed.mass * dt
            v[:2] = 0.0 if speed <= slow else horizontal * (1.0 - slow / speed)
        placed.frame = placed.frame.copy()
        placed.frame[:3, 3] += dt * v
        if on_surface or v[2] < 0.0:
            # (the surface it was over, not one it has already sunk past this step)
            bottom = bottom + dt * v[2]
            if bottom < support:            # landed: on the surface, no bounce
                placed.frame[2, 3] += support - bottom
                bottom, v[2] = support, 0.0
        placed.velocity = v
        if bottom <= support + CONTACT_SLACK and not v.any() and not placed.wrenches:
            placed.resting = True
