"""The joint trajectory core without ROS: goal validation and its result codes, the spline
chosen by what the points carry, sampling continuity, stop ramps and the tolerance checks."""
import math

import numpy as np
import pytest

from contract import ARM, NEUTRAL
from intera_rt import joint_trajectory as jt
from intera_rt.joint_trajectory import GoalError, JointTol, Point, State

# Sawyer limits (robot_contract §9.2)
LIMITS = jt.Limits(ARM, [-3.0503, -3.8095, -3.0426, -3.0439, -2.9761, -2.9761, -4.7124],
                   [3.0503, 2.2736, 3.0426, 3.0439, 2.9761, 2.9761, 4.7124],
                   [1.74, 1.328, 1.957, 1.957, 3.485, 3.485, 4.545], [10, 8, 10, 10, 12, 12, 12])
NOW = 1000.0


def plan(points, names=ARM, current=None, stamp=0.0, now=NOW, **kw):
    return jt.plan_goal(names, points, limits=LIMITS, now=now, stamp=stamp,
                        current=current or State(NEUTRAL), defaults=jt.Tolerances.uniform(7), **kw)


def refused(points, code, *words, **kw):
    with pytest.raises(GoalError) as info:
        plan(points, **kw)
    assert info.value.code == code, info.value.message
    for w in words:
        assert w in info.value.message, info.value.message
    return info.value.message


def minjerk(start, goal, duration):
    """A smooth analytic motion (p, v, a at t) to sample 'planner' points from."""
    d = np.asarray(goal) - np.asarray(start)

    def f(t):
        s = min(max(t / duration, 0.0), 1.0)
        return (start + d * (10 * s**3 - 15 * s**4 + 6 * s**5),
                d * (30 * s**2 - 60 * s**3 + 30 * s**4) / duration,
                d * (60 * s - 180 * s**2 + 120 * s**3) / duration**2)
    return f


def moveit_points(f, times, carry='pva'):
    pts = []
    for t in times:
        p, v, a = f(t)
        pts.append(Point(t, list(p), list(v) if 'v' in carry else [], list(a) if 'a' in carry else []))
    return pts


TARGET = NEUTRAL + np.array([0.5, 0.3, -0.4, -0.5, 0.6, 0.4, -0.8])
TIMES = [0.0, 0.2, 0.45, 0.8, 1.1, 1.5, 1.8, 2.2, 2.5, 2.75, 3.0]


def sdk_client_points(p1=NEUTRAL):
    """joint_trajectory_client's goal: positions only, 8 points over 19 s."""
    p1 = np.asarray(p1)
    scale = [(0.0, 1.0), (1.0, 1.0), (4.0, 0.6), (7.0, 0.3), (10.0, 0.6), (13.0, 0.3),
             (16.0, 0.6), (19.0, 1.0)]
    return [Point(t, list(p1 * s)) for t, s in scale]


# --- validation: result codes and messages ------------------------------------------------
def test_invalid_joint_names():
    pts = [Point(1.0, list(NEUTRAL))]
    refused(pts, jt.INVALID_JOINTS, 'empty', names=[])
    refused(pts, jt.INVALID_JOINTS, "joint_names[2] 'right_e0'", names=ARM[:2] + ['right_e0'] + ARM[3:])
    refused(pts, jt.INVALID_JOINTS, "'right_j1' appears twice", names=ARM[:6] + ['right_j1'])
    refused(pts, jt.INVALID_JOINTS, "path_tolerance[0].name 'elbow'",
            path_tolerance=[JointTol('elbow', 0.1)])


def test_invalid_points():
    refused([], jt.INVALID_GOAL, 'points is empty')
    refused([Point(1.0, list(NEUTRAL)), Point(1.0, list(NEUTRAL))], jt.INVALID_GOAL,
            'points[1].time_from_start', 'strictly increase')
    refused([Point(2.0, list(NEUTRAL)), Point(1.0, list(NEUTRAL))], jt.INVALID_GOAL, 'points[1]')
    refused([Point(-1.0, list(NEUTRAL))], jt.INVALID_GOAL, 'points[0].time_from_start is -1.0')
    refused([Point(1.0, list(NEUTRAL[:6]))], jt.INVALID_GOAL, 'points[0].positions has 6 values for 7')
    refused([Point(1.0, list(NEUTRAL), [0.0] * 3)], jt.INVALID_GOAL, 'velocities has 3 values')
    refused([Point(1.0, list(NEUTRAL), [], [0.0] * 7)], jt.INVALID_GOAL, 'accelerations but no velocities')
    bad = list(NEUTRAL)
    bad[3] = math.nan
    refused([Point(1.0, bad)], jt.INVALID_GOAL, 'positions[3] for right_j3 is nan')
    refused([Point(1.0, list(NEUTRAL), [0.0] * 6 + [math.inf])], jt.INVALID_GOAL,
            'velocities[6] for right_j6 is inf')
    bad = list(NEUTRAL)
    bad[1] = 2.5
    refused([Point(1.0, bad)], jt.INVALID_GOAL, 'positions[1] = 2.5000 for right_j1', '2.2736')


def test_invalid_tolerances():
    pts = [Point(1.0, list(NEUTRAL))]
    refused(pts, jt.INVALID_GOAL, 'goal_tolerance[0].position for right_j0 is nan',
            goal_tolerance=[JointTol('right_j0', math.nan)])
    refused(pts, jt.INVALID_GOAL, 'goal_time_tolerance', goal_time_tolerance=-1.0)


def test_old_header_timestamp():
    pts = [Point(0.5, list(NEUTRAL)), Point(1.0, list(NEUTRAL))]
    refused(pts, jt.OLD_HEADER_TIMESTAMP, 'ended 9.000 s ago', stamp=NOW - 10.0)
    # partly over: the points still ahead are kept and reached from the current state
    p = plan([Point(0.5, list(NEUTRAL)), Point(2.0, list(TARGET))], stamp=NOW - 1.0)
    assert p.trajectory.knot_times == pytest.approx([NOW, NOW + 1.0])
    assert p.trajectory.sample(NOW + 1.0)[0] == pytest.approx(TARGET)


def test_first_point_far_away_is_refused_only_when_due_now():
    far = NEUTRAL + np.array([0, 0, 0, 0.5, 0, 0, 0])
    msg = refused([Point(0.0, list(far)), Point(1.0, list(far))], jt.INVALID_GOAL,
                  'right_j3', '0.5000 rad from the current position', 'time_from_start > 0')
    assert 'start tolerance 0.200' in msg
    # a stamp a few ms in the past (the SDK client stamps its goal with now) counts as now
    refused([Point(0.0, list(far)), Point(1.0, list(far))], jt.INVALID_GOAL, 'right_j3',
            stamp=NOW - 0.004)
    # the goal's own path tolerance is the start tolerance
    refused([Point(0.0, list(NEUTRAL + 0.05)), Point(1.0, list(NEUTRAL))], jt.INVALID_GOAL,
            'start tolerance 0.010', path_tolerance=[JointTol(n, 0.01) for n in ARM])
    # close enough: accepted, and the path starts exactly at the arm
    p = plan([Point(0.0, list(NEUTRAL + 0.01)), Point(1.0, list(TARGET))])
    assert p.trajectory.sample(NOW)[0] == pytest.approx(NEUTRAL)
    # time_from_start > 0: the arm moves there from where it is
    p = plan([Point(2.0, list(far))])
    assert p.trajectory.sample(NOW)[0] == pytest.approx(NEUTRAL)
    assert p.trajectory.sample(NOW + 2.0)[0] == pytest.approx(far)


def test_path_beyond_limits_or_too_fast_is_refused():
    near = NEUTRAL.copy()
    near[1] = 2.26                                     # 14 mrad below right_j1's upper limit
    v = [0.0] * 7
    v[1] = 1.0                                         # and still rising there: overshoots
    refused([Point(1.0, list(near), v), Point(2.0, list(near), [0.0] * 7)], jt.INVALID_GOAL,
            'interpolated path of right_j1', 'outside its limits')
    refused([Point(0.1, list(TARGET))], jt.INVALID_GOAL, 'rad/s on right_j0', 'velocity limit 1.740')


def test_error_codes_are_control_msgs_values():
    from_msg = {'SUCCESSFUL': 0, 'INVALID_GOAL': -1, 'INVALID_JOINTS': -2,
                'OLD_HEADER_TIMESTAMP': -3, 'PATH_TOLERANCE_VIOLATED': -4,
                'GOAL_TOLERANCE_VIOLATED': -5}
    for name, value in from_msg.items():
        assert getattr(jt, name) == value and jt.CODE_NAMES[value] == name


# --- spline choice -----------------------------------------------------------------------------
def test_spline_kind_follows_what_points_carry():
    f = minjerk(NEUTRAL, TARGET, 3.0)
    assert set(plan(moveit_points(f, TIMES, 'pva')).kinds) == {'quintic'}
    assert set(plan(moveit_points(f, TIMES, 'pv')).kinds) == {'cubic'}
    assert set(plan(moveit_points(f, TIMES, 'p')).kinds) == {'smooth'}
    mixed = moveit_points(f, TIMES[:4], 'pva') + moveit_points(f, TIMES[4:7], 'pv') + \
        moveit_points(f, TIMES[7:], 'p')
    # the first point is due now: the current state replaces it as the first knot
    assert plan(mixed).kinds == ['quintic'] * 3 + ['cubic'] * 3 + ['smooth'] * 4


def test_quintic_reproduces_pva_and_cubic_reproduces_pv_exactly():
    f = minjerk(NEUTRAL, TARGET, 3.0)
    quintic = plan(moveit_points(f, TIMES, 'pva')).trajectory
    for t in np.linspace(0, 3, 301):
        p, v, a = quintic.sample(NOW + t)
        fp, fv, fa = f(t)
        assert p == pytest.approx(fp, abs=1e-9) and v == pytest.approx(fv, abs=1e-8)
        assert a == pytest.approx(fa, abs=1e-7)

    def cubic_f(t):                                    # a cubic motion: cubic Hermite is exact
        d = TARGET - NEUTRAL
        return NEUTRAL + d * (t / 3) ** 2 * (3 - 2 * t / 3), d * 6 * t / 9 * (1 - t / 3), None
    pts = [Point(t, list(cubic_f(t)[0]), list(cubic_f(t)[1])) for t in TIMES]
    cubic = plan(pts).trajectory
    for t in np.linspace(0, 3, 301):
        assert cubic.sample(NOW + t)[0] == pytest.approx(cubic_f(t)[0], abs=1e-9)


def _continuity(traj, times, eps=1e-7):
    for t in times:
        before, after = traj.sample(t - eps), traj.sample(t + eps)
        for k in range(3):
            assert after[k] == pytest.approx(before[k], abs=1e-4 if k < 2 else 2e-3), (t, k)


def test_position_only_points_smooth_profile():
    """The SDK client's goal: positions only. Passes every point; at rest at both ends;
    interior points crossed at speed where the motion goes on the same way, and never
    overshot; position, velocity and acceleration continuous."""
    pts = sdk_client_points()
    p = plan(pts, stamp=NOW - 0.004)                   # stamped by the client just before
    traj = p.trajectory
    assert set(p.kinds) == {'smooth'}
    for pt in pts[1:]:
        assert traj.sample(p.t_start + pt.time)[0] == pytest.approx(pt.positions, abs=1e-9)
    assert traj.sample(traj.t_start)[1] == pytest.approx(np.zeros(7))
    assert traj.sample(p.t_end)[1] == pytest.approx(np.zeros(7), abs=1e-9)
    _continuity(traj, traj.knot_times[1:-1])
    # between two points each joint stays between them (no overshoot)
    for a, b in zip(pts[1:-1], pts[2:]):
        ts = np.linspace(p.t_start + a.time, p.t_start + b.time, 200)
        ps = np.array([traj.sample(t)[0] for t in ts])
        lo = np.minimum(a.positions, b.positions) - 1e-9
        hi = np.maximum(a.positions, b.positions) + 1e-9
        assert ((ps >= lo) & (ps <= hi)).all()
    # a point on a monotone stretch is passed without stopping
    mono = [Point(1.0, list(NEUTRAL + 0.2)), Point(2.0, list(NEUTRAL + 0.5)), Point(3.0, list(NEUTRAL + 0.6))]
    traj = plan(mono).trajectory
    v = traj.sample(NOW + 1.0)[1]
    assert (v > 0.1).all()
    assert traj.sample(NOW + 3.0)[1] == pytest.approx(np.zeros(7))


def test_sample_is_continuous_everywhere_and_holds_after_the_end():
    f = minjerk(NEUTRAL, TARGET, 3.0)
    for carry in ('pva', 'pv', 'p'):
        traj = plan(moveit_points(f, TIMES, carry)).trajectory
        ts = np.arange(NOW - 0.1, NOW + 3.5, 0.001)
        ps = np.array([traj.sample(t)[0] for t in ts])
        assert np.abs(np.diff(ps, axis=0)).max() < 0.01, carry   # no jumps (≤ 10 rad/s x 1 ms)
        p_end, v_end, a_end = traj.sample(NOW + 10.0)
        assert p_end == pytest.approx(TARGET, abs=1e-9) and not v_end.any() and not a_end.any()


def test_new_goal_continues_from_a_moving_state():
    """Preemption: the new spline starts at the preempted one's p, v, a."""
    cur = State(NEUTRAL + 0.1, np.full(7, 0.3), np.full(7, -0.5))
    traj = plan([Point(1.0, list(TARGET)), Point(2.0, list(TARGET + 0.1))], current=cur).trajectory
    p, v, a = traj.sample(NOW)
    assert p == pytest.approx(cur.p) and v == pytest.approx(cur.v) and a == pytest.approx(cur.a)


def test_subset_goal_brings_other_joints_to_rest_and_holds_them():
    cur = State(NEUTRAL, np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.8])
    target = [TARGET[0], TARGET[3]]
    p = plan([Point(1.5, target)], names=['right_j0', 'right_j3'], current=cur)
    assert p.goal_joints == [0, 3] and p.joint_names == ['right_j0', 'right_j3']
    traj = p.trajectory
    end = traj.sample(NOW + 1.5)
    assert end[0][[0, 3]] == pytest.approx(target)
    assert end[0][[1, 2, 4, 5]] == pytest.approx(NEUTRAL[[1, 2, 4, 5]])
    assert traj.sample(NOW)[1][6] == pytest.approx(0.8)            # no velocity jump
    vs = np.array([traj.sample(NOW + t)[1][6] for t in np.linspace(0, 1.5, 151)])
    assert (vs >= -1e-9).all() and vs[-1] == pytest.approx(0.0)    # slows to rest, no reversal
    assert traj.sample(NOW + 5.0)[0][6] == pytest.approx(end[0][6])


def test_stamp_in_the_future_waits_at_the_current_state():
    p = plan([Point(0.0, list(NEUTRAL)), Point(1.0, list(TARGET))], stamp=NOW + 2.0)
    assert p.t_start == NOW + 2.0
    assert p.trajectory.sample(NOW + 1.0)[0] == pytest.approx(NEUTRAL)
    assert p.trajectory.sample(NOW + 3.0)[0] == pytest.approx(TARGET)


# --- stop ramp ---------------------------------------------------------------------------------
def test_stop_trajectory_decelerates_smoothly_to_rest():
    v0 = np.array([1.0, -0.8, 1.5, -1.2, 2.0, -2.5, 3.0])
    a0 = np.array([0.5, 0.0, -0.5, 0.0, 1.0, 0.0, 0.0])
    start = State(NEUTRAL, v0, a0)
    traj = jt.stop_trajectory(NOW, start, LIMITS)
    p, v, a = traj.sample(NOW)
    assert p == pytest.approx(NEUTRAL) and v == pytest.approx(v0) and a == pytest.approx(a0)
    ts = np.linspace(NOW, traj.t_end, 400)
    vs = np.array([traj.sample(t)[1] for t in ts])
    acc = np.array([traj.sample(t)[2] for t in ts])
    assert (vs * np.sign(v0) >= -1e-9).all()                        # never reverses
    assert (np.abs(acc) <= 0.5 * LIMITS.accel + np.abs(a0) + 1e-6).all()
    p_end, v_end, a_end = traj.sample(traj.t_end + 1.0)
    assert not v_end.any() and not a_end.any()
    # one common time, set by the joint that needs longest at half its acceleration limit
    duration = traj.t_end - NOW
    assert duration == pytest.approx(np.max(1.5 * np.abs(v0) / (0.5 * LIMITS.accel)))
    assert p_end == pytest.approx(NEUTRAL + v0 * duration / 2 + a0 * duration**2 / 12)
    # at rest already: a short ramp that does not move
    still = jt.stop_trajectory(NOW, State(NEUTRAL), LIMITS)
    assert still.t_end - NOW == pytest.approx(jt.MIN_STOP_TIME)
    assert still.sample(still.t_end)[0] == pytest.approx(NEUTRAL)


# --- tolerances ----------------------------------------------------------------------------
def test_tolerance_semantics():
    d = jt.Tolerances.uniform(7, path=0.2, goal=0.0, stopped_velocity=0.25, goal_time=0.1)
    assert (d.path_position == 0.2).all() and np.isinf(d.goal_position).all()
    t = jt.resolve_tolerances(d, ARM, [JointTol('right_j1', 0.05), JointTol('right_j2', -1.0),
                                       JointTol('right_j3', 0.0)],
                              [JointTol('right_j4', 0.01, 0.1)], 0.5)
    assert t.path_position[1] == 0.05 and math.isinf(t.path_position[2]) and t.path_position[3] == 0.2
    assert t.goal_position[4] == 0.01 and t.goal_velocity[4] == 0.1 and t.goal_velocity[0] == 0.25
    assert t.goal_time == 0.5
    assert jt.resolve_tolerances(d, ARM, (), (), 0.0).goal_time == 0.1


def _monitored(**kw):
    f = minjerk(NEUTRAL, TARGET, 3.0)
    p = plan(moveit_points(f, TIMES, 'pva'), **kw)
    return p, jt.GoalMonitor(p)


def test_path_tolerance_violation_names_the_joint():
    p, mon = _monitored()
    q, _, _ = p.trajectory.sample(NOW + 1.0)
    assert mon.update(NOW + 1.0, q, np.zeros(7)) is None
    q = q.copy()
    q[2] += 0.25
    out = mon.update(NOW + 1.0, q, np.zeros(7))
    assert out.code == jt.PATH_TOLERANCE_VIOLATED
    assert 'right_j2 is 0.2500 rad from its desired position' in out.message
    assert 'path tolerance 0.2000' in out.message
    # disabled per joint by the goal: no violation
    p, mon = _monitored(path_tolerance=[JointTol('right_j2', -1.0)])
    assert mon.update(NOW + 1.0, q, np.zeros(7)) is None


def test_goal_success_goal_tolerance_and_goal_time():
    p, mon = _monitored(goal_tolerance=[JointTol(n, 0.01) for n in ARM], goal_time_tolerance=0.5)
    end = p.trajectory.end_positions()
    assert mon.update(NOW + 2.9, end, np.zeros(7)) is None          # still running
    off = end + np.r_[0.02, np.zeros(6)]
    assert mon.update(NOW + 3.2, off, np.zeros(7)) is None          # within goal_time: wait
    out = mon.update(NOW + 3.6, off, np.zeros(7))
    assert out.code == jt.GOAL_TOLERANCE_VIOLATED
    assert 'right_j0 is 0.0200 rad from its goal position' in out.message and 'goal_time' in out.message
    assert mon.update(NOW + 3.2, end + 0.005, np.zeros(7)).succeeded


def test_stopped_velocity_tolerance():
    p, mon = _monitored()
    end = p.trajectory.end_positions()
    moving = np.r_[np.zeros(5), 0.3, 0.0]
    assert mon.update(NOW + 3.05, end, moving) is None
    out = mon.update(NOW + 3.2, end, moving)
    assert out.code == jt.GOAL_TOLERANCE_VIOLATED and 'right_j5 still moves at 0.3000 rad/s' in out.message
    assert mon.update(NOW + 3.05, end, moving * 0.5).succeeded


def test_hermite_coefficients_meet_their_end_conditions():
    h, p0, v0, a0, p1, v1, a1 = 0.7, 0.2, -0.5, 3.0, 1.1, 0.4, -2.0
    c = jt.quintic_coeffs(h, p0, v0, a0, p1, v1, a1)
    poly = np.polynomial.Polynomial(c)
    assert [poly(0), poly.deriv()(0), poly.deriv(2)(0)] == pytest.approx([p0, v0, a0])
    assert [poly(h), poly.deriv()(h), poly.deriv(2)(h)] == pytest.approx([p1, v1, a1])
    c = jt.cubic_coeffs(h, p0, v0, p1, v1)
    poly = np.polynomial.Polynomial(c)
    assert c[4] == c[5] == 0.0
    assert [poly(0), poly.deriv()(0), poly(h), poly.deriv()(h)] == pytest.approx([p0, v0, p1, v1])


# --- compliant execution: the force threshold, ~state and ~query_state ----------------------
def test_force_threshold_names_the_threshold_and_the_force_seen():
    assert jt.force_exceeded((10.0, 0.0, 0.0), 15.0, 1.0) is None
    assert jt.force_exceeded(None, 15.0, 1.0) is None              # no endpoint_state yet
    assert jt.force_exceeded((1e3, 0, 0), math.inf, 1.0) is None   # no threshold
    out = jt.force_exceeded((12.0, -9.0, 0.0), 14.0, 2.5)           # |F| 15 N
    assert out.code == jt.PATH_TOLERANCE_VIOLATED
    assert out.message.startswith(jt.FORCE_THRESHOLD_TEXT)
    for words in ('15.0 N at the endpoint', 'force_threshold 14.0 N', '2.500 s'):
        assert words in out.message, out.message


def test_controller_state_is_the_spline_at_the_measurement_and_its_error():
    goal = NEUTRAL + np.array([0.3, -0.2, 0, 0.1, 0, 0, 0])
    traj = plan([Point(2.0, list(goal))]).trajectory
    q = NEUTRAL + 0.01
    qd = np.full(7, 0.02)
    s = jt.controller_state(traj, NOW + 0.7, q, qd)
    p, v, a = traj.sample(NOW + 0.7)
    assert np.array_equal(s.desired[0], p) and np.array_equal(s.desired[1], v)
    assert np.array_equal(s.desired[2], a)
    assert np.allclose(s.error[0], p - q) and np.allclose(s.error[1], v - qd)
    assert np.array_equal(s.actual[0], q)


def test_query_samples_the_spline_refuses_a_time_before_it_and_holds_after_it():
    goal = NEUTRAL + np.array([0.3, -0.2, 0, 0.1, 0, 0, 0])
    mid = NEUTRAL + np.array([0.1, -0.1, 0, 0.05, 0, 0, 0])
    traj = plan([Point(1.0, list(mid)), Point(2.0, list(goal))]).trajectory
    assert np.allclose(jt.query(traj, NOW + 1.0)[0], mid)         # through its points
    p, v, a = jt.query(traj, NOW + 5.0)
    assert np.allclose(p, goal) and not v.any() and not a.any()
    with pytest.raises(ValueError, match='precedes the trajectory'):
        jt.query(traj, NOW - 0.1)
    with pytest.raises(ValueError, match='no trajectory'):
        jt.query(None, NOW)
