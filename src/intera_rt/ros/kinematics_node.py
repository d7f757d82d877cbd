"""PositionKinematicsNode: the robot's IK and FK services for the right arm.

Serves
  /ExternalTools/right/PositionKinematicsNode/IKService  intera_core_msgs/SolvePositionIK
  /ExternalTools/right/PositionKinematicsNode/FKService  intera_core_msgs/SolvePositionFK
Reads /robot_description and follows its changes (URDF fragments from /robot/urdf, as
realtime_loop announces them on /intera_rt/robot_description; the parameter is also re-read
when a request names a tip the model does not have), /robot/joint_states (the current angles: the
SEED_CURRENT seed, the angles of joints a request leaves out) and /tf (poses given in a
frame other than base).

One response entry per request entry. A bad entry (NaN, non-unit quaternion, unknown frame,
malformed joint state) fails that entry — IK_FAILED / isValid False — with a log line naming
the field and value; an unknown tip gives IK_ENDPOINT_DOES_NOT_EXIST / isValid False. Every
call is answered (the SDK's Limb.fk_request cannot cope with a failed call).
The intera 5.3 SolvePositionIK request has no allow-collision field: a solution in
self-collision is always reported as IK_IN_COLLISION (with the solution in joints[i]).

The tips clients ask for (beyond right_hand) are announced on /intera_rt/requested_tips
(a JSON list, latched): realtime_loop adds those on the arm to tip_states.
"""
import json
import math
import sys
import threading
import time
import traceback

import PyKDL as kdl
import rospy
import tf2_ros
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from intera_core_msgs.srv import (SolvePositionFK, SolvePositionFKResponse, SolvePositionIK,
                                  SolvePositionIKResponse)
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from intera_rt.model import RobotModel
from intera_rt.model.collision import CollisionModel, CollisionModelError
from intera_rt.model.ik import (DEFAULT_NULLSPACE_GAIN, IK_ENDPOINT_DOES_NOT_EXIST, IK_FAILED,
                                IKInputError, IKSolver, UnknownTipError, joint_values,
                                validate_pose)
from intera_rt.robot import ARM_JOINTS, HEAD_JOINTS, NEUTRAL
from intera_rt.ros.urdf_fragments import DESCRIPTION_TOPIC, REQUESTED_TIPS_TOPIC
from intera_rt.ros.node import init_node

SERVICE_NS = '/ExternalTools/right/PositionKinematicsNode/'
DEFAULT_TIP = 'right_hand'
BASE_FRAMES = ('', 'base')
TF_WAIT = 0.3                 # s (wall clock) to wait for a transform before failing the entry
TF_CONNECT = 3.0              # s (wall clock) /tf may take to connect after its first use
RELOAD_EVERY = 1.0            # s between re-reads of /robot_description for unknown tips
MAX_REQUESTED_TIPS = 16       # tips announced to tip_states


class FrameError(ValueError):
    """A pose's frame cannot be transformed into base."""


def _known_names(names, known, field):
    """IKInputError naming the first of `names` that is no joint of the model: a name the
    solver would otherwise skip silently (FK of the current angles, a seed ignored)."""
    for name in names:
        if name not in known:
            raise IKInputError('%s: unknown joint name %r (the model\'s joints: %s)'
                               % (field, name, ', '.join(sorted(known))))


class Kinematics:
    """Model, collision model and solver built from one URDF text. With `previous` (the
    model this one replaces), a description whose collision model cannot be built (e.g. a
    tool fragment with meshes) keeps the previous collision model: the arm's own shapes
    stay checked, the tool's are not."""

    def __init__(self, urdf_xml, previous=None):
        self.urdf_xml = urdf_xml
        self.model = RobotModel(urdf_xml)
        try:
            self.collision = CollisionModel(urdf_xml)
        except CollisionModelError as exc:
            if previous is not None and previous.collision is not None:
                rospy.logwarn('PositionKinematicsNode: %s; keeping the previous collision model '
                              '(the new links are not checked for self-collision)', exc)
                self.collision = previous.collision
            else:
                rospy.logerr('PositionKinematicsNode: %s; collision checks are off '
                             '(inCollision always False, no IK_IN_COLLISION)', exc)
                self.collision = None
        self.solver = IKSolver(self.model, self.collision)
        self.joint_names = set(self.model.limits)


class PositionKinematicsNode:
    def __init__(self):
        self._lock = threading.Lock()
        self._last_reload = -math.inf
        xml = rospy.get_param('/robot_description', None)
        if not xml:
            rospy.logwarn('PositionKinematicsNode: no /robot_description; using the packaged URDF')
            self.kin = Kinematics(RobotModel.from_file().urdf_xml)
        else:
            self.kin = Kinematics(xml)
        self._current = dict(zip(ARM_JOINTS, NEUTRAL))
        self._current[HEAD_JOINTS[0]] = 0.0
        self._have_joint_states = False
        # /tf is heard only once a request names a frame other than base: until then the
        # node does not pay for every transform the robot publishes at 100 Hz.
        self.tf_buffer = self.tf_listener = None
        self._tf_listening_since = None
        self._requested_tips = []
        self.pub_tips = rospy.Publisher(REQUESTED_TIPS_TOPIC, String, queue_size=1, latch=True)
        rospy.Subscriber(DESCRIPTION_TOPIC, String, self._on_description, queue_size=1)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joint_states,
                         queue_size=1, tcp_nodelay=True)
        self.ik_service = rospy.Service(SERVICE_NS + 'IKService', SolvePositionIK, self._serve_ik)
        self.fk_service = rospy.Service(SERVICE_NS + 'FKService', SolvePositionFK, self._serve_fk)
        rospy.loginfo('PositionKinematicsNode: IK/FK services up (%d collision pairs checked)',
                      len(self.kin.collision.pairs) if self.kin.collision else 0)

    # --- inputs -------------------------------------------------------------------------
    def _on_joint_states(self, msg):
        n = min(len(msg.name), len(msg.position))
        update = {}
        for name, value in zip(msg.name[:n], msg.position[:n]):
            if math.isfinite(value):
                update[name] = float(value)
        current = dict(self._current)       # swapped whole: readers never see it mid-update
        current.update(update)
        self._current = current
        self._have_joint_states = True

    def _snapshot(self):
        current = self._current
        if not self._have_joint_states:
            rospy.logwarn_throttle(5.0, 'PositionKinematicsNode: no /robot/joint_states yet; '
                                        'taking the current angles as neutral')
        return current

    def _on_description(self, msg):
        """The robot's description changed (a URDF fragment): serve the new model."""
        if msg.data == self.kin.urdf_xml:
            return
        try:
            kin = Kinematics(msg.data, previous=self.kin)
        except Exception as exc:
            rospy.logerr('PositionKinematicsNode: new robot description not usable, keeping the '
                         'previous model: %s', exc)
            return
        self.kin = kin                    # requests read self.kin once per entry
        rospy.loginfo('PositionKinematicsNode: robot description changed: model reloaded')

    def _asked(self, tip):
        """A client was answered for `tip`: announce it for tip_states."""
        if tip == DEFAULT_TIP or tip in self._requested_tips:
            return
        if len(self._requested_tips) >= MAX_REQUESTED_TIPS:
            return
        self._requested_tips.append(tip)
        self.pub_tips.publish(String(data=json.dumps(self._requested_tips)))

    def _maybe_reload(self):
        """Re-read /robot_description (rate-limited); True when the model changed."""
        now = time.monotonic()
        if now - self._last_reload < RELOAD_EVERY:
            return False
        self._last_reload = now
        try:
            xml = rospy.get_param('/robot_description', None)
        except Exception as exc:          # master unreachable: keep the model we have
            rospy.logwarn('PositionKinematicsNode: cannot read /robot_description: %s', exc)
            return False
        if not xml or xml == self.kin.urdf_xml:
            return False
        try:
            self.kin = Kinematics(xml, previous=self.kin)
        except Exception as exc:
            rospy.logerr('PositionKinematicsNode: new /robot_description not usable, keeping '
                         'the previous model: %s', exc)
            return False
        rospy.loginfo('PositionKinematicsNode: reloaded /robot_description')
        return True

    def _tip(self, tip_names, i):
        tip = tip_names[i] if i < len(tip_names) else ''
        return tip or DEFAULT_TIP

    def _pose_in_base(self, pose_stamped, field):
        """Validated (position[3], quaternion[4]) in base."""
        pose = pose_stamped.pose
        p = (pose.position.x, pose.position.y, pose.position.z)
        o = (pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w)
        frame = validate_pose(p, o, field + '.pose')
        frame_id = pose_stamped.header.frame_id.lstrip('/')
        if frame_id in BASE_FRAMES:
            return p, o
        deadline = time.monotonic() + TF_WAIT
        if self.tf_buffer is None:
            self.tf_buffer = tf2_ros.Buffer()
            self.tf_listener = tf2_ros.TransformListener(self.tf_buffer)
            self._tf_listening_since = time.monotonic()
        # The first lookups also wait for the new subscription to connect.
        deadline = max(deadline, self._tf_listening_since + TF_CONNECT)
        while True:
            try:
                tf = self.tf_buffer.lookup_transform('base', frame_id, rospy.Time(0))
                break
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                    tf2_ros.ExtrapolationException, tf2_ros.InvalidArgumentException) as exc:
                if time.monotonic() >= deadline or rospy.is_shutdown():
                    raise FrameError('%s.header.frame_id: no transform from %r to base (%s)'
                                     % (field, pose_stamped.header.frame_id, exc))
                time.sleep(0.01)
        t, r = tf.transform.translation, tf.transform.rotation
        base_from_frame = kdl.Frame(kdl.Rotation.Quaternion(r.x, r.y, r.z, r.w), kdl.Vector(t.x, t.y, t.z))
        out = base_from_frame * frame
        return (out.p[0], out.p[1], out.p[2]), out.M.GetQuaternion()

    # --- IK -----------------------------------------------------------------------------
    def _serve_ik(self, req):
        with self._lock:
            resp = SolvePositionIKResponse()
            current = self._snapshot()
            for i in range(len(req.pose_stamp)):
                result_type, joints = self._ik_entry(req, i, current)
                resp.result_type.append(result_type)
                resp.joints.append(joints)
            return resp

    def _ik_entry(self, req, i, current):
        tip = self._tip(req.tip_names, i)
        try:
            try:
                return self._solve_entry(req, i, current, tip)
            except UnknownTipError:
                if not self._maybe_reload():
                    raise
                return self._solve_entry(req, i, current, tip)
        except UnknownTipError as exc:
            rospy.logerr('IKService: tip_names[%d]: %s -> IK_ENDPOINT_DOES_NOT_EXIST', i, exc)
            return IK_ENDPOINT_DOES_NOT_EXIST, JointState()
        except (IKInputError, FrameError) as exc:
            rospy.logerr('IKService: %s -> IK_FAILED', exc)
            return IK_FAILED, JointState()
        except Exception:
            rospy.logerr('IKService: entry %d: internal error -> IK_FAILED\n%s', i, traceback.format_exc())
            return IK_FAILED, JointState()

    def _solve_entry(self, req, i, current, tip):
        solver = self.kin.solver
        solver.tip(tip)                 # unknown tip first: -3 even when the pose is bad too
        self._asked(tip)
        position, orientation = self._pose_in_base(req.pose_stamp[i], 'pose_stamp[%d]' % i)
        seed = None
        if i < len(req.seed_angles) and req.seed_angles[i].name:
            _known_names(req.seed_angles[i].name, self.kin.joint_names, 'seed_angles[%d]' % i)
            seed = joint_values(req.seed_angles[i].name, req.seed_angles[i].position,
                                'seed_angles[%d]' % i) or None
        goal, gain = None, DEFAULT_NULLSPACE_GAIN
        if i < len(req.use_nullspace_goal) and req.use_nullspace_goal[i]:
            if i < len(req.nullspace_goal):
                _known_names(req.nullspace_goal[i].name, self.kin.joint_names, 'nullspace_goal[%d]' % i)
                goal = joint_values(req.nullspace_goal[i].name, req.nullspace_goal[i].position,
                                    'nullspace_goal[%d]' % i) or None
            if goal is None:
                rospy.logwarn('IKService: use_nullspace_goal[%d] is set but nullspace_goal[%d] names '
                              'no arm joint; solving without a nullspace goal', i, i)
            if i < len(req.nullspace_gain):
                gain = req.nullspace_gain[i]
                if not math.isfinite(gain) or gain < 0:
                    raise IKInputError('nullspace_gain[%d]: %r must be a finite number in [0, 1]' % (i, gain))
                if gain > 1.0:
                    rospy.logwarn('IKService: nullspace_gain[%d] = %g clamped to 1', i, gain)
        q_cur = [current[n] for n in ARM_JOINTS]
        result = solver.solve(tip, position, orientation, q_cur, seed_mode=req.seed_mode,
                              user_seed=seed, nullspace_goal=goal, nullspace_gain=gain,
                              q_head=current.get(HEAD_JOINTS[0], 0.0))
        joints = JointState()
        if result.q is not None:
            joints.header.stamp = rospy.Time.now()
            joints.name = list(ARM_JOINTS)
            joints.position = [float(v) for v in result.q]
        if not result.ok:
            rospy.logwarn('IKService: pose_stamp[%d] (tip %s): %s (result_type %d)',
                          i, tip, result.message, result.result_type)
        return result.result_type, joints

    # --- FK -----------------------------------------------------------------------------
    def _serve_fk(self, req):
        with self._lock:
            resp = SolvePositionFKResponse()
            current = self._snapshot()
            for i in range(len(req.configuration)):
                pose, valid, colliding = self._fk_entry(req, i, current)
                resp.pose_stamp.append(pose)
                resp.isValid.append(valid)
                resp.inCollision.append(colliding)
            return resp

    def _fk_entry(self, req, i, current):
        tip = self._tip(req.tip_names, i)
        try:
            try:
                return self._fk_solve(req, i, current, tip)
            except UnknownTipError:
                if not self._maybe_reload():
                    raise
                return self._fk_solve(req, i, current, tip)
        except UnknownTipError as exc:
            rospy.logerr('FKService: tip_names[%d]: %s -> isValid False', i, exc)
        except IKInputError as exc:
            rospy.logerr('FKService: %s -> isValid False', exc)
        except Exception:
            rospy.logerr('FKService: entry %d: internal error -> isValid False\n%s', i, traceback.format_exc())
        return PoseStamped(), False, False

    def _fk_solve(self, req, i, current, tip):
        kin = self.kin
        cfg = req.configuration[i]
        values = dict(current)
        field = 'configuration[%d]' % i
        _known_names(cfg.name, kin.joint_names, field)
        values.update(joint_values(cfg.name, cfg.position, field, allowed=kin.joint_names))
        position, quat = kin.solver.fk_named(tip, values)
        self._asked(tip)
        q_arm = [values[n] for n in ARM_JOINTS]
        colliding = kin.solver.in_collision(q_arm, values.get(HEAD_JOINTS[0], 0.0))
        pose = PoseStamped()
        pose.header.stamp = rospy.Time.now()
        pose.header.frame_id = 'base'
        pose.pose = Pose(Point(*[float(v) for v in position]), Quaternion(*[float(v) for v in quat]))
        return pose, True, colliding


def main(argv=None):
    init_node('PositionKinematicsNode', argv=argv)
    try:
        PositionKinematicsNode()
    except (ValueError, KeyError) as exc:
        rospy.logfatal('PositionKinematicsNode: %s', exc)
        sys.exit(2)
    rospy.spin()


if __name__ == '__main__':
    main(sys.argv)
