"""Gazebo's world API (gazebo_ros' /gazebo/* services and topics) served by a simulated
robot whose boards have the 'world' ability (docs/world.md).

The realtime_loop node hosts it, as it hosts ros.sim_control: a request is validated here
(intera_rt.world: the model's XML, poses, frames; WorldError → success false with a message
naming the element or field, the world unchanged), becomes a typed sim command the core
applies between two ticks, and is answered with what the core did. The models' states come
from the core's WorldFrame (in base), the robot's links from forward kinematics of the
state it sends; both are published as /gazebo/model_states and /gazebo/link_states with
every robot state (100 Hz of loop time). Frames: the robot is model `sawyer`, its base at
ROBOT_POSE in `world` (world → base on /tf_static). The Gazebo stand-in
(ros.gazebo_standin) serves the same API with this class over its own physics: `call`
and `loop` are its, the robot where it was spawned.
"""
import json
import math
import threading

import rospy
from gazebo_msgs.msg import LinkState, LinkStates, ModelState, ModelStates
from gazebo_msgs.srv import (ApplyBodyWrench, ApplyBodyWrenchResponse, BodyRequest,
                             BodyRequestResponse, DeleteModel, DeleteModelResponse,
                             GetLinkState, GetLinkStateResponse, GetModelProperties,
                             GetModelPropertiesResponse, GetModelState, GetModelStateResponse,
                             GetWorldProperties, GetWorldPropertiesResponse, SetModelState,
                             SetModelStateResponse, SpawnModel, SpawnModelResponse)
from geometry_msgs.msg import Point, Pose as PoseMsg, Quaternion, Transform, TransformStamped, Twist, Vector3
from std_msgs.msg import Header, String
from intera_rt_msgs.msg import GripperCommand, GripperState
from std_srvs.srv import Empty, EmptyResponse
from tf2_msgs.msg import TFMessage

from intera_rt.control import commands as cmds
from intera_rt.model.joint_frames import JointFrames, link_poses
from intera_rt.robot import BASE_FRAME, BOARD_JOINTS
from intera_rt.world import (ROBOT_MODEL, ROBOT_POSE, Pose, Resolver, Snapshot, World,
                             WorldError, load_world, parse_model_xml, world_to_base)
from intera_rt.world.frames import (model_frames, obstacle_model, parse_reference, scoped,
                                    spawn_pose, twist_to_world)

NS = '/gazebo/'
SIM_NS = '/intera_rt/sim/'
WORLD_FRAME = 'world'


def pose_msg(pose):
    return PoseMsg(Point(*pose.position), Quaternion(*pose.quaternion))


def twist_msg(twist):
    return Twist(Vector3(*twist[0]), Vector3(*twist[1]))


def pose_of(msg, what):
    """A geometry_msgs/Pose as a checked Pose (WorldError naming `what`)."""
    p, o = msg.position, msg.orientation
    return Pose.make((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), what)


def _finite(values, what):
    values = tuple(float(v) for v in values)
    if not all(math.isfinite(v) for v in values):
        raise WorldError('%s: must be finite, got %s' % (what, list(values)))
    return values


class GazeboWorld:
    """The services and topics, registered at construction.

    Args:
        call: a sim command → the core's (success, message).
        urdf: the robot's description (its links' poses in link_states).
        loop: the realtime_loop (its latest `state`, `stamp()` and `stamp_at(loop time)`).
        boot_pose: the arm's 7 joint angles at boot (reset_simulation).
        paused: booted with physics paused.
        send: a sim command → sent, no answer awaited (the gripper's targets); None: no
            plant fingers (the /intera_rt/sim/gripper_* topics are not served).
        robot_pose: the robot's base in the world (a world.Pose)."""

    def __init__(self, call, urdf, loop, boot_pose, paused=False, send=None, robot_pose=ROBOT_POSE):
        self._call = call
        self._send = send
        self._loop = loop
        self.robot_pose = robot_pose
        self.boot_pose = tuple(boot_pose)
        self._lock = threading.RLock()
        self.world = World(reserved=(ROBOT_MODEL,))
        self.spawned = {}               # name → its pose in the world when spawned (reset_world)
        self.obstacles = {}             # add_obstacle's models: name → static Model
        # (loop time of the core's WorldFrame, {(model, body) → BodyState}) as it last sent
        # them: one tuple, so that a reader takes the bodies with their time
        self._bodies = (-math.inf, {})
        self.paused = paused
        self.resolver = Resolver.from_environ()
        self._frames = JointFrames.from_xml(urdf)
        # Gazebo lumps links joined by fixed joints: the robot's links are base and the
        # children of its joints that move.
        self._robot_links = (BASE_FRAME,) + tuple(self._frames.child)
        S = rospy.Service
        S(NS + 'spawn_sdf_model', SpawnModel, self._spawn)
        S(NS + 'spawn_urdf_model', SpawnModel, self._spawn)
        S(NS + 'delete_model', DeleteModel, self._delete)
        S(NS + 'get_model_state', GetModelState, self._get_model_state)
        S(NS + 'set_model_state', SetModelState, self._set_model_state)
        S(NS + 'get_model_properties', GetModelProperties, self._get_model_properties)
        S(NS + 'get_world_properties', GetWorldProperties, self._get_world_properties)
        S(NS + 'get_link_state', GetLinkState, self._get_link_state)
        S(NS + 'apply_body_wrench', ApplyBodyWrench, self._apply_body_wrench)
        S(NS + 'clear_body_wrenches', BodyRequest, self._clear_body_wrenches)
        S(NS + 'pause_physics', Empty, lambda _: self._pause(True))
        S(NS + 'unpause_physics', Empty, lambda _: self._pause(False))
        S(NS + 'reset_world', Empty, lambda _: self._reset(False))
        S(NS + 'reset_simulation', Empty, lambda _: self._reset(True))
        rospy.Subscriber(NS + 'set_model_state', ModelState, self._set_model_state_topic, queue_size=10)
        # The plant's gripper fingers ↔ the end_effector IO node's gripper device.
        if send is not None:
            self.pub_gripper = rospy.Publisher(SIM_NS + 'gripper_state', GripperState, queue_size=1)
            rospy.Subscriber(SIM_NS + 'gripper_command', GripperCommand, self._on_gripper_command,
                             queue_size=10)
        # What the spawned models look like (for viewers: rviz_markers).
        self._pub_scene = rospy.Publisher(SIM_NS + 'world', String, queue_size=1, latch=True)
        self._publish_scene()
        self.pub_models = rospy.Publisher(NS + 'model_states', ModelStates, queue_size=1)
        self.pub_links = rospy.Publisher(NS + 'link_states', LinkStates, queue_size=1)
        self._pub_tf = rospy.Publisher('/tf_static', TFMessage, queue_size=1, latch=True)
        self._pub_tf.publish(TFMessage([TransformStamped(
            Header(frame_id=WORLD_FRAME), BASE_FRAME,
            _transform(robot_pose))]))

    # --- the core's world ---------------------------------------------------------------
    @property
    def bodies(self):
        return self._bodies[1]

    @bodies.setter
    def bodies(self, bodies):
        self._bodies = (self._bodies[0], bodies)

    def on_world(self, frame):
        """A WorldFrame from the core: the bodies' states (in base; None: unchanged), the
        gripper's. (It comes just before the state of its tick: until that state is in,
        the bodies are newer than the loop's latest state.)"""
        if frame.bodies is not None:
            self._bodies = (frame.time, {(b.model, b.body): b for b in frame.bodies})
        g = frame.gripper
        if g is not None:
            self.pub_gripper.publish(GripperState(Header(stamp=self._loop.stamp_at(frame.time)),
                                                  g.separation, g.gripping, g.force))

    def _on_gripper_command(self, msg):
        values = (msg.separation, msg.speed, msg.force)
        if not all(math.isfinite(v) for v in values):
            rospy.logerr('%sgripper_command: separation, speed and force must be finite, got %s',
                         SIM_NS, list(values))
            return
        self._send(cmds.SimGripper(separation=msg.separation, speed=msg.speed, force=msg.force))

    def obstacles_changed(self, obstacles):
        """/intera_rt/sim/add_obstacle's obstacles (name → boards.Obstacle) as static models
        of the same world."""
        with self._lock:
            models = {}
            for o in obstacles.values():
                try:
                    models[o.name] = obstacle_model(o.name, o.shape, o.size, Pose(o.position, o.quaternion))
                except WorldError as exc:
                    rospy.logwarn('gazebo world: obstacle %r not shown: %s', o.name, exc)
            self.obstacles = models

    def snapshot(self):
        """Every model's and link's pose and twist in the world, now: at the latest of the
        loop's state and the core's bodies (snap.time)."""
        state = self._loop.state
        bodies_time, bodies = self._bodies
        snap = Snapshot(time=max(state.t, bodies_time))
        q = dict(zip(BOARD_JOINTS, (float(v) for v in state.q)))
        poses = link_poses(self._frames, q, BASE_FRAME)
        robot = self.robot_pose
        snap.models[ROBOT_MODEL] = robot
        for link in self._robot_links:
            if link in poses:
                snap.links[scoped(ROBOT_MODEL, link)] = robot * Pose.from_matrix(poses[link])
        # No lock: the adapter's thread publishes from here while a service thread may hold
        # the lock waiting for the core's answer, which that adapter thread delivers (each
        # copy is atomic under the GIL).
        models = dict(self.world.models)
        obstacles = dict(self.obstacles)
        for name, model in models.items():
            known = {b.name: bodies.get((name, b.name)) for b in model.bodies()}
            if all(known.values()):
                m, links = model_frames(model, body_poses={k: robot * v.pose for k, v in known.items()})
                first = known[model.bodies()[0].name]
                twist = (tuple(first.twist[:3]), tuple(first.twist[3:]))
                snap.model_twists[name] = twist
                for key in links:
                    snap.link_twists[key] = twist
            else:                       # not yet in a state from the core: where spawned
                m, links = model_frames(model)
            snap.models.update(m)
            snap.links.update(links)
        for name, model in obstacles.items():
            if name not in snap.models:
                m, links = model_frames(model)
                snap.models.update(m)
                snap.links.update(links)
        return snap

    def publish(self):
        """model_states and link_states, for whoever listens."""
        want_models = self.pub_models.get_num_connections() > 0
        want_links = self.pub_links.get_num_connections() > 0
        if not (want_models or want_links):
            return
        snap = self.snapshot()
        zero = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        if want_models:
            names = list(snap.models)
            self.pub_models.publish(ModelStates(
                name=names, pose=[pose_msg(snap.models[n]) for n in names],
                twist=[twist_msg(snap.model_twists.get(n, zero)) for n in names]))
        if want_links:
            names = list(snap.links)
            self.pub_links.publish(LinkStates(
                name=names, pose=[pose_msg(snap.links[n]) for n in names],
                twist=[twist_msg(snap.link_twists.get(n, zero)) for n in names]))

    def load(self, path):
        """Spawn the models of the SDF world file `path` (scripts/sawyer --world);
        WorldError naming what is wrong."""
        world = load_world(path, self.resolver, reserved=(ROBOT_MODEL,))
        for model in world.models.values():
            ok, message = self.spawn(model)
            if not ok:
                raise WorldError('world file %s: model %r: %s' % (path, model.name, message))
        return world

    def spawn(self, placed):
        """Add `placed` (a Model at its pose in the world) to the world and the plant:
        (success, message)."""
        with self._lock:
            try:
                if placed.name in self.obstacles:
                    raise WorldError('model_name: a model named %r already exists' % placed.name)
                self.world.add(placed)
            except WorldError as exc:
                return False, str(exc)
            ok, message = self._call(cmds.SimSpawnModel(model=placed, pose=world_to_base(placed.pose, self.robot_pose)))
            if not ok:
                self.world.remove(placed.name)
                return False, message
            self.spawned[placed.name] = placed.pose
            self._publish_scene()
        return True, message

    # --- services -----------------------------------------------------------------------
    def _spawn(self, req):
        try:
            name = req.model_name
            model = parse_model_xml(req.model_xml, self.resolver, name or None)
            if name and model.name != name:
                model = model.with_pose(model.pose, name)
            frame, _ = self.snapshot().frame(req.reference_frame)
            initial = pose_of(req.initial_pose, 'initial_pose')
            placed = model.with_pose(spawn_pose(model.pose, initial, frame))
        except WorldError as exc:
            return SpawnModelResponse(False, 'SpawnModel: Failure - %s' % exc)
        ok, message = self.spawn(placed)
        if not ok:
            return SpawnModelResponse(False, 'SpawnModel: Failure - %s' % message)
        return SpawnModelResponse(True, 'SpawnModel: Successfully spawned entity')

    def _delete(self, req):
        with self._lock:
            try:
                if req.model_name == ROBOT_MODEL:
                    self.world.remove(ROBOT_MODEL)      # (refused, naming the robot)
                if req.model_name in self.obstacles and req.model_name not in self.world.models:
                    raise WorldError('model_name: %r is an add_obstacle obstacle (use '
                                     '/intera_rt/sim/remove_obstacle)' % req.model_name)
                self.world.get(req.model_name)
            except WorldError as exc:
                return DeleteModelResponse(False, 'DeleteModel: %s' % exc)
            ok, message = self._call(cmds.SimDeleteModel(name=req.model_name))
            if not ok:
                return DeleteModelResponse(False, 'DeleteModel: %s' % message)
            self.world.remove(req.model_name)
            self.spawned.pop(req.model_name, None)
            self._publish_scene()
            self.bodies = {k: v for k, v in self.bodies.items() if k[0] != req.model_name}
        return DeleteModelResponse(True, 'DeleteModel: successfully deleted model')

    def _publish_scene(self):
        """The latched /intera_rt/sim/world: a JSON list of the spawned models, each {name,
        links: [{name, visuals: [{shape, size, position, quaternion (x, y, z, w) in the
        link's frame, path (a mesh's file)}]}]}; republished on every spawn and delete."""
        with self._lock:
            models = list(self.world.models.values())
        self._pub_scene.publish(String(json.dumps([
            {'name': m.name, 'links': [{'name': l.name, 'visuals': [_visual(v) for v in l.visuals]}
                                       for l in m.links]} for m in models])))

    def _get_model_state(self, req):
        # (stamped with the snapshot's instant: the bodies may be a state period newer than
        # the loop's latest state)
        snap = self.snapshot()
        header = Header(stamp=self._loop.stamp_at(snap.time),
                        frame_id=req.relative_entity_name or WORLD_FRAME)
        try:
            pose, twist = snap.model_state(req.model_name, req.relative_entity_name)
        except WorldError as exc:
            return GetModelStateResponse(header, PoseMsg(), Twist(), False, 'GetModelState: %s' % exc)
        return GetModelStateResponse(header, pose_msg(pose), twist_msg(twist), True,
                                     'GetModelState: got properties')

    def _get_link_state(self, req):
        try:
            pose, twist = self.snapshot().link_state(req.link_name, req.reference_frame)
        except WorldError as exc:
            return GetLinkStateResponse(LinkState(), False, 'GetLinkState: %s' % exc)
        return GetLinkStateResponse(LinkState(req.link_name, pose_msg(pose), twist_msg(twist),
                                              req.reference_frame), True, 'GetLinkState: got state')

    def _set_model_state(self, req):
        ok, message = self.set_model_state(req.model_state)
        return SetModelStateResponse(ok, 'SetModelState: %s' % message)

    def _set_model_state_topic(self, msg):
        ok, message = self.set_model_state(msg)
        if not ok:
            rospy.logerr('/gazebo/set_model_state: %s', message)

    def set_model_state(self, state):
        """A gazebo_msgs/ModelState applied: (success, message)."""
        with self._lock:
            try:
                name = state.model_name
                if name == ROBOT_MODEL:
                    raise WorldError('model_name: %r is the robot, fixed at its base (move its '
                                     'joints instead)' % name)
                if name in self.obstacles:
                    raise WorldError('model_name: %r is an add_obstacle obstacle (use '
                                     '/intera_rt/sim/add_obstacle to move it)' % name)
                self.world.get(name)
                frame, _ = self.snapshot().frame(state.reference_frame)
                pose = frame * pose_of(state.pose, 'pose')
                t = state.twist
                twist = twist_to_world((_finite((t.linear.x, t.linear.y, t.linear.z), 'twist.linear'),
                                        _finite((t.angular.x, t.angular.y, t.angular.z), 'twist.angular')),
                                       frame)
            except WorldError as exc:
                return False, str(exc)
            return self._call(cmds.SimSetModelState(name=name, pose=world_to_base(pose, self.robot_pose),
                                                    twist=twist[0] + twist[1]))

    def _get_model_properties(self, req):
        name = req.model_name
        if name == ROBOT_MODEL:
            return GetModelPropertiesResponse(
                '', BASE_FRAME, list(self._robot_links), [], list(self._frames.movable), [], False,
                True, 'GetModelProperties: got properties')
        with self._lock:
            model = self.world.models.get(name) or self.obstacles.get(name)
        if model is None:
            return GetModelPropertiesResponse(
                success=False, status_message='GetModelProperties: model_name: no model named %r '
                '(models: %s)' % (name, ', '.join(self._model_names())))
        return GetModelPropertiesResponse(
            '', model.canonical_link, list(model.link_names), list(model.collision_names()),
            [j.name for j in model.joints], [], model.anchored, True,
            'GetModelProperties: got properties')

    def _model_names(self):
        with self._lock:
            return [ROBOT_MODEL] + list(self.world.models) + [n for n in self.obstacles
                                                              if n not in self.world.models]

    def _get_world_properties(self, _req):
        return GetWorldPropertiesResponse(self._loop.state.t, self._model_names(), True, True,
                                          'GetWorldProperties: got properties')

    def _apply_body_wrench(self, req):
        try:
            model, link = parse_reference(req.body_name, 'body_name')
            if model is None or link is None:
                raise WorldError('body_name: %r: expected "model::link"' % req.body_name)
            snap = self.snapshot()
            snap.frame(req.body_name, 'body_name')
            frame, _ = snap.frame(req.reference_frame)
            w = req.wrench
            force = _finite((w.force.x, w.force.y, w.force.z), 'wrench.force')
            torque = _finite((w.torque.x, w.torque.y, w.torque.z), 'wrench.torque')
            point = _finite((req.reference_point.x, req.reference_point.y, req.reference_point.z),
                            'reference_point')
            duration = req.duration.to_sec()
            # (base's axes are the world's: rotating into the world is rotating into base)
            force, torque = twist_to_world((force, torque), frame)
        except WorldError as exc:
            return ApplyBodyWrenchResponse(False, 'ApplyBodyWrench: %s' % exc)
        # start_time is ROS time (0: now); the core counts its own loop time
        start = req.start_time.to_sec()
        start = start - self._loop.loop_time_offset() if start > 0 else 0.0
        if model == ROBOT_MODEL:
            if not duration > 0:
                return ApplyBodyWrenchResponse(False, 'ApplyBodyWrench: duration: a wrench on the '
                                               'robot needs a duration > 0 s, got %r' % duration)
            ok, message = self._call(cmds.SimWrench(link=link, wrench=force + torque, duration=duration,
                                                    start=start))
            return ApplyBodyWrenchResponse(ok, 'ApplyBodyWrench: %s' % message)
        body = self._body_of(model, link)
        ok, message = self._call(cmds.SimBodyWrench(model=model, body=body, force=force, torque=torque,
                                                    point=point, duration=duration if duration > 0 else -1.0,
                                                    start=start))
        return ApplyBodyWrenchResponse(ok, 'ApplyBodyWrench: %s' % message)

    def _body_of(self, model, link):
        """The rigid body (its root link's name) that `link` of `model` is welded into."""
        with self._lock:
            m = self.world.models.get(model) or self.obstacles.get(model)
        for body in m.bodies():
            if link in dict(body.links):
                return body.name
        return link

    def _clear_body_wrenches(self, req):
        try:
            model, link = parse_reference(req.body_name, 'body_name')
            if model is None or link is None:
                raise WorldError('body_name: %r: expected "model::link"' % req.body_name)
            self.snapshot().frame(req.body_name, 'body_name')
        except WorldError as exc:
            rospy.logerr('/gazebo/clear_body_wrenches: %s', exc)
            return BodyRequestResponse()
        if model == ROBOT_MODEL:
            ok, message = self._call(cmds.SimClearWrenches(link=link))
        else:
            ok, message = self._call(cmds.SimClearBodyWrenches(model=model, body=self._body_of(model, link)))
        if not ok:
            rospy.logerr('/gazebo/clear_body_wrenches: %s', message)
        return BodyRequestResponse()

    def _pause(self, paused):
        ok, message = self._call(cmds.SimPause(paused=paused))
        if ok:
            self.paused = paused
        else:
            rospy.logerr('/gazebo/%s_physics: %s', 'pause' if paused else 'unpause', message)
        return EmptyResponse()

    def _reset(self, simulation):
        """reset_world: every spawned model back where it was spawned, at rest, its wrenches
        dropped. reset_simulation: also the arm at its boot pose (time goes on: see
        docs/world.md)."""
        with self._lock:
            for name, pose in self.spawned.items():
                model = self.world.models[name]
                for body in model.bodies():
                    self._call(cmds.SimClearBodyWrenches(model=name, body=body.name))
                ok, message = self._call(cmds.SimSetModelState(name=name, pose=world_to_base(pose, self.robot_pose),
                                                               twist=(0.0,) * 6))
                if not ok:
                    rospy.logerr('/gazebo/reset: %s: %s', name, message)
        if simulation:
            ok, message = self._call(cmds.SimJointPositions(names=(), positions=self.boot_pose))
            if not ok:
                rospy.logerr('/gazebo/reset_simulation: the arm: %s', message)
        return EmptyResponse()


def _visual(visual):
    g = visual.geometry
    size = {'box': lambda: list(g.size), 'sphere': lambda: [g.radius],
            'cylinder': lambda: [g.radius, g.length], 'plane': lambda: list(g.size),
            'mesh': lambda: list(g.scale)}[g.kind]()
    return {'shape': g.kind, 'size': size, 'position': list(visual.pose.position),
            'quaternion': list(visual.pose.quaternion), 'path': getattr(g, 'path', '')}


def _transform(pose):
    return Transform(Vector3(*pose.position), Quaternion(*pose.quaternion))
