"""The soak's client: a random user of every interface of one robot (motion controller and
JTAS motions, POSITION_MODE streams, IK/FK, head, speed ratio, IO lights, suppress topics)
and of its bad inputs (the reliability catalogue's kinds, garbage on a topic port and a
service port), and the E-stop and recovery. Each action returns None or what went
unexpectedly; motions are tracked until their result."""
import math
import socket
import struct
import threading
import time

import numpy as np

from intera_rt.bench import wait_for
from intera_rt.robot import NEUTRAL

ARM = ['right_j%d' % i for i in range(7)]
NS = '/robot/limb/right/'
SIM = '/intera_rt/sim/'
KIN = '/ExternalTools/right/PositionKinematicsNode/'
Q0 = np.array(NEUTRAL)


class Client:
    """Publishers, services and action clients; motions tracked until their result."""

    def __init__(self, rng):
        import actionlib
        import rospy
        from control_msgs.msg import FollowJointTrajectoryAction
        from intera_core_msgs.msg import RobotAssemblyState
        from intera_motion_msgs.msg import MotionCommandAction
        from sensor_msgs.msg import JointState
        self.rng = rng
        self._pubs, self._srvs = {}, {}
        self.mc = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        self.mc_stop = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
        self.jtas = actionlib.SimpleActionClient(NS + 'follow_joint_trajectory', FollowJointTrajectoryAction)
        for c in (self.mc, self.mc_stop, self.jtas):
            if not c.wait_for_server(rospy.Duration(60.0)):
                raise RuntimeError('no action server for %s' % c.action_client.ns)
        self.q = Q0.copy()
        self.state = None
        rospy.Subscriber('/robot/joint_states', JointState, self._on_js, queue_size=1)
        rospy.Subscriber('/robot/state', RobotAssemblyState, self._on_state, queue_size=1)
        self.sent = {'mc': 0, 'mc_stop': 0, 'jtas': 0}
        self.results = {'mc': 0, 'mc_stop': 0, 'jtas': 0}
        self.outcomes = {}                 # 'mc:CONTROLLER_NOT_FOLLOWING' → count
        self.active = {'mc': False, 'mc_stop': False, 'jtas': False}
        self._lock = threading.Lock()
        wait_for(lambda: self.state is not None, 30.0, '/robot/state')

    def _on_js(self, msg):
        self.q = np.array([msg.position[msg.name.index(n)] for n in ARM])

    def _on_state(self, msg):
        self.state = msg

    def publish(self, topic, msg):
        import warnings

        import rospy
        pub = self._pubs.get(topic)
        if pub is None:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', SyntaxWarning)
                pub = self._pubs[topic] = rospy.Publisher(topic, type(msg), queue_size=None)
            deadline = time.monotonic() + 5.0
            while pub.get_num_connections() == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        pub.publish(msg)

    def call(self, name, srv_type, *args):
        import rospy
        proxy = self._srvs.get(name)
        if proxy is None:
            rospy.wait_for_service(name, 20.0)
            proxy = self._srvs[name] = rospy.ServiceProxy(name, srv_type)
        return proxy(*args)

    def busy(self):
        return self.active['mc'] or self.active['jtas']

    def send_goal(self, which, goal):
        """Send on the client `which` unless it has a goal in flight (its result would be
        forgotten); the result is counted when it comes."""
        client = getattr(self, which)
        with self._lock:
            if self.active[which]:
                return False
            self.active[which] = True
            self.sent[which] += 1

        def done(state, result):
            if which == 'jtas':
                key = 'code %s' % getattr(result, 'error_code', None)
            else:
                key = 'ok' if getattr(result, 'result', False) else (getattr(result, 'errorId', '') or 'state %d' % state)
            with self._lock:
                self.results[which] += 1
                self.outcomes['%s: %s' % (which, key)] = self.outcomes.get('%s: %s' % (which, key), 0) + 1
                self.active[which] = False
        client.send_goal(goal, done_cb=done)
        return True

    def wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        while any(self.active.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not any(self.active.values())


# --- messages -------------------------------------------------------------------------------
def _jc(mode, names, position=(), velocity=(), effort=()):
    from intera_core_msgs.msg import JointCommand
    return JointCommand(mode=mode, names=list(names), position=list(position),
                        velocity=list(velocity), effort=list(effort))


def _mc_goal(waypoints, command='start', interpolation='JOINT'):
    from intera_motion_msgs.msg import MotionCommandGoal, Waypoint
    g = MotionCommandGoal(command=command)
    g.trajectory.label = 'soak'
    g.trajectory.joint_names = list(ARM)
    g.trajectory.trajectory_options.interpolation_type = interpolation
    for q, ratio in waypoints:
        w = Waypoint(active_endpoint='right_hand', joint_positions=list(q))
        w.options.max_joint_speed_ratio = ratio
        g.trajectory.waypoints.append(w)
    return g


def _jtas_goal(points):
    import rospy
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    for t, q in points:
        goal.trajectory.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration(t)))
    return goal


def _target(rng, spread=0.3):
    q = Q0.copy()
    for j in (0, 1, 2, 3, 5):
        q[j] += rng.uniform(-spread, spread)
    return q


def _fk_request(names, positions):
    from intera_core_msgs.srv import SolvePositionFKRequest
    from sensor_msgs.msg import JointState
    return SolvePositionFKRequest(configuration=[JointState(name=list(names), position=list(positions))],
                                  tip_names=['right_hand'])


def _ik_request(position, quat):
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.srv import SolvePositionIKRequest
    ps = PoseStamped()
    ps.header.frame_id = 'base'
    ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = position
    o = ps.pose.orientation
    o.x, o.y, o.z, o.w = quat
    return SolvePositionIKRequest(pose_stamp=[ps], tip_names=['right_hand'])


# --- actions ----------------------------------------------------------------------------------
def a_mc_motion(c):
    if c.busy():
        return 'skipped'
    c.send_goal('mc', _mc_goal([(c.q, 0.5), (_target(c.rng), c.rng.uniform(0.3, 1.0))]))


def a_mc_stop(c):
    c.send_goal('mc_stop', _mc_goal([], command='stop'))


def a_jtas_motion(c):
    if c.busy():
        return 'skipped'
    c.send_goal('jtas', _jtas_goal([(0.0, c.q), (c.rng.uniform(1.0, 2.0), _target(c.rng))]))


def a_position_stream(c):
    if c.busy():
        return 'skipped'
    target = _target(c.rng, 0.1)
    for _ in range(30):
        c.publish(NS + 'joint_command', _jc(1, ARM, position=target))
        time.sleep(0.01)


def a_fk(c):
    from intera_core_msgs.srv import SolvePositionFK
    r = c.call(KIN + 'FKService', SolvePositionFK, _fk_request(ARM, c.q))
    return None if list(r.isValid) == [True] else 'unexpected: FK invalid'


def a_ik(c):
    from intera_core_msgs.srv import SolvePositionIK
    r = c.call(KIN + 'IKService', SolvePositionIK, _ik_request((0.45, 0.16, 0.22), (0.7071068, 0.7071068, 0, 0)))
    return None if r.result_type[0] > 0 else 'unexpected: IK %d' % r.result_type[0]


def a_head(c):
    from intera_core_msgs.msg import HeadPanCommand
    c.publish('/robot/head/command_head_pan', HeadPanCommand(c.rng.uniform(-2.0, 0.9), c.rng.uniform(0.2, 1.0), 1))


def a_speed_ratio(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'set_speed_ratio', Float64(c.rng.uniform(0.2, 1.0)))


def a_light(c):
    import rospy
    from intera_core_msgs.msg import IOComponentCommand
    on = 'true' if c.rng.random() < 0.5 else 'false'
    c.publish('/io/robot/robot/command', IOComponentCommand(
        time=rospy.Time.now(), op='set',
        args='{"signals": {"head_green_light": {"format": {"type": "bool"}, "data": [%s]}}}' % on))


def a_suppress(c):
    from std_msgs.msg import Empty
    for _ in range(3):
        c.publish(NS + 'suppress_collision_avoidance', Empty())
        time.sleep(0.05)


VALID = [(a_mc_motion, 3), (a_mc_stop, 1), (a_jtas_motion, 3), (a_position_stream, 2), (a_fk, 2),
         (a_ik, 1), (a_head, 1), (a_speed_ratio, 1), (a_light, 1), (a_suppress, 1)]


def b_joint_command(c):
    bad = c.rng.choice([
        _jc(1, ARM, position=[math.nan] * 7), _jc(1, ['right_j9'], position=[0.1]),
        _jc(1, ['right_j0'], position=[0.1, 0.2]), _jc(9, ARM, position=list(Q0)),
        _jc(2, ['right_j0'], velocity=[math.inf]), _jc(3, ['right_j0', 'right_j0'], effort=[1, 1]),
        _jc(1, [], position=[])])
    c.publish(NS + 'joint_command', bad)


def b_timeout(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'joint_command_timeout', Float64(c.rng.choice([math.nan, -1.0, 0.0, math.inf])))


def b_speed_ratio(c):
    from std_msgs.msg import Float64
    c.publish(NS + 'set_speed_ratio', Float64(c.rng.choice([math.nan, -0.5, 7.0])))
    c.publish(NS + 'set_speed_ratio', Float64(0.5))           # and a sane one again


def b_head(c):
    from intera_core_msgs.msg import HeadPanCommand
    c.publish('/robot/head/command_head_pan', c.rng.choice([
        HeadPanCommand(-1.0, 0.5, 9), HeadPanCommand(-1.0, -1.0, 1), HeadPanCommand(math.nan, 0.5, 1)]))


def b_interaction(c):
    from intera_core_msgs.msg import InteractionControlCommand
    c.publish(NS + 'interaction_control_command', InteractionControlCommand(
        interaction_control_active=True, K_impedance=[1.0] * 5))


def b_ik(c):
    from intera_core_msgs.srv import SolvePositionIK
    r = c.call(KIN + 'IKService', SolvePositionIK, _ik_request((0.45, 0.16, 0.22), (0, 0, 0, 0)))
    return None if list(r.result_type) == [-1] else 'unexpected: IK %s' % list(r.result_type)


def b_fk(c):
    from intera_core_msgs.srv import SolvePositionFK
    r = c.call(KIN + 'FKService', SolvePositionFK, _fk_request(['j%d' % i for i in range(7)], Q0))
    return None if list(r.isValid) == [False] else 'unexpected: FK valid'


def b_mc_goal(c):
    c.send_goal('mc_stop' if c.active['mc'] else 'mc',
                _mc_goal([(c.q, 0.5), (_target(c.rng), math.nan)]))


def b_jtas_goal(c):
    if c.busy():
        return 'skipped'
    c.send_goal('jtas', _jtas_goal([(1.0, c.q), (0.5, c.q)]))


def b_io(c):
    import rospy
    from intera_core_msgs.msg import IOComponentCommand
    c.publish('/io/robot/robot/command', IOComponentCommand(
        time=rospy.Time.now(), op=c.rng.choice(['set', 'frobnicate']), args='{signals'))


def b_sim(c):
    from geometry_msgs.msg import Wrench
    from intera_rt_msgs.srv import ApplyWrench
    r = c.call(SIM + 'apply_wrench', ApplyWrench, 'right_l9', Wrench(), 0.1)
    return None if r.success is False else 'unexpected: wrench accepted'


def b_garbage_topic(c):
    import xmlrpc.client

    import rosgraph
    uri = rosgraph.Master('/bench_soak').lookupNode('/realtime_loop')
    _, _, proto = xmlrpc.client.ServerProxy(uri).requestTopic('/bench_soak', '/robot/state', [['TCPROS']])
    with socket.create_connection((proto[1], proto[2]), timeout=2.0) as s:
        s.sendall(struct.pack('<I', 16) + bytes(c.rng.getrandbits(8) for _ in range(16)))


def b_garbage_service(c):
    import rosgraph
    from intera_core_msgs.srv import SolvePositionFK
    uri = rosgraph.Master('/bench_soak').lookupService(KIN + 'FKService')
    host, port = uri[len('rosrpc://'):].rsplit(':', 1)
    fields = [('%s=%s' % kv).encode() for kv in (('callerid', '/bench_soak'), ('service', KIN + 'FKService'),
                                                 ('md5sum', SolvePositionFK._md5sum))]
    header = b''.join(struct.pack('<I', len(f)) + f for f in fields)
    with socket.create_connection((host, int(port)), timeout=2.0) as s:
        s.sendall(struct.pack('<I', len(header)) + header)
        s.recv(4096)
        s.sendall(struct.pack('<I', 8) + b'\xff' * 8)
        s.settimeout(2.0)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass


INVALID = [(b_joint_command, 3), (b_timeout, 1), (b_speed_ratio, 1), (b_head, 1), (b_interaction, 1),
           (b_ik, 1), (b_fk, 1), (b_mc_goal, 1), (b_jtas_goal, 1), (b_io, 1), (b_sim, 1),
           (b_garbage_topic, 1), (b_garbage_service, 1)]


def estop_and_recover(c):
    """E-stop pressed (mid-whatever), then released, reset and enabled: seconds to enabled."""
    from std_msgs.msg import Bool, Empty
    from std_srvs.srv import SetBool
    t0 = time.monotonic()
    c.call(SIM + 'estop_button', SetBool, True)
    wait_for(lambda: c.state.stopped and c.state.estop_button == 1, 10.0, 'the robot stopped by the E-stop')
    time.sleep(0.3)
    c.call(SIM + 'estop_button', SetBool, False)
    wait_for(lambda: c.publish('/robot/set_super_reset', Empty()) or not c.state.stopped, 10.0,
             'the robot reset', interval=0.05)
    wait_for(lambda: c.publish('/robot/set_super_enable', Bool(True)) or c.state.enabled, 10.0,
             'the robot enabled', interval=0.05)
    return time.monotonic() - t0
