"""`scripts/sawyer` as a child process on a ROS master of its own, for the test harness
(test/rosharness.py) and scripts/bench: start, wait until /robot/state is published,
stop everything it started. No rospy (rosgraph only, to ask the master)."""
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(os.environ.get('INTERA_RT_REPO') or Path(__file__).resolve().parents[3])
SAWYER = REPO / 'scripts' / 'sawyer'
STOP_TIMEOUT = 15.0     # s, SIGINT until SIGKILL
POLL_INTERVAL = 0.05    # s
ROBOT_STATE_TOPIC = '/robot/state'
# The ROS nodes of the robot (launch/sawyer.launch), a process each (the realtime core is a
# child process of realtime_loop's); what each serves: docs/design.md.
ROBOT_NODES = ('/realtime_loop', '/motion_controller', '/io')
IK_NODE = '/motion_controller'      # serves /ExternalTools/right/PositionKinematicsNode/*
JTAS_NODE = '/motion_controller'    # serves /robot/limb/right/follow_joint_trajectory
TF_NODE = '/io'                     # robot_state_publisher's /tf and /tf_static


def free_port():
    """A TCP port on 127.0.0.1 that is free now, chosen below Linux's ephemeral range
    (32768+) so that the OS is unlikely to hand it to another socket before the master
    binds it."""
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


def proc_start_time(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(root_pid):
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
                start = proc_start_time(child)
                if start is not None:
                    found[child] = start
                    stack.append(child)
    return found


def _die_with_parent():
    """preexec_fn: SIGTERM this child if its parent dies, so a crashed test or bench does
    not leave a robot running (scripts/sawyer forwards it to roslaunch)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


class RobotProcess:
    """A `scripts/sawyer ARGS` on its own master (a free port).

    master_uri  the robot's ROS master, e.g. http://127.0.0.1:23456
    log_path    combined stdout/stderr of scripts/sawyer (roslaunch and the nodes)
    ros_log_dir ROS_LOG_DIR of the robot (and of the calling process after start())
    proc        the subprocess.Popen (its own process group)
    """

    def __init__(self, args, log_path, ros_log_dir):
        self.args = list(args)
        self.port = free_port()
        self.master_uri = 'http://127.0.0.1:%d' % self.port
        self.log_path = Path(log_path)
        self.ros_log_dir = Path(ros_log_dir)
        self.proc = None

    def environ(self):
        env = dict(os.environ)
        env['ROS_MASTER_URI'] = self.master_uri
        env['ROS_IP'] = '127.0.0.1'
        env.pop('ROS_HOSTNAME', None)
        env['ROS_LOG_DIR'] = str(self.ros_log_dir)
        env['PYTHONUNBUFFERED'] = '1'
        return env

    def start(self):
        """Start it; the calling process talks to this robot's master from now on."""
        env = self.environ()
        for key in ('ROS_MASTER_URI', 'ROS_IP', 'ROS_LOG_DIR'):
            os.environ[key] = env[key]
        os.environ.pop('ROS_HOSTNAME', None)
        self.ros_log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, 'wb') as log:
            log.write(('$ ROS_MASTER_URI=%s %s %s\n' % (
                self.master_uri, SAWYER, ' '.join(self.args))).encode())
            log.flush()
            self.proc = subprocess.Popen(
                [str(SAWYER)] + self.args, cwd=str(REPO), env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def has_publisher(self, topic):
        import rosgraph
        master = rosgraph.Master('/intera_rt_probe', master_uri=self.master_uri)
        try:
            pubs, _subs, _srvs = master.getSystemState()
        except (OSError, rosgraph.MasterException):
            return False
        return any(name == topic and nodes for name, nodes in pubs)

    def wait_published(self, timeout, topic=ROBOT_STATE_TOPIC):
        """Poll until `topic` has a publisher. Raises RuntimeError naming the log when the
        robot exits or the time is up."""
        deadline = time.monotonic() + timeout
        while not self.has_publisher(topic):
            if not self.alive():
                raise RuntimeError('scripts/sawyer exited (code %s) while waiting for a '
                                   'publisher of %s on %s\n%s' % (self.proc.returncode, topic,
                                                                 self.master_uri, self.log_tail()))
            if time.monotonic() > deadline:
                raise RuntimeError('no publisher of %s on %s within %.0f s; see %s'
                                   % (topic, self.master_uri, timeout, self.log_path))
            time.sleep(POLL_INTERVAL)
        return self

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGINT to the process group, up to `timeout` s, then SIGKILL; finally SIGKILL any
        descendant left over (roslaunch runs each node and the master in a session of its
        own). Returns the exit code."""
        if self.proc is None:
            return None
        tree = descendants(self.proc.pid)
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
        # Anything the launcher started that is still running now is a leak: all of them
        # get the same 3 s to end (one after the other, a dozen nodes left behind by a
        # launcher killed mid-shutdown would hold Ctrl-C for half a minute), then SIGKILL.
        left = {pid: start for pid, start in tree.items() if proc_start_time(pid) == start}
        deadline = time.monotonic() + 3.0
        while left and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
            left = {pid: start for pid, start in left.items() if proc_start_time(pid) == start}
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return self.proc.returncode

    def log_tail(self, lines=60):
        try:
            with open(self.log_path, 'rb') as f:
                text = f.read().decode('utf-8', 'replace')
        except OSError as exc:
            return '(no log: %s)' % exc
        return '\n'.join(text.splitlines()[-lines:])
