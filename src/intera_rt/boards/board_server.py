"""A board process: the embedded plant behind the remote joint-boards protocol
(intera_rt.boards.remote), paced at 1 kHz by the wall clock, as an arm's boards are.

    python -m intera_rt.boards.board_server [--port P] [--urdf FILE] [--announce] [--priority N]

Each cycle: apply the newest COMMAND received (torques, brakes, clear the fault), step the
plant 1 ms, send one STATE to whoever last commanded. With no COMMAND for WATCHDOG cycles
the brakes engage and the torques drop to zero (a robot that stopped talking must not leave
the arm driven). --announce prints 'port N' once bound (the remote backend starts it so);
without --urdf the URDF is read from stdin when it is not a terminal, else the project's.
--priority N runs the cycle under SCHED_FIFO priority N (root or CAP_SYS_NICE; 0, the
default: ordinary priority), so that a loaded machine does not stall the boards as it
would not stall an arm's: the remote backend starts its own board process so.
"""
import argparse
import os
import socket
import sys
import time

import numpy as np

from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.boards.pacing import WallPacer
from intera_rt.boards.remote import newer, pack_state, unpack_command
from intera_rt.model import RobotModel
from intera_rt.robot import HEAD_NAMED_POSES, LOOP_PERIOD, NEUTRAL

WATCHDOG = 20                 # cycles without a COMMAND before the brakes engage
ORPHANED = 5000               # cycles without a COMMAND, once commanded, before it exits


class BoardServer:
    """The plant and its socket; `cycle()` runs one boards cycle (tests call it directly)."""

    def __init__(self, model, port=0, host='127.0.0.1', q=None):
        self.plant = EmbeddedBoards(model)
        self.plant.reset_pose(np.r_[NEUTRAL, HEAD_NAMED_POSES['neutral']] if q is None else q)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.port = self.sock.getsockname()[1]
        self.peer = None
        self.seq = 0
        self.ack = 0                  # last COMMAND applied
        self.silent = WATCHDOG        # cycles since the last COMMAND
        self.drop = 0                 # tests: STATEs not to send
        self.clock = None             # callable: the boards' time (s); None: plant time

    def _commands(self):
        latest = None
        while True:
            try:
                data, peer = self.sock.recvfrom(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return latest
            try:
                cmd = unpack_command(data)
            except ValueError:
                continue
            if self.ack and not newer(cmd[0], self.ack) and peer == self.peer:
                continue              # late or reordered
            self.peer, self.ack, latest = peer, cmd[0], cmd

    def cycle(self, dt=LOOP_PERIOD):
        plant = self.plant
        cmd = self._commands()
        if cmd is not None:
            _, _, torque, brakes, clear = cmd
            self.silent = 0
            if clear:
                plant.clear_fault()
            if len(torque) == len(plant.joint_names):
                plant.write(torque)
            plant.set_brakes(brakes)
        else:
            self.silent += 1
            if self.silent == WATCHDOG:
                plant.set_brakes(True)
                plant.write(np.zeros(len(plant.joint_names)))
        plant.advance(dt)
        self.seq += 1
        if self.peer is not None:
            if self.drop:
                self.drop -= 1
                return
            r = plant.read()
            t = r.time if self.clock is None else self.clock()
            self.sock.sendto(pack_state(self.seq, self.ack, t, r.position, r.velocity,
                                        r.effort, r.brakes, r.fault), self.peer)

    def serve(self, period=LOOP_PERIOD):
        """Cycle at 1/period Hz by the wall clock until killed, or ORPHANED cycles after its
        robot stopped commanding (a late cycle is not made up: the boards skip, as hardware
        does)."""
        pacer = WallPacer(period, resync_after=10)
        # The boards' clock is a clock: a stalled cycle does not stop it.
        self.clock = lambda origin=pacer.start: time.perf_counter() - origin
        while self.peer is None or self.silent < ORPHANED:
            self.cycle(period)
            pacer.wait()


def main(argv=None):
    p = argparse.ArgumentParser(prog='board_server', description=__doc__.split('\n\n')[0])
    p.add_argument('--port', type=int, default=27100)
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--urdf', default=None)
    p.add_argument('--announce', action='store_true')
    p.add_argument('--priority', type=int, default=0)
    a = p.parse_args(argv)
    if a.priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(a.priority))
        except (OSError, AttributeError) as exc:
            print('board_server: no SCHED_FIFO priority %d (%s): cycles may be late under load'
                  % (a.priority, exc), file=sys.stderr, flush=True)
    text = sys.stdin.read() if not a.urdf and not sys.stdin.isatty() else ''
    model = RobotModel.load(a.urdf, text)
    server = BoardServer(model, a.port, a.host)
    if a.announce:
        print('port %d' % server.port, flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:
        return 0


if __name__ == '__main__':
    sys.exit(main())
