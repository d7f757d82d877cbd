"""Declared options: what a joint-boards backend (JointBoards.OPTIONS) or a realtime stage
(control.base.Stage.OPTIONS) takes, each option with its type, default and help, and the
one parser that checks what a user gave (a ROS parameter's value, or a string from the
command line) against them. An option nobody declared is refused with the list of those
that are, so a misspelt key stops boot instead of being ignored.

Below every other layer (it imports only intera_rt.robot): boards and control both use it.
"""
import math
from typing import Callable, NamedTuple, Optional

from intera_rt.robot import ARM_JOINTS


class Option(NamedTuple):
    """One declared option. `parse(key, value)`, when given, converts and checks a value the
    four scalar types cannot express (e.g. per_joint numbers) instead of `type`."""
    type: type               # bool, int, float or str
    default: object          # None: the owner computes it (its help says how)
    help: str
    parse: Optional[Callable] = None


def parse_option_value(option, key, value, what='backend option'):
    """`value` (a Python value from a ROS parameter, or a string from the command line) as
    option's type; ValueError naming `what`, the option and the value otherwise."""
    if option.parse is not None:
        return option.parse('%s %s' % (what, key), value)
    kind = option.type
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if kind is bool:
            if text in ('true', '1', 'yes', 'on'):
                return True
            if text in ('false', '0', 'no', 'off'):
                return False
            raise ValueError('%s %s must be true or false, got %r' % (what, key, value))
        try:
            value = kind(text)
        except ValueError:
            raise ValueError('%s %s must be %s, got %r' % (
                what, key, 'an integer' if kind is int else 'a number', value)) from None
    if kind is bool and not isinstance(value, bool):
        raise ValueError('%s %s must be true or false, got %r' % (what, key, value))
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError('%s %s must be an integer, got %r' % (what, key, value))
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise ValueError('%s %s must be a finite number, got %r' % (what, key, value))
        value = float(value)
    if kind is str and not isinstance(value, str):
        raise ValueError('%s %s must be a string, got %r' % (what, key, value))
    return value


def check_options(owner, declared, given, what='option'):
    """`given` (a dict) checked against `declared` (name → Option): each value as its
    option's type. ValueError naming `owner` (e.g. "backend 'mujoco'") and listing the
    declared options for a key it does not declare."""
    if not isinstance(given, dict):
        raise ValueError('the options of %s must be a dictionary, got %r' % (owner, given))
    checked = {}
    for key, value in given.items():
        if key not in declared:
            raise ValueError('%s takes no option %r; its options: %s' % (
                owner, key, ', '.join(sorted(declared)) or 'none'))
        checked[key] = parse_option_value(declared[key], key, value, what)
    return checked


def option_help(declared):
    """'key (type, default d): help' lines of `declared` (name → Option)."""
    return ['%s (%s, default %r): %s' % (key, opt.type.__name__, opt.default, opt.help)
            for key, opt in sorted(declared.items())]


def per_joint(where, value):
    """A per-joint number (an Option's parse): one number for every arm joint, 7 numbers
    (right_j0..6; from the command line, comma-separated) or {joint name: number}. Returns a
    float, a tuple of 7 floats or {joint name: float}, each finite and > 0."""
    def number(name, v):
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise ValueError('%s must be a number, got %r' % (name, v)) from None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            try:
                v = float(v)                      # numpy scalars
            except (TypeError, ValueError):
                raise ValueError('%s must be a number, got %r' % (name, v)) from None
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError('%s must be finite and > 0, got %r' % (name, v))
        return float(v)

    if isinstance(value, str) and ',' in value:
        value = [v.strip() for v in value.split(',')]
    if isinstance(value, dict):
        out = {}
        for name, v in value.items():
            if name not in ARM_JOINTS:
                raise ValueError('%s names unknown joint %r (joints: %s)'
                                 % (where, name, ', '.join(ARM_JOINTS)))
            out[name] = number('%s[%s]' % (where, name), v)
        return out
    if isinstance(value, (list, tuple)) or hasattr(value, '__len__') and not isinstance(value, str):
        if len(value) != len(ARM_JOINTS):
            raise ValueError('%s needs %d values (right_j0..6), got %d'
                             % (where, len(ARM_JOINTS), len(value)))
        return tuple(number('%s[%s]' % (where, n), v) for n, v in zip(ARM_JOINTS, value))
    return number(where, value)
