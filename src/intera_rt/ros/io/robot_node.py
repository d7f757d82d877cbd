"""RobotIO, in the io node: the robot's own IO node ('robot') — cuff, navigators, lights — and the
sim-control inputs a person gives them.

IO framework topics (see framework): /io/robot/{config,state,command} and
/io/robot/<device>/{config,state,command} for
  cuff       right_cuff, right_button_upper, right_button_lower (int: 0 released,
             1 pressed, 2 held long, 3 double click; read-only inputs)
  navigator  {right,head}_button_{ok,back,show,circle,square,triangle} (int, as above),
             {right,head}_wheel (int, u8), {right,head}_{inner,outer}_light (bool, writable)
  robot      head_/right_hand_{red,green,blue}_light (bool, writable; echoed in the
             state), ports right_hand_camera_power, torso_camera_power, torso_fan,
             torso_light (bool, writable)
Deprecated DigitalIO view of the same signals: /robot/digital_io/<name>/state
(intera_core_msgs/DigitalIOState, latched, on change; isInputOnly for buttons and cuff)
and /robot/digital_io/command (DigitalOutputCommand) for the lights and ports.

Sim control (/intera_rt/sim/):
  cuff    std_srvs/SetBool              grasp (true) / release (false) the cuff: right_cuff 1 / 0
  button  intera_rt_msgs/PressButton    click, double_click, long_hold, press, release a
                                        cuff or navigator button
  wheel   intera_rt_msgs/TurnWheel      turn a navigator wheel by some detents
A state change is published at once by the thread that makes it (the zero-G and JTAS
listeners see it within a few ms); a button's later values follow on a timer in ROS time.
"""
import threading

import rospy
from intera_core_msgs.msg import DigitalIOState, DigitalOutputCommand
from intera_rt_msgs.srv import PressButton, PressButtonResponse, TurnWheel, TurnWheelResponse
from std_srvs.srv import SetBool, SetBoolResponse

from intera_rt.io import buttons
from intera_rt.io.robot_devices import (CUFF_SIGNALS, cuff_device, navigator_buttons,
                                        navigator_device, robot_device)
from intera_rt.ros.io.framework import IONode

SIM_NS = '/intera_rt/sim/'
WHEELS = ('right_wheel', 'head_wheel')


class RobotIO:
    def __init__(self):
        self.io = IONode('robot')
        self.cuff, self.navigator, self.robot = cuff_device(), navigator_device(), robot_device()
        for device in (self.cuff, self.navigator, self.robot):
            self.io.add_device(device)
        # Buttons a simulated person can press, with the device they belong to.
        self.buttons = {name: self.cuff for name in CUFF_SIGNALS}
        self.buttons.update((name, self.navigator) for name in navigator_buttons())
        self._generation = {name: 0 for name in self.buttons}    # cancels a running sequence
        self._digital = DigitalIO(self)
        self.io.on_change.append(self._digital.publish_changes)
        rospy.Service(SIM_NS + 'cuff', SetBool, self._sim_cuff)
        rospy.Service(SIM_NS + 'button', PressButton, self._sim_button)
        rospy.Service(SIM_NS + 'wheel', TurnWheel, self._sim_wheel)
        self.io.start()

    # --- sim control ---------------------------------------------------------------------
    def _set(self, device, name, value):
        with self.io.lock:
            if device.set_value(name, value):
                self.io.changed(device)

    def _sim_cuff(self, req):
        value = buttons.CLICK if req.data else buttons.OFF
        with self.io.lock:
            self._generation['right_cuff'] += 1
            self._set(self.cuff, 'right_cuff', value)
        return SetBoolResponse(True, 'cuff %s: right_cuff = %d'
                               % ('grasped' if req.data else 'released', value))

    def _sim_button(self, req):
        device = self.buttons.get(req.name)
        if device is None:
            return PressButtonResponse(False, 'no button %r: buttons are %s'
                                       % (req.name, ', '.join(sorted(self.buttons))))
        try:
            steps = buttons.sequence(req.action, req.duration)
        except ValueError as exc:
            return PressButtonResponse(False, '%s: %s' % (req.name, exc))
        with self.io.lock:
            self._generation[req.name] += 1
            generation = self._generation[req.name]
            value, hold = steps[0]
            self._set(device, req.name, value)
        if len(steps) > 1:
            threading.Thread(target=self._play, args=(device, req.name, generation, hold, steps[1:]),
                             daemon=True).start()
        return PressButtonResponse(True, '%s: %s (%s)' % (req.name, req.action, ', then '.join(
            '%d%s' % (v, '' if h is None else ' for %.2f s' % h) for v, h in steps)))

    def _play(self, device, name, generation, hold, steps):
        """The rest of a button sequence; stops when another action on the button starts."""
        for value, next_hold in steps:
            try:
                rospy.sleep(hold)
            except rospy.ROSException:              # shutdown, or sim time moved backwards
                return
            with self.io.lock:
                if self._generation[name] != generation:
                    return
                self._set(device, name, value)
            hold = next_hold

    def _sim_wheel(self, req):
        if req.name not in WHEELS:
            return TurnWheelResponse(False, 'no wheel %r: wheels are %s' % (req.name, ', '.join(WHEELS)),
                                     0)
        with self.io.lock:
            current = self.navigator.value(req.name)
            try:
                value = buttons.wheel_value(current, req.steps)
            except ValueError as exc:
                return TurnWheelResponse(False, '%s: %s' % (req.name, exc), current)
            self._set(self.navigator, req.name, value)
        return TurnWheelResponse(True, '%s: %d → %d' % (req.name, current, value), value)


class DigitalIO:
    """The deprecated DigitalIO interface over the same signals: one latched
    /robot/digital_io/<name>/state per bool or int signal and port of the robot node
    (buttons and cuff read PRESSED when non-zero), and /robot/digital_io/command for the
    writable ones (lights, ports)."""

    def __init__(self, owner):
        self.owner = owner
        self._pubs = {}
        self._last = {}
        self._writable = {}
        for device in (owner.cuff, owner.navigator, owner.robot):
            for sig in list(device.signals.values()) + list(device.ports.values()):
                if sig.name.endswith('_wheel'):
                    continue                      # a byte, not a digital line
                self._pubs[sig.name] = rospy.Publisher('/robot/digital_io/%s/state' % sig.name,
                                                       DigitalIOState, queue_size=10, latch=True)
                if sig.writable and sig.type == 'bool':
                    self._writable[sig.name] = device
            self.publish_changes(device)
        rospy.Subscriber('/robot/digital_io/command', DigitalOutputCommand, self._on_command,
                         queue_size=10)

    def publish_changes(self, device):
        for sig in list(device.signals.values()) + list(device.ports.values()):
            pub = self._pubs.get(sig.name)
            if pub is None:
                continue
            state = DigitalIOState.PRESSED if sig.value else DigitalIOState.UNPRESSED
            if self._last.get(sig.name) != state:
                self._last[sig.name] = state
                pub.publish(DigitalIOState(state=state, isInputOnly=not sig.writable))

    def _on_command(self, msg):
        device = self._writable.get(msg.name)
        if device is None:
            self.owner.io.log(rospy.logwarn, 'digital_io', '/robot/digital_io/command: %r is not a '
                              'digital output; outputs are %s' % (msg.name, ', '.join(sorted(self._writable))))
            return
        self.owner._set(device, msg.name, bool(msg.value))
