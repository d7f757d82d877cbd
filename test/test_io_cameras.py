"""The internal cameras through ROS, as the SDK's Cameras / camera_display.py use them:
the node config's camera list, streaming one camera at a time, exposure and gain with
'ready' statuses, and images that come at the camera's rate, stop when streaming stops and
show the robot from the camera's pose (the head camera sees the arm; panned away, much
less of it; the hand camera looking down sees none of the red arm links)."""
import json
import time

import numpy as np
import pytest

from clients import Frames, cams, pixels, red_fraction, stream  # noqa: F401 - cams: a fixture
from contract import CAMERA_NS as NS
from rosharness import latest

pytestmark = pytest.mark.sawyer_args([])


def test_node_config_lists_the_cameras(robot):
    from intera_core_msgs.msg import IONodeConfiguration
    with latest(NS + 'config', IONodeConfiguration) as rec:
        msg = rec.wait(5.0)
    names = [c['name'] for p in msg.plugins for c in json.loads(p.config)['params']['cameras']]
    assert sorted(names) == ['head_camera', 'right_hand_camera'] and msg.time.secs != 0


def test_signals_and_statuses(cams):
    head, hand = cams['head_camera'], cams['right_hand_camera']
    for dev, names in ((head, ['camera_streaming', 'set_exposure', 'set_gain']),
                       (hand, ['camera_streaming', 'set_exposure', 'set_gain', 'set_strobe'])):
        assert [s.name for s in dev.state.signals] == names
        assert all(s.status.tag == 'ready' for s in dev.state.signals)
        assert dev.value('camera_streaming') is False
    assert head.type('set_exposure') == 'float' and head.type('set_gain') == 'int'


def test_head_camera_streams_at_its_rate_and_sees_the_arm(cams):
    import rospy
    from intera_core_msgs.msg import HeadPanCommand
    head = cams['head_camera']
    frames = Frames(NS + 'head_camera/image_rect_color')
    raw = Frames(NS + 'head_camera/image_raw')
    try:
        stream(head, True)
        frames.wait(3, 5.0, 'head camera frames')
        start = len(frames.frames)
        t0 = time.monotonic()
        frames.wait(start + 20, 5.0, '20 more frames')
        rate = 20 / (time.monotonic() - t0)
        assert 7.0 < rate < 13.0, rate                          # 10 Hz configured
        msg = frames.frames[-1][1]
        assert (msg.encoding, msg.width, msg.height, msg.header.frame_id) == ('bgr8', 640, 400, 'head_camera')
        assert raw.wait(1, 2.0, 'image_raw').encoding == 'bgr8'
        at_neutral = red_fraction(msg)
        assert at_neutral > 0.2, at_neutral                      # the arm fills much of the view
        assert pixels(msg).std() > 10                            # not a blank frame
        # head panned to the robot's right: the camera looks away from the arm
        pub = rospy.Publisher('/robot/head/command_head_pan', HeadPanCommand, queue_size=1)
        deadline = time.monotonic() + 15.0
        while red_fraction(frames.frames[-1][1]) > at_neutral / 3:
            pub.publish(HeadPanCommand(target=-1.6, speed_ratio=1.0, pan_mode=HeadPanCommand.NO_MODE_CHANGE))
            assert time.monotonic() < deadline, 'the view did not follow the head (red %.3f)' % \
                red_fraction(frames.frames[-1][1])
            time.sleep(0.1)
        deadline = time.monotonic() + 15.0
        while red_fraction(frames.frames[-1][1]) < 0.2:
            pub.publish(HeadPanCommand(target=0.0, speed_ratio=1.0, pan_mode=HeadPanCommand.NO_MODE_CHANGE))
            assert time.monotonic() < deadline, 'the arm did not come back into view'
            time.sleep(0.1)
        pub.unregister()
    finally:
        frames.close()
        raw.close()


def test_one_camera_streams_at_a_time_and_frames_stop(cams):
    head, hand = cams['head_camera'], cams['right_hand_camera']
    if not head.value('camera_streaming'):
        stream(head, True)
    response = hand.set('camera_streaming', True)
    assert 'head_camera is streaming' in response and 'one internal camera' in response
    assert hand.value('camera_streaming') is False
    assert hand.entry('camera_streaming').status.tag == 'error'
    frames = Frames(NS + 'head_camera/image_rect_color')
    try:
        frames.wait(2, 5.0, 'head frames')
        stream(head, False)
        n = len(frames.frames)
        time.sleep(1.0)              # an observation window: 10 frames would come in it
        assert len(frames.frames) <= n + 1      # (one may have been in flight)
    finally:
        frames.close()


def expected_hand_image(brightness):
    """The hand camera's image rendered here, with the robot's model, at the joint angles
    the robot reports now (the arm stands still at neutral)."""
    from sensor_msgs.msg import JointState
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import Camera, Scene, render, resize_nearest, to_mono8
    from intera_rt.model import default_urdf_path
    from rosharness import wait_for_message
    js = wait_for_message('/robot/joint_states', JointState, 5.0)
    positions = dict(zip(js.name, js.position))
    spec = CAMERAS['right_hand_camera']
    scene = Scene(open(default_urdf_path()).read())
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    rgb, depth = render(scene, positions, scene.link_poses(positions)[spec['frame']], cam)
    return resize_nearest(to_mono8(rgb, brightness), spec['height'], spec['width'])


def test_hand_camera_shows_the_scene_from_its_pose(cams):
    hand = cams['right_hand_camera']
    frames = Frames(NS + 'right_hand_camera/image_rect')
    try:
        stream(hand, True)
        assert hand.entry('camera_streaming').status.tag == 'ready'
        msg = frames.wait(2, 5.0, 'hand camera frames')
        assert (msg.encoding, msg.width, msg.height, msg.header.frame_id) == \
            ('mono8', 752, 480, 'right_hand_camera_optical')
        img = pixels(msg)[..., 0].astype(int)
        assert img.std() > 10                                     # not a blank frame
        assert np.abs(img - expected_hand_image(1.0)).mean() < 3.0
        # exposure: brighter at 90 than at 10, the statuses 'ready'
        assert hand.set('set_exposure', 10.0) == ''
        assert hand.entry('set_exposure').status.tag == 'ready'
        n = len(frames.frames)
        dim = pixels(frames.wait(n + 2, 5.0, 'frames at exposure 10'))
        assert hand.set('set_exposure', 90.0) == ''
        n = len(frames.frames)
        bright = pixels(frames.wait(n + 2, 5.0, 'frames at exposure 90'))
        assert bright.mean() > dim.mean() + 30
        assert hand.set('set_strobe', True) == '' and hand.value('set_strobe') is True
    finally:
        frames.close()
        hand.set('set_exposure', 50.0)
        hand.set('set_strobe', False)
        stream(hand, False)


@pytest.mark.parametrize('camera, name, value, words', [
    ('head_camera', 'set_gain', 80, ['set_gain = 80 is outside [0, 79] or -1']),
    ('head_camera', 'set_exposure', 101.0, ['set_exposure = 101.0 is outside [0, 100] or -1']),
    ('right_hand_camera', 'set_exposure', -1.0, ['no automatic exposure']),
    ('right_hand_camera', 'set_gain', 256, ['[0, 255]']),
])
def test_bad_settings_get_clear_errors(cams, camera, name, value, words):
    dev = cams[camera]
    before = dev.value(name)
    response = dev.set(name, value)
    for word in words:
        assert word in response, response
    assert dev.value(name) == before
    assert dev.entry(name).status.tag == 'error' and words[0] in dev.entry(name).status.detail
    good = -1 if camera == 'head_camera' else (50.0 if name == 'set_exposure' else 0)
    assert dev.set(name, good) == '' and dev.entry(name).status.tag == 'ready'
