"""Faults while the robot works, and what it does about them:

  a streaming client vanishes (SIGKILL mid-stream)  → the arm holds within the command
                                                      timeout (0.2 s) + braking
  a 10 kHz joint-command flood for 10 s             → the state topics keep ≥ 95 % of their
                                                      rate, services answer, the log is not
                                                      flooded, the arm obeys afterwards
  the E-stop pressed mid-motion                     → the arm stops, /robot/state and the
                                                      motion's result say so; release,
                                                      reset, enable: a new motion succeeds
  a collision mid-motion (a sim box in the way)     → the arm stops, the goal aborts naming
                                                      the collision; a new goal succeeds

Node deaths are in test_node_restarts.py, a restarted master in test_master_restart.py, a
client that stops reading in test_robot_state.py.

The robot runs on the wall clock, as a real one does (the loop under SCHED_FIFO): rates are
counted from the stamps of what the robot published, so a test process that a busy machine
delays does not count its own lateness. (Under sim time a machine loaded by other work slows
the simulation itself, flood or not.)"""
import math
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from clients import Arm, Series, goal, moveit_goal, now, smooth_motion, stamp, waypoint, wall_in_j0_path
from contract import ARM, NEUTRAL, NS
from rosharness import wait_for
from robot_watch import ArmWatch, Flooder, NodeWatch, Rosout

SAWYER_ARGS = []
REPO = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT = 0.2
FLOOD_RATE, FLOOD_S = 10000.0, 10.0

STREAMER = textwrap.dedent('''
    import rospy
    from intera_core_msgs.msg import JointCommand
    rospy.init_node('streaming_client', anonymous=True)
    pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1, tcp_nodelay=True)
    rate = rospy.Rate(100)
    while not rospy.is_shutdown():
        pub.publish(JointCommand(mode=2, names=['right_j0'], velocity=[0.3]))
        rate.sleep()
''')


@pytest.fixture(scope='module')
def ros(robot):
    from intera_rt_msgs.msg import RealtimeState
    from sensor_msgs.msg import JointState
    w = {'js': Series('/robot/joint_states', JointState),
         'rts': Series('/intera_rt/realtime_state', RealtimeState),
         'rosout': Rosout(), 'nodes': NodeWatch()}
    w['js'].last()
    yield w
    w['js'].unregister()
    w['rts'].unregister()
    w['rosout'].close()


@pytest.fixture
def at_neutral(ros):
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    assert rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)(
        list(ARM), list(NEUTRAL)).success
    ros['js'].wait(lambda m: np.abs(q_of(m) - NEUTRAL).max() < 1e-3, 10.0, 'the arm at neutral')
    yield ros
    ros['nodes'].check('after the test')


def q_of(msg):
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def qd_of(msg):
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


def robot_state():
    from intera_core_msgs.msg import RobotAssemblyState
    from rosharness import wait_for_message
    return wait_for_message('/robot/state', RobotAssemblyState)


def set_enabled(on):
    import rospy
    from std_msgs.msg import Bool
    pub = rospy.Publisher('/robot/set_super_enable', Bool, queue_size=1)
    wait_for(lambda: pub.publish(Bool(on)) or robot_state().enabled == on, 10.0,
             'the robot %s' % ('enabled' if on else 'disabled'), interval=0.05)
    pub.unregister()


# --- a streaming client vanishes -----------------------------------------------------------
def test_a_streaming_client_that_vanishes_leaves_the_arm_holding(at_neutral, robot):
    ros = at_neutral
    env = dict(os.environ)
    proc = subprocess.Popen([str(REPO / 'scripts' / 'env'), 'python', '-c', STREAMER], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        ros['js'].wait(lambda m: abs(qd_of(m)[0] - 0.3) < 0.02, 60.0, 'right_j0 at 0.3 rad/s')
        ros['js'].wait_until(now() + 0.3)                 # a steady stream for a while
        os.killpg(proc.pid, signal.SIGKILL)
        t_kill = now()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    # the robot's command timeout moves it to hold, then the arm brakes to rest and stays
    held = ros['rts'].wait(lambda m: m.controller == 'hold' and stamp(m) > t_kill, 10.0, 'hold')
    assert stamp(held) - t_kill <= COMMAND_TIMEOUT + 0.03, 'hold %.3f s after the client died' % (
        stamp(held) - t_kill)
    settle = stamp(held) + 0.3 / 10.0 + 0.05       # braking 0.3 rad/s at 10 rad/s²
    ros['js'].wait_until(settle + 0.5)
    after = ros['js'].between(settle, settle + 0.5)
    assert max(np.abs(qd_of(m)).max() for m in after) < 0.01
    assert np.abs(q_of(after[-1]) - q_of(after[0])).max() < 1e-3


# --- a command flood -----------------------------------------------------------------------
def test_a_10_khz_command_flood_does_not_starve_the_robot(at_neutral, robot):
    import rospy
    from intera_core_msgs.msg import JointCommand, RobotAssemblyState
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
    from intera_rt_msgs.srv import RemoveObstacle
    from sensor_msgs.msg import JointState
    ros = at_neutral
    hold = JointCommand(mode=1, names=list(ARM), position=list(NEUTRAL))
    bad = JointCommand(mode=1, names=list(ARM), position=[math.nan] * 7)
    stamps = {'js': [], 'state': []}           # (stamp or arrival, wall s)

    subs = [rospy.Subscriber('/robot/joint_states', JointState,
                             lambda m: stamps['js'].append(m.header.stamp.to_sec()), queue_size=1000),
            rospy.Subscriber('/robot/state', RobotAssemblyState,     # no header: arrival time
                             lambda m: stamps['state'].append(time.time()), queue_size=1000)]
    fk = rospy.ServiceProxy('/ExternalTools/right/PositionKinematicsNode/FKService', SolvePositionFK)
    sim = rospy.ServiceProxy('/intera_rt/sim/remove_obstacle', RemoveObstacle)
    fk_req = SolvePositionFKRequest(configuration=[JointState(name=ARM, position=list(NEUTRAL))],
                                    tip_names=['right_hand'])
    arm = ArmWatch()
    mark = ros['rosout'].mark()
    flood = Flooder(NS + 'joint_command', JointCommand, [hold] * 9 + [bad], FLOOD_RATE, FLOOD_S)
    try:
        assert flood.started.wait(20.0), 'the robot never connected to the flood'
        arm.reset()
        w0 = time.time()
        latencies = []
        while not flood.done.is_set():
            s = time.monotonic()
            assert list(fk(fk_req).isValid) == [True]
            assert sim('nothing_here').success is False
            latencies.append(time.monotonic() - s)
            time.sleep(0.5)         # the probes' cadence while the flood lasts (not a wait)
        w1 = time.time()
        sent = flood.sent
        # What was published by w1 has arrived once a later message of each topic has.
        wait_for(lambda: all(v and v[-1] >= w1 for v in stamps.values()), 5.0,
                 'joint_states and robot/state published after the flood')
    finally:
        flood.close()
        for sub in subs:
            sub.unregister()
    rates = {k: sum(w0 + 0.5 <= t <= w1 - 0.5 for t in v) / (w1 - w0 - 1.0) for k, v in stamps.items()}
    assert sent >= 0.9 * FLOOD_RATE * FLOOD_S, 'the flood sent only %d messages' % sent
    assert rates['js'] >= 95.0 and rates['state'] >= 95.0, \
        'state topics during the flood: %s Hz (100 Hz expected)' % rates
    assert max(latencies) < 1.0, 'services answered in up to %.2f s during the flood' % max(latencies)
    moved, joint = arm.excursion()
    assert moved < 1e-3, 'the arm moved under hold commands: %s by %.4f' % (joint, moved)
    # the log is not flooded: the rejections are throttled (one line per kind every 2 s)
    nan_lines = [l for l in ros['rosout'].since(mark, '/realtime_loop') if 'is nan' in l[2]]
    assert 1 <= len(nan_lines) <= FLOOD_S / 2.0 + 2, len(nan_lines)
    # and the robot obeys a client afterwards
    client = Arm()
    target = dict(zip(ARM, NEUTRAL))
    target['right_j0'] = 0.2
    wait_for(lambda: client.set_positions(target) or abs(client.q()[0] - 0.2) < 0.005, 20.0,
             'right_j0 at 0.2 after the flood')
    arm.close()


# --- E-stop and collision mid-motion ---------------------------------------------------------
def _mc_client():
    import actionlib
    import rospy
    from intera_motion_msgs.msg import MotionCommandAction
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    return client


def test_the_estop_mid_motion_stops_reports_and_recovers_by_reset(at_neutral):
    import rospy
    from std_msgs.msg import Empty
    from std_srvs.srv import SetBool
    ros = at_neutral
    estop = rospy.ServiceProxy('/intera_rt/sim/estop_button', SetBool)
    client = _mc_client()
    target = NEUTRAL + np.r_[1.2, 0, 0, 0, 0, 0, 0]
    client.send_goal(goal([waypoint(NEUTRAL, ratio=0.3), waypoint(target, ratio=0.3)]))
    ros['js'].wait(lambda m: np.abs(qd_of(m)).max() > 0.2, 20.0, 'the arm moving')
    assert estop(True).success
    t_stop = now()
    s = robot_state()
    assert s.stopped and not s.enabled and s.estop_button == 1, s
    # the motion ends, saying why
    assert client.wait_for_result(rospy.Duration(20.0)), 'no result for the motion'
    result = client.get_result()
    assert result.result is False and result.errorId == 'CONTROLLER_NOT_FOLLOWING', result
    # brakes: still right away
    ros['js'].wait_until(t_stop + 0.6)
    after = ros['js'].between(t_stop + 0.1, t_stop + 0.6)
    assert max(np.abs(qd_of(m)).max() for m in after) < 0.01
    # recovery: release, reset, enable; a new motion succeeds
    assert estop(False).success
    reset = rospy.Publisher('/robot/set_super_reset', Empty, queue_size=1)
    wait_for(lambda: reset.publish(Empty()) or not robot_state().stopped, 10.0, 'the robot reset',
             interval=0.05)
    set_enabled(True)
    q = q_of(ros['js'].last())
    client.send_goal(goal([waypoint(q, ratio=0.5), waypoint(NEUTRAL, ratio=0.5)]))
    assert client.wait_for_result(rospy.Duration(30.0))
    assert client.get_result().result is True, client.get_result().errorId


def test_a_collision_mid_motion_stops_reports_and_recovers(at_neutral):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    from intera_core_msgs.msg import CollisionDetectionState
    from intera_rt_msgs.srv import AddObstacle, RemoveObstacle
    from intera_rt.model import RobotModel
    ros = at_neutral
    sim = {'add_obstacle': rospy.ServiceProxy('/intera_rt/sim/add_obstacle', AddObstacle),
           'model': RobotModel.from_file()}
    remove = rospy.ServiceProxy('/intera_rt/sim/remove_obstacle', RemoveObstacle)
    client = actionlib.SimpleActionClient(NS + 'follow_joint_trajectory', FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    detection = Series(NS + 'collision_detection_state', CollisionDetectionState)
    try:
        wall_in_j0_path(sim)
        t0 = now()
        target = NEUTRAL + np.r_[0.7, 0, 0, 0, 0, 0, 0]
        client.send_goal(moveit_goal(smooth_motion(NEUTRAL, target - NEUTRAL, 1.5), 1.5))
        assert client.wait_for_result(rospy.Duration(30.0))
        result = client.get_result()
        assert result.error_code == -4 and 'collision' in result.error_string, result
        hit = detection.wait(lambda m: m.collision_state and m.header.stamp.to_sec() > t0, 10.0,
                             'collision_detection_state true')
        t_hit = hit.header.stamp.to_sec()
        ros['js'].wait_until(t_hit + 0.6)
        q_hit = [q_of(m) for m in ros['js'].between(t_hit + 0.1, t_hit + 0.6)]
        assert np.abs(np.array(q_hit) - q_hit[0]).max() < 0.01, 'the arm did not hold after the hit'
        assert np.abs(q_hit[0] - target).max() > 0.1, 'the arm went through the box'
    finally:
        detection.unregister()
        remove('wall')
    # recovery: the robot takes commands again once its collision hold is over
    ros['rts'].wait(lambda m: not m.collision, 10.0, 'the collision hold over')
    q = q_of(ros['js'].last())
    client.send_goal(moveit_goal(smooth_motion(q, NEUTRAL - q, 1.5), 1.5))
    assert client.wait_for_result(rospy.Duration(30.0))
    assert client.get_result().error_code == 0, client.get_result().error_string
