"""After boot, the robot's parameter server holds what the Intera SDK reads
at start-up (robot_contract.md §1 G1, G3, G4, G7, G13 and §2) and a usable
/robot_description (§8)."""

import re
import xml.etree.ElementTree as ET

import pytest
from rosharness import backend_options, backend_under_test

RIGHT_JOINTS = ['right_j%d' % i for i in range(7)]


@pytest.fixture(scope='module')
def params(robot):
    import rospy
    return rospy.get_param('/')


def _get(params, path):
    node = params
    for key in path.strip('/').split('/'):
        assert isinstance(node, dict) and key in node, 'param %s missing' % path
        node = node[key]
    return node


def test_version_string(params):
    version = _get(params, '/manifest/robot_software/version/HLR_VERSION_STRING')
    assert isinstance(version, str), type(version)
    assert re.match(r'^5\.3\.[0-2]', version), version


def test_robot_class(params):
    assert _get(params, '/manifest/robot_class').lower() == 'sawyer'


def test_assembly_names(params):
    assert 'right' in _get(params, '/robot_config/assembly_names')


def test_right_joint_names(params):
    assert _get(params, '/robot_config/right_config/joint_names') == RIGHT_JOINTS


def test_named_neutral_pose(params):
    neutral = _get(params, '/named_poses/right/poses/neutral')
    assert len(neutral) == 7
    assert neutral == pytest.approx([0.0, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161])


def test_camera_config(params):
    cameras = _get(params, '/robot_config/camera_config')
    assert isinstance(cameras, dict) and cameras
    for name, config in cameras.items():
        assert 'cameraType' in config, name


def test_robot_description(params):
    root = ET.fromstring(_get(params, '/robot_description'))
    assert root.tag == 'robot'
    links = {link.get('name') for link in root.findall('link')}
    assert 'right_hand' in links
    joints = {j.get('name') for j in root.findall('joint')}
    assert set(RIGHT_JOINTS) <= joints


def test_realtime_loop_private_params(params):
    private = _get(params, '/realtime_loop')
    assert private['backend'] == backend_under_test()
    # (an empty dict sets no parameter)
    assert private.get('backend_options', {}) == backend_options()
    assert private['pose'] == 'neutral'
    assert private['disabled'] is False
    gazebo = backend_under_test() == 'gazebo'       # Gazebo's clock: sim time
    assert private['sim_time'] is gazebo
    assert _get(params, '/use_sim_time') is gazebo
