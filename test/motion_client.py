"""The motion controller as the SDK's MotionTrajectory drives it, shared by the motion test
modules: the `ros` fixture (an actionlib client on /motion/motion_command, the state series
and sim-control services), goals sent and awaited, teleports, the arm's angles and speeds."""
import math

import numpy as np
import pytest

from clients import goal, waypoint
from contract import ARM
from rosharness import latest, wait_for
from intera_rt import robot  # noqa: E402


NEUTRAL = list(robot.NEUTRAL)
BIAS = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]
COLLIDING = [0.0, 0.9, 0.0, 2.5, 0.0, 0.0, 0.0]     # the hand folded into the pedestal
AT_CONTROLLER_BOX = [2.46, 1.01, 1.76, 0.82, 0.4, -0.23, 1.78]   # right_l3/l4 in the controller box
RESULT_TIMEOUT = 60.0


# --- fixtures and helpers --------------------------------------------------------------------

@pytest.fixture(scope='module')
def ros(robot):
    import actionlib
    from intera_core_msgs.msg import EndpointState, EndpointStates, RobotAssemblyState
    from intera_motion_msgs.msg import MotionCommandAction
    from sensor_msgs.msg import JointState
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(__import__('rospy').Duration(30.0)), 'no /motion/motion_command server'
    stopper = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert stopper.wait_for_server(__import__('rospy').Duration(10.0))
    joints = latest('/robot/joint_states', JointState)
    endpoint = latest('/robot/limb/right/endpoint_state', EndpointState)
    tips = latest('/robot/limb/right/tip_states', EndpointStates)
    state = latest('/robot/state', RobotAssemblyState)
    for rec in (joints, endpoint, tips, state):
        rec.wait(10)
    return {'client': client, 'stopper': stopper, 'joints': joints, 'endpoint': endpoint, 'tips': tips,
            'state': state}


def angles(ros):
    msg = ros['joints'].get()
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def speeds(ros):
    msg = ros['joints'].get()
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


def teleport(ros, q=NEUTRAL):
    """Sim control: put the arm at q (a test set-up step, not a motion)."""
    import rospy
    from intera_rt_msgs.srv import SetJointPositions
    rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 10.0)
    resp = rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)(list(ARM), list(q))
    assert resp.success, resp.message
    wait_for(lambda: np.abs(angles(ros) - q).max() < 1e-3, 5.0, 'the arm at the set pose')


def joint_goal(ros, *targets, **kw):
    """go_to_joint_angles: waypoint 0 = the current angles, then the targets."""
    return goal([waypoint(angles(ros), **kw)] + [waypoint(t, **kw) for t in targets])


def send(ros, g, timeout=RESULT_TIMEOUT, client='client'):
    import rospy
    c = ros[client]
    c.send_goal(g)
    assert c.wait_for_result(rospy.Duration(timeout)), 'no result within %.0f s' % timeout
    return c.get_state(), c.get_result()


def pose_of(msg):
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def tip_pose(ros, tip):
    msg = ros['tips'].get()
    return pose_of(msg.states[msg.names.index(tip)])


def quat_angle(a, b):
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(a, b)))))


def wait_at_rest(ros, timeout=5.0, what='the arm at rest'):
    return wait_for(lambda: np.abs(speeds(ros)).max() < 0.01, timeout, what)


def assert_no_motion(ros, before, tol=2e-3, messages=30):
    """The arm stays within tol of `before` over the next `messages` joint states (~0.3 s)."""
    rec = ros['joints']
    start = rec.count
    worst = [np.abs(angles(ros) - before).max()]

    def watched():
        worst[0] = max(worst[0], np.abs(angles(ros) - before).max())
        return rec.count >= start + messages
    wait_for(watched, 5.0, '%d joint states' % messages)
    assert worst[0] < tol, worst[0]


SUCCEEDED, ABORTED, PREEMPTED, REJECTED = 3, 4, 2, 5
