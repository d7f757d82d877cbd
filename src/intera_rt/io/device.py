"""An IO device of the Intera IO framework: typed signals and ports, their JSON formats, and
the `set` command that writes them.

On the wire (intera_core_msgs/IODeviceStatus) each signal is a name, a `format` — a JSON
object with at least "type" and "role" (the SDK raises KeyError without either) — and
`data`, a JSON array whose first element is the value. A client writes a signal with an
IOComponentCommand `op="set"` whose `args` are

    {"signals": {"<name>": {"format": {"type": "<type>"}, "data": [<value>]}}}

(`"ports"` for ports). `Device.command` parses and checks such a command as a whole (all
or nothing), applies it and returns the response text the state carries for it: '' when
applied, else an error naming the field and value. No ROS here: the times, topics and
acknowledgements are intera_rt.ros.io.framework's.
"""
import json
import math
from collections import OrderedDict

TYPES = ('bool', 'int', 'float', 'string')
READY, BUSY, DOWN, UNREADY, ERROR = 'ready', 'busy', 'down', 'unready', 'error'
STATUS_TAGS = (DOWN, READY, BUSY, UNREADY, ERROR)
OK_DETAIL = '{}'               # a healthy status' detail, as the robot sends it


class CommandError(ValueError):
    """A command (or one of its values) the device refuses; the text says why."""


def _compact(obj):
    return json.dumps(obj, sort_keys=True, separators=(',', ':'))


class Signal:
    """One signal or port of a device.

    Args:
        name: as on the wire (e.g. 'right_cuff').
        type: 'bool', 'int', 'float' or 'string' (the format's "type").
        role: the format's "role": 'input' or 'output' (the robot reports lights as
            inputs too, so the role does not say whether a client may write it).
        value: initial value (None: reported as an empty data array).
        writable: whether a set command may write it.
        check: callable(value) → value for writes, raising ValueError with a reason
            (range checks); None accepts any value of the type.
        data_type: optional extra format key (the wheels' "u8").
        read_only_hint: appended to the refusal of a write to a read-only signal (e.g.
            where a simulated person can change it instead).
    """
    __slots__ = ('name', 'type', 'role', 'value', 'writable', 'check', 'format', 'config',
                 'tag', 'detail', 'read_only_hint')

    def __init__(self, name, type, role='input', value=None, writable=False, check=None,
                 data_type=None, read_only_hint=''):
        if type not in TYPES:
            raise ValueError('signal %s: type %r is not one of %s' % (name, type, TYPES))
        self.name, self.type, self.role = name, type, role
        self.value = value
        self.writable = writable
        self.check = check
        fmt = {'role': role, 'type': type}
        if data_type:
            fmt['data_type'] = data_type
        self.format = _compact(fmt)
        self.config = _compact(dict(fmt, writable=writable))
        self.tag, self.detail = READY, OK_DETAIL
        self.read_only_hint = read_only_hint

    def data(self):
        """The `data` field: a JSON array holding the value (empty when there is none)."""
        return '[]' if self.value is None else json.dumps([self.value])

    def coerce(self, raw):
        """`raw` (decoded JSON) as a value of this signal's type; CommandError otherwise.
        Floats take integers (JSON writes 0.0 as 0 in some clients); ints take integral
        floats; bools take only true/false."""
        t = self.type
        if t == 'bool':
            if isinstance(raw, bool):
                return raw
        elif t == 'int':
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            if isinstance(raw, float) and raw.is_integer():
                return int(raw)
        elif t == 'float':
            if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                if math.isfinite(raw):
                    return float(raw)
                raise CommandError('%s = %r is not a finite number' % (self.name, raw))
        elif isinstance(raw, str):
            return raw
        raise CommandError('%s is a %s signal: %s is not a %s' % (self.name, t, json.dumps(raw), t))


class Device:
    """An IO device: its signals and ports, configuration and status.

    Subclasses give writes their effect by overriding `validate(signal, value)` (raise
    CommandError to refuse) and `apply(signal, value)` (default: store the value).

    Args:
        name: the device name (the topic segment: /io/<node>/<name>/...).
        node: the IO node it belongs to ('robot', 'end_effector', 'internal_camera').
        signals, ports: Signal objects.
        device_type: the config's props.type ('RobotDevice', 'ElectricParallelGripper').
        state_pub_rate, update_rate: Hz, reported in the config (props) as the robot does;
            the state is republished at state_pub_rate.
        params: extra configuration reported under the config's "params".
    """

    def __init__(self, name, node, signals=(), ports=(), device_type='RobotDevice',
                 state_pub_rate=5.0, update_rate=50.0, params=None):
        self.name, self.node = name, node
        self.signals = OrderedDict((s.name, s) for s in signals)
        self.ports = OrderedDict((p.name, p) for p in ports)
        self.state_pub_rate = float(state_pub_rate)
        self.update_rate = float(update_rate)
        self.tag, self.detail = READY, OK_DETAIL
        self.config = {'props': {'id': '/io/%s/%s' % (node, name), 'owner': 'system',
                                 'type': device_type, 'state_pub_rate_hz': self.state_pub_rate,
                                 'update_rate_hz': self.update_rate}}
        if params:
            self.config['params'] = params

    # --- reading ---------------------------------------------------------------------------
    def config_json(self):
        return _compact(self.config)

    def value(self, name):
        """The value of signal (or else port) `name`; KeyError when there is none."""
        sig = self.signals.get(name) or self.ports.get(name)
        if sig is None:
            raise KeyError('%s has no signal or port %r' % (self.name, name))
        return sig.value

    # --- writing ------------------------------------------------------------------------
    def set_value(self, name, value):
        """Set a signal or port from the robot's side (a simulated input, a result of the
        device's own work). Returns True when the value changed."""
        sig = self.signals.get(name) or self.ports.get(name)
        if sig is None:
            raise KeyError('%s has no signal or port %r' % (self.name, name))
        if sig.value == value and type(sig.value) is type(value):
            return False
        sig.value = value
        return True

    def command(self, op, args_text):
        """Apply an IOComponentCommand. Returns the response text: '' when applied, else
        why not (nothing is applied then). A refused write of a writable signal also marks
        that signal's status 'error' with the reason, until a write of it succeeds."""
        try:
            plan = self._parse(op, args_text)
            for sig, value in plan:
                try:
                    self.validate(sig, value)
                except CommandError as exc:
                    sig.tag, sig.detail = ERROR, str(exc)
                    raise
        except CommandError as exc:
            return 'error: %s' % exc
        for sig, value in plan:
            sig.tag, sig.detail = READY, OK_DETAIL
            self.apply(sig, value)
        return ''

    def validate(self, signal, value):
        """Refuse a write (raise CommandError) that the device cannot take now."""

    def apply(self, signal, value):
        """Carry out a checked write."""
        signal.value = value

    def _parse(self, op, args_text):
        if op != 'set':
            raise CommandError("unknown op %r: device %s takes 'set'" % (op, self.name))
        try:
            args = json.loads(args_text)
        except ValueError as exc:
            raise CommandError('args are not JSON (%s): %.200r' % (exc, args_text))
        if not isinstance(args, dict):
            raise CommandError('args must be a JSON object with "signals" and/or "ports", got %.200s'
                               % args_text)
        extra = sorted(set(args) - {'signals', 'ports'})
        if extra:
            raise CommandError('unknown args key(s) %s: expected "signals" and/or "ports"'
                               % ', '.join(map(repr, extra)))
        plan = []
        for kind in ('signals', 'ports'):
            entries = args.get(kind, {})
            if not isinstance(entries, dict):
                raise CommandError('"%s" must be an object of name: {format, data}' % kind)
            table = self.signals if kind == 'signals' else self.ports
            for name, spec in entries.items():
                sig = self._lookup(table, kind, name)
                try:
                    plan.append((sig, self._value(sig, spec)))
                except CommandError as exc:
                    sig.tag, sig.detail = ERROR, str(exc)
                    raise
        if not plan:
            raise CommandError('nothing to set: args name no signal or port')
        return plan

    def _lookup(self, table, kind, name):
        sig = table.get(name)
        if sig is None:
            other = self.ports if table is self.signals else self.signals
            hint = (' (it is a %s)' % ('port' if kind == 'signals' else 'signal')) if name in other else ''
            raise CommandError('device %s has no %s %r%s; %s: %s'
                               % (self.name, kind[:-1], name, hint, kind,
                                  ', '.join(table) or 'none'))
        if not sig.writable:
            raise CommandError('%s is a read-only %s of %s%s'
                               % (name, sig.role, self.name,
                                  ': ' + sig.read_only_hint if sig.read_only_hint else ''))
        return sig

    @staticmethod
    def _value(sig, spec):
        if not isinstance(spec, dict) or 'data' not in spec:
            raise CommandError('%s: expected {"format": {"type": ...}, "data": [value]}, got %.200s'
                               % (sig.name, json.dumps(spec)))
        fmt = spec.get('format', {})
        if isinstance(fmt, dict) and 'type' in fmt and fmt['type'] != sig.type:
            raise CommandError('%s is a %s signal, the command says type %r'
                               % (sig.name, sig.type, fmt['type']))
        data = spec['data']
        if not isinstance(data, list) or len(data) != 1:
            raise CommandError('%s: data must be a JSON array of one value, got %.200s'
                               % (sig.name, json.dumps(data)))
        value = sig.coerce(data[0])
        if sig.check is not None:
            try:
                value = sig.check(value)
            except ValueError as exc:
                raise CommandError(str(exc))
        return value


def in_range(name, lo, hi, unit='', extra=()):
    """A Signal.check accepting lo ≤ value ≤ hi (and the values in `extra`, e.g. -1 for
    auto), refusing with a message naming signal, value and range."""
    def check(value):
        if value in extra or lo <= value <= hi:
            return value
        also = ' or %s' % ', '.join(str(e) for e in extra) if extra else ''
        raise ValueError('%s = %r is outside [%g, %g]%s%s' % (name, value, lo, hi, unit, also))
    return check
