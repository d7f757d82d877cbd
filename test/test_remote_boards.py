"""Out-of-process joint boards (boards.remote, boards.board_server), no ROS: the wire
protocol, late and reordered states dropped, missed states bridged for a few cycles and then
a fault that stops the robot with an error saying why, recovery after reset; and the robot
on a board process of its own (`serve`), holding and moving.

The protocol cases drive a BoardServer in this process cycle by cycle (deterministic: a
datagram on loopback is in the robot's socket when sendto returns); the last test runs the
real board process, paced by the wall clock."""
import socket
import threading

import numpy as np
import pytest

from intera_rt.boards import make_boards
from intera_rt.boards.board_server import BoardServer
from intera_rt.boards.remote import (MAX_MISSED, newer, pack_command, pack_state, unpack_command,
                                     unpack_state)
from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

MODEL = RobotModel.from_file()


def test_protocol_round_trip():
    q, qd, eff = np.arange(8.0), -np.arange(8.0), np.full(8, 0.5)
    data = pack_state(7, 3, 12.5, q, qd, eff, True, 'right_j1 board: over-current')
    seq, ack, t, q2, qd2, eff2, brakes, fault = unpack_state(data)
    assert (seq, ack, t, brakes, fault) == (7, 3, 12.5, True, 'right_j1 board: over-current')
    np.testing.assert_array_equal(np.r_[q2, qd2, eff2], np.r_[q, qd, eff])
    assert unpack_command(pack_command(9, 7, eff, False, clear=True))[:2] == (9, 7)
    assert unpack_command(pack_command(9, 7, eff, False, clear=True))[3:] == (False, True)
    with pytest.raises(ValueError, match='not a version 1 STATE'):
        unpack_state(b'IRTC' + data[4:])
    with pytest.raises(ValueError, match='too short'):
        unpack_state(data[:30])
    assert newer(1, 0xFFFFFFFF) and newer(5, 4) and not newer(4, 5) and not newer(4, 4)


class Bench:
    """A BoardServer in this process and the robot's remote boards on it, cycled together."""

    def __init__(self, core=False, max_missed=MAX_MISSED):
        self.server = BoardServer(MODEL)
        options = {'serve': False, 'address': '127.0.0.1:%d' % self.server.port,
                   'max_missed': max_missed}
        # configure() waits for a first state: cycle the boards meanwhile.
        done = threading.Event()

        def boards_until_configured():
            while not done.wait(0.001):
                self.server.cycle()
        helper = threading.Thread(target=boards_until_configured, daemon=True)
        helper.start()
        try:
            if core:
                self.core = RealtimeCore(MODEL, 'remote', backend_options=options)
                self.boards = self.core.boards
            else:
                self.core = None
                self.boards = make_boards('remote', MODEL, options)
                self.boards.configure()
                self.boards.activate()
        finally:
            done.set()
            helper.join()

    def cycle(self, n=1, drop=False):
        """n cycles: the boards step (and send a state unless dropped), the robot ticks."""
        for _ in range(n):
            self.server.drop = 1 if drop else 0
            self.server.cycle()
            self.boards.wait_cycle(0.05)
            if self.core is not None:
                self.core.tick()
            else:
                self.boards.write(np.zeros(8))

    def close(self):
        if self.core is not None:
            self.core.close()
        else:
            self.boards.shutdown()
        self.server.sock.close()


def test_late_and_reordered_states_are_dropped():
    bench = Bench()
    b = bench.boards
    bench.cycle(5)
    last = b.read().time
    robot = b._sock.getsockname()
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    q = np.full(8, 0.25)
    seq = bench.server.seq
    raw.sendto(pack_state(seq + 2, 0, last + 0.002, q, np.zeros(8), np.zeros(8), False), robot)
    raw.sendto(pack_state(seq + 1, 0, last + 0.001, q + 1, np.zeros(8), np.zeros(8), False), robot)
    raw.sendto(b'not a state', robot)
    assert b.wait_cycle(0.05)
    r = b.read()
    assert r.position.tolist() == q.tolist() and r.time == pytest.approx(last + 0.002)
    assert b.stats['dropped_late'] == 1 and b.stats['malformed'] == 1
    raw.close()
    bench.close()


def test_missed_states_are_bridged_then_fault_the_boards():
    bench = Bench()
    b = bench.boards
    bench.cycle(5)
    before = b.read()
    bench.cycle(MAX_MISSED - 1, drop=True)                  # bridged: the last state stands
    r = b.read()
    assert not b.fault and r.position.tolist() == before.position.tolist()
    assert r.time == pytest.approx(before.time + (MAX_MISSED - 1) * 0.001)
    bench.cycle(1)                                          # a state again: all is well
    assert not b.fault and b.missed == 0
    bench.cycle(MAX_MISSED, drop=True)
    assert b.read().fault.startswith('no state from the joint boards for %d ms' % MAX_MISSED)
    bench.close()


def test_packet_loss_stops_the_robot_with_an_error_and_reset_recovers():
    bench = Bench(core=True)
    core, b = bench.core, bench.boards
    bench.cycle(50)
    assert not b.read().brakes and StateView(core.state_vector()).enabled == 1.0
    core.take_logs()
    bench.cycle(MAX_MISSED + 5, drop=True)
    v = core.state_vector()
    assert StateView(v).error == 1.0 and b.read().brakes
    (line,) = [text for level, key, text in core.take_logs() if key == 'boards-fault']
    assert line.startswith('joint boards fault: no state from the joint boards for 20 ms')
    core.apply(cmds.Reset())                                # still nothing: refused
    bench.cycle(1, drop=True)
    assert StateView(core.state_vector()).error == 1.0
    assert any('reset refused' in text and 'still no state from the joint boards' in text
               for _, _, text in core.take_logs())
    bench.cycle(5)                                          # the boards are back
    core.apply(cmds.Reset())
    core.apply(cmds.SetEnable(on=True))
    bench.cycle(30)
    assert StateView(core.state_vector()).error == 0.0 and not b.read().brakes
    q0 = b.read().position.copy()
    target = np.array(q0[:7])
    target[5] += 0.1
    for _ in range(60):
        core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=tuple(target)))
        bench.cycle(10)
    assert b.read().position[5] - q0[5] > 0.05
    bench.close()


def test_a_board_fault_reaches_the_robot_and_is_cleared_by_reset():
    bench = Bench(core=True)
    core, b = bench.core, bench.boards
    bench.cycle(20)
    bench.server.plant.inject_fault('right_j4 board: over-temperature')
    bench.cycle(2)
    assert StateView(core.state_vector()).error == 1.0
    assert any(text.startswith('joint boards fault: right_j4 board: over-temperature')
               for _, _, text in core.take_logs())
    core.apply(cmds.Reset())                                # clears the boards' fault too
    core.apply(cmds.SetEnable(on=True))
    bench.cycle(20)
    assert StateView(core.state_vector()).error == 0.0 and not bench.server.plant.fault
    bench.close()


def test_the_robot_on_a_board_process_of_its_own():
    # The board process is paced by the wall clock: on a loaded 2-core VM it can stall for
    # more than the default 20 ms, which faults the boards as it should (the protocol tests
    # above check that). Holding and moving is this test's subject, so it tolerates 250 ms.
    core = RealtimeCore(MODEL, 'remote', q_arm=list(NEUTRAL), backend_options={'max_missed': 250})
    b = core.boards
    assert b._server is not None and b._server.poll() is None
    for _ in range(500):
        b.wait_cycle(0.01)
        core.tick()
    target = np.array(NEUTRAL)
    target[5] += 0.2
    for i in range(1500):
        if i % 10 == 0:
            core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=tuple(target)))
        b.wait_cycle(0.01)
        core.tick()
    assert StateView(core.state_vector()).error == 0.0, [t for _, _, t in core.take_logs()][:3]
    assert b.read().position[5] - NEUTRAL[5] == pytest.approx(0.2, abs=0.01)
    server = b._server
    core.close()
    assert server.poll() is not None                        # the board process is gone
