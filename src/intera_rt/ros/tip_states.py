"""Which tips /robot/limb/right/tip_states reports, and by which model: the robot's own
tips, the links URDF fragments (/robot/urdf) put on the arm, and the tips clients asked
IK/FK for (REQUESTED_TIPS_TOPIC). The realtime_loop node reads `view` at 100 Hz; it is
swapped whole when a fragment or a request changes it, with every KDL chain built first.
"""
import json
import threading

import rospy
from std_msgs.msg import String

from intera_rt.ros.urdf_fragments import REQUESTED_TIPS_TOPIC, UrdfFragments, normal_priority

TIP_NAMES = ('right_hand', 'right_hand_camera')   # the robot's own


class TipStates:
    """view: (model, tip names). Subscribes at construction; `on_change(change)` is called
    after tip_states follows a fragment's change."""

    def __init__(self, model, on_change=None):
        self.view = (model, TIP_NAMES)
        self._on_change = on_change
        self._requested = []             # tips clients asked IK/FK for
        self._lock = threading.Lock()
        self.fragments = UrdfFragments(model.urdf_xml, self._on_model_change)
        rospy.Subscriber(REQUESTED_TIPS_TOPIC, String, self._on_requested, queue_size=2)

    def _on_model_change(self, change):
        """A fragment changed the robot's description: tip_states follows it."""
        self._set(change.model)
        if self._on_change is not None:
            self._on_change(change)

    def _on_requested(self, msg):
        normal_priority()                # builds KDL chains: not at the adapter's priority
        try:
            names = json.loads(msg.data)
        except ValueError:
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            rospy.logwarn('realtime_loop: %s: expected a JSON list of link names, got %r'
                          % (REQUESTED_TIPS_TOPIC, msg.data[:200]))
            return
        self._requested = names
        self._set()

    def _set(self, model=None):
        """The tips for `model` (None: the current one): the robot's own, the fragments'
        links on the arm, the tips clients asked for."""
        with self._lock:
            model = model or self.view[0]
            tips = TIP_NAMES + tuple(self.fragments.manager.tips(model, self._requested,
                                                                  exclude=TIP_NAMES))
            for tip in tips:             # KDL chains built here, not at 100 Hz
                model.chain(tip)
            if tips != self.view[1]:
                rospy.loginfo('realtime_loop: tip_states: %s', ', '.join(tips))
            self.view = (model, tips)
