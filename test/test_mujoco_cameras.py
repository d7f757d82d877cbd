"""The internal cameras on the MuJoCo backend (scripts/sawyer --backend mujoco): the io node
renders the head camera's images with MuJoCo offscreen (headless EGL), and they show the
arm where the robot has it and the sim obstacles placed (the spawned models:
test_mujoco_world_cameras)."""
import time

import numpy as np
import pytest

from rosharness import wait_for
from clients import Frames, add_box, cams, pixels, red_fraction, sim, stream, teleport  # noqa: F401 - fixtures
from contract import CAMERA_NS as NS

from intera_rt.robot import NEUTRAL

pytestmark = pytest.mark.sawyer_args(['--backend', 'mujoco'])

ARM_UP = (0.0, -3.0, 0.0, 2.18, 0.0, 0.57, 3.32)     # the shoulder raised: the arm above the view


@pytest.fixture(scope='module')
def io_log(robot):
    """Every /rosout line of the io node."""
    import rospy
    from rosgraph_msgs.msg import Log
    lines = []
    sub = rospy.Subscriber('/rosout', Log, lambda m: lines.append(m.msg) if m.name == '/io' else None,
                           queue_size=1000)
    yield lines
    sub.unregister()


def blue_fraction(msg):
    """Share of pixels of the sim obstacles' blue in a bgr8 image."""
    img = pixels(msg).astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return float(np.mean((b > 80) & (b > 1.5 * g) & (b > 2 * r)))


def settled(frames, what, test, timeout=15.0):
    """The first frame after now that passes `test` (frames stamped after the change)."""
    deadline = time.monotonic() + timeout
    n = len(frames.frames)
    while True:
        if len(frames.frames) > n and test(frames.frames[-1][1]):
            return frames.frames[-1][1]
        assert time.monotonic() < deadline, '%s: not seen in %g s' % (what, timeout)
        time.sleep(0.05)


def test_head_camera_frames_come_from_mujoco_and_show_the_arm_and_obstacles(cams, sim, io_log):
    head = cams['head_camera']
    frames = Frames(NS + 'head_camera/image_rect_color')
    try:
        teleport(sim)
        stream(head, True)
        wait_for(lambda: any('head_camera streams, rendered by' in line for line in list(io_log)),
                 10.0, 'the io node naming its renderer')
        line = next(line for line in io_log if 'head_camera streams, rendered by' in line)
        assert line.endswith('rendered by MuJoCo'), line
        frames.wait(3, 10.0, 'head camera frames')
        start, t0 = len(frames.frames), time.monotonic()
        msg = frames.wait(start + 10, 10.0, '10 more frames')
        rate = 10 / (time.monotonic() - t0)
        assert 5.0 < rate < 13.0, rate                          # 10 Hz configured
        assert (msg.encoding, msg.width, msg.height) == ('bgr8', 640, 400)
        assert pixels(msg).std() > 10                           # not a blank frame
        at_neutral = red_fraction(msg)
        assert at_neutral > 0.12, at_neutral                    # the arm in view
        # the shoulder raised: the arm leaves the view, then comes back
        teleport(sim, ARM_UP)
        up = settled(frames, 'the arm out of view', lambda m: red_fraction(m) < at_neutral - 0.05)
        assert np.abs(pixels(up).astype(int) - pixels(msg).astype(int)).mean() > 5
        teleport(sim)
        settled(frames, 'the arm back in view', lambda m: abs(red_fraction(m) - at_neutral) < 0.01)
        # a sim obstacle in view shows
        assert blue_fraction(frames.frames[-1][1]) < 0.001
        add_box(sim, 'crate', (1.0, 0.5, 0.0), (0.4, 0.4, 0.4))
        settled(frames, 'the box in view', lambda m: blue_fraction(m) > 0.01)
        assert sim['remove_obstacle']('crate').success
        settled(frames, 'the box gone', lambda m: blue_fraction(m) < 0.001)
        stat = wait_for(lambda: [line for line in list(io_log) if 'frames rendered by' in line],
                        10.0, 'the render time in the log')[0]
        assert 'frames rendered by MuJoCo' in stat, stat
        print('head camera on MuJoCo: %.1f frames/s; %s' % (rate, stat))
    finally:
        frames.close()
        stream(head, False)
        teleport(sim, NEUTRAL)
