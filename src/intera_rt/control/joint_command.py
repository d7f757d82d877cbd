"""Validation of a JointCommand's content that every joint-command controller shares: the
names, the arrays its mode reads, their lengths and finiteness, positions within limits.
Each controller adds the checks of its own mode."""
import numpy as np

from intera_rt.control.arm import LIMIT_SLACK
from intera_rt.control.base import CommandRejected
from intera_rt.native import kernels
from intera_rt.numeric import clip, count_nonzero

MODE_NAMES = 'POSITION_MODE=1, VELOCITY_MODE=2, TORQUE_MODE=3, TRAJECTORY_MODE=4'
IGNORED, OPTIONAL, REQUIRED = 0, 1, 2       # how a mode reads one of a command's arrays


class ParsedCommand:
    """A valid command: its `joints` (Joints; `idx` and `names` are theirs), and the arrays
    the mode reads (float arrays, one value per named joint in the command's order; None for
    an array it ignores or an optional one left empty). `stamp` as JointCommand's."""

    __slots__ = ('joints', 'idx', 'names', 'position', 'velocity', 'acceleration', 'effort',
                 'stamp')

    def __init__(self, *, joints, position=None, velocity=None, acceleration=None,
                 effort=None, stamp=None):
        self.joints, self.idx, self.names, self.stamp = joints, joints.idx, joints.names, stamp
        self.position, self.velocity = position, velocity
        self.acceleration, self.effort = acceleration, effort


def parse(arm, cmd, *, position=IGNORED, velocity=IGNORED, acceleration=IGNORED,
          effort=IGNORED):
    """Check `cmd` (control.commands.JointCommand) for the arrays its mode reads, each
    IGNORED, OPTIONAL (may also be empty) or REQUIRED (exactly one value per name). Arrays
    the mode ignores may hold anything (the SDK reuses one message across modes); they are
    checked in field order. Returns a ParsedCommand; raises CommandRejected."""
    joints = arm.joints(cmd.names)
    names = joints.names
    pos = _array('position', cmd.position, names, position)
    vel = _array('velocity', cmd.velocity, names, velocity)
    acc = _array('acceleration', cmd.acceleration, names, acceleration)
    eff = _array('effort', cmd.effort, names, effort)
    if pos is not None:
        lo, hi = joints.lower, joints.upper
        inside = None if kernels is None else kernels.within_limits(pos, lo, hi, LIMIT_SLACK)
        if inside is None:
            out = (pos < lo - LIMIT_SLACK) | (pos > hi + LIMIT_SLACK)
            if count_nonzero(out):
                j = int(np.argmax(out))
                raise CommandRejected('position %s for %s is outside its limits [%.4f, %.4f]'
                                      % (_angle(pos[j]), names[j], lo[j], hi[j]),
                                      'position-limit')
            inside = clip(pos, lo, hi)
        pos = inside
    return ParsedCommand(joints=joints, position=pos, velocity=vel, acceleration=acc,
                         effort=eff, stamp=cmd.stamp)


def _array(label, values, names, how):
    """One array of the command as floats; None when ignored, or optional and empty."""
    if how == IGNORED or (how == OPTIONAL and len(values) == 0):
        return None
    # (the compiled kernels take a tuple or list of finite floats, one per name, in one call)
    arr = None if kernels is None else kernels.joint_values(values, len(names))
    if arr is not None:
        return arr
    if len(values) != len(names):
        # More values than names is as ambiguous as fewer: which joint were they for?
        raise CommandRejected('%s has %d values for %d names' % (label, len(values), len(names)),
                              'length')
    arr = np.array(values, dtype=float)
    bad = ~np.isfinite(arr)
    if np.count_nonzero(bad):
        j = int(np.argmax(bad))
        raise CommandRejected('%s[%d] for %s is %r' % (label, j, names[j], arr[j]), 'not-finite')
    return arr


def saturate(label, values, lim, names, warnings, digits=3):
    """`values` (None: not sent) within ±lim (the command's joints' limits): the same
    array when within, else clipped with a warning naming the joint furthest past its limit
    (`digits` decimals, as the mode's unit reads)."""
    if values is None:
        return None
    over = None if kernels is None else kernels.any_above(values, lim)
    if over is None:
        over = count_nonzero(np.abs(values) > lim)
    if not over:
        return values
    j = int(np.argmax(np.abs(values) - lim))
    warnings.append('%s %.*f for %s saturated at %.*f'
                    % (label, digits, values[j], names[j], digits, lim[j]))
    return clip(values, -lim, lim)


def _angle(value):
    """An angle for a log line: 4 decimals, or 6 significant digits when huge (1e308 must
    not print 300 digits)."""
    return '%.4f' % value if abs(value) < 1e4 else '%.6g' % value
