"""The joint-boards interface between the realtime loop and the arm.

Each cycle the loop reads joint positions, velocities and measured (transmitted) torques and
writes one torque per joint. Simulated backends also take the sim-control inputs (external
wrench, pose reset); hardware ignores what it cannot do and says so.
"""
from dataclasses import dataclass

import numpy as np


@dataclass
class BoardsReading:
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray     # torque each joint transmits to its link (SEA deflection on the robot)


class JointBoards:
    """Abstract plant. Joint order is `joint_names`, fixed at construction."""

    joint_names = ()
    simulated = False

    def read(self) -> BoardsReading:
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
        raise NotImplementedError('%s cannot be reset to a pose' % type(self).__name__)


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
