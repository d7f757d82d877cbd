"""IK benchmark: success rate and in-process solve times of the IK core.

    scripts/env python -m intera_rt.bench.ik      # prints the run() dict as JSON

Poses are the right_hand FK of random configurations uniform within the joint limits
(seeded); each is solved with SEED_AUTO from current = neutral, as the IK service would.
Two sets:
  service     collision-free configurations, collision checks on (the service's answer:
              success = a collision-free solution within tolerance and limits);
  kinematic   any configuration, collision checks off (pure kinematics).
Times are wall-clock per solve() call (time.perf_counter), plus CPU time of the thread
(time.thread_time), which a busy machine disturbs less.
"""
import json
import sys
import time

import numpy as np

from intera_rt import robot
from intera_rt.model import RobotModel
from intera_rt.model.collision import CollisionModel
from intera_rt.model.ik import (ORIENTATION_TOLERANCE, POSITION_TOLERANCE, SEED_AUTO,
                                IKSolver)

NEUTRAL = np.array(robot.NEUTRAL)
TIP = 'right_hand'


def _poses(solver, n, seed, collision_free):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q = rng.uniform(solver.lo, solver.hi)
        if collision_free and solver.in_collision(q):
            continue
        out.append(solver.fk(TIP, q))
    return out


def _run_set(solver, poses, check_collision):
    wall, cpu, ok, attempts, restarts = [], [], 0, [], 0
    for pos, quat in poses:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = solver.solve(TIP, pos, quat, NEUTRAL, SEED_AUTO, check_collision=check_collision)
        c1, t1 = time.thread_time(), time.perf_counter()
        wall.append(t1 - t0)
        cpu.append(c1 - c0)
        attempts.append(result.attempts)
        if result.ok and result.position_error <= POSITION_TOLERANCE \
                and result.orientation_error <= ORIENTATION_TOLERANCE \
                and np.all(result.q >= solver.lo) and np.all(result.q <= solver.hi):
            ok += 1
            restarts += result.seed.endswith('perturbed')
    wall = np.array(wall) * 1e3
    cpu = np.array(cpu) * 1e3
    return {
        'poses': len(poses),
        'success_rate': ok / len(poses),
        'solved_by_widened_search': restarts,
        'mean_attempts': float(np.mean(attempts)),
        'p50_ms': float(np.percentile(wall, 50)),
        'p99_ms': float(np.percentile(wall, 99)),
        'max_ms': float(wall.max()),
        'cpu_p50_ms': float(np.percentile(cpu, 50)),
        'cpu_p99_ms': float(np.percentile(cpu, 99)),
    }


def run(n=1000, seed=2024):
    """Returns {'success_rate', 'p50_ms', 'p99_ms', ... (service set, SEED_AUTO),
    'kinematic': {...}, 'setup_s': ...}."""
    t0 = time.perf_counter()
    model = RobotModel.from_file()
    collision = CollisionModel(model.urdf_xml)
    solver = IKSolver(model, collision)
    setup = time.perf_counter() - t0
    solver.solve(TIP, *solver.fk(TIP, NEUTRAL), NEUTRAL)          # warm the tip's caches
    service = _run_set(solver, _poses(solver, n, seed, True), True)
    kinematic = _run_set(solver, _poses(solver, n, seed + 1, False), False)
    out = {'seed_mode': 'SEED_AUTO', 'current': 'neutral', 'tip': TIP,
           'position_tolerance_m': POSITION_TOLERANCE,
           'orientation_tolerance_rad': ORIENTATION_TOLERANCE}
    out.update(service)
    out['kinematic'] = kinematic
    out['setup_s'] = setup
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else 1000
    print(json.dumps(run(n), indent=2))


if __name__ == '__main__':
    main()
