"""The internal cameras rendered by MuJoCo offscreen (intera_rt.ros.io.mujoco_cameras, no
ROS): the same view as the software renderer (io.render) from the same camera frame, field
of view and joint angles — the arm's red silhouette in the head camera agrees — and sim
obstacles and the world's models (primitives and meshes) appear when placed and go when
removed."""
import struct

import numpy as np
import pytest

from intera_rt.io.camera import CAMERAS
from intera_rt.io.render import Camera, Scene, obstacle_shapes, render, to_bgr8, world_shapes
from intera_rt.model import default_urdf_path
from intera_rt.model.joint_frames import pose_matrix
from intera_rt.robot import ARM_JOINTS, NEUTRAL
from intera_rt.ros.io.mujoco_cameras import MujocoCameras

POSES = [NEUTRAL, (0.0, -3.0, 0.0, 2.18, 0.0, 0.57, 3.32), (0.3, -0.5, 0.4, 1.0, -0.5, 1.0, 0.0)]


@pytest.fixture(scope='module')
def urdf():
    with open(default_urdf_path()) as f:
        return f.read()


@pytest.fixture(scope='module')
def mj(urdf):
    cams = MujocoCameras(urdf, CAMERAS, render_scale=0.5)
    yield cams
    cams.close()


def red(bgr):
    """The arm links' red (sawyer_red), also where shaded dark."""
    img = bgr.astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return (r > 25) & (r > 2 * g) & (r > 2 * b)


def blue(bgr):
    img = bgr.astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return (b > 80) & (b > 1.5 * g) & (b > 2 * r)


@pytest.mark.parametrize('pose', range(len(POSES)))
def test_the_head_camera_sees_the_arm_where_the_software_renderer_does(mj, urdf, pose):
    spec = CAMERAS['head_camera']
    positions = dict(zip(ARM_JOINTS, POSES[pose]), head_pan=0.3)
    rgb = mj.render('head_camera', positions)
    assert rgb.shape == (spec['height'] // 2, spec['width'] // 2, 3)
    scene = Scene(urdf)
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    expected, _ = render(scene, positions, scene.link_poses(positions)[spec['frame']], cam)
    a, b = red(to_bgr8(rgb)), red(to_bgr8(expected))
    assert b.mean() > 0.05                                  # the arm is in view
    iou = (a & b).sum() / (a | b).sum()
    assert iou > 0.85, 'red silhouettes overlap %.3f (MuJoCo %.3f, software %.3f of the image)' % (
        iou, a.mean(), b.mean())


def test_an_obstacle_shows_when_placed_and_goes_when_removed(mj):
    positions = dict(zip(ARM_JOINTS, NEUTRAL), head_pan=0.0)
    assert blue(to_bgr8(mj.render('head_camera', positions))).mean() < 0.001
    crate = obstacle_shapes([dict(name='crate', shape='box', position=[1.0, 0.5, 0.0],
                                  quaternion=[0.0, 0.0, 0.0, 1.0], size=[0.4, 0.4, 0.4])])
    assert blue(to_bgr8(mj.render('head_camera', positions, crate))).mean() > 0.01
    assert blue(to_bgr8(mj.render('head_camera', positions))).mean() < 0.001


def test_a_bad_obstacle_is_refused_and_the_last_good_cell_kept(mj):
    positions = dict(zip(ARM_JOINTS, NEUTRAL))
    before = mj.render('head_camera', positions)
    with pytest.raises((KeyError, ValueError, TypeError, IndexError)):
        mj.render('head_camera', positions,
                  obstacle_shapes([dict(name='bad', shape='box', position=[1.0, 0.5])]))
    assert np.abs(mj.render('head_camera', positions) - before).max() < 1e-6


ARM_UP = (0.0, -3.0, 0.0, 2.18, 0.0, 0.57, 3.32)     # the shoulder raised: the arm out of view
TURNED = (0.0, 0.0, 0.3826834, 0.9238795)           # 45° about z


def orange(bgr):
    """The world's models' colour (io.render.WORLD_COLOR) as either renderer shades it."""
    img = bgr.astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return (r > g) & (g > b + 20) & (r > b + 50)


def visual(shape, size, position=(0.0, 0.0, 0.0), path=''):
    return dict(shape=shape, size=list(size), position=list(position),
                quaternion=[0.0, 0.0, 0.0, 1.0], path=path)


def cube_stl(path, low, high):
    """A binary STL box from corner `low` to `high` (its own frame: off-centre when asked)."""
    c = [(x, y, z) for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [t for a, b, c_, d in quads for t in ((a, b, c_), (a, c_, d))]
    with open(path, 'wb') as f:
        f.write(b'\0' * 80 + struct.pack('<I', len(tris)))
        for t in tris:
            f.write(struct.pack('<3f', 0.0, 0.0, 0.0))
            for i in t:
                f.write(struct.pack('<3f', *c[i]))
            f.write(b'\0\0')


def test_the_worlds_shapes_show_where_the_software_renderer_draws_them(mj, urdf):
    """Box, cylinder, sphere and plane of a spawned model (as /intera_rt/sim/world lists
    them, posed by its link) in both renderers: the same orange silhouettes."""
    world = [dict(name='parts', links=[dict(name='link', visuals=[
        visual('box', (0.2, 0.2, 0.2), (0.0, -0.6, 0.0)), visual('cylinder', (0.1, 0.3), (0.0, -0.2, 0.0)),
        visual('sphere', (0.1,), (0.0, 0.2, 0.0)), visual('plane', (0.4, 0.4), (0.0, 0.6, -0.1))])])]
    extra = world_shapes(world, {'parts::link': pose_matrix((1.2, 0.0, -0.3), TURNED)})
    assert len(extra) == 4
    spec = CAMERAS['head_camera']
    positions = dict(zip(ARM_JOINTS, ARM_UP), head_pan=0.0)
    assert orange(to_bgr8(mj.render('head_camera', positions))).mean() == 0
    a = orange(to_bgr8(mj.render('head_camera', positions, extra)))
    scene = Scene(urdf)
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    expected, _ = render(scene, positions, scene.link_poses(positions)[spec['frame']], cam, None, extra)
    b = orange(to_bgr8(expected))
    assert b.mean() > 0.02
    iou = (a & b).sum() / (a | b).sum()
    assert iou > 0.85, 'world silhouettes overlap %.3f (MuJoCo %.3f, software %.3f of the image)' % (
        iou, a.mean(), b.mean())


def test_a_mesh_shows_as_its_triangles_at_its_links_pose(mj, tmp_path):
    """An STL box whose vertices are off its frame's origin, at a turned link pose, draws
    as a box primitive of the same extent where the mesh's vertices put it; a mesh file
    that is not a mesh is left out of the image and named in `unloadable`."""
    path = str(tmp_path / 'cube.stl')
    cube_stl(path, (0.1, -0.1, -0.1), (0.3, 0.1, 0.1))
    positions = dict(zip(ARM_JOINTS, ARM_UP), head_pan=0.0)
    link = pose_matrix((1.0, -0.3, -0.2), TURNED)
    as_mesh = world_shapes([dict(name='part', links=[dict(name='link', visuals=[
        visual('mesh', (1.0, 1.0, 1.0), path=path)])])], {'part::link': link})
    as_box = world_shapes([dict(name='part', links=[dict(name='link', visuals=[
        visual('box', (0.2, 0.2, 0.2), (0.2, 0.0, 0.0))])])], {'part::link': link})
    a = orange(to_bgr8(mj.render('head_camera', positions, as_mesh)))
    b = orange(to_bgr8(mj.render('head_camera', positions, as_box)))
    assert b.mean() > 0.005
    iou = (a & b).sum() / (a | b).sum()
    assert iou > 0.95, 'mesh vs box overlap %.3f (mesh %.4f, box %.4f)' % (iou, a.mean(), b.mean())
    # twice as large (its scale): a larger silhouette
    scaled = world_shapes([dict(name='part', links=[dict(name='link', visuals=[
        visual('mesh', (2.0, 2.0, 2.0), path=path)])])], {'part::link': link})
    assert orange(to_bgr8(mj.render('head_camera', positions, scaled))).mean() > 2 * a.mean()
    bad = str(tmp_path / 'not_a_mesh.stl')
    with open(bad, 'w') as f:
        f.write('solid nothing here\n')
    before = mj.render('head_camera', positions)
    broken = world_shapes([dict(name='junk', links=[dict(name='link', visuals=[
        visual('mesh', (1.0, 1.0, 1.0), path=bad)])])], {'junk::link': link})
    assert np.abs(mj.render('head_camera', positions, broken) - before).max() < 1e-6
    assert (bad, (1.0, 1.0, 1.0)) in mj.unloadable
