"""joint_trajectory_action_server: control_msgs/FollowJointTrajectory for the right arm,
started with the robot (what the SDK's JTAS script provides on a user PC, served here
robot-side), the ROS adapter of intera_rt.joint_trajectory. It drives the arm only through
the robot's public interface (/robot/limb/right/joint_command), on the robot's clock: a
cycle is triggered by each /robot/joint_states message and uses its stamp as "now".

Every goal gets an answer: a valid new goal preempts the running one (which continues from
its desired state without a jump), an invalid one is rejected and leaves it alone; a goal
is refused (INVALID_GOAL) or a running one aborted (PATH_TOLERANCE_VIOLATED) for the
reasons ArmConditions gives (disabled, stopped, collision, zero-G, the cuff grasped) and for
stale joint states. After a cancel or an abort the arm is brought to rest with continuous
acceleration and held, the result sent once it is; after a disable, a collision or in
zero-G the robot holds the arm and no ramp is sent. Another server of the same action:
this one yields to it (jtas_other_servers). Parameters under ~ (in the motion controller's
process: /motion_controller/joint_trajectory_action_server/): mode (position_w_id,
position, velocity), rate, action_ns, path_tolerance, goal_tolerance,
stopped_velocity_tolerance, goal_time, velocity_kp, command_lead, force_threshold; a goal's
own tolerances override them (> 0 sets, 0 keeps the default, < 0 disables).

Beyond the robot (seed 004; docs/motion.md): compliant goals, ~state and ~query_state
(intera_rt.ros.jtas_extras).
"""
import math
import sys
import threading
import time

import numpy as np
import rospy
from actionlib_msgs.msg import GoalStatus
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryResult
from intera_core_msgs.msg import JointCommand
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from intera_rt import joint_trajectory as jt
from intera_rt.robot import ARM_JOINTS
from intera_rt.ros import jtas_commands as commands
from intera_rt.ros import jtas_params
from intera_rt.ros.actions import MIN_RESULT_DELAY, StatusHoldingServer
from intera_rt.ros.arm_conditions import ArmConditions
from intera_rt.ros.jtas_extras import LIMB_NS, Extras
from intera_rt.ros.jtas_other_servers import OtherServers
from intera_rt.ros.node import init_node

DEFAULT_SPEED_RATIO = 0.3       # the robot's set_speed_ratio default
STALE_JOINT_STATES = 2.0        # s of robot time without /robot/joint_states: abort
STALE_CONFIRM = 0.5             # wall s the condition must persist (a starved process catching up)
SILENT_ROBOT = 30.0             # wall s without joint states: abort even if the clock stopped too


class _Active:
    def __init__(self, gh, plan, compliance=None, threshold=math.inf):
        self.gh = gh
        self.plan = plan
        self.monitor = jt.GoalMonitor(plan)
        self.id = gh.get_goal_id().id
        self.compliance = compliance        # the InteractionControlCommand it runs under
        self.threshold = threshold          # N at the endpoint (compliant goals)
        self.sent_at = -math.inf            # robot time its parameters were last sent


class _Stopping:
    """A stop ramp; the goal that ended with it gets its result once the arm is at rest."""

    def __init__(self, trajectory, gh=None, how='preempted', code=jt.SUCCESSFUL, text='',
                 compliant=False):
        self.trajectory = trajectory
        self.gh = gh
        self.how, self.code, self.text = how, code, text
        self.compliant = compliant          # the interaction controller's reference

    def finish(self, server):
        if self.gh is not None:
            server._finish(self.gh, self.how, self.code, self.text)
            self.gh = None


class JointTrajectoryActionServer:
    """The server: a goal is checked and planned in actionlib's goal callback, run and
    monitored by a control thread, both under actionlib's (re-entrant) lock."""

    def __init__(self, params='~'):
        """params: where its parameters are (a namespace ending in '/')."""
        p = jtas_params.read(params)
        self.params_ns = params
        self.mode, self.rate, self.action_ns = p.mode, p.rate, p.action_ns
        self.defaults_args, self.kp, self.lead = p.tolerances, p.kp, p.lead
        self.arm = list(rospy.get_param('/robot_config/right_config/joint_names', list(ARM_JOINTS)))

        self._joints = None          # (stamp s, q, qd, monotonic wall time received)
        self._joints_cond = threading.Condition()
        self._stale_since = None
        self._collisions_seen = 0    # ArmConditions.collisions when last looked at
        self._ratio = DEFAULT_SPEED_RATIO   # set_speed_ratio in force (latched by other clients)
        self.active = None
        self.stopping = None
        self.yielded_to = None       # the other server's node name(s) while this one yields
        self._serving = False

        self.limits = jtas_params.wait_for_limits(self.arm)
        self.defaults = jt.Tolerances.uniform(len(self.arm), **self.defaults_args)

        self.pub_cmd = rospy.Publisher(LIMB_NS + 'joint_command', JointCommand, queue_size=10,
                                       tcp_nodelay=True)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joint_states, queue_size=1,
                         tcp_nodelay=True)
        self.conditions = ArmConditions.listen(cuff=True)   # why the arm cannot move (the cuff too, as the SDK's)
        rospy.Subscriber(LIMB_NS + 'set_speed_ratio', Float64, self._on_speed_ratio, queue_size=10)
        self.extras = Extras(self)   # compliant goals, ~state, ~query_state
        jtas_params.force_threshold(params)      # (subscribes to its changes now, not at a goal)

        # Serve only once the robot's state is known: a goal sent as soon as the action is
        # advertised must not be refused for want of data.
        next_log = time.monotonic() + 10.0
        while not rospy.is_shutdown() and (self.conditions.robot is None or self._joints is None):
            if time.monotonic() > next_log:
                next_log += 10.0
                rospy.logwarn('joint_trajectory_action_server: still waiting for %s',
                              '/intera_rt/realtime_state' if self.conditions.robot is None
                              else '/robot/joint_states')
            time.sleep(0.02)
        if rospy.is_shutdown():
            raise rospy.ROSInterruptException('shut down before the robot state arrived')
        self.server = StatusHoldingServer(self.action_ns, FollowJointTrajectoryAction,
                                          self._on_goal, self._on_cancel, auto_start=False)
        # actionlib calls the goal/cancel callbacks holding this (re-entrant) lock; the
        # control loop takes the same one, so there is a single lock order.
        self.lock = self.server.lock
        self.others = OtherServers(self.action_ns, lambda: self.yielded_to is None)
        with self.lock:
            self._yield_to(self.others.find(self._yielded()))
        self._thread = threading.Thread(target=self._run, name='jtas_control', daemon=True)
        self._thread.start()
        self.others.watch(self._on_others, self._yielded)
        self.extras.serve()
        rospy.on_shutdown(self._on_shutdown)

    # --- another server of the action: yield to it --------------------------------------------
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
                                stop=self.conditions.why_not() is None)
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

    def _yielded(self):
        return tuple(self.yielded_to or ())

    def _on_others(self, others):
        with self.lock:
            if rospy.is_shutdown():
                return
            self._yield_to(others)
            if not others:
                self.others.suspect = False

    # --- inputs ------------------------------------------------------------------------
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
            if self.active is not None or self.stopping is not None:
                # (idle, the loop is not woken for every state: it looks every 0.1 s of wall
                # time, and a goal takes the collision count itself; at --speed max those
                # wakes were thousands a second)
                self._joints_cond.notify_all()

    def _on_speed_ratio(self, msg):
        if math.isfinite(msg.data):
            self._ratio = min(1.0, max(0.0, float(msg.data)))      # as the robot clips it

    # --- robot conditions ----------------------------------------------------------------
    def _robot_why_not(self):
        """Why the arm cannot move now (E-stop, error, stopped, disabled), or None."""
        why = self.conditions.why_not()
        return None if why is None else why.text

    def _hazard(self):
        """A reason to abort while the robot can still move — collision, zero-G, cuff, stale
        data — or None; and whether the robot holds the arm itself then (so the server
        sends no stop ramp of its own)."""
        why = self.conditions.hazard(self._collisions_seen)
        if why is not None:
            return why.text, why.robot_holds
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
        if self.yielded_to is None and self.others.suspect:
            # Another server's status came and is not checked yet: check before taking it
            # (a master call, a few ms; otherwise goals cost no master call).
            self._yield_to(self.others.find(self._yielded()))
        if self.yielded_to is not None:
            # The other server answers it: nothing from this one (not even a rejection,
            # which would reach the client as this server's verdict).
            rospy.loginfo('joint_trajectory_action_server: goal %s left to %s',
                          gh.get_goal_id().id, ', '.join(self.yielded_to))
            return
        goal = gh.get_goal()
        if self.active is None and self.stopping is None:
            self._collisions_seen = self.conditions.collisions     # (as an idle cycle does)
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
        compliance = self.extras.command
        if compliance is not None:
            self.active = _Active(gh, plan, compliance, jtas_params.force_threshold(self.params_ns))
            self.extras.enter(self.active, now)
        else:
            self.extras.leave()
            self.active = _Active(gh, plan)
        self.extras.traj = plan.trajectory
        if self.mode == 'position' and compliance is None:
            commands.warn_if_faster_than_ratio(plan, self._ratio, self.limits)
        kinds = {k: plan.kinds.count(k) for k in sorted(set(plan.kinds))}
        rospy.loginfo('joint_trajectory_action_server: goal %s accepted: %d points, %s, %.2f s '
                      'from now, segments %s%s', self.active.id, len(points),
                      ', '.join(plan.joint_names), plan.t_end - now, kinds,
                      '' if compliance is None else ', under interaction control (force '
                      'threshold %.1f N)' % self.active.threshold)

    def _on_cancel(self, gh):
        gid = gh.get_goal_id().id
        if self.active is not None and self.active.id == gid:
            now = self._now()
            state = jt.State(*self.active.plan.trajectory.sample(now))
            compliant = self.active.compliance is not None
            self.active = None
            if self._robot_why_not() is None:
                self.stopping = _Stopping(jt.stop_trajectory(now, state, self.limits), gh,
                                          'preempted', jt.SUCCESSFUL,
                                          'cancelled; the arm stopped and holds its position',
                                          compliant)
                self.extras.traj = self.stopping.trajectory
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
            self._collisions_seen = self.conditions.collisions

    def _run_active(self, now):
        act = self.active
        why = self._robot_why_not()
        if why is not None:
            # Brakes are on: nothing to command.
            return self._abort(act, jt.PATH_TOLERANCE_VIOLATED, 'aborted: ' + why, stop=False)
        hazard, robot_holds = self._hazard()
        if hazard is not None:
            self._collisions_seen = self.conditions.collisions
            return self._abort(act, jt.PATH_TOLERANCE_VIOLATED, 'aborted: ' + hazard,
                               stop=not robot_holds)
        t_meas, q, qd, _ = self._joints
        now = max(now, t_meas)
        traj = act.plan.trajectory
        if act.compliance is not None:
            over = self.extras.watch(act, now, t_meas)
            if over is not None:
                return self._abort(act, over.code, over.message)
        outcome = act.monitor.update(t_meas, q, qd)
        self.extras.publish_state(traj, t_meas, q, qd)
        if outcome is None:
            self._command(traj, now + self.lead, t_meas, q, act.compliance is not None)
            self._feedback(act, t_meas, q, qd)
        elif outcome.succeeded:
            self._command_hold(traj.end_positions(), act.compliance is not None)
            self.active = None
            rospy.loginfo('joint_trajectory_action_server: Joint Trajectory Action Succeeded '
                          '(goal %s): %s', act.id, outcome.message)
            self._finish(act.gh, 'succeeded', jt.SUCCESSFUL, outcome.message)
        else:
            self._abort(act, outcome.code, outcome.message)

    def _abort(self, act, code, text, stop=True):
        """Abort ``act``; with ``stop`` the arm is first brought to rest from where it is
        (the result goes out once it is). Under interaction control the ramp starts from
        the desired state: the reference decelerates instead of jumping to where a push
        holds the arm."""
        self.active = None
        rospy.logerr('joint_trajectory_action_server: goal %s aborted: %s: %s', act.id,
                     jt.CODE_NAMES.get(code, code), text)
        if stop and self._joints is not None:
            now, q, qd, _ = self._joints
            state = jt.State(*act.plan.trajectory.sample(now)) if act.compliance is not None \
                else jt.State(q, qd)
            self.stopping = _Stopping(jt.stop_trajectory(now, state, self.limits),
                                      act.gh, 'aborted', code, text, act.compliance is not None)
            self.extras.traj = self.stopping.trajectory
        else:
            self.extras.traj = None   # the robot holds the arm where it stopped it
            self._finish(act.gh, 'aborted', code, text)

    def _run_stopping(self, now):
        stop = self.stopping
        if self._robot_why_not() is not None:
            self.stopping = None
        else:
            js = self._joints
            if js is not None:
                self.extras.publish_state(stop.trajectory, js[0], js[1], js[2])
            if now < stop.trajectory.t_end:
                self._command(stop.trajectory, now + self.lead, js[0] if js else now,
                              js[1] if js else None, stop.compliant)
                return
            self._command_hold(stop.trajectory.end_positions(), stop.compliant)
            self.stopping = None
        stop.finish(self)

    # --- commands ----------------------------------------------------------------------------
    def _mode(self, compliant):
        """Under interaction control the setpoints are TRAJECTORY_MODE whatever ~mode says:
        they are what moves the interaction controller's reference."""
        return 'position_w_id' if compliant else self.mode

    def _command(self, traj, t_cmd, t_meas, q, compliant=False):
        self.pub_cmd.publish(commands.trajectory_command(self._mode(compliant), self.arm, traj,
                                                         t_cmd, t_meas, q, self.limits, self.kp))

    def _command_hold(self, p, compliant=False):
        stamp = self._now() if self._joints is not None else None
        self.pub_cmd.publish(commands.hold_command(self._mode(compliant), self.arm, p, stamp))

    def _feedback(self, act, t_meas, q, qd):
        act.gh.publish_feedback(commands.feedback(act.plan, t_meas, q, qd))

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
    controller's process: intera_rt.ros.motion_controller_process)."""
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
