"""The realtime core without ROS: the state machine, the controller pipeline (joint command
modes, timeout, gravity compensation) and the embedded plant, ticked by hand with typed
commands, as the realtime process does."""
import math

import numpy as np
import pytest

from intera_rt.control import CommandRejected, EstopButton, RobotStateMachine
from intera_rt.control import commands as cmds
from intera_rt.control.arm import Arm
from intera_rt.control.joint_command import saturate
from intera_rt.control.trajectory import extrapolate
from intera_rt.model import RobotModel
from intera_rt.realtime.core import CONTROLLER_NAMES, RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

NEUTRAL = np.array(NEUTRAL)
JOINTS = list(ARM_JOINTS)
DT = 0.001


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


class Sim:
    """A realtime core ticked by hand."""

    def __init__(self, model, q=NEUTRAL):
        self.core = RealtimeCore(model, q_arm=list(q))
        self.core.tick()                            # brakes released, hold at the boot pose

    @property
    def t(self):
        return self.core.now

    @property
    def q(self):
        return StateView(self.core.state_vector()).q[:7]

    @property
    def state(self):
        """The core's state now (realtime.state.StateView)."""
        return StateView(self.core.state_vector())

    @property
    def controller(self):
        return CONTROLLER_NAMES[int(self.state.controller)]

    def command(self, mode, names, stamp=None, **arrays):
        arrays = {k: tuple(v) for k, v in arrays.items()}
        self.core.apply(cmds.JointCommand(mode=mode, names=tuple(names), stamp=stamp, **arrays))
        return self.core.take_logs()

    def run(self, seconds, each_tick=None):
        for _ in range(int(round(seconds / DT))):
            if each_tick:
                each_tick(self)
            self.core.tick()


# --- robot state machine --------------------------------------------------------------
def test_stop_reset_enable():
    s = RobotStateMachine()
    assert s.enabled and s.motion_allowed
    s.stop()
    assert s.stopped and not s.enabled and s.estop_source != 0 and s.estop_button != EstopButton.PRESSED
    assert s.set_enable(True) is not None            # refused while stopped
    assert s.reset() is None
    assert not s.stopped and not s.enabled and s.estop_source == 0 and s.estop_button == 0
    assert s.set_enable(True) is None and s.motion_allowed


def test_reset_refused_while_estop_pressed():
    s = RobotStateMachine()
    s.press_estop()
    assert s.stopped and s.estop_button == EstopButton.PRESSED and s.estop_source == 1
    assert 'E-stop' in s.reset()
    assert s.stopped
    s.release_estop()
    assert s.stopped                                 # releasing does not restart the arm
    assert s.reset() is None and not s.stopped


def test_error_stops_until_reset():
    s = RobotStateMachine()
    s.set_error(True)
    assert s.error and not s.motion_allowed
    assert s.reset() is None and not s.error


# --- position hold and modes ---------------------------------------------------------
def test_hold_under_gravity_drifts_less_than_a_milliradian(model):
    sim = Sim(model)
    sim.run(10.0)
    assert np.abs(sim.q - NEUTRAL).max() < 1e-3
    assert sim.controller == 'hold'


def test_position_mode_reaches_target_at_speed_ratio(model):
    sim = Sim(model)
    target = NEUTRAL + np.array([0.5, 0.3, -0.4, -0.3, 0.5, 0.4, -0.6])
    reached = []

    def cmd(s):
        if round(s.t / DT) % 10 == 0:
            s.command(1, JOINTS, position=target)
        if not reached and np.abs(s.q - target).max() < 0.008726646:
            reached.append(s.t)
    sim.run(8.0, cmd)
    assert reached and reached[0] < 15.0
    # speed ratio 0.3 × 1.74 rad/s on j0: 0.5 rad needs at least 0.96 s
    assert reached[0] > 0.5 / (0.3 * 1.74)


def test_partial_position_command_keeps_other_targets(model):
    sim = Sim(model)

    def both(s):
        if round(s.t / DT) % 10 == 0:
            s.command(1, ['right_j0'], position=[0.2])
            s.command(1, ['right_j3'], position=[2.0])
    sim.run(3.0, both)
    q = sim.q
    assert q[0] == pytest.approx(0.2, abs=1e-3) and q[3] == pytest.approx(2.0, abs=1e-3)
    assert q[1] == pytest.approx(NEUTRAL[1], abs=1e-3)


@pytest.mark.parametrize('gaps, spread, least', [((10,), 0.01, 0.95), ((9, 11, 20, 0), 0.3, 0.4)],
                         ids=['even', 'jittery'])
def test_a_stream_of_position_targets_is_followed_smoothly(model, gaps, spread, least):
    """Targets streamed at 100 Hz along a line (file playback, a Cartesian approach by IK)
    move the arm at the line's speed without braking to rest at each one, and it lands on
    the last: an even stream, and one as a client paced by a coarse /clock sends it (ms
    between points: 9, 11, then two in one tick after 20). Chased point by point, right_j0's
    speed swung between 0.07 and 0.13 rad/s (even: std 0.16 of the stream's speed; now
    none) and stopped (jittery: std 0.55; now 0.2). `spread`: the std allowed, `least`: the
    lowest speed, as fractions of the stream's."""
    sim = Sim(model)
    start = NEUTRAL.copy()
    t0 = round(sim.t / DT)
    sends = iter(t0 + np.cumsum(gaps * 300))
    due, last = [next(sends)], []

    def stream(s):
        k = round(s.t / DT)
        while k == due[0] and s.t <= 2.0:
            point = 0.001 * (len(last) + 1)         # rad: one step of the line per point
            last.append(start + (point, 0, 0, 0, 0, 0, -point))
            s.command(1, JOINTS, position=last[-1])
            due[0] = next(sends)
    seen = []
    sim.run(2.0, lambda s: (stream(s), seen.append((s.t, s.state.qd[0], s.state.qd[6]))))
    t, v0, v6 = np.array(seen).T
    cruise = t > 0.5
    pace = 0.001 * len(last) / (t[-1] - t[0])       # rad/s: the stream's own speed (~0.1)
    for v in (v0[cruise], -v6[cruise]):
        assert abs(v.mean() - pace) < 0.05 * pace, (v.mean(), pace)
        assert v.std() < spread * pace and v.min() > least * pace, (v.std(), v.min(), pace)
    sim.run(1.0)
    assert np.abs(sim.q - last[-1]).max() < 1e-3
    assert np.abs(sim.state.qd[:7]).max() < 1e-3


def test_timeout_exits_every_mode_to_hold_and_the_arm_comes_to_rest(model):
    arm = Arm(model)
    for mode, name, arrays in [(1, 'position', {'position': NEUTRAL + 0.3}),
                               (2, 'velocity', {'velocity': [0.2] * 7}),
                               (3, 'torque', {'effort': [0.5] * 7}),
                               (4, 'trajectory', {'position': NEUTRAL, 'velocity': [0.1] * 7,
                                                  'acceleration': [2.0] * 7})]:
        sim = Sim(model)
        sim.command(mode, JOINTS, **arrays)
        sim.run(0.1)
        assert sim.controller == name
        sim.run(0.11)
        assert sim.controller == 'hold', name
        # From its state at the timeout, the reference brakes at the acceleration limits.
        p, v = sim.state.cmd_p, sim.state.cmd_v
        stop = arm.stop_point(p, v)
        sim.run(1.5)
        assert np.abs(sim.state.cmd_v).max() == 0.0, name
        assert np.abs(sim.q - stop).max() < 0.02, name
        assert sim.state.timeouts == 1.0


@pytest.mark.parametrize('cmd,fragment', [
    (cmds.JointCommand(mode=7, names=tuple(JOINTS), position=tuple(NEUTRAL)), 'unknown mode'),
    (cmds.JointCommand(mode=1, names=('right_j9',), position=(0.0,)), 'unknown joint'),
    (cmds.JointCommand(mode=1, names=('right_j0', 'right_j0'), position=(0.0, 0.0)), 'named twice'),
    (cmds.JointCommand(mode=1, names=tuple(JOINTS), position=(0.0,) * 3), 'position has 3 values'),
    (cmds.JointCommand(mode=2, names=('right_j0',), velocity=(math.nan,)), 'nan'),
    (cmds.JointCommand(mode=1, names=('right_j0',), position=(math.inf,)), 'inf'),
    (cmds.JointCommand(mode=1, names=('right_j0',), position=(3.2,)), 'outside its limits'),
    (cmds.JointCommand(mode=4, names=('right_j0',), position=(0.0,), velocity=(math.nan,)), 'nan'),
    (cmds.JointCommand(mode=1, names=(), position=()), 'names is empty'),
])
def test_bad_commands_are_rejected_with_reason_and_no_motion(model, cmd, fragment):
    sim = Sim(model)
    sim.core.apply(cmd)
    (level, key, text), = sim.core.take_logs()
    assert level == 'error' and key.startswith('cmd-rejected:') and fragment in text.lower()
    sim.run(0.3)
    assert sim.controller == 'hold'
    assert np.abs(sim.q - NEUTRAL).max() < 1e-4


def test_unused_arrays_may_have_any_length(model):
    sim = Sim(model)
    # the SDK reuses one message: stale velocity of another length rides along
    assert sim.command(1, ['right_j0'], position=[0.1], velocity=[1.0, 2.0, 3.0]) == []
    assert sim.command(2, ['right_j0'], velocity=[0.1], position=[]) == []
    assert sim.controller == 'velocity'


def test_velocity_toward_limit_is_rejected_and_arm_holds(model):
    q = NEUTRAL.copy()
    q[0] = 3.0                                          # 0.05 rad from the j0 limit
    sim = Sim(model, q)
    (level, key, text), = sim.command(2, ['right_j0', 'right_j1'], velocity=[1.0, 0.0])
    assert key == 'cmd-rejected:velocity-limit' and 'right_j0' in text
    sim.run(0.5)
    assert sim.q[0] == pytest.approx(3.0, abs=1e-3)


def test_torque_beyond_effort_limit_saturates_and_reports(model):
    sim = Sim(model)
    (level, key, text), = sim.command(3, ['right_j6'], effort=[50.0])
    assert key == 'cmd-saturated' and 'right_j6' in text and 'saturated' in text
    sim.run(0.001)
    assert abs(sim.state.cmd_effort[6]) == pytest.approx(9.0)


def test_one_saturation_for_every_mode_names_the_joint_furthest_past_its_limit():
    lim = np.array([1.0, 2.0, 3.0])
    names = ('right_j0', 'right_j1', 'right_j2')
    warnings = []
    within = np.array([1.0, -2.0, 0.5])
    assert saturate('velocity', within, lim, names, warnings) is within and warnings == []
    assert saturate('velocity', None, lim, names, warnings) is None
    got = saturate('effort', np.array([1.5, -5.0, 3.0]), lim, names, warnings, digits=2)
    assert got.tolist() == [1.0, -2.0, 3.0]
    assert warnings == ['effort -5.00 for right_j1 saturated at 2.00']


def test_trajectory_velocities_and_accelerations_are_bounded(model):
    sim = Sim(model)
    arm = Arm(model)
    logs = sim.command(4, ['right_j0'], position=[0.0], velocity=[5.0], acceleration=[50.0])
    assert [k for _, k, _ in logs] == ['cmd-saturated'] * 2        # velocity and acceleration
    sim.run(0.15)
    v = sim.state.cmd_v
    assert abs(v[0]) <= arm.vel_limit[0] + 1e-9


def test_extrapolation_holds_velocity_at_its_cap():
    p, v, a = extrapolate(np.zeros(2), np.array([0.0, 0.5]), np.array([1.0, 0.0]), 2.0,
                          np.array([1.0, 1.0]))
    # joint 0 accelerates for 1 s to its cap (0.5 rad), then 1 s at 1 rad/s
    assert p == pytest.approx([1.5, 1.0]) and v == pytest.approx([1.0, 0.5]) and a[0] == 0.0


def test_gravity_suppression_makes_the_arm_sag(model):
    sim = Sim(model)

    def keep(s):
        s.command(3, JOINTS, effort=[0.0] * 7)
        s.core.apply(cmds.Suppress(what='gravity'))
    sim.run(0.5, keep)
    assert abs(sim.q[1] - NEUTRAL[1]) > 0.05              # shoulder falls without gravity torques
    assert sim.state.gravity_compensation.suppressed == 1.0
    assert sim.state.suppress.gravity == 1.0
    sim.run(0.25)
    assert sim.state.suppress.gravity == 0.0           # expires 0.2 s after the last message


def test_speed_ratio_is_clipped(model):
    arm = Arm(model)
    assert arm.set_speed_ratio(3.0) == 1.0
    assert arm.set_speed_ratio(-1.0) == 0.0
    with pytest.raises(CommandRejected):
        arm.set_speed_ratio(math.nan)


def test_timeout_is_clamped_to_one_second(model):
    arm = Arm(model)
    assert arm.set_timeout(5.0) == 1.0
    assert arm.set_timeout(0.02) == 0.02
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(CommandRejected) as err:
            arm.set_timeout(bad)
        assert err.value.kind == 'timeout'


def test_rejections_carry_a_kind_independent_of_the_values(model):
    sim = Sim(model)
    keys = set()
    for v in (3.2, 3.3, 3.4):
        keys |= {k for _, k, _ in sim.command(1, ['right_j0'], position=[v])}
    assert keys == {'cmd-rejected:position-limit'}


def test_joints_left_out_of_a_trajectory_command_stop(model):
    sim = Sim(model)
    v = np.zeros(7)
    v[1] = 0.2
    sim.command(4, JOINTS, position=NEUTRAL, velocity=v, acceleration=[0.0] * 7)
    sim.run(0.2)
    q1 = sim.q[1]
    sim.command(4, ['right_j0'], position=[NEUTRAL[0]])
    sim.run(0.15, lambda s: s.command(4, ['right_j0'], position=[NEUTRAL[0]]))
    # right_j1's reference stopped at once; the arm settles within a few mrad of it
    assert sim.state.cmd_v[1] == 0.0
    assert abs(sim.q[1] - q1) < 0.01


def test_joints_left_out_of_a_velocity_command_stop(model):
    sim = Sim(model)
    sim.command(2, JOINTS, velocity=[0.1] * 7)
    sim.run(0.1)
    sim.run(0.2, lambda s: s.command(2, ['right_j0'], velocity=[0.1]))
    v = sim.state.cmd_v
    assert v[1:].tolist() == [0.0] * 6
    assert v[0] == pytest.approx(0.1)


def test_trajectory_stamp_sets_the_sample_time(model):
    """A TRAJECTORY_MODE sample stamped ahead of now is extrapolated back to now; a stamp
    further than 0.1 s away is ignored."""
    sim = Sim(model)
    v = np.full(7, 0.1)
    sim.command(4, JOINTS, position=NEUTRAL, velocity=v, acceleration=[0.0] * 7, stamp=sim.t + 0.05)
    sim.run(0.001)
    assert sim.state.cmd_p == pytest.approx(NEUTRAL - 0.005)
    sim.command(4, JOINTS, position=NEUTRAL, velocity=v, acceleration=[0.0] * 7, stamp=sim.t + 5.0)
    sim.run(0.001)
    assert sim.state.cmd_p == pytest.approx(NEUTRAL)


def test_trajectory_extrapolated_into_a_limit_stops_there(model):
    q = NEUTRAL.copy()
    q[0] = 3.0
    sim = Sim(model, q)
    sim.command(4, ['right_j0'], position=[3.0], velocity=[0.5])
    sim.run(0.15)
    assert sim.state.cmd_p[0] == pytest.approx(model.limit_arrays(['right_j0'])['upper'][0])
    assert sim.state.cmd_v[0] == 0.0


def test_an_unknown_command_type_is_refused(model):
    sim = Sim(model)
    with pytest.raises(TypeError):
        sim.core.apply(('call', 'joint_command'))


def test_controllers_hand_over_without_a_jump(model):
    """Position → velocity → trajectory → position: the reference never jumps (it moves at
    most a velocity limit's worth per tick) while the modes change mid-motion."""
    sim = Sim(model)
    arm = Arm(model)
    steps = [(1, {'position': NEUTRAL + 0.4}), (2, {'velocity': [0.3] * 7}),
             (4, {'position': NEUTRAL + 0.05}), (1, {'position': NEUTRAL})]
    prev = sim.state.cmd_p
    for mode, arrays in steps:
        for _ in range(150):
            sim.command(mode, JOINTS, **arrays)
            sim.run(0.001)
            p = sim.state.cmd_p
            if mode != 4:              # a trajectory sample is where the client puts it
                assert np.all(np.abs(p - prev) <= arm.vel_limit * DT * 1.01)
            prev = p


# --- zero-G --------------------------------------------------------------------------------
def _grasp(sim, on=True):
    sim.core.apply(cmds.CuffInput(source='cuff', pressed=on))


def test_zero_g_lets_a_wrench_move_the_arm_and_holds_where_it_is_let_go(model):
    sim = Sim(model)
    sim.command(1, JOINTS, position=NEUTRAL)          # position mode in use before
    _grasp(sim)
    sim.run(0.01)
    assert sim.controller == 'zero_g'
    assert sim.core.apply(cmds.SimWrench(link='right_hand', wrench=(0.0, 15.0, 0.0, 0.0, 0.0, 0.0),
                                         duration=0.5))[0]
    sim.run(0.5)
    moved = sim.q - NEUTRAL
    assert np.abs(moved).max() > 0.05                 # a push of 15 N moves the free arm
    _grasp(sim, False)
    sim.run(0.002)
    let_go = sim.q.copy()
    assert sim.controller == 'position'               # back to the controller in use before
    sim.run(1.0)
    assert np.abs(sim.q - let_go).max() < 0.02        # holding where it was let go, not back at NEUTRAL
    assert any('zero-G ended: back to position' in text for _, _, text in sim.core.take_logs())


def test_the_same_push_barely_moves_the_arm_without_zero_g(model):
    sim = Sim(model)
    sim.core.apply(cmds.SimWrench(link='right_hand', wrench=(0.0, 15.0, 0.0, 0.0, 0.0, 0.0),
                                  duration=0.5))
    sim.run(0.5)
    assert np.abs(sim.q - NEUTRAL).max() < 0.02


def test_zero_g_refuses_joint_commands_and_suppression_blocks_it(model):
    sim = Sim(model)
    _grasp(sim)
    sim.run(0.01)
    logs = sim.command(1, ['right_j0'], position=[0.5])
    assert ('warn', 'cmd-ignored', 'joint_command ignored: zero-G is active (cuff held)') in logs
    # suppress_cuff_interaction at ≥ 5 Hz: the grasp does nothing, and the arm holds
    sim.run(0.5, lambda s: s.core.apply(cmds.Suppress(what='cuff_interaction'))
            if round(s.t / DT) % 100 == 0 else None)
    assert sim.controller == 'hold'
    assert sim.state.cuff == 1.0 and sim.state.suppress.cuff_interaction == 1.0
    # 0.2 s after the last suppress message, the held cuff takes effect again
    sim.run(0.25)
    assert sim.controller == 'zero_g'


def test_the_navigator_circle_button_asks_for_zero_g_too(model):
    sim = Sim(model)
    sim.core.apply(cmds.CuffInput(source='navigator', pressed=True))
    sim.run(0.002)
    assert sim.controller == 'zero_g'
    sim.core.apply(cmds.CuffInput(source='navigator', pressed=False))
    sim.run(0.002)
    assert sim.controller == 'hold'


# --- velocity scaling near the avoidance shapes (an option beyond the robot) ------------------
def _fold_into_the_shoulder(model, scaling):
    """A position move at speed ratio 1 folding the elbow into the shoulder. Returns the core,
    right_j3's speed when the avoidance shapes first overlap, and the deepest overlap.
    High-speed scaling (seed 003), which slows such a fold too, is off: this is
    --velocity-scaling's effect alone (test_high_speed_scaling_core has the other's)."""
    core = RealtimeCore(model, q_arm=list(NEUTRAL),
                        options={'collision_avoidance': {'velocity_scaling': scaling},
                                 'high_speed_scaling': {'enabled': False}})
    core.apply(cmds.SetSpeedRatio(ratio=1.0))
    target = NEUTRAL.copy()
    target[3] = 2.9                       # the elbow folded: the hand into the shoulder
    entering, deepest = None, 0.0
    for i in range(2500):
        if i % 10 == 0:
            core.apply(cmds.JointCommand(mode=1, names=tuple(JOINTS), position=tuple(target)))
        core.tick()
        v = core.state_vector()
        depth = StateView(v).collision_avoidance.depth
        deepest = max(deepest, depth)
        if entering is None and depth > 0.0:
            entering = abs(StateView(v).qd[3])
    return core, entering, deepest


def test_velocity_scaling_slows_only_motion_that_closes_a_distance(model):
    """With collision_avoidance's velocity_scaling on, a position move folding the elbow
    into the shoulder slows as the avoidance shapes near each other: it meets them slower
    and goes an order of magnitude less deep (the rest is braking at the acceleration
    limit); unfolding again runs at full speed. Off, the move meets them at full speed and
    only the avoidance torques push back."""
    vmax = model.limit_arrays(['right_j3'])['velocity'][0]
    off, entering_off, deepest_off = _fold_into_the_shoulder(model, False)
    on, entering_on, deepest_on = _fold_into_the_shoulder(model, True)
    assert entering_off > 0.9 * vmax
    assert entering_on < 0.7 * entering_off
    assert deepest_on < 0.2 * deepest_off, (deepest_on, deepest_off)
    # Opening the fold again is not slowed.
    speeds = []
    for i in range(800):
        if i % 10 == 0:
            on.apply(cmds.JointCommand(mode=1, names=tuple(JOINTS), position=tuple(NEUTRAL)))
        on.tick()
        speeds.append(abs(StateView(on.state_vector()).cmd_v[3]))
    assert max(speeds) > 0.99 * vmax


# --- joint-speed safety ------------------------------------------------------------------------
def test_a_huge_torque_command_is_braked_at_the_speed_limit(model):
    """One TORQUE_MODE command of 1e6 N·m on right_j0 (saturated at 80 N·m): the arm
    accelerates until right_j0 passes its velocity limit by 50 %, then the joint-speed
    monitor brakes it and holds it; no collision is reported."""
    sim = Sim(model)
    vmax = model.limit_arrays(['right_j0'])['velocity'][0]
    sim.command(3, ['right_j0'], effort=[1e6])
    peak = 0.0
    for _ in range(400):
        sim.run(0.001)
        peak = max(peak, abs(sim.state.qd[0]))
    assert peak < 1.8 * vmax, 'right_j0 reached %.2f rad/s (limit %.2f)' % (peak, vmax)
    assert abs(sim.q[0] - NEUTRAL[0]) < 0.5
    assert sim.controller == 'hold' and sim.state.collision == 0.0
    assert abs(sim.state.qd[0]) < 0.05
    assert any(k == 'halt:joint_speed' and 'right_j0 moving at' in t for _, k, t in sim.core.take_logs())
