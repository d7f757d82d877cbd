"""The realtime process: runs RealtimeCore at 1 kHz, alone in its interpreter.

Rethink's loop is a realtime thread that no other work can hold off; in Python the
equivalent is a process of its own (one thread, no GIL to wait for), under SCHED_FIFO when
pacing by the wall clock. The ROS adapter starts it with `start()` and talks over a pipe
in the messages of realtime.pipe (commands in; Ready, then states every PUBLISH_EVERY
ticks, /clock, logs, stats and replies out). A closed pipe (the adapter gone) ends it.

Under sim time the core is the clock, and the nodes must see time pass as it passes for
the arm: the core runs at most RUN_AHEAD ticks past the last state the adapter has
published, then waits for it (applying commands meanwhile), so that a command takes effect
when it was sent in sim time. The adapter says which state it has out in a page both
processes map (Lockstep), and writes to the pipe only when the core waits for it. Under
the wall clock the core never waits for anyone.
"""
import ctypes
import gc
import math
import mmap
import multiprocessing.connection
import os
import select
import signal
import socket
import subprocess
import sys
import time

import numpy as np

from intera_rt.boards.base import state_slot
from intera_rt.control import commands as cmds
from intera_rt.io.gripper import PLANT_LAPSE
from intera_rt.model import RobotModel
from intera_rt.realtime import pipe
from intera_rt.realtime.core import PERIOD, RealtimeCore
from intera_rt.realtime.inputs import WORLD_COMMANDS

PUBLISH_EVERY = 10                    # ticks: state topics at 100 Hz
STATS_EVERY = 1000                    # ticks per /diagnostics window
PIPE_BUFFER = 4 << 20                 # bytes the core may run ahead of a slow adapter
CLOCK_MAX_STEP = 0.02                 # s of sim time between two /clock messages, at most
RUN_AHEAD = 2 * PUBLISH_EVERY         # ticks (sim time) past the last published state
MCL_CURRENT, MCL_FUTURE = 1, 2        # mlockall flags (Linux)
BOARDS_WAIT = 10 * PERIOD             # s: the longest wait for boards that own the clock
WAIT_SLICE = 0.002                    # s: a core waiting for the adapter looks at Lockstep again
# s: a core that finds itself RUN_AHEAD past the adapter first watches the Lockstep page up
# to this long before it sleeps on the pipe (SpinWait), where another CPU runs the adapter
SPIN_WAIT = 0.001
SPIN_WAIT_MIN = 0.00005
# Faster than real time, a stream of joint commands is waited for once it has been quiet for
# STREAM_STEPS /clock steps (a client on sim time sends when /clock passes its deadline; the
# SDK's and the robot's own clients stream at 100 Hz or more), at most STREAM_LATE of its
# timeout; for up to STREAM_BUDGET s of wall time from when its last command came (StreamWait).
STREAM_STEPS = 2
STREAM_LATE = 0.75
STREAM_BUDGET = 0.03
PAUSED_STATE_EVERY = 0.1              # s of wall time between the states of a paused core
GRIPPER_KEEPALIVE = PLANT_LAPSE / 4   # s of loop time: the plant's gripper state at least this
                                      # often (the device follows it until PLANT_LAPSE without)
GRIPPER_NOISE = (1e-9, 1e-6)          # m, N: smaller changes of the fingers' separation and
                                      # force are not sent (far below what the device shows,
                                      # above the plant's jitter at rest)


class TickStats:
    """Tick compute times (s) over the last window, and totals since boot. With a log
    path, every full window is appended to it as float32 pairs (compute µs, lateness µs:
    how far past its deadline the tick ended), for scripts/bench's percentiles."""

    def __init__(self, window=STATS_EVERY, log_path=''):
        self.window = np.zeros(window)
        self.late = np.zeros(window)
        self.count = 0
        self.overruns = 0
        self.stream_waits = 0          # late streams of joint commands waited for (StreamWait)
        self.max_ever = 0.0
        self.log_path = log_path
        if log_path:
            open(log_path, 'wb').close()

    def add(self, compute, overrun, late=0.0):
        k = self.count % len(self.window)
        self.window[k] = compute
        self.late[k] = late
        self.count += 1
        self.overruns += int(overrun)
        self.max_ever = max(self.max_ever, compute)
        if self.log_path and k == len(self.window) - 1:
            with open(self.log_path, 'ab') as f:
                f.write((1e6 * np.column_stack([self.window, self.late])).astype(np.float32).tobytes())

    def summary(self):
        w = self.window[:min(self.count, len(self.window))]
        if not len(w):
            return {}
        return {'mean_us': 1e6 * float(w.mean()), 'p99_us': 1e6 * float(np.percentile(w, 99)),
                'max_us': 1e6 * float(w.max()), 'max_since_boot_us': 1e6 * self.max_ever,
                'overruns': self.overruns, 'ticks': self.count, 'stream_waits': self.stream_waits}


def start(config):
    """Start the realtime process: a fresh interpreter (the adapter's threads are not
    forked) that imports only the core (`python -m intera_rt.realtime.process FD PAGE`; not
    multiprocessing's spawn, which imports the parent's main module again — rospy and
    every message of the adapter — and starts a resource tracker).
    The config is its first message. Returns (process, connection)."""
    ours, theirs = socket.socketpair()
    page = os.memfd_create('intera_rt_lockstep')
    try:
        proc = CoreProcess(subprocess.Popen(
            [sys.executable, '-m', 'intera_rt.realtime.process', str(theirs.fileno()), str(page)],
            pass_fds=(theirs.fileno(), page), close_fds=True), Lockstep(page))
    finally:
        theirs.close()
        os.close(page)
    conn = multiprocessing.connection.Connection(ours.detach())
    conn.send(config)
    return proc, conn


class Lockstep:
    """A page shared by the adapter and the core: the last tick whose state the adapter
    has published, and whether the core is waiting for a newer one. The core reads it each
    tick (no system call); the adapter wakes it through the pipe only when it waits.
    (Python's stores are not fenced, so both may miss each other's latest write: a waiting
    core also looks again every WAIT_SLICE s.)"""

    PUBLISHED, WAITING = 0, 1

    def __init__(self, fd):
        if os.fstat(fd).st_size < mmap.PAGESIZE:
            os.ftruncate(fd, mmap.PAGESIZE)
        self._map = mmap.mmap(fd, mmap.PAGESIZE)
        self.slots = memoryview(self._map).cast('q')

    def published(self, tick):
        """Adapter: the state of `tick` is out. True when the core waits for it (send
        pipe.Published to wake it)."""
        self.slots[self.PUBLISHED] = tick
        return bool(self.slots[self.WAITING])


class CoreProcess:
    """The realtime process as the adapter sees it (multiprocessing.Process's calls, and
    `lockstep`, the shared page)."""

    def __init__(self, popen, lockstep):
        self._popen = popen
        self.pid = popen.pid
        self.lockstep = lockstep

    def is_alive(self):
        return self._popen.poll() is None

    @property
    def exitcode(self):
        return self._popen.poll()

    def join(self, timeout=None):
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self):
        self._popen.terminate()


def _grow_send_buffer(conn):
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, PIPE_BUFFER)
    finally:
        sock.close()


def main(conn, config, lockstep):
    """config: urdf, backend, backend_options, q_arm, q_head, enabled, homed, sim_time,
    speed (inf = max), priority, tick_log, options (stage name → {key: value}), lock_memory
    (True, False or "auto": locked when paced by the wall clock under SCHED_FIFO).
    lockstep: the Lockstep page shared with the adapter."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the adapter decides when to stop
    try:
        model = RobotModel(config['urdf']) if config.get('urdf') else RobotModel.from_file()
        core = RealtimeCore(model, config.get('backend', 'embedded'), config['q_arm'],
                            config['q_head'], config.get('enabled', True), config.get('options'),
                            config.get('backend_options'), homed=config.get('homed', True))
    except Exception as exc:  # noqa: BLE001 - the adapter reports it and exits
        pipe.send(conn, pipe.Failed(reason='%s: %s' % (type(exc).__name__, exc)))
        return
    core.paused = bool(config.get('paused', False))   # booted with physics paused
    try:
        _run(conn, core, config, lockstep)
    finally:
        core.close()                                   # brakes on, the boards shut down


def _run(conn, core, config, lockstep):
    _grow_send_buffer(conn)
    stats = TickStats(log_path=config.get('tick_log', ''))
    sim_time, speed = config.get('sim_time', False), config.get('speed', 1.0)
    # /clock once per tick in real time; faster, at most ~1 kHz of wall time and at least
    # every CLOCK_MAX_STEP of sim time: every sim-time node wakes on each one (each costs the
    # adapter a write per node).
    clock_every = 1 if speed <= 1.0 else int(math.ceil(min(round(CLOCK_MAX_STEP / PERIOD), speed)))
    wall_period = 0.0 if (sim_time and math.isinf(speed)) else PERIOD / (speed if sim_time else 1.0)
    if core.boards.owns_clock:
        wall_period = 0.0                              # the boards' cycle paces the loop
    priority = _sim_priority() if sim_time else _realtime_priority(config.get('priority', 50))
    lock = config.get('lock_memory', 'auto')
    if lock == 'auto':
        # Locked memory buys timing only to a loop that runs on time: the wall clock under
        # SCHED_FIFO. Elsewhere it pins every page of every mapped library for nothing.
        lock = not sim_time and _is_fifo()
    _quiet_runtime(bool(lock))
    priority += '; memory %s' % ('locked' if lock else 'not locked')
    pipe.send(conn, pipe.Ready(state=core.state_vector(), priority=priority,
                               simulated=core.boards.simulated))

    try:
        _loop(conn, core, stats, sim_time, clock_every, wall_period, lockstep)
    except (EOFError, OSError):
        return                                         # the adapter is gone


def _loop(conn, core, stats, sim_time, clock_every, wall_period, lockstep):
    pacer = Pacer(wall_period)
    inbox = Inbox(conn, core)
    published = inbox.published            # the last tick whose state the adapter has out
    shared = lockstep.slots
    spin = SpinWait(SPIN_WAIT if len(os.sched_getaffinity(0)) > 1 else 0.0)
    stream = StreamWait(STREAM_BUDGET if sim_time and wall_period < PERIOD and not core.boards.owns_clock
                        else 0.0, clock_every * PERIOD, stats)
    boards_clock = core.boards.owns_clock  # wait for the boards' next state, tick on it
    sim_clock = core.boards.sim_clock      # ... a simulator that publishes /clock itself
    slot, quiet_until = -1, 0.0            # (sim_clock) the state period last published,
                                           # and when a stopped simulator's state is due
    paused_state_at = 0.0
    while True:
        if core.paused:
            # Physics paused (SimPause): no tick, no time passing; commands still answered,
            # and the state (unchanged) sent every PAUSED_STATE_EVERY s of wall time, so
            # that the robot is seen alive.
            if not inbox.receive(timeout=WAIT_SLICE):
                return
            now = time.monotonic()
            if now >= paused_state_at:
                paused_state_at = now + PAUSED_STATE_EVERY
                pipe.send(conn, pipe.StateFrame(state=core.state_vector(), wall_time=time.time(),
                                                clock=sim_time and not sim_clock))
            pacer.restart()
            continue
        if boards_clock:
            # (a board silent past its own timeout reports a fault, which the tick sees)
            core.boards.wait_cycle(BOARDS_WAIT)
        elif sim_time and core.tick_count - published[0] >= RUN_AHEAD:
            # Lockstep: wait for the adapter (applying what it sends meanwhile).
            if _caught_up(shared, published, core.tick_count, spin):
                continue
            if not inbox.receive(timeout=WAIT_SLICE):
                return
            shared[Lockstep.WAITING] = 0
            pacer.restart()                         # (paced sim time restarts its clock)
            continue
        if stream.budget:
            wait = stream.due(core.command_gap(), time.monotonic())
            if wait > 0.0:
                # A late stream: its next command, if it comes within the budget.
                if not inbox.receive(timeout=min(wait, WAIT_SLICE)):
                    return
                pacer.restart()
                continue
        t0 = time.perf_counter()
        if not inbox.receive():
            return
        if core.paused:                     # (paused by what it just received: no tick)
            continue
        core.tick()
        n = core.tick_count
        clock = sim_time and not sim_clock and n % clock_every == 0
        # A simulator's time may pass more than a tick's between ticks (the loop missed one
        # of its steps): its states go out every STATE_PERIOD of its time, not every 10 ticks;
        # and every PAUSED_STATE_EVERY s of wall time while its time stands still (stopped:
        # the boards' fault must be seen).
        if sim_clock:
            now_slot, wall_now = state_slot(core.now), time.monotonic()
            publish = now_slot != slot or wall_now >= quiet_until
            if publish:
                slot, quiet_until = now_slot, wall_now + PAUSED_STATE_EVERY
        else:
            publish = n % PUBLISH_EVERY == 0
        if publish:
            # (state and /clock in one message: each write that wakes the adapter costs
            # as much as a good part of a tick)
            inbox.world.send()         # (first: the state's model_states go out with it)
            # (paced: the tick's slot on the wall clock, so that ROS time minus loop time stays
            # one constant and a start_time converted once holds for every later stamp)
            wall = pacer.slot_wall() if wall_period > 0.0 else time.time()
            pipe.send(conn, pipe.StateFrame(state=core.state_vector(), wall_time=wall, clock=clock))
        elif clock:
            pipe.send(conn, pipe.Clock(t=core.now))
        logs = core.take_logs()
        if logs:
            pipe.send(conn, pipe.Logs(entries=tuple(logs)))
        t1 = time.perf_counter()
        late = pacer.end(t1)
        stats.add(t1 - t0, wall_period > 0 and ((t1 - t0) > PERIOD or late > PERIOD), max(0.0, late))
        if n % STATS_EVERY == 0:
            summary = stats.summary()
            summary['command_timeouts'] = core.timeouts
            pipe.send(conn, pipe.Stats(summary=summary))
        if wall_period > 0.0:
            pacer.wait()


class StreamWait:
    """Faster than real time, the clients that stream joint commands (SDK scripts, the
    motion controller, the JTAS) follow sim time from processes of their own: a few ms
    without a CPU are the command timeout's worth of sim time at 20×, and the arm would drop
    to hold, or lurch after a gap, under a client that is only slow. So once a stream is late
    (STREAM_STEPS, STREAM_LATE) the core waits for its next command, up to `budget` s of wall
    time counted from when its last one came: sim time then runs at the pace of the slowest
    streaming client. A client that has stopped (its motion done, the script gone) times out
    in sim time as on the robot, having cost that wall time once; one that streams slower
    than STREAM_STEPS /clock steps costs it at each command. Budget 0: never wait (at real
    time or slower a late client is late on the robot too; boards that own the clock pace it
    themselves).

    Args:
        budget: wall s (0: off).
        clock_step: sim s between two /clock messages.
        stats: a TickStats whose stream_waits counts the waits (or None).
    """

    def __init__(self, budget, clock_step=PERIOD, stats=None):
        self.budget, self.clock_step, self.stats = budget, clock_step, stats
        self._last, self._seen, self._waited = None, 0.0, None

    def due(self, gap, wall_now):
        """Wall s to wait for the stream before the next tick (0: tick now).

        Args:
            gap: RealtimeCore.command_gap() (None: no stream).
            wall_now: the wall clock now (s, monotonic).
        """
        if gap is None or not self.budget:
            return 0.0
        since, timeout, last = gap
        if last != self._last:
            self._last, self._seen = last, wall_now
        if since < min(STREAM_STEPS * self.clock_step, STREAM_LATE * timeout):
            return 0.0
        left = self._seen + self.budget - wall_now
        if left > 0.0 and self._waited != last:
            self._waited = last
            if self.stats is not None:
                self.stats.stream_waits += 1
        return max(0.0, left)


class SpinWait:
    """How long a core RUN_AHEAD past the adapter watches the Lockstep page before it sleeps
    on the pipe. The adapter's next state is usually out within a few hundred µs, and waking
    a sleeping process costs a virtual machine ~50-150 µs (the host delivers the interrupt);
    sleeping also hands the core's CPU, and its caches, to the nodes. But while it watches,
    the core holds a CPU the nodes may need (a world's states take them longer): each watch
    the adapter did not end halves the next one's budget (down to SPIN_WAIT_MIN), each it
    ended doubles it (up to `limit`; 0: never watch, the machine has one CPU)."""

    def __init__(self, limit):
        self.limit = self.budget = limit

    def watch(self, shared, tick):
        """Watch the page until the adapter has published a state within RUN_AHEAD of `tick`
        (True) or the budget is spent (False)."""
        if not self.limit:
            return False
        deadline = time.perf_counter() + self.budget
        while time.perf_counter() < deadline:
            if tick - shared[Lockstep.PUBLISHED] < RUN_AHEAD:
                self.budget = min(self.limit, 2.0 * self.budget)
                return True
        self.budget = max(SPIN_WAIT_MIN, 0.5 * self.budget)
        return False


def _caught_up(shared, published, tick, spin=None):
    """Has the adapter published a recent enough state (the Lockstep page says), or does
    it while the core watches the page (`spin`, a SpinWait)? If not, the page says the core
    waits (the adapter then wakes it through the pipe), and is read once more: the adapter
    may have written just before. (Commands that arrive meanwhile wait on the pipe: no tick
    runs before the core reads them.)"""
    published[0] = max(published[0], shared[Lockstep.PUBLISHED])
    if tick - published[0] < RUN_AHEAD:
        return True
    if spin is not None and spin.watch(shared, tick):
        published[0] = max(published[0], shared[Lockstep.PUBLISHED])
        return True
    shared[Lockstep.WAITING] = 1
    published[0] = max(published[0], shared[Lockstep.PUBLISHED])
    if tick - published[0] < RUN_AHEAD:
        shared[Lockstep.WAITING] = 0
        return True
    return False


class Pacer:
    """Paces a loop to a fixed period: tick k ends by start + k·period. A tick that ends
    more than RESYNC_AFTER late (debugger, suspend) restarts the count from there instead
    of running the missed ticks back to back. Shared by the core and bare_loop, so that
    both account lateness the same way."""

    RESYNC_AFTER = 10 * PERIOD              # s of wall time

    def __init__(self, period):
        self.period = period
        self.restart()

    def restart(self):
        self._start, self._k = time.perf_counter(), 0
        self._wall_start = time.time()

    def slot_wall(self):
        """The wall-clock (time.time()) start of the slot of the tick running now: never
        after now, and start + k·period exactly, however late the tick runs."""
        return self._wall_start + self._k * self.period

    def end(self, t1):
        """The tick that ended at t1 (perf_counter time): how late it ended (s)."""
        self._k += 1
        self._end, self._deadline = t1, self._start + self._k * self.period
        return t1 - self._deadline

    def wait(self):
        """Until the next tick's slot (or resync after a long stall)."""
        if self._end - self._deadline > self.RESYNC_AFTER:
            self._wall_start += self._end - self._start
            self._start, self._k = self._end, 0
        else:
            wait_until(self._deadline)


def wait_until(deadline):
    """Sleep most of the way to `deadline` (perf_counter time), then spin the last 150 µs
    for a precise edge: a timer wake-up can come that much late."""
    remaining = deadline - time.perf_counter()
    if remaining > 2e-4:
        time.sleep(remaining - 1.5e-4)
    while time.perf_counter() < deadline:
        pass


def bare_loop(duration, priority=50, lock_memory=True):
    """The platform's own jitter: a 1 kHz loop that does nothing, paced, prioritised and
    accounted exactly like the core's (SCHED_FIFO, no GC, locked memory, the same Pacer).
    Run it in a process of its own. Returns (lateness µs per tick as float32, priority
    note); an overrun is a tick ending more than a period late."""
    priority_note = _realtime_priority(priority)
    _quiet_runtime(lock_memory)
    late = np.zeros(int(round(duration / PERIOD)), dtype=np.float32)
    pacer = Pacer(PERIOD)
    for i in range(len(late)):
        late[i] = max(0.0, 1e6 * pacer.end(time.perf_counter()))
        pacer.wait()
    return late, priority_note


class Inbox:
    """What the adapter sends the core, dispatched by type (realtime.pipe)."""

    def __init__(self, conn, core):
        self.conn, self.core = conn, core
        self.published = [core.tick_count]   # the last tick whose state the adapter has out
        # (select.poll(): Connection.poll() builds a selector on every call)
        self._poller = select.poll()
        self._poller.register(conn.fileno(), select.POLLIN)
        self._handlers = {pipe.Apply: self._apply, pipe.Published: self._published,
                          pipe.Quit: self._quit}
        self.world = WorldFrames(conn, core)

    def receive(self, timeout=0.0):
        """Handle what the adapter has sent (waiting up to `timeout` s for the first
        message); False when it asks the core to quit."""
        poll = self._poller.poll
        if not poll(1e3 * timeout):
            return True
        while True:
            msg = self.conn.recv()
            handler = self._handlers.get(type(msg))
            if handler is None:
                self.core.log('error', 'pipe', 'the core takes no %s on its pipe' % type(msg).__name__)
            elif not handler(msg):
                return False
            if not poll(0):
                return True

    def _published(self, msg):
        self.published[0] = msg.tick
        return True

    def _quit(self, _msg):
        return False

    def _apply(self, msg):
        """core.apply(command); its result answered when the message asks."""
        core, command = self.core, msg.command
        try:
            result = core.apply(command)
        except Exception as exc:  # noqa: BLE001 - a bad request must never stop the loop
            kind = type(command).__name__
            result = (False, '%s: %s' % (type(exc).__name__, exc))
            core.log('error', 'cmd-' + kind, '%s failed: %s' % (kind, result[1]))
        if type(command) is cmds.SimPause and result[0]:
            # The state it paused at, before the answer: what a client reads after it.
            pipe.send(self.conn, pipe.StateFrame(state=core.state_vector(), wall_time=time.time(),
                                                 clock=False))
        if type(command) in WORLD_COMMANDS:
            # The world as it changed, before the answer (and while paused, when no tick
            # sends it): a client reading it back after the answer sees the change.
            self.world.send()
        if msg.reply_id is not None:
            pipe.send(self.conn, pipe.Reply(reply_id=msg.reply_id, result=result))
        return True


class WorldFrames:
    """Sends the core's world (core.world_frame) as a pipe.WorldFrame with what changed
    since the frame before (None: unchanged), and nothing when nothing did. The bodies go
    when they are not the tuple sent before (the boards hand back the same tuple while no
    body moved). The gripper's state goes when it changed beyond the plant's numerical
    noise (GRIPPER_NOISE: a resting finger's position jitters in its last bits every step),
    and at least every GRIPPER_KEEPALIVE of loop time: the gripper device follows the
    plant's fingers only while their states keep coming. A world at rest costs a frame
    every GRIPPER_KEEPALIVE, not a frame through every process at 100 Hz."""

    def __init__(self, conn, core):
        self.conn, self.core = conn, core
        self._sent = None                    # the bodies of the last frame sent
        self._gripper = None                 # the gripper state last sent, and when
        self._gripper_at = -math.inf

    def send(self):
        world = self.core.world_frame()
        if world is None:
            return
        bodies, gripper = world
        now = self.core.now
        if gripper is not None:
            if self._gripper_news(gripper, now):
                self._gripper, self._gripper_at = gripper, now
            else:
                gripper = None
        if bodies is self._sent:
            bodies = None
        else:
            self._sent = bodies
        if bodies is not None or gripper is not None:
            pipe.send(self.conn, pipe.WorldFrame(time=now, gripper=gripper, bodies=bodies))

    def _gripper_news(self, gripper, now):
        last = self._gripper
        return (last is None or now - self._gripper_at > GRIPPER_KEEPALIVE - PERIOD / 2
                or gripper.gripping != last.gripping
                or abs(gripper.separation - last.separation) > GRIPPER_NOISE[0]
                or abs(gripper.force - last.force) > GRIPPER_NOISE[1])


def _quiet_runtime(lock_memory):
    """No pauses the tick did not ask for: the objects built so far are frozen out of the
    cyclic garbage collector and it is switched off (the tick makes no reference cycles),
    and, with `lock_memory`, memory is locked so that no page fault lands in a tick (best
    effort; every page of every mapped library becomes resident)."""
    gc.collect()
    gc.freeze()
    gc.disable()
    if not lock_memory:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mlockall(MCL_CURRENT | MCL_FUTURE)
    except (OSError, AttributeError):
        pass


def _is_fifo():
    """This process runs SCHED_FIFO."""
    try:
        return os.sched_getscheduler(0) == os.SCHED_FIFO
    except (OSError, AttributeError):
        return False


def _sim_priority():
    """Under sim time the core is the clock: it goes before the other nodes (nice -10),
    which then see time pass in larger steps rather than the clock slowing down. Every
    thread of the process (Linux nices threads one by one): a backend's transport threads,
    started before this (the gazebo backend's rospy receivers), are on the tick's path."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        for tid in os.listdir('/proc/self/task'):
            try:
                os.setpriority(os.PRIO_PROCESS, int(tid), -10)
            except OSError:
                pass                    # (a thread that just ended)
        return 'nice -10 (sim time)'
    except (OSError, AttributeError) as exc:
        return 'ordinary priority (sim time; %s)' % exc


def _realtime_priority(priority):
    """SCHED_FIFO, as the robot's loop runs. It sleeps most of each period, so it never
    starves other processes. Needs root or CAP_SYS_NICE. Returns what happened, for the
    adapter to log."""
    if priority <= 0:
        return 'realtime priority off (~realtime_priority 0)'
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return 'SCHED_FIFO priority %d' % priority
    except (OSError, AttributeError) as exc:
        return 'no realtime priority (%s): ticks may be late under load' % exc


if __name__ == '__main__':
    # Started by start(): the connection's descriptor and the Lockstep page's are the
    # arguments, the config is the connection's first message.
    _conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    main(_conn, _conn.recv(), Lockstep(int(sys.argv[2])))
