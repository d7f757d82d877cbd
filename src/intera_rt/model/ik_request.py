"""An IK/FK request and its answer, checked and typed: the seed modes and result codes of
SolvePositionIK, the tolerances a solution is accepted within, the errors a bad request
raises (each naming the field and the value) and IKResult. No ROS here.
"""
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import PyKDL as kdl

from intera_rt.robot import ARM_JOINTS

# Seed modes (SolvePositionIK.seed_mode); IKResult.result_type is the mode of the seed the
# solution came from (SEED_NS_MAP without a nullspace goal is the current angles: SEED_CURRENT).
SEED_AUTO = 0       # the user's seed (if given), then the current angles, then the NS map
SEED_USER = 1       # the user's angles (any subset, any order; the rest from current)
SEED_CURRENT = 2    # the current angles
SEED_NS_MAP = 3     # the nullspace goal's angles (the rest from current)
SEED_MODES = (SEED_AUTO, SEED_USER, SEED_CURRENT, SEED_NS_MAP)
IK_FAILED = -1
IK_IN_COLLISION = -2
IK_ENDPOINT_DOES_NOT_EXIST = -3

POSITION_TOLERANCE = 1e-4          # m
ORIENTATION_TOLERANCE = 1e-3       # rad
QUATERNION_NORM_TOLERANCE = 1e-3   # |‖q‖ − 1| accepted (then normalised)
DEFAULT_NULLSPACE_GAIN = 0.4       # the SDK's default


class UnknownTipError(LookupError):
    """The requested tip is not a frame of the model, or not on the arm."""


class IKInputError(ValueError):
    """A request field is malformed (NaN, non-unit quaternion, bad joint name, ...).
    The message names the field and the value."""


@dataclass
class IKResult:
    result_type: int                    # > 0 seed mode that produced the solution, < 0 failure
    q: Optional[np.ndarray] = None      # the 7 arm angles (ARM_JOINTS order), None on failure
    seed: str = ''                      # 'user', 'current' or 'ns_map' (+ ', perturbed')
    attempts: int = 0                   # seeds + restarts tried
    position_error: float = math.inf    # m
    orientation_error: float = math.inf  # rad
    message: str = ''

    @property
    def ok(self):
        return self.result_type > 0

    @property
    def joints(self):
        return dict(zip(ARM_JOINTS, self.q)) if self.q is not None else {}


def validate_pose(position, quaternion, field='pose'):
    """(position[3], quaternion xyzw[4]) → KDL frame; IKInputError naming the bad field."""
    p = np.asarray(position, dtype=float).reshape(-1)
    r = np.asarray(quaternion, dtype=float).reshape(-1)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise IKInputError('%s.position: expected 3 finite numbers, got %s' % (field, _fmt(position)))
    if r.shape != (4,) or not np.all(np.isfinite(r)):
        raise IKInputError('%s.orientation: expected a finite quaternion (x, y, z, w), got %s'
                           % (field, _fmt(quaternion)))
    norm = math.sqrt(float(r @ r))
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise IKInputError('%s.orientation: quaternion (x, y, z, w) = %s has norm %.6g, expected 1'
                           % (field, _fmt(quaternion), norm))
    r = r / norm
    return kdl.Frame(kdl.Rotation.Quaternion(*r), kdl.Vector(*p))


def _fmt(values):
    try:
        return '(%s)' % ', '.join('%.6g' % float(v) for v in values)
    except (TypeError, ValueError):
        return repr(values)


def joint_values(names, positions, field, allowed=ARM_JOINTS):
    """A JointState-like (names, positions) → {joint: angle} for the joints in `allowed`;
    other names are ignored (e.g. head_pan in a seed). IKInputError on a length mismatch
    or a non-finite value of an allowed joint."""
    names = list(names)
    positions = list(positions)
    if len(names) != len(positions):
        raise IKInputError('%s: %d names but %d positions' % (field, len(names), len(positions)))
    out = {}
    for name, value in zip(names, positions):
        if name not in allowed:
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise IKInputError('%s: %s = %r is not a number' % (field, name, value))
        if not math.isfinite(value):
            raise IKInputError('%s: %s = %r is not finite' % (field, name, value))
        out[name] = value
    return out
