"""ArmCalibration: the robot's /calibration_command action (intera_core_msgs/CalibrationCommand),
the arm calibration routine the SDK's calibrate_arm.py asks for (the routine itself:
intera_rt.motion.calibration). Hosted by the motion controller's process; like any client it
reaches the arm only through the robot's public interface: its moves are goals of
/motion/motion_command, its measurements /robot/limb/right/gravity_compensation_torques.

Goals (goal.command):
  start  refused (rejected, result false) while the robot cannot move (ArmConditions;
         statusId calibrationFailure), with a gripper attached (cannotCalibrateWithGripper)
         or while a calibration runs. Feedback at every step (numberOfPoses > 0 always: the
         SDK divides by it). Result: Success; or torquesExceededThreshold (an unknown load),
         plannerFailure, calibrationFailure (the robot disabled, a collision, zero-G, ...
         during the run), each with a log line and the status text saying why.
  stop   (calibrate_arm.py on Ctrl-C) the arm is brought to a smooth stop and holds; the
         running goal ends preempted with statusId "Stopped", the stop goal succeeds, also
         when nothing was running. A cancel of a running start goal: as stop.
Every goal's first feedback and result come no sooner than MIN_RESULT_DELAY after it arrived
(a SimpleActionClient drops what comes before its send_goal() has returned, and
calibrate_arm.py waits for the result without a timeout).
"""
import queue
import threading
import time

import actionlib
import numpy as np
import rospy
from actionlib_msgs.msg import GoalStatus
from intera_core_msgs.msg import (CalibrationCommandAction, CalibrationCommandFeedback,
                                  CalibrationCommandResult, IONodeConfiguration, JointLimits,
                                  SEAJointState)
from intera_motion_msgs.msg import MotionCommandAction, MotionCommandGoal, Waypoint
from sensor_msgs.msg import JointState

from intera_rt.motion import calibration as cal
from intera_rt.robot import ARM_JOINTS
from intera_rt.ros.actions import StatusHoldingServer, finish_goal
from intera_rt.ros.arm_conditions import ArmConditions

ACTION = '/calibration_command'
MOTION_ACTION = '/motion/motion_command'
TORQUES = '/robot/limb/right/gravity_compensation_torques'
MOVE_TIMEOUT = 300.0            # wall s a move may take before the run fails
MEASURE_TIMEOUT = 20.0          # wall s to collect a measurement's samples
POLL = 0.02                     # wall s between checks while waiting
STATE_NAMES = {GoalStatus.PREEMPTED: 'preempted', GoalStatus.ABORTED: 'aborted',
               GoalStatus.REJECTED: 'rejected', GoalStatus.RECALLED: 'recalled',
               GoalStatus.LOST: 'lost'}


class _Stopped(Exception):
    """The run was stopped (stop goal or cancel)."""


class _Failed(Exception):
    def __init__(self, status_id, text):
        super().__init__(text)
        self.status_id, self.text = status_id, text


class ArmCalibration:
    def __init__(self):
        self._lock = threading.Lock()
        self.conditions = ArmConditions.listen()       # why the arm cannot move
        self._joints = None              # (stamp s, q in ARM_JOINTS order)
        self._devices = []               # end_effector IO devices (a gripper, ...)
        self._effort_limits = None
        self._samples = None             # [(stamp s, actual effort, model gravity)] while measuring
        self._running = None             # the start goal being run
        self._stop = threading.Event()
        self._stop_goals = []            # stop goals waiting for the run to end
        self._received = {}              # goal id → time.monotonic() of its arrival
        self._work = queue.Queue()
        # (tcp_nodelay as the motion controller's and the JTAS's: in one process they share
        # the subscription, and the last one made sets it)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joints, queue_size=1,
                         tcp_nodelay=True)
        rospy.Subscriber('/robot/joint_limits', JointLimits, self._on_limits, queue_size=1)
        rospy.Subscriber('/io/end_effector/config', IONodeConfiguration, self._on_end_effector,
                         queue_size=1)
        self._torques = None
        # (An ActionClient, not Simple: a move and the stop of it are two goals at once.)
        self._motion = actionlib.ActionClient(MOTION_ACTION, MotionCommandAction)
        self.server = StatusHoldingServer(ACTION, CalibrationCommandAction, self._on_goal,
                                          self._on_cancel, auto_start=False)
        threading.Thread(target=self._worker, name='calibration', daemon=True).start()
        self.server.start()
        rospy.loginfo('calibration: serving %s (%d poses)', ACTION, len(cal.POSES))

    # --- inputs ----------------------------------------------------------------------------
    def _on_joints(self, msg):
        try:
            q = np.array([msg.position[msg.name.index(n)] for n in ARM_JOINTS])
        except (ValueError, IndexError):
            return
        self._joints = (msg.header.stamp.to_sec(), q)

    def _on_limits(self, msg):
        try:
            self._effort_limits = np.array([msg.effort[msg.joint_names.index(n)] for n in ARM_JOINTS])
        except (ValueError, IndexError):
            pass

    def _on_end_effector(self, msg):
        self._devices = [d.name for d in msg.devices]

    def _on_torques(self, msg):
        with self._lock:
            if self._samples is not None and len(msg.actual_effort) == 7 and len(msg.gravity_only) == 7:
                self._samples.append((msg.header.stamp.to_sec(), np.array(msg.actual_effort),
                                      np.array(msg.gravity_only)))

    # --- action callbacks (actionlib holds its lock: only decide and queue here) -----------
    def _on_goal(self, gh):
        self._received[gh.get_goal_id().id] = time.monotonic()
        command = gh.get_goal().command
        if command == 'start':
            why, status = None, cal.GENERIC_FAILURE
            if self._running is not None:
                why = 'a calibration is already running'
            elif self.conditions.why_not():
                why = 'cannot calibrate: %s' % self.conditions.why_not().text
            elif self._devices:
                why, status = ('cannot calibrate with a gripper or tool attached (%s): remove it first'
                               % ', '.join(self._devices)), cal.GRIPPER_ON
            elif self._joints is None:
                why = 'cannot calibrate: no /robot/joint_states received yet'
            if why:
                rospy.logerr('calibration: start refused: %s', why)
                return self._finish(gh, 'rejected', False, status, why)
            gh.set_accepted('calibrating')
            self._running = gh
            self._stop.clear()
            self._work.put(gh)
        elif command == 'stop':
            gh.set_accepted('stopping')
            if self._running is None:
                self._finish(gh, 'succeeded', True, cal.STOPPED, 'no calibration was running')
            else:
                self._stop_goals.append(gh)
                self._stop.set()
                rospy.loginfo('calibration: stop requested')
        else:
            why = 'command %r is neither "start" nor "stop"' % (command,)
            rospy.logerr('calibration: goal refused: %s', why)
            self._finish(gh, 'rejected', False, cal.GENERIC_FAILURE, why)

    def _on_cancel(self, gh):
        running = self._running
        if running is not None and running.get_goal_id().id == gh.get_goal_id().id:
            self._stop.set()
            rospy.loginfo('calibration: cancel requested')

    # --- the routine ---------------------------------------------------------------------------
    def _worker(self):
        while not rospy.is_shutdown():
            try:
                gh = self._work.get(timeout=0.2)
            except queue.Empty:
                continue
            self.server.wait_until_known(gh)     # its first feedback must not be lost
            try:
                how, ok, status, text = self._run(gh)
            except Exception as exc:  # noqa: BLE001 - a goal must always get its result
                how, ok, status, text = 'aborted', False, cal.GENERIC_FAILURE, 'internal error: %s' % exc
                rospy.logerr('calibration: %s', text)
            self._end_measuring()
            with self.server.lock:          # (the goal callbacks run under it)
                stop_goals, self._stop_goals = self._stop_goals, []
                self._running = None
            self._finish(gh, how, ok, status, text)
            for stop in stop_goals:
                self._finish(stop, 'succeeded', True, cal.STOPPED, 'the calibration was stopped'
                             if how == 'canceled' else 'the calibration had ended: %s' % status)

    def _run(self, gh):
        n = len(cal.POSES)
        start = self._joints[1].copy()
        rospy.loginfo('calibration: started: %d poses, then back to the start pose', n)
        self._worst = (0.0, '', 0.0, 0.0)     # the largest |difference| / threshold seen
        self._begin_measuring()
        try:
            for k, pose in enumerate(cal.POSES, 1):
                self._feedback(gh, 'moving to pose %d of %d' % (k, n), k - 1)
                self._move(pose, 'pose %d' % k)
                self._feedback(gh, 'measuring at pose %d of %d' % (k, n), k - 1)
                excess = self._measure()
                if excess:
                    raise _Failed(cal.TORQUES_EXCEEDED_THRESHOLD, 'at pose %d the torques differ from '
                                  "the model's beyond their thresholds: %s (an unknown load on the "
                                  'arm?)' % (k, ', '.join('%s %+.2f N·m (threshold %.2f)' % e
                                                          for e in excess)))
                self._feedback(gh, 'pose %d of %d done' % (k, n), k)
            self._feedback(gh, 'returning to the start pose', n)
            self._move(start, 'the start pose')
        except _Stopped:
            rospy.loginfo('calibration: stopped; the arm holds where it stopped')
            return 'canceled', False, cal.STOPPED, 'stopped: the arm holds where it stopped'
        except _Failed as exc:
            rospy.logerr('calibration: failed: %s: %s', exc.status_id, exc.text)
            return 'aborted', False, exc.status_id, exc.text
        self._feedback(gh, 'done', n)
        ratio, name, diff, threshold = self._worst
        rospy.loginfo('calibration: done: %d poses measured, every joint torque within its threshold '
                      '(closest: %s %+.2f N·m of %.2f)', n, name, diff, threshold)
        return 'succeeded', True, cal.SUCCESS, 'calibrated (%d poses)' % n

    def _check(self):
        if self._stop.is_set():
            raise _Stopped()
        why = self.conditions.why_not()
        if why:
            raise _Failed(cal.GENERIC_FAILURE, why.text)
        if rospy.is_shutdown():
            raise _Failed(cal.GENERIC_FAILURE, 'the robot is shutting down')

    def _move(self, target, what):
        """Move the arm to `target` through the motion controller; on a stop request, stop
        it smoothly (a "stop" goal) and raise _Stopped once it has."""
        self._check()
        if not self._motion.wait_for_server(rospy.Duration(10.0)):
            raise _Failed(cal.GENERIC_FAILURE, 'no motion controller (%s)' % MOTION_ACTION)
        goal = MotionCommandGoal(command='start')
        goal.trajectory.label = 'calibration'
        goal.trajectory.joint_names = list(ARM_JOINTS)
        goal.trajectory.trajectory_options.interpolation_type = 'JOINT'
        for q in (self._joints[1], target):
            w = Waypoint(joint_positions=list(map(float, q)), active_endpoint='right_hand')
            w.options.label = 'calibration'
            w.options.max_joint_speed_ratio = cal.SPEED_RATIO
            goal.trajectory.waypoints.append(w)
        done = threading.Event()

        def transition(handle):
            if handle.get_comm_state() == actionlib.CommState.DONE:
                done.set()
        move = self._motion.send_goal(goal, transition)
        deadline = time.monotonic() + MOVE_TIMEOUT
        stop = None
        while not done.wait(POLL):
            if self._stop.is_set() and stop is None:
                stop = self._motion.send_goal(MotionCommandGoal(command='stop'))
            if time.monotonic() > deadline or rospy.is_shutdown():
                move.cancel()
                raise _Failed(cal.GENERIC_FAILURE, 'the move to %s did not end within %.0f s'
                              % (what, MOVE_TIMEOUT))
        if self._stop.is_set():
            raise _Stopped()
        state, result = move.get_goal_status(), move.get_result()
        if state != GoalStatus.SUCCEEDED:
            error = result.errorId if result is not None else ''
            why = self.conditions.why_not()
            raise _Failed(cal.motion_status(error), 'the move to %s failed: %s%s' % (
                what, error or STATE_NAMES.get(state, 'status %d' % state),
                ' (%s)' % why.text if why else ''))

    def _begin_measuring(self):
        self._torques = rospy.Subscriber(TORQUES, SEAJointState, self._on_torques, queue_size=5)

    def _end_measuring(self):
        if self._torques is not None:
            self._torques.unregister()
            self._torques = None
        with self._lock:
            self._samples = None

    def _measure(self):
        """At rest: wait SETTLE_TIME of robot time, average the transmitted torques and the
        model's gravity torques over MEASURE_TIME; the joints beyond their thresholds."""
        t0 = self._joints[0]
        begin, end = t0 + cal.SETTLE_TIME, t0 + cal.SETTLE_TIME + cal.MEASURE_TIME
        with self._lock:
            self._samples = []
        deadline = time.monotonic() + MEASURE_TIMEOUT
        while True:
            self._check()
            with self._lock:
                samples = list(self._samples)
            if samples and samples[-1][0] >= end:
                break
            if time.monotonic() > deadline:
                raise _Failed(cal.GENERIC_FAILURE, 'no torques on %s to measure with' % TORQUES)
            time.sleep(POLL)
        window = [s for s in samples if begin <= s[0] <= end] or samples[-1:]
        measured = np.mean([s[1] for s in window], axis=0)
        gravity = np.mean([s[2] for s in window], axis=0)
        limits = self._effort_limits if self._effort_limits is not None else np.full(7, 10.0)
        thresholds = cal.torque_thresholds(limits)
        diff = measured - gravity
        j = int(np.argmax(np.abs(diff) / thresholds))
        if abs(diff[j]) / thresholds[j] > self._worst[0]:
            self._worst = (abs(diff[j]) / thresholds[j], ARM_JOINTS[j], float(diff[j]), float(thresholds[j]))
        return cal.torque_excess(measured, gravity, thresholds, ARM_JOINTS)

    # --- results and feedback ------------------------------------------------------------------
    @staticmethod
    def _feedback(gh, state, done):
        try:
            gh.publish_feedback(CalibrationCommandFeedback(
                currentState=state, numberOfPoses=len(cal.POSES), currentPoseNumber=int(done)))
        except Exception:  # noqa: BLE001 - a finished goal: nothing to tell
            pass

    def _finish(self, gh, how, ok, status_id, text):
        finish_goal(gh, how, CalibrationCommandResult(result=bool(ok), statusId=status_id), text,
                    self._received.pop(gh.get_goal_id().id, None))
