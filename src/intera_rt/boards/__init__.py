"""boards: the plant behind one joint-boards interface (embedded physics, MuJoCo, hardware)."""
from intera_rt.boards.base import JointBoards, BoardsReading, make_boards, check_backend, BACKENDS

__all__ = ['JointBoards', 'BoardsReading', 'make_boards', 'check_backend', 'BACKENDS']
