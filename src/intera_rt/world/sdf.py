"""SDF 1.4–1.7 (what Gazebo 11 reads) → Model and World.

Read: <model> (name, <static>, <pose>, <link>, fixed <joint>), <link> (<pose>,
<inertial>, <collision>, <visual>), <geometry> (box, cylinder, sphere, plane, mesh),
<surface><friction><ode><mu>/<mu2>; a <world>'s <model> and <include> (<uri>, <name>,
<pose>, <static>). Left out (they change nothing a backend simulates here): plugins,
sensors, lights, materials, physics and scene settings. Refused with WorldError naming
the element, its line and the value: what is malformed, what this world cannot simulate
(joints that move, nested models, heightmaps) and what no body has (zero sizes, masses).
Every text passes intera_rt.model.safe_xml first.
"""
import os

from intera_rt.model.safe_xml import UnsafeXMLError, check_xml
from intera_rt.world.mesh import mesh
from intera_rt.world.model import (
    IDENTITY, MAX_XML_BYTES, SDF_DEFAULT_INERTIAL, Box, Collision, Cylinder, Friction, Inertial,
    Joint, Link, Model, Plane, Pose, Sphere, Visual, World, WorldError, at_line, check_model,
    check_name, finite, fixed_joint, positive)
from intera_rt.world.resolve import Resolver
from intera_rt.world.urdf import parse_urdf

VERSIONS = ((1, 4), (1, 7))          # Gazebo 11's libsdformat 9 reads up to SDF 1.7
MAX_INCLUDES = 256

# Gazebo's own models that worlds include by habit, for machines without Gazebo's model
# database: the ground plane (static, a plane with ODE friction 100/50) and the sun (a light).
BUILTIN_MODELS = {
    'ground_plane': """<sdf version="1.6"><model name="ground_plane"><static>true</static>
      <link name="link">
        <collision name="collision"><geometry><plane><normal>0 0 1</normal><size>100 100</size>
          </plane></geometry><surface><friction><ode><mu>100</mu><mu2>50</mu2></ode></friction>
          </surface></collision>
        <visual name="visual"><geometry><plane><normal>0 0 1</normal><size>100 100</size>
          </plane></geometry></visual>
      </link></model></sdf>""",
    'sun': None,
}


def _load(text, what, root):
    try:
        return check_xml(text, what, max_bytes=MAX_XML_BYTES, root=root)
    except UnsafeXMLError as exc:
        raise WorldError(str(exc)) from None


def _check_version(root, what):
    text = root.get('version')
    try:
        major, minor = (int(v) for v in (text or '').strip().split('.')[:2])
    except ValueError:
        raise WorldError('%s: <sdf version=%r>: expected a version such as "1.6"' % (what, text)) from None
    if not VERSIONS[0] <= (major, minor) <= VERSIONS[1]:
        raise WorldError('%s: <sdf version=%r>: SDF %d.%d to %d.%d are read'
                         % ((what, text) + VERSIONS[0] + VERSIONS[1]))


def _child(el, tag):
    found = el.findall(tag)
    if len(found) > 1:
        raise WorldError('%s: <%s> appears %d times' % (at_line(found[1], '<%s>' % el.tag), tag, len(found)))
    return found[0] if found else None


def _numbers(el, n, what):
    text = (el.text or '').strip()
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        raise WorldError('%s: expected %d numbers, got %r' % (at_line(el, what), n, text)) from None
    if len(values) != n:
        raise WorldError('%s: expected %d numbers, got %r' % (at_line(el, what), n, text))
    return finite(values, n, at_line(el, what))


def _number(parent, tag, default, what):
    el = _child(parent, tag)
    if el is None:
        return default
    return _numbers(el, 1, '%s <%s>' % (what, tag))[0]


def _bool(el, what):
    text = (el.text or '').strip().lower()
    if text in ('true', '1'):
        return True
    if text in ('false', '0'):
        return False
    raise WorldError('%s: expected true or false, got %r' % (at_line(el, what), el.text))


def _pose(parent, what, frames=('',)):
    """(Pose, frame) of parent's <pose> (identity, '' when absent); `frames`: the
    relative_to / frame values accepted besides ''."""
    el = _child(parent, 'pose')
    if el is None:
        return IDENTITY, ''
    frame = (el.get('relative_to') or el.get('frame') or '').strip()
    if frame not in frames:
        raise WorldError('%s: relative_to=%r: poses relative to %s are read here'
                         % (at_line(el, what + ' <pose>'), frame,
                            ' or '.join(repr(f) for f in frames if f) or 'their parent only'))
    return Pose.from_xyz_rpy(_numbers(el, 6, what + ' <pose>'), at_line(el, what + ' <pose>')), frame


# --- geometry ------------------------------------------------------------------------------
def geometry(el, what, resolver, base_dir):
    """The shape in a <geometry> element."""
    if el is None:
        raise WorldError('%s: <geometry> is missing' % what)
    shapes = [c for c in el if isinstance(c.tag, str)]
    where = at_line(el, what + ' <geometry>')
    if len(shapes) != 1:
        raise WorldError('%s: expected one shape (box, cylinder, sphere, plane, mesh), got %s'
                         % (where, ', '.join('<%s>' % c.tag for c in shapes) or 'none'))
    shape = shapes[0]
    w = '%s <%s>' % (what, shape.tag)
    if shape.tag == 'box':
        size = _child(shape, 'size')
        if size is None:
            raise WorldError('%s: <size> is missing' % at_line(shape, w))
        return Box(positive(_numbers(size, 3, w + ' <size>'), 3, at_line(size, w + ' <size>')))
    if shape.tag == 'cylinder':
        r = _required_size(shape, 'radius', w)
        length = _required_size(shape, 'length', w)
        return Cylinder(r, length)
    if shape.tag == 'sphere':
        return Sphere(_required_size(shape, 'radius', w))
    if shape.tag == 'plane':
        normal = _child(shape, 'normal')
        n = (0.0, 0.0, 1.0) if normal is None else _numbers(normal, 3, w + ' <normal>')
        norm = sum(v * v for v in n) ** 0.5
        if norm < 1e-9:
            raise WorldError('%s: the normal %r has no direction' % (at_line(shape, w + ' <normal>'), n))
        size = _child(shape, 'size')
        s = (1.0, 1.0) if size is None else positive(_numbers(size, 2, w + ' <size>'), 2,
                                                       at_line(size, w + ' <size>'), limit=1e6)
        return Plane(tuple(v / norm for v in n), s)
    if shape.tag == 'mesh':
        if _child(shape, 'submesh') is not None:
            raise WorldError('%s: <submesh> is not supported: give the part as its own mesh file'
                             % at_line(shape, w))
        uri = _child(shape, 'uri')
        if uri is None or not (uri.text or '').strip():
            raise WorldError('%s: <uri> is missing' % at_line(shape, w))
        scale_el = _child(shape, 'scale')
        scale = (1.0, 1.0, 1.0) if scale_el is None else positive(
            _numbers(scale_el, 3, w + ' <scale>'), 3, at_line(scale_el, w + ' <scale>'))
        return mesh(uri.text.strip(), scale, at_line(uri, w + ' <uri>'), resolver, base_dir)
    raise WorldError('%s: <%s> is not a shape this world simulates (box, cylinder, sphere, plane, '
                     'mesh)' % (where, shape.tag))


def _required_size(shape, tag, what):
    el = _child(shape, tag)
    if el is None:
        raise WorldError('%s: <%s> is missing' % (at_line(shape, what), tag))
    return positive(_numbers(el, 1, '%s <%s>' % (what, tag)), 1, at_line(el, '%s <%s>' % (what, tag)))[0]


# --- links ---------------------------------------------------------------------------------
def _friction(collision, what):
    surface = _child(collision, 'surface')
    friction = _child(surface, 'friction') if surface is not None else None
    ode = _child(friction, 'ode') if friction is not None else None
    if ode is None:
        return Friction()
    w = at_line(ode, what + ' <surface><friction><ode>')
    return Friction.make(_number(ode, 'mu', 1.0, w), _number(ode, 'mu2', 1.0, w), w)


def _inertial(link, what):
    el = _child(link, 'inertial')
    if el is None:
        return SDF_DEFAULT_INERTIAL
    w = what + ' <inertial>'
    pose, _ = _pose(el, w)
    mass = _number(el, 'mass', 1.0, at_line(el, w))
    inertia = _child(el, 'inertia')
    defaults = {'ixx': 1.0, 'ixy': 0.0, 'ixz': 0.0, 'iyy': 1.0, 'iyz': 0.0, 'izz': 1.0}
    values = [defaults[k] if inertia is None else _number(inertia, k, defaults[k], at_line(inertia, w + ' <inertia>'))
              for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')]
    return Inertial.make(mass, values, pose, at_line(el, w))


def _link(el, what, resolver, base_dir, link_names):
    name = check_name(el.get('name'), at_line(el, what + ' <link>'))
    w = "%s link '%s'" % (what, name)
    pose, frame = _pose(el, w, ('', '__model__') + tuple(n for n in link_names if n != name))
    collisions, visuals = [], []
    for tag, out in (('collision', collisions), ('visual', visuals)):
        for c in el.findall(tag):
            cname = check_name(c.get('name'), at_line(c, '%s <%s>' % (w, tag)))
            cw = "%s %s '%s'" % (w, tag, cname)
            cpose, _ = _pose(c, cw, ('', name))
            shape = geometry(_child(c, 'geometry'), cw, resolver, base_dir)
            if tag == 'collision':
                out.append(Collision(cname, cpose, shape, _friction(c, cw)))
            else:
                out.append(Visual(cname, cpose, shape))
    return Link(name, pose, _inertial(el, w), tuple(collisions), tuple(visuals)), frame


def _resolve_link_frames(links, frames, what):
    """Link poses given relative_to another link, composed into the model's frame."""
    by_name = {l.name: l for l in links}
    done = {l.name: l.pose for l, f in zip(links, frames) if f in ('', '__model__')}
    pending = {l.name: f for l, f in zip(links, frames) if f not in ('', '__model__')}
    while pending:
        ready = [n for n, f in pending.items() if f in done]
        if not ready:
            raise WorldError('%s: link poses relative_to each other in a loop: %s'
                             % (what, ', '.join(sorted(pending))))
        for n in ready:
            done[n] = done[pending.pop(n)] * by_name[n].pose
    return tuple(Link(l.name, done[l.name], l.inertial, l.collisions, l.visuals) for l in links)


# --- models --------------------------------------------------------------------------------
def model_element(el, resolver, base_dir=None, name=None, what=None):
    """A Model of a <model> element; `name` replaces its own (SpawnModel's model_name)."""
    own = el.get('name')
    name = check_name(name if name else own, at_line(el, (what + ': ' if what else '') + '<model>'))
    w = "%smodel '%s'" % (what + ': ' if what else '', name)
    for tag in ('model', 'include'):
        nested = el.find(tag)
        if nested is not None:
            raise WorldError('%s: a <%s> inside a model (nested models) is not supported'
                             % (at_line(nested, w), tag))
    static_el = _child(el, 'static')
    static = _bool(static_el, w + ' <static>') if static_el is not None else False
    pose, _ = _pose(el, w)
    link_els = el.findall('link')
    names = tuple(l.get('name') or '' for l in link_els)
    parsed = [_link(l, w, resolver, base_dir, names) for l in link_els]
    links = _resolve_link_frames([l for l, _ in parsed], [f for _, f in parsed], w)
    joints = []
    for j in el.findall('joint'):
        jname, jw = fixed_joint(j, w)
        ends = []
        for role in ('parent', 'child'):
            e = _child(j, role)
            if e is None or not (e.text or '').strip():
                raise WorldError('%s: <%s> is missing' % (at_line(j, jw), role))
            ends.append(e.text.strip())
        joints.append(Joint(jname, *ends))
    return check_model(Model(name, links, tuple(joints), pose, static, 'sdf'), w)


def parse_sdf(text, resolver=None, name=None, base_dir=None, what='model_xml'):
    """The one model in an SDF document (<sdf version><model>), e.g. SpawnModel's model_xml.

    Args:
        text: the SDF (str or bytes).
        resolver: finds model:// and package:// URIs (default: from the environment).
        name: the model's name (default: its own).
        base_dir: the directory of the file it came from (relative mesh paths).
    Returns:
        Model at its own <pose> (the caller places it)."""
    resolver = resolver or Resolver.from_environ()
    root = _load(text, what, 'sdf')
    _check_version(root, what)
    models = root.findall('model')
    if len(models) != 1:
        others = [c.tag for c in root if isinstance(c.tag, str) and c.tag != 'model']
        raise WorldError('%s: expected one <model> in <sdf>, got %d%s'
                         % (what, len(models), (' (and %s)' % ', '.join('<%s>' % t for t in others))
                            if others else ''))
    return model_element(models[0], resolver, base_dir, name, what)


# --- worlds --------------------------------------------------------------------------------
def read_file(path, what, max_bytes=MAX_XML_BYTES):
    try:
        with open(path, 'rb') as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise WorldError('%s: cannot read %s: %s' % (what, path, exc.strerror)) from None
    if len(data) > max_bytes:
        raise WorldError('%s: %s is more than %d bytes' % (what, path, max_bytes))
    return data


def _include(el, resolver, base_dir, what):
    uri_el = _child(el, 'uri')
    if uri_el is None or not (uri_el.text or '').strip():
        raise WorldError('%s: <uri> is missing' % at_line(el, what + ' <include>'))
    uri = uri_el.text.strip()
    w = at_line(uri_el, '%s <include> %r' % (what, uri))
    name_el = _child(el, 'name')
    name = (name_el.text or '').strip() if name_el is not None else None
    builtin = uri[len('model://'):].strip('/') if uri.startswith('model://') else None
    try:
        path = resolver.model_file(uri, w) if '://' in uri else resolver.resolve(uri, w, base_dir)
    except WorldError:
        if builtin not in BUILTIN_MODELS:
            raise
        if BUILTIN_MODELS[builtin] is None:
            return None                       # a light: nothing to simulate
        model = parse_sdf(BUILTIN_MODELS[builtin], resolver, name, what=w)
    else:
        data = read_file(path, w, MAX_XML_BYTES)
        model_dir = os.path.dirname(path)
        if path.endswith('.urdf'):
            model = parse_urdf(data, resolver, name, what=w)
        else:
            root = _load(data, '%s: %s' % (w, path), 'sdf')
            _check_version(root, '%s: %s' % (w, path))
            models = root.findall('model')
            if not models:
                return None                   # e.g. model://sun holds a <light>
            if len(models) > 1:
                raise WorldError('%s: %s holds %d <model> elements, expected one' % (w, path, len(models)))
            model = model_element(models[0], resolver, model_dir, name, w)
    pose_el = _child(el, 'pose')
    if pose_el is not None:
        model = model.with_pose(_pose(el, w)[0])
    static_el = _child(el, 'static')
    if static_el is not None:
        model = Model(model.name, model.links, model.joints, model.pose,
                      _bool(static_el, w + ' <static>'), model.source)
    return model


def parse_world(text, resolver=None, base_dir=None, what='world', reserved=()):
    """The World of an SDF world document: its <model> and <include> elements, in order.
    `reserved`: names no model may take (the robot's)."""
    resolver = resolver or Resolver.from_environ()
    root = _load(text, what, 'sdf')
    _check_version(root, what)
    worlds = root.findall('world')
    if len(worlds) != 1:
        raise WorldError('%s: expected one <world> in <sdf>, got %d' % (what, len(worlds)))
    world = World(reserved=tuple(reserved))
    includes = 0
    for el in worlds[0]:
        if el.tag == 'model':
            model = model_element(el, resolver, base_dir, what=what)
        elif el.tag == 'include':
            includes += 1
            if includes > MAX_INCLUDES:
                raise WorldError('%s: more than %d <include> elements' % (what, MAX_INCLUDES))
            model = _include(el, resolver, base_dir, what)
            if model is None:
                continue
        else:
            continue                          # lights, physics, scene, gui, plugins
        try:
            world.add(model)
        except WorldError as exc:
            raise WorldError('%s: %s' % (at_line(el, what + ' <%s>' % el.tag), exc)) from None
    return world


def load_world(path, resolver=None, reserved=()):
    """parse_world of a file (scripts/sawyer --world FILE)."""
    path = os.path.abspath(path)
    return parse_world(read_file(path, 'world file'), resolver, os.path.dirname(path),
                       'world file %s' % path, reserved)
