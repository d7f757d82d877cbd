"""--sim-time: the realtime loop is the clock. It publishes /clock, steps 1 ms of sim time
per tick, and stamps its state topics with sim time (lockstep)."""
import numpy as np
import pytest

from rosharness import latest, wait_for, wait_for_message

SAWYER_ARGS = ['--sim-time', '--speed', 'max']


def test_clock_advances_and_clients_follow_it(robot):
    import rospy
    from rosgraph_msgs.msg import Clock
    assert rospy.get_param('/use_sim_time') is True
    with latest('/clock', Clock) as clock:
        t0 = clock.wait(10).clock.to_sec()
        wait_for(lambda: clock.get().clock.to_sec() > t0 + 2.0, 30.0, '2 s of sim time')
    # this test's own node runs on sim time too
    assert abs(rospy.get_time() - clock.get().clock.to_sec()) < 1.0


def test_state_topics_are_stamped_in_lockstep(robot):
    import rospy
    from sensor_msgs.msg import JointState
    stamps = []
    sub = rospy.Subscriber('/robot/joint_states', JointState,
                           lambda m: stamps.append(m.header.stamp.to_sec()), queue_size=1000)
    wait_for(lambda: len(stamps) >= 50, 30.0, '50 joint_states')
    sub.unregister()
    gaps = np.diff(stamps[:50])
    # one message per 10 ticks of 1 ms: every gap a whole number of 10 ms (a dropped message
    # doubles one), the typical gap exactly 10 ms
    assert np.all(np.abs(np.round(gaps / 0.01) * 0.01 - gaps) < 1e-6), gaps
    assert np.median(gaps) == pytest.approx(0.01, abs=1e-9)


def test_arm_holds_in_sim_time(robot):
    from sensor_msgs.msg import JointState
    with latest('/robot/joint_states', JointState) as rec:
        first = rec.wait(10)
        start = np.array(first.position)
        t0 = first.header.stamp.to_sec()
        last = wait_for(lambda: rec.get().header.stamp.to_sec() > t0 + 10.0 and rec.get(), 60.0,
                        '10 s of sim time')
    assert np.abs(np.array(last.position) - start).max() <= 1e-3


def test_a_command_takes_effect_within_a_few_ticks_of_sim_time(robot):
    """At --speed max the loop waits for what it has published: a command sent at sim time
    t shows in joint_states within 0.25 s of sim time (the loop may run 20 ticks ahead, the
    arm takes a few tens of ms to move 0.1 mrad from rest), not seconds later. The first
    moved state is taken from every message as it arrives: a test polling every 20 ms of
    wall time would add up to 0.3 s of sim time at 15x of its own."""
    import threading

    import rospy
    from intera_core_msgs.msg import JointCommand
    from sensor_msgs.msg import JointState
    pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1)
    start = {}
    first_moved = []
    lock = threading.Lock()

    def record(m):
        q = m.position[m.name.index('right_j0')]
        with lock:
            if 'sent' not in start:
                start['q0'] = q     # the position when the command is sent
            elif not first_moved and abs(q - start['q0']) > 1e-4:
                first_moved.append(m)
    sub = rospy.Subscriber('/robot/joint_states', JointState, record, queue_size=1000)
    try:
        wait_for(lambda: 'q0' in start, 10.0, 'a joint state')
        wait_for(lambda: pub.get_num_connections() > 0, 10.0, 'joint_command connection')
        with lock:
            q0 = start['q0']
            start['sent'] = sent = rospy.get_time()
        target = q0 + (0.3 if q0 < 0 else -0.3)

        def moved():
            pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=['right_j0'], position=[target]))
            return first_moved
        m = wait_for(moved, 30.0, 'right_j0 moving')[0]
    finally:
        sub.unregister()
    latency = m.header.stamp.to_sec() - sent
    print('command to moved state: %.3f s of sim time' % latency)
    assert latency < 0.25, latency


@pytest.mark.parametrize('action', ['/motion/motion_command', '/robot/limb/right/follow_joint_trajectory',
                                    '/calibration_command'])
def test_action_servers_publish_their_status_at_5_hz_of_sim_time(robot, action):
    """actionlib's status timer runs on ROS time (clock_timers.periodic under sim time, which
    wakes its thread only when a status is due, not at every /clock): idle, a server's
    status comes every 0.2 s of sim time at --speed max as at 1x."""
    import rospy
    from actionlib_msgs.msg import GoalStatusArray
    stamps = []
    sub = rospy.Subscriber(action + '/status', GoalStatusArray,
                           lambda m: stamps.append(m.header.stamp.to_sec()), queue_size=1000)
    try:
        wait_for(lambda: len(stamps) >= 26, 60.0, '26 statuses of ' + action)
    finally:
        sub.unregister()
    t = np.array(stamps[1:26])            # (the first may be the latched one)
    gaps = np.diff(t)
    assert np.median(gaps) == pytest.approx(0.2, abs=0.021), gaps
    # On a fixed grid of 0.2 s: each status within 3/4 of a period after its slot (the
    # earliest one marks the grid; a status is stamped when its thread runs, which a few ms
    # of wall time without a CPU make ~0.1 s of sim time late), none skipped or doubled
    # (either moves every later status a whole period off the grid).
    late = t - 0.2 * np.arange(len(t))
    late -= late.min()
    assert late.max() < 0.15, (gaps, late)


def _loop_diagnostics(msg):
    status = next(s for s in msg.status if s.name == 'Realtime Control Loop')
    values = {kv.key: kv.value for kv in status.values}
    return int(values['command_timeouts']), int(values['stream_waits'])


def _stream(stall_at, stall_s, count=120):
    """Stream POSITION_MODE commands at 100 Hz of sim time (as intera_interface's
    move_to_joint_positions does) turning right_j6 by 0.05 rad, the client stalled once on
    the wall clock for `stall_s` (a process that did not get a CPU: the condition under
    test, hence a wall-clock sleep) before command `stall_at`. Returns (right_j6's target,
    the sim time of the last command)."""
    import time

    import rospy
    from intera_core_msgs.msg import JointCommand
    from sensor_msgs.msg import JointState
    js = wait_for_message('/robot/joint_states', JointState, 10.0)
    q0 = dict(zip(js.name, js.position))
    names = ['right_j%d' % i for i in range(7)]
    start = [q0[n] for n in names]
    target = start[6] + (0.05 if start[6] < 0 else -0.05)
    pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=10)
    wait_for(lambda: pub.get_num_connections() > 0, 10.0, 'joint_command connection')
    rate = rospy.Rate(100)
    for k in range(count):
        if k == stall_at:
            time.sleep(stall_s)
        q = list(start)
        q[6] += (target - start[6]) * min(1.0, k / (count / 2))
        pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=names, position=q))
        rate.sleep()
    t_last = rospy.get_time()
    pub.unregister()
    return target, t_last


def test_a_client_slow_on_the_wall_clock_keeps_its_stream(robot):
    """Faster than real time, a client that streams commands runs in a process of its own:
    10 ms without a CPU are ~0.2 s of sim time at 20x, past a 50 ms command timeout. The loop
    waits for a late stream (up to 30 ms of wall time from its last command), so the arm
    follows it without a timeout; the end of the stream times out once, as on the robot.
    A client stalled longer than that (0.3 s: gone, as far as the loop can tell) times out
    as it would on the robot."""
    import rospy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64
    timeout = rospy.Publisher('/robot/limb/right/joint_command_timeout', Float64, queue_size=1,
                              latch=True)
    wait_for(lambda: timeout.get_num_connections() > 0, 10.0, 'joint_command_timeout connection')
    timeout.publish(Float64(0.05))         # 10 ms of wall time is ≥ 0.1 s of sim time at ≥ 10×
    try:
        with latest('/diagnostics', DiagnosticArray) as diag:
            timeouts0, waits0 = _loop_diagnostics(diag.wait(10))
            target, t_last = _stream(stall_at=40, stall_s=0.01)
            # every timeout up to 1 s of sim time after the stream's end is counted
            after = diag.wait(30, lambda m: m.header.stamp.to_sec() > t_last + 1.5,
                              'diagnostics 1.5 s of sim time after the stream')
            timeouts, waits = _loop_diagnostics(after)
            assert timeouts == timeouts0 + 1, '%d timeouts, 1 expected (the end of the stream)' % (
                timeouts - timeouts0)
            assert waits > waits0
            js = wait_for_message('/robot/joint_states', JointState, 10.0)
            assert abs(js.position[js.name.index('right_j6')] - target) < 5e-3
            # A client gone for 0.3 s of wall time: the loop waits no longer than its budget.
            _, t_last = _stream(stall_at=40, stall_s=0.3)
            after = diag.wait(30, lambda m: m.header.stamp.to_sec() > t_last + 1.5,
                              'diagnostics 1.5 s of sim time after the second stream')
            assert _loop_diagnostics(after)[0] == timeouts + 2      # the stall, the end
    finally:
        timeout.publish(Float64(0.2))
        timeout.unregister()
