"""Build the realtime tick's compiled modules in place, for the Python running this script
and its numpy: intera_rt.native._kernels (_kernels.c, with the system C compiler),
intera_rt.native._dynamics (_dynamics.cpp, with the system C++ compiler against the venv's
Pinocchio: its headers, libraries and compile definitions, from the cmeel prefix pip
installed; Eigen from Debian) and intera_rt.native._mujoco (_mujoco.c, against the headers
and library of the venv's `mujoco` package). Run by scripts/setup; exits non-zero (saying which failed and
why) when a compiler, headers or libraries are missing: the tick then runs the Python path of
what did not build."""
import glob
import importlib.util
import os
import re
import subprocess
import sys
import sysconfig

import numpy

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src',
                                    'intera_rt', 'native'))
EIGEN = '/usr/include/eigen3'            # Debian's libeigen3-dev (scripts/_common.sh)
# Pinocchio's and hpp-fcl's CMake targets: the definitions their users must compile with (the
# joint variant's size and the optional parts change the layout of Model and Data).
TARGETS = ('lib/cmake/pinocchio/pinocchioTargets.cmake', 'lib/cmake/hpp-fcl/hpp-fclTargets.cmake')


def _output(name):
    return os.path.join(SRC, name + sysconfig.get_config_var('EXT_SUFFIX'))


def _common():
    # -ffp-contract=off: no fused multiply-adds, so the kernels round as their Python twins do.
    return ['-O3', '-fPIC', '-shared', '-ffp-contract=off', '-fno-fast-math',
            '-I', sysconfig.get_paths()['include'], '-I', numpy.get_include()]


def _cmeel_prefix():
    import cmeel                          # pip's cmeel: where Pinocchio's wheel put its files
    return os.path.join(os.path.dirname(os.path.dirname(cmeel.__file__)), 'cmeel.prefix')


def _definitions(prefix):
    out = []
    for target in TARGETS:
        with open(os.path.join(prefix, target)) as f:
            match = re.search(r'INTERFACE_COMPILE_DEFINITIONS "([^"]*)"', f.read())
        if match:
            out += ['-D' + d for d in match.group(1).split(';') if d and '-D' + d not in out]
    return out


def _build(name, cmd):
    out = _output(name)
    if os.path.exists(out):
        # (a module left from older sources must not outlive a failed build: the tick would
        # call it with arguments it does not take; without it, the Python path runs)
        os.remove(out)
    try:
        result = subprocess.run(cmd + ['-o', out + '.tmp'])
    except OSError as exc:                       # no compiler
        print('build_native: %s: %s: %s' % (name, cmd[0], exc), file=sys.stderr)
        return False
    if result.returncode != 0:
        print('build_native: %s: %s failed (exit %d)' % (name, ' '.join(cmd), result.returncode),
              file=sys.stderr)
        return False
    os.replace(out + '.tmp', out)
    print('build_native: built %s' % out)
    return True


def _mujoco_dir():
    """The venv's `mujoco` package: its include/ and libmujoco.so.* (not imported here)."""
    spec = importlib.util.find_spec('mujoco')
    if spec is None or not spec.submodule_search_locations:
        raise ImportError('no mujoco package')
    return list(spec.submodule_search_locations)[0]


def _build_mujoco():
    try:
        where = _mujoco_dir()
        libs = sorted(glob.glob(os.path.join(where, 'libmujoco.so.*')))
        if not libs or not os.path.isdir(os.path.join(where, 'include', 'mujoco')):
            raise ImportError('no headers or library in %s' % where)
    except ImportError as exc:
        print('build_native: _mujoco: MuJoCo\'s headers and library not found (%s)' % exc,
              file=sys.stderr)
        if os.path.exists(_output('_mujoco')):
            os.remove(_output('_mujoco'))       # (not one from older sources)
        return False
    # (linked by file name, the library the bindings load: one MuJoCo in the process)
    return _build('_mujoco', [os.environ.get('CC', 'cc')] + _common()
                  + ['-I', os.path.join(where, 'include'), os.path.join(SRC, '_mujoco.c'),
                     '-L' + where, '-l:' + os.path.basename(libs[-1]), '-Wl,-rpath,' + where])


def main():
    ok = _build('_kernels', [os.environ.get('CC', 'cc')] + _common() + [os.path.join(SRC, '_kernels.c')])
    ok = _build_mujoco() and ok
    try:
        prefix = _cmeel_prefix()
        defs = _definitions(prefix)
    except (ImportError, OSError) as exc:
        print('build_native: _dynamics: Pinocchio\'s build files not found (%s)' % exc, file=sys.stderr)
        if os.path.exists(_output('_dynamics')):
            os.remove(_output('_dynamics'))     # (not one from older sources)
        return 1
    lib = os.path.join(prefix, 'lib')
    ok = _build('_dynamics', [os.environ.get('CXX', 'c++'), '-std=c++17', '-DNDEBUG'] + defs + _common()
                + ['-isystem', os.path.join(prefix, 'include'), '-isystem', EIGEN,
                   os.path.join(SRC, '_dynamics.cpp'), '-L' + lib, '-Wl,-rpath,' + lib,
                   '-lboost_python%d%d' % sys.version_info[:2]]) and ok
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
