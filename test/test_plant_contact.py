"""Obstacles and contact in the embedded plant (boards.embedded.EmbeddedBoards), no ROS.

The arm is driven by plant_scene's PD + gravity controller, ticked at 1 kHz like the
realtime loop; the scene's geometry (the hand on a circle about right_j0's axis, a wall
across its path): plant_scene.py.
"""
import math

import numpy as np
import pinocchio as pin
import pytest

from intera_rt.boards import Contact, JointBoards, Obstacle
from intera_rt.boards.embedded import EmbeddedBoards
from plant_scene import (DT, HAND_RADIUS, HAND_Z, J0_TARGET, MODEL, PHI0, PHI_WALL, Q0, RHO, WALL,
                         WALL_NORMAL, hand_position, radial, ramp_j0, run, tangent, torque_of, z_turn)


@pytest.fixture(scope='module')
def model():
    return MODEL


def make_boards(model, q=Q0, **kw):
    boards = EmbeddedBoards(model, **kw)
    boards.reset_pose(q)
    boards.set_brakes(False)
    return boards


@pytest.fixture(scope='module')
def pressed_wall(model):
    """The hand driven into the wall by right_j0, then held there: 2.5 s."""
    boards = make_boards(model)
    boards.add_obstacle('wall', **WALL)
    qs, qds, efforts, contacts = run(model, boards, 2.5)
    return boards, qs, qds, efforts, contacts


# --- contact stops the arm ------------------------------------------------------------
def test_wall_stops_the_hand_at_its_face(model, pressed_wall):
    boards, qs, qds, efforts, contacts = pressed_wall
    assert qs[-1, 0] < J0_TARGET - 0.1                            # stalled well short
    assert np.abs(qds[-300:]).max() < 1e-4                         # and at rest
    (c,) = boards.contacts()
    assert isinstance(c, Contact)
    assert (c.obstacle, c.link) == ('wall', 'right_hand')
    assert 0.0 < c.depth < 0.003
    # Pushed back along the face's normal, with the spring's force.
    force = np.linalg.norm(c.force)
    assert c.force @ WALL_NORMAL > 0.999 * force
    assert force == pytest.approx(boards.contact_stiffness * c.depth, rel=0.05)
    # The hand's deepest point: depth beyond the face, within its rectangle...
    assert -c.point @ WALL_NORMAL == pytest.approx(c.depth, abs=2e-4)
    assert RHO - 0.1 < c.point @ radial(PHI_WALL) < RHO + 0.1 and 0.06 < c.point[2] < 0.216
    # ... and, from the kinematics alone, the hand cylinder's leading side is at the face.
    hand = hand_position(model, qs[-1])
    assert -hand @ WALL_NORMAL + HAND_RADIUS == pytest.approx(0.0, abs=0.003)


def test_sphere_stops_the_hand(model):
    # A 25 mm ball met head on: its centre on the hand's line of travel at PHI0 + 0.15 rad.
    # Pressed gently (right_j0 driven 0.1 rad past it): head on against a frictionless ball
    # is an unstable balance, and pressed hard the hand slides round it.
    phi, radius = PHI0 + 0.15, 0.025
    centre = RHO * radial(phi) + (HAND_RADIUS + radius) * tangent(phi) + (0, 0, HAND_Z)
    boards = make_boards(model)
    boards.add_obstacle('ball', 'sphere', centre, (0, 0, 0, 1), [radius])
    target = 0.25
    qs, qds, _, _ = run(model, boards, 2.0, ref=lambda t: ramp_j0(t, target=target))
    assert qs[-1, 0] < target - 0.05 and np.abs(qds[-300:]).max() < 1e-4
    (c,) = boards.contacts()
    assert (c.obstacle, c.link) == ('ball', 'right_hand')
    assert 0.0 < c.depth < 0.003
    outward = (c.point - centre) / np.linalg.norm(c.point - centre)
    assert c.force @ outward > 0.999 * np.linalg.norm(c.force)     # along the ball's normal
    assert np.linalg.norm(c.point - centre) == pytest.approx(radius - c.depth, abs=2e-4)
    # The cylinder's axis is a radius plus a hand's radius from the centre, less the depth.
    hand = hand_position(model, qs[-1])
    gap = math.hypot(hand[0] - centre[0], hand[1] - centre[1])
    assert gap == pytest.approx(radius + HAND_RADIUS - c.depth, abs=0.003)


def test_removing_the_obstacle_lets_the_arm_continue(model):
    boards = make_boards(model)
    boards.add_obstacle('wall', **WALL)
    qs, _, _, _ = run(model, boards, 1.5)
    assert qs[-1, 0] < J0_TARGET - 0.1 and boards.contacts()
    boards.remove_obstacle('wall')
    assert boards.obstacles() == [] and boards.contacts() == []
    qs, _, _, contacts = run(model, boards, 1.5, t0=1.5)
    assert qs[-1, 0] == pytest.approx(J0_TARGET, abs=0.01)
    assert not any(contacts)


def test_replacing_an_obstacle_by_name(model):
    boards = make_boards(model)
    boards.add_obstacle('wall', **WALL)
    boards.add_obstacle('wall', 'sphere', (2.0, 0.0, 0.0), (0, 0, 0, 1), [0.1])   # moved away
    (record,) = boards.obstacles()
    assert record == Obstacle('wall', 'sphere', (2.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1,))
    qs, _, _, contacts = run(model, boards, 1.5)
    assert qs[-1, 0] == pytest.approx(J0_TARGET, abs=0.01)
    assert not any(contacts)


# --- stability ------------------------------------------------------------------------
def test_resting_contact_settles_without_chatter(model):
    # Joint friction off: nothing sticks the arm, only damping can settle it.
    boards = make_boards(model)
    boards.coulomb[:] = 0.0
    boards.add_obstacle('wall', **WALL)
    qs, qds, _, contacts = run(model, boards, 3.0)
    touching = np.array([bool(c) for c in contacts])
    first = int(np.argmax(touching))
    assert touching[first:].all()                            # once touching, never bounced off
    assert np.abs(qds[-500:]).max() < 1e-3                   # at rest
    forces = np.array([np.linalg.norm(c[0].force) for c in contacts[-500:]])
    assert forces.min() > 10.0 and forces.std() < 0.005 * forces.mean()    # steady


def test_impact_adds_no_energy(model):
    """The hand thrown at the wall bounces off, and over the bounce the wall takes energy
    from the arm, never gives it: its work −Σ f·Δδ is negative, even undamped (c = 0). (A
    spring force taken at the start of each step would give energy: +0.06 J here.)"""
    boards = make_boards(model, contact_damping=0.0)
    boards.coulomb[:] = 0.0                                   # nothing else takes energy
    boards.damping[:] = 0.0
    boards.add_obstacle('wall', **WALL)
    # The arm held stiffly (right_j0 free) so that it moves as one body, kicked along j0.
    kp = np.array([0.0, 5000.0, 5000.0, 5000.0, 2000.0, 2000.0, 500.0, 50.0])
    kd = np.array([0.0, 100.0, 60.0, 60.0, 15.0, 15.0, 5.0, 1.0])
    run(model, boards, 0.1, ref=np.r_[0.2, Q0[1:]], kp=np.r_[100.0, kp[1:]], kd=kd)
    qs, qds, _, contacts = run(model, boards, 1.0, ref=Q0, kp=kp, kd=kd)
    touching = np.array([bool(c) for c in contacts])
    first = int(np.argmax(touching))
    last = first + int(np.argmin(touching[first:]))          # first tick apart again
    assert 0 < first < last and qds[first - 1, 0] > 0.5 and qds[last, 0] < 0.0   # a bounce
    hits = [contacts[i] for i in range(first, last)]
    assert all(len(h) == 1 and h[0].link == 'right_hand' for h in hits)
    depth = np.array([h[0].depth for h in hits] + [0.0])
    force = np.array([h[0].force @ WALL_NORMAL for h in hits])
    work = -np.sum(force * np.diff(depth))
    stored = force.max() ** 2 / (2.0 * boards.contact_stiffness)   # the spring's peak energy
    assert stored > 0.1                                        # J: a real impact
    assert -0.25 * stored < work < 0.0                         # taken, not much: a spring


# --- what must not touch --------------------------------------------------------------
def test_obstacle_around_the_pedestal_is_harmless(model):
    # Takes in the pedestal, controller box and the arm's base (z up to 0.20), not right_l0.
    boards = make_boards(model)
    boards.add_obstacle('crate', 'box', (0.0, 0.0, -0.3), (0, 0, 0, 1), (0.6, 0.6, 1.0))
    qs, qds, _, contacts = run(model, boards, 0.5, ref=Q0)
    assert not any(contacts)
    assert np.abs(qs - Q0).max() < 1e-6 and np.abs(qds).max() < 1e-6


# --- a braked arm: static contact -----------------------------------------------------
def sphere_centre(model, link, offset, q):
    """World centre of a collision sphere given in its joint's frame (`link` is the joint's
    own link, so its frame is the joint's)."""
    origin, quat, _ = model.arm_dynamics.tip(link, q[:7])
    rot = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix()
    return origin + rot @ np.asarray(offset)


def test_braked_arm_under_a_box(model):
    # A 6 cm box pressing 5 mm into right_l5's sphere (r 0.06 m, 0.1 m along its z) from above.
    boards = make_boards(model)
    boards.set_brakes(True)
    centre = sphere_centre(model, 'right_l5', (0.0, 0.0, 0.1), Q0)
    top = centre[2] + 0.06
    boards.add_obstacle('lid', 'box', (centre[0], centre[1], top - 0.005 + 0.05), (0, 0, 0, 1),
                        (0.06, 0.06, 0.1))
    boards.advance(DT)
    (c,) = boards.contacts()
    assert (c.obstacle, c.link) == ('lid', 'right_l5')
    assert c.depth == pytest.approx(0.005, abs=1e-6)
    np.testing.assert_allclose(c.force, (0.0, 0.0, -boards.contact_stiffness * 0.005), atol=1e-6)
    np.testing.assert_allclose(c.point, centre + (0.0, 0.0, 0.06), atol=1e-6)
    # The joints carry gravity less what the box pushes with; the arm does not move.
    effort = boards.read().effort
    expected = model.arm_dynamics.gravity(Q0[:7]) - torque_of(model, Q0, c)
    np.testing.assert_allclose(effort[:7], expected, atol=1e-6)
    assert effort[7] == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_array_equal(boards.read().position, Q0)


def test_braked_arm_carries_an_external_wrench(model):
    # The brakes hold the arm; its joints carry gravity less the push, as under contact.
    boards = make_boards(model)
    boards.set_brakes(True)
    wrench = np.array([0.0, 20.0, -30.0, 1.0, 0.0, 0.0])
    boards.apply_wrench('right_hand', wrench, 1.0)
    boards.advance(DT)
    _, _, jac = model.arm_dynamics.tip('right_hand', Q0[:7])
    expected = model.arm_dynamics.gravity(Q0[:7]) - jac.T @ wrench
    np.testing.assert_allclose(boards.read().effort[:7], expected, atol=1e-6)


def test_obstacle_at_full_reach_is_seen(model):
    # Arm stretched out (all joints 0): a ball just touching the far side of the hand.
    q = np.zeros(8)
    boards = make_boards(model, q=q)
    boards.set_brakes(True)
    hand, quat, _ = model.arm_dynamics.tip('right_hand', q[:7])
    axis = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix()[:, 2]
    # The cylinder's far end is 0.0445 + 0.015 m along right_j6's axis from right_l6's
    # origin, i.e. 0.035 m past the hand's origin; the ball overlaps it by 2 mm.
    end = hand + 0.035 * axis
    boards.add_obstacle('ball', 'sphere', end + (0.05 - 0.002) * axis, (0, 0, 0, 1), [0.05])
    boards.advance(DT)
    (c,) = boards.contacts()
    assert c.link == 'right_hand' and c.depth == pytest.approx(0.002, abs=1e-4)


# --- measured torque ------------------------------------------------------------------
def test_measured_torque_sees_the_contact(model, pressed_wall):
    """At rest against the wall, the transmitted torques differ from those holding the same
    pose free by −Jᵀf (the joints carry gravity less what the wall takes)."""
    boards, qs, _, efforts, _ = pressed_wall
    (c,) = boards.contacts()
    q = qs[-1]
    free = make_boards(model, q=q)
    _, _, free_efforts, _ = run(model, free, 0.3, ref=q)
    jtf = torque_of(model, q, c)
    assert np.linalg.norm(jtf) > 10.0
    delta = efforts[-1] - free_efforts[-1]
    assert np.linalg.norm(delta[:7] + jtf) < 0.03 * np.linalg.norm(jtf)
    assert delta[7] == pytest.approx(0.0, abs=0.05 * np.linalg.norm(jtf))


# --- the obstacle set -----------------------------------------------------------------
def test_reset_pose_keeps_obstacles(model):
    boards = make_boards(model)
    boards.add_obstacle('wall', **WALL)
    before = boards.obstacles()
    q = Q0.copy()
    q[0] = 0.5                                                 # well into the wall
    boards.reset_pose(q)
    assert boards.obstacles() == before and boards.contacts() == []
    boards.advance(DT)
    assert [c.link for c in boards.contacts()] == ['right_hand']


def test_obstacles_lists_what_was_placed(model):
    boards = make_boards(model)
    assert boards.obstacles() == [] and boards.contacts() == []
    boards.add_obstacle('wall', **WALL)
    boards.add_obstacle('ball', 'sphere', [1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 3.0], [0.2])
    wall, ball = boards.obstacles()
    assert wall.name == 'wall' and wall.shape == 'box' and wall.size == (0.2, 0.1, 0.156)
    np.testing.assert_allclose(wall.quaternion, z_turn(PHI_WALL))
    assert ball == Obstacle('ball', 'sphere', (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 1.0), (0.2,))


GOOD = dict(name='box', shape='box', position=(1.0, 0.0, 0.0), quaternion=(0, 0, 0, 1),
            size=(0.1, 0.1, 0.1))


@pytest.mark.parametrize('change, words', [
    (dict(name=''), ['name', "''"]),
    (dict(name=None), ['name', 'None']),
    (dict(shape='cone'), ['shape', "'cone'"]),
    (dict(size=(0.1, 0.1)), ['size', '3 full edge lengths', '(0.1, 0.1)']),
    (dict(shape='sphere', size=(0.1, 0.1, 0.1)), ['size', '[radius]', '(0.1, 0.1, 0.1)']),
    (dict(size=(0.1, float('nan'), 0.1)), ['size', 'finite', 'nan']),
    (dict(size=(0.1, float('inf'), 0.1)), ['size', 'finite', 'inf']),
    (dict(size=(0.1, 0.0, 0.1)), ['size', '> 0', '0.0']),
    (dict(shape='sphere', size=[-0.1]), ['size', '> 0', '-0.1']),
    (dict(size=(0.1, 0.1, 20.0)), ['size', 'at most 10 m', '20.0']),
    (dict(size='big'), ['size', "'big'"]),
    (dict(position=(0.0, 0.0)), ['position', '(0.0, 0.0)']),
    (dict(position=(0.0, float('nan'), 0.0)), ['position', 'finite', 'nan']),
    (dict(quaternion=(0, 0, 0, float('inf'))), ['quaternion', 'finite', 'inf']),
    (dict(quaternion=(0, 0, 1)), ['quaternion', '(0, 0, 1)']),
    (dict(quaternion=(0, 0, 0, 0)), ['quaternion', 'zero', '[0.0, 0.0, 0.0, 0.0]']),
])
def test_bad_obstacles_are_refused(model, change, words):
    boards = make_boards(model)
    boards.add_obstacle('kept', 'sphere', (2.0, 0.0, 0.0), (0, 0, 0, 1), [0.1])
    with pytest.raises(ValueError) as err:
        boards.add_obstacle(**dict(GOOD, **change))
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    assert [o.name for o in boards.obstacles()] == ['kept']     # the cell as it was


def test_removing_an_unknown_obstacle(model):
    boards = make_boards(model)
    with pytest.raises(KeyError, match="'nothing'"):
        boards.remove_obstacle('nothing')


def test_contact_options_are_checked(model):
    with pytest.raises(ValueError, match='contact_stiffness.*-1'):
        EmbeddedBoards(model, contact_stiffness=-1.0)
    with pytest.raises(ValueError, match='contact_damping.*nan'):
        EmbeddedBoards(model, contact_damping=float('nan'))


def test_boards_without_a_simulation_refuse_obstacles():
    class Hardware(JointBoards):
        pass
    boards = Hardware()
    for call in (lambda: boards.add_obstacle(**GOOD), lambda: boards.remove_obstacle('box'),
                 boards.obstacles, boards.contacts):
        with pytest.raises(NotImplementedError, match='Hardware'):
            call()
