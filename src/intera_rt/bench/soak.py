"""Soak (section soak): one robot (sim time at 1x) used for `soak` seconds by a random client
(soak_client) sending valid and invalid commands through every interface, with an E-stop and
recovery every `estop_every` s; and the robot's memory (soak_memory).
``scripts/bench --soak S`` (default 60 s, --quick 20 s).

soak     crashes: robot nodes that died or were restarted (pid changed) and the realtime
         core (target 0); motions: goals sent and terminal results received (target: every
         one); rss: each robot process's RSS every few seconds, growth from the end of the
         warm-up (every action once, then 15 % of the run) to the end (target < 5 %); tick:
         the loop's tick compute time, p99 per window, stable when the last third's median
         p99 is within 1.5x the first third's
memory   each robot process's RSS and PSS after boot and settling, and the totals
mlock    the realtime core alone under the wall clock with and without mlockall,
         alternating A/B segments: tick compute and lateness, overruns, RSS

Runs in the section's own process (one rospy node, one robot).
"""
import json
import math
import os
import random
import sys
import threading
import time

import numpy as np

from intera_rt.bench import own_robot
from intera_rt.bench.soak_client import INVALID, VALID, Client, estop_and_recover
from intera_rt.bench.soak_memory import memory_snapshot, mlock_ab, node_pids, process_name, robot_processes
from intera_rt.tooling.robot_process import ROBOT_NODES

TARGETS = {'crashes': 0, 'rss_growth_pct': 5.0, 'tick_p99_drift': 1.5, 'results_missing': 0,
           'memory_total_mb': 600.0}
BOOT_TIMEOUT = 120.0
SAMPLE_EVERY = 2.0           # s between RSS samples


# --- the soak ------------------------------------------------------------------------------------
def soak_run(duration, robot, rate=10.0, estop_every=60.0, seed=1):
    import rospy
    rospy.init_node('bench_soak', anonymous=True, disable_signals=True)
    rng = random.Random(seed)
    c = Client(rng)
    pids0 = node_pids()
    samples = []                              # (t, {name: rss_mb})
    counts, errors = {}, {}
    estops = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            snap = memory_snapshot(robot.proc.pid)
            samples.append((time.monotonic(), {n: p['rss_mb'] for n, p in snap['processes'].items()}))
            stop.wait(SAMPLE_EVERY)
    sampler = threading.Thread(target=sample, daemon=True)

    def do(action, kind):
        try:
            outcome = action(c)
        except Exception as exc:  # noqa: BLE001 - a failed call is a finding, not the end
            outcome = 'error: %s: %s' % (type(exc).__name__, str(exc).split('\n')[0][:120])
        key = '%s %s' % (kind, action.__name__[2:])
        counts[key] = counts.get(key, 0) + 1
        if outcome and outcome != 'skipped':
            errors[key + ': ' + outcome] = errors.get(key + ': ' + outcome, 0) + 1

    # warm-up: every action once, then 15 % of the run
    for action, _ in VALID:
        do(action, 'valid')
        c.wait_idle(30.0)
    for action, _ in INVALID:
        do(action, 'invalid')
    c.wait_idle(30.0)
    estops.append(estop_and_recover(c))
    sampler.start()
    t_start = time.monotonic()
    warm_end = t_start + 0.15 * duration
    next_estop = t_start + estop_every
    valid_w = [w for _, w in VALID]
    invalid_w = [w for _, w in INVALID]
    while time.monotonic() - t_start < duration:
        if time.monotonic() >= next_estop:
            estops.append(estop_and_recover(c))
            next_estop += estop_every
        if rng.random() < 0.5:
            do(rng.choices([a for a, _ in VALID], valid_w)[0], 'valid')
        else:
            do(rng.choices([a for a, _ in INVALID], invalid_w)[0], 'invalid')
        time.sleep(rng.expovariate(rate))
    t_end = time.monotonic()
    idle = c.wait_idle(60.0)
    stop.set()
    sampler.join(5.0)
    pids1 = node_pids()
    crashes = sorted(n for n in ROBOT_NODES if pids1.get(n) != pids0.get(n) or pids1.get(n) is None)
    core_alive = any(process_name(p) == 'realtime_core' for p in robot_processes(robot.proc.pid))
    return {
        'duration_s': round(t_end - t_start, 1), 'seed': seed, 'actions': counts,
        'actions_total': sum(counts.values()), 'unexpected': errors,
        'estops': len(estops), 'estop_recovery_s': {'mean': float(np.mean(estops)), 'max': float(max(estops))},
        'crashes': len(crashes) + (0 if core_alive else 1), 'crashed': crashes + ([] if core_alive else ['realtime_core']),
        'robot_alive': robot.alive(),
        'motions': {'sent': dict(c.sent), 'results': dict(c.results), 'outcomes': dict(c.outcomes),
                    'missing': sum(c.sent.values()) - sum(c.results.values()), 'all_idle': idle},
        'rss': _growth(samples, warm_end),
    }


def _growth(samples, warm_end):
    """RSS per process and total: mean over the first 10 % of the samples after the warm-up
    and over the last 10 %; growth in %."""
    after = [s for s in samples if s[0] >= warm_end] or samples
    if len(after) < 2:
        return {'error': 'too few samples (%d)' % len(samples)}
    k = max(1, len(after) // 10)
    first, last = after[:k], after[-k:]
    names = sorted(set(first[-1][1]) & set(last[-1][1]))

    def mean(block, name):
        return float(np.mean([s[1][name] for s in block if name in s[1]]))
    out = {'samples': len(samples), 'per_process': {}}
    for name in names:
        a, b = mean(first, name), mean(last, name)
        out['per_process'][name] = {'start_mb': round(a, 1), 'end_mb': round(b, 1),
                                    'growth_pct': round(100.0 * (b - a) / a, 2)}
    a = sum(mean(first, n) for n in names)
    b = sum(mean(last, n) for n in names)
    out.update(start_total_mb=round(a, 1), end_total_mb=round(b, 1),
               growth_pct=round(100.0 * (b - a) / a, 2),
               series_total_mb=[round(sum(s[1].values()), 1) for s in samples[::max(1, len(samples) // 200)]])
    return out


def tick_windows(path, window_ticks):
    """p99 of the tick compute time per window of the loop's tick log (µs)."""
    data = np.fromfile(path, dtype=np.float32).reshape(-1, 2)
    compute = data[:, 0].astype(float)
    n = len(compute) // window_ticks
    p99 = [float(np.percentile(compute[i * window_ticks:(i + 1) * window_ticks], 99)) for i in range(n)]
    out = {'ticks': int(len(compute)), 'window_ticks': window_ticks, 'p99_us': [round(x, 1) for x in p99]}
    if n >= 3:
        third = max(1, n // 3)
        a, b = float(np.median(p99[:third])), float(np.median(p99[-third:]))
        out.update(first_third_p99_us=round(a, 1), last_third_p99_us=round(b, 1),
                   drift=round(b / a, 3), stable=b <= TARGETS['tick_p99_drift'] * a)
    return out


# --- the section -----------------------------------------------------------------------------------
def run(out_dir='bench_out', quick=False, soak=None):
    duration = float(soak) if soak else (20.0 if quick else 60.0)
    out_dir = os.path.abspath(out_dir)
    os.makedirs(os.path.join(out_dir, 'logs'), exist_ok=True)
    out = {'load_avg_at_start': list(os.getloadavg())}
    tick_log = os.path.join(out_dir, 'logs', 'soak_ticks.f32')
    os.environ['INTERA_RT_TICK_LOG'] = tick_log
    log = os.path.join(out_dir, 'logs', 'soak_robot.log')
    print('[bench]   soak: boot, memory, %.0f s of random use ...' % duration, flush=True)
    with own_robot(['--sim-time', '--speed', '1'], log, BOOT_TIMEOUT) as robot:
        time.sleep(3.0 if quick else 10.0)              # the nodes settle after boot
        out['memory'] = memory_snapshot(robot.proc.pid)
        out["soak"] = soak_run(duration, robot, estop_every=8.0 if quick else 60.0)
        out['memory_after'] = memory_snapshot(robot.proc.pid)
    os.environ.pop('INTERA_RT_TICK_LOG', None)
    out['tick'] = tick_windows(tick_log, 5000 if quick else 60000)
    print('[bench]   soak: mlock A/B under the wall clock ...', flush=True)
    out['mlock'] = mlock_ab(out_dir, 1 if quick else 4, 3.0 if quick else 15.0)
    out['load_avg_at_end'] = list(os.getloadavg())
    out['targets'] = dict(TARGETS)
    out['verdict'] = _verdict(out)
    out['summary'] = _summary(out)
    return out


def _verdict(out):
    s, t = out['soak'], out['tick']
    return {'crashes': s['crashes'] <= TARGETS['crashes'],
            'results_missing': s['motions']['missing'] <= TARGETS['results_missing'],
            'rss_growth_pct': s['rss'].get('growth_pct', math.inf) < TARGETS['rss_growth_pct'],
            'tick_p99_stable': bool(t.get('stable', False)),
            'memory_total_mb': out['memory']['total_rss_mb'] <= TARGETS['memory_total_mb']}


def _summary(out):
    ok = {True: 'meets', False: 'MISSES'}
    s, m, t, v = out['soak'], out['memory'], out['tick'], out['verdict']
    mo = s['motions']
    lines = ['load average at start %s, at end %s' % tuple(
        '/'.join('%.1f' % x for x in out[k]) for k in ('load_avg_at_start', 'load_avg_at_end'))]
    lines.append('memory after boot (sim time): RSS %.0f MB in all (robot nodes and core %.0f MB), '
                 'PSS %.0f MB; target RSS <= %.0f MB: %s'
                 % (m['total_rss_mb'], m['robot_nodes_rss_mb'], m['total_pss_mb'],
                    TARGETS['memory_total_mb'], ok[v['memory_total_mb']]))
    lines.append('  ' + ', '.join('%s %.0f' % (n, p['rss_mb']) for n, p in
                                  sorted(m['processes'].items(), key=lambda kv: -kv[1]['rss_mb'])))
    lines.append('soak %.0f s: %d actions (%d valid, %d invalid), %d E-stops (recovered in %.1f s max), '
                 'crashes %d (%s)'
                 % (s['duration_s'], s['actions_total'],
                    sum(n for k, n in s['actions'].items() if k.startswith('valid')),
                    sum(n for k, n in s['actions'].items() if k.startswith('invalid')),
                    s['estops'], s['estop_recovery_s']['max'], s['crashes'], ok[v['crashes']]))
    lines.append('  motions: %d goals, %d results (%s); unexpected answers: %d'
                 % (sum(mo['sent'].values()), sum(mo['results'].values()), ok[v['results_missing']],
                    sum(s['unexpected'].values())))
    r = s['rss']
    if 'growth_pct' in r:
        lines.append('  RSS %.0f -> %.0f MB after the warm-up: %+.2f %% (target < %.0f %%: %s)'
                     % (r['start_total_mb'], r['end_total_mb'], r['growth_pct'],
                        TARGETS['rss_growth_pct'], ok[v['rss_growth_pct']]))
    if 'drift' in t:
        lines.append('  tick p99 per window: first third %.0f us, last third %.0f us (x%.2f, stable: %s)'
                     % (t['first_third_p99_us'], t['last_third_p99_us'], t['drift'], ok[v['tick_p99_stable']]))
    a = out['mlock']
    for name in ('locked', 'unlocked'):
        x = a[name]
        if 'compute_p99_us' in x:
            lines.append('mlock A/B, core alone, wall clock (%s), %s: tick p50 %.0f / p99 %.0f / max %.0f us, '
                         'lateness p99 %.0f / max %.0f us, overruns %d, RSS %s MB'
                         % (x['priority'], name, x['compute_p50_us'], x['compute_p99_us'], x['compute_max_us'],
                            x['late_p99_us'], x['late_max_us'], x['overruns'], x['rss_mb']))
    return lines


if __name__ == '__main__':
    print(json.dumps(run(quick='--quick' in sys.argv), indent=2))
