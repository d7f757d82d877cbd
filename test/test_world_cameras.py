"""The cameras show the world (issue 21 item 2, "one scene"): a block spawned through
gazebo_ros' /gazebo/spawn_sdf_model in front of the hand camera appears in its image where
the block is, and is gone again once /gazebo/delete_model takes it out; an add_obstacle
sphere appears too, and a mesh model (drawn as its convex hull). The software renderer (the
embedded backend)."""
import os

import numpy as np
import pytest

from clients import Frames, cams, pixels, stream  # noqa: F401 - cams: a fixture
from contract import CAMERA_NS as NS
from rosharness import wait_for

pytestmark = pytest.mark.sawyer_args([])
TIMEOUT = 10.0
DISTANCE = 0.4          # m along the camera's view
BLOCK = ('<sdf version="1.6"><model name="%s"><static>true</static><link name="link">'
         '<visual name="v"><geometry><box><size>0.1 0.1 0.1</size></box></geometry></visual>'
         '<collision name="c"><geometry><box><size>0.1 0.1 0.1</size></box></geometry></collision>'
         '</link></model></sdf>')
# A tetrahedron with its right-angled corner at the origin and 0.1 m legs, scaled 2x.
MESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'world', 'world_test_pkg',
                    'models', 'mesh_part', 'meshes', 'part.stl')
PART = ('<sdf version="1.6"><model name="cam_part"><static>true</static><link name="link">'
        '<visual name="v"><geometry><mesh><uri>file://%s</uri><scale>2 2 2</scale></mesh>'
        '</geometry></visual></link></model></sdf>' % MESH)
PART_CENTROID = 0.05        # m along each axis of the model's frame


def camera_in(frame, camera_frame):
    """(origin, view direction) of `camera_frame` in `frame`, from /tf."""
    import rospy
    import tf2_ros
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    t = buf.lookup_transform(frame, camera_frame, rospy.Time(0), rospy.Duration(TIMEOUT)).transform
    x, y, z, w = t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w
    view = np.array([2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y)])  # R @ ẑ
    return np.array([t.translation.x, t.translation.y, t.translation.z]), view


def centre_and_edge(img):
    """Pixels of the middle ninth of the image and of its left and right tenths."""
    h, w = img.shape[:2]
    centre = img[h // 3:2 * h // 3, w // 3:2 * w // 3]
    edge = np.concatenate([img[:, :w // 10], img[:, -w // 10:]], axis=1)
    return centre.astype(int), edge.astype(int)


def changed(before, after):
    """(share of the centre's pixels, of the edges') that changed by more than 8 levels."""
    (c0, e0), (c1, e1) = centre_and_edge(before), centre_and_edge(after)
    return float(np.mean(np.abs(c1 - c0) > 8)), float(np.mean(np.abs(e1 - e0) > 8))


def test_a_spawned_block_and_an_obstacle_appear_in_the_hand_camera(cams):
    import rospy
    from gazebo_msgs.srv import DeleteModel, SpawnModel
    from geometry_msgs.msg import Pose
    from intera_rt_msgs.srv import AddObstacle, RemoveObstacle
    for name in ('/gazebo/spawn_sdf_model', '/gazebo/delete_model'):
        rospy.wait_for_service(name, TIMEOUT)
    spawn = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel)
    delete = rospy.ServiceProxy('/gazebo/delete_model', DeleteModel)
    hand = cams['right_hand_camera']
    frames = Frames(NS + 'right_hand_camera/image_rect')
    try:
        stream(hand, True)
        before = pixels(frames.wait(2, 5.0, 'hand camera frames'))[..., 0]

        def image_changed():
            n = len(frames.frames)
            img = pixels(frames.wait(n + 1, 5.0, 'a new frame'))[..., 0]
            return (img,) if changed(before, img)[0] > 0.2 else None

        origin, view = camera_in('world', 'right_hand_camera_optical')
        at = Pose()
        (at.position.x, at.position.y, at.position.z), at.orientation.w = origin + DISTANCE * view, 1.0
        r = spawn('cam_block', BLOCK % 'cam_block', '', at, '')
        assert r.success, r.status_message
        with_block, = wait_for(image_changed, TIMEOUT, 'the block in the hand camera image')
        centre, edge = changed(before, with_block)
        assert centre > 0.2 and edge == 0, (centre, edge)      # where the block is, only there

        r = delete('cam_block')
        assert r.success, r.status_message
        wait_for(lambda: changed(before, pixels(frames.wait(len(frames.frames) + 1, 5.0,
                                                            'a new frame'))[..., 0])[0] == 0,
                 TIMEOUT, 'the image without the block again')

        # the mesh model, its centroid where the block's centre was
        part = Pose()
        part.position.x, part.position.y, part.position.z = origin + DISTANCE * view - PART_CENTROID
        part.orientation.w = 1.0
        r = spawn('cam_part', PART, '', part, '')
        assert r.success, r.status_message
        with_part, = wait_for(image_changed, TIMEOUT, 'the mesh model in the hand camera image')
        centre, edge = changed(before, with_part)
        assert centre > 0.2 and edge == 0, (centre, edge)
        assert delete('cam_part').success
        wait_for(lambda: changed(before, pixels(frames.wait(len(frames.frames) + 1, 5.0,
                                                            'a new frame'))[..., 0])[0] == 0,
                 TIMEOUT, 'the image without the mesh model again')

        # an add_obstacle sphere (in base) at the same place
        rospy.wait_for_service('/intera_rt/sim/add_obstacle', TIMEOUT)
        origin_b, view_b = camera_in('base', 'right_hand_camera_optical')
        p = origin_b + DISTANCE * view_b
        add = rospy.ServiceProxy('/intera_rt/sim/add_obstacle', AddObstacle)
        remove = rospy.ServiceProxy('/intera_rt/sim/remove_obstacle', RemoveObstacle)
        ball = Pose()
        (ball.position.x, ball.position.y, ball.position.z), ball.orientation.w = p, 1.0
        try:
            r = add('cam_ball', 'sphere', ball, [0.06])
            assert r.success, r.message
            with_ball, = wait_for(image_changed, TIMEOUT, 'the obstacle in the hand camera image')
            centre, edge = changed(before, with_ball)
            assert centre > 0.2 and edge == 0, (centre, edge)
        finally:
            remove('cam_ball')
    finally:
        frames.close()
        stream(hand, False)
