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

Modules that do not use ``robot`` start no master and never import rospy.
"""

import os

import pytest

import rosharness

_FAILED_MODULES = pytest.StashKey[set]()
_LOG_TAILS = pytest.StashKey[list]()


def pytest_configure(config):
    config.addinivalue_line(
        'markers',
        'sawyer_args(args): extra scripts/sawyer arguments for the module\'s '
        'robot fixture (module-level pytestmark only)')
    # Debian's rospy still calls Condition.notifyAll().
    config.addinivalue_line('filterwarnings',
                            'ignore:notifyAll:DeprecationWarning')
    config.stash[_FAILED_MODULES] = set()
    config.stash[_LOG_TAILS] = []


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
    # its own --backend keeps it).
    if '--backend' not in args and rosharness.backend_under_test() != 'embedded':
        args = ['--backend', rosharness.backend_under_test()] + args
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
