"""scripts/fleet through ROS: N robots on their own masters, an SDK-style episode program
(test/fleet_client.py: enable, move right_j0 by position commands, check /robot/joint_states)
run against each; per-robot failures (CMD, port in use, boot time-out) reported with their
logs while the others succeed; Ctrl-C leaves no process behind.

No `robot` fixture: the fleet starts its own robots; this process talks ROS to none of them.
Leaks are found by the fleet's log directory in a process's environment (every robot node has
ROS_LOG_DIR and every CMD has FLEET_LOG_DIR under it)."""
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rosharness import wait_for

pytestmark = pytest.mark.ros        # scripts/fleet boots robots of its own, without the robot fixture

REPO = Path(__file__).resolve().parents[1]
FLEET = str(REPO / 'scripts' / 'fleet')
CLIENT = [sys.executable, str(REPO / 'test' / 'fleet_client.py')]
RUN_TIMEOUT = 240.0         # s: two robots boot and run an episode on a busy 2-core machine


def processes_under(log_dir):
    """PIDs of live processes whose environment names log_dir (robot nodes, masters, CMDs)."""
    needle = str(log_dir).encode()
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open('/proc/%s/environ' % entry, 'rb') as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def run_fleet(tmp_path, n, args, cmd):
    logs = tmp_path / 'fleet'
    proc = subprocess.run([FLEET, str(n)] + args + ['--logs', str(logs), '--'] + cmd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=RUN_TIMEOUT)
    assert (logs / 'fleet.json').exists(), proc.stdout
    summary = json.loads((logs / 'fleet.json').read_text())
    return proc, {r['index']: r for r in summary['robots']}, logs


def assert_nothing_left(logs):
    """The fleet has exited: every process it started must be gone already."""
    assert not processes_under(logs), 'processes left running: %s' % processes_under(logs)


def test_sdk_client_passes_on_two_robots(tmp_path):
    proc, robots, logs = run_fleet(tmp_path, 2, [], CLIENT)
    assert proc.returncode == 0, proc.stdout
    assert [robots[i]['status'] for i in (0, 1)] == ['ok', 'ok'], proc.stdout
    assert robots[0]['master_uri'] != robots[1]['master_uri']
    for i in (0, 1):
        text = Path(robots[i]['cmd_log']).read_text()
        # the client's own check: right_j0 reached its index's target on that robot's master
        assert 'robot %d on %s: right_j0' % (i, robots[i]['master_uri']) in text, text
    assert_nothing_left(logs)


def test_failing_cmd_on_one_index_is_reported_and_the_other_succeeds(tmp_path):
    cmd = ['sh', '-c', 'if [ "$FLEET_INDEX" = 1 ]; then echo "episode 1 broke" >&2; exit 3; '
                       'fi; exec "$@"', 'sh'] + CLIENT
    proc, robots, logs = run_fleet(tmp_path, 2, [], cmd)
    assert proc.returncode == 1, proc.stdout
    assert robots[0]['status'] == 'ok', proc.stdout
    assert (robots[1]['status'], robots[1]['exit_code']) == ('cmd failed', 3), proc.stdout
    assert 'robot 1  port' in proc.stdout and 'CMD exited with code 3' in proc.stdout
    assert 'episode 1 broke' in proc.stdout          # the failed robot's log tail is shown
    assert 'right_j0' in Path(robots[0]['cmd_log']).read_text()
    assert_nothing_left(logs)


def _two_free_ports():
    from intera_rt.tooling.robot_process import free_port
    from intera_rt.tooling.fleet import port_in_use
    for _ in range(50):
        port = free_port()
        if not port_in_use(port + 1):
            return port
    raise RuntimeError('no two adjacent free ports')


def test_port_in_use_fails_that_robot_only(tmp_path):
    base = _two_free_ports()
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', base + 1))
        holder.listen(1)
        proc, robots, logs = run_fleet(tmp_path, 2, ['--base-port', str(base)], CLIENT)
    assert proc.returncode == 1, proc.stdout
    assert robots[0]['status'] == 'ok' and robots[0]['port'] == base, proc.stdout
    assert robots[1]['status'] == 'port in use', proc.stdout
    assert 'port %d on 127.0.0.1 is in use' % (base + 1) in proc.stdout
    assert_nothing_left(logs)


def test_robot_not_up_in_time_is_reported_with_its_log(tmp_path):
    proc, robots, logs = run_fleet(tmp_path, 1, ['--boot-timeout', '1'], ['true'])
    assert proc.returncode == 1, proc.stdout
    assert robots[0]['status'] == 'boot failed', proc.stdout
    assert 'no /robot/state on %s within 1 s' % robots[0]['master_uri'] in proc.stdout
    assert 'last lines of %s' % robots[0]['sawyer_log'] in proc.stdout
    assert robots[0]['exit_code'] is None              # CMD never ran
    assert_nothing_left(logs)


def test_ctrl_c_stops_everything(tmp_path):
    logs = tmp_path / 'fleet'
    out = tmp_path / 'fleet.out'
    with open(out, 'w') as f:
        proc = subprocess.Popen([FLEET, '2', '--logs', str(logs), '--', 'sleep', '600'],
                                stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: 'running on 2 robot(s)' in out.read_text(), 180,
                 'both robots up and CMD running')
        assert processes_under(logs)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    robots = json.loads((logs / 'fleet.json').read_text())['robots']
    assert [r['status'] for r in robots] == ['interrupted', 'interrupted']
    assert_nothing_left(logs)


@pytest.mark.parametrize('args, message', [
    (['0', '--', 'true'], 'N = 0: expected 1..64 robots'),
    (['2'], 'no CMD'),
    (['2', '--speed', 'fast', '--', 'true'], "invalid speed 'fast'"),
    (['2', '--timeout', '-1', '--', 'true'], '--timeout -1.0: expected a number of seconds'),
    (['2', '--image', 'localhost/no_such_image:1', '--', 'true'],
     'image localhost/no_such_image:1'),       # not found, or podman missing
])
def test_bad_arguments_name_the_value(args, message):
    proc = subprocess.run([FLEET] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stdout


def test_bench_fleet_quick_counts_its_robots(tmp_path):
    """scripts/bench --quick --only fleet: every figure of the section is there, and each
    robot booted is counted (a failure is a figure, never dropped)."""
    proc = subprocess.run([str(REPO / 'scripts' / 'bench'), '--quick', '--only', 'fleet',
                           '--out', str(tmp_path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads((tmp_path / 'bench.json').read_text())['fleet']
    lockstep = {r['robots']: r for r in result['lockstep']}
    assert sorted(lockstep) == [1, 2]
    for n, r in lockstep.items():
        assert r['booted'] + r['boots_failed'] == n
        assert len(r['per_robot_speedup']) + r['probes_failed'] == r['booted']
        assert r['total_sim_s_per_wall_s'] > 0.1 * r['booted']     # each robot's clock ran
    steps = result['realtime']['steps']
    assert steps and steps[0]['robots'] == 1 and steps[0]['rate_hz'][0] > 10
    assert 0 <= result['realtime']['robots_per_machine'] <= 2
    assert result['memory']['one_robot']['rss_mb'] > 50
    assert result['failures']['robot_boots'] == 3 + len(steps)
    assert not processes_under(tmp_path / 'fleet_logs')


def test_a_signal_is_remembered_by_the_handler_and_raised_where_the_fleet_waits(monkeypatch):
    """The handler raises nothing itself (raised there, the KeyboardInterrupt could land in
    logging's fork handlers inside subprocess.Popen, which swallow it: Ctrl-C lost); the
    fleet's next wait raises it, naming the first signal."""
    from intera_rt.tooling import fleet
    monkeypatch.setattr(fleet, '_INTERRUPTS', [])
    fleet.raise_if_interrupted()                         # nothing yet
    fleet._interrupt(signal.SIGINT, None)
    fleet._interrupt(signal.SIGTERM, None)
    with pytest.raises(KeyboardInterrupt, match='SIGINT'):
        fleet.raise_if_interrupted()
