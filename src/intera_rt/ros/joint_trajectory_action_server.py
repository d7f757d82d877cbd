"""joint_trajectory_action_server: control_msgs/FollowJointTrajectory for the right arm,
started with the robot (what the SDK's JTAS script provides on a user PC, served here
robot-side). It drives the arm only through the robot's public interface:
/robot/limb/right/joint_command, reading
/robot/joint_states, /robot/joint_limits, /robot/state, the cuff, and
/intera_rt/realtime_state (zero-G, and the collision stop collision_detection_state also
reports: one subscription fewer costs less at --speed max). The trajectory logic
(validation, spline, tolerance checks) is intera_rt.joint_trajectory; this node is
its ROS adapter.

Action: ``~action_ns`` (default /robot/limb/right/follow_joint_trajectory), an actionlib
ActionServer: every goal gets an answer; a valid new goal preempts the running one (which
ends PREEMPTED, "preempted by a new goal") and continues from its desired state without a
jump; an invalid new goal is rejected and leaves the running one alone.

Parameters (private: ~ is the node's private namespace when it runs alone; on the robot it
runs in the motion controller's process, and they are
/motion_controller/joint_trajectory_action_server/<name>)
  ~mode         position_w_id (default): TRAJECTORY_MODE with position, velocity and
                acceleration of the spline (inverse-dynamics feed-forward on the robot);
                position: POSITION_MODE stream of positions, as the SDK's server sends
                them; set_speed_ratio is left as other clients set it (latched, robot-wide:
                the robot moves POSITION_MODE targets at ratio × max speed). Each command
                leads the spline by the robot's braking distance at the spline's speed
                (v·|v| / 2·accel limit): the robot's position controller approaches a
                target at min(ratio × max speed, √(2·accel·distance)), so it then moves at
                the spline's speed wherever that is within the ratio. A goal that needs
                more than ratio × max speed is warned about (it lags and the path
                tolerance decides);
                velocity: VELOCITY_MODE, spline velocity + ~velocity_kp x position error.
  ~rate         control (= feedback) rate in Hz, default 100. The server runs on the
                robot's clock: a cycle is triggered by each /robot/joint_states message
                (100 Hz), at most ~rate per second of their stamps, and that stamp is the
                time at which the trajectory is checked and sampled (plus ~command_lead).
  ~action_ns    action namespace, default /robot/limb/right/follow_joint_trajectory
  ~path_tolerance              rad, default 0.2 (<= 0: not checked)
  ~goal_tolerance              rad, default 0 (not checked; the SDK server's default too)
  ~stopped_velocity_tolerance  rad/s, default 0.2 (position_w_id) / 0.25 (other modes)
  ~goal_time                   s, default 0.1: how long after the end the arm may take
                               to come within goal and stopped-velocity tolerance
  ~velocity_kp  1/s, default 5.0 (velocity mode)
  ~command_lead s, default 0.002: commands are sampled this far ahead of now (transport)
A goal's path_tolerance / goal_tolerance (per joint; > 0 sets, 0 keeps the default, < 0
disables; position, and velocity: path velocity error / stopped velocity) and its
goal_time_tolerance (> 0) override these.

Results (FollowJointTrajectoryResult.error_code, with error_string and a log line):
  SUCCESSFUL 0; INVALID_GOAL -1 (bad points, limits, first point far from the arm, robot
  disabled/stopped/in error, no joint states yet); INVALID_JOINTS -2; OLD_HEADER_TIMESTAMP
  -3 (the whole trajectory is in the past); PATH_TOLERANCE_VIOLATED -4 (tracking error, and
  — as the SDK server does — the robot being disabled or stopped, a collision, the cuff
  grasped or zero-G activated, or no /robot/joint_states for 2 s of robot time);
  GOAL_TOLERANCE_VIOLATED -5.
A goal that comes while the robot is disabled, stopped, in error, in collision, with the
cuff grasped or without joint states is rejected (INVALID_GOAL) saying so.

Stopping: after a cancel or an abort the arm is brought to rest with continuous
acceleration (at most about half its acceleration limit, from the desired state on cancel,
from the measured state on abort), then held: the last TRAJECTORY_MODE command has zero
velocity and acceleration, the robot keeps it until its command timeout moves it to
position hold at the same place. The goal's result is sent once the arm has stopped. After
a disable or stop nothing is commanded (the brakes hold the arm) and the result is
immediate.

Every command names all seven arm joints: joints a goal leaves out are brought to rest and
held (the robot's TRAJECTORY_MODE would keep extrapolating a joint a command leaves out).

Another server of the same action (the SDK's own joint_trajectory_action_server.py, say):
this one yields to it, so that two servers never drive the arm at once. It listens to the
action's status topic (another server's status there wakes it at once; a goal that comes
meanwhile waits for the check), and every OTHER_SERVER_CHECK s asks the master which nodes
publish the action's status/result/feedback topics (what an action server advertises),
checking each is alive.
When another is, it logs one line naming it and stops serving (its action topics
unregistered: it takes no goals and sends no arm commands). A goal it was running is
aborted at once, and the arm brought to rest (a stop ramp of at most ~0.5 s) before it
stops serving; its client sees the goal aborted "another action server (...) took over",
or LOST — an actionlib client loses track of a goal when another server's status arrives
without it, which can come first. When the other server goes away, this one serves again
(another line). To leave it out altogether: `scripts/sawyer --no-jtas` (launch arg
jtas:=false).

Cuff: the server aborts when /io/robot/cuff/state (intera_core_msgs/IODeviceStatus) shows
signal right_cuff with a true/nonzero value (the io_robot node's cuff device; in simulation
a person's grasp is /intera_rt/sim/cuff), as the SDK's server does, or when the robot
reports zero-G active (/intera_rt/realtime_state). After a collision the robot detected or
in zero-G the robot holds the arm (or the person does): the server then sends no stop ramp.
"""
import json
import math
import sys
import threading
import time
import xmlrpc.client

import numpy as np
import rosgraph
import rospy
from actionlib_msgs.msg import GoalStatus, GoalStatusArray
from control_msgs.msg import (FollowJointTrajectoryAction, FollowJointTrajectoryFeedback,
                              FollowJointTrajectoryResult)
from intera_core_msgs.msg import (IODeviceStatus, JointCommand,
                                  JointLimits, RobotAssemblyState)
from intera_rt_msgs.msg import RealtimeState
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectoryPoint

from intera_rt import joint_trajectory as jt
from intera_rt.robot import ARM_JOINTS
from intera_rt.ros.actions import MIN_RESULT_DELAY, StatusHoldingServer
from intera_rt.ros.node import init_node

MODES = ('position_w_id', 'position', 'velocity')
DEFAULT_SPEED_RATIO = 0.3       # the robot's set_speed_ratio default
STALE_JOINT_STATES = 2.0        # s of robot time without /robot/joint_states: abort
STALE_CONFIRM = 0.5             # wall s the condition must persist (a starved process catching up)
SILENT_ROBOT = 30.0             # wall s without joint states: abort even if the clock stopped too
LIMB_NS = '/robot/limb/right/'
OTHER_SERVER_CHECK = 0.5        # wall s between looks for another server of the action
NODE_PING_TIMEOUT = 1.0         # s an alive node takes at most to answer the master API


class _PingTransport(xmlrpc.client.Transport):
    """XML-RPC with a timeout on its own connection (the process-wide default timeout would
    also apply to rospy's sockets)."""

    def make_connection(self, host):
        conn = super().make_connection(host)
        conn.timeout = NODE_PING_TIMEOUT
        return conn


class _Active:
    def __init__(self, gh, plan):
        self.gh = gh
        self.plan = plan
        self.monitor = jt.GoalMonitor(plan)
        self.id = gh.get_goal_id().id


class _Stopping:
    """A stop ramp; the goal that ended with it gets its result once the arm is at rest."""

    def __init__(self, trajectory, gh=None, how='preempted', code=jt.SUCCESSFUL, text=''):
        self.trajectory = trajectory
        self.gh = gh
        self.how, self.code, self.text = how, code, text

    def finish(self, server):
        if self.gh is not None:
            server._finish(self.gh, self.how, self.code, self.text)
            self.gh = None


class JointTrajectoryActionServer:
    def __init__(self, params='~'):
        """params: where its parameters are (a namespace ending in '/')."""
        self._params = params
        self.mode = str(self._param('mode', 'position_w_id')).strip()
        if self.mode not in MODES:
            raise ValueError('~mode %r: expected one of %s' % (self.mode, ', '.join(MODES)))
        self.rate = float(self._param('rate', 100.0))
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise ValueError('~rate must be > 0 Hz, got %r' % self.rate)
        self.action_ns = str(self._param('action_ns', LIMB_NS + 'follow_joint_trajectory'))
        stopped = 0.2 if self.mode == 'position_w_id' else 0.25
        self.defaults_args = dict(
            path=float(self._param('path_tolerance', 0.2)),
            goal=float(self._param('goal_tolerance', 0.0)),
            stopped_velocity=float(self._param('stopped_velocity_tolerance', stopped)),
            goal_time=float(self._param('goal_time', 0.1)))
        for key, value in self.defaults_args.items():
            if not math.isfinite(value):
                raise ValueError('tolerance parameter %s must be finite, got %r' % (key, value))
        self.kp = float(self._param('velocity_kp', 5.0))
        if not (math.isfinite(self.kp) and self.kp >= 0):
            raise ValueError('~velocity_kp must be finite and >= 0, got %r' % self.kp)
        self.lead = float(self._param('command_lead', 0.002))
        if not (math.isfinite(self.lead) and 0 <= self.lead <= 0.1):
            raise ValueError('~command_lead must be within [0, 0.1] s, got %r' % self.lead)
        self.arm = list(rospy.get_param('/robot_config/right_config/joint_names', list(ARM_JOINTS)))

        self._joints = None          # (stamp s, q, qd, monotonic wall time received)
        self._joints_cond = threading.Condition()
        self._stale_since = None
        self._robot = None           # RobotAssemblyState
        self._collision = False
        self._collision_event = False
        self._cuff = False
        self._zero_g = False         # the robot's zero-G is active (/intera_rt/realtime_state)
        self._ratio = DEFAULT_SPEED_RATIO   # set_speed_ratio in force (latched by other clients)
        self.active = None
        self.stopping = None
        self.yielded_to = None       # the other server's node name(s) while this one yields
        self._serving = False

        self.limits = self._wait_for_limits()
        self.defaults = jt.Tolerances.uniform(len(self.arm), **self.defaults_args)

        self.pub_cmd = rospy.Publisher(LIMB_NS + 'joint_command', JointCommand, queue_size=10,
                                       tcp_nodelay=True)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joint_states, queue_size=1,
                         tcp_nodelay=True)
        rospy.Subscriber('/robot/state', RobotAssemblyState, self._on_robot_state, queue_size=1)
        rospy.Subscriber('/io/robot/cuff/state', IODeviceStatus, self._on_cuff, queue_size=10)
        rospy.Subscriber('/intera_rt/realtime_state', RealtimeState, self._on_realtime_state,
                         queue_size=1)
        rospy.Subscriber(LIMB_NS + 'set_speed_ratio', Float64, self._on_speed_ratio, queue_size=10)

        # Serve only once the robot's state is known: a goal sent as soon as the action is
        # advertised must not be refused for want of data.
        next_log = time.monotonic() + 10.0
        while not rospy.is_shutdown() and (self._robot is None or self._joints is None):
            if time.monotonic() > next_log:
                next_log += 10.0
                rospy.logwarn('joint_trajectory_action_server: still waiting for %s',
                              '/robot/state' if self._robot is None else '/robot/joint_states')
            time.sleep(0.02)
        if rospy.is_shutdown():
            raise rospy.ROSInterruptException('shut down before the robot state arrived')
        self.server = StatusHoldingServer(self.action_ns, FollowJointTrajectoryAction,
                                          self._on_goal, self._on_cancel, auto_start=False)
        # actionlib calls the goal/cancel callbacks holding this (re-entrant) lock; the
        # control loop takes the same one, so there is a single lock order.
        self.lock = self.server.lock
        self._master = rosgraph.Master(rospy.get_name())
        self._master_lock = threading.Lock()     # (one XML-RPC connection: one call at a time)
        self._look = threading.Event()           # look for other servers now
        self._suspect = False                    # another node's status seen, not yet checked
        rospy.Subscriber(self.action_ns + '/status', GoalStatusArray, self._on_status, queue_size=1)
        with self.lock:
            self._yield_to(self._other_servers())
        self._thread = threading.Thread(target=self._run, name='jtas_control', daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_others, name='jtas_others', daemon=True).start()
        rospy.on_shutdown(self._on_shutdown)

    def _param(self, name, default):
        return rospy.get_param(self._params + name, default)

    # --- another server of the action: yield to it --------------------------------------------
    def _other_servers(self):
        """The other live nodes that advertise the action's server topics (sorted), or []
        when the master cannot be asked."""
        topics = {self.action_ns + suffix for suffix in ('/status', '/result', '/feedback')}
        me = rospy.get_name()
        try:
            with self._master_lock:
                pubs = self._master.getSystemState()[0]
        except Exception:   # noqa: BLE001 - master unreachable: keep the current decision
            return sorted(self.yielded_to or ())
        nodes = {n for topic, names in pubs if topic in topics for n in names if n != me}
        return sorted(n for n in nodes if self._alive(n))

    def _alive(self, node):
        """A node the master lists answers its API (one killed without unregistering does
        not)."""
        try:
            with self._master_lock:
                uri = self._master.lookupNode(node)
            xmlrpc.client.ServerProxy(uri, transport=_PingTransport()).getPid(rospy.get_name())
            return True
        except Exception:   # noqa: BLE001 - unknown, unreachable or dead
            return False

    def _on_status(self, msg):
        header = getattr(msg, '_connection_header', None) or {}
        if self.yielded_to is None and header.get('callerid') not in (None, rospy.get_name()):
            self._suspect = True
            self._look.set()

    def _yield_to(self, others):
        """Serve the action when no other server does; else stop serving (holding
        self.lock). A running goal is aborted at once (its result sent), the arm then
        brought to rest before this server stops serving."""
        if others:
            if self.yielded_to is None:
                self.yielded_to = others
                rospy.logwarn('joint_trajectory_action_server: another server of %s is running '
                              '(%s): yielding to it; this server takes no goals and sends no arm '
                              'commands while it runs', self.action_ns, ', '.join(others))
                act = self.active
                if act is not None:
                    text = 'aborted: another action server (%s) took over %s' % (
                        ', '.join(others), self.action_ns)
                    self._abort(act, jt.PATH_TOLERANCE_VIOLATED, text,
                                stop=self._robot_why_not() is None)
                    if self.stopping is not None:      # the result now, not after the ramp
                        self.stopping.finish(self)
            if self._serving and self.stopping is None:
                self.server.stop()           # (a stop ramp in progress ends first: _cycle)
                self._serving = False
        else:
            if self.yielded_to is not None:
                rospy.logwarn('joint_trajectory_action_server: the other server of %s (%s) has '
                              'gone: serving it again', self.action_ns, ', '.join(self.yielded_to))
                self.yielded_to = None
            if not self._serving:
                # Goals that came while yielded were the other server's: forget them.
                self.server.status_list = []
                self.server.start()
                self._serving = True

    def _watch_others(self):
        while not rospy.is_shutdown():
            self._look.wait(OTHER_SERVER_CHECK)
            self._look.clear()
            others = self._other_servers()
            with self.lock:
                if rospy.is_shutdown():
                    return
                self._yield_to(others)
                if not others:
                    self._suspect = False

    # --- inputs ------------------------------------------------------------------------
    def _wait_for_limits(self):
        while not rospy.is_shutdown():
            try:
                msg = rospy.wait_for_message('/robot/joint_limits', JointLimits, timeout=10.0)
            except rospy.ROSException:
                rospy.logwarn('joint_trajectory_action_server: still waiting for /robot/joint_limits')
                continue
            missing = [n for n in self.arm if n not in msg.joint_names]
            if missing:
                raise ValueError('/robot/joint_limits lacks %s' % ', '.join(missing))
            k = [msg.joint_names.index(n) for n in self.arm]
            return jt.Limits(self.arm, [msg.position_lower[i] for i in k],
                             [msg.position_upper[i] for i in k], [msg.velocity[i] for i in k],
                             [msg.accel[i] for i in k])
        raise rospy.ROSInterruptException('shut down while waiting for /robot/joint_limits')

    def _on_joint_states(self, msg):
        try:
            k = [msg.name.index(n) for n in self.arm]
            q = np.array([msg.position[i] for i in k])
            qd = np.array([msg.velocity[i] for i in k]) if len(msg.velocity) == len(msg.name) \
                else np.zeros(len(k))
        except (ValueError, IndexError):
            return
        with self._joints_cond:
            self._joints = (msg.header.stamp.to_sec(), q, qd, time.monotonic())
            self._joints_cond.notify_all()

    def _on_robot_state(self, msg):
        self._robot = msg

    def _on_collision(self, collision):
        self._collision = collision
        if collision:
            self._collision_event = True

    def _on_cuff(self, msg):
        for sig in msg.signals:
            if sig.name == 'right_cuff':
                try:
                    data = json.loads(sig.data)
                    value = data[0] if isinstance(data, list) and data else data
                except (ValueError, TypeError):
                    continue
                self._cuff = bool(value) and value not in ('false', 'False', '0')

    def _on_realtime_state(self, msg):
        self._zero_g = bool(msg.zero_g)
        self._on_collision(bool(msg.collision))

    def _on_speed_ratio(self, msg):
        if math.isfinite(msg.data):
            self._ratio = min(1.0, max(0.0, float(msg.data)))      # as the robot clips it

    # --- robot conditions ----------------------------------------------------------------
    def _robot_why_not(self):
        """Why the arm cannot move now (disabled, stopped, error), or None."""
        s = self._robot
        if s is None:
            return 'no /robot/state received yet'
        if s.estop_button == RobotAssemblyState.ESTOP_BUTTON_PRESSED:
            return 'the E-stop button is pressed'
        if s.error:
            return 'the robot is in error'
        if s.stopped:
            return 'the robot is stopped'
        if not s.enabled:
            return 'the robot is disabled (enable it: /robot/set_super_enable true)'
        return None

    def _hazard(self):
        """A reason to abort while the robot can still move — collision, cuff, zero-G, stale
        data — or None; and whether the robot holds the arm itself then (it stops and holds
        after a collision it detected, and refuses commands in zero-G), so that the server
        sends no stop ramp of its own."""
        if self._collision or self._collision_event:
            return 'a collision was detected (collision_detection_state)', True
        if self._zero_g:
            return 'zero-G was activated (the cuff was grasped)', True
        if self._cuff:
            return 'the cuff was grasped (right_cuff)', False
        if self._stale():
            return 'no /robot/joint_states for %.1f s' % STALE_JOINT_STATES, False
        return None, False

    def _stale(self):
        """No joint state for STALE_JOINT_STATES of the robot's time (by this node's clock:
        when the robot's sim time stands still, nothing is stale)."""
        js = self._joints
        return js is None or rospy.get_rostime().to_sec() - js[0] > STALE_JOINT_STATES

    def _now(self):
        """The robot's time: the stamp of its latest joint state (see _run)."""
        return self._joints[0]

    def _current_state(self, now):
        traj = self.active.plan.trajectory if self.active else (
            self.stopping.trajectory if self.stopping else None)
        if traj is not None:
            return jt.State(*traj.sample(now))
        return jt.State(self._joints[1])

    # --- action callbacks (actionlib holds self.lock) -------------------------------------
    def _on_goal(self, gh):
        if self.yielded_to is None and self._suspect:
            # Another server's status came and is not checked yet: check before taking it
            # (a master call, a few ms; otherwise goals cost no master call).
            self._yield_to(self._other_servers())
        if self.yielded_to is not None:
            # The other server answers it: nothing from this one (not even a rejection,
            # which would reach the client as this server's verdict).
            rospy.loginfo('joint_trajectory_action_server: goal %s left to %s',
                          gh.get_goal_id().id, ', '.join(self.yielded_to))
            return
        goal = gh.get_goal()
        why = self._robot_why_not()
        if why is None and self._joints is None:
            why = 'no /robot/joint_states received yet'
        if why is None:
            why = self._hazard()[0]
        if why is not None:
            return self._reject(gh, jt.INVALID_GOAL, 'cannot execute a trajectory: ' + why)
        now = self._now()
        traj = goal.trajectory
        points = [jt.Point(p.time_from_start.to_sec(), list(p.positions), list(p.velocities),
                           list(p.accelerations)) for p in traj.points]
        tols = [[jt.JointTol(t.name, t.position, t.velocity, t.acceleration) for t in items]
                for items in (goal.path_tolerance, goal.goal_tolerance)]
        try:
            plan = jt.plan_goal(traj.joint_names, points, limits=self.limits, now=now,
                                stamp=traj.header.stamp.to_sec(), current=self._current_state(now),
                                defaults=self.defaults, path_tolerance=tols[0],
                                goal_tolerance=tols[1],
                                goal_time_tolerance=goal.goal_time_tolerance.to_sec())
        except jt.GoalError as exc:
            return self._reject(gh, exc.code, exc.message)
        if self.active is not None:
            self._finish(self.active.gh, 'preempted', jt.SUCCESSFUL, 'preempted by a new goal')
            rospy.loginfo('joint_trajectory_action_server: goal %s preempted by goal %s',
                          self.active.id, gh.get_goal_id().id)
        if self.stopping is not None:
            self.stopping.finish(self)
        self.stopping = None
        gh.set_accepted('accepted')
        self.active = _Active(gh, plan)
        if self.mode == 'position':
            self._warn_if_faster_than_ratio(plan)
        kinds = {k: plan.kinds.count(k) for k in sorted(set(plan.kinds))}
        rospy.loginfo('joint_trajectory_action_server: goal %s accepted: %d points, %s, %.2f s '
                      'from now, segments %s', self.active.id, len(points),
                      ', '.join(plan.joint_names), plan.t_end - now, kinds)

    def _on_cancel(self, gh):
        gid = gh.get_goal_id().id
        if self.active is not None and self.active.id == gid:
            now = self._now()
            state = jt.State(*self.active.plan.trajectory.sample(now))
            self.active = None
            if self._robot_why_not() is None:
                self.stopping = _Stopping(jt.stop_trajectory(now, state, self.limits), gh,
                                          'preempted', jt.SUCCESSFUL,
                                          'cancelled; the arm stopped and holds its position')
                rospy.loginfo('joint_trajectory_action_server: goal %s cancelled: stopping the arm',
                              gid)
            else:
                self._finish(gh, 'preempted', jt.SUCCESSFUL, 'cancelled')

    def _reject(self, gh, code, text):
        rospy.logerr('joint_trajectory_action_server: goal %s rejected: %s: %s',
                     gh.get_goal_id().id, jt.CODE_NAMES.get(code, code), text)
        # Not at once: actionlib's SimpleActionClient (the SDK's, MoveIt's) drops a result
        # that arrives before its send_goal() has returned — the client then waits forever
        # (seen in test_reliability_catalogue). The motion controller waits the same.
        timer = threading.Timer(MIN_RESULT_DELAY, gh.set_rejected,
                                (FollowJointTrajectoryResult(error_code=code, error_string=text), text))
        timer.daemon = True
        timer.start()

    def _finish(self, gh, how, code, text):
        result = FollowJointTrajectoryResult(error_code=code, error_string=text)
        status = gh.get_goal_status().status
        if how == 'succeeded':
            gh.set_succeeded(result, text)
        elif how == 'aborted':
            gh.set_aborted(result, text)
        elif status in (GoalStatus.ACTIVE, GoalStatus.PREEMPTING, GoalStatus.PENDING,
                        GoalStatus.RECALLING):
            gh.set_canceled(result, text)

    # --- the control loop ------------------------------------------------------------------
    def _run(self):
        """Cycles run on the robot's clock: each is triggered by a /robot/joint_states
        message (at most ~rate per second of its stamps) and uses its stamp as "now".
        Every ROS node keeps its own copy of sim time, fed by /clock; under load those
        copies lag by up to seconds, while the stamp says when the arm was where it is."""
        period = 1.0 / self.rate
        last = -math.inf
        seen = None
        while not rospy.is_shutdown():
            with self._joints_cond:
                self._joints_cond.wait_for(lambda: self._joints is not seen, timeout=0.1)
                js = self._joints
            try:
                with self.lock:
                    if js is not None and js is not seen:
                        seen = js
                        if last <= js[0] < last + 0.9 * period:
                            continue            # ~rate below the joint_states rate
                        last = js[0]
                        self._cycle(js[0])
                    elif self.active is not None:
                        self._watchdog()
            except Exception as exc:    # never let the loop die with a goal running
                rospy.logerr('joint_trajectory_action_server: control cycle failed: %s: %s',
                             type(exc).__name__, exc)

    def _watchdog(self):
        """No joint states: abort once they have been missing for STALE_JOINT_STATES."""
        js = self._joints
        if js is not None and time.monotonic() - js[3] > SILENT_ROBOT:
            self._stale_since = None
            return self._abort(self.active, jt.PATH_TOLERANCE_VIOLATED, 'aborted: no '
                               '/robot/joint_states for %.0f s of wall time' % SILENT_ROBOT,
                               stop=False)
        if not self._stale():
            self._stale_since = None
        elif self._stale_since is None:
            self._stale_since = time.monotonic()
        elif time.monotonic() - self._stale_since > STALE_CONFIRM:
            self._stale_since = None
            self._abort(self.active, jt.PATH_TOLERANCE_VIOLATED,
                        'aborted: no /robot/joint_states for %.1f s' % STALE_JOINT_STATES, stop=False)

    def _cycle(self, now):
        if self.active is not None:
            self._run_active(now)
        elif self.stopping is not None:
            self._run_stopping(now)
            if self.stopping is None and self.yielded_to is not None:
                self._yield_to(self.yielded_to)        # the ramp is over: stop serving now
        else:
            self._collision_event = False

    def _run_active(self, now):
        act = self.active
        why = self._robot_why_not()
        if why is not None:
            # Brakes are on: nothing to command.
            return self._abort(act, jt.PATH_TOLERANCE_VIOLATED, 'aborted: ' + why, stop=False)
        hazard, robot_holds = self._hazard()
        if hazard is not None:
            self._collision_event = False
            return self._abort(act, jt.PATH_TOLERANCE_VIOLATED, 'aborted: ' + hazard,
                               stop=not robot_holds)
        t_meas, q, qd, _ = self._joints
        now = max(now, t_meas)
        outcome = act.monitor.update(t_meas, q, qd)
        traj = act.plan.trajectory
        if outcome is None:
            self._command(traj, now + self.lead, t_meas, q)
            self._feedback(act, t_meas, q, qd)
        elif outcome.succeeded:
            self._command_hold(traj.end_positions())
            self.active = None
            rospy.loginfo('joint_trajectory_action_server: Joint Trajectory Action Succeeded '
                          '(goal %s): %s', act.id, outcome.message)
            self._finish(act.gh, 'succeeded', jt.SUCCESSFUL, outcome.message)
        else:
            self._abort(act, outcome.code, outcome.message)

    def _abort(self, act, code, text, stop=True):
        """Abort ``act``; with ``stop`` the arm is first brought to rest from where it is
        (the result goes out once it is)."""
        self.active = None
        rospy.logerr('joint_trajectory_action_server: goal %s aborted: %s: %s', act.id,
                     jt.CODE_NAMES.get(code, code), text)
        if stop and self._joints is not None:
            now, q, qd, _ = self._joints
            self.stopping = _Stopping(jt.stop_trajectory(now, jt.State(q, qd), self.limits),
                                      act.gh, 'aborted', code, text)
        else:
            self._finish(act.gh, 'aborted', code, text)

    def _run_stopping(self, now):
        stop = self.stopping
        if self._robot_why_not() is not None:
            self.stopping = None
        elif now >= stop.trajectory.t_end:
            self._command_hold(stop.trajectory.end_positions())
            self.stopping = None
        else:
            js = self._joints
            self._command(stop.trajectory, now + self.lead, js[0] if js else now,
                          js[1] if js else None)
            return
        stop.finish(self)

    # --- commands ----------------------------------------------------------------------------
    def _command(self, traj, t_cmd, t_meas, q):
        p, v, a = traj.sample(t_cmd)
        msg = JointCommand(names=list(self.arm))
        msg.header.stamp = rospy.Time.from_sec(t_cmd)
        if self.mode == 'position_w_id':
            msg.mode = JointCommand.TRAJECTORY_MODE
            msg.position, msg.velocity, msg.acceleration = p.tolist(), v.tolist(), a.tolist()
        elif self.mode == 'position':
            msg.mode = JointCommand.POSITION_MODE
            # Ahead by the braking distance at the spline's speed (see ~mode): the robot's
            # approach to the target then runs at that speed, without lag.
            lead = p + v * np.abs(v) / (2.0 * self.limits.accel)
            msg.position = np.clip(lead, self.limits.lower, self.limits.upper).tolist()
        else:
            msg.mode = JointCommand.VELOCITY_MODE
            if q is not None:
                v = v + self.kp * (traj.sample(t_meas)[0] - q)
            msg.velocity = v.tolist()
        self.pub_cmd.publish(msg)

    def _command_hold(self, p):
        """One last command that keeps the arm where ``p`` is, at rest."""
        msg = JointCommand(names=list(self.arm))
        if self._joints is not None:
            msg.header.stamp = rospy.Time.from_sec(self._now())
        if self.mode == 'position_w_id':
            msg.mode = JointCommand.TRAJECTORY_MODE
            msg.position = list(p)
            msg.velocity = msg.acceleration = [0.0] * len(self.arm)
        elif self.mode == 'position':
            msg.mode = JointCommand.POSITION_MODE
            msg.position = list(p)
        else:
            msg.mode = JointCommand.VELOCITY_MODE
            msg.velocity = [0.0] * len(self.arm)
        self.pub_cmd.publish(msg)

    def _warn_if_faster_than_ratio(self, plan):
        """POSITION_MODE targets move at most at set_speed_ratio × max speed: say so when
        the goal needs more (the server does not change the ratio other clients set)."""
        traj = plan.trajectory
        ts = np.linspace(traj.t_start, traj.t_end, max(2, int((traj.t_end - traj.t_start) / 0.01) + 1))
        peak = np.max(np.abs([traj.sample(t)[1] for t in ts]), axis=0)
        allowed = self._ratio * self.limits.velocity
        over = peak > allowed * 1.001
        if over.any():
            j = int(np.argmax(peak / np.maximum(allowed, 1e-9)))
            rospy.logwarn('joint_trajectory_action_server: position mode: %s needs %.2f rad/s but '
                          'set_speed_ratio %.2f allows %.2f rad/s (× max speed %.2f): the arm will lag '
                          'behind the trajectory (publish a higher set_speed_ratio, or use position_w_id)',
                          self.arm[j], peak[j], self._ratio, allowed[j], self.limits.velocity[j])

    def _feedback(self, act, t_meas, q, qd):
        p_d, v_d, a_d = act.plan.trajectory.sample(t_meas)
        idx = act.plan.goal_joints
        since = rospy.Duration.from_sec(max(0.0, t_meas - act.plan.t_start))
        fb = FollowJointTrajectoryFeedback(joint_names=act.plan.joint_names)
        fb.header.stamp = rospy.Time.from_sec(t_meas)
        fb.desired = JointTrajectoryPoint(positions=p_d[idx].tolist(), velocities=v_d[idx].tolist(),
                                          accelerations=a_d[idx].tolist(), time_from_start=since)
        fb.actual = JointTrajectoryPoint(positions=q[idx].tolist(), velocities=qd[idx].tolist(),
                                         time_from_start=since)
        fb.error = JointTrajectoryPoint(positions=(p_d - q)[idx].tolist(),
                                        velocities=(v_d - qd)[idx].tolist(), time_from_start=since)
        act.gh.publish_feedback(fb)

    def _on_shutdown(self):
        with self.lock:
            act, self.active = self.active, None
            stop, self.stopping = self.stopping, None
            try:
                if stop is not None:
                    stop.finish(self)
                if act is not None:
                    if self._joints is not None and self._robot_why_not() is None:
                        self._command_hold(self._joints[1])
                    self._finish(act.gh, 'aborted', jt.PATH_TOLERANCE_VIOLATED,
                                 'aborted: the action server is shutting down')
            except Exception:     # publishers may already be closed
                pass


def serve(params='~'):
    """Start the server in this node (it waits for the robot's state first) with its
    parameters under `params`. Returns it, or None when ROS shut down first; ValueError for
    a bad parameter."""
    try:
        server = JointTrajectoryActionServer(params)
    except rospy.ROSInterruptException:
        return None
    rospy.loginfo('Joint Trajectory Action Server Running: %s mode, %.0f Hz, action %s%s',
                  server.mode, server.rate, server.action_ns,
                  ' (yielded to %s)' % ', '.join(server.yielded_to) if server.yielded_to else '')
    return server


def main(argv=None):
    """The server as a node of its own (the SDK's way; on the robot it runs in the motion
    controller's process: intera_rt.ros.motion_controller)."""
    init_node('joint_trajectory_action_server', argv=argv)
    try:
        server = serve()
    except ValueError as exc:
        rospy.logfatal('joint_trajectory_action_server: %s', exc)
        sys.exit(2)
    if server is not None:
        rospy.spin()


if __name__ == '__main__':
    main(sys.argv)
