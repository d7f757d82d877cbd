"""Clients of the robot the ROS tests share: the recorders, publishers, action goals and
sim-control calls an SDK script or a user's node would use, and the fixtures built on them.
Import what a module uses by name (fixtures too: ``from clients import sim  # noqa: F401``).
Constants of the interface: contract.py.

Times: ``now()`` and every stamp are robot time (the robot may run on sim time); wall-clock
deadlines only bound how long a helper waits.
"""
import collections
import math
import os
import threading
import time

import numpy as np
import pytest

from contract import ARM, NEUTRAL, NS, TERMINAL, TOL, POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from io_client import IODevice
from rosharness import wait_for

from intera_rt.control.collision_detection import CollisionDetection


# --- recording -----------------------------------------------------------------------------
# s after a teleport (a restart of its observer) before collision detection is armed again
DETECTION_SETTLE = CollisionDetection.OPTIONS['settle'].default


def stamp(msg):
    return msg.header.stamp.to_sec()


class Series:
    """Keeps every message of a topic (a bounded history) for later analysis; stamped ones
    also advance the robot time seen."""

    def __init__(self, topic, msg_type, maxlen=60000):
        import rospy
        self.topic = topic
        self._cond = threading.Condition()
        self._msgs = collections.deque(maxlen=maxlen)
        self._sub = rospy.Subscriber(topic, msg_type, self._callback, queue_size=500,
                                     tcp_nodelay=True)

    def _callback(self, msg):
        with self._cond:
            self._msgs.append(msg)
            if hasattr(msg, 'header'):          # (/robot/state has none)
                _robot_time_seen[0] = max(_robot_time_seen[0], stamp(msg))
            self._cond.notify_all()

    def last(self, timeout=10.0):
        return self.wait(lambda m: True, timeout, 'a message on %s' % self.topic)

    def between(self, t0, t1=math.inf):
        with self._cond:
            return [m for m in self._msgs if t0 <= stamp(m) <= t1]

    def wait(self, predicate, timeout, what):
        """The latest message once it satisfies predicate (wall-clock timeout)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._msgs and predicate(self._msgs[-1]):
                    return self._msgs[-1]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError('timed out after %.1f s waiting for %s on %s'
                                         % (timeout, what, self.topic))
                self._cond.wait(min(remaining, 0.1))

    def wait_until(self, t, timeout=None):
        """Block until a message stamped at or after robot time t has arrived."""
        if timeout is None:
            timeout = max(0.0, t - now()) * 3.0 + 10.0
        return self.wait(lambda m: stamp(m) >= t, timeout, 'a message stamped >= %.3f' % t)

    def unregister(self):
        self._sub.unregister()


_robot_time_seen = [0.0]       # the latest stamp any Series has received


def now():
    """This client's best estimate of the robot's time: its ROS clock (from /clock), or the
    latest state stamp received if that is later. On a loaded machine this process may
    fall behind in reading the 1 kHz /clock while the 100 Hz state topics still arrive."""
    import rospy
    return max(rospy.get_time(), _robot_time_seen[0])


def pace(rate, body, duration, wall_limit=None, clock='wall'):
    """Call body(t) at `rate` Hz until body returns truthy or `duration` s of robot time
    have passed (t = now()). Returns (t of the first call, t of the last call, body's
    value). clock 'wall': paced by the wall clock, for a robot at 1x (this node's /clock
    subscription, which a loaded machine delivers in bursts, is not waited on); 'robot':
    paced by the robot's time, as rospy.Rate paces an SDK script under /use_sim_time — for a
    robot slower than real time, whose time a wall-clock pace would outrun (more than 2
    periods late, it carries on from now, as rospy.Rate does). The wall-clock limit only
    guards against a stopped robot."""
    if clock not in ('wall', 'robot'):
        raise ValueError('pace: clock must be wall or robot, got %r' % (clock,))
    period = 1.0 / rate
    limit = wall_limit or ((10.0 if clock == 'robot' else 3.0) * duration + 10.0)
    wall_end = time.monotonic() + limit
    t0 = now()
    t_next = time.monotonic() if clock == 'wall' else t0
    while True:
        t = now()
        result = body(t)
        if result or t - t0 >= duration:
            return t0, t, result
        if time.monotonic() > wall_end:
            raise AssertionError('the robot\'s clock advanced only %.2f s in %.1f wall s'
                                 % (t - t0, limit))
        t_next += period
        if clock == 'robot':
            while now() < t_next and time.monotonic() < wall_end:
                time.sleep(0.001)
            if now() - t_next > 2.0 * period:
                t_next = now()
            continue
        delay = t_next - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.1:
            t_next = time.monotonic()       # descheduled: carry on, do not burst


def arm_positions(msg):
    """right_j0..6 positions of a JointState (its order has head_pan first)."""
    return np.array([msg.position[msg.name.index(n)] for n in ARM])


def arm_velocities(msg):
    return np.array([msg.velocity[msg.name.index(n)] for n in ARM])


# --- joint commands, as intera_interface.Limb sends them -----------------------------------
def sync_publisher(topic, msg_type, **kwargs):
    """A synchronous publisher (queue_size=None, as the JTAS's joint_command publisher):
    publish() returns once the message is written, with no writer thread that a loaded
    machine could delay behind the messages of another topic."""
    import warnings

    import rospy
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', SyntaxWarning)   # rospy's nag about queue_size=None
        return rospy.Publisher(topic, msg_type, queue_size=None, **kwargs)


def subscribed(make, what, timeout=10.0, tries=3):
    """The publisher make() returns, once a subscriber has connected to it. A subscribing
    node tries a new publisher once, when the master tells it (rospy's RegManager: a failed
    first connection is logged at debug level and never retried), so a publisher nobody
    connected to within `timeout` s is advertised anew, `tries` times in all, and said."""
    import rospy
    for attempt in range(1, tries + 1):
        pub = make()
        try:
            wait_for(lambda: pub.get_num_connections() > 0, timeout, what)
            return pub
        except AssertionError as exc:
            if attempt == tries:
                # (which nodes the master lists as subscribing tells a subscription that
                # vanished from a connection that failed)
                raise AssertionError('%s; the master lists as its subscribers: %s'
                                     % (exc, _subscribers(pub.resolved_name))) from None
            rospy.logwarn('no subscriber connected to %s in %.0f s: advertised anew'
                          % (pub.resolved_name, timeout))
            pub.unregister()


def _subscribers(topic):
    """The nodes the master lists as subscribing to `topic` (or why it could not say)."""
    import rosgraph
    try:
        _, subs, _ = rosgraph.Master('/test_client').getSystemState()
    except Exception as exc:            # (a diagnostic for a failure already being raised)
        return 'unknown (%s)' % exc
    return next((nodes for name, nodes in subs if name == topic), [])


class Arm:
    """What intera_interface.Limb does on the wire: one JointCommand object, reused for
    every command; each setter assigns only its mode's arrays, so the arrays of earlier
    commands (of other lengths) ride along."""

    def __init__(self):
        from intera_core_msgs.msg import JointCommand, SEAJointState
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Empty, Float64
        self.cmd = JointCommand()
        # queue_size=None (synchronous, as the JTAS publishes): a message is on the wire
        # when publish() returns, so the times this client records are the send times.
        self.pub = subscribed(lambda: sync_publisher(NS + 'joint_command', JointCommand,
                                                     tcp_nodelay=True),
                              'a joint_command subscriber')
        self.pub_timeout = sync_publisher(NS + 'joint_command_timeout', Float64, latch=True)
        self.pub_suppress = subscribed(lambda: sync_publisher(NS + 'suppress_gravity_compensation',
                                                              Empty),
                                       'a suppress_gravity_compensation subscriber')
        self._pub_speed = None        # created on first use (see test_speed_ratio_...)
        self.timeout = 0.2
        self.js = Series('/robot/joint_states', JointState)
        self.sea = Series(NS + 'gravity_compensation_torques', SEAJointState)
        self.js.last()
        self.sea.last()

    # Limb-style setters ----------------------------------------------------------------
    def _send(self, mode):
        import rospy
        self.cmd.mode = mode
        # Stamped with this client's best estimate of the robot's time, the one its streams
        # compute their samples at (now()): under a coarse /clock (Gazebo's, at 50 Hz)
        # rospy's time alone lags the robot's state stamps by up to a /clock period.
        self.cmd.header.stamp = rospy.Time.from_sec(now())
        self.pub.publish(self.cmd)

    def set_positions(self, positions):
        self.cmd.names = list(positions.keys())
        self.cmd.position = list(positions.values())
        self._send(POSITION_MODE)

    def set_velocities(self, velocities):
        self.cmd.names = list(velocities.keys())
        self.cmd.velocity = list(velocities.values())
        self._send(VELOCITY_MODE)

    def set_torques(self, efforts):
        self.cmd.names = list(efforts.keys())
        self.cmd.effort = list(efforts.values())
        self._send(TORQUE_MODE)

    def set_trajectory(self, names, positions, velocities, accelerations):
        self.cmd.names = list(names)
        self.cmd.position = list(positions)
        self.cmd.velocity = list(velocities)
        self.cmd.acceleration = list(accelerations)
        self._send(TRAJECTORY_MODE)

    def barrier(self):
        """Wait until the robot has run 20 more ticks: anything this client published on
        any topic before the call has been taken in by then (the robot applies its inputs
        at tick boundaries). A wait on the robot's clock, not the wall's."""
        self.js.wait_until(now() + 0.02)

    def set_timeout(self, seconds):
        from std_msgs.msg import Float64
        self.timeout = seconds
        self.pub_timeout.publish(Float64(seconds))
        self.barrier()

    def speed_publisher(self):
        from std_msgs.msg import Float64
        if self._pub_speed is None:
            self._pub_speed = sync_publisher(NS + 'set_speed_ratio', Float64, latch=True)
        return self._pub_speed

    def tolerate_stalls(self):
        """A latched 1 s command timeout. On this shared 2-core machine this client is
        sometimes descheduled for 0.2-0.4 s; tests about tracking (not about the timeout)
        must not turn such a stall into a timeout. The timeout tests use 0.2 s."""
        self.set_timeout(1.0)

    def set_speed_ratio(self, ratio):
        from std_msgs.msg import Float64
        self.speed_publisher().publish(Float64(ratio))
        self.barrier()

    def suppress_gravity(self):
        from std_msgs.msg import Empty
        self.pub_suppress.publish(Empty())

    # state ------------------------------------------------------------------------------
    def q(self):
        return arm_positions(self.js.last())

    def qd(self):
        return arm_velocities(self.js.last())

    def settle(self, timeout=10.0):
        """Wait until the reference has stopped (SEAJointState commanded_velocity all 0)
        and the arm is at rest (|qd| < 1e-3 rad/s); its positions."""
        self.sea.wait(lambda m: not any(m.commanded_velocity), timeout, 'the reference at rest')
        return arm_positions(self.js.wait(lambda m: np.abs(arm_velocities(m)).max() < 1e-3,
                                          timeout, 'the arm at rest'))

    def move_to(self, positions, timeout=15.0):
        """move_to_joint_positions: republish the target at 100 Hz until every named joint
        is within TOL in /robot/joint_states (or `timeout` s of robot time pass). Returns
        (robot time of the first command, stamp of the first joint_states within TOL)."""
        idx = [ARM.index(n) for n in positions]
        goal = np.array(list(positions.values()))

        def step(_t):
            self.set_positions(positions)
            return np.all(np.abs(self.q()[idx] - goal) < TOL)
        t0, _t1, done = pace(100, step, timeout)
        assert done, 'not within %.4f rad of %s after %.1f s: at %s' % (
            TOL, positions, timeout, self.q()[idx])
        first = next(m for m in self.js.between(t0)
                     if np.all(np.abs(arm_positions(m)[idx] - goal) < TOL))
        return t0, stamp(first)

    def reset_pose(self, q=NEUTRAL):
        """Sim control: put the arm at q at rest, controller in position hold."""
        import rospy
        from intera_rt_msgs.srv import SetJointPositions
        rospy.wait_for_service('/intera_rt/sim/set_joint_positions', 5.0)
        srv = rospy.ServiceProxy('/intera_rt/sim/set_joint_positions', SetJointPositions)
        res = srv(names=list(ARM), positions=list(q))
        assert res.success, res.message
        self.js.wait(lambda m: np.abs(arm_positions(m) - q).max() < 1e-3
                     and np.abs(arm_velocities(m)).max() < 1e-3, 5.0, 'the arm at rest at %s' % q)



@pytest.fixture(scope='module')
def arm(robot):
    return Arm()


@pytest.fixture
def fresh(arm):
    """Each test starts at neutral, at rest, in position hold, timeout 0.2 s."""
    if arm.timeout != 0.2:
        arm.set_timeout(0.2)
    arm.reset_pose(NEUTRAL)
    yield arm
    if arm.timeout != 0.2:
        arm.set_timeout(0.2)



# --- sim control (/intera_rt/sim/*) --------------------------------------------------------
def sim_service(name, srv_type):
    """A proxy for /intera_rt/sim/<name>, once it is advertised (10 s)."""
    import rospy
    rospy.wait_for_service('/intera_rt/sim/' + name, 10.0)
    return rospy.ServiceProxy('/intera_rt/sim/' + name, srv_type)


@pytest.fixture(scope='module')
def sim(robot):
    """The sim-control services, and the robot model to place obstacles with."""
    from intera_rt_msgs.srv import AddObstacle, ApplyWrench, RemoveObstacle, SetJointPositions
    from intera_rt.model import RobotModel
    services = {}
    for name, srv in (('add_obstacle', AddObstacle), ('remove_obstacle', RemoveObstacle),
                      ('apply_wrench', ApplyWrench), ('set_joint_positions', SetJointPositions)):
        services[name] = sim_service(name, srv)
    services['model'] = RobotModel.from_file()
    return services


def teleport(sim, q=NEUTRAL):
    """Sim control: the arm put at q, at rest (sim: the `sim` fixture)."""
    resp = sim['set_joint_positions'](list(ARM), list(q))
    assert resp.success, resp.message


def add_box(sim, name, centre, size, yaw=0.0):
    from geometry_msgs.msg import Pose
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = centre
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    resp = sim['add_obstacle'](name, 'box', pose, list(size))
    assert resp.success, resp.message


def wall_in_j0_path(sim, ahead=0.25):
    """A box across the hand's path as right_j0 turns from neutral: its face the vertical
    plane through right_j0's axis `ahead` rad past the hand, below right_l6."""
    hand = sim['model'].arm_dynamics.tip('right_hand', np.array(NEUTRAL))[0]
    rho, phi = math.hypot(hand[0], hand[1]), math.atan2(hand[1], hand[0]) + ahead
    centre = (rho * math.cos(phi) - 0.05 * math.sin(phi), rho * math.sin(phi) + 0.05 * math.cos(phi),
              hand[2] - 0.05)
    add_box(sim, 'wall', centre, (0.2, 0.1, 0.16), yaw=phi)


# --- the robot's own reports ---------------------------------------------------------------
def recording(topic, msg_type):
    """A fixture's body: a Series of `topic` once its first message is in, unregistered after
    the fixture's users (`yield from recording(...)`)."""
    series = Series(topic, msg_type)
    series.last()
    yield series
    series.unregister()


@pytest.fixture(scope='module')
def realtime_state(robot):
    from intera_rt_msgs.msg import RealtimeState
    yield from recording('/intera_rt/realtime_state', RealtimeState)


@pytest.fixture(scope='module')
def joints(robot):
    """/robot/joint_states, recorded for the module."""
    from sensor_msgs.msg import JointState
    yield from recording('/robot/joint_states', JointState)


@pytest.fixture(scope='module')
def robot_state(robot):
    """/robot/state, recorded for the module."""
    from intera_core_msgs.msg import RobotAssemblyState
    yield from recording('/robot/state', RobotAssemblyState)


@pytest.fixture(scope='module')
def rosout(robot):
    """Every /rosout line of the robot's realtime_loop: (level, text)."""
    import threading

    import rospy
    from rosgraph_msgs.msg import Log
    lines, lock = [], threading.Lock()

    def keep(msg):
        if msg.name == '/realtime_loop':
            with lock:
                lines.append(msg.msg)
    sub = rospy.Subscriber('/rosout', Log, keep, queue_size=1000)
    yield lines
    sub.unregister()


def collisions(realtime_state, t0):
    """The stretches (first stamp, last stamp, messages) over which collision was reported
    since t0."""
    out, run = [], []
    for m in realtime_state.between(t0):
        if m.collision:
            run.append(m)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return [(stamp(r[0]), stamp(r[-1]), r) for r in out]


@pytest.fixture
def clean(sim, realtime_state):
    """Each test starts at neutral, holding, with no obstacles and no collision reported,
    and collision detection armed again: a teleport restarts its observer, which then
    detects nothing for its `settle` time (a motion begun at once would meet its obstacle
    while detection is still blind)."""
    teleport(sim)
    armed = now() + DETECTION_SETTLE
    realtime_state.wait(lambda m: not m.collision and m.controller == 'hold' and stamp(m) >= armed,
                        10.0, 'a quiet arm, collision detection armed again')
    yield
    for name in ('wall', 'table'):
        sim['remove_obstacle'](name)
    teleport(sim)


# --- the motion controller, as the SDK's MotionTrajectory drives it ------------------------
FAST = [7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0]


# The machine running the tests may be shared: give the arm time to settle at the goal
# (settling_time_at_goal) rather than fail a goal because the simulation ran late.
SETTLE = 10.0


def waypoint(q=None, pose=None, endpoint='right_hand', ratio=0.5, accel=FAST, **options):
    from intera_motion_msgs.msg import Waypoint
    w = Waypoint(active_endpoint=endpoint)
    if q is not None:
        w.joint_positions = list(q)
    if pose is not None:
        (w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z), quat = pose
        o = w.pose.pose.orientation
        o.x, o.y, o.z, o.w = quat
    o = w.options
    o.label = 'default'
    o.max_joint_speed_ratio = ratio
    o.max_joint_accel = list(accel)
    o.max_linear_speed = o.max_linear_accel = 0.6
    o.max_rotational_speed = o.max_rotational_accel = 1.57
    for k, v in options.items():
        setattr(o, k, v)
    return w


def goal(waypoints, interpolation='JOINT', command='start', label='default', settle=SETTLE):
    from intera_motion_msgs.msg import MotionCommandGoal
    g = MotionCommandGoal(command=command)
    g.trajectory.label = label
    g.trajectory.joint_names = list(ARM)
    g.trajectory.trajectory_options.interpolation_type = interpolation
    g.trajectory.waypoints = list(waypoints)
    tracking = g.trajectory.trajectory_options.tracking_options
    tracking.use_settling_time_at_goal, tracking.settling_time_at_goal = True, settle
    return g


@pytest.fixture(scope='module')
def mc(robot):
    """A motion controller client as the SDK's MotionTrajectory has one."""
    import actionlib
    import rospy
    from intera_motion_msgs.msg import MotionCommandAction
    from sensor_msgs.msg import JointState
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0)), 'no /motion/motion_command server'
    joints = Series('/robot/joint_states', JointState)
    joints.last()

    def move(target, ratio=0.5, timeout=60.0):
        """go_to_joint_angles: from the current angles to target; (state, result)."""
        msg = joints.last()
        current = [msg.position[msg.name.index(n)] for n in ARM]
        client.send_goal(goal([waypoint(current, ratio=ratio), waypoint(target, ratio=ratio)]))
        assert client.wait_for_result(rospy.Duration(timeout)), 'no motion result'
        return client.get_state(), client.get_result()
    yield move
    joints.unregister()


# --- the joint trajectory action server, as MoveIt drives it -------------------------------
def smooth_motion(start, delta, duration, bump=None):
    """An analytic joint motion as a planner would produce it: min-jerk timing along a
    path from start to start+delta bulging by `bump` halfway. Returns f(t) → p, v, a."""
    start, delta = np.asarray(start, float), np.asarray(delta, float)
    bump = np.zeros(7) if bump is None else np.asarray(bump, float)

    def f(t):
        s = min(max(t / duration, 0.0), 1.0)
        sig = 10 * s**3 - 15 * s**4 + 6 * s**5
        dsig = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
        ddsig = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
        b = 16 * sig**2 * (1 - sig)**2                     # 0 → 1 → 0 along the path
        db = 16 * (2 * sig - 6 * sig**2 + 4 * sig**3)
        ddb = 16 * (2 - 12 * sig + 12 * sig**2)
        p = start + delta * sig + bump * b
        v = (delta + bump * db) * dsig
        a = (delta + bump * db) * ddsig + bump * ddb * dsig**2
        return p, v, a
    return f


def moveit_goal(f, duration, n=15, carry='pva', seed=0):
    """A MoveIt-like goal: all 7 joints, n time-parameterised points (irregular spacing,
    first at 0 = the current state), header.stamp 0, no tolerances."""
    from control_msgs.msg import FollowJointTrajectoryGoal
    from trajectory_msgs.msg import JointTrajectoryPoint
    import rospy
    rng = np.random.default_rng(seed)
    times = np.sort(np.r_[0.0, rng.uniform(0.05, 0.95, n - 2) * duration, duration])
    goal = FollowJointTrajectoryGoal()
    goal.trajectory.joint_names = list(ARM)
    for t in times:
        p, v, a = f(t)
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=p.tolist(), velocities=v.tolist() if 'v' in carry else [],
            accelerations=a.tolist() if 'a' in carry else [], time_from_start=rospy.Duration(t)))
    return goal


class Sent:
    """A goal sent through a SimpleActionClient, with its feedback."""

    def __init__(self, client, goal):
        self.client = client
        self.feedback = []
        client.send_goal(goal, feedback_cb=self.feedback.append)

    def progress(self):
        fb = self.feedback[-1] if self.feedback else None
        return fb.desired.time_from_start.to_sec() if fb is not None else -1.0

    def wait_progress(self, seconds, timeout=60.0):
        wait_for(lambda: self.progress() >= seconds, timeout,
                 'feedback %.1f s into the trajectory' % seconds)

    def start_time(self):
        """When the server started the trajectory (feedback stamp − time_from_start)."""
        fb = self.feedback[min(5, len(self.feedback) - 1)]
        return fb.header.stamp.to_sec() - fb.desired.time_from_start.to_sec()

    def wait(self, timeout=60.0):
        state = wait_for(lambda: TERMINAL.get(self.client.get_state()) and self.client.get_state(),
                         timeout, 'the goal to end')
        result = wait_for(self.client.get_result, 5.0, 'the result')
        return state, result


# --- cameras -------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def cams(robot):
    devs = {name: IODevice('internal_camera', name) for name in ('head_camera', 'right_hand_camera')}
    yield devs
    for dev in devs.values():
        if dev.value('camera_streaming'):
            dev.set('camera_streaming', False)
        dev.close()


class Frames:
    """Every image on a topic: (receipt time.monotonic(), message)."""

    def __init__(self, topic):
        import rospy
        from sensor_msgs.msg import Image
        self.frames = []
        self._sub = rospy.Subscriber(topic, Image, lambda m: self.frames.append((time.monotonic(), m)),
                                     queue_size=5, buff_size=2 ** 24)

    def wait(self, n, timeout, what):
        deadline = time.monotonic() + timeout
        while len(self.frames) < n:
            assert time.monotonic() < deadline, 'timed out after %g s waiting for %s (got %d)' % (
                timeout, what, len(self.frames))
            time.sleep(0.02)
        return self.frames[-1][1]

    def close(self):
        self._sub.unregister()


def pixels(msg):
    channels = {'bgr8': 3, 'mono8': 1}[msg.encoding]
    return np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, channels)


def red_fraction(msg):
    """Share of pixels of the arm links' red (the URDF's sawyer_red) in a bgr8 image."""
    img = pixels(msg).astype(int)
    b, g, r = img[..., 0], img[..., 1], img[..., 2]
    return float(np.mean((r > 80) & (r > 2 * g) & (r > 2 * b)))


def stream(dev, on):
    assert dev.set('camera_streaming', on) == ''
    assert dev.value('camera_streaming') is on


# --- screenshots (a virtual X display) -----------------------------------------------------
@pytest.fixture(scope='module', autouse=True)
def display():
    """A virtual X display for the module's robot (autouse in every module that imports it:
    set up before `robot`, so that scripts/sawyer --rviz inherits DISPLAY); stopped after
    the robot."""
    names = ('DISPLAY', 'LIBGL_ALWAYS_SOFTWARE')
    saved = {n: os.environ.get(n) for n in names}
    from intera_rt.tooling.xdisplay import VirtualDisplay
    with VirtualDisplay() as d:
        env = d.env()
        os.environ.update({n: env[n] for n in names})
        try:
            yield d
        finally:
            for n, v in saved.items():
                if v is None:
                    os.environ.pop(n, None)
                else:
                    os.environ[n] = v


def red(v):
    """The arm (URDF sawyer_red, lit): red well above green and blue."""
    r, g, b = v[..., 0], v[..., 1], v[..., 2]
    return (r > 70) & (r > 2 * g) & (r > 2 * b)


def overlap(a, b):
    """Intersection over union of two masks of one shape."""
    union = np.count_nonzero(a | b)
    return np.count_nonzero(a & b) / union if union else 1.0


def grasp_cuff(grasp):
    """A person grasps (True) or lets go of (False) the cuff, through the sim-control API."""
    import rospy
    from std_srvs.srv import SetBool
    rospy.wait_for_service('/intera_rt/sim/cuff', 10.0)
    response = rospy.ServiceProxy('/intera_rt/sim/cuff', SetBool)(grasp)
    assert response.success, response.message
