"""scripts/bench runs end to end and writes bench.json with every figure present and finite:
--quick with the realtime section (and its plots), and a short soak (--quick --soak 15). No
timing thresholds: the figures depend on the machine and its load."""
import json
import math
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros        # scripts/bench boots robots of its own

REPO = Path(__file__).resolve().parents[1]


def _numbers(value, path=''):
    """(path, number) for every int/float nested in value."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, '%s.%s' % (path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, '%s[%d]' % (path, i))


def test_bench_quick_realtime(tmp_path):
    out = tmp_path / 'bench'
    proc = subprocess.run([str(REPO / 'scripts' / 'bench'), '--quick', '--only', 'realtime',
                           '--out', str(out)], cwd=str(REPO), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=280)
    log = proc.stdout.decode('utf-8', 'replace')
    assert proc.returncode == 0, log[-3000:]
    report = json.loads((out / 'bench.json').read_text())
    assert report['meta']['sections'] == ['realtime']
    rt = report['realtime']
    assert 'error' not in rt, rt['error']

    tick = rt['tick']
    for key in ('mean_us', 'p99_us', 'max_us', 'overruns', 'ticks', 'duration_s',
                'command_rate_hz', 'per_second'):
        assert key in tick, key
    assert tick['ticks'] > 0 and tick['per_second']
    assert 'p50_us' in tick and 'p999_us' in tick            # null until per-tick data exists

    trip = rt['roundtrip']
    assert trip['samples'] > 0
    for key in ('roundtrip_ms', 'publish_to_apply_ms', 'state_transport_ms', 'publish_to_state_ms'):
        assert {'p50', 'p99', 'max'} <= set(trip[key]), key
    assert len(trip['samples_ms']['roundtrip']) == trip['samples']

    plat = rt['platform']                                    # the bare loop: no robot
    assert plat['ticks'] > 0 and {'overruns', 'late_p99_us', 'late_max_us'} <= set(plat)

    lock = rt['lockstep']
    for key in ('speedup', 'sim_s', 'wall_s'):
        assert key in lock, key
    assert lock['sim_s'] > 0

    bad = [(p, v) for p, v in _numbers(report) if not math.isfinite(v)]
    assert not bad, bad
    for plot in ('tick_hist', 'roundtrip_cdf'):
        png = Path(rt['plots'][plot])
        assert png.exists() and png.read_bytes()[:4] == b'\x89PNG', plot
    assert 'round trip' in log and 'lockstep' in log           # the printed summary


def test_bench_quick_soak(tmp_path):
    """scripts/bench --quick --soak 15: the soak runs against its own robot with E-stops and
    invalid input, and reports no crash, a result for every motion, no unexpected answer,
    each robot process's memory, the tick p99 windows and the mlock A/B."""
    out = tmp_path / 'bench'
    proc = subprocess.run([str(REPO / 'scripts' / 'bench'), '--quick', '--soak', '15',
                           '--out', str(out)], cwd=str(REPO), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=280)
    log = proc.stdout.decode('utf-8', 'replace')
    assert proc.returncode == 0, log[-3000:]
    report = json.loads((out / 'bench.json').read_text())
    assert report['meta']['sections'] == ['soak']
    soak = report['soak']
    assert 'error' not in soak, soak['error']
    s = soak['soak']
    assert s['crashes'] == 0 and s['robot_alive'], s['crashed']
    assert s['motions']['missing'] == 0 and sum(s['motions']['sent'].values()) > 0, s['motions']
    assert not s['unexpected'], s['unexpected']
    assert s['estops'] >= 2
    assert any(k.startswith('invalid') for k in s['actions'])
    mem = soak['memory']
    for name in ('realtime_loop', 'realtime_core', 'motion_controller', 'io'):
        assert mem['processes'][name]['rss_mb'] > 0, name
    assert mem['total_rss_mb'] == pytest.approx(sum(p['rss_mb'] for p in mem['processes'].values()), abs=1.0)
    assert 'growth_pct' in s['rss'] and soak['tick']['p99_us']
    assert soak['mlock']['locked']['ticks'] > 0 and soak['mlock']['unlocked']['ticks'] > 0
    bad = [(p, v) for p, v in _numbers(report) if not math.isfinite(v)]
    assert not bad, bad
    assert 'soak' in log and 'crashes 0' in log
