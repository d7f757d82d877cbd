"""boards: the plant behind one joint-boards interface (embedded physics, MuJoCo, hardware).
The backends are listed in boards.registry and imported only when used."""
from intera_rt.boards.base import (CAPABILITIES, BackendOption, BoardsError, BoardsReading, Contact,
                                   JointBoards, Obstacle, Unsupported, check_obstacle, BodyState,
                                   GripperCommand, GripperState)
from intera_rt.boards.registry import (BACKENDS, backend_class, check_backend, make_boards,
                                       register_backend)

__all__ = ['JointBoards', 'BoardsReading', 'BackendOption', 'BoardsError', 'Unsupported',
           'Contact', 'Obstacle', 'CAPABILITIES', 'make_boards', 'check_backend', 'check_obstacle',
           'backend_class', 'register_backend', 'BACKENDS', 'BodyState', 'GripperCommand',
           'GripperState']
