"""One model, data per user (model.pinocchio_model): the robot's Pinocchio models and joint
index maps are built once per URDF and shared read-only; each user computes in data of its
own. No ROS."""
import threading

import numpy as np
import pinocchio as pin
import pytest

from intera_rt.boards import make_boards
from intera_rt.model import RobotModel
from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml, shape_links
from intera_rt.model.collision import CollisionModel
from intera_rt.model.pinocchio_model import pinocchio_models
from intera_rt.realtime.core import RealtimeCore
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, GRAVITY, NEUTRAL


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


def test_every_user_of_a_urdf_shares_one_model(model):
    models = model.pinocchio
    assert RobotModel(model.urdf_xml).pinocchio is models
    assert pinocchio_models(model.urdf_xml.encode()) is models
    assert CollisionModel(model.urdf_xml, samples=0).model is models.full
    assert make_boards('embedded', model).pin is models.full
    assert make_boards('gazebo', model).pin is models.full        # (not configured: no ROS)
    assert model.dynamics().model is models.arm
    armnav = default_armnav_xml()
    links = shape_links(armnav)
    assert AvoidanceModel(armnav, samples=0).model is pinocchio_models(armnav).full
    assert len(links) == len(AvoidanceModel(armnav, samples=0).shape_links)


def test_the_arm_model_leaves_the_head_out_and_both_have_the_robots_gravity(model):
    models = model.pinocchio
    head = models.full.getJointId('head_pan')
    assert models.full.inertias[head].mass > 0.0
    assert models.arm.inertias[head].mass == 0.0
    for m in (models.full, models.arm):
        np.testing.assert_array_equal(m.gravity.linear, GRAVITY)
    # The arm's gravity torques are those of the full model with the head's weight removed:
    # right_j0's axis is vertical, so only the joints past the head's branch agree exactly.
    q = pin.neutral(models.full)
    q[models.idx_q(ARM_JOINTS)] = NEUTRAL
    g_full = pin.computeGeneralizedGravity(models.full, models.full.createData(), q)
    g_arm = pin.computeGeneralizedGravity(models.arm, models.arm.createData(), q)
    tail = models.idx_v(ARM_JOINTS[1:])
    np.testing.assert_allclose(g_arm[tail], g_full[tail], atol=1e-12)


def test_index_maps_are_pinocchios_and_name_an_unknown_joint(model):
    models = model.pinocchio
    m = models.full
    for name in BOARD_JOINTS:
        joint = m.joints[m.getJointId(name)]
        assert models.idx_q([name])[0] == joint.idx_q
        assert models.idx_v([name])[0] == joint.idx_v
    assert models.idx_v(ARM_JOINTS).tolist() != list(range(7))    # the head sits between
    with pytest.raises(KeyError, match="no joint 'right_j9'"):
        models.idx_q(['right_j0', 'right_j9'])


def test_each_user_computes_in_data_of_its_own(model):
    a, b = model.dynamics(), model.dynamics()
    assert a.data is not b.data and a.model is b.model
    q1, q2 = np.array(NEUTRAL), np.array(NEUTRAL) + 0.3
    g1 = a.gravity(q1).copy()
    jac1 = a.tip('right_hand', q1)[2].copy()
    b.gravity(q2)
    b.tip('right_hand', q2)
    np.testing.assert_array_equal(a.data.g[a._idx], g1)            # b wrote nothing of a's
    np.testing.assert_array_equal(a.tip('right_hand', q1)[2], jac1)


def test_arm_dynamics_is_one_per_thread(model):
    seen = {}

    def grab(key):
        seen[key] = (model.arm_dynamics, model.arm_dynamics)

    threads = [threading.Thread(target=grab, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[0][0] is seen[0][1] and seen[1][0] is seen[1][1]   # kept within a thread
    assert seen[0][0] is not seen[1][0]
    assert seen[0][0].data is not seen[1][0].data
    assert model.arm_dynamics is not seen[0][0]


def test_users_leave_the_shared_model_as_built(model):
    """The core (controllers, collision detection, the embedded plant) running a while
    changes nothing of the models it shares."""
    fresh = pin.buildModelFromXML(model.urdf_xml)
    core = RealtimeCore(model, q_arm=NEUTRAL)
    for _ in range(200):
        core.tick()
    models = model.pinocchio
    np.testing.assert_array_equal(models.full.gravity.linear, GRAVITY)
    for jid in range(1, fresh.njoints):
        assert models.full.inertias[jid].mass == fresh.inertias[jid].mass
        np.testing.assert_array_equal(models.full.inertias[jid].lever, fresh.inertias[jid].lever)
        np.testing.assert_array_equal(models.full.inertias[jid].inertia, fresh.inertias[jid].inertia)
    np.testing.assert_array_equal(models.full.lowerPositionLimit, fresh.lowerPositionLimit)
    np.testing.assert_array_equal(models.full.upperPositionLimit, fresh.upperPositionLimit)
