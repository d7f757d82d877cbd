"""The electric gripper in the robot's model (`scripts/sawyer --gripper`), through ROS as an
SDK script sees it: the gripper device puts its URDF fragment on /robot/urdf, so
right_gripper_tip is in /robot_description, /tf, tip_states and the IK/FK services (IK of a
reachable tip pose solves and its FK lands within 1 mm); the tool's mass is in the published
gravity torques, and the arm carrying it holds still (< 1 mm at the hand) in position mode,
torque mode (zero torque + gravity compensation) and zero-G, with no false collision. A 2 kg
tool sent on /robot/urdf is carried too: the gravity terms grow by its weight and the arm
still holds. Issue 21 item 1.

The robot runs on sim time at 1x: durations are robot time."""
import math

import numpy as np
import pytest
import PyKDL as kdl

from clients import Arm, Series, cams, collisions, now, realtime_state  # noqa: F401 - fixtures
from contract import ARM, NEUTRAL
from rosharness import wait_connected, wait_for
from intera_rt.model import RobotModel

SAWYER_ARGS = ['--gripper', '--sim-time', '--speed', '1']
LEVELS = 20                   # a pixel changed: by more than this many grey levels
EDGE = 3                      # px: two renderers' silhouettes' edges may differ by this
NS = '/ExternalTools/right/PositionKinematicsNode/'
TIP = 'right_gripper_tip'
HAND_TO_TIP = kdl.Frame(kdl.Rotation.RotZ(math.pi / 2), kdl.Vector(0, 0, 0.06 + 0.082))
HOLD = 3.0                    # s of robot time each mode must hold still
DRIFT = 1e-3                  # m at the hand
HEAVY_JOINT = 'payload_joint'
HEAVY = ('<robot name="payload"><link name="payload">'
         '<inertial><origin xyz="0 0 0.05"/><mass value="2.0"/>'
         '<inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.002"/></inertial>'
         '</link><joint name="payload_joint" type="fixed"><origin xyz="0 0 0"/>'
         '<parent link="right_gripper_tip"/><child link="payload"/></joint></robot>')


def frame_of(pose):
    p, o = pose.position, pose.orientation
    return kdl.Frame(kdl.Rotation.Quaternion(o.x, o.y, o.z, o.w), kdl.Vector(p.x, p.y, p.z))


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_core_msgs.msg import EndpointState, URDFConfiguration
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionIK
    rospy.wait_for_service(NS + 'IKService', 10.0)
    rospy.wait_for_service(NS + 'FKService', 10.0)
    # The gripper's fragment, put in by the device itself: nobody here sends it.
    wait_for(lambda: TIP in rospy.get_param('/robot_description'), 20.0,
             'the gripper in /robot_description')
    pub = rospy.Publisher('/robot/urdf', URDFConfiguration, queue_size=10)
    wait_connected(pub, '/realtime_loop')
    endpoint = Series('/robot/limb/right/endpoint_state', EndpointState)
    endpoint.last()
    arm = Arm()
    out = {'ik': rospy.ServiceProxy(NS + 'IKService', SolvePositionIK),
           'fk': rospy.ServiceProxy(NS + 'FKService', SolvePositionFK),
           'pub': pub, 'endpoint': endpoint, 'arm': arm}
    # (the IK/FK services reload the model when they hear of it, after the parameter is set)
    wait_for(lambda: fk(out, NEUTRAL)[0], 10.0, 'FK of right_gripper_tip valid')
    yield out
    endpoint.unregister()


def fk(ros, angles, tip=TIP):
    from intera_core_msgs.srv import SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    resp = ros['fk'](SolvePositionFKRequest(
        configuration=[JointState(name=ARM, position=list(angles))], tip_names=[tip]))
    return resp.isValid[0], resp.pose_stamp[0]


def gravity_only(arm):
    """The gravity torques the robot reports (SEAJointState.gravity_only) and the pose."""
    msg = arm.sea.last()
    return np.array(msg.gravity_only), np.array(msg.actual_position)


def hand_drift(ros, seconds, each_10ms=None):
    """Max distance (m) of right_hand from where it was, over `seconds` of robot time, calling
    each_10ms() at 100 Hz meanwhile (a streaming client)."""
    import rospy
    t0 = now()
    rate = rospy.Rate(100)
    while now() < t0 + seconds:
        if each_10ms is not None:
            each_10ms()
        rate.sleep()
    ros['endpoint'].wait_until(t0 + seconds)
    points = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z]
                       for m in ros['endpoint'].between(t0, t0 + seconds)])
    assert len(points) > 50 * seconds
    return float(np.linalg.norm(points - points[0], axis=1).max())


def send_fragment(ros, urdf, joint, link='right_gripper_tip'):
    """send_urdf_fragment.py's burst: one message, republished at 5 Hz for 1 s."""
    import rospy
    from intera_core_msgs.msg import URDFConfiguration
    msg = URDFConfiguration(time=rospy.Time.now(), link=link, joint=joint, urdf=urdf)
    for _ in range(5):
        ros['pub'].publish(msg)
        rospy.sleep(0.2)        # the script's 5 Hz cadence; callers wait for the effect


def test_right_gripper_tip_is_in_tf_fk_ik_and_tip_states(ros):
    import rospy
    import tf2_ros
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.msg import EndpointStates
    from intera_core_msgs.srv import SolvePositionIKRequest
    # /tf: base → right_gripper_tip, through the fragment's joints.
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    wait_for(lambda: buf.can_transform('right_hand', TIP, rospy.Time(0)), 10.0, 'right_gripper_tip on /tf')
    t = buf.lookup_transform('right_hand', TIP, rospy.Time(0)).transform
    assert t.translation.z == pytest.approx(0.142, abs=1e-6)
    wait_for(lambda: TIP in rospy.wait_for_message('/robot/limb/right/tip_states', EndpointStates, 5.0).names,
             10.0, 'right_gripper_tip in tip_states')
    # FK agrees with the fragment's geometry.
    q = [0.3, -0.6, 0.1, 1.4, -0.2, 0.8, 0.5]
    ok_hand, hand = fk(ros, q, 'right_hand')
    ok, tip = fk(ros, q)
    assert ok and ok_hand
    target = frame_of(tip.pose)
    assert (target.p - (frame_of(hand.pose) * HAND_TO_TIP).p).Norm() < 1e-6
    # IK of that reachable tip pose, seeded elsewhere, solves; FK of the answer lands on it.
    req = SolvePositionIKRequest(pose_stamp=[PoseStamped(header=tip.header, pose=tip.pose)],
                                 tip_names=[TIP], seed_mode=0)
    resp = ros['ik'](req)
    assert resp.result_type[0] > 0, resp.result_type
    ok, back = fk(ros, resp.joints[0].position)
    assert ok
    got = frame_of(back.pose)
    assert (got.p - target.p).Norm() < 1e-3
    assert kdl.diff(got.M, target.M).Norm() < 1e-3


def test_the_reported_gravity_carries_the_gripper(ros):
    """gravity_only is the grafted model's (fingers at rest), the gripper's weight more than
    the bare arm's."""
    import rospy
    carried = RobotModel(rospy.get_param('/robot_description')).arm_dynamics
    bare = RobotModel.from_file().arm_dynamics
    g, q = gravity_only(ros['arm'])
    assert g == pytest.approx(carried.gravity(q), abs=1e-6)
    assert abs(g[1] - bare.gravity(q)[1]) > 1.0


@pytest.mark.parametrize('mode', ['position', 'torque', 'zero_g'])
def test_the_arm_with_the_gripper_holds_still(ros, realtime_state, mode):
    arm = ros['arm']
    arm.set_timeout(1.0)                   # a stalled client on a loaded machine: no timeout
    arm.reset_pose(NEUTRAL)
    t0 = now()
    try:
        if mode == 'position':
            drift = hand_drift(ros, HOLD, lambda: arm.set_positions(dict(zip(ARM, NEUTRAL))))
        elif mode == 'torque':
            drift = hand_drift(ros, HOLD, lambda: arm.set_torques(dict(zip(ARM, [0.0] * 7))))
        else:
            press('right_button_circle', 'press')
            realtime_state.wait(lambda m: m.zero_g and m.controller == 'zero_g', 10.0, 'zero-G')
            drift = hand_drift(ros, HOLD)
    finally:
        if mode == 'zero_g':
            press('right_button_circle', 'release')
        arm.set_timeout(0.2)
    assert drift < DRIFT, '%s: the hand moved %.2f mm' % (mode, drift * 1e3)
    assert not collisions(realtime_state, t0), 'a collision was detected while holding still'


def press(name, action):
    import rospy
    from intera_rt_msgs.srv import PressButton
    rospy.wait_for_service('/intera_rt/sim/button', 10.0)
    resp = rospy.ServiceProxy('/intera_rt/sim/button', PressButton)(name, action, 0.0)
    assert resp.success, resp.message


def test_a_2kg_tool_on_robot_urdf_is_carried(ros, realtime_state):
    """A fragment with a 2 kg <inertial> below the gripper's tip: the gravity torques grow by
    its weight (the effect is real: right_j1 carries it), and the arm holds still in torque
    mode without a false collision."""
    arm = ros['arm']
    arm.set_timeout(1.0)
    arm.reset_pose(NEUTRAL)
    before, q = gravity_only(arm)
    try:
        send_fragment(ros, HEAVY, HEAVY_JOINT)
        arm.sea.wait(lambda m: abs(m.gravity_only[1] - before[1]) > 5.0, 10.0,
                     'the 2 kg tool in the gravity torques')
        after, q2 = gravity_only(arm)
        assert np.abs(np.array(q2) - q).max() < 1e-3
        # The grafted model's (the tool 0.37 m out from right_j1 at neutral: ~7 N·m more,
        # which an arm that did not model it would sag under).
        import rospy
        carried = RobotModel(rospy.get_param('/robot_description')).arm_dynamics
        assert after == pytest.approx(carried.gravity(q2), abs=1e-6)
        assert abs(after[1] - before[1]) > 2.0 * 9.81 * 0.3
        t0 = now()
        drift = hand_drift(ros, HOLD, lambda: arm.set_torques(dict(zip(ARM, [0.0] * 7))))
        assert drift < DRIFT, 'the hand moved %.2f mm' % (drift * 1e3)
        assert not collisions(realtime_state, t0)
    finally:
        send_fragment(ros, '', HEAVY_JOINT)
        arm.set_timeout(0.2)
    arm.sea.wait(lambda m: abs(m.gravity_only[1] - before[1]) < 1e-3, 10.0, 'the tool taken off')


def hand_image(xml, brightness=1.0):
    """The hand camera's image rendered here from description `xml`, at the joint angles the
    robot reports now, as the robot renders it (half resolution, scaled up)."""
    from sensor_msgs.msg import JointState
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import Camera, Scene, render, resize_nearest, to_mono8
    from rosharness import wait_for_message
    js = wait_for_message('/robot/joint_states', JointState, 5.0)
    positions = dict(zip(js.name, js.position))
    spec = CAMERAS['right_hand_camera']
    scene = Scene(xml)
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    rgb, _ = render(scene, positions, scene.link_poses(positions)[spec['frame']], cam)
    return resize_nearest(to_mono8(rgb, brightness), spec['height'], spec['width']).astype(int)


def grown(mask, px):
    """`mask` dilated by `px` pixels (a square neighbourhood)."""
    out = mask.copy()
    for dy in range(-px, px + 1):
        for dx in range(-px, px + 1):
            out |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return out


def software(xml, camera, positions):
    """The software renderer's grey image of `camera` (half resolution, as MuJoCo's)."""
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import Camera, Scene, render, to_mono8
    spec = CAMERAS[camera]
    scene = Scene(xml)
    cam = Camera(spec['width'] // 2, spec['height'] // 2, spec['hfov'], spec['near'])
    rgb, _ = render(scene, positions, scene.link_poses(positions)[spec['frame']], cam)
    return to_mono8(rgb, 1.0).astype(int)


def head_image(xml, positions):
    """The head camera's grey image by the software renderer, scaled up as the robot's."""
    from intera_rt.io.camera import CAMERAS
    from intera_rt.io.render import resize_nearest
    spec = CAMERAS['head_camera']
    return resize_nearest(software(xml, 'head_camera', positions), spec['height'], spec['width'])


def fingers_close_and_open(ros, cams, timeout):
    """The fingers closed by the gripper's position_m change the head camera's image where
    the software renderer's fingers move (at ±half the separation on their joints), and
    opened again the image is the open one again (`timeout`: s for each image wanted)."""
    import rospy
    from clients import Frames, pixels, stream
    from contract import CAMERA_NS
    from io_client import IODevice
    from sensor_msgs.msg import JointState
    from rosharness import wait_for_message
    from intera_rt.io.gripper import MAX_POSITION
    ros['arm'].reset_pose(NEUTRAL)
    js = wait_for_message('/robot/joint_states', JointState, 5.0)
    positions = dict(zip(js.name, js.position))
    opened = dict(positions, right_gripper_l_finger_joint=MAX_POSITION / 2,
                  right_gripper_r_finger_joint=-MAX_POSITION / 2)
    xml = rospy.get_param('/robot_description')
    fingers = np.abs(head_image(xml, opened) - head_image(xml, positions)) > LEVELS
    assert fingers.sum() > 100, fingers.sum()
    near = grown(fingers, EDGE)
    head = cams['head_camera']
    frames = Frames(CAMERA_NS + 'head_camera/image_rect_color')
    gripper = IODevice('end_effector', 'right_gripper')

    def image():
        return pixels(frames.wait(len(frames.frames) + 1, 5.0, 'a new frame')).astype(int)

    def fingers_changed(a, b):
        changed = np.abs(a - b).max(2) > LEVELS
        return changed[fingers].mean(), changed[~near].mean()

    def frame_where(test, what):
        return wait_for(lambda: (lambda img: (img,) if test(img) else None)(image()), timeout, what)[0]

    def move(position):
        assert gripper.set('position_m', position) == ''
        gripper.wait(lambda: abs(gripper.value('position_response_m') - position) < 1e-3
                     and not gripper.value('is_moving'), 10.0, 'the fingers at %g m' % position)

    try:
        if not gripper.value('is_calibrated'):          # (rebooted by a test before)
            assert gripper.set('calibrate', True) == ''
            gripper.wait(lambda: gripper.value('is_calibrated') is True, 5.0, 'is_calibrated')
        assert gripper.set('speed_mps', 0.15) == ''
        move(MAX_POSITION)
        stream(head, True)
        frames.wait(2, timeout, 'head camera frames')
        open_ = frame_where(lambda img: np.abs(img - image()).max() == 0, 'a still image')
        # (the frames in flight when a move ends may show the fingers on their way)
        move(0.0)
        closed = frame_where(lambda img: (lambda i, o: i > 0.8 and o < 1e-3)(*fingers_changed(open_, img)),
                             'the fingers closed in the image (> 80 % of their pixels changed, '
                             '< 0.1 % elsewhere)')
        move(MAX_POSITION)
        frame_where(lambda img: (lambda i, o: i < 0.05 and o < 1e-3)(*fingers_changed(open_, img))
                    and fingers_changed(closed, img)[0] > 0.8, 'the open fingers\' image again')
    finally:
        gripper.close()
        frames.close()
        stream(head, False)


def test_the_head_camera_sees_the_fingers_close_and_open(ros, cams):
    """The software renderer draws the fingers where the gripper reports them."""
    fingers_close_and_open(ros, cams, 10.0)


def test_the_hand_camera_sees_the_gripper(ros, cams):
    """Where the gripper changes the hand camera's view (its fingertips at the image's edge),
    the robot's image shows the gripper."""
    import rospy
    from clients import Frames, pixels, stream
    from contract import CAMERA_NS
    ros['arm'].reset_pose(NEUTRAL)
    hand = cams['right_hand_camera']
    frames = Frames(CAMERA_NS + 'right_hand_camera/image_rect')
    try:
        stream(hand, True)
        msg = frames.wait(2, 5.0, 'hand camera frames')
        img = pixels(msg)[..., 0].astype(int)
    finally:
        frames.close()
        stream(hand, False)
    with_gripper = hand_image(rospy.get_param('/robot_description'))
    bare = hand_image(RobotModel.from_file().urdf_xml)
    where = np.abs(with_gripper - bare) > 20
    assert where.mean() > 0.002, 'the gripper is not in the hand camera\'s view'
    assert np.abs(img - with_gripper)[where].mean() < 0.25 * np.abs(img - bare)[where].mean()


def test_a_rebooted_gripper_puts_itself_back_in_the_model(ros):
    """Taken off the model (an empty fragment for right_gripper_base), the gripper comes back
    with its weight when it is rebooted, as a real one describes itself again."""
    import rospy
    from io_client import reboot_gripper
    bare = RobotModel.from_file().arm_dynamics
    arm = ros['arm']

    def carries_gripper(m):
        return abs(m.gravity_only[1] - bare.gravity(np.array(m.actual_position))[1]) > 1.0
    send_fragment(ros, '', 'right_gripper_base', link='right_hand')
    wait_for(lambda: TIP not in rospy.get_param('/robot_description'), 10.0, 'the gripper taken off')
    arm.sea.wait(lambda m: not carries_gripper(m), 10.0, 'the bare arm\'s gravity torques')
    # (the IK/FK services reload the model when they hear of it, after the parameter is set)
    wait_for(lambda: not fk(ros, NEUTRAL)[0], 10.0, 'FK of right_gripper_tip invalid')
    reboot_gripper()
    wait_for(lambda: TIP in rospy.get_param('/robot_description'), 10.0, 'the gripper back')
    arm.sea.wait(carries_gripper, 10.0, 'the gripper\'s weight back in the gravity torques')
    wait_for(lambda: fk(ros, NEUTRAL)[0], 10.0, 'FK of right_gripper_tip valid again')
