"""/robot/urdf: URDF fragments grafted into the robot's description (realtime_loop's part).

Subscribes /robot/urdf (intera_core_msgs/URDFConfiguration) and applies each fragment once
(model.urdf_fragments: safe parsing, grafting, checks). On a change it sets
/robot_description, then publishes the new description on the latched
DESCRIPTION_TOPIC, which the robot's own consumers follow at once (robot_state_publisher:
/tf_static and /tf; PositionKinematicsNode: IK/FK; motion_controller: endpoints), and
hands the Change to realtime_loop (tip_states). A refused fragment is one ERROR line
naming the problem (once per message, not per republication); the robot keeps its model.

REQUESTED_TIPS_TOPIC: the tips clients have asked PositionKinematicsNode for (IK or FK
answered), a JSON list on a latched std_msgs/String; realtime_loop adds those on the arm
to tip_states.
"""
import os
import threading

import rospy
from intera_core_msgs.msg import URDFConfiguration
from std_msgs.msg import String

from intera_rt.model.urdf_fragments import FragmentManager

TOPIC = '/robot/urdf'
DESCRIPTION_TOPIC = '/intera_rt/robot_description'
REQUESTED_TIPS_TOPIC = '/intera_rt/requested_tips'


def normal_priority():
    """Take the calling thread out of SCHED_FIFO: realtime_loop's adapter threads run at
    realtime priority, and rebuilding a model (~0.1 s) must not hold anything off."""
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass


class UrdfFragments:
    """Args:
        base_xml: the description the robot booted with.
        on_change: called with each model.urdf_fragments.Change that changed the model,
            after /robot_description is set and DESCRIPTION_TOPIC published."""

    def __init__(self, base_xml, on_change):
        self.manager = FragmentManager(base_xml)
        self.on_change = on_change
        self._lock = threading.Lock()
        self.pub = rospy.Publisher(DESCRIPTION_TOPIC, String, queue_size=1, latch=True)
        self.sub = rospy.Subscriber(TOPIC, URDFConfiguration, self._on_fragment, queue_size=10)

    def _on_fragment(self, msg):
        normal_priority()
        with self._lock:
            change = self.manager.receive(msg.time.to_nsec(), msg.link, msg.joint, msg.urdf)
            if change.kind == 'repeat':
                return
            if change.kind == 'refused':
                rospy.logerr('/robot/urdf: fragment refused (link %r, joint %r): %s; the robot '
                             'keeps its model', change.link, change.joint, change.error)
                return
            if not change.changed:
                rospy.loginfo('/robot/urdf: %s', change.message)
                return
            rospy.set_param('/robot_description', change.xml)
            self.pub.publish(String(data=change.xml))
            rospy.loginfo('/robot/urdf: %s', change.message)
            try:
                self.on_change(change)
            except Exception as exc:   # noqa: BLE001 - the description is set; say what failed
                rospy.logerr('/robot/urdf: the new model is set, but applying it failed: %s', exc)
