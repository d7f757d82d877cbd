"""The MuJoCo backend (boards.mujoco_boards) without ROS: its model is the project's URDF, its
dynamics agree with the embedded plant's, its hard stops sit 10 mrad beyond the joint limits,
the table option puts a table in the cell, collision detection stops a JOINT motion into a
box, and --viewer refuses clearly without a display. (The contract every backend keeps —
brakes, teleport, obstacles, wrenches, contacts in the measured torques, faults — is
test_boards_contract.py.)"""
import dataclasses
import math

import mujoco
import numpy as np
import pytest

from plant_scene import MODEL, Q0, run

from intera_rt.boards import BoardsError, make_boards
from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, HARD_STOP_MARGIN, NEUTRAL

DT = 0.001


def plant(name, model=MODEL, q=Q0, **options):
    boards = make_boards(name, model, options)
    boards.reset_pose(q)
    boards.set_brakes(False)
    return boards


def test_the_model_is_the_urdf():
    boards = make_boards('mujoco', MODEL)
    m = boards.m
    lim = MODEL.limit_arrays(BOARD_JOINTS)
    jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in BOARD_JOINTS]
    np.testing.assert_allclose(m.jnt_range[jids, 0], lim['lower'] - HARD_STOP_MARGIN)
    np.testing.assert_allclose(m.jnt_range[jids, 1], lim['upper'] + HARD_STOP_MARGIN)
    dofs = boards._dof
    np.testing.assert_allclose(m.dof_armature[dofs], lim['armature'])
    np.testing.assert_allclose(m.dof_damping[dofs], lim['damping'])
    np.testing.assert_allclose(m.dof_frictionloss[dofs], lim['friction'])
    np.testing.assert_allclose(m.actuator_ctrlrange[:, 1], lim['effort'])
    assert m.opt.timestep == DT
    # Same kinematics and gravity as the robot's own model, anywhere.
    rng = np.random.default_rng(3)
    hand = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, 'right_hand')
    for _ in range(5):
        q = rng.uniform(lim['lower'], lim['upper'])
        boards.reset_pose(q)
        np.testing.assert_allclose(boards.d.xpos[hand], MODEL.arm_dynamics.tip('right_hand', q[:7])[0],
                                   atol=1e-9)
        np.testing.assert_allclose(boards.read().effort[:7], MODEL.arm_dynamics.gravity(q[:7]),
                                   atol=1e-6)             # braked: the drives carry gravity


def free_motion(name, model, seconds=0.5):
    """Gravity compensation plus 2 Hz torque waves on every joint: the positions (N × 8)."""
    boards = plant(name, model)
    amplitude = np.array([6.0, 8.0, 4.0, 4.0, 1.0, 1.0, 0.5, 0.5])
    qs = []
    for k in range(int(round(seconds / DT))):
        r = boards.read()
        tau = amplitude * math.sin(2 * math.pi * 2.0 * k * DT)
        tau[:7] += model.arm_dynamics.gravity(r.position[:7])
        boards.write(tau)
        boards.advance(DT)
        qs.append(boards.read().position.copy())
    return np.array(qs)


def test_both_plants_agree_on_a_free_motion():
    # Rigid bodies, armature and damping: the same to within a milliradian...
    frictionless = RobotModel(MODEL.urdf_xml)
    for name, lim in list(frictionless.limits.items()):
        frictionless.limits[name] = dataclasses.replace(lim, friction=0.0)
    embedded, mj = free_motion('embedded', frictionless), free_motion('mujoco', frictionless)
    travel = np.abs(embedded - Q0).max(axis=0)
    assert travel.min() > 0.1                                      # every joint moved
    assert np.abs(embedded - mj).max() < 1e-3
    # ... and with the joints' dry friction (the embedded plant's per-joint impulse model,
    # MuJoCo's coupled friction-loss constraints), within 15 % of each joint's travel.
    embedded, mj = free_motion('embedded', MODEL), free_motion('mujoco', MODEL)
    travel = np.abs(embedded - Q0).max(axis=0)
    assert (np.abs(embedded - mj).max(axis=0) < 0.15 * travel + 2e-3).all(), \
        (np.abs(embedded - mj).max(axis=0), travel)


@pytest.mark.parametrize('joint', [0, 5])
def test_hard_stops_lie_10_mrad_beyond_the_limits(joint):
    lim = MODEL.limits[BOARD_JOINTS[joint]]
    q = Q0.copy()
    q[joint] = lim.upper - 0.05
    boards = plant('mujoco', q=q)
    push = np.zeros(8)
    for _ in range(600):                                # driven into the stop at full torque
        push[:7] = MODEL.arm_dynamics.gravity(boards.read().position[:7])
        push[joint] = lim.effort
        boards.write(push)
        boards.advance(DT)
    assert boards.read().position[joint] == pytest.approx(lim.upper + HARD_STOP_MARGIN, abs=2e-3)


def test_the_table_option_puts_a_table_in_the_cell():
    # The arm pitched down in front of the robot comes to rest on the table top.
    def down(t):
        q = Q0.copy()
        q[1] += min(1.2, 0.6 * t)
        q[3] -= min(0.8, 0.4 * t)
        return q
    boards = plant('mujoco', table=True)
    qs, _, _, contacts = run(MODEL, boards, 2.5, ref=down)
    (c,) = contacts[-1]
    assert (c.obstacle, c.link) == ('table', 'right_hand') and c.force[2] > 20.0
    assert c.point[2] == pytest.approx(-0.913 + 0.75, abs=2e-3)         # 0.75 m above the floor
    assert qs[-1][1] < down(2.5)[1] - 0.05                             # held up by it
    # Without the option there is none.
    _, _, _, contacts = run(MODEL, plant('mujoco'), 2.5, ref=down)
    assert not contacts[-1]


def test_a_joint_motion_into_a_box_is_detected():
    """The core on MuJoCo: a POSITION_MODE move of right_j0 into a wall is stopped as an
    impact within 10 ms of the first contact, with the robot's log line."""
    core = RealtimeCore(MODEL, 'mujoco', q_arm=list(NEUTRAL))
    hand = MODEL.arm_dynamics.tip('right_hand', np.array(NEUTRAL))[0]
    rho, phi = math.hypot(hand[0], hand[1]), math.atan2(hand[1], hand[0]) + 0.25
    centre = (rho * math.cos(phi) - 0.05 * math.sin(phi), rho * math.sin(phi) + 0.05 * math.cos(phi),
              hand[2] - 0.05)
    ok, why = core.apply(cmds.SimAddObstacle(name='wall', shape='box', position=centre,
                                             quaternion=(0.0, 0.0, math.sin(phi / 2), math.cos(phi / 2)),
                                             size=(0.2, 0.1, 0.16)))
    assert ok, why
    core.apply(cmds.SetSpeedRatio(ratio=0.5))
    for _ in range(400):
        core.tick()
    target = np.array(NEUTRAL)
    target[0] += 0.65
    contact = halt = None
    for i in range(3000):
        if i % 10 == 0 and halt is None:
            core.apply(cmds.JointCommand(mode=1, names=tuple(ARM_JOINTS), position=tuple(target)))
        core.tick()
        if contact is None and core.boards.contacts():
            contact = core.now
        if halt is None and core.now < core._halt_until:
            halt = core.now
            break
    assert contact is not None and halt is not None, (contact, halt)
    assert 0.0 <= halt - contact <= 0.010
    assert core._halt_kind == 'impact'
    assert any(key == 'halt:impact' and text.startswith('impact: ') for _, key, text in core.take_logs())
    q_stop = core.boards.read().position[0]
    for _ in range(300):                                 # held, not pressing on
        core.tick()
    assert core.boards.read().position[0] <= q_stop + 0.01
    core.close()


def test_the_viewer_needs_a_display(monkeypatch):
    monkeypatch.delenv('DISPLAY', raising=False)
    monkeypatch.delenv('WAYLAND_DISPLAY', raising=False)
    boards = make_boards('mujoco', MODEL, {'viewer': 'true'})
    boards.configure()
    with pytest.raises(BoardsError, match='the MuJoCo viewer needs a display'):
        boards.activate()
    boards.shutdown()


def test_a_core_on_mujoco_boots_where_asked_and_holds():
    q = list(NEUTRAL)
    q[0] = 0.4
    core = RealtimeCore(MODEL, 'mujoco', q_arm=q, q_head=-1.0)
    for _ in range(1000):
        core.tick()
    r = core.boards.read()
    np.testing.assert_allclose(r.position, q + [-1.0], atol=2e-3)
    assert np.abs(r.velocity).max() < 1e-3 and not r.brakes
    core.close()
