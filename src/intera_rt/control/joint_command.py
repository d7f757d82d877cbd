"""Validation of a JointCommand's content that every joint-command controller shares: the
names, the arrays its mode reads, their lengths and finiteness, positions within limits.
Each controller adds the checks of its own mode."""
import numpy as np

from intera_rt.control.arm import LIMIT_SLACK
from intera_rt.control.base import CommandRejected
from intera_rt.numeric import clip

MODE_NAMES = 'POSITION_MODE=1, VELOCITY_MODE=2, TORQUE_MODE=3, TRAJECTORY_MODE=4'


class ParsedCommand:
    """A valid command: joint indices (into right_j0..6) and the arrays, one value per
    named joint, in the command's order."""

    __slots__ = ('idx', 'names', 'arrays', 'stamp')

    def __init__(self, idx, names, arrays, stamp):
        self.idx, self.names, self.arrays, self.stamp = idx, names, arrays, stamp


def parse(arm, cmd, required, optional=()):
    """Check `cmd` (control.commands.JointCommand) for the fields a mode reads: `required`
    must hold exactly one value per name, `optional` may also be empty. Arrays the mode does
    not read may hold anything (the SDK reuses one message across modes). Raises
    CommandRejected."""
    names = list(cmd.names)
    if not names:
        raise CommandRejected('names is empty', 'names')
    idx = []
    for name in names:
        j = arm.index.get(name)
        if j is None:
            raise CommandRejected('unknown joint name %r' % (name,), 'names')
        if j in idx:
            raise CommandRejected('joint %r named twice' % (name,), 'names')
        idx.append(j)
    arrays = {}
    for fld in required + optional:
        values = getattr(cmd, fld)
        if fld in optional and len(values) == 0:
            continue
        if len(values) != len(names):
            # More values than names is as ambiguous as fewer: which joint were they for?
            raise CommandRejected('%s has %d values for %d names' % (fld, len(values), len(names)),
                                  'length')
        arr = np.array(values, dtype=float)
        bad = ~np.isfinite(arr)
        if np.count_nonzero(bad):
            j = int(np.argmax(bad))
            raise CommandRejected('%s[%d] for %s is %r' % (fld, j, names[j], arr[j]), 'not-finite')
        arrays[fld] = arr
    idx = np.array(idx)
    if 'position' in arrays:
        pos = arrays['position']
        lo, hi = arm.lower[idx], arm.upper[idx]
        out = (pos < lo - LIMIT_SLACK) | (pos > hi + LIMIT_SLACK)
        if np.count_nonzero(out):
            j = int(np.argmax(out))
            raise CommandRejected('position %s for %s is outside its limits [%.4f, %.4f]'
                                  % (_angle(pos[j]), names[j], lo[j], hi[j]), 'position-limit')
        arrays['position'] = clip(pos, lo, hi)
    return ParsedCommand(idx, names, arrays, cmd.stamp)


def _angle(value):
    """An angle for a log line: 4 decimals, or 6 significant digits when huge (1e308 must
    not print 300 digits)."""
    return '%.4f' % value if abs(value) < 1e4 else '%.6g' % value
