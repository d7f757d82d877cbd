"""The robot's joint trajectory action server (/robot/limb/right/follow_joint_trajectory),
driven the way MoveIt and the SDK's joint_trajectory_client drive it: an actionlib
SimpleActionClient sending control_msgs/FollowJointTrajectory goals, watching results,
feedback and /robot/joint_states.

The robot runs on sim time at half speed: the tracking checks compare joint states with
the trajectory at the stamps the robot gives them, so they hold even when the machine is
busy (the simulation then slows down instead of the arm falling behind)."""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from clients import Sent, grasp_cuff, moveit_goal, smooth_motion
from contract import ARM, TERMINAL
from rosharness import latest, wait_for
from robot_watch import JTAS_NODE
from intera_rt import robot  # noqa: E402

pytestmark = [pytest.mark.sawyer_args(['--sim-time', '--speed', '0.5']),
              pytest.mark.usefixtures('no_false_detection')]  # normal use: no collision detected

REPO = Path(__file__).resolve().parents[1]
NEUTRAL = np.array(robot.NEUTRAL)
ACTION = '/robot/limb/right/follow_joint_trajectory'
SUCCEEDED, PREEMPTED, ABORTED, REJECTED = 3, 2, 4, 5


# --- helpers ----------------------------------------------------------------------------------
def arm_q(msg):
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def arm_qd(msg):
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


class Recorder:
    """Every /robot/joint_states message: (stamp s, q, qd)."""

    def __init__(self):
        import rospy
        from sensor_msgs.msg import JointState
        self.samples = []
        self._lock = threading.Lock()
        self._sub = rospy.Subscriber('/robot/joint_states', JointState, self._cb, queue_size=100,
                                     tcp_nodelay=True)

    def _cb(self, msg):
        with self._lock:
            self.samples.append((msg.header.stamp.to_sec(), arm_q(msg), arm_qd(msg)))

    def between(self, t0, t1):
        with self._lock:
            return [s for s in self.samples if t0 <= s[0] <= t1]

    def last(self):
        with self._lock:
            return self.samples[-1] if self.samples else None

    def close(self):
        self._sub.unregister()


def position_goal(points, names=ARM):
    """A goal of (time_from_start, positions) points, positions only."""
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    import rospy
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(names)
    for t, p in points:
        goal.trajectory.points.append(JointTrajectoryPoint(positions=list(p),
                                                           time_from_start=rospy.Duration(t)))
    return goal


@pytest.fixture(scope='module')
def ros(robot):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    from intera_core_msgs.msg import RobotAssemblyState
    from std_msgs.msg import Bool
    client = actionlib.SimpleActionClient(ACTION, FollowJointTrajectoryAction)
    wait_for(lambda: client.wait_for_server(rospy.Duration(0.5)), 60.0, 'the action server')
    state = latest('/robot/state', RobotAssemblyState)
    state.wait(10)
    rec = Recorder()
    wait_for(rec.last, 10.0, '/robot/joint_states')
    ctx = {'client': client, 'state': state, 'rec': rec,
           'enable': rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10)}
    yield ctx
    rec.close()


@pytest.fixture
def at_neutral(ros):
    """Each test starts enabled, idle, with the arm at rest at neutral."""
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    set_enabled(ros, True)
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    setq = rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)
    assert setq(names=[], positions=NEUTRAL.tolist()).success
    wait_for(lambda: np.abs(ros['rec'].last()[1] - NEUTRAL).max() < 1e-3, 10.0, 'arm at neutral')
    yield ros
    set_enabled(ros, True)


def set_enabled(ros, on):
    import rospy
    from std_msgs.msg import Bool

    def attempt():
        ros['enable'].publish(Bool(on))
        s = ros['state'].get()
        return s is not None and s.enabled == on
    wait_for(lambda: attempt() or (rospy.sleep(0.01) and False), 10.0,
             'robot %s' % ('enabled' if on else 'disabled'))


def tracking_error(rec, f, t0, duration):
    samples = rec.between(t0, t0 + duration)
    err = np.array([q - f(t - t0)[0] for t, q, _ in samples])
    return err, len(samples)


def rms(err):
    return float(np.sqrt(np.mean(err ** 2)))


def fresh_client(ns=ACTION):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    client = actionlib.SimpleActionClient(ns, FollowJointTrajectoryAction)
    wait_for(lambda: client.wait_for_server(rospy.Duration(0.5)), 60.0, 'action server %s' % ns)
    return client


# --- it is there --------------------------------------------------------------------------
def test_server_is_advertised_and_logs_running(ros, robot):
    import rosgraph
    master = rosgraph.Master('/jtas_test')
    pubs, subs, _ = master.getSystemState()
    assert any(t == ACTION + '/goal' and JTAS_NODE in n for t, n in subs)
    wait_for(lambda: 'Joint Trajectory Action Server Running' in robot.log_path.read_text(),
             10.0, 'the server\'s "Running" log line')


# --- MoveIt-like goal: success and tracking -----------------------------------------------------
def test_moveit_like_goal_succeeds_and_tracks_within_5_mrad(at_neutral):
    ros = at_neutral
    duration = 4.0
    f = smooth_motion(NEUTRAL, [0.6, 0.4, -0.5, -0.6, 0.8, 0.5, -1.0], duration,
                      bump=[0.2, -0.1, 0.3, 0.2, -0.3, 0.2, 0.4])
    sent = Sent(ros['client'], moveit_goal(f, duration))
    state, result = sent.wait(timeout=60)
    assert (TERMINAL[state], result.error_code) == ('SUCCEEDED', 0), result.error_string
    t0 = sent.start_time()
    err, n = tracking_error(ros['rec'], f, t0, duration)
    assert n >= 0.8 * 100 * duration                           # joint_states at 100 Hz
    assert rms(err) <= 0.005, 'RMS tracking error %.4f rad (max %.4f)' % (rms(err), np.abs(err).max())
    wait_for(lambda: np.abs(ros['rec'].last()[1] - f(duration)[0]).max() < 0.005, 10.0,
             'the arm settled at the last point')
    # feedback: at the control rate, every field filled for the goal's joints
    fbs = [fb for fb in sent.feedback if t0 <= fb.header.stamp.to_sec() <= t0 + duration]
    assert len(fbs) >= 0.5 * 100 * duration
    fb = fbs[len(fbs) // 2]
    assert fb.joint_names == ARM
    assert len(fb.desired.positions) == len(fb.desired.velocities) == len(fb.actual.positions) == 7
    assert np.allclose(np.subtract(fb.desired.positions, fb.actual.positions), fb.error.positions)
    t = fb.header.stamp.to_sec() - t0
    assert fb.desired.time_from_start.to_sec() == pytest.approx(t, abs=1e-6)
    assert fb.desired.positions == pytest.approx(f(t)[0].tolist(), abs=2e-3)


def test_sdk_joint_trajectory_client_goal(at_neutral):
    """What joint_trajectory_client sends: positions only (no velocities), 8 points over
    19 s starting at the current angles, header.stamp = now, goal_time_tolerance given as a
    rospy.Time(0.1)."""
    import rospy
    ros = at_neutral
    p1 = ros['rec'].last()[1]
    scale = [(0.0, 1.0), (1.0, 1.0), (4.0, 0.6), (7.0, 0.3), (10.0, 0.6), (13.0, 0.3),
             (16.0, 0.6), (19.0, 1.0)]
    goal = position_goal([(t, p1 * s) for t, s in scale])
    goal.goal_time_tolerance = rospy.Time(0.1)
    goal.trajectory.header.stamp = rospy.Time.now()
    sent = Sent(ros['client'], goal)
    state, result = sent.wait(timeout=180)
    assert (TERMINAL[state], result.error_code) == ('SUCCEEDED', 0), result.error_string
    t0 = goal.trajectory.header.stamp.to_sec()
    for t, s in scale[2:]:
        near = ros['rec'].between(t0 + t - 0.006, t0 + t + 0.006)
        assert near, 'no joint_states around t=%.1f' % t
        assert np.abs(near[0][1] - p1 * s).max() < 0.01, (t, near[0][1] - p1 * s)
    errors = np.array([fb.error.positions for fb in sent.feedback])
    assert rms(errors) <= 0.005, 'RMS tracking error %.4f rad (max %.4f)' % (
        rms(errors), np.abs(errors).max())


def test_a_client_stalled_after_sending_hears_everything(at_neutral):
    """A SimpleActionClient descheduled between publishing its goal and recording the handle
    (a loaded machine) gets the goal going active, feedback and the result, and logs nothing
    about goal handles it is not tracking (the server's 100 Hz feedback and its status
    would otherwise name the goal first)."""
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    from rosharness import StalledClient
    ros = at_neutral
    p1 = ros['rec'].last()[1]
    with StalledClient(ACTION, FollowJointTrajectoryAction) as stalled:
        for k in range(3):
            active, feedback = [], []
            goal = position_goal([(0.5, p1 + 0.05 * (k % 2)), (1.0, p1)])
            stalled.client.send_goal(goal, active_cb=lambda: active.append(True),
                                     feedback_cb=feedback.append)
            assert stalled.client.wait_for_result(rospy.Duration(60.0)), 'no result'
            result = stalled.client.get_result()
            assert (TERMINAL[stalled.client.get_state()], result.error_code) == ('SUCCEEDED', 0), \
                result.error_string
            assert active == [True] and feedback
    assert stalled.untracked == []


def test_goal_for_some_joints_holds_the_others(at_neutral):
    ros = at_neutral
    names = ['right_j3', 'right_j0']                           # a subset, in any order
    target = {'right_j0': 0.3, 'right_j3': 1.9}
    sent = Sent(ros['client'], position_goal([(2.0, [target[n] for n in names])], names))
    state, result = sent.wait(timeout=60)
    assert (TERMINAL[state], result.error_code) == ('SUCCEEDED', 0), result.error_string
    assert sent.feedback[-1].joint_names == names
    wait_for(lambda: abs(ros['rec'].last()[1][0] - 0.3) < 0.005, 10.0, 'right_j0 at its target')
    q = ros['rec'].last()[1]
    assert q[3] == pytest.approx(1.9, abs=0.005)
    others = [1, 2, 4, 5, 6]
    moved = max(np.abs(s[1][others] - NEUTRAL[others]).max()
                for s in ros['rec'].between(sent.start_time(), ros['rec'].last()[0]))
    assert moved < 0.005


# --- the other modes, from a second server instance ------------------------------------------
@pytest.fixture
def second_server(robot):
    procs = []

    def start(mode):
        ns = '/jtas_%s/follow_joint_trajectory' % mode
        log = open(robot.log_path.parent / ('jtas_%s.log' % mode), 'wb')
        proc = subprocess.Popen(
            [sys.executable, str(REPO / 'nodes' / 'joint_trajectory_action_server'),
             '__name:=jtas_%s' % mode, '_mode:=%s' % mode, '_action_ns:=%s' % ns],
            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        procs.append((proc, log))
        return fresh_client(ns)
    yield start
    for proc, log in procs:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.parametrize('mode', ['position', 'velocity'])
def test_other_modes_succeed(at_neutral, second_server, mode):
    ros = at_neutral
    client = second_server(mode)
    duration = 3.0
    f = smooth_motion(NEUTRAL, [0.4, 0.3, -0.3, -0.4, 0.5, 0.4, -0.6], duration)
    sent = Sent(client, moveit_goal(f, duration))
    state, result = sent.wait(timeout=60)
    assert (TERMINAL[state], result.error_code) == ('SUCCEEDED', 0), result.error_string
    err, _ = tracking_error(ros['rec'], f, sent.start_time(), duration)
    assert np.abs(err).max() < 0.2
    wait_for(lambda: np.abs(ros['rec'].last()[1] - f(duration)[0]).max() < 0.01, 20.0,
             'the arm at the last point')


def test_position_mode_keeps_the_speed_ratio_other_clients_set(at_neutral, second_server):
    """set_speed_ratio is robot-wide and latched: the server in position mode leaves what
    another client set (here 0.6) and never publishes one itself, and still tracks a
    trajectory within that ratio closely — its POSITION_MODE targets lead the spline by
    the robot's braking distance (the robot approaches a target no faster than that)."""
    import rospy
    from std_msgs.msg import Float64
    ros = at_neutral
    ratios = []
    sub = rospy.Subscriber('/robot/limb/right/set_speed_ratio', Float64,
                           lambda m: ratios.append((m._connection_header.get('callerid'), m.data)),
                           queue_size=100)
    other = rospy.Publisher('/robot/limb/right/set_speed_ratio', Float64, queue_size=1, latch=True)
    try:
        wait_for(lambda: other.get_num_connections() >= 2, 10.0, 'the robot and this test subscribed')
        other.publish(Float64(0.6))
        wait_for(lambda: any(v == 0.6 for _, v in ratios), 10.0, 'our ratio heard')
        client = second_server('position')
        duration = 2.5
        # right_j0 peaks at 1.875 × 0.8 / 2.5 = 0.6 rad/s: within 0.6 × 1.74 rad/s
        f = smooth_motion(NEUTRAL, [0.8, 0.3, -0.5, -0.6, 0.9, 0.7, -1.2], duration)
        sent = Sent(client, moveit_goal(f, duration))
        state, result = sent.wait(timeout=60)
        assert (TERMINAL[state], result.error_code) == ('SUCCEEDED', 0), result.error_string
        err, n = tracking_error(ros['rec'], f, sent.start_time(), duration)
        assert n >= 0.8 * 100 * duration
        assert np.abs(err).max() < 0.03 and rms(err) < 0.01, (np.abs(err).max(), rms(err))
        servers = {who for who, _ in ratios if who and 'jtas' in who}
        assert servers == set() and ratios[-1][1] == 0.6, ratios
    finally:
        other.publish(Float64(0.3))               # the robot's default, for the tests after
        sub.unregister()
        other.unregister()


# --- result codes from crafted goals ------------------------------------------------------------
def _reject_case(name, ros):
    import rospy
    q = ros['rec'].last()[1]
    if name == 'unknown joint':
        return position_goal([(1.0, q)], ARM[:6] + ['right_w2']), -2, "'right_w2'"
    if name == 'duplicate joint':
        return position_goal([(1.0, q)], ARM[:6] + ['right_j0']), -2, 'appears twice'
    if name == 'times not increasing':
        return position_goal([(1.0, q), (1.0, q)]), -1, 'strictly increase'
    if name == 'no points':
        return position_goal([]), -1, 'points is empty'
    if name == 'outside limits':
        bad = q.copy()
        bad[1] = 2.5
        return position_goal([(1.0, bad)]), -1, 'outside its limits'
    if name == 'first point far away':
        far = q + np.r_[0, 0, 0, 0.5, 0, 0, 0]
        return position_goal([(0.0, far), (2.0, far)]), -1, 'rad from the current position'
    if name == 'old header':
        goal = position_goal([(0.5, q), (1.0, q)])
        wait_for(lambda: rospy.Time.now().to_sec() > 6.0, 60.0, 'sim time past 6 s')
        goal.trajectory.header.stamp = rospy.Time.now() - rospy.Duration(5.0)
        return goal, -3, 'ended'
    raise KeyError(name)


@pytest.mark.parametrize('case', ['unknown joint', 'duplicate joint', 'times not increasing',
                                  'no points', 'outside limits', 'first point far away',
                                  'old header'])
def test_bad_goals_are_rejected_with_code_and_message(at_neutral, robot, case):
    ros = at_neutral
    goal, code, words = _reject_case(case, ros)
    state, result = Sent(ros['client'], goal).wait(timeout=30)
    assert TERMINAL[state] == 'REJECTED'
    assert result.error_code == code and words in result.error_string, result.error_string
    wait_for(lambda: result.error_string in robot.log_path.read_text(), 10.0, 'the log line')
    assert np.abs(ros['rec'].last()[1] - NEUTRAL).max() < 2e-3   # and nothing moved


def test_path_tolerance_violation_aborts_and_holds(at_neutral):
    from control_msgs.msg import JointTolerance
    ros = at_neutral
    f = smooth_motion(NEUTRAL, [0.5, 0, 0, 0, 0, 0, 0], 3.0)
    goal = moveit_goal(f, 3.0)
    goal.path_tolerance = [JointTolerance(name='right_j0', position=1e-6)]
    state, result = Sent(ros['client'], goal).wait(timeout=60)
    assert (TERMINAL[state], result.error_code) == ('ABORTED', -4)
    assert 'right_j0' in result.error_string and 'path tolerance' in result.error_string
    assert_holds(ros, 1.0)


def test_goal_tolerance_violation(at_neutral):
    from control_msgs.msg import JointTolerance
    ros = at_neutral
    f = smooth_motion(NEUTRAL, [0.2, 0, 0, 0, 0, 0, 0], 1.0)
    goal = moveit_goal(f, 1.0, n=6)
    goal.goal_tolerance = [JointTolerance(name=n, position=1e-9) for n in ARM]
    state, result = Sent(ros['client'], goal).wait(timeout=60)
    assert (TERMINAL[state], result.error_code) == ('ABORTED', -5), result.error_string
    assert 'goal tolerance' in result.error_string and 'goal_time' in result.error_string


def assert_holds(ros, seconds, tol=0.01):
    """After a goal ended: joint_states stay within tol of where the arm is for `seconds`."""
    rec = ros['rec']
    t_end = rec.last()[0]
    wait_for(lambda: rec.last()[0] >= t_end + seconds, 20 * seconds + 10, '%.1f s of joint_states' % seconds)
    samples = rec.between(t_end, t_end + seconds)
    q = np.array([s[1] for s in samples])
    drift = np.abs(q - q[0]).max()
    assert drift <= tol, 'moved %.4f rad after the goal ended' % drift
    return q[0]


# --- preemption, cancel --------------------------------------------------------------------------
def test_new_goal_preempts_the_running_one_without_a_jump(at_neutral):
    ros = at_neutral
    f1 = smooth_motion(NEUTRAL, [0.8, 0, 0, 0, 0, 0, 0], 4.0)
    first = Sent(fresh_client(), moveit_goal(f1, 4.0))
    first.wait_progress(1.5)
    target = NEUTRAL + np.r_[-0.3, 0.2, 0, 0, 0, 0, 0]
    second = Sent(ros['client'], position_goal([(2.0, target)]))
    state1, result1 = first.wait(timeout=30)
    assert TERMINAL[state1] == 'PREEMPTED' and 'preempted' in result1.error_string
    state2, result2 = second.wait(timeout=60)
    assert (TERMINAL[state2], result2.error_code) == ('SUCCEEDED', 0), result2.error_string
    wait_for(lambda: np.abs(ros['rec'].last()[1] - target).max() < 0.005, 20.0, 'the second target')
    # the switch is smooth: no velocity step in joint_states (10 ms apart, limit 10 rad/s²)
    t_switch = second.start_time()
    window = ros['rec'].between(t_switch - 0.1, t_switch + 0.3)
    qd = np.array([s[2] for s in window])
    assert np.abs(np.diff(qd, axis=0)).max() < 0.1


def test_cancel_stops_and_holds(at_neutral):
    ros = at_neutral
    f = smooth_motion(NEUTRAL, [0.6, 0, 0, 0, 0, 0, 0], 4.0)
    sent = Sent(ros['client'], moveit_goal(f, 4.0))
    sent.wait_progress(1.0)
    moving = ros['rec'].last()
    assert abs(moving[2][0]) > 0.1                              # it was moving
    ros['client'].cancel_goal()
    state, result = sent.wait(timeout=30)
    assert TERMINAL[state] == 'PREEMPTED' and 'cancelled' in result.error_string
    held = assert_holds(ros, 2.0, tol=0.01)
    # it stopped where it was, it did not finish the trajectory
    assert abs(held[0] - moving[1][0]) < 0.1
    assert abs(held[0] - f(4.0)[0][0]) > 0.1


# --- aborts from the robot ------------------------------------------------------------------------
def test_disable_aborts_the_goal(at_neutral):
    ros = at_neutral
    f = smooth_motion(NEUTRAL, [0.6, 0, 0, 0, 0, 0, 0], 4.0)
    sent = Sent(ros['client'], moveit_goal(f, 4.0))
    sent.wait_progress(1.0)
    set_enabled(ros, False)
    state, result = sent.wait(timeout=30)
    assert (TERMINAL[state], result.error_code) == ('ABORTED', -4)
    assert 'disabled' in result.error_string
    assert_holds(ros, 1.0, tol=0.01)                            # brakes on


def test_goal_while_disabled_is_rejected(at_neutral):
    ros = at_neutral
    set_enabled(ros, False)
    q = ros['rec'].last()[1]
    state, result = Sent(ros['client'], position_goal([(1.0, q + 0.1)])).wait(timeout=30)
    assert (TERMINAL[state], result.error_code) == ('REJECTED', -1)
    assert 'disabled' in result.error_string


def test_cuff_press_aborts_the_goal(at_neutral):
    """A person grasps the cuff mid-trajectory (sim control): the robot's cuff device
    reports right_cuff on /io/robot/cuff/state, the robot goes into zero-G and the server
    aborts the goal; the arm is the person's until they let go, then it holds."""
    from intera_core_msgs.msg import IODeviceConfiguration
    from intera_rt_msgs.msg import RealtimeState
    from rosharness import wait_for_message
    ros = at_neutral
    # The cuff's config, latched since boot, is valid for the SDK's Cuff (G10) although sim
    # time started at 0.
    config = wait_for_message('/io/robot/cuff/config', IODeviceConfiguration, 5.0)
    assert config.time.secs != 0 and config.device.name == 'cuff'
    with latest('/intera_rt/realtime_state', RealtimeState) as rt:
        try:
            f = smooth_motion(NEUTRAL, [0.6, 0, 0, 0, 0, 0, 0], 4.0)
            sent = Sent(ros['client'], moveit_goal(f, 4.0))
            sent.wait_progress(1.0)
            grasp_cuff(True)
            state, result = sent.wait(timeout=30)
            assert (TERMINAL[state], result.error_code) == ('ABORTED', -4)
            assert 'cuff' in result.error_string or 'zero-G' in result.error_string
            rt.wait(10.0, lambda m: m.zero_g and m.controller == 'zero_g', 'zero-G reported')
            # still grasped: a new goal is refused, saying why
            state, result = Sent(ros['client'], position_goal([(1.0, ros['rec'].last()[1])])).wait(timeout=30)
            assert TERMINAL[state] in ('ABORTED', 'REJECTED') and result.error_code == -1
            assert 'cuff' in result.error_string or 'zero-G' in result.error_string
        finally:
            grasp_cuff(False)
        rt.wait(10.0, lambda m: not m.zero_g and m.controller != 'zero_g', 'zero-G ended')
    assert_holds(ros, 1.0)
    # released: goals run again
    state, result = Sent(ros['client'], position_goal([(1.0, ros['rec'].last()[1])])).wait(timeout=30)
    assert TERMINAL[state] == 'SUCCEEDED', result.error_string
