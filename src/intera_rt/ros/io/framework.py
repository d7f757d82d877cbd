"""The Intera IO framework protocol on ROS, shared by every IO node of the robot.

Per device (`/io/<node>/<device>/`):
  config   intera_core_msgs/IODeviceConfiguration, latched; published at start and when
           the configuration changes, each time with a new `time`.
  state    intera_core_msgs/IODeviceStatus, latched; published on every change (in the
           thread that made it, so a change is on the wire within a few ms) and every
           1/state_pub_rate s (5 Hz as on the robot), each time with a new `time`: the SDK
           drops a message whose time equals the previous one's and treats secs == 0 as
           invalid. `commands` lists the times of recent commands (the acknowledgement the
           SDK waits for), `responses` the parallel response texts ('' = applied).
  command  intera_core_msgs/IOComponentCommand, subscribed. The SDK republishes the same
           command every 0.1 s until its time shows in the state: a command is applied
           once per `time`, op and args (duplicates are only acknowledged again; two
           different commands may share a time: the SDK stamps with ROS time, which
           under sim time advances only with /clock), then the state goes out with the
           new values and the acknowledgement together.
Per node (`/io/<node>/`): config (IONodeConfiguration: the node, its devices' configs,
plugins), latched and republished every 1/state_pub_rate s with an unchanged time, as the
robot does; state (IONodeStatus: node and device statuses, node-level command
acknowledgements), latched, on change and at the same rate; command, subscribed.

Times are ROS time (sim time under /use_sim_time), strictly increasing per node, never
with secs == 0 (sim time starts at 0: the first second is stamped from 1 s on).
"""
import threading
import time
from collections import OrderedDict, deque

import rospy
from intera_core_msgs.msg import (IOComponentCommand, IOComponentConfiguration,
                                  IOComponentStatus, IODataStatus, IODeviceConfiguration,
                                  IODeviceStatus, IONodeConfiguration, IONodeStatus, IOStatus)

from intera_rt.io.device import OK_DETAIL, READY, _compact
from intera_rt.ros.direct import Throttle

MIN_STAMP = rospy.Time(1, 0)
ONE_NS = rospy.Duration(0, 1)
ACK_DEPTH = 32           # command times a state carries (the SDK looks for its own)
SEEN_DEPTH = 512         # command times remembered for deduplication


class Stamper:
    """Message times for one IO node: ROS time, strictly increasing, secs never 0."""

    def __init__(self):
        self._last = rospy.Time(0)
        self._lock = threading.Lock()

    def __call__(self):
        now = rospy.Time.now()
        with self._lock:
            floor = self._last + ONE_NS
            if floor < MIN_STAMP:
                floor = MIN_STAMP
            self._last = now if now > floor else floor
            return self._last


def _status(tag, detail):
    return IOStatus(tag=tag, detail=detail)


class DeviceEndpoint:
    """The config, state and command topics of one device (an intera_rt.io.device.Device).

    `on_applied`: callables(device, command_msg, response) run (under the node's lock)
    after a new command was handled and before its state goes out, for devices whose
    writes start work elsewhere (camera streaming, gripper motion)."""

    def __init__(self, node, device):
        self.node, self.device = node, device
        ns = '/io/%s/%s/' % (node.name, device.name)
        self.on_applied = []
        self._acks = deque(maxlen=ACK_DEPTH)           # (time, response)
        self._seen = OrderedDict()                       # (secs, nsecs) → response
        self._pub_config = rospy.Publisher(ns + 'config', IODeviceConfiguration,
                                           queue_size=2, latch=True)
        self._pub_state = rospy.Publisher(ns + 'state', IODeviceStatus, queue_size=20, latch=True)
        self._sub = rospy.Subscriber(ns + 'command', IOComponentCommand, self._on_command,
                                     queue_size=20)

    def close(self):
        self._sub.unregister()
        self._pub_config.unregister()
        self._pub_state.unregister()

    def publish_config(self):
        d = self.device
        self._pub_config.publish(IODeviceConfiguration(
            time=self.node.stamp(),
            device=IOComponentConfiguration(name=d.name, config=d.config_json()),
            ports=[IOComponentConfiguration(name=p.name, config=p.config) for p in d.ports.values()],
            signals=[IOComponentConfiguration(name=s.name, config=s.config)
                     for s in d.signals.values()]))

    def state_msg(self):
        d = self.device

        def data(sig):
            return IODataStatus(name=sig.name, format=sig.format, data=sig.data(),
                                status=_status(sig.tag, sig.detail))
        return IODeviceStatus(
            time=self.node.stamp(),
            device=IOComponentStatus(name=d.name, status=_status(d.tag, d.detail)),
            ports=[data(p) for p in d.ports.values()],
            signals=[data(s) for s in d.signals.values()],
            commands=[t for t, _ in self._acks],
            responses=[r for _, r in self._acks])

    def publish_state(self):
        self._pub_state.publish(self.state_msg())

    def _on_command(self, msg):
        key = (msg.time.secs, msg.time.nsecs, msg.op, msg.args)
        with self.node.lock:
            if key[:2] != (0, 0) and key in self._seen:
                # A repeat (the SDK resends until acknowledged): acknowledge it again only
                # if its time has dropped out of the state's list.
                if not any(t == msg.time for t, _ in self._acks):
                    self._acks.append((msg.time, self._seen[key]))
                    self.publish_state()
                return
            response = self.device.command(msg.op, msg.args)
            self._seen[key] = response
            while len(self._seen) > SEEN_DEPTH:
                self._seen.popitem(last=False)
            self._acks.append((msg.time, response))
            if response:
                self.node.log(rospy.logwarn, 'refused:' + self.device.name,
                              '/io/%s/%s/command refused: %s'
                              % (self.node.name, self.device.name, response))
            for hook in self.on_applied:
                hook(self.device, msg, response)
            self.node.changed(self.device)


class IONode:
    """An IO node: its devices' endpoints and its node-level topics.

    Args:
        name: the node's name in the IO framework ('robot', 'end_effector', ...).
        config: JSON-able node configuration (IONodeConfiguration.node.config).
        plugins: (name, JSON-able config) pairs for IONodeConfiguration.plugins.
        state_pub_rate: Hz of the periodic republishing (wall clock, so that a robot
            running faster than real time does not spend its CPU on it).
    """

    def __init__(self, name, config=None, plugins=(), state_pub_rate=5.0):
        self.name = name
        self.lock = threading.RLock()
        self.stamp = Stamper()
        self.log = Throttle()
        self.endpoints = OrderedDict()
        self.tag, self.detail = READY, OK_DETAIL
        self.state_pub_rate = float(state_pub_rate)
        self.on_change = []                      # callables(device) after a state change
        self.on_node_command = None              # callable(msg) → None, or an error text
        self._config = _compact(config or {'props': {'id': '/io/%s' % name, 'owner': 'system'}})
        self._plugins = [IOComponentConfiguration(name=n, config=_compact(c)) for n, c in plugins]
        self._config_msg = None
        self._device_tags = None
        self._acks = deque(maxlen=ACK_DEPTH)
        self._seen = OrderedDict()
        ns = '/io/%s/' % name
        self._pub_config = rospy.Publisher(ns + 'config', IONodeConfiguration, queue_size=2, latch=True)
        self._pub_state = rospy.Publisher(ns + 'state', IONodeStatus, queue_size=10, latch=True)
        self._sub = rospy.Subscriber(ns + 'command', IOComponentCommand, self._on_command,
                                     queue_size=10)
        self._thread = None

    # --- devices ----------------------------------------------------------------------
    def add_device(self, device):
        """Serve `device`: publish its config and state, then the node's."""
        with self.lock:
            ep = DeviceEndpoint(self, device)
            self.endpoints[device.name] = ep
            ep.publish_config()
            ep.publish_state()
            self.publish_config()
            self.publish_state()
            return ep

    def changed(self, device):
        """Publish `device`'s state now (its values or status changed); the node's state
        too when a device status changed."""
        with self.lock:
            self.endpoints[device.name].publish_state()
            if self._tags() != self._device_tags:
                self.publish_state()
            for hook in self.on_change:
                hook(device)

    def device_config_changed(self, device):
        with self.lock:
            self.endpoints[device.name].publish_config()
            self.publish_config()

    # --- node topics --------------------------------------------------------------------
    def _tags(self):
        return [(ep.device.tag, ep.device.detail) for ep in self.endpoints.values()]

    def publish_config(self):
        with self.lock:
            self._config_msg = IONodeConfiguration(
                time=self.stamp(),
                node=IOComponentConfiguration(name=self.name, config=self._config),
                devices=[IOComponentConfiguration(name=ep.device.name, config=ep.device.config_json())
                         for ep in self.endpoints.values()],
                plugins=self._plugins)
            self._pub_config.publish(self._config_msg)

    def publish_state(self):
        with self.lock:
            self._device_tags = self._tags()
            self._pub_state.publish(IONodeStatus(
                time=self.stamp(),
                node=IOComponentStatus(name=self.name, status=_status(self.tag, self.detail)),
                devices=[IOComponentStatus(name=ep.device.name,
                                           status=_status(ep.device.tag, ep.device.detail))
                         for ep in self.endpoints.values()],
                commands=[t for t, _ in self._acks]))

    def _on_command(self, msg):
        key = (msg.time.secs, msg.time.nsecs, msg.op, msg.args)
        with self.lock:
            if key[:2] != (0, 0) and key in self._seen:
                return
            self._seen[key] = True
            while len(self._seen) > SEEN_DEPTH:
                self._seen.popitem(last=False)
            error = (self.on_node_command(msg) if self.on_node_command
                     else 'node %s takes no commands' % self.name)
            if error:
                self.log(rospy.logwarn, 'node-command', '/io/%s/command (op %r) refused: %s'
                         % (self.name, msg.op, error))
            self._acks.append((msg.time, error or ''))
            self.publish_state()

    # --- periodic republishing -------------------------------------------------------------
    def start(self):
        """Republish every 1/state_pub_rate s (wall clock) until shutdown: the node's
        config (unchanged, as the robot does), its state and every device's state (new
        times). A node without devices publishes its (empty) config and state now."""
        if self._config_msg is None:
            self.publish_config()
            self.publish_state()
        self._thread = threading.Thread(target=self._republish, name='io_%s_republish' % self.name,
                                        daemon=True)
        self._thread.start()

    def _republish(self):
        period = 1.0 / self.state_pub_rate
        deadline = time.monotonic()
        while not rospy.is_shutdown():
            deadline += period
            delay = deadline - time.monotonic()
            if delay < -period:                       # fell behind (suspend): resync
                deadline = time.monotonic()
            elif delay > 0:
                time.sleep(delay)
            with self.lock:
                if self._config_msg is not None:
                    self._pub_config.publish(self._config_msg)
                self.publish_state()
                for ep in self.endpoints.values():
                    ep.publish_state()
