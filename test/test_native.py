"""The compiled kernels (intera_rt.native) against their Python twins: identical results,
bit for bit, and the Python path taken for arguments a kernel does not take."""
import numpy as np
import pytest

from intera_rt import native
from intera_rt.control import arm
from intera_rt.native import kernels, why_not

needs_kernels = pytest.mark.skipif(kernels is None, reason=why_not or 'no kernels')
needs_dynamics = pytest.mark.skipif(native.dynamics is None, reason=why_not or 'no compiled dynamics')


@needs_kernels
def test_trapezoid_step_matches_python_bit_for_bit():
    rng = np.random.default_rng(7)
    vmax, amax = rng.uniform(0.5, 3.0, 7), rng.uniform(2.0, 12.0, 7)
    for case in range(3000):
        p, target = rng.uniform(-3, 3, 7), rng.uniform(-3, 3, 7)
        v = rng.uniform(-3, 3, 7) * (case % 3 != 0)
        if case % 5 == 0:                              # on or next to the target: landing
            target = p + rng.choice([0.0, 1e-7, -1e-6, 3e-5], 7)
        if case % 7 == 0:
            v[:3] = 0.0
            target[:3] = p[:3]
        for dt in (0.001, 0.0005 + 1e-12 * case):
            ours = kernels.trapezoid_step(p, v, target, vmax, amax, dt, arm.SETTLE_SNAP)
            theirs = arm._trapezoid_step(p, v, target, vmax, amax, dt)
            for a, b in zip(ours, theirs):
                np.testing.assert_array_equal(a, b)
                assert a.dtype == np.float64 and a.shape == (7,)


@needs_kernels
def test_trapezoid_step_takes_the_python_path_for_other_arguments():
    p, v, target = np.zeros(7), np.zeros(7), np.ones(7)
    assert kernels.trapezoid_step(p, v, target, 1.0, np.ones(7), 0.001, 1e-5) is None
    assert kernels.trapezoid_step(p, v, target[:3], np.ones(7), np.ones(7), 0.001, 1e-5) is None
    assert kernels.trapezoid_step(p.astype(np.float32), v, target, np.ones(7), np.ones(7), 0.001, 1e-5) is None
    # ... which the public function still answers, the same as for float64 vectors
    out = arm.trapezoid_step(p, v, target, 1.0, np.ones(7), 0.001)
    ref = arm.trapezoid_step(p, v, target, np.ones(7), np.ones(7), 0.001)
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)


def test_python_path_when_kernels_are_missing(monkeypatch):
    rng = np.random.default_rng(1)
    args = [rng.uniform(-1, 1, 7) for _ in range(3)] + [np.full(7, 2.0), np.full(7, 5.0), 0.001]
    expected = arm._trapezoid_step(*args)
    monkeypatch.setattr(arm, 'kernels', None)
    for a, b in zip(arm.trapezoid_step(*args), expected):
        np.testing.assert_array_equal(a, b)


def _observer_case(rng):
    from intera_rt.control.base import ArmState
    return ArmState(now=0.0, period=0.001, q=rng.uniform(-1, 1, 7), qd=rng.uniform(-1, 1, 7),
                    effort=rng.uniform(-20, 20, 7), q_head=float(rng.uniform(-1, 1)),
                    qd_head=float(rng.uniform(-1, 1)), dynamics=None, suppressions=None)


@needs_kernels
@needs_dynamics
def test_observer_matches_python_bit_for_bit(monkeypatch):
    """The momentum observer fed the same readings with its whole update from C++
    (Rigid.observe_reading), with the kernels around Pinocchio's Python call, and on the
    Python path."""
    from intera_rt.control import momentum_observer as mo
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    fused, kerneled, python = (mo.MomentumObserver(model, 200.0) for _ in range(3))
    assert fused.rigid is not None
    kerneled.rigid = python.rigid = None
    read = []

    class Fused:
        def observe_reading(self, *args):
            read.append(fused_rigid.observe_reading(*args))
            return read[-1]
    fused_rigid, fused.rigid = fused.rigid, Fused()
    rng = np.random.default_rng(3)
    states = [_observer_case(rng) for _ in range(200)]
    for observer in (fused, kerneled, python):
        observer.restart(states[0])
    for k, state in enumerate(states[1:]):
        h = 0.001 if k % 3 else 0.001 + 1e-17 * k
        assert kernels.observer_load(
            kerneled._q1.copy(), kerneled._v1.copy(), state.q, state.qd, kerneled._arm,
            kerneled._head_k, state.q_head, state.qd_head, kerneled._upper, kerneled._lower,
            kerneled._v0, kerneled._acc.copy(), 1.0 / h) is not None
        fused.update(state, h)
        kerneled.update(state, h)
        monkeypatch.setattr(mo, 'kernels', None)
        python.update(state, h)
        monkeypatch.setattr(mo, 'kernels', kernels)
        for other in (kerneled, python):
            np.testing.assert_array_equal(fused.r, other.r)
            np.testing.assert_array_equal(fused.q, other.q)
    # every reading through the one call, some on a stop (no step), most stepped
    assert len(read) == 199 and read.count(True) and read.count(False) > 50
    # a head index beyond a C long: refused (None), no error left set
    state = states[-1]
    assert kernels.observer_load(
        fused._q1, fused._v1, state.q, state.qd, fused._arm, 10**30, state.q_head,
        state.qd_head, fused._upper, fused._lower, fused._v0, fused._acc, 1000.0) is None
    assert fused_rigid.observe_reading(
        fused._q1, fused._v1, state.q, state.qd, fused._arm, 10**30, state.q_head,
        state.qd_head, fused._upper, fused._lower, fused._q0, fused._v0, fused._acc, 1000.0,
        fused._armature, state.effort, fused.r, 0.2, False) is None
    assert np.count_nonzero(fused.r)


@needs_kernels
def test_track_and_slow_step_match_python_bit_for_bit(monkeypatch):
    from intera_rt.control import collision_detection as cd
    from intera_rt.control.arm import Arm
    from intera_rt.control.base import ArmState
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    a = Arm(model)
    rng = np.random.default_rng(5)
    for _ in range(200):
        q, qd = rng.uniform(-1, 1, 8), rng.uniform(-1, 1, 8)
        p, v, acc = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-5, 5, 7)

        def state():
            return ArmState(now=0.0, period=0.001, q=q[:7], qd=qd[:7], effort=np.zeros(7),
                            q_head=q[7], qd_head=qd[7], dynamics=a.dynamics, suppressions=None)
        ours = a.track(state(), p, v, acc)
        assert kernels.track_accel(acc, p, q[:7], v, qd[:7], a.kp_joint, a.kd_joint) is not None
        if native.dynamics is not None:           # (the law in one call was taken)
            assert a.dynamics.computed_torque(q[:7], qd[:7], acc, p, v, a.kp_joint, a.kd_joint,
                                              a.armature, state().gravity(), a.damping) is not None
        monkeypatch.setattr(arm, 'kernels', None)
        theirs = a.track(state(), p, v, acc)
        monkeypatch.setattr(arm, 'kernels', kernels)
        np.testing.assert_array_equal(ours, theirs)
    from intera_rt.control.base import PluginContext
    detection = cd.CollisionDetection(PluginContext(model, a))
    for h in (0.001, 0.001 + 1e-17, 0.0007):
        detection._gains(h)
        for _ in range(100):
            judged, slow = rng.uniform(-5, 5, 7), rng.uniform(-5, 5, 7)
            out = []
            for path in (kernels, None):
                monkeypatch.setattr(cd, 'kernels', path)
                detection.r_slow[:] = slow
                detection._slow_step(judged)
                out.append((detection.r_slow.copy(), detection._band.copy()))
            monkeypatch.setattr(cd, 'kernels', kernels)
            # (the compiled path was taken, not refused)
            assert kernels.slow_step(judged, slow.copy(), np.zeros(7), detection._band_gain,
                                     detection._k_slow)
            for ours, theirs in zip(*out):
                np.testing.assert_array_equal(ours, theirs)
    assert cd.kernels is kernels


def test_the_core_says_once_when_the_kernels_are_missing(monkeypatch):
    from intera_rt import native
    from intera_rt.model import RobotModel
    from intera_rt.realtime.core import RealtimeCore
    monkeypatch.setattr(native, 'kernels', None)
    monkeypatch.setattr(native, 'why_not', 'compiled kernels unavailable (test): Python path')
    core = RealtimeCore(RobotModel.from_file())
    for _ in range(5):
        core.tick()
    said = [entry for entry in core.take_logs() if entry[1] == 'native']
    assert said == [('warn', 'native', 'compiled kernels unavailable (test): Python path')]


@needs_kernels
def test_interaction_wrench_matches_python_bit_for_bit():
    """Every branch of the law's wrench: a handover, a force limit, motion-limit walls (hit
    and not), the rotation wall, in every combination."""
    from intera_rt.control import interaction as ic
    rng = np.random.default_rng(11)
    compiled = 0
    for case in range(3000):
        def six(scale=1.0):
            return rng.uniform(-1, 1, 6) * scale
        e = six(0.3)
        bound = np.where(rng.random(6) < 0.5, ic.MOTION_BOUND, ic.NO_LIMIT) if case & 1 else None
        hand = six(5.0) if case & 2 else None
        limit = np.abs(six(20.0)) if case & 4 else None
        rot_wall = (rng.random(3) < 0.7).astype(float) if case & 8 else None
        args = (six(10.0), np.abs(six(1000.0)), e, np.abs(six(50.0)), six(), six(2.0), hand,
                limit, bound, np.abs(six(1e4)), np.abs(six(100.0)), six(), rot_wall,
                np.abs(rng.uniform(0, 5, 3)), float(rng.uniform(0, 50)))
        out = tuple(np.full(6, np.nan) for _ in range(4))
        assert kernels.interaction_wrench(*args, *out) is True
        compiled += 1
        for ours, theirs in zip(out, ic._wrench_law(*args)):
            np.testing.assert_array_equal(ours, theirs)
            assert np.array_equal(np.signbit(ours), np.signbit(theirs))
    assert compiled == 3000
    # arguments it does not take: the Python path
    args = list(args)
    args[1] = args[1][:5]
    assert kernels.interaction_wrench(*args, *out) is None


@needs_kernels
def test_interaction_torque_kernels_match_python_bit_for_bit():
    from intera_rt.numeric import clip
    rng = np.random.default_rng(12)
    for _ in range(2000):
        k, qr, q, d, qd = (rng.uniform(-3, 3, 7) for _ in range(5))
        np.testing.assert_array_equal(kernels.nullspace_error(k, qr, q, d, qd),
                                      k * (qr - q) - d * qd)
        tau, extra, prev = (rng.uniform(-5, 5, 7) for _ in range(3))
        step = float(rng.uniform(0, 2))
        np.testing.assert_array_equal(kernels.rate_clip(tau, extra, prev, step),
                                      clip(tau + extra, prev - step, prev + step))
        np.testing.assert_array_equal(kernels.rate_clip(tau, None, prev, step),
                                      clip(tau, prev - step, prev + step))
    assert kernels.rate_clip(tau, extra[:3], prev, step) is None


@needs_kernels
def test_interaction_control_runs_the_same_on_both_paths(monkeypatch):
    """The interaction controller pushed around in a running core (impedance with a force
    limit, force axes with motion limits, the rotation wall): the same torques, bit for bit,
    on the compiled and the Python path."""
    import math
    from intera_rt.control import commands as cmds
    from intera_rt.control import interaction as ic
    from intera_rt.model import RobotModel
    from intera_rt.realtime.core import RealtimeCore
    model = RobotModel.from_file()
    runs = []
    for path in (kernels, None):
        monkeypatch.setattr(ic, 'kernels', path)
        core = RealtimeCore(model)
        core.tick()
        core.apply(cmds.InteractionCommand(
            interaction_control_active=True, K_impedance=(500, 500, 500, 10, 10, 10),
            max_impedance=(False,) * 6, interaction_control_mode=(2, 3, 4, 1, 1, 1),
            force_command=(5.0, 3.0, -4.0, 0, 0, 0), K_nullspace=(5.0,) * 7,
            in_endpoint_frame=True, endpoint_name='right_hand'))
        torques = []
        for i in range(1500):
            if i % 10 == 0:
                core.apply(cmds.SimWrench(link='right_hand', wrench=(
                    15.0 * math.sin(0.01 * i), 10.0, 0.0, 2.0 * math.cos(0.004 * i), 0, 0),
                    duration=0.01))
            core.tick()
            torques.append(core.boards.read().effort.copy())
        runs.append(np.array(torques))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.abs(runs[0]).max() > 1.0


@needs_kernels
@needs_dynamics
def test_embedded_plant_steps_the_same_on_every_path(monkeypatch):
    """The embedded plant driven hard (random torques up to the effort limits, onto the hard
    stops), pushed by an external wrench, pressed on an obstacle, braked: the same states,
    bit for bit, with its free step in C++ (native.dynamics), with the kernels around
    Pinocchio's Python calls, and on the Python path."""
    from intera_rt.boards import embedded
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    runs, taken = [], {'step': 0, 'system': 0, 'friction': 0, 'integrate': 0, 'posv': 0, 'symv': 0}

    class Counting:
        def __getattr__(self, name):
            def call(*args):
                out = getattr(kernels, name)(*args)
                taken[name.replace('plant_', '')] += out is not None
                return out
            return call

    class CountingRigid:
        def __init__(self, rigid):
            self.rigid = rigid

        def plant_step(self, *args):
            out = self.rigid.plant_step(*args)
            taken['step'] += type(out) is tuple
            return out
    for path, compiled in ((Counting(), True), (Counting(), False), (None, False)):
        monkeypatch.setattr(embedded, 'kernels', path)
        boards = embedded.EmbeddedBoards(model)
        boards._rigid = CountingRigid(boards._rigid) if compiled else None
        boards.reset_pose([0.0, -0.5, 0.0, 1.2, 0.0, 0.5, 0.0, 0.0])
        boards.set_brakes(False)
        tip = model.arm_dynamics.tip('right_hand', np.array([0.0, -0.5, 0.0, 1.2, 0.0, 0.5, 0.0]))[0]
        boards.add_obstacle('block', 'box', (tip[0], tip[1], tip[2] - 0.12), (0, 0, 0, 1),
                            (0.2, 0.2, 0.2))
        rng = np.random.default_rng(21)
        states, touched = [], 0
        for i in range(1500):
            if i % 50 == 0:
                torque = rng.uniform(-1, 1, 8) * boards.effort_limit * (0.2 if i < 700 else 1.0)
            if i == 1100:                        # right_j0 driven onto its upper stop
                boards.reset_pose(np.concatenate(([boards.upper[0] - 0.005], boards.q[1:])))
            if i >= 1100:
                torque[0] = boards.effort_limit[0]
            if i == 300:
                boards.apply_wrench('right_hand', (0.0, 0.0, -40.0, 0.0, 1.0, 0.0), 0.2)
            if i == 1300:
                boards.set_brakes(True)
            if i == 1400:
                boards.set_brakes(False)
            boards.write(torque)
            boards.advance(0.001)
            states.append(np.concatenate((boards.q, boards.qd, boards.tau_transmitted,
                                          boards._full_v, boards._full_tau, boards._full_removed)))
            touched += bool(boards.contacts())
        runs.append(np.array(states))
        assert touched > 10 and states[-1][0] == boards.stop_upper[0]
    np.testing.assert_array_equal(runs[0], runs[2])
    np.testing.assert_array_equal(runs[1], runs[2])
    # (the C++ step takes the free steps, the kernels the rest and, without it, all)
    kernel_calls = [v for k, v in taken.items() if k != 'step']
    assert taken['step'] > 500 and min(kernel_calls) > 1000, taken


@needs_dynamics
def test_arm_dynamics_match_python_bit_for_bit():
    """ArmDynamics' inverse dynamics and gravity from C++ (native.dynamics.Rigid) and from
    Pinocchio's Python calls: the same torques, bit for bit, and the same buffers left."""
    from intera_rt.model import RobotModel
    dyn = RobotModel.from_file().dynamics()
    twin = RobotModel.from_file().dynamics()
    twin._rigid = None
    assert dyn._rigid is not None
    rng = np.random.default_rng(3)
    for _ in range(3000):
        q, qd, qdd = rng.uniform(-3.5, 3.5, 7), rng.uniform(-3, 3, 7), rng.uniform(-20, 20, 7)
        np.testing.assert_array_equal(dyn.inverse_dynamics(q, qd, qdd), twin.inverse_dynamics(q, qd, qdd))
        np.testing.assert_array_equal(dyn.gravity(q), twin.gravity(q))
    for ours, theirs in ((dyn._q, twin._q), (dyn._v, twin._v), (dyn._a, twin._a)):
        np.testing.assert_array_equal(ours, theirs)
    # arguments it does not take: the Python path answers
    assert dyn._rigid.gravity(q[:3], dyn._idx_q, dyn._idx, dyn._q) is None
    assert dyn._rigid.rnea(q.astype(np.float32), qd, qdd, dyn._idx_q, dyn._idx, dyn._q, dyn._v, dyn._a) is None
    with pytest.raises(TypeError):
        native.dynamics.Rigid(dyn.model, dyn.model)          # a model where its data goes


@needs_dynamics
def test_frame_kinematics_match_python_bit_for_bit(monkeypatch):
    """ArmDynamics.frame_kinematics and tip from C++ (Rigid.frame_kinematics) and from
    Pinocchio's Python calls, in its own data and in a caller's (the interaction controller
    keeps one): the same rotation, position and Jacobian, bit for bit, for the hand and other
    links, and the same placements left in the data."""
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    dyn = model.dynamics()
    monkeypatch.setattr(native, 'rigid', lambda *_: None)
    twin = model.dynamics()
    monkeypatch.undo()
    assert twin._rigid is None and dyn._rigid is not None
    mine, theirs = dyn.model.createData(), twin.model.createData()
    rng = np.random.default_rng(23)
    frames = [dyn.frame_id(name) for name in ('right_hand', 'right_l3', 'right_l6')]
    for case in range(1500):
        q = rng.uniform(-3.5, 3.5, 7)
        fid = frames[case % 3]
        for data, twin_data in ((None, None), (mine, theirs)):
            ref = twin.frame_kinematics(fid, q, twin_data)
            for ours, expected in zip(dyn.frame_kinematics(fid, q, data), ref):
                np.testing.assert_array_equal(ours, expected)
        name = ('right_hand', 'right_l3', 'right_l6')[case % 3]
        for ours, ref in zip(dyn.tip(name, q), twin.tip(name, q)):     # (endpoint states)
            np.testing.assert_array_equal(ours, ref)
    assert dyn._rigids[id(mine)] is not None                  # (the caller's data had its own)
    from intera_rt.model import dynamics
    for _ in range(3 * dynamics.MAX_RIGIDS):                  # data made per call: kept bounded
        ref = twin.frame_kinematics(frames[0], q, twin.model.createData())
        for ours, expected in zip(dyn.frame_kinematics(frames[0], q, dyn.model.createData()), ref):
            np.testing.assert_array_equal(ours, expected)
    assert len(dyn._rigids) <= dynamics.MAX_RIGIDS + 1
    for i in range(dyn.model.nframes):
        np.testing.assert_array_equal(mine.oMf[i].homogeneous, theirs.oMf[i].homogeneous)
    rigid = dyn._rigid
    assert rigid.frame_kinematics(dyn.model.nframes, q, dyn._idx_q, dyn._idx, dyn._q) is None
    assert rigid.frame_kinematics(frames[0], q[:3], dyn._idx_q, dyn._idx, dyn._q) is None
    assert rigid.frame_kinematics(-1, q, dyn._idx_q, dyn._idx, dyn._q) is None


@needs_kernels
def test_posv_and_symv_match_scipy_bit_for_bit():
    """kernels.posv / symv: scipy.linalg.lapack.dposv(a, b, lower=0) and
    scipy.linalg.blas.dsymv(alpha, a, x, lower=0) exactly (their factor, solution, info and
    product, the Fortran order f2py hands back included), on positive definite matrices and
    on others (info > 0), whatever lies below the diagonal; None for what they do not take."""
    from scipy.linalg.blas import dsymv
    from scipy.linalg.lapack import dposv
    rng = np.random.default_rng(5)
    for case in range(3000):
        n, m = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        a = rng.standard_normal((n, n))
        if case % 3:
            a = np.triu(a @ a.T + rng.uniform(0.0, 2.0) * np.eye(n)) + np.tril(a, -1)
        b = rng.standard_normal(n) if case % 2 else rng.standard_normal((n, m))
        theirs, ours = dposv(a, b, lower=0), kernels.posv(a, b)
        assert ours[2] == theirs[2]
        for x, y in zip(ours[:2], theirs[:2]):
            assert x.shape == y.shape and x.flags.f_contiguous == y.flags.f_contiguous
            np.testing.assert_array_equal(x, y)
        alpha, x = float(rng.standard_normal()), rng.standard_normal(n)
        np.testing.assert_array_equal(kernels.symv(alpha, a, x), dsymv(alpha, a, x, lower=0))
    square, v = np.eye(3), np.ones(3)
    assert kernels.posv(np.zeros((3, 4)), v) is None
    assert kernels.posv(square.astype(np.float32), v) is None
    assert kernels.posv(square, np.ones(4)) is None
    assert kernels.posv(np.asfortranarray(rng.standard_normal((3, 3))), v) is None
    assert kernels.symv(1, square, v) is None                # (alpha not a float)
    assert kernels.symv(1.0, square, np.ones(2)) is None


@needs_kernels
def test_velocity_step_matches_python_bit_for_bit():
    from intera_rt.control import velocity
    rng = np.random.default_rng(13)
    lower, upper = -np.full(7, 2.0), np.full(7, 2.0)
    acc = rng.uniform(2.0, 12.0, 7)
    for case in range(3000):
        cmd, v = rng.uniform(-3, 3, 7), rng.uniform(-3, 3, 7)
        p = rng.uniform(-2.01, 2.01, 7)              # some at or past a limit
        scale = 1.0 if case % 3 == 0 else float(rng.uniform(0, 1))
        args = (cmd, scale, p, v, acc, 0.001 if case % 2 else 0.0007, lower, upper)
        ours = kernels.velocity_step(*args)
        for a, b in zip(ours, velocity._velocity_step(*args)):
            np.testing.assert_array_equal(a, b)
    assert kernels.velocity_step(cmd[:3], 1.0, p, v, acc, 0.001, lower, upper) is None


@needs_kernels
def test_extrapolate_step_matches_python_bit_for_bit():
    """kernels.extrapolate_step against extrapolate then Arm.stop_at_limits: forwards and
    backwards, velocities running into their caps (from below, from beyond, with no
    acceleration), joints run into a position limit; the same (p, v, a) bit for bit."""
    from intera_rt.control import trajectory
    from intera_rt.control.arm import Arm
    from intera_rt.model import RobotModel
    arm = Arm(RobotModel.from_file())
    rng = np.random.default_rng(19)
    seen = {'capped': 0, 'at_limit': 0, 'backwards': 0}
    for case in range(4000):
        p = rng.uniform(arm.lower - 0.1, arm.upper + 0.1)
        v = rng.uniform(-1.2, 1.2, 7) * arm.vel_limit
        a = rng.uniform(-1.0, 1.0, 7) * arm.acc_limit
        a[rng.random(7) < 0.1] = 0.0
        dt = float(rng.choice([0.001, 0.01, 0.2, -0.002, 0.0]))
        ref = arm.stop_at_limits(*trajectory.extrapolate(p, v, a, dt, arm.vel_limit))
        ours = kernels.extrapolate_step(p, v, a, dt, arm.vel_limit, arm.lower, arm.upper)
        for x, y in zip(ours, ref):
            np.testing.assert_array_equal(x, y)
        seen['capped'] += dt > 0 and bool((np.abs(v + a * dt) > arm.vel_limit).any())
        seen['at_limit'] += bool(((ref[0] <= arm.lower) | (ref[0] >= arm.upper)).any())
        seen['backwards'] += dt < 0
    assert min(seen.values()) > 100, seen
    assert kernels.extrapolate_step(p[:3], v, a, 0.001, arm.vel_limit, arm.lower, arm.upper) is None


@needs_kernels
def test_trajectory_streams_run_the_same_on_both_paths(monkeypatch):
    """A core following a 100 Hz TRAJECTORY_MODE stream (stamped samples extrapolated
    between them, one running a joint into its limit, then a stream that stops): the same
    joint angles, bit for bit, on the compiled and the Python path of the extrapolation."""
    import math
    from intera_rt.control import commands as cmds
    from intera_rt.control import trajectory
    from intera_rt.model import RobotModel
    from intera_rt.realtime.core import RealtimeCore
    from intera_rt.robot import ARM_JOINTS, NEUTRAL
    model = RobotModel.from_file()
    runs, references = [], []
    for path in (kernels, None):
        monkeypatch.setattr(trajectory, 'kernels', path)
        core = RealtimeCore(model, q_arm=list(NEUTRAL))
        core.tick()
        angles = []
        for i in range(2500):
            if i % 10 == 0 and i < 2000:
                t = core.now
                p = np.array(NEUTRAL) + 0.5 * math.sin(2.0 * t)
                v, a = np.full(7, math.cos(2.0 * t)), np.full(7, -2.0 * math.sin(2.0 * t))
                if i >= 1200:              # right_j6 pushed past its limit at full speed
                    p[6], v[6], a[6] = core.arm.upper[6] - 0.01, 3.4, 40.0
                core.apply(cmds.JointCommand(mode=4, names=ARM_JOINTS, position=tuple(p),
                                             velocity=tuple(v), acceleration=tuple(a),
                                             stamp=t - 0.003))
            core.tick()
            angles.append(core.boards.read().position[:7].copy())
            references.append(core.controllers['trajectory'].p[6])
        runs.append(np.array(angles))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.abs(runs[0] - runs[0][0]).max() > 0.3          # (it moved)
    assert max(references) == core.arm.upper[6]               # (the reference stopped there)


@needs_kernels
def test_line_target_matches_python_bit_for_bit():
    """kernels.line_target against PositionController's Python twin: lines running, arrived
    and none, each joint its own; the same target, ends of lines and whether any is left."""
    from intera_rt.control.position import PositionController
    rng = np.random.default_rng(17)
    twin = PositionController.__new__(PositionController)
    for case in range(3000):
        goal, start = rng.uniform(-3, 3, 7), rng.uniform(-3, 3, 7)
        t0 = rng.uniform(0.0, 1.0, 7)
        span = np.where(rng.random(7) < 0.3, 0.0, rng.uniform(0.001, 0.2, 7))
        now = float(rng.uniform(0.0, 1.3)) if case % 5 else float(t0[0] + span[0])  # (arrives exactly)
        twin._goal, twin._from, twin._t0, twin._span = goal, start, t0, span.copy()
        twin._ramping = True
        twin._move_target_python(now)
        ours_span = span.copy()
        target, ramping = kernels.line_target(goal, start, t0, ours_span, now)
        np.testing.assert_array_equal(target, twin.target)
        np.testing.assert_array_equal(ours_span, twin._span)
        assert ramping is twin._ramping
    assert kernels.line_target(goal[:3], start, t0, span, now) is None
    frozen = span.copy()
    frozen.flags.writeable = False
    assert kernels.line_target(goal, start, t0, frozen, now) is None


@needs_kernels
def test_position_streams_run_the_same_on_both_paths(monkeypatch):
    """A core following a 100 Hz stream of position targets (the lines between its points,
    a jump after a pause, one joint at a time): the same joint angles, bit for bit, on the
    compiled and the Python path of the moving target."""
    import math
    from intera_rt.control import commands as cmds
    from intera_rt.control import position
    from intera_rt.model import RobotModel
    from intera_rt.realtime.core import RealtimeCore
    from intera_rt.robot import ARM_JOINTS, NEUTRAL
    model = RobotModel.from_file()
    runs = []
    for path in (kernels, None):
        monkeypatch.setattr(position, 'kernels', path)
        core = RealtimeCore(model, q_arm=list(NEUTRAL))
        core.tick()
        core.apply(cmds.SetSpeedRatio(ratio=1.0))
        angles = []
        for i in range(2000):
            if i % 10 == 0 and not 800 <= i < 1100:          # (a pause: the next point jumps)
                target = np.array(NEUTRAL) + 0.4 * math.sin(0.003 * i)
                names = ARM_JOINTS if i < 1500 else ARM_JOINTS[2:3]
                core.apply(cmds.JointCommand(mode=1, names=names, position=tuple(
                    target[[ARM_JOINTS.index(n) for n in names]])))
            core.tick()
            angles.append(core.boards.read().position[:7].copy())
        runs.append(np.array(angles))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.abs(runs[0] - runs[0][0]).max() > 0.2          # (it moved)


@needs_kernels
def test_avoidance_push_matches_python_bit_for_bit():
    from intera_rt.control.collision_avoidance import _push_law
    rng = np.random.default_rng(17)
    lower, upper = -np.full(7, 2.0), np.full(7, 2.0)
    step, limit = rng.uniform(0.5, 2.0, 7), rng.uniform(5.0, 40.0, 7)
    pushed = 0
    for case in range(3000):
        m = case % 4                                  # none to three overlapping pairs
        gradients = rng.uniform(-1.0, 1.0, (m, 7))
        clearances = rng.uniform(-0.02, 0.005, m)
        qd, q = rng.uniform(-2, 2, 7), rng.uniform(-2.02, 2.02, 7)   # some past a limit
        prev = rng.uniform(-40, 40, 7) * (case % 3 != 0)
        k, c = (10000.0, 500.0) if case % 2 else tuple(rng.uniform(0, 2e4, 2))
        ours, theirs = np.empty(7), np.empty(7)
        args = (gradients, clearances, qd, q, upper, lower, prev, step, limit, k, c, 20.0)
        a = kernels.avoidance_push(*args, ours)
        b = _push_law(*args, theirs)
        assert a is b
        np.testing.assert_array_equal(ours, theirs)
        pushed += a
    assert pushed > 500
    # in place (out is prev), as the stage may hand it
    prev = rng.uniform(-40, 40, 7)
    args = (np.ones((1, 7)), np.array([-0.01]), np.zeros(7), np.zeros(7), upper, lower)
    expected = np.empty(7)
    _push_law(*args, prev.copy(), step, limit, 1e4, 500.0, 20.0, expected)
    kernels.avoidance_push(*args, prev, step, limit, 1e4, 500.0, 20.0, prev)
    np.testing.assert_array_equal(prev, expected)
    # arguments it does not take: the Python path runs
    assert kernels.avoidance_push(np.ones((2, 7)), np.array([-0.01]), *args[2:], prev, step, limit,
                                  1e4, 500.0, 20.0, np.empty(7)) is None
    assert kernels.avoidance_push(np.ones((1, 7)), np.array([-0.01]), *args[2:], prev, step, limit,
                                  1e4, 500, 20.0, np.empty(7)) is None


@needs_kernels
def test_detect_step_matches_python_bit_for_bit(monkeypatch):
    from intera_rt.control import collision_detection as cd
    from intera_rt.control.arm import Arm
    from intera_rt.control.base import PluginContext
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    detection = cd.CollisionDetection(PluginContext(model, Arm(model)))
    rng = np.random.default_rng(19)
    seen = set()
    for h in (0.001, 0.0007):
        detection._gains(h)
        for case in range(500):
            judged, slow = rng.uniform(-15, 15, 7), rng.uniform(-5, 5, 7)
            at_least = bool(case % 2)
            bound = detection._release if at_least else detection.squish_threshold
            if case % 5 == 0:
                judged[3] = bound[3]                  # on the bound: ≥ and > differ
            detection.r_slow[:] = slow
            ours = kernels.detect_step(judged, detection.r_slow, detection._band,
                                       detection._band_gain, detection._k_slow, bound, at_least)
            after = detection.r_slow.copy(), detection._band.copy()
            detection.r_slow[:] = slow
            theirs = detection._detect_step(judged, bound, at_least)
            assert ours == theirs and type(ours[1]) is bool
            np.testing.assert_array_equal(after[0], detection.r_slow)
            np.testing.assert_array_equal(after[1], detection._band)
            seen.add(ours[1])
    assert seen == {True, False}
    assert kernels.detect_step(judged, detection.r_slow, detection._band, detection._band_gain,
                               detection._k_slow, bound, 1) is None


@needs_kernels
@needs_dynamics
def test_hand_wrench_matches_python_bit_for_bit(monkeypatch):
    """Collision detection's map r → hand wrench (Rigid.wrench_map) and the wrench from it
    (kernels.hand_wrench) against their Python twins, over random poses and torques; a
    mutation of either twin's order of sums shows here."""
    from intera_rt.control import collision_detection as cd
    from intera_rt.control.arm import Arm
    from intera_rt.control.base import PluginContext
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    detection = cd.CollisionDetection(PluginContext(model, Arm(model)))
    observer = detection.observer
    rigid = observer.rigid
    rng = np.random.default_rng(29)
    for _ in range(300):
        observer.q[:] = rng.uniform(-3, 3, len(observer.q))
        ours = observer.rigid.wrench_map(detection._hand, observer.q, detection._arm,
                                         detection.wrench_damping)
        theirs = detection._wrench_map()
        assert ours[1] == theirs[1] == 0
        np.testing.assert_array_equal(ours[0], theirs[0])
        r = rng.uniform(-40, 40, 7)
        out_ours, out_theirs = np.zeros(6), np.zeros(6)
        assert kernels.hand_wrench(ours[0], r, out_ours) == cd._wrench_of(theirs[0], r, out_theirs)
        np.testing.assert_array_equal(out_ours, out_theirs)
    # The detector's own path, both ways: the same wrench.
    observer.restart(_arm_state(model, rng))
    observer.r[:] = rng.uniform(-40, 40, 7)
    results = []
    for path in (kernels, None):
        monkeypatch.setattr(cd, 'kernels', path)
        if path is None:
            monkeypatch.setattr(observer, 'rigid', None)
        detection._map_due = -np.inf
        results.append((detection._hand_wrench(0.0), detection.wrench.copy()))
    assert results[0][0] == results[1][0] and results[0][0][0] > 0.0
    np.testing.assert_array_equal(results[0][1], results[1][1])
    # Arguments they do not take: None (the caller's Python path).
    assert kernels.hand_wrench(np.asfortranarray(ours[0]), r, out_ours) is None
    assert rigid.wrench_map(-1, observer.q, detection._arm, 1e-4) is None


def _arm_state(model, rng):
    from intera_rt.control.base import ArmState
    return ArmState(now=0.0, period=0.001, q=rng.uniform(-1, 1, 7), qd=rng.uniform(-1, 1, 7),
                    effort=np.zeros(7), q_head=0.1, qd_head=0.0, dynamics=model.dynamics(),
                    suppressions=None)


@needs_kernels
def test_l1_distance_matches_python_bit_for_bit(monkeypatch):
    from intera_rt.model import avoidance
    rng = np.random.default_rng(23)
    for _ in range(1000):
        a, b = rng.uniform(-3, 3, 8), rng.uniform(-3, 3, 8) * rng.choice([1.0, 1e-6], 8)
        ours = avoidance.joint_travel(a, b)
        monkeypatch.setattr(avoidance, 'kernels', None)
        assert avoidance.joint_travel(a, b) == ours
        monkeypatch.setattr(avoidance, 'kernels', kernels)
    assert kernels.l1_distance(a, b[:3]) is None


@needs_kernels
def test_the_tick_s_small_kernels_match_numpy_bit_for_bit():
    """any_above (the joint-speed monitor's test), safe_torque (what a simulated plant takes of
    a written torque) and board_torques (the arm's torques clipped, the head's after them)
    against the numpy they replace, with NaN, infinities, signed zeros and values on the
    bounds."""
    from intera_rt.numeric import clip, count_nonzero
    rng = np.random.default_rng(11)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e308])
    for _ in range(3000):
        x = rng.uniform(-3, 3, 8)
        x[rng.integers(0, 8, 2)] = rng.choice(special, 2)
        bound = rng.uniform(0.5, 2.0, 8)
        lo, hi = -bound, bound
        x[rng.integers(0, 8)] = bound[0]                      # (on a bound)
        assert kernels.any_above(x, bound) is bool(count_nonzero(np.abs(x) > bound))
        np.testing.assert_array_equal(
            kernels.safe_torque(x, lo, hi), clip(np.where(np.isfinite(x), x, 0.0), lo, hi))
        tau, head = x[:7], float(rng.uniform(-9, 9))
        ours = kernels.board_torques(tau, lo[:7], hi[:7], head)
        theirs = np.zeros(8)
        clip(tau, lo[:7], hi[:7], out=theirs[:7])
        theirs[7] = head
        np.testing.assert_array_equal(ours, theirs)
        assert np.signbit(ours).tolist() == np.signbit(theirs).tolist()
    # arguments they do not take: the Python path answers
    assert kernels.any_above(x[:3], bound) is None
    assert kernels.safe_torque([1.0] * 8, lo, hi) is None
    assert kernels.board_torques(tau, lo[:7], hi[:7], 1) is None


def test_mujoco_boards_step_the_same_on_both_paths(monkeypatch, tmp_path):
    """The MuJoCo backend with its gripper, driven hard (random torques up to the effort
    limits, onto a hard stop), pushed by a wrench, pressed on an obstacle, braked, gripping,
    and finally made unstable: the same states, bit for bit, with its compiled step
    (native.mujoco_step) and on its Python path (the friction rows' shortcut, and the
    general sum)."""
    from intera_rt.boards import mujoco_boards
    from intera_rt.boards.base import GripperCommand
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    monkeypatch.chdir(tmp_path)                 # (where MuJoCo logs the unstable step)
    q0 = np.array([0.0, -0.5, 0.0, 1.2, 0.0, 0.5, 0.0, 0.0])
    bound = native.mujoco_step
    runs = []
    for path in ('compiled', 'shortcut', 'general'):
        steps = []

        def counted(*args):
            step, why = bound(*args) if path == 'compiled' else (None, 'test: Python path')
            if step is None:
                return step, why

            class Counting:
                def step(self, tau):
                    steps.append(1)
                    return step.step(tau)
            return Counting(), why
        monkeypatch.setattr(native, 'mujoco_step', counted)
        boards = mujoco_boards.MujocoBoards(model, gripper=True)
        if path == 'compiled' and boards.native_note:
            pytest.skip(boards.native_note)
        boards.reset_pose(q0)
        boards.set_brakes(False)
        tip = model.arm_dynamics.tip('right_hand', q0[:7])[0]
        boards.add_obstacle('block', 'box', (tip[0], tip[1], tip[2] - 0.25), (0, 0, 0, 1),
                            (0.2, 0.2, 0.2))
        if path == 'general':
            boards._friction_rows = -1
        rng = np.random.default_rng(5)
        states, touched = [], 0
        for i in range(1500):
            if i % 50 == 0:
                torque = rng.uniform(-1, 1, 8) * boards.effort_limit * (0.3 if i < 700 else 1.0)
            if i == 300:
                boards.apply_wrench('right_hand', (0.0, 0.0, -60.0, 0.0, 1.0, 0.0), 0.3)
            if i == 500:
                boards.set_gripper(GripperCommand(separation=0.0, speed=0.05, force=20.0))
            if i == 1100:                        # right_j0 driven onto its upper stop
                boards.reset_pose(np.concatenate(([boards.upper[0] - 0.005], boards.q[1:])))
            if i >= 1100:
                torque[0] = boards.effort_limit[0]
            if i == 1300:
                boards.set_brakes(True)
            if i == 1400:
                boards.set_brakes(False)
            if i == 1490:                        # MuJoCo finds the step unstable
                boards.apply_wrench('right_hand', (1e14, 0.0, 0.0, 0.0, 0.0, 0.0), 0.1)
            boards.write(torque)
            boards.advance(0.001)
            states.append(np.concatenate((boards.q, boards.qd, boards.tau_transmitted,
                                          [boards.brakes], boards.d.qpos)))
            touched += bool(boards.contacts())
        runs.append(np.array(states))
        assert touched > 10 and 'unstable' in boards.fault
        assert (len(steps) > 1000) == (path == 'compiled')
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])


def test_the_core_says_once_when_the_compiled_mujoco_step_is_missing(monkeypatch):
    from intera_rt.model import RobotModel
    from intera_rt.realtime.core import RealtimeCore
    monkeypatch.setattr(native, 'why_not', '')
    monkeypatch.setattr(native, 'mujoco_step', lambda *args: (None, 'compiled MuJoCo step '
                                                              'unavailable (test)'))
    core = RealtimeCore(RobotModel.from_file(), 'mujoco')
    for _ in range(5):
        core.tick()
    assert core.boards._native is None
    said = [entry for entry in core.take_logs() if entry[1] == 'native']
    assert said == [('warn', 'native', 'compiled MuJoCo step unavailable (test)')]


@needs_kernels
def test_joint_commands_parse_the_same_on_both_paths(monkeypatch):
    """joint_command.parse with the compiled joint_values and within_limits, and without:
    the same arrays bit for bit, or the same rejection (kind and message), over commands
    valid and not — tuples and lists, ints, NaN and infinities, lengths off by one,
    positions a hair inside and outside the limits, names unknown, twice or missing, joint
    subsets in any order — and the same saturation warnings through each mode's validate."""
    from intera_rt.control import commands as cmds
    from intera_rt.control import joint_command, trajectory
    from intera_rt.control.arm import LIMIT_SLACK, Arm
    from intera_rt.control.base import CommandRejected
    from intera_rt.model import RobotModel
    from intera_rt.robot import ARM_JOINTS
    from intera_rt.realtime.core import RealtimeCore
    model = RobotModel.from_file()
    core = RealtimeCore(model)
    core.tick()
    state = core._arm_state()
    rng = np.random.default_rng(5)
    special = [np.nan, np.inf, -np.inf, 3, True, 'x', -0.0]
    compiled = 0

    def values(n, lo, hi):
        lo, hi = np.broadcast_to(lo, n), np.broadcast_to(hi, n)
        v = [float(x) for x in rng.uniform(lo - 0.01, hi + 0.01)]
        if rng.random() < 0.3:                         # on a limit, or a hair past it
            j = int(rng.integers(0, n))
            v[j] = float(rng.choice([lo[j], hi[j], lo[j] - LIMIT_SLACK, hi[j] + 2 * LIMIT_SLACK]))
        if rng.random() < 0.1:
            v[int(rng.integers(0, n))] = special[int(rng.integers(0, len(special)))]
        if rng.random() < 0.05:
            v = v[:-1] if rng.random() < 0.5 else v + [0.0]
        return tuple(v) if rng.random() < 0.5 else v

    for i in range(3000):
        n = int(rng.integers(1, 8))
        names = [str(s) for s in rng.permutation(ARM_JOINTS)[:n]]
        arm = core.arm
        idx = [arm.index[s] for s in names]
        lo, hi = arm.lower[idx], arm.upper[idx]
        vmax = arm.vel_limit[idx]
        if rng.random() < 0.03:
            names[-1] = str(rng.choice(['right_j9', names[0]])) if n > 1 else 'head_pan'
        if rng.random() < 0.01:
            names = []
        cmd = cmds.JointCommand(
            mode=int(rng.integers(1, 5)), names=tuple(names) if i % 2 else names,
            position=values(n, lo, hi), velocity=values(n, -1.2 * vmax, 1.2 * vmax),
            acceleration=values(n, -8.0, 8.0), effort=values(n, -90.0, 90.0),
            stamp=core.now)
        got = []
        for path in (kernels, None):
            monkeypatch.setattr(joint_command, 'kernels', path)
            monkeypatch.setattr(trajectory, 'kernels', path)
            controller = core._by_mode[cmd.mode]
            try:
                parsed, warnings = controller.validate(cmd, state)
                got.append(('ok', [None if a is None else a.tobytes() for a in (
                    parsed.position, parsed.velocity, parsed.acceleration, parsed.effort)],
                    parsed.idx.tolist(), list(parsed.names), warnings))
            except CommandRejected as exc:
                got.append(('rejected', exc.kind, str(exc)))
            except ValueError as exc:                  # (a string among the values)
                got.append(('raised', str(exc)))
        assert got[0] == got[1], (cmd, got)
        compiled += got[0][0] == 'ok'
    assert compiled > 1000                             # (most were valid)
    # The kernels' own answers for what they do not take
    assert kernels.joint_values((1.0, 2), 2) is None and kernels.joint_values((1.0,), 2) is None
    assert kernels.joint_values((1.0, float('nan')), 2) is None
    assert kernels.joint_values(np.zeros(2), 2) is None
    assert kernels.joint_values([1.5, -0.0], 2).tolist() == [1.5, -0.0]
    lo, hi = np.zeros(2), np.ones(2)
    assert kernels.within_limits(np.array([0.5, 1.0 + 1e-7]), lo, hi, 1e-6).tolist() == [0.5, 1.0]
    assert kernels.within_limits(np.array([0.5, 1.0 + 2e-6]), lo, hi, 1e-6) is None
    assert kernels.within_limits(np.array([0.5]), lo, hi, 1e-6) is None
    # A joint list is checked once and remembered; its arrays are shared, and read-only.
    fresh = Arm(model)
    first = fresh.joints(('right_j1', 'right_j0'))
    assert fresh.joints(['right_j1', 'right_j0']) is first and first.idx.tolist() == [1, 0]
    with pytest.raises(ValueError):
        first.lower[0] = 0.0
    with pytest.raises(CommandRejected, match='named twice'):
        fresh.joints(('right_j1', 'right_j1'))
