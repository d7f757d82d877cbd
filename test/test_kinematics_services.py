"""The IK and FK services as the SDK calls them (Limb.ik_request / fk_request, the
ik_service_client and fk_service_client examples): contract §1 G5, §5.3, §9.1, §11 Q9."""
import math

import numpy as np
import pytest

from contract import ARM
from rosharness import wait_for
from robot_watch import IK_NODE
from intera_rt import robot  # noqa: E402

NS = '/ExternalTools/right/PositionKinematicsNode/'
NEUTRAL = list(robot.NEUTRAL)
FK_CLIENT_ANGLES = [0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347, -0.496337]
TARGET_POS = (0.450628752997, 0.161615832271, 0.217447307078)
TARGET_QUAT = (0.704020578925, 0.710172716916, 0.00244101361829, 0.00194372088834)
EXAMPLE_SEED = [0.7, 0.4, -1.7, 1.4, -1.1, -1.6, -0.4]
EXAMPLE_GOAL = {'right_j1': 0.1, 'right_j2': -0.3, 'right_j3': 0.5}
HAND_IN_PEDESTAL = [0.0, 0.8, 0.0, 1.5, 0.0, 0.0, 0.0]
FOLDED = [0.0, -1.18, 0.0, 3.0, 0.0, 0.57, 0.0]


@pytest.fixture(scope='module')
def svc(robot):
    """The two services, waited for the way Limb.__init__ does (5 s each, §1 G5)."""
    import rospy
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionIK
    rospy.wait_for_service(NS + 'IKService', 5.0)
    rospy.wait_for_service(NS + 'FKService', 5.0)
    return (rospy.ServiceProxy(NS + 'IKService', SolvePositionIK),
            rospy.ServiceProxy(NS + 'FKService', SolvePositionFK))


def pose_stamped(pos, quat, frame_id='base'):
    import rospy
    from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
    from std_msgs.msg import Header
    return PoseStamped(header=Header(stamp=rospy.Time.now(), frame_id=frame_id),
                       pose=Pose(position=Point(*pos), orientation=Quaternion(*quat)))


def ik_request(entries, seed_mode=0):
    """entries: dicts with pose (PoseStamped), tip, seed {name: angle}, goal, gain."""
    from intera_core_msgs.srv import SolvePositionIKRequest
    from sensor_msgs.msg import JointState
    req = SolvePositionIKRequest()
    req.seed_mode = seed_mode
    for e in entries:
        req.pose_stamp.append(e['pose'])
        req.tip_names.append(e.get('tip', 'right_hand'))
        if 'seed' in e:
            req.seed_angles.append(JointState(name=list(e['seed']), position=list(e['seed'].values())))
        if 'goal' in e:
            req.use_nullspace_goal.append(True)
            req.nullspace_goal.append(JointState(name=list(e['goal']), position=list(e['goal'].values())))
            req.nullspace_gain.append(e.get('gain', 0.4))
    return req


def fk_request(configs):
    """configs: (angles dict or list for ARM, tip)."""
    from intera_core_msgs.srv import SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    req = SolvePositionFKRequest()
    for angles, tip in configs:
        if not isinstance(angles, dict):
            angles = dict(zip(ARM, angles))
        req.configuration.append(JointState(name=list(angles), position=list(angles.values())))
        req.tip_names.append(tip)
    return req


def fk_pose(fk, angles, tip='right_hand'):
    resp = fk(fk_request([(angles, tip)]))
    assert resp.isValid == [True]
    assert resp.pose_stamp[0].header.frame_id == 'base'
    p, o = resp.pose_stamp[0].pose.position, resp.pose_stamp[0].pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def solution(resp, i=0):
    """What Limb.ik_request returns: dict(zip(joints.name, joints.position)) when > 0."""
    assert resp.result_type[i] > 0, list(resp.result_type)
    joints = dict(zip(resp.joints[i].name, resp.joints[i].position))
    assert sorted(joints) == ARM
    return joints


def assert_reaches(fk, joints, pos, quat, tip='right_hand'):
    p, o = fk_pose(fk, joints, tip)
    assert np.linalg.norm(p - pos) < 2e-4
    assert abs(float(np.dot(o, np.asarray(quat) / np.linalg.norm(quat)))) > math.cos(1e-3)


def goal_distance(joints):
    return math.sqrt(sum((joints[n] - v) ** 2 for n, v in EXAMPLE_GOAL.items()))


# --- FK ------------------------------------------------------------------------------------
def test_fk_service_client_reference(svc):
    """fk_service_client: §9.1 row 1 within 2 mm, valid, not in collision."""
    _, fk = svc
    resp = fk(fk_request([(FK_CLIENT_ANGLES, 'right_hand')]))
    assert resp.isValid == [True] and resp.inCollision == [False]
    pose = resp.pose_stamp[0]
    assert pose.header.frame_id == 'base'
    p, o = pose.pose.position, pose.pose.orientation
    assert (p.x, p.y, p.z) == pytest.approx((0.4506, 0.1616, 0.2156), abs=2e-3)
    assert abs(np.dot([o.x, o.y, o.z, o.w], (0.704, 0.7102, 0.0024, 0.0019))) == pytest.approx(1, abs=1e-4)


def test_fk_neutral_and_angles_in_any_order(svc):
    _, fk = svc
    shuffled = {n: NEUTRAL[ARM.index(n)] for n in reversed(ARM)}
    p, _ = fk_pose(fk, shuffled)
    assert tuple(p) == pytest.approx((0.4496, 0.1603, 0.2158), abs=2e-3)


def test_fk_self_colliding_configuration(svc):
    _, fk = svc
    resp = fk(fk_request([(HAND_IN_PEDESTAL, 'right_hand'), (FOLDED, 'right_hand'),
                          (NEUTRAL, 'right_hand')]))
    assert resp.isValid == [True, True, True]
    assert resp.inCollision == [True, True, False]


def test_fk_unknown_tip_is_invalid(svc):
    _, fk = svc
    resp = fk(fk_request([(NEUTRAL, 'no_such_tip')]))
    assert resp.isValid == [False] and len(resp.pose_stamp) == 1


def test_fk_bad_configuration_is_invalid_not_a_crash(svc):
    _, fk = svc
    from sensor_msgs.msg import JointState
    req = fk_request([(dict(zip(ARM, NEUTRAL)), 'right_hand')] * 3)
    req.configuration[0].position = [math.nan] + list(NEUTRAL[1:])
    req.configuration[1] = JointState(name=ARM, position=NEUTRAL[:3])       # lengths differ
    resp = fk(req)
    assert resp.isValid == [False, False, True]
    assert fk(fk_request([(NEUTRAL, '')])).isValid == [True]               # '' = right_hand


# --- IK ------------------------------------------------------------------------------------
def test_ik_service_client_simple(svc):
    """Default request (SEED_AUTO): success, the 7 arm joints, reaching the target."""
    ik, fk = svc
    resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT)}]))
    assert len(resp.result_type) == len(resp.joints) == 1
    assert_reaches(fk, solution(resp), TARGET_POS, TARGET_QUAT)


def test_ik_service_client_target_matches_fk_client_angles(svc):
    """ik_service_client's target is FK of fk_service_client's angles (§5.3), within 2 mm."""
    _, fk = svc
    p, _ = fk_pose(fk, FK_CLIENT_ANGLES)
    assert np.linalg.norm(p - TARGET_POS) < 2e-3


def test_ik_user_seed_reports_seed_user(svc):
    ik, fk = svc
    resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT),
                           'seed': dict(zip(ARM, EXAMPLE_SEED))}], seed_mode=1))
    assert list(resp.result_type) == [1]
    joints = solution(resp)
    assert_reaches(fk, joints, TARGET_POS, TARGET_QUAT)
    assert [joints[n] for n in ARM] == pytest.approx(FK_CLIENT_ANGLES, abs=0.05)


def test_ik_advanced_request_with_nullspace_goal(svc):
    """ik_service_client's advanced call: SEED_USER + nullspace goal on right_j1..j3, gain
    0.4 → result_type 1, and the goal pulls the solution toward it."""
    ik, fk = svc
    entry = {'pose': pose_stamped(TARGET_POS, TARGET_QUAT), 'seed': dict(zip(ARM, EXAMPLE_SEED))}
    plain = solution(ik(ik_request([entry], seed_mode=1)))
    resp = ik(ik_request([dict(entry, goal=EXAMPLE_GOAL, gain=0.4)], seed_mode=1))
    assert list(resp.result_type) == [1]
    biased = solution(resp)
    assert_reaches(fk, biased, TARGET_POS, TARGET_QUAT)
    assert goal_distance(biased) < goal_distance(plain) - 0.1


def test_ik_seed_current_uses_joint_states(svc):
    """SEED_CURRENT from /robot/joint_states (the arm rests at neutral): the neutral pose
    comes back as the current angles."""
    ik, fk = svc
    pos, quat = fk_pose(fk, NEUTRAL)
    resp = ik(ik_request([{'pose': pose_stamped(pos, quat)}], seed_mode=2))
    assert list(resp.result_type) == [2]
    assert [solution(resp)[n] for n in ARM] == pytest.approx(NEUTRAL, abs=0.01)


def test_ik_reports_the_seed_it_actually_used(svc):
    """SEED_NS_MAP without a nullspace goal seeds from the current angles (there is no NS
    map): result_type says SEED_CURRENT (2); in SEED_AUTO a user seed on another branch
    that does not reach the target is not reported when the current angles did."""
    ik, fk = svc
    pos, quat = fk_pose(fk, NEUTRAL)
    resp = ik(ik_request([{'pose': pose_stamped(pos, quat)}], seed_mode=3))
    assert list(resp.result_type) == [2]
    assert [solution(resp)[n] for n in ARM] == pytest.approx(NEUTRAL, abs=0.01)
    far = dict(zip(ARM, [-2.9, 2.0, -2.9, -2.9, 2.9, -2.9, -4.6]))
    resp = ik(ik_request([{'pose': pose_stamped(pos, quat), 'seed': far}], seed_mode=0))
    assert list(resp.result_type) == [2]


def test_ik_seed_ns_map(svc):
    ik, fk = svc
    resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT), 'goal': EXAMPLE_GOAL}],
                         seed_mode=3))
    assert list(resp.result_type) == [3]
    assert_reaches(fk, solution(resp), TARGET_POS, TARGET_QUAT)


def test_ik_limb_style_seed_subset_any_order(svc):
    """Limb.ik_request(joint_seed={...}) sends the dict's names in its own order."""
    ik, fk = svc
    seed = {'right_j3': 1.4, 'right_j0': 0.7, 'right_j2': -1.7, 'head_pan': 0.0}
    resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT, frame_id=''), 'seed': seed}],
                         seed_mode=1))
    assert list(resp.result_type) == [1]
    assert_reaches(fk, solution(resp), TARGET_POS, TARGET_QUAT)


def test_ik_unknown_tip(svc):
    ik, _ = svc
    resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT), 'tip': 'no_such_tip'}]))
    assert list(resp.result_type) == [-3] and len(resp.joints) == 1


def test_ik_pose_in_another_frame(svc):
    """A pose given in a frame other than base is looked up in /tf."""
    import PyKDL as kdl
    import rospy
    import tf2_ros
    from geometry_msgs.msg import TransformStamped
    ik, fk = svc
    frame = kdl.Frame(kdl.Rotation.RPY(0.1, -0.2, math.pi / 2), kdl.Vector(0.2, -0.1, 0.3))
    tf = TransformStamped()
    tf.header.stamp = rospy.Time.now()
    tf.header.frame_id = 'base'
    tf.child_frame_id = 'ik_test_frame'
    tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = frame.p
    (tf.transform.rotation.x, tf.transform.rotation.y, tf.transform.rotation.z,
     tf.transform.rotation.w) = frame.M.GetQuaternion()
    broadcaster = tf2_ros.StaticTransformBroadcaster()
    broadcaster.sendTransform(tf)
    target = kdl.Frame(kdl.Rotation.Quaternion(*TARGET_QUAT), kdl.Vector(*TARGET_POS))
    local = frame.Inverse() * target
    req = ik_request([{'pose': pose_stamped(tuple(local.p), local.M.GetQuaternion(), 'ik_test_frame')}])
    resp = wait_for(lambda: (lambda r: r.result_type[0] > 0 and r)(ik(req)), 10.0,
                    'IK of a pose in ik_test_frame to succeed')
    assert_reaches(fk, solution(resp), TARGET_POS, TARGET_QUAT)
    # A frame nobody publishes: that entry fails, the call is answered.
    req = ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT, 'no_such_frame')}])
    assert list(ik(req).result_type) == [-1]


def test_ik_several_requests_in_one_call(svc):
    ik, fk = svc
    cam_pos, cam_quat = fk_pose(fk, NEUTRAL, 'right_hand_camera')
    resp = ik(ik_request([
        {'pose': pose_stamped(TARGET_POS, TARGET_QUAT)},
        {'pose': pose_stamped(TARGET_POS, TARGET_QUAT), 'tip': 'no_such_tip'},
        {'pose': pose_stamped(cam_pos, cam_quat), 'tip': 'right_hand_camera'},
        {'pose': pose_stamped((3.0, 0.0, 0.0), (0, 0, 0, 1))},                  # out of reach
    ]))
    assert len(resp.result_type) == len(resp.joints) == 4
    assert resp.result_type[0] > 0 and resp.result_type[2] > 0
    assert list(resp.result_type[1::2]) == [-3, -1]
    assert_reaches(fk, solution(resp, 0), TARGET_POS, TARGET_QUAT)
    assert_reaches(fk, solution(resp, 2), cam_pos, cam_quat, 'right_hand_camera')
    assert len(ik(ik_request([])).result_type) == 0


def test_ik_in_collision(svc):
    """The hand inside the pedestal: every solution collides → IK_IN_COLLISION (-2)."""
    ik, fk = svc
    pos, quat = fk_pose(fk, HAND_IN_PEDESTAL)
    resp = ik(ik_request([{'pose': pose_stamped(pos, quat)}]))
    assert list(resp.result_type) == [-2]


def test_ik_bad_pose_answered_with_failure_and_log(svc):
    """NaN position / zero quaternion (a default Pose()): that entry fails (-1), the others
    are solved, the node logs the field and value (seen in /rosout_agg), and keeps serving."""
    import rospy
    from rosgraph_msgs.msg import Log
    ik, _ = svc
    seen = []
    sub = rospy.Subscriber('/rosout_agg', Log, seen.append)
    try:
        wait_for(lambda: sub.get_num_connections() > 0, 5.0, 'a connection to /rosout_agg')
        resp = ik(ik_request([
            {'pose': pose_stamped((math.nan, 0.16, 0.2), TARGET_QUAT)},
            {'pose': pose_stamped(TARGET_POS, TARGET_QUAT)},
            {'pose': pose_stamped(TARGET_POS, (0.0, 0.0, 0.0, 0.0))},
        ]))
        assert list(resp.result_type[::2]) == [-1, -1] and resp.result_type[1] > 0

        def logged(*words):
            return any(all(w in m.msg for w in words) and m.level == Log.ERROR
                       for m in list(seen) if m.name == IK_NODE)
        wait_for(lambda: logged('pose_stamp[0].pose.position', 'nan'), 5.0,
                 'an error log naming pose_stamp[0].pose.position and its value')
        wait_for(lambda: logged('pose_stamp[2].pose.orientation', 'norm 0'), 5.0,
                 'an error log naming pose_stamp[2].pose.orientation and its norm')
    finally:
        sub.unregister()
    assert ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT)}])).result_type[0] > 0


def test_ik_bad_seed_and_gain_fail_that_entry(svc):
    ik, _ = svc
    bad_seed = ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT),
                            'seed': {'right_j0': math.inf}}], seed_mode=1)
    assert list(ik(bad_seed).result_type) == [-1]
    no_seed = ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT)}], seed_mode=1)
    assert list(ik(no_seed).result_type) == [-1]
    bad_gain = ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT), 'goal': EXAMPLE_GOAL,
                            'gain': math.nan}])
    assert list(ik(bad_gain).result_type) == [-1]
    bad_mode = ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT)}], seed_mode=9)
    assert list(ik(bad_mode).result_type) == [-1]


def test_the_node_alone_serves_the_same_answers(robot, svc):
    """nodes/kinematics, the IK/FK services as a node of their own (on the robot they run in
    the motion controller's process), its services remapped beside the robot's: the same FK
    pose and an IK solution for the fk_service_client's target."""
    import subprocess
    import rospy
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionIK
    from intera_rt.tooling.robot_process import REPO
    alone = '/kinematics_alone/'
    proc = subprocess.Popen([str(REPO / 'nodes' / 'kinematics'), '__name:=kinematics_alone',
                             NS + 'IKService:=' + alone + 'IKService',
                             NS + 'FKService:=' + alone + 'FKService'],
                            env=robot.environ(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        rospy.wait_for_service(alone + 'FKService', 60.0)
        rospy.wait_for_service(alone + 'IKService', 60.0)
        fk = rospy.ServiceProxy(alone + 'FKService', SolvePositionFK)
        p, _ = fk_pose(fk, dict(zip(ARM, FK_CLIENT_ANGLES)))
        p_robot, _ = fk_pose(svc[1], dict(zip(ARM, FK_CLIENT_ANGLES)))
        assert tuple(p) == pytest.approx(tuple(p_robot), abs=1e-9)
        ik = rospy.ServiceProxy(alone + 'IKService', SolvePositionIK)
        resp = ik(ik_request([{'pose': pose_stamped(TARGET_POS, TARGET_QUAT)}]))
        assert resp.result_type[0] > 0
        q = dict(zip(resp.joints[0].name, resp.joints[0].position))
        p_ik, _ = fk_pose(svc[1], q)
        assert tuple(p_ik) == pytest.approx(TARGET_POS, abs=1e-3)
    finally:
        proc.terminate()
        proc.wait(15)
