"""URDF fragments through ROS, sent the way the SDK's send_urdf_fragment.py sends them
(intera_core_msgs/URDFConfiguration on /robot/urdf, republished at 5 Hz with one `time`):
a gripper adds right_gripper_tip to /robot_description, /tf, the IK/FK services, tip_states
and the motion controller's endpoints, and an empty fragment takes it away; bad fragments
are refused with one ERROR line naming the problem and the robot keeps its model.
Contract §3.2 (tip_states), §3.7 (/robot/urdf), §5.3, §8."""
import math
import os

import pytest
import PyKDL as kdl

from clients import goal, waypoint
from contract import ARM
from rosharness import latest, wait_connected, wait_for
from robot_watch import TF_NODE
from intera_rt.model import default_urdf_path

pytestmark = pytest.mark.sawyer_args([])

GRIPPER = os.path.join(os.path.dirname(default_urdf_path()), 'fragments', 'electric_gripper.urdf')
NS = '/ExternalTools/right/PositionKinematicsNode/'
FK_CLIENT_ANGLES = [0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347, -0.496337]
# right_gripper_tip in right_hand, from the fragment: a quarter turn about z, 0.142 m out.
HAND_TO_TIP = kdl.Frame(kdl.Rotation.RotZ(math.pi / 2), kdl.Vector(0, 0, 0.06 + 0.082))
BURST = 1.0                      # s of 5 Hz republication (send_urdf_fragment.py -d)


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from intera_core_msgs.msg import EndpointStates, URDFConfiguration
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionIK
    pub = rospy.Publisher('/robot/urdf', URDFConfiguration, queue_size=10)
    wait_connected(pub, '/realtime_loop')
    rospy.wait_for_service(NS + 'IKService', 10.0)
    rospy.wait_for_service(NS + 'FKService', 10.0)
    tips = latest('/robot/limb/right/tip_states', EndpointStates)
    tips.wait(10)
    return {'pub': pub, 'tips': tips, 'base': rospy.get_param('/robot_description'),
            'ik': rospy.ServiceProxy(NS + 'IKService', SolvePositionIK),
            'fk': rospy.ServiceProxy(NS + 'FKService', SolvePositionFK)}


def send_fragment(ros, urdf, link='right_hand', joint='right_gripper_base', duration=BURST):
    """send_urdf_fragment.py: one message, `time` fixed, republished at 5 Hz."""
    import rospy
    from intera_core_msgs.msg import URDFConfiguration
    msg = URDFConfiguration(time=rospy.Time.now(), link=link, joint=joint, urdf=urdf)
    rate = rospy.Rate(5)
    end = rospy.get_time() + duration
    while rospy.get_time() < end:
        ros['pub'].publish(msg)
        rate.sleep()


def gripper():
    with open(GRIPPER) as f:
        return f.read()


def log_count(robot, text):
    return robot.log_path.read_text(errors='replace').count(text)


def frame_of(pose):
    p, o = pose.position, pose.orientation
    return kdl.Frame(kdl.Rotation.Quaternion(o.x, o.y, o.z, o.w), kdl.Vector(p.x, p.y, p.z))


def assert_same_frame(a, b, tol=1e-3):
    assert (a.p - b.p).Norm() < tol, (list(a.p), list(b.p))
    assert kdl.diff(a.M, b.M).Norm() < tol


def fk(ros, angles, tip):
    from intera_core_msgs.srv import SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    req = SolvePositionFKRequest(configuration=[JointState(name=ARM, position=list(angles))],
                                 tip_names=[tip])
    resp = ros['fk'](req)
    return resp.isValid[0], resp.pose_stamp[0]


def ik(ros, pose_stamped, tip):
    from intera_core_msgs.srv import SolvePositionIKRequest
    req = SolvePositionIKRequest(pose_stamp=[pose_stamped], tip_names=[tip], seed_mode=0)
    resp = ros['ik'](req)
    return resp.result_type[0], resp.joints[0]


def current_angles():
    import rospy
    from sensor_msgs.msg import JointState
    msg = rospy.wait_for_message('/robot/joint_states', JointState, 5.0)
    return [msg.position[msg.name.index(n)] for n in ARM]


def tip_names(ros):
    return list(ros['tips'].get().names)


def tip_frames(msg):
    return {n: frame_of(s.pose) for n, s in zip(msg.names, msg.states)}


def static_children():
    """Children on robot_state_publisher's latched /tf_static, as a new listener hears it."""
    import rospy
    from tf2_msgs.msg import TFMessage
    # Every message kept: /tf_static has a second latched publisher (the world service's
    # world -> base), whose message may come last.
    heard = []
    sub = rospy.Subscriber('/tf_static', TFMessage, heard.append, queue_size=10)
    try:
        wait_for(lambda: [m for m in heard if m._connection_header['callerid'] == TF_NODE], 10.0,
                 "robot_state_publisher's /tf_static")
    finally:
        sub.unregister()
    msg = [m for m in heard if m._connection_header['callerid'] == TF_NODE][-1]
    return {t.child_frame_id for t in msg.transforms}


# --- the gripper on and off -----------------------------------------------------------------
def test_a_gripper_fragment_adds_right_gripper_tip(robot, ros):
    import rospy
    import tf2_ros
    send_fragment(ros, gripper())
    # /robot_description carries it, and it was applied once for the whole burst.
    xml = wait_for(lambda: 'right_gripper_tip' in rospy.get_param('/robot_description')
                   and rospy.get_param('/robot_description'), 5.0, 'the fragment in /robot_description')
    base = ros['base']
    assert xml.startswith(base[:base.rfind('</robot>')].rstrip())   # the robot's own, grafted onto
    assert log_count(robot, "added fragment 'right_gripper_base' on 'right_hand'") == 1

    # tip_states lists right_gripper_tip (and right_hand first), where the fragment puts it.
    msg = ros['tips'].wait(5.0, predicate=lambda m: 'right_gripper_tip' in m.names,
                           what='right_gripper_tip in tip_states')
    assert msg.names[0] == 'right_hand' and 'right_hand_camera' in msg.names
    assert 'right_gripper_l_finger' not in msg.names          # behind a sliding joint
    frames = tip_frames(msg)
    assert_same_frame(frames['right_gripper_tip'], frames['right_hand'] * HAND_TO_TIP, 1e-6)

    # FK of the new tip agrees with the fragment's geometry.
    ok, hand = fk(ros, FK_CLIENT_ANGLES, 'right_hand')
    ok_tip, tip = fk(ros, FK_CLIENT_ANGLES, 'right_gripper_tip')
    assert ok and ok_tip
    assert_same_frame(frame_of(tip.pose), frame_of(hand.pose) * HAND_TO_TIP, 1e-6)

    # IK for the tip at that pose finds angles whose FK puts the tip there.
    result, joints = ik(ros, tip, 'right_gripper_tip')
    assert result > 0, result
    ok, again = fk(ros, [joints.position[joints.name.index(n)] for n in ARM], 'right_gripper_tip')
    assert ok
    assert_same_frame(frame_of(again.pose), frame_of(tip.pose), 1e-3)

    # /tf: base → right_gripper_tip, through /tf_static's new fixed joints.
    buf = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buf)  # noqa: F841 - kept alive while used
    t = buf.lookup_transform('base', 'right_gripper_tip', rospy.Time(0), rospy.Duration(5.0))
    tf_frame = kdl.Frame(kdl.Rotation.Quaternion(t.transform.rotation.x, t.transform.rotation.y,
                                                 t.transform.rotation.z, t.transform.rotation.w),
                         kdl.Vector(t.transform.translation.x, t.transform.translation.y,
                                    t.transform.translation.z))
    now = tip_frames(ros['tips'].wait_new(2.0))['right_gripper_tip']
    assert_same_frame(tf_frame, now, 2e-3)                     # the arm holds its pose


def test_the_motion_controller_moves_the_new_tip(ros):
    """go_to_cartesian_pose.py -t right_gripper_tip: 4 cm down, orientation kept."""
    import actionlib
    import rospy
    from intera_motion_msgs.msg import MotionCommandAction
    start = ros['tips'].wait(5.0, predicate=lambda m: 'right_gripper_tip' in m.names)
    tip = start.states[start.names.index('right_gripper_tip')].pose
    target = ((tip.position.x, tip.position.y, tip.position.z - 0.04),
              (tip.orientation.x, tip.orientation.y, tip.orientation.z, tip.orientation.w))
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    q = current_angles()
    client.send_goal(goal([waypoint(q, pose=target, endpoint='right_gripper_tip', ratio=0.5)],
                          interpolation='CARTESIAN', settle=5.0))
    assert client.wait_for_result(rospy.Duration(60.0))
    result = client.get_result()
    assert result.result, result.errorId
    end = tip_frames(ros['tips'].wait_new(2.0))['right_gripper_tip']
    assert (end.p - kdl.Vector(*target[0])).Norm() < 5e-3
    assert kdl.diff(end.M, kdl.Rotation.Quaternion(*target[1])).Norm() < 0.01


def test_an_empty_fragment_takes_the_gripper_away(robot, ros):
    import rospy
    send_fragment(ros, '')
    wait_for(lambda: rospy.get_param('/robot_description') == ros['base'], 5.0,
             'the boot description back in /robot_description')
    assert log_count(robot, "removed fragment 'right_gripper_base'") == 1
    ros['tips'].wait(5.0, predicate=lambda m: 'right_gripper_tip' not in m.names,
                     what='right_gripper_tip gone from tip_states')
    ok, _ = fk(ros, FK_CLIENT_ANGLES, 'right_gripper_tip')
    assert not ok
    result, _ = ik(ros, fk(ros, FK_CLIENT_ANGLES, 'right_hand')[1], 'right_gripper_tip')
    assert result == -3                                           # IK_ENDPOINT_DOES_NOT_EXIST
    wait_for(lambda: 'right_gripper_tip' not in static_children(), 5.0,
             'right_gripper_tip gone from /tf_static')
    assert 'right_hand_camera' in static_children()


def test_a_tip_a_client_asks_for_joins_tip_states(ros):
    """Limb.tip_state('right_l5') after an FK request for it (contract §3.2: any tip the
    user asks for)."""
    assert 'right_l5' not in tip_names(ros)
    assert fk(ros, FK_CLIENT_ANGLES, 'right_l5')[0]
    msg = ros['tips'].wait(5.0, predicate=lambda m: 'right_l5' in m.names, what='right_l5 in tip_states')
    assert msg.names[0] == 'right_hand'
    ok, pose = fk(ros, current_angles(), 'right_l5')           # the arm holds still
    assert ok
    assert_same_frame(tip_frames(ros['tips'].wait_new(2.0))['right_l5'], frame_of(pose.pose), 1e-3)


# --- bad fragments --------------------------------------------------------------------------
def tool(root='tool_joint', parent='right_hand', link='tool_tip'):
    return ('<robot name="tool"><link name="%s"/><joint name="%s" type="fixed">'
            '<origin xyz="0 0 0.1" rpy="0 0 0"/><parent link="%s"/><child link="%s"/>'
            '</joint></robot>' % (link, root, parent, link))


BAD = {
    'malformed': (tool()[:-8], 'tool_joint', 'right_hand',
                  'not well-formed XML at line 1'),
    'billion laughs': ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;">'
                       '<!ENTITY c "&b;&b;&b;">]><robot name="x"><link name="&c;"/></robot>',
                       'tool_joint', 'right_hand', 'DTDs and entity declarations are not accepted'),
    'external entity': ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
                        '<robot name="x"><link name="&e;"/></robot>',
                        'tool_joint', 'right_hand', 'DTDs and entity declarations are not accepted'),
    'unknown parent': (tool(parent='right_flange'), 'tool_joint', 'right_flange',
                       "parent link 'right_flange' (URDFConfiguration.link) is not a link of the robot"),
    'link name clash': (tool(link='right_l6'), 'tool_joint', 'right_hand',
                        "link 'right_l6' is already a link of the robot"),
    'joint name clash': (tool(root='right_j6'), 'right_j6', 'right_hand',
                         "joint 'right_j6' is already a joint of the robot"),
    'oversize': (tool().replace('</robot>', '<!--%s--></robot>' % ('x' * (1 << 20))), 'tool_joint',
                 'right_hand', 'bytes, more than the 1048576 a fragment may have'),
}


@pytest.mark.parametrize('case', list(BAD))
def test_a_bad_fragment_is_refused_with_the_error_named(robot, ros, case):
    import rospy
    urdf, joint, link, words = BAD[case]
    before_log = log_count(robot, words)
    before_tips = tip_names(ros)
    send_fragment(ros, urdf, link=link, joint=joint)
    line = '/robot/urdf: fragment refused (link %r, joint %r): urdf: ' % (link, joint)
    wait_for(lambda: log_count(robot, words) > before_log and log_count(robot, line) > 0, 5.0,
             'the refusal in the robot log')
    assert log_count(robot, words) == before_log + 1            # once per burst, not per message
    assert rospy.get_param('/robot_description') == ros['base']
    assert tip_names(ros) == before_tips
    ok, _ = fk(ros, FK_CLIENT_ANGLES, 'tool_tip')
    assert not ok
