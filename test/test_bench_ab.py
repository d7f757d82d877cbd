"""scripts/bench --ab: the pairs' summary (failed runs counted, never dropped; the ratio a
median of complete pairs) and the export of the reference revision."""
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


def test_pairs_need_ab():
    with pytest.raises(SystemExit):
        parse_args(['--pairs', '3'])
    with pytest.raises(SystemExit):
        parse_args(['--ab', 'HEAD', '--pairs', '0'])
    assert parse_args(['--ab', 'HEAD', '--pairs', '3']).pairs == 3
