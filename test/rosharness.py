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
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAWYER = REPO / 'scripts' / 'sawyer'

BOOT_TIMEOUT = 60.0     # s, scripts/sawyer start until /robot/state arrives
STOP_TIMEOUT = 15.0     # s, SIGINT until SIGKILL
POLL_INTERVAL = 0.05    # s

ROBOT_STATE_TOPIC = '/robot/state'


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

def free_port():
    """A TCP port on 127.0.0.1 that is free now, chosen below Linux's
    ephemeral range (32768+) so that the OS is unlikely to hand it to
    another socket before the master binds it."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(20000, 32000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(('127.0.0.1', port))
            except OSError:
                continue
        return port
    raise RuntimeError('no free TCP port found in 20000-32000')


def _proc_start_time(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _descendants(root_pid):
    """{pid: start_time} of every live descendant of root_pid."""
    children = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found = {}
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                start = _proc_start_time(child)
                if start is not None:
                    found[child] = start
                    stack.append(child)
    return found


class Robot(object):
    """A running ``scripts/sawyer``.

    master_uri  the robot's ROS master, e.g. http://127.0.0.1:23456
    port        its TCP port
    log_path    pathlib.Path of the combined stdout/stderr of scripts/sawyer
                (roslaunch and the realtime_loop node, output="screen")
    ros_log_dir ROS_LOG_DIR of the robot and of the test node
    args        the scripts/sawyer arguments
    proc        the subprocess.Popen (its own process group)
    """

    def __init__(self, args, log_dir):
        self.args = list(args)
        self.port = free_port()
        self.master_uri = 'http://127.0.0.1:%d' % self.port
        log_dir = Path(log_dir)
        self.log_path = log_dir / 'sawyer.log'
        self.ros_log_dir = log_dir / 'ros_log'
        self.proc = None

    # -- start -------------------------------------------------------------

    def environ(self):
        env = dict(os.environ)
        env['ROS_MASTER_URI'] = self.master_uri
        env['ROS_IP'] = '127.0.0.1'
        env.pop('ROS_HOSTNAME', None)
        env['ROS_LOG_DIR'] = str(self.ros_log_dir)
        env['PYTHONUNBUFFERED'] = '1'
        return env

    def start(self):
        env = self.environ()
        # The test process talks to this robot's master from now on.
        for key in ('ROS_MASTER_URI', 'ROS_IP', 'ROS_LOG_DIR'):
            os.environ[key] = env[key]
        os.environ.pop('ROS_HOSTNAME', None)
        self.ros_log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, 'wb') as log:
            log.write(('$ ROS_MASTER_URI=%s %s %s\n' % (
                self.master_uri, SAWYER, ' '.join(self.args))).encode())
            log.flush()
            self.proc = subprocess.Popen(
                [str(SAWYER)] + self.args, cwd=str(REPO), env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _check_alive(self, what):
        if not self.alive():
            raise AssertionError(
                'scripts/sawyer exited (code %s) while waiting for %s\n%s'
                % (self.proc.returncode, what, self.log_tail()))

    def has_publisher(self, topic):
        import rosgraph
        master = rosgraph.Master('/intera_rt_test_probe',
                                 master_uri=self.master_uri)
        try:
            pubs, _subs, _srvs = master.getSystemState()
        except (OSError, rosgraph.MasterException):
            return False
        return any(name == topic and nodes for name, nodes in pubs)

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Wait (polling) until /robot/state has a publisher and a message
        arrives; initialise the test process's rospy node on the way."""
        deadline = time.monotonic() + timeout
        what = 'a publisher of %s on %s' % (ROBOT_STATE_TOPIC, self.master_uri)

        def published():
            self._check_alive(what)
            return self.has_publisher(ROBOT_STATE_TOPIC)
        try:
            wait_for(published, timeout, what, interval=POLL_INTERVAL)
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

    # -- stop --------------------------------------------------------------

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGINT to the process group, up to ``timeout`` s, then SIGKILL;
        finally SIGKILL any descendant left over (roslaunch runs each node
        and the master in a session of its own).  Returns the exit code."""
        if self.proc is None:
            return None
        tree = _descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(5)
        # Anything the launcher started that is still running now is a leak.
        for pid, start in tree.items():
            if _proc_start_time(pid) == start:
                deadline = time.monotonic() + 3.0
                while (_proc_start_time(pid) == start
                       and time.monotonic() < deadline):
                    time.sleep(POLL_INTERVAL)
                if _proc_start_time(pid) == start:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        return self.proc.returncode

    # -- logs --------------------------------------------------------------

    def log_tail(self, lines=60):
        try:
            with open(self.log_path, 'rb') as f:
                text = f.read().decode('utf-8', 'replace')
        except OSError as exc:
            return '(no log: %s)' % exc
        return '\n'.join(text.splitlines()[-lines:])


def _die_with_parent():
    """preexec_fn: SIGTERM this child if the test process dies, so a crashed
    pytest does not leave a robot running (scripts/sawyer forwards it to
    roslaunch, which stops its nodes and master)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass
