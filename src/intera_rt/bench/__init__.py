"""Benchmarks of the emulated robot (``scripts/bench``, ``python -m intera_rt.bench``).

Sections are pluggable. A section is a name and a ``run(**options) -> dict``; the driver
(``__main__``) runs every section it knows (or those named by ``--only``) and writes each
one's dict into ``bench.json`` under the section's name.

The sections, in the order they run (one module each under intera_rt.bench):
  realtime   tick compute time at 1 kHz, command -> state round trip, fastest lockstep
             (sim-time) speed, plugin costs; each against its own robot
  plugins    the realtime stages' cost per tick, collision detection latency (contact →
             stop) and false detections over normal-use runs (no robot)
  plant      each simulated plant's step (embedded, MuJoCo) with and without obstacles and
             contacts (no robot)
  boards     the core's tick on each backend, the out-of-process boards' round trip and
             loss (no robot)
  ik         the IK solver's success rate and latency (no robot)
  jtas       trajectory tracking through the joint trajectory action server
  motion     the motion controller's Cartesian success rates (with each failure's error id
             and whether any continuous joint path existed), planning latency, motion quality
  soak       random valid and invalid use with E-stops for --soak S seconds (crashes, every
             motion's result, RSS growth, tick p99 drift); each robot process's memory;
             what mlockall buys under the wall clock
  fleet      many robots on one machine (scripts/fleet): sim seconds per wall second of 1, 2,
             4 robots at --speed max; robots that keep the state rate at --speed 1; memory
  world      /gazebo/spawn_sdf_model → the model in /gazebo/model_states (latency, failures)
  picking    MuJoCo with the gripper: the plant's step with 10 blocks, lockstep speed with
             them through ROS, pick-and-place success over 50 random block poses

Each section runs in a process of its own (rospy can initialise one node per process, and
a section may boot a robot of its own). ``run`` receives, of the driver's options, only
those its signature accepts and the section lists in OPTIONS: ``out_dir`` (where bench.json
and plots go), ``quick`` (a short smoke run), ``duration`` (the realtime tick
measurement's seconds) and ``soak`` (the soak's seconds).
"""
import contextlib
import importlib
import inspect
import os
import time

SECTIONS = {'realtime': 'intera_rt.bench.realtime', 'plugins': 'intera_rt.bench.plugins',
            'plant': 'intera_rt.bench.plant', 'boards': 'intera_rt.bench.boards',
            'ik': 'intera_rt.bench.ik', 'jtas': 'intera_rt.bench.jtas',
            'motion': 'intera_rt.bench.motion', 'soak': 'intera_rt.bench.soak',
            'fleet': 'intera_rt.bench.fleet', 'world': 'intera_rt.bench.world',
            'picking': 'intera_rt.bench.picking'}
# The driver options each section takes (a section's own `duration` means something else).
OPTIONS = {'realtime': ('out_dir', 'quick', 'duration'), 'plant': ('quick',),
           'plugins': ('out_dir', 'quick'), 'boards': ('quick',), 'soak': ('out_dir', 'quick', 'soak')}
COMMON_OPTIONS = ('out_dir', 'quick')


def discover():
    """{section name: module name}, in the order they run."""
    return dict(SECTIONS)


def load(module_name):
    """The section's run() function; ImportError/AttributeError when it has none."""
    module = importlib.import_module(module_name)
    run = getattr(module, 'run')
    if not callable(run):
        raise AttributeError('%s.run is not callable' % module_name)
    return run


def options_for(section, options):
    """The driver options a section may receive (see the module docstring)."""
    keys = OPTIONS.get(section, COMMON_OPTIONS)
    return {k: v for k, v in options.items() if k in keys}


def call(run, **options):
    """run(**the options its signature accepts)."""
    try:
        params = inspect.signature(run).parameters
    except (TypeError, ValueError):
        return run()
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return run(**options)
    return run(**{k: v for k, v in options.items() if k in params})


@contextlib.contextmanager
def own_robot(args, log_path, boot_timeout):
    """scripts/sawyer ARGS on a master of its own, for a measurement in this process: yields
    the RobotProcess once /robot/state is published (this process now talks to that
    master); on exit shuts this process's rospy down (if it started) and stops the robot.
    Its output goes to log_path, its ROS logs beside it (<log_path stem>_ros_log/)."""
    from intera_rt.tooling.robot_process import RobotProcess
    robot = RobotProcess(args, log_path, os.path.splitext(log_path)[0] + '_ros_log')
    try:
        yield robot.start().wait_published(boot_timeout)
    finally:
        try:
            import rospy
            rospy.signal_shutdown('bench done')
        except Exception:  # noqa: BLE001 - rospy may never have started
            pass
        robot.stop()


def _call_into(conn, fn, args):
    try:
        conn.send(('ok', fn(*args)))
    except Exception as exc:  # noqa: BLE001 - carried back to the caller, who reports it
        conn.send(('error', '%s: %s' % (type(exc).__name__, exc)))
    conn.close()


def in_own_process(fn, *args, timeout=3600.0):
    """fn(*args) in a fresh process, its (picklable) result returned: rospy can be brought
    up once per process, so each own_robot measurement after the first needs its own.
    RuntimeError with the child's error when it raised, died or took over `timeout` s."""
    import multiprocessing
    ctx = multiprocessing.get_context('spawn')
    ours, theirs = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_call_into, args=(theirs, fn, args), daemon=True)
    child.start()
    theirs.close()
    try:
        if not ours.poll(timeout):
            child.kill()
            raise RuntimeError('%s took over %.0f s' % (fn.__name__, timeout))
        kind, value = ours.recv()
    except EOFError:
        raise RuntimeError('%s: its process died (exit %s)' % (fn.__name__, child.exitcode)) from None
    finally:
        child.join(10.0)
    if kind == 'error':
        raise RuntimeError(value)
    return value


def wait_for(predicate, timeout, what, interval=0.01):
    """Poll predicate() until truthy and return its value; RuntimeError naming `what` after
    `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError('timed out after %.0f s waiting for %s' % (timeout, what))
        time.sleep(interval)
