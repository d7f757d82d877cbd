"""MuJoCo's viewer (`scripts/sawyer --backend mujoco --viewer`) on a virtual X display
(Xvfb, Mesa's software OpenGL): the window opens with the robot drawn, it follows the arm
(the shoulder raised moves the red arm's pixels; back at neutral they coincide again), and
the robot runs with it (enabled, joint states flowing). The viewer's panels have red headers
too, which the masks count (constant): raised, ~0.77 of the red overlaps neutral's."""
import os
import tempfile

import numpy as np
import pytest
from PIL import Image

from rosharness import wait_for
from clients import Series, display, overlap, red, sim, stamp, teleport  # noqa: F401 - display (autouse), sim: fixtures

from intera_rt.robot import NEUTRAL

SAWYER_ARGS = ['--backend', 'mujoco', '--viewer']

ARM_UP = (0.0, -3.0, 0.0, 2.18, 0.0, 0.57, 3.32)     # the shoulder raised
VIEWER_TIMEOUT = 60.0        # s: the first frames under software GL on a loaded machine
MIN_ARM_PIXELS = 2000


def shot(display):
    return np.asarray(display.screenshot(), dtype=np.int32)


def settled_red(display, what, predicate=lambda mask: True, timeout=20.0):
    """The red mask of the first screenshot that equals the one before (the viewer has drawn
    what it has) and passes `predicate`."""
    last, found, images = [], [], []

    def ready():
        image = shot(display)
        mask = red(image)
        images[:] = [image]
        same = bool(last) and np.array_equal(last[0], mask)
        last[:] = [mask]
        if same and np.count_nonzero(mask) >= MIN_ARM_PIXELS and predicate(mask):
            found.append(mask)
        return bool(found)
    try:
        wait_for(ready, timeout, what, interval=0.3)
    except AssertionError as exc:
        path = os.path.join(tempfile.mkdtemp(prefix='test_mujoco_viewer_'), 'last.png')
        if images:
            Image.fromarray(images[0].astype(np.uint8)).save(path)
        raise AssertionError('%s; the last screenshot (%s): %d red px' % (
            exc, path, np.count_nonzero(last[0]) if last else -1)) from None
    return found[0]


def test_the_viewer_shows_the_robot_and_follows_the_arm(robot, display, sim):
    from intera_core_msgs.msg import RobotAssemblyState
    from sensor_msgs.msg import JointState
    teleport(sim, NEUTRAL)
    at_neutral = settled_red(display, 'the viewer showing the red arm (>= %d px)' % MIN_ARM_PIXELS,
                             timeout=VIEWER_TIMEOUT)
    teleport(sim, ARM_UP)
    up = settled_red(display, 'the arm raised in the viewer',
                     lambda mask: overlap(mask, at_neutral) < 0.85)
    teleport(sim, NEUTRAL)
    back = settled_red(display, 'the arm back at neutral in the viewer',
                       lambda mask: overlap(mask, at_neutral) > 0.95)
    print('red px: neutral %d, raised %d (overlap %.2f), back %d (overlap %.2f)' % (
        np.count_nonzero(at_neutral), np.count_nonzero(up), overlap(up, at_neutral),
        np.count_nonzero(back), overlap(back, at_neutral)))
    state = Series('/robot/state', RobotAssemblyState).last()
    assert state.enabled and not state.error
    joints = Series('/robot/joint_states', JointState)
    try:
        joints.wait_until(stamp(joints.last()) + 0.5)
    finally:
        joints.unregister()
