"""The cameras' software renderer without ROS: analytic depths of spheres, cylinders and
boxes, shading, culling, and what the head and hand cameras see of the robot at neutral."""
import math

import numpy as np
import pytest

from intera_rt.io.camera import CAMERAS
from intera_rt.io.render import (BOX, CYLINDER, MESH, SPHERE, Camera, Scene, Shape, render,
                                 to_bgr8, to_mono8)
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


def one_shape(kind, dims, color=(0.5, 0.1, 0.1), mesh=None, origin=None):
    s = Scene.__new__(Scene)
    s.root, s.floor_z = 'world', -10.0
    s.frames = None
    s.shapes = [Shape('world', kind, dims, np.eye(4) if origin is None else origin, color, mesh)]
    s.link_poses = lambda positions: {'world': np.eye(4)}
    s.posed = lambda positions: [(s.shapes[0], s.shapes[0].origin)]
    return s


@pytest.mark.parametrize('kind, dims, top', [(SPHERE, (0.2,), 0.2), (CYLINDER, (0.2, 0.1), 0.1),
                                             (BOX, (0.3, 0.2, 0.15), 0.15)])
def test_depth_at_the_centre_is_the_distance_to_the_top(kind, dims, top):
    cam = Camera(101, 81, math.radians(60), near=0.01)
    rgb, depth = render(one_shape(kind, dims), {}, looking_down(2.0), cam)
    assert depth[40, 50] == pytest.approx(2.0 - top, abs=1e-5)
    assert np.isinf(depth[0, 0])
    assert rgb[40, 50, 0] > 2 * rgb[40, 50, 1]                   # the shape's red


def test_a_mesh_is_drawn_as_its_convex_hull(tmp_path):
    """An STL cube (its hull: the cube, turned about two axes so that no face is square to
    the view) renders as the box primitive does: the same silhouette within a pixel at the
    edges, the same depths; an STL tetrahedron only inside its hull's silhouette."""
    import trimesh
    cam = Camera(161, 121, math.radians(50), near=0.01)
    turn = np.eye(4)
    turn[:3, :3] = trimesh.transformations.euler_matrix(0.4, 0.3, 0.0)[:3, :3]
    cube = tmp_path / 'cube.stl'
    trimesh.creation.box(extents=(0.3, 0.2, 0.4)).export(str(cube))
    _, mesh_depth = render(one_shape(MESH, (1.0, 1.0, 1.0), mesh=str(cube), origin=turn), {},
                           looking_down(2.0), cam)
    _, box_depth = render(one_shape(BOX, (0.15, 0.1, 0.2), origin=turn), {}, looking_down(2.0), cam)
    seen_mesh, seen_box = np.isfinite(mesh_depth), np.isfinite(box_depth)
    assert seen_box.sum() > 500
    assert (seen_mesh != seen_box).sum() < 0.02 * seen_box.sum()
    both = seen_mesh & seen_box
    assert np.abs(mesh_depth[both] - box_depth[both]).max() < 1e-4
    # the tetrahedron (0,0,0), (0.1,0,0), (0,0.1,0), (0,0,0.1) scaled 3x, seen from above:
    # only where its top view, the triangle x, y >= 0, x + y <= 0.3, is
    tetra = tmp_path / 'tetra.stl'
    trimesh.Trimesh([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]],
                    [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]).export(str(tetra))
    _, depth = render(one_shape(MESH, (3.0, 3.0, 3.0), mesh=str(tetra)), {}, looking_down(2.0), cam)
    v, u = np.nonzero(np.isfinite(depth))
    assert len(v) > 200
    rays = cam.rays[v, u]                      # camera frame; looking down: x = x, y = -y
    t = depth[v, u][:, None] * rays
    x, y = t[:, 0], -t[:, 1]
    assert (x > -2e-3).all() and (y > -2e-3).all() and (x + y < 0.3 + 3e-3).all()
    assert depth[v, u].min() == pytest.approx(2.0 - 0.3, abs=2e-3)


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
