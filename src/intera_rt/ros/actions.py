"""The robot's action servers' common part: actionlib's SimpleActionClient (what the SDK
uses) must never hear of a goal before it knows the goal is its own.

SimpleActionClient.send_goal assigns the handle ActionClient.send_goal returns, after that
has published the goal. A status, feedback or result naming the goal that reaches the
client in between is for "a goal handle that we're not tracking": the client logs an error
and drops it (a lost DONE leaves wait_for_result() waiting forever; lost feedback is gone).
"""
import threading
import time

import actionlib
import rospy

from intera_rt.ros.clock_timers import periodic

# Nothing about a goal (status, feedback, result) is sent sooner than this after it arrived.
# The client's window is microseconds of Python, but a loaded machine deschedules it, and
# its other threads (message callbacks) hold the GIL meanwhile, for far longer than the
# window itself on a loaded machine. An instant answer waits this long.
MIN_RESULT_DELAY = 0.2          # s
HELD_STATUS_GAP = 1.0           # s: the longest a held goal keeps every status back


class StatusHoldingServer(actionlib.ActionServer):
    """actionlib's ActionServer, except that a goal appears in /status only MIN_RESULT_DELAY
    after it arrived (then at once), and feedback sent sooner is dropped (a server that must
    not lose its first feedback waits that long before it sends it: `wait_until_known`).

    The base server lists a new goal in the very next status message: the one
    set_accepted() publishes on the spot, or its 5 Hz timer's — either can reach a SimpleActionClient before it has recorded the goal's handle (see
    MIN_RESULT_DELAY). While a goal is held, no status is published at all (for at most
    HELD_STATUS_GAP since the last one): a status without the goal would be no news to a
    client still WAITING_FOR_GOAL_ACK, but one that has already cancelled it
    (WAITING_FOR_CANCEL_ACK) takes the goal's absence as LOST. A cancel releases the goals
    it names (a client that cancels a goal knows its handle)."""

    def __init__(self, *args, **kwargs):
        self._held = {}                  # goal id → time.monotonic() it arrived
        self._last_status = 0.0          # time.monotonic() of the last status published
        super().__init__(*args, **kwargs)

    def initialize(self):
        super().initialize()
        quiet_status_timer(self)

    def internal_goal_callback(self, goal):
        gid = goal.goal_id.id
        with self.lock:
            self._held.setdefault(gid, time.monotonic())
        timer = threading.Timer(MIN_RESULT_DELAY, self._release, (gid,))
        timer.daemon = True
        timer.start()
        super().internal_goal_callback(goal)

    def internal_cancel_callback(self, goal_id):
        with self.lock:
            everything = goal_id.id == '' and goal_id.stamp == rospy.Time()
            before = goal_id.stamp != rospy.Time()
            if everything or before:
                # (the stamp a goal carries is its client's: release every held goal rather
                # than look each up; they are at most MIN_RESULT_DELAY old)
                self._held.clear()
            else:
                self._held.pop(goal_id.id, None)
        super().internal_cancel_callback(goal_id)

    def _release(self, gid):
        with self.lock:
            if self._held.pop(gid, None) is not None and self.started and not rospy.is_shutdown():
                self.publish_status()

    def publish_status(self):
        with self.lock:
            now = time.monotonic()
            for gid in [g for g, t in self._held.items() if now - t >= MIN_RESULT_DELAY]:
                del self._held[gid]
            if self._held and now - self._last_status < HELD_STATUS_GAP:
                return                   # (see the class docstring) the release publishes
            self._last_status = now
            if not self._held:
                return super().publish_status()
            # Goals keep arriving faster than they are released (> 5 a second for a second):
            # a status without them, so that the others' transitions are not held forever.
            held = [st for st in self.status_list if st.status.goal_id.id in self._held]
            self.status_list = [st for st in self.status_list if st.status.goal_id.id not in self._held]
            try:
                super().publish_status()
            finally:
                self.status_list.extend(held)

    def publish_feedback(self, status, feedback):
        with self.lock:
            t = self._held.get(status.goal_id.id)
            if t is not None and time.monotonic() - t < MIN_RESULT_DELAY:
                return                   # periodic feedback: the next one will do
            super().publish_feedback(status, feedback)

    def wait_until_known(self, goal_handle):
        """Sleep until a SimpleActionClient that sent this goal knows it (call it outside
        actionlib's callbacks: it holds no lock)."""
        with self.lock:
            t = self._held.get(goal_handle.get_goal_id().id)
        if t is not None:
            time.sleep(max(0.0, MIN_RESULT_DELAY - (time.monotonic() - t)))


def finish_goal(gh, how, result, text, received=None):
    """Send a goal's terminal state — how: 'succeeded', 'aborted', 'rejected', else canceled —
    with its result and status text, not sooner than MIN_RESULT_DELAY after `received` (the
    time.monotonic() it arrived; None: at once)."""
    wait = 0.0 if received is None else MIN_RESULT_DELAY - (time.monotonic() - received)
    if wait > 0:
        timer = threading.Timer(wait, _send_result, (gh, how, result, text))
        timer.daemon = True
        timer.start()
    else:
        _send_result(gh, how, result, text)


def _send_result(gh, how, result, text):
    if how == 'succeeded':
        gh.set_succeeded(result, text)
    elif how == 'aborted':
        gh.set_aborted(result, text)
    elif how == 'rejected':
        gh.set_rejected(result, text)
    else:
        gh.set_canceled(result, text)


def quiet_status_timer(server):
    """Publish an actionlib ActionServer's status at its status_frequency from
    clock_timers.periodic rather than the rospy.Timer it started (which, under sim time,
    wakes at every /clock). Call after the server's initialize() (start())."""
    timer = server.status_timer
    if timer is None or rospy.rostime.is_wallclock():
        return
    timer.shutdown()                     # (its thread ends at its first period)
    server.status_timer = periodic(1.0 / server.status_frequency, server.publish_status_async)
