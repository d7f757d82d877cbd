"""The realtime core without ROS: state machine, joint command modes and the embedded
plant, stepped with an explicit time step."""
import math

import numpy as np
import pytest

from intera_rt.boards import make_boards
from intera_rt.control import (CommandMode, CommandRejected, EstopButton, JointCommandData,
                               JointController, RobotStateMachine)
from intera_rt.model import RobotModel

NEUTRAL = np.array([0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161])
JOINTS = ['right_j%d' % i for i in range(7)]
DT = 0.001


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


class Sim:
    """Controller + embedded plant, ticked like the realtime loop does."""

    def __init__(self, model, q=NEUTRAL):
        self.boards = make_boards('embedded', model)
        self.boards.reset_pose(np.r_[q, 0.0])
        self.boards.set_brakes(False)
        self.control = JointController(model)
        self.control.reset(q)
        self.t = 0.0

    @property
    def q(self):
        return self.boards.read().position[:7]

    def command(self, mode, names, **arrays):
        return self.control.command(JointCommandData(mode, names, **arrays), self.t, self.q)

    def run(self, seconds, each_tick=None):
        for _ in range(int(round(seconds / DT))):
            if each_tick:
                each_tick(self)
            r = self.boards.read()
            out = self.control.tick(self.t, DT, r.position[:7], r.velocity[:7])
            self.boards.write(np.r_[out.torque, 0.0])
            self.boards.advance(DT)
            self.t += DT
        return out


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


def test_position_mode_reaches_target_at_speed_ratio(model):
    sim = Sim(model)
    target = NEUTRAL + np.array([0.5, 0.3, -0.4, -0.3, 0.5, 0.4, -0.6])
    reached = []

    def cmd(s):
        if round(s.t / DT) % 10 == 0:
            s.command(1, JOINTS, position=list(target))
        if not reached and np.abs(s.q - target).max() < 0.008726646:
            reached.append(s.t)
    sim.run(8.0, cmd)
    assert reached and reached[0] < 15.0
    # speed ratio 0.3 × 1.74 rad/s on j0: 0.5 rad needs at least 0.96 s
    assert reached[0] > 0.5 / (0.3 * 1.74)


def test_partial_position_command_keeps_other_targets(model):
    sim = Sim(model)
    sim.command(1, ['right_j0'], position=[0.2])
    sim.run(0.1)
    sim.command(1, ['right_j3'], position=[2.0])
    sim.run(0.1)
    assert sim.control.target[0] == pytest.approx(0.2)
    assert sim.control.target[3] == pytest.approx(2.0)
    assert sim.control.target[1] == pytest.approx(NEUTRAL[1])


def test_timeout_exits_every_mode_to_hold(model):
    for mode, arrays in [(1, {'position': list(NEUTRAL + 0.3)}),
                         (2, {'velocity': [0.2] * 7}),
                         (3, {'effort': [0.5] * 7}),
                         (4, {'position': list(NEUTRAL), 'velocity': [0.1] * 7})]:
        sim = Sim(model)
        sim.command(mode, JOINTS, **arrays)
        sim.run(0.1)
        assert sim.control.mode == mode
        sim.run(0.2)
        assert sim.control.mode == CommandMode.HOLD, mode
        q_hold = sim.q.copy()
        sim.run(1.0)
        assert np.abs(sim.q - q_hold).max() < 0.05, mode


@pytest.mark.parametrize('cmd,fragment', [
    (JointCommandData(7, JOINTS, position=list(NEUTRAL)), 'unknown mode'),
    (JointCommandData(1, ['right_j9'], position=[0.0]), 'unknown joint'),
    (JointCommandData(1, ['right_j0', 'right_j0'], position=[0.0, 0.0]), 'named twice'),
    (JointCommandData(1, JOINTS, position=[0.0] * 3), 'position has 3 values'),
    (JointCommandData(2, ['right_j0'], velocity=[math.nan]), 'nan'),
    (JointCommandData(1, ['right_j0'], position=[math.inf]), 'inf'),
    (JointCommandData(1, ['right_j0'], position=[3.2]), 'outside its limits'),
    (JointCommandData(4, ['right_j0'], position=[0.0], velocity=[0.1, 0.2][:0] + [math.nan]), 'nan'),
])
def test_bad_commands_are_rejected_with_reason(model, cmd, fragment):
    sim = Sim(model)
    with pytest.raises(CommandRejected) as err:
        sim.control.command(cmd, 0.0, sim.q)
    assert fragment in str(err.value).lower()
    assert sim.control.mode == CommandMode.HOLD


def test_unused_arrays_may_have_any_length(model):
    sim = Sim(model)
    # the SDK reuses one message: stale velocity of another length rides along
    sim.command(1, ['right_j0'], position=[0.1], velocity=[1.0, 2.0, 3.0])
    sim.command(2, ['right_j0'], velocity=[0.1], position=[])
    assert sim.control.mode == CommandMode.VELOCITY


def test_velocity_toward_limit_is_rejected_and_arm_holds(model):
    q = NEUTRAL.copy()
    q[0] = 3.0                                          # 0.05 rad from the j0 limit
    sim = Sim(model, q)
    with pytest.raises(CommandRejected) as err:
        sim.command(2, ['right_j0', 'right_j1'], velocity=[1.0, 0.0])
    assert 'right_j0' in str(err.value)
    sim.run(0.5)
    assert sim.q[0] == pytest.approx(3.0, abs=1e-3)


def test_torque_beyond_effort_limit_saturates_and_reports(model):
    sim = Sim(model)
    warnings = sim.command(3, ['right_j6'], effort=[50.0])
    assert warnings and 'right_j6' in warnings[0] and 'saturated' in warnings[0]
    out = sim.run(0.001)
    assert abs(out.commanded_effort[6]) <= 9.0


def test_gravity_suppression_makes_the_arm_sag(model):
    sim = Sim(model)
    sim.command(3, JOINTS, effort=[0.0] * 7)

    def keep(s):
        s.command(3, JOINTS, effort=[0.0] * 7)
        s.control.suppress_gravity(s.t)
    sim.run(0.5, keep)
    assert abs(sim.q[1] - NEUTRAL[1]) > 0.05              # shoulder falls without gravity torques


def test_speed_ratio_is_clipped(model):
    c = JointController(model)
    assert c.set_speed_ratio(3.0) == 1.0
    assert c.set_speed_ratio(-1.0) == 0.0
    with pytest.raises(CommandRejected):
        c.set_speed_ratio(math.nan)


def test_timeout_is_clamped_to_one_second(model):
    c = JointController(model)
    assert c.set_timeout(5.0) == 1.0
    assert c.set_timeout(0.02) == 0.02
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(CommandRejected) as err:
            c.set_timeout(bad)
        assert err.value.kind == 'timeout'


def test_rejections_carry_a_kind_independent_of_the_values(model):
    sim = Sim(model)
    kinds = set()
    for v in (3.2, 3.3, 3.4):
        with pytest.raises(CommandRejected) as err:
            sim.command(1, ['right_j0'], position=[v])
        kinds.add(err.value.kind)
    assert kinds == {'position-limit'}


def test_joints_left_out_of_a_trajectory_command_stop(model):
    sim = Sim(model)
    v = np.zeros(7)
    v[1] = 0.2
    sim.command(4, JOINTS, position=list(NEUTRAL), velocity=list(v), acceleration=[0.0] * 7)
    sim.run(0.2)
    q1 = sim.q[1]
    sim.command(4, ['right_j0'], position=[NEUTRAL[0]])
    sim.run(0.15, lambda s: s.command(4, ['right_j0'], position=[NEUTRAL[0]]))
    # right_j1's reference stopped at once; the arm settles within a few mrad of it
    assert abs(sim.control.v_ref[1]) == 0.0
    assert abs(sim.q[1] - q1) < 0.01


def test_joints_left_out_of_a_velocity_command_stop(model):
    sim = Sim(model)
    sim.command(2, JOINTS, velocity=[0.1] * 7)
    sim.run(0.1)
    sim.command(2, ['right_j0'], velocity=[0.1])
    sim.run(0.1)
    assert sim.control._vel_cmd[1:].tolist() == [0.0] * 6
    assert sim.control.v_ref[0] == pytest.approx(0.1)


def test_trajectory_stamp_sets_the_sample_time(model):
    """A TRAJECTORY_MODE sample stamped ahead of now is extrapolated back to now; a stamp
    further than 0.1 s away is ignored."""
    sim = Sim(model)
    v = np.full(7, 0.1)
    sim.control.command(JointCommandData(4, JOINTS, list(NEUTRAL), list(v), [0.0] * 7, stamp=0.05),
                        0.0, sim.q)
    p, _, _ = sim.control._sample_traj(0.0)
    assert p == pytest.approx(NEUTRAL - 0.005)
    sim.control.command(JointCommandData(4, JOINTS, list(NEUTRAL), list(v), [0.0] * 7, stamp=5.0),
                        0.0, sim.q)
    p, _, _ = sim.control._sample_traj(0.0)
    assert p == pytest.approx(NEUTRAL)


def test_trajectory_extrapolated_into_a_limit_stops_there(model):
    q = NEUTRAL.copy()
    q[0] = 3.0
    sim = Sim(model, q)
    sim.command(4, ['right_j0'], position=[3.0], velocity=[0.5])
    sim.run(0.15)
    out = sim.run(0.001)
    assert out.commanded_position[0] == pytest.approx(model.limit_arrays(['right_j0'])['upper'][0])
    assert out.commanded_velocity[0] == 0.0
