"""CameraIO, in the io node: the internal cameras' IO node ('internal_camera') and their images.

IO framework topics: /io/internal_camera/{config,state,command} (the node config's plugin
lists the cameras configured to launch under params.cameras, as the SDK's Cameras reads
it) and /io/internal_camera/<camera>/{config,state,command} for every camera in
/robot_config/camera_config that this robot has (head_camera, right_hand_camera); signals
in intera_rt.io.camera.

Images, while a camera streams (camera_streaming true; one camera at a time):
  head_camera        image_raw, image_rect_color  sensor_msgs/Image bgr8
  right_hand_camera  image_raw, image_rect        sensor_msgs/Image mono8
  both               camera_info                  sensor_msgs/CameraInfo (no distortion)
under /io/internal_camera/<camera>/, header.frame_id the camera's optical frame in the URDF
(head_camera; right_hand_camera_optical), stamped with the joint state they show.
They are rendered (intera_rt.io.render) from the robot's visual shapes (those of
/robot_description, and of the URDF fragments grafted later: a gripper) at its current
joint angles (/robot/joint_states, subscribed only while a camera streams) seen from the
camera's frame, then scaled by exposure, gain and strobe; the head's screen shows what
/robot/head_display last showed (HeadDisplayIO), when a camera sees it. The world is drawn
with the robot: the spawned models' visuals (the latched /intera_rt/sim/world) where
/gazebo/link_states puts their links (subscribed only while a camera streams; boxes,
cylinders, spheres, planes; meshes are not drawn) and /intera_rt/sim/obstacles' obstacles.

With `--backend mujoco`, MuJoCo renders them offscreen in this process (mujoco_cameras:
the backend's cell and table, the robot's description rebuilt in the background when a
fragment changes it, a gripper's fingers where the gripper reports them (position_response_m
of /io/end_effector/right_gripper/state, subscribed only while a camera streams), and the
same world shapes, meshes too; the head's screen is not drawn); without OpenGL, the software
renderer does, with one warning.

A frame is rendered only while a camera streams and something subscribes, at most at the
camera's rate, rays at ~render_scale of the resolution; a still arm's last frame is resent.
Private parameters: ~render_scale (default 0.5), ~<camera>/width, ~<camera>/height,
~<camera>/rate (Hz) — defaults in intera_rt.io.camera.CAMERAS.
"""
import json
import threading
import time

import numpy as np
import rospy
from gazebo_msgs.msg import LinkStates
from intera_core_msgs.msg import IODeviceStatus
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Header, String

from intera_rt.boards.mjcf import finger_position
from intera_rt.io.camera import CAMERAS, InternalCamera
from intera_rt.io.render import (Camera, Scene, intrinsics, obstacle_shapes, render, resize_nearest,
                                  to_bgr8, to_mono8, world_shapes)
from intera_rt.model import default_urdf_path
from intera_rt.model.joint_frames import pose_matrix
from intera_rt.ros.io.framework import IONode
from intera_rt.ros.robot_commands import signal_value
from intera_rt.ros.urdf_fragments import DESCRIPTION_TOPIC
from intera_rt.world.frames import ROBOT_MODEL, ROBOT_POSE

NS = '/io/internal_camera/'
POSITION_RESOLUTION = 1e-4        # rad: a joint moving less than this does not re-render
WORLD_TOPIC = '/intera_rt/sim/world'
OBSTACLES_TOPIC = '/intera_rt/sim/obstacles'
LINK_STATES_TOPIC = '/gazebo/link_states'
GRIPPER_TOPIC = '/io/end_effector/right_gripper/state'
POSE_RESOLUTION = 1e-4            # m (and quaternion units): a model moving less does not re-render
STAT_EVERY = 30.0                 # s between render-time log lines while streaming
FIRST_STAT = 5.0                  # s: the first one after a camera starts streaming


class CameraStream:
    """The image topics of one camera and its rendering (with the last frame kept)."""

    def __init__(self, device, scene, render_scale):
        spec = device.spec
        self.device, self.scene = device, scene
        self.width, self.height = int(spec['width']), int(spec['height'])
        self.frame = spec['frame']
        self.color = spec['color']
        self.encoding = 'bgr8' if self.color else 'mono8'
        self.camera = Camera(max(8, round(self.width * render_scale)),
                             max(8, round(self.height * render_scale)), spec['hfov'], spec['near'])
        ns = NS + device.name + '/'
        self.pubs = [rospy.Publisher(ns + 'image_raw', Image, queue_size=1),
                     rospy.Publisher(ns + ('image_rect_color' if self.color else 'image_rect'),
                                     Image, queue_size=1)]
        self.pub_info = rospy.Publisher(ns + 'camera_info', CameraInfo, queue_size=1)
        f, cx, cy = intrinsics(self.width, self.height, spec['hfov'])
        self.info = CameraInfo(height=self.height, width=self.width, distortion_model='plumb_bob',
                               D=[0.0] * 5, K=[f, 0, cx, 0, f, cy, 0, 0, 1],
                               R=[1, 0, 0, 0, 1, 0, 0, 0, 1], P=[f, 0, cx, 0, 0, f, cy, 0, 0, 0, 1, 0])
        self.mujoco = None              # a MujocoCameras that renders this camera, or None
        self._key = None
        self._data = None
        self.renders = 0
        self.render_time = 0.0

    def wanted(self):
        return any(p.get_num_connections() > 0 for p in self.pubs + [self.pub_info])

    def publish(self, positions, stamp, brightness, screens=(0, None), extra=(None, ()),
                separation=None):
        """One frame; `screens`: (version, {link: image}) of the displays to draw; `extra`:
        (key, [(Shape, pose)]) of the world's models and obstacles; `separation`: the
        gripper's fingers' gap (m; None: closed)."""
        key = (tuple(sorted((n, round(q / POSITION_RESOLUTION)) for n, q in positions.items())),
               round(brightness, 4), screens[0], extra[0],
               None if separation is None else round(separation / POSITION_RESOLUTION),
               self.mujoco.update() if self.mujoco is not None else None)
        if key != self._key:
            t0 = time.perf_counter()
            if self.mujoco is not None:
                rgb = self.mujoco.render(self.device.name, positions, extra[1], separation)
            else:
                scene = self.scene          # (one scene for the frame: a new one may arrive)
                if separation is not None and scene.fingers:
                    positions = dict(positions, **{name: finger_position(lower, upper, separation)
                                                   for name, lower, upper in scene.fingers})
                poses = scene.link_poses(positions)
                rgb, _ = render(scene, positions, poses[self.frame], self.camera, screens[1],
                                extra[1])
            img = to_bgr8(rgb, brightness) if self.color else to_mono8(rgb, brightness)
            self._data = resize_nearest(img, self.height, self.width).tobytes()
            self._key = key
            self.render_time += time.perf_counter() - t0
            self.renders += 1
        header = Header(stamp=stamp, frame_id=self.frame)
        msg = Image(header=header, height=self.height, width=self.width, encoding=self.encoding,
                    is_bigendian=0, step=self.width * (3 if self.color else 1), data=self._data)
        for pub in self.pubs:
            if pub.get_num_connections() > 0:
                pub.publish(msg)
        if self.pub_info.get_num_connections() > 0:
            self.info.header = header
            self.pub_info.publish(self.info)


class CameraIO:
    def __init__(self, display=None):
        """display: a HeadDisplayIO whose screen the cameras show (None: none drawn)."""
        self.display = display
        configured = rospy.get_param('/robot_config/camera_config', {}) or {}
        render_scale = float(rospy.get_param('~render_scale', 0.5))
        if not 0.05 <= render_scale <= 1.0:
            raise SystemExit('io_internal_camera: ~render_scale = %r is outside [0.05, 1]' % render_scale)
        urdf = rospy.get_param('/robot_description', None)
        if urdf is None:
            with open(default_urdf_path()) as f:
                urdf = f.read()
        scene = Scene(urdf)
        self._urdf, self._render_scale = urdf, render_scale
        self.devices, self.streams = {}, {}
        for name in sorted(configured):
            if name not in CAMERAS:
                rospy.logwarn('io_internal_camera: /robot_config/camera_config names %r; this robot '
                              'has cameras %s only', name, ', '.join(sorted(CAMERAS)))
                continue
            spec = dict(CAMERAS[name])
            for key in ('width', 'height', 'rate'):
                spec[key] = rospy.get_param('~%s/%s' % (name, key), spec[key])
            if not (int(spec['width']) >= 8 and int(spec['height']) >= 8 and 0 < float(spec['rate']) <= 60):
                raise SystemExit('io_internal_camera: %s: width %r, height %r, rate %r: expected '
                                 '≥ 8 pixels and 0 < rate ≤ 60 Hz' % (name, spec['width'],
                                                                       spec['height'], spec['rate']))
            given = configured[name].get('cameraType') if isinstance(configured[name], dict) else None
            if given and given != spec['camera_type']:
                rospy.logwarn('io_internal_camera: %s: cameraType %r in /robot_config/camera_config; '
                              'this robot\'s %s is %r', name, given, name, spec['camera_type'])
            self.devices[name] = InternalCamera(name, spec, self._streaming_other)
        plugin = {'params': {'cameras': [{'name': n, 'cameraType': d.spec['camera_type']}
                                         for n, d in self.devices.items()]}}
        self.io = IONode('internal_camera', plugins=[('internal_camera', plugin)])
        for name, device in self.devices.items():
            self.streams[name] = CameraStream(device, scene, render_scale)
            self.io.add_device(device).on_applied.append(self._on_applied)
        self._positions = None
        self._stamp = None
        self._sub = None
        self._wake = threading.Event()
        self.renderer = 'software'
        self.mujoco = None              # a MujocoCameras once the cameras thread made one
        self._obstacles = None          # the latest /intera_rt/sim/obstacles list
        self._world = []                # /intera_rt/sim/world's models
        self._world_version = 0         # counts the changes of the world's and obstacles' lists
        self._link_poses = {}           # "model::link" → (position, quaternion) in the world
        self._link_sub = None
        self._gripper_sub = None
        self._separation = None         # m: the gripper's fingers' gap (None: closed)
        self._description = None        # a description that came before MuJoCo's cameras
        self._rebuilds = (0, None)      # MuJoCo's description rebuilds and error, logged
        self._warned = set()            # meshes MuJoCo's cameras could not draw, warned of
        self._world_to_base = np.linalg.inv(pose_matrix(ROBOT_POSE.position, ROBOT_POSE.quaternion))
        threading.Thread(target=self._loop, name='cameras', daemon=True).start()
        rospy.Subscriber(DESCRIPTION_TOPIC, String, self._on_description, queue_size=1)
        rospy.Subscriber(OBSTACLES_TOPIC, String, self._on_obstacles, queue_size=1)
        rospy.Subscriber(WORLD_TOPIC, String, self._on_world, queue_size=1)
        self.io.start()

    def _on_description(self, msg):
        """A URDF fragment changed the robot's description (a gripper attached): the
        software renderer draws its shapes from the next frame, MuJoCo's once its cell is
        rebuilt."""
        self._description = msg.data
        if self.mujoco is not None:
            self.mujoco.set_description(msg.data)
        try:
            scene = Scene(msg.data)
        except Exception as exc:       # noqa: BLE001 - realtime_loop checked it; keep drawing
            rospy.logwarn('io_internal_camera: the new robot description cannot be drawn (%s); '
                          'the images keep the previous one', exc)
            return
        for stream in self.streams.values():
            stream.scene, stream._key = scene, None
        self._wake.set()

    def _streaming_other(self, name):
        return next((n for n, d in self.devices.items() if n != name and d.streaming), None)

    def _on_applied(self, device, msg, response):
        streaming = any(d.streaming for d in self.devices.values())
        if streaming and self._sub is None:
            self._sub = rospy.Subscriber('/robot/joint_states', JointState, self._on_joints, queue_size=1)
            self._link_sub = rospy.Subscriber(LINK_STATES_TOPIC, LinkStates, self._on_link_states,
                                              queue_size=1)
            self._gripper_sub = rospy.Subscriber(GRIPPER_TOPIC, IODeviceStatus, self._on_gripper,
                                                 queue_size=1)
        elif not streaming and self._sub is not None:
            for sub in (self._sub, self._link_sub, self._gripper_sub):
                if sub is not None:
                    sub.unregister()
            self._sub = self._link_sub = self._gripper_sub = None
        self._wake.set()

    def _on_joints(self, msg):
        if len(msg.name) == len(msg.position):
            self._positions = dict(zip(msg.name, msg.position))
            self._stamp = msg.header.stamp

    def _on_gripper(self, msg):
        """The gripper's reported finger gap (it follows the plant's fingers when the
        world has models; otherwise the device simulates them)."""
        value = next((signal_value(s) for s in msg.signals if s.name == 'position_response_m'), None)
        if isinstance(value, (int, float)):
            self._separation = float(value)

    def _on_world(self, msg):
        try:
            world = json.loads(msg.data)
            assert isinstance(world, list)
        except (ValueError, AssertionError):
            rospy.logwarn('io_internal_camera: %s is not a JSON list: %r', WORLD_TOPIC, msg.data[:200])
            return
        self._world = world
        self._world_version += 1
        self._wake.set()

    def _on_link_states(self, msg):
        skip = ROBOT_MODEL + '::'
        self._link_poses = {
            name: ((p.position.x, p.position.y, p.position.z),
                   (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))
            for name, p in zip(msg.name, msg.pose) if not name.startswith(skip)}

    def _extra(self):
        """(key, [(Shape, pose in base)]): the world's models at their latest link poses and
        the obstacles, for either renderer; the key changes when what is drawn does."""
        world, links, obstacles = self._world, self._link_poses, self._obstacles or []
        key = (self._world_version,
               tuple(sorted((n, tuple(round(v / POSE_RESOLUTION) for v in p + q))
                            for n, (p, q) in links.items())))
        poses = {n: self._world_to_base @ pose_matrix(p, q) for n, (p, q) in links.items()}
        try:
            return key, world_shapes(world, poses) + obstacle_shapes(obstacles)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            rospy.logwarn_throttle(10.0, 'io_internal_camera: cannot draw the world (%s)' % exc)
            return None, []

    def _start_mujoco(self):
        """MuJoCo renders the cameras when the robot runs on the MuJoCo backend (in this
        thread: its OpenGL context is current here)."""
        if rospy.get_param('/realtime_loop/backend', 'embedded') != 'mujoco':
            rospy.loginfo('io_internal_camera: the cameras are rendered by the software renderer')
            return
        options = rospy.get_param('/realtime_loop/backend_options', {}) or {}
        try:
            from intera_rt.ros.io.mujoco_cameras import MujocoCameras
            cams = MujocoCameras(self._urdf, {n: d.spec for n, d in self.devices.items()},
                                 self._render_scale, table=bool(options.get('table', False)))
            for name in self.devices:            # compiles the shaders: not in a streamed frame
                cams.render(name, {})
        except Exception as exc:  # noqa: BLE001 - no OpenGL shows in many error types
            rospy.logwarn('io_internal_camera: MuJoCo offscreen rendering is unavailable (%s: %s); '
                          'the cameras are rendered by the software renderer',
                          type(exc).__name__, exc)
            return
        import os
        for stream in self.streams.values():
            stream.mujoco = cams
        self.mujoco = cams
        if self._description is not None:        # a fragment grafted while it was built
            cams.set_description(self._description)
        self.renderer = 'MuJoCo'
        rospy.loginfo('io_internal_camera: the cameras are rendered by MuJoCo offscreen '
                      '(MUJOCO_GL=%s)', os.environ.get('MUJOCO_GL'))

    def _warn_unloadable(self):
        """One warning per mesh MuJoCo's cameras leave out (a file gone since its spawn)."""
        for key, why in list(self.mujoco.unloadable.items() if self.mujoco is not None else ()):
            if key not in self._warned:
                self._warned.add(key)
                rospy.logwarn('io_internal_camera: the images leave out mesh %s: %s', key[0], why)

    def _report_rebuild(self):
        """A log line when MuJoCo's images change to a new robot description (with its
        rebuild time), a warning when one cannot be drawn."""
        cams = self.mujoco
        if cams is None or (cams.descriptions, cams.build_error) == self._rebuilds:
            return
        if cams.build_error is not None and cams.build_error != self._rebuilds[1]:
            rospy.logwarn('io_internal_camera: MuJoCo cannot draw the new robot description (%s); '
                          'the images keep the previous one', cams.build_error)
        if cams.descriptions != self._rebuilds[0]:
            rospy.loginfo('io_internal_camera: MuJoCo\'s images show the new robot description '
                          '(its cell rebuilt in %.2f s)', cams.build_time)
        self._rebuilds = (cams.descriptions, cams.build_error)

    def _on_obstacles(self, msg):
        try:
            obstacles = json.loads(msg.data)
            assert isinstance(obstacles, list)
        except (ValueError, AssertionError):
            rospy.logwarn('io_internal_camera: /intera_rt/sim/obstacles is not a JSON list: %r',
                          msg.data[:200])
            return
        self._obstacles = obstacles
        self._world_version += 1
        self._wake.set()

    def _loop(self):
        self._start_mujoco()
        last_log = time.monotonic()
        announced = None
        while not rospy.is_shutdown():
            with self.io.lock:
                name = next((n for n, d in self.devices.items() if d.streaming), None)
                brightness = self.devices[name].brightness() if name else 1.0
            if name is None:
                announced = None
            if name is None or self._positions is None:
                self._wake.wait(0.5 if name is None else 0.02)
                self._wake.clear()
                continue
            stream = self.streams[name]
            if name != announced:
                announced = name
                rospy.loginfo('io_internal_camera: %s streams, rendered by %s', name, self.renderer)
                last_log = time.monotonic() - STAT_EVERY + FIRST_STAT
            period = 1.0 / float(stream.device.spec['rate'])
            t_wall, t_ros = time.monotonic(), rospy.get_time()
            if stream.wanted():
                stream.publish(self._positions, self._stamp or rospy.Time.now(), brightness,
                               self.display.screens() if self.display else (0, None),
                               self._extra(), self._separation)
                self._warn_unloadable()
                self._report_rebuild()
            if stream.renders and time.monotonic() - last_log > STAT_EVERY:
                last_log = time.monotonic()
                rospy.loginfo('io_internal_camera: %s %dx%d: %d frames rendered by %s, %.1f ms each '
                              'on average', name, stream.width, stream.height, stream.renders,
                              self.renderer,
                              1e3 * stream.render_time / stream.renders)
            # the next frame one period later in both wall-clock and ROS time
            self._wake.wait(max(0.0, t_wall + period - time.monotonic()))
            self._wake.clear()
            while rospy.get_time() < t_ros + period and not rospy.is_shutdown():
                if not self.devices[name].streaming:
                    break
                time.sleep(0.005)
