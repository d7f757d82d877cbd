"""The bad-input catalogue: named bad inputs through every topic, service and action the
robot serves, each sent once to one running robot. For every case:

  * every robot node is alive and answering, none restarted (same pids), and the realtime
    core process is alive;
  * the arm did not move (no joint strayed 1 mrad from where it was; a few cases that the
    robot saturates and applies instead say how far it may go, and why);
  * the rejection is clear: a /rosout line of the node that refused, naming the field and
    the value, or an error code and string in the result.

The table is CASES (group, name, send, expect[, options]); `send(c)` does the harm through
`c` (the Client below) and returns what came back, `expect` is a list of Log(node, regex)
and Result(predicate, words). Cases run in table order: a few leave the robot disabled or
stopped and their `after` puts it back.

The robot's log throttle (one line per kind of complaint every 2 s) would hide a second
case of the same kind within 2 s: this module boots the robot with INTERA_RT_LOG_EVERY=0
(every line logged). The throttle itself is tested under a flood in test_faults.py."""
import math
import os
import struct
import time
from collections import namedtuple

import numpy as np
import pytest

from contract import ARM, NEUTRAL, NS
from robot_watch import (IK_NODE, JTAS_NODE, ArmWatch, FakePublisher, NodeWatch, Rosout, closed_by_peer, connect,
                         read_header, service_port, tcpros_header, topic_port)

os.environ['INTERA_RT_LOG_EVERY'] = '0'        # inherited by the robot this module boots
SAWYER_ARGS = ['--sim-time', '--speed', '1']

SIM = '/intera_rt/sim/'
KIN = '/ExternalTools/right/PositionKinematicsNode/'
Q = NEUTRAL                     # the boot pose
NAN, INF = math.nan, math.inf
POSITION, VELOCITY, TORQUE, TRAJECTORY = 1, 2, 3, 4
STILL = 1e-3          # rad: "did not move"
SETTLE = 0.2          # s (wall, sim time at 1x) watched after the rejection for motion
RT, MC, IO = ('/realtime_loop', '/motion_controller', '/io')
KINEMATICS, JTAS = IK_NODE, JTAS_NODE

Log = namedtuple('Log', 'node pattern')
Result = namedtuple('Result', 'check words')
Case = namedtuple('Case', 'group name send expect options')


def case(group, name, send, *expect, **options):
    return Case(group, name, send, list(expect), options)


# --- the client the cases misuse the robot through ----------------------------------------
class Client:
    def __init__(self, robot):
        import actionlib
        import rospy
        from control_msgs.msg import FollowJointTrajectoryAction
        from intera_motion_msgs.msg import MotionCommandAction
        self.robot = robot
        self._pubs = {}
        self._srvs = {}
        self.jtas = actionlib.SimpleActionClient(NS + 'follow_joint_trajectory', FollowJointTrajectoryAction)
        self.mc = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        assert self.jtas.wait_for_server(rospy.Duration(30.0)), 'no JTAS'
        assert self.mc.wait_for_server(rospy.Duration(30.0)), 'no motion controller'

    # topics -------------------------------------------------------------------------------
    def publish(self, topic, msg, node=RT):
        """Publish once, on a synchronous publisher connected to `node`."""
        import warnings

        import rospy
        from rosharness import wait_connected
        pub = self._pubs.get(topic)
        if pub is None:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', SyntaxWarning)
                pub = rospy.Publisher(topic, type(msg), queue_size=None)
            wait_connected(pub, node)
            self._pubs[topic] = pub
        pub.publish(msg)

    def jc(self, mode, names, position=(), velocity=(), acceleration=(), effort=()):
        from intera_core_msgs.msg import JointCommand
        self.publish(NS + 'joint_command', JointCommand(
            mode=mode, names=list(names), position=list(position), velocity=list(velocity),
            acceleration=list(acceleration), effort=list(effort)))

    def f64(self, topic, value):
        from std_msgs.msg import Float64
        self.publish(NS + topic, Float64(value))

    def enable(self, on):
        from std_msgs.msg import Bool
        self.publish('/robot/set_super_enable', Bool(on))

    def empty(self, topic):
        from std_msgs.msg import Empty
        self.publish(topic, Empty())

    def head(self, target, speed, mode=3):
        from intera_core_msgs.msg import HeadPanCommand
        self.publish('/robot/head/command_head_pan', HeadPanCommand(target, speed, mode))

    def io(self, topic, op, args, node=IO):
        import rospy
        from intera_core_msgs.msg import IOComponentCommand
        self.publish(topic, IOComponentCommand(time=rospy.Time.now(), op=op, args=args), node=node)

    # services and actions -------------------------------------------------------------------
    def call(self, name, srv_type, *args):
        import rospy
        proxy = self._srvs.get(name)
        if proxy is None:
            rospy.wait_for_service(name, 10.0)
            proxy = self._srvs[name] = rospy.ServiceProxy(name, srv_type)
        return proxy(*args)

    def sim(self, name, *args):
        from intera_rt_msgs import srv
        from std_srvs.srv import SetBool
        types = {'apply_wrench': srv.ApplyWrench, 'set_joint_positions': srv.SetJointPositions,
                 'add_obstacle': srv.AddObstacle, 'remove_obstacle': srv.RemoveObstacle,
                 'button': srv.PressButton, 'wheel': srv.TurnWheel,
                 'estop_button': SetBool, 'error': SetBool, 'cuff': SetBool}
        return self.call(SIM + name, types[name], *args)

    def ik(self, pose=None, frame='base', tip='right_hand', seed=None, seed_mode=0,
           ns_goal=None, ns_gain=None):
        from geometry_msgs.msg import PoseStamped
        from intera_core_msgs.srv import SolvePositionIK, SolvePositionIKRequest
        from sensor_msgs.msg import JointState
        req = SolvePositionIKRequest(seed_mode=seed_mode, tip_names=[tip])
        ps = PoseStamped()
        ps.header.frame_id = frame
        (ps.pose.position.x, ps.pose.position.y, ps.pose.position.z), quat = pose or REACHABLE
        (ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z,
         ps.pose.orientation.w) = quat
        req.pose_stamp = [ps]
        if seed is not None:
            req.seed_angles = [JointState(name=seed[0], position=seed[1])]
        if ns_goal is not None:
            req.use_nullspace_goal = [True]
            req.nullspace_goal = [JointState(name=ns_goal[0], position=ns_goal[1])]
            req.nullspace_gain = [ns_gain if ns_gain is not None else 0.4]
        return self.call(KIN + 'IKService', SolvePositionIK, req)

    def fk(self, names, positions, tip='right_hand'):
        from intera_core_msgs.srv import SolvePositionFK, SolvePositionFKRequest
        from sensor_msgs.msg import JointState
        req = SolvePositionFKRequest(configuration=[JointState(name=list(names), position=list(positions))],
                                     tip_names=[tip])
        return self.call(KIN + 'FKService', SolvePositionFK, req)

    def action(self, client, goal, timeout=30.0):
        import rospy
        client.send_goal(goal)
        assert client.wait_for_result(rospy.Duration(timeout)), 'no result within %.0f s' % timeout
        return client.get_state(), client.get_result()

    def trajectory(self, points, names=ARM, **fields):
        """FollowJointTrajectory: points = [(t, positions, velocities?)]."""
        import rospy
        from control_msgs.msg import FollowJointTrajectoryGoal
        from trajectory_msgs.msg import JointTrajectoryPoint
        goal = FollowJointTrajectoryGoal()
        goal.trajectory.joint_names = list(names)
        for p in points:
            t, pos = p[0], p[1]
            goal.trajectory.points.append(JointTrajectoryPoint(
                positions=list(pos), velocities=list(p[2]) if len(p) > 2 else [],
                time_from_start=rospy.Duration(t)))
        for k, v in fields.items():
            setattr(goal.trajectory, k, v)
        return self.action(self.jtas, goal)

    def motion(self, waypoints, interpolation='JOINT', command='start', joint_names=ARM):
        from intera_motion_msgs.msg import MotionCommandGoal
        g = MotionCommandGoal(command=command)
        g.trajectory.label = 'catalogue'
        g.trajectory.joint_names = list(joint_names)
        g.trajectory.trajectory_options.interpolation_type = interpolation
        g.trajectory.waypoints = list(waypoints)
        return self.action(self.mc, g)


def waypoint(q=None, pose=None, endpoint='right_hand', ratio=0.5, accel=None, **options):
    from intera_motion_msgs.msg import Waypoint
    w = Waypoint(active_endpoint=endpoint)
    if q is not None:
        w.joint_positions = list(q)
    if pose is not None:
        (w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z), quat = pose
        o = w.pose.pose.orientation
        o.x, o.y, o.z, o.w = quat
    w.options.max_joint_speed_ratio = ratio
    if accel is not None:
        w.options.max_joint_accel = list(accel)
    for k, v in options.items():
        setattr(w.options, k, v)
    return w


def neutral_then(q):
    """go_to_joint_angles: waypoint 0 = where the arm is (neutral), then q."""
    return [waypoint(Q), waypoint(q)]


def moved(j, delta):
    q = Q.copy()
    q[j] += delta
    return q


# right_hand at neutral (contract §9.1), for reachable and unreachable IK poses.
REACHABLE = ((0.4496, 0.1603, 0.2158), (0.7071068, 0.7071068, 0.0, 0.0))


def rejected(words=''):
    """An action result check: REJECTED or ABORTED, not succeeded."""
    return lambda r: r[0] in (4, 5)


def jtas_code(code):
    return lambda r: r[0] in (4, 5) and r[1].error_code == code


def mc_error(error_id):
    return lambda r: r[0] in (4, 5) and r[1].result is False and r[1].errorId == error_id


def ik_result(code):
    return lambda r: list(r.result_type) == [code]


def fk_invalid(r):
    return list(r.isValid) == [False]


def failed(r):
    return r.success is False


# --- raw connections --------------------------------------------------------------------
def fake_publisher(topic, msg_type, md5, payload):
    """Register a publisher declaring msg_type/md5 on topic, wait until the robot's
    subscriber has dealt with it (closed it), return whether it did."""
    fake = FakePublisher(topic, msg_type, md5, payload)
    try:
        deadline = time.monotonic() + 10.0
        while not fake.connections or fake.connections[0]['refused'] is None:
            assert time.monotonic() < deadline, 'the robot never connected to the fake publisher'
            time.sleep(0.02)
        return fake.connections[0]['refused']
    finally:
        fake.close()


def garbage_to_topic_port(data, close_after=True):
    sock = connect(topic_port(RT, '/robot/state'))
    sock.sendall(data)
    if close_after:
        sock.shutdown(1)
    closed = closed_by_peer(sock, 5.0)
    sock.close()
    return closed


def garbage_service_request(service, srv_type, body):
    """A correct handshake, then `body` as the request: (first reply byte, error text,
    connection closed)."""
    sock = connect(service_port(service))
    sock.sendall(tcpros_header({'callerid': '/catalogue', 'service': service,
                                'md5sum': srv_type._md5sum, 'persistent': '0'}))
    header = read_header(sock)
    assert 'error' not in header, header
    sock.sendall(struct.pack('<I', len(body)) + body)
    sock.settimeout(5.0)
    reply = b''
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    except OSError:
        pass
    sock.close()
    ok = reply[0] if reply else None
    text = reply[5:].decode('utf-8', 'replace') if len(reply) > 5 else ''
    return ok, text


def wrong_md5_service_call(service):
    sock = connect(service_port(service))
    sock.sendall(tcpros_header({'callerid': '/catalogue', 'service': service,
                                'md5sum': '0123456789abcdef0123456789abcdef', 'persistent': '0'}))
    header = read_header(sock)
    sock.close()
    return header


def _ok_byte_error(r):
    return r[0] == 0 and 'malformed request' in r[1]


# --- clean-ups ----------------------------------------------------------------------------
def re_enable(c):
    """Stopped, in error or disabled → enabled (what enable_robot.py -e does)."""
    from rosharness import wait_for
    c.sim('estop_button', False)
    c.sim('error', False)
    if not _state_is(c, stopped=False, error=False):
        wait_for(lambda: c.empty('/robot/set_super_reset') or _state_is(c, stopped=False, error=False),
                 10.0, 'the robot reset', interval=0.1)
    wait_for(lambda: c.enable(True) or _state_is(c, enabled=True), 10.0, 'the robot enabled again',
             interval=0.1)


def _state_is(c, **fields):
    from intera_core_msgs.msg import RobotAssemblyState
    from rosharness import wait_for_message
    s = wait_for_message('/robot/state', RobotAssemblyState)
    return all(getattr(s, k) == v for k, v in fields.items())


def restore_ratio(c):
    """Back to 0.3 once the robot has left POSITION_MODE (its command timeout): a target
    kept at ratio 0 must not move the arm when the ratio comes back."""
    from intera_rt_msgs.msg import RealtimeState
    from rosharness import latest
    with latest('/intera_rt/realtime_state', RealtimeState) as rts:
        rts.wait(10.0, lambda m: m.controller == 'hold', 'the arm holding')
    c.f64('set_speed_ratio', 0.3)


def back_to_neutral(c):
    from rosharness import wait_for
    assert c.sim('set_joint_positions', ARM, list(Q)).success
    wait_for(lambda: np.abs(c.arm.fresh() - Q).max() < 1e-4, 10.0, 'the arm back at neutral')


def head_home(c):
    c.head(0.0, 1.0, 1)


# --- the catalogue ------------------------------------------------------------------------
def _ratio_then_position(c, ratio):
    """The ratio, then (once the robot has it: two topics, two connections) a position
    command that would move right_j0 by 0.3 rad."""
    mark = c.rosout.mark()
    c.f64('set_speed_ratio', ratio)
    c.rosout.wait('set_speed_ratio is 0', mark, RT)
    c.jc(POSITION, ['right_j0'], position=[Q[0] + 0.3])


def _disabled_then(c, send):
    c.enable(False)
    from rosharness import wait_for
    wait_for(lambda: _state_is(c, enabled=False), 10.0, 'the robot disabled')
    send(c)


def _stopped_then_enable(c):
    c.empty('/robot/set_super_stop')
    from rosharness import wait_for
    wait_for(lambda: _state_is(c, stopped=True), 10.0, 'the robot stopped')
    c.enable(True)


def _estop_then_reset(c):
    c.sim('estop_button', True)
    from rosharness import wait_for
    wait_for(lambda: _state_is(c, stopped=True), 10.0, 'the robot stopped')
    c.empty('/robot/set_super_reset')


def _interaction(c, **fields):
    from intera_core_msgs.msg import InteractionControlCommand
    from geometry_msgs.msg import Pose
    msg = InteractionControlCommand(interaction_control_active=True, K_impedance=[1300.0] * 3 + [30.0] * 3,
                                    max_impedance=[True] * 6, K_nullspace=[4.0] * 7,
                                    force_command=[0.0] * 6, interaction_control_mode=[1] * 6,
                                    endpoint_name='right_hand')
    msg.interaction_frame = Pose()
    msg.interaction_frame.orientation.w = 1.0
    for k, v in fields.items():
        if k == 'quat':
            o = msg.interaction_frame.orientation
            o.x, o.y, o.z, o.w = v
        else:
            setattr(msg, k, v)
    c.publish(NS + 'interaction_control_command', msg)


def _wrench(c, link, force, duration):
    from geometry_msgs.msg import Wrench
    w = Wrench()
    w.force.x, w.force.y, w.force.z = force
    return c.sim('apply_wrench', link, w, duration)


def _obstacle(c, name, shape, position, quat, size):
    from geometry_msgs.msg import Pose
    p = Pose()
    p.position.x, p.position.y, p.position.z = position
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = quat
    return c.sim('add_obstacle', name, shape, p, list(size))


def _srv_types():
    from intera_core_msgs.srv import SolvePositionFK, SolvePositionIK
    from intera_rt_msgs.srv import SetJointPositions
    return SolvePositionIK, SolvePositionFK, SetJointPositions


J = 'joint_command rejected: '
CASES = [
    # --- /robot/limb/right/joint_command -------------------------------------------------
    case('joint_command', 'mode 0', lambda c: c.jc(0, ARM, position=moved(0, 0.3)),
         Log(RT, J + r'unknown mode 0 ')),
    case('joint_command', 'mode 7', lambda c: c.jc(7, ARM, position=moved(0, 0.3)),
         Log(RT, J + r'unknown mode 7 ')),
    case('joint_command', 'mode -1', lambda c: c.jc(-1, ARM, position=moved(0, 0.3)),
         Log(RT, J + r'unknown mode -1 ')),
    case('joint_command', 'no names', lambda c: c.jc(POSITION, [], position=[0.3]),
         Log(RT, J + 'names is empty')),
    case('joint_command', 'unknown joint', lambda c: c.jc(POSITION, ['right_j0', 'right_j9'], position=[0.3, 0]),
         Log(RT, J + "unknown joint name 'right_j9'")),
    case('joint_command', 'empty joint name', lambda c: c.jc(POSITION, ['right_j0', ''], position=[0.3, 0]),
         Log(RT, J + "unknown joint name ''")),
    case('joint_command', 'head_pan in an arm command',
         lambda c: c.jc(POSITION, ['right_j0', 'head_pan'], position=[0.3, 0]),
         Log(RT, J + "unknown joint name 'head_pan'")),
    case('joint_command', 'duplicate joint', lambda c: c.jc(POSITION, ['right_j0', 'right_j0'], position=[0.3, 0.3]),
         Log(RT, J + "joint 'right_j0' named twice")),
    case('joint_command', 'fewer positions than names',
         lambda c: c.jc(POSITION, ['right_j0', 'right_j1'], position=[0.3]),
         Log(RT, J + 'position has 1 values for 2 names')),
    case('joint_command', 'more positions than names',
         lambda c: c.jc(POSITION, ['right_j0'], position=[0.3, Q[1]]),
         Log(RT, J + 'position has 2 values for 1 names')),
    case('joint_command', 'velocity mode without velocities',
         lambda c: c.jc(VELOCITY, ['right_j0'], position=[0.3]),
         Log(RT, J + 'velocity has 0 values for 1 names')),
    case('joint_command', 'more efforts than names',
         lambda c: c.jc(TORQUE, ['right_j0'], effort=[5.0, 5.0]),
         Log(RT, J + 'effort has 2 values for 1 names')),
    case('joint_command', 'trajectory velocities of another length',
         lambda c: c.jc(TRAJECTORY, ['right_j0', 'right_j1'], position=[0.3, Q[1]], velocity=[0.1, 0, 0]),
         Log(RT, J + 'velocity has 3 values for 2 names')),
    case('joint_command', 'NaN position', lambda c: c.jc(POSITION, ['right_j0', 'right_j1'], position=[0.3, NAN]),
         Log(RT, J + r'position\[1\] for right_j1 is nan')),
    case('joint_command', 'Inf position', lambda c: c.jc(POSITION, ['right_j0'], position=[INF]),
         Log(RT, J + r'position\[0\] for right_j0 is inf')),
    case('joint_command', '-Inf velocity', lambda c: c.jc(VELOCITY, ['right_j0', 'right_j1'], velocity=[0.5, -INF]),
         Log(RT, J + r'velocity\[1\] for right_j1 is -inf')),
    case('joint_command', 'NaN effort', lambda c: c.jc(TORQUE, ['right_j1', 'right_j0'], effort=[0.0, NAN]),
         Log(RT, J + r'effort\[1\] for right_j0 is nan')),
    case('joint_command', 'NaN acceleration',
         lambda c: c.jc(TRAJECTORY, ['right_j0'], position=[0.3], velocity=[0.5], acceleration=[NAN]),
         Log(RT, J + r'acceleration\[0\] for right_j0 is nan')),
    case('joint_command', 'position beyond its limit',
         lambda c: c.jc(POSITION, ['right_j0', 'right_j1'], position=[0.3, 3.0]),
         Log(RT, J + r'position 3\.0000 for right_j1 is outside its limits')),
    case('joint_command', 'huge position', lambda c: c.jc(POSITION, ['right_j0'], position=[1e308]),
         Log(RT, J + r'position 1e\+308 for right_j0 is outside its limits')),
    case('joint_command', 'trajectory position beyond its limit',
         lambda c: c.jc(TRAJECTORY, ['right_j0'], position=[-3.2], velocity=[0.0], acceleration=[0.0]),
         Log(RT, J + r'position -3\.2000 for right_j0 is outside its limits')),
    case('joint_command', 'velocity that would carry a joint past its limit',
         lambda c: c.jc(VELOCITY, ['right_j6'], velocity=[4.5]),
         Log(RT, J + r'velocity 4\.500 would carry right_j6 past its limit')),
    # The robot saturates these and applies them, as the real one does: the arm moves,
    # bounded (velocity: for the 0.2 s command timeout at the limit; torque: the joint-speed
    # monitor brakes it at 1.5 x its velocity limit), and says so.
    case('joint_command', 'huge velocity (saturated, for one timeout)',
         lambda c: c.jc(VELOCITY, ['right_j0'], velocity=[1e6]),
         Log(RT, r'joint_command: velocity 1000000\.000 for right_j0 saturated at 1\.740'),
         moves=0.6, after=back_to_neutral),
    case('joint_command', 'huge torque (saturated, braked by the speed monitor)',
         lambda c: c.jc(TORQUE, ['right_j0'], effort=[1e6]),
         Log(RT, r'joint_command: effort .*right_j0 saturated|right_j0 moving at .* braking'),
         Log(RT, r'right_j0 moving at .*braking'),
         moves=0.6, after=back_to_neutral),

    # --- joint_command_timeout, set_speed_ratio ---------------------------------------------
    case('timeout', 'NaN', lambda c: c.f64('joint_command_timeout', NAN),
         Log(RT, 'joint_command_timeout must be a finite number > 0, got nan')),
    case('timeout', 'negative', lambda c: c.f64('joint_command_timeout', -1.0),
         Log(RT, r'joint_command_timeout must be a finite number > 0, got -1\.0')),
    case('timeout', 'zero', lambda c: c.f64('joint_command_timeout', 0.0),
         Log(RT, r'joint_command_timeout must be a finite number > 0, got 0\.0')),
    case('timeout', 'Inf', lambda c: c.f64('joint_command_timeout', INF),
         Log(RT, 'joint_command_timeout must be a finite number > 0, got inf')),
    case('timeout', 'huge (clamped to 1 s)', lambda c: c.f64('joint_command_timeout', 1e9),
         Log(RT, r'joint_command_timeout 1000000000\.0 clamped to 1\.0 s'),
         after=lambda c: c.f64('joint_command_timeout', 0.2)),
    case('speed_ratio', 'NaN', lambda c: c.f64('set_speed_ratio', NAN),
         Log(RT, 'set_speed_ratio must be finite, got nan')),
    case('speed_ratio', 'Inf', lambda c: c.f64('set_speed_ratio', INF),
         Log(RT, 'set_speed_ratio must be finite, got inf')),
    case('speed_ratio', 'above 1 (clipped)', lambda c: c.f64('set_speed_ratio', 5.0),
         Log(RT, r'set_speed_ratio 5\.0 clipped to 1\.0'), after=restore_ratio),
    case('speed_ratio', 'negative, then a position command', lambda c: _ratio_then_position(c, -0.5),
         Log(RT, r'set_speed_ratio -0\.5 clipped to 0\.0'),
         Log(RT, 'set_speed_ratio is 0: POSITION_MODE moves will not progress'),
         Log(RT, 'set_speed_ratio is 0: POSITION_MODE targets are kept but the arm does not move'),
         after=restore_ratio),
    case('speed_ratio', 'zero, then a position command', lambda c: _ratio_then_position(c, 0.0),
         Log(RT, 'set_speed_ratio is 0: POSITION_MODE moves will not progress'),
         Log(RT, 'set_speed_ratio is 0: POSITION_MODE targets are kept but the arm does not move'),
         after=restore_ratio),

    # --- the robot's state machine ---------------------------------------------------------
    case('state', 'reset while not stopped', lambda c: c.empty('/robot/set_super_reset'),
         Log(RT, 'set_super_reset ignored: the robot is neither stopped nor in error')),
    case('state', 'joint command while disabled',
         lambda c: _disabled_then(c, lambda c: c.jc(POSITION, ['right_j0'], position=[0.3])),
         Log(RT, 'joint_command ignored: the robot is disabled'), after=re_enable),
    case('state', 'head command while disabled',
         lambda c: _disabled_then(c, lambda c: c.head(-1.0, 0.5)),
         Log(RT, 'command_head_pan ignored: the robot is disabled'), after=re_enable),
    case('state', 'enable while stopped', _stopped_then_enable,
         Log(RT, 'set_super_enable: enable refused: the robot is stopped; reset first'), after=re_enable),
    case('state', 'reset while the E-stop is pressed', _estop_then_reset,
         Log(RT, 'set_super_reset: reset refused: the E-stop button is pressed'), after=re_enable),

    # --- head -------------------------------------------------------------------------------
    case('head', 'NaN target', lambda c: c.head(NAN, 0.5),
         Log(RT, 'command_head_pan rejected: target nan is not finite')),
    case('head', 'NaN speed ratio', lambda c: c.head(-1.0, NAN),
         Log(RT, 'command_head_pan rejected: speed_ratio nan is not finite')),
    case('head', 'negative speed ratio', lambda c: c.head(-1.0, -0.5),
         Log(RT, r'command_head_pan rejected: speed_ratio -0\.5: the head would never reach')),
    case('head', 'zero speed ratio', lambda c: c.head(-1.0, 0.0),
         Log(RT, r'command_head_pan rejected: speed_ratio 0\.0: the head would never reach')),
    case('head', 'unknown pan_mode', lambda c: c.head(-1.0, 0.5, 7),
         Log(RT, 'command_head_pan rejected: pan_mode 7 is not one of')),
    case('head', 'target beyond its limit (clipped)', lambda c: c.head(10.0, 1.0),
         Log(RT, r"command_head_pan: target 10\.0000 clipped to head_pan's limit 0\.9064"),
         after=head_home),
    case('head', 'speed ratio above 1 (clipped)', lambda c: c.head(0.0, 5.0),
         Log(RT, r'command_head_pan: speed_ratio 5\.0 clipped to 1\.0')),

    # --- interaction_control_command -----------------------------------------------------------
    case('interaction', 'K_impedance of 5 values', lambda c: _interaction(c, K_impedance=[100.0] * 5),
         Log(RT, 'interaction_control_command rejected: K_impedance has 5 values, expected 6')),
    case('interaction', 'NaN stiffness', lambda c: _interaction(c, K_impedance=[100.0] * 5 + [NAN]),
         Log(RT, r'interaction_control_command rejected: K_impedance\[5\] is nan')),
    case('interaction', 'negative nullspace stiffness', lambda c: _interaction(c, K_nullspace=[-1.0] * 7),
         Log(RT, r'interaction_control_command rejected: K_nullspace\[0\] = -1 must be >= 0')),
    case('interaction', 'unknown control mode', lambda c: _interaction(c, interaction_control_mode=[1] * 5 + [9]),
         Log(RT, r'interaction_control_command rejected: interaction_control_mode\[5\] = 9 is not one of')),
    case('interaction', 'non-unit quaternion frame', lambda c: _interaction(c, quat=(0, 0, 0, 2)),
         Log(RT, r'interaction_control_command rejected: interaction_frame.orientation .* is not a unit quaternion')),

    # --- IK -------------------------------------------------------------------------------------
    case('ik', 'unreachable pose', lambda c: c.ik(((3.0, 0.0, 0.5), REACHABLE[1])),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'pose_stamp\[0\]')),
    case('ik', 'NaN position', lambda c: c.ik(((NAN, 0.1, 0.2), REACHABLE[1])),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'pose_stamp\[0\]\.pose\.position: .*nan')),
    case('ik', 'zero quaternion', lambda c: c.ik((REACHABLE[0], (0, 0, 0, 0))),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'orientation: .* has norm 0')),
    case('ik', 'non-unit quaternion', lambda c: c.ik((REACHABLE[0], (2, 0, 0, 0))),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'orientation: .* has norm 2')),
    case('ik', 'unknown tip', lambda c: c.ik(tip='right_nose'),
         Result(ik_result(-3), 'IK_ENDPOINT_DOES_NOT_EXIST'), Log(KINEMATICS, "right_nose")),
    case('ik', 'unknown frame', lambda c: c.ik(frame='moon'),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, "no transform from 'moon' to base")),
    case('ik', 'seed with more positions than names',
         lambda c: c.ik(seed=(ARM[:6], list(Q)), seed_mode=1),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'seed_angles\[0\]: 6 names but 7 positions')),
    case('ik', 'NaN seed', lambda c: c.ik(seed=(ARM, [NAN] + list(Q[1:])), seed_mode=1),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'seed_angles\[0\]: right_j0 = nan is not finite')),
    case('ik', 'seed naming an unknown joint', lambda c: c.ik(seed=(['right_j9'], [0.0]), seed_mode=1),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r"seed_angles\[0\]: unknown joint name 'right_j9'")),
    case('ik', 'negative nullspace gain', lambda c: c.ik(ns_goal=(['right_j1'], [0.0]), ns_gain=-1.0),
         Result(ik_result(-1), 'IK_FAILED'), Log(KINEMATICS, r'nullspace_gain\[0\]: -1\.0')),

    # --- FK -------------------------------------------------------------------------------------
    case('fk', 'unknown joint names', lambda c: c.fk(['j%d' % i for i in range(7)], list(Q)),
         Result(fk_invalid, 'isValid False'), Log(KINEMATICS, r"configuration\[0\]: unknown joint name 'j0'")),
    case('fk', 'NaN angle', lambda c: c.fk(ARM, [NAN] + list(Q[1:])),
         Result(fk_invalid, 'isValid False'), Log(KINEMATICS, r'configuration\[0\]: right_j0 = nan is not finite')),
    case('fk', 'fewer positions than names', lambda c: c.fk(ARM, list(Q[:6])),
         Result(fk_invalid, 'isValid False'), Log(KINEMATICS, r'configuration\[0\]: 7 names but 6 positions')),
    case('fk', 'unknown tip', lambda c: c.fk(ARM, list(Q), tip='right_nose'),
         Result(fk_invalid, 'isValid False'), Log(KINEMATICS, 'right_nose')),

    # --- FollowJointTrajectory -------------------------------------------------------------------
    case('jtas', 'unknown joint', lambda c: c.trajectory([(1.0, Q)], ARM[:6] + ['right_w2']),
         Result(jtas_code(-2), "INVALID_JOINTS naming 'right_w2'")),
    case('jtas', 'duplicate joint', lambda c: c.trajectory([(1.0, Q)], ARM[:6] + ['right_j0']),
         Result(jtas_code(-2), 'INVALID_JOINTS')),
    case('jtas', 'no points', lambda c: c.trajectory([]), Result(jtas_code(-1), 'points is empty')),
    case('jtas', 'positions shorter than joint_names', lambda c: c.trajectory([(1.0, Q[:6])]),
         Result(jtas_code(-1), 'INVALID_GOAL')),
    case('jtas', 'times not increasing', lambda c: c.trajectory([(1.0, Q), (0.5, Q)]),
         Result(jtas_code(-1), 'strictly increase')),
    case('jtas', 'duplicate times', lambda c: c.trajectory([(1.0, Q), (1.0, Q)]),
         Result(jtas_code(-1), 'strictly increase')),
    case('jtas', 'NaN position', lambda c: c.trajectory([(1.0, [NAN] + list(Q[1:]))]),
         Result(jtas_code(-1), 'INVALID_GOAL')),
    case('jtas', 'beyond a limit', lambda c: c.trajectory([(1.0, moved(1, 5.0))]),
         Result(jtas_code(-1), 'outside its limits')),
    case('jtas', 'first point far from the arm', lambda c: c.trajectory([(0.0, moved(3, 0.5)), (2.0, moved(3, 0.5))]),
         Result(jtas_code(-1), 'rad from the current position')),
    case('jtas', 'impossible velocity', lambda c: c.trajectory([(0.0, Q), (0.01, moved(0, 1.0))]),
         Result(jtas_code(-1), 'velocity limit')),
    case('jtas', 'velocities of another length', lambda c: c.trajectory([(1.0, Q, [0.0] * 3)]),
         Result(jtas_code(-1), 'INVALID_GOAL')),

    # --- MotionCommand ------------------------------------------------------------------------------
    case('motion', 'no waypoints', lambda c: c.motion([]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'waypoints is empty')),
    case('motion', 'joint_positions of 6 values', lambda c: c.motion([waypoint(Q), waypoint(Q[:6])]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'joint_positions has 6 values')),
    case('motion', 'NaN pose', lambda c: c.motion([waypoint(Q, pose=((NAN, 0.1, 0.2), REACHABLE[1]))], 'CARTESIAN'),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'not finite')),
    case('motion', 'zero quaternion pose', lambda c: c.motion([waypoint(Q, pose=(REACHABLE[0], (0, 0, 0, 0)))], 'CARTESIAN'),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'unit quaternion')),
    case('motion', 'unreachable pose', lambda c: c.motion([waypoint(Q, pose=((3.0, 0.0, 0.5), REACHABLE[1]))], 'CARTESIAN'),
         Result(lambda r: r[0] in (4, 5) and r[1].result is False and r[1].errorId != '', 'an errorId')),
    case('motion', 'unknown command', lambda c: c.motion([waypoint(Q)], command='jump'),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'REJECTED'), Log(MC, "command 'jump'")),
    case('motion', 'unknown interpolation', lambda c: c.motion(neutral_then(moved(0, 0.3)), 'SPLINE'),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'interpolation_type')),
    case('motion', 'speed ratio above 1', lambda c: c.motion([waypoint(Q), waypoint(moved(0, 0.3), ratio=2.0)]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'max_joint_speed_ratio')),
    case('motion', 'negative speed ratio', lambda c: c.motion([waypoint(Q), waypoint(moved(0, 0.3), ratio=-0.5)]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'max_joint_speed_ratio')),
    case('motion', 'NaN speed ratio', lambda c: c.motion([waypoint(Q), waypoint(moved(0, 0.3), ratio=NAN)]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'max_joint_speed_ratio')),
    case('motion', 'acceleration of 3 values',
         lambda c: c.motion([waypoint(Q), waypoint(moved(0, 0.3), accel=[1.0, 1.0, 1.0])]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'max_joint_accel')),
    case('motion', 'negative acceleration',
         lambda c: c.motion([waypoint(Q), waypoint(moved(0, 0.3), accel=[-1.0] * 7)]),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'max_joint_accel')),
    case('motion', 'unknown endpoint', lambda c: c.motion([waypoint(Q, endpoint='right_nose'), waypoint(moved(0, 0.3), endpoint='right_nose')]),
         Result(mc_error('ENDPOINT_DOES_NOT_EXIST'), 'right_nose')),
    case('motion', 'unknown joint name',
         lambda c: c.motion(neutral_then(moved(0, 0.3)), joint_names=ARM[:6] + ['right_j9']),
         Result(mc_error('INVALID_TRAJECTORY_MESSAGE'), 'right_j9')),
    case('motion', 'waypoint in self-collision',
         lambda c: c.motion(neutral_then(np.array([0.0, -1.18, 0.0, 2.9, 0.0, 2.9, 3.3161]))),
         Result(mc_error('PLANNED_MOTION_COLLISION'), 'PLANNED_MOTION_COLLISION')),

    # --- sim control ------------------------------------------------------------------------------
    case('sim', 'wrench on an unknown link', lambda c: _wrench(c, 'right_l9', (10, 0, 0), 0.1),
         Result(failed, "no link named 'right_l9'")),
    case('sim', 'NaN wrench', lambda c: _wrench(c, 'right_hand', (NAN, 0, 0), 0.1),
         Result(failed, 'finite')),
    case('sim', 'negative wrench duration', lambda c: _wrench(c, 'right_hand', (10, 0, 0), -1.0),
         Result(failed, 'duration')),
    case('sim', 'teleport an unknown joint', lambda c: c.sim('set_joint_positions', ['right_j9'], [0.0]),
         Result(failed, "unknown joint 'right_j9'")),
    case('sim', 'teleport beyond a limit', lambda c: c.sim('set_joint_positions', ['right_j1'], [3.0]),
         Result(failed, 'outside its limits')),
    case('sim', 'teleport with fewer positions', lambda c: c.sim('set_joint_positions', ARM, list(Q[:6])),
         Result(failed, '7 names but 6 positions')),
    case('sim', 'obstacle of an unknown shape', lambda c: _obstacle(c, 'x', 'cone', (1, 0, 0), (0, 0, 0, 1), (0.1,)),
         Result(failed, 'cone')),
    case('sim', 'obstacle of negative size', lambda c: _obstacle(c, 'x', 'box', (1, 0, 0), (0, 0, 0, 1), (0.1, -0.1, 0.1)),
         Result(failed, 'size')),
    case('sim', 'obstacle at NaN', lambda c: _obstacle(c, 'x', 'box', (NAN, 0, 0), (0, 0, 0, 1), (0.1, 0.1, 0.1)),
         Result(failed, 'finite')),
    case('sim', 'removing an unknown obstacle', lambda c: c.sim('remove_obstacle', 'nothing_here'),
         Result(failed, 'nothing_here')),
    case('sim', 'an unknown button', lambda c: c.sim('button', 'right_button_nose', 'click', 0.0),
         Result(failed, "no button 'right_button_nose'")),
    case('sim', 'an unknown button action', lambda c: c.sim('button', 'right_button_ok', 'smash', 0.0),
         Result(failed, 'smash')),
    case('sim', 'an unknown wheel', lambda c: c.sim('wheel', 'left_wheel', 1),
         Result(failed, "no wheel 'left_wheel'")),

    # --- IO devices ---------------------------------------------------------------------------------
    case('io', 'unknown op', lambda c: c.io('/io/robot/robot/command', 'frobnicate', '{}'),
         Log(IO, "/io/robot/robot/command refused: .*unknown op 'frobnicate'")),
    case('io', 'args not JSON', lambda c: c.io('/io/robot/robot/command', 'set', '{signals'),
         Log(IO, '/io/robot/robot/command refused: .*args are not JSON')),
    case('io', 'unknown signal',
         lambda c: c.io('/io/robot/robot/command', 'set', '{"signals": {"head_purple_light": {"format": {"type": "bool"}, "data": [true]}}}'),
         Log(IO, "/io/robot/robot/command refused: .*head_purple_light")),
    case('io', 'wrong value type',
         lambda c: c.io('/io/robot/robot/command', 'set', '{"signals": {"head_red_light": {"format": {"type": "bool"}, "data": ["on"]}}}'),
         Log(IO, '/io/robot/robot/command refused: .*head_red_light')),
    case('io', 'writing a read-only cuff button',
         lambda c: c.io('/io/robot/cuff/command', 'set', '{"signals": {"right_button_lower": {"format": {"type": "int"}, "data": [1]}}}'),
         Log(IO, '/io/robot/cuff/command refused: .*right_button_lower is a read-only')),
    case('io', 'camera streaming set to a string',
         lambda c: c.io('/io/internal_camera/head_camera/command', 'set', '{"signals": {"camera_streaming": {"format": {"type": "bool"}, "data": ["yes"]}}}'),
         Log(IO, '/io/internal_camera/head_camera/command refused: .*camera_streaming')),
    case('io', 'digital output that is an input',
         lambda c: c.publish('/robot/digital_io/command', _digital('right_button_ok'), node=IO),
         Log(IO, "/robot/digital_io/command: 'right_button_ok' is not a digital output")),

    # --- raw connections ---------------------------------------------------------------------------
    case('raw', 'a Float64 publisher on set_super_enable',
         lambda c: fake_publisher('/robot/set_super_enable', 'std_msgs/Float64',
                                  'fdb28210bfa9d7c91146260178d9a584', struct.pack('<d', 0.0)),
         Result(lambda refused: refused is True, 'the connection closed by the robot'),
         Log(RT, r'/robot/set_super_enable: refused publisher /fake_publisher.*std_msgs/Float64 \(md5 fdb28210'),
         still_enabled=True),
    case('raw', 'a publisher declaring a wrong md5 on joint_command',
         lambda c: fake_publisher(NS + 'joint_command', 'intera_core_msgs/JointCommand',
                                  '0123456789abcdef0123456789abcdef', b'\x00' * 64),
         Result(lambda refused: refused is True, 'the connection closed by the robot'),
         Log(RT, r'joint_command: refused publisher .*md5 0123456789abcdef0123456789abcdef')),
    case('raw', 'garbage bytes on a topic port',
         lambda c: garbage_to_topic_port(b'\x10\x00\x00\x00' + b'\xde\xad\xbe\xef' * 4),
         Result(lambda closed: closed is True, 'the connection closed by the robot'),
         Log(RT, 'Inbound TCP/IP connection failed')),
    case('raw', 'a header length of 2 GB, then hang up',
         lambda c: garbage_to_topic_port(b'\xff\xff\xff\x7f' + b'x' * 100),
         Result(lambda closed: closed is True, 'the connection closed by the robot'),
         Log(RT, 'Inbound TCP/IP connection failed')),
    case('raw', 'garbage request on the IK service',
         lambda c: garbage_service_request(KIN + 'IKService', _srv_types()[0], b'\xff' * 12),
         Result(_ok_byte_error, 'an error reply'),
         Log(KINEMATICS, r'IKService: malformed request from /catalogue \(intera_core_msgs/SolvePositionIK')),
    case('raw', 'garbage request on a sim service',
         lambda c: garbage_service_request(SIM + 'set_joint_positions', _srv_types()[2], b'\x05\x00\x00\x00ab'),
         Result(_ok_byte_error, 'an error reply'),
         Log(RT, r'set_joint_positions: malformed request from /catalogue')),
    # --- hostile robot descriptions, re-read by the nodes that re-read it ------------------------
    case('urdf', 'billion laughs, re-read by IK',
         lambda c: _hostile_description(c, _billion_laughs(), lambda c: c.ik(tip='right_nose')),
         Result(ik_result(-3), 'IK_ENDPOINT_DOES_NOT_EXIST'),
         Log(KINEMATICS, r'new /robot_description not usable, keeping the previous model: URDF '
                         r'declares a DOCTYPE')),
    case('urdf', 'nested 101 deep, re-read by FK',
         lambda c: _hostile_description(c, _deep(), lambda c: c.fk(ARM, list(Q), tip='right_nose')),
         Result(fk_invalid, 'isValid False'),
         Log(KINEMATICS, r'not usable, keeping the previous model: URDF nests elements 33 deep')),
    case('urdf', '5 MB, re-read by the motion controller',
         lambda c: _hostile_description(c, _oversized(), lambda c: c.motion(
             [waypoint(Q, endpoint='right_nose'), waypoint(moved(0, 0.3), endpoint='right_nose')])),
         Result(mc_error('ENDPOINT_DOES_NOT_EXIST'), 'right_nose'),
         Log(MC, r'cannot use the new /robot_description: URDF is \d+ bytes, more than the 4194304 allowed')),
    case('urdf', 'the model kept: IK still solves after the hostile ones', lambda c: c.ik(),
         Result(lambda r: r.result_type[0] > 0, 'a solution')),

    case('raw', 'a wrong md5 on the FK service',
         lambda c: wrong_md5_service_call(KIN + 'FKService'),
         Result(lambda h: 'md5sums do not match' in h.get('error', ''), 'an error header'),
         Log(KINEMATICS, 'md5sums do not match')),
]


def _hostile_description(c, text, call, refused=r'not usable|cannot use the new'):
    """/robot_description set to `text`, then `call(c)` (which makes a node re-read it)
    until a node says it refused it; the good description back. Returns the last answer."""
    import rospy
    good = rospy.get_param('/robot_description')
    mark = c.rosout.mark()
    rospy.set_param('/robot_description', text)
    try:
        deadline = time.monotonic() + 10.0
        while True:
            answer = call(c)
            if c.rosout.find(refused, mark) or time.monotonic() > deadline:
                return answer
            time.sleep(0.3)
    finally:
        rospy.set_param('/robot_description', good)


def _urdf():
    from pathlib import Path
    return (Path(__file__).resolve().parents[1] / 'urdf' / 'sawyer.urdf').read_text()


def _billion_laughs():
    decl = '<?xml version="1.0" encoding="utf-8"?>'
    dtd = '<!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">' + ''.join(
        '<!ENTITY %s "%s">' % (chr(98 + i), ('&%s;' % chr(97 + i)) * 10) for i in range(8)) + ']>'
    return _urdf().replace(decl, decl + dtd, 1).replace('name="sawyer"', 'name="&i;"', 1)


def _deep():
    return _urdf().replace('</robot>', '<x>' * 100 + '</x>' * 100 + '</robot>')


def _oversized():
    return _urdf().replace('</robot>', '<!--' + 'x' * (5 << 20) + '--></robot>')


def _digital(name):
    from intera_core_msgs.msg import DigitalOutputCommand
    return DigitalOutputCommand(name=name, value=True)


# --- running them -------------------------------------------------------------------------
@pytest.fixture(scope='module')
def world(robot):
    c = Client(robot)
    w = {'client': c, 'rosout': Rosout(), 'arm': ArmWatch(), 'nodes': NodeWatch()}
    c.arm, c.rosout = w['arm'], w['rosout']
    c.head(0.0, 1.0, 1)
    yield w
    w['rosout'].close()
    w['arm'].close()


def test_the_robot_listens_on_loopback_only(world):
    """Exposure: with neither ROS_IP nor ROS_HOSTNAME set otherwise, every listening socket
    of the robot's processes (its nodes, the realtime core, the master) is bound to the
    loopback address, and the master hands out loopback URIs."""
    from robot_watch import listening_addresses, master
    nodes = world['nodes']
    pids = dict(nodes.pids, realtime_core=nodes.core, master=master().getPid())
    exposed = {}
    for name, pid in pids.items():
        bad = [a for a in listening_addresses(pid) if a[0] not in ('127.0.0.1', '::1')]
        if bad:
            exposed[name] = bad
    assert not exposed, 'listening beyond loopback: %s' % exposed
    assert all(listening_addresses(pid) for name, pid in pids.items() if name != 'realtime_core')
    for name in nodes.pids:
        assert master().lookupNode(name).startswith('http://127.0.0.1:'), name


def test_the_catalogue_is_big_and_names_are_unique():
    names = ['%s/%s' % (k.group, k.name) for k in CASES]
    assert len(set(names)) == len(names)
    assert len(CASES) >= 60
    # every interface of the robot is in it
    assert {k.group for k in CASES} >= {'joint_command', 'timeout', 'speed_ratio', 'state', 'head',
                                        'interaction', 'ik', 'fk', 'jtas', 'motion', 'sim', 'io', 'raw',
                                        'urdf'}


@pytest.mark.parametrize('k', CASES, ids=['%s/%s' % (k.group, k.name) for k in CASES])
def test_bad_input(world, k):
    c, rosout, arm, nodes = world['client'], world['rosout'], world['arm'], world['nodes']
    mark = rosout.mark()
    arm.fresh()
    arm.reset()
    try:
        result = k.send(c)
        for e in k.expect:
            if isinstance(e, Result):
                assert e.check(result), 'no clear rejection (%s) in the result: %r' % (e.words, result)
            else:
                rosout.wait(e.pattern, mark, e.node)
        time.sleep(SETTLE)      # the observation window: a wrongly taken input would move the arm in it
        moved_by, joint = arm.excursion()
        limit = k.options.get('moves', STILL)
        assert moved_by < limit, 'the arm moved: %s by %.4f rad (allowed %.4f)' % (joint, moved_by, limit)
        if k.options.get('still_enabled'):
            assert _state_is(c, enabled=True), 'the robot was disabled'
        nodes.check('after %s/%s' % (k.group, k.name))
        assert arm.age() < 1.0, 'no /robot/joint_states for %.1f s' % arm.age()
    finally:
        if 'after' in k.options:
            k.options['after'](c)
