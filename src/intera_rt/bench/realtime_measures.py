"""The realtime section's measurements, each run in a child process of its own against its
own robot (scripts/sawyer on its own master; platform: no robot). What each measures:

tick       wall clock, 1 kHz: the loop's tick compute time and lateness (from its tick log)
           while a client streams TRAJECTORY_MODE hold commands at 800 Hz and subscribes to
           every state topic; windows and the overrun counter from /diagnostics.
roundtrip  wall clock: command -> state. Each TRAJECTORY_MODE command is a new position with
           a small velocity, so SEAJointState's commanded_position says which tick applied
           it (publish_to_apply); with the transport of that tick's /robot/joint_states
           (state_transport) that is the round trip, and publish_to_state adds the wait for
           the next 100 Hz state (what an SDK client sees). Commands go unstamped: a stamped
           sample is extrapolated from its stamp, which would hide the tick that applied it.
platform   no robot: a bare 1 kHz loop paced like the core's, and a pipe round trip between
           two idle processes: what the machine itself costs.
lockstep   --sim-time --speed max: sim seconds per wall second, from /diagnostics and /clock
           (lockstep_mujoco: the same on --backend mujoco); each robot process's CPU per sim
           second, and the state topics' rates in sim time (the nodes keep up: >= 95 %).
"""
import os
import random
import threading
import time

import numpy as np

from intera_rt.bench import wait_for
from intera_rt.robot import ARM_JOINTS

ARM = list(ARM_JOINTS)
NS = '/robot/limb/right/'
WARMUP = 3.0                  # s of streaming before measuring


# --- helpers inside a measuring child ----------------------------------------------------
def _init_node():
    import rospy
    rospy.init_node('intera_rt_bench', anonymous=True, disable_signals=True)


def _sync_publisher(topic, msg_type, **kwargs):
    import warnings

    import rospy
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', SyntaxWarning)
        return rospy.Publisher(topic, msg_type, queue_size=None, **kwargs)


def _loop_status(msg):
    status = next((s for s in msg.status if s.name == 'Realtime Control Loop'), None)
    if status is None:
        return None
    values = {}
    for kv in status.values:
        try:
            values[kv.key] = float(kv.value)
        except ValueError:
            pass
    return values


class _Diagnostics:
    """Keeps (wall time received, Realtime Control Loop values) of every /diagnostics."""

    def __init__(self):
        import rospy
        from diagnostic_msgs.msg import DiagnosticArray
        self.items = []
        self._lock = threading.Lock()
        self._sub = rospy.Subscriber('/diagnostics', DiagnosticArray, self._cb, queue_size=100)

    def _cb(self, msg):
        values = _loop_status(msg)
        if values is not None:
            values['_stamp'] = msg.header.stamp.to_sec()
            with self._lock:
                self.items.append((time.monotonic(), values))

    def since(self, t):
        with self._lock:
            return [v for w, v in self.items if w >= t]

    def count(self):
        with self._lock:
            return len(self.items)


def _percentiles(values, ps=(50, 90, 99)):
    a = np.asarray(values, float)
    return {'p%g' % p: float(np.percentile(a, p)) for p in ps}


# --- (a) tick compute time ----------------------------------------------------------------
def measure_tick(duration, rate=800.0):
    import rospy
    from intera_core_msgs.msg import (CollisionDetectionState, EndpointState, EndpointStates,
                                      HeadState, JointCommand, RobotAssemblyState, SEAJointState)
    from sensor_msgs.msg import JointState
    _init_node()
    latest = {}
    topics = [('/robot/joint_states', JointState), (NS + 'endpoint_state', EndpointState),
              (NS + 'tip_states', EndpointStates), (NS + 'gravity_compensation_torques', SEAJointState),
              (NS + 'collision_detection_state', CollisionDetectionState),
              ('/robot/head/head_state', HeadState), ('/robot/state', RobotAssemblyState)]
    subs = [rospy.Subscriber(t, c, lambda m, t=t: latest.__setitem__(t, m), queue_size=1,
                             tcp_nodelay=True) for t, c in topics]
    diag = _Diagnostics()
    pub = _sync_publisher(NS + 'joint_command', JointCommand, tcp_nodelay=True)
    wait_for(lambda: '/robot/joint_states' in latest and pub.get_num_connections() > 0, 30,
          'joint_states and a joint_command subscriber')
    js = latest['/robot/joint_states']
    hold = [js.position[js.name.index(n)] for n in ARM]
    cmd = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=ARM, position=hold,
                       velocity=[0.0] * 7, acceleration=[0.0] * 7)
    stop = threading.Event()
    sent = [0]

    def stream():
        period = 1.0 / rate
        t_next = time.perf_counter()
        while not stop.is_set():
            cmd.header.stamp = rospy.Time.now()
            pub.publish(cmd)
            sent[0] += 1
            t_next += period
            delay = t_next - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.05:
                t_next = time.perf_counter()          # fell far behind: do not burst
    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    time.sleep(WARMUP)                                 # warm-up, then measure from here
    n_before = diag.count()
    wait_for(lambda: diag.count() > n_before, 10, 'a /diagnostics message')
    with diag._lock:
        first = diag.items[-1][1]                      # baseline: counters at the start
    t_start = time.monotonic()
    sent0 = sent[0]
    time.sleep(duration)
    t_end = time.monotonic()
    wait_for(lambda: diag.since(t_end), 10, 'the last /diagnostics message')
    stop.set()
    streamer.join(2.0)
    stream_rate = (sent[0] - sent0) / (t_end - t_start)
    rest = [w for w in diag.since(t_start) if w['ticks'] > first['ticks']]
    if not rest:
        raise RuntimeError('no /diagnostics window during the measurement')
    last = rest[-1]
    per_second = [{'mean_us': w['mean_us'], 'p99_us': w['p99_us'], 'max_us': w['max_us']}
                  for w in rest]
    p99s = [w['p99_us'] for w in rest]
    for s in subs:
        s.unregister()
    per_tick = _tick_log(int(first['ticks']), int(last['ticks']))
    return {
        'clock': 'wall', 'rate_hz': 1000.0, 'duration_s': t_end - t_start,
        'windows': len(rest), 'ticks': int(last['ticks'] - first['ticks']),
        'overruns': int(last['overruns'] - first['overruns']),
        'command_rate_hz': stream_rate,
        'mean_us': float(np.mean([w['mean_us'] for w in rest])),
        'p50_us': per_tick['p50_us'],
        'p99_us': per_tick['p99_us'],
        'p99_worst_window_us': float(max(p99s)),
        'p99_median_window_us': float(np.median(p99s)),
        'p999_us': per_tick['p999_us'],
        'max_us': float(max(w['max_us'] for w in rest)),
        'late_p99_us': per_tick['late_p99_us'], 'late_max_us': per_tick['late_max_us'],
        'compute_us_samples': per_tick['samples'],
        'max_since_boot_us': last.get('max_since_boot_us'),
        'command_timeouts': int(last.get('command_timeouts', 0) - first.get('command_timeouts', 0)),
        'per_second': per_second,
        'note': ('percentiles over every tick of the run, from the loop\'s tick log '
                 '(INTERA_RT_TICK_LOG); late_* is how far past its 1 ms deadline a tick ended; '
                 'overruns and windows from /diagnostics'),
    }


def _tick_log(first, last):
    """Per-tick compute and lateness (µs) of ticks [first, last) from the loop's tick log."""
    data = np.fromfile(os.environ['INTERA_RT_TICK_LOG'], dtype=np.float32).reshape(-1, 2)
    rows = data[first:last]
    if not len(rows):
        raise RuntimeError('the tick log holds no ticks of the measurement (%d rows, wanted '
                           '%d..%d)' % (len(data), first, last))
    compute, late = rows[:, 0].astype(float), rows[:, 1].astype(float)
    return {'p50_us': float(np.percentile(compute, 50)), 'p99_us': float(np.percentile(compute, 99)),
            'p999_us': float(np.percentile(compute, 99.9)),
            'late_p99_us': float(np.percentile(late, 99)), 'late_max_us': float(late.max()),
            # a thinned copy for the histogram (bench.json stays small)
            'samples': compute[::max(1, len(compute) // 20000)].round(1).tolist()}


# --- (b) command -> state round trip -----------------------------------------------------
def measure_roundtrip(samples, velocity=0.01, jump=0.002):
    import rospy
    from intera_core_msgs.msg import JointCommand, SEAJointState
    from sensor_msgs.msg import JointState
    _init_node()
    cond = threading.Condition()
    received = []                                  # (wall time received, msg)
    joints_received = {}                           # joint_states stamp → wall time received

    def on_joints(msg):
        t = time.time()
        with cond:
            joints_received[msg.header.stamp] = t
            cond.notify_all()

    def on_sea(msg):
        t = time.time()
        with cond:
            received.append((t, msg))
            cond.notify_all()
    rospy.Subscriber(NS + 'gravity_compensation_torques', SEAJointState, on_sea, queue_size=100,
                     tcp_nodelay=True)
    rospy.Subscriber('/robot/joint_states', JointState, on_joints, queue_size=100,
                     tcp_nodelay=True)
    pub = _sync_publisher(NS + 'joint_command', JointCommand, tcp_nodelay=True)
    wait_for(lambda: received and pub.get_num_connections() > 0, 30,
          'SEAJointState and a joint_command subscriber')
    base = list(received[-1][1].actual_position)
    cmd = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=ARM)
    rows = []
    misses = 0
    rng = random.Random(1)
    for k in range(samples + 5):                 # the first 5 warm the path up
        p = list(base)
        p[0] += jump if k % 2 else 0.0
        cmd.position = p
        cmd.velocity = [velocity] + [0.0] * 6
        cmd.acceleration = [0.0] * 7
        with cond:
            n0 = len(received)
        t_pub = time.time()
        # header.stamp stays 0: a stamped sample is extrapolated from its stamp, which
        # would hide the tick that applied it.
        pub.publish(cmd)
        found = None
        deadline = time.monotonic() + 1.0
        with cond:
            while found is None and time.monotonic() < deadline:
                for t_recv, msg in received[n0:]:
                    dp = msg.commanded_position[0] - p[0]
                    if -1e-9 <= dp < jump / 2:
                        found = (t_recv, msg, dp / velocity)
                        break
                else:
                    n0 = len(received)
                    cond.wait(0.05)
        if found is None:
            misses += 1
            continue
        t_sea, msg, since_apply = found
        with cond:                # the same state's joint_states comes on its own connection
            cond.wait_for(lambda: msg.header.stamp in joints_received, 1.0)
            t_recv = joints_received.get(msg.header.stamp)
        if t_recv is None:
            misses += 1
            continue
        stamp = msg.header.stamp.to_sec()
        if k >= 5:
            # The state is stamped when its tick ended: a tick that applied the command
            # began up to one compute time earlier, so this reads a little late.
            rows.append((stamp - since_apply - t_pub, t_recv - stamp, t_recv - t_pub,
                         t_sea - stamp))
        time.sleep(rng.uniform(0.0, 0.012))      # random phase against the 1 kHz / 100 Hz clocks
    a = np.array(rows) * 1e3
    apply_ms, transport_ms, state_ms, sea_ms = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    roundtrip = apply_ms + transport_ms
    out = {'clock': 'wall', 'samples': len(rows), 'misses': misses}
    for name, values in (('roundtrip_ms', roundtrip), ('publish_to_apply_ms', apply_ms),
                         ('state_transport_ms', transport_ms), ('publish_to_state_ms', state_ms),
                         ('sea_transport_ms', sea_ms)):
        stats = _percentiles(values)
        stats['max'] = float(values.max())
        out[name] = stats
    out['samples_ms'] = {'roundtrip': roundtrip.round(3).tolist(),
                         'publish_to_state': state_ms.round(3).tolist()}
    out['note'] = ('publish_to_apply is resolved to 1 ms from the commanded reference, '
                   'assuming ticks 1 ms apart (it reads low, even below 0, when the loop runs '
                   'late ticks back to back); roundtrip excludes the wait for the next 100 Hz '
                   'state message, publish_to_state includes it')
    return out


# --- (c) lockstep speed --------------------------------------------------------------------
# The state topics whose rate in sim time says whether the nodes keep up (nominal 100 Hz);
# stamped: the rate of their header stamps, else of their arrivals by /clock.
STATE_TOPICS = (('/robot/joint_states', True), ('/robot/state', False))
STATE_RATE = 100.0


def robot_cpu(root_pid=None):
    """{process: CPU s (user + system) so far} of the processes under root_pid (default: this
    one's, whose child the measured robot is), named by what they run: the core's process
    'core', a node by its name, anything else by its program."""
    from intera_rt.tooling.robot_process import descendants
    out = {}
    for pid in descendants(os.getpid() if root_pid is None else root_pid):
        try:
            with open('/proc/%d/cmdline' % pid) as f:
                argv = f.read().split('\0')
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        script = argv[0]
        if os.path.basename(script).startswith('python') and len(argv) > 1:   # its script or -m module
            script = argv[2] if argv[1] == '-m' and len(argv) > 2 else argv[1]
        name = next((a.split(':=', 1)[1] for a in argv if a.startswith('__name:=')), None) \
            or ('core' if 'intera_rt.realtime.process' in argv else os.path.basename(script))
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')     # utime + stime
        out[name] = out.get(name, 0.0) + seconds
    return out


class _Arrivals:
    """The sim times of a topic's messages, unparsed (rospy.AnyMsg: the measurement must not
    cost what it measures): a header's stamp when `stamped` (a std_msgs/Header first: seq,
    then secs and nsecs), else the latest /clock at arrival."""

    def __init__(self, topic, stamped, clock):
        import struct

        import rospy
        self.times = []
        unpack = struct.Struct('<II').unpack_from

        def heard(msg):
            if stamped:
                secs, nsecs = unpack(msg._buff, 4)
                self.times.append(secs + 1e-9 * nsecs)
            elif clock['t'] is not None:
                self.times.append(clock['t'])
        rospy.Subscriber(topic, rospy.AnyMsg, heard, queue_size=None)

    def rate(self, t0, t1):
        return sum(1 for t in list(self.times) if t0 < t <= t1) / (t1 - t0)


def measure_lockstep(duration):
    import rospy
    from rosgraph_msgs.msg import Clock
    _init_node()
    clock = {'t': None}
    rospy.Subscriber('/clock', Clock, lambda m: clock.__setitem__('t', m.clock.to_sec()),
                     queue_size=1)
    topics = {name: _Arrivals(name, stamped, clock) for name, stamped in STATE_TOPICS}
    diag = _Diagnostics()
    wait_for(lambda: clock['t'] is not None, 30, '/clock')
    time.sleep(1.0)                               # let the other nodes settle after boot
    n0 = diag.count()
    wait_for(lambda: diag.count() > n0, 30, 'a /diagnostics message')
    w0, first = diag.items[-1]
    c0, cw0, cpu0 = clock['t'], time.monotonic(), robot_cpu()
    time.sleep(duration)
    n1 = diag.count()
    wait_for(lambda: diag.count() > n1, 30, 'a /diagnostics message')
    w1, last = diag.items[-1]
    c1, cw1, cpu1 = clock['t'], time.monotonic(), robot_cpu()
    sim_s = (last['ticks'] - first['ticks']) * 0.001
    clock_s = c1 - c0
    # (the arrivals of the last /clock step may still be on their way: the rates end a step
    # before it)
    rates = {name: a.rate(c0, c1 - 0.05) for name, a in topics.items()}
    return {'clock': 'sim, --speed max', 'wall_s': w1 - w0, 'sim_s': sim_s,
            'speedup': sim_s / (w1 - w0),
            'speedup_from_clock': clock_s / (cw1 - cw0),
            'tick_mean_us': float(last['mean_us']), 'tick_p99_us': float(last['p99_us']),
            # CPU s of each process per s of sim time, and its share of a core (wall)
            'cpu_per_sim_s': {n: (cpu1[n] - cpu0[n]) / clock_s for n in cpu1 if n in cpu0},
            'cpu_share': {n: (cpu1[n] - cpu0[n]) / (cw1 - cw0) for n in cpu1 if n in cpu0},
            'state_rates_hz': rates,
            'state_rates_ok': all(r >= 0.95 * STATE_RATE for r in rates.values())}


def _echo(conn):
    while True:
        try:
            conn.send(conn.recv())
        except EOFError:
            return


def _wake_latency(samples=200, idle=0.01):
    """Round trips of a small message between two idle processes over a pipe (each side
    asleep in recv, as the robot's processes wait for each other), 10 ms apart: what one
    hop from process to process costs on this machine (the ROS round trip makes ~4)."""
    import multiprocessing
    ctx = multiprocessing.get_context('spawn')
    ours, theirs = ctx.Pipe()
    echo = ctx.Process(target=_echo, args=(theirs,), daemon=True)
    echo.start()
    ours.send(0.0)
    ours.recv()
    trips = []
    for _ in range(samples):
        time.sleep(idle)
        t0 = time.perf_counter()
        ours.send(t0)
        ours.recv()
        trips.append(time.perf_counter() - t0)
    ours.close()
    echo.join(5.0)
    trips_us = 1e6 * np.array(trips)
    return dict(_percentiles(trips_us, (50, 99)), max=float(trips_us.max()), samples=samples)


def python_speed(runs=5, n=2_000_000):
    """Seconds ten million Python additions take here (the median of `runs` timed loops):
    how fast this hour runs the interpreter, which sets the Python tick's cost."""
    times = []
    for _ in range(runs):
        t0, x = time.perf_counter(), 0
        for i in range(n):
            x += i
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e7 / n


def measure_platform(duration):
    from intera_rt.realtime.process import bare_loop
    late, priority = bare_loop(duration)
    return {'duration_s': duration, 'ticks': len(late), 'priority': priority,
            'overruns': int(np.count_nonzero(late > 1000.0)),
            'late_over_200us': int(np.count_nonzero(late > 200.0)),
            'late_p99_us': float(np.percentile(late, 99)), 'late_max_us': float(late.max()),
            'pipe_round_trip_us': _wake_latency(), 'python_1e7_additions_s': python_speed()}


MEASURES = {'tick': (measure_tick, []),
            'platform': (measure_platform, None),
            'roundtrip': (measure_roundtrip, []),
            'lockstep': (measure_lockstep, ['--sim-time', '--speed', 'max']),
            'lockstep_mujoco': (measure_lockstep, ['--sim-time', '--speed', 'max',
                                                   '--backend', 'mujoco'])}
