"""Benchmark: how closely the arm follows a MoveIt-like trajectory sent to the joint
trajectory action server (position_w_id mode, the default).

    scripts/env python -m intera_rt.bench.jtas [--master URI] [--speed X] [--duration S]

Without --master it boots its own robot (scripts/sawyer --sim-time --speed X, default 0.5,
on a private ROS master) and stops it afterwards; with --master it uses that robot (whose
arm must be enabled and idle) and brings the arm back to where it started.

The goal: 7 joints, 15 time-parameterised points (positions, velocities, accelerations at
irregular times, as a planner produces them) sampled from a smooth analytic motion
(min-jerk timing along a path that bulges halfway), header.stamp 0, no tolerances. The
tracking error is /robot/joint_states minus that motion at each message's stamp, over the
trajectory's duration; the start time is read from the server's feedback (header.stamp
minus desired.time_from_start). Prints one JSON object; ``run()`` returns it as a dict.
Target: RMS ≤ 0.005 rad.

Then compliance (docs/motion.md, compliant goals): an InteractionControlCommand soft along
base x (300 N/m) latched on the server's ~interaction_control_command, a 9 s goal, and a
15 N push along x at the hand for 2.5 s from 2 s into it. The hand's offset from where the
desired joint angles (~state) put it, over the push's last 0.25 s minus over the 0.5 s
before it, against F/K. Target: within ±20 % of F/K, and the goal succeeds.
"""
import argparse
import json
import os
import sys
import tempfile
import threading

import numpy as np

from intera_rt.bench import own_robot, wait_for
from intera_rt.robot import ARM_JOINTS

ARM = list(ARM_JOINTS)
ACTION = '/robot/limb/right/follow_joint_trajectory'
TARGET_RMS = 0.005
JTAS_NS = '/motion_controller/joint_trajectory_action_server/'   # the server's ~ on the robot
COMPLIANT_K = 300.0             # N/m along base x
PUSH_N = 15.0
PUSH_S = 2.5
COMPLIANCE_TOLERANCE = 0.20     # of F/K


def smooth_motion(start, delta, bump, duration):
    """f(t) → p, v, a: min-jerk timing from start to start+delta along a path that bulges
    by `bump` halfway."""
    start, delta, bump = (np.asarray(x, float) for x in (start, delta, bump))

    def f(t):
        s = min(max(t / duration, 0.0), 1.0)
        sig = 10 * s**3 - 15 * s**4 + 6 * s**5
        dsig = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
        ddsig = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
        b = 16 * sig**2 * (1 - sig)**2
        db = 16 * (2 * sig - 6 * sig**2 + 4 * sig**3)
        ddb = 16 * (2 - 12 * sig + 12 * sig**2)
        return (start + delta * sig + bump * b, (delta + bump * db) * dsig,
                (delta + bump * db) * ddsig + bump * ddb * dsig**2)
    return f


def _measure(duration):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryGoal
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectoryPoint

    client = actionlib.SimpleActionClient(ACTION, FollowJointTrajectoryAction)
    wait_for(lambda: client.wait_for_server(rospy.Duration(0.5)), 90.0, 'the action server')
    samples, lock = [], threading.Lock()

    def on_js(msg):
        q = [msg.position[msg.name.index(n)] for n in ARM]
        with lock:
            samples.append((msg.header.stamp.to_sec(), np.array(q)))
    sub = rospy.Subscriber('/robot/joint_states', JointState, on_js, queue_size=100, tcp_nodelay=True)
    wait_for(lambda: samples, 20.0, '/robot/joint_states')
    start = samples[-1][1].copy()
    # Move each joint toward the middle of its range so any start pose stays within limits.
    toward = -np.sign(start - np.array([0.0, -0.77, 0.0, 0.0, 0.0, 0.0, 0.0]))
    toward[toward == 0] = 1.0
    delta = toward * np.array([0.6, 0.4, 0.5, 0.6, 0.8, 0.5, 1.0])
    bump = toward * np.array([0.2, 0.1, 0.3, 0.2, 0.3, 0.2, 0.4])
    f = smooth_motion(start, delta, bump, duration)
    rng = np.random.default_rng(0)
    times = np.sort(np.r_[0.0, rng.uniform(0.05, 0.95, 13) * duration, duration])
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    for t in times:
        p, v, a = f(t)
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=p.tolist(), velocities=v.tolist(), accelerations=a.tolist(),
            time_from_start=rospy.Duration(t)))
    feedback = []
    client.send_goal(goal, feedback_cb=feedback.append)
    terminal = {2: 'PREEMPTED', 3: 'SUCCEEDED', 4: 'ABORTED', 5: 'REJECTED', 8: 'RECALLED'}
    wait_for(lambda: client.get_state() in terminal and client.get_result() is not None,
          60.0 + 20.0 * duration, 'the result')
    state, result = terminal[client.get_state()], client.get_result()
    sub.unregister()
    out = {'mode': 'position_w_id', 'points': len(times), 'duration_s': duration,
           'result': state, 'error_code': result.error_code if result else None,
           'error_string': result.error_string if result else None}
    if feedback:
        fb = feedback[min(5, len(feedback) - 1)]
        t0 = fb.header.stamp.to_sec() - fb.desired.time_from_start.to_sec()
        with lock:
            window = [(t, q) for t, q in samples if t0 <= t <= t0 + duration]
        err = np.array([q - f(t - t0)[0] for t, q in window])
        fb_err = np.array([x.error.positions for x in feedback])
        out.update({
            'samples': len(window),
            'rms_rad': float(np.sqrt(np.mean(err ** 2))),
            'max_rad': float(np.abs(err).max()),
            'per_joint_rms_rad': np.sqrt(np.mean(err ** 2, axis=0)).round(5).tolist(),
            'per_joint_max_rad': np.abs(err).max(axis=0).round(5).tolist(),
            'feedback_rms_rad': float(np.sqrt(np.mean(fb_err ** 2))),
            'feedback_messages': len(feedback),
        })
    out['target_rms_rad'] = TARGET_RMS
    out['pass'] = bool(state == 'SUCCEEDED' and out.get('rms_rad', 1.0) <= TARGET_RMS)
    return out, client, start


def _compliance(client, duration=9.0):
    """A compliant goal pushed at the hand: the hand's offset from its path against F/K."""
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal, JointTrajectoryControllerState
    from geometry_msgs.msg import Vector3, Wrench
    from intera_core_msgs.msg import EndpointState, InteractionControlCommand
    from intera_rt_msgs.srv import ApplyWrench
    from rosgraph_msgs.msg import Log
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectoryPoint

    from intera_rt.model import RobotModel
    tip = RobotModel.from_file().arm_dynamics.tip
    states, hands, lock = {}, [], threading.Lock()
    latest, heard = [0.0], []

    def on_state(msg):
        t = round(msg.header.stamp.to_sec(), 4)
        with lock:
            states[t] = np.array(msg.desired.positions)
            latest[0] = max(latest[0], t)

    def on_log(msg):
        if 'goals that follow run under interaction control' in msg.msg:
            heard.append(msg)

    def on_hand(msg):
        p = msg.pose.position
        with lock:
            hands.append((round(msg.header.stamp.to_sec(), 4), np.array([p.x, p.y, p.z])))
    subs = [rospy.Subscriber(JTAS_NS + 'state', JointTrajectoryControllerState, on_state, queue_size=200),
            rospy.Subscriber('/robot/limb/right/endpoint_state', EndpointState, on_hand, queue_size=200),
            rospy.Subscriber('/rosout', Log, on_log, queue_size=100)]
    pub = rospy.Publisher(JTAS_NS + 'interaction_control_command', InteractionControlCommand,
                          queue_size=1, latch=True)
    cmd = InteractionControlCommand(interaction_control_active=True, endpoint_name='right_hand',
                                    K_impedance=[COMPLIANT_K, 1300.0, 1300.0, 30.0, 30.0, 30.0],
                                    max_impedance=[False] * 6, interaction_control_mode=[1] * 6)
    cmd.interaction_frame.orientation.w = 1.0
    pub.publish(cmd)
    push = rospy.ServiceProxy('/intera_rt/sim/apply_wrench', ApplyWrench)
    push.wait_for_service(10.0)
    wait_for(lambda: hands, 10.0, 'endpoint_state')
    js = rospy.wait_for_message('/robot/joint_states', JointState, 10.0)
    q0 = np.array([js.position[js.name.index(n)] for n in ARM])
    toward = -np.sign(q0 - np.array([0.0, -0.77, 0.0, 1.5, 0.0, 0.5, 0.0]))
    toward[toward == 0] = 1.0
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    goal.trajectory.points.append(JointTrajectoryPoint(
        positions=(q0 + toward * np.array([0.3, 0.0, 0.0, 0.15, 0.0, 0.1, 0.0])).tolist(),
        time_from_start=rospy.Duration(duration)))
    wait_for(lambda: heard, 20.0, 'the server to take the interaction command')
    client.send_goal(goal)
    wait_for(lambda: len(states) > 10, 20.0, '~state')
    t_push = latest[0] + 2.0
    wait_for(lambda: latest[0] >= t_push, 30.0, '2 s into the goal')
    t_push = latest[0]
    resp = push('right_hand', Wrench(force=Vector3(PUSH_N, 0, 0), torque=Vector3(0, 0, 0)), PUSH_S)
    t_end = t_push + PUSH_S
    wait_for(lambda: latest[0] >= t_end, 30.0, 'the end of the push')
    wait_for(lambda: client.get_state() in (2, 3, 4, 5, 8), 60.0 + 20.0 * duration, 'the result')
    pub.publish(InteractionControlCommand(interaction_control_active=False))
    for sub in subs:
        sub.unregister()

    def offset(t0, t1):
        with lock:
            off = [p - tip('right_hand', states[t])[0] for t, p in hands if t0 <= t <= t1 and t in states]
        return np.mean(off, axis=0) if off else None, len(off)
    before, n0 = offset(t_push - 0.5, t_push)
    pushed, n1 = offset(t_end - 0.3, t_end - 0.05)
    expected = PUSH_N / COMPLIANT_K
    terminal = {2: 'PREEMPTED', 3: 'SUCCEEDED', 4: 'ABORTED', 5: 'REJECTED', 8: 'RECALLED'}
    out = {'stiffness_n_per_m': COMPLIANT_K, 'push_n': PUSH_N, 'push_s': PUSH_S,
           'expected_m': expected, 'result': terminal[client.get_state()],
           'push_accepted': bool(resp.success), 'samples': [n0, n1]}
    if before is not None and pushed is not None:
        moved = pushed - before
        out.update({'moved_m': float(moved[0]), 'moved_xyz_m': moved.round(5).tolist(),
                    'ratio': float(moved[0] / expected)})
    out['target'] = 'F/K ±%d %%' % round(100 * COMPLIANCE_TOLERANCE)
    out['pass'] = bool(out['result'] == 'SUCCEEDED' and 'ratio' in out
                       and abs(out['ratio'] - 1.0) <= COMPLIANCE_TOLERANCE)
    return out


def _go_back(client, start, duration=4.0):
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    goal.trajectory.points.append(JointTrajectoryPoint(positions=list(start),
                                                       time_from_start=rospy.Duration(duration)))
    client.send_goal(goal)
    wait_for(lambda: client.get_state() in (2, 3, 4, 5, 8), 60.0 + 20.0 * duration, 'the return move')


def run(master_uri=None, speed=0.5, duration=4.0):
    """Measure tracking; boots a robot (sim time at `speed`) unless master_uri is given."""
    import rospy
    if master_uri:
        os.environ['ROS_MASTER_URI'] = master_uri
        rospy.init_node('bench_jtas', anonymous=True, disable_signals=True)
        out, client, start = _measure(duration)
        out['compliance'] = _compliance(client)
        _go_back(client, start)
        out['robot'] = master_uri
    else:
        with own_robot(['--sim-time', '--speed', str(speed)],
                       os.path.join(tempfile.mkdtemp(prefix='bench_jtas_'), 'sawyer.log'), 90.0):
            rospy.init_node('bench_jtas', anonymous=True, disable_signals=True)
            out, client, _ = _measure(duration)
            out['compliance'] = _compliance(client)
        out['robot'] = 'own (scripts/sawyer --sim-time --speed %s)' % speed
    out['use_sim_time'] = bool(rospy.get_param('/use_sim_time', False)) if master_uri else True
    out['pass'] = bool(out['pass'] and out['compliance']['pass'])
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m intera_rt.bench.jtas',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--master', help='use the robot at this ROS master instead of booting one')
    parser.add_argument('--speed', type=float, default=0.5,
                        help='sim-time speed of the robot this bench boots (default 0.5)')
    parser.add_argument('--duration', type=float, default=4.0, help='trajectory duration, s')
    args = parser.parse_args(argv)
    out = run(args.master, args.speed, args.duration)
    print(json.dumps(out, indent=2))
    return 0 if out['pass'] else 1


if __name__ == '__main__':
    sys.exit(main())
