"""Motion controller benchmark, in-process (and one measurement through ROS):

    scripts/env python -m intera_rt.bench.motion [--runs N] [--seed S]

run() → dict (printed as JSON):

cartesian_success  success rate of Cartesian goals sent as go_to_cartesian_pose.py sends
           them, from the SDK's default waypoint, neutral and random starts, to random poses
           the IK service reaches without collision; every failure counted with its error id
           and checked for whether any continuous joint path existed (see success_rates)

latency_through_ros  goal sent by an actionlib client → first JointCommand from the motion
           controller seen by that client, against a robot of its own (scripts/sawyer, wall
           clock), JOINT-10 and CARTESIAN-5, max(10, runs/2) goals each
latency    planning latency = goal → first setpoint in-process: parse + plan (validation,
           planning, timing, self-collision check, analysis) of a fresh random goal per run,
           p50 / p99 / max over `runs` runs, wall clock (ms) and this thread's CPU time (ms,
           insensitive to other processes on a shared machine), for
             joint_2 / joint_10 / joint_50   JOINT, random walk of 2 / 10 / 50 waypoints
                                             (±0.4 rad per joint and step), ratio 0.7, 'fast'
             cartesian_1                     one pose (go_to_cartesian_pose style, nullspace
                                             bias [0,-0.9,0,1.8,0,-0.9,0])
             cartesian_5                     five poses blended with 5 cm corners
           (poses: in front, tool down ±0.3 rad, reached by IK without collision); a goal the
           planner refuses is counted with its error id (refused_by_error_id, success_rate)
           and replaced
optimality duration / an independently computed time-optimal duration under the same limits:
             joint_single  vs the closed-form jerk-limited rest-to-rest bound (max over joints)
                           and vs the jerk-free trapezoid bound
             joint_multi   vs TOPP-RA (jerk-free) on the very same joint path
             cartesian_line  straight move vs the trapezoid bound of the endpoint's linear and
                           rotational limits
limits     worst |v| / velocity limit and |a| / acceleration limit per plan, sampled at 1 ms
deviation  largest distance (mm) of the endpoint from the designed Cartesian path
"""
import argparse
import collections
import json
import math
import os
import threading
import time

import numpy as np

from intera_rt import robot
from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.collision import CollisionModel, motion_controller_model
from intera_rt.model.ik import IKSolver
from intera_rt.motion import analysis
from intera_rt.motion.errors import MotionError
from intera_rt.motion.geometry import matrix_to_quat, quat_mul, rotvec_to_quat
from intera_rt.motion.joint_planner import JERK_TIME
from intera_rt.motion.planner import MotionPlanner

NEUTRAL = np.array(robot.NEUTRAL)
BIAS = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
FAST = [7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0]
DOWN = (0.0, 1.0, 0.0, 0.0)
RATIO = 0.7
TARGETS = {'latency_p99_ms': {'joint_10': 20.0, 'cartesian_5': 50.0},
           'duration_over_optimal': 1.05, 'limit_ratio': 1.0, 'deviation_mm': 1.0,
           'cartesian_success_rate': 0.99}
# go_to_cartesian_pose.py's waypoint options (max_joint_speed_ratio 1.0, its default
# Cartesian speeds, the SDK's default 'fast' joint accelerations).
SDK_RATIO = 1.0


def _messages():
    from intera_motion_msgs.msg import Trajectory, Waypoint
    return Trajectory, Waypoint


def joint_goal(targets):
    Trajectory, Waypoint = _messages()
    t = Trajectory(label='bench', joint_names=list(ARM_JOINTS))
    t.trajectory_options.interpolation_type = 'JOINT'
    for q in targets:
        w = Waypoint(joint_positions=list(q), active_endpoint='right_hand')
        w.options.max_joint_speed_ratio = RATIO
        w.options.max_joint_accel = list(FAST)
        t.waypoints.append(w)
    return t


def cartesian_goal(poses, corner=0.0, bias=None):
    Trajectory, Waypoint = _messages()
    t = Trajectory(label='bench', joint_names=list(ARM_JOINTS))
    t.trajectory_options.interpolation_type = 'CARTESIAN'
    for p, q in poses:
        w = Waypoint(active_endpoint='right_hand')
        w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z = p
        o = w.pose.pose.orientation
        o.x, o.y, o.z, o.w = q
        if bias is not None:
            w.joint_positions = list(bias)
        w.options.max_joint_speed_ratio = RATIO
        w.options.max_linear_speed = w.options.max_linear_accel = 0.6
        w.options.max_rotational_speed = w.options.max_rotational_accel = 1.57
        w.options.corner_distance = corner
        t.waypoints.append(w)
    return t


def scurve_time(d, v, a, j):
    """Closed-form minimum time of a jerk-limited rest-to-rest move over distance d."""
    d = abs(d)
    if d == 0:
        return 0.0

    def accel_phase(vp):
        t = vp / a + a / j if vp >= a * a / j else 2.0 * math.sqrt(vp / j)
        return t, 0.5 * vp * t
    t_acc, d_acc = accel_phase(v)
    if 2 * d_acc <= d:
        return 2 * t_acc + (d - 2 * d_acc) / v
    vp = 0.5 * a * (-a / j + math.sqrt((a / j) ** 2 + 4 * d / a))
    if vp < a * a / j:
        vp = (0.5 * d * math.sqrt(j)) ** (2.0 / 3.0)
    return 2 * accel_phase(vp)[0]


def trapezoid_time(d, v, a):
    d = abs(d)
    return d / v + v / a if d >= v * v / a else 2.0 * math.sqrt(d / a)


def toppra_time(plan, vmax, amax):
    """TOPP-RA's time-optimal (jerk-free) duration of the plan's own joint path, split where
    the plan comes to rest (a cusp of the path)."""
    import logging
    logging.getLogger('toppra').setLevel(logging.ERROR)
    import toppra
    stops = [0.0] + [t for t in plan.waypoint_times[:-1] if np.abs(plan.sample(t)[1]).max() < 1e-9] + \
        [plan.duration]
    total = 0.0
    for t0, t1 in zip(stops[:-1], stops[1:]):
        if t1 - t0 < 1e-6:
            continue
        ts = np.linspace(t0, t1, 3000)
        P, _, _ = plan.sample_many(ts)
        s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
        grid = np.linspace(0.0, s[-1], 600)             # uniform in arc length: no close knots
        Q = np.column_stack([np.interp(grid, s, P[:, j]) for j in range(P.shape[1])])
        path = toppra.SplineInterpolator(grid, Q)
        inst = toppra.algorithm.TOPPRA([toppra.constraint.JointVelocityConstraint(vmax),
                                        toppra.constraint.JointAccelerationConstraint(amax)],
                                       path, gridpoints=np.linspace(0, grid[-1], 1500), solver_wrapper='seidel')
        total += inst.compute_trajectory(0, 0).duration
    return total


class Bench:
    def __init__(self, seed):
        self.model = RobotModel.from_file()
        # What the motion controller checks (without the pedestal's boxes) and what the IK
        # service checks (every shape): a goal pose counts when the IK service reaches it
        # without collision.
        self.collision = motion_controller_model(self.model.urdf_xml)
        self.ik_collision = CollisionModel(self.model.urdf_xml)
        self.ik = IKSolver(self.model, self.ik_collision)
        self.planner = MotionPlanner(self.model, self.collision)
        lim = self.model.limit_arrays(list(ARM_JOINTS))
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel, self.acc = lim['velocity'], lim['accel']
        self.rng = np.random.default_rng(seed)
        self.endpoint = self.planner.endpoint('right_hand')
        p, r = self.endpoint.fk(NEUTRAL)
        self.home = (p, matrix_to_quat(r))

    # --- random goals -----------------------------------------------------------------------
    def walk(self, n):
        """n collision-free waypoints, each within ±0.4 rad per joint of the previous."""
        q, out = NEUTRAL.copy(), []
        while len(out) < n:
            step = self.rng.uniform(-0.4, 0.4, 7)
            nxt = np.clip(q + step, self.lower + 0.05, self.upper - 0.05)
            if not self.collision.in_collision(nxt):
                out.append(nxt)
                q = nxt
        return out

    def pose(self, rng=None):
        """A pose in front of the robot, the tool pointing down within ±0.3 rad (the
        planning-latency goals)."""
        rng = self.rng if rng is None else rng
        p = np.array([rng.uniform(0.45, 0.75), rng.uniform(-0.25, 0.35), rng.uniform(0.05, 0.4)])
        tilt = rotvec_to_quat(rng.uniform(-0.3, 0.3, 3))
        return p, quat_mul(tilt, np.array(DOWN))

    def reachable(self, rng, kind='front'):
        """A random pose that the IK service reaches without collision (SEED_AUTO from
        neutral), and that solution: 'down' — in front of the robot, the tool down within
        ±0.3 rad (pose()); 'front' — the same turned about the vertical by up to ±90° (what
        a new user tries with go_to_cartesian_pose.py); 'any' — anywhere in a 0.6 × 1.2 ×
        0.8 m box in front, any orientation."""
        while True:
            if kind in ('front', 'down'):
                p, q = self.pose(rng)
                if kind == 'front':
                    q = quat_mul(rotvec_to_quat([0.0, 0.0, rng.uniform(-0.5 * math.pi, 0.5 * math.pi)]), q)
            else:
                p = np.array([rng.uniform(0.3, 0.9), rng.uniform(-0.6, 0.6), rng.uniform(-0.1, 0.7)])
                q = rng.normal(size=4)
                q /= np.linalg.norm(q)
            found = self.ik.solve('right_hand', p, q, NEUTRAL)
            if found.ok:
                return (p, q), found.q

    def goal(self, case):
        if case.startswith('joint_'):
            return joint_goal(self.walk(int(case.split('_')[1])))
        if case == 'cartesian_1':
            return cartesian_goal([self.reachable(self.rng, 'down')[0]], bias=BIAS)
        return cartesian_goal([self.reachable(self.rng, 'down')[0] for _ in range(5)], corner=0.05)

    def plan(self, traj, check_collision=True):
        return self.planner.plan(self.planner.parse(traj), NEUTRAL, check_collision=check_collision)

    # --- measurements ---------------------------------------------------------------------------
    def latency(self, case, runs):
        """Planning latency over `runs` planned goals; a goal the planner refuses is counted
        (with its error id, in the success rate) and replaced by a new one."""
        wall, cpu, plans, failures = [], [], [], collections.Counter()
        while len(wall) < runs:
            traj = self.goal(case)
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                planned = self.plan(traj)
            except MotionError as exc:
                failures[exc.error_id] += 1
                if sum(failures.values()) > 20 * runs:
                    raise
                continue
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
            plans.append(planned.plan)
        return {'p50_ms': 1e3 * float(np.percentile(wall, 50)), 'p99_ms': 1e3 * float(np.percentile(wall, 99)),
                'max_ms': 1e3 * float(np.max(wall)),
                'cpu_p50_ms': 1e3 * float(np.percentile(cpu, 50)), 'cpu_p99_ms': 1e3 * float(np.percentile(cpu, 99)),
                'runs': len(wall), 'refused_goals': sum(failures.values()), 'refused_by_error_id': dict(failures),
                'success_rate': len(wall) / (len(wall) + sum(failures.values())),
                'mean_duration_s': float(np.mean([p.duration for p in plans]))}, plans

    def worst_limits(self, plans):
        worst_v = worst_a = 0.0
        for plan in plans:
            ts = np.arange(0.0, plan.duration + 1e-9, 0.001)
            _, V, A = plan.sample_many(ts)
            worst_v = max(worst_v, float((np.abs(V) / self.vel).max()))
            worst_a = max(worst_a, float((np.abs(A) / self.acc).max()))
        return worst_v, worst_a

    def optimality(self, runs):
        single, single_free, multi, line = [], [], [], []
        vmax, amax = RATIO * self.vel, np.array(FAST)
        for _ in range(runs):
            target = self.walk(1)[0]
            plan = self.plan(joint_goal([NEUTRAL, target]), False).plan
            d = target - NEUTRAL
            single.append(plan.duration / max(scurve_time(x, v, a, a / JERK_TIME) for x, v, a in zip(d, vmax, amax)))
            single_free.append(plan.duration / max(trapezoid_time(x, v, a) for x, v, a in zip(d, vmax, amax)))
        for _ in range(max(5, runs // 5)):
            plan = self.plan(joint_goal(self.walk(5)), False).plan
            multi.append(plan.duration / toppra_time(plan, vmax, amax))
        p0, q0 = self.home
        for _ in range(runs):
            offset = self.rng.uniform(-0.2, 0.2, 3)
            try:
                plan = self.plan(cartesian_goal([(p0 + offset, q0)]), False).plan
            except MotionError:
                continue
            line.append(plan.duration / trapezoid_time(np.linalg.norm(offset), 0.6, 0.6))
        summary = {}
        for name, values, what in (
                ('joint_single_vs_jerk_limited_bound', single, 'closed-form jerk-limited rest-to-rest, same v/a/jerk'),
                ('joint_single_vs_jerk_free_bound', single_free, 'trapezoid (infinite jerk), same v/a'),
                ('joint_multi_vs_toppra_same_path', multi, 'TOPP-RA on the same path, same v/a, no jerk limit'),
                ('cartesian_line_vs_trapezoid_bound', line, 'endpoint trapezoid, 0.6 m/s, 0.6 m/s²')):
            summary[name] = {'mean': float(np.mean(values)), 'worst': float(np.max(values)),
                             'best': float(np.min(values)), 'runs': len(values), 'reference': what}
        return summary

    def deviation(self, plans):
        return max(1e3 * analysis.cartesian_deviation(p, self.endpoint, analysis.sample_plan(p, dt=0.002, max_samples=3000))
                   for p in plans)


def sdk_cartesian_goal(poses, current, corner=0.0):
    """What go_to_cartesian_pose.py sends for each pose: max_joint_speed_ratio 1.0, 0.6 m/s,
    0.6 m/s², 1.57 rad/s and rad/s², the 'fast' joint accelerations, and the current joint
    angles as the nullspace bias (no -q given)."""
    traj = cartesian_goal(poses, corner=corner, bias=current)
    for w in traj.waypoints:
        w.options.max_joint_speed_ratio = SDK_RATIO
        w.options.max_joint_accel = list(FAST)
    return traj


def success_rates(bench, goals, oracle_s=20.0, oracle_total_s=300.0, seed=1):
    """Cartesian goals planned as the motion controller plans them, from several starting
    poses, to random poses the IK service reaches without collision (Bench.reachable):

      start  default_waypoint  [0, −0.9, 0, 1.8, 0, −0.9, 0]: where go_to_cartesian_pose.py
                               puts the arm when run without arguments (MotionWaypoint's
                               default joint angles, contract §7, §9.1) — a new user's start
             neutral           the robot's neutral pose
             random            the IK service's solution for a random reachable pose (where
                               an earlier goal may have left the arm), a new one per goal
      goal   single            one pose
             multi             three poses, corners blended over 5 cm
      poses  front             in front, the tool down ±0.3 rad, turned ±90° about the vertical
             any               any orientation anywhere in a box in front (single poses only)

    Every goal's outcome is counted: success, or its error id. A failure is then checked by
    the independent continuity check (bench.continuity, up to oracle_s s each, oracle_total_s
    in all): 'no_continuous_path' when no continuous joint path follows the designed path
    at all (nothing could succeed), 'planner_missed' when one exists, 'unverified' when the
    check ran out of time."""
    from intera_rt.bench.continuity import Continuity
    rng = np.random.default_rng(seed)
    check = Continuity(bench.endpoint, bench.collision)
    oracle_left = oracle_total_s
    rows = {}
    cases = [(start, kind, poses) for poses in ('front', 'any') for start in ('default_waypoint', 'neutral', 'random')
             for kind in ('single', 'multi') if poses == 'front' or kind == 'single']
    for start, kind, poses in cases:
        n = goals if poses == 'front' else max(10, goals // 2)
        outcome = collections.Counter()
        failures = []
        cpu = []
        for _ in range(n):
            if start == 'default_waypoint':
                q0 = np.array(BIAS)
            elif start == 'neutral':
                q0 = NEUTRAL.copy()
            else:
                q0 = bench.reachable(rng)[1]
            targets = [bench.reachable(rng, poses)[0] for _ in range(1 if kind == 'single' else 3)]
            traj = sdk_cartesian_goal(targets, q0, corner=0.05 if kind == 'multi' else 0.0)
            request = bench.planner.parse(traj)
            c0 = time.thread_time()
            try:
                bench.planner.plan(request, q0)
                outcome['success'] += 1
            except MotionError as exc:
                outcome[exc.error_id] += 1
                failures.append((exc.error_id, q0, request))
            cpu.append(time.thread_time() - c0)
        verdicts = collections.Counter()
        for error_id, q0, request in failures:
            if oracle_left <= 0:
                verdicts['unverified'] += 1
                continue
            t0 = time.monotonic()
            found, _ = check.check(q0, bench.planner.cartesian.path(q0, request),
                                   deadline=t0 + min(oracle_s, oracle_left))
            oracle_left -= time.monotonic() - t0
            verdicts['unverified' if found is None else 'planner_missed' if found else 'no_continuous_path'] += 1
        ok = outcome['success']
        rows['%s_%s_%s' % (poses, kind, start)] = {
            'goals': n, 'success': ok, 'success_rate': ok / n,
            'failures_by_error_id': {k: v for k, v in outcome.items() if k != 'success'},
            'failures_checked': dict(verdicts),
            'success_rate_where_a_path_exists': ok / max(1, n - verdicts['no_continuous_path']),
            'planning_cpu_p50_ms': 1e3 * float(np.percentile(cpu, 50)),
            'planning_cpu_p99_ms': 1e3 * float(np.percentile(cpu, 99))}
    front = [r for k, r in rows.items() if k.startswith('front_')]
    total = sum(r['goals'] for r in front)
    ok = sum(r['success'] for r in front)
    by_id = collections.Counter()
    for r in front:
        by_id.update(r['failures_by_error_id'])
    return {'rows': rows, 'front_goals': total, 'front_success_rate': ok / total,
            'front_failures_by_error_id': dict(by_id)}


def ros_latency(bench, runs, cases=('joint_10', 'cartesian_5')):
    """Goal sent → first setpoint seen, through ROS: a robot of its own (scripts/sawyer,
    wall clock), a MotionCommand client, and a subscription to joint_command that keeps
    the motion controller's messages. Each goal is stopped as soon as it has streamed its
    first setpoint (a "stop" goal), so the next one plans from wherever the arm stopped."""
    import tempfile

    import actionlib
    import rospy
    from intera_core_msgs.msg import JointCommand
    from intera_motion_msgs.msg import MotionCommandAction, MotionCommandGoal

    from intera_rt.bench import own_robot
    out = {}
    with own_robot([], os.path.join(tempfile.mkdtemp(prefix='bench_motion_'), 'sawyer.log'),
                   120.0) as robot:
        rospy.init_node('bench_motion', anonymous=True, disable_signals=True)
        first = {}
        seen = threading.Event()

        def on_command(msg):
            if msg._connection_header.get('callerid') == '/motion_controller' and 't' not in first:
                first['t'] = time.perf_counter()
                seen.set()
        rospy.Subscriber('/robot/limb/right/joint_command', JointCommand, on_command,
                         queue_size=10, tcp_nodelay=True)
        client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        stopper = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        if not (client.wait_for_server(rospy.Duration(60)) and stopper.wait_for_server(rospy.Duration(60))):
            raise RuntimeError('no /motion/motion_command server; see %s' % robot.log_path)
        for case in cases:
            latencies, failures = [], collections.Counter()
            while len(latencies) < runs:
                first.clear()
                seen.clear()
                goal = MotionCommandGoal(command='start', trajectory=bench.goal(case))
                t0 = time.perf_counter()
                # Waits without polling (a polling client would take CPU from the robot),
                # until the first setpoint or the goal's end (a refused goal).
                client.send_goal(goal, done_cb=lambda *_: seen.set())
                seen.wait(10.0)
                if 't' in first:
                    latencies.append(first['t'] - t0)
                    stopper.send_goal_and_wait(MotionCommandGoal(command='stop'), rospy.Duration(10))
                    client.wait_for_result(rospy.Duration(10))
                else:
                    client.wait_for_result(rospy.Duration(10))
                    result = client.get_result()
                    failures[result.errorId if result is not None else 'no result'] += 1
                    if sum(failures.values()) > 10 * runs:
                        raise RuntimeError('%s: %d goals refused: %s' % (case, sum(failures.values()),
                                                                         dict(failures)))
            ms = 1e3 * np.array(latencies)
            out[case] = {'p50_ms': float(np.percentile(ms, 50)), 'p99_ms': float(np.percentile(ms, 99)),
                         'max_ms': float(ms.max()), 'runs': len(ms), 'refused_goals': sum(failures.values()),
                         'refused_by_error_id': dict(failures)}
    return out


def run(runs=50, seed=0, quick=False, goals=100):
    if quick:
        runs, goals = 10, 10
    bench = Bench(seed)
    bench.plan(joint_goal([NEUTRAL, BIAS]))                        # warm-up (imports, caches)
    bench.plan(cartesian_goal([bench.home], bias=BIAS))
    latency, all_plans, cart_plans = {}, [], []
    for case in ('joint_2', 'joint_10', 'joint_50', 'cartesian_1', 'cartesian_5'):
        latency[case], plans = bench.latency(case, runs if case != 'joint_50' else max(runs, 50))
        all_plans.extend(plans[:10])
        if case.startswith('cartesian'):
            cart_plans.extend(plans[:10])
    worst_v, worst_a = bench.worst_limits(all_plans)
    optimality = bench.optimality(max(10, runs // 2))
    deviation = bench.deviation(cart_plans)
    worst_opt = max(optimality['joint_single_vs_jerk_limited_bound']['worst'],
                    optimality['joint_multi_vs_toppra_same_path']['worst'],
                    optimality['cartesian_line_vs_trapezoid_bound']['worst'])
    success = success_rates(bench, goals, oracle_total_s=60.0 if quick else 300.0)
    through_ros = ros_latency(bench, max(10, runs // 2))
    out = {
        'cartesian_success': success,
        'latency': latency,
        'latency_through_ros': through_ros,
        'optimality': optimality,
        'limits': {'worst_velocity_ratio': worst_v, 'worst_accel_ratio': worst_a, 'plans_checked': len(all_plans)},
        'cartesian_deviation_mm': deviation,
        'targets': TARGETS,
        'pass': {
            'latency_joint_10': latency['joint_10']['p99_ms'] <= TARGETS['latency_p99_ms']['joint_10'],
            'latency_cartesian_5': latency['cartesian_5']['p99_ms'] <= TARGETS['latency_p99_ms']['cartesian_5'],
            'latency_through_ros_joint_10':
                through_ros['joint_10']['p99_ms'] <= TARGETS['latency_p99_ms']['joint_10'],
            'latency_through_ros_cartesian_5':
                through_ros['cartesian_5']['p99_ms'] <= TARGETS['latency_p99_ms']['cartesian_5'],
            'duration_within_5pct': worst_opt <= TARGETS['duration_over_optimal'],
            'no_limit_violated': max(worst_v, worst_a) <= TARGETS['limit_ratio'] + 1e-9,
            'deviation_1mm': deviation <= TARGETS['deviation_mm'],
            'cartesian_success_99pct': success['front_success_rate'] >= TARGETS['cartesian_success_rate'],
        },
    }
    out['summary'] = _summary(out)
    return out


def _summary(out):
    lines = []
    s = out['cartesian_success']
    lines.append('Cartesian goals (front poses), %d goals: %.1f %% succeed; failures %s'
                 % (s['front_goals'], 100 * s['front_success_rate'], s['front_failures_by_error_id'] or 'none'))
    for name, r in s['rows'].items():
        lines.append('  %-32s %3d/%3d  %s%s' % (name, r['success'], r['goals'],
                                                  r['failures_by_error_id'] or '',
                                                  ('  checked: %s' % r['failures_checked']) if r['failures_checked'] else ''))
    lat, ros = out['latency'], out['latency_through_ros']
    lines.append('planning p99 in process: JOINT-10 %.1f ms, CART-1 %.1f ms, CART-5 %.1f ms; '
                 'through ROS: JOINT-10 %.1f ms, CART-5 %.1f ms'
                 % (lat['joint_10']['p99_ms'], lat['cartesian_1']['p99_ms'], lat['cartesian_5']['p99_ms'],
                    ros['joint_10']['p99_ms'], ros['cartesian_5']['p99_ms']))
    lines.append('latency goals refused: %s' % {k: v['refused_by_error_id'] for k, v in lat.items()
                                                if v['refused_by_error_id']})
    lines.append('pass: %s' % ', '.join('%s %s' % (k, 'yes' if v else 'NO') for k, v in out['pass'].items()))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=50)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--goals', type=int, default=100, help='Cartesian goals per success-rate row')
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args(argv)
    print(json.dumps(run(args.runs, args.seed, args.quick, args.goals), indent=2))


if __name__ == '__main__':
    main()
