"""Periodic callbacks on ROS time that cost nothing between their firings: `periodic()`.

Under sim time rospy wakes every thread sleeping on ROS time (rospy.Timer, rospy.Rate,
rospy.sleep) at each /clock message, to let it look at the time and sleep again. At
`--speed max` /clock comes hundreds of times a wall second, so each idle timer costs its
process a thread switch per /clock: the three action servers' 5 Hz status timers took ~40 %
of the motion controller's Python time (py-spy --gil) in lockstep, on the cores the
realtime_loop node shares with it. Here one /clock callback per process compares the time with the earliest
deadline, and one thread wakes only when a callback is due. On the wall clock there is no
/clock: `periodic` is rospy.Timer.
"""
import heapq
import itertools
import threading
import time

import rospy
from rosgraph_msgs.msg import Clock


def periodic(period, callback):
    """Call callback(event) every `period` s of ROS time, as rospy.Timer(Duration(period),
    callback) does (event: a rospy.TimerEvent). Returns the timer, whose shutdown() stops it.

    Args:
        period: s of ROS time between two calls (> 0).
        callback: called from one thread of the process's timers (it should not block long:
            the process's other timers wait meanwhile).
    """
    if rospy.rostime.is_wallclock():
        return rospy.Timer(rospy.Duration(period), callback)
    return _timers().add(period, callback)


class _Entry:
    __slots__ = ('period', 'callback', 'stopped', 'last_expected', 'last_real', 'last_duration')

    def __init__(self, period, callback):
        self.period, self.callback, self.stopped = period, callback, False
        self.last_expected = self.last_real = self.last_duration = None

    def shutdown(self):
        self.stopped = True


class _ClockTimers:
    """The process's sim-time timers: a heap of (due, n, entry), due in s of ROS time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._heap = []
        self._seq = itertools.count()
        self._due = float('inf')              # the heap's earliest deadline (read unlocked)
        self._now = 0.0                       # the last /clock's time
        self._wake = threading.Event()
        # (the same /clock connection as rospy's own: one more callback on each message)
        rospy.Subscriber('/clock', Clock, self._on_clock, queue_size=None)
        threading.Thread(target=self._run, name='clock_timers', daemon=True).start()

    def add(self, period, callback):
        entry = _Entry(float(period), callback)
        with self._lock:
            self._push(rospy.get_time() + entry.period, entry)
        return entry

    def _push(self, due, entry):
        heapq.heappush(self._heap, (due, next(self._seq), entry))
        self._due = self._heap[0][0]

    def _on_clock(self, msg):
        t = msg.clock.to_sec()
        back = t < self._now
        self._now = t
        if back:                                # (sim time reset: every timer starts again)
            with self._lock:
                self._heap = [(t + e.period, n, e) for _, n, e in self._heap]
                heapq.heapify(self._heap)
                self._due = self._heap[0][0] if self._heap else float('inf')
        elif t >= self._due:
            self._wake.set()

    def _run(self):
        while not rospy.is_shutdown():
            self._wake.wait(1.0)
            self._wake.clear()
            now = rospy.get_time()
            fire = []
            with self._lock:
                while self._heap and self._heap[0][0] <= now:
                    due, _, entry = heapq.heappop(self._heap)
                    if not entry.stopped:
                        fire.append((due, entry))
                        nxt = due + entry.period
                        self._push(nxt if nxt > now else now + entry.period, entry)
                self._due = self._heap[0][0] if self._heap else float('inf')
            for due, entry in fire:
                self._call(due, entry, now)

    @staticmethod
    def _call(due, entry, now):
        expected, real = rospy.Time.from_sec(due), rospy.Time.from_sec(now)
        event = rospy.timer.TimerEvent(entry.last_expected, entry.last_real, expected, real,
                                       entry.last_duration)
        start = time.time()
        try:
            entry.callback(event)
        except Exception as exc:  # noqa: BLE001 - one timer's error must not stop the others
            rospy.logerr('timer %r failed: %s: %s', entry.callback, type(exc).__name__, exc)
        entry.last_expected, entry.last_real = expected, real
        entry.last_duration = time.time() - start


_instance = None
_instance_lock = threading.Lock()


def _timers():
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = _ClockTimers()
        return _instance


def be_the_clock():
    """For the node that publishes /clock itself: stop hearing it back. rospy subscribes
    every node under /use_sim_time to /clock, so each /clock this node sent came back to it
    through a socket, a wake-up of its receive thread (~15 % of the realtime_loop node's
    CPU in lockstep on the 2-core VM), to set the time it had just sent.
    Drops rospy's own /clock subscription and returns set_time(stamp), which sets this
    process's ROS time to a rospy.Time as a /clock message does (waking its sleepers);
    call it before publishing that /clock. Uses rospy's internals (Noetic's rospy is
    frozen: rospy.impl.simtime's `_clock_sub`, rospy.rostime's `_set_rostime`)."""
    import rospy.impl.simtime as simtime
    sub = getattr(simtime, '_clock_sub', None)
    if sub is not None:
        sub.unregister()
        simtime._clock_sub = None
    return rospy.rostime._set_rostime
