"""The IO device model without ROS: set commands as the SDK writes them, their checks and
refusals, button timing and the wheel."""
import json

import pytest

from intera_rt.io import buttons
from intera_rt.io.device import Device, Signal, in_range
from intera_rt.io.robot_devices import cuff_device, navigator_device, robot_device


def set_args(name, value, type_, kind='signals'):
    """The args the SDK's set_signal_value / set_port_value send."""
    return json.dumps({kind: {name: {'format': {'type': type_}, 'data': [value]}}})


def state_entries(device):
    return {s.name: (json.loads(s.format), json.loads(s.data()))
            for s in list(device.signals.values()) + list(device.ports.values())}


@pytest.mark.parametrize('make', [cuff_device, navigator_device, robot_device])
def test_every_signal_has_type_role_and_an_array(make):
    for name, (fmt, data) in state_entries(make()).items():
        assert {'type', 'role'} <= set(fmt), name
        assert isinstance(data, list) and len(data) == 1, name


def test_formats_are_the_robots():
    entries = state_entries(navigator_device())
    assert entries['right_wheel'][0] == {'data_type': 'u8', 'role': 'input', 'type': 'int'}
    assert entries['head_button_circle'][0] == {'role': 'input', 'type': 'int'}
    assert state_entries(robot_device())['head_red_light'][0] == {'role': 'input', 'type': 'bool'}
    assert state_entries(cuff_device())['right_cuff'][0] == {'role': 'input', 'type': 'int'}


def test_light_set_is_applied():
    robot = robot_device()
    assert robot.command('set', set_args('right_hand_blue_light', True, 'bool')) == ''
    assert robot.value('right_hand_blue_light') is True
    assert robot.command('set', set_args('torso_fan', False, 'bool', 'ports')) == ''
    assert robot.value('torso_fan') is False


def test_cuff_inputs_are_read_only():
    cuff = cuff_device()
    response = cuff.command('set', set_args('right_cuff', 1, 'int'))
    assert 'read-only' in response and 'right_cuff' in response and '/intera_rt/sim/cuff' in response
    assert cuff.value('right_cuff') == 0


@pytest.mark.parametrize('op, args, words', [
    ('get', set_args('head_red_light', True, 'bool'), ["unknown op 'get'", "'set'"]),
    ('set', '{not json', ['not JSON']),
    ('set', '[1]', ['JSON object']),
    ('set', json.dumps({'signal': {}}), ["'signal'", 'signals']),
    ('set', json.dumps({'signals': {}}), ['nothing to set']),
    ('set', set_args('head_purple_light', True, 'bool'), ["'head_purple_light'", 'head_red_light']),
    ('set', set_args('torso_fan', True, 'bool'), ["'torso_fan'", 'it is a port']),
    ('set', set_args('head_red_light', 1, 'int'), ['bool signal', "type 'int'"]),
    ('set', set_args('head_red_light', 1, 'bool'), ['bool signal', '1 is not a bool']),
    ('set', json.dumps({'signals': {'head_red_light': {'data': [True, False]}}}), ['array of one value']),
    ('set', json.dumps({'signals': {'head_red_light': True}}), ['"data"']),
])
def test_bad_commands_are_refused_naming_what(op, args, words):
    robot = robot_device()
    before = state_entries(robot)
    response = robot.command(op, args)
    assert response.startswith('error: ')
    for word in words:
        assert word in response, (word, response)
    assert state_entries(robot) == before


def test_a_command_is_applied_whole_or_not_at_all():
    robot = robot_device()
    args = json.dumps({'signals': {'head_red_light': {'format': {'type': 'bool'}, 'data': [True]},
                                   'head_blue_light': {'format': {'type': 'bool'}, 'data': ['on']}}})
    assert 'head_blue_light' in robot.command('set', args)
    assert robot.value('head_red_light') is False


def test_range_refusal_marks_the_signal_until_a_good_write():
    dev = Device('d', 'n', [Signal('gain', 'int', 'output', 0, writable=True,
                                   check=in_range('gain', 0, 79, extra=(-1,)))])
    response = dev.command('set', set_args('gain', 80, 'int'))
    assert 'gain = 80 is outside [0, 79] or -1' in response
    sig = dev.signals['gain']
    assert (sig.tag, sig.value) == ('error', 0) and '80' in sig.detail
    assert dev.command('set', set_args('gain', -1, 'int')) == ''
    assert (sig.tag, sig.value) == ('ready', -1)


def test_floats_take_integers_ints_take_integral_floats():
    dev = Device('d', 'n', [Signal('f', 'float', 'output', 0.0, writable=True),
                            Signal('i', 'int', 'output', 0, writable=True)])
    assert dev.command('set', set_args('f', 1, 'float')) == '' and dev.value('f') == 1.0
    assert dev.command('set', set_args('i', 7.0, 'int')) == '' and dev.value('i') == 7
    assert 'not a int' in dev.command('set', set_args('i', 7.5, 'int'))


@pytest.mark.parametrize('action, values', [
    ('click', [1, 0]), ('double_click', [1, 3, 0]), ('long_hold', [1, 2, 0]),
    ('press', [1]), ('release', [0])])
def test_button_sequences(action, values):
    steps = buttons.sequence(action)
    assert [v for v, _ in steps] == values
    # every value a 10 Hz poller must see lasts longer than its period
    assert all(h is None or h >= 0.15 for _, h in steps)


def test_button_sequence_errors():
    with pytest.raises(ValueError, match="unknown button action 'tap'"):
        buttons.sequence('tap')
    with pytest.raises(ValueError, match='at least'):
        buttons.sequence('long_hold', 0.5)
    with pytest.raises(ValueError, match='outside'):
        buttons.sequence('click', -1)


def test_wheel_wraps_as_a_byte():
    assert buttons.wheel_value(0, -1) == 255
    assert buttons.wheel_value(250, 10) == 4
    with pytest.raises(ValueError, match='non-zero'):
        buttons.wheel_value(0, 0)
    with pytest.raises(ValueError):
        buttons.wheel_value(0, 256)
