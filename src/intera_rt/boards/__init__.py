"""boards: the plant behind one joint-boards interface (embedded physics, MuJoCo, hardware)."""
from intera_rt.boards.base import (BACKENDS, BoardsReading, Contact, JointBoards, Obstacle,
                                   check_backend, check_obstacle, make_boards)

__all__ = ['JointBoards', 'BoardsReading', 'Contact', 'Obstacle', 'make_boards', 'check_backend',
           'check_obstacle', 'BACKENDS']
