"""The backends of the joint boards, by name: an explicit table of module and class, each
imported only when asked for (no import cycle: base.py imports no backend).

    make_boards('mujoco', model, {'table': True})     # a configured-to-be JointBoards
    check_backend('mujoco', {'table': 'true'})         # validated options, nothing built

A backend declares its options in its class's OPTIONS (name → BackendOption); an option it
does not declare is refused with the list of those it takes. register_backend adds one at
run time (a user's hardware bridge, a test double); a process that builds the core
(intera_rt.realtime.process) sees only what its own imports register, so a user's backend
is best added to BACKENDS as 'module:Class'.
"""
import importlib

from intera_rt.boards.base import JointBoards
from intera_rt.options import check_options, option_help as _option_help

BACKENDS = {
    'embedded': 'intera_rt.boards.embedded:EmbeddedBoards',
    'mujoco': 'intera_rt.boards.mujoco_boards:MujocoBoards',
    'remote': 'intera_rt.boards.remote:RemoteBoards',
    'gazebo': 'intera_rt.boards.gazebo:GazeboBoards',
}


def register_backend(name, target):
    """Add (or replace) backend `name`: a JointBoards subclass, or 'module:Class' (imported
    when first used)."""
    if not isinstance(name, str) or not name:
        raise ValueError('backend name must be a non-empty string, got %r' % (name,))
    if not (isinstance(target, type) or (isinstance(target, str) and ':' in target)):
        raise ValueError("backend %r: expected a JointBoards class or 'module:Class', got %r"
                         % (name, target))
    BACKENDS[name] = target


def backend_class(name):
    """The JointBoards subclass of backend `name`; ValueError naming the choices when there
    is none, ImportError (with the backend named) when its module cannot be imported."""
    if name not in BACKENDS:
        raise ValueError('unknown backend %r; available: %s' % (name, ', '.join(sorted(BACKENDS))))
    target = BACKENDS[name]
    if isinstance(target, str):
        module, attr = target.split(':')
        try:
            target = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise ImportError('backend %r needs %s: %s' % (name, module, exc)) from exc
    if not (isinstance(target, type) and issubclass(target, JointBoards)):
        raise TypeError('backend %r: %r is not a JointBoards' % (name, target))
    return target


def check_backend(name, options=None):
    """Validate backend `name` and its options (a dict; string values, as the command line
    gives them, are converted) without building anything. Returns the options with their
    declared types; ValueError naming the backend, option and value otherwise."""
    return check_options('backend %r' % name, backend_class(name).OPTIONS, dict(options or {}),
                         'backend option')


def make_boards(name, model, options=None):
    """A new JointBoards of backend `name` for `model` (its lifecycle not started: the core
    calls configure() and activate())."""
    cls = backend_class(name)
    boards = cls(model, **check_backend(name, options))
    boards.name = name
    return boards


def option_help(name):
    """'key (type, default d): help' lines of backend `name`'s options."""
    return _option_help(backend_class(name).OPTIONS)
