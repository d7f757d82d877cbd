"""Collision-avoidance benchmark: per-call cost of the stage's update (the 1 kHz path) and
of velocity_scale, in-process, at fixed poses.

    scripts/env python -m intera_rt.bench.avoidance      # prints the run() dict as JSON

Cases (n calls each after 500 warm-up calls, garbage collector off; µs of wall clock per
call: mean, p50, p99):
  update    neutral (nothing overlaps), one pair pushing (the hand over the arm base,
            j1 = −0.1), two pairs (the hand folded into the shoulder), shipping at rest
            (26 pairs deep in their allowances, none pushing).
  scale     nothing in the zone, one pair in it (neutral), the hand near the shoulder
            closing / opening, shipping folding further / unfolding (29 pairs in the zone).
"""
import gc
import json
import sys
import time

import numpy as np

from intera_rt.control.base import ArmState, PluginContext, Suppressions
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.model import RobotModel
from intera_rt.robot import HEAD_NAMED_POSES, NEUTRAL, SHIPPING


class _Controller:
    collision_avoidance = True


def _pose(base, joint, value):
    q = np.array(base, dtype=float)
    q[joint] = value
    return q


def _time(fn, n):
    for _ in range(500):
        fn()
    ts = np.empty(n)
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for i in range(n):
            t0 = clock()
            fn()
            ts[i] = clock() - t0
    finally:
        gc.enable()
    ts /= 1000.0
    return {'mean_us': float(ts.mean()), 'p50_us': float(np.percentile(ts, 50)),
            'p99_us': float(np.percentile(ts, 99))}


def run(n=20000, quick=False):
    """Returns {'update': {case: {mean_us, p50_us, p99_us, contacts}}, 'scale': {case:
    {..., in_zone, scale}}, 'setup_s'}."""
    n = 500 if quick else n
    t0 = time.perf_counter()
    model = RobotModel.from_file()
    stage = CollisionAvoidance(PluginContext(model, None))
    setup = time.perf_counter() - t0
    avoid, dyn, sup = stage.model, model.arm_dynamics, Suppressions()
    shipping_head = HEAD_NAMED_POSES['shipping']
    out = {'update': {}, 'scale': {}, 'setup_s': setup, 'pairs': len(avoid.pairs)}
    for name, q, head in (('neutral', np.array(NEUTRAL), 0.0),
                          ('one_pair', _pose(NEUTRAL, 1, -0.1), 0.0),
                          ('two_pairs', _pose(NEUTRAL, 3, 2.66), 0.0),
                          ('shipping_rest', np.array(SHIPPING), shipping_head)):
        state = ArmState(0.0, 0.001, q, np.full(7, 0.1), np.zeros(7), head, 0.0, dyn, sup)
        out['update'][name] = dict(_time(lambda: stage.update(state, _Controller, None), n),
                                   contacts=len(avoid.contacts(q, head)))
    fold = np.eye(7)[3]
    far = np.array([0.0, -1.0, 0.0, 1.0, 0.0, 0.5, 0.0])
    for name, q, head, qd in (('nothing_in_zone', far, 0.0, np.full(7, 0.2)),
                              ('neutral', np.array(NEUTRAL), 0.0, np.full(7, 0.2)),
                              ('near_closing', _pose(NEUTRAL, 3, 2.54), 0.0, fold),
                              ('near_opening', _pose(NEUTRAL, 3, 2.54), 0.0, -fold),
                              ('shipping_folding', np.array(SHIPPING), shipping_head, fold),
                              ('shipping_unfolding', np.array(SHIPPING), shipping_head, -fold)):
        out['scale'][name] = dict(_time(lambda: avoid.velocity_scale(q, head, qd), n),
                                  in_zone=len(avoid.contacts(q, head, near_zone=True)),
                                  scale=avoid.velocity_scale(q, head, qd))
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(run(int(argv[0])) if argv else run(), indent=2))


if __name__ == '__main__':
    main()
