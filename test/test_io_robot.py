"""The robot IO node (cuff, navigator, lights) through ROS, as the SDK uses it: latched
configs within 5 s, states whose time changes, set commands republished until acknowledged;
and the sim-control inputs a person gives (cuff grasp, buttons, wheel)."""
import json
import statistics
import time

import pytest

from io_client import IODevice, sim_call
from rosharness import latest

pytestmark = pytest.mark.sawyer_args([])

CUFF = ('right_cuff', 'right_button_upper', 'right_button_lower')
LIGHTS = ('head_red_light', 'head_green_light', 'head_blue_light',
          'right_hand_red_light', 'right_hand_green_light', 'right_hand_blue_light')
NAV_BUTTONS = ['%s_button_%s' % (s, b) for s in ('right', 'head')
               for b in ('ok', 'back', 'show', 'circle', 'square', 'triangle')]


@pytest.fixture(scope='module')
def devices(robot):
    devs = {name: IODevice('robot', name) for name in ('cuff', 'navigator', 'robot')}
    yield devs
    for dev in devs.values():
        dev.close()


def press(name, action, duration=0.0):
    from intera_rt_msgs.srv import PressButton
    return sim_call('/intera_rt/sim/button', PressButton, name, action, duration)


def cuff(grasp):
    from std_srvs.srv import SetBool
    return sim_call('/intera_rt/sim/cuff', SetBool, grasp)


def test_configs_and_states_as_the_sdk_reads_them(devices):
    from intera_core_msgs.msg import IONodeConfiguration
    for name, dev in devices.items():
        assert dev.config.device.name == name
        props = json.loads(dev.config.device.config)['props']
        assert props['state_pub_rate_hz'] == 5.0 and props['id'] == '/io/robot/' + name
        assert dev.state.time.secs != 0 and dev.state.device.status.tag == 'ready'
        for entry in list(dev.state.signals) + list(dev.state.ports):
            fmt = json.loads(entry.format)
            assert {'type', 'role'} <= set(fmt), entry.name
            assert isinstance(json.loads(entry.data), list), entry.name
    assert [s.name for s in devices['cuff'].state.signals] == list(CUFF)
    nav = {s.name for s in devices['navigator'].state.signals}
    assert set(NAV_BUTTONS) | {'right_wheel', 'head_wheel'} <= nav
    assert json.loads(devices['navigator'].entry('head_wheel').format)['data_type'] == 'u8'
    robot = devices['robot'].state
    assert [s.name for s in robot.signals if 'light' in s.name] == list(LIGHTS)
    assert {p.name for p in robot.ports} == {'right_hand_camera_power', 'torso_camera_power',
                                             'torso_fan', 'torso_light'}
    with latest('/io/robot/config', IONodeConfiguration) as node:
        msg = node.wait(5.0)
        assert msg.node.name == 'robot' and msg.time.secs != 0
        assert [d.name for d in msg.devices] == ['cuff', 'navigator', 'robot']


def test_states_are_republished_with_new_times(devices):
    dev = devices['cuff']
    start = time.monotonic()
    dev.wait(lambda: len([t for t, _ in dev.history if t > start]) >= 5, 3.0,
             'five republished cuff states')
    times = [s.time for t, s in dev.history if t > start]
    assert len(set(times)) == len(times) and all(a < b for a, b in zip(times, times[1:]))


def test_cuff_grasp_is_published_at_once(devices):
    dev = devices['cuff']
    delays = []
    for grasp in (True, False) * 3:
        t0 = time.monotonic()
        assert cuff(grasp).success
        dev.wait_value('right_cuff', 1 if grasp else 0, 2.0)
        delays.append(time.monotonic() - t0)
    # on change, not at the next 5 Hz republication (0.1 s later on average)
    assert statistics.median(delays) < 0.05, delays


def test_cuff_signals_are_read_only(devices):
    dev = devices['cuff']
    response = dev.set('right_cuff', 1)
    assert 'read-only' in response and '/intera_rt/sim/cuff' in response
    assert dev.value('right_cuff') == 0


@pytest.mark.parametrize('device, button', [('cuff', 'right_button_upper'),
                                            ('cuff', 'right_button_lower'),
                                            ('navigator', 'right_button_ok'),
                                            ('navigator', 'head_button_circle')])
@pytest.mark.parametrize('action, values', [('click', [0, 1, 0]), ('double_click', [0, 1, 3, 0]),
                                            ('long_hold', [0, 1, 2, 0])])
def test_button_actions_show_their_codes(devices, device, button, action, values):
    dev = devices[device]
    start = time.monotonic()
    response = press(button, action)
    assert response.success, response.message
    dev.wait(lambda: dev.values_since(button, start) == values, 4.0,
             '%s %s to read %s (seen %s)' % (button, action, values, dev.values_since(button, start)))


def test_press_and_release(devices):
    dev = devices['navigator']
    assert press('right_button_show', 'press').success
    dev.wait_value('right_button_show', 1)
    assert press('right_button_show', 'release').success
    dev.wait_value('right_button_show', 0)


def test_wheel_turns_and_wraps(devices):
    from intera_rt_msgs.srv import TurnWheel
    dev = devices['navigator']
    start = dev.value('right_wheel')
    r = sim_call('/intera_rt/sim/wheel', TurnWheel, 'right_wheel', 3)
    assert r.success and r.value == (start + 3) % 256
    dev.wait_value('right_wheel', (start + 3) % 256)
    r = sim_call('/intera_rt/sim/wheel', TurnWheel, 'right_wheel', -(start + 4))
    assert r.success and r.value == 255
    dev.wait_value('right_wheel', 255)
    assert dev.value('head_wheel') == 0


def test_lights_are_echoed(devices):
    dev = devices['robot']
    for name in ('head_red_light', 'right_hand_blue_light'):
        for on in (True, False, True):
            assert dev.set(name, on) == ''
            assert dev.value(name) is on          # the acknowledging state carries the value
    nav = devices['navigator']
    assert nav.set('right_inner_light', True) == '' and nav.value('right_inner_light') is True


def test_ports_are_set(devices):
    dev = devices['robot']
    assert dev.set('torso_light', True, kind='ports') == ''
    assert dev.value('torso_light') is True


@pytest.mark.parametrize('args, words', [
    ({'signals': {'head_purple_light': {'format': {'type': 'bool'}, 'data': [True]}}},
     ["no signal 'head_purple_light'", 'head_red_light']),
    ({'signals': {'head_red_light': {'format': {'type': 'bool'}, 'data': ['on']}}},
     ['bool signal', '"on" is not a bool']),
    ('{"signals": ', ['not JSON']),
])
def test_bad_commands_get_clear_errors(devices, args, words):
    dev = devices['robot']
    before = dev.value('head_red_light')
    response = dev.command('set', args)
    for word in words:
        assert word in response, response
    assert dev.value('head_red_light') == before


def test_unknown_op_is_refused(devices):
    response = devices['robot'].command('reconfigure', {})
    assert "unknown op 'reconfigure'" in response


def test_sim_errors_name_what_exists(devices):
    r = press('right_button_pinky', 'click')
    assert not r.success and 'right_button_ok' in r.message and 'right_cuff' in r.message
    r = press('right_button_ok', 'tap')
    assert not r.success and "unknown button action 'tap'" in r.message and 'double_click' in r.message
    from intera_rt_msgs.srv import TurnWheel
    r = sim_call('/intera_rt/sim/wheel', TurnWheel, 'left_wheel', 1)
    assert not r.success and 'right_wheel' in r.message
    r = sim_call('/intera_rt/sim/wheel', TurnWheel, 'head_wheel', 0)
    assert not r.success and 'non-zero' in r.message


def test_digital_io_view(devices):
    import rospy
    from intera_core_msgs.msg import DigitalIOState, DigitalOutputCommand
    with latest('/robot/digital_io/head_blue_light/state', DigitalIOState) as light, \
            latest('/robot/digital_io/right_cuff/state', DigitalIOState) as grasp:
        assert grasp.wait(5.0).isInputOnly
        pub = rospy.Publisher('/robot/digital_io/command', DigitalOutputCommand, queue_size=10)
        try:
            light.wait(5.0)
            deadline = time.monotonic() + 5.0
            while light.get().state != 1:
                pub.publish(DigitalOutputCommand(name='head_blue_light', value=True))
                assert time.monotonic() < deadline, 'head_blue_light not switched on'
                time.sleep(0.1)
            devices['robot'].wait_value('head_blue_light', True)
            assert not light.get().isInputOnly
        finally:
            pub.unregister()
        assert cuff(True).success
        grasp.wait(2.0, lambda m: m.state == 1)
        assert cuff(False).success
        grasp.wait(2.0, lambda m: m.state == 0)


def test_without_a_gripper_the_end_effector_node_has_no_devices(robot):
    """As calibrate_arm.py requires: the node answers (state within 5 s) with no devices."""
    import rosgraph
    from intera_core_msgs.msg import IONodeConfiguration, IONodeStatus
    from intera_rt_msgs.srv import PlaceObject
    with latest('/io/end_effector/config', IONodeConfiguration) as config, \
            latest('/io/end_effector/state', IONodeStatus) as state:
        assert state.wait(5.0).devices == [] and state.get().time.secs != 0
        assert config.wait(5.0).devices == []
    published = {t for t, _ in rosgraph.Master('/test').getPublishedTopics('/io/end_effector')}
    assert not any(t.startswith('/io/end_effector/right_gripper') for t in published)
    r = sim_call('/intera_rt/sim/gripper_object', PlaceObject, 0.02, 0.1)
    assert not r.success and '--gripper' in r.message
