"""robot_state_publisher: /tf from /robot/joint_states and /robot_description.

The robot runs robot_state_publisher; this node is ours and says the same on the wire as
ROS's: every movable joint of the URDF in a joint_states message → one transform parent
link → child link on /tf, stamped with the message's stamp; fixed joints once on the
latched /tf_static. Of ROS's node's parameters, ~publish_frequency (Hz, default 50: a joint
is republished at most this often in its stamps' time); ~use_tf_static and
~ignore_timestamp keep their defaults (true, false); tf_prefix, which tf2 dropped, is not
supported. On the robot it runs inside the io process (node /io); alone
(nodes/robot_state_publisher) it is a node like ROS's, joint_states remappable.

It follows joint_states from the first subscriber of /tf on (ROS's node from the start):
under sim time at full speed the robot's 100 Hz of joint states are a thousand messages a
second of wall time, each parsed for nobody. It does not unsubscribe when /tf is no longer
heard: rospy cannot be relied on to connect a subscription made again right after one was
unregistered (a test's /tf listeners coming and going saw no joint states after that). A
bad joint state is reported once /tf has been heard.

Unlike ROS's, it follows the robot's description when a URDF fragment changes it (on the
latched /intera_rt/robot_description): /tf_static is republished with the new fixed joints,
/tf carries the new movable ones. Why not ROS's own: Debian's build asks the master two
questions for every joint_states message, which under sim time at full speed costs the
master and the lockstep speed dearly; here each message costs a parse, eight quaternion
products and one write.
"""
import math
import struct
import sys
import threading

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage
from geometry_msgs.msg import TransformStamped

from intera_rt.model.joint_frames import JointFrames
from intera_rt.ros.direct import SerializedMessage, Throttle, periodic_publisher, wire_string
from intera_rt.ros.urdf_fragments import DESCRIPTION_TOPIC
from std_msgs.msg import String
from intera_rt.ros.node import init_node

OLD_WARNING = 30.0                    # s: a joint state this much older than now is reported


class _Layout:
    """One list of movable joints on /tf: their transforms and the message's wire format
    (per transform: header seq 0, stamp, frame_id = parent; child_frame_id; 7 doubles)."""

    def __init__(self, frames, indices):
        self.indices = np.array(indices, dtype=np.intp)
        self.joints = frames.subset(self.indices)
        self.names = [wire_string(frames.parent[i]) + wire_string(frames.child[i]) for i in indices]
        self.format = struct.Struct('<I' + ''.join('III%ds7d' % len(n) for n in self.names))

    def message(self, stamp, xyz, quat):
        args = [len(self.names)]
        for names, t, r in zip(self.names, xyz.tolist(), quat.tolist()):
            args += (0, stamp.secs, stamp.nsecs, names)
            args += t
            args += r
        return SerializedMessage(TFMessage, self.format.pack(*args))


class StatePublisher:
    def __init__(self, joint_states='joint_states'):
        """joint_states: the topic it follows (relative: remappable, as ROS's node's)."""
        self.log_throttled = Throttle()
        urdf = rospy.get_param('robot_description', None)
        if not urdf:
            raise RuntimeError('robot_state_publisher: no URDF in the parameter %s'
                               % rospy.resolve_name('robot_description'))
        try:
            self.frames = JointFrames.from_xml(urdf)
        except Exception as exc:        # noqa: BLE001 - whatever the URDF parser raises
            raise RuntimeError('robot_state_publisher: cannot read the URDF in %s: %s'
                               % (rospy.resolve_name('robot_description'), exc)) from exc
        frequency = float(rospy.get_param('~publish_frequency', 50.0))
        # As ROS's node: at least 1 Hz; the interval in whole nanoseconds of stamp time.
        self.interval_ns = int(round(1e9 / max(frequency, 1.0)))
        self.last_published = {}         # joint → stamp (ns) of its last transform on /tf
        self.last_callback = None        # ROS time of the last message, to see time jump back
        self.urdf = urdf
        # (before /tf exists: a listener that connects at once makes _follow read it)
        self.topic = rospy.resolve_name(joint_states)
        self._joints_sub, self._joints_lock = None, threading.Lock()
        self.pub_tf = periodic_publisher('/tf', TFMessage, self.log_throttled,
                                         subscriber_listener=_OnceHeard(self._follow))
        self.pub_static = rospy.Publisher('/tf_static', TFMessage, queue_size=1, latch=True)
        self.pub_static.publish(self._fixed_message(self.frames, rospy.Time.now()))
        rospy.Subscriber(DESCRIPTION_TOPIC, String, self._on_description, queue_size=1)
        if self.pub_tf.get_num_connections():
            self._follow()
        rospy.loginfo('robot_state_publisher: %d movable joints on /tf (at most %.0f Hz each), '
                      '%d fixed on /tf_static', len(self.frames.movable), 1e9 / self.interval_ns,
                      len(self.frames.fixed))

    # --- fixed joints ------------------------------------------------------------------
    def _on_description(self, msg):
        """The robot's description changed (a URDF fragment): new frames on /tf_static and /tf."""
        if msg.data == self.urdf:
            return
        try:
            frames = JointFrames.from_xml(msg.data)
        except Exception as exc:        # noqa: BLE001 - whatever the URDF parser raises
            rospy.logerr('robot_state_publisher: cannot read the new robot description, keeping '
                         'the previous frames: %s', exc)
            return
        # One swap the joint_states callback sees whole: frames and their layouts.
        self.urdf = msg.data
        self._frames_layouts = (frames, {})
        self.pub_static.publish(self._fixed_message(frames, rospy.Time.now()))
        rospy.loginfo('robot_state_publisher: robot description changed: %d movable joints on '
                      '/tf, %d fixed on /tf_static', len(frames.movable), len(frames.fixed))

    @property
    def frames(self):
        return self._frames_layouts[0]

    @frames.setter
    def frames(self, frames):
        self._frames_layouts = (frames, {})

    def _fixed_message(self, frames, stamp):
        msg = TFMessage()
        for parent, child, xyz, quat in frames.fixed:
            t = TransformStamped()
            t.header.stamp = stamp
            t.header.frame_id, t.child_frame_id = parent, child
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
            (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
             t.transform.rotation.w) = quat
            msg.transforms.append(t)
        return msg

    # --- movable joints ----------------------------------------------------------------
    def _follow(self):
        """Subscribe to joint_states (once: /tf has been heard)."""
        with self._joints_lock:
            if self._joints_sub is None:
                self._joints_sub = rospy.Subscriber(self.topic, JointState, self._on_joint_states,
                                                    queue_size=1, tcp_nodelay=True)

    def _on_joint_states(self, msg):
        topic = self.topic
        if len(msg.name) != len(msg.position):
            if msg.position:
                self.log_throttled(rospy.logerr, 'invalid',
                                   'robot_state_publisher: %s with %d names but %d positions: '
                                   'ignored' % (topic, len(msg.name), len(msg.position)))
            else:       # a message of velocities or efforts only: nothing for /tf in it
                self.log_throttled(rospy.logwarn, 'no positions',
                                   'robot_state_publisher: %s about %s has no positions: '
                                   'ignored' % (topic, ', '.join(msg.name[:3]) or 'no joints'))
            return
        now = rospy.Time.now()
        if self.last_callback is not None and self.last_callback > now:
            rospy.logwarn('robot_state_publisher: time moved backwards (the ROS clock was '
                          'reset); publishing every joint again')
            self.last_published.clear()
        self.last_callback = now
        stamp = msg.header.stamp
        if (now - stamp).to_sec() > OLD_WARNING:
            self.log_throttled(rospy.logwarn, 'old',
                               'robot_state_publisher: %s is %.1f s old'
                               % (topic, (now - stamp).to_sec()))
        stamp_ns = stamp.to_nsec()
        # As ROS's node: publish when the least recently published joint of the message is
        # due (a joint never seen counts as published at time 0).
        oldest = min((self.last_published.get(n, 0) for n in msg.name), default=now.to_nsec())
        if stamp_ns < oldest + self.interval_ns:
            return
        for name in msg.name:
            self.last_published[name] = stamp_ns
        if self.pub_tf.get_num_connections():
            self._publish(msg.name, msg.position, stamp)

    def _publish(self, names, positions, stamp):
        frames, layouts = self._frames_layouts
        named = dict(zip(names, positions))
        if frames.mimic:
            frames.positions_with_mimic(named)
        if not all(map(math.isfinite, named.values())):
            bad = [n for n, v in named.items() if not math.isfinite(v)]
            self.log_throttled(rospy.logwarn, 'not finite',
                               'robot_state_publisher: position of %s is not finite: left out '
                               'of /tf' % ', '.join(bad))
            named = {n: v for n, v in named.items() if math.isfinite(v)}
        key = tuple(named)
        layout = layouts.get(key)
        if layout is None:
            index = frames.index
            layout = layouts[key] = _Layout(frames, [index[n] for n in key if n in index])
        if not len(layout.indices):      # no joint of the robot's tree in the message
            return
        movable = frames.movable
        xyz, quat = layout.joints.transforms([named[movable[i]] for i in layout.indices])
        self.pub_tf.publish(layout.message(stamp, xyz, quat))


class _OnceHeard(rospy.SubscribeListener):
    """Calls `heard` when a publisher gets a subscriber."""

    def __init__(self, heard):
        super().__init__()
        self._heard = heard

    def peer_subscribe(self, topic_name, topic_publish, peer_publish):
        self._heard()


def main():
    init_node('robot_state_publisher')
    try:
        StatePublisher()
    except (RuntimeError, ValueError) as exc:      # ValueError: a URDF refused (model.safe_xml)
        rospy.logfatal(str(exc))
        sys.exit(1)
    rospy.spin()

