"""Compliant trajectory execution (after seed 004) and the controller state of ROS's
joint_trajectory_controller, through the robot's joint trajectory action server as a
user drives it: an InteractionControlCommand latched on the server's
~interaction_control_command makes the goals that follow compliant, ~force_threshold ends
one that meets too much force, ~state and ~query_state report the trajectory. The arm is
pushed through /intera_rt/sim/apply_wrench and judged by endpoint_state and joint_states.

The robot runs on sim time at 1x: durations are robot time."""
import math

import numpy as np
import pytest

from clients import Series, now, stamp
from contract import ARM
from interaction_client import NEUTRAL, fresh, options, position, push, ros  # noqa: F401
from rosharness import wait_for

SAWYER_ARGS = ['--sim-time', '--speed', '1']
pytestmark = pytest.mark.sawyer_args(SAWYER_ARGS)

ACTION = '/robot/limb/right/follow_joint_trajectory'
JTAS = '/motion_controller/joint_trajectory_action_server/'   # the server's ~ on the robot
SUCCEEDED, ABORTED = 3, 4
PATH_TOLERANCE_VIOLATED = -4
K_SOFT = 300.0                  # N/m along base x in the compliant goals
PUSH = 15.0                     # N


@pytest.fixture(scope='module')
def jtas(ros):
    """The action client, the server's latched interaction command, ~state, ~query_state
    and the server's log lines."""
    import threading

    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction, JointTrajectoryControllerState
    from control_msgs.srv import QueryTrajectoryState
    from intera_core_msgs.msg import InteractionControlCommand, JointLimits
    from rosgraph_msgs.msg import Log
    client = actionlib.SimpleActionClient(ACTION, FollowJointTrajectoryAction)
    wait_for(lambda: client.wait_for_server(rospy.Duration(0.5)), 60.0, 'the action server')
    rospy.wait_for_service(JTAS + 'query_state', 30.0)
    lines, lock = [], threading.Lock()

    def keep(msg):
        if msg.name == '/motion_controller':
            with lock:
                lines.append(msg.msg)
    sub = rospy.Subscriber('/rosout', Log, keep, queue_size=1000)
    limits = rospy.wait_for_message('/robot/joint_limits', JointLimits, 10.0)
    out = dict(ros, client=client, log=lines,
               compliance=rospy.Publisher(JTAS + 'interaction_control_command',
                                          InteractionControlCommand, queue_size=1, latch=True),
               state=Series(JTAS + 'state', JointTrajectoryControllerState),
               query=rospy.ServiceProxy(JTAS + 'query_state', QueryTrajectoryState),
               accel=np.array([limits.accel[limits.joint_names.index(n)] for n in ARM]))
    yield out
    sub.unregister()
    out['state'].unregister()
    out['compliance'].publish(options(active=False))


@pytest.fixture
def idle(jtas, fresh):
    """fresh, and no goal left running after the test (a failed one's goal is cancelled)."""
    yield jtas
    from actionlib_msgs.msg import GoalStatus
    if jtas['client'].get_state() in (GoalStatus.ACTIVE, GoalStatus.PENDING):
        import rospy
        jtas['client'].cancel_all_goals()
        jtas['client'].wait_for_result(rospy.Duration(10.0))


def set_compliance(jtas, msg, expect):
    """Latch msg on the server's topic and wait for its log line saying so (`expect`)."""
    seen = len(jtas['log'])
    jtas['compliance'].publish(msg)
    wait_for(lambda: any(expect in line for line in jtas['log'][seen:]), 10.0,
             'the server to log %r' % expect)


def soft_x():
    """Interaction parameters soft along base x (K_SOFT), stiff elsewhere."""
    return options(K=(K_SOFT, 1300.0, 1300.0, 30.0, 30.0, 30.0), max_impedance=(False,) * 6)


def goal_to(target, duration, start_in=0.0):
    """A goal from neutral to target over `duration` s (positions only, a point halfway),
    starting `start_in` s from now (0: header.stamp 0)."""
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    g = FollowJointTrajectoryGoal()
    g.trajectory.joint_names = list(ARM)
    if start_in:
        g.trajectory.header.stamp = rospy.Time.from_sec(now() + start_in)
    for k in (1, 2):
        g.trajectory.points.append(JointTrajectoryPoint(
            positions=list(NEUTRAL + (np.asarray(target) - NEUTRAL) * k / 2.0),
            time_from_start=rospy.Duration(duration * k / 2.0)))
    return g


TARGET = NEUTRAL + np.array([0.3, 0.0, 0.0, -0.15, 0.0, 0.1, 0.0])


def hand_off_path(jtas, t0, t1):
    """(stamps, offsets): the hand (endpoint_state) minus where the desired joint angles
    (~state) put it, at each stamp both report between t0 and t1."""
    from intera_rt.model import RobotModel
    tip = RobotModel.from_file().arm_dynamics.tip
    desired = {round(stamp(m), 4): np.array(m.desired.positions) for m in jtas['state'].between(t0, t1)}
    out = [(stamp(m), position(m) - tip('right_hand', desired[round(stamp(m), 4)])[0])
           for m in jtas['endpoint'].between(t0, t1) if round(stamp(m), 4) in desired]
    assert len(out) > 5, 'endpoint_state and ~state share only %d stamps in [%.2f, %.2f]' % (len(out), t0, t1)
    return np.array([t for t, _ in out]), np.array([d for _, d in out])


def test_a_push_moves_the_hand_of_a_compliant_goal_by_f_over_k_and_it_returns_to_the_path(idle):
    """Goals under soft_x(): a 15 N push along x for 2.6 s in the middle of a 9 s goal
    moves the hand off its path by F/K (±20 %) while the trajectory moves on, and once let
    go the hand comes back to the path (within 20 % of F/K); the goal succeeds."""
    jtas = idle
    import rospy
    set_compliance(jtas, soft_x(), 'goals that follow run under interaction control')
    jtas['client'].send_goal(goal_to(TARGET, 9.0))
    jtas['realtime'].wait(lambda m: m.controller == 'interaction', 10.0, 'interaction control')
    t0 = now()
    jtas['state'].wait_until(t0 + 2.0)
    t_push = now()
    t_end = push(jtas, (PUSH, 0, 0, 0, 0, 0), hold=2.2)
    jtas['state'].wait_until(t_end + 2.5)
    _, before = hand_off_path(jtas, t_push - 0.5, t_push)
    _, pushed = hand_off_path(jtas, t_end - 0.3, t_end - 0.05)
    _, after = hand_off_path(jtas, t_end + 2.2, t_end + 2.5)
    stamps, offsets = hand_off_path(jtas, t_push - 0.5, t_end + 2.5)
    seen = ', '.join('%+.2f s %s' % (t - t_push, np.round(1000 * (d - before.mean(axis=0)), 1))
                     for t, d in zip(stamps[::25], offsets[::25]))
    moved = pushed.mean(axis=0) - before.mean(axis=0)
    assert moved[0] == pytest.approx(PUSH / K_SOFT, rel=0.20), \
        'the push moved the hand %s m off its path (F/K %.3f m); mm from the push: %s' % (moved, PUSH / K_SOFT, seen)
    back = np.linalg.norm(after.mean(axis=0) - before.mean(axis=0))
    assert back < 0.2 * PUSH / K_SOFT, 'the hand stayed %.4f m off its path after the push; mm: %s' % (back, seen)
    assert jtas['client'].wait_for_result(rospy.Duration(30.0)), 'no result'
    assert jtas['client'].get_state() == SUCCEEDED, jtas['client'].get_result()
    from intera_rt.model import RobotModel
    t = now()
    jtas['endpoint'].wait_until(t + 0.5)
    goal_hand = RobotModel.from_file().arm_dynamics.tip('right_hand', TARGET)[0]
    off = np.linalg.norm(position(jtas['endpoint'].last()) - goal_hand)
    assert off < 0.2 * PUSH / K_SOFT, 'the hand ended %.4f m from the goal\'s' % off


def test_the_force_threshold_stops_a_compliant_goal_smoothly_with_a_named_error(idle):
    """~force_threshold 10 N: a 20 N push during a compliant goal ends it ABORTED,
    PATH_TOLERANCE_VIOLATED, its error_string naming the threshold and the force seen
    (over 10 N); the trajectory decelerates to rest (the desired velocity changes by no
    more than the acceleration limits allow, per ~state sample), the arm's joints follow
    within their acceleration limits while the push goes on, and the arm comes to rest
    (within 4 s) once it ends."""
    import rospy
    jtas = idle
    rospy.set_param(JTAS + 'force_threshold', 10.0)
    try:
        set_compliance(jtas, soft_x(), 'goals that follow run under interaction control')
        jtas['client'].send_goal(goal_to(TARGET, 8.0))
        jtas['realtime'].wait(lambda m: m.controller == 'interaction', 10.0, 'interaction control')
        jtas['state'].wait_until(now() + 1.5)
        t_push = now()
        t_end = push(jtas, (20.0, 0, 0, 0, 0, 0), hold=2.0)
        assert jtas['client'].wait_for_result(rospy.Duration(30.0)), 'no result'
    finally:
        rospy.set_param(JTAS + 'force_threshold', 45.0)
    result = jtas['client'].get_result()
    assert jtas['client'].get_state() == ABORTED, result
    assert result.error_code == PATH_TOLERANCE_VIOLATED, result
    text = result.error_string
    assert text.startswith('force threshold exceeded') and 'force_threshold 10.0 N' in text, text
    # The text rounds to 0.1 N: a force just over 10 N reads "10.0".
    seen = float(text.split(': ')[1].split(' N')[0])
    assert 10.0 <= seen <= 20.0 * 1.5, text
    jtas['joints'].wait_until(t_end + 1.5)
    states = jtas['state'].between(t_push)
    v = np.array([m.desired.velocities for m in states])
    dt = np.diff([stamp(m) for m in states])[:, None]
    jumps = np.abs(np.diff(v, axis=0)) / np.maximum(dt, 1e-3) / jtas['accel']
    assert jumps.max() <= 1.0, 'the desired velocity jumped (%.2f x the acceleration limit)' % jumps.max()
    assert not np.any(states[-1].desired.velocities), 'the trajectory did not come to rest'
    t_stop = stamp(states[-1])
    assert t_stop < t_end, 'the trajectory stopped at %.2f s, after the push' % (t_stop - t_push)
    js = jtas['joints'].between(t_push, t_end)
    qd = np.array([[m.velocity[m.name.index(n)] for n in ARM] for m in js])
    dt = np.diff([stamp(m) for m in js])[:, None]
    accel = np.abs(np.diff(qd, axis=0)) / np.maximum(dt, 1e-3) / jtas['accel']
    assert accel.max() <= 1.0, 'a joint accelerated at %.2f x its limit' % accel.max()

    def speed(m):
        return np.abs([m.velocity[m.name.index(n)] for n in ARM]).max()
    rest = jtas['joints'].wait(lambda m: speed(m) < 0.02 or stamp(m) >= t_end + 4.0, 30.0, 'the arm at rest')
    assert speed(rest) < 0.02, 'the arm still moves at %.3f rad/s 4 s after the push' % speed(rest)


def test_a_stiff_goal_is_unchanged_and_a_refused_command_changes_nothing(idle):
    """A command the robot would refuse (a negative stiffness) is refused by the server,
    naming the field; an inactive one makes goals stiff again: the robot leaves interaction
    control, runs the goal in its trajectory controller and tracks it within 10 mrad."""
    jtas = idle
    import rospy
    set_compliance(jtas, options(active=False), 'goals that follow run stiffly')
    jtas['realtime'].wait(lambda m: m.controller == 'hold', 10.0, 'position hold')
    bad = soft_x()
    bad.K_impedance[2] = -1.0
    set_compliance(jtas, bad, 'K_impedance[2] = -1 must be >= 0')
    assert 'goals run as before (stiff)' in next(l for l in jtas['log'] if 'K_impedance[2]' in l)
    t0 = now()
    jtas['client'].send_goal(goal_to(TARGET, 4.0))
    assert jtas['client'].wait_for_result(rospy.Duration(30.0)), 'no result'
    assert jtas['client'].get_state() == SUCCEEDED, jtas['client'].get_result()
    controllers = {m.controller for m in jtas['realtime'].between(t0, now())}
    assert 'interaction' not in controllers and 'trajectory' in controllers, controllers
    err = np.array([m.error.positions for m in jtas['state'].between(t0)])
    assert np.abs(err).max() < 0.01, np.abs(err).max()


def test_state_and_query_state_report_the_spline_and_the_arm(idle):
    """While a goal runs ~state comes with each joint state at 100 Hz: actual is the joint
    state of its stamp, desired the spline there (query_state at the same time gives the
    same), error = desired − actual. query_state at a point's time gives that point; a time
    before the trajectory's start is refused, saying so."""
    jtas = idle
    import rospy
    set_compliance(jtas, options(active=False), 'goals that follow run stiffly')
    g = goal_to(TARGET, 3.0, start_in=0.5)
    t_start = g.trajectory.header.stamp.to_sec()
    jtas['client'].send_goal(g)
    assert jtas['client'].wait_for_result(rospy.Duration(30.0)), 'no result'
    assert jtas['client'].get_state() == SUCCEEDED, jtas['client'].get_result()
    states = jtas['state'].between(t_start, t_start + 3.0)
    gaps = np.diff([stamp(m) for m in states])
    assert len(states) > 200 and np.median(gaps) == pytest.approx(0.01, rel=0.1), np.median(gaps)
    joints = jtas['joints'].between(t_start - 0.1, t_start + 3.1)
    js_stamps = np.array([stamp(m) for m in joints])
    for m in states[::25]:
        k = int(np.argmin(np.abs(js_stamps - stamp(m))))
        js = joints[k]
        assert abs(js_stamps[k] - stamp(m)) < 1e-6, \
            '~state at %.4f s has no joint state of its stamp (nearest %s)' % (stamp(m), js_stamps[max(0, k - 2):k + 3])
        assert m.joint_names == list(ARM)
        assert np.allclose(m.actual.positions, [js.position[js.name.index(n)] for n in ARM], atol=1e-9)
        assert np.allclose(m.actual.velocities, [js.velocity[js.name.index(n)] for n in ARM], atol=1e-9)
        assert np.allclose(m.error.positions, np.subtract(m.desired.positions, m.actual.positions), atol=1e-9)
        assert np.allclose(m.error.velocities, np.subtract(m.desired.velocities, m.actual.velocities), atol=1e-9)
        sample = jtas['query'](m.header.stamp)
        assert sample.name == list(ARM)
        assert np.allclose(sample.position, m.desired.positions, atol=1e-9)
        assert np.allclose(sample.velocity, m.desired.velocities, atol=1e-9)
    halfway = jtas['query'](rospy.Time.from_sec(t_start + 1.5))
    assert np.allclose(halfway.position, g.trajectory.points[0].positions, atol=1e-9)
    end = jtas['query'](rospy.Time.from_sec(t_start + 10.0))
    assert np.allclose(end.position, TARGET, atol=1e-9) and not any(end.velocity)
    with pytest.raises(rospy.ServiceException, match='precedes the trajectory'):
        jtas['query'](rospy.Time.from_sec(t_start - 1.0))
