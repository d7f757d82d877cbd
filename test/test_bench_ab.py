"""scripts/bench --ab: the pairs' summary (failed runs counted, never dropped; the ratio a
median of complete pairs), the other figures' verdicts (--figures) and the export of the
reference revision."""
import os
import subprocess

import pytest

from intera_rt.bench import ab
from intera_rt.bench.__main__ import parse_args

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))


def _run(plant, pair, code, speed=None):
    run = {'plant': plant, 'pair': pair, 'code': code}
    if speed is None:
        run['error'] = 'exit 1: boot failed'
    else:
        run['speedup'] = speed
    return run


def test_the_summary_counts_failed_runs_and_takes_the_median_of_complete_pairs():
    runs = [_run('embedded', 0, 'reference', 10.0), _run('embedded', 0, 'this', 15.0),
            _run('embedded', 1, 'this', 12.0), _run('embedded', 1, 'reference', 12.5),
            _run('embedded', 2, 'reference', 8.0), _run('embedded', 2, 'this', 16.0),
            _run('embedded', 3, 'reference'), _run('embedded', 3, 'this', 30.0),
            _run('mujoco', 0, 'reference', 5.0), _run('mujoco', 0, 'this')]
    s = ab.summarize(runs, 'embedded')
    assert s['pairs'] == 4 and s['failed_runs'] == 1
    assert s['ratios'] == [1.5, 0.96, 2.0]          # the pair with a failed run has none
    assert s['ratio_median'] == 1.5 and s['pairs_won'] == 2
    assert s['this_median'] == 15.5 and s['reference_median'] == 10.0
    m = ab.summarize(runs, 'mujoco')
    assert m['ratio_median'] is None and m['failed_runs'] == 1
    assert 'no complete pair (1 runs failed)' in ab.describe(
        {'this': 'a' * 40, 'reference': 'b' * 40, 'plants': {'mujoco': m}})


def test_an_unknown_revision_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="no such commit"):
        ab.export(REPO, 'no-such-revision-%d' % os.getpid())


@pytest.mark.skipif(not os.path.isdir(os.path.join(REPO, '.git')), reason='not a git checkout')
def test_the_reference_is_exported_hidden_from_roslaunch_with_this_venv():
    commit, path = ab.export(REPO, 'HEAD')
    assert commit == subprocess.run(['git', '-C', REPO, 'rev-parse', 'HEAD'], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout.strip()
    # (roslaunch looks for launch files in the package's directories but hidden ones)
    assert os.path.basename(os.path.dirname(path)) == '.ab'
    assert os.path.isfile(os.path.join(path, 'launch', 'sawyer.launch'))
    assert os.path.realpath(os.path.join(path, '.venv')) == os.path.realpath(os.path.join(REPO, '.venv'))
    assert ab.export(REPO, commit[:12]) == (commit, path)        # once


def _bench(tick_p99=300.0, overruns=0, ik_rate=1.0, jtas=None):
    """A bench.json dict as the sections write it (jtas None: its section failed)."""
    return {'realtime': {'tick': {'mean_us': 150.0, 'p99_us': tick_p99, 'overruns': overruns},
                         'roundtrip': {'roundtrip_ms': {'p50': 1.4, 'p99': 1.9}}},
            'ik': {'p50_ms': 0.5, 'success_rate': ik_rate},
            'jtas': {'error': 'boot failed'} if jtas is None else {'rms_rad': jtas}}


def test_the_figures_a_b_judges_each_figure_by_its_medians_and_slack():
    runs = [{'pair': 0, 'code': 'reference', 'values': ab.figure_values(_bench(300.0, 0, 1.0, 1e-3))},
            {'pair': 0, 'code': 'this', 'values': ab.figure_values(_bench(310.0, 1, 1.0, 1e-3))},
            {'pair': 1, 'code': 'this', 'values': ab.figure_values(_bench(340.0, 0, 0.99))},
            {'pair': 1, 'code': 'reference', 'values': ab.figure_values(_bench(300.0, 0, 1.0))}]
    rows = ab.compare_figures(runs)
    p99 = rows['1 kHz tick p99, µs']
    # the pairs' ratios 1.03 and 1.13: their median within the 10 % a time is allowed
    assert p99['this_median'] == 325.0 and p99['verdict'] == 'no worse'
    assert p99['ratios'] == [310.0 / 300.0, 340.0 / 300.0]
    # a count or a rate has no slack
    assert rows['1 kHz overruns']['verdict'] == 'worse'           # median 0.5 against 0
    assert rows['IK success rate']['verdict'] == 'worse'          # 0.995 against 1.0
    assert rows['1 kHz overruns']['ratios'] == []                 # (0 divides nothing)
    # a failed section gives no value: one complete pair is enough, none is incomplete
    assert rows['JTAS tracking rms, rad']['complete_pairs'] == 1
    assert rows['JTAS tracking rms, rad']['verdict'] == 'no worse'
    assert rows['planning joint_10 p99, ms']['verdict'] == 'incomplete'
    runs[1]['values'] = ab.figure_values(_bench(331.0))
    assert ab.compare_figures(runs)['1 kHz tick p99, µs']['verdict'] == 'worse'   # ratio 1.12
    only_ik = ab.compare_figures(runs, sections=('ik',))
    assert set(only_ik) == {'IK p50, ms', 'IK success rate'}
    text = ab.describe_figures({'this': 'a' * 40, 'reference': 'b' * 40, 'failed_runs': 2,
                                'figures': rows})
    assert '2 runs with a failed section' in text
    assert 'planning joint_10 p99, ms' in text and 'incomplete' in text


def test_every_figure_names_a_section_the_a_b_runs():
    assert {section for _, section, _, _, _ in ab.FIGURES} <= set(ab.FIGURE_SECTIONS)
    assert ab.figure_values({})['IK p50, ms'] is None
    with pytest.raises(ValueError, match='not soak'):
        ab.main_figures(REPO, 'HEAD', '/nonexistent', sections=('ik', 'soak'))


def test_pairs_need_ab():
    with pytest.raises(SystemExit):
        parse_args(['--pairs', '3'])
    with pytest.raises(SystemExit):
        parse_args(['--ab', 'HEAD', '--pairs', '0'])
    assert parse_args(['--ab', 'HEAD', '--pairs', '3']).pairs == 3
    with pytest.raises(SystemExit):
        parse_args(['--figures'])
    assert parse_args(['--ab', 'HEAD', '--figures']).figures
