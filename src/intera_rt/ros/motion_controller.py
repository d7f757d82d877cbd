"""motion_controller: the robot's Motion Controller (Intera 5.3) as a ROS node, serving
/motion/motion_command (intera_motion_msgs/MotionCommand) with an actionlib ActionServer
(not Simple: a "stop" goal must run while a "start" goal is active).

  start     plan the goal's trajectory from the current joint angles and run it
  generate  plan it and return the analysis, without moving
  stop      bring a running motion to a smooth path-following stop; the stop goal itself
            always succeeds, even when nothing is moving

Every goal gets a terminal result: succeeded, aborted (with an errorId of
MotionCommandResult, logged with the field / waypoint / joint and value at fault), preempted
(a start stopped by a stop goal, a cancel or a newer start), rejected (unknown command).
Like any client, it reaches the arm only through the robot's public interface: it streams
TRAJECTORY_MODE setpoints on /robot/limb/right/joint_command (and the goal's
interaction_params, when it asks for interaction control), reads the joint states, and ends
a motion for the reasons ArmConditions gives (disabled, collision, zero-G, ...). The robot
model follows the robot's description (URDF fragments). Its process also hosts IK/FK, the
calibration and the JTAS: motion_controller_process.
"""
import dataclasses
import queue
import threading
import time
import traceback

import numpy as np
import rospy
from actionlib_msgs.msg import GoalStatus
from intera_core_msgs.msg import InteractionControlCommand, JointCommand
from intera_motion_msgs.msg import InterpolatedPath, MotionCommandAction, MotionStatus
from sensor_msgs.msg import JointState
from std_msgs.msg import Empty, String

from intera_rt.motion.errors import (CONTROLLER_NOT_FOLLOWING, ENDPOINT_DOES_NOT_EXIST,
                                     INVALID_TRAJECTORY_MESSAGE, ZERO_G_ACTIVATED_DURING_TRAJECTORY,
                                     MotionError)
from intera_rt.motion.execution import Measurement, Tracker
from intera_rt.robot import ARM_JOINTS, SUPPRESS_WINDOW
from intera_rt.ros import motion_messages as messages
from intera_rt.ros.actions import StatusHoldingServer, finish_goal
from intera_rt.ros.arm_conditions import ZERO_G, ArmConditions
from intera_rt.ros.motion_model import Model
from intera_rt.ros.urdf_fragments import DESCRIPTION_TOPIC

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
        self.collisions = None           # ArmConditions.collisions when it started


class MotionController:
    """The /motion/motion_command server: goals are planned on one thread and run (streamed,
    tracked) on another, so that a stop is served while a plan is being made."""

    def __init__(self):
        self.model = Model(rospy.get_param('/robot_description', None))
        self._last_reload = time.monotonic()
        self.joint_state = None          # Measurement in ARM_JOINTS order
        self.head_pan = 0.0
        self.conditions = ArmConditions.listen()       # why the arm cannot move (robot and realtime state)
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
        rospy.Subscriber(NS + 'suppress_collision_avoidance', Empty, self._on_suppress, queue_size=1)
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
            self._finish(gh, 'rejected', messages.result(False, INVALID_TRAJECTORY_MESSAGE))

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
                self._finish(gh, 'aborted', messages.result(False, INVALID_TRAJECTORY_MESSAGE))

    def _handle_plan_goal(self, gh, epoch, rid):
        goal = gh.get_goal()
        command = goal.command
        label = goal.trajectory.label
        status = gh.get_goal_status().status
        if status == GoalStatus.PREEMPTING:                # canceled while queued
            self._finish(gh, 'canceled', messages.result(False, ''))
            return
        if status != GoalStatus.ACTIVE:
            return
        if command == 'start' and self._epoch() != epoch:     # a stop came after this start
            self._finish(gh, 'canceled', messages.result(False, ''))
            return
        messages.feedback(gh, MotionStatus.MOTION_PENDING, label, 0, rid)
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
            self.pub_path.publish(messages.interpolated_path(model, planned, label))
        if command == 'generate':
            self._log_planned(command, label, request, planned)
            self._finish(gh, 'succeeded', messages.result(True, '', planned=planned,
                                                       last=len(request.waypoints) - 1))
            return
        if self._epoch() != epoch:
            self._finish(gh, 'canceled', messages.result(False, '', planned=planned))
            return
        why = self.conditions.why_not(require_state=False) or self.conditions.hazard()
        if why is not None:
            self._fail(gh, MotionError(_error_id(why), 'cannot start: %s' % why.text), label, rid)
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
            self.pub_interaction.publish(messages.interaction_command(request.interaction_params))
            wanted = True
        elif self.conditions.controller == 'interaction':
            self.pub_interaction.publish(InteractionControlCommand(interaction_control_active=False))
            wanted = False
        else:
            return True
        if self.conditions.controller is None:            # no realtime_state (yet): nothing to wait on
            return True
        deadline = time.monotonic() + MODE_TIMEOUT
        while (self.conditions.controller == 'interaction') != wanted:
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
        messages.feedback(gh, MotionStatus.MOTION_ERROR, label, 0, rid)
        self._finish(gh, 'aborted', messages.result(False, exc.error_id))

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
                        messages.feedback(item, MotionStatus.MOTION_STOPPING, active.planned.request.label,
                                       active.tracker.current_waypoint, active.request_id)
                    else:
                        messages.feedback(item, MotionStatus.MOTION_IDLE, '', 0, 0)
                        finished.append((item, 'succeeded', messages.result(True, '')))
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
                        finished.append((gh, 'canceled', messages.result(False, '', planned=planned)))
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
                    active.collisions = self.conditions.collisions
            if active is not None:
                tracker = active.tracker
                meas = self.joint_state
                if not tracker.finished:
                    # (after a collision the robot has stopped the arm and holds it)
                    why = self.conditions.why_not(require_state=False) or self.conditions.hazard(active.collisions)
                    if why is not None:
                        tracker.abort(now, _error_id(why), '%s during the motion' % why.text)
                sp = tracker.step(now, meas)
                if sp is not None:
                    self.pub_cmd.publish(messages.joint_command(sp.position, sp.velocity, sp.acceleration,
                                                                self.model.planner.lower,
                                                                self.model.planner.upper, now))
                    if not np.any(sp.velocity):
                        self.last_command = (now, sp.position.copy())
                active.ticks += 1
                req = active.planned.request
                if active.ticks % FEEDBACK_EVERY == 0 and not tracker.finished:
                    messages.feedback(active.gh, tracker.status, req.label, tracker.current_waypoint, active.request_id)
                    if interacting(req) and active.ticks % (2 * FEEDBACK_EVERY) == 0:
                        self.pub_interaction.publish(messages.interaction_command(req.interaction_params))
                if tracker.finished:
                    finished.extend(self._conclude(active))
                    active = None
                    for g in stop_goals:
                        finished.append((g, 'succeeded', messages.result(True, '')))
                    stop_goals = []
                    self.idle.set()
            elif stop_goals:
                for g in stop_goals:
                    finished.append((g, 'succeeded', messages.result(True, '')))
                stop_goals = []
            for gh, state, result in finished:
                self._finish(gh, state, result)
            rate.sleep()

    def _conclude(self, active):
        tracker = active.tracker
        req = active.planned.request
        messages.feedback(active.gh, tracker.status, req.label, tracker.current_waypoint, active.request_id)
        result = messages.result(tracker.result, tracker.error_id, planned=active.planned, tracker=tracker,
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

    def _finish(self, gh, state, result):
        """Send the goal's terminal state and result (not sooner than MIN_RESULT_DELAY after
        the goal arrived)."""
        text = '' if state == 'succeeded' else (result.errorId if state in ('aborted', 'rejected')
                                                 else 'preempted')
        finish_goal(gh, state, result, text, self._received.pop(gh.get_goal_id().id, None))


def _error_id(why):
    """The MotionCommandResult errorId of an ArmConditions reason."""
    return ZERO_G_ACTIVATED_DURING_TRAJECTORY if why.kind == ZERO_G else CONTROLLER_NOT_FOLLOWING
