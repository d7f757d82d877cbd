"""The end-effector IO node with the electric gripper (scripts/sawyer --gripper), through ROS
as the SDK's Gripper and MoveIt's GripperCommand client use it: open, close, grasp an object
placed between the fingers (sim control), calibrate, bad commands."""
import json
import time

import pytest

from io_client import IODevice, sim_call
from rosharness import latest

pytestmark = pytest.mark.sawyer_args(['--gripper'])

OPEN = 0.041667
ACTION = '/robot/end_effector/right_gripper/gripper_action'


@pytest.fixture(scope='module')
def gripper(robot):
    dev = IODevice('end_effector', 'right_gripper')
    yield dev
    dev.close()


def place(width, mass=0.2):
    from intera_rt_msgs.srv import PlaceObject
    return sim_call('/intera_rt/sim/gripper_object', PlaceObject, width, mass)


def settle(dev, timeout=5.0):
    """Wait until the fingers stand still (as the SDK examples poll is_moving)."""
    dev.wait(lambda: dev.value('is_moving') is False, timeout, 'the fingers to stop')


def test_the_node_reports_the_gripper_as_the_factory_needs(robot):
    from intera_core_msgs.msg import IONodeConfiguration, IONodeStatus
    with latest('/io/end_effector/config', IONodeConfiguration) as config, \
            latest('/io/end_effector/state', IONodeStatus) as state:
        c = config.wait(5.0)
        s = state.wait(5.0)
    assert c.time.secs != 0 and [d.name for d in c.devices] == ['right_gripper']
    assert json.loads(c.devices[0].config)['props']['type'] == 'ElectricParallelGripper'
    assert [(d.name, d.status.tag) for d in s.devices] == [('right_gripper', 'ready')]


def test_signals_as_the_sdk_reads_them(gripper):
    types = {e.name: json.loads(e.format)['type'] for e in gripper.state.signals}
    for name in ('position_m', 'position_response_m', 'speed_mps', 'dead_zone_m',
                 'force_response_n', 'right_gripper_tip_object_kg', 'holding_force_n'):
        assert types[name] == 'float', name
    for name in ('is_calibrated', 'is_moving', 'is_gripping', 'has_error', 'go', 'calibrate', 'reboot'):
        assert types[name] == 'bool', name
    assert gripper.value('is_calibrated') is True and gripper.value('has_error') is False
    assert isinstance(gripper.value('position_response_m'), float)


def test_close_and_open_at_the_commanded_speed(gripper):
    assert gripper.set('speed_mps', 0.15) == ''
    start = time.monotonic()
    assert gripper.set('position_m', 0.0) == ''
    settle(gripper)
    states = [s for t, s in gripper.history if t > start]
    assert any(gripper.value('is_moving', s) for s in states)
    positions = sorted({gripper.value('position_response_m', s) for s in states})
    assert len(positions) >= 5                              # seen on the way, not jumped
    assert gripper.value('position_response_m') == pytest.approx(0.0, abs=1e-6)
    assert gripper.value('is_gripping') is False
    assert gripper.set('speed_mps', 3.0) == ''
    assert gripper.set('position_m', OPEN) == ''
    settle(gripper)
    assert gripper.value('position_response_m') == pytest.approx(OPEN, abs=1e-6)


def test_commands_stamped_alike_are_each_applied(gripper):
    """The SDK stamps a command with ROS time, which under sim time advances only with /clock
    (every 20 ms on Gazebo): two commands sent within one clock step share a time. Each is
    applied once; a resend of either (the SDK resends until acknowledged) only acknowledged."""
    import rospy
    stamp = rospy.Time.now()
    assert gripper.set('speed_mps', 0.2, stamp=stamp) == ''
    assert gripper.set('position_m', 0.03, stamp=stamp) == ''
    assert gripper.set('speed_mps', 0.2, stamp=stamp) == ''        # a resend
    # (the acknowledgements cannot tell the two apart: wait for the move to show)
    gripper.wait(lambda: gripper.value('position_m') == 0.03, 5.0, 'the second command applied')
    settle(gripper)
    assert gripper.value('speed_mps') == 0.2
    assert gripper.value('position_response_m') == pytest.approx(0.03, abs=1e-6)
    assert gripper.set('speed_mps', 3.0) == ''
    assert gripper.set('position_m', OPEN) == ''
    settle(gripper)


def test_grasping_an_object(gripper):
    assert place(0.025, 0.3).success
    try:
        assert gripper.set('holding_force_n', 15.0) == ''
        assert gripper.set('position_m', 0.0) == ''
        gripper.wait(lambda: gripper.value('is_gripping') is True, 5.0, 'is_gripping')
        settle(gripper)
        assert gripper.value('position_response_m') == pytest.approx(0.025, abs=1e-6)
        assert gripper.value('force_response_n') == 15.0
        assert gripper.set('position_m', OPEN) == ''
        gripper.wait(lambda: gripper.value('is_gripping') is False, 2.0, 'the grip released')
        settle(gripper)
        assert gripper.value('force_response_n') == 0.0
    finally:
        place(0.0)


def test_calibration(gripper):
    assert gripper.set('reboot', True) == ''
    gripper.wait(lambda: gripper.value('is_calibrated') is False, 5.0, 'is_calibrated false after reboot')
    gripper.wait(lambda: gripper.state.device.status.tag == 'ready', 5.0, 'ready after reboot')
    response = gripper.set('position_m', 0.0)
    assert 'not calibrated' in response
    assert gripper.entry('position_m').status.tag == 'error'
    assert gripper.set('calibrate', True) == ''
    # the SDK's Gripper waits 5 s for is_calibrated
    gripper.wait(lambda: gripper.value('is_calibrated') is True, 5.0, 'is_calibrated')
    settle(gripper)
    assert gripper.value('position_response_m') == pytest.approx(OPEN, abs=1e-6)


@pytest.mark.parametrize('name, value, words', [
    ('position_m', 0.05, ['position_m = 0.05 is outside [0, 0.041667] m']),
    ('speed_mps', 0.01, ['speed_mps = 0.01 is outside [0.15, 3] m/s']),
    ('is_moving', True, ['read-only']),
])
def test_bad_writes_get_clear_errors(gripper, name, value, words):
    before = gripper.value('position_response_m')
    response = gripper.set(name, value)
    for word in words:
        assert word in response, response
    assert gripper.value('position_response_m') == before and gripper.value('is_moving') is False


def test_sim_object_errors(gripper):
    r = place(0.06)
    assert not r.success and 'outside (0, 0.041667]' in r.message
    r = place(0.02, -1.0)
    assert not r.success and 'negative' in r.message


def _action_client():
    import actionlib
    import rospy
    from control_msgs.msg import GripperCommandAction
    client = actionlib.SimpleActionClient(ACTION, GripperCommandAction)
    assert client.wait_for_server(rospy.Duration(10.0))
    return client


def _goal(position, effort=0.0):
    from control_msgs.msg import GripperCommand, GripperCommandGoal
    return GripperCommandGoal(command=GripperCommand(position=position, max_effort=effort))


def test_gripper_command_action(gripper):
    import rospy
    from actionlib_msgs.msg import GoalStatus
    client = _action_client()
    assert place(0.02).success
    try:
        client.send_goal(_goal(0.0, 25.0))
        assert client.wait_for_result(rospy.Duration(10.0))
        result = client.get_result()
        assert client.get_state() == GoalStatus.SUCCEEDED
        assert result.stalled and not result.reached_goal
        assert result.position == pytest.approx(0.02) and result.effort == 25.0
        gripper.wait(lambda: gripper.value('is_gripping') is True, 2.0, 'is_gripping')
    finally:
        place(0.0)
    client.send_goal(_goal(OPEN))
    assert client.wait_for_result(rospy.Duration(10.0))
    assert client.get_state() == GoalStatus.SUCCEEDED and client.get_result().reached_goal
    client.send_goal(_goal(0.08))
    assert client.wait_for_result(rospy.Duration(10.0))
    assert client.get_state() == GoalStatus.ABORTED
    assert 'outside [0, 0.041667]' in client.get_goal_status_text()


def test_gripper_command_cancel_stops_the_fingers(gripper):
    import rospy
    from actionlib_msgs.msg import GoalStatus
    client = _action_client()
    assert gripper.set('speed_mps', 0.15) == ''
    client.send_goal(_goal(0.0))
    # (moving, and moved: on a loaded machine the cancel could otherwise beat the first step)
    gripper.wait(lambda: gripper.value('is_moving') is True
                 and gripper.value('position_response_m') < OPEN, 5.0, 'the fingers to move')
    client.cancel_goal()
    assert client.wait_for_result(rospy.Duration(10.0))
    assert client.get_state() == GoalStatus.PREEMPTED
    settle(gripper)
    stopped = gripper.value('position_response_m')
    assert 0.0 < stopped < OPEN
    # nothing moves them on: two more (5 Hz) states report the same position
    n = len(gripper.history)
    gripper.wait(lambda: len(gripper.history) >= n + 2, 2.0, 'two more states')
    assert gripper.value('position_response_m') == stopped and gripper.value('is_moving') is False
    assert gripper.set('speed_mps', 3.0) == '' and gripper.set('position_m', OPEN) == ''
    settle(gripper)
