"""rviz_markers: what RViz cannot read from the robot by itself, as topics its displays read.
Started by ``scripts/sawyer --rviz`` with RViz (config/sawyer.rviz); not part of a Sawyer.

  /intera_rt/rviz/avoidance_shapes  visualization_msgs/MarkerArray, latched: the collision-
        avoidance (armnav) shapes of /robot/armnav_robot_description (every collision
        primitive of the tight model inflated 5 cm), one translucent marker per shape in its
        link's frame (frame_locked: RViz moves them with /tf). The pedestal, controller box
        and feet are left out: avoidance does not use them (model.avoidance.UNUSED_LINKS).
  /intera_rt/rviz/obstacles  visualization_msgs/MarkerArray, latched: the simulated cell's
        obstacles (/intera_rt/sim/obstacles, the realtime_loop's list of what
        /intera_rt/sim/add_obstacle placed) in base, each with its name above it; rebuilt
        whole on every change.
  /intera_rt/rviz/world  visualization_msgs/MarkerArray: the world's spawned models
        (/intera_rt/sim/world: their visuals) where /gazebo/link_states puts their links, in
        `world`, at most WORLD_RATE Hz of wall-clock time.
  /intera_rt/rviz/endpoint_pose  geometry_msgs/PoseStamped: /robot/limb/right/endpoint_state's
        pose in base, at most ~endpoint_rate Hz (default 20) of wall-clock time.

Nothing here is sent to the robot.
"""
import json
import math
import time
import xml.etree.ElementTree as ET

import rospy
from gazebo_msgs.msg import LinkStates
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion, Vector3
from intera_core_msgs.msg import EndpointState
from std_msgs.msg import ColorRGBA, Header, String
from visualization_msgs.msg import Marker, MarkerArray

ARMNAV_PARAM = '/robot/armnav_robot_description'
OBSTACLES_TOPIC = '/intera_rt/sim/obstacles'
WORLD_TOPIC = '/intera_rt/sim/world'
LINK_STATES_TOPIC = '/gazebo/link_states'
WORLD_FRAME = 'world'
WORLD_RATE = 10.0                                      # Hz of wall time, at most
WORLD_COLOR = ColorRGBA(0.85, 0.6, 0.25, 1.0)          # wood-ish: the world's models
ENDPOINT_TOPIC = '/robot/limb/right/endpoint_state'
NS = '/intera_rt/rviz/'
BASE_FRAME = 'base'
# The links whose armnav shapes avoidance leaves out (seed 000), as model.avoidance says;
# written out here so that this node does not load pinocchio.
UNUSED_LINKS = ('pedestal', 'controller_box', 'pedestal_feet')
AVOIDANCE_COLOR = ColorRGBA(0.25, 0.55, 1.0, 0.18)     # translucent blue: over the red arm
OBSTACLE_COLOR = ColorRGBA(0.1, 0.8, 0.2, 0.85)        # green
LABEL_COLOR = ColorRGBA(1.0, 1.0, 1.0, 1.0)
LABEL_HEIGHT = 0.05                                    # m, text height of obstacle names
SHAPES_PERIOD = 2.0                                    # s between avoidance shape messages


def _floats(text, n, default):
    if text is None:
        return list(default)
    values = [float(v) for v in text.split()]
    if len(values) != n:
        raise ValueError('expected %d numbers, got %r' % (n, text))
    return values


def quaternion_from_rpy(roll, pitch, yaw):
    """URDF's fixed-axis roll, pitch, yaw → (x, y, z, w)."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def shape_markers(urdf_xml, exclude=UNUSED_LINKS, color=AVOIDANCE_COLOR, ns='avoidance'):
    """One Marker per <collision> primitive (box, cylinder, sphere) of `urdf_xml`, in its
    link's frame, frame_locked. Links in `exclude` are left out; meshes are skipped.

    Returns:
        list of visualization_msgs/Marker (ids 0..n-1, namespace `ns`).
    """
    markers = []
    for link in ET.fromstring(urdf_xml).iter('link'):
        name = link.get('name')
        if name in exclude:
            continue
        for collision in link.findall('collision'):
            geometry = collision.find('geometry')
            if geometry is None or not len(geometry):
                continue
            shape = geometry[0]
            if shape.tag == 'box':
                kind, scale = Marker.CUBE, _floats(shape.get('size'), 3, ())
            elif shape.tag == 'cylinder':
                r, length = float(shape.get('radius')), float(shape.get('length'))
                kind, scale = Marker.CYLINDER, (2 * r, 2 * r, length)
            elif shape.tag == 'sphere':
                r = float(shape.get('radius'))
                kind, scale = Marker.SPHERE, (2 * r, 2 * r, 2 * r)
            else:
                continue
            origin = collision.find('origin')
            xyz = _floats(None if origin is None else origin.get('xyz'), 3, (0, 0, 0))
            rpy = _floats(None if origin is None else origin.get('rpy'), 3, (0, 0, 0))
            markers.append(Marker(
                header=Header(frame_id=name), ns=ns, id=len(markers), type=kind,
                action=Marker.ADD, pose=Pose(Point(*xyz), Quaternion(*quaternion_from_rpy(*rpy))),
                scale=Vector3(*scale), color=color, frame_locked=True))
    return markers


def obstacle_markers(obstacles, color=OBSTACLE_COLOR):
    """Markers for the obstacles of /intera_rt/sim/obstacles (dicts: name, shape, position,
    quaternion, size): a DELETEALL first (the list replaces what was shown), then per
    obstacle its shape and its name above it, in base.

    Returns:
        list of visualization_msgs/Marker.
    """
    markers = [Marker(action=Marker.DELETEALL)]
    for i, o in enumerate(obstacles):
        size = [float(s) for s in o['size']]
        if o['shape'] == 'sphere':
            kind, scale = Marker.SPHERE, [2 * size[0]] * 3
        else:
            kind, scale = Marker.CUBE, size
        position = [float(p) for p in o['position']]
        header = Header(frame_id=BASE_FRAME)
        markers.append(Marker(
            header=header, ns='obstacles', id=i, type=kind, action=Marker.ADD,
            pose=Pose(Point(*position), Quaternion(*[float(q) for q in o['quaternion']])),
            scale=Vector3(*scale), color=color))
        top = position[2] + max(scale) / 2 + LABEL_HEIGHT
        markers.append(Marker(
            header=header, ns='obstacle_names', id=i, type=Marker.TEXT_VIEW_FACING,
            action=Marker.ADD, pose=Pose(Point(position[0], position[1], top), Quaternion(0, 0, 0, 1)),
            scale=Vector3(0, 0, LABEL_HEIGHT), color=LABEL_COLOR, text=str(o['name'])))
    return markers


def _compose(p1, q1, p2, q2):
    """(p1, q1) ∘ (p2, q2): positions and x y z w quaternions."""
    x1, y1, z1, w1 = q1
    x2, y2, z2, w2 = q2
    q = (w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
         w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2)
    # rotate p2 by q1: v + 2w (u × v) + 2 u × (u × v)
    u, v = (x1, y1, z1), p2
    c = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    cc = (u[1] * c[2] - u[2] * c[1], u[2] * c[0] - u[0] * c[2], u[0] * c[1] - u[1] * c[0])
    p = tuple(p1[i] + v[i] + 2 * w1 * c[i] + 2 * cc[i] for i in range(3))
    return p, q


def world_markers(models, link_poses, color=WORLD_COLOR):
    """Markers for the world's models (/intera_rt/sim/world's list) at their links' poses
    ("model::link" → (position, quaternion) in the world, from /gazebo/link_states): a
    DELETEALL first, then one marker per visual; a link without a pose is left out."""
    markers = [Marker(action=Marker.DELETEALL)]
    header = Header(frame_id=WORLD_FRAME)
    for model in models:
        for link in model['links']:
            at = link_poses.get('%s::%s' % (model['name'], link['name']))
            if at is None:
                continue
            for v in link['visuals']:
                p, q = _compose(at[0], at[1], v['position'], v['quaternion'])
                size = [float(x) for x in v['size']]
                marker = Marker(header=header, ns='world/' + model['name'], id=len(markers),
                                action=Marker.ADD, pose=Pose(Point(*p), Quaternion(*q)), color=color)
                shape = v['shape']
                if shape == 'box':
                    marker.type, marker.scale = Marker.CUBE, Vector3(*size)
                elif shape == 'sphere':
                    marker.type, marker.scale = Marker.SPHERE, Vector3(*[2 * size[0]] * 3)
                elif shape == 'cylinder':
                    marker.type, marker.scale = Marker.CYLINDER, Vector3(2 * size[0], 2 * size[0], size[1])
                elif shape == 'mesh':
                    marker.type, marker.scale = Marker.MESH_RESOURCE, Vector3(*size)
                    marker.mesh_resource = 'file://' + v['path']
                else:                                   # a plane: a thin square
                    marker.type, marker.scale = Marker.CUBE, Vector3(size[0], size[1], 0.001)
                markers.append(marker)
    return markers


class RvizMarkers:
    def __init__(self):
        self.pub_shapes = rospy.Publisher(NS + 'avoidance_shapes', MarkerArray, queue_size=1,
                                          latch=True)
        self.pub_obstacles = rospy.Publisher(NS + 'obstacles', MarkerArray, queue_size=1,
                                             latch=True)
        self.pub_endpoint = rospy.Publisher(NS + 'endpoint_pose', PoseStamped, queue_size=1)
        self.endpoint_interval = 1.0 / max(float(rospy.get_param('~endpoint_rate', 20.0)), 0.1)
        self.last_endpoint = 0.0
        urdf = rospy.get_param(ARMNAV_PARAM, None)
        self.shapes = MarkerArray(shape_markers(urdf) if urdf else [])
        if urdf:
            rospy.loginfo('rviz_markers: %d avoidance shapes on %savoidance_shapes',
                          len(self.shapes.markers), NS)
        else:
            rospy.logwarn('rviz_markers: no %s: no avoidance shapes to show', ARMNAV_PARAM)
        self.pub_shapes.publish(self.shapes)
        # Again now and then: RViz marks a frame-locked marker that arrived before its link's
        # /tf with a transform error and keeps the error until the marker arrives again.
        rospy.Timer(rospy.Duration(SHAPES_PERIOD), lambda _: self.pub_shapes.publish(self.shapes))
        rospy.Subscriber(OBSTACLES_TOPIC, String, self._on_obstacles, queue_size=1)
        self.pub_world = rospy.Publisher(NS + 'world', MarkerArray, queue_size=1)
        self.world_models, self.last_world = [], 0.0
        rospy.Subscriber(WORLD_TOPIC, String, self._on_world, queue_size=1)
        rospy.Subscriber(LINK_STATES_TOPIC, LinkStates, self._on_link_states, queue_size=1)
        rospy.Subscriber(ENDPOINT_TOPIC, EndpointState, self._on_endpoint, queue_size=1)

    def _on_obstacles(self, msg):
        try:
            markers = obstacle_markers(json.loads(msg.data))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            rospy.logwarn('rviz_markers: cannot read %s (%s): %r', OBSTACLES_TOPIC, exc,
                          msg.data[:200])
            return
        self.pub_obstacles.publish(MarkerArray(markers))

    def _on_world(self, msg):
        try:
            self.world_models = json.loads(msg.data)
        except ValueError as exc:
            rospy.logwarn('rviz_markers: cannot read %s (%s)', WORLD_TOPIC, exc)
        self.last_world = 0.0                           # redraw at the next link states

    def _on_link_states(self, msg):
        now = time.monotonic()
        if now - self.last_world < 1.0 / WORLD_RATE:
            return
        self.last_world = now
        poses = {name: ((p.position.x, p.position.y, p.position.z),
                        (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))
                 for name, p in zip(msg.name, msg.pose)}
        try:
            markers = world_markers(self.world_models, poses)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            rospy.logwarn('rviz_markers: cannot draw %s (%s)', WORLD_TOPIC, exc)
            return
        self.pub_world.publish(MarkerArray(markers))

    def _on_endpoint(self, msg):
        now = time.monotonic()
        if now - self.last_endpoint < self.endpoint_interval:
            return
        self.last_endpoint = now
        self.pub_endpoint.publish(PoseStamped(
            header=Header(stamp=msg.header.stamp, frame_id=BASE_FRAME), pose=msg.pose))


def main():
    rospy.init_node('rviz_markers')
    RvizMarkers()
    rospy.spin()
