"""Why the arm cannot move now: one view of the robot's state for its three action servers
(motion controller, joint trajectory action server, calibration), so that each refuses or
ends a goal for the same reasons, in the same words.

Fed by /intera_rt/realtime_state (the robot's state as /robot/state reports it: E-stop,
error, stopped, disabled; zero-G, the collision stop that collision_detection_state also
reports, the active controller) and, for a server that watches the cuff as the SDK's JTAS
does, /io/robot/cuff/state. Not /robot/state itself: that comes at 100 Hz, and each message
woke the servers' process (~100 of the ~270 messages a sim second it took in lockstep) for
what changes a few times a run; realtime_state comes at once on a change and at 10 Hz
otherwise. Each server keeps a view of its own (its callbacks run in its node's threads); a
reason reads the latest messages only.
"""
import json
from dataclasses import dataclass

import rospy
from intera_core_msgs.msg import IODeviceStatus, RobotAssemblyState
from intera_rt_msgs.msg import RealtimeState

NO_STATE = 'no_state'
ESTOP = 'estop'
ERROR = 'error'
STOPPED = 'stopped'
DISABLED = 'disabled'
COLLISION = 'collision'
ZERO_G = 'zero_g'
CUFF = 'cuff'


@dataclass(frozen=True)
class CannotMove:
    """A reason: `kind` (one of the constants above) for a server to map to its result code,
    `text` for its log line and result, `robot_holds`: the robot itself stops and holds the
    arm (after a collision it detected, in zero-G), so a server sends no stop ramp."""
    kind: str
    text: str
    robot_holds: bool = False


_ROBOT = {
    NO_STATE: CannotMove(NO_STATE, 'no robot state received yet (/intera_rt/realtime_state)'),
    ESTOP: CannotMove(ESTOP, 'the E-stop button is pressed'),
    ERROR: CannotMove(ERROR, 'the robot is in error'),
    STOPPED: CannotMove(STOPPED, 'the robot is stopped'),
    DISABLED: CannotMove(DISABLED, 'the robot is disabled (enable it: /robot/set_super_enable true)'),
}
_HAZARD = {
    COLLISION: CannotMove(COLLISION, 'a collision was detected (collision_detection_state)', True),
    ZERO_G: CannotMove(ZERO_G, 'zero-G was activated (the cuff was grasped)', True),
    CUFF: CannotMove(CUFF, 'the cuff was grasped (right_cuff)'),
}


class ArmConditions:
    """The latest robot and realtime state, fed by on_* (listen() subscribes them)."""

    def __init__(self):
        self.robot = None            # the robot's latest RobotAssemblyState
        self.zero_g = False
        self.collision = False       # the latest realtime_state's collision flag
        self.collisions = 0          # collision reports so far (compare counts: one since?)
        self.controller = None       # the robot's active joint controller, once known
        self.cuff = False

    @classmethod
    def listen(cls, cuff=False):
        """A view fed by the robot's topics; cuff: also watch the cuff's right_cuff signal
        (a grasp is then a hazard)."""
        view = cls()
        rospy.Subscriber('/intera_rt/realtime_state', RealtimeState, view.on_realtime_state,
                         queue_size=1)
        if cuff:
            rospy.Subscriber('/io/robot/cuff/state', IODeviceStatus, view.on_cuff, queue_size=10)
        return view

    def on_realtime_state(self, msg):
        self.robot = msg.robot
        self.zero_g = bool(msg.zero_g)
        self.controller = msg.controller
        self.collision = bool(msg.collision)
        if self.collision:
            self.collisions += 1

    def on_cuff(self, msg):
        for sig in msg.signals:
            if sig.name == 'right_cuff':
                try:
                    data = json.loads(sig.data)
                    value = data[0] if isinstance(data, list) and data else data
                except (ValueError, TypeError):
                    continue
                self.cuff = bool(value) and value not in ('false', 'False', '0')

    def why_not(self, require_state=True):
        """Why the robot cannot move at all (its brakes are on), or None. Without
        require_state, a robot not heard from yet is no reason."""
        s = self.robot
        if s is None:
            return _ROBOT[NO_STATE] if require_state else None
        if s.estop_button == RobotAssemblyState.ESTOP_BUTTON_PRESSED:
            return _ROBOT[ESTOP]
        if s.error:
            return _ROBOT[ERROR]
        if s.stopped:
            return _ROBOT[STOPPED]
        if not s.enabled:
            return _ROBOT[DISABLED]
        return None

    def hazard(self, collisions_seen=None):
        """Why a goal must end although the robot could move, or None: a collision the
        robot detected (reported now, or since the count `collisions_seen`), zero-G, the
        cuff grasped (when watched)."""
        if self.collision or (collisions_seen is not None and self.collisions != collisions_seen):
            return _HAZARD[COLLISION]
        if self.zero_g:
            return _HAZARD[ZERO_G]
        if self.cuff:
            return _HAZARD[CUFF]
        return None
