"""The interaction_control_command's parameters (seed 000's field documentation), as the
interaction controller (control.interaction) applies them: `parse` validates an
InteractionCommand into InteractionParams — per-axis arrays after caps and defaults — and the
notes on what was capped or defaulted; a wrong length, a negative gain, NaN, an unknown mode
or endpoint, an interaction_frame orientation that is no unit quaternion is refused
(CommandRejected naming the field and value) and the arm keeps what it does.

    K_impedance     ≥ 0, capped at K_CAP; empty: the caps. max_impedance: per axis, the
                    stiffness the joint controllers have there at this pose (the controller
                    evaluates it). D_impedance ≥ 0; empty: scaled with stiffness.
    K_nullspace     7 values ≥ 0, capped at K_NULLSPACE_CAP; empty: the SDK's default.
    force_command   capped at ±FORCE_CAP; empty: zeros.
    interaction_control_mode   1..4 per axis; empty: IMPEDANCE_MODE on all.
    interaction_frame   its orientation sets the axes (in base, or relative to right_hand
                    when in_endpoint_frame, where its position is a tool point); all-zero: the
                    identity. endpoint_name: right_hand (or empty) only, as on the robot.
"""
import math

import numpy as np
import pinocchio as pin

from intera_rt.control.base import CommandRejected
from intera_rt.numeric import clip

IMPEDANCE, FORCE, IMPEDANCE_WITH_FORCE_LIMIT, FORCE_WITH_MOTION_LIMIT = 1, 2, 3, 4
MODE_NAMES = {IMPEDANCE: 'IMPEDANCE_MODE', FORCE: 'FORCE_MODE',
              IMPEDANCE_WITH_FORCE_LIMIT: 'IMPEDANCE_WITH_FORCE_LIMIT_MODE',
              FORCE_WITH_MOTION_LIMIT: 'FORCE_WITH_MOTION_LIMIT_MODE'}
SHORT_MODE = {IMPEDANCE: 'imp', FORCE: 'force', IMPEDANCE_WITH_FORCE_LIMIT: 'imp-flim',
              FORCE_WITH_MOTION_LIMIT: 'force-mlim'}
AXES = ('x', 'y', 'z', 'rx', 'ry', 'rz')
ENDPOINT = 'right_hand'

K_CAP = np.array([1300.0] * 3 + [30.0] * 3)              # N/m, N·m/rad
K_MAX_RANGE = (np.array([1300.0] * 3 + [30.0] * 3), np.array([3000.0] * 3 + [300.0] * 3))
D_SCALE = np.array([8.0] * 3 + [2.0] * 3)                # default D = D_SCALE·√K
FORCE_CAP = np.array([50.0] * 3 + [5.0] * 3)             # N, N·m
K_NULLSPACE_CAP = 10.0                                   # N·m/rad
K_NULLSPACE_DEFAULT = 4.0

UNITS = ('N/m',) * 3 + ('N·m/rad',) * 3
FORCE_UNITS = ('N',) * 3 + ('N·m',) * 3
QUATERNION_NORM_TOLERANCE = 1e-3


class InteractionParams:
    """A validated InteractionCommand: per-axis arrays (x, y, z, rx, ry, rz) after caps and
    defaults (D None: scaled with stiffness), the frame as a rotation and a point."""
    __slots__ = ('cmd', 'mode', 'K', 'max_impedance', 'D', 'K_nullspace', 'force',
                 'frame_rotation', 'frame_position', 'in_endpoint_frame', 'damp_force',
                 'reset_reference', 'free_rotations')

    def __init__(self, cmd, mode, K, max_impedance, D, K_nullspace, force, frame_rotation,
                 frame_position):
        self.cmd = cmd
        self.mode, self.K, self.max_impedance, self.D = mode, K, max_impedance, D
        self.K_nullspace, self.force = K_nullspace, force
        self.frame_rotation, self.frame_position = frame_rotation, frame_position
        self.in_endpoint_frame = bool(cmd.in_endpoint_frame)
        self.damp_force = not cmd.disable_damping_in_force_control
        self.reset_reference = not cmd.disable_reference_resetting
        self.free_rotations = bool(cmd.rotations_for_constrained_zeroG)


def _fmt(values):
    return '[%s]' % ', '.join('%g' % v for v in values)


def _vector(cmd, name, n, default, notes, default_text):
    """cmd.<name> as n finite floats, or `default` (noted) when empty."""
    values = getattr(cmd, name)
    if len(values) == 0:
        if default_text:
            notes.append('%s empty: %s' % (name, default_text))
        return np.array(default, dtype=float)
    if len(values) != n:
        raise CommandRejected('%s has %d values, expected %d (or none for the default)'
                              % (name, len(values), n), 'length')
    try:
        arr = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        raise CommandRejected('%s holds a value that is not a number: %r' % (name, list(values)),
                              'not-finite') from None
    bad = ~np.isfinite(arr)
    if np.count_nonzero(bad):
        i = int(np.argmax(bad))
        raise CommandRejected('%s[%d] is %r' % (name, i, arr[i]), 'not-finite')
    return arr


def _nonnegative(name, arr):
    neg = arr < 0.0
    if np.count_nonzero(neg):
        i = int(np.argmax(neg))
        raise CommandRejected('%s[%d] = %g must be >= 0' % (name, i, arr[i]), 'negative')


def parse(cmd):
    """Validate an InteractionCommand (interaction_control_active true): its
    InteractionParams and the notes on what was capped or defaulted. Raises CommandRejected
    naming the field and value at fault."""
    notes = []
    endpoint = cmd.endpoint_name
    if endpoint not in ('', ENDPOINT):
        raise CommandRejected('endpoint_name %r is not supported: interaction control acts at '
                              '%s (the robot does not allow changing it)' % (endpoint, ENDPOINT),
                              'endpoint')
    modes = cmd.interaction_control_mode
    if len(modes) == 0:
        notes.append('interaction_control_mode empty: IMPEDANCE_MODE on every axis')
        mode = np.full(6, IMPEDANCE)
    elif len(modes) != 6:
        raise CommandRejected('interaction_control_mode has %d values, expected 6 (or none for '
                              'the default)' % len(modes), 'length')
    else:
        mode = np.zeros(6, dtype=int)
        for i, m in enumerate(modes):
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or int(m) not in MODE_NAMES:
                raise CommandRejected('interaction_control_mode[%d] = %r is not one of '
                                      'IMPEDANCE_MODE (1), FORCE_MODE (2), '
                                      'IMPEDANCE_WITH_FORCE_LIMIT_MODE (3), '
                                      'FORCE_WITH_MOTION_LIMIT_MODE (4)' % (i, m), 'mode')
            mode[i] = int(m)
    K = _vector(cmd, 'K_impedance', 6, K_CAP, notes, 'the caps, %s' % _fmt(K_CAP))
    _nonnegative('K_impedance', K)
    for i in np.flatnonzero(K > K_CAP):
        notes.append('K_impedance[%d] = %g capped at %g %s' % (i, K[i], K_CAP[i], UNITS[i]))
    K = np.minimum(K, K_CAP)
    max_imp = cmd.max_impedance
    if len(max_imp) == 0:
        max_imp = np.zeros(6, dtype=bool)
    elif len(max_imp) != 6:
        raise CommandRejected('max_impedance has %d values, expected 6 (or none)' % len(max_imp),
                              'length')
    else:
        max_imp = np.array([bool(b) for b in max_imp])
    D = None
    if len(cmd.D_impedance):
        D = _vector(cmd, 'D_impedance', 6, None, notes, '')
        _nonnegative('D_impedance', D)
    K_ns = _vector(cmd, 'K_nullspace', 7, [K_NULLSPACE_DEFAULT] * 7, notes,
                   '%g N·m/rad on every joint' % K_NULLSPACE_DEFAULT)
    _nonnegative('K_nullspace', K_ns)
    for i in np.flatnonzero(K_ns > K_NULLSPACE_CAP):
        notes.append('K_nullspace[%d] = %g capped at %g N·m/rad' % (i, K_ns[i], K_NULLSPACE_CAP))
    K_ns = np.minimum(K_ns, K_NULLSPACE_CAP)
    force = _vector(cmd, 'force_command', 6, np.zeros(6), notes, '')
    for i in np.flatnonzero(np.abs(force) > FORCE_CAP):
        notes.append('force_command[%d] = %g capped at %g %s'
                     % (i, force[i], math.copysign(FORCE_CAP[i], force[i]), FORCE_UNITS[i]))
    force = clip(force, -FORCE_CAP, FORCE_CAP)
    pos = np.array(cmd.frame_position, dtype=float)
    quat = np.array(cmd.frame_orientation, dtype=float)          # x, y, z, w
    if pos.shape != (3,) or quat.shape != (4,):
        raise CommandRejected('interaction_frame needs a position (3) and an orientation (4)',
                              'frame')
    for name, arr, labels in (('position', pos, 'xyz'), ('orientation', quat, 'xyzw')):
        bad = ~np.isfinite(arr)
        if np.count_nonzero(bad):
            i = int(np.argmax(bad))
            raise CommandRejected('interaction_frame.%s.%s is %r' % (name, labels[i], arr[i]),
                                  'not-finite')
    norm = float(np.sqrt(quat @ quat))
    if norm == 0.0:
        notes.append('interaction_frame orientation is all zero: the identity')
        rotation = np.eye(3)
    elif abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise CommandRejected('interaction_frame.orientation (x, y, z, w) = %s is not a unit '
                              'quaternion (norm %.4f)' % (_fmt(quat), norm), 'frame')
    else:
        x, y, z, w = quat / norm
        rotation = pin.Quaternion(w, x, y, z).toRotationMatrix()
    if not cmd.in_endpoint_frame:
        pos = np.zeros(3)             # a frame fixed in base: its origin moves nothing
    return InteractionParams(cmd, mode, K, max_imp, D, K_ns, force, rotation, pos), notes


def describe(p):
    """One line on the parameters of `p` (logged when they are applied)."""
    parts = ['modes %s' % ' '.join('%s:%s' % (a, SHORT_MODE[m]) for a, m in zip(AXES, p.mode))]
    k = ['max' if mx else '%g' % v for v, mx in zip(p.K, p.max_impedance)]
    parts.append('K [%s]' % ', '.join(k))
    parts.append('D %s' % (_fmt(p.D) if p.D is not None else 'scaled with K'))
    parts.append('force %s' % _fmt(p.force))
    parts.append('K_nullspace %s' % _fmt(p.K_nullspace))
    parts.append('frame %s' % ('endpoint' if p.in_endpoint_frame else 'base'))
    flags = [name for name, on in (('no force damping', not p.damp_force),
                                   ('no reference resetting', not p.reset_reference),
                                   ('free rotations', p.free_rotations)) if on]
    if flags:
        parts.append(', '.join(flags))
    return 'interaction control: ' + '; '.join(parts)
