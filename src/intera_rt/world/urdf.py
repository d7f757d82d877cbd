"""URDF → Model, as Gazebo spawns a URDF: links joined by fixed joints lumped into their
root link (collisions and inertia carried over; Gazebo's URDF import does the same), a
link named 'world' welding its child to the world, friction from <gazebo reference=LINK>
<mu1>/<mu2>, <gazebo><static>true</static></gazebo> making the model static. Joints that
move are refused (the world's models are rigid). Errors are WorldError naming the element,
its line and the value; the text passes intera_rt.model.safe_xml first.
"""
from intera_rt.model.safe_xml import UnsafeXMLError, check_xml
from intera_rt.world.model import (
    IDENTITY, MAX_XML_BYTES, Box, Collision, Cylinder, Friction, Inertial, Joint, Link, Model, Pose,
    Sphere, Visual, WorldError, at_line, check_model, check_name, finite, fixed_joint,
    lump_fixed_joints, positive)
from intera_rt.world.mesh import mesh
from intera_rt.world.resolve import Resolver


def _attr_numbers(el, key, n, what, default=None):
    text = el.get(key)
    if text is None:
        if default is not None:
            return default
        raise WorldError('%s: attribute %s is missing' % (at_line(el, what), key))
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        raise WorldError('%s: %s=%r: expected %d numbers' % (at_line(el, what), key, text, n)) from None
    if len(values) != n:
        raise WorldError('%s: %s=%r: expected %d numbers' % (at_line(el, what), key, text, n))
    return finite(values, n, '%s %s' % (at_line(el, what), key))


def _origin(parent, what):
    el = parent.find('origin')
    if el is None:
        return IDENTITY
    w = what + ' <origin>'
    xyz = _attr_numbers(el, 'xyz', 3, w, (0.0, 0.0, 0.0))
    rpy = _attr_numbers(el, 'rpy', 3, w, (0.0, 0.0, 0.0))
    return Pose.from_xyz_rpy(xyz + rpy, at_line(el, w))


def _geometry(parent, what, resolver):
    el = parent.find('geometry')
    if el is None:
        raise WorldError('%s: <geometry> is missing' % at_line(parent, what))
    shapes = [c for c in el if isinstance(c.tag, str)]
    if len(shapes) != 1:
        raise WorldError('%s: expected one shape (box, cylinder, sphere, mesh), got %s'
                         % (at_line(el, what + ' <geometry>'),
                            ', '.join('<%s>' % c.tag for c in shapes) or 'none'))
    s = shapes[0]
    w = '%s <%s>' % (what, s.tag)
    if s.tag == 'box':
        return Box(positive(_attr_numbers(s, 'size', 3, w), 3, at_line(s, w + ' size')))
    if s.tag == 'cylinder':
        return Cylinder(positive(_attr_numbers(s, 'radius', 1, w), 1, at_line(s, w + ' radius'))[0],
                        positive(_attr_numbers(s, 'length', 1, w), 1, at_line(s, w + ' length'))[0])
    if s.tag == 'sphere':
        return Sphere(positive(_attr_numbers(s, 'radius', 1, w), 1, at_line(s, w + ' radius'))[0])
    if s.tag == 'mesh':
        uri = (s.get('filename') or '').strip()
        if not uri:
            raise WorldError('%s: attribute filename is missing' % at_line(s, w))
        scale = positive(_attr_numbers(s, 'scale', 3, w, (1.0, 1.0, 1.0)), 3, at_line(s, w + ' scale'))
        return mesh(uri, scale, at_line(s, w + ' filename'), resolver)
    raise WorldError('%s: <%s> is not a URDF shape (box, cylinder, sphere, mesh)'
                     % (at_line(s, w), s.tag))


def _inertial(link, what):
    el = link.find('inertial')
    if el is None:
        return None
    w = what + ' <inertial>'
    mass = el.find('mass')
    if mass is None:
        raise WorldError('%s: <mass> is missing' % at_line(el, w))
    inertia = el.find('inertia')
    if inertia is None:
        raise WorldError('%s: <inertia> is missing' % at_line(el, w))
    values = [_attr_numbers(inertia, k, 1, w + ' <inertia>', (0.0,))[0]
              for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')]
    return Inertial.make(_attr_numbers(mass, 'value', 1, w + ' <mass>')[0], values,
                         _origin(el, w), at_line(el, w))


def _gazebo(root, what):
    """(static, {link: Friction}) from the <gazebo> extensions."""
    static, friction = False, {}
    for g in root.findall('gazebo'):
        ref = g.get('reference')
        w = at_line(g, '%s <gazebo%s>' % (what, ' reference=%r' % ref if ref else ''))
        if not ref:
            s = g.find('static')
            if s is not None:
                text = (s.text or '').strip().lower()
                if text not in ('true', 'false', '1', '0'):
                    raise WorldError('%s <static>: expected true or false, got %r' % (w, s.text))
                static = text in ('true', '1')
            continue
        mu = [g.find(tag) for tag in ('mu1', 'mu2')]
        if any(e is not None for e in mu):
            old = friction.get(ref, Friction())
            values = []
            for e, default, tag in zip(mu, (old.mu, old.mu2), ('mu1', 'mu2')):
                if e is None:
                    values.append(default)
                    continue
                try:
                    values.append(float((e.text or '').strip()))
                except ValueError:
                    raise WorldError('%s <%s>: expected a number, got %r' % (w, tag, e.text)) from None
            friction[ref] = Friction.make(values[0], values[1], w + ' <mu1>/<mu2>')
    return static, friction


def parse_urdf(text, resolver=None, name=None, what='model_xml'):
    """The Model of a URDF document (<robot>), e.g. SpawnModel's model_xml.

    Args:
        text: the URDF (str or bytes).
        resolver: finds package:// and model:// URIs (default: from the environment).
        name: the model's name (default: the robot's).
    Returns:
        Model at the identity pose (the caller places it), fixed joints lumped."""
    resolver = resolver or Resolver.from_environ()
    try:
        root = check_xml(text, what, max_bytes=MAX_XML_BYTES, root='robot')
    except UnsafeXMLError as exc:
        raise WorldError(str(exc)) from None
    name = check_name(name if name else root.get('name'), at_line(root, what + ' <robot>'))
    w = "%s: model '%s'" % (what, name)
    static, friction = _gazebo(root, w)
    links, joints = {}, []
    for el in root.findall('link'):
        lname = check_name(el.get('name'), at_line(el, w + ' <link>'))
        if lname in links:
            raise WorldError('%s: link %r is defined twice' % (at_line(el, w), lname))
        lw = "%s link '%s'" % (w, lname)
        collisions, visuals = [], []
        for tag, out in (('collision', collisions), ('visual', visuals)):
            for i, c in enumerate(el.findall(tag)):
                cname = c.get('name') or ('%s_%s' % (lname, tag) + ('_%d' % i if i else ''))
                cname = check_name(cname, at_line(c, '%s <%s>' % (lw, tag)))
                cw = "%s %s '%s'" % (lw, tag, cname)
                shape = _geometry(c, cw, resolver)
                if tag == 'collision':
                    out.append(Collision(cname, _origin(c, cw), shape, friction.get(lname, Friction())))
                else:
                    out.append(Visual(cname, _origin(c, cw), shape))
        links[lname] = (el, Link(lname, IDENTITY, _inertial(el, lw), tuple(collisions), tuple(visuals)))
    for ref in friction:
        if ref not in links:
            raise WorldError('%s: <gazebo reference=%r>: no such link' % (w, ref))
    origins = {}
    for el in root.findall('joint'):
        jname, jw = fixed_joint(el, w)
        ends = []
        for role in ('parent', 'child'):
            e = el.find(role)
            if e is None or not e.get('link'):
                raise WorldError('%s: <%s link=...> is missing' % (at_line(el, jw), role))
            ends.append(e.get('link'))
        joints.append(Joint(jname, *ends))
        origins[jname] = _origin(el, jw)
    # A link named 'world' is Gazebo's anchor, not a body.
    if 'world' in links:
        wel, wlink = links.pop('world')
        if wlink.collisions or wlink.inertial:
            raise WorldError('%s: link \'world\' is the world: it may not have collisions or mass'
                             % at_line(wel, w))
    children = {j.child for j in joints if j.parent != 'world'}
    roots = [n for n in links if n not in children]
    if len(roots) != 1:
        raise WorldError('%s: expected one root link, got %s' % (w, ', '.join(roots) or 'none'))
    # Link poses in the model's frame (the root link's): down the joints.
    anchor = [origins[j.name] for j in joints if j.parent == 'world' and j.child == roots[0]]
    poses, todo = {roots[0]: anchor[0] if anchor else IDENTITY}, [roots[0]]
    while todo:
        parent = todo.pop()
        for j in joints:
            if j.parent == parent and j.child in links and j.child not in poses:
                poses[j.child] = poses[parent] * origins[j.name]
                todo.append(j.child)
    model = Model(name, tuple(Link(n, poses.get(n, IDENTITY), l.inertial, l.collisions, l.visuals)
                              for n, (_, l) in links.items()),
                  tuple(joints), IDENTITY, static, 'urdf')
    check_model(model, w)
    model = lump_fixed_joints(model)
    for link in model.links:
        if link.inertial is None and not model.anchored:
            raise WorldError("%s link '%s': no <inertial>: a model that moves needs mass (or make it "
                             "static with <gazebo><static>true</static></gazebo>)" % (w, link.name))
    return model
