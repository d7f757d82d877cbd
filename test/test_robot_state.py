"""A booted robot, seen the way the Intera SDK sees it: the start-up gates (contract §1),
/robot/state and its transitions (§4), the arm holding its pose, the sim-control API and
the realtime loop's diagnostics."""

import numpy as np
import pytest

from contract import ARM
from rosharness import latest, wait_for, wait_for_message
from intera_rt import robot  # noqa: E402

NEUTRAL = list(robot.NEUTRAL)


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_core_msgs.msg import RobotAssemblyState
    from std_msgs.msg import Bool, Empty
    pubs = {'enable': rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10),
            'stop': rospy.Publisher('/robot/set_super_stop', Empty, queue_size=10),
            'reset': rospy.Publisher('/robot/set_super_reset', Empty, queue_size=10)}
    state = latest('/robot/state', RobotAssemblyState)
    state.wait(10)
    return pubs, state


def arm_positions(msg):
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def publish_until(pub, msg, state, predicate, what, timeout=5.0):
    """What RobotEnable does: republish every 10 ms until /robot/state shows the change."""
    import rospy

    def attempt():
        pub.publish(msg)
        s = state.get()
        return s is not None and predicate(s)
    wait_for(lambda: attempt() or (rospy.sleep(0.01) and False), timeout, what)


# --- start-up gates (§1) ---------------------------------------------------------------
def test_gate_robot_state_arrives_periodically(ros):
    _, state = ros
    first = state.count
    wait_for(lambda: state.count >= first + 50, 2.0, '50 /robot/state messages within 2 s')


def test_gate_joint_states_full_length(robot):
    from sensor_msgs.msg import JointState
    msg = wait_for_message('/robot/joint_states', JointState, 5.0)
    assert set(ARM) <= set(msg.name) and 'head_pan' in msg.name
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == len(msg.name)
    assert np.allclose(arm_positions(msg), NEUTRAL, atol=2e-3)


def test_joint_states_rate_is_100hz(robot):
    from sensor_msgs.msg import JointState
    with latest('/robot/joint_states', JointState) as rec:
        rec.wait(5)
        t0 = rec.msg.header.stamp.to_sec()
        n0 = rec.count
        msg = wait_for(lambda: rec.count >= n0 + 100 and rec.msg, 5.0, '100 joint_states')
        rate = (rec.count - n0) / (msg.header.stamp.to_sec() - t0)
    assert 90 <= rate <= 110, rate


def test_gate_endpoint_and_tip_states(robot):
    from intera_core_msgs.msg import EndpointState, EndpointStates
    ep = wait_for_message('/robot/limb/right/endpoint_state', EndpointState, 5.0)
    assert ep.header.frame_id == 'base' and ep.valid
    p = ep.pose.position
    assert (p.x, p.y, p.z) == pytest.approx((0.4496, 0.1603, 0.2158), abs=2e-3)
    tips = wait_for_message('/robot/limb/right/tip_states', EndpointStates, 5.0)
    assert 'right_hand' in tips.names and len(tips.names) == len(tips.states)
    hand = tips.states[tips.names.index('right_hand')]
    assert hand.pose.position.x == pytest.approx(p.x, abs=2e-3)


def test_gate_joint_limits_latched(robot):
    from intera_core_msgs.msg import JointLimits
    msg = wait_for_message('/robot/joint_limits', JointLimits, 5.0)
    assert msg.joint_names[:7] == ARM
    for field in ('position_lower', 'position_upper', 'velocity', 'accel', 'effort'):
        assert len(getattr(msg, field)) == len(msg.joint_names), field
    j6 = msg.joint_names.index('right_j6')
    assert msg.position_upper[j6] == pytest.approx(4.7124)
    assert msg.velocity[msg.joint_names.index('right_j1')] == pytest.approx(1.328)


def test_gate_head_state_and_collision_detection_state(robot):
    from intera_core_msgs.msg import CollisionDetectionState, HeadState
    head = wait_for_message('/robot/head/head_state', HeadState, 5.0)
    assert head.panMode in (0, 1, 2) and abs(head.pan) < 1e-3
    col = wait_for_message('/robot/limb/right/collision_detection_state', CollisionDetectionState, 5.0)
    assert col.collision_state is False


def test_gravity_compensation_torques_are_real_values(robot):
    from intera_core_msgs.msg import SEAJointState
    msg = wait_for_message('/robot/limb/right/gravity_compensation_torques', SEAJointState, 5.0)
    assert msg.name == ARM
    assert abs(msg.gravity_only[1]) > 5.0          # the shoulder carries the arm
    assert np.allclose(msg.actual_effort, msg.gravity_only, atol=0.5)
    assert np.allclose(msg.commanded_position, NEUTRAL, atol=2e-3)


def test_tf_right_hand_and_head_connect_to_base(robot):
    import rospy
    import tf2_ros
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    t = wait_for(lambda: buf.can_transform('base', 'right_hand', rospy.Time(0)) and
                 buf.lookup_transform('base', 'right_hand', rospy.Time(0)), 10.0, 'TF base→right_hand')
    assert t.transform.translation.x == pytest.approx(0.4496, abs=2e-3)
    wait_for(lambda: buf.can_transform('base', 'head', rospy.Time(0)), 10.0, 'TF base→head')


def test_diagnostics_report_the_realtime_loop(robot):
    from diagnostic_msgs.msg import DiagnosticArray

    def loop_status():
        msg = wait_for_message('/diagnostics', DiagnosticArray, 5.0)
        return next((s for s in msg.status if s.name == 'Realtime Control Loop'), None)
    status = wait_for(loop_status, 10.0, 'a Realtime Control Loop status')
    values = {kv.key: kv.value for kv in status.values}
    for key in ('mean_us', 'p99_us', 'max_us', 'overruns', 'ticks'):
        assert key in values, key
    assert float(values['mean_us']) > 0


# --- holding the pose ------------------------------------------------------------------
def test_arm_holds_still_under_gravity(robot):
    """≤ 1 mrad drift over 10 s while enabled and in position hold."""
    import rospy
    from sensor_msgs.msg import JointState
    with latest('/robot/joint_states', JointState) as rec:
        start = arm_positions(rec.wait(5))
        worst = [0.0]

        def ten_seconds_watched():
            worst[0] = max(worst[0], np.abs(arm_positions(rec.get()) - start).max())
            return rospy.get_time() - t0 >= 10.0
        t0 = rospy.get_time()
        wait_for(ten_seconds_watched, 30.0, '10 s of joint_states')
    assert worst[0] <= 1e-3, worst[0]


# --- state machine (§4) ---------------------------------------------------------------
def test_stop_reset_enable(ros):
    from std_msgs.msg import Bool, Empty
    pubs, state = ros
    publish_until(pubs['stop'], Empty(), state, lambda s: s.stopped and not s.enabled, 'stopped')
    s = state.get()
    assert s.estop_source != 0 and s.estop_button != 1      # a stop the SDK may reset
    publish_until(pubs['reset'], Empty(), state,
                  lambda s: not s.stopped and not s.error and s.estop_button == 0 and s.estop_source == 0,
                  'reset')
    assert not state.get().enabled                            # reset leaves the robot disabled
    publish_until(pubs['enable'], Bool(True), state, lambda s: s.enabled, 'enabled')


def test_enable_refused_while_stopped(ros):
    import rospy
    from std_msgs.msg import Bool, Empty
    pubs, state = ros
    publish_until(pubs['stop'], Empty(), state, lambda s: s.stopped, 'stopped')
    for _ in range(30):
        pubs['enable'].publish(Bool(True))
        rospy.sleep(0.01)           # a script's requests over 0.3 s: the observation window
    state.wait_new(2.0)
    assert not state.get().enabled
    publish_until(pubs['reset'], Empty(), state, lambda s: not s.stopped, 'reset')
    publish_until(pubs['enable'], Bool(True), state, lambda s: s.enabled, 'enabled')


def test_disable_engages_brakes_and_ignores_commands(ros, robot):
    import rospy
    from intera_core_msgs.msg import JointCommand
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool
    pubs, state = ros
    publish_until(pubs['enable'], Bool(False), state, lambda s: not s.enabled, 'disabled')
    cmd_pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1)
    with latest('/robot/joint_states', JointState) as rec:
        start = arm_positions(rec.wait(5))
        wait_for(lambda: cmd_pub.get_num_connections() > 0, 5.0, 'joint_command subscriber')
        t_end = rospy.get_time() + 1.0
        while rospy.get_time() < t_end:
            cmd_pub.publish(JointCommand(mode=1, names=['right_j0'], position=[0.5]))
            rospy.sleep(0.01)       # 100 Hz commands over 1 s of robot time: the observation window
        assert np.abs(arm_positions(rec.wait_new(2)) - start).max() < 1e-4
    wait_for(lambda: 'joint_command ignored: the robot is disabled' in robot.log_path.read_text(),
             5.0, 'a log line saying why the command was ignored')
    publish_until(pubs['enable'], Bool(True), state, lambda s: s.enabled, 'enabled')


# --- sim control: E-stop button, error, wrench, pose ------------------------------------
def sim_service(name, srv_type):
    import rospy
    rospy.wait_for_service('/intera_rt/sim/' + name, 5.0)
    return rospy.ServiceProxy('/intera_rt/sim/' + name, srv_type)


def test_estop_button_blocks_reset_until_released(ros):
    from std_msgs.msg import Bool, Empty
    from std_srvs.srv import SetBool
    pubs, state = ros
    estop = sim_service('estop_button', SetBool)
    assert estop(True).success
    s = state.wait(5, lambda s: s.stopped and s.estop_button == 1, 'E-stop pressed in /robot/state')
    assert s.estop_source == 1 and not s.enabled
    for _ in range(20):
        pubs['reset'].publish(Empty())
    state.wait_new(2.0)
    assert state.get().stopped, 'reset must be refused while the E-stop button is pressed'
    assert estop(False).success
    state.wait_new(2.0)
    assert state.get().stopped, 'releasing the button alone does not restart the arm'
    publish_until(pubs['reset'], Empty(), state, lambda s: not s.stopped, 'reset after release')
    publish_until(pubs['enable'], Bool(True), state, lambda s: s.enabled, 'enabled')


def test_error_then_reset(ros):
    from std_msgs.msg import Bool, Empty
    from std_srvs.srv import SetBool
    pubs, state = ros
    assert sim_service('error', SetBool)(True).success
    state.wait(5, lambda s: s.error and not s.enabled, 'error in /robot/state')
    publish_until(pubs['reset'], Empty(), state, lambda s: not s.error and not s.stopped, 'reset')
    publish_until(pubs['enable'], Bool(True), state, lambda s: s.enabled, 'enabled')


def test_external_wrench_pushes_the_arm_and_shows_in_endpoint_wrench(ros):
    """A 40 N push on the holding arm: with suppress_contact_safety arriving (a sudden
    push this size is otherwise a detected collision) the hold resists it, the joints
    transmit the load and endpoint_state's wrench shows it; afterwards the arm is back."""
    import threading

    from geometry_msgs.msg import Wrench
    from intera_core_msgs.msg import EndpointState
    from intera_rt_msgs.msg import RealtimeState
    from intera_rt_msgs.srv import ApplyWrench
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Empty
    import rospy
    push = sim_service('apply_wrench', ApplyWrench)
    bad = push(link='no_such_link', wrench=Wrench(), duration=1.0)
    assert not bad.success and 'no_such_link' in bad.message
    w = Wrench()
    w.force.z = -40.0
    suppress = rospy.Publisher('/robot/limb/right/suppress_contact_safety', Empty, queue_size=1)
    stop = threading.Event()

    def keep_suppressing():
        while not stop.wait(0.05):
            suppress.publish(Empty())
    keeper = threading.Thread(target=keep_suppressing, daemon=True)
    keeper.start()
    try:
        wait_for(lambda: suppress.get_num_connections() > 0, 10.0, 'a suppress_contact_safety subscriber')
        with latest('/robot/joint_states', JointState) as js, \
                latest('/robot/limb/right/endpoint_state', EndpointState) as ep, \
                latest('/intera_rt/realtime_state', RealtimeState) as rt:
            start = arm_positions(js.wait(5))
            rt.wait(5.0, lambda m: 'contact_safety' in m.suppressed, 'contact safety suppressed')
            assert push(link='right_hand', wrench=w, duration=2.0).success
            # the hold controller resists: the joints transmit the extra load
            msg = ep.wait(3.0, lambda m: m.wrench.force.z > 20.0, 'endpoint wrench.z > 20 N')
            assert msg.wrench.force.z < 60.0
            moved = np.abs(arm_positions(js.get()) - start).max()
            assert moved < 0.05
            # and after the push ends the arm comes back
            wait_for(lambda: np.abs(arm_positions(js.get()) - start).max() < 2e-3 and
                     abs(ep.get().wrench.force.z) < 2.0, 10.0, 'arm back at its pose after the push')
    finally:
        stop.set()
        keeper.join(1.0)
        suppress.unregister()


def test_set_joint_positions_resets_the_arm(ros):
    from intera_rt_msgs.srv import SetJointPositions
    from sensor_msgs.msg import JointState
    setq = sim_service('set_joint_positions', SetJointPositions)
    bad = setq(names=['right_j0'], positions=[9.0])
    assert not bad.success and 'right_j0' in bad.message
    target = [0.3, -0.9, 0.1, 1.8, 0.0, -0.9, 0.2]
    assert setq(names=[], positions=target).success
    with latest('/robot/joint_states', JointState) as js:
        wait_for(lambda: np.allclose(arm_positions(js.wait_new(2)), target, atol=2e-3), 5.0, 'new pose')
    assert setq(names=[], positions=NEUTRAL).success


# --- a client that stops reading ----------------------------------------------------------
def _stalled_subscriber(topic, msg_type):
    """A TCPROS subscriber to `topic` that completes the handshake and then never reads (a
    hung or suspended client), with a small receive buffer so that the publisher's side
    fills within a second or two. Returns its socket."""
    import socket
    import struct
    from xmlrpc.client import ServerProxy

    import rosgraph
    master = rosgraph.Master('/stalled_client')
    publishers = dict((t, nodes) for t, nodes in master.getSystemState()[0])
    node_uri = master.lookupNode(publishers[topic][0])
    code, _, (_, host, port) = ServerProxy(node_uri).requestTopic('/stalled_client', topic, [['TCPROS']])
    assert code == 1
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect((host, port))
    fields = [b'callerid=/stalled_client', b'topic=' + topic.encode(), b'md5sum=' + msg_type._md5sum.encode(),
              b'type=' + msg_type._type.encode(), b'tcp_nodelay=1']
    body = b''.join(struct.pack('<I', len(f)) + f for f in fields)
    sock.sendall(struct.pack('<I', len(body)) + body)
    return sock


def test_a_client_that_stops_reading_does_not_hold_the_state_topics(robot):
    """States are written by the thread that builds them; a subscriber whose socket is full
    misses messages (logged) instead of blocking that thread: everyone else keeps getting
    /robot/joint_states at 100 Hz."""
    import rospy
    from rosgraph_msgs.msg import Log
    from sensor_msgs.msg import JointState
    with latest('/rosout_agg', Log, queue_size=100) as log:
        sock = _stalled_subscriber('/robot/joint_states', JointState)
        try:
            wait_for(lambda: log.get() is not None and 'is not reading' in log.get().msg, 20.0,
                     'the node logging that /stalled_client is not reading')
            assert '/robot/joint_states' in log.get().msg
            with latest('/robot/joint_states', JointState) as rec:
                rec.wait(5)
                # A rate in the clock the robot runs on (ROS time: sim time under
                # use_sim_time, whose pace against the wall clock is the simulator's).
                n0, t0 = rec.count, rospy.get_time()
                rospy.sleep(2.0)         # measuring a rate over a fixed window
                rate = (rec.count - n0) / (rospy.get_time() - t0)
            assert rate > 80.0, rate
        finally:
            sock.close()
