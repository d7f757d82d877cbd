"""The cameras' software renderer without ROS: analytic depths of spheres, cylinders and
boxes, shading, culling, and what the head and hand cameras see of the robot at neutral."""
import math

import numpy as np
import pytest

from intera_rt.io.camera import CAMERAS
from intera_rt.io.render import (BOX, CYLINDER, SPHERE, Camera, Scene, Shape, render, to_bgr8,
                                 to_mono8)
from intera_rt.model import default_urdf_path
from intera_rt.robot import ARM_JOINTS, NEUTRAL

ARM_LINKS = ('right_l0', 'right_l1', 'right_l1_2', 'right_l2', 'right_l2_2', 'right_l3',
             'right_l4', 'right_l4_2', 'right_l5')
FLANGE = ('right_l6', 'right_hand')


@pytest.fixture(scope='module')
def scene():
    with open(default_urdf_path()) as f:
        return Scene(f.read())


def looking_down(height):
    """A camera `height` m above the origin looking straight down (x right, y down)."""
    pose = np.eye(4)
    pose[:3, :3] = [[1, 0, 0], [0, -1, 0], [0, 0, -1]]
    pose[2, 3] = height
    return pose


def one_shape(kind, dims, color=(0.5, 0.1, 0.1)):
    s = Scene.__new__(Scene)
    s.root, s.floor_z = 'world', -10.0
    s.frames = None
    s.shapes = [Shape('world', kind, dims, np.eye(4), color)]
    s.link_poses = lambda positions: {'world': np.eye(4)}
    s.posed = lambda positions: [(s.shapes[0], np.eye(4))]
    return s


@pytest.mark.parametrize('kind, dims, top', [(SPHERE, (0.2,), 0.2), (CYLINDER, (0.2, 0.1), 0.1),
                                             (BOX, (0.3, 0.2, 0.15), 0.15)])
def test_depth_at_the_centre_is_the_distance_to_the_top(kind, dims, top):
    cam = Camera(101, 81, math.radians(60), near=0.01)
    rgb, depth = render(one_shape(kind, dims), {}, looking_down(2.0), cam)
    assert depth[40, 50] == pytest.approx(2.0 - top, abs=1e-5)
    assert np.isinf(depth[0, 0])
    assert rgb[40, 50, 0] > 2 * rgb[40, 50, 1]                   # the shape's red


def test_sphere_outline_and_shading():
    cam = Camera(201, 201, math.radians(40), near=0.01)
    rgb, depth = render(one_shape(SPHERE, (0.3,)), {}, looking_down(2.0), cam)
    # the silhouette's angular radius is asin(r / d)
    radius_px = cam.f * math.tan(math.asin(0.3 / 2.0))
    covered = np.isfinite(depth[100])
    assert covered.sum() == pytest.approx(2 * radius_px, abs=2)
    lit = rgb[..., 0][np.isfinite(depth)]
    assert lit.max() - lit.min() > 0.1                             # shaded, not flat


def test_a_shape_around_the_camera_is_left_out():
    cam = Camera(64, 48, math.radians(60), near=0.01)
    rgb, depth = render(one_shape(SPHERE, (3.0,)), {}, looking_down(2.0), cam)
    assert np.isinf(depth).all()


def test_never_blank(scene):
    cam = Camera(64, 48, math.radians(90))
    up = np.eye(4)
    up[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]               # z (view) along world z: the sky
    up[2, 3] = 5.0
    rgb, _ = render(scene, {}, up, cam)
    assert rgb.std() > 0.005 and rgb.mean() > 0.3
    rgb, _ = render(scene.only(()), {}, looking_down(1.0), cam)   # floor tiles
    assert to_mono8(rgb).std() > 8


def coverage(scene, links, camera, positions):
    spec = CAMERAS[camera]
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    pose = scene.link_poses(positions)[spec['frame']]
    _, depth = render(scene.only(links), positions, pose, cam)
    return float(np.isfinite(depth).mean())


def neutral():
    return dict(zip(ARM_JOINTS, NEUTRAL), head_pan=0.0)


def test_head_camera_at_neutral_sees_the_arm(scene):
    assert coverage(scene, ARM_LINKS + FLANGE, 'head_camera', neutral()) > 0.2
    assert coverage(scene, FLANGE, 'head_camera', neutral()) > 0.002      # the hand is in view
    assert coverage(scene, ('head', 'screen'), 'head_camera', neutral()) == 0.0
    panned = dict(neutral(), head_pan=-1.6)
    assert coverage(scene, ARM_LINKS + FLANGE, 'head_camera', panned) < \
        coverage(scene, ARM_LINKS + FLANGE, 'head_camera', neutral()) / 3


def test_hand_camera_looking_down_sees_only_its_flange_of_the_arm(scene):
    assert coverage(scene, ARM_LINKS, 'right_hand_camera', neutral()) == 0.0
    assert coverage(scene, FLANGE, 'right_hand_camera', neutral()) < 0.6


def test_exposure_scales_brightness():
    rgb = np.full((4, 4, 3), 0.2, np.float32)
    assert to_bgr8(rgb, 2.0).mean() > to_bgr8(rgb, 1.0).mean() > to_bgr8(rgb, 0.5).mean()
    assert to_mono8(rgb, 100.0).max() == 255
