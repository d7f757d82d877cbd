"""Motion controller benchmark (section motion), in process and one measurement through ROS:

    scripts/env python -m intera_rt.bench.motion [--runs N] [--seed S]

cartesian_success    Cartesian goals as go_to_cartesian_pose.py sends them, to random
                     reachable poses; every failure counted (motion_success)
latency_through_ros  goal sent by an actionlib client -> first JointCommand seen, against
                     a robot of its own (wall clock), JOINT-10 and CARTESIAN-5
latency              planning latency in process: parse + plan (validation, planning,
                     timing, self-collision check, analysis) of a fresh random goal per
                     run, p50 / p99 / max wall and thread CPU time, for joint_2 / joint_10 /
                     joint_50 (random walks of that many waypoints), cartesian_1 (one pose)
                     and cartesian_5 (five poses, 5 cm corners); a refused goal is counted
                     with its error id and replaced
optimality           duration / an independently computed time-optimal duration under the
                     same limits (motion_optimal)
limits               worst |v| / velocity limit and |a| / acceleration limit per plan
deviation            largest distance (mm) of the endpoint from the designed Cartesian path
"""
import argparse
import collections
import json
import math
import os
import threading
import time

import numpy as np

from intera_rt.bench.motion_goals import BIAS, DOWN, FAST, NEUTRAL, RATIO, cartesian_goal, joint_goal
from intera_rt.bench.motion_optimal import scurve_time, toppra_time, trapezoid_time
from intera_rt.bench.motion_success import success_rates
from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.collision import CollisionModel, motion_controller_model
from intera_rt.model.ik import IKSolver
from intera_rt.motion import analysis
from intera_rt.motion.errors import MotionError
from intera_rt.motion.geometry import matrix_to_quat, quat_mul, rotvec_to_quat
from intera_rt.motion.joint_planner import JERK_TIME
from intera_rt.motion.planner import MotionPlanner

TARGETS = {'latency_p99_ms': {'joint_10': 20.0, 'cartesian_5': 50.0},
           'duration_over_optimal': 1.05, 'limit_ratio': 1.0, 'deviation_mm': 1.0,
           'cartesian_success_rate': 0.99}


class MotionBench:
    """The planner as the motion controller builds it, with the models and goals the
    measurements share."""

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
    bench = MotionBench(seed)
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
