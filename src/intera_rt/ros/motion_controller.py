"""motion_controller: the robot's Motion Controller (Intera 5.3) as a ROS node.

Serves the action /motion/motion_command (intera_motion_msgs/MotionCommand) with an
actionlib.ActionServer (not Simple: a "stop" goal must run while a "start" goal is active):

  start     plan the goal's trajectory from the current joint angles and run it
  generate  plan it and return the analysis, without moving
  stop      bring a running motion to a smooth path-following stop (300 ms); the stop goal
            itself always succeeds with result true, even when nothing is moving

Every goal gets a terminal result: succeeded (result true), aborted (result false with an
errorId of intera_motion_msgs/MotionCommandResult), preempted (a start stopped by a stop
goal, a cancel, or a newer start: it plans from where the arm stopped), rejected (unknown
command). Errors are logged with the field / waypoint / joint and value at fault.

Like any other client, it reaches the arm only through the robot's public interface:
  pub  /robot/limb/right/joint_command (TRAJECTORY_MODE, position + velocity +
       acceleration, 200 Hz while moving)
       /robot/limb/right/interaction_control_command (the goal's interaction_params, when
       trajectory_options.interaction_control is true and they are active, before the
       motion and at 10 Hz during it: the robot's interaction controller then follows the
       TRAJECTORY_MODE stream as its reference, and the arm stays in interaction control
       afterwards, as on the robot; interaction_control_active false before any other
       motion, when the robot is in interaction control)
       /motion/interpolated_path (intera_motion_msgs/InterpolatedPath, latched: the
       planned path every path_interpolation_step seconds, when that is > 0)
  sub  /robot/joint_states, /robot/state (disabled / stopped / error → the motion ends with
       CONTROLLER_NOT_FOLLOWING), /intera_rt/realtime_state (a collision the robot detected,
       as collision_detection_state also reports it, ends it the same way, the robot itself
       stopping and holding the arm; zero-G activated by the cuff → the motion ends with
       ZERO_G_ACTIVATED_DURING_TRAJECTORY), /robot/limb/right/suppress_collision_avoidance
       (std_msgs/Empty at ≥ 5 Hz: no pre-motion self-collision check)
The robot model (/robot_description) follows the robot's description when a URDF fragment
changes it (announced on /intera_rt/robot_description), and is re-read when a goal names
an endpoint it lacks.

The same process serves /calibration_command (intera_rt.ros.calibration), as a client of
/motion/motion_command; the IK and FK services (intera_rt.ros.kinematics_node, which also
runs alone as nodes/kinematics); and, unless ~jtas is false, the joint trajectory action
server (intera_rt.ros.joint_trajectory_action_server, parameters under
~joint_trajectory_action_server/; alone:
nodes/joint_trajectory_action_server). Each robot process costs its own interpreter, numpy
and Pinocchio, ~50 MB before its own work, and each subscriber process wakes for every
state message: at --speed max an idle JTAS in a process of its own took 14 % of a core and
10 % of the lockstep speed. Here they share one process and one subscription to each
state topic (README "Nodes", "Memory").
"""
import dataclasses
import queue
import sys
import threading
import time
import traceback

import numpy as np
import rospy
from actionlib_msgs.msg import GoalStatus
from intera_core_msgs.msg import (InteractionControlCommand, JointCommand,
                                  RobotAssemblyState)
from intera_rt_msgs.msg import RealtimeState
from intera_motion_msgs.msg import (InterpolatedPath, MotionCommandAction, MotionCommandFeedback,
                                    MotionCommandResult, MotionStatus, TrajectoryAnalysis,
                                    WaypointSimple)
from sensor_msgs.msg import JointState
from std_msgs.msg import Empty, String

from intera_rt.model import RobotModel
from intera_rt.motion import analysis as motion_analysis
from intera_rt.motion.errors import (CONTROLLER_NOT_FOLLOWING, ENDPOINT_DOES_NOT_EXIST,
                                     HAVE_NOT_REACHED_FIRST_WAYPOINT, INVALID_TRAJECTORY_MESSAGE,
                                     ZERO_G_ACTIVATED_DURING_TRAJECTORY, MotionError)
from intera_rt.motion.execution import Measurement, Tracker
from intera_rt.motion.geometry import matrix_to_quat
from intera_rt.motion.planner import MotionPlanner
from intera_rt.ros.actions import MIN_RESULT_DELAY, StatusHoldingServer
from intera_rt.ros.urdf_fragments import DESCRIPTION_TOPIC
from intera_rt.robot import ARM_JOINTS, NEUTRAL, SUPPRESS_WINDOW
from intera_rt.ros.node import init_node

ACTION = '/motion/motion_command'
NS = '/robot/limb/right/'
RATE = 200.0                    # Hz, setpoints while moving
FEEDBACK_EVERY = 10             # ticks (20 Hz)
RELOAD_EVERY = 1.0              # s between re-reads of /robot_description
STATE_TIMEOUT = 2.0             # s to wait for /robot/joint_states before refusing a start
IDLE_TIMEOUT = 10.0             # s to wait for a running motion to stop before a new start
MODE_TIMEOUT = 1.0              # s to wait for the robot to enter or leave interaction control
CONTINUITY = 0.01               # rad: start from the last command when the arm is this close
# Nothing about a goal — its status (StatusHoldingServer) or its result — is sent sooner than
# MIN_RESULT_DELAY after the goal arrived (see intera_rt.ros.actions).


class Model:
    """Robot model, collision model and planner built from one URDF text. With `previous`
    (the model this one replaces), a description whose collision model cannot be built
    (e.g. a tool fragment with meshes) keeps the previous collision model."""

    def __init__(self, urdf_xml, previous=None):
        self.urdf_xml = urdf_xml
        self.robot = RobotModel(urdf_xml) if urdf_xml else RobotModel.from_file()
        self.collision = None
        try:
            from intera_rt.model.collision import motion_controller_model
            self.collision = motion_controller_model(self.robot.urdf_xml)
        except Exception as exc:  # noqa: BLE001 - keep planning without collision checks
            if previous is not None and previous.collision is not None:
                self.collision = previous.collision
                rospy.logwarn('motion_controller: %s; keeping the previous self-collision model '
                              '(the new links are not checked)', exc)
            else:
                rospy.logerr('motion_controller: no self-collision model (%s): planned paths are '
                             'not checked for self-collision', exc)
        self.planner = MotionPlanner(self.robot, self.collision)
        lim = self.robot.limit_arrays(list(ARM_JOINTS))
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']
        self._warm_up()

    def _warm_up(self):
        """Plan a small JOINT and CARTESIAN move once, so the first goal does not pay for
        first-call costs (imports, solver set-up, caches)."""
        from intera_motion_msgs.msg import Trajectory, Waypoint
        q0 = np.array(NEUTRAL)
        try:
            for interp in ('JOINT', 'CARTESIAN'):
                t = Trajectory(joint_names=list(ARM_JOINTS))
                t.trajectory_options.interpolation_type = interp
                w = Waypoint(joint_positions=list(q0 + 0.05), active_endpoint='right_hand')
                p, r = self.planner.endpoint('right_hand').fk(q0)
                w.pose.pose.position.x, w.pose.pose.position.y, w.pose.pose.position.z = p + [0, 0, 0.02]
                o = w.pose.pose.orientation
                o.x, o.y, o.z, o.w = matrix_to_quat(r)
                t.waypoints.append(w)
                self.planner.plan(self.planner.parse(t), q0)
        except MotionError as exc:  # pragma: no cover - a model that cannot plan this
            rospy.logwarn('motion_controller: warm-up plan failed: %s', exc)


def interacting(request):
    """The motion runs under interaction control: trajectory_options.interaction_control
    with active parameters (go_to_joint_angles_in_contact.py -st 0 sends inactive ones: a
    position-controlled motion)."""
    return bool(request.interaction_control and request.interaction_params.interaction_control_active)


class Active:
    """The start goal being executed."""

    def __init__(self, gh, planned, tracker, request_id):
        self.gh = gh
        self.planned = planned
        self.tracker = tracker
        self.request_id = request_id
        self.ticks = 0


class MotionController:
    def __init__(self):
        self.model = Model(rospy.get_param('/robot_description', None))
        self._last_reload = time.monotonic()
        self.joint_state = None          # Measurement in ARM_JOINTS order
        self.head_pan = 0.0
        self.enabled = None
        self.collision_at = -1.0         # time of the latest collision_state true
        self.zero_g = False              # the robot's zero-G is active
        self.controller = None           # the robot's active joint controller (realtime_state)
        self.suppress_until = -1.0
        self.stop_epoch = 0
        self._epoch_lock = threading.Lock()
        self.requests = 0
        self.control = queue.Queue()     # to the executor: ('stop'|'cancel'|'preempt'|'run', ...)
        self.plans = queue.Queue()       # to the planner: (goal handle, epoch, request id)
        self.idle = threading.Event()
        self.idle.set()
        self.last_command = None         # (time, position) of the last setpoint at rest
        self._received = {}              # goal id → time.monotonic() of its arrival

        self.pub_cmd = rospy.Publisher(NS + 'joint_command', JointCommand, queue_size=1, tcp_nodelay=True)
        self.pub_interaction = rospy.Publisher(NS + 'interaction_control_command', InteractionControlCommand,
                                               queue_size=1, tcp_nodelay=True)
        self.pub_path = rospy.Publisher('/motion/interpolated_path', InterpolatedPath, queue_size=1, latch=True)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber('/robot/state', RobotAssemblyState, self._on_robot_state, queue_size=1)
        rospy.Subscriber(NS + 'suppress_collision_avoidance', Empty, self._on_suppress, queue_size=1)
        rospy.Subscriber('/intera_rt/realtime_state', RealtimeState, self._on_realtime_state,
                         queue_size=1)
        rospy.Subscriber(DESCRIPTION_TOPIC, String, self._on_description, queue_size=1)
        self.server = StatusHoldingServer(ACTION, MotionCommandAction, self._on_goal, self._on_cancel,
                                          auto_start=False)
        self._threads = [threading.Thread(target=self._guard, args=(self._execute_loop,), daemon=True,
                                          name='motion_executor'),
                         threading.Thread(target=self._guard, args=(self._plan_loop,), daemon=True,
                                          name='motion_planner')]
        for t in self._threads:
            t.start()
        self.server.start()
        rospy.loginfo('motion_controller: serving %s', ACTION)

    # --- inputs ----------------------------------------------------------------------------
    def _on_joint_states(self, msg):
        try:
            idx = [msg.name.index(n) for n in ARM_JOINTS]
        except ValueError:
            return
        vel = np.array([msg.velocity[i] for i in idx]) if len(msg.velocity) == len(msg.name) else None
        self.joint_state = Measurement(msg.header.stamp.to_sec() if msg.header.stamp else rospy.get_time(),
                                       np.array([msg.position[i] for i in idx]), vel)
        if 'head_pan' in msg.name:
            self.head_pan = msg.position[msg.name.index('head_pan')]

    def _on_robot_state(self, msg):
        self.enabled = bool(msg.enabled and not msg.stopped and not msg.error)

    def _on_realtime_state(self, msg):
        self.zero_g = bool(msg.zero_g)
        self.controller = msg.controller
        if msg.collision:                  # (what collision_detection_state also says)
            self.collision_at = rospy.get_time()

    def _on_suppress(self, _msg):
        self.suppress_until = rospy.get_time() + SUPPRESS_WINDOW

    def collision_suppressed(self):
        return rospy.get_time() < self.suppress_until

    # --- action callbacks (run under actionlib's lock: only queue work here) ---------------
    def _on_goal(self, gh):
        self._received[gh.get_goal_id().id] = time.monotonic()
        goal = gh.get_goal()
        command = goal.command
        if command == 'stop':
            gh.set_accepted()
            with self._epoch_lock:
                self.stop_epoch += 1
            self.control.put(('stop', gh))
        elif command in ('start', 'generate'):
            gh.set_accepted()
            with self._epoch_lock:
                self.requests += 1
                epoch, rid = self.stop_epoch, self.requests
            self.plans.put((gh, epoch, rid))
        else:
            text = 'command %r is not "start", "stop" or "generate"' % (command,)
            rospy.logerr('motion_controller: %s: %s', INVALID_TRAJECTORY_MESSAGE, text)
            self._finish(gh, 'rejected', self._result(False, INVALID_TRAJECTORY_MESSAGE))

    def _on_cancel(self, gh):
        self.control.put(('cancel', gh))

    # --- planning thread -------------------------------------------------------------------
    def _guard(self, loop):
        try:
            loop()
        except Exception:  # noqa: BLE001
            if not rospy.is_shutdown():
                rospy.logfatal('motion_controller: %s crashed:\n%s', loop.__name__, traceback.format_exc())
                rospy.signal_shutdown('motion_controller thread crashed')

    def _plan_loop(self):
        while not rospy.is_shutdown():
            try:
                gh, epoch, rid = self.plans.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._handle_plan_goal(gh, epoch, rid)
            except Exception:  # noqa: BLE001 - one bad goal must not take the node down
                rospy.logerr('motion_controller: planning failed unexpectedly:\n%s', traceback.format_exc())
                self._finish(gh, 'aborted', self._result(False, INVALID_TRAJECTORY_MESSAGE))

    def _handle_plan_goal(self, gh, epoch, rid):
        goal = gh.get_goal()
        command = goal.command
        label = goal.trajectory.label
        status = gh.get_goal_status().status
        if status == GoalStatus.PREEMPTING:                # canceled while queued
            self._finish(gh, 'canceled', self._result(False, ''))
            return
        if status != GoalStatus.ACTIVE:
            return
        if command == 'start' and self._epoch() != epoch:     # a stop came after this start
            self._finish(gh, 'canceled', self._result(False, ''))
            return
        self._feedback(gh, MotionStatus.MOTION_PENDING, label, 0, rid)
        if command == 'start':
            # A new start stops the running motion and plans from where the arm stopped.
            self.control.put(('preempt', None))
            if not self._wait_idle():
                self._fail(gh, MotionError(CONTROLLER_NOT_FOLLOWING, 'the running motion did not stop'), label, rid)
                return
        state = self._wait_state()
        if state is None:
            self._fail(gh, MotionError(CONTROLLER_NOT_FOLLOWING, 'no /robot/joint_states from the robot'),
                       label, rid)
            return
        q0 = state.position
        if command == 'start' and self.last_command is not None:
            t_cmd, p_cmd = self.last_command
            if np.abs(p_cmd - q0).max() < CONTINUITY:
                q0 = p_cmd
        model = self.model
        joint_values = dict(zip(ARM_JOINTS, q0))
        joint_values['head_pan'] = self.head_pan
        try:
            try:
                request = model.planner.parse(goal.trajectory, joint_values)
            except MotionError as exc:
                if exc.error_id != ENDPOINT_DOES_NOT_EXIST or not self._reload_model():
                    raise
                model = self.model
                request = model.planner.parse(goal.trajectory, joint_values)
            for w in request.warnings:
                rospy.logwarn('motion_controller: %s', w)
            check = not self.collision_suppressed()
            planned = model.planner.plan(request, q0, now=rospy.get_time(), q_head=self.head_pan,
                                         check_collision=check)
            for w in planned.warnings[len(request.warnings):]:
                rospy.logwarn('motion_controller: %s', w)
            if not check:
                rospy.loginfo('motion_controller: collision avoidance suppressed: the planned path was not '
                              'checked for self-collision')
        except MotionError as exc:
            self._fail(gh, exc, label, rid)
            return
        if request.path_interpolation_step > 0:
            self._publish_path(model, planned, label)
        if command == 'generate':
            self._log_planned(command, label, request, planned)
            self._finish(gh, 'succeeded', self._result(True, '', planned=planned,
                                                       last=len(request.waypoints) - 1))
            return
        if self._epoch() != epoch:
            self._finish(gh, 'canceled', self._result(False, '', planned=planned))
            return
        if self.enabled is False:
            self._fail(gh, MotionError(CONTROLLER_NOT_FOLLOWING, 'the robot is not enabled'), label, rid)
            return
        if self.zero_g:
            self._fail(gh, MotionError(ZERO_G_ACTIVATED_DURING_TRAJECTORY,
                                       'zero-G is active (the cuff is grasped): release it to move'),
                       label, rid)
            return
        if not self._enter_control_mode(request):
            self._fail(gh, MotionError(INVALID_TRAJECTORY_MESSAGE,
                                       'the robot did not take trajectory_options.interaction_params '
                                       '(its log says why)'), label, rid)
            return
        self.idle.clear()
        self.control.put(('run', (gh, planned, rid, model, epoch)))
        self._log_planned(command, label, request, planned)    # once the motion is on its way

    def _enter_control_mode(self, request):
        """Put the robot in the control mode the motion needs before streaming it: interaction
        control with the goal's parameters (its TRAJECTORY_MODE stream then moves the
        interaction controller's reference), or out of interaction control for a motion
        without. Waits for realtime_state to say so (at most MODE_TIMEOUT s); False when
        the robot did not enter interaction control (it refused the parameters)."""
        if interacting(request):
            self._publish_interaction(request.interaction_params)
            wanted = True
        elif self.controller == 'interaction':
            self.pub_interaction.publish(InteractionControlCommand(interaction_control_active=False))
            wanted = False
        else:
            return True
        if self.controller is None:                # no realtime_state (yet): nothing to wait on
            return True
        deadline = time.monotonic() + MODE_TIMEOUT
        while (self.controller == 'interaction') != wanted:
            if time.monotonic() > deadline or rospy.is_shutdown():
                return not wanted
            time.sleep(0.005)
        return True

    @staticmethod
    def _log_planned(command, label, request, planned):
        rospy.loginfo('motion_controller: %s "%s": %s, %d waypoint(s), %.3f s planned in %.1f ms',
                      command, label, request.interpolation, len(request.waypoints),
                      planned.plan.duration, 1e3 * planned.planning_time)

    def _epoch(self):
        with self._epoch_lock:
            return self.stop_epoch

    def _wait_idle(self):
        return self.idle.wait(IDLE_TIMEOUT)

    def _wait_state(self):
        deadline = time.monotonic() + STATE_TIMEOUT
        while self.joint_state is None and time.monotonic() < deadline and not rospy.is_shutdown():
            time.sleep(0.01)
        return self.joint_state

    def _on_description(self, msg):
        """The robot's description changed (a URDF fragment): plan with the new model."""
        if msg.data == self.model.urdf_xml:
            return
        try:
            model = Model(msg.data, previous=self.model)
        except Exception as exc:  # noqa: BLE001
            rospy.logerr('motion_controller: cannot use the new robot description: %s', exc)
            return
        self.model = model        # a goal takes self.model once
        rospy.loginfo('motion_controller: robot description changed: model reloaded')

    def _reload_model(self):
        if time.monotonic() - self._last_reload < RELOAD_EVERY:
            return False
        self._last_reload = time.monotonic()
        urdf = rospy.get_param('/robot_description', None)
        if not urdf or urdf == self.model.urdf_xml:
            return False
        try:
            self.model = Model(urdf, previous=self.model)
        except Exception as exc:  # noqa: BLE001
            rospy.logerr('motion_controller: cannot use the new /robot_description: %s', exc)
            return False
        rospy.loginfo('motion_controller: /robot_description changed: model reloaded')
        return True

    def _fail(self, gh, exc, label, rid):
        rospy.logerr('motion_controller: %s', exc)
        self._feedback(gh, MotionStatus.MOTION_ERROR, label, 0, rid)
        self._finish(gh, 'aborted', self._result(False, exc.error_id))

    def _publish_path(self, model, planned, label):
        try:
            endpoint = model.planner.endpoint(planned.request.endpoint)
        except Exception:  # noqa: BLE001
            endpoint = None
        points = motion_analysis.interpolated_path(planned.plan, planned.request.path_interpolation_step,
                                                   endpoint)
        msg = InterpolatedPath(label=label, joint_names=list(ARM_JOINTS))
        msg.header.stamp = rospy.Time.now()
        msg.header.frame_id = 'base'
        for t, q, pose, seg in points:
            w = WaypointSimple(joint_positions=list(q), active_endpoint=planned.request.endpoint,
                               segment_index=seg, time=t)
            if pose is not None:
                (w.pose.position.x, w.pose.position.y, w.pose.position.z) = pose[0]
                (w.pose.orientation.x, w.pose.orientation.y, w.pose.orientation.z,
                 w.pose.orientation.w) = pose[1]
            msg.interpolated_path.append(w)
        self.pub_path.publish(msg)

    # --- execution thread ------------------------------------------------------------------
    def _execute_loop(self):
        rate = rospy.Rate(RATE)
        active = None
        stop_goals = []
        while not rospy.is_shutdown():
            finished = []                     # (goal handle, state, result) sent after the tick
            pending = []
            if active is None and not stop_goals:
                # Idle: nothing to stream, so wait for work instead of ticking.
                try:
                    pending.append(self.control.get(timeout=0.1))
                except queue.Empty:
                    continue
            while True:
                try:
                    pending.append(self.control.get_nowait())
                except queue.Empty:
                    break
            now = rospy.get_time()
            for kind, item in pending:
                if kind == 'stop':
                    if active is not None:
                        active.tracker.request_stop(now)
                        stop_goals.append(item)
                        self._feedback(item, MotionStatus.MOTION_STOPPING, active.planned.request.label,
                                       active.tracker.current_waypoint, active.request_id)
                    else:
                        self._feedback(item, MotionStatus.MOTION_IDLE, '', 0, 0)
                        finished.append((item, 'succeeded', self._result(True, '')))
                elif kind == 'cancel':
                    if active is not None and item.get_goal_id().id == active.gh.get_goal_id().id:
                        active.tracker.request_stop(now)
                    elif item.get_goal().command == 'stop':
                        pass                  # a stop goal finishes by itself
                elif kind == 'preempt':
                    # Nothing running: idle is already set, and must not be set here — the
                    # planner may have cleared it since, for a plan now queued behind this.
                    if active is not None:
                        active.tracker.request_stop(now)
                elif kind == 'run':
                    gh, planned, rid, model, epoch = item
                    if active is not None or self._epoch() != epoch or \
                            gh.get_goal_status().status != GoalStatus.ACTIVE:
                        finished.append((gh, 'canceled', self._result(False, '', planned=planned)))
                        if active is None:
                            self.idle.set()
                        continue
                    req = planned.request
                    tracking = req.tracking
                    tolerances = [w.limits.joint_tolerances for w in req.waypoints]
                    if interacting(req):
                        # Compliant, maybe in contact: the arm is meant to yield from the path
                        # (a reference into a surface presses on it). The motion is done when
                        # the path has run and the arm has settled, wherever contact holds it.
                        tracking = dataclasses.replace(
                            tracking, goal_tolerance=np.full(len(tracking.goal_tolerance), np.inf))
                        tolerances = [np.full(len(t), np.inf) for t in tolerances]
                    tracker = Tracker(planned.plan, tracking, tolerances, now,
                                      accel_limit=model.accel_limit, vel_limit=model.vel_limit)
                    active = Active(gh, planned, tracker, rid)
            if active is not None:
                tracker = active.tracker
                meas = self.joint_state
                if self.enabled is False and not tracker.finished:
                    tracker.abort(now, CONTROLLER_NOT_FOLLOWING, 'the robot was disabled during the motion')
                elif self.collision_at >= tracker.start_time and not tracker.finished:
                    # The robot has stopped the arm and holds it: nothing more to command.
                    tracker.abort(now, CONTROLLER_NOT_FOLLOWING, 'the robot detected a collision')
                elif self.zero_g and not tracker.finished:
                    tracker.abort(now, ZERO_G_ACTIVATED_DURING_TRAJECTORY,
                                  'zero-G was activated (the cuff was grasped) during the motion')
                sp = tracker.step(now, meas)
                if sp is not None:
                    self._command(sp.position, sp.velocity, sp.acceleration)
                    if not np.any(sp.velocity):
                        self.last_command = (now, sp.position.copy())
                active.ticks += 1
                req = active.planned.request
                if active.ticks % FEEDBACK_EVERY == 0 and not tracker.finished:
                    self._feedback(active.gh, tracker.status, req.label, tracker.current_waypoint, active.request_id)
                    if interacting(req) and active.ticks % (2 * FEEDBACK_EVERY) == 0:
                        self._publish_interaction(req.interaction_params)
                if tracker.finished:
                    finished.extend(self._conclude(active))
                    active = None
                    for g in stop_goals:
                        finished.append((g, 'succeeded', self._result(True, '')))
                    stop_goals = []
                    self.idle.set()
            elif stop_goals:
                for g in stop_goals:
                    finished.append((g, 'succeeded', self._result(True, '')))
                stop_goals = []
            for gh, state, result in finished:
                self._finish(gh, state, result)
            rate.sleep()

    def _conclude(self, active):
        tracker = active.tracker
        req = active.planned.request
        self._feedback(active.gh, tracker.status, req.label, tracker.current_waypoint, active.request_id)
        result = self._result(tracker.result, tracker.error_id, planned=active.planned, tracker=tracker,
                              last=tracker.last_successful_waypoint)
        if tracker.result:
            rospy.loginfo('motion_controller: "%s" done in %.3f s', req.label, tracker.measured_duration)
            return [(active.gh, 'succeeded', result)]
        if tracker.error_id:
            rospy.logerr('motion_controller: %s: %s', tracker.error_id, tracker.message)
            return [(active.gh, 'aborted', result)]
        rospy.loginfo('motion_controller: "%s" stopped (preempted) after %.3f s', req.label,
                      tracker.measured_duration)
        return [(active.gh, 'canceled', result)]

    def _command(self, p, v, a):
        # (A spline can graze a joint limit by float noise; the loop refuses positions beyond.)
        p = np.clip(p, self.model.planner.lower, self.model.planner.upper)
        msg = JointCommand(mode=JointCommand.TRAJECTORY_MODE, names=list(ARM_JOINTS), position=list(p),
                           velocity=list(v), acceleration=list(a))
        msg.header.stamp = rospy.Time.now()
        self.pub_cmd.publish(msg)

    def _publish_interaction(self, params):
        msg = InteractionControlCommand()
        for slot in msg.__slots__:
            setattr(msg, slot, getattr(params, slot))
        msg.header.stamp = rospy.Time.now()
        self.pub_interaction.publish(msg)

    # --- results and feedback --------------------------------------------------------------
    def _result(self, ok, error_id, planned=None, tracker=None, last=None):
        r = MotionCommandResult(result=bool(ok), errorId=error_id or '')
        r.last_successful_waypoint = HAVE_NOT_REACHED_FIRST_WAYPOINT if last is None else int(last)
        a = TrajectoryAnalysis()
        if planned is not None:
            an = planned.analysis
            a.planned_duration = an['planned_duration']
            a.min_angle_command = list(an['min_angle_command'])
            a.max_angle_command = list(an['max_angle_command'])
            a.peak_speed_command = list(an['peak_speed_command'])
            a.peak_accel_command = list(an['peak_accel_command'])
            a.peak_jerk_command = list(an['peak_jerk_command'])
            a.min_time_rate = a.max_time_rate = 1.0
        if tracker is not None:
            a.measured_duration = tracker.measured_duration
            a.min_time_rate = tracker.min_rate_used
            a.max_time_rate = tracker.max_rate_used
            a.max_position_error = list(tracker.max_position_error)
            a.max_velocity_error = list(tracker.max_velocity_error)
        r.trajectory_analysis = a
        return r

    def _feedback(self, gh, status, label, waypoint, rid):
        fb = MotionCommandFeedback()
        fb.status.header.stamp = rospy.Time.now()
        fb.status.motion_status = status
        fb.status.current_trajectory = label
        fb.status.current_waypoint = max(0, int(waypoint))
        fb.status.motion_request = rid
        try:
            gh.publish_feedback(fb)
        except Exception:  # noqa: BLE001 - a finished goal: nothing to tell
            pass

    def _finish(self, gh, state, result):
        """Send the goal's terminal state and result (not sooner than MIN_RESULT_DELAY after
        the goal arrived)."""
        received = self._received.pop(gh.get_goal_id().id, None)
        wait = 0.0 if received is None else MIN_RESULT_DELAY - (time.monotonic() - received)
        if wait > 0:
            timer = threading.Timer(wait, self._send_result, (gh, state, result))
            timer.daemon = True
            timer.start()
        else:
            self._send_result(gh, state, result)

    @staticmethod
    def _send_result(gh, state, result):
        if state == 'succeeded':
            gh.set_succeeded(result, '')
        elif state == 'aborted':
            gh.set_aborted(result, result.errorId)
        elif state == 'rejected':
            gh.set_rejected(result, result.errorId)
        else:
            gh.set_canceled(result, 'preempted')


def main(argv=None):
    init_node('motion_controller', argv=argv)
    sys.setswitchinterval(0.0005)     # the executor thread must not wait on the planner's CPU
    # (imported here: what imports this module for MotionController needs none of them)
    from intera_rt.ros import joint_trajectory_action_server as jtas
    from intera_rt.ros.calibration import ArmCalibration
    from intera_rt.ros.kinematics_node import PositionKinematicsNode
    try:
        # IK and FK first: the SDK's Limb waits 5 s for them (robot_contract G5).
        PositionKinematicsNode()
        MotionController()
        # The arm calibration routine (/calibration_command), a client of this node's action.
        ArmCalibration()
    except (ValueError, KeyError) as exc:   # e.g. a /robot_description refused (model.safe_xml)
        rospy.logfatal('motion_controller: %s', exc)
        sys.exit(2)
    if rospy.get_param('~jtas', True):
        # The joint trajectory action server, its parameters under
        # ~joint_trajectory_action_server/. A bad one leaves it out, not the rest.
        try:
            jtas.serve(rospy.get_name() + '/joint_trajectory_action_server/')
        except ValueError as exc:
            rospy.logerr('joint_trajectory_action_server not started: %s', exc)
    rospy.spin()


if __name__ == '__main__':
    main(sys.argv)
