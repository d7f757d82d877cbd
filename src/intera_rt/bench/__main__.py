"""scripts/bench: run the benchmark sections, write bench.json, print a summary.

    scripts/bench [--out DIR] [--only NAME[,NAME]] [--quick] [--duration S] [--soak S] [--list]
    scripts/bench --ab REV [--pairs N] [--out DIR] [--quick] [--figures]

--out       output directory (default bench_out/); bench.json and the PNG plots go there
--only      comma-separated section names (see --list); default: every section
--quick     a short smoke run (shorter durations, fewer samples)
--duration  seconds of the realtime tick measurement (default 60; --quick: 5)
--soak      seconds of the soak (random valid and invalid use, E-stops; default 60, --quick
            20); without --only, runs the soak section alone
--ab        lockstep at --speed max, this checkout against git revision REV, alternating
            in the same minutes (intera_rt.bench.ab): each plant's speeds, the median of
            the pairs' ratios and how many pairs each code won, in DIR/ab.json
--pairs     pairs of runs per plant for --ab (default 4; --quick 2; --figures 3)
--figures   with --ab: the other figures instead of lockstep (1 kHz tick, round trip,
            detection latency, planning, IK, JTAS tracking), each code's own
            `scripts/bench --quick` of their sections in turn, a verdict per figure, in
            DIR/ab_figures.json (--only: some of those sections)

Each section runs in a child process (python -m intera_rt.bench --section NAME ...),
whose result the driver puts into bench.json under the section's name. Exit code: 0 when
every selected section produced its dict without an "error" entry, 1 otherwise (the
section's entry then holds {"error": "..."}), 2 on bad arguments.
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback

from intera_rt.bench import call, discover, load, options_for


def parse_args(argv):
    p = argparse.ArgumentParser(prog='scripts/bench', description=__doc__.split('\n\n')[0])
    p.add_argument('--out', default='bench_out', help='output directory (default bench_out)')
    p.add_argument('--only', default=None, help='comma-separated section names')
    p.add_argument('--quick', action='store_true', help='short smoke run')
    p.add_argument('--duration', type=float, default=None,
                   help='seconds of the realtime tick measurement (default 60, --quick 5)')
    p.add_argument('--soak', type=float, default=None,
                   help='seconds of the soak section (default 60, --quick 20); alone unless --only')
    p.add_argument('--list', action='store_true', help='list the sections and exit')
    p.add_argument('--ab', metavar='REV', help='lockstep A/B against git revision REV')
    p.add_argument('--pairs', type=int, default=None, help='pairs of runs per plant (--ab)')
    p.add_argument('--figures', action='store_true',
                   help="with --ab: the other figures' A/B instead of lockstep's")
    p.add_argument('--section', help=argparse.SUPPRESS)      # child: run this one section
    p.add_argument('--result', help=argparse.SUPPRESS)       # child: write its dict here
    args = p.parse_args(argv)
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        p.error('--duration must be a positive number of seconds')
    if args.soak is not None and not (math.isfinite(args.soak) and args.soak > 0):
        p.error('--soak must be a positive number of seconds')
    if args.pairs is not None and (args.ab is None or args.pairs < 1):
        p.error('--pairs takes a positive number, with --ab')
    if args.figures and args.ab is None:
        p.error('--figures goes with --ab REV')
    # (the names, once: every user of --only reads this list)
    args.only = [n.strip() for n in args.only.split(',') if n.strip()] if args.only else None
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sections = discover()
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 60.0)
    out_dir = os.path.abspath(args.out)
    options = {'out_dir': out_dir, 'quick': args.quick, 'duration': duration, 'soak': args.soak}
    if args.section:
        return _run_section(args.section, sections, options, args.result)
    if args.ab is not None:
        return _ab(args, out_dir)
    if args.list:
        for name, module in sections.items():
            print('%-10s %s' % (name, module))
        return 0
    if args.only:
        wanted = args.only
        unknown = [n for n in wanted if n not in sections]
        if unknown:
            print('scripts/bench: unknown section(s) %s; known: %s'
                  % (', '.join(unknown), ', '.join(sections)), file=sys.stderr)
            return 2
        selected = {n: sections[n] for n in wanted}
    elif args.soak is not None:
        selected = {'soak': sections['soak']}
    else:
        selected = sections
    os.makedirs(out_dir, exist_ok=True)

    report = {'meta': {'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
                       'host': platform.node(), 'cpus': os.cpu_count(),
                       'load_avg_at_start': list(os.getloadavg()),
                       'python': platform.python_version(), 'quick': args.quick,
                       'duration_s': duration, 'sections': list(selected)}}
    failed = False
    for name, module in selected.items():
        print('[bench] %s (%s) ...' % (name, module), flush=True)
        t0 = time.monotonic()
        result = _spawn(name, args, out_dir)
        result.setdefault('wall_s', round(time.monotonic() - t0, 1))
        failed = failed or 'error' in result
        report[name] = result
        _write(out_dir, report)
    report['meta']['load_avg_at_end'] = list(os.getloadavg())
    report['guard'] = guard(report)
    path = _write(out_dir, report)
    print()
    for name in selected:
        _summarise(name, report[name])
    _print_guard(report['guard'])
    print('\n[bench] wrote %s' % path)
    return 1 if failed else 0


def _ab(args, out_dir):
    from intera_rt.bench import ab
    repo = os.environ.get('INTERA_RT_REPO') or os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
    os.makedirs(out_dir, exist_ok=True)
    if args.figures:
        try:
            sections = tuple(args.only) if args.only else ab.FIGURE_SECTIONS
            report = ab.main_figures(repo, args.ab, out_dir,
                                     pairs=args.pairs if args.pairs is not None else 3,
                                     sections=sections)
        except ValueError as exc:
            print('scripts/bench: %s' % exc, file=sys.stderr)
            return 2
        print(ab.describe_figures(report))
        print('\n[bench] wrote %s' % os.path.join(out_dir, 'ab_figures.json'))
        return 0 if all(r['verdict'] != 'incomplete' for r in report['figures'].values()) else 1
    pairs = args.pairs if args.pairs is not None else (2 if args.quick else 4)
    try:
        report = ab.main(repo, args.ab, out_dir, pairs=pairs, duration=5.0 if args.quick else 8.0)
    except ValueError as exc:
        print('scripts/bench: %s' % exc, file=sys.stderr)
        return 2
    print(ab.describe(report))
    print('\n[bench] wrote %s' % os.path.join(out_dir, 'ab.json'))
    return 0 if all(s['ratio_median'] is not None for s in report['plants'].values()) else 1


def _spawn(name, args, out_dir):
    """Run one section in a child process; its dict, or {'error': ...}."""
    result_path = os.path.join(out_dir, '.section_%s.json' % name)
    if os.path.exists(result_path):
        os.remove(result_path)
    cmd = [sys.executable, '-m', 'intera_rt.bench', '--section', name, '--result', result_path,
           '--out', out_dir]
    if args.quick:
        cmd.append('--quick')
    if args.duration is not None:
        cmd += ['--duration', repr(args.duration)]
    if args.soak is not None:
        cmd += ['--soak', repr(args.soak)]
    proc = subprocess.run(cmd)
    try:
        with open(result_path) as f:
            result = json.load(f)
        os.remove(result_path)
    except (OSError, ValueError) as exc:
        return {'error': 'section process exited with %s and left no result (%s)'
                % (proc.returncode, exc)}
    if proc.returncode != 0 and 'error' not in result:
        result['error'] = 'section process exited with %s' % proc.returncode
    return result


def _run_section(name, sections, options, result_path):
    """In the child: import the section, run it, write its dict (or the error)."""
    try:
        if name not in sections:
            raise KeyError('no section %r' % name)
        result = call(load(sections[name]), **options_for(name, options))
        if not isinstance(result, dict):
            raise TypeError('%s.run() returned %s, not a dict' % (sections[name], type(result).__name__))
    except Exception as exc:  # noqa: BLE001 - reported in bench.json
        traceback.print_exc()
        result = {'error': '%s: %s' % (type(exc).__name__, exc)}
    with open(result_path, 'w') as f:
        json.dump(result, f, default=_jsonable)
    sys.stdout.flush()
    # a section may leave rospy threads behind: do not wait for them
    os._exit(1 if 'error' in result else 0)


def _write(out_dir, report):
    path = os.path.join(out_dir, 'bench.json')
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(report, f, indent=2, default=_jsonable)
        f.write('\n')
    os.replace(tmp, path)
    return path


def _jsonable(value):
    try:
        import numpy as np
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:
        pass
    if isinstance(value, (set, tuple)):
        return list(value)
    return repr(value)


def _summarise(name, result):
    """A section's own 'summary' lines if it has them, else its top-level numbers."""
    print('%s:' % name)
    summary = result.get('summary')
    if isinstance(summary, list):
        for line in summary:
            print('  ' + str(line))
    else:
        for key, value in result.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                print('  %-28s %s' % (key, _fmt(value)))
    if 'error' in result:
        print('  FAILED: %s' % result['error'])


# The regression guard: ratios measured within one run, so that they hold on a slow hour as
# on a quiet one (docs/performance.md). name: (what, target, whether a value passes).
GUARD = {
    'tick_over_plant': ('whole tick (every plugin on, worst situation) / the plant\'s step',
                        2.0, lambda v, t: v <= t),
    # (no target: what a tick compiled around today's library calls could reach at best)
    'floor_over_plant': ('the plant\'s step and the tick\'s Pinocchio/hpp-fcl calls alone, '
                         'worst situation / the plant\'s step', None, None),
    'tick_p99_us': ('1 kHz tick p99, us', 500.0, lambda v, t: v <= t),
    'overruns_over_empty_loop': ('1 kHz overruns - the empty loop\'s in the same run',
                                 0, lambda v, t: v <= t),
    # (2.5 x the code before issue 24; docs/performance.md "The guard")
    'lockstep_python_s': ('lockstep sim s per wall s x this hour\'s s per 1e7 Python additions',
                          6.9, lambda v, t: v >= t),
    # (the lockstep counts only with the nodes keeping up: every state topic's rate in sim time)
    'lockstep_state_rate': ('lockstep: the slowest state topic\'s rate in sim time / its 100 Hz',
                            0.95, lambda v, t: v >= t),
    'lockstep_motion_controller_cpu': ('lockstep: the motion controller\'s CPU ms per sim s',
                                       None, None),
    'lockstep_io_cpu': ('lockstep: io\'s CPU ms per sim s', None, None),
}


def guard(report):
    """{name: {'value', 'target', 'pass', 'what'}} of the GUARD ratios the run's sections
    give (a section not run: that ratio left out)."""
    values = {}
    plugins, rt = report.get('plugins') or {}, report.get('realtime') or {}
    if 'tick_over_plant' in plugins:
        values['tick_over_plant'] = plugins['tick_over_plant']
    if 'floor_over_plant' in plugins:
        values['floor_over_plant'] = plugins['floor_over_plant']
    tick, platform = rt.get('tick'), rt.get('platform')
    if tick:
        values['tick_p99_us'] = tick['p99_us']
    if tick and platform:
        values['overruns_over_empty_loop'] = tick['overruns'] - platform['overruns']
    if rt.get('lockstep') and platform and 'python_1e7_additions_s' in platform:
        values['lockstep_python_s'] = round(rt['lockstep']['speedup']
                                            * platform['python_1e7_additions_s'], 3)
    lockstep = rt.get('lockstep') or {}
    if lockstep.get('state_rates_hz'):
        values['lockstep_state_rate'] = round(min(lockstep['state_rates_hz'].values()) / 100.0, 3)
    for name, process in (('lockstep_motion_controller_cpu', 'motion_controller'),
                          ('lockstep_io_cpu', 'io')):
        if process in lockstep.get('cpu_per_sim_s', {}):
            values[name] = round(1e3 * lockstep['cpu_per_sim_s'][process], 1)
    out = {}
    for name, value in values.items():
        what, target, ok = GUARD[name]
        out[name] = {'value': value, 'target': target, 'what': what,
                     'pass': None if target is None else bool(ok(value, target))}
    return out


def _print_guard(result):
    if not result:
        return
    print('guard (ratios within this run):')
    for name, g in result.items():
        verdict = 'info' if g['pass'] is None else ('PASS' if g['pass'] else 'FAIL')
        target = '' if g['target'] is None else ' (target %s)' % _fmt(g['target'])
        print('  %-4s %-30s %s%s: %s' % (verdict, name, _fmt(g['value']), target, g['what']))


def _fmt(value):
    return '%.4g' % value if isinstance(value, float) else str(value)


if __name__ == '__main__':
    sys.exit(main())
