"""The MuJoCo plant's world without ROS (boards capability 'world', issue 21): spawned models
are MuJoCo bodies that rest, fall, slide with their own friction and can be pushed, moved and
deleted; the electric gripper's fingers are MuJoCo bodies that pick a block by friction,
carry it while the arm lifts and drop it when they open. The models are the demo's kind
(test/data/world: the table, the block) and a few written here."""
import math
import os
import pickle

import mujoco
import numpy as np
import pytest

from intera_rt.bench.picking import Picker, gripper_model
from intera_rt.boards import make_boards
from intera_rt.boards.base import BoardsError, GripperCommand
from intera_rt.boards.mujoco_boards import gripper_fragment
from intera_rt.boards.mujoco_world import body_name
from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.robot import NEUTRAL
from intera_rt.world import Pose, Resolver, WorldError, parse_model_xml, parse_sdf
from intera_rt.world.model import Box, Collision, Link, Model

DT = 0.001
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'world', 'world_test_pkg')
RESOLVER = Resolver([os.path.join(DATA, 'models')], [os.path.dirname(DATA)])
MODEL = RobotModel.from_file()
TABLE_X = 0.75                      # m: the table's centre ahead of the base
BLOCK_MU = 1.2                      # the demo block's <mu1>


def model_file(name):
    path = RESOLVER.model_file('model://' + name, 'test')
    with open(path) as f:
        text = f.read()
    if path.endswith('.sdf'):
        return parse_sdf(text, RESOLVER, base_dir=os.path.dirname(path))
    return parse_model_xml(text, RESOLVER)


def sdf_block(name, size=0.04, mass=0.1, mu=1.0):
    i = mass * size * size / 6.0
    return parse_model_xml(
        '<sdf version="1.6"><model name="%s"><link name="link">'
        '<inertial><mass>%g</mass><inertia><ixx>%g</ixx><iyy>%g</iyy><izz>%g</izz></inertia></inertial>'
        '<collision name="c"><geometry><box><size>%g %g %g</size></box></geometry>'
        '<surface><friction><ode><mu>%g</mu><mu2>%g</mu2></ode></friction></surface></collision>'
        '</link></model></sdf>' % (name, mass, i, i, i, size, size, size, mu, mu), RESOLVER)


def plant(**options):
    """MuJoCo boards, braked at neutral (the world moves on), with the demo's table on the
    floor in front of the robot. Returns (boards, the table top's height in base)."""
    boards = make_boards('mujoco', MODEL, options)
    boards.reset_pose(np.r_[NEUTRAL, 0.0])
    floor = boards.m.geom_pos[mujoco.mj_name2id(boards.m, mujoco.mjtObj.mjOBJ_GEOM, 'floor'), 2]
    boards.spawn_model(model_file('table'), Pose((TABLE_X, 0.0, floor)))
    return boards, floor + 0.75


def run(boards, seconds):
    for _ in range(int(round(seconds / DT))):
        boards.advance(DT)


def states(boards):
    return {(s.model, s.body): s for s in boards.body_states()}


def position(boards, model, body=None):
    for s in boards.body_states():
        if s.model == model and (body is None or s.body == body):
            return np.array(s.pose.position)
    raise KeyError(model)


def test_a_block_dropped_on_the_table_comes_to_rest_on_it():
    boards, top = plant()
    boards.spawn_model(model_file('block'), Pose((0.7, 0.1, top + 0.01)))
    run(boards, 1.0)
    s = states(boards)
    assert set(s) == {('table', 'top'), ('block', 'block')}
    block = s[('block', 'block')]
    np.testing.assert_allclose(block.pose.position, (0.7, 0.1, top), atol=1e-3)   # origin at its base
    assert abs(block.pose.quaternion[3]) > 0.9999                                 # upright
    assert np.abs(block.twist).max() < 1e-3
    table = s[('table', 'top')]
    np.testing.assert_allclose(table.pose.position, (TABLE_X, 0.0, top - 0.02), atol=1e-9)


def test_set_state_places_and_launches_a_model_and_gets_it_back():
    boards, top = plant()
    boards.spawn_model(model_file('block'), Pose((0.7, 0.0, top)))
    run(boards, 0.3)                                    # at rest (asleep, to MuJoCo)
    start = Pose.from_xyz_rpy((0.6, -0.2, top + 0.4, 0.0, 0.0, 0.5))
    boards.set_model_state('block', start, (0.5, 0.0, 0.0, 0.0, 0.0, 1.0))
    got = states(boards)[('block', 'block')]
    np.testing.assert_allclose(got.pose.position, start.position, atol=1e-9)
    np.testing.assert_allclose(np.abs(np.dot(got.pose.quaternion, start.quaternion)), 1.0, atol=1e-9)
    np.testing.assert_allclose(got.twist, (0.5, 0.0, 0.0, 0.0, 0.0, 1.0), atol=1e-9)
    run(boards, 0.2)                                    # in flight: ballistic
    np.testing.assert_allclose(position(boards, 'block'),
                               (0.6 + 0.1, -0.2, top + 0.4 - 0.5 * 9.81 * 0.2 ** 2), atol=2e-3)
    run(boards, 1.5)
    assert abs(position(boards, 'block')[2] - top) < 2e-3           # landed on the table
    # A model at rest moved elsewhere, at rest, is not left hanging there.
    boards.set_model_state('block', Pose((0.7, 0.2, top + 0.1)), (0.0,) * 6)
    run(boards, 0.5)
    np.testing.assert_allclose(position(boards, 'block'), (0.7, 0.2, top), atol=2e-3)
    # A static model goes where it is put and stays there.
    boards.set_model_state('table', Pose((TABLE_X + 0.1, 0.0, top - 0.75)), (0.0,) * 6)
    run(boards, 0.1)
    np.testing.assert_allclose(position(boards, 'table'), (TABLE_X + 0.1, 0.0, top - 0.02), atol=1e-9)
    with pytest.raises(KeyError, match="no model named 'nothing'"):
        boards.set_model_state('nothing', Pose(), (0.0,) * 6)


def test_a_model_put_at_rest_the_step_before_it_would_sleep_still_falls():
    """MuJoCo puts a body to sleep MINAWAKE steps after it comes to rest; a model put
    elsewhere, at rest, on the last of those steps (reset_world on a block just landed)
    must fall from there, not sleep in mid-air."""
    boards, top = plant()
    boards.spawn_model(model_file('block'), Pose((0.7, 0.1, top + 0.01)))
    block = mujoco.mj_name2id(boards.m, mujoco.mjtObj.mjOBJ_BODY, body_name('block', 'block'))
    tree = boards.m.body_treeid[block]
    for _ in range(2000):
        boards.advance(DT)
        if boards.d.tree_asleep[tree] == -2:            # asleep after the next step
            break
    else:
        pytest.fail('the block never came to the step before sleep')
    boards.set_model_state('block', Pose((0.7, -0.1, top + 0.1)), (0.0,) * 6)
    run(boards, 0.5)
    np.testing.assert_allclose(position(boards, 'block'), (0.7, -0.1, top), atol=2e-3)


def test_a_wrench_slides_a_block_past_its_own_friction_and_stops_with_it():
    boards, top = plant()
    boards.spawn_model(model_file('block'), Pose((0.7, 0.0, top)))
    run(boards, 0.3)
    weight = 0.1 * 9.81
    # Well below the block's friction (mu 1.2 from its URDF): it stays. (MuJoCo's soft
    # friction lets a block slide from ~85 % of mu times its weight: docs/world.md.)
    boards.apply_body_wrench('block', 'block', (0.6 * BLOCK_MU * weight, 0, 0), (0, 0, 0), (0, 0, 0.025), 0.3)
    run(boards, 0.5)
    assert abs(position(boards, 'block')[0] - 0.7) < 1e-3
    # Above it, until cleared: it slides, then friction stops it.
    boards.apply_body_wrench('block', 'block', (1.5 * BLOCK_MU * weight, 0, 0), (0, 0, 0), (0, 0, 0.025), -1.0)
    run(boards, 0.15)
    assert position(boards, 'block')[0] > 0.7 + 0.02
    boards.clear_body_wrenches('block', 'block')
    run(boards, 0.5)
    stopped = position(boards, 'block')
    run(boards, 0.5)
    np.testing.assert_allclose(position(boards, 'block'), stopped, atol=1e-4)
    # A wrench of limited duration (plant time) ends by itself.
    boards.apply_body_wrench('block', 'block', (0, 1.5 * BLOCK_MU * weight, 0), (0, 0, 0), (0, 0, 0.025), 0.1)
    run(boards, 0.8)
    moved = position(boards, 'block')
    assert moved[1] > stopped[1] + 0.005
    run(boards, 0.5)
    np.testing.assert_allclose(position(boards, 'block'), moved, atol=1e-4)
    with pytest.raises(KeyError, match="model 'block' has no body 'lid'"):
        boards.apply_body_wrench('block', 'lid', (1, 0, 0), (0, 0, 0), (0, 0, 0), 1.0)


def test_delete_takes_one_model_out_and_leaves_the_others_where_they_are():
    boards, top = plant()
    boards.spawn_model(sdf_block('a'), Pose((0.6, -0.1, top + 0.02)))
    boards.spawn_model(sdf_block('b'), Pose((0.6, 0.1, top + 0.05)))
    run(boards, 0.5)
    before = position(boards, 'b')
    boards.delete_model('a')
    assert {s.model for s in boards.body_states()} == {'table', 'b'}
    np.testing.assert_allclose(position(boards, 'b'), before, atol=1e-9)
    run(boards, 0.2)
    np.testing.assert_allclose(position(boards, 'b'), before, atol=1e-4)
    with pytest.raises(KeyError, match="no model named 'a'"):
        boards.delete_model('a')
    boards.spawn_model(sdf_block('a'), Pose((0.6, -0.1, top + 0.02)))   # the name is free again
    assert {s.model for s in boards.body_states()} == {'table', 'b', 'a'}


def test_what_mujoco_cannot_simulate_is_refused_and_the_world_is_unchanged():
    boards, top = plant()
    boards.spawn_model(sdf_block('a'), Pose((0.6, 0.0, top + 0.02)))
    nbody = boards.m.nbody
    moving_plane = parse_model_xml(
        '<sdf version="1.6"><model name="p"><link name="l"><collision name="floor2"><geometry>'
        '<plane><normal>0 0 1</normal><size>1 1</size></plane></geometry></collision></link>'
        '</model></sdf>')
    with pytest.raises(WorldError, match="model 'p': link 'l': collision 'floor2': a plane can only be static"):
        boards.spawn_model(moving_plane, Pose())
    massless = Model('m', (Link('l', Pose(), None, (Collision('c', Pose(), Box((0.1, 0.1, 0.1))),)),))
    with pytest.raises(WorldError, match="model 'm': link 'l': a body that moves needs a mass"):
        boards.spawn_model(massless, Pose())
    with pytest.raises(WorldError, match="a model named 'a' already exists"):
        boards.spawn_model(sdf_block('a'), Pose((0.6, 0.3, top)))
    assert boards.m.nbody == nbody
    assert {s.model for s in boards.body_states()} == {'table', 'a'}


def test_spheres_cylinders_and_meshes_rest_on_their_lowest_points():
    boards, top = plant()
    shapes = parse_model_xml(
        '<sdf version="1.6"><model name="shapes">'
        '<link name="ball"><pose>0 0 0 0 0 0</pose><inertial><mass>0.2</mass><inertia><ixx>7e-5</ixx>'
        '<iyy>7e-5</iyy><izz>7e-5</izz></inertia></inertial><collision name="c"><geometry><sphere>'
        '<radius>0.03</radius></sphere></geometry></collision></link>'
        '<link name="can"><pose>0 0.2 0 0 0 0</pose><inertial><mass>0.3</mass><inertia><ixx>3e-4</ixx>'
        '<iyy>3e-4</iyy><izz>6e-5</izz></inertia></inertial><collision name="c"><geometry><cylinder>'
        '<radius>0.02</radius><length>0.1</length></cylinder></geometry></collision></link>'
        '</model></sdf>')
    boards.spawn_model(shapes, Pose((0.6, -0.1, top + 0.06)))
    # A tetrahedron from an STL file (the test package's part, 0.2 m edges), its mass at
    # its centroid, dropped tilted: it lands on a corner and settles on a face.
    part = parse_model_xml(
        '<sdf version="1.6"><model name="part"><link name="body"><inertial><pose>0.05 0.05 0.05 0 0 0'
        '</pose><mass>0.2</mass><inertia><ixx>4e-4</ixx><iyy>4e-4</iyy><izz>4e-4</izz></inertia>'
        '</inertial><collision name="tetra"><geometry><mesh><uri>model://mesh_part/meshes/part.stl'
        '</uri><scale>2 2 2</scale></mesh></geometry></collision></link></model></sdf>', RESOLVER)
    boards.spawn_model(part, Pose.from_xyz_rpy((0.8, 0.15, top + 0.08, 0.3, 0.2, 0.0)))
    run(boards, 1.5)
    s = states(boards)
    assert abs(s[('shapes', 'ball')].pose.position[2] - (top + 0.03)) < 1e-3
    assert abs(s[('shapes', 'can')].pose.position[2] - (top + 0.05)) < 1e-3   # standing
    # The mesh part rests on its convex hulls' lowest point.
    (tetra,) = part.bodies()[0].collisions
    corners = s[('part', 'body')].pose.apply(tetra.pose.apply(tetra.geometry.hull_vertices))
    assert np.sort(corners[:, 2])[:3] - top == pytest.approx(np.zeros(3), abs=1e-3)  # on a face
    assert np.abs(s[('part', 'body')].twist).max() < 1e-3


def test_ten_blocks_in_contact_rest_still():
    boards, top = plant(gripper=True)
    for k in range(10):           # five touching blocks on the table, five stacked on them
        x, layer = 0.55 + 0.0405 * (k % 5), k // 5
        boards.spawn_model(sdf_block('b%d' % k), Pose((x, -0.2, top + 0.02 + 0.04 * layer)))
    run(boards, 0.5)
    settled = {s.model: np.array(s.pose.position) for s in boards.body_states()}
    run(boards, 2.0)
    for s in boards.body_states():
        np.testing.assert_allclose(s.pose.position, settled[s.model], atol=1e-3)
        if s.model != 'table':
            k = int(s.model[1:])
            assert abs(s.pose.position[2] - (top + 0.02 + 0.04 * (k // 5))) < 1.5e-3


def test_the_gripper_is_a_tool_the_plant_puts_on_and_takes_off():
    boards, top = plant()
    boards.spawn_model(sdf_block('a'), Pose((0.6, 0.0, top + 0.02)))
    boards.set_brakes(False)
    assert boards.gripper_state() is None
    with pytest.raises(BoardsError, match='has no gripper'):
        boards.set_gripper(GripperCommand(0.0, 0.1, 10.0))
    run(boards, 0.2)
    q, block = boards.read().position.copy(), position(boards, 'a')
    boards.set_tool(gripper_fragment())
    grip = boards.gripper_state()
    assert grip.separation == pytest.approx(0.041666, abs=1e-6) and grip.gripping == ''   # open
    np.testing.assert_allclose(boards.read().position, q, atol=1e-9)
    np.testing.assert_allclose(position(boards, 'a'), block, atol=1e-9)
    boards.set_gripper(GripperCommand(0.0, 0.2, 20.0))          # closing at 0.2 m/s
    run(boards, 0.1)
    assert 0.041666 - 0.2 * 0.1 - 0.004 < boards.gripper_state().separation < 0.041666 - 0.2 * 0.1 + 0.004
    run(boards, 0.3)
    assert boards.gripper_state().separation < 1e-3
    with pytest.raises(ValueError, match="gripper force must be a number >= 0, got nan"):
        boards.set_gripper(GripperCommand(0.0, 0.2, math.nan))
    boards.set_tool(None)
    assert boards.gripper_state() is None
    np.testing.assert_allclose(position(boards, 'a'), block, atol=1e-4)


def test_the_fingers_close_no_faster_than_their_joints_velocity_limit():
    # The device asks its default 1.5 m/s; each finger joint of the electric gripper's
    # fragment allows 0.1 m/s (its drive's top speed), so the separation closes at 0.2 m/s.
    boards, _ = plant(gripper=True)
    boards.set_brakes(False)
    boards.set_gripper(GripperCommand(0.0, 1.5, 20.0))
    run(boards, 0.1)
    assert boards.gripper_state().separation == pytest.approx(0.041666 - 0.2 * 0.1, abs=0.004)
    run(boards, 0.2)
    assert boards.gripper_state().separation < 1e-3


# --- picking: the bench's Picker (the realtime core in position mode on MuJoCo with the
# gripper and the demo's table; IK on right_gripper_tip streamed at 100 Hz) --------------------
GRIPPER_MODEL = gripper_model(MODEL)

def test_the_fingers_pick_a_block_by_friction_carry_it_and_drop_it_on_the_table():
    x, y = 0.65, 0.05
    picker = Picker(GRIPPER_MODEL, start=(x, y, 0.15))
    boards, top = picker.boards, picker.top
    boards.spawn_model(sdf_block('block', size=0.04, mass=0.2, mu=1.0), Pose((x, y, top + 0.02)))
    assert picker.move_to((x, y, top + 0.02))          # the tip at the block's centre
    grip = picker.grip(0.0, 20.0)
    assert grip.gripping == 'block'
    assert grip.force == pytest.approx(20.0, rel=0.05)  # both fingers, as the device's holding force
    assert 0.0 < grip.separation < 0.041
    offset = position(boards, 'block')[2] - picker.tip()[2]
    assert picker.move_to((x, y, top + 0.22))          # lift 20 cm
    assert position(boards, 'block')[2] - (top + 0.02) == pytest.approx(0.20, abs=0.005)
    picker.tick(1.0)                                   # held by friction, not attached: it may not slip
    assert abs(position(boards, 'block')[2] - picker.tip()[2] - offset) < 1e-3
    assert boards.gripper_state().gripping == 'block'
    grip = picker.grip(0.041667, 20.0)                 # open: it drops onto the table
    assert grip.gripping == ''
    picker.tick(1.0)
    rest = position(boards, 'block')
    assert np.hypot(rest[0] - x, rest[1] - y) < 0.01 and abs(rest[2] - (top + 0.02)) < 1e-3


@pytest.mark.parametrize('off_centre', [0.0, 0.0005, 0.002, 0.004])
def test_closing_on_a_block_is_not_a_collision_and_barely_squeezes_it(off_centre):
    # The fingers close (the device's default 1.5 m/s asked) on a block centred between them
    # or up to 4 mm off, the first pad shoving it across the table until the second meets
    # it: the strike, as the plant reports it through the arm's joints, stays below the
    # collision detection's impact threshold in the realtime core's own stage, and the
    # compliant pads sink into the block by well under 1 mm each at 20 N.
    x, y = 0.65, 0.0
    picker = Picker(GRIPPER_MODEL, start=(x, y, 0.15))
    boards, top = picker.boards, picker.top
    boards.spawn_model(sdf_block('block', size=0.04, mass=0.1, mu=1.0),
                       Pose((x, y + off_centre, top + 0.02)))
    assert picker.move_to((x, y, top + 0.02))
    monitor = next(m for m in picker.core.monitors if m.name == 'collision_detection')
    levels, halts = [], []
    update = monitor.update

    def watched(state, controller):
        halt = update(state, controller)
        levels.append(monitor.level)
        if halt is not None:
            halts.append(halt)
        return halt
    monitor.update = watched
    grip = picker.grip(0.0, 20.0, speed=1.5)
    assert grip.gripping == 'block'
    assert max(levels) < monitor.impact_threshold and not halts
    d = boards.d
    pads = [d.contact[i].dist for i in range(d.ncon)
            if any(mujoco.mj_id2name(boards.m, mujoco.mjtObj.mjOBJ_GEOM, g).endswith('finger/0')
                   for g in d.contact[i].geom)]
    assert pads and -1e-3 < min(pads) < 0.0
    picker.close()


def test_a_weak_squeeze_cannot_lift_a_heavy_block():
    # Friction, not attachment: 2 N of squeeze holds at most 2 × 1 N × mu 0.5 ≈ 0.1 kg (the
    # pads' 0.5, smaller than the block's 1).
    x, y = 0.65, -0.05
    picker = Picker(GRIPPER_MODEL, start=(x, y, 0.15))
    boards, top = picker.boards, picker.top
    boards.spawn_model(sdf_block('heavy', size=0.04, mass=0.5, mu=1.0), Pose((x, y, top + 0.02)))
    assert picker.move_to((x, y, top + 0.02))
    assert picker.grip(0.0, 2.0).gripping == 'heavy'
    assert picker.move_to((x, y, top + 0.12))
    assert position(boards, 'heavy')[2] - (top + 0.02) < 0.01     # left on the table
    assert boards.gripper_state().gripping == ''


def test_the_core_sends_the_world_as_it_changes_and_the_resting_gripper_as_a_keepalive():
    # The core's world frames (realtime.process.WorldFrames, every PUBLISH_EVERY ticks): a
    # world at rest sends the gripper's state every GRIPPER_KEEPALIVE of loop time and its
    # bodies not again (the gripper device keeps following the fingers, which it drops
    # PLANT_LAPSE after their last state); closing fingers and a lifted block go out in every
    # frame; the gripper state last sent is always within GRIPPER_NOISE of the plant's.
    from intera_rt.realtime.process import (GRIPPER_KEEPALIVE, GRIPPER_NOISE, PUBLISH_EVERY,
                                            WorldFrames)
    x, y = 0.65, -0.05
    picker = Picker(GRIPPER_MODEL, start=(x, y, 0.15))
    boards, top, core = picker.boards, picker.top, picker.core
    log = []                         # every frame's (loop time, WorldFrame sent or None, plant's gripper)

    class Conn:                      # (the frame as the adapter's Connection.recv reads it)
        def send_bytes(self, data):
            log[-1][1] = pickle.loads(data)
    frames = WorldFrames(Conn(), core)
    tick = core.tick

    def tick_and_send():
        tick()
        if core.tick_count % PUBLISH_EVERY == 0:
            log.append([core.now, None, boards.gripper_state()])
            frames.send()
    core.tick = tick_and_send
    ok, message = core.apply(cmds.SimSpawnModel(model=sdf_block('block', size=0.04, mass=0.1, mu=1.0),
                                                pose=Pose((x, y, top + 0.02))))
    assert ok, message
    assert picker.move_to((x, y, top + 0.02))
    start = len(log)
    picker.tick(1.0)                                # at rest, open around the block
    rest = [(t, f) for t, f, _ in log[start:] if f is not None]
    assert len(rest) == pytest.approx(1.0 / GRIPPER_KEEPALIVE, abs=1)
    assert all(f.bodies is None and f.gripper is not None for _, f in rest)
    assert max(np.diff([t for t, _ in rest])) <= GRIPPER_KEEPALIVE + 1e-9
    start = len(log)
    picker.grip(0.0, 20.0, seconds=0.4)             # the fingers close: in every frame until held
    closing = [f and f.gripper for _, f, _ in log[start:start + 5]]
    assert all(closing) and closing[0].separation > closing[-1].separation
    start = len(log)
    assert picker.move_to((x, y, top + 0.12), seconds=0.5, settle=0.0)     # the block lifted
    assert all(f is not None and f.bodies is not None for _, f, _ in log[start + 1:-1])
    assert position(boards, 'block')[2] > top + 0.1
    last = None
    for _, f, plant in log:
        last = (f and f.gripper) or last
        assert last.gripping == plant.gripping
        assert abs(last.separation - plant.separation) <= GRIPPER_NOISE[0]
        assert abs(last.force - plant.force) <= GRIPPER_NOISE[1]
    assert last.gripping == 'block'
    picker.close()
