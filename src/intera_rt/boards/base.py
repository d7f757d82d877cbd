"""The joint-boards interface between the realtime loop and the arm.

Each cycle the loop reads joint positions, velocities and measured (transmitted) torques and
writes one torque per joint. Simulated backends also take the sim-control inputs (external
wrench, pose reset, obstacles in the cell) and report the simulation's truth (contacts);
hardware refuses what it cannot do and says so.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

# Obstacle shapes and how many size values each takes: a box's 3 full edge lengths, a
# sphere's radius (m).
OBSTACLE_SHAPES = {'box': 3, 'sphere': 1}
MAX_OBSTACLE_SIZE = 10.0     # m: any larger is a typo (mm for m), not a workcell


@dataclass
class BoardsReading:
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray     # torque each joint transmits to its link (SEA deflection on the robot)


class Obstacle(NamedTuple):
    """A fixed obstacle in the simulated cell, as placed (quaternion normalised)."""
    name: str
    shape: str               # 'box' or 'sphere'
    position: tuple          # m, in base: the box's centre, the sphere's centre
    quaternion: tuple        # x, y, z, w; unit; in base
    size: tuple              # box: 3 full edge lengths along its own axes (m); sphere: (radius,)


class Contact(NamedTuple):
    """One contact between a link of the arm (or head) and an obstacle, at one physics step:
    the simulation's ground truth."""
    obstacle: str            # the obstacle's name
    link: str                # the link whose collision shape touches it, e.g. 'right_hand'
    depth: float             # m the shapes overlap (> 0)
    force: np.ndarray        # N, in base: what the obstacle pushes the link with (along the
                             # contact normal, away from the obstacle; zero while separating)
    point: np.ndarray        # m, in base: the link's point deepest in the obstacle, where
                             # the force acts


def _vector(field, value, n, what):
    """`value` as n finite floats, or ValueError naming the field."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError('obstacle %s must be %s, got %r' % (field, what, value)) from None
    if arr.shape != (n,):
        raise ValueError('obstacle %s must be %s, got %r' % (field, what, value))
    if np.count_nonzero(~np.isfinite(arr)):
        raise ValueError('obstacle %s must be finite, got %r' % (field, arr.tolist()))
    return arr


def check_obstacle(name, shape, position, quaternion, size):
    """Validate add_obstacle's arguments (see JointBoards.add_obstacle) and return the
    Obstacle record, quaternion normalised. ValueError naming field and value otherwise."""
    if not isinstance(name, str) or not name:
        raise ValueError('obstacle name must be a non-empty string, got %r' % (name,))
    if not isinstance(shape, str) or shape not in OBSTACLE_SHAPES:
        raise ValueError('obstacle shape must be one of %s, got %r'
                         % (', '.join(repr(s) for s in OBSTACLE_SHAPES), shape))
    what = ('3 full edge lengths (m)' if shape == 'box' else '[radius] (m)') + ' for a ' + shape
    size = _vector('size', size, OBSTACLE_SHAPES[shape], what)
    if np.count_nonzero(size <= 0.0):
        raise ValueError('obstacle size must be > 0 m, got %r' % (size.tolist(),))
    if np.count_nonzero(size > MAX_OBSTACLE_SIZE):
        raise ValueError('obstacle size must be at most %g m, got %r'
                         % (MAX_OBSTACLE_SIZE, size.tolist()))
    position = _vector('position', position, 3, '3 coordinates (m, in base)')
    quaternion = _vector('quaternion', quaternion, 4, '4 values (x, y, z, w)')
    norm = math.sqrt(float(quaternion @ quaternion))
    if norm < 1e-9:
        raise ValueError('obstacle quaternion must not be zero, got %r' % (quaternion.tolist(),))
    return Obstacle(name, shape, tuple(position.tolist()), tuple((quaternion / norm).tolist()),
                    tuple(size.tolist()))


class JointBoards:
    """Abstract plant. Joint order is `joint_names`, fixed at construction."""

    joint_names = ()
    simulated = False

    def read(self) -> BoardsReading:
        """The latest state. Its arrays may be the backend's own: callers must not write
        into them (copy first)."""
        raise NotImplementedError

    def write(self, torque):
        """Command one torque per joint for the coming cycle (saturated at effort limits)."""
        raise NotImplementedError

    def set_brakes(self, engaged):
        """Engaged brakes hold each joint where it is, whatever the commanded torque."""
        raise NotImplementedError

    def advance(self, dt):
        """Let dt seconds of plant time pass (simulation); hardware paces itself."""
        raise NotImplementedError

    # sim-control inputs; hardware backends refuse them
    def apply_wrench(self, link, wrench, duration):
        raise NotImplementedError('%s cannot apply external wrenches' % type(self).__name__)

    def reset_pose(self, positions):
        """Put the arm at `positions` at rest; drops external wrenches, keeps obstacles."""
        raise NotImplementedError('%s cannot be reset to a pose' % type(self).__name__)

    def add_obstacle(self, name, shape, position, quaternion, size):
        """Place a fixed obstacle in the cell, or move/reshape the one named `name`.

        Args:
            name: non-empty string; adding an existing name replaces that obstacle.
            shape: 'box' or 'sphere'.
            position: 3 floats (m), its centre in base.
            quaternion: 4 floats (x, y, z, w), its orientation in base; a non-unit (non-zero)
                quaternion is normalised.
            size: box: 3 full edge lengths (m) along its own axes; sphere: [radius] (m).
                Each in (0, 10] m.
        ValueError naming field and value on bad input (the cell is left as it was).
        """
        raise NotImplementedError('%s cannot place obstacles' % type(self).__name__)

    def remove_obstacle(self, name):
        """Take obstacle `name` out of the cell; KeyError naming it when there is none."""
        raise NotImplementedError('%s cannot remove obstacles' % type(self).__name__)

    def obstacles(self):
        """The obstacles in the cell: a list of Obstacle records, in the order first added."""
        raise NotImplementedError('%s has no obstacles' % type(self).__name__)

    def contacts(self):
        """The contacts of the latest physics step: a list of Contact records."""
        raise NotImplementedError('%s cannot report contacts' % type(self).__name__)


def _embedded(model, **kw):
    from intera_rt.boards.embedded import EmbeddedBoards
    return EmbeddedBoards(model, **kw)


BACKENDS = {'embedded': _embedded}


def check_backend(name):
    """ValueError naming the choices when there is no backend `name`."""
    if name not in BACKENDS:
        raise ValueError('unknown backend %r; available: %s' % (name, ', '.join(sorted(BACKENDS))))


def make_boards(name, model, **kw):
    check_backend(name)
    return BACKENDS[name](model, **kw)
