"""The state vector the core sends the adapter, and StateView, named access to it.

The vector (float64) holds the core's fields, then each registered stage's `state_fields`
as a group named after the stage. StateView is generated from that field list when this
module is imported: every field is an attribute (`view.q`, `view.collision_detection.impact`),
an array slice or a float for one-element fields, readable and writable. A name the list
does not declare raises AttributeError, and a field list with a duplicate or a clash
fails the import; a vector of the wrong size fails at construction.
"""
import numpy as np

from intera_rt.control.registry import ADDITIVES, CONTROLLERS, MONITORS
from intera_rt.robot import BOARD_JOINTS, SUPPRESS_TOPICS

CONTROLLER_NAMES = tuple(c.name for c in CONTROLLERS)
N_BOARD = len(BOARD_JOINTS)           # joints in boards order: right_j0..6, head_pan

FIELDS = [('t', 1), ('tick', 1), ('q', N_BOARD), ('qd', N_BOARD), ('effort', N_BOARD),
          ('cmd_p', 7), ('cmd_v', 7), ('cmd_a', 7), ('cmd_effort', 7), ('interaction_torque', 7),
          ('controlled', 1), ('enabled', 1), ('stopped', 1), ('error', 1),
          ('homed', 1), ('estop_button', 1), ('estop_source', 1), ('low_voltage', 1),
          ('homing', 7), ('head_turning', 1), ('pan_mode', 1), ('controller', 1), ('cuff', 1),
          ('collision', 1), ('halt_left', 1), ('timeouts', 1), ('contacts', 1), ('contact_at', 1)]
FIELDS += [('suppress.' + what, 1) for what in SUPPRESS_TOPICS.values()]
STAGES = tuple(s.name for s in MONITORS + ADDITIVES + CONTROLLERS if s.state_fields)
for _stage in MONITORS + ADDITIVES + CONTROLLERS:
    FIELDS += [('%s.%s' % (_stage.name, f), n) for f, n in _stage.state_fields]


def _slices(fields):
    out, k = {}, 0
    for name, n in fields:
        if name in out:
            raise ValueError('state field %r declared twice' % name)
        out[name] = slice(k, k + n)
        k += n
    return out, k


STATE_SIZE = _slices(FIELDS)[1]


def _index(slices):
    return {name: s.start if s.stop - s.start == 1 else s for name, s in slices.items()}


# Where each field lies in the vector: an index for one element, else a slice (the core
# writes its fields through it: a StateView's properties cost several times the write).
INDEX = _index(_slices(FIELDS)[0])
# The core's one-element fields in the order RealtimeCore.state_vector gives their values:
# one assignment through SCALAR_INDEX writes them all (a write each costs several times it).
CORE_SCALARS = (('t', 'tick', 'controlled', 'enabled', 'stopped', 'error', 'low_voltage', 'homed',
                 'estop_button', 'estop_source', 'head_turning', 'pan_mode', 'controller', 'cuff',
                 'collision', 'halt_left', 'timeouts', 'contacts', 'contact_at')
                + tuple('suppress.' + what for what in SUPPRESS_TOPICS.values()))
SCALAR_INDEX = np.array([INDEX[name] for name in CORE_SCALARS])
if SCALAR_INDEX.dtype.kind != 'i':
    raise ValueError('CORE_SCALARS names a field of more than one element')
_GROUP_INDEX = {stage: {name.partition('.')[2]: k for name, k in INDEX.items()
                        if name.startswith(stage + '.')} for stage in STAGES}


def group_writer(vector, stage):
    """put(field, value): writes `stage`'s state field (one of its state_fields) into the
    state vector `vector`, as StateView's group attribute would; AttributeError for a field
    the stage does not declare."""
    index = _GROUP_INDEX[stage]

    def put(field, value):
        try:
            k = index[field]
        except KeyError:
            raise AttributeError('stage %r declares no state field %r' % (stage, field)) from None
        vector[k] = value
    return put


def _field(s):
    """A property over vector[s]: a float for one element, else the slice (a view)."""
    if s.stop - s.start == 1:
        k = s.start

        def get(self):
            return float(self._v[k])

        def put(self, value):
            self._v[k] = value
    else:
        def get(self):
            return self._v[s]

        def put(self, value):
            self._v[s] = value
    return property(get, put)


def _group(cls):
    return property(lambda self: cls(self._v))


class _Fields:
    __slots__ = ('_v',)

    def __init__(self, vector):
        self._v = vector


def view_class(fields, name='StateFields'):
    """A class with one attribute per field of `fields` ((name, size) pairs, laid out in
    that order): 'a' an attribute, 'group.a' an attribute of the nested view `group`.
    Raises ValueError for a duplicate, a name that is no identifier, or a group that
    clashes with a field."""
    return _view_class(name, _slices(fields)[0])


def _view_class(name, slices):
    attrs, groups = {'__slots__': ()}, {}
    for field, s in slices.items():
        head, _, rest = field.partition('.')
        if rest:
            groups.setdefault(head, {})[rest] = s
            continue
        if not field.isidentifier() or field in attrs:
            raise ValueError('state field %r cannot be an attribute' % field)
        attrs[field] = _field(s)
    for head, members in groups.items():
        if head in attrs or not head.isidentifier():
            raise ValueError('state group %r clashes with a field' % head)
        attrs[head] = _group(_view_class(head, members))
    return type(name, (_Fields,), attrs)


class StateView(view_class(FIELDS)):
    """Named access to one state vector (a new zero one by default): reads are slices of it
    (views: copy what you keep), writes go into it."""
    __slots__ = ()

    def __init__(self, vector=None):
        if vector is None:
            vector = np.zeros(STATE_SIZE)
        elif len(vector) != STATE_SIZE:
            raise ValueError('a state vector has %d values, not %d' % (STATE_SIZE, len(vector)))
        self._v = vector

    @property
    def vector(self):
        return self._v

    @staticmethod
    def has(stage):
        """Whether `stage` (a registered stage's name) has fields in the vector."""
        return stage in STAGES
