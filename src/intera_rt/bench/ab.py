"""scripts/bench --ab REV: lockstep at --speed max, this checkout against revision REV, in
alternating runs within one hour.

This VM's speed moves several-fold from one hour to the next, and by a tenth or two from one
run to the next. A ratio of two codes is firm only when both run in the same minutes,
alternating (issue 24's lockstep target is such a ratio: "≥ 2.5× the code before, in
alternating A/B runs in the same hour"). REV is exported (git archive) into
build/.ab/<commit>/ once, sharing this checkout's venv when its requirements.txt is the same;
its own scripts/env builds its messages (and kernels) there. Then, for each plant, pairs of
runs of the lockstep measurement (intera_rt.bench.realtime's `measure lockstep`), the two
codes in turn (ABBA order, so a trend over the minutes favours neither), each on a robot of
its own.

Writes OUT/ab.json: every run (speed, each process's CPU per sim second, the state topics'
rates, or the error of a failed run: counted, never dropped), and per plant the median speed
of each code, the median of the pairs' ratios (this / REV) and how many pairs this code won.

With --figures, the other figures instead (issue 24: "every other bench figure no worse in
the same A/B"): pairs of `scripts/bench --quick --only FIGURE_SECTIONS` runs, each code's
own bench in turn (ABBA), and per figure of FIGURES each code's median, the median of the
pairs' ratios (this / REV) and a verdict: a time is *worse* when the median of the pairs'
ratios exceeds 1 + TIME_SLACK, a count or a rate when this code's median is worse than the
reference's at all; else *no worse*; *incomplete* when no pair has both values. Written to
OUT/ab_figures.json. `--only` narrows it to some of FIGURE_SECTIONS (more pairs of a short
section, to settle one figure).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from intera_rt.bench.realtime import measure_args

PLANTS = (('embedded', 'lockstep'), ('mujoco', 'lockstep_mujoco'))
RUN_TIMEOUT = 300.0           # s: boot, the run, shutdown of one measurement on a slow hour

# The figures --figures compares: (name, section, keys into its dict, which way is better,
# kind). Sections every code since aed053a (the code before issue 24) has, with these keys.
FIGURE_SECTIONS = ('realtime', 'plugins', 'ik', 'jtas', 'motion')
FIGURES = (
    ('1 kHz tick mean, µs', 'realtime', ('tick', 'mean_us'), 'lower', 'time'),
    ('1 kHz tick p99, µs', 'realtime', ('tick', 'p99_us'), 'lower', 'time'),
    ('1 kHz overruns', 'realtime', ('tick', 'overruns'), 'lower', 'count'),
    ('round trip p50, ms', 'realtime', ('roundtrip', 'roundtrip_ms', 'p50'), 'lower', 'time'),
    ('round trip p99, ms', 'realtime', ('roundtrip', 'roundtrip_ms', 'p99'), 'lower', 'time'),
    ('detection latency max, ms (sim)', 'plugins', ('latency', 'latency_ms', 'max'), 'lower',
     'time'),
    ('collisions stopped', 'plugins', ('latency', 'stopped'), 'higher', 'count'),
    ('false detections, normal use', 'plugins', ('normal_use', 'detections'), 'lower', 'count'),
    ('planning joint_10 p99, ms', 'motion', ('latency', 'joint_10', 'p99_ms'), 'lower', 'time'),
    ('planning cartesian_5 p99, ms', 'motion', ('latency', 'cartesian_5', 'p99_ms'), 'lower',
     'time'),
    ('planning through ROS joint_10 p99, ms', 'motion',
     ('latency_through_ros', 'joint_10', 'p99_ms'), 'lower', 'time'),
    ('planning through ROS cartesian_5 p99, ms', 'motion',
     ('latency_through_ros', 'cartesian_5', 'p99_ms'), 'lower', 'time'),
    ('IK p50, ms', 'ik', ('p50_ms',), 'lower', 'time'),
    ('IK success rate', 'ik', ('success_rate',), 'higher', 'rate'),
    ('JTAS tracking rms, rad', 'jtas', ('rms_rad',), 'lower', 'time'),
    ('JTAS tracking max, rad', 'jtas', ('max_rad',), 'lower', 'time'),
)
TIME_SLACK = 0.10             # a time's pairs' median ratio may exceed 1 by this: the VM's noise
FIGURES_TIMEOUT = 900.0       # s: one code's five sections, --quick, on a slow hour


def _git(repo, *args):
    return subprocess.run(['git', '-C', repo] + list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True).stdout.strip()


def export(repo, rev):
    """REV's tree in build/.ab/<commit>/ (exported once): (commit, path). ValueError when
    REV names no commit here."""
    try:
        commit = _git(repo, 'rev-parse', '--verify', '--quiet', rev + '^{commit}')
    except subprocess.CalledProcessError:
        raise ValueError('--ab %r: no such commit in %s' % (rev, repo)) from None
    # (a hidden directory: roslaunch looks for this checkout's launch files in every
    # directory of the package but hidden ones, and would find the export's too)
    path = os.path.join(repo, 'build', '.ab', commit[:12])
    if not os.path.isdir(path):
        tmp = tempfile.mkdtemp(prefix='.export-', dir=_mkdirs(os.path.dirname(path)))
        archive = subprocess.Popen(['git', '-C', repo, 'archive', commit], stdout=subprocess.PIPE)
        subprocess.run(['tar', '-x', '-C', tmp], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError('git archive %s failed' % commit)
        os.rename(tmp, path)
    venv = os.path.join(path, '.venv')
    if not os.path.lexists(venv) and _same_file(repo, path, 'requirements.txt'):
        os.symlink(os.path.join(repo, '.venv'), venv)     # (the same pinned packages)
    return commit, path


def _mkdirs(path):
    os.makedirs(path, exist_ok=True)
    return path


def _same_file(a, b, name):
    try:
        with open(os.path.join(a, name), 'rb') as fa, open(os.path.join(b, name), 'rb') as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def _clean_env():
    """This process's environment without what scripts/env put there: the other checkout's
    scripts/env sets its own (its src first on PYTHONPATH, its package on ROS_PACKAGE_PATH)."""
    env = dict(os.environ)
    for name in ('PYTHONPATH', 'ROS_PACKAGE_PATH', 'VIRTUAL_ENV', 'INTERA_RT_REPO'):
        env.pop(name, None)
    venv_bin = os.path.join(os.environ.get('VIRTUAL_ENV', '/nonexistent'), 'bin')
    env['PATH'] = os.pathsep.join(p for p in env.get('PATH', '').split(os.pathsep) if p != venv_bin)
    return env


def _child(checkout, args, result, timeout, log=None, exit_ok=False):
    """`checkout`'s own `scripts/env python ARGS`, this process's scripts/env taken out of
    its environment: the JSON it wrote to `result`, or {'error': ...} when it timed out,
    exited non-zero (unless exit_ok: a bench whose section failed still writes its JSON) or
    left no readable result. `log`: a file for its output (none: only its tail, on error)."""
    try:
        proc = subprocess.run([os.path.join(checkout, 'scripts', 'env'), 'python'] + args,
                              cwd=checkout, env=_clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'error': 'timed out after %.0f s' % timeout}
    if log is not None:
        with open(log, 'wb') as f:
            f.write(proc.stdout)
    if proc.returncode == 0 or exit_ok:
        try:
            with open(result) as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    tail = proc.stdout.decode('utf-8', 'replace').strip().splitlines()[-5:]
    return {'error': 'exit %s: %s' % (proc.returncode, ' | '.join(tail))}


def run_once(checkout, measure, duration, log_dir, tag):
    """One measurement (intera_rt.bench.realtime's `measure NAME`: lockstep,
    lockstep_mujoco, tick, ...) by `checkout`'s own code, on a robot of its own: its result
    dict, or {'error': ...} when it failed."""
    result = os.path.join(log_dir, '%s.json' % tag)
    return _child(checkout, measure_args(measure, result, os.path.join(log_dir, tag + '.log'),
                                         duration), result, RUN_TIMEOUT)


def summarize(runs, plant):
    """Per plant: each code's median speed, the median of the pairs' ratios (this / REV;
    pairs where either run failed are left out of the ratios but counted as failed) and how
    many of them this code won."""
    mine = [r for r in runs if r['plant'] == plant]
    speeds = {code: [r['speedup'] for r in mine if r['code'] == code and 'speedup' in r]
              for code in ('this', 'reference')}
    ratios = []
    for pair in sorted({r['pair'] for r in mine}):
        got = {r['code']: r.get('speedup') for r in mine if r['pair'] == pair}
        if got.get('this') and got.get('reference'):
            ratios.append(got['this'] / got['reference'])
    return {'pairs': len({r['pair'] for r in mine}),
            'failed_runs': sum(1 for r in mine if 'error' in r),
            'this_median': statistics.median(speeds['this']) if speeds['this'] else None,
            'reference_median': statistics.median(speeds['reference']) if speeds['reference'] else None,
            'ratio_median': statistics.median(ratios) if ratios else None,
            'ratios': ratios,
            'pairs_won': sum(1 for r in ratios if r > 1.0)}


def _start(repo, rev, out_dir, logs, **fields):
    """REV exported: ({code: its checkout}, the log directory out_dir/logs, the report's
    first fields (the two commits, the start, `fields`))."""
    commit, reference = export(repo, rev)
    log_dir = _mkdirs(os.path.join(out_dir, logs))
    head = _git(repo, 'rev-parse', 'HEAD')
    dirty = bool(_git(repo, 'status', '--porcelain', '--untracked-files=no'))
    report = {'reference': commit, 'this': head + (' (with uncommitted changes)' if dirty else ''),
              'started': time.strftime('%Y-%m-%dT%H:%M:%S%z')}
    report.update(fields)
    return {'this': repo, 'reference': reference}, log_dir, report


def _abba(pair):
    """The codes' order in a pair: ABBA, so that a trend over the minutes favours neither."""
    return ('reference', 'this') if pair % 2 == 0 else ('this', 'reference')


def main(repo, rev, out_dir, pairs=4, duration=8.0):
    """Runs the A/B and writes out_dir/ab.json; returns the report (see the module)."""
    codes, log_dir, report = _start(repo, rev, out_dir, 'ab_logs', duration_s=duration,
                                    runs=[], plants={})
    for plant, measure in PLANTS:
        for pair in range(pairs):
            for code in _abba(pair):
                tag = '%s_%d_%s' % (plant, pair, code)
                print('[ab] %s pair %d: %s ...' % (plant, pair + 1, code), file=sys.stderr, flush=True)
                got = run_once(codes[code], measure, duration, log_dir, tag)
                run = {'plant': plant, 'pair': pair, 'code': code}
                if 'error' in got:
                    run['error'] = got['error']
                else:
                    run.update({k: got[k] for k in ('speedup', 'tick_mean_us', 'cpu_per_sim_s',
                                                    'state_rates_hz', 'state_rates_ok')
                                if k in got})
                report['runs'].append(run)
        report['plants'][plant] = summarize(report['runs'], plant)
    with open(os.path.join(out_dir, 'ab.json'), 'w') as f:
        json.dump(report, f, indent=1)
    return report


def describe(report):
    """The report's summary, a few lines."""
    lines = ['A/B, lockstep at --speed max: this checkout (%s) against %s, alternating'
             % (report['this'][:12], report['reference'][:12])]
    for plant, s in report['plants'].items():
        if s['ratio_median'] is None:
            lines.append('  %-9s no complete pair (%d runs failed)' % (plant, s['failed_runs']))
            continue
        lines.append('  %-9s this %.1fx, reference %.1fx (medians); ratio %.2f (median of %d '
                     'pairs, this faster in %d); %d runs failed'
                     % (plant, s['this_median'], s['reference_median'], s['ratio_median'],
                        len(s['ratios']), s['pairs_won'], s['failed_runs']))
    return '\n'.join(lines)


def _dig(result, section, keys):
    """The number at result[section][keys...], or None (a failed section, a missing key)."""
    value = result.get(section)
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def bench_once(checkout, log_dir, tag, sections=FIGURE_SECTIONS):
    """`checkout`'s own `scripts/bench --quick --only SECTIONS`: its bench.json as a dict (a
    failed section holds its {"error": ...}), or {'error': ...} when no bench.json was
    written."""
    out = os.path.join(log_dir, tag)
    return _child(checkout, ['-m', 'intera_rt.bench', '--quick', '--only', ','.join(sections),
                             '--out', out], os.path.join(out, 'bench.json'), FIGURES_TIMEOUT,
                  log=os.path.join(log_dir, tag + '.log'), exit_ok=True)


def figure_values(result, sections=FIGURE_SECTIONS):
    """{figure name: value or None} of one bench.json dict, for the figures of `sections`."""
    return {name: _dig(result, section, keys) for name, section, keys, _, _ in FIGURES
            if section in sections}


def compare_figures(runs, sections=FIGURE_SECTIONS):
    """Per figure of FIGURES in `sections`, from runs ({'pair', 'code', 'values'}): each
    code's median and its values, the pairs' ratios (this / reference, where both are
    non-zero), and the verdict (see the module)."""
    out = {}
    for name, section, _, better, kind in FIGURES:
        if section not in sections:
            continue
        got = {'this': [], 'reference': []}
        by_pair = {}
        for run in runs:
            value = run['values'].get(name)
            if value is not None:
                got[run['code']].append(value)
                by_pair.setdefault(run['pair'], {})[run['code']] = value
        ratios = [p['this'] / p['reference'] for p in by_pair.values()
                  if p.get('this') and p.get('reference')]
        complete = sum(1 for p in by_pair.values() if len(p) == 2)
        row = {'better': better, 'kind': kind, 'this': got['this'],
               'reference': got['reference'], 'ratios': ratios, 'complete_pairs': complete}
        ratio = statistics.median(ratios) if ratios else None
        row['ratio_median'] = ratio
        if not complete:
            row.update(this_median=None, reference_median=None, verdict='incomplete')
        else:
            mine = statistics.median(got['this'])
            theirs = statistics.median(got['reference'])
            if kind == 'time' and ratios:
                # (the pairs, not all runs' medians: one code's runs differ with the minutes)
                worse = ratio > 1.0 + TIME_SLACK if better == 'lower' else ratio < 1.0 - TIME_SLACK
            else:
                worse = mine > theirs if better == 'lower' else mine < theirs
            row.update(this_median=mine, reference_median=theirs,
                       verdict='worse' if worse else 'no worse')
        out[name] = row
    return out


def main_figures(repo, rev, out_dir, pairs=3, sections=FIGURE_SECTIONS):
    """The A/B of the other figures (see the module), of `sections` (some of
    FIGURE_SECTIONS); writes out_dir/ab_figures.json and returns the report. ValueError on
    an unknown REV or section."""
    unknown = [s for s in sections if s not in FIGURE_SECTIONS]
    if unknown or not sections:
        raise ValueError('--figures compares the sections %s, not %s'
                         % (', '.join(FIGURE_SECTIONS), ', '.join(unknown) or 'none'))
    codes, log_dir, report = _start(repo, rev, out_dir, 'ab_figures_logs',
                                    sections=list(sections), time_slack=TIME_SLACK, runs=[])
    for pair in range(pairs):
        for code in _abba(pair):
            tag = 'figures_%d_%s' % (pair, code)
            print('[ab] figures pair %d: %s ...' % (pair + 1, code), file=sys.stderr, flush=True)
            got = bench_once(codes[code], log_dir, tag, sections)
            run = {'pair': pair, 'code': code, 'values': figure_values(got, sections),
                   'errors': {name: got[name]['error'] for name in sections
                              if isinstance(got.get(name), dict) and 'error' in got[name]}}
            if 'error' in got:
                run['errors']['bench'] = got['error']
            run['platform'] = _dig(got, 'realtime', ('platform', 'python_1e7_additions_s'))
            report['runs'].append(run)
    report['failed_runs'] = sum(1 for r in report['runs'] if r['errors'])
    report['figures'] = compare_figures(report['runs'], sections)
    with open(os.path.join(out_dir, 'ab_figures.json'), 'w') as f:
        json.dump(report, f, indent=1)
    return report


def describe_figures(report):
    """The figures' A/B, a line per figure."""
    lines = ['A/B, the other figures (scripts/bench --quick): this checkout (%s) against %s, '
             'alternating; %d runs with a failed section'
             % (report['this'][:12], report['reference'][:12], report['failed_runs'])]
    for name, row in report['figures'].items():
        if row['verdict'] == 'incomplete':
            lines.append('  %-42s incomplete' % name)
            continue
        ratio = row['ratio_median']
        lines.append('  %-42s this %-10.4g reference %-10.4g ratio %-6s %s'
                     % (name, row['this_median'], row['reference_median'],
                        '-' if ratio is None else '%.2f' % ratio, row['verdict']))
    return '\n'.join(lines)
