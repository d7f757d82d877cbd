"""The internal cameras rendered by MuJoCo offscreen (intera_rt.ros.io.mujoco_cameras, no
ROS): the same view as the software renderer (io.render) from the same camera frame, field
of view and joint angles — the arm's red silhouette in the head camera agrees — and sim
obstacles appear when placed and go when removed."""
import numpy as np
import pytest

from intera_rt.io.camera import CAMERAS
from intera_rt.io.render import Camera, Scene, render, to_bgr8
from intera_rt.model import default_urdf_path
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
    mj.set_obstacles([dict(name='crate', shape='box', position=[1.0, 0.5, 0.0],
                           quaternion=[0.0, 0.0, 0.0, 1.0], size=[0.4, 0.4, 0.4])])
    assert blue(to_bgr8(mj.render('head_camera', positions))).mean() > 0.01
    mj.set_obstacles([])
    assert blue(to_bgr8(mj.render('head_camera', positions))).mean() < 0.001


def test_a_bad_obstacle_is_refused_and_the_last_good_cell_kept(mj):
    positions = dict(zip(ARM_JOINTS, NEUTRAL))
    before = mj.render('head_camera', positions)
    with pytest.raises((KeyError, ValueError, TypeError)):
        mj.set_obstacles([dict(name='bad', shape='box', position=[1.0, 0.5])])
    assert mj.obstacles == []
    assert np.abs(mj.render('head_camera', positions) - before).max() < 1e-6
