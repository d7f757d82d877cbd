"""Stage options through ROS (docs/realtime_loop.md#stages). Given with scripts/sawyer
--stage-option, they take effect: collision-detection thresholds a user tuned change what the
robot detects. One the robot does not know stops boot: a user with their own master sets
~collision_detection/impact_treshold (misspelt) on realtime_loop, as `rosparam set` or a
launch file of theirs would, then starts scripts/sawyer; the robot refuses to start, and its
log names the key and lists the valid ones. (A misspelt --stage-option is refused before
anything starts: test_launcher.)"""
import os
import subprocess

import pytest
from rosharness import wait_for

from intera_rt.tooling.robot_process import ROBOT_STATE_TOPIC, RobotProcess

# Impact and squish out of reach, the hand over-wrench force at 30 N (default 80 N). The
# ros mark: robot_on_own_master starts a master and a robot without the robot fixture.
pytestmark = [pytest.mark.sawyer_args([
    '--sim-time', '--stage-option', 'collision_detection.overwrench_force=30',
    '--stage-option', 'collision_detection.impact_threshold=100',
    '--stage-option', 'collision_detection.squish_threshold=1000']), pytest.mark.ros]
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


def test_stage_options_given_to_scripts_sawyer_take_effect(robot):
    """A steady 40 N push at the hand, half the default over-wrench force, is a hand
    over-wrench logged against the 30 N given; the lowered sensitivity to impacts and
    squishes lets nothing else fire first."""
    import rospy
    from geometry_msgs.msg import Wrench
    from intera_rt_msgs.srv import ApplyWrench
    from rosgraph_msgs.msg import Log
    lines = []

    def keep(msg):
        if msg.name == '/realtime_loop':
            lines.append(msg.msg)
    sub = rospy.Subscriber('/rosout', Log, keep, queue_size=1000)
    try:
        wait_for(lambda: sub.get_num_connections() > 0, 10.0, 'a connection to /rosout')
        rospy.wait_for_service('/intera_rt/sim/apply_wrench', 10.0)
        push = Wrench()
        push.force.z = -40.0
        assert rospy.ServiceProxy('/intera_rt/sim/apply_wrench', ApplyWrench)(
            'right_hand', push, 1.0).success
        line = wait_for(lambda: next((text for text in list(lines)
                                      if text.startswith('hand over-wrench')), None),
                        10.0, 'the hand over-wrench log line')
        assert line.startswith('hand over-wrench: force ') and ' > 30.000 N' in line, line
        assert not any(text.startswith(('impact', 'squish')) for text in lines), lines
    finally:
        sub.unregister()
