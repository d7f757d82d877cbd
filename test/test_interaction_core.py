"""Interaction control in the realtime core, without ROS: the core ticked by hand with typed
commands (interaction_control_command as control.commands.InteractionCommand), the embedded
plant pushed through the sim-control commands (wrenches, obstacles). Every effect is what a
user would see: where the endpoint goes under a push, what force it presses a table with,
what the robot reports and logs, that it detects no collision in normal use."""
import math

import numpy as np
import pinocchio as pin
import pytest

from intera_rt.control import commands as cmds
from intera_rt.control.interaction import K_CAP, MOTION_BOUND, ROTATION_WALL
from intera_rt.model import RobotModel
from intera_rt.realtime.core import CONTROLLER_NAMES, RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

NEUTRAL = np.array(NEUTRAL)
JOINTS = tuple(ARM_JOINTS)
DT = 0.001
IMPEDANCE, FORCE, IMPEDANCE_WITH_FORCE_LIMIT, FORCE_WITH_MOTION_LIMIT = 1, 2, 3, 4
SDK_K_NULLSPACE = (5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0)    # set_interaction_options' default


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


def interaction(mode=(IMPEDANCE,) * 6, K=(1300.0,) * 3 + (30.0,) * 3, max_impedance=(False,) * 6,
                force=(0.0,) * 6, K_nullspace=SDK_K_NULLSPACE, active=True, **kw):
    return cmds.InteractionCommand(interaction_control_active=active, interaction_control_mode=tuple(mode),
                                   K_impedance=tuple(K), max_impedance=tuple(max_impedance),
                                   D_impedance=(), K_nullspace=tuple(K_nullspace),
                                   force_command=tuple(force), **kw)


class Sim:
    """A realtime core at neutral, ticked by hand; the endpoint's pose from the model."""

    def __init__(self, model):
        self.core = RealtimeCore(model, q_arm=list(NEUTRAL))
        # Past collision detection's settling after boot (0.3 s): it watches every test.
        for _ in range(350):
            self.core.tick()
        self.dyn = model.arm_dynamics
        self._data = self.dyn.model.createData()
        self._hand = self.dyn.frame_id('right_hand')
        self.max_dtau = 0.0
        self.collisions = 0

    @property
    def q(self):
        return self.core.boards.read().position[:7].copy()

    @property
    def state(self):
        """The core's state now (realtime.state.StateView)."""
        return StateView(self.core.state_vector())

    @property
    def controller(self):
        return CONTROLLER_NAMES[int(self.state.controller)]

    def pose(self, q=None):
        R, p, _ = self.dyn.frame_kinematics(self._hand, self.q if q is None else q, self._data)
        return R, p

    def displacement(self, start):
        """(translation m, rotation vector rad) of the endpoint from pose `start`, in base."""
        R, p = self.pose()
        return p - start[1], pin.log3(R @ start[0].T)

    def apply(self, command):
        result = self.core.apply(command)
        return result

    def logs(self):
        return self.core.take_logs()

    def run(self, seconds, each=None):
        """Tick for `seconds`, calling each(t) first; tracks the largest change of the
        commanded torque between two ticks and the ticks a collision was reported."""
        prev = self.state.cmd_effort
        for _ in range(int(round(seconds / DT))):
            if each is not None:
                each(self.core.now)
            self.core.tick()
            v = self.core.state_vector()
            tau = StateView(v).cmd_effort
            self.max_dtau = max(self.max_dtau, float(np.abs(tau - prev).max()))
            prev = tau
            self.collisions += int(StateView(v).collision)

    def push(self, wrench, ramp=0.3):
        """each(t) for run(): the wrench on right_hand (about its origin, in base), ramped up
        over `ramp` s as a person's push is."""
        t0 = self.core.now
        w = np.array(wrench, float)

        def each(t):
            self.core.apply(cmds.SimWrench(link='right_hand', wrench=tuple(w * min(1.0, (t - t0) / ramp)),
                                           duration=0.0005))
        return each

    def contact_force(self):
        return sum((c.force for c in self.core.boards.contacts()), np.zeros(3))

    def table_below(self, gap=0.05):
        """A table under the hand, its top `gap` below right_hand's origin (the hand's shape
        reaches 35 mm below it: the default leaves 15 mm of clearance)."""
        _, p = self.pose()
        ok, msg = self.apply(cmds.SimAddObstacle(name='table', shape='box',
                                                 position=(p[0], p[1], p[2] - gap - 0.1),
                                                 quaternion=(0, 0, 0, 1), size=(0.4, 0.4, 0.2)))
        assert ok, msg


def lowered(sim, q, dz):
    """Joint angles that move the endpoint dz along base z from q (first order)."""
    R, p = sim.pose(q)
    J = sim.dyn.frame_kinematics(sim._hand, q, sim._data)[2]
    return q + np.linalg.pinv(J) @ np.array([0, 0, dz, 0, 0, 0])


def quintic_stream(sim, q0, q1, T, every=5):
    """each(t) sending TRAJECTORY_MODE samples of a quintic from q0 to q1 over T s (200 Hz)."""
    t0, n = sim.core.now, [0]

    def each(t):
        n[0] += 1
        if n[0] % every:
            return
        s = min(max((t - t0) / T, 0.0), 1.0)
        p = q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5)
        v = (q1 - q0) * (30 * s**2 - 60 * s**3 + 30 * s**4) / T
        a = (q1 - q0) * (60 * s - 180 * s**2 + 120 * s**3) / T**2
        sim.apply(cmds.JointCommand(mode=4, names=JOINTS, position=tuple(p), velocity=tuple(v),
                                    acceleration=tuple(a)))
    return each


# --- impedance ------------------------------------------------------------------------------
@pytest.mark.parametrize('axis', range(6), ids=['x', 'y', 'z', 'rx', 'ry', 'rz'])
def test_a_steady_push_displaces_the_endpoint_by_F_over_K_and_it_returns(model, axis):
    """K = 500 N/m and 30 N·m/rad; 20 N (3 N·m) ramped up at the hand: the endpoint gives way
    by F/K within 10 % along the push, little elsewhere; released, it comes back. The
    interaction torques are reported (SEAJointState interaction_torque) and no collision is
    detected."""
    sim = Sim(model)
    sim.apply(interaction(K=(500.0,) * 3 + (30.0,) * 3))
    start = sim.pose()
    wrench = np.zeros(6)
    wrench[axis] = 20.0 if axis < 3 else 3.0
    sim.run(2.0, sim.push(wrench))
    dp, dr = sim.displacement(start)
    moved = np.concatenate((dp, dr))
    expected = wrench[axis] / (500.0 if axis < 3 else 30.0)
    assert moved[axis] == pytest.approx(expected, rel=0.10), moved
    same_kind = [i for i in (range(3) if axis < 3 else range(3, 6)) if i != axis]
    assert np.abs(moved[same_kind]).max() < 0.1 * expected, moved
    torques = sim.state.interaction_torque
    assert np.abs(torques).max() > 0.2, 'no interaction torque reported while pushed'
    sim.run(2.0)
    dp, dr = sim.displacement(start)
    assert np.abs(dp).max() < 2e-3 and np.abs(dr).max() < 0.01, (dp, dr)     # 5 %, 10 %
    # The elbow comes back as far as the nullspace stiffness (5-10 N·m/rad) beats the
    # joints' friction (0.5 N·m on right_j0..3).
    assert np.abs(sim.q - NEUTRAL).max() < 0.06, 'the elbow did not come back'
    assert sim.collisions == 0 and sim.controller == 'interaction'


def test_a_sudden_blow_and_a_push_on_the_forearm_are_still_detected(model):
    """Collision detection keeps watching: a sudden 40 N at the hand (nothing the impedance
    has answered yet) is an impact; a push ramped up on the forearm, which the endpoint's
    wrench does not account for, is detected too (as the elbow gives way in the soft
    nullspace, its wrench mapped to the hand grows to an over-wrench). Either stops the arm
    (position hold)."""
    sim = Sim(model)
    sim.apply(interaction(K=(500.0,) * 3 + (10.0,) * 3))
    sim.logs()
    sim.run(0.1, sim.push((40.0, 0, 0, 0, 0, 0), ramp=1e-3))
    assert sim.collisions and sim.controller == 'hold'
    assert any(line.startswith('impact') for _, _, line in sim.logs())
    sim = Sim(model)
    sim.apply(interaction(K=(500.0,) * 3 + (10.0,) * 3))
    sim.logs()

    def forearm(t, t0=sim.core.now):
        f = min(80.0, 100.0 * (t - t0))
        sim.apply(cmds.SimWrench(link='right_l3', wrench=(0.0, f, 0.0, 0, 0, 0), duration=0.0005))
    sim.run(1.0, forearm)
    assert sim.collisions and sim.controller == 'hold'
    assert any(line.startswith(('squish', 'hand over-wrench', 'impact')) for _, _, line in sim.logs())


# --- force ----------------------------------------------------------------------------------
@pytest.mark.parametrize('force, gap', [(10.0, 0.05), (30.0, 0.036)])
def test_force_mode_presses_a_table_with_the_commanded_force(model, force, gap):
    """FORCE_MODE on z (impedance elsewhere): the hand goes down, slowed by the force
    control's damping (10 N: 3.5 cm/s), meets a table (15 mm below; 1 mm for 30 N, which
    would hit it at 10 cm/s: an impact) and presses it with the commanded force within
    10 %; pressing is no collision (the robot expects the reaction to what it commands)."""
    sim = Sim(model)
    sim.table_below(gap)
    sim.apply(interaction(mode=(1, 1, FORCE, 1, 1, 1), force=(0, 0, -force, 0, 0, 0)))
    sim.run(3.0)
    f = sim.contact_force()
    assert f[2] == pytest.approx(force, rel=0.10), f
    assert np.hypot(f[0], f[1]) < 0.5
    assert sim.collisions == 0 and sim.controller == 'interaction'


def test_the_force_limit_holds_where_impedance_would_press_harder(model):
    """A motion (TRAJECTORY_MODE, with interaction control active) takes the reference 5 cm
    down, 3.5 cm into a table: IMPEDANCE presses with K·depth (1300 N/m: about 45 N),
    IMPEDANCE_WITH_FORCE_LIMIT with at most its force_command (10 N)."""
    pressed = {}
    for mode in (IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT):
        sim = Sim(model)
        sim.table_below()
        sim.apply(interaction(mode=(1, 1, mode, 1, 1, 1), force=(0, 0, 10.0, 0, 0, 0)))
        sim.run(2.5, quintic_stream(sim, NEUTRAL, lowered(sim, NEUTRAL, -0.05), 1.5))
        assert sim.controller == 'interaction' and sim.collisions == 0
        pressed[mode] = sim.contact_force()[2]
    assert pressed[IMPEDANCE] > 35.0, pressed
    assert pressed[IMPEDANCE_WITH_FORCE_LIMIT] == pytest.approx(10.0, rel=0.10), pressed


def test_force_with_motion_limit_stops_at_its_bound(model):
    """FORCE_WITH_MOTION_LIMIT pushing 30 N down in free space: the hand moves until 0.12 m
    from its reference and stops there (the wall yields 30 N / 10⁴ N/m = 3 mm)."""
    sim = Sim(model)
    start = sim.pose()
    sim.apply(interaction(mode=(1, 1, FORCE_WITH_MOTION_LIMIT, 1, 1, 1), force=(0, 0, -30.0, 0, 0, 0)))
    sim.run(2.5)
    dp, _ = sim.displacement(start)
    assert -MOTION_BOUND[2] - 0.005 < dp[2] < -MOTION_BOUND[2], dp
    assert np.abs(dp[:2]).max() < 0.005
    sim.run(0.5)
    assert abs(sim.displacement(start)[0][2] - dp[2]) < 1e-3, 'it did not stay at its bound'


def test_the_interaction_frame_sets_the_axes_and_the_endpoint_frame_follows_the_hand(model):
    """A frame turned 90° about z (its x along base y): 500 N/m on its x, 1300 on the rest;
    a 20 N push along base y gives way 20/500 m. In the endpoint frame (right_hand's z
    points down at neutral), a force of +10 N along z presses a table below with 10 N."""
    sim = Sim(model)
    s45 = math.sqrt(0.5)
    sim.apply(interaction(K=(500.0, 1300.0, 1300.0, 30.0, 30.0, 30.0),
                          frame_orientation=(0.0, 0.0, s45, s45)))
    start = sim.pose()
    sim.run(2.0, sim.push((0, 20.0, 0, 0, 0, 0)))
    dp = sim.displacement(start)[0]
    assert dp[1] == pytest.approx(20.0 / 500.0, rel=0.10), dp
    sim = Sim(model)
    sim.table_below()
    sim.apply(interaction(mode=(1, 1, FORCE, 1, 1, 1), force=(0, 0, 10.0, 0, 0, 0),
                          in_endpoint_frame=True))
    sim.run(2.5)
    assert sim.contact_force()[2] == pytest.approx(10.0, rel=0.10), sim.contact_force()
    assert sim.collisions == 0


def test_force_control_damping_limits_the_speed_in_free_space_unless_disabled(model):
    """5 N up in free space for 0.3 s: with the force control's damping the hand creeps
    (5 N / 288 N·s/m ≈ 2 cm/s); with disable_damping_in_force_control it accelerates."""
    speeds = {}
    for disabled in (False, True):
        sim = Sim(model)
        start = sim.pose()
        sim.apply(interaction(mode=(1, 1, FORCE, 1, 1, 1), force=(0, 0, 5.0, 0, 0, 0),
                              disable_damping_in_force_control=disabled))
        sim.run(0.3)
        before = sim.displacement(start)[0][2]
        sim.run(0.05)
        speeds[disabled] = (sim.displacement(start)[0][2] - before) / 0.05
    assert 0.0 < speeds[False] < 0.025, speeds
    assert speeds[True] > 4 * speeds[False], speeds


# --- constrained zero-G --------------------------------------------------------------------
def test_constrained_zero_g_frees_exactly_the_chosen_axes(model):
    """constrained_zeroG.py -ph: zero stiffness on x and y, max_impedance on the others. A
    6 N push moves the hand along x (and y, which the arm's inertia couples) and it stays
    where it is let go; the same push along z, a constrained axis, barely moves it."""
    sim = Sim(model)
    start = sim.pose()
    sim.apply(interaction(K=(0.0,) * 6, max_impedance=(False, False, True, True, True, True),
                          K_nullspace=(10, 10, 7, 0, 0, 0, 0), rotations_for_constrained_zeroG=True))
    sim.run(0.6, sim.push((6.0, 0, 0, 0, 0, 0), ramp=0.05))
    sim.run(1.0)
    dp, dr = sim.displacement(start)
    assert dp[0] > 0.03, dp
    assert abs(dp[2]) < 2e-3 and np.abs(dr).max() < 0.01, (dp, dr)
    sim.run(0.5)
    assert np.abs(sim.displacement(start)[0] - dp).max() < 2e-3, 'the hand did not stay where let go'
    here = sim.pose()
    sim.run(1.5, sim.push((0, 0, 6.0, 0, 0, 0), ramp=0.05))
    dp, dr = sim.displacement(here)
    assert abs(dp[2]) < 6.0 / 1300.0 * 1.2, dp           # at least the stiffness of the caps
    assert sim.collisions == 0


@pytest.mark.parametrize('free_rotations', [False, True])
def test_the_rotational_wall_stops_a_free_rotation_at_82_5_degrees(model, free_rotations):
    """Zero stiffness about z only: a 0.5 N·m torque turns the hand about z until the virtual
    wall at 82.5° (a few degrees of overshoot), unless rotations_for_constrained_zeroG."""
    sim = Sim(model)
    start = sim.pose()
    sim.apply(interaction(K=(0.0,) * 6, max_impedance=(True,) * 5 + (False,),
                          K_nullspace=(10, 10, 7, 0, 0, 0, 0),
                          rotations_for_constrained_zeroG=free_rotations))
    turned = []
    push = sim.push((0, 0, 0, 0, 0, 0.5), ramp=0.05)

    def each(t):
        push(t)
        turned.append(math.degrees(sim.displacement(start)[1][2]) if len(turned) % 10 == 0 else turned[-1])
    sim.run(1.6, each)
    wall = math.degrees(ROTATION_WALL)
    if free_rotations:
        assert max(turned) > wall + 20.0, max(turned)
    else:
        assert wall - 1.0 < turned[-1] < wall + 1.0, turned[-1]
        assert max(turned) < wall + 5.0, max(turned)
        assert np.abs(sim.displacement(start)[0]).max() < 3e-3
    assert sim.collisions == 0


# --- changes, reference, modes ---------------------------------------------------------------
@pytest.mark.parametrize('resetting', [True, False])
def test_parameter_changes_cause_no_jump(model, resetting):
    """Pushed 20 N aside at 500 N/m, the stiffness goes to 1300 N/m and a force is added on
    z: the commanded torques change smoothly (≤ 1 N·m per tick) and the hand moves slowly.
    With reference resetting the new spring starts from where the hand is (it gives way a
    further 20/1300 m); without, it pulls back toward the old reference (20/1300 m from it)."""
    sim = Sim(model)
    reset = dict(disable_reference_resetting=not resetting)
    sim.apply(interaction(K=(500.0,) * 3 + (10.0,) * 3, **reset))
    start = sim.pose()
    push = sim.push((20.0, 0, 0, 0, 0, 0))
    sim.run(1.5, push)
    before = sim.displacement(start)[0][0]
    sim.max_dtau = 0.0
    speeds = []

    def each(t):
        push(t)
        speeds.append(np.abs(sim.core.boards.read().velocity[:7]).max())
    sim.apply(interaction(K=(1300.0,) * 3 + (30.0,) * 3, mode=(1, 1, FORCE, 1, 1, 1),
                          force=(0, 0, 3.0, 0, 0, 0), **reset))
    sim.run(1.5, each)
    assert sim.max_dtau <= 1.0 + 1e-9, sim.max_dtau
    assert max(speeds) < 0.15, max(speeds)
    after = sim.displacement(start)[0][0]
    expected = before + 20.0 / 1300.0 if resetting else 20.0 / 1300.0
    assert after == pytest.approx(expected, abs=0.004), (before, after)
    assert sim.collisions == 0


def test_a_single_command_keeps_interaction_control_and_inactive_holds_where_the_arm_is(model):
    """No command timeout (set_interaction_options -r 0); interaction_control_active false →
    position hold at the pose the push left the arm in (no spring back)."""
    sim = Sim(model)
    sim.apply(interaction(K=(500.0,) * 3 + (10.0,) * 3))
    start = sim.pose()
    push = sim.push((0, 10.0, 0, 0, 0, 0))
    sim.run(2.0, push)
    assert sim.controller == 'interaction'
    pushed = sim.displacement(start)[0]
    sim.apply(interaction(active=False))
    assert sim.controller == 'hold'
    assert ('info', 'interaction-off', 'interaction control ended: position hold') in sim.logs()
    sim.run(0.5, push)                           # the hold takes the push...
    t0 = sim.core.now
    sim.run(1.0, lambda t: sim.apply(cmds.SimWrench(
        link='right_hand', wrench=(0, 10.0 * max(0.0, 1.0 - (t - t0) / 0.3), 0, 0, 0, 0),
        duration=0.0005)))
    assert np.abs(sim.displacement(start)[0] - pushed).max() < 3e-3    # ...and stays there
    assert sim.collisions == 0


def test_trajectory_samples_move_the_reference_and_other_modes_take_over(model):
    """While interaction control is active, a TRAJECTORY_MODE stream moves its reference (the
    hand follows a quintic through 0.3-0.5 rad per joint within a few mm at max impedance),
    and it stays active; a POSITION_MODE command hands the arm to the position controller."""
    sim = Sim(model)
    sim.apply(interaction(max_impedance=(True,) * 6))
    q1 = NEUTRAL + np.array([0.4, -0.2, 0.3, 0.3, -0.4, 0.3, 0.5])
    stream = quintic_stream(sim, NEUTRAL, q1, 2.0)
    worst = [0.0]

    def each(t):
        stream(t)
        if int(round(t / DT)) % 20 == 0:
            s = min(max((t - t0) / 2.0, 0.0), 1.0)
            ref = NEUTRAL + (q1 - NEUTRAL) * (10 * s**3 - 15 * s**4 + 6 * s**5)
            worst[0] = max(worst[0], np.linalg.norm(sim.pose()[1] - sim.pose(ref)[1]))
    t0 = sim.core.now
    sim.run(2.6, each)
    assert sim.controller == 'interaction'
    assert worst[0] < 0.005, worst[0]
    assert np.linalg.norm(sim.pose()[1] - sim.pose(q1)[1]) < 1e-3
    sim.apply(cmds.JointCommand(mode=1, names=JOINTS, position=tuple(q1)))
    assert sim.controller == 'position'
    assert sim.collisions == 0


def test_the_cuff_hands_over_to_zero_g_and_back(model):
    sim = Sim(model)
    sim.apply(interaction())
    sim.apply(cmds.CuffInput(source='cuff', pressed=True))
    sim.run(0.05)
    assert sim.controller == 'zero_g'
    sim.apply(interaction())                      # a republishing client: ignored meanwhile
    sim.apply(cmds.CuffInput(source='cuff', pressed=False))
    sim.run(0.05)
    assert sim.controller == 'interaction'


# --- parameters: caps, defaults, reports, rejections ------------------------------------------
def test_caps_and_defaults_are_applied_reported_and_logged(model):
    sim = Sim(model)
    sim.apply(cmds.InteractionCommand(interaction_control_active=True, interaction_control_mode=(1,) * 6,
                                      K_impedance=(5000.0, 100.0, 0.0, 50.0, 3.0, 0.0),
                                      max_impedance=(False, False, False, False, False, True),
                                      D_impedance=(), K_nullspace=(20.0,) * 7,
                                      force_command=(0.0, 0.0, 80.0, 0.0, 0.0, -9.0)))
    logs = sim.logs()
    line = next(text for _, key, text in logs if key == 'interaction-params')
    for fragment in ('K_impedance[0] = 5000 capped at 1300 N/m', 'K_impedance[3] = 50 capped at 30',
                     'K_nullspace[0] = 20 capped at 10', 'force_command[2] = 80 capped at 50 N',
                     'force_command[5] = -9 capped at -5 N·m'):
        assert fragment in line, line
    assert any(key == 'interaction-applied' for _, key, _ in logs)
    sim.run(0.3)
    K, D = sim.state.interaction.K_impedance, sim.state.interaction.D_impedance
    assert list(K[:5]) == [K_CAP[0], 100.0, 0.0, K_CAP[3], 3.0]
    assert 30.0 <= K[5] <= 300.0                         # max_impedance at this pose
    assert D[1] == pytest.approx(8.0 * math.sqrt(100.0)) and D[2] == 0.0
    assert list(sim.state.interaction.force_command) == [0.0, 0.0, 50.0, 0.0, 0.0, -5.0]
    assert list(sim.state.interaction.K_nullspace) == [10.0] * 7
    # The same command again (a client republishing): nothing new to log.
    sim.apply(cmds.InteractionCommand(interaction_control_active=True, interaction_control_mode=(1,) * 6,
                                      K_impedance=(5000.0, 100.0, 0.0, 50.0, 3.0, 0.0),
                                      max_impedance=(False, False, False, False, False, True),
                                      D_impedance=(), K_nullspace=(20.0,) * 7,
                                      force_command=(0.0, 0.0, 80.0, 0.0, 0.0, -9.0)))
    assert sim.logs() == []


GOOD = dict(interaction_control_active=True, interaction_control_mode=(1,) * 6,
            K_impedance=(500.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6, D_impedance=(),
            K_nullspace=(5.0,) * 7, force_command=(0.0,) * 6)
BAD = [
    (dict(K_impedance=(500.0,) * 5), 'K_impedance has 5 values, expected 6'),
    (dict(max_impedance=(True,) * 7), 'max_impedance has 7 values'),
    (dict(D_impedance=(8.0,) * 3), 'D_impedance has 3 values, expected 6'),
    (dict(K_nullspace=(5.0,) * 6), 'K_nullspace has 6 values, expected 7'),
    (dict(force_command=(0.0,) * 7), 'force_command has 7 values, expected 6'),
    (dict(interaction_control_mode=(1,) * 5), 'interaction_control_mode has 5 values'),
    (dict(K_impedance=(500.0, -1.0, 500.0, 1.0, 1.0, 1.0)), 'K_impedance[1] = -1 must be >= 0'),
    (dict(K_impedance=(500.0, 500.0, math.nan, 1.0, 1.0, 1.0)), 'K_impedance[2] is nan'),
    (dict(D_impedance=(8.0, 8.0, 8.0, -2.0, 2.0, 2.0)), 'D_impedance[3] = -2 must be >= 0'),
    (dict(K_nullspace=(5.0,) * 6 + (-0.5,)), 'K_nullspace[6] = -0.5 must be >= 0'),
    (dict(force_command=(0.0, math.inf, 0.0, 0.0, 0.0, 0.0)), 'force_command[1] is inf'),
    (dict(interaction_control_mode=(1, 1, 5, 1, 1, 1)), 'interaction_control_mode[2] = 5 is not one of'),
    (dict(interaction_control_mode=(0, 1, 1, 1, 1, 1)), 'interaction_control_mode[0] = 0'),
    (dict(endpoint_name='right_gripper_tip'), "endpoint_name 'right_gripper_tip' is not supported"),
    (dict(frame_orientation=(0.0, 0.0, 0.5, 0.5)), 'interaction_frame.orientation (x, y, z, w) = [0, 0, 0.5, 0.5] is not a unit quaternion'),
    (dict(frame_position=(0.0, math.nan, 0.0)), 'interaction_frame.position.y is nan'),
]


def test_bad_parameters_are_rejected_with_the_field_and_no_change(model):
    """Interaction control at 500 N/m holds the hand 10 N aside; each bad command is refused
    with an error naming the field and value, and the arm keeps doing what it did."""
    sim = Sim(model)
    sim.apply(cmds.InteractionCommand(**GOOD))
    start = sim.pose()
    push = sim.push((10.0, 0, 0, 0, 0, 0))
    sim.run(1.5, push)
    held = sim.displacement(start)[0]
    sim.logs()
    for change, message in BAD:
        sim.apply(cmds.InteractionCommand(**dict(GOOD, **change)))
        logs = sim.logs()
        assert len(logs) == 1 and logs[0][0] == 'error', (change, logs)
        assert logs[0][2].startswith('interaction_control_command rejected: ' + message), logs[0][2]
        sim.run(0.02, push)
        assert sim.controller == 'interaction'
        assert np.abs(sim.displacement(start)[0] - held).max() < 1e-3, change
        assert list(sim.state.interaction.K_impedance) == [500.0] * 3 + [10.0] * 3


def test_a_bad_first_command_leaves_the_arm_in_position_hold(model):
    sim = Sim(model)
    sim.apply(cmds.InteractionCommand(**dict(GOOD, K_impedance=(1.0,) * 5)))
    assert sim.controller == 'hold'
    assert sim.logs()[0][0] == 'error'


def test_commands_are_refused_while_disabled(model):
    sim = Sim(model)
    sim.apply(cmds.SetEnable(on=False))
    sim.run(0.01)
    sim.apply(cmds.InteractionCommand(**GOOD))
    assert sim.controller == 'hold'
    assert any('interaction_control_command ignored' in text for _, _, text in sim.logs())
