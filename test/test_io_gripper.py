"""The electric gripper's simulated fingers without ROS: moves at the commanded speed,
objects stop a closing move and are gripped, calibration, reboot, errors."""
import json

import pytest

from intera_rt.io.gripper import (CALIBRATION_SPEED, DEFAULT_FORCE, MAX_POSITION, REBOOT_TIME,
                                  ElectricGripper)

DT = 0.02


def cmd(g, name, value):
    return g.command('set', json.dumps({'signals': {name: {'format': {'type': g.signals[name].type},
                                                           'data': [value]}}}))


def run(g, t0=0.0, until=5.0):
    """Step until the gripper is idle; returns [(t, position, is_moving)] and the end time."""
    t, trace = t0, []
    while g.active() and t < t0 + until:
        g.step(t)
        trace.append((t, g.position, g.signals['is_moving'].value))
        t += DT
    return trace, t


def v(g, name):
    return g.value(name)


def test_fingers_move_at_the_commanded_speed():
    g = ElectricGripper()
    assert cmd(g, 'speed_mps', 0.15) == ''
    assert cmd(g, 'position_m', 0.0) == ''
    assert v(g, 'is_moving') and v(g, 'go')
    trace, _ = run(g)
    moving = [(t, p) for t, p, m in trace if m]
    (t0, p0), (t1, p1) = moving[1], moving[-1]
    assert (p0 - p1) / (t1 - t0) == pytest.approx(0.15, rel=1e-6)
    assert g.position == 0.0 and not v(g, 'is_moving') and not v(g, 'is_gripping')
    assert v(g, 'position_response_m') == 0.0 and g.reached()
    assert trace[-1][0] == pytest.approx(MAX_POSITION / 0.15, abs=2 * DT)


def test_an_object_stops_the_fingers_and_is_gripped():
    g = ElectricGripper()
    g.place_object(0.02, 0.3)
    assert cmd(g, 'holding_force_n', 12.5) == ''
    assert cmd(g, 'position_m', 0.0) == ''
    run(g)
    assert g.position == pytest.approx(0.02)
    assert v(g, 'is_gripping') and not v(g, 'is_moving') and not g.reached()
    assert v(g, 'force_response_n') == 12.5
    assert cmd(g, 'position_m', MAX_POSITION) == ''       # opening lets go at once
    assert not v(g, 'is_gripping') and v(g, 'force_response_n') == 0.0
    run(g)
    assert g.position == MAX_POSITION


def test_a_target_wider_than_the_object_is_reached_without_gripping():
    g = ElectricGripper()
    g.place_object(0.02, 0.0)
    cmd(g, 'position_m', 0.03)
    run(g)
    assert g.position == pytest.approx(0.03) and not v(g, 'is_gripping')


def test_removing_a_gripped_object_lets_the_fingers_close():
    g = ElectricGripper()
    g.place_object(0.02, 0.0)
    cmd(g, 'position_m', 0.0)
    run(g)
    assert g.place_object(0.0, 0.0) == 'object removed'
    run(g)
    assert g.position == 0.0 and not v(g, 'is_gripping')


def test_objects_must_fit():
    g = ElectricGripper()
    with pytest.raises(ValueError, match='outside'):
        g.place_object(0.05, 0.1)
    with pytest.raises(ValueError, match='negative'):
        g.place_object(0.01, -1.0)
    cmd(g, 'position_m', 0.01)
    run(g)
    with pytest.raises(ValueError, match='open them wider than 0.0200 m'):
        g.place_object(0.02, 0.1)


def test_go_false_stops_the_fingers():
    g = ElectricGripper()
    cmd(g, 'speed_mps', 0.15)
    cmd(g, 'position_m', 0.0)
    g.step(0.0)
    g.step(0.1)
    assert cmd(g, 'go', False) == ''
    stopped = g.position
    assert not g.active() and not v(g, 'is_moving')
    assert stopped == pytest.approx(MAX_POSITION - 0.015)
    assert cmd(g, 'go', True) == ''                       # resumes toward its position
    run(g)
    assert g.position == pytest.approx(stopped)


def test_calibration_and_reboot():
    g = ElectricGripper()
    assert cmd(g, 'reboot', True) == ''
    assert g.tag == 'busy'
    assert 'rebooting' in cmd(g, 'position_m', 0.0)
    trace, t = run(g)
    assert t == pytest.approx(REBOOT_TIME, abs=2 * DT)
    assert g.tag == 'ready' and not v(g, 'is_calibrated') and not v(g, 'reboot')
    response = cmd(g, 'position_m', 0.0)
    assert 'not calibrated' in response and 'calibrate' in response
    assert g.signals['position_m'].tag == 'error'
    assert cmd(g, 'calibrate', True) == ''
    trace, t = run(g)
    assert min(p for _, p, _ in trace) == 0.0                  # swept closed, then open
    assert t == pytest.approx(2 * MAX_POSITION / CALIBRATION_SPEED, abs=3 * DT)
    assert v(g, 'is_calibrated') and not v(g, 'calibrate') and g.position == MAX_POSITION
    assert cmd(g, 'position_m', 0.0) == ''


def test_an_object_in_the_way_of_calibration_is_an_error_until_reboot():
    g = ElectricGripper()
    g.place_object(0.03, 0.0)
    cmd(g, 'calibrate', True)
    run(g)
    assert v(g, 'has_error') and '0.0300' in g.error
    assert 'reboot it first' in cmd(g, 'position_m', 0.0)
    cmd(g, 'reboot', True)
    run(g)
    assert not v(g, 'has_error')


@pytest.mark.parametrize('name, value, words', [
    ('position_m', 0.05, ['position_m = 0.05 is outside [0, 0.041667] m']),
    ('speed_mps', 5.0, ['speed_mps = 5.0 is outside [0.15, 3] m/s']),
    ('holding_force_n', -1.0, ['holding_force_n']),
    ('is_gripping', True, ['read-only']),
    ('position_m', 'open', ['float signal']),
])
def test_bad_writes_are_refused(name, value, words):
    g = ElectricGripper()
    response = cmd(g, name, value)
    for word in words:
        assert word in response, response
    assert g.position == MAX_POSITION and not g.active()


def test_defaults_as_the_sdk_expects():
    g = ElectricGripper()
    assert v(g, 'is_calibrated') and not v(g, 'has_error')
    assert v(g, 'dead_zone_m') == 0.002 and v(g, 'speed_mps') == 1.5
    assert v(g, 'holding_force_n') == DEFAULT_FORCE
    assert json.loads(g.config_json())['props']['type'] == 'ElectricParallelGripper'
    assert isinstance(v(g, 'position_response_m'), float)


def test_the_fingers_of_a_plant_are_followed():
    """With a simulated world's fingers (ros: /intera_rt/sim/gripper_state) the device no
    longer moves its own: it reports the plant's and asks them for its targets."""
    g = ElectricGripper()
    assert not g.plant
    g.follow(MAX_POSITION, '', 0.0)
    assert g.plant
    cmd(g, 'speed_mps', 0.5)
    cmd(g, 'position_m', 0.0)
    assert g.plant_command() == (0.0, 0.5, DEFAULT_FORCE)
    assert not g.step(10.0) and g.position == MAX_POSITION          # the plant moves them
    assert g.follow(0.035, '', 0.0) and v(g, 'is_moving') and v(g, 'position_response_m') == 0.035
    g.follow(0.03, 'block', 18.0)                                    # met the block: gripping
    assert v(g, 'is_gripping') and not v(g, 'is_moving') and v(g, 'force_response_n') == 18.0
    cmd(g, 'position_m', MAX_POSITION)                               # open: released
    assert g.plant_command()[0] == MAX_POSITION
    g.follow(0.03, 'block', 18.0)                # the plant has not taken the command yet
    assert not v(g, 'is_gripping') and v(g, 'is_moving')
    g.follow(0.032, '', 0.0)
    assert not v(g, 'is_gripping') and v(g, 'force_response_n') == 0.0 and v(g, 'is_moving')
    g.follow(MAX_POSITION, '', 0.0)
    assert not v(g, 'is_moving') and g.reached()
    # Calibration: closed, then open, by the plant's fingers.
    cmd(g, 'calibrate', True)
    assert g.plant_command()[:2] == (0.0, CALIBRATION_SPEED)
    g.follow(0.0, '', 0.0)
    assert g.plant_command()[0] == MAX_POSITION and v(g, 'calibrate')
    g.follow(MAX_POSITION, '', 0.0)
    assert v(g, 'is_calibrated') and not v(g, 'calibrate') and not v(g, 'is_moving')
