"""intera_rt.world without ROS: the demo's kind of models (a table, blocks, meshes) parsed
from SDF, URDF and a world file, as the backends will get them."""
import os
import struct

import numpy as np
import pytest

from intera_rt.world import (
    Box, Cylinder, Mesh, Plane, Pose, Resolver, Sphere, WorldError, load_world, parse_model_xml,
    parse_sdf, parse_urdf)
from intera_rt.world.mesh import load_mesh

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'world')
PKG = os.path.join(DATA, 'world_test_pkg')
MODELS = os.path.join(PKG, 'models')


@pytest.fixture
def resolver():
    return Resolver([MODELS], [DATA])


def _read(*parts):
    with open(os.path.join(PKG, *parts)) as f:
        return f.read()


def test_table_of_a_box_top_and_four_cylinder_legs(resolver):
    path = resolver.model_file('model://table', 'test')
    assert path == os.path.join(MODELS, 'table', 'model.sdf')
    table = parse_sdf(_read('models', 'table', 'model.sdf'), resolver)
    assert table.name == 'table' and table.static and table.source == 'sdf'
    assert table.link_names == ('top', 'leg_1', 'leg_2', 'leg_3', 'leg_4')
    top = table.link('top')
    (surface,) = top.collisions
    assert surface.geometry == Box((1.0, 0.8, 0.04))
    assert (surface.friction.mu, surface.friction.mu2) == (0.8, 0.7)
    assert top.pose.position[2] + surface.geometry.size[2] / 2 == pytest.approx(0.75)
    for i in range(1, 5):
        leg = table.link('leg_%d' % i)
        (c,) = leg.collisions
        assert c.geometry == Cylinder(0.03, 0.71)
        assert abs(leg.pose.position[0]) == pytest.approx(0.45)
        assert abs(leg.pose.position[1]) == pytest.approx(0.35)
        # each leg stands on the floor and meets the top's underside
        assert leg.pose.position[2] - 0.71 / 2 == pytest.approx(0.0)
        assert leg.pose.position[2] + 0.71 / 2 == pytest.approx(0.71)
    # leg_4's pose is relative_to the top (SDF 1.7 habit): it lands with the others
    assert table.link('leg_4').pose.position == pytest.approx((0.45, -0.35, 0.355))
    assert [(j.parent, j.child) for j in table.joints] == [('top', 'leg_%d' % i) for i in range(1, 5)]
    (body,) = table.bodies()             # welded by fixed joints: one rigid body, anchored
    assert body.name == 'top' and body.anchored
    assert len(body.collisions) == 5
    legs = [c for c in body.collisions if c.name.startswith('leg')]
    assert sorted(round(c.pose.position[2], 6) for c in legs) == [-0.375] * 4


def test_block_urdf_with_inertia_and_friction(resolver):
    block = parse_model_xml(_read('models', 'block', 'model.urdf'), resolver, name='block_1')
    assert block.name == 'block_1' and not block.static and block.source == 'urdf'
    (link,) = block.links
    assert link.name == 'block'
    assert link.inertial.mass == pytest.approx(0.1)
    assert link.inertial.pose.position == pytest.approx((0, 0, 0.025))
    assert link.inertial.inertia == pytest.approx((4.1667e-5, 0, 0, 4.1667e-5, 0, 4.1667e-5))
    (c,) = link.collisions
    assert c.geometry == Box((0.05, 0.05, 0.05))
    assert c.pose.position == pytest.approx((0, 0, 0.025))
    assert (c.friction.mu, c.friction.mu2) == (1.2, 1.1)      # <gazebo reference><mu1>/<mu2>
    (body,) = block.bodies()
    assert not body.anchored and body.inertial.mass == pytest.approx(0.1)


def test_world_file_with_includes_and_models(resolver):
    world = load_world(os.path.join(PKG, 'worlds', 'table_and_blocks.world'), resolver,
                       reserved=('sawyer',))
    # the sun is a light (left out); Gazebo's ground plane comes built in when not on the path
    assert world.names() == ('sawyer', 'ground_plane', 'table', 'block_a', 'block_b')
    ground = world.get('ground_plane')
    (plane,) = ground.link('link').collisions
    assert ground.static and plane.geometry == Plane((0.0, 0.0, 1.0), (100.0, 100.0))
    assert (plane.friction.mu, plane.friction.mu2) == (100.0, 50.0)
    table = world.get('table')
    assert table.pose.position == (0.75, 0.0, 0.0) and table.static
    block = world.get('block_a')                  # <include><name> renames, <pose> places
    assert block.source == 'urdf' and block.link_names == ('block',)
    assert block.pose.position == (0.6, 0.1, 0.75)
    assert block.pose.quaternion == pytest.approx((0, 0, np.sin(0.15), np.cos(0.15)))
    ball = world.get('block_b')
    (c,) = ball.link('link').collisions
    assert c.geometry == Sphere(0.02) and c.friction.mu == 0.5
    assert ball.link('link').inertial.mass == 0.05


def _outward(mesh):
    """Every hull face's normal points away from the hull's centroid."""
    v, f = mesh.hull_vertices, mesh.hull_faces
    centre = v.mean(axis=0)
    normals = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    return np.all(np.einsum('ij,ij->i', normals, v[f].mean(axis=1) - centre) > 0)


def test_mesh_model_stl_and_collada(resolver):
    base = os.path.join(MODELS, 'mesh_part')
    part = parse_sdf(_read('models', 'mesh_part', 'model.sdf'), resolver, base_dir=base)
    tetra, pyramid = part.link('body').collisions
    assert isinstance(tetra.geometry, Mesh) and tetra.geometry.scale == (2.0, 2.0, 2.0)
    assert tetra.geometry.path == os.path.join(base, 'meshes', 'part.stl')
    # the STL tetrahedron (0.1 m legs) scaled 2x: its hull is its 4 corners
    assert sorted(map(tuple, tetra.geometry.hull_vertices.round(9))) == [
        (0, 0, 0), (0, 0, 0.2), (0, 0.2, 0), (0.2, 0, 0)]
    assert len(tetra.geometry.hull_faces) == 4 and _outward(tetra.geometry)
    # the Collada pyramid is in centimetres, moved 1 cm along x by its node: Gazebo's metres
    hv = pyramid.geometry.hull_vertices
    assert hv.min(axis=0) == pytest.approx((-0.01, -0.02, 0.0))
    assert hv.max(axis=0) == pytest.approx((0.03, 0.02, 0.03))
    assert len(pyramid.geometry.hull_faces) == 6 and _outward(pyramid.geometry)
    assert pyramid.pose.position == (0.0, 0.0, 0.2)
    (visual,) = part.link('body').visuals             # a path relative to the model's file
    assert visual.geometry.path == os.path.join(base, 'meshes', 'part.dae')
    assert len(visual.geometry.faces) == 6


def test_urdf_fixed_joints_lumped_and_welded_to_world(resolver):
    model = parse_urdf(_read('urdf', 'mesh_part.urdf'), resolver)
    # as Gazebo imports a URDF: the part is lumped into the mount, the mount is welded to
    # the world at the anchor joint's origin
    (mount,) = model.links
    assert mount.name == 'mount' and model.anchored
    assert mount.pose.position == pytest.approx((0, 0, 0.5))
    assert [j.parent for j in model.joints] == ['world']
    cyl, part = mount.collisions
    assert cyl.geometry == Cylinder(0.05, 0.1)
    assert part.name == 'part_mesh' and part.pose.position == pytest.approx((0, 0, 0.1))
    assert part.pose.quaternion == pytest.approx((0, 0, np.sqrt(0.5), np.sqrt(0.5)))
    assert part.geometry.uri == 'package://world_test_pkg/models/mesh_part/meshes/part.stl'
    # combined inertia: 1 kg at 0, 0.5 kg at 0.1 m (parallel axes)
    inertial = mount.inertial
    assert inertial.mass == pytest.approx(1.5)
    assert inertial.pose.position == pytest.approx((0, 0, 0.1 / 3))
    d1, d2 = 0.1 / 3, 0.1 - 0.1 / 3
    ixx = 0.01 + 0.001 + 1.0 * d1 ** 2 + 0.5 * d2 ** 2
    assert inertial.inertia == pytest.approx((ixx, 0, 0, ixx, 0, 0.011))


def _binary_stl(path, triangles):
    with open(path, 'wb') as f:
        f.write(b'\0' * 80 + struct.pack('<I', len(triangles)))
        for tri in triangles:
            f.write(struct.pack('<12fH', 0, 0, 0, *[c for v in tri for c in v], 0))


def _cube_triangles(a):
    c = [(x, y, z) for x in (0, a) for y in (0, a) for z in (0, a)]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return [t for q in quads for t in ((c[q[0]], c[q[1]], c[q[2]]), (c[q[0]], c[q[2]], c[q[3]]))]


def test_binary_stl_through_file_uri(tmp_path, resolver):
    stl = tmp_path / 'cube.stl'
    _binary_stl(stl, _cube_triangles(0.04))
    xml = ('<sdf version="1.5"><model name="cube"><link name="l"><collision name="c"><geometry>'
           '<mesh><uri>file://%s</uri></mesh></geometry></collision></link></model></sdf>' % stl)
    (c,) = parse_sdf(xml, resolver).link('l').collisions
    assert len(c.geometry.hull_vertices) == 8
    assert c.geometry.hull_vertices.max(axis=0) == pytest.approx((0.04, 0.04, 0.04))
    assert _outward(c.geometry)


def test_a_mesh_is_loaded_once(tmp_path):
    stl = tmp_path / 'cube.stl'
    _binary_stl(stl, _cube_triangles(0.1))
    a = load_mesh(str(stl), 'file://%s' % stl)
    b = load_mesh(str(stl), 'file://%s' % stl)
    assert a.hull_vertices is b.hull_vertices
    with pytest.raises(ValueError):
        a.hull_vertices[0, 0] = 1.0                  # shared: read-only


def test_package_found_below_a_package_path_entry(tmp_path):
    # ROS_PACKAGE_PATH names a directory two levels above the package (a workspace's src/)
    r = Resolver.from_environ({'ROS_PACKAGE_PATH': os.path.dirname(DATA), 'GAZEBO_MODEL_PATH': ''})
    assert r.package('world_test_pkg') == os.path.realpath(PKG)
    assert r.model_paths == ()


def test_sdf_and_urdf_spawn_text_both_accepted(resolver):
    sdf = ('<?xml version="1.0"?><sdf version="1.4"><model name="own"><pose>1 2 3 0 0 0</pose>'
           '<link name="l"><collision name="c"><geometry><sphere><radius>0.1</radius></sphere>'
           '</geometry></collision></link></model></sdf>')
    model = parse_model_xml(sdf, resolver, name='spawned')
    assert model.name == 'spawned' and model.pose.position == (1.0, 2.0, 3.0)
    # an SDF link without <inertial> has SDF's default mass (1 kg, unit inertia), as in Gazebo
    assert model.link('l').inertial.mass == 1.0
    urdf = ('<robot name="r"><link name="l"><inertial><mass value="2"/><inertia ixx="1" ixy="0" '
            'ixz="0" iyy="1" iyz="0" izz="1"/></inertial><collision><geometry><box size="1 1 1"/>'
            '</geometry></collision></link></robot>')
    model = parse_model_xml(urdf, resolver)
    assert model.name == 'r' and model.link('l').collisions[0].name == 'l_collision'


def test_pose_algebra():
    a = Pose.make((1, 0, 0), (0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)))   # yaw 90°
    b = Pose((0.5, 0, 0))
    assert (a * b).position == pytest.approx((1, 0.5, 0))
    assert (a * a.inverse()).position == pytest.approx((0, 0, 0))
    assert Pose.from_matrix(a.matrix()).quaternion == pytest.approx(a.quaternion)
    # non-unit quaternions are normalised, as Gazebo does
    assert Pose.make((0, 0, 0), (0, 0, 0, 2)).quaternion == (0, 0, 0, 1)
    with pytest.raises(WorldError):
        Pose.make((0, 0, 0), (0, 0, 0, 0))


def test_file_uri_relative_to_the_model_file(resolver):
    """file://part.stl (Gazebo's habit for a mesh next to the model) is relative to the file."""
    base = os.path.join(MODELS, 'mesh_part', 'meshes')
    xml = ('<sdf version="1.6"><model name="m"><link name="l"><collision name="c"><geometry><mesh>'
           '<uri>file://part.stl</uri></mesh></geometry></collision></link></model></sdf>')
    (c,) = parse_sdf(xml, resolver, base_dir=base).link('l').collisions
    assert c.geometry.path == os.path.join(base, 'part.stl')
    with pytest.raises(WorldError, match="'file://part.stl' is a relative path"):
        parse_sdf(xml, resolver)
