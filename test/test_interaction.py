"""Interaction control through ROS, as the SDK uses it: set_interaction_options.py's
InteractionPublisher (republishing at 10 Hz while the robot is enabled, then
interaction_control_active false; or -r 0, a single publish), and a motion controller goal
with trajectory_options.interaction_control (go_to_joint_angles_in_contact.py). The arm is
pushed and pressed through the sim-control API; what is checked is what a user sees:
endpoint_state, interaction_control_state, SEAJointState.interaction_torque, the robot's
log, and no collision detected (/intera_rt/realtime_state) in any of it.

The robot runs on sim time at 1x: durations are robot time."""
import math

import numpy as np
import pytest

from clients import goal, now, stamp, waypoint
from contract import ARM
from interaction_client import (NEUTRAL, Republisher, fresh, mean_position, options,  # noqa: F401
                                position, push, ros, table_below)
from rosharness import wait_for

SAWYER_ARGS = ['--sim-time', '--speed', '1']


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
