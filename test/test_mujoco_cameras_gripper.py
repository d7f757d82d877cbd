"""The gripper in MuJoCo's camera images (`--backend mujoco --gripper`, issue 21 item 1):
MuJoCo's cameras follow the robot's description as the software renderer's do. Through ROS:
the hand camera streaming at neutral, the gripper taken off the model (an empty fragment for
right_gripper_base, as send_urdf_fragment.py sends it) leaves the image where the gripper
was — the pixels the software renderer's gripper covers (test_gripper_model's hand camera
test) — and nowhere else; rebooted, the gripper describes itself again and the image shows
it as before. The head camera sees the fingers close and open as the gripper's position_m
commands them (where the gripper reports them). Without ROS: the fingers stand in the
image at the separation given; a new description is drawn once its cell is rebuilt, the
frames meanwhile coming from the current one."""
import numpy as np

from clients import Frames, cams, pixels, stream  # noqa: F401 - fixtures
from contract import CAMERA_NS, NEUTRAL
from rosharness import wait_for
from test_gripper_model import (EDGE, LEVELS, TIP, fingers_close_and_open, grown, hand_image,  # noqa: F401
                                ros, send_fragment, software)  # (ros: a fixture)

from intera_rt.model import RobotModel
from intera_rt.robot import ARM_JOINTS

SAWYER_ARGS = ['--gripper', '--backend', 'mujoco', '--sim-time', '--speed', '1']
TIMEOUT = 20.0                # s: a rebuilt cell (a second or two under load) and its frames


def with_gripper():
    """The robot's URDF with the electric gripper grafted as the robot grafts it."""
    from intera_rt.model.urdf_fragments import with_electric_gripper
    return with_electric_gripper(RobotModel.from_file()).urdf_xml


def test_the_hand_camera_images_follow_the_gripper_on_and_off(ros, cams):
    """Taken off, the gripper leaves the hand camera's image where the software renderer
    draws it (and nothing else changes); rebooted, it is back as it was."""
    import rospy
    from io_client import reboot_gripper
    ros['arm'].reset_pose(NEUTRAL)
    where = np.abs(hand_image(rospy.get_param('/robot_description'))
                   - hand_image(RobotModel.from_file().urdf_xml)) > LEVELS
    assert where.mean() > 0.002, 'the gripper is not in the hand camera\'s view'
    near = grown(where, EDGE)
    hand = cams['right_hand_camera']
    frames = Frames(CAMERA_NS + 'right_hand_camera/image_rect')

    def image():
        return pixels(frames.wait(len(frames.frames) + 1, 5.0, 'a new frame'))[..., 0].astype(int)

    def gripper_changed(a, b):
        """(share of the gripper's pixels changed, share of the others changed)."""
        changed = np.abs(a - b) > LEVELS
        return changed[where].mean(), changed[~near].mean()

    def frame_where(test, what):
        return wait_for(lambda: (lambda img: (img,) if test(img) else None)(image()), TIMEOUT, what)[0]

    try:
        stream(hand, True)
        frames.wait(2, TIMEOUT, 'hand camera frames')
        on = frame_where(lambda img: np.abs(img - image()).max() == 0, 'a still image')
        send_fragment(ros, '', 'right_gripper_base', link='right_hand')
        wait_for(lambda: TIP not in rospy.get_param('/robot_description'), 10.0, 'the gripper off')
        off = frame_where(lambda img: gripper_changed(on, img)[0] > 0.5, 'the gripper gone from the image')
        inside, outside = gripper_changed(on, off)
        assert inside > 0.8 and outside < 1e-3, (inside, outside)
        reboot_gripper()
        wait_for(lambda: TIP in rospy.get_param('/robot_description'), 10.0, 'the gripper back')
        back = frame_where(lambda img: gripper_changed(off, img)[0] > 0.5, 'the gripper back in the image')
        inside, outside = gripper_changed(on, back)
        assert inside < 0.05 and outside < 1e-3, (inside, outside)
    finally:
        frames.close()
        stream(hand, False)


def test_the_head_camera_sees_the_fingers_close_and_open(ros, cams):
    fingers_close_and_open(ros, cams, TIMEOUT)


def test_the_fingers_stand_at_the_given_separation():
    """Offline: MuJoCo's head camera image with the gripper's fingers open by a separation
    changes from the closed one exactly where the software renderer's fingers, at ±half of
    it on their joints, do."""
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import to_mono8
    from intera_rt.ros.io.mujoco_cameras import MujocoCameras
    urdf = with_gripper()
    positions = dict(zip(ARM_JOINTS, NEUTRAL))
    separation = 0.04
    opened = dict(positions, right_gripper_l_finger_joint=separation / 2,
                  right_gripper_r_finger_joint=-separation / 2)
    mj = MujocoCameras(urdf, CAMERAS, render_scale=0.5)
    try:
        def mujoco(s):
            return to_mono8(mj.render('head_camera', positions, separation=s), 1.0).astype(int)
        closed = mujoco(0.0)
        assert np.array_equal(mujoco(None), closed)
        moved = np.abs(mujoco(separation) - closed) > LEVELS
    finally:
        mj.close()
    expected = np.abs(software(urdf, 'head_camera', opened) - software(urdf, 'head_camera', positions)) > LEVELS
    assert expected.sum() > 40, expected.sum()             # the fingers in the head camera's view
    assert (moved & expected).sum() > 0.8 * expected.sum(), (moved.sum(), expected.sum())
    assert (moved & ~grown(expected, 1)).sum() < 0.1 * expected.sum()


def test_a_new_description_is_drawn_once_rebuilt_and_frames_keep_coming_meanwhile():
    """Offline: set_description with the gripper grafted rebuilds in the background; frames
    rendered meanwhile are the bare arm's, and after the swap the hand camera's image changes
    where the software renderer's gripper is (and back when the gripper is taken off)."""
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import to_mono8
    from intera_rt.ros.io.mujoco_cameras import MujocoCameras
    bare, urdf = RobotModel.from_file().urdf_xml, with_gripper()
    positions = dict(zip(ARM_JOINTS, NEUTRAL))
    where = (np.abs(software(urdf, 'right_hand_camera', positions)
                    - software(bare, 'right_hand_camera', positions)) > LEVELS)
    assert where.sum() > 100, where.sum()
    mj = MujocoCameras(bare, CAMERAS, render_scale=0.5)
    try:
        def image():
            return to_mono8(mj.render('right_hand_camera', positions), 1.0).astype(int)
        before = image()
        generation = mj.update()
        mj.set_description(urdf)
        assert np.array_equal(image(), before)           # the current cell, while it builds
        assert mj.wait_rebuilt(30.0)
        assert mj.update() == generation + 1 and mj.build_error is None and mj.build_time > 0
        changed = np.abs(image() - before) > LEVELS
        assert (changed & where).sum() > 0.8 * where.sum()
        assert (changed & ~grown(where, 1)).sum() < 0.1 * where.sum()
        mj.set_description(bare)
        assert mj.wait_rebuilt(30.0)
        assert np.array_equal(image(), before)
    finally:
        mj.close()
