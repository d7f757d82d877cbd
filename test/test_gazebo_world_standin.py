"""Gazebo's world API through ROS on the gazebo backend against the Gazebo stand-in (issue 22
item 1): the stand-in serves /gazebo/* as gazebo_ros does, its spawned table and block MuJoCo
bodies in the same physics as the arm (Gazebo's frames: the floor at world z = 0, the robot
`sawyer` spawned at -z 0.93). test_gazebo_world's tests run here; pausing is test_gazebo_robot's
(a paused Gazebo puts the robot in error, which this module's other tests do not want).
With --gripper the stand-in's arm carries the electric gripper (its 0.59 kg in Gazebo's model,
as in the robot's dynamics), and holds still, enabled and at the brakes."""
import numpy as np

from geometry_msgs.msg import Point, Vector3, Wrench

from clients import Series, arm_positions, stamp
from rosharness import latest, wait_for, wait_for_message
from test_gazebo_robot import brakes_hold_still
from test_gazebo_world import (  # noqa: F401 - the fixtures and tests, run on this module's robot
    TABLE_TOP, TIMEOUT, gz, resting, scene, table_only, where,
    test_bad_requests_on_models_are_refused, test_bad_spawns_are_refused,
    test_delete_takes_it_out_of_everything,
    test_reset_world_puts_models_back, test_robot_frames, test_set_model_state_service_and_topic,
    test_spawned_models_are_in_the_world, test_clear_body_wrenches_ends_a_wrench_on_the_robot)

SAWYER_ARGS = ['--sim-time', '--backend', 'gazebo', '--backend-option', 'standin=true',
               '--backend-option', 'real_time_factor=0.5', '--gripper']


def test_model_states_and_link_states_every_10_ms_of_gazebos_time(scene):
    """Both topics name the robot first, then the models in spawn order, with the robot's
    bodies (Gazebo's: fixed joints lumped) and the models' links; 100 of them span 1 s of the
    stand-in's clock (gazebo_ros publishes every world update: docs/backends.md)."""
    import rospy
    from gazebo_msgs.msg import LinkStates, ModelStates
    models = wait_for_message('/gazebo/model_states', ModelStates, TIMEOUT)
    assert models.name == ['sawyer', 'table', 'block']
    block = models.pose[2].position
    assert abs(block.z - TABLE_TOP) < 3e-3 and abs(block.x - 0.7) < 3e-3
    assert models.pose[0].position.z == 0.93
    links = wait_for_message('/gazebo/link_states', LinkStates, TIMEOUT)
    assert {'sawyer::base', 'sawyer::right_l6', 'table::top', 'block::block'} <= set(links.name)
    assert 'sawyer::right_hand' not in links.name
    with latest('/gazebo/model_states', ModelStates, queue_size=300) as worlds:
        worlds.wait(TIMEOUT)
        n0, t0 = worlds.count, rospy.get_time()
        wait_for(lambda: worlds.count - n0 >= 100, TIMEOUT, '100 model states')
        n1, t1 = worlds.count, rospy.get_time()
    assert abs((t1 - t0) / (n1 - n0) - 0.01) < 0.001, (t1 - t0, n1 - n0)


def test_a_body_wrench_slides_the_block_and_friction_stops_it(scene):
    import rospy
    gz = scene
    # 1.4 N along y for 0.2 s at the bottom face (the block's frame) against its friction
    # (mu 1.2, 0.1 kg): about 5 cm of slide, upright. (Pushed at its centre of mass, a cube
    # with mu > 1 tips over rather than slides, in ODE as in MuJoCo.)
    r = gz['apply_body_wrench']('block::block', '', Point(), Wrench(Vector3(0, 1.4, 0), Vector3()),
                                rospy.Time(), rospy.Duration(0.2))
    assert r.success, r.status_message
    wait_for(lambda: where(gz, 'block')[1] > 0.13, TIMEOUT, 'the block pushed along y')
    wait_for(lambda: resting(gz, 'block'), TIMEOUT, 'the block stopped by friction')
    x, y, z = where(gz, 'block')
    assert abs(x - 0.7) < 0.005 and 0.13 < y < 0.2 and abs(z - TABLE_TOP) < 0.003, (x, y, z)
    q = gz['get_model_state']('block', '').pose.orientation
    assert abs(q.w) > 0.999, q


def test_the_robot_is_a_gazebo_model(gz):
    """The arm is model `sawyer` of the same world: its links in get_link_state, its
    properties; a link Gazebo lumps into its parent (right_hand, on a fixed joint) is no body
    to push."""
    import rospy
    props = gz['get_model_properties']('sawyer')
    assert props.success and 'right_l6' in props.body_names and 'right_j6' in props.joint_names
    r = gz['apply_body_wrench']('sawyer::right_hand', '', Point(), Wrench(Vector3(0, 0, 1), Vector3()),
                                rospy.Time(), rospy.Duration(0.1))
    assert not r.success and 'right_hand' in r.status_message, r.status_message



def test_the_arm_with_the_gripper_holds_still(robot, gz):
    """Gazebo's model carries the gripper (0.450 + 2 × 0.070 kg on right_hand) as the
    robot's dynamics do (the end_effector's fragment): a second at neutral enabled, and a
    second disabled on the brakes' stand-in, each within 3 mrad (test_gazebo_robot's bound
    without a gripper)."""
    import rospy
    from intera_core_msgs.msg import RobotAssemblyState
    from sensor_msgs.msg import JointState
    from intera_rt.robot import NEUTRAL
    props = gz['get_model_properties']('sawyer')
    assert 'right_gripper_l_finger' in props.body_names, props.body_names
    assert rospy.get_param('/realtime_loop/backend_options')['gripper'] is True
    joints = Series('/robot/joint_states', JointState)
    try:
        t0 = stamp(joints.last())
        joints.wait_until(t0 + 1.0)
        q = np.array([arm_positions(m) for m in joints.between(t0, t0 + 1.0)])
        assert len(q) >= 50
        assert np.abs(q - NEUTRAL).max() < 3e-3, np.abs(q - NEUTRAL).max(axis=0)
        state = Series('/robot/state', RobotAssemblyState)
        try:
            brakes_hold_still(joints, state)
        finally:
            state.unregister()
    finally:
        joints.unregister()
