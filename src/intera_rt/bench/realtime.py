"""Realtime-loop benchmark (section realtime): tick compute time at 1 kHz, the command ->
state round trip, the machine's own platform figures and the fastest lockstep (sim-time)
speed, each measured in a child process of its own (rospy can join one master per process;
the measurements are realtime_measures). run() returns the section's dict and writes
tick_hist.png and roundtrip_cdf.png.

Child entry point: python -m intera_rt.bench.realtime measure NAME --result FILE ...
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from intera_rt.bench import own_robot
from intera_rt.bench.realtime_measures import MEASURES

TARGETS = {'tick_p99_us': 500.0, 'tick_overruns': 0, 'roundtrip_p99_ms': 3.0,
           'lockstep_speedup': 10.0}
BOOT_TIMEOUT = 120.0          # s: a loaded machine boots slowly


def _child(argv):
    p = argparse.ArgumentParser(prog='intera_rt.bench.realtime measure')
    p.add_argument('name', choices=sorted(MEASURES))
    p.add_argument('--result', required=True)
    p.add_argument('--log', required=True)
    p.add_argument('--duration', type=float, default=10.0)
    p.add_argument('--samples', type=int, default=200)
    a = p.parse_args(argv)
    fn, robot_args = MEASURES[a.name]
    log = os.path.abspath(a.log)
    if a.name == 'tick':          # the loop logs every tick's compute time there
        os.environ['INTERA_RT_TICK_LOG'] = os.path.join(os.path.dirname(log), 'ticks.f32')
    if robot_args is None:        # measures the machine, not the robot
        result = fn(a.duration)
    else:
        with own_robot(robot_args, log, BOOT_TIMEOUT):
            result = fn(a.samples) if a.name == 'roundtrip' else fn(a.duration)
            result['robot_args'] = robot_args
    with open(a.result, 'w') as f:
        json.dump(result, f)
    return 0


# --- the section ---------------------------------------------------------------------------
def measure_args(name, result, log, duration=None, samples=None):
    """The arguments after `python` that run one measurement in a process of its own
    (`-m intera_rt.bench.realtime measure NAME ...`; bench.ab runs a revision's own)."""
    args = ['-m', 'intera_rt.bench.realtime', 'measure', name, '--result', result, '--log', log]
    if duration is not None:
        args += ['--duration', repr(float(duration))]
    if samples is not None:
        args += ['--samples', str(samples)]
    return args


def _measure(name, out_dir, duration=None, samples=None):
    result = os.path.join(out_dir, '.%s.json' % name)
    log = os.path.join(out_dir, 'logs', '%s_robot.log' % name)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    cmd = [sys.executable] + measure_args(name, result, log, duration, samples)
    if os.path.exists(result):
        os.remove(result)
    limit = BOOT_TIMEOUT + 60.0 + 3.0 * (duration or 0.0) + 0.1 * (samples or 0)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=limit)
    if proc.returncode != 0 or not os.path.exists(result):
        tail = proc.stdout.decode('utf-8', 'replace').strip().splitlines()[-15:]
        raise RuntimeError('%s measurement failed (exit %s):\n%s'
                           % (name, proc.returncode, '\n'.join(tail)))
    with open(result) as f:
        data = json.load(f)
    os.remove(result)
    data['robot_log'] = log
    return data


def run(out_dir='bench_out', quick=False, duration=60.0):
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    out = {'load_avg_at_start': list(os.getloadavg())}
    errors = {}
    plans = [('platform', dict(duration=duration)),
             ('tick', dict(duration=duration)),
             ('roundtrip', dict(samples=40 if quick else 200)),
             ('lockstep', dict(duration=3.0 if quick else 10.0)),
             ('lockstep_mujoco', dict(duration=3.0 if quick else 10.0))]
    for name, kwargs in plans:
        print('[bench]   realtime/%s ...' % name, flush=True)
        try:
            out[name] = _measure(name, out_dir, **kwargs)
        except Exception as exc:  # noqa: BLE001 - report it, keep the other measurements
            errors[name] = '%s: %s' % (type(exc).__name__, exc)
    out['load_avg_at_end'] = list(os.getloadavg())
    out['targets'] = dict(TARGETS)
    out['verdict'] = _verdict(out)
    out['plots'] = _plots(out, out_dir)
    out['summary'] = _summary(out)
    if errors:
        out['error'] = '; '.join('%s: %s' % kv for kv in errors.items())
    return out


def _verdict(out):
    v = {}
    if 'tick' in out:
        v['tick_p99_us'] = out['tick']['p99_us'] <= TARGETS['tick_p99_us']
        v['tick_overruns'] = out['tick']['overruns'] <= TARGETS['tick_overruns']
    if 'roundtrip' in out:
        v['roundtrip_p99_ms'] = out['roundtrip']['roundtrip_ms']['p99'] <= TARGETS['roundtrip_p99_ms']
    if 'lockstep' in out:
        v['lockstep_speedup'] = out['lockstep']['speedup'] >= TARGETS['lockstep_speedup']
    return v


def _summary(out):
    lines = ['load average (1/5/15 min) at start %s, at end %s'
             % tuple('/'.join('%.1f' % x for x in out[k]) for k in ('load_avg_at_start',
                                                                   'load_avg_at_end'))]
    ok = {True: 'meets', False: 'MISSES'}
    if 'tick' in out:
        t = out['tick']
        lines.append('tick compute over %.0f s (%d ticks, client at %.0f Hz): mean %.0f us, '
                     'p50 %.0f, p99 %.0f, p99.9 %.0f, max %.0f us, overruns %d; lateness p99 %.0f us'
                     % (t['duration_s'], t['ticks'], t['command_rate_hz'], t['mean_us'], t['p50_us'],
                        t['p99_us'], t['p999_us'], t['max_us'], t['overruns'], t['late_p99_us']))
        lines.append('  target p99 <= %.0f us: %s; zero overruns: %s'
                     % (TARGETS['tick_p99_us'], ok[out['verdict']['tick_p99_us']],
                        ok[out['verdict']['tick_overruns']]))
    if 'platform' in out:
        p = out['platform']
        lines.append('platform, a bare 1 kHz loop alone for %.0f s (%s): overruns %d, late > 200 us %d, '
                     'lateness p99 %.0f us, max %.0f us'
                     % (p['duration_s'], p['priority'], p['overruns'], p['late_over_200us'],
                        p['late_p99_us'], p['late_max_us']))
        w = p['pipe_round_trip_us']
        lines.append('  process -> process -> back over a pipe, both idle: p50 %.0f us, p99 %.0f us; '
                     'ten million Python additions %.2f s'
                     % (w['p50'], w['p99'], p['python_1e7_additions_s']))
    if 'roundtrip' in out:
        r = out['roundtrip']
        lines.append('command -> state round trip (%d samples): p50 %.2f ms, p99 %.2f ms, max %.2f ms'
                     % (r['samples'], r['roundtrip_ms']['p50'], r['roundtrip_ms']['p99'],
                        r['roundtrip_ms']['max']))
        lines.append('  publish -> applied p50 %.2f / p99 %.2f ms; state transport p50 %.2f / '
                     'p99 %.2f ms; publish -> first 100 Hz state p50 %.2f / p99 %.2f ms'
                     % (r['publish_to_apply_ms']['p50'], r['publish_to_apply_ms']['p99'],
                        r['state_transport_ms']['p50'], r['state_transport_ms']['p99'],
                        r['publish_to_state_ms']['p50'], r['publish_to_state_ms']['p99']))
        lines.append('  target p99 <= %.0f ms: %s' % (TARGETS['roundtrip_p99_ms'],
                                                      ok[out['verdict']['roundtrip_p99_ms']]))
    if 'lockstep' in out:
        s = out['lockstep']
        lines.append('lockstep --speed max: %.2f sim s per wall s (/clock: %.2f), tick mean %.0f us'
                     % (s['speedup'], s['speedup_from_clock'], s['tick_mean_us']))
        lines.append('  target >= %.0fx: %s' % (TARGETS['lockstep_speedup'],
                                                ok[out['verdict']['lockstep_speedup']]))
        lines += _lockstep_nodes(s)
    if 'lockstep_mujoco' in out:
        s = out['lockstep_mujoco']
        lines.append('lockstep --speed max on --backend mujoco: %.2f sim s per wall s (/clock: %.2f), '
                     'tick mean %.0f us, p99 %.0f us'
                     % (s['speedup'], s['speedup_from_clock'], s['tick_mean_us'], s['tick_p99_us']))
        lines += _lockstep_nodes(s)
    return lines


def _lockstep_nodes(s):
    """The lockstep run's CPU per process and state topics' rates, as summary lines."""
    lines = []
    if s.get('cpu_per_sim_s'):
        lines.append('  CPU ms per sim s (%% of a core): %s' % ', '.join(
            '%s %.1f (%.0f %%)' % (n, 1e3 * v, 100 * s['cpu_share'][n])
            for n, v in sorted(s['cpu_per_sim_s'].items(), key=lambda kv: -kv[1])))
    if s.get('state_rates_hz'):
        lines.append('  state topics in sim time: %s (>= 95 Hz: %s)' % (', '.join(
            '%s %.1f Hz' % kv for kv in s['state_rates_hz'].items()),
            'yes' if s['state_rates_ok'] else 'NO'))
    return lines


def _plots(out, out_dir):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return {'error': 'matplotlib: %s' % exc}
    paths = {}
    if 'tick' in out:
        values = np.asarray(out['tick']['compute_us_samples'])
        fig, ax = plt.subplots(figsize=(7, 4))
        bins = np.logspace(np.log10(max(1.0, values.min()) * 0.9), np.log10(values.max() * 1.1), 60)
        ax.hist(values, bins=bins, label='ticks')
        ax.set_xscale('log')
        ax.set_yscale('log')
        ax.axvline(TARGETS['tick_p99_us'], color='k', linestyle='--', label='p99 target')
        ax.axvline(out['tick']['p99_us'], color='g', linestyle='-', label='p99 measured')
        ax.axvline(1000.0, color='r', linestyle=':', label='1 ms period')
        ax.set_xlabel('tick compute time (us)')
        ax.set_ylabel('ticks')
        ax.set_title('realtime_loop tick compute time (%d ticks, %d overruns)'
                     % (out['tick']['ticks'], out['tick']['overruns']))
        ax.legend()
        fig.tight_layout()
        paths['tick_hist'] = os.path.join(out_dir, 'tick_hist.png')
        fig.savefig(paths['tick_hist'], dpi=100)
        plt.close(fig)
    if 'roundtrip' in out:
        fig, ax = plt.subplots(figsize=(7, 4))
        for key, label in (('roundtrip', 'command -> state (without the 100 Hz slot wait)'),
                           ('publish_to_state', 'publish -> first 100 Hz state')):
            x = np.sort(out['roundtrip']['samples_ms'][key])
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where='post', label=label)
        ax.axvline(TARGETS['roundtrip_p99_ms'], color='k', linestyle='--', label='p99 target')
        ax.axhline(0.99, color='grey', linestyle=':')
        ax.set_xlim(right=max(3.0 * TARGETS['roundtrip_p99_ms'],
                              1.2 * out['roundtrip']['publish_to_state_ms']['p99']))
        ax.set_xlabel('latency (ms)')
        ax.set_ylabel('fraction of samples')
        ax.set_title('command -> state round trip (%d samples)' % out['roundtrip']['samples'])
        ax.legend(loc='lower right')
        fig.tight_layout()
        paths['roundtrip_cdf'] = os.path.join(out_dir, 'roundtrip_cdf.png')
        fig.savefig(paths['roundtrip_cdf'], dpi=100)
        plt.close(fig)
    return paths


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == 'measure':
        sys.exit(_child(sys.argv[2:]))
    print(json.dumps(run(quick='--quick' in sys.argv), indent=2))
