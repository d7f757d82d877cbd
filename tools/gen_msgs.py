#!/usr/bin/python3
"""Generate Python message/service packages for intera_rt with genpy.

Usage: /usr/bin/python3 tools/gen_msgs.py OUTDIR

Sources live in the repository as
  msg/<pkg>/*.msg, srv/<pkg>/*.srv, action/<pkg>/*.action
Action files are first expanded into the seven standard actionlib message
definitions (in a temporary directory), then genpy turns every message and
service into Python modules under OUTDIR/<pkg>/{msg,srv}.

Message dependencies outside this repository (std_msgs, geometry_msgs,
sensor_msgs, trajectory_msgs, actionlib_msgs) are read from Debian's
/usr/share/<pkg>/msg.  If one of those packages has no importable Python
module on this system (e.g. python3-sensor-msgs is not installed), it is
generated into OUTDIR as well so that the generated packages can be imported.
"""

import importlib.util
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Packages built from this repository, in dependency order.
PACKAGES = ('intera_core_msgs', 'intera_motion_msgs', 'control_msgs',
            'intera_rt_msgs', 'gazebo_msgs', 'controller_manager_msgs')

# Message packages provided by Debian (ros-*-msgs), searched in /usr/share.
SYSTEM_PACKAGES = ('std_msgs', 'geometry_msgs', 'sensor_msgs',
                   'trajectory_msgs', 'actionlib_msgs')
SYSTEM_SHARE = '/usr/share'

# Written into every package directory this tool creates, so that reruns
# know which directories in OUTDIR they own.
MARKER = '.generated_by_gen_msgs'


class GenError(Exception):
    pass


def _import_generators():
    try:
        import genmsg  # noqa: F401
        import genpy.generator
        import genpy.generate_initpy
    except ImportError as exc:
        raise GenError(
            'cannot import genmsg/genpy (%s); run with /usr/bin/python3 and '
            'install the Debian packages python3-genmsg and python3-genpy'
            % exc)
    return genpy.generator, genpy.generate_initpy


def _list(directory, ext):
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                  if f.endswith(ext)
                  and os.path.isfile(os.path.join(directory, f)))


def expand_action(path, msg_dir, src_dir=None):
    """Write the 7 actionlib messages for one .action file into msg_dir.

    src_dir, if given, is the package's hand-written .msg directory; a
    generated name that already exists there is an error.
    """
    name = os.path.basename(path)[:-len('.action')]
    with open(path) as f:
        text = f.read()
    parts = [[]]
    for line in text.splitlines():
        if line.startswith('---'):
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) != 3:
        raise GenError('%s: expected 3 sections separated by "---", found %d'
                       % (path, len(parts)))
    goal, result, feedback = ('\n'.join(p).strip('\n') + '\n' for p in parts)
    files = {
        name + 'Goal': goal,
        name + 'Result': result,
        name + 'Feedback': feedback,
        name + 'ActionGoal': ('Header header\n'
                              'actionlib_msgs/GoalID goal_id\n'
                              '%sGoal goal\n' % name),
        name + 'ActionResult': ('Header header\n'
                                'actionlib_msgs/GoalStatus status\n'
                                '%sResult result\n' % name),
        name + 'ActionFeedback': ('Header header\n'
                                  'actionlib_msgs/GoalStatus status\n'
                                  '%sFeedback feedback\n' % name),
        name + 'Action': ('%sActionGoal action_goal\n'
                          '%sActionResult action_result\n'
                          '%sActionFeedback action_feedback\n'
                          % (name, name, name)),
    }
    for msg_name in sorted(files):
        target = os.path.join(msg_dir, msg_name + '.msg')
        if os.path.exists(target) or (src_dir and os.path.exists(
                os.path.join(src_dir, msg_name + '.msg'))):
            raise GenError('%s: generated %s.msg clashes with an existing '
                           'message' % (path, msg_name))
        with open(target, 'w') as f:
            f.write(files[msg_name])


def _is_importable_elsewhere(pkg, outdir):
    """True if `pkg.msg` can be imported without looking in outdir."""
    real_out = os.path.realpath(outdir)
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path
                       if os.path.realpath(p or os.getcwd()) != real_out]
        sys.modules.pop(pkg, None)
        try:
            return importlib.util.find_spec(pkg + '.msg') is not None
        except (ImportError, ValueError):
            return False
    finally:
        sys.path[:] = saved
        sys.modules.pop(pkg, None)


def _remove_owned(path):
    if os.path.isdir(path) and os.path.exists(os.path.join(path, MARKER)):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        raise GenError('%s exists and was not created by gen_msgs.py; '
                       'refusing to overwrite it' % path)


def _generate_package(gen, initpy, pkg, msg_files, srv_files, search_path,
                      stage_root, outdir):
    stage = os.path.join(stage_root, pkg)
    os.makedirs(stage)
    with open(os.path.join(stage, '__init__.py'), 'w'):
        pass
    with open(os.path.join(stage, MARKER), 'w') as f:
        f.write('generated by tools/gen_msgs.py; safe to delete\n')
    for kind, files, generator in (('msg', msg_files, gen.MsgGenerator()),
                                   ('srv', srv_files, gen.SrvGenerator())):
        if not files:
            continue
        sub = os.path.join(stage, kind)
        os.makedirs(sub)
        rc = generator.generate_messages(pkg, files, sub, search_path)
        if rc:
            raise GenError('genpy failed for %s %s files (see messages above)'
                           % (pkg, kind))
        initpy.write_modules(sub)
    target = os.path.join(outdir, pkg)
    _remove_owned(target)
    shutil.move(stage, target)
    return target


def main(argv):
    if len(argv) != 2 or argv[1].startswith('-'):
        sys.stderr.write('usage: %s OUTDIR\n' % os.path.basename(argv[0]))
        return 2
    outdir = os.path.abspath(argv[1])
    gen, initpy = _import_generators()

    search_path = {}
    for pkg in SYSTEM_PACKAGES:
        d = os.path.join(SYSTEM_SHARE, pkg, 'msg')
        if not _list(d, '.msg'):
            raise GenError('no message definitions in %s; install the Debian '
                           'package ros-%s' % (d, pkg.replace('_', '-')))
        search_path[pkg] = [d]

    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise GenError('%s exists and is not a directory' % outdir)
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix='gen_msgs_', dir=outdir)
    try:
        jobs = []
        for pkg in PACKAGES:
            src_dir = os.path.join(REPO, 'msg', pkg)
            action_dir = os.path.join(work, 'actions', pkg, 'msg')
            os.makedirs(action_dir)
            for action in _list(os.path.join(REPO, 'action', pkg),
                                '.action'):
                expand_action(action, action_dir, src_dir)
            msgs = sorted(_list(src_dir, '.msg') + _list(action_dir, '.msg'),
                          key=os.path.basename)
            srvs = _list(os.path.join(REPO, 'srv', pkg), '.srv')
            if not msgs and not srvs:
                raise GenError('no definitions found for %s under %s'
                               % (pkg, REPO))
            search_path[pkg] = [src_dir, action_dir]
            jobs.append((pkg, msgs, srvs))

        for pkg in SYSTEM_PACKAGES:
            if _is_importable_elsewhere(pkg, outdir):
                target = os.path.join(outdir, pkg)
                if os.path.exists(os.path.join(target, MARKER)):
                    shutil.rmtree(target)
                continue
            share = os.path.join(SYSTEM_SHARE, pkg)
            jobs.append((pkg, _list(os.path.join(share, 'msg'), '.msg'),
                         _list(os.path.join(share, 'srv'), '.srv')))

        stage_root = os.path.join(work, 'stage')
        for pkg, msgs, srvs in jobs:
            target = _generate_package(gen, initpy, pkg, msgs, srvs,
                                       search_path, stage_root, outdir)
            note = '' if pkg in PACKAGES else ' (fallback: no system module)'
            print('gen_msgs: %-18s %3d msg %2d srv -> %s%s'
                  % (pkg, len(msgs), len(srvs), target, note))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except GenError as exc:
        sys.stderr.write('gen_msgs: error: %s\n' % exc)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write('gen_msgs: error: %s: %s\n'
                         % (type(exc).__name__, exc))
        sys.exit(1)
