"""Bad joint commands through ROS (contract §3.2, §5.1): each one is refused with a clear,
throttled line in the robot's log, the arm keeps doing what it did before (no motion from
the bad command), and the node keeps running. Torques beyond the effort limits are
applied saturated and reported; commands while disabled are ignored and not remembered.

Sim time at 1x, as in test_joint_modes.py (whose client helpers are reused here)."""
import math
import time

import numpy as np
import pytest

from clients import arm, arm_positions, arm_velocities, fresh, now, pace, stamp  # noqa: F401 - fixtures
from contract import ARM, NEUTRAL, POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from rosharness import wait_for

SAWYER_ARGS = ['--sim-time', '--speed', '1']

LOG_EVERY = 2.0        # s (wall): the robot repeats one kind of complaint at most this often
_last_bad = [-math.inf]  # time.monotonic() when a test here last sent a bad command


def log_count(robot, text):
    return robot.log_path.read_text(errors='replace').count(text)


def command(mode, names, position=(), velocity=(), acceleration=(), effort=()):
    from intera_core_msgs.msg import JointCommand
    return JointCommand(mode=mode, names=list(names), position=list(position),
                        velocity=list(velocity), acceleration=list(acceleration),
                        effort=list(effort))


# Each case would move right_j0 by 0.3 rad (or more) if it were accepted.
NAN, INF = math.nan, math.inf
Q = NEUTRAL
CASES = {
    'unknown mode': (
        lambda: command(7, ARM, position=Q + 0.3),
        'joint_command rejected: unknown mode 7'),
    'mode 0': (
        lambda: command(0, ARM, position=Q + 0.3),
        'joint_command rejected: unknown mode 0'),
    'no names': (
        lambda: command(POSITION_MODE, [], position=[Q[0] + 0.3]),
        'joint_command rejected: names is empty'),
    'unknown joint': (
        lambda: command(POSITION_MODE, ['right_j0', 'right_j9'], position=[Q[0] + 0.3, 0.0]),
        "joint_command rejected: unknown joint name 'right_j9'"),
    'head_pan is not an arm joint': (
        lambda: command(POSITION_MODE, ['right_j0', 'head_pan'], position=[Q[0] + 0.3, 0.0]),
        "joint_command rejected: unknown joint name 'head_pan'"),
    'duplicate joint': (
        lambda: command(POSITION_MODE, ['right_j0', 'right_j0'], position=[Q[0] + 0.3] * 2),
        "joint_command rejected: joint 'right_j0' named twice"),
    'position shorter than names': (
        lambda: command(POSITION_MODE, ['right_j0', 'right_j1'], position=[Q[0] + 0.3]),
        'joint_command rejected: position has 1 values for 2 names'),
    'trajectory velocity shorter than names': (
        lambda: command(TRAJECTORY_MODE, ['right_j0', 'right_j1'], position=[Q[0] + 0.3, Q[1]],
                        velocity=[0.1]),
        'joint_command rejected: velocity has 1 values for 2 names'),
    'velocity array empty in velocity mode': (
        lambda: command(VELOCITY_MODE, ['right_j0'], position=[Q[0] + 0.3]),
        'joint_command rejected: velocity has 0 values for 1 names'),
    'NaN position': (
        lambda: command(POSITION_MODE, ['right_j0', 'right_j1'], position=[Q[0] + 0.3, NAN]),
        'joint_command rejected: position[1] for right_j1 is nan'),
    'Inf velocity': (
        lambda: command(VELOCITY_MODE, ['right_j0', 'right_j1'], velocity=[0.5, INF]),
        'joint_command rejected: velocity[1] for right_j1 is inf'),
    'NaN effort': (
        lambda: command(TORQUE_MODE, ['right_j1', 'right_j0'], effort=[0.0, NAN]),
        'joint_command rejected: effort[1] for right_j0 is nan'),
    'NaN acceleration': (
        lambda: command(TRAJECTORY_MODE, ['right_j0'], position=[Q[0] + 0.3], velocity=[0.5],
                        acceleration=[NAN]),
        'joint_command rejected: acceleration[0] for right_j0 is nan'),
    'position outside limits': (
        lambda: command(POSITION_MODE, ['right_j0', 'right_j1'], position=[Q[0] + 0.3, 3.0]),
        'joint_command rejected: position 3.0000 for right_j1 is outside its limits'),
    'trajectory position outside limits': (
        lambda: command(TRAJECTORY_MODE, ['right_j0'], position=[-3.2], velocity=[0.0],
                        acceleration=[0.0]),
        'joint_command rejected: position -3.2000 for right_j0 is outside its limits'),
}


def _kind(line):
    """The robot throttles its complaints per kind of problem: cases of one kind share a
    throttle window."""
    text = line.split('rejected: ', 1)[1]
    for fragment, kind in (('unknown mode', 'mode'), ('name', 'names'), ('values for', 'length'),
                           (' is nan', 'not-finite'), (' is inf', 'not-finite'),
                           ('outside its limits', 'position-limit')):
        if fragment in text:
            return kind
    raise ValueError(line)


_last_of_kind = {}      # kind -> time.monotonic() of the last bad command of that kind


@pytest.mark.parametrize('case', list(CASES))
def test_bad_command_is_refused_logged_and_has_no_effect(fresh, robot, case):
    arm = fresh
    make, line = CASES[case]
    kind = _kind(line)
    last = _last_of_kind.get(kind, -math.inf)
    wait_for(lambda: time.monotonic() - last > LOG_EVERY + 0.3, 10.0,
             'the end of the throttle window of the last %s complaint' % kind)
    bad = make()
    before = log_count(robot, line)
    q0 = arm.q()
    held = arm.sea.last().commanded_position
    wall0 = time.monotonic()
    t0, t1, _ = pace(100, lambda t: arm.pub.publish(bad), 0.5)
    _last_bad[0] = _last_of_kind[kind] = time.monotonic()
    wait_for(lambda: log_count(robot, line) > before, 10.0, 'the log line %r' % line)
    # throttled: 50 identical bad commands, at most one line per LOG_EVERY s (of the time
    # since the first was sent: the robot may have taken them in over a longer time)
    assert log_count(robot, line) - before <= 1 + int((time.monotonic() - wall0) / LOG_EVERY)
    # no effect: the arm never moved and the hold reference never changed
    arm.js.wait_until(t1 + 0.3)
    moved = max(np.abs(arm_positions(m) - q0).max() for m in arm.js.between(t0, t1 + 0.3))
    assert moved < 1e-4, 'the arm moved %.5f rad on a refused command' % moved
    assert all(m.commanded_position == held for m in arm.sea.between(t0, t1 + 0.3))
    assert robot.alive()


def test_a_stream_of_differing_bad_values_is_throttled(fresh, robot):
    """A client streaming positions just past a limit (values that change every message,
    as a trajectory running into the limit does) gets one line per LOG_EVERY s, not one
    per message."""
    arm = fresh
    marker = 'for right_j1 is outside its limits'
    # the complaint about the earlier out-of-limits case must be out of its throttle window
    wait_for(lambda: time.monotonic() - _last_bad[0] > LOG_EVERY + 0.5, 10.0,
             'the end of the throttle window of the last bad command')
    before = log_count(robot, marker)
    k = [0]

    def step(t):
        k[0] += 1
        arm.set_positions({'right_j0': NEUTRAL[0], 'right_j1': 2.28 + 0.0001 * k[0]})
    wall0 = time.monotonic()
    _t0, t1, _ = pace(100, step, 1.0)
    wait_for(lambda: log_count(robot, marker) > before, 10.0, 'a log line %r' % marker)
    arm.js.wait_until(t1 + 0.1)
    logged = log_count(robot, marker) - before
    assert logged <= 1 + int((time.monotonic() - wall0) / LOG_EVERY), \
        '%d lines for %d commands of one kind' % (logged, k[0])


def test_velocity_that_would_pass_a_limit_is_refused(fresh, robot):
    arm = fresh
    q = NEUTRAL.copy()
    q[0] = 3.0                                # 0.05 rad below the right_j0 limit
    arm.reset_pose(q)
    line = 'joint_command rejected: velocity 1.000 would carry right_j0 past its limit'
    before = log_count(robot, line)
    t0, t1, _ = pace(100, lambda t: arm.set_velocities({'right_j0': 1.0, 'right_j1': 0.0}), 0.5)
    wait_for(lambda: log_count(robot, line) > before, 10.0, 'the log line %r' % line)
    arm.js.wait_until(t1 + 0.3)
    assert max(abs(arm_positions(m)[0] - 3.0) for m in arm.js.between(t0, t1 + 0.3)) < 1e-4


def test_bad_commands_in_a_stream_leave_the_motion_as_it_was(fresh, robot):
    """A velocity stream for right_j5 keeps going at its speed while every kind of bad
    command is interleaved with it; no other joint moves."""
    arm = fresh
    arm.tolerate_stalls()
    bads = [make() for make, _line in CASES.values()]
    k = [0]

    def step(t):
        arm.set_velocities({'right_j5': 0.2})
        arm.pub.publish(bads[k[0] % len(bads)])
        k[0] += 1
    t0, t1, _ = pace(100, step, 2.0)
    _last_bad[0] = time.monotonic()
    arm.set_velocities({'right_j5': 0.0})
    arm.js.wait_until(t1)
    # from when the joint is up to speed (the robot may take the stream in a little late on
    # a loaded machine) to the last command sent
    started = next(m for m in arm.js.between(t0) if abs(arm_velocities(m)[5] - 0.2) < 0.01)
    moving = arm.js.between(stamp(started) + 0.05, t1)
    assert len(moving) > 100
    v5 = np.array([arm_velocities(m)[5] for m in moving])
    assert np.abs(v5 - 0.2).max() < 0.02, 'right_j5 speed strayed: %s' % v5.round(3)
    others = max(np.abs(np.delete(arm_positions(m) - NEUTRAL, 5)).max() for m in moving)
    assert others < 1e-3
    assert robot.alive()


def test_torque_beyond_the_effort_limit_is_saturated_and_reported(fresh, robot):
    arm = fresh
    arm.set_timeout(0.05)                       # one command: 50 ms of torque, then hold
    line = 'joint_command: effort 500.00 for right_j0 saturated at 80.00'
    before = log_count(robot, line)
    t0 = now()
    arm.set_torques({'right_j0': 500.0})
    wait_for(lambda: log_count(robot, line) > before, 10.0, 'the log line %r' % line)
    arm.js.wait_until(t0 + 1.5)
    applied = [m.commanded_effort[0] for m in arm.sea.between(t0, t0 + 1.0)]
    assert 80.0 in applied, 'commanded_effort of right_j0 should read the limit: %s' % applied
    assert all(abs(e) <= 80.0 for m in arm.sea.between(t0, t0 + 1.5) for e in m.commanded_effort[:1])
    travel = max(abs(arm_positions(m)[0] - NEUTRAL[0]) for m in arm.js.between(t0, t0 + 1.5))
    assert 0.01 < travel < 0.5, travel
    assert np.abs(arm.qd()).max() < 0.01, 'after the timeout the arm holds'


def test_commands_while_disabled_are_ignored_and_forgotten(fresh, robot):
    import rospy
    from intera_core_msgs.msg import RobotAssemblyState
    from std_msgs.msg import Bool
    from rosharness import latest
    arm = fresh
    enable = rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10)
    with latest('/robot/state', RobotAssemblyState) as state:
        def set_enabled(value):
            wait_for(lambda: enable.publish(Bool(value)) or (state.get() is not None and
                                                              state.get().enabled == value),
                     10.0, 'enabled=%s in /robot/state' % value)
        set_enabled(False)
        line = 'joint_command ignored: the robot is disabled'
        before = log_count(robot, line)
        q0 = arm.q()
        t0, t1, _ = pace(100, lambda t: arm.set_positions({'right_j0': q0[0] + 0.3}), 0.5)
        wait_for(lambda: log_count(robot, line) > before, 10.0, 'the log line %r' % line)
        # The robot reads each connection in order: once one more command, sent after the
        # burst on the same connection, has been logged as ignored, none of the burst is
        # still in flight (it could otherwise arrive after the enable, and count as new).
        seen = time.monotonic()
        wait_for(lambda: time.monotonic() - seen > LOG_EVERY + 0.3, 10.0,
                 'the end of the throttle window of the last complaint')
        count = log_count(robot, line)
        arm.set_positions({'right_j0': q0[0] + 0.3})
        wait_for(lambda: log_count(robot, line) > count, 10.0, 'the last ignored command logged')
        set_enabled(True)
        t2 = now()
        arm.js.wait_until(t2 + 0.5)
        moved = max(np.abs(arm_positions(m) - q0).max() for m in arm.js.between(t0, t2 + 0.5))
        assert moved < 1e-3, 'a command sent while disabled moved the arm by %.4f rad' % moved
    # and the arm obeys the next command
    arm.move_to({'right_j0': q0[0] + 0.1})


def test_the_node_still_runs_and_obeys_after_all_this(fresh, robot):
    from diagnostic_msgs.msg import DiagnosticArray
    from rosharness import wait_for_message
    arm = fresh
    assert robot.alive()
    t = now()
    arm.js.wait_until(t + 0.1)
    wait_for_message('/diagnostics', DiagnosticArray, 5.0)
    t0, t1 = arm.move_to({'right_j2': NEUTRAL[2] + 0.2})
    assert stamp(arm.js.last()) >= t1
