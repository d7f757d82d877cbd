"""The cameras show the world on MuJoCo (issue 21 item 2, "one scene", `--backend mujoco`):
the io node's MuJoCo renders draw the models spawned through gazebo_ros' services where
the world has them, as the software renderer does on the embedded plant (test_world_cameras).
In the head camera's view (the arm raised out of it): a block spawned appears, moves when
/gazebo/set_model_state moves it and is gone once /gazebo/delete_model takes it out; a
block dropped falls in the images as MuJoCo's physics drops it; a mesh model shows. Each
image is judged against the control frame taken before anything was spawned."""
import os

import numpy as np
import pytest

from clients import Frames, cams, pixels, sim, stream, teleport  # noqa: F401 - fixtures
from contract import CAMERA_NS as NS
from rosharness import wait_for
from test_gazebo_world import gz, pose  # noqa: F401 - gz: a fixture

from intera_rt.robot import NEUTRAL

pytestmark = pytest.mark.sawyer_args(['--backend', 'mujoco'])
TIMEOUT = 15.0
ARM_UP = (0.0, -3.0, 0.0, 2.18, 0.0, 0.57, 3.32)     # the shoulder raised: the arm out of view
MESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'world', 'world_test_pkg',
                    'models', 'mesh_part', 'meshes', 'part.stl')
BLOCK = ('<sdf version="1.6"><model name="{name}"><static>{static}</static><link name="link">'
         '<inertial><mass>0.5</mass><inertia><ixx>2e-3</ixx><iyy>2e-3</iyy><izz>2e-3</izz>'
         '</inertia></inertial>'
         '<visual name="v"><geometry><box><size>0.25 0.25 0.25</size></box></geometry></visual>'
         '<collision name="c"><geometry><box><size>0.25 0.25 0.25</size></box></geometry>'
         '</collision></link></model></sdf>')
PART = ('<sdf version="1.6"><model name="cam_part"><static>true</static><link name="link">'
        '<visual name="v"><geometry><mesh><uri>file://%s</uri><scale>4 4 4</scale></mesh>'
        '</geometry></visual></link></model></sdf>' % MESH)


def orange(msg):
    """Mask of the world's models' colour (io.render.WORLD_COLOR as MuJoCo shades it)."""
    img = pixels(msg).astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return (r > g) & (g > b + 20) & (r > b + 50)


def changed(control, msg):
    """Share of the pixels that differ from the control frame by more than 8 levels."""
    return float(np.mean(np.abs(pixels(msg).astype(int) - pixels(control).astype(int)).max(2) > 8))


def centroid(mask):
    rows, cols = np.nonzero(mask)
    return float(rows.mean()), float(cols.mean())


def next_frame(frames, test, what):
    """The first frame after now that passes `test`."""
    def seen():
        n = len(frames.frames)
        msg = frames.wait(n + 1, 5.0, 'a new frame')
        return (msg,) if test(msg) else None
    return wait_for(seen, TIMEOUT, what)[0]


def resting(gz, name):
    t = gz['get_model_state'](name, '').twist
    return max(abs(v) for v in (t.linear.x, t.linear.y, t.linear.z)) < 1e-3


@pytest.fixture
def head(cams, sim, gz):
    """The head camera streaming with the arm out of view; its control frame (no model)."""
    frames = Frames(NS + 'head_camera/image_rect_color')
    teleport(sim, ARM_UP)
    stream(cams['head_camera'], True)
    try:
        frames.wait(3, TIMEOUT, 'head camera frames')
        # the control: two frames in a row alike (the arm settled where it was put)
        control = wait_for(lambda: (lambda a, b: (b,) if changed(a, b) < 1e-3 else None)(
            frames.frames[-1][1], frames.wait(len(frames.frames) + 1, 5.0, 'a new frame')),
            TIMEOUT, 'a still image')[0]
        assert orange(control).mean() == 0
        yield frames, control
    finally:
        frames.close()
        stream(cams['head_camera'], False)
        for name in ('cam_block', 'cam_drop', 'cam_part'):
            gz['delete_model'](name)
        teleport(sim, NEUTRAL)


def test_a_spawned_block_appears_moves_and_goes(head, gz):
    frames, control = head
    r = gz['spawn_sdf_model']('cam_block', BLOCK.format(name='cam_block', static='true'), '',
                              pose(1.2, -0.35, 0.7), '')
    assert r.success, r.status_message
    shown = next_frame(frames, lambda m: orange(m).mean() > 0.004, 'the block in the head camera image')
    mask = orange(shown)
    assert abs(changed(control, shown) - mask.mean()) < 0.5 * mask.mean()    # the block, only
    row, col = centroid(mask)
    assert col > 0.5 * shown.width                   # world −y: right of the view's middle

    from gazebo_msgs.msg import ModelState
    r = gz['set_model_state'](ModelState('cam_block', pose(1.2, 0.35, 0.7), None, ''))
    assert r.success, r.status_message
    moved = next_frame(frames, lambda m: orange(m).mean() > 0.004
                       and centroid(orange(m))[1] < 0.5 * m.width, 'the block moved left')
    row2, col2 = centroid(orange(moved))
    assert abs(row2 - row) < 10 and col - col2 > 0.1 * moved.width, (row, col, row2, col2)
    assert abs(orange(moved).mean() - mask.mean()) < 0.3 * mask.mean()      # the same block

    r = gz['delete_model']('cam_block')
    assert r.success, r.status_message
    gone = next_frame(frames, lambda m: orange(m).mean() == 0, 'the block gone from the image')
    assert changed(control, gone) < 1e-3                 # the control image again


def test_a_dropped_block_falls_in_the_images(head, gz):
    frames, control = head
    start = len(frames.frames)
    r = gz['spawn_sdf_model']('cam_drop', BLOCK.format(name='cam_drop', static='false'), '',
                              pose(1.6, 0.0, 1.4), '')
    assert r.success, r.status_message
    next_frame(frames, lambda m: orange(m).mean() > 0.001, 'the block in the image')
    wait_for(lambda: gz['get_model_state']('cam_drop', '').pose.position.z < 0.15
             and resting(gz, 'cam_drop'), TIMEOUT, 'the block on the floor, at rest')
    landed = next_frame(frames, lambda m: orange(m).mean() > 0.001, 'a frame of the landed block')
    floor_row = centroid(orange(landed))[0]
    rows = [centroid(orange(m))[0] for _, m in frames.frames[start:] if orange(m).any()]
    # seen falling: higher in the image (smaller rows) before it landed
    assert min(rows) < floor_row - 0.1 * landed.height, (rows, floor_row)
    assert changed(control, landed) > 0


def test_a_mesh_model_shows(head, gz):
    frames, control = head
    r = gz['spawn_sdf_model']('cam_part', PART, '', pose(1.2, 0.0, 0.7), '')
    assert r.success, r.status_message
    shown = next_frame(frames, lambda m: orange(m).mean() > 0.003, 'the mesh in the head camera image')
    assert changed(control, shown) > 0.5 * orange(shown).mean()
    assert gz['delete_model']('cam_part').success
    gone = next_frame(frames, lambda m: orange(m).mean() == 0, 'the mesh gone from the image')
    assert changed(control, gone) < 1e-3
