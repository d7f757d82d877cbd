"""A robot node killed (SIGKILL: a crash, no goodbye to the master) while the arm moves: the
arm holds or carries on as it should, the launch file restarts the node, the new one takes
over the name and every registration (no stale entry with the master points at the dead
one), and it serves again.

  motion_controller killed mid-motion  → the robot's command timeout brings the arm to a
                                         hold within 0.2 s + braking; a new goal succeeds
  the JTAS's node killed mid-motion    → the same, through FollowJointTrajectory; IK and
                                         FK answer again (the same process)
  io killed during a JTAS motion       → the motion is not disturbed; /tf flows again

Sim time at 1x: durations are robot time."""
import os
import signal

import numpy as np
import pytest

from clients import Series, goal, moveit_goal, now, smooth_motion, stamp, waypoint
from contract import ARM, NEUTRAL
from rosharness import wait_for
from robot_watch import IK_NODE, JTAS_NODE, TF_NODE, master, node_pid

SAWYER_ARGS = ['--sim-time', '--speed', '1']
RESPAWN_TIMEOUT = 60.0           # s (wall) for a killed node to be back and registered
COMMAND_TIMEOUT = 0.2            # s: the robot's joint_command_timeout default


@pytest.fixture(scope='module')
def ros(robot):
    from sensor_msgs.msg import JointState
    js = Series('/robot/joint_states', JointState)
    js.last()
    yield {'js': js}
    js.unregister()


def q_of(msg):
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def qd_of(msg):
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


def teleport(q=NEUTRAL):
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    assert rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)(
        list(ARM), list(q)).success


def kill(name):
    """SIGKILL the node `name`; its pid."""
    pid = node_pid(name)
    assert pid, '%s is not running' % name
    os.kill(pid, signal.SIGKILL)
    return pid


def wait_respawned(name, old_pid):
    """The node is back under its name with a new pid, answering; its pid."""
    return wait_for(lambda: (lambda p: p if p and p != old_pid else None)(node_pid(name)),
                    RESPAWN_TIMEOUT, '%s restarted by the launch file' % name, interval=0.2)


def registrations_of(name):
    """Topics published, subscribed and services provided by `name`, per the master."""
    pubs, subs, srvs = master().getSystemState()
    return ({t for t, nodes in pubs if name in nodes}, {t for t, nodes in subs if name in nodes},
            {s for s, nodes in srvs if name in nodes})


def assert_no_stale_registration(name, before):
    """After the restart the master lists the node for what it listed before, and every
    service of it is reachable at the new node's port (a stale one would point at the dead
    process)."""
    import rosservice

    def complete():
        now = registrations_of(name)
        return now if all(old <= new for old, new in zip(before, now)) else None
    try:
        after = wait_for(complete, RESPAWN_TIMEOUT, 'the restarted %s registered again' % name,
                         interval=0.2)
    except AssertionError:
        after = registrations_of(name)
        lost = {what: sorted(old - new) for what, old, new in
                zip(('publications', 'subscriptions', 'services'), before, after) if old - new}
        raise AssertionError('%s lost after the restart: %s' % (name, lost))
    for service in after[2]:
        uri = master().lookupService(service)
        assert rosservice.get_service_type(service), 'service %s at %s does not answer' % (service, uri)


def holds_after(js, t_kill, within):
    """The arm comes to rest within `within` s of robot time after t_kill and stays put."""
    js.wait_until(t_kill + within + 0.5)
    after = js.between(t_kill + within, t_kill + within + 0.5)
    assert after, 'no joint states after the kill'
    speed = max(np.abs(qd_of(m)).max() for m in after)
    drift = max(np.abs(q_of(m) - q_of(after[0])).max() for m in after)
    assert speed < 0.01 and drift < 2e-3, \
        'the arm still moves %.3f s after the kill: %.4f rad/s, drift %.4f rad' % (within, speed, drift)
    moving = [stamp(m) for m in js.between(t_kill - 0.1, t_kill) if np.abs(qd_of(m)).max() > 0.05]
    assert moving, 'the arm was not moving when the node was killed'


def test_motion_controller_killed_mid_motion(ros):
    import actionlib
    import rospy
    from intera_motion_msgs.msg import MotionCommandAction
    teleport()
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    before = registrations_of('/motion_controller')
    target = NEUTRAL + np.r_[1.2, 0, 0, 0, 0, 0, 0]
    client.send_goal(goal([waypoint(NEUTRAL, ratio=0.3), waypoint(target, ratio=0.3)]))
    ros['js'].wait(lambda m: np.abs(qd_of(m)).max() > 0.2, 20.0, 'the arm moving')
    old = kill('/motion_controller')
    t_kill = now()
    # the robot's command timeout, then braking at the acceleration limit
    holds_after(ros['js'], t_kill, COMMAND_TIMEOUT + 0.3)
    wait_respawned('/motion_controller', old)
    assert_no_stale_registration('/motion_controller', before)
    # it serves again: from where the arm stopped back to neutral
    fresh = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert fresh.wait_for_server(rospy.Duration(60.0)), 'the restarted motion controller'
    q = q_of(ros['js'].last())
    fresh.send_goal(goal([waypoint(q, ratio=0.5), waypoint(NEUTRAL, ratio=0.5)]))
    assert fresh.wait_for_result(rospy.Duration(60.0))
    result = fresh.get_result()
    assert result.result is True, result.errorId


def _jtas_goal(q0, q1, duration):
    return moveit_goal(smooth_motion(q0, q1 - q0, duration), duration)


def test_jtas_killed_mid_motion(ros):
    """The JTAS's node (the motion controller's process, which also serves IK and FK)."""
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    ns = '/robot/limb/right/follow_joint_trajectory'
    fk_name = '/ExternalTools/right/PositionKinematicsNode/FKService'
    teleport()
    client = actionlib.SimpleActionClient(ns, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(30.0))
    before = registrations_of(JTAS_NODE)
    target = NEUTRAL + np.r_[1.0, 0, 0, 0, 0, 0, 0]
    client.send_goal(_jtas_goal(NEUTRAL, target, 3.0))
    ros['js'].wait(lambda m: np.abs(qd_of(m)).max() > 0.2, 20.0, 'the arm moving')
    old = kill(JTAS_NODE)
    t_kill = now()
    holds_after(ros['js'], t_kill, COMMAND_TIMEOUT + 0.3)
    wait_respawned(JTAS_NODE, old)
    assert_no_stale_registration(JTAS_NODE, before)
    fresh = actionlib.SimpleActionClient(ns, FollowJointTrajectoryAction)
    assert fresh.wait_for_server(rospy.Duration(60.0)), 'the restarted JTAS'
    q = q_of(ros['js'].last())
    fresh.send_goal(_jtas_goal(q, NEUTRAL, 2.0))
    assert fresh.wait_for_result(rospy.Duration(60.0))
    assert fresh.get_result().error_code == 0, fresh.get_result().error_string
    # IK and FK answer again (IK_NODE is the same process)
    assert IK_NODE == JTAS_NODE
    rospy.wait_for_service(fk_name, 30.0)
    req = SolvePositionFKRequest(configuration=[JointState(name=ARM, position=list(NEUTRAL))],
                                 tip_names=['right_hand'])
    resp = rospy.ServiceProxy(fk_name, SolvePositionFK)(req)
    assert list(resp.isValid) == [True]
    p = resp.pose_stamp[0].pose.position
    assert abs(p.x - 0.4496) < 1e-3 and abs(p.z - 0.2158) < 1e-3


def test_io_killed_during_a_motion(ros):
    """io (the IO devices, and robot_state_publisher's /tf) killed during a JTAS motion: the
    motion carries on undisturbed to its end; io comes back and /tf flows again."""
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    from tf2_msgs.msg import TFMessage
    teleport()
    before = registrations_of(TF_NODE)
    client = actionlib.SimpleActionClient('/robot/limb/right/follow_joint_trajectory',
                                          FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60.0))
    target = NEUTRAL + np.r_[0.5, 0, 0, 0, 0, 0, 0]
    client.send_goal(_jtas_goal(NEUTRAL, target, 2.0))
    ros['js'].wait(lambda m: np.abs(qd_of(m)).max() > 0.1, 20.0, 'the arm moving')
    old = kill(TF_NODE)
    t_kill = now()
    # the motion carries on undisturbed to its end
    assert client.wait_for_result(rospy.Duration(30.0))
    assert client.get_result().error_code == 0, client.get_result().error_string
    assert np.abs(q_of(ros['js'].last()) - target).max() < 0.01
    wait_respawned(TF_NODE, old)
    assert_no_stale_registration(TF_NODE, before)
    heard = []
    sub = rospy.Subscriber('/tf', TFMessage, lambda m: heard.append(m._connection_header['callerid']))
    try:
        wait_for(lambda: TF_NODE in heard, 30.0, '/tf from the restarted ' + TF_NODE)
    finally:
        sub.unregister()
    assert now() > t_kill
