"""The devices of the robot's own IO node ('robot'): the cuff, the navigators and the robot
device (head and hand lights, power and fan ports), with the signal names, types and roles
a real Sawyer reports (robot_contract.md §3.9 and its [bag] note).
"""
from intera_rt.io.device import Device, Signal

CUFF_SIGNALS = ('right_cuff', 'right_button_upper', 'right_button_lower')
NAVIGATOR_SIDES = ('right', 'head')
NAVIGATOR_BUTTONS = ('ok', 'back', 'show', 'circle', 'square', 'triangle')
NAVIGATOR_LIGHTS = ('inner_light', 'outer_light')
LIGHTS = ('head_red_light', 'head_green_light', 'head_blue_light',
          'right_hand_red_light', 'right_hand_green_light', 'right_hand_blue_light')
# The robot device's non-light ports (the [bag]'s): camera power, torso fan and light.
ROBOT_PORTS = ('right_hand_camera_power', 'torso_camera_power', 'torso_fan', 'torso_light')
# Boot values: the head's green light on (the real robot's head lights are on at boot),
# cameras powered, fan running.
LIGHTS_ON_AT_BOOT = ('head_green_light',)
PORTS_ON_AT_BOOT = ('right_hand_camera_power', 'torso_camera_power', 'torso_fan')

_INPUT_HINT = ('a person gives it; in simulation call /intera_rt/sim/cuff (grasp) or '
               '/intera_rt/sim/button')
_WHEEL_HINT = 'a person turns it; in simulation call /intera_rt/sim/wheel'


def navigator_buttons():
    return ['%s_button_%s' % (side, b) for side in NAVIGATOR_SIDES for b in NAVIGATOR_BUTTONS]


def cuff_device():
    """Device 'cuff': right_cuff (grasped), right_button_upper, right_button_lower — ints,
    0 released, 1 pressed, 2 held long, 3 double click; read-only inputs."""
    return Device('cuff', 'robot', [Signal(n, 'int', 'input', 0, read_only_hint=_INPUT_HINT)
                                    for n in CUFF_SIGNALS])


def navigator_device():
    """Device 'navigator': per side (right arm, head) six buttons (int, as the cuff's), the
    wheel (int, unsigned byte: format data_type u8) and two lights (bool, writable)."""
    signals = [Signal(n, 'int', 'input', 0, read_only_hint=_INPUT_HINT) for n in navigator_buttons()]
    signals += [Signal('%s_wheel' % side, 'int', 'input', 0, data_type='u8',
                       read_only_hint=_WHEEL_HINT) for side in NAVIGATOR_SIDES]
    signals += [Signal('%s_%s' % (side, light), 'bool', 'output', False, writable=True)
                for side in NAVIGATOR_SIDES for light in NAVIGATOR_LIGHTS]
    return Device('navigator', 'robot', signals)


def robot_device():
    """Device 'robot': the head and hand lights (bool signals; the robot reports them with
    role "input" but takes writes) and the ports right_hand_camera_power,
    torso_camera_power, torso_fan, torso_light (bool, writable)."""
    signals = [Signal(n, 'bool', 'input', n in LIGHTS_ON_AT_BOOT, writable=True) for n in LIGHTS]
    ports = [Signal(n, 'bool', 'output', n in PORTS_ON_AT_BOOT, writable=True) for n in ROBOT_PORTS]
    return Device('robot', 'robot', signals, ports)
