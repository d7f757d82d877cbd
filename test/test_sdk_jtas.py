"""The SDK's own joint trajectory action server beside the robot.

The robot boots with `--no-jtas` (the built-in server left out). An SDK-style server
(sdk_jtas_standin.py: the SDK's start-up gates, then the action) starts and drives the arm.
Then the built-in server (intera_rt's joint_trajectory_action_server node) is started by
hand beside it: it yields — one log line naming the other server, no goals taken — and
serves again once the other has gone; a server that appears while the built-in one runs a
goal takes over (the goal ends — aborted, or LOST to an actionlib client once the other
server's status arrives without it — and the arm is brought to rest).
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clients import Series, arm_positions
from contract import ARM
from rosharness import latest, wait_for

pytestmark = pytest.mark.sawyer_args(['--no-jtas'])

HERE = Path(__file__).resolve().parent
ACTION = '/robot/limb/right/follow_joint_trajectory'
STANDIN = '/sdk_position_joint_trajectory_action_server_right'
BUILTIN = '/joint_trajectory_action_server'


class Node:
    """A ROS node in a subprocess (its output in a file), stopped with SIGINT as a user's
    Ctrl-C would."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self._log = open(log_path, 'w')
        self.proc = subprocess.Popen([sys.executable] + args, stdout=self._log,
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONUNBUFFERED='1'),
                                     start_new_session=True)

    def log(self):
        return Path(self.log_path).read_text()

    def wait_log(self, text, timeout):
        wait_for(lambda: text in self.log() or self.proc.poll() is not None, timeout,
                 '%r in %s' % (text, self.log_path))
        assert text in self.log(), 'the node exited:\n' + self.log()[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope='module')
def nodes(robot, tmp_path_factory):
    """Starts nodes by name; stops whatever is left at the end."""
    started = []
    tmp = tmp_path_factory.mktemp('nodes')

    def start(kind):
        if kind == 'standin':
            node = Node([str(HERE / 'sdk_jtas_standin.py')], tmp / ('standin%d.log' % len(started)))
        else:
            node = Node(['-m', 'intera_rt.ros.joint_trajectory_action_server',
                         '__name:=joint_trajectory_action_server'],
                        tmp / ('builtin%d.log' % len(started)))
        started.append(node)
        return node
    start.started = started
    yield start
    for node in started:
        node.stop()


def servers():
    """The nodes that publish the action's status (what a server advertises)."""
    import rosgraph
    pubs = rosgraph.Master('/intera_rt_test').getSystemState()[0]
    return sorted(next((nodes for name, nodes in pubs if name == ACTION + '/status'), []))


def angles(joints):
    msg = joints.get()
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def speeds(joints):
    msg = joints.get()
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


def trajectory_goal(q0, dq, duration):
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    target = np.array(q0) + np.array(dq)
    for k in (1, 2):
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=list(np.array(q0) + (target - q0) * k / 2.0),
            time_from_start=rospy.Duration(duration * k / 2.0)))
    return goal, target


def send(goal, timeout):
    import actionlib
    import rospy
    from control_msgs.msg import FollowJointTrajectoryAction
    client = actionlib.SimpleActionClient(ACTION, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(10.0)), 'no server of %s' % ACTION
    client.send_goal(goal)
    assert client.wait_for_result(rospy.Duration(timeout)), 'no result within %.0f s' % timeout
    return client.get_state(), client.get_result()


@pytest.fixture(scope='module')
def joints(robot):
    from sensor_msgs.msg import JointState
    with latest('/robot/joint_states', JointState) as rec:
        rec.wait(5.0)
        yield rec


def test_no_builtin_server_with_no_jtas(robot):
    import rosnode
    assert servers() == []
    assert BUILTIN not in rosnode.get_node_names()


def test_builtin_yields_to_an_sdk_style_server_and_serves_again_when_it_goes(robot, nodes, joints):
    from actionlib_msgs.msg import GoalStatus
    standin = nodes('standin')
    standin.wait_log('Joint Trajectory Action Server Running', 30.0)    # its start-up gates passed

    builtin = nodes('builtin')
    builtin.wait_log('yielding to it', 30.0)
    line = next(l for l in builtin.log().splitlines() if 'yielding to it' in l)
    assert STANDIN in line and ACTION in line
    assert servers() == [STANDIN]

    # A goal: the SDK-style server answers it and drives the arm; the built-in one leaves it.
    q0 = angles(joints)
    goal, target = trajectory_goal(q0, [0.2, 0, 0, 0, 0, 0, 0], 2.0)
    state, result = send(goal, 30.0)
    assert state == GoalStatus.SUCCEEDED and result.error_string == 'stand-in'
    assert np.abs(angles(joints) - target).max() < 0.02
    assert not any(w in builtin.log() for w in ('accepted', 'rejected', 'left to'))   # unheard

    # The other server goes away (Ctrl-C): the built-in one serves again.
    standin.stop()
    builtin.wait_log('has gone: serving it again', 10.0)
    wait_for(lambda: servers() == [BUILTIN], 5.0, 'the built-in server advertised again')
    q0 = angles(joints)
    goal, target = trajectory_goal(q0, [-0.2, 0, 0, 0, 0, 0, 0], 2.0)
    state, result = send(goal, 30.0)
    assert state == GoalStatus.SUCCEEDED and result.error_string != 'stand-in', result
    assert np.abs(angles(joints) - target).max() < 0.02


def test_another_server_takes_over_a_running_goal(robot, nodes, joints):
    import actionlib
    import rospy
    from actionlib_msgs.msg import GoalStatus
    from control_msgs.msg import FollowJointTrajectoryAction
    assert servers() == [BUILTIN]
    q0 = angles(joints)
    goal, target = trajectory_goal(q0, [0.4, 0, 0, 0, 0, 0, 0], 15.0)
    client = actionlib.SimpleActionClient(ACTION, FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(10.0))
    client.send_goal(goal)
    wait_for(lambda: abs(angles(joints)[0] - q0[0]) > 0.02, 10.0, 'the built-in server moving the arm')

    standin = nodes('standin')
    assert client.wait_for_result(rospy.Duration(40.0)), 'no result'
    assert client.get_state() in (GoalStatus.ABORTED, GoalStatus.LOST)
    standin.wait_log('Joint Trajectory Action Server Running', 30.0)
    wait_for(lambda: servers() == [STANDIN], 10.0, 'only the SDK-style server advertised')
    builtin = next(n for n in reversed(nodes.started) if 'builtin' in str(n.log_path))
    assert 'aborted: another action server (%s) took over' % STANDIN in builtin.log()
    # The arm was brought to rest short of the goal's end, and stays there (1 s of joint states).
    from sensor_msgs.msg import JointState
    held = Series('/robot/joint_states', JointState)
    try:
        wait_for(lambda: np.abs(speeds(joints)).max() < 0.01, 5.0, 'the arm at rest')
        q_rest = angles(joints)
        t_rest = joints.get().header.stamp.to_sec()
        assert abs(q_rest[0] - target[0]) > 0.05
        held.wait_until(t_rest + 1.0)
        drift = max(np.abs(arm_positions(m) - q_rest).max() for m in held.between(t_rest, t_rest + 1.0))
    finally:
        held.unregister()
    assert drift < 1e-3, drift
