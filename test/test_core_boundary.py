"""The typed boundary between the realtime_loop node and the core process, without ROS:
every pipe message (realtime.pipe) and every command (control.commands) comes out of the
pipe's encoding as it went in; the state vector is read by name (realtime.state.StateView)
and a name it does not declare fails; commands and ArmState are built with keywords only."""
import dataclasses
import math
import socket
from multiprocessing.connection import Connection

import numpy as np
import pytest

from intera_rt.boards.base import BodyState, GripperState
from intera_rt.control import commands as cmds
from intera_rt.control.base import ArmState, Suppressions
from intera_rt.control.registry import ADDITIVES, CONTROLLERS, MONITORS
from intera_rt.model.tool import Tool
from intera_rt.realtime import pipe
from intera_rt.realtime.state import STATE_SIZE, StateView, view_class
from intera_rt.robot import NEUTRAL
from intera_rt.world import Pose, parse_model_xml

STATE = np.arange(STATE_SIZE, dtype=float) * 0.5

BLOCK = parse_model_xml('<sdf version="1.6"><model name="block"><link name="block"><collision '
                        'name="c"><geometry><box><size>0.05 0.05 0.05</size></box></geometry>'
                        '</collision></link></model></sdf>')

COMMANDS = [
    cmds.JointCommand(mode=4, names=('right_j0', 'right_j1'), position=(0.1, -0.2),
                      velocity=(0.0, 0.3), acceleration=(1.0, 2.0), effort=(), stamp=12.5),
    cmds.InteractionCommand(interaction_control_active=True,
                            interaction_control_mode=(1, 1, 2, 1, 1, 1), K_impedance=(1300.0,) * 6,
                            max_impedance=(False,) * 5 + (True,), D_impedance=(),
                            K_nullspace=(5.0,) * 7, force_command=(0.0, 0.0, 10.0, 0, 0, 0),
                            frame_position=(0.0, 0.0, 0.1), frame_orientation=(0.0, 0.0, 0.0, 1.0),
                            endpoint_name='right_hand', in_endpoint_frame=True,
                            disable_damping_in_force_control=True, disable_reference_resetting=False,
                            rotations_for_constrained_zeroG=True),
    cmds.SetEnable(on=False), cmds.Stop(), cmds.Reset(), cmds.SetTimeout(seconds=0.2),
    cmds.SetSpeedRatio(ratio=0.3), cmds.Suppress(what='gravity'),
    cmds.HeadCommand(target=0.5, speed_ratio=0.2, pan_mode=None),
    cmds.HomingCommand(names=('right_j0',), commands=(2,)),
    cmds.CuffInput(source='navigator', pressed=True),
    cmds.BypassSpeedScaling(on=True),
    cmds.SetTool(tool=Tool(fragment='<robot name="fragments"/>', mass=0.5,
                           loads=(('right_j6', (0.5, 0.0, 0.0, 0.01) + (1e-4,) * 6),))),
    cmds.SimEstop(pressed=True), cmds.SimError(on=True),
    cmds.SimWrench(link='right_hand', wrench=(0.0, 15.0, 0.0, 0.0, 0.0, 0.0), duration=0.5),
    cmds.SimClearWrenches(link='right_hand'),
    cmds.SimJointPositions(names=(), positions=tuple(NEUTRAL)),
    cmds.SimAddObstacle(name='table', shape='box', position=(0.6, 0.0, 0.0),
                        quaternion=(0.0, 0.0, 0.0, 1.0), size=(0.4, 0.4, 0.2)),
    cmds.SimRemoveObstacle(name='table'),
    cmds.SimSpawnModel(model=BLOCK, pose=Pose((0.7, 0.0, -0.1))),
    cmds.SimDeleteModel(name='block'),
    cmds.SimSetModelState(name='block', pose=Pose((0.5, 0.1, -0.1), (0.0, 0.0, 0.6, 0.8)),
                          twist=(0.0, 0.0, -1.0, 0.0, 0.0, 0.5)),
    cmds.SimBodyWrench(model='block', body='block', force=(1.0, 0.0, 0.0), torque=(0.0, 0.0, 0.1),
                       point=(0.0, 0.0, 0.025), duration=-1.0),
    cmds.SimClearBodyWrenches(model='block', body='block'),
    cmds.SimGripper(separation=0.02, speed=0.5, force=20.0),
    cmds.SimPause(paused=True),
]

MESSAGES = [
    pipe.Apply(command=COMMANDS[0], reply_id=None), pipe.Apply(command=COMMANDS[-2], reply_id=3),
    pipe.Published(tick=1230), pipe.Quit(),
    pipe.Ready(state=STATE, priority='nice -10 (sim time); memory not locked', simulated=True),
    pipe.Failed(reason='ValueError: backend \'nope\' is not registered'),
    pipe.StateFrame(state=STATE, wall_time=1.7e9, clock=True), pipe.Clock(t=12.34),
    pipe.Logs(entries=(('warn', 'cmd-ignored', 'joint_command ignored: the robot is disabled'),
                       ('error', 'cmd-rejected:names', "unknown joint name 'right_j9'"))),
    pipe.Stats(summary={'mean_us': 80.5, 'p99_us': 210.0, 'overruns': 0, 'ticks': 1000,
                        'command_timeouts': 2}),
    pipe.Reply(reply_id=3, result=(False, "unknown joint 'right_j9'")),
    pipe.WorldFrame(time=1.25, bodies=(BodyState('block', 'block', Pose((0.7, 0.0, -0.18)),
                                                 (0.0, 0.0, -0.5, 0.0, 0.0, 0.0)),),
                    gripper=GripperState(0.03, 'block', 20.0)),
]


@pytest.fixture
def wire():
    """Both ends of a pipe like the one realtime.process.start makes."""
    a, b = socket.socketpair()
    ours, theirs = Connection(a.detach()), Connection(b.detach())
    yield ours, theirs
    ours.close()
    theirs.close()


def _same(a, b):
    """Field for field (arrays by value, floats exactly, NaN equal to NaN)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x):
            _same(x, y)
        elif isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and y.dtype == np.float64
            assert np.array_equal(x, y, equal_nan=True), f.name
        else:
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f.name


def test_every_pipe_message_and_command_comes_through_the_pipe_as_it_went_in(wire):
    ours, theirs = wire
    assert {type(m) for m in MESSAGES} == set(pipe.MESSAGES), 'a message type has no sample here'
    command_types = {c for c in vars(cmds).values() if dataclasses.is_dataclass(c)}
    assert {type(c) for c in COMMANDS} == command_types, 'a command type has no sample here'
    for message in MESSAGES + [pipe.Apply(command=c, reply_id=k) for k, c in enumerate(COMMANDS)]:
        ours.send(message)
        assert theirs.poll(5.0)
        _same(message, theirs.recv())


def test_a_state_frame_keeps_nan_and_the_vector_reads_by_name_on_the_far_side(wire):
    ours, theirs = wire
    view = StateView()
    view.t, view.contact_at = 2.5, math.nan
    view.q = np.arange(8) * 0.1
    view.collision_detection.impact = 1.0
    ours.send(pipe.StateFrame(state=view.vector, wall_time=3.0, clock=False))
    got = theirs.recv()
    far = StateView(got.state)
    assert far.t == 2.5 and math.isnan(far.contact_at) and far.collision_detection.impact == 1.0
    assert np.array_equal(far.q, np.arange(8) * 0.1) and got.clock is False


def test_an_unknown_state_field_fails():
    view = StateView()
    with pytest.raises(AttributeError):
        view.colision                                   # (sic)
    with pytest.raises(AttributeError):
        view.collision_detection.impakt = 1.0           # (sic) nothing silently written
    assert not view.vector.any()
    with pytest.raises(ValueError, match='state vector has'):
        StateView(np.zeros(STATE_SIZE - 1))
    # A field list the view cannot name fails when the view is made (at import for the
    # robot's own list): a duplicate, a group clashing with a field, a non-identifier.
    for fields in ([('q', 8), ('q', 8)], [('interaction', 7), ('interaction.K', 6)],
                   [('two words', 1)]):
        with pytest.raises(ValueError):
            view_class(fields)


def test_every_stage_field_is_an_attribute_of_its_group():
    view = StateView()
    for stage in MONITORS + ADDITIVES + CONTROLLERS:
        if stage.state_fields:
            assert StateView.has(stage.name)
        for name, n in stage.state_fields:
            value = getattr(getattr(view, stage.name), name)
            assert (np.shape(value) == (n,)) if n > 1 else isinstance(value, float), (stage.name, name)


def test_commands_and_arm_state_take_keywords_only():
    with pytest.raises(TypeError):
        cmds.JointCommand(1, ('right_j0',), (0.5,))
    with pytest.raises(TypeError):
        cmds.InteractionCommand(True)
    with pytest.raises(TypeError):
        ArmState(0.0, 0.001, np.zeros(7), np.zeros(7), np.zeros(7), 0.0, 0.0, None, Suppressions())
    state = ArmState(now=0.0, period=0.001, q=np.zeros(7), qd=np.zeros(7), effort=np.zeros(7),
                     q_head=0.0, qd_head=0.0, dynamics=None, suppressions=Suppressions())
    assert state.speed_scale == 1.0
