"""Build intera_rt.native._kernels (src/intera_rt/native/_kernels.c) in place, with the
system C compiler, for the Python running this script and its numpy. Run by scripts/setup;
exits non-zero (saying why) when the compiler or headers are missing."""
import os
import subprocess
import sys
import sysconfig

import numpy

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'intera_rt', 'native')


def main():
    src = os.path.normpath(os.path.join(SRC, '_kernels.c'))
    out = os.path.normpath(os.path.join(SRC, '_kernels' + sysconfig.get_config_var('EXT_SUFFIX')))
    cc = os.environ.get('CC', 'cc')
    # -ffp-contract=off: no fused multiply-adds, so the kernels round as their Python twins do.
    cmd = [cc, '-O2', '-fPIC', '-shared', '-ffp-contract=off', '-fno-fast-math',
           '-I', sysconfig.get_paths()['include'], '-I', numpy.get_include(), src, '-o', out + '.tmp']
    result = subprocess.run(cmd)
    if result.returncode != 0:
        print('build_native: %s failed (exit %d)' % (' '.join(cmd), result.returncode), file=sys.stderr)
        return 1
    os.replace(out + '.tmp', out)
    print('build_native: built %s' % out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
