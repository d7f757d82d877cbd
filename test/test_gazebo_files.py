"""The Gazebo files, checked statically (Gazebo 11 cannot be installed on Debian 12, so they
are never run here: docs/backends.md#gazebo-what-was-verified-here), and the gazebo
backend's pure parts. No ROS.

- share/gazebo/sawyer_gazebo.urdf is sawyer.urdf (same links, joints, inertias: the arm
  Gazebo simulates weighs what the robot's model says) plus the base fixed to the world,
  one effort transmission per board joint and the gazebo_ros_control plugin, and is what
  tools/make_gazebo_files.py makes of the current sawyer.urdf;
- share/gazebo/sawyer_gazebo_electric_gripper.urdf is the same with the electric gripper
  grafted as the gripper device grafts it, its finger joints on effort transmissions;
- share/gazebo/controllers.yaml names every board joint, in the backend's order, and the
  finger joints for the gripper's position controller;
- launch/sawyer_gazebo.launch refers to files that exist, to packages and node types as
  Noetic has them, to arguments the included launch files declare, and passes backend
  options the gazebo backend takes; resolved by roslaunch's own loader with
  electric_gripper, world_name, paused, gui and headless set, it spawns the gripper's
  model and controller and passes those on;
- the rules Gazebo applies to the URDF (masses, inertias, limits, the world joint,
  references, the controller period), the controllers YAML against ros_control's types
  and parameters, the launch files through roslaunch-check (stand-ins for Noetic's
  gazebo_ros and controller_manager);
- the backend: registered, options checked, an obstacle's SDF model (static, its shape)
  and a bad obstacle refused before Gazebo is asked, no contacts without obstacles; the
  wrench it sends Gazebo (at the lumped body's centre of mass) and the stand-in's reading
  of it push the joints with the same torques as the wrench asked for.
"""
import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from intera_rt.boards import BACKENDS, check_backend, make_boards
from intera_rt.boards.base import check_obstacle
from intera_rt.boards.gazebo import (CONTROLLER, MODEL, NAMESPACE, _shift, body_com,
                                     gazebo_body, obstacle_sdf)
from intera_rt.boards.gazebo_fingers import (CONTROLLER as FINGER_CONTROLLER, FINGER_PID,
                                             finger_joints)
from intera_rt.model import RobotModel
from intera_rt.model.urdf_fragments import with_electric_gripper
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, NAMED_POSES, NEUTRAL
from intera_rt.world.model import Box, Pose, Sphere
from intera_rt.world.sdf import parse_sdf

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / 'urdf' / 'sawyer.urdf'
GAZEBO_URDF = REPO / 'share' / 'gazebo' / 'sawyer_gazebo.urdf'
GRIPPER_URDF = REPO / 'share' / 'gazebo' / 'sawyer_gazebo_electric_gripper.urdf'
FINGERS = ('right_gripper_l_finger_joint', 'right_gripper_r_finger_joint')
CONTROLLERS = REPO / 'share' / 'gazebo' / 'controllers.yaml'
LAUNCH = REPO / 'launch' / 'sawyer_gazebo.launch'
TOOL = REPO / 'tools' / 'make_gazebo_files.py'
EFFORT = 'hardware_interface/EffortJointInterface'
# Noetic facts (gazebo_ros 2.9, controller_manager 0.19): the arguments of
# gazebo_ros/launch/empty_world.launch, and the node types the launch file starts.
EMPTY_WORLD_ARGS = {'paused', 'use_sim_time', 'extra_gazebo_args', 'gui', 'recording',
                    'headless', 'debug', 'physics', 'verbose', 'output', 'world_name',
                    'respawn_gazebo', 'use_clock_frequency', 'pub_clock_frequency',
                    'enable_ros_network', 'server_required', 'gui_required'}
NOETIC_NODES = {('gazebo_ros', 'spawn_model'), ('controller_manager', 'spawner')}
# Ours in the launch file: spawn_model at the boot pose (it execs gazebo_ros's spawn_model).
SPAWN_NODE = ('intera_rt', 'gazebo_spawn')


def _tool():
    spec = importlib.util.spec_from_file_location('make_gazebo_files', str(TOOL))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def _canon(e):
    """An element as (tag, attributes, text, children), whitespace aside."""
    return (e.tag, e.attrib, (e.text or '').strip(), [_canon(c) for c in e])


def test_generated_files_are_those_of_the_current_urdf():
    tool = _tool()
    assert GAZEBO_URDF.read_text() == tool.make_urdf(URDF.read_text())
    assert GRIPPER_URDF.read_text() == tool.make_urdf(URDF.read_text(), gripper=True)
    assert CONTROLLERS.read_text() == tool.make_controllers()


def _grafted():
    """sawyer.urdf with the electric gripper, as the gripper device grafts it (text)."""
    return with_electric_gripper(RobotModel(URDF.read_text())).urdf_xml


@pytest.mark.parametrize('gripper', [False, True])
def test_gazebo_urdf_is_the_robots_model_fixed_to_the_world_with_effort_transmissions(gripper):
    source = _grafted() if gripper else URDF.read_text()
    path = GRIPPER_URDF if gripper else GAZEBO_URDF
    ours, gz = ET.fromstring(source), ET.parse(path).getroot()
    gz_joints = {j.get('name'): j for j in gz.findall('joint')}
    gz_links = {l.get('name'): l for l in gz.findall('link')}
    for joint in ours.findall('joint'):
        assert _canon(gz_joints[joint.get('name')]) == _canon(joint)
    for link in ours.findall('link'):
        assert _canon(gz_links[link.get('name')]) == _canon(link)
    world = gz_joints['world_fixed']
    assert world.get('type') == 'fixed' and world.find('parent').get('link') == 'world'
    assert world.find('child').get('link') == 'base' and 'world' in gz_links
    # One effort transmission per board joint, none for any other.
    transmissions = {}
    for tr in gz.findall('transmission'):
        assert tr.findtext('type') == 'transmission_interface/SimpleTransmission'
        (joint,) = tr.findall('joint')
        assert joint.findtext('hardwareInterface') == EFFORT
        assert tr.find('actuator').findtext('hardwareInterface') == EFFORT
        assert float(tr.find('actuator').findtext('mechanicalReduction')) == 1.0
        transmissions[joint.get('name')] = tr
    assert sorted(transmissions) == sorted(BOARD_JOINTS + (FINGERS if gripper else ()))
    # The finger pads' friction (ODE's mu1 / mu2), on the finger links only.
    surfaces = {g.get('reference'): g for g in gz.findall('gazebo') if g.get('reference')}
    assert sorted(surfaces) == (['right_gripper_l_finger', 'right_gripper_r_finger']
                                if gripper else [])
    for g in surfaces.values():
        assert float(g.findtext('mu1')) == float(g.findtext('mu2')) == 1.0
    (plugin,) = gz.findall('gazebo/plugin')
    assert plugin.get('name') == 'gazebo_ros_control'
    assert plugin.get('filename') == 'libgazebo_ros_control.so'
    assert plugin.findtext('robotNamespace') == NAMESPACE
    assert plugin.findtext('robotSimType') == 'gazebo_ros_control/DefaultRobotHWSim'
    assert float(plugin.findtext('controlPeriod')) == 0.001
    # The arm Gazebo simulates weighs what the robot's model says: the same gravity
    # torques at neutral, joint by joint.
    q = {n: v for n, v in zip(BOARD_JOINTS, list(NEUTRAL) + [0.0])}

    def gravity(text):
        m = pin.buildModelFromXML(text)
        full = pin.neutral(m)
        for name, value in q.items():
            full[m.joints[m.getJointId(name)].idx_q] = value
        g = pin.computeGeneralizedGravity(m, m.createData(), full)
        return np.array([g[m.joints[m.getJointId(n)].idx_v] for n in BOARD_JOINTS])
    g_ours, g_gz = gravity(source), gravity(path.read_text())
    assert np.abs(g_ours).max() > 10.0
    np.testing.assert_allclose(g_gz, g_ours, atol=1e-9)


def test_controllers_file_names_every_board_joint_in_the_backends_order():
    conf = yaml.safe_load(CONTROLLERS.read_text())
    assert conf['joint_state_controller'] == {
        'type': 'joint_state_controller/JointStateController', 'publish_rate': 1000}
    assert conf[CONTROLLER] == {'type': 'effort_controllers/JointGroupEffortController',
                                'joints': list(BOARD_JOINTS)}
    # The gripper's fingers: one position controller over both (Gazebo ignores <mimic>),
    # the finger joints of the fragment the robot grafts, a PID each.
    assert tuple(finger_joints()) == FINGERS
    assert conf[FINGER_CONTROLLER] == dict(
        {'type': 'effort_controllers/JointGroupPositionController', 'joints': list(FINGERS)},
        **{j: {'pid': FINGER_PID} for j in FINGERS})


def _find(text):
    """$(find intera_rt)/x → the repository's x; other packages' paths as (package, rest)."""
    head, _, rest = text.partition(')')
    package = head.replace('$(find ', '').strip()
    return (REPO / rest.lstrip('/')) if package == 'intera_rt' else (package, rest)


def test_launch_file_refers_to_what_exists():
    root = ET.parse(LAUNCH).getroot()
    args = {a.get('name') for a in root.findall('arg')}
    includes = root.findall('include')
    empty, ours = includes
    assert _find(empty.get('file')) == ('gazebo_ros', '/launch/empty_world.launch')
    assert {a.get('name') for a in empty.findall('arg')} <= EMPTY_WORLD_ARGS
    sawyer = _find(ours.get('file'))
    assert sawyer.is_file()
    declared = {a.get('name') for a in ET.parse(sawyer).getroot().findall('arg')}
    passed = {a.get('name'): a.get('value') for a in ours.findall('arg')}
    assert set(passed) <= declared
    # Gazebo is the clock: sim time, unless a user says otherwise (the backend then refuses).
    assert passed['backend'] == 'gazebo' and passed['sim_time'] == '$(arg use_sim_time)'
    assert root.find("arg[@name='use_sim_time']").get('default') == 'true'
    options = yaml.safe_load(passed['backend_options'].replace('$(arg namespace)', NAMESPACE)
                             .replace('$(arg gripper)', 'true')
                             .replace('$(arg unpause)', 'false'))
    assert check_backend('gazebo', options) == {'namespace': NAMESPACE, 'controller': CONTROLLER,
                                                'model_name': MODEL, 'gripper': True,
                                                'unpause': False}
    # Every $(arg x) it uses is declared.
    text = LAUNCH.read_text()
    used = {part.split(')')[0] for part in text.split('$(arg ')[1:]}
    assert used <= args
    # Parameters and files.
    # The robot's Gazebo model, with the gripper or without (if / unless the argument).
    descriptions = {(p.get('if'), p.get('unless')): p for p in root.findall('param')
                    if p.get('name') == '/robot/gazebo_description'}
    assert {k: _find(p.get('textfile')) for k, p in descriptions.items()} == {
        ('$(arg gripper)', None): GRIPPER_URDF, (None, '$(arg gripper)'): GAZEBO_URDF}
    for path in (GAZEBO_URDF, GRIPPER_URDF):
        plugin = ET.parse(path).getroot().find('gazebo/plugin')
        assert plugin.findtext('robotParam') == '/robot/gazebo_description'
    (load,) = root.findall('rosparam')
    assert _find(load.get('file')) == CONTROLLERS and load.get('ns') == '$(arg namespace)'
    assert root.find("arg[@name='namespace']").get('value') == NAMESPACE
    nodes = {(n.get('pkg'), n.get('type')): n for n in root.findall('node')
             if n.get('if') is None}
    assert set(nodes) == NOETIC_NODES - {('gazebo_ros', 'spawn_model')} | {SPAWN_NODE}
    assert (REPO / 'nodes' / SPAWN_NODE[1]).is_file()
    text = ' '.join(nodes[SPAWN_NODE].get('args').split())
    assert '--pose $(arg pose) ' in text
    spawn = text.replace('$(arg namespace)', NAMESPACE).replace('$(arg pose)', 'POSE').split()
    # What it runs: gazebo_ros's spawn_model, the base 0.93 m above the ground plane (the
    # pedestal on it), every arm joint at the boot pose.
    from intera_rt.ros.gazebo_spawn import spawn_args
    i = spawn.index('--pose')
    spawn = spawn_args('shipping', spawn[:i] + spawn[i + 2:])
    assert tuple(spawn[1:3]) in NOETIC_NODES
    assert spawn[spawn.index('-param') + 1] == '/robot/gazebo_description'
    assert spawn[spawn.index('-model') + 1] == MODEL and '-urdf' in spawn
    assert float(spawn[spawn.index('-z') + 1]) == 0.93
    joints = {spawn[k + 1]: float(spawn[k + 2]) for k, a in enumerate(spawn) if a == '-J'}
    assert joints == dict(zip(ARM_JOINTS, NAMED_POSES['shipping']))
    with pytest.raises(ValueError, match="pose 'up': expected neutral, shipping or 7"):
        spawn_args('up', [])
    # The spawner: the gripper's controller too with the gripper, every controller of the
    # YAML then.
    spawners = {(n.get('if'), n.get('unless')): n for n in root.findall('node')
                if n.get('type') == 'spawner'}
    assert set(spawners) == {('$(arg gripper)', None), (None, '$(arg gripper)')}
    for spawner in spawners.values():
        assert spawner.get('pkg') == 'controller_manager'
        assert spawner.get('ns') == '$(arg namespace)'
    controllers = set(yaml.safe_load(CONTROLLERS.read_text()))
    assert set(spawners['$(arg gripper)', None].get('args').split()) == controllers
    assert set(spawners[None, '$(arg gripper)'].get('args').split()) == controllers - {FINGER_CONTROLLER}


def test_backend_is_registered_checks_its_options_and_spawns_obstacles_as_static_models():
    assert 'gazebo' in BACKENDS
    assert check_backend('gazebo', {'standin': 'true', 'real_time_factor': '0.5'}) == {
        'standin': True, 'real_time_factor': 0.5}
    with pytest.raises(ValueError, match='stall_timeout must be a number'):
        check_backend('gazebo', {'stall_timeout': 'soon'})
    with pytest.raises(ValueError, match="takes no option 'table'"):
        check_backend('gazebo', {'table': True})
    model = RobotModel.from_file()
    with pytest.raises(ValueError, match='real_time_factor must be finite and > 0'):
        make_boards('gazebo', model, {'real_time_factor': 0.0})
    with pytest.raises(ValueError, match='namespace must be a ROS name'):
        make_boards('gazebo', model, {'namespace': '/'})
    boards = make_boards('gazebo', model)           # (not configured: no ROS needed)
    assert boards.owns_clock and boards.sim_clock and boards.simulated
    assert boards.command_topic == '/sawyer_gazebo/effort_controller/command'
    assert boards.state_topic == '/sawyer_gazebo/joint_states'
    with pytest.raises(ValueError, match="obstacle shape must be one of 'box', 'sphere', got 'cone'"):
        boards.add_obstacle('wall', 'cone', [1, 0, 0], [0, 0, 0, 1], [0.1])
    assert boards.obstacles() == [] and boards.contacts() == []
    # What add_obstacle spawns: a static model of the obstacle's shape at its own frame.
    for record, geometry in ((check_obstacle('wall', 'box', [1, 0, 0], [0, 0, 0, 2], [0.1, 1, 1]),
                              Box((0.1, 1.0, 1.0))),
                             (check_obstacle('ball', 'sphere', [1, 0, 0], [0, 0, 0, 1], [0.2]),
                              Sphere(0.2))):
        sdf = parse_sdf(obstacle_sdf(record))
        assert sdf.name == record.name and sdf.static and sdf.pose == Pose()
        (link,) = sdf.links
        assert [c.geometry for c in link.collisions] == [v.geometry for v in link.visuals] == [geometry]


def _joint_state(stamp):
    """A sensor_msgs/JointState as gazebo_ros_control's joint_state_controller sends it (its
    fields only: no ROS here)."""
    from types import SimpleNamespace
    n = len(BOARD_JOINTS)
    return SimpleNamespace(name=list(BOARD_JOINTS), position=[stamp] * n, velocity=[0.0] * n,
                           effort=[0.0] * n, header=SimpleNamespace(stamp=SimpleNamespace(
                               to_sec=lambda: stamp)))


def test_the_loop_ticks_on_each_10_ms_first_joint_state_even_when_overtaken():
    """The state topics go out on the first state of each 10 ms of Gazebo time: a state
    that a newer one overtakes before the loop takes it is kept when it is the first of its
    10 ms (the loop ticks on it, then at once on the newest), dropped otherwise."""
    boards = make_boards('gazebo', RobotModel.from_file())      # (not configured: no ROS)
    ticks = []

    def cycle():
        while boards.wait_cycle(0.0):
            ticks.append(round(boards.read().time, 6))
    for stamps in ([0.038], [0.039], [0.040, 0.041], [0.042, 0.043, 0.044], [0.049],
                   [0.050, 0.051, 0.052], [0.061]):
        for stamp in stamps:
            boards._on_joint_state(_joint_state(stamp))
        cycle()
    assert ticks == [0.038, 0.039, 0.040, 0.041, 0.044, 0.049, 0.050, 0.052, 0.061]
    np.testing.assert_array_equal(boards.read().position, 0.061)


def test_gazebo_bodies_are_the_links_fixed_joints_lump_into():
    m = pin.buildModelFromXML(URDF.read_text())
    assert gazebo_body(m, 'right_hand')[0] == 'right_l6'
    assert gazebo_body(m, 'right_l6')[0] == 'right_l6'
    assert gazebo_body(m, 'right_hand_camera')[0] == 'right_l5'
    assert gazebo_body(m, 'pedestal')[0] == 'base'
    with pytest.raises(KeyError, match='no link named'):
        gazebo_body(m, 'left_hand')


@pytest.mark.parametrize('link', ['right_hand', 'right_l4', 'right_hand_camera'])
def test_a_wrench_sent_through_gazebo_pushes_the_joints_as_asked(link):
    """The backend moves the wrench (about the link's origin) to the lumped body's centre of
    mass, where Gazebo applies it; the stand-in moves it from there to the body's origin.
    The joint torques it makes are those of the wrench as asked."""
    m = pin.buildModelFromXML(URDF.read_text())
    d = m.createData()
    q = pin.neutral(m)
    rng = np.random.default_rng(3)
    for name, value in zip(BOARD_JOINTS, list(NEUTRAL) + [0.2]):
        q[m.joints[m.getJointId(name)].idx_q] = value + rng.uniform(-0.3, 0.3)
    pin.computeJointJacobians(m, d, q)
    pin.framesForwardKinematics(m, d, q)
    body, jid = gazebo_body(m, link)
    fid, bid = m.getFrameId(link, pin.FrameType.BODY), m.getFrameId(body, pin.FrameType.BODY)
    force, torque = np.array([3.0, -20.0, 12.0]), np.array([0.5, 1.0, -0.7])
    com = body_com(m, d, jid)
    at_com = _shift(torque, force, com - d.oMf[fid].translation)            # the backend
    at_body = _shift(at_com, force, d.oMf[bid].translation - com)           # the stand-in

    def joint_torques(frame, f, t):
        J = pin.getFrameJacobian(m, d, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        return J.T @ np.r_[f, t]
    asked = joint_torques(fid, force, torque)
    assert np.abs(asked).max() > 1.0
    np.testing.assert_allclose(joint_torques(bid, force, at_body), asked, atol=1e-9)


# --- the rules Gazebo, ros_control and roslaunch apply, checked without them ---------------

@pytest.mark.parametrize('path', [GAZEBO_URDF, GRIPPER_URDF], ids=['arm', 'gripper'])
def test_gazebo_urdf_follows_the_rules_gazebo_applies_to_a_urdf(path):
    """What sdformat's URDF parser and ODE need: a link on a movable joint with no mass is
    dropped with everything below it; an inertia that is not positive definite or breaks
    the triangle inequality makes ODE unstable; a revolute joint needs its limits (effort,
    velocity, lower < upper) and gets its <dynamics>, a prismatic finger its limits too
    (gazebo_ros_control saturates its effort and stops it at them); every movable joint has
    a transmission (none without: gazebo_ros_control would not drive it); the model is fixed
    by one fixed joint from `world`; every <gazebo reference> names a link or joint; the
    controller period is no faster than the physics step; meshes (none) would need
    package:// URIs."""
    gz = ET.parse(path).getroot()
    links = {l.get('name'): l for l in gz.findall('link')}
    joints = {j.get('name'): j for j in gz.findall('joint')}
    moving = [j for j in joints.values() if j.get('type') != 'fixed']
    fingers = FINGERS if path == GRIPPER_URDF else ()
    assert {j.get('name') for j in moving} == set(BOARD_JOINTS + fingers)
    for joint in moving:
        assert joint.get('type') == ('prismatic' if joint.get('name') in fingers else 'revolute')
        child = links[joint.find('child').get('link')]
        inertial = child.find('inertial')
        assert inertial is not None, child.get('name')
        assert float(inertial.find('mass').get('value')) > 1e-3, child.get('name')
        i = {k: float(v) for k, v in inertial.find('inertia').attrib.items()}
        tensor = np.array([[i['ixx'], i['ixy'], i['ixz']], [i['ixy'], i['iyy'], i['iyz']],
                           [i['ixz'], i['iyz'], i['izz']]])
        eig = np.linalg.eigvalsh(tensor)
        assert eig.min() > 0.0, (child.get('name'), eig)
        a, b, c = eig
        assert a + b >= c and b + c >= a and a + c >= b, (child.get('name'), eig)
        limit = joint.find('limit')
        assert float(limit.get('effort')) > 0.0 and float(limit.get('velocity')) > 0.0
        assert float(limit.get('lower')) < float(limit.get('upper'))
        assert joint.find('dynamics') is not None or joint.get('name') in fingers
    roots = [j for j in joints.values() if j.find('parent').get('link') == 'world']
    assert len(roots) == 1 and roots[0].get('type') == 'fixed'
    for element in gz.findall('gazebo'):
        ref = element.get('reference')
        assert ref is None or ref in links or ref in joints, ref
    driven = [tr.find('joint').get('name') for tr in gz.findall('transmission')]
    assert sorted(driven) == sorted(j.get('name') for j in moving)
    plugin = gz.find('gazebo/plugin')
    assert float(plugin.findtext('controlPeriod')) >= 0.001
    for mesh in gz.iter('mesh'):
        assert mesh.get('filename', '').startswith('package://intera_rt/'), mesh.get('filename')


# ros_control (Noetic): the controller types the YAML may name, their required parameters
# (type → {parameter: check}) and the hardware interface their joints need.
# A controller over `joints` with a PID per joint (<name>/<joint>/pid) reads them as
# control_toolbox's Pid does: p required, i, d, i_clamp(_min/_max) optional, numbers.
def _joints(v):
    return isinstance(v, list) and v and len(set(v)) == len(v) and all(isinstance(n, str) for n in v)


def _pid(v):
    allowed = {'p', 'i', 'd', 'i_clamp', 'i_clamp_min', 'i_clamp_max', 'antiwindup'}
    return (isinstance(v, dict) and set(v) <= allowed and 'p' in v
            and all(isinstance(x, (int, float)) for x in v.values()))


ROS_CONTROL = {
    'joint_state_controller/JointStateController': (
        {'publish_rate': lambda v: isinstance(v, (int, float)) and v > 0}, None, False),
    'effort_controllers/JointGroupEffortController': ({'joints': _joints}, EFFORT, False),
    'effort_controllers/JointGroupPositionController': ({'joints': _joints}, EFFORT, True),
}


@pytest.mark.parametrize('path', [GAZEBO_URDF, GRIPPER_URDF], ids=['arm', 'gripper'])
def test_controllers_yaml_against_ros_control(path):
    """Every controller's type exists in Noetic, its parameters are the ones it reads, its
    joints have the interface it claims in the URDF; a controller over joints the model
    lacks (the gripper's, on the arm without it) is not spawned there."""
    conf = yaml.safe_load(CONTROLLERS.read_text())
    gz = ET.parse(path).getroot()
    interfaces = {tr.find('joint').get('name'): tr.find('joint').findtext('hardwareInterface')
                  for tr in gz.findall('transmission')}
    for name, params in conf.items():
        assert name.replace('_', '').isalnum() and not name[0].isdigit(), name
        kind = params.get('type')
        assert kind in ROS_CONTROL, (name, kind)
        required, interface, pids = ROS_CONTROL[kind]
        joints = params.get('joints', []) if pids else []
        assert set(params) == {'type'} | set(required) | set(joints), (name, sorted(params))
        for key, ok in required.items():
            assert ok(params[key]), (name, key, params[key])
        for joint in joints:
            assert set(params[joint]) == {'pid'} and _pid(params[joint]['pid']), (name, joint)
        if name == FINGER_CONTROLLER and path == GAZEBO_URDF:
            assert not set(params['joints']) & set(interfaces)
            continue
        for joint in params.get('joints', []):
            assert interfaces.get(joint) == interface, (name, joint)


def _stub_packages(root):
    """Stand-ins for Noetic's gazebo_ros and controller_manager as roslaunch sees them: a
    package.xml, empty_world.launch with its arguments (EMPTY_WORLD_ARGS) and the
    executables the launch file starts."""
    for package, executable in (('gazebo_ros', 'spawn_model'), ('controller_manager', 'spawner')):
        (root / package / 'scripts').mkdir(parents=True)
        (root / package / 'package.xml').write_text(
            '<?xml version="1.0"?>\n<package format="2"><name>%s</name><version>0.0.0'
            '</version><description>stub</description><maintainer email="stub@example.com">'
            'stub</maintainer><license>BSD</license><buildtool_depend>catkin'
            '</buildtool_depend></package>\n' % package)
        script = root / package / 'scripts' / executable
        script.write_text('#!/bin/sh\n')
        script.chmod(0o755)
    (root / 'gazebo_ros' / 'launch').mkdir()
    # It declares empty_world's arguments and records what it was given under /stub_world.
    (root / 'gazebo_ros' / 'launch' / 'empty_world.launch').write_text(
        '<launch>\n%s</launch>\n' % ''.join(
            '  <arg name="%s" default=""/>\n  <param name="/stub_world/%s" type="str" '
            'value="$(arg %s)"/>\n' % (a, a, a) for a in sorted(EMPTY_WORLD_ARGS)))


def _roslaunch_check(path, stubs):
    """roslaunch-check's verdict on launch file `path` (roslaunch.rlutil.check_roslaunch, in
    a process of its own: rospkg caches packages): '' when it passes."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, ROS_PACKAGE_PATH='%s:%s:/usr/share' % (stubs, REPO))
    code = ('import sys, roslaunch.rlutil as r\n'
            'print(r.check_roslaunch(sys.argv[1]) or "", end="")\n')
    out = subprocess.run([sys.executable, '-c', code, str(path)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _roslaunch_resolve(path, stubs, args):
    """What roslaunch's loader makes of launch file `path` with command-line `args`
    (name:=value): {'params': {name: value}, 'nodes': [(package, type, namespace, args)]}."""
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, ROS_PACKAGE_PATH='%s:%s:/usr/share' % (stubs, REPO))
    code = ('import json, sys, roslaunch.config as c\n'
            'path = sys.argv[1]\n'
            'cfg = c.load_config_default([path], None)\n'
            'print(json.dumps({"params": {k: p.value for k, p in cfg.params.items()},\n'
            '                  "nodes": [(n.package, n.type, n.namespace, n.args)\n'
            '                            for n in cfg.nodes]}))\n')
    out = subprocess.run([sys.executable, '-c', code, str(path)] + list(args), env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.ros
@pytest.mark.parametrize('gripper', [False, True])
def test_launch_file_resolves_the_world_issues_arguments(tmp_path, gripper):
    """roslaunch's own loader on sawyer_gazebo.launch with sawyer_world.launch's argument
    names: the gripper's Gazebo model and its finger controller spawned (or neither), the
    world file, gui and headless passed to empty_world, Gazebo started paused either way
    and the robot told not to unpause it with paused:=true, the gripper to the robot and
    to its gazebo backend."""
    stubs = tmp_path / 'stubs'
    _stub_packages(stubs)
    args = ['world_name:=/tmp/cell.world', 'gui:=false', 'headless:=true']
    if gripper:
        args += ['electric_gripper:=true', 'paused:=true']
    got = _roslaunch_resolve(LAUNCH, stubs, args)
    params = got['params']
    assert params['/robot/gazebo_description'] == (GRIPPER_URDF if gripper else GAZEBO_URDF).read_text()
    assert params['/stub_world/world_name'] == '/tmp/cell.world'
    assert (params['/stub_world/gui'], params['/stub_world/headless']) == ('false', 'true')
    assert (params['/stub_world/paused'], params['/stub_world/use_sim_time']) == ('true', 'true')
    assert params['/use_sim_time'] is True
    prefix = '/realtime_loop/backend_options/'      # (a dict is loaded key by key)
    options = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}
    assert check_backend('gazebo', options) == {
        'namespace': NAMESPACE, 'controller': CONTROLLER, 'model_name': MODEL,
        'gripper': gripper, 'unpause': not gripper}
    assert params['/io/gripper'] is gripper          # the gripper device
    (spawner,) = [n for n in got['nodes'] if n[:2] == ['controller_manager', 'spawner']]
    assert spawner[2] == NAMESPACE + '/'
    assert (FINGER_CONTROLLER in spawner[3].split()) is gripper
    controllers = yaml.safe_load(CONTROLLERS.read_text())
    assert set(spawner[3].split()) <= set(controllers)
    # The model spawned carries the finger joints the spawned controller drives.
    gz = ET.fromstring(params['/robot/gazebo_description'])
    driven = {tr.find('joint').get('name') for tr in gz.findall('transmission')}
    for name in spawner[3].split():
        assert set(controllers[name].get('joints', [])) <= driven, name


@pytest.mark.ros             # (no master, but roslaunch's loader runs `rosversion roslaunch`)
def test_launch_files_pass_roslaunch_check(tmp_path):
    """Arguments, includes, files, packages (package.xml declares Gazebo's on Noetic) and
    node executables, as roslaunch-check checks them, with stand-ins for the Noetic packages
    that Debian 12 lacks; a launch file passing an argument empty_world.launch does not
    declare fails it."""
    stubs = tmp_path / 'stubs'
    _stub_packages(stubs)
    assert _roslaunch_check(LAUNCH, stubs) == ''
    assert _roslaunch_check(REPO / 'launch' / 'sawyer.launch', stubs) == ''
    broken = REPO / 'launch' / ('.broken_%s.launch' % tmp_path.name)
    broken.write_text(LAUNCH.read_text().replace(
        '<arg name="paused" value="true"/>', '<arg name="pasued" value="true"/>'))
    try:
        assert 'pasued' in _roslaunch_check(broken, stubs)
    finally:
        broken.unlink()


# --- the gripper's fingers on Gazebo: the device's command as the finger controller's ---------

def test_finger_setpoints_slew_at_the_speed_and_lead_by_the_force():
    """The setpoints (per finger, half the separation on its side, symmetric about the
    gripper's centre) move toward the target at the commanded speed, their separation never
    more than force / P ahead of the fingers', so that a position PID squeezes with at most
    the commanded force at rest; a pair off the centre is pulled back to it (as the
    gripper's linkage keeps its fingers: Gazebo has no <mimic>)."""
    from intera_rt.boards.base import GripperCommand
    from intera_rt.boards.gazebo_fingers import FingerSetpoints
    fs = FingerSetpoints(finger_joints(), p=2000.0)
    assert fs.span == pytest.approx(0.041666)
    q = np.array([0.0208, -0.0208])
    assert np.allclose(fs.update(0.0, q), q)
    fs.set(GripperCommand(0.0, 0.2, 40.0))                  # close at 0.2 m/s, 40 N
    sp = fs.update(0.05, q)                                 # 1 cm of separation in 50 ms
    assert np.allclose(sp, [0.0158, -0.0158], atol=1e-6)
    fs.set(GripperCommand(0.0, 3.0, 20.0))                  # fast, 20 N: 10 N a finger
    sp = fs.update(0.2, q)
    assert np.allclose(sp, q + [-0.005, 0.005])             # 10 N / 2000 N/m = 5 mm ahead
    off = np.array([0.018, -0.010])                         # held 4 mm off the centre
    assert np.allclose(fs.update(0.25, off), [0.009, -0.009])
    # A finger past its limit is not asked further (the controller clamps to the limits).
    fs.set(GripperCommand(0.1, 3.0, 20.0))
    assert np.allclose(fs.update(0.3, [0.0208, -0.0208]), [0.020833, -0.020833])


def test_finger_state_grips_only_when_the_closing_fingers_stall():
    """is_gripping: closing, the separation no longer changing (the pair may slide sideways
    together: Gazebo has no <mimic>) with the setpoints held at the force's lead for
    SETTLE; not while the fingers still move, nor once closed on nothing."""
    from intera_rt.boards.base import GripperCommand
    from intera_rt.boards.gazebo_fingers import SETTLE, FingerSetpoints
    fs = FingerSetpoints(finger_joints())
    on_block = np.array([0.015, -0.015])
    fs.update(0.0, on_block)
    fs.set(GripperCommand(0.0, 1.5, 20.0))
    t = 0.0
    for t in np.arange(0.01, 0.1, 0.01):
        fs.update(t, on_block)
        if t - 0.01 < SETTLE - 1e-9:
            assert not fs.state(t, on_block, [0, 0], [-10, 10]).gripping
    s = fs.state(t, on_block, [0.02, 0.02], [-10.0, 10.0])        # sliding sideways together
    assert s.gripping and s.force == pytest.approx(20.0) and s.separation == pytest.approx(0.03)
    assert not fs.state(t, on_block, [-0.02, 0.02], [-10, 10]).gripping   # still closing
    closed = np.zeros(2)
    for t in np.arange(t, t + 0.1, 0.01):
        fs.update(t, closed)
    assert not fs.state(t, closed, [0, 0], [0, 0]).gripping
