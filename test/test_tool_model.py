"""The tool in the robot's dynamics without ROS (model.tool, RealtimeCore's SetTool): a
fragment's <inertial> becomes loads on the robot's own bodies that give the same gravity as
the grafted model; the core's dynamics, collision detection's observer and the embedded
plant carry it from one tick to the next, so an arm with a tool holds still in torque mode
(zero command + gravity compensation) without a false collision, and without the tool in
its dynamics the same arm sags."""
import numpy as np
import pytest

from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.model.urdf_fragments import FragmentManager, electric_gripper_fragment
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.state import StateView
from intera_rt.robot import ARM_JOINTS, NEUTRAL

TORQUE_MODE = 3
HAND = 'right_hand'
HEAVY = ('<robot name="payload"><link name="payload">'
         '<inertial><origin xyz="0 0 0.08"/><mass value="2.0"/>'
         '<inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.002"/></inertial>'
         '</link><joint name="payload_joint" type="fixed"><origin xyz="0 0 0.02"/>'
         '<parent link="right_hand"/><child link="payload"/></joint></robot>')


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


def grafted(model, urdf, joint=''):
    manager = FragmentManager(model.urdf_xml)
    change = manager.receive(1, '', joint, urdf)
    assert change.changed, change
    return manager, change


def test_the_gripper_weighs_on_the_wrist_as_the_grafted_model_does(model):
    manager, change = grafted(model, electric_gripper_fragment())
    tool = manager.tool()
    assert tool.mass == pytest.approx(0.45 + 2 * 0.07)
    assert [name for name, _ in tool.loads] == ['right_j6']
    assert 'right_gripper_tip' in tool.fragment and 'right_gripper_l_finger_joint' in tool.fragment
    q = np.array(NEUTRAL)
    boot = model.dynamics()
    carried = model.dynamics()
    carried.set_tool(tool)
    # The same gravity as the full grafted model (fingers at rest), and more than without it.
    assert carried.gravity(q) == pytest.approx(change.model.dynamics().gravity(q), abs=1e-9)
    assert abs(carried.gravity(q)[1] - boot.gravity(q)[1]) > 1.0
    carried.set_tool(None)
    assert carried.gravity(q) == pytest.approx(boot.gravity(q), abs=1e-12)


def test_a_fragment_without_inertial_weighs_nothing_and_removal_takes_the_tool_off(model):
    manager, _ = grafted(model, '<robot name="t"><link name="tip"/><joint name="j" type="fixed">'
                                '<parent link="right_hand"/><child link="tip"/></joint></robot>', 'j')
    assert manager.tool() is None
    manager.receive(2, '', 'payload_joint', HEAVY)
    assert manager.tool().mass == pytest.approx(2.0)
    manager.receive(3, '', 'payload_joint', '')
    assert manager.tool() is None
    assert FragmentManager(model.urdf_xml).tool() is None


def hand_z(core):
    q = StateView(core.state_vector()).q[:7]
    return core.model.arm_dynamics.tip(HAND, q)[0][2]


def run_torque_mode(core, seconds):
    """Zero torque commands at 100 Hz (gravity compensation on): the arm must hold itself."""
    for k in range(int(seconds * 1000)):
        if k % 10 == 0:
            core.apply(cmds.JointCommand(mode=TORQUE_MODE, names=ARM_JOINTS, effort=(0.0,) * 7))
        core.tick()


@pytest.mark.parametrize('backend', ['embedded', 'mujoco'])
@pytest.mark.parametrize('fragment, joint', [(electric_gripper_fragment(), ''), (HEAVY, 'payload_joint')],
                         ids=['gripper', '2kg'])
def test_an_arm_carrying_a_tool_holds_still_in_torque_mode(model, fragment, joint, backend):
    manager, _ = grafted(model, fragment, joint)
    core = RealtimeCore(model, backend=backend, q_arm=NEUTRAL)
    for _ in range(300):
        core.tick()
    core.apply(cmds.SetTool(tool=manager.tool()))
    assert any(key == 'tool' and 'the plant carry' in text for _, key, text in core.take_logs())
    z0 = hand_z(core)
    run_torque_mode(core, 2.0)
    view = StateView(core.state_vector())
    assert abs(hand_z(core) - z0) < 1e-3
    assert view.collision == 0.0
    assert np.abs(view.collision_detection.external_torque).max() < 1.0


def test_the_mujoco_plant_builds_the_tool_as_bodies_and_takes_it_off(model):
    import mujoco
    from intera_rt.boards.mujoco_boards import MujocoBoards
    manager, _ = grafted(model, electric_gripper_fragment())
    boards = MujocoBoards(model)
    bare = boards.m.body_subtreemass[0]
    boards.set_tool(manager.tool())
    assert boards.m.body_subtreemass[0] - bare == pytest.approx(0.59)
    for link in ('right_gripper_base', 'right_gripper_l_finger', 'right_gripper_tip'):
        assert mujoco.mj_name2id(boards.m, mujoco.mjtObj.mjOBJ_BODY, link) >= 0
    assert 'right_gripper_l_finger' in boards._geom_link.values()      # it touches the world
    # The fingers are MuJoCo slides the gripper's commands drive (issue 21 item 4), open.
    assert boards.m.nq == len(boards.joint_names) + 2
    assert boards.gripper_state().separation == pytest.approx(0.041666, abs=1e-6)
    boards.set_tool(None)
    assert boards.m.body_subtreemass[0] == pytest.approx(bare)
    assert mujoco.mj_name2id(boards.m, mujoco.mjtObj.mjOBJ_BODY, 'right_gripper_base') < 0


def test_without_the_tool_in_its_dynamics_the_arm_sags(model):
    """The effect is real: the plant carries 2 kg the controllers do not know of."""
    manager, _ = grafted(model, HEAVY, 'payload_joint')
    core = RealtimeCore(model, q_arm=NEUTRAL)
    for _ in range(300):
        core.tick()
    core.boards.set_tool(manager.tool())            # the plant only
    z0 = hand_z(core)
    run_torque_mode(core, 0.5)
    assert hand_z(core) < z0 - 0.01
