"""Bad inputs the realtime core refuses or reports, without ROS (the
same cases through ROS are in test_reliability_catalogue.py): what the arm and head do, and
what the core says."""
import math

import numpy as np
import pytest

from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import NEUTRAL


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture
def core(model):
    c = RealtimeCore(model, q_arm=NEUTRAL)
    c.tick()                    # brakes released: the controllers start from here
    return c


def run(core, seconds):
    for _ in range(int(round(seconds / 1e-3))):
        core.tick()
    return StateView(core.state_vector()).q


def texts(core):
    return [text for _level, _key, text in core.take_logs()]


def test_more_values_than_names_is_rejected_and_nothing_moves(core):
    core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(0.3, NEUTRAL[1])))
    q = run(core, 0.3)
    assert texts(core) == ['joint_command rejected: position has 2 values for 1 names']
    assert abs(q[0] - NEUTRAL[0]) < 1e-4


def test_a_speed_ratio_outside_0_1_is_clipped_and_said(core):
    core.apply(cmds.SetSpeedRatio(ratio=5.0))
    assert core.arm.speed_ratio == 1.0
    assert texts(core) == ['set_speed_ratio 5.0 clipped to 1.0 (the ratio is a fraction of the '
                           'velocity limits, in [0, 1])']


def test_a_negative_ratio_holds_position_moves_and_says_so_once(core):
    core.apply(cmds.SetSpeedRatio(ratio=-0.5))
    said = texts(core)
    assert said[0].startswith('set_speed_ratio -0.5 clipped to 0.0')
    assert 'POSITION_MODE moves will not progress' in said[1]
    for _ in range(3):
        core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(NEUTRAL[0] + 0.3,)))
        run(core, 0.05)
    said = texts(core)
    assert sum('targets are kept but the arm does not move' in t for t in said) == 1, said
    assert abs(run(core, 0.1)[0] - NEUTRAL[0]) < 1e-4
    # a ratio > 0 again: a new command moves
    core.apply(cmds.SetSpeedRatio(ratio=0.5))
    for _ in range(150):                          # republished at 100 Hz, as the SDK does
        core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(NEUTRAL[0] + 0.3,)))
        q = run(core, 0.01)
    assert q[0] == pytest.approx(NEUTRAL[0] + 0.3, abs=1e-3)


@pytest.mark.parametrize('target,ratio,mode,words', [
    (-1.0, 0.5, 7, 'pan_mode 7 is not one of SET_PASSIVE_MODE=0'),
    (-1.0, -0.5, None, 'speed_ratio -0.5: the head would never reach target -1.0000'),
    (-1.0, 0.0, None, 'speed_ratio 0.0: the head would never reach'),
    (math.nan, 0.5, None, 'target nan is not finite'),
    (-1.0, math.inf, None, 'speed_ratio inf is not finite'),
])
def test_a_bad_head_command_changes_nothing(core, target, ratio, mode, words):
    core.apply(cmds.HeadCommand(target=target, speed_ratio=ratio, pan_mode=mode))
    q = run(core, 0.5)
    (text,) = texts(core)
    assert text == 'command_head_pan rejected: ' + words + text[len('command_head_pan rejected: ' + words):]
    assert words in text
    v = core.state_vector()
    assert abs(q[7]) < 1e-4 and StateView(v).head_turning == 0.0
    assert StateView(v).pan_mode == 1


def test_head_targets_and_ratios_beyond_range_are_clipped_and_said(core):
    core.apply(cmds.HeadCommand(target=2.0, speed_ratio=5.0, pan_mode=None))
    said = texts(core)
    assert said == ['command_head_pan: speed_ratio 5.0 clipped to 1.0',
                    "command_head_pan: target 2.0000 clipped to head_pan's limit 0.9064"]
    assert run(core, 2.0)[7] == pytest.approx(0.9064, abs=0.01)


def test_reset_while_running_changes_nothing(core):
    core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(NEUTRAL[0] + 0.2,)))
    core.apply(cmds.Reset())
    assert 'set_super_reset ignored' in texts(core)[0]
    assert StateView(core.state_vector()).enabled == 1.0
    for _ in range(150):
        core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(NEUTRAL[0] + 0.2,)))
        q = run(core, 0.01)
    assert q[0] == pytest.approx(NEUTRAL[0] + 0.2, abs=1e-3)


def test_commanded_effort_reads_within_the_effort_limits(core):
    core.apply(cmds.SetTimeout(seconds=0.05))
    core.apply(cmds.JointCommand(mode=3, names=('right_j0',), effort=(1e6,)))
    worst = 0.0
    for _ in range(400):
        core.tick()
        worst = max(worst, float(np.abs(StateView(core.state_vector()).cmd_effort).max()))
    assert worst <= 80.0 + 1e-9
