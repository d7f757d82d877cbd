"""Zero-G from the navigator's circle button through ROS, and the hand-back when it is let go
to the controller in use before: a person holds right_button_circle (/intera_rt/sim/button)
while interaction control (an SDK client's single publish) is in force, guides the hand
with a push, lets go; the arm is then under interaction control again, its springs anchored
where it was let go (a 20 N push displaces it F/K and it comes back there).

The robot runs on sim time at 1x: durations are robot time."""
import numpy as np
import pytest

from interaction_client import fresh, mean_position, options, push, ros  # noqa: F401
from clients import now, stamp
from contract import ARM

SAWYER_ARGS = ['--sim-time', '--speed', '1']


def press(name, action):
    import rospy
    from intera_rt_msgs.srv import PressButton
    rospy.wait_for_service('/intera_rt/sim/button', 10.0)
    resp = rospy.ServiceProxy('/intera_rt/sim/button', PressButton)(name, action, 0.0)
    assert resp.success, resp.message


def test_the_circle_button_gives_zero_g_and_hands_back_to_interaction_control(fresh):
    """Interaction control at 500 N/m; the navigator's circle held: zero-G (the arm gives way
    to a 6 N push that the springs would hold to 12 mm); released: interaction control again
    with the same gains, anchored where the arm was let go."""
    ros = fresh
    K = 500.0
    ros['pub'].publish(options(K=(K,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6))
    ros['realtime'].wait(lambda m: m.controller == 'interaction', 10.0, 'interaction control')
    try:
        press('right_button_circle', 'press')
        held = ros['realtime'].wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
        t0 = stamp(held)
        ros['endpoint'].wait_until(t0 + 0.3)
        start = mean_position(ros, t0, t0 + 0.3)
        t_end = push(ros, (6.0, 0, 0, 0, 0, 0), hold=0.4)
        ros['endpoint'].wait_until(t_end + 0.5)
        guided = mean_position(ros, t_end + 0.3, t_end + 0.5) - start
        assert guided[0] > 0.03, 'zero-G did not give way to the push: %s' % guided
    finally:
        press('right_button_circle', 'release')
    released = ros['realtime'].wait(lambda m: not m.zero_g, 10.0, 'zero-G to end')
    assert released.controller == 'interaction', released.controller
    state = ros['state'].wait(lambda m: m.interaction_control_active, 5.0, 'interaction control')
    assert list(state.K_impedance) == [K] * 3 + [10.0] * 3
    t_rel = stamp(released)
    ros['endpoint'].wait_until(t_rel + 1.0)
    let_go = mean_position(ros, t_rel + 0.7, t_rel + 1.0)
    t_end = push(ros, (20.0, 0, 0, 0, 0, 0), hold=2.2)
    ros['endpoint'].wait_until(t_end)
    moved = mean_position(ros, t_end - 0.3, t_end - 0.05) - let_go
    assert moved[0] == pytest.approx(20.0 / K, rel=0.10), moved
    ros['endpoint'].wait_until(t_end + 2.0)
    back = mean_position(ros, t_end + 1.7, t_end + 2.0) - let_go
    assert np.abs(back).max() < 0.003, 'not back where it was let go: %s' % back
    assert all(m.controller == 'interaction' for m in ros['realtime'].between(t_rel, now()))


def test_zero_g_guided_by_a_30_N_push_stays_within_the_joint_speed_limits(fresh):
    """Zero-G (the circle held), a person pushes the hand with 30 N for a second, then with
    20 N: the arm is guided (the hand moves) at a pace every joint keeps under its velocity
    limit in /robot/joint_states, with no joint-speed stop (realtime_state, the loop's log);
    the 20 N push for 1 s moves the hand less than a metre."""
    from intera_rt.model import RobotModel
    ros = fresh
    limits = RobotModel.from_file().limit_arrays(list(ARM))['velocity']
    logged = len(ros['rosout'])
    try:
        press('right_button_circle', 'press')
        held = ros['realtime'].wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
        t0 = stamp(held)
        ros['endpoint'].wait_until(t0 + 0.2)
        start = mean_position(ros, t0, t0 + 0.2)
        t30 = push(ros, (0.0, 30.0, 0.0, 0, 0, 0), hold=1.0, ramp=0.1)
        ros['endpoint'].wait_until(t30 + 0.5)
        after30 = mean_position(ros, t30 + 0.4, t30 + 0.5)
        t20 = push(ros, (0.0, 0.0, 20.0, 0, 0, 0), hold=1.0, ramp=0.05, steps=1)
        ros['endpoint'].wait_until(t20 + 0.5)
        after20 = mean_position(ros, t20 + 0.4, t20 + 0.5)
    finally:
        press('right_button_circle', 'release')
    assert after30[1] - start[1] > 0.1, 'zero-G did not give way to 30 N: %s' % (after30 - start)
    assert 0.05 < np.linalg.norm(after20 - after30) < 1.0, after20 - after30
    speeds = np.array([[abs(v) for n, v in zip(m.name, m.velocity) if n in ARM]
                       for m in ros['joints'].between(t0, t20 + 0.5)])
    names = [n for n in ros['joints'].last().name if n in ARM]
    peak = dict(zip(names, speeds.max(axis=0)))
    over = {n: (round(v, 3), limits[list(ARM).index(n)]) for n, v in peak.items()
            if v >= limits[list(ARM).index(n)]}
    assert not over, 'joints at or over their velocity limits: %s' % over
    during = ros['realtime'].between(t0, t20)
    stopped = [(m.controller, m.halt_remaining) for m in during
               if m.controller != 'zero_g' or m.halt_remaining > 0]
    assert not stopped, 'the arm was stopped while guided: %s' % stopped[:3]
    said = ros['rosout'][logged:]
    assert not [t for t in said if 'moving at' in t], said
