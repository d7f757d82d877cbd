"""The realtime core without ROS (RealtimeCore ticked by hand) and the process it runs in
(started and spoken to over its pipe, as the realtime_loop node does)."""
import numpy as np
import pytest

from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.realtime import pipe, process
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import NEUTRAL


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


def booted(model, **kwargs):
    """A RealtimeCore with what it logged at boot taken (with INTERA_RT_NATIVE=0: that the
    compiled kernels are off), so a test reads only what its commands log."""
    core = RealtimeCore(model, q_arm=NEUTRAL, **kwargs)
    core.take_logs()
    return core


def test_boots_holding_its_pose(model):
    core = RealtimeCore(model, q_arm=NEUTRAL)
    for _ in range(2000):
        core.tick()
    v = core.state_vector()
    assert StateView(v).t == pytest.approx(2.0)
    assert np.abs(StateView(v).q[:7] - np.array(NEUTRAL)).max() < 1e-3
    assert StateView(v).enabled == 1.0 and StateView(v).controlled == 1.0


def test_commands_while_disabled_are_ignored_and_said_why(model):
    core = booted(model, enabled=False)
    core.apply(cmds.JointCommand(mode=1, names=('right_j0',), position=(0.5,)))
    for _ in range(300):
        core.tick()
    assert abs(StateView(core.state_vector()).q[0]) < 1e-6
    logs = core.take_logs()
    assert logs and logs[0][0] == 'warn' and 'the robot is disabled' in logs[0][2]
    assert StateView(core.state_vector()).controlled == 0.0      # brakes: nothing commanded


def test_bad_command_is_logged_by_kind_and_has_no_effect(model):
    core = booted(model)
    core.apply(cmds.JointCommand(mode=1, names=('right_j0', 'right_j9'), position=(0.3, 0.0)))
    for _ in range(300):
        core.tick()
    (level, key, text), = core.take_logs()
    assert (level, key) == ('error', 'cmd-rejected:names') and "'right_j9'" in text
    assert abs(StateView(core.state_vector()).q[0]) < 1e-3


def test_sim_positions_checks_names_and_limits(model):
    core = RealtimeCore(model, q_arm=NEUTRAL)
    assert core.apply(cmds.SimJointPositions(names=('right_j9',), positions=(0.0,)))[0] is False
    ok, why = core.apply(cmds.SimJointPositions(names=('right_j0',), positions=(9.0,)))
    assert not ok and 'outside its limits' in why
    assert core.apply(cmds.SimJointPositions(names=(), positions=(0.1,) * 7))[0] is True
    assert StateView(core.state_vector()).q[:7] == pytest.approx([0.1] * 7)


def test_estop_stops_and_reset_is_refused_while_pressed(model):
    core = booted(model)
    core.apply(cmds.SimEstop(pressed=True))
    core.tick()
    v = core.state_vector()
    assert StateView(v).stopped == 1.0 and StateView(v).estop_button == 1.0
    core.apply(cmds.Reset())
    assert 'E-stop button is pressed' in core.take_logs()[0][2]


def test_the_process_answers_over_its_pipe_and_ends_with_it(model):
    proc, conn = process.start(dict(q_arm=NEUTRAL, q_head=0.0, sim_time=True,
                                    speed=float('inf')))
    try:
        assert conn.poll(60.0), 'the core did not boot'
        ready = conn.recv()
        assert isinstance(ready, pipe.Ready) and ready.simulated is True
        conn.send(pipe.Apply(command=cmds.SimJointPositions(names=('right_j9',), positions=(0.0,)),
                             reply_id=7))
        reply = None
        while reply is None:
            assert conn.poll(10.0), 'no reply'
            msg = conn.recv()
            if isinstance(msg, pipe.Reply):
                reply = msg
        assert reply.reply_id == 7 and reply.result[0] is False and 'right_j9' in reply.result[1]
    finally:
        conn.close()
    proc.join(10.0)
    assert not proc.is_alive(), 'the core outlived its adapter'


def test_a_core_ahead_of_the_adapter_watches_the_page_before_it_sleeps():
    """process._caught_up with a SpinWait: a state the adapter publishes while the core
    watches the page lets it go on at once, without asking the adapter to wake it through
    the pipe; none within the budget and the page says the core waits, and the next watch
    is shorter (the nodes may need that CPU); one the adapter ends lengthens it again. With
    no budget (one CPU) the core never watches."""
    import threading
    shared, published = [0, 0], [0]        # the page's PUBLISHED and WAITING slots
    tick = process.RUN_AHEAD               # one tick too far past the published state 0
    assert process._caught_up(shared, published, tick - 1)
    spin = process.SpinWait(0.001)
    assert not process._caught_up(shared, published, tick, spin)
    assert shared[process.Lockstep.WAITING] == 1
    assert spin.budget == 0.0005
    shared[process.Lockstep.WAITING] = 0
    spin = process.SpinWait(30.0)
    spin.budget = 15.0
    publish = threading.Timer(0.01, shared.__setitem__, (process.Lockstep.PUBLISHED, 1))
    publish.start()
    try:
        assert process._caught_up(shared, published, tick, spin)
    finally:
        publish.cancel()
    assert published[0] == 1 and spin.budget == 30.0
    assert shared[process.Lockstep.WAITING] == 0
    never = process.SpinWait(0.0)
    assert not never.watch(shared, tick + 1) and never.budget == 0.0


def test_a_late_stream_is_waited_for_within_a_wall_time_budget(model):
    """process.StreamWait with RealtimeCore.command_gap: a stream of joint commands quiet
    for 2 /clock steps of sim time (at most 0.75 of its timeout) is waited for until
    STREAM_BUDGET s of wall time after its last command came; a new command restarts the
    count; no stream, no wait."""
    core = booted(model)
    core.tick()                                # (the brakes released: holding)
    stats = process.TickStats()
    budget = process.STREAM_BUDGET
    stream = process.StreamWait(budget, 0.02, stats)                      # /clock every 20 ms
    assert core.command_gap() is None and stream.due(core.command_gap(), 0.0) == 0.0   # holding
    command = cmds.JointCommand(mode=1, names=('right_j0',), position=(NEUTRAL[0],))

    def run(ticks):
        for _ in range(ticks):
            core.tick()
    core.apply(command)
    since, timeout, _ = core.command_gap()
    assert since == 0.0 and timeout == pytest.approx(0.2)
    assert stream.due(core.command_gap(), 10.0) == 0.0                   # (seen at wall 10 s)
    run(39)
    assert stream.due(core.command_gap(), 10.001) == 0.0                 # 39 ms: on time
    run(2)                                     # 41 ms: late after 2 steps
    assert stream.due(core.command_gap(), 10.01) == pytest.approx(budget - 0.01)
    assert stream.due(core.command_gap(), 10.02) == pytest.approx(budget - 0.02)
    assert stream.due(core.command_gap(), 10.0 + budget) == 0.0          # given up
    assert stats.stream_waits == 1
    def late_after(ticks, wall):
        """A command at wall time `wall`: on time for `ticks` ticks, late 2 ticks later."""
        core.apply(command)
        assert stream.due(core.command_gap(), wall) == 0.0
        run(ticks)
        assert stream.due(core.command_gap(), wall + 0.001) == 0.0
        run(2)
        assert stream.due(core.command_gap(), wall + 0.001) == pytest.approx(budget - 0.001)
    late_after(39, 20.0)                       # the next command: late again 2 steps after it
    assert stats.stream_waits == 2
    core.arm.set_timeout(0.04)
    late_after(29, 30.0)                       # a short timeout: late at 0.75 of it (30 ms of 40)
    assert process.StreamWait(0.0).due(core.command_gap(), 20.001) == 0.0   # real time


def test_lockstep_waits_for_the_published_state_and_wakes_on_the_shared_page():
    """Under sim time the core runs RUN_AHEAD ticks past the last state the adapter marked
    published, then waits; marking it in the shared page alone lets it go on (the pipe
    message is only a faster wake-up), and `published` says when the core waited."""
    import time
    proc, conn = process.start(dict(q_arm=NEUTRAL, q_head=0.0, sim_time=True,
                                    speed=float('inf')))

    def ticks_sent(until):
        """The tick of each state the core sends until nothing comes for `until` s."""
        out = []
        while conn.poll(until):
            msg = conn.recv()
            if isinstance(msg, pipe.StateFrame):
                out.append(int(StateView(msg.state).tick))
        return out
    try:
        assert conn.poll(60.0), 'the core did not boot'
        ready = conn.recv()
        assert isinstance(ready, pipe.Ready), ready
        boot = int(StateView(ready.state).tick)
        first = ticks_sent(0.5)
        # it stopped RUN_AHEAD ticks past its boot state, the last of them sent
        assert first and first[-1] == boot + process.RUN_AHEAD, first
        # the page alone: the core waits, so the adapter is told to wake it; not waking it
        # still lets it go on within WAIT_SLICE
        assert proc.lockstep.published(first[-1]) is True
        t0 = time.monotonic()
        second = ticks_sent(0.5)
        assert second and second[-1] == first[-1] + process.RUN_AHEAD, second
        assert second[0] == first[-1] + process.PUBLISH_EVERY
        assert time.monotonic() - t0 < 10.0
        # the pipe's wake-up still works (what the adapter sends when the page says so)
        proc.lockstep.published(second[-1])
        conn.send(pipe.Published(tick=second[-1]))
        third = ticks_sent(0.5)
        assert third and third[-1] == second[-1] + process.RUN_AHEAD, third
    finally:
        conn.close()
    proc.join(10.0)
    assert not proc.is_alive(), 'the core outlived its adapter'


def test_the_state_vector_s_one_element_fields_each_say_their_own_fact(model):
    """The core writes its one-element fields in one assignment (state.CORE_SCALARS' order):
    in two states where many of them differ, each field reads its own fact."""
    from intera_rt.control.state_machine import EstopButton, EstopSource
    from intera_rt.realtime.state import CONTROLLER_NAMES, CORE_SCALARS
    core = booted(model)
    for _ in range(1234):
        core.tick()
    core.apply(cmds.Suppress(what='contact_safety'))
    core.apply(cmds.Suppress(what='hand_overwrench_safety'))
    core.apply(cmds.CuffInput(source='cuff', pressed=True))         # zero-G
    for _ in range(3):
        core.tick()
    view = StateView(core.state_vector())
    expected = dict.fromkeys(CORE_SCALARS, 0.0)
    expected.update({'t': 1.237, 'tick': 1237, 'controlled': 1.0, 'enabled': 1.0, 'homed': 1.0,
                     'pan_mode': 1.0, 'controller': CONTROLLER_NAMES.index('zero_g'),
                     'cuff': 1.0, 'suppress.contact_safety': 1.0,
                     'suppress.hand_overwrench_safety': 1.0,
                     'contact_at': core._contact_at})              # (NaN: no contact yet)

    def read(name):
        head, _, rest = name.partition('.')
        return getattr(getattr(view, head), rest) if rest else getattr(view, name)
    got = {name: read(name) for name in CORE_SCALARS}
    assert got == pytest.approx(expected, nan_ok=True), got
    core.apply(cmds.SimEstop(pressed=True))
    core.apply(cmds.CuffInput(source='cuff', pressed=False))
    core.tick()
    view = StateView(core.state_vector())
    assert (view.stopped, view.enabled, view.cuff) == (1.0, 0.0, 0.0)
    assert (view.estop_button, view.estop_source) == (EstopButton.PRESSED, EstopSource.USER)
    assert view.t == pytest.approx(1.238) and view.tick == 1238
