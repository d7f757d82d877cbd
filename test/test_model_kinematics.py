"""The model layer (PyKDL over urdf_parser_py, what the robot uses) against the contract's
reference FK (§9.1) and Pinocchio's independent dynamics. No ROS master needed."""
import numpy as np
import pinocchio as pin
import pytest

from intera_rt.model import ARM_JOINTS, RobotModel

REFERENCE_FK = [  # joint angles, right_hand position (m), quaternion xyzw
    ([0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347, -0.496337],
     (0.4506, 0.1616, 0.2156), (0.704, 0.7102, 0.0024, 0.0019)),
    ([0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161], (0.4496, 0.1603, 0.2158), (0.7071, 0.7071, 0.0003, 0.0003)),
    ([0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0], (0.7128, 0.1603, 0.3170), (-0.5417, 0.4545, -0.5417, 0.4545)),
]


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_file()


@pytest.mark.parametrize('q,pos,quat', REFERENCE_FK)
def test_right_hand_fk_matches_reference(model, q, pos, quat):
    p, o = model.arm.fk(q)
    assert np.allclose(p, pos, atol=6e-4), p
    # q and -q are the same rotation
    assert min(np.abs(o - quat).max(), np.abs(o + quat).max()) < 2e-4, o


def test_tip_frames_exist_and_differ(model):
    q = REFERENCE_FK[1][0]
    cam, _ = model.tip_pose('right_hand_camera', q)
    assert np.allclose(cam, (0.40997, 0.1245, 0.31722), atol=1e-4)
    with pytest.raises(KeyError):
        model.chain('no_such_link')


def test_limits_from_urdf(model):
    lim = model.limits
    assert lim['right_j6'].lower == pytest.approx(-4.7124) and lim['right_j6'].upper == pytest.approx(4.7124)
    assert lim['right_j1'].velocity == pytest.approx(1.328)
    assert lim['right_j0'].effort == 80 and lim['right_j4'].accel == 12


def test_gravity_and_inverse_dynamics_agree_with_pinocchio(model):
    """KDL (controller's model) and Pinocchio (the plant) are independent implementations
    over the same URDF: their gravity and inverse dynamics must agree."""
    pm = pin.buildModelFromXML(model.urdf_xml)
    # The arm chain base→right_hand leaves out side branches; the head (on right_l0) is the
    # only one with weight. Drop it from the plant model for an exact comparison.
    pm.inertias[pm.getJointId('head_pan')] = pin.Inertia.Zero()
    pd = pm.createData()
    idx = [pm.joints[pm.getJointId(n)].idx_v for n in ARM_JOINTS]
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform(-2, 2, 7)
        qd = rng.uniform(-1, 1, 7)
        qdd = rng.uniform(-3, 3, 7)
        full_q, full_v, full_a = pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv)
        full_q[idx], full_v[idx], full_a[idx] = q, qd, qdd
        g_pin = pin.computeGeneralizedGravity(pm, pd, full_q)[idx]
        assert np.allclose(model.arm.gravity(q), g_pin, atol=2e-3)
        full_v[:] = 0.0
        full_v[idx] = qd
        tau_pin = pin.rnea(pm, pd, full_q, full_v, full_a)[idx]
        assert np.allclose(model.arm.inverse_dynamics(q, qd, qdd), tau_pin, atol=5e-3)


def test_unknown_urdf_chain_is_a_clear_error():
    xml = '<robot name="x"><link name="base"/></robot>'
    with pytest.raises(Exception) as err:
        RobotModel(xml)
    assert 'right_hand' in str(err.value)


def test_arm_dynamics_is_the_kdl_model_faster(model):
    """The 1 kHz path's Pinocchio dynamics and the endpoint states' tip kinematics give the
    KDL chains' figures (same model, the head's weight left out; the light side branches
    the chain skips, such as the camera links, account for < 1 mN m)."""
    dyn = model.arm_dynamics
    rng = np.random.default_rng(11)
    for _ in range(10):
        q, qd, qdd = rng.uniform(-2, 2, 7), rng.uniform(-1, 1, 7), rng.uniform(-3, 3, 7)
        assert np.allclose(dyn.inverse_dynamics(q, qd, qdd), model.arm.inverse_dynamics(q, qd, qdd), atol=1e-3)
        assert np.allclose(dyn.gravity(q), model.arm.gravity(q), atol=1e-3)
        for tip in ('right_hand', 'right_hand_camera', 'right_l3'):
            chain = model.chain(tip)
            p, quat, jac = dyn.tip(tip, q)
            p_kdl, quat_kdl = chain.fk(q[:chain.n])
            assert np.allclose(p, p_kdl, atol=1e-12)
            assert abs(abs(np.dot(quat, quat_kdl)) - 1.0) < 1e-12
            assert np.allclose(jac[:, :chain.n], chain.jacobian(q[:chain.n]), atol=1e-12)
            assert not jac[:, chain.n:].any()          # joints past the tip do not move it
    with pytest.raises(KeyError):
        dyn.tip('no_such_link', np.zeros(7))
