"""EndEffectorIO, in the io node: the end-effector IO node ('end_effector') and, when the robot boots
with one (`scripts/sawyer --gripper`, launch arg gripper:=true, param ~gripper), the
Rethink electric parallel gripper 'right_gripper'.

Topics: /io/end_effector/{config,state,command} — without a gripper with an empty device
list, as a robot with nothing on its flange (the SDK's calibrate_arm.py requires that
get_current_gripper_interface() finds no gripper); with one,
/io/end_effector/right_gripper/{config,state,command} (signals in intera_rt.io.gripper).
Node-level command: op 'activate' with {"devices": ["right_gripper"]} (acknowledged; the
gripper is always active).

Action (gripper only): /robot/end_effector/right_gripper/gripper_action,
control_msgs/GripperCommand, for MoveIt (controller_list: name
/robot/end_effector/right_gripper, action_ns gripper_action, type GripperCommand).
command.position is the finger separation in m (0..0.041667, as position_m);
command.max_effort > 0 sets the holding force (N, clamped to 40), 0 keeps it. Succeeds when
the fingers reach the position (within dead_zone_m) or stop on an object (stalled, the
object gripped); aborted with a reason when the gripper is not calibrated, has an error, the
position is out of range or another client stops the fingers; a cancel stops them.

The gripper's description: while it is attached the node keeps its URDF fragment
(model.urdf_fragments.ELECTRIC_GRIPPER: right_gripper_base, the fingers, right_gripper_tip)
on /robot/urdf, latched, as the real robot's gripper does; realtime_loop grafts it into the
robot's model (docs/urdf_fragments.md). It is sent again when a reboot ends.

Sim control: /intera_rt/sim/gripper_object (intera_rt_msgs/PlaceObject) puts an object of a
width (m) and mass (kg) between the fingers, width 0 takes it away. The mass is reported in
the answer only: it is not (yet) a payload of the simulated arm. When the robot's plant has
the gripper's fingers (a simulated world: /intera_rt/sim/gripper_state arrives), the device
follows them instead of simulating its own, and sends its targets on
/intera_rt/sim/gripper_command.
"""
import json
import math
import threading

import actionlib
import rospy
from control_msgs.msg import GripperCommandAction, GripperCommandFeedback, GripperCommandResult
from intera_core_msgs.msg import URDFConfiguration
from intera_rt_msgs.msg import GripperCommand, GripperState
from intera_rt_msgs.srv import PlaceObject, PlaceObjectResponse

from intera_rt.io.gripper import MAX_FORCE, MAX_POSITION, ElectricGripper
from intera_rt.model.urdf_fragments import DEFAULT_JOINT, DEFAULT_LINK, electric_gripper_fragment
from intera_rt.ros.actions import quiet_status_timer
from intera_rt.ros.io.framework import IONode

ACTION = '/robot/end_effector/right_gripper/gripper_action'
SIM_OBJECT = '/intera_rt/sim/gripper_object'
URDF_TOPIC = '/robot/urdf'
PLANT_STATE = '/intera_rt/sim/gripper_state'
PLANT_COMMAND = '/intera_rt/sim/gripper_command'
ACTION_TIMEOUT = 10.0          # s of ROS time a gripper move may take


class EndEffectorIO:
    def __init__(self, gripper):
        self.io = IONode('end_effector', config={'props': {'id': '/io/end_effector',
                                                           'owner': 'system'}})
        self.io.on_node_command = self._node_command
        self.gripper = None
        self._worker = None
        if gripper:
            self.gripper = ElectricGripper()
            endpoint = self.io.add_device(self.gripper)
            endpoint.on_applied.append(lambda device, msg, response: self._wake())
            self._server = actionlib.SimpleActionServer(ACTION, GripperCommandAction,
                                                        execute_cb=self._execute, auto_start=False)
            self._server.start()
            quiet_status_timer(self._server.action_server)
            # Latched: realtime_loop (and a realtime_loop that connects later) gets it.
            self._urdf = rospy.Publisher(URDF_TOPIC, URDFConfiguration, queue_size=1, latch=True)
            self._announce()
            self._plant_sent = None
            self._pub_plant = rospy.Publisher(PLANT_COMMAND, GripperCommand, queue_size=10, latch=True)
            rospy.Subscriber(PLANT_STATE, GripperState, self._on_plant, queue_size=1)
        rospy.Service(SIM_OBJECT, PlaceObject, self._sim_object)
        self.io.start()

    # --- node commands ---------------------------------------------------------------------
    def _node_command(self, msg):
        if msg.op != 'activate':
            return "unknown op %r: the end-effector node takes 'activate'%s" % (
                msg.op, '' if self.gripper else ' (no end effector is attached)')
        try:
            devices = json.loads(msg.args).get('devices', [])
        except (ValueError, AttributeError):
            return 'activate: args must be {"devices": [names]}, got %.200r' % msg.args
        unknown = [d for d in devices if d not in self.io.endpoints]
        if unknown:
            return 'activate: no device %s on end_effector (devices: %s)' % (
                ', '.join(map(repr, unknown)), ', '.join(self.io.endpoints) or 'none')
        return None

    def _announce(self):
        """Put the gripper's fragment on /robot/urdf (a new `time`: a new message)."""
        self._urdf.publish(URDFConfiguration(time=rospy.Time.now(), link=DEFAULT_LINK,
                                             joint=DEFAULT_JOINT, urdf=electric_gripper_fragment()))

    # --- the fingers' simulation ----------------------------------------------------------------
    def _on_plant(self, msg):
        """The plant's fingers: the device follows them, and tells them its target."""
        with self.io.lock:
            if self.gripper.follow(msg.separation, msg.gripping, msg.force, rospy.get_time()):
                self.io.changed(self.gripper)
            self._command_plant()

    def _command_plant(self):
        """Send the device's target to the plant's fingers when it changed (io.lock held)."""
        if not self.gripper.plant:
            return
        command = self.gripper.plant_command()
        if command != self._plant_sent:
            self._plant_sent = command
            self._pub_plant.publish(GripperCommand(*command))

    def _wake(self):
        """After a command: run the finger simulation while the gripper is active."""
        with self.io.lock:
            self._command_plant()
        if self.gripper.active() and (self._worker is None or not self._worker.is_alive()):
            self._worker = threading.Thread(target=self._simulate, name='gripper', daemon=True)
            self._worker.start()

    def _simulate(self):
        period = 1.0 / self.gripper.update_rate
        while not rospy.is_shutdown():
            with self.io.lock:
                rebooting = self.gripper.rebooting
                if self.gripper.step(rospy.get_time()):
                    self.io.changed(self.gripper)
                if rebooting and not self.gripper.rebooting:
                    self._announce()            # a rebooted gripper describes itself again
                if not self.gripper.active():
                    return
            try:
                rospy.sleep(period)
            except rospy.ROSException:
                return

    def _sim_object(self, req):
        if self.gripper is None:
            return PlaceObjectResponse(False, 'no gripper on the end effector: boot the robot with '
                                              'scripts/sawyer --gripper (launch arg gripper:=true)')
        with self.io.lock:
            try:
                text = self.gripper.place_object(req.width, req.mass)
            except ValueError as exc:
                return PlaceObjectResponse(False, str(exc))
            self.io.changed(self.gripper)
        self._wake()
        return PlaceObjectResponse(True, text)

    # --- GripperCommand action --------------------------------------------------------------
    def _result(self, cls=GripperCommandResult):
        g = self.gripper
        return cls(position=g.position, effort=g.signals['force_response_n'].value,
                   stalled=bool(g.signals['is_gripping'].value), reached_goal=g.reached())

    def _execute(self, goal):
        position, effort = goal.command.position, goal.command.max_effort
        g = self.gripper
        if not (math.isfinite(position) and 0.0 <= position <= MAX_POSITION):
            self._server.set_aborted(self._result(), 'command.position %r m is outside [0, %g] '
                                     '(the finger separation)' % (position, MAX_POSITION))
            return
        if not math.isfinite(effort):
            self._server.set_aborted(self._result(), 'command.max_effort %r is not finite' % effort)
            return
        with self.io.lock:
            error = (g.error and 'the gripper has an error (%s): reboot it' % g.error) or \
                (not g.calibrated and 'the gripper is not calibrated: set its calibrate signal') or \
                (g.tag != 'ready' and 'the gripper is %s' % g.tag)
            if error:
                self._server.set_aborted(self._result(), error)
                return
            if effort > 0:
                g.signals['holding_force_n'].value = min(effort, MAX_FORCE)
            g.move_to(position)
            self.io.changed(g)
        self._wake()
        rate = rospy.Rate(g.update_rate)
        deadline = rospy.get_time() + ACTION_TIMEOUT
        while not rospy.is_shutdown():
            with self.io.lock:
                if self._server.is_preempt_requested():
                    g.stop()
                    self.io.changed(g)
                    self._server.set_preempted(self._result(), 'cancelled: the fingers stopped')
                    return
                moving = g.active()
                self._server.publish_feedback(self._result(GripperCommandFeedback))
                if not moving:
                    result = self._result()
                    if result.reached_goal or result.stalled:
                        self._server.set_succeeded(result, 'gripping an object' if result.stalled
                                                   and not result.reached_goal else 'reached')
                    else:
                        self._server.set_aborted(result, 'the fingers stopped at %.4f m before '
                                                 'reaching %.4f m' % (g.position, position))
                    return
            if rospy.get_time() > deadline:
                self._server.set_aborted(self._result(), 'the move took longer than %g s'
                                         % ACTION_TIMEOUT)
                return
            try:
                rate.sleep()
            except rospy.ROSException:
                return
