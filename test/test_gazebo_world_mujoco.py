"""Gazebo's world API through ROS on the MuJoCo plant (issue 21 items 2 and 4): the tests of
test_gazebo_world run against `--backend mujoco`, where the spawned table and block are MuJoCo
bodies (boards.mujoco_world) resting, pushed, moved and deleted by MuJoCo's physics. (The
wrench test is this module's own: test_gazebo_world's push is exactly at the distance the
block's Coulomb friction allows, too close to call on a soft-contact plant.)"""
from rosharness import wait_for
from test_gazebo_world import (  # noqa: F401 - the fixtures and tests, run on this module's robot
    TABLE_TOP, TIMEOUT,
    gz, resting, scene, table_only, test_bad_requests_on_models_are_refused, where,
    test_bad_spawns_are_refused, test_delete_takes_it_out_of_everything,
    test_model_states_and_link_states_topics, test_obstacles_are_models_of_the_same_world,
    test_pause_stops_physics_and_time, test_reset_world_puts_models_back, test_robot_frames,
    test_set_model_state_service_and_topic, test_spawned_models_are_in_the_world,
    test_a_body_wrench_waits_for_its_start_time, test_a_wrench_on_the_robot_waits_for_its_start_time,
    test_clear_body_wrenches_ends_a_wrench_on_the_robot)

SAWYER_ARGS = ['--backend', 'mujoco']


def test_a_body_wrench_slides_a_block_and_friction_stops_it(scene):
    from geometry_msgs.msg import Point, Vector3, Wrench
    import rospy
    gz = scene
    # 2 N along y for 0.1 s against the block's friction (mu 1.2, 0.1 kg): 7-10 cm of slide.
    r = gz['apply_body_wrench']('block::block', '', Point(), Wrench(Vector3(0, 2.0, 0), Vector3()),
                                rospy.Time(), rospy.Duration(0.1))
    assert r.success, r.status_message
    wait_for(lambda: where(gz, 'block')[1] > 0.14, TIMEOUT, 'the block pushed along y')
    wait_for(lambda: resting(gz, 'block'), TIMEOUT, 'the block stopped by friction')
    x, y, z = where(gz, 'block')
    assert abs(x - 0.7) < 0.005 and 0.14 < y < 0.25 and abs(z - TABLE_TOP) < 0.002
