"""Motion controller benchmark, in-process (and one measurement through ROS):

    scripts/env python -m intera_rt.bench.motion [--runs N] [--seed S]

run() → dict (printed as JSON):

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
import json
import math
import os
import threading
import time

import numpy as np

from intera_rt import robot
from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.collision import CollisionModel
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
           'duration_over_optimal': 1.05, 'limit_ratio': 1.0, 'deviation_mm': 1.0}


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
        self.collision = CollisionModel(self.model.urdf_xml)
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

    def pose(self):
        p = np.array([self.rng.uniform(0.45, 0.75), self.rng.uniform(-0.25, 0.35), self.rng.uniform(0.05, 0.4)])
        tilt = rotvec_to_quat(self.rng.uniform(-0.3, 0.3, 3))
        return p, quat_mul(tilt, np.array(DOWN))

    def goal(self, case):
        if case.startswith('joint_'):
            return joint_goal(self.walk(int(case.split('_')[1])))
        if case == 'cartesian_1':
            return cartesian_goal([self.pose()], bias=BIAS)
        return cartesian_goal([self.pose() for _ in range(5)], corner=0.05)

    def plan(self, traj, check_collision=True):
        return self.planner.plan(self.planner.parse(traj), NEUTRAL, check_collision=check_collision)

    # --- measurements ---------------------------------------------------------------------------
    def latency(self, case, runs):
        wall, cpu, plans, failures = [], [], [], 0
        while len(wall) < runs:
            traj = self.goal(case)
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                planned = self.plan(traj)
            except MotionError:
                failures += 1              # (unreachable random pose, collision): a new goal
                if failures > 20 * runs:
                    raise
                continue
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
            plans.append(planned.plan)
        return {'p50_ms': 1e3 * float(np.percentile(wall, 50)), 'p99_ms': 1e3 * float(np.percentile(wall, 99)),
                'max_ms': 1e3 * float(np.max(wall)),
                'cpu_p50_ms': 1e3 * float(np.percentile(cpu, 50)), 'cpu_p99_ms': 1e3 * float(np.percentile(cpu, 99)),
                'runs': len(wall), 'rejected_random_goals': failures,
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
            latencies, failures = [], 0
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
                else:
                    failures += 1                  # refused (unreachable random pose, collision)
                    if failures > 10 * runs:
                        raise RuntimeError('%s: %d goals refused in a row' % (case, failures))
                client.wait_for_result(rospy.Duration(10))
            ms = 1e3 * np.array(latencies)
            out[case] = {'p50_ms': float(np.percentile(ms, 50)), 'p99_ms': float(np.percentile(ms, 99)),
                         'max_ms': float(ms.max()), 'runs': len(ms), 'refused_random_goals': failures}
    return out


def run(runs=50, seed=0):
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
    through_ros = ros_latency(bench, max(10, runs // 2))
    return {
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
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=50)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.runs, args.seed), indent=2))


if __name__ == '__main__':
    main()
