"""Bad models and worlds (issue 21, item 6): each refused with one WorldError whose message
names the element or field and the value; nothing else raised, nothing half-built."""
import os

import pytest

from intera_rt.world import (
    Model, Pose, Resolver, World, WorldError, load_world, parse_model_xml, parse_sdf, parse_urdf,
    parse_world)
from intera_rt.world.model import Inertial, Link

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data', 'world')
MODELS = os.path.join(DATA, 'world_test_pkg', 'models')
GRIPPER = os.path.join(HERE, '..', 'urdf', 'fragments', 'electric_gripper.urdf')


@pytest.fixture
def resolver():
    return Resolver([MODELS], [DATA])


def sdf(link_body, model_extra='', version='1.6', name='m'):
    return ('<sdf version="%s"><model name="%s">%s<link name="l">%s</link></model></sdf>'
            % (version, name, model_extra, link_body))


def collision(geometry, extra=''):
    return '<collision name="c"><geometry>%s</geometry>%s</collision>' % (geometry, extra)


def inertial(mass='1', ixx='1', iyy='1', izz='1', ixy='0'):
    return ('<inertial><mass>%s</mass><inertia><ixx>%s</ixx><ixy>%s</ixy><iyy>%s</iyy><izz>%s</izz>'
            '</inertia></inertial>' % (mass, ixx, ixy, iyy, izz))


def urdf(link_body, extra='', name='r'):
    return '<robot name="%s"><link name="l">%s</link>%s</robot>' % (name, link_body, extra)


URDF_INERTIAL = ('<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                 'izz="1"/></inertial>')
BOX = '<box><size>0.1 0.1 0.1</size></box>'

# (id, model_xml, fragments the message must contain)
CASES = [
    # malformed and hostile XML
    ('malformed', '<sdf version="1.6"><model name="m">', ['not well-formed']),
    ('billion_laughs', '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 '
     '"&lol;&lol;&lol;">]><sdf version="1.6">&lol2;</sdf>', ['DOCTYPE']),
    ('external_entity', '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><robot name="r">&x;'
     '</robot>', ['DOCTYPE']),
    ('oversize', '<sdf version="1.6"><!--%s--></sdf>' % ('x' * (5 << 20)), ['bytes, more than']),
    ('too_deep', '<sdf version="1.6">%s%s</sdf>' % ('<a>' * 40, '</a>' * 40), ['nests elements']),
    ('not_xml_text', 12, ['expected XML text']),
    ('wrong_root', '<model name="m"/>', ['<model>', 'expected <sdf>']),
    # SDF structure
    ('sdf_version_new', sdf(collision(BOX), version='1.8'), ["version='1.8'", '1.4 to 1.7']),
    ('sdf_version_old', sdf(collision(BOX), version='1.3'), ["version='1.3'"]),
    ('sdf_version_missing', '<sdf><model name="m"/></sdf>', ['version=None']),
    ('two_models', '<sdf version="1.6"><model name="a"/><model name="b"/></sdf>',
     ['expected one <model>', 'got 2']),
    ('no_link', '<sdf version="1.6"><model name="m"/></sdf>', ["model 'm'", 'at least one <link>']),
    ('bad_model_name', sdf(collision(BOX), name='a b'), ["'a b'", 'letters, digits']),
    ('model_named_world', sdf(collision(BOX), name='world'), ["'world'", 'world frame']),
    ('link_twice', '<sdf version="1.6"><model name="m"><link name="l"/><link name="l"/></model></sdf>',
     ["link 'l' is defined twice"]),
    ('nested_model', sdf('', '<model name="inner"><link name="x"/></model>'), ['<model>', 'nested']),
    ('static_word', sdf(collision(BOX), '<static>maybe</static>'), ['<static>', "'maybe'"]),
    # joints
    ('revolute_joint', sdf(collision(BOX), '<link name="k"/><joint name="j" type="revolute">'
                           '<parent>l</parent><child>k</child></joint>'), ["joint 'j'", "'revolute'"]),
    ('joint_unknown_child', sdf(collision(BOX), '<joint name="j" type="fixed"><parent>l</parent>'
                                '<child>ghost</child></joint>'), ["joint 'j'", "'ghost'"]),
    ('joint_loop', sdf('', '<link name="k"/><joint name="a" type="fixed"><parent>l</parent><child>k'
                       '</child></joint><joint name="b" type="fixed"><parent>k</parent><child>l</child>'
                       '</joint>'), ['loop']),
    # sizes
    ('box_zero', sdf(collision('<box><size>0 0.1 0.1</size></box>')), ['<box> <size>', '(0, 0.1, 0.1)', '> 0']),
    ('box_negative', sdf(collision('<box><size>0.1 -0.1 0.1</size></box>')), ['<size>', '-0.1']),
    ('box_two_numbers', sdf(collision('<box><size>0.1 0.1</size></box>')), ['<size>', "'0.1 0.1'"]),
    ('box_words', sdf(collision('<box><size>a b c</size></box>')), ['<size>', "'a b c'"]),
    ('box_huge', sdf(collision('<box><size>1e6 1 1</size></box>')), ['<size>', 'at most']),
    ('cylinder_nan', sdf(collision('<cylinder><radius>0.1</radius><length>nan</length></cylinder>')),
     ['<length>', 'nan']),
    ('cylinder_missing_radius', sdf(collision('<cylinder><length>1</length></cylinder>')),
     ['<radius> is missing']),
    ('sphere_zero', sdf(collision('<sphere><radius>0</radius></sphere>')), ['<radius>', '(0)']),
    ('plane_no_normal', sdf(collision('<plane><normal>0 0 0</normal></plane>')), ['<normal>', 'direction']),
    ('no_shape', sdf(collision('')), ["collision 'c'", 'got none']),
    ('two_shapes', sdf(collision(BOX + '<sphere><radius>1</radius></sphere>')), ['<box>, <sphere>']),
    ('heightmap', sdf(collision('<heightmap><uri>x</uri></heightmap>')), ['<heightmap>', 'not a shape']),
    ('no_geometry', sdf('<collision name="c"/>'), ["collision 'c'", '<geometry> is missing']),
    ('collision_no_name', sdf('<collision><geometry>%s</geometry></collision>' % BOX), ['<collision>', 'None']),
    # poses
    ('pose_inf', sdf(collision(BOX), '<pose>0 0 inf 0 0 0</pose>'), ['<pose>', 'inf']),
    ('pose_five', sdf('<pose>0 0 0 0 0</pose>' + collision(BOX)), ["link 'l' <pose>", "'0 0 0 0 0'"]),
    ('pose_far', sdf(collision(BOX), '<pose>5000 0 0 0 0 0</pose>'), ['<pose>', '5000']),
    ('pose_relative_to_unknown', sdf('<pose relative_to="nowhere">0 0 0 0 0 0</pose>' + collision(BOX)),
     ["relative_to='nowhere'"]),
    # mass and inertia
    ('mass_zero', sdf(inertial(mass='0') + collision(BOX)), ['mass', '0']),
    ('mass_negative', sdf(inertial(mass='-1') + collision(BOX)), ['mass', '-1']),
    ('inertia_not_pd', sdf(inertial(ixx='1', iyy='1', izz='-1') + collision(BOX)),
     ['inertia', 'positive definite', '-1']),
    ('inertia_triangle', sdf(inertial(ixx='1', iyy='1', izz='5') + collision(BOX)),
     ['inertia', 'triangle inequality']),
    # friction
    ('friction_negative', sdf(collision(BOX, '<surface><friction><ode><mu>-0.5</mu></ode></friction>'
                                             '</surface>')), ['friction', '-0.5']),
    # URIs and meshes
    ('uri_unresolved', sdf(collision('<mesh><uri>model://nothing/x.stl</uri></mesh>')),
     ["'model://nothing/x.stl'", 'does not resolve', MODELS]),
    ('package_unknown', sdf(collision('<mesh><uri>package://no_such_pkg/x.stl</uri></mesh>')),
     ["'package://no_such_pkg/x.stl'", "no package 'no_such_pkg'"]),
    ('uri_dotdot', sdf(collision('<mesh><uri>model://table/../../../../etc/passwd</uri></mesh>')),
     ['".." is not allowed']),
    ('uri_http', sdf(collision('<mesh><uri>http://example.com/x.stl</uri></mesh>')),
     ["scheme 'http'"]),
    ('uri_relative_from_text', sdf(collision('<mesh><uri>meshes/x.stl</uri></mesh>')),
     ["'meshes/x.stl'", 'relative path']),
    ('mesh_no_uri', sdf(collision('<mesh><scale>1 1 1</scale></mesh>')), ['<uri> is missing']),
    ('mesh_scale_zero', sdf(collision('<mesh><uri>model://mesh_part/meshes/part.stl</uri>'
                                      '<scale>1 0 1</scale></mesh>')), ['<scale>', '(1, 0, 1)']),
    ('mesh_not_a_mesh_file', sdf(collision('<mesh><uri>model://table/model.config</uri></mesh>')),
     ['model.config', 'not a supported mesh file']),
    ('submesh', sdf(collision('<mesh><uri>model://mesh_part/meshes/part.dae</uri><submesh><name>a'
                              '</name></submesh></mesh>')), ['<submesh>']),
    # URDF
    ('urdf_prismatic', urdf(URDF_INERTIAL, '<link name="k"/><joint name="slide" type="prismatic">'
                            '<parent link="l"/><child link="k"/></joint>'), ["joint 'slide'", "'prismatic'"]),
    ('urdf_massless_moving', urdf('<collision><geometry><box size="1 1 1"/></geometry></collision>'),
     ["link 'l'", 'no <inertial>']),
    ('urdf_box_two', urdf(URDF_INERTIAL + '<collision><geometry><box size="1 2"/></geometry></collision>'),
     ["size='1 2'"]),
    ('urdf_radius_negative', urdf(URDF_INERTIAL + '<collision><geometry><sphere radius="-2"/></geometry>'
                                  '</collision>'), ['radius', '-2']),
    ('urdf_origin_nan', urdf(URDF_INERTIAL + '<collision><origin xyz="0 nan 0"/><geometry><sphere '
                             'radius="1"/></geometry></collision>'), ['xyz', 'nan']),
    ('urdf_mass_zero', urdf('<inertial><mass value="0"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                            'iyz="0" izz="1"/></inertial>'), ['mass', '0']),
    ('urdf_mu_word', urdf(URDF_INERTIAL, '<gazebo reference="l"><mu1>slippery</mu1></gazebo>'),
     ['<mu1>', "'slippery'"]),
    ('urdf_mu_negative', urdf(URDF_INERTIAL, '<gazebo reference="l"><mu2>-1</mu2></gazebo>'),
     ['mu1>/<mu2>', '-1']),
    ('urdf_gazebo_unknown_link', urdf(URDF_INERTIAL, '<gazebo reference="ghost"><mu1>1</mu1></gazebo>'),
     ["reference='ghost'"]),
    ('urdf_mesh_no_file', urdf(URDF_INERTIAL + '<collision><geometry><mesh/></geometry></collision>'),
     ['filename is missing']),
    ('urdf_mesh_unresolved', urdf(URDF_INERTIAL + '<collision><geometry><mesh filename="package://'
                                  'world_test_pkg/meshes/none.stl"/></geometry></collision>'),
     ["'package://world_test_pkg/meshes/none.stl'", 'does not resolve']),
    ('urdf_two_roots', '<robot name="r"><link name="a">%s</link><link name="b">%s</link></robot>'
     % (URDF_INERTIAL, URDF_INERTIAL), ['one root link', 'a, b']),
]


@pytest.mark.parametrize('xml,fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_model_refused(resolver, xml, fragments):
    with pytest.raises(WorldError) as info:
        parse_model_xml(xml, resolver)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def _mesh_sdf(path):
    return sdf(collision('<mesh><uri>file://%s</uri></mesh>' % path))


@pytest.mark.parametrize('name,content,fragments', [
    ('garbage.stl', b'this is not a mesh at all, only words', ['garbage.stl', 'no triangles']),
    ('empty.stl', b'', ['empty.stl', 'no triangles']),
    ('flat.stl', b'solid f\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n'
                 b'endloop\nendfacet\nfacet normal 0 0 1\nouter loop\nvertex 1 0 0\nvertex 1 1 0\n'
                 b'vertex 0 1 0\nendloop\nendfacet\nendsolid f\n', ['flat.stl', 'no volume']),
    ('words.dae', b'<?xml version="1.0"?><notcollada/>', ['words.dae', 'not <COLLADA>']),
    ('broken.dae', b'<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema"><asset>',
     ['broken.dae', 'not well-formed']),
    ('empty.dae', b'<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1"/>',
     ['empty.dae', 'Collada']),
    ('entity.dae', b'<!DOCTYPE c [<!ENTITY e "x">]><COLLADA>&e;</COLLADA>', ['entity.dae', 'DOCTYPE']),
    ('unit.dae', b'<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema"><asset><unit meter="-1"/>'
                 b'</asset></COLLADA>', ['unit.dae', "meter='-1'"]),
    ('part.obj', b'v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n', ['part.obj', 'not a supported mesh file']),
])
def test_a_mesh_that_is_not_a_mesh(tmp_path, resolver, name, content, fragments):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(WorldError) as info:
        parse_sdf(_mesh_sdf(path), resolver)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_mesh_too_large(tmp_path, resolver):
    path = tmp_path / 'big.stl'
    with open(path, 'wb') as f:
        f.truncate((16 << 20) + 1)
    with pytest.raises(WorldError, match='big.stl.* more than'):
        parse_sdf(_mesh_sdf(path), resolver)


def test_gripper_fragment_is_not_a_world_model(resolver):
    """The robot's gripper (sliding fingers) is no rigid world model: the message names the joint."""
    with open(GRIPPER) as f:
        text = f.read()
    with pytest.raises(WorldError, match="joint 'right_gripper_l_finger_joint'.*'prismatic'"):
        parse_urdf(text, resolver)


def test_world_names(resolver):
    world = World(reserved=('sawyer',))
    link = Link('l', Pose(), Inertial(1.0, (1, 0, 0, 1, 0, 1)))
    world.add(Model('block', (link,)))
    with pytest.raises(WorldError, match="'block' already exists"):
        world.add(Model('block', (link,)))
    with pytest.raises(WorldError, match="'sawyer' already exists"):
        world.add(Model('sawyer', (link,)))
    with pytest.raises(WorldError, match="no model named 'ghost'"):
        world.remove('ghost')
    with pytest.raises(WorldError, match="'sawyer' is the robot"):
        world.remove('sawyer')
    with pytest.raises(WorldError, match="no model named 'ghost'"):
        world.get('ghost')
    assert world.names() == ('sawyer', 'block')      # unchanged by the refusals


@pytest.mark.parametrize('body,fragments', [
    ('<include><name>x</name></include>', ['<include>', '<uri> is missing']),
    ('<include><uri>model://nothing</uri></include>', ["'model://nothing'", 'does not resolve']),
    ('<include><uri>model://table</uri></include><include><uri>model://table</uri></include>',
     ["'table' already exists"]),
    ('<include><uri>model://table</uri><pose>0 0 0 0 0</pose></include>', ['<pose>', "'0 0 0 0 0'"]),
    ('<model name="sawyer"><link name="l"/></model>', ["'sawyer' already exists"]),
])
def test_bad_world(resolver, body, fragments):
    text = '<sdf version="1.6"><world name="w">%s</world></sdf>' % body
    with pytest.raises(WorldError) as info:
        parse_world(text, resolver, reserved=('sawyer',))
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_model_dir_without_config(tmp_path, resolver):
    (tmp_path / 'bare').mkdir()
    r = Resolver([str(tmp_path)], [])
    text = '<sdf version="1.6"><world name="w"><include><uri>model://bare</uri></include></world></sdf>'
    with pytest.raises(WorldError, match='has no model.config'):
        parse_world(text, r)


def test_world_file_missing(tmp_path, resolver):
    with pytest.raises(WorldError, match='cannot read .*nothing.world'):
        load_world(str(tmp_path / 'nothing.world'), resolver)


@pytest.mark.parametrize('position,quaternion,fragments', [
    ((0, 0, 0), (0, 0, 0, 0), ['orientation', 'zero']),
    ((0, 0, 0), (0, 0, float('nan'), 1), ['orientation', 'nan']),
    ((0, float('inf'), 0), (0, 0, 0, 1), ['position', 'inf']),
    ((0, 0), (0, 0, 0, 1), ['position', 'expected 3 numbers']),
    ((0, 0, 0), 'up', ['orientation', "'up'"]),
])
def test_bad_pose(position, quaternion, fragments):
    with pytest.raises(WorldError) as info:
        Pose.make(position, quaternion, 'initial_pose')
    assert 'initial_pose.' in str(info.value)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
