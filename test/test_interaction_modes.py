"""Interaction control's modes and options through ROS, each judged by what the hand does:
force-limited impedance pressing a sim table no harder than its limit, motion-limited force
stopped at its wall, constrained zero-G and the ±82.5° rotational wall, max_impedance, the
interaction frame (in base and in the endpoint frame), disable_damping_in_force_control and
disable_reference_resetting. The arm is pushed through /intera_rt/sim/apply_wrench and meets
obstacles placed with /intera_rt/sim/add_obstacle; it is read from endpoint_state.

The robot runs on sim time at 1x: durations are robot time."""
import math

import numpy as np
import pytest

from interaction_client import (NEUTRAL, Republisher, fresh, mean_position, options, position,  # noqa: F401
                                push, ros, table_below)
from clients import goal, now, stamp, waypoint

SAWYER_ARGS = ['--sim-time', '--speed', '1']

MOTION_BOUND = 0.12             # m: FORCE_WITH_MOTION_LIMIT's wall from the reference (seed 000)
WALL_STIFFNESS = 1e4            # N/m: the wall's stiffness (docs/interaction_control.md)
ROTATION_WALL = math.radians(82.5)
ROTATION_WALL_STIFFNESS = 300.0  # N·m/rad
K_CAP = 1300.0                  # N/m: the stiffness cap without max_impedance


def orientation(msg):
    o = msg.pose.orientation
    return np.array([o.x, o.y, o.z, o.w])


def angle_between(a, b):
    """The rotation angle (rad) between two unit quaternions."""
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(a, b)))))


def rotation_matrix(quat):
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def start_interaction(ros, msg, what='interaction control'):
    """Publish msg once (-r 0) and wait until the robot reports it in force; the robot time
    then and the hand's mean position over the 0.3 s before it was published (where the
    reference is: a force axis moves the hand at once)."""
    t0 = now()                             # (what came before may be a teleport's)
    ros['endpoint'].wait_until(t0 + 0.3)
    before = mean_position(ros, t0, t0 + 0.3)
    ros['pub'].publish(msg)
    ros['realtime'].wait(lambda m: m.controller == 'interaction', 10.0, what)
    t = now() + 0.5                        # the 50 ms parameter filter has landed
    ros['endpoint'].wait_until(t)
    return t, before


def trace(ros, t0, t1, start, axis, step=0.5):
    """The hand's displacement on one axis every `step` s from t0 to t1 (mm), for a failure's
    message."""
    out = []
    for m in ros['endpoint'].between(t0, t1):
        if not out or stamp(m) - out[-1][0] >= step:
            out.append((stamp(m), position(m)[axis] - start[axis]))
    return ', '.join('%+.1f s %.1f' % (ts - t0, 1000 * d) for ts, d in out)


def displacement_under_push(ros, force, hold=2.2):
    """Push the hand with `force` (N, base axes) and return its mean displacement over the
    last 0.25 s of the push, from where it was before."""
    t0 = now()
    start = mean_position(ros, t0 - 0.3, t0)
    t_end = push(ros, tuple(force) + (0, 0, 0), hold=hold)
    ros['endpoint'].wait_until(t_end)
    return mean_position(ros, t_end - 0.3, t_end - 0.05) - start, t_end, start


def test_force_limited_impedance_presses_a_table_no_harder_than_its_limit(fresh):
    """IMPEDANCE_WITH_FORCE_LIMIT_MODE on z (1300 N/m, limit 8 N): a motion with these
    interaction options to 5 cm below the start, 3.5 cm into a table. The spring alone would
    press 45 N; the hand holds the table with its 8 N limit (±10 %), no more. (The impact of
    the hand landing on the table is not part of the held force: endpoint_state's wrench,
    from measured torques, carries the landing's inertial torques too.)"""
    import rospy
    from intera_rt.model import RobotModel
    ros = fresh
    jac = RobotModel.from_file().arm_dynamics.tip('right_hand', NEUTRAL)[2]
    target = NEUTRAL + np.linalg.pinv(jac) @ np.array([0, 0, -0.05, 0, 0, 0])
    table_below(ros)
    g = goal([waypoint(NEUTRAL, ratio=0.1), waypoint(target, ratio=0.1)])
    opts = g.trajectory.trajectory_options
    opts.interaction_control = True
    opts.interaction_params = options(K=(1300.0,) * 3 + (30.0,) * 3, max_impedance=(False,) * 6,
                                      mode=(1, 1, 3, 1, 1, 1), force=(0, 0, 8.0, 0, 0, 0))
    ros['mc'].send_goal(g)
    assert ros['mc'].wait_for_result(rospy.Duration(40.0)), 'no motion result'
    t = now()
    ros['endpoint'].wait_until(t + 0.5)
    pressed = [m.wrench.force.z for m in ros['endpoint'].between(t + 0.2, t + 0.5)]
    assert np.mean(pressed) == pytest.approx(-8.0, rel=0.10), np.mean(pressed)
    assert min(pressed) >= -8.0 * 1.10, 'held %.1f N with a limit of 8 N' % -min(pressed)
    assert ros['mc'].get_result().result is True, ros['mc'].get_result().errorId


def test_motion_limited_force_stops_at_its_wall(fresh):
    """FORCE_WITH_MOTION_LIMIT_MODE on z, force −30 N, in free space: the hand is driven down
    and stops at the wall 0.12 m below where it started, no further than the wall's give
    (30 N / 10⁴ N/m = 3 mm) beyond it; x and y (impedance) hold."""
    ros = fresh
    t, start = start_interaction(ros, options(mode=(1, 1, 4, 1, 1, 1), force=(0, 0, -30.0, 0, 0, 0)))
    ros['endpoint'].wait_until(t + 5.0)
    msgs = ros['endpoint'].between(t, t + 5.0)
    dz = np.array([position(m)[2] - start[2] for m in msgs])
    assert dz.min() >= -(MOTION_BOUND + 30.0 / WALL_STIFFNESS + 0.002), \
        'the hand went %.4f m down, past the 0.12 m wall' % -dz.min()
    settled = mean_position(ros, t + 4.5, t + 5.0) - start
    assert settled[2] == pytest.approx(-MOTION_BOUND - 30.0 / WALL_STIFFNESS, abs=0.003), \
        'settled at %s; z each 0.5 s: %s' % (settled, trace(ros, t - 0.5, t + 5.0, start, 2))
    assert np.abs(settled[:2]).max() < 0.005, settled


def test_constrained_zero_g_moves_freely_on_its_free_axes_and_stays_where_let_go(fresh):
    """Constrained zero-G (set_interaction_options.py -z -fa 1 0 0 0 0 0 style: zero
    stiffness on x, max_impedance on the rest): a 5 N push along x carries the hand several
    centimetres and it stays there when let go; the same push along y barely moves it."""
    ros = fresh
    free = options(K=(0.0,) * 6, max_impedance=(False, True, True, True, True, True))
    start_interaction(ros, free)
    moved_y, _, _ = displacement_under_push(ros, (0, 5.0, 0), hold=1.0)
    assert np.abs(moved_y).max() < 5.0 / K_CAP * 1.1, 'y is held by max_impedance: %s' % moved_y
    ros['endpoint'].wait_until(now() + 1.0)
    moved_x, t_end, start = displacement_under_push(ros, (5.0, 0, 0), hold=1.0)
    assert moved_x[0] > 0.03, 'the free axis did not give way: %s' % moved_x
    ros['endpoint'].wait_until(t_end + 2.0)
    later = mean_position(ros, t_end + 1.7, t_end + 2.0) - start
    assert later[0] >= moved_x[0] - 0.005, 'the hand sprang back: %.4f then %.4f' % (moved_x[0], later[0])


def test_the_rotational_wall_stops_a_free_rotation_at_82_5_degrees(fresh):
    """Rotations free (zero stiffness, damping 2 N·m·s/rad, rotations_for_constrained_zeroG
    false), translations stiff: a 0.6 N·m twist about base z (the hand's axis at neutral)
    turns the hand at a person's pace (~0.3 rad/s) until the 82.5° wall (300 N·m/rad: 0.1° of
    give at 0.6 N·m) stops it; the hand never turns past the wall, and meeting the wall is
    not taken for a collision."""
    from geometry_msgs.msg import Vector3, Wrench
    ros = fresh
    msg = options(K=(K_CAP,) * 3 + (0.0,) * 3, max_impedance=(False,) * 6)
    msg.D_impedance = [8 * math.sqrt(K_CAP)] * 3 + [2.0] * 3
    start_interaction(ros, msg)
    q0 = orientation(ros['endpoint'].last())
    t_push = now()
    # about base z: right_j6 turns down from 3.32 rad, away from its limit
    resp = ros['apply_wrench']('right_hand', Wrench(force=Vector3(0, 0, 0), torque=Vector3(0, 0, 0.6)), 7.0)
    assert resp.success, resp.message
    ros['endpoint'].wait_until(t_push + 7.0)
    angles = [angle_between(q0, orientation(m)) for m in ros['endpoint'].between(t_push, t_push + 7.0)]
    bound = ROTATION_WALL + 0.6 / ROTATION_WALL_STIFFNESS
    assert max(angles) > ROTATION_WALL - math.radians(3.0), \
        'the twist turned the hand only %.1f°' % math.degrees(max(angles))
    assert max(angles) <= bound + math.radians(1.0), \
        'the hand turned %.2f°, past the 82.5° wall' % math.degrees(max(angles))
    hits = [stamp(m) - t_push for m in ros['realtime'].between(t_push, t_push + 7.0) if m.collision]
    assert not hits, 'the wall was detected as a collision %.2f s into the twist' % hits[0]


def test_max_impedance_is_stiffer_than_the_stiffness_cap(fresh):
    """max_impedance on every axis: the robot reports the stiffness it renders (≥ the
    1300 N/m cap) and a 20 N push along x displaces the hand by F/K of that stiffness
    (±10 %), less than the cap would allow."""
    ros = fresh
    start_interaction(ros, options(max_impedance=(True,) * 6))
    k = ros['state'].last().K_impedance[0]
    assert k >= K_CAP, k
    moved, _, _ = displacement_under_push(ros, (20.0, 0, 0))
    assert moved[0] == pytest.approx(20.0 / k, rel=0.10), (moved, k)
    assert moved[0] < 20.0 / K_CAP


def test_an_interaction_frame_turned_in_base_sets_the_soft_axis(fresh):
    """interaction_frame rotated 90° about base z, K (300, 1300, 1300): the frame's soft x is
    base y, so a 15 N push along base y moves the hand F/300 (±10 %) and one along base x
    F/1300 (±10 %)."""
    ros = fresh
    msg = options(K=(300.0, K_CAP, K_CAP, 30.0, 30.0, 30.0), max_impedance=(False,) * 6)
    msg.interaction_frame.orientation.z = msg.interaction_frame.orientation.w = math.sqrt(0.5)
    start_interaction(ros, msg)
    moved_y, t_end, _ = displacement_under_push(ros, (0, 15.0, 0))
    assert moved_y[1] == pytest.approx(15.0 / 300.0, rel=0.10), moved_y
    ros['endpoint'].wait_until(t_end + 2.0)
    moved_x, _, _ = displacement_under_push(ros, (15.0, 0, 0))
    assert moved_x[0] == pytest.approx(15.0 / K_CAP, rel=0.10), moved_x


def test_in_endpoint_frame_sets_the_axes_from_the_hand(fresh):
    """in_endpoint_frame with the identity frame, K (1300, 1300, 300, ...): the soft axis is
    the hand's own z (pointing down at neutral); a 15 N push along it moves the hand F/300
    (±10 %) along it, and the robot reports the frame as the endpoint's."""
    ros = fresh
    msg = options(K=(K_CAP, K_CAP, 300.0, 30.0, 30.0, 30.0), max_impedance=(False,) * 6)
    msg.in_endpoint_frame = True
    start_interaction(ros, msg)
    assert ros['state'].last().in_endpoint_frame
    z_hand = rotation_matrix(orientation(ros['endpoint'].last()))[:, 2]
    moved, _, _ = displacement_under_push(ros, 15.0 * z_hand)
    assert float(moved @ z_hand) == pytest.approx(15.0 / 300.0, rel=0.10), moved
    assert np.linalg.norm(moved - (moved @ z_hand) * z_hand) < 0.005, moved


def _peak_speed_under_push(ros, msg, force=5.0, seconds=0.3):
    """The hand's peak speed along x under a `force` N push for `seconds`, in force mode."""
    from geometry_msgs.msg import Vector3, Wrench
    start_interaction(ros, msg)
    t0 = now()
    resp = ros['apply_wrench']('right_hand', Wrench(force=Vector3(force, 0, 0), torque=Vector3(0, 0, 0)), seconds)
    assert resp.success, resp.message
    ros['endpoint'].wait_until(t0 + seconds + 0.2)
    return max(abs(m.twist.linear.x) for m in ros['endpoint'].between(t0, t0 + seconds + 0.2))


def test_disable_damping_in_force_control_leaves_a_force_axis_undamped(fresh):
    """FORCE_MODE on x with no force: damped (the default 8·√1300 N·s/m), a 5 N push moves
    the hand no faster than F/D; with disable_damping_in_force_control the same push moves it
    faster than that, and the robot reports D 0 on that axis."""
    ros = fresh
    damped = options(mode=(2, 1, 1, 1, 1, 1), max_impedance=(False,) * 6)
    d = 8.0 * math.sqrt(K_CAP)
    slow = _peak_speed_under_push(ros, damped)
    assert slow <= 5.0 / d * 1.10, 'damped force axis moved at %.3f m/s' % slow
    ros['pub'].publish(options(active=False))
    ros['realtime'].wait(lambda m: m.controller == 'hold', 10.0, 'hold')
    free = options(mode=(2, 1, 1, 1, 1, 1), max_impedance=(False,) * 6)
    free.disable_damping_in_force_control = True
    fast = _peak_speed_under_push(ros, free)
    assert ros['state'].last().D_impedance[0] == 0.0
    assert fast > 2.0 * 5.0 / d, 'undamped force axis moved at only %.3f m/s (damped %.3f)' % (fast, slow)


def test_disable_reference_resetting_keeps_the_reference_through_a_parameter_change(fresh):
    """While a 20 N push holds the hand 40 mm off at 500 N/m, new gains (800 N/m) arrive:
    with disable_reference_resetting the hand comes back to where it started when let go;
    without it the reference moves to where the hand was, and the hand stays off."""
    ros = fresh

    def change_gains_while_pushed(keep_reference):
        t, start = start_interaction(ros, options(K=(500.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6))
        t_end = push(ros, (20.0, 0, 0, 0, 0, 0), hold=2.0)
        ros['endpoint'].wait_until(t_end - 0.5)
        new = options(K=(800.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6)
        new.disable_reference_resetting = keep_reference
        ros['pub'].publish(new)
        ros['state'].wait(lambda m: m.K_impedance[0] == 800.0, 5.0, 'the new gains')
        ros['endpoint'].wait_until(t_end + 2.5)
        return (mean_position(ros, t_end + 2.2, t_end + 2.5) - start,
                trace(ros, t_end - 2.5, t_end + 2.5, start, 0))

    back, seen = change_gains_while_pushed(True)
    assert np.abs(back).max() < 0.003, 'the hand did not come back to its reference: %s; x: %s' % (back, seen)
    ros['pub'].publish(options(active=False))
    ros['realtime'].wait(lambda m: m.controller == 'hold', 10.0, 'hold')
    stayed, seen = change_gains_while_pushed(False)
    assert stayed[0] > 0.02, 'a reset reference should keep the hand where it was pushed: %s; x: %s' % (stayed, seen)
