"""Harness for tests that talk to a running emulated Sawyer over ROS.

Used through the fixtures in conftest.py (``robot``); the helpers below can
be imported by test modules (``from rosharness import wait_for, ...``).

Process model (see test/README.md): every ROS test module gets its own robot
(``scripts/sawyer``) with its own ROS master on a free port, and talks to it
through one rospy node in the test process.  rospy can be initialised only
once per process and cannot move to another master, so a pytest process may
hold at most one ROS test module; scripts/test runs one pytest process per
test file.  Modules that do not use the ``robot`` fixture never start a
master and never import rospy.
"""

import os
import threading
import time
from pathlib import Path

from intera_rt.tooling.robot_process import POLL_INTERVAL, ROBOT_STATE_TOPIC, RobotProcess

BOOT_TIMEOUT = 60.0     # s, scripts/sawyer start until /robot/state arrives


def backend_under_test():
    """The joint-boards backend every robot of this test run boots on: the
    INTERA_RT_TEST_BACKEND environment variable (default embedded)."""
    return os.environ.get('INTERA_RT_TEST_BACKEND', '').strip() or 'embedded'


def backend_options():
    """The --backend-option values backend_args passes, as the robot's parameters hold them:
    gazebo is the Gazebo stand-in (docs/backends.md#gazebo-what-was-verified-here), as no
    Gazebo runs here."""
    if backend_under_test() == 'gazebo':
        # Half real time, as test_gazebo_robot: Gazebo is not in lockstep with the loop, and
        # on this shared machine a stand-in at 1x runs ahead of a loaded loop by many steps.
        return {'standin': True, 'real_time_factor': 0.5}
    return {}


def backend_args():
    """scripts/sawyer's arguments for the backend under test."""
    args = ['--backend', backend_under_test()]
    for key, value in backend_options().items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ['--backend-option', '%s=%s' % (key, text)]
    return args


# ---------------------------------------------------------------------------
# Generic waiting
# ---------------------------------------------------------------------------

def wait_for(predicate, timeout, what, interval=0.02):
    """Poll ``predicate()`` until it returns a truthy value, and return that
    value.  Raises AssertionError naming ``what`` after ``timeout`` seconds
    of wall-clock time."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %.1f s waiting for %s'
                                 % (timeout, what))
        time.sleep(interval)


# ---------------------------------------------------------------------------
# Topics
# ---------------------------------------------------------------------------

class Latest(object):
    """Subscribes to ``topic`` and keeps the latest message.

    ``rec.msg`` is the latest message (None before the first), ``rec.count``
    how many arrived, ``rec.wait(timeout)`` waits for one (or for one that
    satisfies ``predicate``), ``rec.wait_new(timeout)`` for one that arrives
    after the call.  Use as a context manager or call ``unregister()``."""

    def __init__(self, topic, msg_type, queue_size=10):
        import rospy
        self.topic = topic
        self._cond = threading.Condition()
        self.msg = None
        self.count = 0
        self.received_at = None   # time.monotonic() of the latest message
        self._sub = rospy.Subscriber(topic, msg_type, self._callback,
                                     queue_size=queue_size)

    def _callback(self, msg):
        with self._cond:
            self.msg = msg
            self.count += 1
            self.received_at = time.monotonic()
            self._cond.notify_all()

    def get(self):
        with self._cond:
            return self.msg

    def wait(self, timeout=10.0, predicate=None, what=None):
        """The latest message once one exists (and ``predicate(msg)`` is
        true, if given); AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                msg = self.msg
                if msg is not None and (predicate is None or predicate(msg)):
                    return msg
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        'timed out after %.1f s waiting for %s'
                        % (timeout, what or self._describe(predicate)))
                self._cond.wait(min(remaining, 0.1))

    def wait_new(self, timeout=10.0, what=None):
        """A message received after this call."""
        with self._cond:
            start = self.count
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.count <= start:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        'timed out after %.1f s waiting for %s'
                        % (timeout, what or 'a new message on %s' % self.topic))
                self._cond.wait(min(remaining, 0.1))
            return self.msg

    def _describe(self, predicate):
        if predicate is None:
            return 'a message on %s' % self.topic
        return 'a message on %s satisfying %s' % (
            self.topic, getattr(predicate, '__name__', predicate))

    def unregister(self):
        self._sub.unregister()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()


def subscribers_of(topic):
    """The nodes the master lists as subscribers of `topic`."""
    import rosgraph
    _pubs, subs, _srvs = rosgraph.Master('/intera_rt_test').getSystemState()
    return next((nodes for name, nodes in subs if name == topic), [])


def wait_connected(pub, node, timeout=10.0):
    """Wait until publisher `pub` has a connection to every subscriber the master lists,
    `node` among them (a connection count alone may count another node's)."""
    wait_for(lambda: node in subscribers_of(pub.resolved_name)
             and pub.get_num_connections() >= len(subscribers_of(pub.resolved_name)),
             timeout, '%s connected to %s' % (node, pub.resolved_name))


class CollisionWatch(object):
    """Records every /intera_rt/realtime_state message that reports a detected collision:
    `hits` = [(stamp s, kinds, the test running, the estimated external torque N m)]. For
    modules of normal use, which must raise none."""

    def __init__(self):
        import rospy
        from intera_rt_msgs.msg import RealtimeState
        self.hits = []
        self._sub = rospy.Subscriber('/intera_rt/realtime_state', RealtimeState, self._cb,
                                     queue_size=100)

    def _cb(self, msg):
        if msg.collision:
            kinds = [k for k in ('impact', 'squish', 'hand_overwrench') if getattr(msg, k)]
            test = os.environ.get('PYTEST_CURRENT_TEST', '').split('::')[-1]
            self.hits.append((msg.header.stamp.to_sec(), kinds, test,
                              [round(t, 1) for t in msg.external_torque]))

    def close(self):
        self._sub.unregister()

    def check(self, what):
        assert not self.hits, '%s raised collision detections: %s' % (what, self.hits[:5])


class StalledClient(object):
    """A SimpleActionClient whose thread is descheduled for ``stall`` s between publishing a
    goal and recording its handle (a busy machine), and a record of what it logs about goal
    handles it is not tracking: status, feedback or a result the server sent too soon, which
    the client drops. Use as a context manager; ``untracked`` lists the log lines."""

    def __init__(self, ns, action_type, stall=0.02, timeout=30.0):
        import logging
        import time

        import actionlib
        import rospy
        self.client = actionlib.SimpleActionClient(ns, action_type)
        wait_for(lambda: self.client.wait_for_server(rospy.Duration(0.5)), timeout,
                 'action server %s' % ns)
        manager = self.client.action_client.manager
        publish = manager.send_goal_fn

        def publish_then_stall(msg):
            publish(msg)
            time.sleep(stall)
        manager.register_send_goal_fn(publish_then_stall)
        self.untracked = []
        untracked = self.untracked

        class Watch(logging.Handler):
            def emit(self, record):
                if "that we're not tracking" in record.getMessage():
                    untracked.append(record.getMessage())
        self._watch = Watch()
        logging.getLogger('rosout').addHandler(self._watch)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        import logging
        logging.getLogger('rosout').removeHandler(self._watch)
        self.client.action_client.stop()
        return False


def latest(topic, msg_type, queue_size=10):
    """A ``Latest`` recorder subscribed to ``topic``."""
    return Latest(topic, msg_type, queue_size=queue_size)


def wait_for_message(topic, msg_type, timeout=10.0):
    """The next message on ``topic`` (wall-clock timeout, AssertionError
    naming the topic when none arrives)."""
    with Latest(topic, msg_type, queue_size=1) as rec:
        return rec.wait(timeout, what='a message on %s' % topic)


# ---------------------------------------------------------------------------
# The test process's rospy node (once per process)
# ---------------------------------------------------------------------------

_node_master = None
_node_shut_down = False


def ensure_node(master_uri):
    """Initialise this process's rospy node against ``master_uri`` (once).

    ROS_MASTER_URI/ROS_IP must already point there (the robot fixture sets
    them).  Raises RuntimeError if the node was already initialised for
    another master, or was shut down: one ROS test module per process."""
    global _node_master
    if _node_master is not None:
        if _node_master == master_uri and not _node_shut_down:
            return
        _raise_reinit(master_uri)
    import rospy
    assert os.environ.get('ROS_MASTER_URI') == master_uri, \
        'set ROS_MASTER_URI before ensure_node()'
    rospy.init_node('intera_rt_test', anonymous=True, disable_signals=True)
    _node_master = master_uri


def check_node_unused():
    """Raise (before booting a robot) if this process's rospy node is
    already taken by another ROS test module."""
    if _node_master is not None:
        _raise_reinit(None)


def _raise_reinit(master_uri):
    raise RuntimeError(
        'rospy in this process was already initialised for the master %s '
        '(of another test module; now wanted: %s); rospy cannot be '
        're-initialised, so run each ROS test module in its own pytest '
        'process (scripts/test does that: scripts/test test/test_x.py)'
        % (_node_master, master_uri or 'a new one'))


def shutdown_node(reason='tests done'):
    """Shut this process's rospy node down (unregisters from the master)."""
    global _node_shut_down
    if _node_master is None or _node_shut_down:
        return
    import rospy
    rospy.signal_shutdown(reason)
    _node_shut_down = True


# ---------------------------------------------------------------------------
# The robot process
# ---------------------------------------------------------------------------

class Robot(RobotProcess):
    """A running ``scripts/sawyer`` on its own master (intera_rt.tooling.robot_process), with its
    log in ``log_dir/sawyer.log`` and ROS_LOG_DIR ``log_dir/ros_log``; ``wait_ready``
    also brings up this process's rospy node on that master."""

    def __init__(self, args, log_dir):
        log_dir = Path(log_dir)
        super().__init__(args, log_dir / 'sawyer.log', log_dir / 'ros_log')

    def _check_alive(self, what):
        if not self.alive():
            raise AssertionError(
                'scripts/sawyer exited (code %s) while waiting for %s\n%s'
                % (self.proc.returncode, what, self.log_tail()))

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Wait (polling) until /robot/state has a publisher and a message
        arrives; initialise the test process's rospy node on the way."""
        deadline = time.monotonic() + timeout
        try:
            try:
                self.wait_published(timeout, ROBOT_STATE_TOPIC)
            except RuntimeError as exc:
                raise AssertionError(str(exc)) from None
            ensure_node(self.master_uri)
            from intera_core_msgs.msg import RobotAssemblyState
            with Latest(ROBOT_STATE_TOPIC, RobotAssemblyState, 1) as rec:
                wait_for(lambda: self._check_alive('/robot/state')
                         or rec.get() is not None,
                         max(deadline - time.monotonic(), 1.0),
                         'the first message on %s' % ROBOT_STATE_TOPIC,
                         interval=POLL_INTERVAL)
        except AssertionError as exc:
            raise AssertionError('robot did not boot: %s\n--- tail of %s ---\n%s'
                                 % (str(exc).split('\n')[0], self.log_path,
                                    self.log_tail()))
        return self
