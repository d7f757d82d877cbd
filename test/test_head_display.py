"""The head's screen: images sent to /robot/head_display are checked, kept, republished for
a viewer (/intera_rt/head_display) and drawn on the head's screen in the cameras' images.
Pure parts first (the screen image, the renderer), then through ROS."""
import math

import numpy as np
import pytest

from intera_rt.io.head_display import SCREEN_HEIGHT, SCREEN_WIDTH, screen_image, screen_linear_rgb
from intera_rt.io.render import Camera, Scene, render
from intera_rt.model import default_urdf_path
from intera_rt.robot import ARM_JOINTS, NEUTRAL

BLUE, RED = (255, 0, 0), (0, 0, 255)          # bgr8


def image(width, height, bgr, encoding='bgr8'):
    px = {'bgr8': bgr, 'rgb8': bgr[::-1], 'mono8': (bgr[0],), 'bgra8': bgr + (255,)}[encoding]
    return dict(width=width, height=height, encoding=encoding, step=width * len(px),
                data=bytes(px) * (width * height))


# --- the screen image ------------------------------------------------------------------------
def test_an_image_is_shown_top_left_on_black():
    screen = screen_image(**image(200, 100, BLUE))
    assert screen.shape == (SCREEN_HEIGHT, SCREEN_WIDTH, 3)
    assert tuple(screen[0, 0]) == BLUE and tuple(screen[99, 199]) == BLUE
    assert not screen[100:].any() and not screen[:, 200:].any()


@pytest.mark.parametrize('encoding', ['rgb8', 'mono8', 'bgra8'])
def test_other_cv_bridge_encodings_are_shown_as_bgr(encoding):
    screen = screen_image(**image(10, 10, BLUE, encoding))
    expected = (255, 255, 255) if encoding == 'mono8' else BLUE
    assert tuple(screen[5, 5]) == expected


@pytest.mark.parametrize('change,fragment', [
    (dict(width=1280, height=720), '1280×720 (width × height): the head display shows images from 1×1 up to 1024×600'),
    (dict(encoding='32FC1'), "encoding '32FC1'"),
    (dict(step=5), 'step 5: a 10-pixel row of bgr8 takes 30 bytes'),
    (dict(data=b'\0' * 20), 'data has 20 bytes'),
])
def test_images_the_screen_cannot_show_are_refused_saying_why(change, fragment):
    msg = image(10, 10, BLUE)
    msg.update(change)
    if 'width' in change:
        msg.update(step=3 * msg['width'], data=b'\0' * (3 * msg['width'] * msg['height']))
    with pytest.raises(ValueError) as exc:
        screen_image(**msg)
    assert fragment in str(exc.value)


# --- seen by a camera -----------------------------------------------------------------------------
@pytest.fixture(scope='module')
def scene():
    with open(default_urdf_path()) as f:
        return Scene(f.read())


# The arm at neutral, the head turned to the robot's right: nothing between it and a viewer.
POSITIONS = dict(zip(ARM_JOINTS, NEUTRAL), head_pan=-1.5)


def facing_the_screen(scene, distance):
    """A camera `distance` m in front of the head's screen, looking at its centre (x to the
    viewer's right, y down)."""
    screen = scene.link_poses(POSITIONS)['screen']
    view = np.eye(4)
    view[:3, :3] = [[1, 0, 0], [0, -1, 0], [0, 0, -1]]
    view[2, 3] = distance
    return screen @ view


def test_a_camera_facing_the_head_sees_the_image_on_its_screen(scene):
    positions = POSITIONS
    left_red = np.zeros((SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)
    left_red[:, :SCREEN_WIDTH // 2] = RED
    left_red[:, SCREEN_WIDTH // 2:] = BLUE
    cam = Camera(160, 120, math.radians(40))
    pose = facing_the_screen(scene, 0.6)
    rgb, _ = render(scene, positions, pose, cam, {'screen': screen_linear_rgb(left_red)})
    left, right = rgb[60, 70], rgb[60, 90]          # either side of the screen's centre
    assert left[0] > 0.9 and left[2] < 0.05         # red, as sent (the screen is self-lit)
    assert right[2] > 0.9 and right[0] < 0.05       # blue
    # Without a display the head's red shell is all there is to see there.
    plain, _ = render(scene, positions, pose, cam)
    assert plain[60, 90][2] < 0.5 * plain[60, 90][0]


def test_the_screen_is_not_seen_from_behind(scene):
    positions = POSITIONS
    white = screen_linear_rgb(np.full((SCREEN_HEIGHT, SCREEN_WIDTH, 3), 255, np.uint8))
    flip = np.diag([-1.0, 1.0, -1.0, 1.0])          # turned about y: looking at the back
    behind = facing_the_screen(scene, -0.6) @ flip
    cam = Camera(160, 120, math.radians(40))
    with_screen, _ = render(scene, positions, behind, cam, {'screen': white})
    without, _ = render(scene, positions, behind, cam)
    assert np.allclose(with_screen, without)


# --- through ROS ------------------------------------------------------------------------------
def test_head_display_is_kept_and_republished_for_a_viewer(robot):
    import rospy
    from sensor_msgs.msg import Image
    from rosharness import latest, wait_for

    with latest('/intera_rt/head_display', Image) as view:
        boot = view.wait(10.0)
        assert (boot.width, boot.height, boot.encoding) == (SCREEN_WIDTH, SCREEN_HEIGHT, 'bgr8')
        assert not any(boot.data)                                  # black at boot

        # head_display_image.py: a latched bgr8 image, then the client exits.
        pub = rospy.Publisher('/robot/head_display', Image, queue_size=10, latch=True)
        pub.publish(Image(**image(300, 200, BLUE)))
        shown = view.wait(10.0, lambda m: any(m.data), 'the image on /intera_rt/head_display')
        screen = np.frombuffer(shown.data, np.uint8).reshape(SCREEN_HEIGHT, SCREEN_WIDTH, 3)
        assert tuple(screen[199, 299]) == BLUE and not screen[200:].any()
        pub.unregister()

        # Too large: refused with a clear error; the screen keeps the image.
        n = view.count
        bad = rospy.Publisher('/robot/head_display', Image, queue_size=10, latch=True)
        bad.publish(Image(**image(1280, 720, RED)))
        wait_for(lambda: 'head_display: image refused: 1280×720' in open(robot.log_path).read(),
                 10.0, 'the refusal in the log')
        assert view.count == n
        with latest('/intera_rt/head_display', Image) as late:     # a viewer started later
            assert late.wait(5.0).data == shown.data
