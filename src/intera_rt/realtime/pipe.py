"""The messages on the pipe between the realtime_loop node (the adapter) and the core
process: one frozen class per kind, dispatched by type on both sides (a table of
type → handler, as RealtimeCore.apply dispatches commands).

  adapter → core   Apply (a typed command, control.commands; its result answered with
                   a Reply when it carries a reply_id), Published, Quit
  core → adapter   Ready or Failed (once, after boot), StateFrame, Clock, Logs, Stats,
                   Reply, WorldFrame

The encoding is the pipe's (multiprocessing.connection: pickle; `send` pickles without the
connection's ForkingPickler, which costs twice pickle.dumps for what these messages hold, and
Connection.recv reads it). Each class pickles as its constructor's arguments; a state vector
travels as its float64 bytes (cheaper to pickle and to load than an ndarray), read back as a
read-only array.
"""
import pickle
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np


def send(conn, message):
    """conn.send(message), for messages of plain data (every class here): pickled by
    pickle.dumps, not the connection's ForkingPickler (whose reducers are for connections and
    sockets), at half its cost."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def _vector(data):
    return np.frombuffer(data, dtype=np.float64)


def _bytes(vector):
    return np.ascontiguousarray(vector, dtype=np.float64).tobytes()


class _Message:
    __slots__ = ()

    def __reduce__(self):
        return type(self), tuple(getattr(self, name) for name in self.__slots__)


# --- adapter → core --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Apply(_Message):
    """Apply `command` (control.commands) before the next tick; with a reply_id, answer
    its result (sim control: (success, message)) with Reply(reply_id, result)."""
    command: Any
    reply_id: Optional[int] = None


@dataclass(frozen=True, slots=True)
class Published(_Message):
    """Under sim time: the state of `tick` is out. Sent only to wake a core that waits for
    it (process.Lockstep says when)."""
    tick: int


@dataclass(frozen=True, slots=True)
class Quit(_Message):
    """The core stops: brakes on, the boards shut down, the process ends."""


# --- core → adapter --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, eq=False)
class Ready(_Message):
    """Booted: the first state vector (realtime.state), what priority the loop got, and
    whether the boards are simulated (sim-control services offered)."""
    state: np.ndarray
    priority: str
    simulated: bool

    def __reduce__(self):
        return _ready, (_bytes(self.state), self.priority, self.simulated)


@dataclass(frozen=True, slots=True)
class Failed(_Message):
    """Instead of Ready: the core cannot boot, and why."""
    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class StateFrame(_Message):
    """Every PUBLISH_EVERY ticks: the state vector, the wall time of its tick and, under sim
    time, whether /clock goes out at the state's time first."""
    state: np.ndarray
    wall_time: float
    clock: bool

    def __reduce__(self):
        return _state_frame, (_bytes(self.state), self.wall_time, self.clock)


@dataclass(frozen=True, slots=True)
class Clock(_Message):
    """Under sim time, at a tick that sends no state: /clock at `t`."""
    t: float


@dataclass(frozen=True, slots=True)
class Logs(_Message):
    """Log entries (level, throttle key, text) in the order logged; the adapter throttles
    by key."""
    entries: Tuple[Tuple[str, str, str], ...]


@dataclass(frozen=True, slots=True)
class Stats(_Message):
    """Every STATS_EVERY ticks: the tick statistics (process.TickStats.summary) and the
    command timeouts since boot."""
    summary: dict


@dataclass(frozen=True, slots=True)
class Reply(_Message):
    """The result of the Apply that carried `reply_id`."""
    reply_id: int
    result: Any


@dataclass(frozen=True, slots=True)
class WorldFrame(_Message):
    """At 100 Hz of sim time while any model is spawned (or the plant has a gripper): the
    plant's time, every spawned body's boards.base.BodyState (in base; None: the same as in
    the frame before) and its GripperState (None without a gripper)."""
    time: float
    bodies: Tuple[Any, ...]
    gripper: Any = None


def _ready(state, priority, simulated):
    return Ready(_vector(state), priority, simulated)


def _state_frame(state, wall_time, clock):
    return StateFrame(_vector(state), wall_time, clock)


TO_CORE = (Apply, Published, Quit)
TO_ADAPTER = (Ready, Failed, StateFrame, Clock, Logs, Stats, Reply, WorldFrame)
MESSAGES = TO_CORE + TO_ADAPTER
