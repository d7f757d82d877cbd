"""The realtime loop's plugins through ROS, as a user meets them: the suppress_* topics,
zero-G, collision avoidance and collision detection with sim obstacles, and the JTAS and
motion controller reacting to what the robot detects. Conditions are made to happen through
the sim-control API (obstacles, wrenches, the cuff); no test publishes the robot's own
topics.

The robot runs on sim time at 1x: durations asserted are robot time (state stamps)."""
import numpy as np
import pytest

from rosharness import wait_connected
from test_joint_modes import ARM, NS, Series, now, pace, stamp, sync_publisher

from intera_rt.robot import SUPPRESS_TOPICS

SAWYER_ARGS = ['--sim-time', '--speed', '1']
SUPPRESS_WINDOW = 0.2          # s (seed 000: the topics must arrive at ≥ 5 Hz)
STATE_PERIOD = 0.01            # s between two realtime_state messages


@pytest.fixture(scope='module')
def realtime_state(robot):
    from intera_rt_msgs.msg import RealtimeState
    series = Series('/intera_rt/realtime_state', RealtimeState)
    series.last()
    yield series
    series.unregister()


@pytest.mark.parametrize('topic', sorted(SUPPRESS_TOPICS))
def test_a_suppress_topic_suppresses_while_it_arrives_and_stops_within_0_2_s(realtime_state, topic):
    from std_msgs.msg import Empty
    what = SUPPRESS_TOPICS[topic]
    pub = sync_publisher(NS + topic, Empty)
    wait_connected(pub, '/realtime_loop')
    sent = []

    def publish(t):
        pub.publish(Empty())
        sent.append(t)
    pace(8, publish, 1.0)                               # 8 Hz: above the 5 Hz the robot needs
    last = sent[-1]
    after = realtime_state.wait(lambda m: what not in m.suppressed and stamp(m) > last, 10.0,
                                '%s no longer suppressed' % what)
    pub.unregister()
    during = realtime_state.between(sent[0] + 0.05, last)
    assert during and all(what in m.suppressed for m in during), \
        '%s must stay suppressed while %s arrives at 8 Hz' % (what, topic)
    still = [m for m in realtime_state.between(last, stamp(after)) if what in m.suppressed]
    ended = stamp(after) - last
    # The robot holds it for 0.2 s after the last message (it may have arrived a few ms
    # after this node sent it), and reports it within one state period.
    assert ended <= SUPPRESS_WINDOW + STATE_PERIOD + 0.02, \
        '%s still suppressed %.3f s after the last %s' % (what, ended, topic)
    assert still and stamp(still[-1]) - last >= SUPPRESS_WINDOW - STATE_PERIOD, \
        '%s ended %.3f s after the last message, before its 0.2 s window' % (
            what, stamp(still[-1]) - last if still else 0.0)
