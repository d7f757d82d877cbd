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


def run_once(checkout, measure, duration, log_dir, tag):
    """One measurement (intera_rt.bench.realtime's `measure NAME`: lockstep,
    lockstep_mujoco, tick, ...) by `checkout`'s own code, on a robot of its own: its result
    dict, or {'error': ...} when it failed."""
    result = os.path.join(log_dir, '%s.json' % tag)
    cmd = [os.path.join(checkout, 'scripts', 'env'), 'python'] + measure_args(
        measure, result, os.path.join(log_dir, tag + '.log'), duration)
    try:
        proc = subprocess.run(cmd, cwd=checkout, env=_clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {'error': 'timed out after %.0f s' % RUN_TIMEOUT}
    if proc.returncode != 0 or not os.path.exists(result):
        tail = proc.stdout.decode('utf-8', 'replace').strip().splitlines()[-5:]
        return {'error': 'exit %s: %s' % (proc.returncode, ' | '.join(tail))}
    with open(result) as f:
        return json.load(f)


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


def main(repo, rev, out_dir, pairs=4, duration=8.0):
    """Runs the A/B and writes out_dir/ab.json; returns the report (see the module)."""
    commit, reference = export(repo, rev)
    log_dir = _mkdirs(os.path.join(out_dir, 'ab_logs'))
    head = _git(repo, 'rev-parse', 'HEAD')
    dirty = bool(_git(repo, 'status', '--porcelain', '--untracked-files=no'))
    codes = {'this': repo, 'reference': reference}
    report = {'reference': commit, 'this': head + (' (with uncommitted changes)' if dirty else ''),
              'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'duration_s': duration,
              'runs': [], 'plants': {}}
    for plant, measure in PLANTS:
        for pair in range(pairs):
            order = ('reference', 'this') if pair % 2 == 0 else ('this', 'reference')
            for code in order:
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
