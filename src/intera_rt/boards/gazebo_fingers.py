"""The electric gripper's fingers on Gazebo (gazebo backend with option `gripper`): driven by
gazebo_ros_control through one effort_controllers/JointGroupPositionController over the
finger joints (a PID per finger, its effort saturated at the URDF's effort limit), read back
from <namespace>/joint_states. The gripper device talks to them through the same seam as to
MuJoCo's fingers (/intera_rt/sim/gripper_command → here → the controller; joint_states →
here → /intera_rt/sim/gripper_state).

What the device asks and what a position controller allows (docs/backends.md):
- separation: each finger's setpoint is half of it on its side, symmetric about the
  gripper's centre (Gazebo ignores the URDF's <mimic>: each finger has its own PID, and the
  symmetric setpoints pull the pair back to the centre as the gripper's linkage does);
- speed: the setpoint slews toward the target at the commanded speed; the URDF's finger
  velocity limit caps it further (gazebo_ros_control zeroes an effort that would push a
  joint faster than its limit);
- force: a PID has no force limit of its own, so the setpoints' separation is kept within
  force / P of the fingers' separation: at rest each finger squeezes with half the commanded
  force (the URDF's effort limit caps it); moving, the PID's D term adds to it;
- is_gripping: closing, the fingers stopped short of the target (their separation no longer
  changing: without <mimic> the pair may slide sideways together) with their setpoints at
  that lead (Gazebo's joint states carry no contacts).
The finger joints are the prismatic joints of the gripper's fragment. rospy and message
packages only (never intera_rt.ros); rospy is passed in.
"""
import numpy as np

from intera_rt.boards.base import GripperCommand, GripperState
from intera_rt.boards.mjcf import finger_position, finger_side
from intera_rt.model.urdf_fragments import electric_gripper_fragment

CONTROLLER = 'gripper_controller'
CONTROLLER_TYPE = 'effort_controllers/JointGroupPositionController'
# Each finger's PID (controllers YAML: <controller>/<joint>/pid). P: 20 N at 10 mm of lead,
# D near critical damping of a 0.07 kg finger; both explicit-stable at Gazebo's 1 ms step.
FINGER_PID = {'p': 2000.0, 'i': 0.0, 'd': 15.0}
FINGER_MU = 1.0                       # the finger pads' friction (<gazebo reference> mu1/mu2)
PERIOD = 0.01                         # s of Gazebo time between setpoints and gripper states
STOPPED = 0.005                       # m/s: fingers closing slower than this have stopped
SETTLE = 0.02                         # s a setpoint is held at the lead before a stopped
                                      # finger counts as stopped on an object
SIM_NS = '/intera_rt/sim/'
GRIPPED = 'object'                    # what GripperState.gripping names: Gazebo's joint
                                      # states do not say which model the fingers hold


def finger_joints(urdf=None):
    """The gripper's finger joints: {name: (lower, upper, effort, velocity)} of the prismatic
    joints of `urdf` (a urdf_parser_py URDF; default: the electric gripper's fragment)."""
    if urdf is None:
        from urdf_parser_py.urdf import URDF
        urdf = URDF.from_xml_string(electric_gripper_fragment())
    return {j.name: (j.limit.lower, j.limit.upper, j.limit.effort, j.limit.velocity)
            for j in urdf.joints if j.type == 'prismatic'}


class FingerSetpoints:
    """The device's command as the finger controller's setpoints (pure: time passed in).

    Args:
        joints: {name: (lower, upper, effort, velocity)} (finger_joints), in command order.
        p: the controller's P gain (N/m), which turns a setpoint's lead into force.
    """

    def __init__(self, joints, p=FINGER_PID['p']):
        self.names = tuple(joints)
        lim = np.array([joints[n] for n in self.names], float)
        self.lower, self.upper = lim[:, 0], lim[:, 1]
        self.sign = np.array([finger_side(lo, hi) for lo, hi in zip(self.lower, self.upper)])
        self.span = float(np.sum(np.maximum(np.abs(self.lower), np.abs(self.upper))))
        self.p = float(p)
        self.command = GripperCommand(self.span, 1.0, 2.0 * float(lim[:, 2].min()))
        self.separation = None          # m: the slewed target (None: where the fingers are)
        self.time = None
        self.setpoints = None           # the last setpoints, per finger
        self.lead_since = None          # Gazebo time since a setpoint is held at the lead

    def set(self, command):
        self.command = command

    def update(self, t, q):
        """The setpoints at Gazebo time t for finger positions q."""
        q = np.asarray(q, float)
        measured = float(np.sum(self.sign * q))
        if self.separation is None:
            self.separation, self.time = measured, t
        c = self.command
        target = min(max(c.separation, 0.0), self.span)
        step = max(c.speed, 0.0) * max(t - self.time, 0.0)
        self.time = t
        self.separation += min(max(target - self.separation, -step), step)
        lead = max(c.force, 0.0) / self.p
        held = min(max(self.separation, measured - lead), measured + lead)
        sp = np.array([finger_position(lo, hi, held) for lo, hi in zip(self.lower, self.upper)])
        if abs(held - self.separation) <= 1e-9:
            self.lead_since = None
        elif self.lead_since is None:
            self.lead_since = t
        self.setpoints = sp
        return sp

    def state(self, t, q, qd, effort, dead=2e-4):
        """GripperState at Gazebo time t of the fingers at q, moving at qd, pushing with
        `effort` (after update)."""
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        separation = float(np.sum(self.sign * q))
        c = self.command
        leading = self.lead_since is not None and t - self.lead_since >= SETTLE
        # (the separation's rate: without <mimic> the pair may slide sideways together)
        gripping = (leading and c.separation < separation - dead
                    and abs(float(np.sum(self.sign * qd))) < STOPPED)
        force = float(np.sum(np.abs(effort))) if gripping else 0.0
        return GripperState(separation, GRIPPED if gripping else '', force)


class GazeboFingers:
    """The seam's ROS side in the boards' node: call `on_joint_state` with every joint state.

    Args:
        rospy: the module.
        namespace: gazebo_ros_control's robotNamespace.
        controller: the finger controller's name (its topic <namespace>/<controller>/command).
    """

    def __init__(self, rospy, namespace, controller=CONTROLLER):
        from intera_rt_msgs.msg import GripperCommand as CommandMsg, GripperState as StateMsg
        from std_msgs.msg import Float64MultiArray
        self._rospy = rospy
        self._StateMsg = StateMsg
        self._Float64MultiArray = Float64MultiArray
        joints = finger_joints()
        gains = rospy.get_param('%s/%s/%s/pid' % (namespace, controller, next(iter(joints))), {})
        self.setpoints = FingerSetpoints(joints, float(gains.get('p', FINGER_PID['p'])))
        self.topic = '%s/%s/command' % (namespace, controller)
        self._pub = rospy.Publisher(self.topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
        self._pub_state = rospy.Publisher(SIM_NS + 'gripper_state', StateMsg, queue_size=1)
        self._sub = rospy.Subscriber(SIM_NS + 'gripper_command', CommandMsg, self._on_command,
                                     queue_size=10)
        self._order = None
        self._next = -np.inf
        self.latest = None              # GripperState

    def _on_command(self, msg):
        values = (msg.separation, msg.speed, msg.force)
        if not all(np.isfinite(values)):
            self._rospy.logerr('%sgripper_command: separation, speed and force must be finite, '
                               'got %s', SIM_NS, list(values))
            return
        self.setpoints.set(GripperCommand(*values))

    def on_joint_state(self, msg, stamp):
        """Every PERIOD of Gazebo time: the setpoints to the controller, the state to the
        device."""
        if stamp < self._next:
            return
        self._next = stamp + PERIOD
        names = msg.name
        if self._order is None or self._order[0] != names:
            try:
                self._order = (list(names), [names.index(n) for n in self.setpoints.names])
            except ValueError:
                return                  # no fingers in Gazebo's joint states
        idx = self._order[1]
        q = [msg.position[i] for i in idx]
        sp = self.setpoints.update(stamp, q)
        self._pub.publish(self._Float64MultiArray(data=sp.tolist()))
        s = self.latest = self.setpoints.state(stamp, q, [msg.velocity[i] for i in idx],
                                               [msg.effort[i] for i in idx])
        out = self._StateMsg(separation=s.separation, gripping=s.gripping, force=s.force)
        out.header.stamp = msg.header.stamp
        self._pub_state.publish(out)

    def close(self):
        self._sub.unregister()
        self._pub.unregister()
        self._pub_state.unregister()
