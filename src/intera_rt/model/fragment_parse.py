"""One URDF fragment (a gripper or tool for /robot/urdf) parsed and checked on its own: safe
XML parsing (`parse_xml`: bounded size, depth and element count, no DTD and so no entity
declarations or external entities, no unexpanded xacro or namespaced names) and the
fragment's tree and names (`parse_fragment`). Errors are FragmentErrors naming what is wrong
and where (line, column). Checks against the robot's own names are FragmentManager's
(model.urdf_fragments). No ROS here.
"""
import hashlib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Tuple
from xml.parsers import expat

MAX_BYTES = 1 << 20                    # a xacro-expanded gripper is ~10 kB
MAX_DEPTH = 32                         # URDF nests ~5 deep (robot/link/visual/geometry/mesh)
MAX_ELEMENTS = 20000
MAX_NAMES = 256                        # links (and joints) in one fragment
MAX_NAME_LENGTH = 128
JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')
_NAME = re.compile(r'^[A-Za-z0-9_.\-]+$')


class FragmentError(ValueError):
    """A fragment that cannot be applied; the message names what is wrong."""


# --- safe XML -----------------------------------------------------------------------------
def parse_xml(text, what='urdf', max_bytes=MAX_BYTES, max_depth=MAX_DEPTH,
              max_elements=MAX_ELEMENTS):
    """Parse untrusted XML text into an ElementTree element, refusing DTDs (and with them
    every entity declaration), deep nesting, too many elements and oversize input.

    Args:
        text: the XML (str or UTF-8 bytes).
        what: how errors name the input (e.g. 'urdf').
    Returns:
        The root xml.etree.ElementTree.Element.
    Raises:
        FragmentError naming the problem (and line and column for XML errors)."""
    data = text.encode('utf-8') if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise FragmentError('%s: %d bytes, more than the %d a fragment may have'
                            % (what, len(data), max_bytes))
    parser = expat.ParserCreate()
    builder = ET.TreeBuilder()
    depth = [0]
    count = [0]

    def where():
        return 'line %d, column %d' % (parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)

    def refuse_dtd(*_args):
        raise FragmentError('%s: a DTD (<!DOCTYPE ...>) at %s: DTDs and entity declarations '
                            'are not accepted' % (what, where()))

    def refuse_entity(*_args):
        raise FragmentError('%s: an external entity at %s: not accepted' % (what, where()))

    def start(tag, attrs):
        depth[0] += 1
        count[0] += 1
        if depth[0] > max_depth:
            raise FragmentError('%s: elements nested more than %d deep at %s'
                                % (what, max_depth, where()))
        if count[0] > max_elements:
            raise FragmentError('%s: more than %d elements' % (what, max_elements))
        builder.start(tag, attrs)

    def end(tag):
        depth[0] -= 1
        builder.end(tag)

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.UnparsedEntityDeclHandler = refuse_dtd
    parser.ExternalEntityRefHandler = refuse_entity
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    parser.ordered_attributes = False
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise FragmentError('%s: not well-formed XML at line %d, column %d: %s'
                            % (what, exc.lineno, exc.offset + 1, expat.ErrorString(exc.code))) from None
    return builder.close()


# --- fragments ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fragment:
    """One validated fragment (names checked within itself, not yet against the robot)."""
    link: str                         # the robot link it hangs from
    joint: str                        # its root joint
    links: Tuple[str, ...]            # its links, in document order
    joints: Tuple[str, ...]
    materials: Tuple[str, ...]        # top-level material names it defines
    elements: Tuple[ET.Element, ...]  # what is grafted: materials, links, joints
    ignored: Tuple[str, ...]          # top-level elements left out, e.g. 'gazebo'
    digest: str                       # sha256 of the grafted XML

    def xml(self, skip_materials=()):
        """The grafted elements as XML text, under a comment naming the fragment."""
        out = ['  <!-- URDF fragment (/robot/urdf): joint %s on %s -->\n' % (self.joint, self.link)]
        for e in self.elements:
            if e.tag == 'material' and e.get('name') in skip_materials:
                continue
            e.tail = '\n'
            out.append('  ' + ET.tostring(e, encoding='unicode'))
        return ''.join(out)


def _name(elem, what):
    name = elem.get('name')
    if not name:
        raise FragmentError('urdf: a <%s> without a name' % what)
    if len(name) > MAX_NAME_LENGTH or not _NAME.match(name):
        raise FragmentError('urdf: <%s name=%r>: a name is letters, digits, _ . - (at most %d)'
                            % (what, name[:MAX_NAME_LENGTH], MAX_NAME_LENGTH))
    return name


def _check_names_plain(elem):
    """Refuse namespaced or unexpanded-xacro names inside grafted elements: written back
    into /robot_description they would not be well-formed (an unbound prefix)."""
    for e in elem.iter():
        if ':' in e.tag:
            raise FragmentError('urdf: <%s> inside <%s name=%r>: %s' % (
                e.tag, elem.tag, elem.get('name'),
                'unexpanded xacro: send the xacro-expanded XML' if e.tag.startswith('xacro:')
                else 'namespaced elements are not URDF'))
        for key, value in e.attrib.items():
            if ':' in key:
                raise FragmentError('urdf: attribute %s of <%s> inside <%s name=%r>: namespaced '
                                    'attributes are not URDF' % (key, e.tag, elem.tag, elem.get('name')))
            if '${' in value or '$(' in value:
                raise FragmentError('urdf: %s=%r of <%s> inside <%s name=%r>: unexpanded xacro: '
                                    'send the xacro-expanded XML' % (key, value, e.tag, elem.tag,
                                                                    elem.get('name')))


def _child_link(joint, name, which):
    e = joint.find(which)
    link = e.get('link') if e is not None else None
    if not link:
        raise FragmentError('urdf: joint %r has no <%s link=...>' % (name, which))
    return link


def parse_fragment(text, link, joint, **limits):
    """Parse and check one fragment on its own (its tree, its names); `limits` go to
    parse_xml. Returns a Fragment; raises FragmentError."""
    root = parse_xml(text, **limits)
    if root.tag != 'robot':
        raise FragmentError('urdf: the root element is <%s>; a fragment is a <robot> '
                            'document' % root.tag)
    links, joints, materials, kept, ignored = [], {}, [], [], []
    parents, children = {}, {}
    for e in root:
        if e.tag == 'link':
            name = _name(e, 'link')
            if name == link:
                continue                          # the parent, carried to be valid URDF
            if name in links:
                raise FragmentError('urdf: link %r defined twice' % name)
            _check_names_plain(e)
            links.append(name)
            kept.append(e)
        elif e.tag == 'joint':
            name = _name(e, 'joint')
            if name in joints:
                raise FragmentError('urdf: joint %r defined twice' % name)
            kind = e.get('type')
            if kind not in JOINT_TYPES:
                raise FragmentError('urdf: joint %r has type %r; expected one of %s'
                                    % (name, kind, ', '.join(JOINT_TYPES)))
            _check_names_plain(e)
            parents[name] = _child_link(e, name, 'parent')
            children[name] = _child_link(e, name, 'child')
            joints[name] = e
            kept.append(e)
        elif e.tag == 'material':
            name = _name(e, 'material')
            _check_names_plain(e)
            if name not in materials:
                materials.append(name)
                kept.append(e)
        elif e.tag.startswith('xacro:'):
            raise FragmentError('urdf: <%s> at the top level: unexpanded xacro: send the '
                                'xacro-expanded XML' % e.tag)
        else:
            ignored.append(e.tag)
        if len(links) > MAX_NAMES or len(joints) > MAX_NAMES:
            raise FragmentError('urdf: more than %d links or joints in one fragment' % MAX_NAMES)
    if joint not in joints:
        raise FragmentError('urdf: the fragment has no joint named %r (URDFConfiguration.joint); '
                            'its joints: %s' % (joint, ', '.join(joints) or 'none'))
    if parents[joint] != link:
        raise FragmentError('urdf: root joint %r has parent link %r, but URDFConfiguration.link '
                            'is %r' % (joint, parents[joint], link))
    link_set = set(links)
    child_of = {}
    for name in joints:
        child = children[name]
        if child == link:
            raise FragmentError('urdf: joint %r has the parent link %r as its child' % (name, child))
        if child not in link_set:
            raise FragmentError('urdf: joint %r: child link %r is not a link of the fragment'
                                % (name, child))
        if child in child_of:
            raise FragmentError('urdf: link %r is the child of two joints, %r and %r'
                                % (child, child_of[child], name))
        child_of[child] = name
        if name != joint and parents[name] not in link_set:
            raise FragmentError('urdf: joint %r: parent link %r is not a link of the fragment '
                                '(only the root joint %r hangs from the robot)'
                                % (name, parents[name], joint))
    # Every link reachable from the root joint's child: one tree, no loops, nothing loose.
    below = {}
    for name in joints:
        below.setdefault(parents[name], []).append(children[name])
    reached, todo = set(), [children[joint]]
    while todo:
        current = todo.pop()
        if current in reached:
            continue
        reached.add(current)
        todo.extend(below.get(current, ()))
    loose = [n for n in links if n not in reached]
    if loose:
        raise FragmentError('urdf: link(s) %s are not connected to the root joint %r'
                            % (', '.join(loose), joint))
    text_out = ''.join(ET.tostring(e, encoding='unicode') for e in kept)
    return Fragment(link=link, joint=joint, links=tuple(links), joints=tuple(joints),
                    materials=tuple(materials), elements=tuple(kept), ignored=tuple(ignored),
                    digest=hashlib.sha256(text_out.encode()).hexdigest())
