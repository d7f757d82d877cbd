"""A client of the robot's IO devices that behaves as the SDK's does (robot_contract.md §3.8):
the config must arrive (latched) with time.secs != 0 within 5 s; a state whose time equals
the previous one's is ignored; a set command carries the type from the state and is
republished every 0.1 s until its time shows in the state's `commands`.

Also records every distinct state (for value histories) and wraps the sim-control calls."""
import json
import threading
import time

CONFIG_TIMEOUT = 5.0          # s: the SDK's IOInterface gate (G9)


class IODevice:
    def __init__(self, node, device, timeout=CONFIG_TIMEOUT):
        import rospy
        from intera_core_msgs.msg import IOComponentCommand, IODeviceConfiguration, IODeviceStatus
        self.path = '/io/%s/%s' % (node, device)
        self._cond = threading.Condition()
        self.config = None
        self.state = None
        self.history = []                 # (time.monotonic(), state) of every accepted state
        self._subs = [rospy.Subscriber(self.path + '/config', IODeviceConfiguration, self._on_config),
                      rospy.Subscriber(self.path + '/state', IODeviceStatus, self._on_state)]
        self._pub = rospy.Publisher(self.path + '/command', IOComponentCommand, queue_size=10)
        self._cmd_type = IOComponentCommand
        self.wait(lambda: self.config is not None and self.config.time.secs != 0, timeout,
                  'a valid config on %s/config' % self.path)
        self.wait(lambda: self.state is not None, timeout, 'a state on %s/state' % self.path)

    def close(self):
        for sub in self._subs:
            sub.unregister()
        self._pub.unregister()

    def _on_config(self, msg):
        with self._cond:
            if self.config is None or msg.time != self.config.time:
                self.config = msg
                self._cond.notify_all()

    def _on_state(self, msg):
        with self._cond:
            if self.state is None or msg.time != self.state.time:
                self.state = msg
                self.history.append((time.monotonic(), msg))
                self._cond.notify_all()

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError('timed out after %.1f s waiting for %s' % (timeout, what))
                self._cond.wait(min(remaining, 0.05))

    # --- reading -----------------------------------------------------------------------------
    def entry(self, name, state=None):
        state = state or self.state
        for item in list(state.signals) + list(state.ports):
            if item.name == name:
                return item
        raise KeyError('%s: no signal or port %r in the state' % (self.path, name))

    def value(self, name, state=None):
        data = json.loads(self.entry(name, state).data)
        return data[0] if data else None

    def type(self, name):
        return json.loads(self.entry(name).format)['type']

    def values_since(self, name, start):
        """The distinct successive values of `name` in the states received after `start`
        (a time.monotonic()), starting with the value at that moment."""
        with self._cond:
            before = [s for t, s in self.history if t <= start]
            after = [s for t, s in self.history if t > start]
        values = [self.value(name, before[-1])] if before else []
        for s in after:
            v = self.value(name, s)
            if not values or values[-1] != v:
                values.append(v)
        return values

    def wait_value(self, name, value, timeout=5.0):
        self.wait(lambda: self.value(name) == value, timeout,
                  '%s = %r on %s/state (now %r)' % (name, value, self.path, self.value(name)))

    # --- writing ---------------------------------------------------------------------------
    def command(self, op, args, timeout=5.0, stamp=None):
        """Publish a command the SDK's way (stamped `stamp`, default now) until acknowledged;
        returns its response text."""
        import rospy
        msg = self._cmd_type(time=rospy.Time.now() if stamp is None else stamp, op=op,
                             args=args if isinstance(args, str) else json.dumps(args))
        deadline = time.monotonic() + timeout
        next_publish = 0.0
        while True:
            if time.monotonic() >= next_publish:
                self._pub.publish(msg)
                next_publish = time.monotonic() + 0.1
            with self._cond:
                state = self.state
                if msg.time in state.commands:
                    return state.responses[list(state.commands).index(msg.time)]
                if time.monotonic() > deadline:
                    raise AssertionError('%s: command %s %s not acknowledged within %.1f s'
                                         % (self.path, op, msg.args, timeout))
                self._cond.wait(0.1)

    def set(self, name, value, kind='signals', timeout=5.0, stamp=None):
        """set_signal_value / set_port_value: the type comes from the state."""
        spec = {'format': {'type': self.type(name)}, 'data': [value]}
        return self.command('set', {kind: {name: spec}}, timeout, stamp)


def reboot_gripper(timeout=5.0):
    """Reboot the end effector's right_gripper through its `reboot` signal and wait until it
    reports ready again (it then puts its URDF fragment back on /robot/urdf)."""
    gripper = IODevice('end_effector', 'right_gripper')
    try:
        assert gripper.set('reboot', True) == ''
        gripper.wait(lambda: gripper.state.device.status.tag == 'ready', timeout, 'ready after reboot')
    finally:
        gripper.close()


def sim_call(name, srv_type, *args, timeout=10.0):
    import rospy
    rospy.wait_for_service(name, timeout)
    return rospy.ServiceProxy(name, srv_type)(*args)
