"""Boards benchmark (no ROS): the realtime core's tick on each backend side by side, and the
out-of-process boards' timing.

core_tick  RealtimeCore.tick() with every plugin on, holding and then moving right_j0..6
           through a position move, on the embedded plant and on MuJoCo (lockstep; the
           plant's step included): mean / p50 / p99 µs.
remote     the core on `--backend remote` with its board process (1 kHz, wall clock) for
           `duration` s, ticking on each state: the tick's compute (µs, without the wait
           for the state), the protocol round trip (a COMMAND sent → the STATE that
           acknowledges it received: the boards' cycle and two UDP hops), states received,
           cycles bridged (no state within 1.5 ms), late states dropped, and the loss
           tolerated before the fault (max_missed ms).

    scripts/bench --only boards
"""
import time

import numpy as np

from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.robot import ARM_JOINTS, NEUTRAL


def _stats(values):
    v = np.asarray(values)
    return {'mean': float(v.mean()), 'p50': float(np.percentile(v, 50)),
            'p99': float(np.percentile(v, 99)), 'max': float(v.max()), 'n': int(len(v))}


def _moves(core, i):
    """A slow position move of every arm joint, out and back every 2 s."""
    if i % 10 == 0:
        phase = (i // 2000) % 2
        target = np.array(NEUTRAL) + (0.3 if phase else -0.3)
        core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=tuple(target)))


def core_tick(model, backend, ticks):
    from intera_rt.realtime.core import RealtimeCore
    core = RealtimeCore(model, backend, q_arm=list(NEUTRAL))
    core.apply(cmds.SetSpeedRatio(ratio=0.3))
    for _ in range(500):
        core.tick()
    out = {}
    for label, command in (('hold', None), ('move', _moves)):
        times = np.empty(ticks)
        for i in range(ticks):
            if command is not None:
                command(core, i)
            t0 = time.perf_counter()
            core.tick()
            times[i] = 1e6 * (time.perf_counter() - t0)
        out[label + '_us'] = _stats(times)
    core.close()
    return out


def remote(model, duration):
    from intera_rt.realtime.core import RealtimeCore
    core = RealtimeCore(model, 'remote', q_arm=list(NEUTRAL))
    boards = core.boards
    n = int(duration * 1000)
    compute = np.empty(n)
    errors = 0
    for i in range(n):
        boards.wait_cycle(0.01)
        _moves(core, i)
        t0 = time.perf_counter()
        core.tick()
        compute[i] = 1e6 * (time.perf_counter() - t0)
        errors += bool(core.state.error)
    trips = 1e3 * np.asarray(boards.round_trips)
    out = {'duration_s': duration, 'tick_compute_us': _stats(compute),
           'round_trip_ms': _stats(trips) if len(trips) else None,
           'states': boards.stats['states'], 'bridged': boards.stats['bridged'],
           'dropped_late': boards.stats['dropped_late'], 'ticks_in_error': errors,
           'loss_tolerated_ms': boards.max_missed, 'fault': boards.fault}
    core.close()
    return out


def run(quick=False):
    model = RobotModel.from_file()
    ticks = 2000 if quick else 10000
    out = {'core_tick': {b: core_tick(model, b, ticks) for b in ('embedded', 'mujoco')},
           'remote': remote(model, 3.0 if quick else 20.0)}
    lines = ['core tick, every plugin on, mean / p99 us: embedded | mujoco']
    for label in ('hold_us', 'move_us'):
        e, m = out['core_tick']['embedded'][label], out['core_tick']['mujoco'][label]
        lines.append('  %-5s %.0f / %.0f | %.0f / %.0f' % (label[:-3], e['mean'], e['p99'],
                                                          m['mean'], m['p99']))
    r = out['remote']
    rt = r['round_trip_ms'] or {'p50': float('nan'), 'p99': float('nan'), 'max': float('nan')}
    lines.append('remote boards over UDP (%.0f s): tick %.0f / p99 %.0f us; command -> acknowledging '
                 'state p50 %.2f, p99 %.2f, max %.2f ms; %d states, %d cycles bridged, %d late '
                 'dropped, %d ticks in error; loss tolerated %d ms'
                 % (r['duration_s'], r['tick_compute_us']['mean'], r['tick_compute_us']['p99'],
                    rt['p50'], rt['p99'], rt['max'], r['states'], r['bridged'], r['dropped_late'],
                    r['ticks_in_error'], r['loss_tolerated_ms']))
    out['summary'] = lines
    return out
