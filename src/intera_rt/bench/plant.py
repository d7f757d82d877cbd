"""Plant benchmark: cost of one 1 kHz tick of each simulated plant (JointBoards.advance of the
embedded plant and of MuJoCo, side by side), without obstacles, with one obstacle out of the
arm's reach, one within reach but not touching, one the hand presses against (one contact),
and one pressed at two points.

    scripts/env python -m intera_rt.bench.plant     # prints the run() dict as JSON

The arm is held by a PD + gravity controller (computed outside the timed call); each
advance(0.001) is timed alone with time.perf_counter_ns. The machine is shared: compare
figures from one run, not across runs.
"""
import json
import math
import sys
import time

import numpy as np

from intera_rt.boards import make_boards
from intera_rt.model import RobotModel
from intera_rt.robot import NEUTRAL

DT = 0.001
KP = np.array([120.0, 800.0, 600.0, 600.0, 100.0, 100.0, 30.0, 10.0])
KD = np.array([15.0, 50.0, 30.0, 30.0, 6.0, 6.0, 1.5, 0.5])
PRESS_J0 = 0.45       # rad: right_j0's target in the contact cases, past the obstacle


def _wall(model):
    """A wall across the hand's path as right_j0 turns (its face the vertical plane through
    right_j0's axis 0.25 rad ahead of the hand at neutral; z 0.06..0.216 m, below right_l6):
    one contact, the hand's cylinder on the face."""
    hand = model.arm_dynamics.tip('right_hand', NEUTRAL)[0]
    rho, phi = math.hypot(hand[0], hand[1]), math.atan2(hand[1], hand[0]) + 0.25
    centre = (rho * math.cos(phi) - 0.05 * math.sin(phi),
              rho * math.sin(phi) + 0.05 * math.cos(phi), 0.138)
    return ('box', centre, (0.0, 0.0, math.sin(phi / 2), math.cos(phi / 2)), (0.2, 0.1, 0.156))


def cases(model):
    """{case: obstacle (shape, position, quaternion xyzw, size) in base, or None}. The hand
    cylinder at neutral is at about (0.45, 0.16, 0.18..0.21); in the contact cases right_j0
    is driven into the obstacle and the arm held against it."""
    return {
        'none': None,
        'far': ('box', (3.0, 0.0, 0.0), (0, 0, 0, 1), (0.3, 0.3, 0.3)),     # out of reach
        'near': ('box', (0.45, 0.45, 0.09), (0, 0, 0, 1), (0.3, 0.2, 0.2)),  # in reach, apart
        'contact': _wall(model),                                              # 1 contact
        # Driven harder into a box: the hand on its side face, right_l6 on its top.
        'contact2': ('box', (0.45, 0.33, 0.09), (0, 0, 0, 1), (0.3, 0.2, 0.2)),
    }


BACKENDS = ('embedded', 'mujoco')


def _ticks(model, case, obstacle, n, warmup, backend='embedded'):
    boards = make_boards(backend, model)
    q_ref = np.r_[NEUTRAL, 0.0]
    boards.reset_pose(q_ref)
    boards.set_brakes(False)
    kp = KP.copy()
    if obstacle is not None:
        boards.add_obstacle(case, *obstacle)
    if case.startswith('contact'):
        q_ref = q_ref.copy()
        q_ref[0] = PRESS_J0
    if case == 'contact2':
        kp[:4] = (300.0, 300.0, 150.0, 150.0)
    dyn = model.arm_dynamics
    times = np.empty(n)
    for i in range(warmup + n):
        r = boards.read()
        tau = kp * (q_ref - r.position) - KD * r.velocity
        tau[:7] += dyn.gravity(r.position[:7])
        boards.write(tau)
        t0 = time.perf_counter_ns()
        boards.advance(DT)
        t1 = time.perf_counter_ns()
        if i >= warmup:
            times[i - warmup] = (t1 - t0) * 1e-3
    return times, boards.contacts()


def run(quick=False, ticks=20000):
    """{case: {'mean_us', 'p50_us', 'p99_us', 'ticks', 'contacts' (the links touching at
    the end)}} of the embedded plant, the same under 'mujoco', and summary lines."""
    model = RobotModel.from_file()
    n = 2000 if quick else ticks
    out = {'note': 'us per JointBoards.advance(0.001), substeps 1: the embedded plant at the '
                   'top level, MuJoCo under "mujoco"'}
    summary = ['us per advance(1 ms), mean / p99: %s' % ' | '.join(BACKENDS)]
    for backend in BACKENDS:
        into = out if backend == 'embedded' else out.setdefault(backend, {})
        for case, obstacle in cases(model).items():
            times, contacts = _ticks(model, case, obstacle, n, 2000, backend)
            into[case] = {'mean_us': float(times.mean()), 'p50_us': float(np.percentile(times, 50)),
                          'p99_us': float(np.percentile(times, 99)), 'ticks': n,
                          'contacts': sorted(c.link for c in contacts)}
    for case in cases(model):
        summary.append('  %-9s %s' % (case, ' | '.join(
            '%.0f / %.0f (%d contacts)' % (r['mean_us'], r['p99_us'], len(r['contacts']))
            for r in (out[case], out['mujoco'][case]))))
    out['summary'] = summary
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(run(ticks=int(argv[0]) if argv else 20000), indent=2))


if __name__ == '__main__':
    main()
