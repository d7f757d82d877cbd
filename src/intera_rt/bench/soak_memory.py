"""The robot's memory, for the soak section: each robot process's RSS and PSS, the node
pids (a changed pid is a restarted node), and what mlockall buys the realtime core alone
under the wall clock (alternating A/B segments)."""
import os
import time
import xmlrpc.client

import numpy as np

from intera_rt.robot import NEUTRAL
from intera_rt.tooling.robot_process import ROBOT_NODES, descendants


def robot_processes(root):
    """The pids under `root`, sorted."""
    return sorted(descendants(root))


def process_name(pid):
    """A stable name for a robot process: its ROS node name, or what it is."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            argv = f.read().decode('utf-8', 'replace').split('\0')
    except OSError:
        return None
    for a in argv:
        if a.startswith('__name:='):
            return a[len('__name:='):]
    text = ' '.join(argv)
    for key, name in (('intera_rt.realtime.process', 'realtime_core'),
                      ('rosmaster', 'rosmaster'), ('roslaunch', 'roslaunch'),
                      ('intera_rt.sawyer', 'scripts/sawyer')):
        if key in text:
            return name
    return os.path.basename(argv[0]) or str(pid)


def memory_of(pid):
    """(RSS, PSS) in MB of a process; None when it is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith('VmRSS:'))
        pss = 0
        with open('/proc/%d/smaps_rollup' % pid) as f:
            for line in f:
                if line.startswith('Pss:'):
                    pss = int(line.split()[1])
        return rss / 1024.0, pss / 1024.0
    except (OSError, StopIteration, ValueError):
        return None


def memory_snapshot(root):
    """{name: {'pid', 'rss_mb', 'pss_mb'}} of every process under `root`, and totals."""
    procs = {}
    for pid in robot_processes(root):
        name, mem = process_name(pid), memory_of(pid)
        if name is None or mem is None or name == 'scripts/sawyer':
            continue
        procs[name] = {'pid': pid, 'rss_mb': round(mem[0], 1), 'pss_mb': round(mem[1], 1)}
    total_rss = sum(p['rss_mb'] for p in procs.values())
    nodes_rss = sum(p['rss_mb'] for n, p in procs.items()
                    if n not in ('roslaunch', 'rosmaster', 'rosout'))
    return {'processes': procs, 'total_rss_mb': round(total_rss, 1),
            'total_pss_mb': round(sum(p['pss_mb'] for p in procs.values()), 1),
            'robot_nodes_rss_mb': round(nodes_rss, 1)}


def node_pids():
    """{node: pid} as the robot's nodes report over XML-RPC (None: not answering)."""
    import rosgraph
    master = rosgraph.Master('/bench_soak')
    out = {}
    for name in ROBOT_NODES:
        try:
            code, _, pid = xmlrpc.client.ServerProxy(master.lookupNode(name)).getPid('/bench_soak')
            out[name] = pid if code == 1 else None
        except Exception:  # noqa: BLE001
            out[name] = None
    return out


def _core_segment(lock, seconds, log_path):
    """The realtime core alone under the wall clock for `seconds`: its tick log and RSS."""
    from intera_rt.realtime import pipe, process as rt_process
    proc, conn = rt_process.start(dict(
        urdf=None, backend='embedded', q_arm=list(NEUTRAL), q_head=0.0, options={}, enabled=True,
        sim_time=False, speed=1.0, priority=50, tick_log=log_path, lock_memory=lock))
    try:
        if not conn.poll(120.0):
            raise RuntimeError('the realtime core did not start')
        ready = conn.recv()
        if not isinstance(ready, pipe.Ready):
            raise RuntimeError('the realtime core failed: %s' % (getattr(ready, 'reason', ready),))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if conn.poll(0.1):
                conn.recv()
        mem = memory_of(proc.pid)
        conn.send(pipe.Quit())
    finally:
        proc.join(10.0)
        if proc.is_alive():
            proc.terminate()
    return ready.priority, mem


def mlock_ab(out_dir, pairs, seconds):
    """A/B: the core with and without mlockall, alternating (ABBA...), each segment a fresh
    core; the first second of each is left out (boot, first touches)."""
    logs = {True: [], False: []}
    rss = {True: [], False: []}
    notes = {}
    for i in range(pairs):
        for lock in ((True, False) if i % 2 == 0 else (False, True)):
            path = os.path.join(out_dir, 'logs', 'mlock_%s_%d.f32' % ('on' if lock else 'off', i))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            note, mem = _core_segment(lock, seconds, path)
            notes[lock] = note
            data = np.fromfile(path, dtype=np.float32).reshape(-1, 2)[1000:]
            logs[lock].append(data)
            if mem:
                rss[lock].append(mem[0])
    out = {'pairs': pairs, 'segment_s': seconds}
    for lock, name in ((True, 'locked'), (False, 'unlocked')):
        data = np.concatenate(logs[lock]) if logs[lock] else np.zeros((0, 2))
        compute, late = data[:, 0].astype(float), data[:, 1].astype(float)
        out[name] = {'ticks': int(len(compute)), 'priority': notes.get(lock),
                     'rss_mb': round(float(np.mean(rss[lock])), 1) if rss[lock] else None}
        if len(compute):
            out[name].update(
                compute_p50_us=round(float(np.percentile(compute, 50)), 1),
                compute_p99_us=round(float(np.percentile(compute, 99)), 1),
                compute_max_us=round(float(compute.max()), 1),
                late_p99_us=round(float(np.percentile(late, 99)), 1),
                late_max_us=round(float(late.max()), 1),
                overruns=int(np.count_nonzero((compute > 1000.0) | (late > 1000.0))))
    return out
