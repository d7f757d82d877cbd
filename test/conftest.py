"""pytest configuration shared by all tests (see test/README.md).

Fixtures:
  robot  (module scope) boots an emulated Sawyer with its own ROS master on a
         free port (scripts/sawyer), initialises this process's rospy node
         against it, yields a rosharness.Robot (``master_uri``, ``log_path``,
         ...), and stops everything afterwards.  Arguments for scripts/sawyer:
             pytestmark = pytest.mark.sawyer_args(['--sim-time'])
         or a module-level ``SAWYER_ARGS = ['--sim-time']``.
         One module using ``robot`` per pytest process (scripts/test runs
         one process per file).  INTERA_RT_TEST_BACKEND=mujoco adds
         ``--backend mujoco`` to every robot (unless the module names one).

Tiers: a test whose fixtures include ``robot`` is marked ``ros`` here, at collection; a
module that boots a robot or a ROS master by other means declares
``pytestmark = pytest.mark.ros``.  ``scripts/test --fast`` runs ``-m "not ros"``.  A test
without the mark that starts a ROS master or roslaunch, or initialises rospy, fails naming
its module, so a module cannot sit in the wrong tier.  Modules that do not use ``robot``
start no master and never import rospy.
"""

import os
import sys
import threading
import time

import pytest

import rosharness
from intera_rt.tooling.robot_process import descendants

ROS_MARK = 'ros'
# Processes that mean "a ROS master or a robot was started" (scripts/sawyer runs roslaunch,
# which runs rosmaster).
_ROS_PROCESSES = ('rosmaster', 'roslaunch', 'roscore')
_GUARD_PERIOD = 0.5     # s between looks at this process's descendants

_FAILED_MODULES = pytest.StashKey[set]()
_LOG_TAILS = pytest.StashKey[list]()


def pytest_configure(config):
    config.addinivalue_line(
        'markers',
        ROS_MARK + ': boots a robot or a ROS master (set by conftest for tests that use the '
        'robot fixture; declared by a module that starts one by other means); '
        'scripts/test --fast runs -m "not ros"')
    config.addinivalue_line(
        'markers',
        'sawyer_args(args): extra scripts/sawyer arguments for the module\'s '
        'robot fixture (module-level pytestmark only)')
    # Debian's rospy still calls Condition.notifyAll().
    config.addinivalue_line('filterwarnings',
                            'ignore:notifyAll:DeprecationWarning')
    config.stash[_FAILED_MODULES] = set()
    config.stash[_LOG_TAILS] = []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: marked before pytest's -m deselects
    for item in items:
        if 'robot' in getattr(item, 'fixturenames', ()):
            item.add_marker(ROS_MARK)


def _ros_processes():
    """{pid: command line} of every ROS master or roslaunch below this process."""
    found = {}
    for pid in descendants(os.getpid()):
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                argv = f.read().decode('utf-8', 'replace').split('\0')
        except OSError:
            continue
        if any(os.path.basename(a) in _ROS_PROCESSES for a in argv[:3]):
            found[pid] = ' '.join(argv).strip()
    return found


class _RosProcessWatch(object):
    """While armed, looks below this process every _GUARD_PERIOD s for a ROS master or
    roslaunch that was not there when it was armed (a robot the module's earlier tests
    booted is not this test's), and keeps the first one seen."""

    def __init__(self):
        self._armed = threading.Event()
        self._before = {}
        self.seen = None
        threading.Thread(target=self._run, name='ros-tier-guard', daemon=True).start()

    def arm(self):
        self._before = _ros_processes()
        self.seen = None
        self._armed.set()

    def disarm(self):
        self._armed.clear()
        return self.seen or self._new()

    def _new(self):
        new = [cmd for pid, cmd in _ros_processes().items() if pid not in self._before]
        return new[0] if new else None

    def _run(self):
        while True:
            self._armed.wait()
            time.sleep(_GUARD_PERIOD)
            if self._armed.is_set() and self.seen is None:
                self.seen = self._new()


_WATCH = []


def _rospy_node():
    rospy = sys.modules.get('rospy')
    return rospy is not None and rospy.core.is_initialized()


@pytest.fixture(autouse=True)
def _tier_guard(request):
    """A test without the ``ros`` mark must start no robot, no ROS master, no rospy node."""
    if request.node.get_closest_marker(ROS_MARK) is not None:
        yield
        return
    if not _WATCH:
        _WATCH.append(_RosProcessWatch())
    node_before = _rospy_node()
    _WATCH[0].arm()
    try:
        yield
    finally:
        seen = _WATCH[0].disarm()
    if seen or (_rospy_node() and not node_before):
        pytest.fail('%s started %s but is not in the ROS tier: declare '
                    '`pytestmark = pytest.mark.ros` in its module (test/README.md, "Tiers")'
                    % (request.node.nodeid, '`%s`' % seen if seen else 'a rospy node'),
                    pytrace=False)


def _module_id(nodeid):
    return nodeid.split('::', 1)[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.config.stash[_FAILED_MODULES].add(_module_id(item.nodeid))


def _sawyer_args(request):
    marker = request.node.get_closest_marker('sawyer_args')
    if marker is not None:
        if len(marker.args) == 1 and isinstance(marker.args[0], (list, tuple)):
            args = [str(a) for a in marker.args[0]]
        else:
            args = [str(a) for a in marker.args]
    else:
        args = [str(a) for a in getattr(request.module, 'SAWYER_ARGS', [])]
    # INTERA_RT_TEST_BACKEND=mujoco runs every robot on that backend (a module that names
    # its own --backend keeps it); =gazebo, on the Gazebo stand-in, under sim time.
    if '--backend' not in args and rosharness.backend_under_test() != 'embedded':
        args = rosharness.backend_args() + args
        if rosharness.backend_under_test() == 'gazebo' and '--sim-time' not in args:
            args = ['--sim-time'] + args        # Gazebo is the clock
    return args


@pytest.fixture(scope='module')
def robot(request, tmp_path_factory):
    rosharness.check_node_unused()
    name = request.module.__name__.rsplit('.', 1)[-1]
    log_dir = tmp_path_factory.mktemp('sawyer_' + name)
    bot = rosharness.Robot(_sawyer_args(request), log_dir)
    bot.start()
    booted = False
    try:
        bot.wait_ready()
        booted = True
        yield bot
    finally:
        rosharness.shutdown_node('robot fixture teardown')
        rc = bot.stop()
        failed = (not booted or _module_id(request.node.nodeid)
                  in request.config.stash[_FAILED_MODULES])
        if failed and booted:
            request.config.stash[_LOG_TAILS].append(
                (request.node.nodeid, bot.log_path, rc, bot.log_tail(80)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tails = config.stash[_LOG_TAILS]
    if tails:
        terminalreporter.section('scripts/sawyer log of failed modules')
        for module, path, rc, tail in tails:
            terminalreporter.write_line('--- %s: %s (exit code %s), last lines:'
                                        % (module, path, rc))
            terminalreporter.write_line(tail)

    # Counts for scripts/test's aggregate line: "passed failed skipped errors"
    results = os.environ.get('INTERA_RT_TEST_RESULTS')
    if results:
        stats = terminalreporter.stats

        def n(key):
            return len(stats.get(key, []))
        counts = (n('passed') + n('xpassed'), n('failed'),
                  n('skipped') + n('xfailed'), n('error'))
        with open(results, 'a') as f:
            f.write('%d %d %d %d\n' % counts)


@pytest.fixture(scope='module')
def no_false_detection(request, robot):
    """Normal use: nothing in a module that uses this may make the robot detect a collision
    (`pytestmark = pytest.mark.usefixtures('no_false_detection')`)."""
    watch = rosharness.CollisionWatch()
    yield
    watch.close()
    watch.check(request.module.__name__)
