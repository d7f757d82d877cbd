"""The joint-boards contract (intera_rt.boards), for every backend, no ROS: declared state,
read/write with time, brakes, lifecycle, faults, and the sim-only abilities (teleport,
obstacles, wrenches, contacts) — done by the simulators, refused clearly by hardware.

'hardware' is a stand-in written here for boards that own the clock as an arm's do: an
embedded plant stepped by the boards' own 1 kHz cycle (wait_cycle), their time counted from
1000 s, no sim-only abilities, and a fault condition the test sets (as a board over
temperature would) that clears only once the condition is gone. The realtime core is run on
each backend: it boots where hardware is (no teleport), follows the boards' clock, and a
fault the boards report puts the robot in error with a log line naming it, until a reset
after the boards have cleared it.
"""
import numpy as np
import pytest

from plant_scene import MODEL, Q0, WALL, WALL_NORMAL, run, torque_of

from intera_rt.boards import (BACKENDS, BackendOption, BoardsError, BoardsReading, GripperCommand,
                              JointBoards, Unsupported, check_backend, make_boards, register_backend)
from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.control import commands as cmds
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

DT = 0.001
START = np.array([0.3, -0.6, -0.2, 1.2, 0.1, 0.6, 1.4, -0.4])    # where the 'hardware' arm is


class Hardware(JointBoards):
    """Boards that own the clock (see the module's docstring)."""
    owns_clock = True
    OPTIONS = {'start_time': BackendOption(float, 1000.0, 'the boards time at power-on (s)')}

    def __init__(self, model, start_time=1000.0):
        self._plant = EmbeddedBoards(model)
        self._plant.reset_pose(START)
        self.joint_names = self._plant.joint_names
        self.time = start_time
        self.condition = ''          # a fault condition on a board ('' none)
        self.cycles = 0
        self.steps = 1               # plant steps per cycle the loop sees

    def read(self, time=None, period=None):
        r = self._plant.read()
        return BoardsReading(r.position, r.velocity, r.effort, self.time, self._plant.brakes,
                             self._fault)

    def write(self, torque, time=None, period=None):
        self._plant.write(torque)

    def set_brakes(self, engaged):
        self._plant.set_brakes(engaged)
        self.brakes = self._plant.brakes

    def wait_cycle(self, timeout):
        for _ in range(self.steps):     # (more than one: the loop missed a cycle's state)
            self._plant.advance(DT)
            self.time += DT
        self.cycles += 1
        if self.condition:
            self.report_fault(self.condition)
        return True

    def on_clear_fault(self):
        return 'the condition persists (%s)' % self.condition if self.condition else ''


register_backend('hardware', Hardware)
SIMULATORS = ['embedded', 'mujoco']
ALL = SIMULATORS + ['hardware']


def boards_of(name, **options):
    boards = make_boards(name, MODEL, options)
    boards.configure()
    boards.activate()
    return boards


@pytest.fixture(params=ALL)
def boards(request):
    b = boards_of(request.param)
    yield b
    b.shutdown()


@pytest.fixture(params=SIMULATORS)
def sim(request):
    b = boards_of(request.param)
    b.reset_pose(Q0)
    yield b
    b.shutdown()


def cycle(boards, torque, t=None):
    """One cycle as the realtime loop runs it; the reading it acted on."""
    boards.wait_cycle(0.01)
    reading = boards.read(t, DT)
    boards.write(torque, t, DT)
    if not boards.owns_clock:
        boards.advance(DT)
    return reading


def gravity_torque(boards):
    tau = np.zeros(8)
    tau[:7] = MODEL.arm_dynamics.gravity(boards.read().position[:7])
    return tau


# --- the cycle --------------------------------------------------------------------------
def test_declared_state(boards):
    r = boards.read(0.0, DT)
    for field in (r.position, r.velocity, r.effort):
        assert field.shape == (8,) and np.isfinite(field).all()
    assert r.brakes is True and r.fault == '' and np.isfinite(r.time)
    assert boards.joint_names == tuple(ARM_JOINTS) + ('head_pan',)
    assert boards.lifecycle == 'active'


def test_time_advances_one_period_per_cycle(boards):
    times = [cycle(boards, np.zeros(8), k * DT).time for k in range(5)]
    np.testing.assert_allclose(np.diff(times), DT, atol=1e-9)
    # A simulation stepped after the last read is a period on; boards that own the clock
    # are where their last cycle left them until the next.
    later = times[-1] + (0.0 if boards.owns_clock else DT)
    assert boards.read().time == pytest.approx(later, abs=1e-9)


def test_brakes_hold_the_arm_and_release_it(boards):
    q0 = boards.read().position.copy()
    push = gravity_torque(boards)
    push[5] += 3.0                                   # right_j5 driven hard
    for _ in range(50):
        cycle(boards, push)
    np.testing.assert_allclose(boards.read().position, q0, atol=1e-12)
    assert not boards.read().velocity.any()
    boards.set_brakes(False)
    for _ in range(100):
        push[:7] = MODEL.arm_dynamics.gravity(boards.read().position[:7])
        push[5] = MODEL.arm_dynamics.gravity(boards.read().position[:7])[5] + 3.0
        cycle(boards, push)
    r = boards.read()
    assert r.brakes is False and r.position[5] - q0[5] > 0.01
    assert abs(r.position[1] - q0[1]) < 0.01        # the shoulder, gravity-compensated, stays


def test_non_finite_torques_never_reach_the_plant(sim):
    sim.set_brakes(False)
    tau = gravity_torque(sim)
    tau[2] = np.nan
    for _ in range(20):
        cycle(sim, tau)
    assert np.isfinite(sim.read().position).all() and not sim.read().fault


# --- lifecycle --------------------------------------------------------------------------
def test_lifecycle(boards):
    with pytest.raises(BoardsError, match='cannot activate from the active state'):
        boards.activate()
    boards.set_brakes(False)
    boards.deactivate()
    assert boards.lifecycle == 'inactive' and boards.read().brakes
    boards.activate()
    boards.shutdown()
    assert boards.lifecycle == 'finalized' and boards.read().brakes
    boards.shutdown()                                # once is enough; twice is harmless


# --- teleport ---------------------------------------------------------------------------
def test_simulators_teleport(sim):
    q = Q0.copy()
    q[3] += 0.4
    sim.set_brakes(False)
    sim.reset_pose(q)
    r = sim.read()
    np.testing.assert_allclose(r.position, q, atol=1e-12)
    assert not r.velocity.any()


def test_hardware_refuses_the_sim_abilities():
    hw = boards_of('hardware')
    calls = {'be reset to a pose': lambda: hw.reset_pose(Q0),
             'apply external wrenches': lambda: hw.apply_wrench('right_hand', [0] * 6, 1.0),
             'place obstacles': lambda: hw.add_obstacle('box', 'box', (1, 0, 0), (0, 0, 0, 1), (.1, .1, .1)),
             'remove obstacles': lambda: hw.remove_obstacle('box'),
             'report obstacles': hw.obstacles, 'report contacts': hw.contacts,
             'simulate a board fault': lambda: hw.inject_fault('x'),
             'spawn models': lambda: hw.spawn_model(None, None),
             'delete models': lambda: hw.delete_model('block'),
             'set model states': lambda: hw.set_model_state('block', None, (0,) * 6),
             'report model states': hw.body_states,
             'apply body wrenches': lambda: hw.apply_body_wrench('block', 'link', (0,) * 3, (0,) * 3,
                                                                 (0,) * 3, 1.0),
             'clear body wrenches': lambda: hw.clear_body_wrenches('block', 'link'),
             'drive a gripper': lambda: hw.set_gripper(GripperCommand(0.04, 0.1, 10.0))}
    for what, call in calls.items():
        with pytest.raises(Unsupported, match='the hardware backend cannot %s' % what):
            call()
    with pytest.raises(Unsupported, match='the hardware backend cannot apply external wrenches'):
        hw.clear_wrenches('right_hand')
    with pytest.raises(BoardsError, match='owns the clock'):
        hw.advance(DT)
    assert not hw.capabilities and hw.read().position.tolist() == START.tolist()
    assert hw.gripper_state() is None               # no gripper on the plant: the device simulates


# --- obstacles, wrenches, contacts --------------------------------------------------------
def test_obstacles(sim):
    assert sim.obstacles() == [] and sim.contacts() == []
    sim.add_obstacle('wall', **WALL)
    sim.add_obstacle('ball', 'sphere', [1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 3.0], [0.2])
    sim.add_obstacle('wall', 'box', (2.0, 0.0, 0.0), (0, 0, 0, 1), (0.1, 0.1, 0.1))   # moved
    (wall, ball) = sim.obstacles()
    assert wall.position == (2.0, 0.0, 0.0) and ball.quaternion == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match='obstacle size must be > 0'):
        sim.add_obstacle('bad', 'box', (0, 0, 0), (0, 0, 0, 1), (0.1, -0.1, 0.1))
    with pytest.raises(KeyError, match="no obstacle named 'nothing'"):
        sim.remove_obstacle('nothing')
    sim.remove_obstacle('wall')
    assert [o.name for o in sim.obstacles()] == ['ball']


def test_braked_arm_carries_an_external_wrench(sim):
    wrench = np.array([0.0, 20.0, -30.0, 1.0, 0.0, 0.0])
    sim.apply_wrench('right_hand', wrench, 0.5)
    cycle(sim, np.zeros(8))
    _, _, jac = MODEL.arm_dynamics.tip('right_hand', Q0[:7])
    expected = MODEL.arm_dynamics.gravity(Q0[:7]) - jac.T @ wrench
    np.testing.assert_allclose(sim.read().effort[:7], expected, atol=1e-6)
    for _ in range(500):                             # the wrench ends after its 0.5 s
        cycle(sim, np.zeros(8))
    np.testing.assert_allclose(sim.read().effort[:7], MODEL.arm_dynamics.gravity(Q0[:7]), atol=1e-6)
    with pytest.raises(KeyError, match='no link named'):
        sim.apply_wrench('no_such_link', wrench, 1.0)


def test_contact_with_an_obstacle_is_seen_in_the_measured_torques(sim):
    """The hand driven into a wall by right_j0 and held there: the wall pushes it back along
    its normal, and the transmitted torques differ from those holding the same pose free by
    −Jᵀf (the joints carry gravity less what the wall takes)."""
    sim.set_brakes(False)
    sim.add_obstacle('wall', **WALL)
    qs, qds, efforts, _ = run(MODEL, sim, 2.0)
    contacts = sim.contacts()
    assert [(c.obstacle, c.link) for c in contacts] == [('wall', 'right_hand')]
    (c,) = contacts
    assert 0.0 < c.depth < 0.003
    assert c.force @ WALL_NORMAL > 0.95 * np.linalg.norm(c.force) > 20.0
    q = qs[-1]
    free = boards_of(sim.name)
    free.reset_pose(q)
    free.set_brakes(False)
    _, _, free_efforts, _ = run(MODEL, free, 0.3, ref=q)
    jtf = torque_of(MODEL, q, c)
    delta = efforts[-1] - free_efforts[-1]
    assert np.linalg.norm(delta[:7] + jtf) < 0.05 * np.linalg.norm(jtf)


# --- faults -----------------------------------------------------------------------------
def test_a_fault_is_reported_until_cleared(boards):
    if boards.owns_clock:
        boards.condition = 'right_j3 board: over-temperature'
    else:
        boards.inject_fault('right_j3 board: over-temperature')
    cycle(boards, np.zeros(8))
    assert cycle(boards, np.zeros(8)).fault == 'right_j3 board: over-temperature' == boards.fault
    if boards.owns_clock:
        assert 'condition persists' in boards.clear_fault() and boards.fault
        boards.condition = ''
    assert boards.clear_fault() == '' and boards.read().fault == ''


# --- the options and the registry -----------------------------------------------------------
def test_registry_and_options():
    assert {'embedded', 'mujoco'} <= set(BACKENDS)
    with pytest.raises(ValueError, match="unknown backend 'gazebo9'; available: embedded, gazebo, hardware, mujoco"):
        check_backend('gazebo9')
    with pytest.raises(ValueError, match="backend 'mujoco' takes no option 'tabel'; its options: "
                                         "contact_timeconst, gripper, substeps, table, viewer"):
        check_backend('mujoco', {'tabel': True})
    with pytest.raises(ValueError, match="backend option table must be true or false, got 'maybe'"):
        check_backend('mujoco', {'table': 'maybe'})
    with pytest.raises(ValueError, match="backend option substeps must be an integer, got 2.5"):
        check_backend('embedded', {'substeps': 2.5})
    assert check_backend('mujoco', {'table': 'true', 'substeps': '2'}) == {'table': True, 'substeps': 2}
    assert make_boards('embedded', MODEL, {'substeps': '3'}).substeps == 3
    with pytest.raises(ValueError, match='contact_timeconst must be >= 2 MuJoCo steps'):
        make_boards('mujoco', MODEL, {'contact_timeconst': 0.001})


# --- the realtime core on each backend ----------------------------------------------------
def tick(core, n=1):
    for _ in range(n):
        core.boards.wait_cycle(0.01)
        core.tick()


def test_the_core_boots_where_hardware_is_and_follows_its_clock():
    core = RealtimeCore(MODEL, 'hardware', q_arm=list(NEUTRAL))
    logs = core.take_logs()
    assert any('booting where the arm is (the hardware backend cannot be teleported)' in text
               for _, _, text in logs), logs
    tick(core, 300)
    q = core.boards.read().position
    assert np.abs(q - START).max() < 2e-3                          # held where it booted
    assert core.now == pytest.approx(0.3, abs=1e-8)                # the boards' clock
    assert core.boards.cycles == 300
    for command, words in ((cmds.SimJointPositions(names=(), positions=tuple(NEUTRAL)),
                            'cannot be reset to a pose'),
                           (cmds.SimWrench(link='right_hand', wrench=(0.0,) * 6, duration=1.0),
                            'cannot apply external wrenches'),
                           (cmds.SimAddObstacle(name='box', shape='box', position=(1, 0, 0),
                                                quaternion=(0, 0, 0, 1), size=(.1, .1, .1)),
                            'cannot place obstacles')):
        ok, why = core.apply(command)
        assert not ok and 'the hardware backend ' + words in why
    core.close()
    assert core.boards.lifecycle == 'finalized'


def test_cycles_the_core_missed_count_in_its_references():
    """Boards that own the clock need not give the loop every state (a simulator not in
    lockstep with it): the references advance by the boards' time, so a velocity command
    moves the arm by its integral whether the loop saw every step or every other one."""
    moved = []
    for steps in (1, 2):
        core = RealtimeCore(MODEL, 'hardware', q_arm=list(NEUTRAL))
        core.boards.steps = steps
        tick(core, 50)
        q0 = core.boards.read().position[5]
        t0 = core.now
        v = 0.2
        core.apply(cmds.JointCommand(mode=2, names=('right_j5',), velocity=(v,)))
        while core.now - t0 < 0.15:
            core.apply(cmds.JointCommand(mode=2, names=('right_j5',), velocity=(v,)))
            tick(core)
        core.apply(cmds.JointCommand(mode=2, names=('right_j5',), velocity=(0.0,)))
        tick(core, 400 // steps)
        moved.append((core.boards.read().position[5] - q0, core.now - t0))
        core.close()
    (one, t_one), (two, t_two) = moved
    assert t_one == pytest.approx(t_two, abs=2e-3)
    assert one > 0.02 and two == pytest.approx(one, rel=0.03), moved


@pytest.mark.parametrize('backend', ALL)
def test_a_board_fault_puts_the_robot_in_error_until_reset(backend):
    core = RealtimeCore(MODEL, backend, q_arm=list(NEUTRAL))
    boards = core.boards
    tick(core, 50)
    assert not boards.read().brakes
    core.take_logs()
    fault = 'right_j2 board: encoder mismatch'
    if boards.owns_clock:
        boards.condition = fault
    else:
        boards.inject_fault(fault)
    tick(core, 2)
    v = core.state_vector()
    assert StateView(v).error == 1.0 and StateView(v).enabled == 0.0
    assert boards.read().brakes                                       # stopped, brakes on
    logs = core.take_logs()
    assert ('error', 'boards-fault', 'joint boards fault: %s; the robot is in error '
            '(set_super_reset clears it once the boards do)' % fault) in logs, logs
    q = boards.read().position.copy()
    core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS),
                                 position=tuple(np.array(NEUTRAL) + 0.2)))
    tick(core, 100)
    np.testing.assert_allclose(boards.read().position, q, atol=1e-12)  # no motion in error
    if boards.owns_clock:                       # the condition persists: reset refused
        core.apply(cmds.Reset())
        tick(core)
        assert StateView(core.state_vector()).error == 1.0
        assert any('reset refused: the joint boards still report a fault (%s)' % fault in text
                   for _, _, text in core.take_logs())
        boards.condition = ''
    core.apply(cmds.Reset())
    core.apply(cmds.SetEnable(on=True))
    tick(core, 20)
    v = core.state_vector()
    assert StateView(v).error == 0.0 and StateView(v).enabled == 1.0
    assert not boards.read().brakes and boards.fault == ''
    target = np.array(q[:7])
    target[5] += 0.1
    for _ in range(100):                       # moves again
        core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=tuple(target)))
        tick(core, 10)
    assert boards.read().position[5] - q[5] > 0.05
    core.close()
