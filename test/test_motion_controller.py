"""The motion controller through ROS, driven the way the SDK's MotionTrajectory drives it:
an actionlib.SimpleActionClient on /motion/motion_command with start / stop / generate goals.
What is checked is what a user sees: results, error ids, /robot/joint_states,
endpoint_state / tip_states, the interaction command and the interpolated path.
Motions ended by the robot's collision detection or zero-G: test_realtime_plugins."""
import math

import numpy as np
import pytest

from clients import FAST, SETTLE, goal, waypoint
from contract import ARM
from rosharness import latest, wait_for
from motion_client import (  # noqa: F401 - ros: the module fixture
    NEUTRAL, BIAS, COLLIDING, AT_CONTROLLER_BOX, RESULT_TIMEOUT, ros,
    angles, speeds, teleport, joint_goal, send, pose_of,
    tip_pose, quat_angle, wait_at_rest, assert_no_motion, SUCCEEDED, ABORTED,
    PREEMPTED, REJECTED)

pytestmark = pytest.mark.usefixtures('no_false_detection')    # normal use: no collision detected


# --- moves ---------------------------------------------------------------------------------------
def test_go_to_joint_angles(ros):
    teleport(ros)
    state, result = send(ros, joint_goal(ros, BIAS, ratio=0.5, accel=FAST))
    assert state == SUCCEEDED and result.result is True and result.errorId == ''
    assert np.abs(angles(ros) - BIAS).max() < 0.01
    a = result.trajectory_analysis
    assert a.planned_duration > 0.5 and a.measured_duration >= a.planned_duration * 0.9
    assert len(a.peak_speed_command) == 7 and max(a.peak_speed_command) <= 0.5 * 4.545 + 1e-6
    assert result.last_successful_waypoint == 1


def test_feedback_reports_running_then_done(ros):
    import rospy
    teleport(ros)
    seen = []
    ros['client'].send_goal(joint_goal(ros, BIAS, ratio=0.8),
                            feedback_cb=lambda fb: seen.append(fb.status.motion_status))
    assert ros['client'].wait_for_result(rospy.Duration(RESULT_TIMEOUT))
    assert ros['client'].get_result().result
    assert 'running' in seen


def test_generate_returns_the_analysis_without_moving(ros):
    teleport(ros)
    before = angles(ros)
    g = joint_goal(ros, BIAS)
    g.command = 'generate'
    state, result = send(ros, g)
    assert state == SUCCEEDED and result.result is True
    assert result.trajectory_analysis.planned_duration > 0.5
    assert result.trajectory_analysis.max_angle_command[3] == pytest.approx(2.18, abs=1e-6)
    assert_no_motion(ros, before)


def test_several_waypoints_and_the_interpolated_path(ros):
    from intera_motion_msgs.msg import InterpolatedPath
    teleport(ros)
    a = [0.3, -1.0, 0.1, 2.0, 0.1, 0.5, 3.0]
    b = [0.5, -0.9, 0.2, 1.8, 0.0, 0.3, 2.6]
    g = joint_goal(ros, a, b, ratio=0.7)
    g.trajectory.trajectory_options.path_interpolation_step = 0.05
    with latest('/motion/interpolated_path', InterpolatedPath) as path:
        state, result = send(ros, g)
        msg = path.wait(5.0)
    assert result.result and result.last_successful_waypoint == 2
    assert np.abs(angles(ros) - b).max() < 0.01
    pts = msg.interpolated_path
    assert msg.joint_names == ARM and len(pts) >= result.trajectory_analysis.planned_duration / 0.05
    assert np.allclose(pts[-1].joint_positions, b, atol=1e-6)
    assert pts[-1].time == pytest.approx(result.trajectory_analysis.planned_duration)


def test_random_joint_trajectories(ros):
    """send_random_trajectory style: seeded random walks of a few waypoints from neutral.
    Each goal either runs to its last waypoint, or (a walk that folds the arm into itself)
    is refused with PLANNED_MOTION_COLLISION while the arm stays where it is; three must
    run (with this seed: the 1st, 2nd and 6th)."""
    from intera_rt.model import RobotModel
    lim = RobotModel.from_file().limit_arrays(ARM)
    rng = np.random.default_rng(1234)
    done, refused = 0, 0
    while done < 3:
        assert refused < 6, 'the robot refused %d of %d random goals' % (refused, refused + done)
        teleport(ros)
        q, targets = np.array(NEUTRAL), []
        for _ in range(4):
            q = np.clip(q + rng.uniform(-0.35, 0.35, 7), lim['lower'], lim['upper'])
            targets.append(q)
        g = joint_goal(ros, *targets, ratio=0.6)
        if result_refused_for_collision(ros, g):
            refused += 1
            continue
        assert np.abs(angles(ros) - targets[-1]).max() < 0.01
        done += 1


def result_refused_for_collision(ros, g):
    """Send g: True when the robot refused it as a self-colliding path without moving, False
    when it succeeded; any other outcome fails."""
    wait_at_rest(ros)
    before = angles(ros)
    state, result = send(ros, g)
    if result.errorId == 'PLANNED_MOTION_COLLISION':
        assert result.result is False and state in (ABORTED, REJECTED), (state, result.result)
        assert_no_motion(ros, before)
        return True
    assert state == SUCCEEDED and result.result, result.errorId
    return False


def test_go_to_cartesian_pose_absolute(ros):
    """go_to_cartesian_pose -p 0.45 0.16 0.3 -o 0 1 0 0: one waypoint, nullspace bias."""
    teleport(ros)
    target = (np.array([0.45, 0.16, 0.3]), np.array([0.0, 1.0, 0.0, 0.0]))
    state, result = send(ros, goal([waypoint(BIAS, pose=target, ratio=0.5)], 'CARTESIAN'))
    assert state == SUCCEEDED and result.result, result.errorId
    p, o = pose_of(ros['endpoint'].get())
    assert np.linalg.norm(p - target[0]) < 2e-3
    assert quat_angle(o, target[1]) < 0.01


def test_go_to_cartesian_pose_relative(ros):
    """go_to_cartesian_pose -R 0 0 0.05 0 0 0: the client adds the offset to the current pose."""
    teleport(ros)
    p0, o0 = pose_of(ros['endpoint'].get())
    target = (p0 + [0.0, -0.05, 0.05], o0)
    state, result = send(ros, goal([waypoint(angles(ros), pose=target, ratio=0.5)], 'CARTESIAN'))
    assert result.result, result.errorId
    p, o = pose_of(ros['endpoint'].get())
    assert np.linalg.norm(p - target[0]) < 2e-3 and quat_angle(o, o0) < 0.01


def test_cartesian_with_another_active_endpoint(ros):
    teleport(ros)
    p0, o0 = tip_pose(ros, 'right_hand_camera')
    target = (p0 + [0.03, -0.03, 0.03], o0)
    g = goal([waypoint(pose=target, endpoint='right_hand_camera', ratio=0.5)], 'CARTESIAN')
    state, result = send(ros, g)
    assert result.result, result.errorId
    p, o = tip_pose(ros, 'right_hand_camera')
    assert np.linalg.norm(p - target[0]) < 2e-3 and quat_angle(o, o0) < 0.01


def test_interaction_options_are_accepted_and_passed_on(ros):
    """go_to_joint_angles_in_contact style: interaction_control with its parameters, which the
    robot's interaction controller applies while the motion moves its reference."""
    from intera_core_msgs.msg import InteractionControlCommand
    teleport(ros)
    g = joint_goal(ros, BIAS, ratio=0.5)
    opts = g.trajectory.trajectory_options
    opts.interaction_control = True
    p = opts.interaction_params
    p.interaction_control_active = True
    p.interaction_control_mode = [1] * 6
    p.K_impedance = [500.0, 500.0, 500.0, 10.0, 10.0, 10.0]
    p.max_impedance = [False] * 6
    p.K_nullspace = [5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0]
    p.force_command = [0.0] * 6
    p.interaction_frame.orientation.w = 1.0
    p.endpoint_name = 'right_hand'
    p.in_endpoint_frame = False
    with latest('/robot/limb/right/interaction_control_command', InteractionControlCommand) as rec:
        state, result = send(ros, g)          # (republished at 10 Hz while it moves)
        msg = rec.wait(5.0)
    assert state == SUCCEEDED and result.result
    # Compliant all the way (500 N/m, 10 N·m/rad, the nullspace at 5-10 N·m/rad): the motion
    # is done once the arm has slowed down near the goal; the arm stays in interaction
    # control and settles on the goal's endpoint pose (its elbow within what the nullspace
    # stiffness wins from the joints' friction).
    from rosharness import wait_for_message
    from intera_rt_msgs.msg import RealtimeState
    from intera_rt.model import RobotModel
    assert wait_for_message('/intera_rt/realtime_state', RealtimeState).controller == 'interaction'
    p_goal, q_goal = RobotModel.from_file().arm_dynamics.tip('right_hand', np.array(BIAS))[:2]
    wait_for(lambda: np.linalg.norm(pose_of(ros['endpoint'].get())[0] - p_goal) < 0.003, SETTLE,
             'the hand within 3 mm of the goal')
    wait_at_rest(ros, SETTLE, 'the arm settled')
    p_hand, q_hand = pose_of(ros['endpoint'].get())
    assert np.linalg.norm(p_hand - p_goal) < 0.003
    assert 2 * math.degrees(math.acos(min(1.0, abs(float(q_hand @ q_goal))))) < 1.0
    assert np.abs(angles(ros) - BIAS).max() < 0.1
    assert msg.interaction_control_active and list(msg.K_impedance) == p.K_impedance
    assert list(msg.K_nullspace) == p.K_nullspace


# --- stopping --------------------------------------------------------------------------------------
def _start_long_move(ros, target=(1.5, -1.18, 0.0, 2.18, 0.0, 0.57, 3.3161), ratio=0.4):
    ros['client'].send_goal(joint_goal(ros, list(target), ratio=ratio))
    wait_for(lambda: np.abs(speeds(ros)).max() > 0.3, 10.0, 'the arm moving')


def test_stop_while_running_decelerates_smoothly_and_holds(ros):
    import rospy
    from intera_core_msgs.msg import JointCommand
    teleport(ros)
    commands = []
    sub = rospy.Subscriber('/robot/limb/right/joint_command', JointCommand,
                           lambda m: commands.append((m.header.stamp.to_sec(), np.array(m.velocity),
                                                      np.array(m.acceleration))), queue_size=500)
    try:
        _start_long_move(ros)
        t_stop = rospy.get_time()
        q_stop = angles(ros)
        state, result = send(ros, goal([], command='stop'), timeout=10.0, client='stopper')
        assert state == SUCCEEDED and result.result is True
        assert ros['client'].wait_for_result(rospy.Duration(5.0))
        assert ros['client'].get_state() in (PREEMPTED, ABORTED)
        assert ros['client'].get_result().result is False
        wait_at_rest(ros, 5.0)
    finally:
        sub.unregister()
    # What the controller commanded: a continuous deceleration to rest ~0.3 s after the stop.
    after = [(t, v, a) for t, v, a in commands if t >= t_stop - 0.01]
    first_rest = next(t for t, v, _ in after if not np.any(v))
    assert first_rest - t_stop < 0.45
    times = np.array([t for t, v, _ in after if t <= first_rest])
    speed = np.array([np.linalg.norm(v) for t, v, _ in after if t <= first_rest])
    # Until the stop goal reaches the controller the move may still be speeding up; from
    # its peak on, the commanded speed only falls.
    peak = int(np.argmax(speed))
    assert speed[peak] > 0.2 and times[peak] - t_stop < 0.15, (
        'the stop took effect %.3f s after it was sent' % (times[peak] - t_stop))
    assert np.all(np.diff(speed[peak:]) < 0.01), 'the commanded speed rose while stopping'

    assert max(np.abs(a).max() for _, _, a in after) <= 10.0
    held = angles(ros)
    # Stopped on the way: past where the stop was sent (it decelerates, never jumps back),
    # well short of the goal. How far it had got depends on how fast this test saw it move.
    assert 0.02 < held[0] < 1.4 and held[0] >= q_stop[0] - 1e-3, (q_stop[0], held[0])
    assert_no_motion(ros, held, messages=100)          # and holds (1 s of joint states)


def test_stop_while_idle_succeeds(ros):
    import rospy
    seen = []
    ros['stopper'].send_goal(goal([], command='stop'), feedback_cb=lambda fb: seen.append(fb.status.motion_status))
    assert ros['stopper'].wait_for_result(rospy.Duration(10.0))
    assert ros['stopper'].get_state() == SUCCEEDED and ros['stopper'].get_result().result is True
    assert seen in ([], ['idle'])


def test_client_stalled_after_sending_still_tracks_its_goal(ros):
    """actionlib's SimpleActionClient publishes a goal and only then records its handle. A
    client whose thread is descheduled right after publishing (a busy machine: simulated
    here by 20 ms) must not hear of the goal before it has recorded it — else it logs "Got
    a transition callback on a goal handle that we're not tracking" and loses the
    transition (seen with stop_motion_trajectory.py when idle). Each stop goal is seen going
    active, then succeeds, and nothing is logged."""
    import rospy
    from intera_motion_msgs.msg import MotionCommandAction, MotionCommandGoal
    from rosharness import StalledClient
    with StalledClient('/motion/motion_command', MotionCommandAction) as stalled:
        client = stalled.client
        for _ in range(5):
            active = []
            client.send_goal(MotionCommandGoal(command='stop'), active_cb=lambda: active.append(True))
            assert client.wait_for_result(rospy.Duration(10.0))
            assert client.get_state() == SUCCEEDED and client.get_result().result is True
            assert active == [True]
    assert stalled.untracked == []


def test_pedestal_boxes_are_not_in_the_motion_controllers_check(ros):
    """Seed 000: the boxes around the pedestal's base and the controller box are for
    external planners, "not used by the Motion Controller": a move into the controller box
    is planned (generate), while the FK service, which answers for any planner, reports
    that configuration in collision."""
    import rospy
    from intera_core_msgs.srv import SolvePositionFK
    from sensor_msgs.msg import JointState
    teleport(ros)
    g = joint_goal(ros, AT_CONTROLLER_BOX)
    g.command = 'generate'                       # (checked, not run)
    state, result = send(ros, g)
    assert state == SUCCEEDED and result.result, result.errorId
    rospy.wait_for_service('/ExternalTools/right/PositionKinematicsNode/FKService', 10.0)
    fk = rospy.ServiceProxy('/ExternalTools/right/PositionKinematicsNode/FKService', SolvePositionFK)
    resp = fk(configuration=[JointState(name=list(ARM), position=AT_CONTROLLER_BOX)], tip_names=['right_hand'])
    assert resp.isValid[0] and resp.inCollision[0]


def test_cancelling_the_goal_stops_the_arm_on_its_path(ros):
    import rospy
    teleport(ros)
    _start_long_move(ros)
    ros['client'].cancel_goal()
    assert ros['client'].wait_for_result(rospy.Duration(5.0))
    assert ros['client'].get_state() == PREEMPTED
    wait_at_rest(ros, 2.0)
    q = angles(ros)
    # Stopped on the j0-only path: past the start (it was moving at > 0.3 rad/s, which it
    # reaches ~0.1 rad out), well short of the goal at 1.5.
    assert 0.05 < q[0] < 1.4 and np.abs(q[1:] - NEUTRAL[1:]).max() < 0.01


def test_new_start_preempts_the_running_motion(ros):
    import rospy
    teleport(ros)
    first = ros['client']
    _start_long_move(ros)
    state, result = send(ros, joint_goal(ros, BIAS, ratio=0.6), client='stopper')
    assert state == SUCCEEDED and result.result
    assert np.abs(angles(ros) - BIAS).max() < 0.01
    assert first.wait_for_result(rospy.Duration(5.0)) and first.get_state() in (PREEMPTED, ABORTED)


def test_disabling_the_robot_ends_the_motion_controller_not_following(ros):
    import rospy
    from std_msgs.msg import Bool
    teleport(ros)
    pub = rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10)
    _start_long_move(ros)
    try:
        wait_for(lambda: pub.publish(Bool(False)) or not ros['state'].get().enabled, 5.0, 'robot disabled')
        assert ros['client'].wait_for_result(rospy.Duration(10.0))
        result = ros['client'].get_result()
        assert result.result is False and result.errorId == 'CONTROLLER_NOT_FOLLOWING'
        assert ros['client'].get_state() == ABORTED
    finally:
        wait_for(lambda: pub.publish(Bool(True)) or ros['state'].get().enabled, 5.0, 'robot enabled')


# --- errors from crafted goals (each before any motion) ------------------------------------------
def _expect_error(ros, g, error_id, moves=False):
    wait_at_rest(ros)
    before = angles(ros)
    state, result = send(ros, g)
    assert result.result is False and result.errorId == error_id, (result.errorId, error_id)
    assert state in (ABORTED, REJECTED)
    if not moves:
        assert_no_motion(ros, before)
    return result


def test_error_invalid_trajectory_message(ros):
    teleport(ros)
    g = joint_goal(ros, BIAS)
    g.trajectory.waypoints[1].joint_positions = []                 # mixed JOINT / pose-only
    _expect_error(ros, g, 'INVALID_TRAJECTORY_MESSAGE')
    g = joint_goal(ros, BIAS)
    g.trajectory.waypoints[1].joint_positions = BIAS[:6]           # wrong joint count
    _expect_error(ros, g, 'INVALID_TRAJECTORY_MESSAGE')
    g = joint_goal(ros, BIAS)
    g.trajectory.waypoints[1].joint_positions = BIAS[:6] + [float('nan')]
    _expect_error(ros, g, 'INVALID_TRAJECTORY_MESSAGE')
    target = (np.array([0.45, 0.16, 0.3]), np.array([0.0, 0.5, 0.0, 0.0]))   # not a unit quaternion
    _expect_error(ros, goal([waypoint(BIAS, pose=target)], 'CARTESIAN'), 'INVALID_TRAJECTORY_MESSAGE')
    g = joint_goal(ros, BIAS)
    g.trajectory.trajectory_options.interpolation_type = 'SPLINE'
    _expect_error(ros, g, 'INVALID_TRAJECTORY_MESSAGE')
    g = joint_goal(ros, BIAS)
    g.command = 'jump'
    _expect_error(ros, g, 'INVALID_TRAJECTORY_MESSAGE')


def test_error_endpoint_does_not_exist(ros):
    target = (np.array([0.45, 0.16, 0.3]), np.array([0.0, 1.0, 0.0, 0.0]))
    _expect_error(ros, goal([waypoint(BIAS, pose=target, endpoint='right_gripper_tip')], 'CARTESIAN'),
                  'ENDPOINT_DOES_NOT_EXIST')


def test_error_planned_joint_accel_limit(ros):
    _expect_error(ros, joint_goal(ros, BIAS, accel=[20.0] * 7), 'PLANNED_JOINT_ACCEL_LIMIT')


def test_error_cartesian_interpolation_failed(ros):
    target = (np.array([2.0, 0.0, 0.3]), np.array([0.0, 1.0, 0.0, 0.0]))
    _expect_error(ros, goal([waypoint(BIAS, pose=target)], 'CARTESIAN'), 'CARTESIAN_INTERPOLATION_FAILED')


def test_error_failed_to_parameterize(ros):
    _expect_error(ros, joint_goal(ros, BIAS, ratio=1e-7), 'FAILED_TO_PARAMETERIZE')


def test_error_planned_motion_collision_unless_suppressed(ros):
    import rospy
    from std_msgs.msg import Empty
    teleport(ros)
    _expect_error(ros, joint_goal(ros, COLLIDING), 'PLANNED_MOTION_COLLISION')
    pub = rospy.Publisher('/robot/limb/right/suppress_collision_avoidance', Empty, queue_size=10)
    g = joint_goal(ros, COLLIDING)
    g.command = 'generate'                       # (checked, not run: the sim has no pedestal)
    stop = {'flag': False}
    timer = rospy.Timer(rospy.Duration(0.05), lambda _: stop['flag'] or pub.publish(Empty()))
    try:
        # Until the suppression reaches the controller the goal is still refused.
        result = wait_for(lambda: send(ros, g)[1].result and ros['client'].get_result(), 10.0,
                          'generate to pass with collision avoidance suppressed')
        assert result.errorId == '' and result.trajectory_analysis.planned_duration > 0
    finally:
        stop['flag'] = True
        timer.shutdown()


def test_error_final_pose_not_within_tolerance(ros):
    teleport(ros)
    g = joint_goal(ros, BIAS, ratio=0.8)
    t = g.trajectory.trajectory_options.tracking_options
    t.goal_joint_tolerance = [1e-9]
    t.use_settling_time_at_goal, t.settling_time_at_goal = True, 0.1
    result = _expect_error(ros, g, 'FINAL_POSE_NOT_WITHIN_TOLERANCE', moves=True)
    assert result.last_successful_waypoint == 0
    # It did move, and holds the goal it missed by more than 1e-9 rad.
    wait_for(lambda: np.abs(angles(ros) - BIAS).max() < 0.01, 10.0, 'the arm at the goal')


def test_error_controller_not_following_when_disabled_at_start(ros):
    import rospy
    from std_msgs.msg import Bool
    pub = rospy.Publisher('/robot/set_super_enable', Bool, queue_size=10)
    try:
        wait_for(lambda: pub.publish(Bool(False)) or not ros['state'].get().enabled, 5.0, 'robot disabled')
        _expect_error(ros, joint_goal(ros, BIAS), 'CONTROLLER_NOT_FOLLOWING')
    finally:
        wait_for(lambda: pub.publish(Bool(True)) or ros['state'].get().enabled, 5.0, 'robot enabled')
