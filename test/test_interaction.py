"""Interaction control through ROS, as the SDK uses it: set_interaction_options.py's
InteractionPublisher (republishing at 10 Hz while the robot is enabled, then
interaction_control_active false; or -r 0, a single publish), and a motion controller goal
with trajectory_options.interaction_control (go_to_joint_angles_in_contact.py). The arm is
pushed and pressed through the sim-control API; what is checked is what a user sees:
endpoint_state, interaction_control_state, SEAJointState.interaction_torque, the robot's
log, and no collision detected (/intera_rt/realtime_state) in any of it.

The robot runs on sim time at 1x: durations are robot time."""
import math
import threading
import time

import numpy as np
import pytest

from clients import Series, goal, now, stamp, sync_publisher, waypoint
from contract import ARM, NS
from rosharness import CollisionWatch, wait_connected, wait_for

from intera_rt.robot import NEUTRAL

SAWYER_ARGS = ['--sim-time', '--speed', '1']
NEUTRAL = np.array(NEUTRAL)


@pytest.fixture(scope='module')
def ros(robot):
    import actionlib
    import rospy
    from intera_core_msgs.msg import (EndpointState, InteractionControlCommand,
                                      InteractionControlState, SEAJointState)
    from intera_motion_msgs.msg import MotionCommandAction
    from intera_rt_msgs.msg import RealtimeState
    from intera_rt_msgs.srv import AddObstacle, ApplyWrench, RemoveObstacle, SetJointPositions
    from rosgraph_msgs.msg import Log
    from sensor_msgs.msg import JointState
    out = {}
    for name, srv in (('add_obstacle', AddObstacle), ('remove_obstacle', RemoveObstacle),
                      ('apply_wrench', ApplyWrench), ('set_joint_positions', SetJointPositions)):
        rospy.wait_for_service('/intera_rt/sim/' + name, 10.0)
        out[name] = rospy.ServiceProxy('/intera_rt/sim/' + name, srv)
    out['pub'] = sync_publisher(NS + 'interaction_control_command', InteractionControlCommand,
                                tcp_nodelay=True)
    wait_connected(out['pub'], '/realtime_loop')
    out['endpoint'] = Series(NS + 'endpoint_state', EndpointState)
    out['state'] = Series(NS + 'interaction_control_state', InteractionControlState)
    out['sea'] = Series(NS + 'gravity_compensation_torques', SEAJointState)
    out['realtime'] = Series('/intera_rt/realtime_state', RealtimeState)
    out['joints'] = Series('/robot/joint_states', JointState)
    lines, lock = [], threading.Lock()

    def keep(msg):
        if msg.name == '/realtime_loop':
            with lock:
                lines.append(msg.msg)
    out['rosout'] = lines
    sub = rospy.Subscriber('/rosout', Log, keep, queue_size=1000)
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0)), 'no /motion/motion_command server'
    out['mc'] = client
    for key in ('endpoint', 'state', 'realtime', 'joints'):
        out[key].last()
    watch = CollisionWatch()
    yield out
    watch.close()
    sub.unregister()
    for key in ('endpoint', 'state', 'sea', 'realtime', 'joints'):
        out[key].unregister()
    watch.check('interaction control in normal use')


@pytest.fixture
def fresh(ros):
    """Each test starts at neutral in position hold, no obstacle."""
    ros['pub'].publish(options(active=False))
    resp = ros['set_joint_positions'](list(ARM), list(NEUTRAL))
    assert resp.success, resp.message
    ros['realtime'].wait(lambda m: m.controller == 'hold' and not m.collision, 10.0, 'holding')
    yield ros
    ros['pub'].publish(options(active=False))
    ros['remove_obstacle']('table')


def options(active=True, K=(1300.0,) * 3 + (30.0,) * 3, max_impedance=(True,) * 6,
            mode=(1,) * 6, force=(0.0,) * 6, K_nullspace=(5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0)):
    """An InteractionControlCommand as the SDK's InteractionOptions fills it (its defaults:
    max_impedance all true, D_impedance empty, frame base at the identity)."""
    from intera_core_msgs.msg import InteractionControlCommand
    msg = InteractionControlCommand(interaction_control_active=active)
    msg.header.frame_id = 'base'
    msg.K_impedance, msg.max_impedance = list(K), list(max_impedance)
    msg.K_nullspace, msg.force_command = list(K_nullspace), list(force)
    msg.interaction_control_mode = list(mode)
    msg.interaction_frame.orientation.w = 1.0
    msg.endpoint_name = 'right_hand'
    return msg


class Republisher:
    """set_interaction_options.py -r 10: the message at 10 Hz until stopped, then one with
    interaction_control_active false (InteractionPublisher.send_position_mode_cmd)."""

    def __init__(self, pub, msg, rate=10.0):
        self._pub, self._msg, self._stop = pub, msg, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(1.0 / rate,), daemon=True)
        self._thread.start()

    def _run(self, period):
        while not self._stop.is_set():
            self._pub.publish(self._msg)
            self._stop.wait(period)

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._pub.publish(options(active=False))


def push(ros, wrench, hold, steps=10, ramp=0.4):
    """A person's push on the hand: `wrench` ramped up in `steps` increments over `ramp` s,
    held until `ramp + hold` s from now (robot time), which is returned."""
    from geometry_msgs.msg import Vector3, Wrench
    t_end = now() + ramp + hold
    w = np.array(wrench, float) / steps
    for _ in range(steps):
        resp = ros['apply_wrench']('right_hand', Wrench(force=Vector3(*w[:3]), torque=Vector3(*w[3:])),
                                   t_end - now())
        assert resp.success, resp.message
        time.sleep(ramp / steps)
    return t_end


def position(msg):
    p = msg.pose.position
    return np.array([p.x, p.y, p.z])


def mean_position(ros, t0, t1):
    msgs = ros['endpoint'].between(t0, t1)
    assert msgs, 'no endpoint_state between %.2f and %.2f' % (t0, t1)
    return np.mean([position(m) for m in msgs], axis=0)


def table_below(ros, gap=0.05):
    """A table whose top is `gap` below right_hand's origin (15 mm below the hand's shape)."""
    from geometry_msgs.msg import Pose
    p = position(ros['endpoint'].last())
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = p[0], p[1], p[2] - gap - 0.1
    pose.orientation.w = 1.0
    resp = ros['add_obstacle']('table', 'box', pose, [0.4, 0.4, 0.2])
    assert resp.success, resp.message


def test_sdk_republishing_a_10_hz_impedance_displaces_the_hand_by_F_over_K(fresh):
    """set_interaction_options.py -k 500 500 500 10 10 10 -m 0 0 0 0 0 0 (10 Hz): the robot
    reports interaction control with those gains (and the default damping 8·√K), a 20 N push
    moves the hand 40 mm (F/K, ±10 %) with the interaction torques in SEAJointState; it
    comes back when let go; the client's final active=false puts the arm in position hold."""
    ros = fresh
    client = Republisher(ros['pub'], options(K=(500.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6))
    try:
        state = ros['state'].wait(lambda m: m.interaction_control_active, 10.0, 'interaction control')
        assert list(state.K_impedance) == [500.0] * 3 + [10.0] * 3
        assert list(state.D_impedance) == pytest.approx([8 * math.sqrt(500)] * 3 + [2 * math.sqrt(10)] * 3)
        assert state.endpoint_name == 'right_hand' and not state.in_endpoint_frame
        ros['realtime'].wait(lambda m: m.controller == 'interaction', 5.0, 'the interaction controller')
        t0 = now()
        start = mean_position(ros, t0 - 0.3, t0)
        t_end = push(ros, (20.0, 0, 0, 0, 0, 0), hold=2.2)
        ros['endpoint'].wait_until(t_end)
        moved = mean_position(ros, t_end - 0.3, t_end - 0.05) - start
        assert moved[0] == pytest.approx(0.040, rel=0.10), moved
        assert np.abs(moved[1:]).max() < 0.004, moved
        sea = [m for m in ros['sea'].between(t_end - 0.5, t_end)]
        assert sea and max(np.abs(m.interaction_torque).max() for m in sea) > 1.0
        ros['endpoint'].wait_until(t_end + 2.0)
        back = mean_position(ros, t_end + 1.7, t_end + 2.0) - start
        assert np.abs(back).max() < 0.003, back
    finally:
        client.stop()
    ros['realtime'].wait(lambda m: m.controller == 'hold', 5.0, 'position hold after the client exits')
    ros['state'].wait(lambda m: not m.interaction_control_active, 5.0, 'interaction control off')


def test_a_single_publish_keeps_interaction_control(fresh):
    """set_interaction_options.py -r 0: one message; the robot stays in interaction control
    (no command timeout) until told otherwise."""
    ros = fresh
    ros['pub'].publish(options(K=(800.0,) * 3 + (20.0,) * 3, max_impedance=(False,) * 6))
    msg = ros['realtime'].wait(lambda m: m.controller == 'interaction', 5.0, 'interaction control')
    ros['realtime'].wait_until(stamp(msg) + 2.0)
    assert all(m.controller == 'interaction' for m in ros['realtime'].between(stamp(msg), now()))
    assert list(ros['state'].last().K_impedance) == [800.0] * 3 + [20.0] * 3


def test_force_mode_presses_a_table_with_the_commanded_force(fresh):
    """-md 1 1 2 1 1 1 -f 0 0 -10 0 0 0: the hand goes down onto a table 15 mm below and
    presses it; endpoint_state's wrench (what the arm exerts) reads the 10 N within 10 %,
    and the robot reports the force command it applies."""
    ros = fresh
    table_below(ros)
    ros['pub'].publish(options(mode=(1, 1, 2, 1, 1, 1), force=(0, 0, -10.0, 0, 0, 0)))
    msg = ros['realtime'].wait(lambda m: m.sim_contacts > 0, 10.0, 'the hand on the table')
    ros['endpoint'].wait_until(stamp(msg) + 1.5)
    pressed = ros['endpoint'].between(stamp(msg) + 1.2, stamp(msg) + 1.5)
    fz = np.mean([m.wrench.force.z for m in pressed])
    assert fz == pytest.approx(-10.0, rel=0.10), fz
    assert list(ros['state'].last().endpoint_force_command) == [0, 0, -10.0, 0, 0, 0]


def test_an_in_contact_motion_succeeds_and_presses_with_its_stiffness(fresh):
    """go_to_joint_angles_in_contact.py: a JOINT motion to angles 5 cm below the start,
    3.5 cm into a table, with interaction options (500 N/m on z): the goal succeeds, the
    hand presses the table with about 500 N/m × 3.5 cm and the arm stays in interaction
    control; a motion without interaction options then takes it back out and up."""
    import rospy
    ros = fresh
    model_q = NEUTRAL.copy()
    from intera_rt.model import RobotModel
    dyn = RobotModel.from_file().arm_dynamics
    jac = dyn.tip('right_hand', model_q)[2]
    target = model_q + np.linalg.pinv(jac) @ np.array([0, 0, -0.05, 0, 0, 0])
    table_below(ros)
    g = goal([waypoint(NEUTRAL, ratio=0.1), waypoint(target, ratio=0.1)])
    opts = g.trajectory.trajectory_options
    opts.interaction_control = True
    opts.interaction_params = options(K=(1300.0, 1300.0, 500.0, 30.0, 30.0, 30.0), max_impedance=(False,) * 6)
    client = ros['mc']
    client.send_goal(g)
    assert client.wait_for_result(rospy.Duration(40.0)), 'no motion result'
    result = client.get_result()
    assert result.result is True, result.errorId
    t = now()
    ros['endpoint'].wait_until(t + 0.5)
    fz = np.mean([m.wrench.force.z for m in ros['endpoint'].between(t + 0.2, t + 0.5)])
    assert fz == pytest.approx(-500.0 * 0.035, rel=0.15), fz
    assert ros['realtime'].last().controller == 'interaction'
    js = ros['joints'].last()
    here = [js.position[js.name.index(n)] for n in ARM]
    client.send_goal(goal([waypoint(here, ratio=0.3), waypoint(NEUTRAL, ratio=0.3)]))
    assert client.wait_for_result(rospy.Duration(40.0)), 'no motion result'
    assert client.get_result().result is True, client.get_result().errorId
    assert ros['realtime'].last().controller != 'interaction'
    js = ros['joints'].last()
    assert np.abs(np.array([js.position[js.name.index(n)] for n in ARM]) - NEUTRAL).max() < 0.01


def test_bad_parameters_are_rejected_and_the_arm_keeps_its_behaviour(fresh):
    """A K_impedance of 5 values, a negative stiffness, an unknown mode: each is refused
    with an error naming the field (in the robot's log), and the interaction control in
    force keeps its gains."""
    ros = fresh
    ros['pub'].publish(options(K=(600.0,) * 3 + (15.0,) * 3, max_impedance=(False,) * 6))
    ros['state'].wait(lambda m: m.interaction_control_active and m.K_impedance[0] == 600.0, 5.0,
                      'interaction control at 600 N/m')
    for bad, text in ((options(K=(500.0,) * 5), 'K_impedance has 5 values, expected 6'),
                      (options(K=(500.0, -1.0, 500.0, 10.0, 10.0, 10.0)), 'K_impedance[1] = -1 must be >= 0'),
                      (options(mode=(1, 1, 7, 1, 1, 1)), 'interaction_control_mode[2] = 7 is not one of')):
        ros['pub'].publish(bad)
        wait_for(lambda: any(text in line for line in list(ros['rosout'])), 10.0, 'the error: ' + text)
    t = now()
    ros['state'].wait_until(t + 0.2)
    assert all(m.interaction_control_active and list(m.K_impedance) == [600.0] * 3 + [15.0] * 3
               for m in ros['state'].between(t, t + 0.2))


def test_inactive_interaction_options_run_a_position_controlled_motion(fresh):
    """go_to_joint_angles_in_contact.py -st 0: interaction_control with inactive parameters;
    the motion runs position-controlled (TRAJECTORY_MODE), reaching its goal."""
    import rospy
    ros = fresh
    target = NEUTRAL + np.array([0.2, -0.1, 0.0, 0.1, 0.0, 0.0, 0.0])
    g = goal([waypoint(NEUTRAL, ratio=0.5), waypoint(target, ratio=0.5)])
    g.trajectory.trajectory_options.interaction_control = True
    g.trajectory.trajectory_options.interaction_params = options(active=False)
    t0 = now()
    client = ros['mc']
    client.send_goal(g)
    assert client.wait_for_result(rospy.Duration(30.0)), 'no motion result'
    assert client.get_result().result is True, client.get_result().errorId
    seen = {m.controller for m in ros['realtime'].between(t0, now())}
    assert 'trajectory' in seen and 'interaction' not in seen, seen
    js = ros['joints'].last()
    assert np.abs(np.array([js.position[js.name.index(n)] for n in ARM]) - target).max() < 0.01
