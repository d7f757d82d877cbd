"""Homing: an arm booted unhomed (`scripts/sawyer --unhomed`) refuses motion until the SDK's
home_joints.py pattern (latched /robot/set_homing_mode republished at 1 Hz until every
joint in /robot/homing_states is HOMED) has homed it. First the realtime core without ROS,
then through ROS against a robot booted unhomed."""
import time

import numpy as np
import pytest

from intera_rt.control import commands as cmds
from intera_rt.control.homing import AUTO, HOMED, HOMING, HOMING_TIME, MANUAL, NOT_HOMED
from intera_rt.model import RobotModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

pytestmark = pytest.mark.sawyer_args(['--unhomed', '--sim-time', '--speed', '2'])

TARGET = 0.3                 # rad of right_j0 a position command asks for


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


def ticks(core, seconds):
    for _ in range(int(round(seconds / 0.001))):
        core.tick()


def homing_states(core):
    return [int(s) for s in StateView(core.state_vector()).homing]


# --- the core -------------------------------------------------------------------------------
def test_unhomed_core_refuses_motion_until_homed_then_moves(model):
    core = RealtimeCore(model, q_arm=NEUTRAL, homed=False)
    assert StateView(core.state_vector()).homed == 0.0
    assert homing_states(core) == [NOT_HOMED] * 7
    core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(TARGET,)))
    ticks(core, 0.5)
    assert abs(StateView(core.state_vector()).q[0]) < 1e-3        # did not move
    (level, _, text), = core.take_logs()
    assert level == 'warn' and 'not homed' in text and 'right_j0 NOT_HOMED' in text

    core.apply(cmds.HomingCommand(names=ARM_JOINTS, commands=(AUTO,) * 7))
    ticks(core, 0.5 * HOMING_TIME)
    assert homing_states(core) == [HOMING] * 7
    core.apply(cmds.HomingCommand(names=ARM_JOINTS, commands=(AUTO,) * 7))          # the client's 1 Hz resend
    ticks(core, 0.5 * HOMING_TIME + 0.01)
    v = core.state_vector()
    assert homing_states(core) == [HOMED] * 7 and StateView(v).homed == 1.0
    assert np.abs(StateView(v).q[:7] - NEUTRAL).max() < 1e-3     # homing held the arm still
    assert any('homing done' in text for _, _, text in core.take_logs())

    for _ in range(300):          # POSITION_MODE is streamed (its command timeout is 0.2 s)
        core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(TARGET,)))
        ticks(core, 0.01)
    assert abs(StateView(core.state_vector()).q[0] - TARGET) < 0.01


def test_homing_joint_by_joint_needs_enabled_and_a_disable_interrupts_it(model):
    core = RealtimeCore(model, q_arm=NEUTRAL, homed=False, enabled=False)
    core.apply(cmds.HomingCommand(names=('right_j0',), commands=(AUTO,)))
    ticks(core, 2 * HOMING_TIME)
    assert homing_states(core) == [NOT_HOMED] * 7
    assert 'set_homing_mode ignored: the robot is disabled' in core.take_logs()[0][2]

    core.apply(cmds.SetEnable(on=True))
    core.apply(cmds.HomingCommand(names=('right_j0', 'right_j1'), commands=(MANUAL, 0)))   # NONE: left alone
    ticks(core, 0.3)
    assert homing_states(core)[:2] == [HOMING, NOT_HOMED]
    core.apply(cmds.SetEnable(on=False))
    ticks(core, 2 * HOMING_TIME)
    assert homing_states(core)[0] == NOT_HOMED
    assert any('homing of right_j0 interrupted' in text for _, _, text in core.take_logs())

    core.apply(cmds.SetEnable(on=True))
    core.apply(cmds.HomingCommand(names=('right_j0',), commands=(AUTO,)))
    ticks(core, HOMING_TIME + 0.01)
    assert homing_states(core) == [HOMED] + [NOT_HOMED] * 6
    assert StateView(core.state_vector()).homed == 0.0


@pytest.mark.parametrize('names,commands,fragment', [
    (('right_j9',), (AUTO,), "unknown joint(s) 'right_j9'"),
    (('right_j0', 'right_j1'), (AUTO,), '2 names but 1 commands'),
    (('right_j0',), (7,), 'command 7 for right_j0 is not NONE (0), MANUAL (1) or AUTO (2)'),
])
def test_bad_homing_commands_are_refused_saying_why(model, names, commands, fragment):
    core = RealtimeCore(model, q_arm=NEUTRAL, homed=False)
    core.apply(cmds.HomingCommand(names=names, commands=commands))
    ticks(core, 2 * HOMING_TIME)
    assert homing_states(core) == [NOT_HOMED] * 7
    (level, _, text), = core.take_logs()
    assert level == 'error' and fragment in text


def test_a_homed_arm_stays_homed(model):
    core = RealtimeCore(model, q_arm=NEUTRAL)
    core.apply(cmds.HomingCommand(names=ARM_JOINTS, commands=(AUTO,) * 7))
    ticks(core, 0.1)
    assert homing_states(core) == [HOMED] * 7 and StateView(core.state_vector()).homed == 1.0


# --- through ROS, as the SDK's home_joints.py does it ----------------------------------------
def _j0(joints):
    msg = joints.get()
    return msg.position[msg.name.index('right_j0')]


def test_home_joints_pattern_through_ros(robot):
    import rospy
    from intera_core_msgs.msg import (HomingCommand, HomingState, JointCommand,
                                      RobotAssemblyState)
    from sensor_msgs.msg import JointState
    from rosharness import latest, wait_for

    with latest('/robot/homing_states', HomingState) as homing, \
            latest('/robot/state', RobotAssemblyState) as state, \
            latest('/robot/joint_states', JointState) as joints:
        first = homing.wait(5.0)
        assert list(first.name) == list(ARM_JOINTS) and list(first.state) == [NOT_HOMED] * 7
        assert state.wait(5.0).homed is False and state.msg.enabled is True

        # Unhomed: a position command is refused (the arm stays where it is).
        joints.wait(5.0)
        q0 = _j0(joints)
        pub_cmd = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1)
        wait_for(lambda: pub_cmd.get_num_connections() > 0, 5.0, 'joint_command connected')
        for _ in range(20):
            pub_cmd.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=['right_j0'],
                                         position=[q0 + TARGET]))
            time.sleep(0.02)
        # Taken in once the robot says why it refused them; a joint state 0.5 s of robot
        # time later shows whether the arm moved (an accepted command would move it ~0.1 rad).
        wait_for(lambda: 'joint_command ignored: the arm is not homed' in open(robot.log_path).read(),
                 5.0, 'the log line saying why')
        said = rospy.get_time()
        wait_for(lambda: joints.get().header.stamp.to_sec() > said + 0.5, 5.0,
                 'a joint state 0.5 s after the refusal')
        assert abs(_j0(joints) - q0) < 1e-3

        # Periodic: the unchanged state keeps coming.
        n = homing.count
        wait_for(lambda: homing.count >= n + 2, 10.0, 'homing_states republished while unchanged')

        # home_joints.py: latched command, republished at 1 Hz until all HOMED, 60 s timeout.
        seen = []
        sub = rospy.Subscriber('/robot/homing_states', HomingState,
                               lambda m: seen.append(tuple(m.state)), queue_size=50)
        pub = rospy.Publisher('/robot/set_homing_mode', HomingCommand, queue_size=10, latch=True)
        cmd = HomingCommand(name=list(homing.msg.name), command=[HomingCommand.AUTO] * 7)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            if all(s == HomingState.HOMED for s in homing.get().state):
                break
            pub.publish(cmd)
            time.sleep(1.0)         # home_joints.py's 1 Hz republish, inside the deadline loop
        sub.unregister()
        assert all(s == HOMED for s in homing.msg.state), homing.msg
        assert (HOMING,) * 7 in seen, seen                 # on change: HOMING was published
        wait_for(lambda: state.get().homed, 5.0, '/robot/state homed')

        # Homed: the same command moves the arm.
        for _ in range(300):
            pub_cmd.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=['right_j0'],
                                         position=[q0 + TARGET]))
            if abs(_j0(joints) - (q0 + TARGET)) < 0.01:
                break
            time.sleep(0.05)
        assert abs(_j0(joints) - (q0 + TARGET)) < 0.01
