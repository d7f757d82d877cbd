"""sawyer_simulator's habits (issue 21 items 3 and 5): `scripts/sawyer --world FILE` spawns
an SDF world's <model> and <include> elements at boot, paused until /gazebo/unpause_physics;
sawyer_world.launch passes roslaunch's checks and maps sawyer_simulator's arguments onto the
robot's; --head-display-img (head_display_img:=) is on the head display from start."""
import os
import tempfile

import numpy as np

import pytest

from rosharness import wait_for

pytestmark = pytest.mark.ros     # (roslaunch's checks run rosversion)

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, 'data', 'world', 'world_test_pkg')
WORLD = os.path.join(PKG, 'worlds', 'table_and_blocks.world')
LAUNCH = os.path.join(HERE, '..', 'launch', 'sawyer_world.launch')
# model://table and model://block, as Gazebo finds them
os.environ['GAZEBO_MODEL_PATH'] = os.path.join(PKG, 'models')


def _display_image():
    """A 64×32 PNG (a red top half, a green bottom half) written for the module's robot."""
    from PIL import Image
    rgb = np.zeros((32, 64, 3), np.uint8)
    rgb[:16, :, 0] = 200
    rgb[16:, :, 1] = 150
    path = os.path.join(tempfile.mkdtemp(prefix='head_display_img_'), 'img.png')
    Image.fromarray(rgb).save(path)
    return path


HEAD_IMG = _display_image()
SAWYER_ARGS = ['--sim-time', '--world', WORLD, '--paused', '--head-display-img', HEAD_IMG]
TIMEOUT = 10.0


def launch_params(*argv):
    import roslaunch.config
    config = roslaunch.config.load_config_default([(LAUNCH, list(argv))], None, verbose=False)
    return config, {k: v.value for k, v in config.params.items()}


def test_the_launch_file_passes_roslaunchs_checks():
    import roslaunch.rlutil
    assert roslaunch.rlutil.check_roslaunch(LAUNCH) is None


def test_sawyer_simulators_arguments():
    config, params = launch_params('electric_gripper:=true', 'paused:=true', 'world:=/w.world')
    assert params['/use_sim_time'] is True and params['/realtime_loop/sim_time'] is True
    assert params['/io/gripper'] is True and params['/realtime_loop/paused'] is True
    assert params['/realtime_loop/world'] == '/w.world'
    assert params['/realtime_loop/pose'].startswith('-J sawyer::right_j0 -0.27')
    assert {n.name for n in config.nodes} == {'realtime_loop', 'motion_controller', 'io'}
    config, _ = launch_params('gui:=true')
    assert {'rviz', 'rviz_markers'} <= {n.name for n in config.nodes}
    config, params = launch_params('gui:=true', 'headless:=true', 'use_sim_time:=false')
    assert 'rviz' not in {n.name for n in config.nodes} and params['/use_sim_time'] is False
    assert params['/io/head_display_img'] == ''
    _, params = launch_params('head_display_img:=/img/x.png')
    assert params['/io/head_display_img'] == '/img/x.png'


def test_the_head_display_shows_head_display_img(robot):
    """The image given at start is on the screen (bgr8, top-left), black beyond it."""
    from sensor_msgs.msg import Image
    from rosharness import latest
    from intera_rt.io.head_display import SCREEN_HEIGHT, SCREEN_WIDTH
    with latest('/intera_rt/head_display', Image) as view:
        msg = view.wait(TIMEOUT)
    screen = np.frombuffer(msg.data, np.uint8).reshape(SCREEN_HEIGHT, SCREEN_WIDTH, 3)
    assert tuple(screen[0, 0]) == (0, 0, 200) and tuple(screen[15, 63]) == (0, 0, 200)
    assert tuple(screen[16, 0]) == (0, 150, 0) and tuple(screen[31, 63]) == (0, 150, 0)
    assert not screen[32:].any() and not screen[:, 64:].any()


def test_the_boot_pose_in_sawyer_simulators_form():
    from intera_rt.ros.realtime_loop import parse_pose
    _, params = launch_params()
    assert parse_pose(params['/realtime_loop/pose']) == [-0.27, 1.05, 0.0, 0.49, -0.08, -0.06, 0.027]
    with pytest.raises(ValueError, match='right_j9'):
        parse_pose('-J sawyer::right_j9 0.1')


@pytest.fixture(scope='module')
def gz(robot):
    import rospy
    from gazebo_msgs import srv
    from std_srvs.srv import Empty
    out = {}
    for name, kind in (('get_model_state', srv.GetModelState), ('get_world_properties', srv.GetWorldProperties),
                       ('unpause_physics', Empty)):
        rospy.wait_for_service('/gazebo/' + name, TIMEOUT)
        out[name] = rospy.ServiceProxy('/gazebo/' + name, kind)
    return out


def z_of(gz, name):
    r = gz['get_model_state'](name, '')
    assert r.success, r.status_message
    return r.pose.position.z


def test_the_world_file_is_spawned_paused_then_runs(gz):
    wait_for(lambda: len(gz['get_world_properties']().model_names) == 5, TIMEOUT, 'the world spawned')
    assert gz['get_world_properties']().model_names == ['sawyer', 'ground_plane', 'table', 'block_a', 'block_b']
    r = gz['get_model_state']('block_a', 'table')
    p = r.pose.position
    assert abs(p.x + 0.15) < 1e-6 and abs(p.y - 0.1) < 1e-6 and abs(p.z - 0.75) < 1e-6
    # Paused: the clock stands still.
    t0 = gz['get_world_properties']().sim_time
    assert t0 == 0.0
    gz['unpause_physics']()
    wait_for(lambda: gz['get_world_properties']().sim_time > t0 + 0.5, TIMEOUT, 'time runs')
    # Both blocks rest on the table's top (z 0.75), where the world put them.
    assert abs(z_of(gz, 'block_a') - 0.75) < 3e-3 and abs(z_of(gz, 'block_b') - 0.75) < 3e-3
