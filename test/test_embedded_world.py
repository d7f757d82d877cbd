"""The embedded plant's world (boards capability 'world', boards.embedded_world), without
ROS: a static table is an obstacle the arm is pushed out of, a block spawned above it
falls and rests on its top, the fingers of a grafted gripper close on a block and carry it
rigidly, and a released block drops to the table."""
import os

import numpy as np
import pytest

from intera_rt.boards.base import GripperCommand
from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.io.gripper import MAX_POSITION
from intera_rt.model import RobotModel
from intera_rt.model.urdf_fragments import FragmentManager
from intera_rt.robot import NEUTRAL
from intera_rt.world import Pose, parse_model_xml, world_to_base

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, 'data', 'world', 'world_test_pkg', 'models')
GRIPPER = os.path.join(HERE, '..', 'urdf', 'fragments', 'electric_gripper.urdf')
DT = 0.001
TABLE_TOP = 0.75 - 0.93                     # the table's top in base (table at world z 0)


def load(name, file, model_name=None):
    with open(os.path.join(MODELS, name, file)) as f:
        return parse_model_xml(f.read(), None, model_name or name)


def in_base(x, y, z):
    return world_to_base(Pose((x, y, z)))


def settle(boards, seconds):
    for _ in range(int(round(seconds / DT))):
        boards.write(np.zeros(8))
        boards.advance(DT)


def state(boards, model):
    return next(s for s in boards.body_states() if s.model == model)


@pytest.fixture(scope='module')
def gripper_model():
    base = RobotModel.from_file()
    fragments = FragmentManager(base.urdf_xml)
    with open(GRIPPER) as f:
        change = fragments.receive(1, 'right_hand', 'right_gripper_base', f.read())
    assert change.kind == 'added', change
    return RobotModel(fragments.description())


def test_static_table_and_a_falling_block():
    boards = EmbeddedBoards(RobotModel.from_file())
    assert 'world' in boards.capabilities and boards.gripper_state() is None
    boards.spawn_model(load('table', 'model.sdf'), in_base(0.75, 0.0, 0.0))
    boards.spawn_model(load('block', 'model.urdf'), in_base(0.7, 0.1, 0.85))
    # The table's collisions (box top, cylinder legs) are obstacle shapes of the plant.
    assert any(k.startswith('table::top') for k in boards._world_shapes)
    settle(boards, 0.6)
    block = state(boards, 'block')
    # Its frame (the cube's bottom face) on the table's top, where it was in x, y.
    # (on it, not hovering within the contact slack where its last step of fall ended)
    np.testing.assert_allclose(block.pose.position, (0.7, 0.1, TABLE_TOP), atol=1e-9)
    assert max(abs(v) for v in block.twist) < 1e-9
    table = state(boards, 'table')
    np.testing.assert_allclose(table.pose.position, in_base(0.75, 0.0, 0.73).position, atol=1e-9)
    # Off the table it falls to the floor.
    boards.set_model_state('block', in_base(1.5, 0.0, 0.3), (0.0,) * 6)
    settle(boards, 0.5)
    np.testing.assert_allclose(state(boards, 'block').pose.position, (1.5, 0.0, -0.93), atol=1e-9)
    boards.delete_model('block')
    assert {s.model for s in boards.body_states()} == {'table'}
    with pytest.raises(KeyError, match='block'):
        boards.delete_model('block')


def test_a_wrench_slides_a_block_against_friction():
    boards = EmbeddedBoards(RobotModel.from_file())
    boards.spawn_model(load('table', 'model.sdf'), in_base(0.75, 0.0, 0.0))
    boards.spawn_model(load('block', 'model.urdf'), in_base(0.7, 0.0, 0.75))
    # 0.5 N < mu m g (1.1 × 0.1 × 9.81 = 1.08 N): it stays; 1.5 N pushes it along x.
    boards.apply_body_wrench('block', 'block', (0.5, 0, 0), (0, 0, 0), (0, 0, 0), 0.2)
    settle(boards, 0.2)
    assert abs(state(boards, 'block').pose.position[0] - 0.7) < 1e-6
    boards.apply_body_wrench('block', 'block', (1.5, 0, 0), (0, 0, 0), (0, 0, 0), -1)
    settle(boards, 0.1)
    boards.clear_body_wrenches('block', 'block')
    settle(boards, 0.3)
    moved = state(boards, 'block').pose.position[0] - 0.7
    assert moved > 0.02
    assert max(abs(v) for v in state(boards, 'block').twist) < 1e-9


def test_the_arm_is_pushed_out_of_a_static_model():
    boards = EmbeddedBoards(RobotModel.from_file())
    boards.reset_pose(np.array(list(NEUTRAL) + [0.0]))
    boards.set_brakes(True)
    # A cylinder round the hand: the braked arm's link shapes press on it.
    xml = ('<sdf version="1.6"><model name="post"><static>true</static><link name="l">'
           '<collision name="c"><geometry><cylinder><radius>0.3</radius><length>2</length>'
           '</cylinder></geometry></collision></link></model></sdf>')
    post = parse_model_xml(xml, None, 'post')
    boards.spawn_model(post, Pose((0.45, 0.16, 0.2)))
    settle(boards, 0.002)
    assert any(c.obstacle.startswith('post::l::c') for c in boards.contacts())
    boards.delete_model('post')
    settle(boards, 0.002)
    assert not boards.contacts()


@pytest.fixture(params=['grafted', 'carried'])
def gripper_boards(request, gripper_model):
    """A plant with the gripper: in its model (grafted), or carried as a tool's fragment."""
    if request.param == 'grafted':
        return EmbeddedBoards(gripper_model)
    boards = EmbeddedBoards(RobotModel.from_file())
    assert boards.gripper_state() is None
    with open(GRIPPER) as f:
        boards.carry_gripper(f.read())
    return boards


def test_a_carried_gripper_has_the_grafted_ones_tip(gripper_model):
    grafted, carried = EmbeddedBoards(gripper_model), EmbeddedBoards(RobotModel.from_file())
    with open(GRIPPER) as f:
        carried.carry_gripper(f.read())
    np.testing.assert_allclose(carried._tip_pose(), grafted._tip_pose(), atol=1e-9)
    carried.carry_gripper(None)
    assert carried.gripper_state() is None


def test_the_gripper_picks_carries_and_drops_a_block(gripper_boards):
    boards = gripper_boards
    boards.reset_pose(np.array(list(NEUTRAL) + [0.0]))
    boards.set_brakes(True)                   # the arm holds still; the fingers move
    assert boards.gripper_state().separation == pytest.approx(MAX_POSITION)
    tip = boards._tip_pose()
    # A block between the open fingers (its centre at the tip, 4 cm across the fingers).
    xml = ('<sdf version="1.6"><model name="block"><link name="b"><collision name="c"><geometry>'
           '<box><size>0.03 0.03 0.03</size></box></geometry></collision></link></model></sdf>')
    block = parse_model_xml(xml, None, 'block')
    boards.spawn_model(block, Pose.from_matrix(tip))
    boards.spawn_model(load('table', 'model.sdf'),
                       Pose((tip[0, 3] - 0.3, tip[1, 3], tip[2, 3] - 0.3 - 0.75)))
    # (it starts falling at once: the fingers close on it within 8 ms)
    boards.set_gripper(GripperCommand(0.0, 1.5, 20.0))
    settle(boards, 0.3)
    g = boards.gripper_state()
    assert g.gripping == 'block' and g.separation == pytest.approx(0.03, abs=1e-3) and g.force == 20.0
    # Carried rigidly: the arm turns, the block keeps its place in the tip frame (it fell
    # less than a millimetre before the fingers met it).
    grasp = np.linalg.inv(tip) @ state(boards, 'block').pose.matrix()
    np.testing.assert_allclose(grasp, np.eye(4), atol=1e-3)
    boards.reset_pose(np.array(list(NEUTRAL) + [0.0]) + np.r_[0.3, np.zeros(7)])
    settle(boards, 0.01)
    tip2 = boards._tip_pose()
    held = state(boards, 'block').pose.matrix()
    np.testing.assert_allclose(np.linalg.inv(tip2) @ held, grasp, atol=1e-6)
    # Opened: it drops onto the table below (top 0.3 m under the tip).
    boards.set_gripper(GripperCommand(MAX_POSITION, 0.1, 20.0))
    settle(boards, 0.6)
    assert boards.gripper_state().gripping == ''
    dropped = state(boards, 'block').pose.position
    assert dropped[2] == pytest.approx(tip[2, 3] - 0.3 + 0.015, abs=3e-3)
    # its lowest corner on the table's top (turned as the tip is: not the centre's height)
    lo, _ = boards._world.models['block'].box()
    assert lo[2] == pytest.approx(tip[2, 3] - 0.3, abs=1e-9)
    np.testing.assert_allclose(dropped[:2], tip2[:2, 3], atol=1e-6)


def test_duplicate_and_unknown_names_change_nothing():
    boards = EmbeddedBoards(RobotModel.from_file())
    block = load('block', 'model.urdf')
    boards.spawn_model(block, in_base(0.7, 0, 0.75))
    with pytest.raises(ValueError, match='already exists'):
        boards.spawn_model(block, in_base(0.0, 0, 0.75))
    with pytest.raises(KeyError, match='nothing'):
        boards.set_model_state('nothing', Pose(), (0.0,) * 6)
    with pytest.raises(KeyError, match='no such body'):
        boards.apply_body_wrench('block', 'wheel', (1, 0, 0), (0, 0, 0), (0, 0, 0), 1.0)
    assert [s.model for s in boards.body_states()] == ['block']


def test_body_poses_keep_any_rotation():
    """body_states' matrix → Pose conversion (no KDL on the tick), half turns included."""
    from intera_rt.boards.embedded_world import _pose
    rng = np.random.default_rng(7)
    quats = [rng.normal(size=4) for _ in range(200)] + [
        np.array(q, float) for q in ((1, -1, 0, 0), (0, 1, -1, 0), (1, 0, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))]
    for q in quats:
        pose = Pose((0.1, -0.2, 0.3), tuple(q / np.linalg.norm(q)))
        np.testing.assert_allclose(_pose(pose.matrix()).matrix(), pose.matrix(), atol=1e-9)
