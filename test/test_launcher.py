"""scripts/sawyer refuses bad options with a clear message and exit code 2, before
starting anything."""
import os
import subprocess
from pathlib import Path

import pytest

SAWYER = Path(__file__).resolve().parents[1] / 'scripts' / 'sawyer'


@pytest.mark.parametrize('args,fragment', [
    (['--speed', '2'], 'only meaningful with --sim-time'),
    (['--sim-time', '--speed', '0'], "invalid speed '0'"),
    (['--sim-time', '--speed', 'fast'], "invalid speed 'fast'"),
    (['--pose', '1,2,3'], 'got 3 value(s)'),
    (['--pose', '0,0,0,0,0,0,nan'], 'not finite'),
    (['--pose', '0,0,0,0,0,0,9'], 'right_j6 = 9 is outside its limits'),
    (['--backend', 'no_such_backend'], "unknown backend 'no_such_backend'"),
])
def test_bad_options_are_refused(args, fragment):
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:9')   # nothing may be started
    proc = subprocess.run([str(SAWYER)] + args, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert fragment in proc.stderr
    assert 'roslaunch' not in proc.stdout
