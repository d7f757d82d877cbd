"""The head through ROS (contract §3.4): /robot/head/command_head_pan moves head_pan to its
target (clipped to [-5.0952, 0.9064]) at speed_ratio × 1.8 rad/s, done within 0.1 rad
(HEAD_PAN_ANGLE_TOLERANCE); head_state.isTurning is true while it moves, then false. The
client republishes at 100 Hz until done, as intera_interface.Head.set_pan does.

Sim time at 1x: durations are robot time (/robot/joint_states stamps)."""
import math
import time

import pytest

from rosharness import wait_for

SAWYER_ARGS = ['--sim-time', '--speed', '1']

LOWER, UPPER = -5.0952, 0.9064
VMAX = 1.8
TOLERANCE = 0.1                      # HEAD_PAN_ANGLE_TOLERANCE
SET_PASSIVE_MODE, SET_ACTIVE_MODE, NO_MODE_CHANGE = 0, 1, 3


class Head:
    def __init__(self):
        import rospy
        from intera_core_msgs.msg import HeadPanCommand, HeadState
        from sensor_msgs.msg import JointState
        self.pub = rospy.Publisher('/robot/head/command_head_pan', HeadPanCommand, queue_size=10)
        self.states = []                  # (this node's time at receipt, HeadState)
        self._sub = rospy.Subscriber('/robot/head/head_state', HeadState,
                                     lambda m: self.states.append((rospy.get_time(), m)),
                                     queue_size=100)
        self.js = []
        self._js_sub = rospy.Subscriber('/robot/joint_states', JointState, self.js.append,
                                        queue_size=100)
        wait_for(lambda: self.pub.get_num_connections() > 0, 10.0, 'a command_head_pan subscriber')
        wait_for(lambda: self.states and self.js, 10.0, 'head_state and joint_states')

    def command(self, target, speed_ratio, mode=SET_ACTIVE_MODE):
        from intera_core_msgs.msg import HeadPanCommand
        self.pub.publish(HeadPanCommand(target=target, speed_ratio=speed_ratio, pan_mode=mode))

    def pan(self):
        return self.states[-1][1].pan

    def set_pan(self, target, speed_ratio, done_at=None, timeout=15.0):
        """Republish at 100 Hz until head_state.pan is within TOLERANCE of `done_at`
        (default: the target). Returns (robot time of the first command, stamp of the first
        joint_states within tolerance)."""
        import rospy
        done_at = target if done_at is None else done_at
        t0 = rospy.get_time()
        rate = rospy.Rate(100)
        wall_end = time.monotonic() + 3 * timeout + 10

        def reached():
            return next((m for m in list(self.js) if m.header.stamp.to_sec() >= t0
                         and abs(head_pan(m) - done_at) <= TOLERANCE), None)
        while abs(self.pan() - done_at) > TOLERANCE or reached() is None:
            assert rospy.get_time() - t0 < timeout, 'head at %.3f, not at %.3f' % (self.pan(), done_at)
            assert time.monotonic() < wall_end, 'the ROS clock stopped'
            self.command(target, speed_ratio)
            rate.sleep()
        return t0, reached().header.stamp.to_sec()

    def settle(self, timeout=10.0):
        """Wait until head_pan is at rest in /robot/joint_states; its position."""
        msg = wait_for(lambda: abs(self.js[-1].velocity[self.js[-1].name.index('head_pan')]) < 1e-4
                       and self.js[-1], timeout, 'head_pan at rest')
        return head_pan(msg)

    def motion_start(self, t0):
        """Stamp of the last joint_states before head_pan started moving after t0."""
        msgs = [m for m in list(self.js) if m.header.stamp.to_sec() >= t0]
        p0 = head_pan(msgs[0])
        moving = next(i for i, m in enumerate(msgs) if abs(head_pan(m) - p0) > 1e-4)
        return msgs[max(0, moving - 1)].header.stamp.to_sec()

    def wait_still(self, timeout=10.0):
        """Wait for isTurning false; the head_state then."""
        import rospy
        t = rospy.get_time()
        return wait_for(lambda: self.states[-1][0] > t and not self.states[-1][1].isTurning
                        and self.states[-1][1], timeout, 'head_state.isTurning false')


def head_pan(msg):
    return msg.position[msg.name.index('head_pan')]


@pytest.fixture(scope='module')
def head(robot):
    return Head()


def test_pan_at_speed_ratio_turning_then_still(head):
    import rospy
    head.wait_still()
    start = head.pan()
    target = start - 2.0
    n0 = len(head.states)
    t0, t_reached = head.set_pan(target, 0.3)
    duration = t_reached - head.motion_start(t0)
    # 2 rad (to within 0.1) at no more than 0.3 × 1.8 rad/s
    assert duration >= (2.0 - TOLERANCE) / (0.3 * VMAX) - 0.01, duration
    during = [m for _t, m in head.states[n0:]]
    assert any(m.isTurning for m in during), 'isTurning never true while the head moved'
    assert all(m.panMode == 1 for m in during[1:])
    final = head.wait_still()
    assert abs(final.pan - target) <= TOLERANCE
    # once still it stays: no more turning, pan steady
    pan = head.settle()
    t = rospy.get_time()
    wait_for(lambda: head.states[-1][0] > t + 0.5, 10.0, '0.5 s of head_state')
    later = [m for rt, m in head.states if rt > t]
    assert not any(m.isTurning for m in later)
    assert max(abs(m.pan - pan) for m in later) < 1e-3


def test_full_speed_is_faster_than_ratio_0_3_allows(head):
    head.wait_still()
    target = head.pan() + 2.0
    t0, t_reached = head.set_pan(target, 1.0)
    duration = t_reached - head.motion_start(t0)
    assert (2.0 - TOLERANCE) / VMAX - 0.01 <= duration < (2.0 - TOLERANCE) / (0.3 * VMAX), duration


@pytest.mark.parametrize('target,limit', [(2.0, UPPER), (0.95, UPPER), (-6.0, LOWER)])
def test_targets_beyond_the_limits_are_clipped(head, target, limit):
    head.wait_still()
    head.set_pan(target, 1.0, done_at=limit)
    final = head.wait_still()
    assert abs(final.pan - limit) <= TOLERANCE
    assert LOWER - 1e-3 <= final.pan <= UPPER + 1e-3
    seen = [head_pan(m) for m in list(head.js)[-300:]]
    assert LOWER - 1e-3 <= min(seen) and max(seen) <= UPPER + 1e-3


def test_bad_head_command_is_refused_and_logged(head, robot):
    import rospy
    head.set_pan(0.0, 1.0)
    head.wait_still()
    pan = head.settle()
    before = robot.log_path.read_text().count('command_head_pan rejected')
    t = rospy.get_time()
    for _ in range(20):
        head.command(math.nan, 1.0)
        rospy.sleep(0.01)
    wait_for(lambda: robot.log_path.read_text().count('command_head_pan rejected') > before,
             10.0, 'a log line rejecting the NaN target')
    wait_for(lambda: head.states[-1][0] > t + 0.5, 10.0, 'head_state after the bad commands')
    later = [m for rt, m in head.states if rt > t]
    assert max(abs(m.pan - pan) for m in later) < 1e-3
    assert not any(m.isTurning for m in later)
    # and it still obeys
    head.set_pan(-0.5, 1.0)
    assert robot.alive()
