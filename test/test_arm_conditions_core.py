"""ArmConditions without ROS traffic: the reasons the three action servers (motion controller,
JTAS, calibration) give for a robot that cannot move, from the robot's state messages
(/intera_rt/realtime_state, which carries the robot's state as /robot/state reports it)."""
import json

from intera_core_msgs.msg import IODataStatus, IODeviceStatus, RobotAssemblyState
from intera_rt_msgs.msg import RealtimeState

from intera_rt.ros.arm_conditions import (COLLISION, CUFF, DISABLED, ERROR, ESTOP, NO_STATE,
                                          STOPPED, ZERO_G, ArmConditions)


def _state(enabled=True, stopped=False, error=False, estop=False):
    """A realtime_state carrying the robot's state (as /robot/state reports it)."""
    return RealtimeState(controller='hold', robot=RobotAssemblyState(
        enabled=enabled, stopped=stopped, error=error,
        estop_button=RobotAssemblyState.ESTOP_BUTTON_PRESSED if estop else RobotAssemblyState.ESTOP_BUTTON_UNPRESSED))


def test_the_robots_own_state_says_why_in_one_order():
    view = ArmConditions()
    assert view.why_not().kind == NO_STATE
    assert view.why_not(require_state=False) is None
    cases = [(_state(), None),
             (_state(enabled=False), DISABLED),
             (_state(enabled=False, stopped=True), STOPPED),
             (_state(enabled=False, stopped=True, error=True), ERROR),
             (_state(enabled=False, stopped=True, error=True, estop=True), ESTOP)]
    for msg, kind in cases:
        view.on_realtime_state(msg)
        why = view.why_not()
        assert (why and why.kind) == kind, (msg, why)
    view.on_realtime_state(_state(enabled=False))
    assert 'disabled' in view.why_not().text and '/robot/set_super_enable' in view.why_not().text


def test_a_collision_counts_while_it_holds_and_since_a_goal_began():
    view = ArmConditions()
    assert view.hazard() is None
    seen = view.collisions
    view.on_realtime_state(RealtimeState(controller='position', collision=True))
    why = view.hazard()
    assert why.kind == COLLISION and why.robot_holds
    view.on_realtime_state(RealtimeState(controller='hold', collision=False))
    assert view.hazard() is None                       # over: a new goal may start
    assert view.hazard(seen).kind == COLLISION         # but the goal running then must end
    assert view.hazard(view.collisions) is None
    assert view.controller == 'hold'


def test_zero_g_is_held_by_the_robot_and_the_cuff_only_when_watched():
    view = ArmConditions()
    view.on_realtime_state(RealtimeState(zero_g=True))
    why = view.hazard()
    assert why.kind == ZERO_G and why.robot_holds and 'zero-G' in why.text
    view.on_realtime_state(RealtimeState(zero_g=False))
    grasp = IODeviceStatus(signals=[IODataStatus(name='right_cuff', data=json.dumps([True]))])
    view.on_cuff(grasp)
    why = view.hazard()
    assert why.kind == CUFF and not why.robot_holds and 'cuff' in why.text
    view.on_cuff(IODeviceStatus(signals=[IODataStatus(name='right_cuff', data=json.dumps([False]))]))
    assert view.hazard() is None
