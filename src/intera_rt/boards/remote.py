"""Out-of-process joint boards (`--backend remote`): the boards in another process or on a
network, as an arm's are, over UDP. The seam where a hardware bridge plugs in: anything that
speaks this protocol is a Sawyer's joint boards to the realtime loop.

Wire protocol (version 1; little-endian; one datagram per message; loopback by default)
--------------------------------------------------------------------------------------
The robot (this backend) sends to the boards' address; the boards answer to whichever
address last sent them a command. The boards own the clock: they send one STATE per cycle
(1 kHz), and the robot's loop ticks on each.

STATE, boards → robot:
    magic   4s   b'IRTS'
    version u16  1
    flags   u16  bit 0: brakes engaged; bit 1: fault
    seq     u32  +1 per cycle (wraps)
    ack     u32  the seq of the last COMMAND the boards applied (0: none yet)
    time    f64  the boards' time of this state (s)
    n       u16  joints (8: right_j0..6, head_pan)
    n f64 positions (rad), n f64 velocities (rad/s), n f64 measured torques (N·m)
    len     u16, then len bytes: the fault text, UTF-8 (empty while healthy)

COMMAND, robot → boards:
    magic   4s   b'IRTC'
    version u16  1
    flags   u16  bit 0: brakes engaged; bit 1: clear the fault (the robot's reset)
    seq     u32  +1 per command
    ack     u32  the STATE seq this command answers
    n       u16  joints
    n f64 torques (N·m) for the boards' next cycle

The boards apply the newest command each cycle and engage the brakes (zero torque) when
none arrived for their watchdog (20 cycles). The robot takes the newest STATE each cycle and
drops late or reordered ones (a seq not after the last taken, modulo 2³²). A cycle whose
STATE does not come within 1.5 periods is bridged: the last state stands, time moves on one
period; after `max_missed` bridged cycles in a row the boards are faulted ("no state from
the joint boards for N ms") and the robot goes to error; the fault clears (reset) once
states arrive again.

With option `serve` (default) the backend starts a board process itself
(intera_rt.boards.board_server: the embedded plant behind this protocol, paced at 1 kHz by
the wall clock, under SCHED_FIFO where allowed) on a free loopback port; otherwise it talks
to the boards at `address`.
"""
import collections
import os
import select
import socket
import struct
import subprocess
import sys
import time

import numpy as np

from intera_rt.boards.base import BackendOption, BoardsError, BoardsReading, JointBoards
from intera_rt.robot import BOARD_JOINTS, LOOP_PERIOD

VERSION = 1
STATE_MAGIC, COMMAND_MAGIC = b'IRTS', b'IRTC'
STATE_HEAD = struct.Struct('<4sHHIIdH')
COMMAND_HEAD = struct.Struct('<4sHHIIH')
FLAG_BRAKES, FLAG_FAULT = 1, 2
FLAG_CLEAR = 2                        # in a COMMAND: clear the fault
MAX_MISSED = 20                       # cycles bridged before the boards are faulted
WAIT = 1.5 * LOOP_PERIOD              # s a cycle waits for its STATE before it is bridged
CONNECT_TIMEOUT = 10.0                # s for the first STATE
ROUND_TRIPS = 100000                  # round trips kept for the bench
# The served board process's SCHED_FIFO priority: one above the loop's (50), as an arm's
# boards are hardware that a busy robot PC cannot delay and whose cycle the loop ticks on.
BOARD_PRIORITY = 51


def pack_state(seq, ack, t, position, velocity, effort, brakes, fault=''):
    text = fault.encode('utf-8')[:65535]
    n = len(position)
    flags = (FLAG_BRAKES if brakes else 0) | (FLAG_FAULT if text else 0)
    return b''.join((STATE_HEAD.pack(STATE_MAGIC, VERSION, flags, seq & 0xFFFFFFFF,
                                     ack & 0xFFFFFFFF, t, n),
                     np.asarray(position, '<f8').tobytes(), np.asarray(velocity, '<f8').tobytes(),
                     np.asarray(effort, '<f8').tobytes(), struct.pack('<H', len(text)), text))


def unpack_state(data):
    """(seq, ack, time, position, velocity, effort, brakes, fault) or ValueError."""
    if len(data) < STATE_HEAD.size:
        raise ValueError('STATE too short (%d bytes)' % len(data))
    magic, version, flags, seq, ack, t, n = STATE_HEAD.unpack_from(data)
    if magic != STATE_MAGIC or version != VERSION:
        raise ValueError('not a version %d STATE (magic %r, version %d)' % (VERSION, magic, version))
    k = STATE_HEAD.size
    end = k + 24 * n
    if len(data) < end + 2:
        raise ValueError('STATE of %d joints too short (%d bytes)' % (n, len(data)))
    arrays = np.frombuffer(data, '<f8', 3 * n, k).reshape(3, n).astype(float)
    (length,) = struct.unpack_from('<H', data, end)
    fault = data[end + 2:end + 2 + length].decode('utf-8', 'replace')
    return seq, ack, t, arrays[0], arrays[1], arrays[2], bool(flags & FLAG_BRAKES), fault


def pack_command(seq, ack, torque, brakes, clear=False):
    n = len(torque)
    flags = (FLAG_BRAKES if brakes else 0) | (FLAG_CLEAR if clear else 0)
    return COMMAND_HEAD.pack(COMMAND_MAGIC, VERSION, flags, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                             n) + np.asarray(torque, '<f8').tobytes()


def unpack_command(data):
    """(seq, ack, torque, brakes, clear) or ValueError."""
    if len(data) < COMMAND_HEAD.size:
        raise ValueError('COMMAND too short (%d bytes)' % len(data))
    magic, version, flags, seq, ack, n = COMMAND_HEAD.unpack_from(data)
    if magic != COMMAND_MAGIC or version != VERSION:
        raise ValueError('not a version %d COMMAND (magic %r, version %d)' % (VERSION, magic, version))
    if len(data) < COMMAND_HEAD.size + 8 * n:
        raise ValueError('COMMAND of %d joints too short (%d bytes)' % (n, len(data)))
    torque = np.frombuffer(data, '<f8', n, COMMAND_HEAD.size).astype(float)
    return seq, ack, torque, bool(flags & FLAG_BRAKES), bool(flags & FLAG_CLEAR)


def newer(seq, last):
    """seq comes after last (u32 sequence numbers, wrapping)."""
    return 0 < ((seq - last) & 0xFFFFFFFF) < 0x80000000


def _die_with_parent():
    """In the board process: SIGTERM when the robot's process dies (Linux)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)   # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


def parse_address(text):
    host, sep, port = str(text).rpartition(':')
    try:
        port = int(port)
    except ValueError:
        port = -1
    if not sep or not host or not 0 <= port <= 65535:
        raise ValueError("address must be HOST:PORT, got %r" % (text,))
    return host, port


class RemoteBoards(JointBoards):
    name = 'remote'
    simulated = False                 # hardware as far as the robot knows: no sim abilities
    owns_clock = True
    OPTIONS = {
        'serve': BackendOption(bool, True, 'start a board process (the embedded plant behind '
                               'the protocol) on a free loopback port'),
        'address': BackendOption(str, '127.0.0.1:27100', "the boards' HOST:PORT when not serve"),
        'max_missed': BackendOption(int, MAX_MISSED, 'cycles without a state bridged before '
                                    'the boards are faulted'),
    }

    def __init__(self, model, joint_names=BOARD_JOINTS, serve=True, address='127.0.0.1:27100',
                 max_missed=MAX_MISSED):
        if int(max_missed) < 1:
            raise ValueError('max_missed must be >= 1, got %r' % (max_missed,))
        self.joint_names = tuple(joint_names)
        self.serve = bool(serve)
        self.address = None if self.serve else parse_address(address)
        self.max_missed = int(max_missed)
        self._urdf = model.urdf_xml
        n = len(self.joint_names)
        self._reading = BoardsReading(np.zeros(n), np.zeros(n), np.zeros(n), 0.0, True, '')
        self.brakes = True
        self._torque = np.zeros(n)
        self._sock = None
        self._server = None
        self._seq = 0                 # last STATE seq taken
        self._cmd_seq = 0
        self._clear = False
        self._cleared_at = 0          # the COMMAND seq that carried the last clear
        self._deadline = 0.0          # monotonic time the current cycle is bridged at
        self.missed = 0               # bridged cycles in a row
        self.stats = {'states': 0, 'dropped_late': 0, 'bridged': 0, 'malformed': 0}
        # Round trips: a COMMAND's send time, by seq (the last 256), and the time until a
        # STATE acknowledged it (s; the last ROUND_TRIPS, for the bench).
        self._sent_seq = [0] * 256
        self._sent_t = [0.0] * 256
        self.round_trips = collections.deque(maxlen=ROUND_TRIPS)

    # --- lifecycle -----------------------------------------------------------------------
    def on_configure(self):
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        self._sock.bind(('127.0.0.1' if self.serve else '', 0))
        if self.serve:
            self._server = subprocess.Popen(
                [sys.executable, '-m', 'intera_rt.boards.board_server', '--port', '0',
                 '--announce', '--priority', str(BOARD_PRIORITY)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env=dict(os.environ, PYTHONUNBUFFERED='1'), preexec_fn=_die_with_parent)
            self._server.stdin.write(self._urdf.encode() if isinstance(self._urdf, str) else self._urdf)
            self._server.stdin.close()
            ready, _, _ = select.select([self._server.stdout], [], [], CONNECT_TIMEOUT)
            line = self._server.stdout.readline().decode().strip() if ready else ''
            if not line.startswith('port '):
                self.on_shutdown()
                raise BoardsError('the board process did not start (%s)' % (line or 'no answer'))
            self.address = ('127.0.0.1', int(line.split()[1]))
        # Say hello (the boards answer whoever commands them) until the first state comes.
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while time.monotonic() < deadline:
            self._send()
            if self._receive(0.05):
                self._deadline = time.monotonic() + WAIT
                return
        self.on_shutdown()
        raise BoardsError('no state from the joint boards at %s:%d within %.0f s'
                          % (self.address + (CONNECT_TIMEOUT,)))

    def on_shutdown(self):
        if self._sock is not None:
            try:
                self._send()          # brakes (deactivate set them) on the boards' next cycle
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(5.0)
            except subprocess.TimeoutExpired:
                self._server.kill()
            self._server = None

    def describe(self):
        return 'the remote backend'

    # --- the cycle -----------------------------------------------------------------------
    def wait_cycle(self, timeout):
        """The next STATE, or a bridged cycle after WAIT (at most `timeout`)."""
        now = time.monotonic()
        wait = max(0.0, min(self._deadline, now + timeout) - now)
        if self._receive(wait):
            self.missed = 0
            self._deadline = time.monotonic() + WAIT
            return True
        # Bridged: the last state stands, a period later.
        self.missed += 1
        self.stats['bridged'] += 1
        r = self._reading
        self._reading = BoardsReading(r.position, r.velocity, r.effort, r.time + LOOP_PERIOD,
                                      r.brakes, r.fault)
        self._deadline = max(self._deadline + LOOP_PERIOD, time.monotonic())
        if self.missed >= self.max_missed:
            self.report_fault('no state from the joint boards for %d ms (the last was #%d)'
                              % (self.missed, self._seq))
        return False

    def _receive(self, wait):
        """Take the newest valid STATE that arrives within `wait` s (draining the socket);
        True when one did."""
        sock = self._sock
        got = False
        ready, _, _ = select.select([sock], [], [], wait)
        while ready:
            try:
                data = sock.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            try:
                seq, ack, t, q, qd, eff, brakes, fault = unpack_state(data)
            except ValueError:
                self.stats['malformed'] += 1
                continue
            if self.stats['states'] and not newer(seq, self._seq):
                self.stats['dropped_late'] += 1          # late or reordered
                continue
            if len(q) != len(self.joint_names):
                self.stats['malformed'] += 1
                continue
            self._seq = seq
            self.stats['states'] += 1
            if ack and self._sent_seq[ack & 255] == ack:
                self.round_trips.append(time.perf_counter() - self._sent_t[ack & 255])
                self._sent_seq[ack & 255] = 0
            if fault and self._cleared_at and not newer(ack, self._cleared_at - 1):
                fault = ''            # from before the boards saw the robot's clear
            # (never back in time: a bridged cycle may have run ahead of the boards' clock)
            self._reading = BoardsReading(q, qd, eff, max(t, self._reading.time), brakes, fault)
            if fault:
                self.report_fault(fault)
            got = True
        return got

    def _send(self):
        self._cmd_seq += 1
        k = self._cmd_seq & 255
        self._sent_seq[k], self._sent_t[k] = self._cmd_seq & 0xFFFFFFFF, time.perf_counter()
        self._sock.sendto(pack_command(self._cmd_seq, self._seq, self._torque, self.brakes,
                                       self._clear), self.address)

    def read(self, time=None, period=None):
        r = self._reading
        if r.fault != self._fault or (not r.brakes and self.brakes):
            r = BoardsReading(r.position, r.velocity, r.effort, r.time, r.brakes or self.brakes,
                              r.fault or self._fault)
        return r

    def write(self, torque, time=None, period=None):
        torque = np.asarray(torque, dtype=float)
        self._torque = np.where(np.isfinite(torque), torque, 0.0)
        self._send()
        self._clear = False

    def set_brakes(self, engaged):
        self.brakes = bool(engaged)

    def on_clear_fault(self):
        if self.missed:
            return 'still no state from the joint boards (%d ms)' % self.missed
        # The boards clear theirs with the next command; states they sent before it still
        # carry it, and are read as healthy.
        self._clear = True
        self._cleared_at = (self._cmd_seq + 1) & 0xFFFFFFFF
        r = self._reading
        self._reading = BoardsReading(r.position, r.velocity, r.effort, r.time, r.brakes, '')
        return ''

    def __del__(self):
        try:
            self.on_shutdown()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

