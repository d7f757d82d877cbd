"""model.joint_frames: the URDF's joints as parent → child transforms (what
robot_state_publisher publishes), checked against the KDL chains. No ROS."""
import math

import numpy as np
import pytest

from intera_rt.model import ARM_JOINTS, RobotModel
from intera_rt.model.joint_frames import JointFrames, link_poses

TWO_LINKS = """<robot name="slider">
  <link name="root"/><link name="carriage"/><link name="finger_a"/><link name="finger_b"/>
  <joint name="slide" type="prismatic">
    <parent link="root"/><child link="carriage"/>
    <origin xyz="0.1 0.2 0.3" rpy="0 0 1.5707963267948966"/><axis xyz="2 0 0"/>
    <limit lower="0" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="finger_a" type="revolute">
    <parent link="carriage"/><child link="finger_a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="finger_b" type="revolute">
    <parent link="carriage"/><child link="finger_b"/><axis xyz="0 0 1"/>
    <mimic joint="finger_a" multiplier="-2" offset="0.1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>"""


@pytest.fixture(scope='module')
def sawyer():
    model = RobotModel.from_file()
    return model, JointFrames(model.urdf)


def test_sawyer_joints_split_into_movable_and_fixed(sawyer):
    model, frames = sawyer
    assert set(frames.movable) == set(ARM_JOINTS) | {'head_pan'}
    assert len(frames.fixed) == len(model.urdf.joints) - 8
    children = {child for _, child, _, _ in frames.fixed}
    assert {'right_hand', 'right_hand_camera', 'head_camera', 'screen', 'pedestal'} <= children


def test_composed_transforms_match_the_kinematic_chains(sawyer):
    model, frames = sawyer
    rng = np.random.default_rng(7)
    lim = model.limit_arrays(ARM_JOINTS)
    for _ in range(20):
        q = rng.uniform(lim['lower'], lim['upper'])
        pan = rng.uniform(-3.0, 0.9)
        poses = link_poses(frames, dict(zip(ARM_JOINTS, q), head_pan=pan), 'base')
        for tip in ('right_hand', 'right_hand_camera', 'right_l4'):
            p, quat = model.tip_pose(tip, q)
            np.testing.assert_allclose(poses[tip][:3, 3], p, atol=1e-12)
            r = model.chain(tip).fk_frame(q[:model.chain(tip).n]).M
            np.testing.assert_allclose(poses[tip][:3, :3], [[r[i, j] for j in range(3)] for i in range(3)],
                                       atol=1e-12)
        head = model.chain('head')
        assert tuple(head.joint_names) == ('right_j0', 'head_pan')
        p, _ = head.fk([q[0], pan])
        np.testing.assert_allclose(poses['head'][:3, 3], p, atol=1e-12)


def test_prismatic_joint_slides_along_its_axis_in_the_parent_frame():
    frames = JointFrames.from_xml(TWO_LINKS)
    xyz, quat = frames.transforms([frames.index['slide']], [0.5])
    # The origin turns the axis x → y; the axis is normalised: 0.5 m along y.
    np.testing.assert_allclose(xyz[0], [0.1, 0.7, 0.3], atol=1e-12)
    np.testing.assert_allclose(quat[0], [0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)], atol=1e-12)


def test_revolute_joint_turns_about_its_axis():
    frames = JointFrames.from_xml(TWO_LINKS)
    _, quat = frames.transforms([frames.index['finger_a']], [0.4])
    np.testing.assert_allclose(quat[0], [0, 0, math.sin(0.2), math.cos(0.2)], atol=1e-12)


def test_mimic_joint_follows_its_leader_unless_given():
    frames = JointFrames.from_xml(TWO_LINKS)
    assert frames.positions_with_mimic({'finger_a': 0.3}) == {'finger_a': 0.3,
                                                              'finger_b': pytest.approx(-0.5)}
    assert frames.positions_with_mimic({'finger_a': 0.3, 'finger_b': 0.2})['finger_b'] == 0.2
    assert frames.positions_with_mimic({'slide': 0.3}) == {'slide': 0.3}


def test_joint_without_a_direction_is_refused():
    with pytest.raises(ValueError, match='finger_a.*no direction'):
        JointFrames.from_xml(TWO_LINKS.replace('<axis xyz="0 0 1"/>\n    <limit', '<axis xyz="0 0 0"/>\n    <limit', 1))
