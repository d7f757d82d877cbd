"""The motion section's Cartesian success rates: goals as go_to_cartesian_pose.py sends them,
from several starts to random reachable poses, every failure counted with its error id and
checked for whether any continuous joint path existed."""
import collections
import time

import numpy as np

from intera_rt.bench.continuity import Continuity
from intera_rt.bench.motion_goals import BIAS, NEUTRAL, sdk_cartesian_goal
from intera_rt.motion.errors import MotionError


def success_rates(bench, goals, oracle_s=20.0, oracle_total_s=300.0, seed=1):
    """Cartesian goals planned as the motion controller plans them, from several starting
    poses, to random poses the IK service reaches without collision (MotionBench.reachable):

      start  default_waypoint  [0, −0.9, 0, 1.8, 0, −0.9, 0]: where go_to_cartesian_pose.py
                               puts the arm when run without arguments (MotionWaypoint's
                               default joint angles, contract §7, §9.1) — a new user's start
             neutral           the robot's neutral pose
             random            the IK service's solution for a random reachable pose (where
                               an earlier goal may have left the arm), a new one per goal
      goal   single            one pose
             multi             three poses, corners blended over 5 cm
      poses  front             in front, the tool down ±0.3 rad, turned ±90° about the vertical
             any               any orientation anywhere in a box in front (single poses only)

    Every goal's outcome is counted: success, or its error id. A failure is then checked by
    the independent continuity check (bench.continuity, up to oracle_s s each, oracle_total_s
    in all): 'no_continuous_path' when no continuous joint path follows the designed path
    at all (nothing could succeed), 'planner_missed' when one exists, 'unverified' when the
    check ran out of time."""
    rng = np.random.default_rng(seed)
    check = Continuity(bench.endpoint, bench.collision)
    oracle_left = oracle_total_s
    rows = {}
    cases = [(start, kind, poses) for poses in ('front', 'any') for start in ('default_waypoint', 'neutral', 'random')
             for kind in ('single', 'multi') if poses == 'front' or kind == 'single']
    for start, kind, poses in cases:
        n = goals if poses == 'front' else max(10, goals // 2)
        outcome = collections.Counter()
        failures = []
        cpu = []
        for _ in range(n):
            if start == 'default_waypoint':
                q0 = np.array(BIAS)
            elif start == 'neutral':
                q0 = NEUTRAL.copy()
            else:
                q0 = bench.reachable(rng)[1]
            targets = [bench.reachable(rng, poses)[0] for _ in range(1 if kind == 'single' else 3)]
            traj = sdk_cartesian_goal(targets, q0, corner=0.05 if kind == 'multi' else 0.0)
            request = bench.planner.parse(traj)
            c0 = time.thread_time()
            try:
                bench.planner.plan(request, q0)
                outcome['success'] += 1
            except MotionError as exc:
                outcome[exc.error_id] += 1
                failures.append((exc.error_id, q0, request))
            cpu.append(time.thread_time() - c0)
        verdicts = collections.Counter()
        for error_id, q0, request in failures:
            if oracle_left <= 0:
                verdicts['unverified'] += 1
                continue
            t0 = time.monotonic()
            found, _ = check.check(q0, bench.planner.cartesian.path(q0, request),
                                   deadline=t0 + min(oracle_s, oracle_left))
            oracle_left -= time.monotonic() - t0
            verdicts['unverified' if found is None else 'planner_missed' if found else 'no_continuous_path'] += 1
        ok = outcome['success']
        rows['%s_%s_%s' % (poses, kind, start)] = {
            'goals': n, 'success': ok, 'success_rate': ok / n,
            'failures_by_error_id': {k: v for k, v in outcome.items() if k != 'success'},
            'failures_checked': dict(verdicts),
            'success_rate_where_a_path_exists': ok / max(1, n - verdicts['no_continuous_path']),
            'planning_cpu_p50_ms': 1e3 * float(np.percentile(cpu, 50)),
            'planning_cpu_p99_ms': 1e3 * float(np.percentile(cpu, 99))}
    front = [r for k, r in rows.items() if k.startswith('front_')]
    total = sum(r['goals'] for r in front)
    ok = sum(r['success'] for r in front)
    by_id = collections.Counter()
    for r in front:
        by_id.update(r['failures_by_error_id'])
    return {'rows': rows, 'front_goals': total, 'front_success_rate': ok / total,
            'front_failures_by_error_id': dict(by_id)}
