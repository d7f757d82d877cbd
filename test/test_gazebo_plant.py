"""The Gazebo stand-in's physics (boards.gazebo_physics: the URDF as Gazebo's ODE sees it, in
MuJoCo) and what the robot's control must make of a plant without drive armature. No ROS.

- the model: no armature, the URDF's damping applied explicitly and its friction as a hard
  constraint (ODE's), stops exactly at the limits, the floor at world z = 0 under a base spawned at -z,
  the zero pose unless -J says otherwise;
- the robot's controllers and the brakes' stand-in, given the plant's armature
  (JointBoards.plant_armature: Gazebo's is zero), hold the arm still against this plant with
  a step or more of latency, as the gazebo backend drives it; the same laws assuming the
  robot's armature (the deliberately wrong configuration) shake the wrist apart, so these
  tests can fail.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from intera_rt.boards import make_boards
from intera_rt.boards.base import BackendOption, JointBoards, SimulatedPlant
from intera_rt.boards.gazebo import SPAWN_Z, GazeboBoards
from intera_rt.boards.gazebo_model import BrakeHold
from intera_rt.control.arm import Arm
from intera_rt.model import RobotModel
from intera_rt.robot import ARM_JOINTS, ARMATURE, BOARD_JOINTS, NEUTRAL

MODEL = RobotModel.from_file()
Q_NEUTRAL = np.r_[NEUTRAL, 0.0]


def GazeboPhysics(*args, **kwargs):
    """(MuJoCo imported when a test runs, not at collection: the MuJoCo cameras' tests
    choose its OpenGL platform before it is first imported.)"""
    from intera_rt.boards.gazebo_physics import GazeboPhysics
    return GazeboPhysics(*args, **kwargs)


def test_the_model_is_the_urdf_as_gazebo_sees_it():
    import mujoco
    ph = GazeboPhysics(MODEL, spawn=(0.0, 0.0, SPAWN_Z), joints={'right_j1': -0.5})
    m = ph.m
    lim = MODEL.limit_arrays(BOARD_JOINTS)
    assert not m.dof_armature.any()
    dof = ph._dof
    np.testing.assert_array_equal(m.dof_damping[dof], lim['damping'])
    np.testing.assert_array_equal(m.dof_frictionloss[dof], lim['friction'])
    np.testing.assert_allclose(m.jnt_range[[m.dof_jntid[i] for i in dof]],
                               np.c_[lim['lower'], lim['upper']])
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    assert m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP        # explicit damping
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, 'floor')
    assert m.geom_pos[floor][2] == -SPAWN_Z
    expected = np.zeros(8)
    expected[1] = -0.5
    np.testing.assert_array_equal(ph.position, expected)
    # Commanded effort beyond the limit is saturated, as gazebo_ros_control does.
    ph.step(np.full(8, 1000.0))
    np.testing.assert_array_equal(ph.applied, lim['effort'])


def test_the_stops_are_at_the_limits_and_damping_is_not_in_the_applied_effort():
    ph = GazeboPhysics(MODEL)
    ph.set_positions(Q_NEUTRAL)
    push = np.zeros(8)
    push[6] = 5.0                               # right_j6: up to its limit, and on it
    for _ in range(2000):
        ph.step(push)
    upper = MODEL.limits['right_j6'].upper
    assert abs(ph.position[6] - upper) < 5e-3, ph.position[6]   # (a stop gives a few mrad)
    assert ph.applied[6] == 5.0


def test_joint_friction_is_a_hard_constraint_as_odes():
    """ODE's joint friction holds the joint still under any push below it (MuJoCo's default
    friction loss lets a light wrist creep), and takes exactly its torque off a sliding
    joint: right_j6 (friction 0.05 N·m, damping 0.1 N·m·s/rad), gravity off."""
    lim = MODEL.limits['right_j6']
    for push, speed in ((0.8 * lim.friction, 0.0), (lim.friction + 0.01, 0.01 / lim.damping)):
        ph = GazeboPhysics(MODEL)
        ph.m.opt.gravity[:] = 0.0
        tau = np.zeros(8)
        tau[6] = push
        for _ in range(800):
            ph.step(tau)
        assert ph.velocity[6] == pytest.approx(speed, abs=1e-3), (push, ph.velocity[6])


def _hold(control, delay, seconds=1.5, kick=0.0):
    """The arm at neutral under `control(q, qd, now)` → 8 torques, applied `delay` steps after the
    state they answer (the loop is not in lockstep with Gazebo), each joint starting at
    `kick` rad/s. Returns the largest joint error (rad) and speed (rad/s) over the run."""
    ph = GazeboPhysics(MODEL)
    ph.set_positions(Q_NEUTRAL)
    ph.d.qvel[ph._dof] = kick
    queue = [control(ph.position, ph.velocity, 0.0)] * delay      # (held from the start)
    err = speed = 0.0
    for k in range(int(seconds / ph.dt)):
        queue.append(control(ph.position, ph.velocity, k * ph.dt))
        ph.step(queue.pop(0))
        err = max(err, np.abs(ph.position - Q_NEUTRAL)[:7].max())
        speed = max(speed, np.abs(ph.velocity).max())
    return err, speed


def _position_hold(arm):
    target, zero = np.array(NEUTRAL), np.zeros(7)

    def control(q, qd, now):
        state = SimpleNamespace(now=now, q=q[:7], qd=qd[:7], gravity=lambda: 0.0)
        # (track leaves gravity to gravity compensation; here its model terms include it)
        return np.r_[arm.track(state, target, zero, zero), 0.0]
    return control


def test_plant_armature_is_declared_per_backend():
    assert JointBoards.plant_armature is None
    assert JointBoards.plant_model(MODEL) is MODEL
    gz = GazeboBoards.plant_model(MODEL)
    assert not gz.limit_arrays(BOARD_JOINTS)['armature'].any()
    assert MODEL.limit_arrays(ARM_JOINTS)['armature'].tolist() == [ARMATURE[n] for n in ARM_JOINTS]
    assert make_boards('gazebo', MODEL).plant_armature == 0.0
    # The robot's gains are unchanged on the robot's drives.
    arm = Arm(MODEL)
    np.testing.assert_array_equal(arm.kp_joint, arm.kp)


@pytest.mark.parametrize('delay', [1, 3])
def test_position_control_on_the_plants_armature_holds_still(delay):
    err, speed = _hold(_position_hold(Arm(GazeboBoards.plant_model(MODEL))), delay)
    assert err < 1e-3 and speed < 0.05, (err, speed)


# An unstable configuration needs a disturbance to show: ODE's joint friction (a hard
# constraint) keeps an arm that starts exactly at rest on its target still, stable or not.
KICK = 0.05                                     # rad/s on every joint at the start


def test_position_control_assuming_the_robots_armature_shakes_the_wrist():
    """The configuration the gazebo backend had before the plant declared its armature."""
    err, speed = _hold(_position_hold(Arm(MODEL)), 1, kick=KICK)
    assert speed > 10.0, (err, speed)


@pytest.mark.parametrize('delay', [1, 3])
def test_the_brakes_stand_in_holds_on_the_plants_inertia(delay):
    brake = BrakeHold(MODEL, BOARD_JOINTS, GazeboBoards.plant_armature)
    err, speed = _hold(lambda q, qd, _now: brake.torque(Q_NEUTRAL, q, qd), delay)
    assert err < 1e-3 and speed < 0.05, (err, speed)
    wrong = BrakeHold(MODEL, BOARD_JOINTS)          # the robot's armature assumed
    err, speed = _hold(lambda q, qd, _now: wrong.torque(Q_NEUTRAL, q, qd), delay, kick=KICK)
    assert speed > 10.0, (err, speed)


@pytest.mark.parametrize('plant', [True, False])
def test_the_observer_takes_gazebos_stops_at_the_limits_for_no_push(plant):
    """right_j6 driven into its stop by 2 N·m: on Gazebo the stop is at the limit
    (plant_stop_margin 0), and the momentum observer built on the plant's model ignores the
    readings on it; built on the robot's (stops 10 mrad further) it reads the stop's reaction
    as a push from the world."""
    from intera_rt.control.momentum_observer import MomentumObserver
    from intera_rt.robot import HARD_STOP_MARGIN
    model = GazeboBoards.plant_model(MODEL) if plant else MODEL
    assert model.stop_margin == (0.0 if plant else HARD_STOP_MARGIN)
    observer = MomentumObserver(model, 50.0)
    ph = GazeboPhysics(MODEL)
    ph.set_positions(Q_NEUTRAL)
    lim = MODEL.limit_arrays(BOARD_JOINTS)
    brake = BrakeHold(MODEL, BOARD_JOINTS, 0.0)

    def reading():
        q, qd = ph.position, ph.velocity
        effort = ph.applied - lim['damping'] * qd - lim['friction'] * np.clip(qd / 0.01, -1, 1)
        return SimpleNamespace(q=q[:7], qd=qd[:7], q_head=q[7], qd_head=qd[7], effort=effort[:7])
    observer.restart(reading())
    worst = 0.0
    for _ in range(600):
        tau = brake.torque(Q_NEUTRAL, ph.position, ph.velocity)
        tau[6] = 2.0
        ph.step(tau)
        observer.update(reading(), ph.dt)
        worst = max(worst, abs(observer.r[6]))
    assert ph.position[6] > MODEL.limits['right_j6'].upper           # on the stop
    if plant:
        assert worst < 0.5, worst
    else:
        assert worst > 1.0, worst


def test_every_backend_declares_how_long_configure_may_wait():
    """realtime_loop waits for its core this long more than its own boot timeout."""
    from intera_rt.boards import BACKENDS, backend_class
    for name in BACKENDS:
        assert backend_class(name).configure_timeout({}) >= 0.0
    assert backend_class('gazebo').configure_timeout({'connect_timeout': 300.0}) == 300.0
    assert backend_class('embedded').configure_timeout({}) == 0.0


# --- the realtime core on the stand-in's physics ------------------------------------------------
class _StandinInLockstep(SimulatedPlant):
    """The stand-in's physics as joint boards stepped by the core: each command applied
    `delay` physics steps after the state it answers (as the gazebo backend's reach Gazebo),
    the brakes' stand-in while braked, the plant as the gazebo backend declares it."""
    plant_armature = GazeboBoards.plant_armature
    plant_stop_margin = GazeboBoards.plant_stop_margin
    plant_latency = GazeboBoards.plant_latency
    capabilities = frozenset({'teleport', 'wrench'})
    OPTIONS = {'delay': BackendOption(int, 1, 'physics steps a command is applied late')}

    def __init__(self, model, delay=1):
        self.damping = self._init_plant(model, BOARD_JOINTS)['damping']
        self.ph = GazeboPhysics(model)
        self.delay = delay
        self._sent = []
        self._brake = BrakeHold(model, BOARD_JOINTS, self.plant_armature)
        self._held = None
        self.disturbance = np.zeros(8)        # N·m the world applies at the joints
        self._read_physics()

    def _read_physics(self):
        ph = self.ph
        self.q, self.qd, self.time = ph.position.copy(), ph.velocity.copy(), ph.time
        # (the effort the gazebo backend reports: the applied one less the URDF's damping)
        self.tau_transmitted = ph.applied - self.damping * self.qd

    def set_brakes(self, engaged):
        self.brakes = bool(engaged)
        self._held = self.q.copy() if self.brakes else None

    def advance(self, dt):
        tau = self._brake.torque(self._held, self.q, self.qd) if self.brakes else self.tau_cmd
        self._sent.append(tau)
        self.ph.step((self._sent.pop(0) if len(self._sent) > self.delay else self._sent[0])
                     + self.disturbance)
        self._read_physics()

    def reset_pose(self, positions):
        self.ph.set_positions(np.asarray(positions, float))
        self._sent = []
        self._read_physics()
        self._held = self.q.copy() if self.brakes else None

    def apply_wrench(self, link, wrench, duration):
        body = 'right_l6' if link == 'right_hand' else link     # (Gazebo lumps the hand)
        self.ph.apply_wrench(body, np.asarray(wrench[:3], float), np.asarray(wrench[3:], float),
                             duration)


def _core_on_the_standin(delay, latency=None):
    """A realtime core at neutral on _StandinInLockstep (`latency`: the plant's declared
    latency, None: the gazebo backend's), past its settling after boot."""
    from intera_rt.boards.registry import BACKENDS, register_backend
    from intera_rt.realtime.core import RealtimeCore
    plant = _StandinInLockstep
    if latency is not None:
        plant = type('Undeclared', (plant,), {'plant_latency': latency})
    register_backend('standin_lockstep', plant)
    try:
        core = RealtimeCore(MODEL, backend='standin_lockstep', q_arm=list(NEUTRAL),
                            backend_options={'delay': delay})
    finally:
        BACKENDS.pop('standin_lockstep')           # (the registry is the process's)
    for _ in range(500):
        core.tick()
    return core


def _interaction_move(core, q1, seconds):
    """go_to_joint_angles_in_contact on the core: the SDK's interaction parameters (500 N/m,
    10 N·m/rad, nullspace 5-10 N·m/rad), a quintic TRAJECTORY_MODE stream from where the
    arm is to q1 over `seconds` at 200 Hz, then as long again at rest. Returns the largest
    speed of each joint and the warnings logged."""
    from intera_rt.control import commands as cmds
    core.apply(cmds.InteractionCommand(
        interaction_control_active=True, interaction_control_mode=(1,) * 6,
        K_impedance=(500.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6, D_impedance=(),
        K_nullspace=(5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0), force_command=(0.0,) * 6))
    q0, q1 = core.boards.read().position[:7].copy(), np.asarray(q1, float)
    t0, fastest = core.now, np.zeros(7)
    for k in range(int(round(2 * seconds / core.boards.ph.dt))):
        if k % 5 == 0:
            s = min((core.now - t0) / seconds, 1.0)
            p = q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5)
            v = (q1 - q0) * (30 * s**2 - 60 * s**3 + 30 * s**4) / seconds
            a = (q1 - q0) * (60 * s - 180 * s**2 + 120 * s**3) / seconds**2
            core.apply(cmds.JointCommand(mode=4, names=ARM_JOINTS, position=tuple(p),
                                         velocity=tuple(v), acceleration=tuple(a)))
        core.tick()
        fastest = np.maximum(fastest, np.abs(core.boards.read().velocity[:7]))
    return fastest, [text for level, _, text in core.take_logs() if level != 'info']


BIAS = (0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0)
# right_j6 turns 3.3 rad in 2.5 s (2.5 rad/s at the quintic's peak) while right_j5 tilts its
# axis into directions the interaction axes' damping was set for at neutral.
INTERACTION_MOVE = 2.5


@pytest.mark.parametrize('delay', [1, 2])
def test_interaction_control_on_the_plant_stays_stable_through_a_wrist_move(delay):
    """The joints' total damping rate is kept within what the plant's declared latency
    allows, at the pose the arm is at: the wrist follows its reference, no joint faster
    than the reference's peak (2.5 rad/s), nothing braked, still in interaction control."""
    core = _core_on_the_standin(delay)
    fastest, warnings = _interaction_move(core, BIAS, INTERACTION_MOVE)
    peak = 1.875 * np.abs(np.array(BIAS) - NEUTRAL) / INTERACTION_MOVE
    assert (fastest <= peak + 0.1).all(), (fastest, peak)
    assert warnings == [] and core.active is core.interaction, warnings


def test_interaction_control_assuming_lockstep_shakes_the_wrist():
    """The deliberately wrong configuration: the plant declared in lockstep (latency 0)
    while its commands act two steps late: the damping the law allows itself shakes
    right_j6 past the joint-speed monitor's limit, which brakes the arm."""
    core = _core_on_the_standin(2, latency=0)
    fastest, warnings = _interaction_move(core, BIAS, INTERACTION_MOVE)
    assert fastest[6] > 6.0, fastest
    assert any('right_j6 moving at' in w for w in warnings), warnings


def test_damping_rate_limit_halves_the_delayed_stability_bound():
    """v(k+1) = v(k) − a·v(k−n) is stable for a < 2·sin(π/(2(2n+1))): the limit is half."""
    from intera_rt.control.arm import damping_rate_limit
    assert damping_rate_limit(0) == pytest.approx(1.0)
    assert damping_rate_limit(1) == pytest.approx(0.5)
    for n in (1, 2, 3):
        for a, stable in ((1.9 * damping_rate_limit(n), True), (2.1 * damping_rate_limit(n), False)):
            v = [1.0] * (n + 1)
            for _ in range(3000):
                v.append(v[-1] - a * v[-1 - n])
            assert (abs(v[-1]) < 1e-3) == stable, (n, a, v[-1])


@pytest.mark.parametrize('delay', [1, 2])
def test_the_hold_comes_back_through_the_joints_friction_after_a_push(delay):
    """A 40 N push down on the hand for 2 s (contact safety suppressed), then let go: the
    hold's friction integral brings every joint back within 0.5 mrad in 3 s; the feedback
    alone leaves the light wrist where it no longer beats its friction (right_j6 ~5 mrad)."""
    from intera_rt.control import commands as cmds
    core = _core_on_the_standin(delay)
    start = core.boards.read().position[:7].copy()
    t0, pushed = core.now, 0.0
    while core.now - t0 < 5.0:
        if core.now - t0 < 2.0:
            # (one physics step a tick: a longer wrench overlaps the next one's, doubling it)
            core.apply(cmds.SimWrench(link='right_hand', wrench=(0.0, 0.0, -40.0, 0.0, 0.0, 0.0),
                                      duration=core.boards.ph.dt))
        core.suppressions.suppress('contact_safety', core.now)
        core.tick()
        pushed = max(pushed, np.abs(core.boards.read().position[:7] - start).max())
    assert pushed > 0.01                                   # the push moved the arm
    error = np.abs(core.boards.read().position[:7] - start)
    assert error.max() < 5e-4, error
    assert core.active is core.hold


@pytest.mark.parametrize('delay', [1, 2])
def test_a_torque_on_a_joint_deflects_that_joint_as_on_the_robot(delay):
    """The robot's drives each close their own loop: 12 N·m on right_j3 against the hold
    deflects right_j3 by about τ over the robot's stiffness there (kp·(M_33 + its drive's
    armature)), the other joints far less. Computed torque on the armature-free plant
    (stiffness M(q)·Kp, its coupling unchecked by drive inertia) bent right_j3 almost three
    times as far, and right_j4 further still."""
    core = _core_on_the_standin(delay)
    start = core.boards.read().position[:7].copy()
    tau = 12.0
    core.boards.disturbance[3] = tau
    t0 = core.now
    while core.now - t0 < 1.5:
        core.suppressions.suppress('contact_safety', core.now)
        core.tick()
    moved = core.boards.read().position[:7] - start
    arm = core.arm
    robot = arm.kp * (arm.dynamics.mass_matrix(start)[3, 3] + ARMATURE['right_j3'])
    assert moved[3] == pytest.approx(tau / robot, rel=0.2), (moved, tau / robot)
    assert (np.abs(np.delete(moved, 3)) < 0.5 * abs(moved[3])).all(), moved
    assert core.active is core.hold


class _SimClocked(_StandinInLockstep):
    """The stand-in's physics as boards that own a simulator's clock (as the gazebo
    backend's): the test steps the physics, the core ticks on what it reads."""
    owns_clock = True
    sim_clock = True


def test_a_command_stamped_ahead_of_the_loop_waits_for_its_tick():
    """Under a simulator's clock a client may stamp a command with a time the loop has not
    reached (it heard /clock before the loop took the states up to it): the command acts
    from the tick at its stamp, never before; one stamped past MAX_COMMAND_LEAD (a wrong
    clock) acts at once; a newer command stamped in the past supersedes those waiting."""
    from intera_rt.boards.registry import BACKENDS, register_backend
    from intera_rt.control import commands as cmds
    from intera_rt.realtime.core import MAX_COMMAND_LEAD, RealtimeCore
    from intera_rt.realtime.state import StateView
    register_backend('standin_simclock', _SimClocked)
    try:
        core = RealtimeCore(MODEL, backend='standin_simclock', q_arm=list(NEUTRAL))
    finally:
        BACKENDS.pop('standin_simclock')

    def tick():
        core.boards.advance(core.boards.ph.dt)
        core.tick()
        return StateView(core.state_vector())
    for _ in range(200):
        tick()

    def velocity(v, stamp):
        core.apply(cmds.JointCommand(mode=2, names=ARM_JOINTS, velocity=(v,) + (0.0,) * 6,
                                     stamp=stamp))
    stamp = core.now + 0.003
    velocity(0.1, stamp)
    seen = [(s.t, s.cmd_v[0]) for s in (tick() for _ in range(6))]
    assert all(v == 0.0 for t, v in seen if t < stamp - 1e-9), seen
    assert all(v != 0.0 for t, v in seen if t >= stamp - 1e-9), seen
    velocity(0.2, core.now + 2 * MAX_COMMAND_LEAD)            # too far ahead: at once
    assert tick().cmd_v[0] != 0.0 and abs(tick().cmd_v[0] - 0.2) < abs(seen[-1][1] - 0.2)
    velocity(0.3, core.now + 0.004)
    velocity(0.05, core.now - 0.001)                          # newer, from the past: now
    after = [tick().cmd_v[0] for _ in range(8)]
    assert all(abs(v - 0.05) <= abs(after[0] - 0.05) + 1e-12 for v in after), after
