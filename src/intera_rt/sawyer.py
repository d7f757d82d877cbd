"""Command-line launcher for an emulated Sawyer.

Usage (normally through ``scripts/sawyer``, which sets up the environment):

    scripts/sawyer [--sim-time [--speed X|max]] [--backend NAME]
                   [--backend-option KEY=VALUE ...] [--viewer]
                   [--stage-option STAGE.KEY=VALUE ...]
                   [--pose neutral|shipping|A0,A1,...,A6] [--disabled]
                   [--unhomed] [--gripper] [--world FILE] [--paused]
                   [--head-display-img FILE]
                   [--velocity-scaling] [--no-jtas]
                   [--rviz [--rviz-config FILE]] [--screen]

Validates the options, then runs

    roslaunch intera_rt sawyer.launch sim_time:=... speed:=... backend:=...
              backend_options:={...} stage_options:={...} pose:=... disabled:=... unhomed:=... gripper:=...
              world:=... paused:=... head_display_img:=... jtas:=... rviz:=... [rviz_config:=...]

in the foreground.  Options can also come from SAWYER_* environment variables (a
container's way to take them; see ``env_args``); options on the command line win.
roslaunch starts a ROS master at ROS_MASTER_URI when
none answers there (so a private robot on another port is just
``ROS_MASTER_URI=http://127.0.0.1:11999 scripts/sawyer``).  SIGINT and
SIGTERM are forwarded to roslaunch, which stops every node it started (and
the master, if it started one); the exit code is roslaunch's.
"""

import argparse
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
from urllib.parse import urlparse

NAMED_POSES = ('neutral', 'shipping')
N_JOINTS = 7
DEFAULT_MASTER_URI = 'http://127.0.0.1:11311'
PREFIX = '[sawyer]'


def parse_speed(text):
    """A simulation speed factor: a finite float > 0, or 'max'."""
    value = text.strip().lower()
    if value == 'max':
        return 'max'
    try:
        speed = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "invalid speed %r: expected a number > 0 or 'max'" % text)
    if not math.isfinite(speed) or speed <= 0.0:
        raise argparse.ArgumentTypeError(
            "invalid speed %r: expected a number > 0 or 'max'" % text)
    return repr(speed)


def parse_pose(text):
    """'neutral', 'shipping', or 7 joint angles (rad) separated by commas
    and/or whitespace.  Returns the roslaunch-safe form: the name, or the
    angles joined by commas."""
    value = text.strip()
    if value.lower() in NAMED_POSES:
        return value.lower()
    parts = [p for p in re.split(r'[,\s]+', value) if p]
    if len(parts) != N_JOINTS:
        raise argparse.ArgumentTypeError(
            'invalid pose %r: expected %s or %d joint angles in rad '
            '(right_j0..right_j6, separated by commas or spaces), got %d '
            'value(s)' % (text, ' or '.join(NAMED_POSES), N_JOINTS, len(parts)))
    angles = []
    for i, part in enumerate(parts):
        try:
            angle = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                'invalid pose %r: right_j%d value %r is not a number'
                % (text, i, part))
        if not math.isfinite(angle):
            raise argparse.ArgumentTypeError(
                'invalid pose %r: right_j%d value %r is not finite'
                % (text, i, part))
        angles.append(angle)
    return ','.join(repr(a) for a in angles)


def build_parser():
    parser = argparse.ArgumentParser(
        prog='sawyer',
        description='Start an emulated Rethink Sawyer (Intera 5.3) with '
                    'roslaunch, on the ROS master at ROS_MASTER_URI '
                    '(started by roslaunch if none answers).')
    parser.add_argument(
        '--sim-time', action='store_true',
        help='run on simulated time: the robot publishes /clock and '
             '/use_sim_time is true')
    parser.add_argument(
        '--speed', type=parse_speed, default=None, metavar='X',
        help="simulated-time speed factor, a number > 0 or 'max' "
             '(default 1.0; only with --sim-time)')
    parser.add_argument(
        '--backend', default='embedded', metavar='NAME',
        help='joint-boards backend: embedded (default; light physics) or mujoco '
             '(MuJoCo physics); see README "Backends"')
    parser.add_argument(
        '--backend-option', action='append', default=[], metavar='KEY=VALUE',
        dest='backend_options',
        help="an option of the backend, e.g. --backend-option table=true (repeatable; "
             "'--backend-option help' lists the backend's options)")
    parser.add_argument(
        '--stage-option', action='append', default=[], metavar='STAGE.KEY=VALUE',
        dest='stage_options',
        help="an option of a realtime stage, e.g. --stage-option "
             "collision_detection.squish_threshold=15 (repeatable; '--stage-option help' "
             "lists every stage's options; docs/realtime_loop.md#stages)")
    parser.add_argument(
        '--viewer', action='store_true',
        help="open the backend's interactive viewer (mujoco; needs a display)")
    parser.add_argument(
        '--pose', type=parse_pose, default='neutral',
        metavar='neutral|shipping|A0,...,A6',
        help='initial arm pose: a named pose or 7 joint angles in rad '
             '(default: neutral)')
    parser.add_argument(
        '--disabled', action='store_true',
        help='boot with the robot disabled')
    parser.add_argument(
        '--unhomed', action='store_true',
        help='boot with the arm not homed: /robot/homing_states NOT_HOMED, motion refused '
             'until homed (/robot/set_homing_mode, e.g. the SDK\'s home_joints.py)')
    parser.add_argument(
        '--gripper', action='store_true',
        help='an electric parallel gripper on the flange (the end_effector IO node '
             'reports right_gripper and puts its URDF fragment, right_gripper_tip and its '
             'mass, in the robot\'s model; default: nothing attached)')
    parser.add_argument(
        '--world', default='', metavar='FILE',
        help="an SDF world (its <model> and <include> elements; model:// on "
             'GAZEBO_MODEL_PATH) spawned at boot, as Gazebo loads a .world (docs/world.md)')
    parser.add_argument(
        '--paused', action='store_true',
        help="boot with physics paused (Gazebo's paused:=true; /gazebo/unpause_physics "
             'starts it)')
    parser.add_argument(
        '--head-display-img', default='', metavar='FILE',
        help="an image file the head display shows from start (sawyer_simulator's "
             'head_display_img; default: black)')
    parser.add_argument(
        '--velocity-scaling', action='store_true',
        help='beyond the robot: slow position and velocity moves that close in on a '
             'self-collision (distance-aware, directional; default: off, as the robot)')
    parser.add_argument(
        '--no-jtas', dest='jtas', action='store_false',
        help='leave out the built-in joint trajectory action server (run the SDK\'s '
             'joint_trajectory_action_server.py instead)')
    parser.add_argument(
        '--rviz', action='store_true',
        help='also open RViz (config/sawyer.rviz: robot model, TF, endpoint, avoidance '
             'shapes, sim obstacles, camera images) on $DISPLAY; headless: under xvfb-run')
    parser.add_argument(
        '--rviz-config', default=None, metavar='FILE',
        help='the RViz configuration --rviz opens (default: config/sawyer.rviz)')
    parser.add_argument(
        '--screen', action='store_true',
        help="pass --screen to roslaunch (every node's output to the "
             'terminal)')
    return parser


def _join_pose_values(argv):
    """'--pose -1,...' would look like an option to argparse: glue the value
    to the option ('--pose=-1,...')."""
    out = []
    i = 0
    while i < len(argv):
        if argv[i] == '--pose' and i + 1 < len(argv):
            out.append('--pose=' + argv[i + 1])
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


# SAWYER_* environment variable -> the option it stands for (flags take true/false).
ENV_FLAGS = {'SAWYER_SIM_TIME': '--sim-time', 'SAWYER_GRIPPER': '--gripper'}
ENV_VALUES = {'SAWYER_SPEED': '--speed', 'SAWYER_BACKEND': '--backend',
              'SAWYER_POSE': '--pose'}
ENV_MASTER_PORT = 'SAWYER_MASTER_PORT'     # the master's port (ROS_MASTER_URI's host kept)
ENV_BACKEND_OPTIONS = 'SAWYER_BACKEND_OPTIONS'   # KEY=VALUE ..., e.g. the world: table=true


def env_args(environ, parser):
    """Options from SAWYER_* variables, to go before the command line's (which win).
    A value that is not understood is an error naming the variable."""
    out = []
    for name, option in ENV_FLAGS.items():
        value = environ.get(name, '').strip().lower()
        if value in ('1', 'true', 'yes', 'on'):
            out.append(option)
        elif value not in ('', '0', 'false', 'no', 'off'):
            parser.error('%s=%r: expected true or false' % (name, environ[name]))
    for name, option in ENV_VALUES.items():
        if environ.get(name, '').strip():
            out += [option, environ[name].strip()]
    for item in environ.get(ENV_BACKEND_OPTIONS, '').split():
        out += ['--backend-option', item]
    return out


def master_uri_from(environ):
    """ROS_MASTER_URI (default http://127.0.0.1:11311), its port replaced by
    SAWYER_MASTER_PORT when that is set; ValueError naming a bad port."""
    uri = environ.get('ROS_MASTER_URI') or DEFAULT_MASTER_URI
    port = environ.get(ENV_MASTER_PORT, '').strip()
    if not port:
        return uri
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError('%s=%r: expected a TCP port 1..65535' % (ENV_MASTER_PORT, port))
    return 'http://%s:%d' % (urlparse(uri).hostname or '127.0.0.1', int(port))


def parse_args(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        master_uri_from(os.environ)
    except ValueError as exc:
        parser.error(str(exc))
    args = parser.parse_args(_join_pose_values(env_args(os.environ, parser) + argv))
    if args.speed is not None and not args.sim_time:
        parser.error('--speed is only meaningful with --sim-time')
    if args.speed is None:
        args.speed = '1.0'
    if args.rviz_config is not None:
        if not args.rviz:
            parser.error('--rviz-config is only meaningful with --rviz')
        if not os.path.isfile(args.rviz_config):
            parser.error('--rviz-config: no such file: %s' % args.rviz_config)
        args.rviz_config = os.path.abspath(args.rviz_config)
    if args.rviz and not os.environ.get('DISPLAY'):
        parser.error('--rviz needs an X display and DISPLAY is not set: run it on a desktop, '
                     'with ssh -X, or headless under xvfb-run (README "RViz")')
    from intera_rt.boards import check_backend
    from intera_rt.boards.registry import option_help
    options = {}
    for item in args.backend_options:
        if item.strip() == 'help':
            try:
                lines = option_help(args.backend)
            except (ValueError, ImportError) as exc:
                parser.error(str(exc))
            print('options of the %s backend (--backend-option KEY=VALUE):' % args.backend)
            print('\n'.join('  ' + line for line in lines) or '  none')
            parser.exit(0)
        key, sep, value = item.partition('=')
        if not sep or not key.strip():
            parser.error('--backend-option %r: expected KEY=VALUE' % item)
        options[key.strip()] = value.strip()
    if args.viewer:
        options['viewer'] = 'true'
    if args.gripper and args.backend == 'gazebo':
        options.setdefault('gripper', 'true')       # Gazebo's model carries what it weighs
    try:
        args.backend_options = check_backend(args.backend, options)
    except (ValueError, ImportError) as exc:
        parser.error(str(exc))
    args.stage_options = _stage_options(parser, args.stage_options)
    if args.world or args.paused:
        _check_world(parser, args)
    if getattr(args, 'head_display_img', ''):
        from intera_rt.io.head_display import screen_from_file
        try:
            screen_from_file(args.head_display_img)
        except ValueError as exc:
            parser.error('--head-display-img: %s' % exc)
        args.head_display_img = os.path.abspath(args.head_display_img)
    if args.pose not in NAMED_POSES:
        # Check limits here: a required node that exits makes roslaunch stop with code 0.
        from intera_rt.model import ARM_JOINTS, RobotModel
        limits = RobotModel.from_file().limits
        for name, angle in zip(ARM_JOINTS, (float(a) for a in args.pose.split(','))):
            lim = limits[name]
            if not lim.lower <= angle <= lim.upper:
                parser.error('--pose: %s = %g is outside its limits [%g, %g]'
                             % (name, angle, lim.lower, lim.upper))
    return args


def _check_world(parser, args):
    """--world and --paused need a backend with a world; the world file is parsed here, so
    that a bad one stops boot with the element named."""
    from intera_rt.boards import backend_class
    if 'world' not in backend_class(args.backend).capabilities:
        parser.error('--world and --paused need a backend with a world (embedded, mujoco); '
                     '%s has none' % args.backend)
    if args.world:
        from intera_rt.world import ROBOT_MODEL, WorldError, load_world
        try:
            load_world(args.world, reserved=(ROBOT_MODEL,))
        except WorldError as exc:
            parser.error('--world: %s' % exc)
        args.world = os.path.abspath(args.world)


def _stage_options(parser, items):
    """--stage-option STAGE.KEY=VALUE items as {stage: {key: value}}, checked against the
    stages' declared options (control.registry) before anything starts."""
    from intera_rt.control.registry import check_stage_options, stage_option_help
    options = {}
    for item in items:
        if item.strip() == 'help':
            print('options of the realtime stages (--stage-option STAGE.KEY=VALUE):')
            print('\n'.join('  ' + line for line in stage_option_help()))
            parser.exit(0)
        name, sep, value = item.partition('=')
        stage, dot, key = name.strip().partition('.')
        if not sep or not dot or not stage or not key:
            parser.error('--stage-option %r: expected STAGE.KEY=VALUE' % item)
        options.setdefault(stage, {})[key] = value.strip()
    try:
        return check_stage_options(options)
    except ValueError as exc:
        parser.error(str(exc))


def roslaunch_command(args):
    cmd = ['roslaunch']
    if args.screen:
        cmd.append('--screen')
    cmd += [
        'intera_rt', 'sawyer.launch',
        'sim_time:=%s' % ('true' if args.sim_time else 'false'),
        'speed:=%s' % args.speed,
        'backend:=%s' % args.backend,
        # a YAML flow mapping: the launch file loads it as ~backend_options
        'backend_options:=%s' % json.dumps(getattr(args, 'backend_options', {}) or {}),
        # loaded as realtime_loop's ~<stage>/<key> parameters
        'stage_options:=%s' % json.dumps(getattr(args, 'stage_options', {}) or {}),
        'pose:=%s' % args.pose,
        'disabled:=%s' % ('true' if args.disabled else 'false'),
        'unhomed:=%s' % ('true' if args.unhomed else 'false'),
        'gripper:=%s' % ('true' if args.gripper else 'false'),
        'world:=%s' % (getattr(args, 'world', '') or ''),
        'paused:=%s' % ('true' if getattr(args, 'paused', False) else 'false'),
        'head_display_img:=%s' % (getattr(args, 'head_display_img', '') or ''),
        'velocity_scaling:=%s' % ('true' if args.velocity_scaling else 'false'),
        'jtas:=%s' % ('true' if args.jtas else 'false'),
        'rviz:=%s' % ('true' if getattr(args, 'rviz', False) else 'false'),
    ]
    if getattr(args, 'rviz_config', None):
        cmd.append('rviz_config:=%s' % args.rviz_config)
    return cmd


def master_answers(uri, timeout=1.0):
    """True when something accepts TCP connections at the master URI."""
    parsed = urlparse(uri)
    if not parsed.hostname or not parsed.port:
        return False
    try:
        with socket.create_connection((parsed.hostname, parsed.port),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def _set_parent_death_signal(sig):
    """In the child: get `sig` when this launcher dies (Linux only), so that
    a killed launcher does not leave roslaunch running."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort only
        pass


def main(argv=None):
    args = parse_args(argv)
    master_uri = master_uri_from(os.environ)
    os.environ['ROS_MASTER_URI'] = master_uri
    if master_answers(master_uri):
        how = 'a master answers there: using it'
    else:
        how = 'no master answers there: roslaunch starts one'
    print('%s ROS_MASTER_URI=%s (%s)' % (PREFIX, master_uri, how), flush=True)
    cmd = roslaunch_command(args)
    print('%s %s' % (PREFIX, ' '.join(cmd)), flush=True)

    try:
        proc = subprocess.Popen(
            cmd, preexec_fn=lambda: _set_parent_death_signal(signal.SIGTERM))
    except FileNotFoundError:
        print('%s error: roslaunch not found on PATH (run through '
              'scripts/sawyer or scripts/env)' % PREFIX, file=sys.stderr)
        return 127

    def forward(signum, _frame):
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)

    while True:
        try:
            rc = proc.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
    if rc < 0:
        rc = 128 - rc
    print('%s roslaunch exited with code %d' % (PREFIX, rc), flush=True)
    return rc


if __name__ == '__main__':
    sys.exit(main())
