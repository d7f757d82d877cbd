"""A stage option the robot does not know stops boot (README "Realtime plugins"): a user
with their own master sets ~collision_detection/impact_treshold (misspelt) on realtime_loop,
as `rosparam set` or a launch file of theirs would, then starts scripts/sawyer; the robot
refuses to start, and its log names the key and lists the valid ones. (scripts/sawyer's
own --stage-option is refused before anything starts: test_launcher.)"""
import os
import subprocess

import pytest
from rosharness import wait_for

from intera_rt.robot_process import ROBOT_STATE_TOPIC, RobotProcess

MESSAGE = ("stage 'collision_detection' takes no option 'impact_treshold'; its options: "
           "hold, impact_scale, impact_slow_time, impact_threshold, observer_gain, "
           "overwrench_force, overwrench_torque, settle, squish_release, squish_threshold, "
           "wrench_damping")


@pytest.fixture
def robot_on_own_master(tmp_path):
    robot = RobotProcess(['--sim-time'], tmp_path / 'sawyer.log', tmp_path / 'ros_log')
    saved = {key: os.environ.get(key) for key in ('ROS_MASTER_URI', 'ROS_IP', 'ROS_LOG_DIR')}
    env = robot.environ()
    (tmp_path / 'ros_log').mkdir()
    with open(tmp_path / 'master.log', 'wb') as log:
        master = subprocess.Popen(['rosmaster', '--core', '-p', str(robot.port)], env=env,
                                  stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        import rosgraph
        client = rosgraph.Master('/stage_options_test', master_uri=robot.master_uri)

        def answers():
            try:
                return client.getPid()
            except OSError:
                assert master.poll() is None, 'rosmaster exited'
                return None
        wait_for(answers, 30.0, 'the ROS master')
        yield robot, client
    finally:
        robot.stop()
        master.terminate()
        try:
            master.wait(10)
        except subprocess.TimeoutExpired:
            master.kill()
            master.wait(5)
        for key, value in saved.items():           # robot.start() set them
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_a_misspelt_collision_detection_option_stops_boot(robot_on_own_master):
    robot, client = robot_on_own_master
    client.setParam('/realtime_loop/collision_detection', {'impact_treshold': 0.5})
    robot.start()
    wait_for(lambda: not robot.alive(), 120.0, 'the robot to refuse to start', interval=0.2)
    log = robot.log_path.read_text(errors='replace')
    assert MESSAGE in log, robot.log_tail()
    assert not robot.has_publisher(ROBOT_STATE_TOPIC)
