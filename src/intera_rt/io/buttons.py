"""What a person does to a button, as the values the robot reports over time.

Cuff and navigator buttons report an int: 0 released, 1 pressed (a click), 2 held long,
3 double click. The SDK samples them at 10 Hz (`register_callback`), so every value is
held long enough for such a poller to see it (at least 0.15 s).
"""

OFF, CLICK, LONG_PRESS, DOUBLE_CLICK = 0, 1, 2, 3

CLICK_HOLD = 0.3           # s a click keeps the button at 1
DOUBLE_FIRST = 0.15        # s of the first press of a double click (1), before it reads 3
DOUBLE_HOLD = 0.3          # s a double click then reads 3
LONG_PRESS_AFTER = 1.0     # s pressed before the button reads 2 (held long)
LONG_HOLD = 1.5            # s a long hold lasts in all, by default
MAX_HOLD = 60.0            # s: longer holds are refused (use press / release)

ACTIONS = ('click', 'double_click', 'long_hold', 'press', 'release')


def sequence(action, duration=0.0):
    """The values a button takes for `action`: a list of (value, seconds to hold it), the
    last one held until the next action (seconds None).

    Args:
        action: 'click' (1, then 0), 'double_click' (1, 3, then 0), 'long_hold' (1; 2 from
            LONG_PRESS_AFTER on; then 0), 'press' (1 until 'release'), 'release' (0).
        duration: s the button is held for click / double_click (the time it reads 3) /
            long_hold (in all; at least LONG_PRESS_AFTER + 0.15); 0 = the default.
    Raises:
        ValueError naming the action or duration when they are not usable.
    """
    if action not in ACTIONS:
        raise ValueError('unknown button action %r: expected one of %s' % (action, ', '.join(ACTIONS)))
    if not (duration == duration) or duration < 0 or duration > MAX_HOLD:
        raise ValueError('duration %r s is outside [0, %g] (0 = the default)' % (duration, MAX_HOLD))
    if action == 'click':
        return [(CLICK, duration or CLICK_HOLD), (OFF, None)]
    if action == 'double_click':
        return [(CLICK, DOUBLE_FIRST), (DOUBLE_CLICK, duration or DOUBLE_HOLD), (OFF, None)]
    if action == 'long_hold':
        total = duration or LONG_HOLD
        if total < LONG_PRESS_AFTER + 0.15:
            raise ValueError('a long hold lasts at least %.2f s (the button reads 2 after %.2f s '
                             'pressed), got %g s' % (LONG_PRESS_AFTER + 0.15, LONG_PRESS_AFTER, total))
        return [(CLICK, LONG_PRESS_AFTER), (LONG_PRESS, total - LONG_PRESS_AFTER), (OFF, None)]
    if action == 'press':
        return [(CLICK, None)]
    return [(OFF, None)]


def wheel_value(current, steps):
    """The navigator wheel (an unsigned byte) after turning it `steps` detents (negative:
    the other way); ValueError outside ±255 or for 0."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps == 0 or abs(steps) > 255:
        raise ValueError('wheel steps must be a non-zero integer in [-255, 255], got %r' % (steps,))
    return (current + steps) % 256
