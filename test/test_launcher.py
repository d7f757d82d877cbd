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
    (['--backend', 'mujoco', '--backend-option', 'tabel=true'],
     "backend 'mujoco' takes no option 'tabel'; its options: contact_timeconst, gripper, substeps, table, viewer"),
    (['--backend', 'mujoco', '--backend-option', 'table'], "--backend-option 'table': expected KEY=VALUE"),
    (['--backend', 'mujoco', '--backend-option', 'substeps=two'],
     "backend option substeps must be an integer, got 'two'"),
    (['--viewer'], "backend 'embedded' takes no option 'viewer'"),
    (['--stage-option', 'collision_detection.impact_treshold=0.5'],
     "stage 'collision_detection' takes no option 'impact_treshold'; its options: hold, "
     "impact_scale, impact_slow_time, impact_threshold, observer_gain"),
    (['--stage-option', 'collision_detection.hold=long'],
     "collision_detection option hold must be a number, got 'long'"),
    (['--stage-option', 'collision_detection=0.5'],
     "--stage-option 'collision_detection=0.5': expected STAGE.KEY=VALUE"),
    (['--world', '/no/such.world'], '--world: '),
    (['--world', str(Path(__file__).resolve().parent / 'data' / 'world' / 'bad' / 'zero_box.world')],
     '<size>'),
    (['--backend', 'gazebo', '--paused'], 'need a backend with a world'),
    (['--head-display-img', '/no/such.png'], "--head-display-img: '/no/such.png': not an image file"),
    (['--head-display-img', __file__], 'not an image file the head display can read'),
])
def test_bad_options_are_refused(args, fragment):
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:9')   # nothing may be started
    proc = subprocess.run([str(SAWYER)] + args, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert fragment in proc.stderr
    assert 'roslaunch' not in proc.stdout


def test_backend_options_are_listed():
    proc = subprocess.run([str(SAWYER), '--backend', 'mujoco', '--backend-option', 'help'],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert 'table (bool, default False): a table in front of the robot' in proc.stdout
    assert 'viewer (bool, default False)' in proc.stdout


def test_stage_options_are_listed():
    proc = subprocess.run([str(SAWYER), '--stage-option', 'help'],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert 'collision_detection.squish_threshold (float, default None): N·m per joint' in proc.stdout
    assert 'joint_speed_limit.margin (float, default 0.5)' in proc.stdout
