"""The robot on the gazebo backend through ROS, against the Gazebo stand-in (scripts/sawyer
--sim-time --backend gazebo --backend-option standin=true): the exact gazebo_ros_control
protocol — joint states on /sawyer_gazebo/joint_states, efforts on
/sawyer_gazebo/effort_controller/command, Gazebo's /clock and its gazebo_msgs services —
with MuJoCo as Gazebo's ODE sees the URDF behind it (no drive armature), stepping on its
own at 1 kHz of sim time (not in lockstep with the robot's loop, as Gazebo does not),
started paused and spawned at the zero pose as Gazebo is. It boots at neutral and holds,
the brakes' stand-in holds it while disabled, its time is the stand-in's clock, it moves
where a client sends it, the sim services (obstacles too) go through Gazebo's, and Gazebo stopping (paused:
no joint states, no clock) puts the robot in error with a clear message until a reset
after Gazebo runs again."""
import numpy as np
import pytest

from clients import (Arm, Series, arm_positions, joints, mc, now, realtime_state, robot_state,  # noqa: F401 - fixtures
                     rosout, sim, stamp, sync_publisher, teleport)
from contract import ARM, TOL
from rosharness import wait_for

from intera_rt.robot import NEUTRAL

# Half real time: a margin for this shared 2-core machine, where under load the robot's loop
# can fall several steps behind a plant that runs on (docs/backends.md#gazebo: the latency of a
# loop not in lockstep with its plant). The file passes at 1x too (one run, load ~10).
pytestmark = pytest.mark.sawyer_args(['--sim-time', '--backend', 'gazebo',
                                      '--backend-option', 'standin=true',
                                      '--backend-option', 'real_time_factor=0.5'])


def gazebo(name):
    import rospy
    from std_srvs.srv import Empty
    rospy.wait_for_service('/gazebo/' + name, 10.0)
    rospy.ServiceProxy('/gazebo/' + name, Empty)()


def test_boots_at_neutral_holds_and_follows_gazebos_clock(robot, joints):
    import rosgraph
    import rospy
    from rosgraph_msgs.msg import Clock
    private = rospy.get_param('/realtime_loop')
    assert private['backend'] == 'gazebo'
    assert private['backend_options'] == {'standin': True, 'real_time_factor': 0.5}
    # Gazebo (the stand-in, node /gazebo) is the only clock: the robot publishes none.
    publishers = dict(rosgraph.Master('/test').getSystemState()[0])
    assert publishers['/clock'] == ['/gazebo']
    assert '/gazebo' in publishers['/sawyer_gazebo/joint_states']
    assert publishers['/sawyer_gazebo/effort_controller/command'] == ['/realtime_boards']
    # The robot's state is stamped with Gazebo's time, as the clock reads it.
    clock = Series('/clock', Clock)
    try:
        for _ in range(5):
            t_clock = clock.last().clock.to_sec()
            msg = joints.wait_until(t_clock)
            assert stamp(msg) - t_clock < 0.05, (stamp(msg), t_clock)
    finally:
        clock.unregister()
    # Gravity holds: a second of sim time at neutral.
    t0 = stamp(joints.last())
    joints.wait_until(t0 + 1.0)
    q = np.array([arm_positions(m) for m in joints.between(t0, t0 + 1.0)])
    assert len(q) >= 50
    assert np.abs(q - NEUTRAL).max() < 3e-3


def test_disabled_the_brakes_hold_the_arm_still(robot, joints, robot_state):
    """Gazebo has no brakes: the backend holds the joints with a PD on the plant's own
    inertia (no drive armature in Gazebo) plus gravity, from the moment the robot is
    disabled until it is enabled again."""
    brakes_hold_still(joints, robot_state)


def brakes_hold_still(joints, robot_state):
    """Disable the robot: for a second of sim time the arm stays within 3 mrad of where it
    was; then enable it again. `joints` and `robot_state`: Series of /robot/joint_states and
    /robot/state."""
    from std_msgs.msg import Bool
    from rosharness import wait_connected
    enable = sync_publisher('/robot/set_super_enable', Bool)
    wait_connected(enable, '/realtime_loop')
    try:
        enable.publish(Bool(False))
        robot_state.wait(lambda m: not m.enabled, 10.0, 'the robot disabled')
        t0 = stamp(joints.last())
        q0 = arm_positions(joints.last())
        joints.wait_until(t0 + 1.0)
        q = np.array([arm_positions(m) for m in joints.between(t0, t0 + 1.0)])
        assert len(q) >= 50
        assert np.abs(q - q0).max() < 3e-3, np.abs(q - q0).max(axis=0)
    finally:
        enable.publish(Bool(True))
        robot_state.wait(lambda m: m.enabled, 10.0, 'the robot enabled again')


def test_a_position_move_and_a_motion_goal(robot, joints, mc):
    arm = Arm()
    try:
        arm.tolerate_stalls()
        target = dict(zip(ARM, NEUTRAL))
        target['right_j5'] += 0.2
        t0, t_reached = arm.move_to(target)
        assert t_reached - t0 < 5.0
        goal = np.array(NEUTRAL)
        goal[0] -= 0.4
        goal[3] += 0.3
        state, result = mc(goal)
        assert result.result is True, result
        assert np.abs(arm_positions(joints.last()) - goal).max() < TOL
    finally:
        arm.js.unregister()
        arm.sea.unregister()


def test_teleport_and_a_wrench_go_through_gazebos_services(robot, joints, sim, realtime_state,
                                                           rosout):
    """set_joint_positions becomes /gazebo/set_model_configuration; apply_wrench becomes
    /gazebo/apply_body_wrench on right_l6 (right_hand is lumped into it, as Gazebo lumps
    fixed joints, the torque moved to its centre of mass): the holding arm gives way up
    along a 40 N push at the hand, and collision detection, which sees the applied efforts
    Gazebo reports, calls it a squish. An obstacle is a static model spawned into Gazebo's
    world where the robot's base frame puts it, and deleted when removed."""
    q = np.array(NEUTRAL)
    q[1] += 0.3
    teleport(sim, q)
    joints.wait(lambda m: np.abs(arm_positions(m) - q).max() < 1e-3, 10.0, 'the arm at the teleported pose')
    teleport(sim)
    joints.wait(lambda m: np.abs(arm_positions(m) - NEUTRAL).max() < 1e-3, 10.0, 'the arm back at neutral')
    from intera_rt.model import RobotModel
    model = RobotModel.from_file()
    z0 = model.tip_pose('right_hand', arm_positions(joints.last()))[0][2]
    t0 = now()
    from geometry_msgs.msg import Pose, Wrench
    push = Wrench()
    push.force.z = 40.0
    res = sim['apply_wrench']('right_hand', push, 0.5)
    assert res.success, res.message
    joints.wait_until(t0 + 1.5)
    dz = [model.tip_pose('right_hand', arm_positions(m))[0][2] - z0 for m in joints.between(t0, t0 + 0.5)]
    assert max(dz) > 1e-3, max(dz)
    wait_for(lambda: any(line.startswith('squish on joint') for line in list(rosout)), 10.0,
             'the squish in the log')
    teleport(sim)
    realtime_state.wait(lambda m: not m.collision and m.controller == 'hold', 10.0, 'a quiet arm')
    pose = Pose()
    pose.position.x, pose.orientation.w = 0.8, 1.0
    res = sim['add_obstacle']('wall', 'box', pose, [0.1, 1.0, 1.0])
    assert res.success, res.message
    import rospy
    from gazebo_msgs.srv import GetModelState
    from intera_rt.boards.gazebo_launch import SPAWN_Z
    get_state = rospy.ServiceProxy('/gazebo/get_model_state', GetModelState)
    state = get_state('wall', '')
    assert state.success, state.status_message
    assert np.allclose([state.pose.position.x, state.pose.position.y, state.pose.position.z],
                       [0.8, 0.0, SPAWN_Z], atol=1e-6), state.pose
    res = sim['remove_obstacle']('wall')
    assert res.success, res.message
    assert not get_state('wall', '').success


def test_a_teleport_drops_a_wrench_still_pushing(robot, joints, sim, realtime_state):
    """As on every backend, a teleport ends the wrenches apply_wrench pushed: a 40 N push
    on the hand meant to last 20 s gives the arm way, then after set_joint_positions the arm
    holds the new pose, with no collision detected (Gazebo itself would keep pushing the
    body for the wrench's duration)."""
    from geometry_msgs.msg import Wrench
    from intera_rt.model import RobotModel
    teleport(sim)
    realtime_state.wait(lambda m: not m.collision and m.controller == 'hold', 10.0, 'a quiet arm')
    model = RobotModel.from_file()
    z0 = model.tip_pose('right_hand', np.array(NEUTRAL))[0][2]
    push = Wrench()
    push.force.z = 40.0
    res = sim['apply_wrench']('right_hand', push, 20.0)
    assert res.success, res.message
    joints.wait(lambda m: model.tip_pose('right_hand', arm_positions(m))[0][2] - z0 > 1e-3, 10.0,
                'the push moving the hand up')
    teleport(sim)
    t_tel = now()
    realtime_state.wait(lambda m: not m.collision and m.controller == 'hold', 10.0, 'a quiet arm')
    joints.wait_until(t_tel + 2.0)
    held = np.array([arm_positions(m) for m in joints.between(t_tel + 0.5, t_tel + 2.0)])
    worst = np.abs(held - NEUTRAL).max()
    assert len(held) and worst < 2e-3, 'the arm %.4f rad from the teleported pose: still pushed' % worst
    hits = [stamp(m) for m in realtime_state.between(t_tel + 0.5) if m.collision]
    assert not hits, 'a collision detected at %.3f after the teleport at %.3f' % (hits[0], t_tel)


def test_gazebo_stopping_stops_the_robot_with_an_error_and_a_reset_recovers(
        robot, joints, robot_state, rosout, mc):
    from std_msgs.msg import Bool, Empty
    from rosharness import wait_connected
    assert not robot_state.last().error
    gazebo('pause_physics')
    try:
        robot_state.wait(lambda m: m.error and not m.enabled, 10.0, 'the robot in error')
        wait_for(lambda: any('Gazebo stopped: no joint states on /sawyer_gazebo/joint_states '
                             'and no /clock' in line for line in list(rosout)), 10.0,
                 'the boards fault in the log')
        # A reset while Gazebo is still stopped is refused.
        reset = sync_publisher('/robot/set_super_reset', Empty)
        enable = sync_publisher('/robot/set_super_enable', Bool)
        wait_connected(reset, '/realtime_loop')
        wait_connected(enable, '/realtime_loop')
        reset.publish(Empty())
        wait_for(lambda: any('reset refused' in line and 'still no joint states' in line
                             for line in list(rosout)), 10.0, 'the refused reset in the log')
        assert robot_state.last().error
    finally:
        gazebo('unpause_physics')
    t_resumed = stamp(joints.wait_until(stamp(joints.last()) + 0.1, 10.0))
    reset.publish(Empty())
    robot_state.wait(lambda m: not m.error, 10.0, 'the error cleared')
    enable.publish(Bool(True))
    robot_state.wait(lambda m: m.enabled and m.ready, 10.0, 'the robot enabled')
    goal = np.array(NEUTRAL)
    goal[0] += 0.3
    state, result = mc(goal)
    assert result.result is True, result
    assert stamp(joints.last()) > t_resumed
