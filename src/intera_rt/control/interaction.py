"""An InteractionControlCommand's content checked (the robot's interaction control itself is
not implemented yet: it accepts a valid command and says so). Works on the message's
attributes; no ROS."""
import math

# InteractionControlCommand arrays: (field, lengths allowed; 0 = the robot's default), as the
# motion controller validates a goal's interaction_params.
_INTERACTION_ARRAYS = (('K_impedance', (0, 6)), ('max_impedance', (0, 6)), ('D_impedance', (0, 6)),
                       ('K_nullspace', (0, 7)), ('force_command', (0, 6)),
                       ('interaction_control_mode', (0, 6)))
_INTERACTION_MODES = {1: 'IMPEDANCE_MODE', 2: 'FORCE_MODE', 3: 'IMPEDANCE_WITH_FORCE_LIMIT_MODE',
                      4: 'FORCE_WITH_MOTION_LIMIT_MODE'}


def interaction_problem(msg):
    """What is wrong with an active InteractionControlCommand (None: nothing): array lengths
    (six Cartesian axes, seven joints), non-finite or negative gains, unknown modes, a
    non-unit interaction_frame quaternion."""
    for field, lengths in _INTERACTION_ARRAYS:
        n = len(getattr(msg, field))
        if n not in lengths:
            return '%s has %d values, expected %s' % (field, n, ' or '.join(map(str, lengths)))
    for field in ('K_impedance', 'D_impedance', 'K_nullspace', 'force_command'):
        for i, v in enumerate(getattr(msg, field)):
            if not math.isfinite(v) or (v < 0 and field != 'force_command'):
                return '%s[%d] = %r (%s)' % (field, i, v, 'must be finite' if field == 'force_command'
                                             else 'must be finite and >= 0')
    for i, mode in enumerate(bytearray(msg.interaction_control_mode)
                             if isinstance(msg.interaction_control_mode, bytes)
                             else msg.interaction_control_mode):
        if mode not in _INTERACTION_MODES:
            return 'interaction_control_mode[%d] = %r is not one of %s' % (
                i, mode, ', '.join('%s=%d' % (n, v) for v, n in sorted(_INTERACTION_MODES.items())))
    p, o = msg.interaction_frame.position, msg.interaction_frame.orientation
    values = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
    if not all(math.isfinite(v) for v in values):
        return 'interaction_frame %s is not finite' % (list(values),)
    norm = math.sqrt(o.x * o.x + o.y * o.y + o.z * o.z + o.w * o.w)
    if abs(norm - 1.0) > 1e-3:
        return 'interaction_frame.orientation (%g, %g, %g, %g) has norm %.4g, expected 1' % (
            o.x, o.y, o.z, o.w, norm)
    return None
