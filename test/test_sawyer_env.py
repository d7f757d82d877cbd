"""scripts/sawyer's options from SAWYER_* environment variables (how the container image takes
them): each variable reaches the roslaunch command as its option would, the command line wins,
and a bad value is an error naming the variable (no robot started). No ROS."""
import os
import subprocess
from pathlib import Path

import pytest

from intera_rt import sawyer

SAWYER = Path(__file__).resolve().parents[1] / 'scripts' / 'sawyer'


@pytest.fixture
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith('SAWYER_'):
            monkeypatch.delenv(name)
    monkeypatch.delenv('ROS_MASTER_URI', raising=False)
    return monkeypatch


def launch_args(argv=()):
    return sawyer.roslaunch_command(sawyer.parse_args(list(argv)))


def test_variables_become_options(clean_env):
    clean_env.setenv('SAWYER_SIM_TIME', 'true')
    clean_env.setenv('SAWYER_SPEED', 'max')
    clean_env.setenv('SAWYER_BACKEND', 'mujoco')
    clean_env.setenv('SAWYER_BACKEND_OPTIONS', 'table=true')
    clean_env.setenv('SAWYER_GRIPPER', '1')
    cmd = launch_args()
    assert 'sim_time:=true' in cmd and 'speed:=max' in cmd and 'backend:=mujoco' in cmd
    assert 'gripper:=true' in cmd
    assert 'backend_options:={"table": true}' in cmd


def test_unset_and_false_change_nothing(clean_env):
    clean_env.setenv('SAWYER_GRIPPER', 'false')
    clean_env.setenv('SAWYER_SIM_TIME', '')
    assert launch_args() == launch_args([]) and 'gripper:=false' in launch_args()
    assert 'sim_time:=false' in launch_args()


def test_command_line_wins(clean_env):
    clean_env.setenv('SAWYER_SIM_TIME', 'true')
    clean_env.setenv('SAWYER_SPEED', '2')
    assert 'speed:=0.5' in launch_args(['--speed', '0.5'])


def test_master_port_replaces_the_uri_port(clean_env):
    assert sawyer.master_uri_from(os.environ) == 'http://127.0.0.1:11311'
    clean_env.setenv('SAWYER_MASTER_PORT', '12345')
    assert sawyer.master_uri_from(os.environ) == 'http://127.0.0.1:12345'
    clean_env.setenv('ROS_MASTER_URI', 'http://10.0.0.7:11311')
    assert sawyer.master_uri_from(os.environ) == 'http://10.0.0.7:12345'


@pytest.mark.parametrize('name, value, message', [
    ('SAWYER_GRIPPER', 'maybe', "SAWYER_GRIPPER='maybe': expected true or false"),
    ('SAWYER_MASTER_PORT', '99999', "SAWYER_MASTER_PORT='99999': expected a TCP port 1..65535"),
    ('SAWYER_BACKEND', 'foo', "unknown backend 'foo'"),
    ('SAWYER_SPEED', 'fast', "invalid speed 'fast'"),
])
def test_bad_value_is_an_error_naming_it(name, value, message):
    # nothing may be started: the master URI points at a closed port
    env = dict(os.environ, ROS_MASTER_URI='http://127.0.0.1:9', SAWYER_SIM_TIME='true',
               **{name: value})
    proc = subprocess.run([str(SAWYER)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert 'roslaunch' not in proc.stdout
