"""Bench section "fleet": many robots on one machine, started by scripts/fleet's Fleet.

lockstep  --sim-time --speed max: total simulated seconds per wall second of 1, 2 and 4
          robots (each robot's /clock over a few wall seconds, summed)
realtime  --sim-time --speed 1: robots added one at a time until /robot/joint_states drops
          below 95 % of its 100 Hz (in wall time) on any robot; at most 6 (--quick 2).
          robots_per_machine is the last count at which every robot kept the rate
memory    RSS and PSS (shared pages split among their users) of one robot's processes,
          alone and averaged over the largest fleet of the realtime run
failures  robots that did not boot and probes that failed, counted per run
image     the last scripts/image build's time and size (build/image/image.json), when there
          is one: building it takes minutes, so the bench reads it rather than building

The measurements run as scripts/fleet's CMD (`python -m intera_rt.bench.fleet --probe
...`, a rospy process per robot, since one process can talk to one master): the figures
include what a client per robot costs, as in a real fleet.
"""
import argparse
import json
import os
import sys
import tempfile
import time

from intera_rt.robot import STATE_PERIOD

RATE_FRACTION = 0.95            # of the state rate: below it the machine is full
MAX_ROBOTS = 6
LOCKSTEP_COUNTS = (1, 2, 4)
BOOT_TIMEOUT = 240.0            # s: several robots boot at once on 2 cores
SETTLE_S = 2.0                  # s after boot before measuring


# --- probes (the CMD run against each robot) ----------------------------------------------
def probe_clock(seconds):
    """Simulated seconds per wall second, from two /clock messages `seconds` apart."""
    import rospy
    from rosgraph_msgs.msg import Clock
    rospy.init_node('fleet_bench_probe', anonymous=True, disable_signals=True)
    first = rospy.wait_for_message('/clock', Clock, timeout=30)
    w0 = time.monotonic()
    time.sleep(seconds)
    last = rospy.wait_for_message('/clock', Clock, timeout=30)
    w1 = time.monotonic()
    return {'sim_s': (last.clock - first.clock).to_sec(), 'wall_s': w1 - w0,
            'speedup': (last.clock - first.clock).to_sec() / (w1 - w0)}


def probe_rate(seconds):
    """/robot/joint_states messages per wall second over `seconds` after the first."""
    import rospy
    from sensor_msgs.msg import JointState
    rospy.init_node('fleet_bench_probe', anonymous=True, disable_signals=True)
    times = []
    sub = rospy.Subscriber('/robot/joint_states', JointState,
                           lambda _m: times.append(time.monotonic()), queue_size=100)
    deadline = time.monotonic() + 30
    while not times and time.monotonic() < deadline:
        time.sleep(0.01)
    if not times:
        raise RuntimeError('no /robot/joint_states within 30 s')
    t0 = times[0]
    time.sleep(seconds)
    sub.unregister()
    n = sum(1 for t in times if t0 < t <= t0 + seconds)
    return {'messages': n, 'wall_s': seconds, 'rate_hz': n / seconds}


def _probe_main(argv):
    p = argparse.ArgumentParser(prog='python -m intera_rt.bench.fleet')
    p.add_argument('--probe', choices=('clock', 'rate'), required=True)
    p.add_argument('--seconds', type=float, required=True)
    args = p.parse_args(argv)
    result = (probe_clock if args.probe == 'clock' else probe_rate)(args.seconds)
    print('PROBE ' + json.dumps(result), flush=True)
    os._exit(0)             # rospy's threads need not be waited for


def _probe_results(members):
    """{index: the probe's dict or None} from each member's CMD log."""
    out = {}
    for m in members:
        out[m.index] = None
        if m.status != 'ok':
            continue
        for line in m.cmd_log.read_text(errors='replace').splitlines():
            if line.startswith('PROBE '):
                out[m.index] = json.loads(line[len('PROBE '):])
    return out


def _probe(fleet, kind, seconds, members):
    argv = [sys.executable, '-m', 'intera_rt.bench.fleet', '--probe', kind,
            '--seconds', repr(seconds)]
    return _probe_results(fleet.run(argv, timeout=seconds + 90, members=members))


# --- measurements --------------------------------------------------------------------------
def _memory(member):
    from intera_rt.bench.soak_memory import memory_snapshot
    snap = memory_snapshot(member.robot.proc.pid)
    return {'rss_mb': snap['total_rss_mb'], 'pss_mb': snap['total_pss_mb']}


def measure_lockstep(log_dir, counts, seconds):
    from intera_rt.tooling.fleet import Fleet
    runs = []
    for n in counts:
        with Fleet(['--sim-time', '--speed', 'max'], os.path.join(log_dir, 'lockstep_%d' % n)) \
                as fleet:
            fleet.add(n)
            ready = fleet.wait_booted(BOOT_TIMEOUT)
            time.sleep(SETTLE_S)
            probes = _probe(fleet, 'clock', seconds, ready) if ready else {}
            speedups = [p['speedup'] for p in probes.values() if p]
            runs.append({'robots': n, 'booted': len(ready), 'boots_failed': n - len(ready),
                         'probes_failed': sum(p is None for p in probes.values()),
                         'per_robot_speedup': [round(s, 2) for s in speedups],
                         'total_sim_s_per_wall_s': round(sum(speedups), 2),
                         'boot_s': [round(m.boot_s, 1) for m in ready]})
    return runs


def measure_realtime(log_dir, max_robots, seconds):
    """Add robots one at a time at --speed 1 until a robot's state rate drops below
    RATE_FRACTION of 1/STATE_PERIOD (or a robot does not boot)."""
    from intera_rt.tooling.fleet import Fleet
    nominal = 1.0 / STATE_PERIOD
    steps, memory = [], {}
    fits = 0
    with Fleet(['--sim-time', '--speed', '1'], os.path.join(log_dir, 'realtime')) as fleet:
        for n in range(1, max_robots + 1):
            new = fleet.add(1)
            fleet.wait_booted(BOOT_TIMEOUT, members=new)
            ready = [m for m in fleet.members if m.boot_s is not None and m.robot.alive()]
            if n == 1 and ready:
                memory['one_robot'] = _memory(ready[0])
            time.sleep(SETTLE_S)
            probes = _probe(fleet, 'rate', seconds, ready) if ready else {}
            rates = [p['rate_hz'] for p in probes.values() if p]
            ok = (len(ready) == n and len(rates) == n
                  and min(rates) >= RATE_FRACTION * nominal)
            steps.append({'robots': n, 'booted': len(ready), 'boots_failed': n - len(ready),
                          'probes_failed': sum(p is None for p in probes.values()),
                          'rate_hz': [round(r, 1) for r in rates],
                          'min_rate_hz': round(min(rates), 1) if rates else None,
                          'kept_rate': ok})
            if not ok:
                break
            fits = n
            mems = [_memory(m) for m in ready]
            memory['per_robot_in_fleet'] = {
                'robots': n,
                'rss_mb': round(sum(x['rss_mb'] for x in mems) / n, 1),
                'pss_mb': round(sum(x['pss_mb'] for x in mems) / n, 1)}
    return {'nominal_hz': nominal, 'threshold_hz': RATE_FRACTION * nominal,
            'max_robots_tried': max_robots, 'robots_per_machine': fits,
            'bounded': fits == max_robots, 'steps': steps}, memory


def last_image_build():
    """scripts/image's record of its last build ({tag, size_bytes, build_s, rootfs_s}), or
    None when it has not run in this checkout."""
    from intera_rt.tooling.robot_process import REPO
    try:
        return json.loads((REPO / 'build' / 'image' / 'image.json').read_text())
    except (OSError, ValueError):
        return None


def run(out_dir=None, quick=False):
    log_dir = os.path.join(out_dir, 'fleet_logs') if out_dir else tempfile.mkdtemp(
        prefix='bench_fleet_')
    seconds = 2.0 if quick else 5.0
    counts = (1, 2) if quick else LOCKSTEP_COUNTS
    lockstep = measure_lockstep(log_dir, counts, seconds)
    realtime, memory = measure_realtime(log_dir, 2 if quick else MAX_ROBOTS, seconds)
    failures = {'boots_failed': sum(r['boots_failed'] for r in lockstep + realtime['steps']),
                'probes_failed': sum(r['probes_failed'] for r in lockstep + realtime['steps']),
                'robot_boots': sum(r['robots'] for r in lockstep) + len(realtime['steps'])}
    summary = ['--speed max, total sim s per wall s: ' + ', '.join(
        '%d robot(s) %.2f' % (r['robots'], r['total_sim_s_per_wall_s']) for r in lockstep)]
    summary.append('--speed 1: %d robot(s) keep /robot/joint_states >= %.0f Hz (tried up to %d%s)'
                   % (realtime['robots_per_machine'], realtime['threshold_hz'],
                      realtime['max_robots_tried'],
                      ', the bound' if realtime['bounded'] else ''))
    if 'one_robot' in memory:
        summary.append('memory: one robot RSS %.0f MB, PSS %.0f MB'
                       % (memory['one_robot']['rss_mb'], memory['one_robot']['pss_mb']))
    if 'per_robot_in_fleet' in memory:
        pr = memory['per_robot_in_fleet']
        summary.append('memory per robot in a fleet of %d: RSS %.0f MB, PSS %.0f MB'
                       % (pr['robots'], pr['rss_mb'], pr['pss_mb']))
    summary.append('failures: %d boots failed, %d probes failed (of %d robot boots)'
                   % (failures['boots_failed'], failures['probes_failed'],
                      failures['robot_boots']))
    image = last_image_build()
    if image:
        summary.append('image %s: %.0f MB, built in %d s (scripts/image)'
                       % (image['tag'], image['size_bytes'] / 1e6, image['build_s']))
    return {'lockstep': lockstep, 'realtime': realtime, 'memory': memory, 'image': image,
            'failures': failures, 'logs': log_dir, 'summary': summary}


if __name__ == '__main__':
    _probe_main(sys.argv[1:])
