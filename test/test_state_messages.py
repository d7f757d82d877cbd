"""The state messages the realtime_loop node builds on change, without ROS: /robot/state in
its wire form (the bytes genpy writes for the same fields), and the keys that decide when
/intera_rt/realtime_state, /intera_rt/safety_status and /robot/homing_states go out; and
the motion controller's setpoint stamp."""
import io
import math

import numpy as np
import pytest
from intera_core_msgs.msg import RobotAssemblyState

from intera_rt.realtime.state import StateView
from intera_rt.ros import realtime_state_msgs as msgs


def genpy_bytes(msg):
    buff = io.BytesIO()
    msg.serialize(buff)
    return buff.getvalue()


@pytest.mark.parametrize('homed, enabled, stopped, error, low, button, source', [
    (1, 1, 0, 0, 0, 0, 0), (0, 0, 1, 0, 0, 1, 1), (1, 0, 0, 1, 1, 3, 4), (1, 1, 1, 1, 0, 2, 2)])
def test_robot_state_is_what_genpy_writes(homed, enabled, stopped, error, low, button, source):
    view = StateView()
    view.homed, view.enabled, view.stopped, view.error = homed, enabled, stopped, error
    view.low_voltage, view.estop_button, view.estop_source = low, button, source
    expected = RobotAssemblyState(homed=bool(homed), ready=not stopped and not error,
                                  enabled=bool(enabled), stopped=bool(stopped), error=bool(error),
                                  lowVoltage=bool(low), estop_button=button, estop_source=source)
    for _ in range(2):                       # (the second from the cache)
        msg = msgs.robot_state_msg(view)
        assert msg.data == genpy_bytes(expected)
        assert msg._type == RobotAssemblyState._type and msg._md5sum == RobotAssemblyState._md5sum


def test_realtime_state_key_follows_what_the_message_reports():
    view = StateView()
    view.contact_at = math.nan
    key = msgs.realtime_state_key(view)
    view.q[:] = 0.3                          # not reported there: same key
    view.halt_left = 0.2
    assert msgs.realtime_state_key(view) == key
    for change in (lambda v: setattr(v, 'controller', 2.0), lambda v: setattr(v, 'cuff', 1.0),
                   lambda v: setattr(v, 'enabled', 1.0), lambda v: setattr(v, 'stopped', 1.0),
                   lambda v: setattr(v, 'estop_button', 1.0),
                   lambda v: setattr(v.suppress, 'contact_safety', 1.0),
                   lambda v: setattr(v, 'contact_at', 1.5),
                   lambda v: setattr(v.collision_detection, 'squish', 1.0),
                   lambda v: setattr(v.collision_avoidance, 'active', 1.0),
                   lambda v: setattr(v.high_speed_scaling, 'active', 1.0)):
        other = StateView(view.vector.copy())
        change(other)
        assert msgs.realtime_state_key(other) != key


def test_realtime_state_carries_the_robot_state_as_robot_state_reports_it():
    """The action servers read the robot's state (enabled, stopped, error, E-stop) from
    /intera_rt/realtime_state: the same fields /robot/state sends."""
    import rospy
    from std_msgs.msg import Header
    view = StateView()
    view.homed, view.enabled, view.stopped, view.error = 1, 0, 1, 0
    view.estop_button, view.estop_source = 1, 2
    msg = msgs.realtime_state_msg(view, Header(), lambda t: rospy.Time())
    assert genpy_bytes(msg.robot) == msgs.robot_state_msg(view).data
    assert msg.robot.stopped and not msg.robot.enabled and msg.robot.estop_button == 1


def test_safety_status_key_changes_by_what_is_worth_a_message():
    view = StateView()
    st = view.safety_status
    st.min_clearance, st.speed_scale, st.pair = 0.1234, 1.0, (3.0, 7.0)
    links = ['right_l0', 'right_l1', 'right_l2', 'right_l3', 'right_l4', 'right_l5', 'right_l6', 'head']
    key = msgs.safety_status_key(view, links)
    st.min_clearance = 0.1232                # the same mm
    assert msgs.safety_status_key(view, links) == key
    assert msgs.closest_pair(view, links) == ['right_l3', 'head']
    for field, value in (('min_clearance', 0.1254), ('speed_scale', 0.5), ('bypassed', 1.0),
                         ('bypass_left', 0.3), ('pair', (2.0, 7.0))):
        other = StateView(view.vector.copy())
        setattr(other.safety_status, field, value)
        assert msgs.safety_status_key(other, links) != key, field
    assert msgs.safety_status_key(view, links[:4]) != key      # another tool's shapes
    st.min_clearance = math.nan                                 # none: equal to itself
    assert msgs.safety_status_key(view, links) == msgs.safety_status_key(view, links)


def test_homing_states():
    view = StateView()
    view.homing[:] = (2, 2, 1, 0, 2, 2, 2)
    key = msgs.homing_key(view)
    assert msgs.homing_msg(view).state == [2, 2, 1, 0, 2, 2, 2]
    view.homing[3] = 2
    assert msgs.homing_key(view) != key
    np.testing.assert_array_equal(msgs.homing_msg(view).state, [2, 2, 1, 2, 2, 2, 2])


def test_joint_states_are_what_genpy_writes():
    import rospy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header
    view = StateView()
    view.q[:] = np.arange(8) * 0.1
    view.qd[:] = -np.arange(8) * 0.01
    view.effort[:] = np.arange(8) + 0.5
    stamp = rospy.Time(12, 345)
    order = [msgs.BOARD_JOINTS.index(n) for n in msgs.JOINT_STATE_ORDER]
    expected = JointState(header=Header(seq=7, stamp=stamp), name=list(msgs.JOINT_STATE_ORDER),
                          position=view.q[order].tolist(), velocity=view.qd[order].tolist(),
                          effort=view.effort[order].tolist())
    assert msgs.joint_state_msg(view, stamp, 7).data == genpy_bytes(expected)


def test_a_motion_setpoint_is_stamped_with_the_time_of_the_plan_it_samples():
    """The motion controller's TRAJECTORY_MODE setpoint carries the plan's time it was
    sampled at, not a later reading of the clock: the loop extrapolates the sample from its
    stamp (a later stamp put the reference behind the plan by that time × its speed, and
    the hand's acceleration rippled to 1.1-3.3x its limit under load)."""
    from intera_core_msgs.msg import JointCommand

    from intera_rt.ros import motion_messages
    lower, upper = np.full(7, -1.0), np.full(7, 1.0)
    msg = motion_messages.joint_command(np.array([0.5, 2.0, -3.0, 0, 0, 0, 0]), np.full(7, 0.1),
                                        np.zeros(7), lower, upper, 12.345678)
    assert msg.header.stamp.to_sec() == pytest.approx(12.345678, abs=2e-9)   # (ns)
    assert msg.mode == JointCommand.TRAJECTORY_MODE
    assert list(msg.position[:3]) == [0.5, 1.0, -1.0]          # clipped to the limits
