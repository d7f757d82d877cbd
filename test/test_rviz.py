"""RViz: `scripts/sawyer --rviz` renders the robot headless (Xvfb, Mesa's software OpenGL)
with config/sawyer.rviz, and the screenshots show what a person would see: the red arm,
following the joints; the translucent blue avoidance shapes; a green sim obstacle while it
is placed. Plus the endpoint pose rviz_markers derives and its marker builders (no ROS).

The 3D view is found in each screenshot as the rows and columns mostly of RViz's background
colour (config: 48; 48; 48), so the panels' text and icons are never counted."""
import math
import os
import tempfile

import numpy as np
import pytest

from intera_rt.robot import NEUTRAL
from clients import display, overlap, red, sim, sim_service, teleport  # noqa: F401 - display (autouse), sim: fixtures
from rosharness import latest, wait_for

SAWYER_ARGS = ['--rviz']

BACKGROUND = (48, 48, 48)       # config/sawyer.rviz: Global Options / Background Color
RVIZ_TIMEOUT = 60.0             # s: RViz's first frames under software GL on a loaded machine
RENDER_TIMEOUT = 20.0           # s for a change to show
MIN_ARM_PIXELS = 2500           # the red arm at neutral covers ~7000 px of the 3D view
MIN_SHAPE_PIXELS = 5000         # the blue avoidance shapes: ~25000 px
MIN_OBSTACLE_PIXELS = 1500      # a 0.25 m box near the arm: thousands of px
SETTLED_SHOTS = 6               # identical screenshots in a row (1 s) make a settled picture
# Far from neutral in the image: the arm swung to its side and stretched out.
REACH_OUT = (1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def view(image):
    """The 3D view of a screenshot (H×W×3 int array): the rows and columns that are at
    least 30 % background."""
    a = np.asarray(image, dtype=np.int32)
    bg = np.all(a == BACKGROUND, axis=2)
    rows = np.flatnonzero(bg.mean(axis=1) > 0.3)
    cols = np.flatnonzero(bg.mean(axis=0) > 0.3)
    if not len(rows) or not len(cols):
        return a[:0, :0]
    return a[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]


def green(v):
    """Sim obstacles (rviz_markers: green)."""
    r, g, b = v[..., 0], v[..., 1], v[..., 2]
    return (g > 90) & (g > 1.6 * r) & (g > 1.3 * b)


def blue_tint(v):
    """The translucent blue avoidance shapes over the grey background or the arm."""
    r, g, b = v[..., 0], v[..., 1], v[..., 2]
    return (b > r + 20) & (b > g + 8)


def wait_render(display, predicate, timeout, what, reference=None):
    """The first screenshot's 3D view for which predicate(view) holds."""
    found, last = [], []

    def shot():
        image = display.screenshot()
        last[:] = [image]
        v = view(image)
        if v.size and predicate(v):
            found.append(v)
        return bool(found)
    try:
        wait_for(shot, timeout, what, interval=0.2)
    except AssertionError as exc:
        path = os.path.join(tempfile.mkdtemp(prefix='test_rviz_'), 'last.png')
        last[0].save(path)
        v = view(last[0])
        raise AssertionError('%s; the last screenshot (%s): 3D view %s, %d red px, %d blue-'
                             'tinted px, %d green px' % (
                                 exc, path, v.shape[:2], np.count_nonzero(red(v)),
                                 np.count_nonzero(blue_tint(v)),
                                 np.count_nonzero(green(v)))
                             + ('' if reference is None else ', before: 3D view %s, %d red px'
                                % (reference.shape[:2], np.count_nonzero(reference)))
                             + ('' if reference is None or v.shape[:2] != reference.shape else
                                ', red overlap with before %.2f' % overlap(red(v), reference))
                             ) from None
    return found[0]


def settled(display, shots=SETTLED_SHOTS):
    """The 3D view once RViz shows the arm and the avoidance shapes and `shots` screenshots
    in a row (0.2 s apart) are the same: every display has drawn what it has. (Two in a row
    were once the same while RViz, slowed by a loaded machine, had drawn part of the arm.)"""
    same = []

    def ready(v):
        if same and (same[0].shape != v.shape or not np.array_equal(same[0], v)):
            same.clear()
        same.append(v)
        return (len(same) >= shots and np.count_nonzero(red(v)) >= MIN_ARM_PIXELS
                and np.count_nonzero(blue_tint(v)) >= MIN_SHAPE_PIXELS)
    return wait_render(display, ready, RVIZ_TIMEOUT,
                       'RViz to show the red arm (>= %d px) and the avoidance shapes (>= %d '
                       'px), settled' % (MIN_ARM_PIXELS, MIN_SHAPE_PIXELS))


def test_rviz_shows_the_arm_following_its_joints(robot, display, sim):
    teleport(sim, NEUTRAL)              # the reference picture at the very pose it comes back to
    arm_neutral = red(settled(display))
    teleport(sim, REACH_OUT)
    # The head stays where it was (and is red too): a third of the red pixels at most move.
    out = wait_render(display, lambda v: v.shape[:2] == arm_neutral.shape
                      and np.count_nonzero(red(v)) >= MIN_ARM_PIXELS
                      and overlap(red(v), arm_neutral) < 0.7,
                      RENDER_TIMEOUT, 'the arm drawn elsewhere after reaching out',
                      arm_neutral)
    teleport(sim, NEUTRAL)
    # Back where it was: the same pixels (not merely other ones), so the picture follows the
    # joints rather than changing by itself.
    wait_render(display, lambda v: v.shape[:2] == arm_neutral.shape
                and overlap(red(v), arm_neutral) > 0.95,
                RENDER_TIMEOUT, 'the arm drawn as before back at neutral', arm_neutral)
    assert overlap(red(out), arm_neutral) < 0.7


def test_rviz_shows_the_avoidance_shapes(robot, display):
    wait_render(display, lambda v: np.count_nonzero(blue_tint(v)) >= MIN_SHAPE_PIXELS,
                RVIZ_TIMEOUT, 'the translucent blue avoidance shapes (>= %d px)'
                % MIN_SHAPE_PIXELS)


def test_rviz_shows_sim_obstacles_while_placed(robot, display):
    from geometry_msgs.msg import Point, Pose, Quaternion
    from intera_rt_msgs.srv import AddObstacle, RemoveObstacle
    before = settled(display)
    baseline = np.count_nonzero(green(before))
    # In front of the pedestal, between the view and the robot, clear of the arm.
    pose = Pose(Point(0.5, -0.6, -0.2), Quaternion(0, 0, 0, 1))
    resp = sim_service('add_obstacle', AddObstacle)('rviz_test_box', 'box', pose,
                                                    [0.25, 0.25, 0.25])
    assert resp.success, resp.message
    try:
        wait_render(display,
                    lambda v: np.count_nonzero(green(v)) >= baseline + MIN_OBSTACLE_PIXELS,
                    RENDER_TIMEOUT, 'the green obstacle drawn (>= %d px more than %d)'
                    % (MIN_OBSTACLE_PIXELS, baseline))
    finally:
        resp = sim_service('remove_obstacle', RemoveObstacle)('rviz_test_box')
    assert resp.success, resp.message
    wait_render(display, lambda v: np.count_nonzero(green(v)) <= baseline + 200,
                RENDER_TIMEOUT, 'the obstacle gone from the picture after remove_obstacle')


def test_endpoint_pose_is_the_endpoint_state_in_base(robot):
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.msg import EndpointState
    with latest('/intera_rt/rviz/endpoint_pose', PoseStamped) as shown, \
            latest('/robot/limb/right/endpoint_state', EndpointState) as state:
        pose = shown.wait(10.0).pose
        truth = state.wait(10.0).pose
    assert shown.msg.header.frame_id == 'base'
    p, t = pose.position, truth.position
    # The arm holds still: the two messages are at most a few ms apart.
    assert np.allclose([p.x, p.y, p.z], [t.x, t.y, t.z], atol=1e-3)


# --- rviz_markers' builders (no ROS) -------------------------------------------------------

def test_avoidance_markers_are_the_armnav_shapes_avoidance_uses():
    from visualization_msgs.msg import Marker
    from intera_rt.model import avoidance
    from intera_rt.ros import rviz_markers
    markers = rviz_markers.shape_markers(avoidance.default_armnav_xml())
    assert rviz_markers.UNUSED_LINKS == avoidance.UNUSED_LINKS
    frames = [m.header.frame_id for m in markers]
    assert not set(frames) & set(avoidance.UNUSED_LINKS)
    assert {'right_l0', 'right_l4', 'right_hand', 'head'} <= set(frames)
    assert all(m.frame_locked for m in markers)
    # The hand's armnav cylinder: the tight model's inflated by 5 cm in radius, 10 cm in length.
    hand = [m for m in markers if m.header.frame_id == 'right_hand']
    assert [m.type for m in hand] == [Marker.CYLINDER]
    assert hand[0].scale.x == pytest.approx(hand[0].scale.y)


def test_obstacle_markers_replace_the_previous_list():
    from visualization_msgs.msg import Marker
    from intera_rt.ros.rviz_markers import obstacle_markers
    markers = obstacle_markers([
        {'name': 'box', 'shape': 'box', 'position': [0.5, 0, 0], 'quaternion': [0, 0, 0, 1],
         'size': [0.1, 0.2, 0.3]},
        {'name': 'ball', 'shape': 'sphere', 'position': [0, 0.5, 0],
         'quaternion': [0, 0, 0, 1], 'size': [0.1]}])
    assert markers[0].action == Marker.DELETEALL
    shapes = [m for m in markers if m.ns == 'obstacles']
    assert [(m.type, m.scale.x, m.scale.y, m.scale.z) for m in shapes] == [
        (Marker.CUBE, 0.1, 0.2, 0.3), (Marker.SPHERE, 0.2, 0.2, 0.2)]
    names = [m for m in markers if m.type == Marker.TEXT_VIEW_FACING]
    assert [m.text for m in names] == ['box', 'ball']
    assert all(m.header.frame_id == 'base' for m in markers[1:])
    assert obstacle_markers([])[0].action == Marker.DELETEALL and len(obstacle_markers([])) == 1


# --- scripts/sawyer's RViz options -----------------------------------------------------------

@pytest.mark.parametrize('args,fragment,display', [
    (['--rviz'], '--rviz needs an X display and DISPLAY is not set', None),
    (['--rviz-config', 'config/sawyer.rviz'], '--rviz-config is only meaningful with --rviz',
     ':0'),
    (['--rviz', '--rviz-config', '/no/such.rviz'], '--rviz-config: no such file: /no/such.rviz',
     ':0'),
])
def test_rviz_options_are_checked_before_starting_anything(args, fragment, display):
    import subprocess
    from intera_rt.tooling.robot_process import SAWYER
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:9')   # nothing may be started
    env.pop('DISPLAY', None)
    if display:
        env['DISPLAY'] = display
    proc = subprocess.run([str(SAWYER)] + args, capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert fragment in proc.stderr
    assert 'roslaunch' not in proc.stdout


def test_world_markers_follow_their_links():
    from visualization_msgs.msg import Marker
    from intera_rt.ros.rviz_markers import world_markers
    s = math.sqrt(0.5)
    models = [{'name': 'm', 'links': [
        {'name': 'l', 'visuals': [
            {'shape': 'cylinder', 'size': [0.1, 0.4], 'position': [0.1, 0, 0], 'quaternion': [0, 0, 0, 1], 'path': ''},
            {'shape': 'mesh', 'size': [1, 1, 1], 'position': [0, 0, 0], 'quaternion': [0, 0, s, s],
             'path': '/models/part.stl'}]},
        {'name': 'unseen', 'visuals': [
            {'shape': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0], 'quaternion': [0, 0, 0, 1], 'path': ''}]}]}]
    # link l at (1, 0, 0.5) turned 90° about z
    markers = world_markers(models, {'m::l': ((1.0, 0.0, 0.5), (0.0, 0.0, s, s))})
    assert markers[0].action == Marker.DELETEALL and len(markers) == 3      # 'unseen' has no pose
    cylinder, mesh = markers[1], markers[2]
    p = cylinder.pose.position
    assert cylinder.type == Marker.CYLINDER and abs(p.x - 1.0) < 1e-12 and abs(p.y - 0.1) < 1e-12
    assert (cylinder.scale.x, cylinder.scale.z) == (0.2, 0.4)
    q = mesh.pose.orientation                                               # 180° about z
    assert mesh.type == Marker.MESH_RESOURCE and mesh.mesh_resource == 'file:///models/part.stl'
    assert abs(abs(q.z) - 1.0) < 1e-12 and abs(q.w) < 1e-12
