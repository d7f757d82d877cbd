"""The tool's shapes in collision avoidance and in the embedded plant's contacts, without ROS
(issue 21 item 1): the electric gripper's collision primitives, grown as the armnav shapes
are, join the avoidance model with their own watched pairs (prepared off the realtime path,
plain data that survives the pipe, installed by the core between ticks); a hold driven into
a fold that brings the gripper into the shoulder is pushed back, where the bare arm's shapes
see nothing; and the embedded plant feels the gripper on an obstacle."""
import pickle

import numpy as np
import pytest

from intera_rt.boards.embedded import EmbeddedBoards
from intera_rt.control import commands as cmds
from intera_rt.control.base import PluginContext
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.model import RobotModel
from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml, tool_shapes
from intera_rt.model.shape_growth import ARMNAV_MARGIN
from intera_rt.model.tool import graft
from intera_rt.model.urdf_fragments import FragmentManager, electric_gripper_fragment
from intera_rt.realtime import pipe
from intera_rt.realtime.core import RealtimeCore
from intera_rt.robot import NAMED_POSES, NEUTRAL
from test_collision_avoidance_core import overlap, run_arm

# Neutral with the elbow and wrist folded: the gripper's fingers reach into the shoulder's
# avoidance shapes (~24 mm beyond their allowance) while the bare arm's are ~40 mm clear.
FOLD = np.array(NEUTRAL, dtype=float)
FOLD[3], FOLD[5] = 2.0, 1.9
GRIPPER = ('right_gripper_base', 'right_gripper_l_finger', 'right_gripper_r_finger')


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.fixture(scope='module')
def armnav_xml():
    return default_armnav_xml()


@pytest.fixture(scope='module')
def shapes(armnav_xml):
    return tool_shapes(armnav_xml, electric_gripper_fragment())


@pytest.fixture(scope='module')
def bare(armnav_xml):
    return AvoidanceModel(armnav_xml)


@pytest.fixture(scope='module')
def carried(bare, shapes):
    # As the core gets it: through the pipe's encoding.
    command = pickle.loads(pickle.dumps(pipe.Apply(command=cmds.SetTool(shapes=shapes)))).command
    return bare.with_tool(command.shapes)


def test_the_gripper_joins_the_avoidance_shapes_with_its_pairs(bare, carried):
    assert [link for link in carried.shape_links if link not in bare.shape_links] == list(GRIPPER)
    watched = {link for pair in carried.pairs for link in pair}
    assert set(GRIPPER) <= watched
    for link in ('right_arm_base_link', 'right_l0', 'right_l1', 'head'):
        assert carried.exclusion(link, 'right_gripper_base') == 'checked', link
    # Rigid with the wrist it is bolted to; the pedestal's boxes stay unused; the bare arm's
    # own pairs are all still watched.
    assert carried.exclusion('right_l6', 'right_gripper_base') == 'rigid'
    assert carried.exclusion('pedestal', 'right_gripper_base') == 'unused'
    assert set(bare.pairs) <= set(carried.pairs)
    # The rest poses stay free of avoidance, with the gripper too.
    for name, q in NAMED_POSES.items():
        assert carried.contacts(q, 0.0) == [], name


def test_the_welded_shapes_answer_as_the_grafted_model(armnav_xml, carried):
    """The shapes installed on the arm's own joints (fingers where they rest) give the same
    clearances as the model built from the grafted armnav URDF."""
    grafted = AvoidanceModel(graft(armnav_xml, electric_gripper_fragment(), ARMNAV_MARGIN))
    assert grafted.pairs == carried.pairs
    for q in (NEUTRAL, FOLD, NAMED_POSES['shipping']):
        assert carried.clearances(q) == pytest.approx(grafted.clearances(q), abs=1e-6)   # GJK


def test_a_fold_into_the_gripper_is_seen_only_with_its_shapes(bare, carried):
    assert bare.clearances(FOLD).min() > 0.03
    contacts = carried.contacts(FOLD, 0.0)
    deepest = min(contacts, key=lambda c: c.clearance)
    assert deepest.clearance < -0.015
    assert set(carried.pairs[deepest.pair]) & set(GRIPPER), carried.pairs[deepest.pair]


def test_a_hold_folding_the_gripper_into_the_shoulder_is_pushed_back(model, carried, shapes):
    stage = CollisionAvoidance(PluginContext(model, None))
    stage.set_tool_shapes(shapes)
    commanded = overlap(carried, FOLD)
    _, torques, _, q = run_arm(model, stage, NEUTRAL, FOLD)
    assert np.count_nonzero(torques)
    reached = overlap(carried, q)
    assert reached < 0.4 * commanded, (reached, commanded)         # ≥ 60 % pushed back
    # Let go where the hold left it (torque mode, gravity compensated): pushed out of the
    # overlap, and then at rest with nothing pushing.
    _, torques, speed, q = run_arm(model, stage, q, q, torque_mode=True)
    assert overlap(carried, q) == 0.0
    assert speed[-300:].max() < 1e-3 and not np.count_nonzero(torques[-300:])
    # The tool taken off: the same hold goes all the way, nothing pushes.
    stage.set_tool_shapes(None)
    _, torques, _, q = run_arm(model, stage, NEUTRAL, FOLD)
    assert not np.count_nonzero(torques)
    assert overlap(carried, q) > 0.95 * commanded


def gripper_on(model):
    manager = FragmentManager(model.urdf_xml)
    change = manager.receive(1, '', '', electric_gripper_fragment())
    assert change.changed, change
    return manager, change.model


def test_the_core_swaps_the_shapes_in_between_ticks(model, shapes):
    """SetTool with the prepared shapes: collision avoidance and the safety status watch
    the gripper's pairs from the next tick; SetTool without them: the arm's alone again."""
    manager, _ = gripper_on(model)
    core = RealtimeCore(model, q_arm=list(NEUTRAL))
    core.tick()
    avoidance = next(s for s in core._stages if s.name == 'collision_avoidance')
    status = next(s for s in core._stages if s.name == 'safety_status')
    core.apply(cmds.SetTool(tool=manager.tool(), shapes=shapes))
    core.tick()
    for stage in (avoidance, status):
        assert set(GRIPPER) <= set(stage.model.shape_links), stage.name
    core.apply(cmds.SetTool(tool=None, shapes=None))
    core.tick()
    for stage in (avoidance, status):
        assert not set(GRIPPER) & set(stage.model.shape_links), stage.name


def test_the_embedded_plant_feels_the_gripper_on_an_obstacle(model):
    """A box just below the fingertips (the hand 15 cm above it): the arm lowered by its
    shoulder stops on it, the contact on a gripper link; without the tool's shapes the
    fingers pass into it."""
    manager, grafted = gripper_on(model)
    tip = grafted.arm_dynamics.tip('right_gripper_tip', np.array(NEUTRAL))[0]
    top = tip[2] - 0.035
    # (wide enough that the fingers, lowered along an arc towards the base, stay above it)
    box = dict(shape='box', position=(tip[0] - 0.1, tip[1], top - 0.05), quaternion=(0, 0, 0, 1),
               size=(0.6, 0.6, 0.1))

    def lower(tool):
        boards = EmbeddedBoards(model)
        boards.set_tool(tool)
        boards.reset_pose(np.r_[NEUTRAL, 0.0])
        boards.set_brakes(False)
        boards.add_obstacle('table', **box)
        dyn = grafted.arm_dynamics
        target = np.array(NEUTRAL, float)
        target[1] += 0.3                    # the tip 10 cm lower: 6.5 cm into the box
        felt, lowest = set(), np.inf
        for i in range(1500):
            r = boards.read()
            q, qd = r.position[:7], r.velocity[:7]
            ref = np.array(NEUTRAL) + min(1.0, i / 500.0) * (target - np.array(NEUTRAL))
            u = 100.0 * (ref - q) - 20.0 * qd     # a soft hold (ω 10 rad/s)
            boards.write(np.r_[dyn.inverse_dynamics(q, qd, u), -2.0 * r.velocity[7]])
            boards.advance(0.001)
            felt |= {c.link for c in boards.contacts()}
            lowest = min(lowest, dyn.tip('right_gripper_tip', r.position[:7])[0][2])
        return felt, lowest

    felt, lowest = lower(manager.tool())
    assert felt and felt <= set(GRIPPER), felt
    assert lowest > top, (lowest, top)        # the tip stays above, the fingertips on it
    felt, lowest = lower(None)
    assert not felt
    assert lowest < top - 0.04


def test_a_tool_with_a_mesh_is_refused_naming_its_link(armnav_xml):
    """The adapter then keeps the arm's shapes and logs why (ros.carried_tool.CarriedTool._tool_shapes)."""
    mesh = ('<robot name="t"><link name="scoop"><collision><geometry>'
            '<mesh filename="package://nowhere/scoop.stl"/></geometry></collision></link>'
            '<joint name="scoop_joint" type="fixed"><parent link="right_hand"/>'
            '<child link="scoop"/></joint></robot>')
    with pytest.raises(ValueError, match='scoop'):
        tool_shapes(armnav_xml, mesh)
