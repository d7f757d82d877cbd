"""The joint trajectory action server's interfaces beyond the robot's (seed 004;
docs/motion.md), owned by the server (joint_trajectory_action_server): ~interaction_control_command
runs the goals that follow under interaction control, ended by ~force_threshold; ~state and
~query_state are those of ROS's joint_trajectory_controller (~: the server's parameters'
namespace). The server calls these holding its lock, except where a method says so.
"""
import rospy
from control_msgs.msg import JointTrajectoryControllerState
from control_msgs.srv import QueryTrajectoryState, QueryTrajectoryStateResponse
from intera_core_msgs.msg import EndpointState, InteractionControlCommand

from intera_rt import joint_trajectory as jt
from intera_rt.control.base import CommandRejected
from intera_rt.control.interaction_params import describe, parse
from intera_rt.ros import jtas_commands as commands
from intera_rt.ros import robot_commands

LIMB_NS = '/robot/limb/right/'
INTERACTION_RESEND = 0.25       # s of robot time: re-send a compliant goal's parameters while
                                # the robot is not (yet) in interaction control


class Extras:
    """Compliant goals, ~state and ~query_state for `server` (its params_ns, arm, lock,
    active, stopping, conditions)."""

    def __init__(self, server):
        """Advertises the publishers; serve() adds the service and subscription."""
        self.server = server
        self.command = None         # the latched InteractionControlCommand for goals (None: stiff)
        self.traj = None            # the trajectory commanded last (query_state)
        self._interacting = False   # this server put the robot in interaction control
        self._force = None          # the endpoint's force (N, base) while it is watched
        self._endpoint_sub = None   # subscribed with the first compliant command
        self.pub_interaction = rospy.Publisher(LIMB_NS + 'interaction_control_command',
                                               InteractionControlCommand, queue_size=10)
        self.pub_state = rospy.Publisher(server.params_ns + 'state',
                                         JointTrajectoryControllerState, queue_size=10)

    def serve(self):
        ns = self.server.params_ns
        rospy.Service(ns + 'query_state', QueryTrajectoryState, self._on_query_state)
        rospy.Subscriber(ns + 'interaction_control_command', InteractionControlCommand,
                         self._on_interaction_command, queue_size=10)

    def _on_interaction_command(self, msg):
        """~interaction_control_command (takes the server's lock): the goals that follow run
        under interaction control with these parameters (active), or stiffly (inactive). A
        command the robot would refuse is refused here, naming the field, and changes nothing."""
        where = self.server.params_ns + 'interaction_control_command'
        if msg.interaction_control_active:
            try:
                parsed, _ = parse(robot_commands.interaction_command(msg))
            except CommandRejected as exc:
                rospy.logerr('joint_trajectory_action_server: %s rejected: %s; goals run as '
                             'before (%s)', where, exc,
                             'compliant' if self.command is not None else 'stiff')
                return
            if self._endpoint_sub is None:
                self._endpoint_sub = rospy.Subscriber(LIMB_NS + 'endpoint_state', EndpointState,
                                                      self._on_endpoint, queue_size=1,
                                                      tcp_nodelay=True)
            rospy.loginfo('joint_trajectory_action_server: goals that follow run under %s',
                          describe(parsed))
        else:
            rospy.loginfo('joint_trajectory_action_server: goals that follow run stiffly (%s '
                          'inactive)', where)
        server = self.server
        with server.lock:
            self.command = msg if msg.interaction_control_active else None
            if self.command is None and server.active is None and server.stopping is None:
                self.leave()

    def _on_endpoint(self, msg):
        f = msg.wrench.force
        self._force = (f.x, f.y, f.z)

    def enter(self, act, now):
        """Send the compliant goal's parameters to the robot (its TRAJECTORY_MODE setpoints
        then move the interaction controller's reference)."""
        self.pub_interaction.publish(act.compliance)
        act.sent_at = now
        self._interacting = True

    def leave(self):
        """Back to stiff position control, if this server left the robot in interaction
        control (one a user started stays theirs)."""
        if self._interacting:
            self._interacting = False
            if self.server.conditions.controller == 'interaction':
                self.pub_interaction.publish(InteractionControlCommand(interaction_control_active=False))

    def watch(self, act, now, t_meas):
        """A compliant goal's cycle: the jt.force_exceeded outcome that ends it, or None
        (its parameters re-sent while the robot is not in interaction control: a first
        message can go unheard)."""
        over = jt.force_exceeded(self._force, act.threshold,
                                 t_meas - act.plan.trajectory.t_start)
        if over is not None:
            return over
        if self.server.conditions.controller != 'interaction' and \
                now - act.sent_at > INTERACTION_RESEND:
            self.enter(act, now)
        return None

    def publish_state(self, traj, t_meas, q, qd):
        if self.pub_state.get_num_connections():
            self.pub_state.publish(commands.controller_state(self.server.arm, traj, t_meas, q, qd))

    def _on_query_state(self, req):
        """~query_state (takes the server's lock): the sample of the trajectory commanded
        last at req.time (holding its last point after its end), for every arm joint."""
        with self.server.lock:
            traj = self.traj
        try:
            p, v, a = jt.query(traj, req.time.to_sec())
        except ValueError as exc:
            rospy.logerr('joint_trajectory_action_server: query_state: %s', exc)
            raise rospy.ServiceException('query_state: %s' % exc) from None
        return QueryTrajectoryStateResponse(name=list(self.server.arm), position=p.tolist(),
                                            velocity=v.tolist(), acceleration=a.tolist())
