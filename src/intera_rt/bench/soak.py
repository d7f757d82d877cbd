"""Soak: one robot (sim time at 1x) used for `soak` seconds by a random client that sends valid
and invalid commands through every interface, with E-stops and recoveries; and the robot's
memory. ``scripts/bench --soak S`` (default 60 s, --quick 20 s).

soak     Random actions, seeded, ~10 a second: valid ones (motion controller and JTAS
         motions, POSITION_MODE streams, IK/FK, head, speed ratio, IO lights, suppress
         topics) and invalid ones (the catalogue's kinds: bad joint commands, timeouts,
         ratios, head and interaction commands, IK/FK requests, motion and trajectory goals,
         IO commands, sim-control requests, garbage on a topic port and a service port); an
         E-stop (pressed, released, reset, enabled) every `estop_every` s. It reports:
           crashes        robot nodes that died or were restarted (their pid changed) and
                          the realtime core (target 0)
           motions        goals sent and terminal results received (target: every one)
           rss            each robot process's RSS every few seconds; growth from the end
                          of the warm-up (every kind of action done once, then 15 % of the
                          run) to the end of the run, per process and in total (target < 5 %)
           tick           per-tick compute time from the loop's tick log, p99 per window;
                          stable when the last third's median p99 is within 1.5x the first
                          third's
memory   each robot process's RSS (and PSS: shared pages split among their users) after boot
         and settling, and the totals. Under sim time the core does not lock its memory.
mlock    what locking memory buys: the realtime core alone under the wall clock (SCHED_FIFO)
         with and without mlockall, alternating A/B segments; tick compute and lateness
         percentiles, overruns and the core's RSS for each.

Runs in the section's own process (one rospy node, one robot).
"""
import json
import math
import os
import random
import socket
import struct
import sys
import threading
import time

import numpy as np

from intera_rt.bench import own_robot, wait_for
from intera_rt.robot import NEUTRAL
from intera_rt.tooling.robot_process import ROBOT_NODES

ARM = ['right_j%d' % i for i in range(7)]
NS = '/robot/limb/right/'
SIM = '/intera_rt/sim/'
KIN = '/ExternalTools/right/PositionKinematicsNode/'
TARGETS = {'crashes': 0, 'rss_growth_pct': 5.0, 'tick_p99_drift': 1.5, 'results_missing': 0,
           'memory_total_mb': 600.0}
BOOT_TIMEOUT = 120.0
SAMPLE_EVERY = 2.0           # s between RSS samples
Q0 = np.array(NEUTRAL)


# --- processes and memory -------------------------------------------------------------------
def _descendants(root):
    from intera_rt.tooling.robot_process import descendants
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
    for pid in _descendants(root):
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
    import xmlrpc.client

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


# --- the client ---------------------------------------------------------------------------
class Client:
    """Publishers, services and action clients; motions tracked until their result."""

    def __init__(self, rng):
        import actionlib
        import rospy
        from control_msgs.msg import FollowJointTrajectoryAction
        from intera_core_msgs.msg import RobotAssemblyState
        from intera_motion_msgs.msg import MotionCommandAction
        from sensor_msgs.msg import JointState
        self.rng = rng
        self._pubs, self._srvs = {}, {}
        self.mc = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        self.mc_stop = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        self.jtas = actionlib.SimpleActionClient(NS + 'follow_joint_trajectory', FollowJointTrajectoryAction)
        for c in (self.mc, self.mc_stop, self.jtas):
            if not c.wait_for_server(rospy.Duration(60.0)):
                raise RuntimeError('no action server for %s' % c.action_client.ns)
        self.q = Q0.copy()
        self.state = None
        rospy.Subscriber('/robot/joint_states', JointState, self._on_js, queue_size=1)
        rospy.Subscriber('/robot/state', RobotAssemblyState, self._on_state, queue_size=1)
        self.sent = {'mc': 0, 'mc_stop': 0, 'jtas': 0}
        self.results = {'mc': 0, 'mc_stop': 0, 'jtas': 0}
        self.outcomes = {}                 # 'mc:CONTROLLER_NOT_FOLLOWING' → count
        self.active = {'mc': False, 'mc_stop': False, 'jtas': False}
        self._lock = threading.Lock()
        wait_for(lambda: self.state is not None, 30.0, '/robot/state')

    def _on_js(self, msg):
        self.q = np.array([msg.position[msg.name.index(n)] for n in ARM])

    def _on_state(self, msg):
        self.state = msg

    def publish(self, topic, msg):
        import warnings

        import rospy
        pub = self._pubs.get(topic)
        if pub is None:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', SyntaxWarning)
                pub = self._pubs[topic] = rospy.Publisher(topic, type(msg), queue_size=None)
            deadline = time.monotonic() + 5.0
            while pub.get_num_connections() == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        pub.publish(msg)

    def call(self, name, srv_type, *args):
        import rospy
        proxy = self._srvs.get(name)
        if proxy is None:
            rospy.wait_for_service(name, 20.0)
            proxy = self._srvs[name] = rospy.ServiceProxy(name, srv_type)
        return proxy(*args)

    def busy(self):
        return self.active['mc'] or self.active['jtas']

    def send_goal(self, which, goal):
        """Send on the client `which` unless it has a goal in flight (its result would be
        forgotten); the result is counted when it comes."""
        client = getattr(self, which)
        with self._lock:
            if self.active[which]:
                return False
            self.active[which] = True
            self.sent[which] += 1

        def done(state, result):
            if which == 'jtas':
                key = 'code %s' % getattr(result, 'error_code', None)
            else:
                key = 'ok' if getattr(result, 'result', False) else (getattr(result, 'errorId', '') or 'state %d' % state)
            with self._lock:
                self.results[which] += 1
                self.outcomes['%s: %s' % (which, key)] = self.outcomes.get('%s: %s' % (which, key), 0) + 1
                self.active[which] = False
        client.send_goal(goal, done_cb=done)
        return True

    def wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        while any(self.active.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not any(self.active.values())


# --- messages -------------------------------------------------------------------------------
def _jc(mode, names, position=(), velocity=(), effort=()):
    from intera_core_msgs.msg import JointCommand
    return JointCommand(mode=mode, names=list(names), position=list(position),
                        velocity=list(velocity), effort=list(effort))


def _mc_goal(waypoints, command='start', interpolation='JOINT'):
    from intera_motion_msgs.msg import MotionCommandGoal, Waypoint
    g = MotionCommandGoal(command=command)
    g.trajectory.label = 'soak'
    g.trajectory.joint_names = list(ARM)
    g.trajectory.trajectory_options.interpolation_type = interpolation
    for q, ratio in waypoints:
        w = Waypoint(active_endpoint='right_hand', joint_positions=list(q))
        w.options.max_joint_speed_ratio = ratio
        g.trajectory.waypoints.append(w)
    return g


def _jtas_goal(points):
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    for t, q in points:
        goal.trajectory.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration(t)))
    return goal


def _target(rng, spread=0.3):
    q = Q0.copy()
    for j in (0, 1, 2, 3, 5):
        q[j] += rng.uniform(-spread, spread)
    return q


def _fk_request(names, positions):
    from intera_core_msgs.srv import SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    return SolvePositionFKRequest(configuration=[JointState(name=list(names), position=list(positions))],
                                  tip_names=['right_hand'])


def _ik_request(position, quat):
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.srv import SolvePositionIKRequest
    ps = PoseStamped()
    ps.header.frame_id = 'base'
    ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = position
    o = ps.pose.orientation
    o.x, o.y, o.z, o.w = quat
    return SolvePositionIKRequest(pose_stamp=[ps], tip_names=['right_hand'])


# --- actions ----------------------------------------------------------------------------------
def a_mc_motion(c):
    if c.busy():
        return 'skipped'
    c.send_goal('mc', _mc_goal([(c.q, 0.5), (_target(c.rng), c.rng.uniform(0.3, 1.0))]))


def a_mc_stop(c):
    c.send_goal('mc_stop', _mc_goal([], command='stop'))


def a_jtas_motion(c):
    if c.busy():
        return 'skipped'
    c.send_goal('jtas', _jtas_goal([(0.0, c.q), (c.rng.uniform(1.0, 2.0), _target(c.rng))]))


def a_position_stream(c):
    if c.busy():
        return 'skipped'
    target = _target(c.rng, 0.1)
    for _ in range(30):
        c.publish(NS + 'joint_command', _jc(1, ARM, position=target))
        time.sleep(0.01)


def a_fk(c):
    from intera_core_msgs.srv import SolvePositionFK
    r = c.call(KIN + 'FKService', SolvePositionFK, _fk_request(ARM, c.q))
    return None if list(r.isValid) == [True] else 'unexpected: FK invalid'


def a_ik(c):
    from intera_core_msgs.srv import SolvePositionIK
    r = c.call(KIN + 'IKService', SolvePositionIK, _ik_request((0.45, 0.16, 0.22), (0.7071068, 0.7071068, 0, 0)))
    return None if r.result_type[0] > 0 else 'unexpected: IK %d' % r.result_type[0]


def a_head(c):
    from intera_core_msgs.msg import HeadPanCommand
    c.publish('/robot/head/command_head_pan', HeadPanCommand(c.rng.uniform(-2.0, 0.9), c.rng.uniform(0.2, 1.0), 1))


def a_speed_ratio(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'set_speed_ratio', Float64(c.rng.uniform(0.2, 1.0)))


def a_light(c):
    import rospy
    from intera_core_msgs.msg import IOComponentCommand
    on = 'true' if c.rng.random() < 0.5 else 'false'
    c.publish('/io/robot/robot/command', IOComponentCommand(
        time=rospy.Time.now(), op='set',
        args='{"signals": {"head_green_light": {"format": {"type": "bool"}, "data": [%s]}}}' % on))


def a_suppress(c):
    from std_msgs.msg import Empty
    for _ in range(3):
        c.publish(NS + 'suppress_collision_avoidance', Empty())
        time.sleep(0.05)


VALID = [(a_mc_motion, 3), (a_mc_stop, 1), (a_jtas_motion, 3), (a_position_stream, 2), (a_fk, 2),
         (a_ik, 1), (a_head, 1), (a_speed_ratio, 1), (a_light, 1), (a_suppress, 1)]


def b_joint_command(c):
    bad = c.rng.choice([
        _jc(1, ARM, position=[math.nan] * 7), _jc(1, ['right_j9'], position=[0.1]),
        _jc(1, ['right_j0'], position=[0.1, 0.2]), _jc(9, ARM, position=list(Q0)),
        _jc(2, ['right_j0'], velocity=[math.inf]), _jc(3, ['right_j0', 'right_j0'], effort=[1, 1]),
        _jc(1, [], position=[])])
    c.publish(NS + 'joint_command', bad)


def b_timeout(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'joint_command_timeout', Float64(c.rng.choice([math.nan, -1.0, 0.0, math.inf])))


def b_speed_ratio(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'set_speed_ratio', Float64(c.rng.choice([math.nan, -0.5, 7.0])))
    c.publish(NS + 'set_speed_ratio', Float64(0.5))           # and a sane one again


def b_head(c):
    from intera_core_msgs.msg import HeadPanCommand
    c.publish('/robot/head/command_head_pan', c.rng.choice([
        HeadPanCommand(-1.0, 0.5, 9), HeadPanCommand(-1.0, -1.0, 1), HeadPanCommand(math.nan, 0.5, 1)]))


def b_interaction(c):
    from intera_core_msgs.msg import InteractionControlCommand
    c.publish(NS + 'interaction_control_command', InteractionControlCommand(
        interaction_control_active=True, K_impedance=[1.0] * 5))


def b_ik(c):
    from intera_core_msgs.srv import SolvePositionIK
    r = c.call(KIN + 'IKService', SolvePositionIK, _ik_request((0.45, 0.16, 0.22), (0, 0, 0, 0)))
    return None if list(r.result_type) == [-1] else 'unexpected: IK %s' % list(r.result_type)


def b_fk(c):
    from intera_core_msgs.srv import SolvePositionFK
    r = c.call(KIN + 'FKService', SolvePositionFK, _fk_request(['j%d' % i for i in range(7)], Q0))
    return None if list(r.isValid) == [False] else 'unexpected: FK valid'


def b_mc_goal(c):
    c.send_goal('mc_stop' if c.active['mc'] else 'mc',
                _mc_goal([(c.q, 0.5), (_target(c.rng), math.nan)]))


def b_jtas_goal(c):
    if c.busy():
        return 'skipped'
    c.send_goal('jtas', _jtas_goal([(1.0, c.q), (0.5, c.q)]))


def b_io(c):
    import rospy
    from intera_core_msgs.msg import IOComponentCommand
    c.publish('/io/robot/robot/command', IOComponentCommand(
        time=rospy.Time.now(), op=c.rng.choice(['set', 'frobnicate']), args='{signals'))


def b_sim(c):
    from geometry_msgs.msg import Wrench
    from intera_rt_msgs.srv import ApplyWrench
    r = c.call(SIM + 'apply_wrench', ApplyWrench, 'right_l9', Wrench(), 0.1)
    return None if r.success is False else 'unexpected: wrench accepted'


def b_garbage_topic(c):
    import xmlrpc.client

    import rosgraph
    uri = rosgraph.Master('/bench_soak').lookupNode('/realtime_loop')
    _, _, proto = xmlrpc.client.ServerProxy(uri).requestTopic('/bench_soak', '/robot/state', [['TCPROS']])
    with socket.create_connection((proto[1], proto[2]), timeout=2.0) as s:
        s.sendall(struct.pack('<I', 16) + bytes(c.rng.getrandbits(8) for _ in range(16)))


def b_garbage_service(c):
    import rosgraph
    from intera_core_msgs.srv import SolvePositionFK
    uri = rosgraph.Master('/bench_soak').lookupService(KIN + 'FKService')
    host, port = uri[len('rosrpc://'):].rsplit(':', 1)
    fields = [('%s=%s' % kv).encode() for kv in (('callerid', '/bench_soak'), ('service', KIN + 'FKService'),
                                                 ('md5sum', SolvePositionFK._md5sum))]
    header = b''.join(struct.pack('<I', len(f)) + f for f in fields)
    with socket.create_connection((host, int(port)), timeout=2.0) as s:
        s.sendall(struct.pack('<I', len(header)) + header)
        s.recv(4096)
        s.sendall(struct.pack('<I', 8) + b'\xff' * 8)
        s.settimeout(2.0)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


INVALID = [(b_joint_command, 3), (b_timeout, 1), (b_speed_ratio, 1), (b_head, 1), (b_interaction, 1),
           (b_ik, 1), (b_fk, 1), (b_mc_goal, 1), (b_jtas_goal, 1), (b_io, 1), (b_sim, 1),
           (b_garbage_topic, 1), (b_garbage_service, 1)]


def estop_and_recover(c):
    """E-stop pressed (mid-whatever), then released, reset and enabled: seconds to enabled."""
    from std_msgs.msg import Bool, Empty
    from std_srvs.srv import SetBool
    t0 = time.monotonic()
    c.call(SIM + 'estop_button', SetBool, True)
    wait_for(lambda: c.state.stopped and c.state.estop_button == 1, 10.0, 'the robot stopped by the E-stop')
    time.sleep(0.3)
    c.call(SIM + 'estop_button', SetBool, False)
    wait_for(lambda: c.publish('/robot/set_super_reset', Empty()) or not c.state.stopped, 10.0,
             'the robot reset', interval=0.05)
    wait_for(lambda: c.publish('/robot/set_super_enable', Bool(True)) or c.state.enabled, 10.0,
             'the robot enabled', interval=0.05)
    return time.monotonic() - t0


# --- the soak ------------------------------------------------------------------------------------
def soak_run(duration, robot, rate=10.0, estop_every=60.0, seed=1):
    import rospy
    rospy.init_node('bench_soak', anonymous=True, disable_signals=True)
    rng = random.Random(seed)
    c = Client(rng)
    pids0 = node_pids()
    samples = []                              # (t, {name: rss_mb})
    counts, errors = {}, {}
    estops = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            snap = memory_snapshot(robot.proc.pid)
            samples.append((time.monotonic(), {n: p['rss_mb'] for n, p in snap['processes'].items()}))
            stop.wait(SAMPLE_EVERY)
    sampler = threading.Thread(target=sample, daemon=True)

    def do(action, kind):
        try:
            outcome = action(c)
        except Exception as exc:  # noqa: BLE001 - a failed call is a finding, not the end
            outcome = 'error: %s: %s' % (type(exc).__name__, str(exc).split('\n')[0][:120])
        key = '%s %s' % (kind, action.__name__[2:])
        counts[key] = counts.get(key, 0) + 1
        if outcome and outcome != 'skipped':
            errors[key + ': ' + outcome] = errors.get(key + ': ' + outcome, 0) + 1

    # warm-up: every action once, then 15 % of the run
    for action, _ in VALID:
        do(action, 'valid')
        c.wait_idle(30.0)
    for action, _ in INVALID:
        do(action, 'invalid')
    c.wait_idle(30.0)
    estops.append(estop_and_recover(c))
    sampler.start()
    t_start = time.monotonic()
    warm_end = t_start + 0.15 * duration
    next_estop = t_start + estop_every
    valid_w = [w for _, w in VALID]
    invalid_w = [w for _, w in INVALID]
    while time.monotonic() - t_start < duration:
        if time.monotonic() >= next_estop:
            estops.append(estop_and_recover(c))
            next_estop += estop_every
        if rng.random() < 0.5:
            do(rng.choices([a for a, _ in VALID], valid_w)[0], 'valid')
        else:
            do(rng.choices([a for a, _ in INVALID], invalid_w)[0], 'invalid')
        time.sleep(rng.expovariate(rate))
    t_end = time.monotonic()
    idle = c.wait_idle(60.0)
    stop.set()
    sampler.join(5.0)
    pids1 = node_pids()
    crashes = sorted(n for n in ROBOT_NODES if pids1.get(n) != pids0.get(n) or pids1.get(n) is None)
    core_alive = any(process_name(p) == 'realtime_core' for p in _descendants(robot.proc.pid))
    return {
        'duration_s': round(t_end - t_start, 1), 'seed': seed, 'actions': counts,
        'actions_total': sum(counts.values()), 'unexpected': errors,
        'estops': len(estops), 'estop_recovery_s': {'mean': float(np.mean(estops)), 'max': float(max(estops))},
        'crashes': len(crashes) + (0 if core_alive else 1), 'crashed': crashes + ([] if core_alive else ['realtime_core']),
        'robot_alive': robot.alive(),
        'motions': {'sent': dict(c.sent), 'results': dict(c.results), 'outcomes': dict(c.outcomes),
                    'missing': sum(c.sent.values()) - sum(c.results.values()), 'all_idle': idle},
        'rss': _growth(samples, warm_end),
    }


def _growth(samples, warm_end):
    """RSS per process and total: mean over the first 10 % of the samples after the warm-up
    and over the last 10 %; growth in %."""
    after = [s for s in samples if s[0] >= warm_end] or samples
    if len(after) < 2:
        return {'error': 'too few samples (%d)' % len(samples)}
    k = max(1, len(after) // 10)
    first, last = after[:k], after[-k:]
    names = sorted(set(first[-1][1]) & set(last[-1][1]))

    def mean(block, name):
        return float(np.mean([s[1][name] for s in block if name in s[1]]))
    out = {'samples': len(samples), 'per_process': {}}
    for name in names:
        a, b = mean(first, name), mean(last, name)
        out['per_process'][name] = {'start_mb': round(a, 1), 'end_mb': round(b, 1),
                                    'growth_pct': round(100.0 * (b - a) / a, 2)}
    a = sum(mean(first, n) for n in names)
    b = sum(mean(last, n) for n in names)
    out.update(start_total_mb=round(a, 1), end_total_mb=round(b, 1),
               growth_pct=round(100.0 * (b - a) / a, 2),
               series_total_mb=[round(sum(s[1].values()), 1) for s in samples[::max(1, len(samples) // 200)]])
    return out


def tick_windows(path, window_ticks):
    """p99 of the tick compute time per window of the loop's tick log (µs)."""
    data = np.fromfile(path, dtype=np.float32).reshape(-1, 2)
    compute = data[:, 0].astype(float)
    n = len(compute) // window_ticks
    p99 = [float(np.percentile(compute[i * window_ticks:(i + 1) * window_ticks], 99)) for i in range(n)]
    out = {'ticks': int(len(compute)), 'window_ticks': window_ticks, 'p99_us': [round(x, 1) for x in p99]}
    if n >= 3:
        third = max(1, n // 3)
        a, b = float(np.median(p99[:third])), float(np.median(p99[-third:]))
        out.update(first_third_p99_us=round(a, 1), last_third_p99_us=round(b, 1),
                   drift=round(b / a, 3), stable=b <= TARGETS['tick_p99_drift'] * a)
    return out


# --- mlock A/B ------------------------------------------------------------------------------------
def _core_segment(lock, seconds, log_path):
    """The realtime core alone under the wall clock for `seconds`: its tick log and RSS."""
    from intera_rt.realtime import process as rt_process
    proc, conn = rt_process.start(dict(
        urdf=None, backend='embedded', q_arm=list(NEUTRAL), q_head=0.0, options={}, enabled=True,
        sim_time=False, speed=1.0, priority=50, tick_log=log_path, lock_memory=lock))
    try:
        if not conn.poll(120.0):
            raise RuntimeError('the realtime core did not start')
        ready = conn.recv()
        if ready[0] != 'ready':
            raise RuntimeError('the realtime core failed: %s' % (ready[1],))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if conn.poll(0.1):
                conn.recv()
        mem = memory_of(proc.pid)
        conn.send(('quit',))
    finally:
        proc.join(10.0)
        if proc.is_alive():
            proc.terminate()
    return ready[2], mem


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


# --- the section -----------------------------------------------------------------------------------
def run(out_dir='bench_out', quick=False, soak=None):
    duration = float(soak) if soak else (20.0 if quick else 60.0)
    out_dir = os.path.abspath(out_dir)
    os.makedirs(os.path.join(out_dir, 'logs'), exist_ok=True)
    out = {'load_avg_at_start': list(os.getloadavg())}
    tick_log = os.path.join(out_dir, 'logs', 'soak_ticks.f32')
    os.environ['INTERA_RT_TICK_LOG'] = tick_log
    log = os.path.join(out_dir, 'logs', 'soak_robot.log')
    print('[bench]   soak: boot, memory, %.0f s of random use ...' % duration, flush=True)
    with own_robot(['--sim-time', '--speed', '1'], log, BOOT_TIMEOUT) as robot:
        time.sleep(3.0 if quick else 10.0)              # the nodes settle after boot
        out['memory'] = memory_snapshot(robot.proc.pid)
        out["soak"] = soak_run(duration, robot, estop_every=8.0 if quick else 60.0)
        out['memory_after'] = memory_snapshot(robot.proc.pid)
    os.environ.pop('INTERA_RT_TICK_LOG', None)
    out['tick'] = tick_windows(tick_log, 5000 if quick else 60000)
    print('[bench]   soak: mlock A/B under the wall clock ...', flush=True)
    out['mlock'] = mlock_ab(out_dir, 1 if quick else 4, 3.0 if quick else 15.0)
    out['load_avg_at_end'] = list(os.getloadavg())
    out['targets'] = dict(TARGETS)
    out['verdict'] = _verdict(out)
    out['summary'] = _summary(out)
    return out


def _verdict(out):
    s, t = out['soak'], out['tick']
    return {'crashes': s['crashes'] <= TARGETS['crashes'],
            'results_missing': s['motions']['missing'] <= TARGETS['results_missing'],
            'rss_growth_pct': s['rss'].get('growth_pct', math.inf) < TARGETS['rss_growth_pct'],
            'tick_p99_stable': bool(t.get('stable', False)),
            'memory_total_mb': out['memory']['total_rss_mb'] <= TARGETS['memory_total_mb']}


def _summary(out):
    ok = {True: 'meets', False: 'MISSES'}
    s, m, t, v = out['soak'], out['memory'], out['tick'], out['verdict']
    mo = s['motions']
    lines = ['load average at start %s, at end %s' % tuple(
        '/'.join('%.1f' % x for x in out[k]) for k in ('load_avg_at_start', 'load_avg_at_end'))]
    lines.append('memory after boot (sim time): RSS %.0f MB in all (robot nodes and core %.0f MB), '
                 'PSS %.0f MB; target RSS <= %.0f MB: %s'
                 % (m['total_rss_mb'], m['robot_nodes_rss_mb'], m['total_pss_mb'],
                    TARGETS['memory_total_mb'], ok[v['memory_total_mb']]))
    lines.append('  ' + ', '.join('%s %.0f' % (n, p['rss_mb']) for n, p in
                                  sorted(m['processes'].items(), key=lambda kv: -kv[1]['rss_mb'])))
    lines.append('soak %.0f s: %d actions (%d valid, %d invalid), %d E-stops (recovered in %.1f s max), '
                 'crashes %d (%s)'
                 % (s['duration_s'], s['actions_total'],
                    sum(n for k, n in s['actions'].items() if k.startswith('valid')),
                    sum(n for k, n in s['actions'].items() if k.startswith('invalid')),
                    s['estops'], s['estop_recovery_s']['max'], s['crashes'], ok[v['crashes']]))
    lines.append('  motions: %d goals, %d results (%s); unexpected answers: %d'
                 % (sum(mo['sent'].values()), sum(mo['results'].values()), ok[v['results_missing']],
                    sum(s['unexpected'].values())))
    r = s['rss']
    if 'growth_pct' in r:
        lines.append('  RSS %.0f -> %.0f MB after the warm-up: %+.2f %% (target < %.0f %%: %s)'
                     % (r['start_total_mb'], r['end_total_mb'], r['growth_pct'],
                        TARGETS['rss_growth_pct'], ok[v['rss_growth_pct']]))
    if 'drift' in t:
        lines.append('  tick p99 per window: first third %.0f us, last third %.0f us (x%.2f, stable: %s)'
                     % (t['first_third_p99_us'], t['last_third_p99_us'], t['drift'], ok[v['tick_p99_stable']]))
    a = out['mlock']
    for name in ('locked', 'unlocked'):
        x = a[name]
        if 'compute_p99_us' in x:
            lines.append('mlock A/B, core alone, wall clock (%s), %s: tick p50 %.0f / p99 %.0f / max %.0f us, '
                         'lateness p99 %.0f / max %.0f us, overruns %d, RSS %s MB'
                         % (x['priority'], name, x['compute_p50_us'], x['compute_p99_us'], x['compute_max_us'],
                            x['late_p99_us'], x['late_max_us'], x['overruns'], x['rss_mb']))
    return lines


if __name__ == '__main__':
    print(json.dumps(run(quick='--quick' in sys.argv), indent=2))
