"""URDF fragments: a gripper or tool grafted into the robot's model, as /robot/urdf asks.

A fragment is a xacro-expanded `<robot>` document sent in intera_core_msgs/URDFConfiguration
(`link` = the robot link it hangs from, `joint` = its root joint, `urdf` = the XML; an
empty `urdf` removes the fragment whose root joint is `joint`). The SDK's
send_urdf_fragment.py republishes one message at 5 Hz for a few seconds, all with the same
`time`: `FragmentManager.receive` applies it once and answers the repeats without work.

What a fragment may hold (anything else is refused with a FragmentError naming it):

* `<link>` and `<joint>` elements forming one tree: the root joint (named `joint`) has
  `<parent link=...>` equal to `link`, a link of the robot or of another fragment; every
  other joint's parent and every joint's child is a link of the fragment; every link of
  the fragment is the child of exactly one of its joints. No name may be a link or joint of
  the robot or of another fragment (a fragment replacing one with the same root joint
  frees that one's names). A `<link>` named like the parent link (some fragments carry it
  to be a valid URDF on their own) is left out: the robot's own link stays.
* top-level `<material>` definitions (kept unless the robot already defines that name);
  other top-level elements (`<gazebo>`, `<transmission>`, ...) are left out and reported.

Safe parsing (`parse_xml`): at most `max_bytes` of UTF-8, no DTD at all (so no entity
declarations: no billion laughs, no external entities, no network or file access), at
most `max_depth` nested elements and `max_elements` elements, no unexpanded `xacro:`
elements, no namespaced names. Errors name what is wrong and where (line, column).

The result (`FragmentManager.description()`) is the robot's boot description, byte for
byte, with each fragment's elements inserted before `</robot>` under a comment naming it;
removing every fragment gives the boot description back. Before a change is accepted the
whole model is rebuilt (urdf_parser_py + KDL chains, Pinocchio, the joint frames of
robot_state_publisher): a fragment any of them refuses is refused, and the robot keeps
its model.

No ROS here.
"""
import hashlib
import re
import xml.etree.ElementTree as ET
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional, Tuple
from xml.parsers import expat

from intera_rt.model.joint_frames import JointFrames
from intera_rt.model.robot_model import RobotModel
from intera_rt.robot import ARM_JOINTS

DEFAULT_LINK = 'right_hand'            # URDFConfiguration.link when empty
DEFAULT_JOINT = 'right_gripper_base'   # URDFConfiguration.joint when empty
MAX_BYTES = 1 << 20                    # a xacro-expanded gripper is ~10 kB
MAX_DEPTH = 32                         # URDF nests ~5 deep (robot/link/visual/geometry/mesh)
MAX_ELEMENTS = 20000
MAX_NAMES = 256                        # links (and joints) in one fragment
MAX_NAME_LENGTH = 128
JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')
MAX_TIPS = 16                          # tips reported beyond the robot's own (100 Hz each)
SEEN_KEYS = 64                         # messages remembered for the republished bursts
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


# --- the robot's model with its fragments ------------------------------------------------
@dataclass
class Change:
    """What one message did to the robot's model.

    kind: 'added', 'replaced', 'removed' (the model changed: `xml`, `model`, `frames` are
    the new description and its models); 'unchanged' (nothing to do: the same fragment is
    already there, or nothing to remove); 'repeat' (a message already received: a burst's
    republication); 'refused' (`error` says why; the model is unchanged)."""
    kind: str
    link: str
    joint: str
    message: str = ''
    error: Optional[str] = None
    xml: Optional[str] = None
    model: Optional[RobotModel] = None
    frames: Optional[JointFrames] = None
    links_added: Tuple[str, ...] = ()
    links_removed: Tuple[str, ...] = ()
    dropped: Tuple[str, ...] = field(default=())   # root joints of fragments removed with it

    @property
    def changed(self):
        return self.kind in ('added', 'replaced', 'removed')


def build_models(xml):
    """The models a description must give to be the robot's: RobotModel (urdf_parser_py,
    KDL, the arm chain), its Pinocchio dynamics, the joint frames of /tf. FragmentError
    naming the first that fails."""
    try:
        model = RobotModel(xml)
    except Exception as exc:          # noqa: BLE001 - whatever the URDF parser or KDL raise
        raise FragmentError('urdf: the robot model cannot be built with the fragment: %s' % exc)
    try:
        model.arm_dynamics            # noqa: B018 - built now, not on the 100 Hz path
    except Exception as exc:          # noqa: BLE001
        raise FragmentError('urdf: the dynamics model cannot be built with the fragment: %s' % exc)
    try:
        frames = JointFrames(model.urdf)
    except Exception as exc:          # noqa: BLE001
        raise FragmentError('urdf: the fragment\'s joints cannot be put on /tf: %s' % exc)
    return model, frames


class FragmentManager:
    """The boot description plus the fragments received on /robot/urdf.

    Args:
        base_xml: the robot's description at boot (/robot_description).
        limits: parse_xml limits for fragments (max_bytes, max_depth, max_elements)."""

    def __init__(self, base_xml, **limits):
        if isinstance(base_xml, bytes):
            base_xml = base_xml.decode('utf-8')
        self.base_xml = base_xml
        self.limits = limits
        base = parse_xml(base_xml, what='robot_description', max_bytes=64 << 20,
                         max_elements=1 << 20)
        self.base_links = {e.get('name') for e in base.findall('link')}
        self.base_joints = {e.get('name') for e in base.findall('joint')}
        self.base_materials = {e.get('name') for e in base.findall('material')}
        end = re.search(r'</robot\s*>\s*$', base_xml)
        if end is None:
            raise FragmentError('robot_description: does not end with </robot>')
        self._head, self._tail = base_xml[:end.start()], base_xml[end.start():]
        self.fragments = OrderedDict()     # root joint → Fragment, in the order applied
        self._seen = OrderedDict()         # message key → None (an LRU of SEEN_KEYS)
        self._xml = base_xml

    # --- queries ---------------------------------------------------------------------
    def description(self):
        """The robot's description now (the boot one with every fragment grafted)."""
        return self._xml

    def fragment_links(self):
        """Links of every fragment, fragments in the order applied."""
        return [n for f in self.fragments.values() for n in f.links]

    def tips(self, model, extra=(), exclude=(), max_tips=MAX_TIPS):
        """Which links tip_states reports beyond the robot's own (`exclude`): the ends of each
        fragment's rigid part — the fragment links that move rigidly with the arm (their
        chain from base is right_j0.. in order; not a finger behind a sliding joint) with no
        such link below them, e.g. right_gripper_tip — then the `extra` names that are
        links moving rigidly with the arm in `model` (any robot or fragment link a client
        asked for); no repeats, at most `max_tips` (each costs ~75 µs per 100 Hz state)."""
        def rigid(name):
            if not model.has_frame(name):
                return False
            try:
                names = tuple(model.chain(name).joint_names)
            except Exception:         # noqa: BLE001 - not reachable from base
                return False
            return bool(names) and names == ARM_JOINTS[:len(names)]

        ends = []
        for fragment in self.fragments.values():
            on_arm = [n for n in fragment.links if rigid(n)]
            rigid_set = set(on_arm)
            for name in on_arm:
                below = [child for _, child in model.urdf.child_map.get(name, ())]
                if not any(child in rigid_set for child in below):
                    ends.append(name)
        out = []
        for name in ends + [n for n in extra if rigid(n)]:
            if len(out) >= max_tips:
                break
            if name not in out and name not in exclude:
                out.append(name)
        return out

    # --- messages --------------------------------------------------------------------
    def receive(self, stamp, link, joint, urdf):
        """Handle one URDFConfiguration.

        Args:
            stamp: its `time` (any hashable, e.g. nanoseconds).
            link, joint: its parent link and root joint ('' → right_hand, right_gripper_base).
            urdf: the XML, '' (or only whitespace) to remove the fragment at `joint`.
        Returns:
            A Change (never raises for a bad fragment: kind 'refused' with `error`)."""
        link = link or DEFAULT_LINK
        joint = joint or DEFAULT_JOINT
        urdf = urdf or ''
        size = len(urdf)
        # A burst's repeats cost one hash; an oversize text is not even hashed.
        digest = hashlib.sha256(urdf.encode('utf-8', 'replace')).hexdigest() if size <= 4 * MAX_BYTES else size
        key = (stamp, link, joint, digest)
        if key in self._seen:
            self._seen.move_to_end(key)
            return Change('repeat', link, joint)
        self._seen[key] = None
        while len(self._seen) > SEEN_KEYS:
            self._seen.popitem(last=False)
        try:
            if not urdf.strip():
                return self._remove(link, joint)
            return self._add(link, joint, urdf)
        except FragmentError as exc:
            return Change('refused', link, joint, error=str(exc))

    def _remove(self, link, joint):
        if joint not in self.fragments:
            if joint in self.base_joints:
                raise FragmentError('urdf is empty (remove), but joint %r is part of the robot, not '
                                    'a fragment: only fragments can be removed' % joint)
            return Change('unchanged', link, joint,
                          message='no fragment with root joint %r: nothing to remove' % joint)
        fragments = OrderedDict(self.fragments)
        gone = fragments.pop(joint)
        dropped = self._orphans(fragments)
        xml, model, frames = self._build(fragments)
        removed = gone.links + tuple(n for j in dropped for n in self.fragments[j].links)
        self._commit(fragments, xml)
        return Change('removed', gone.link, joint, xml=xml, model=model, frames=frames,
                      links_removed=removed, dropped=tuple(dropped),
                      message='removed fragment %r from %r (links %s)%s'
                      % (joint, gone.link, ', '.join(removed), self._dropped_text(dropped)))

    def _add(self, link, joint, urdf):
        fragment = parse_fragment(urdf, link, joint, **self.limits)
        old = self.fragments.get(joint)
        if old is not None and old.digest == fragment.digest and old.link == link:
            return Change('unchanged', link, joint,
                          message='fragment %r on %r is already applied' % (joint, link))
        others = OrderedDict((j, f) for j, f in self.fragments.items() if j != joint)
        known_links = set(self.base_links).union(*(f.links for f in others.values()))
        known_joints = set(self.base_joints).union(*(f.joints for f in others.values()))
        if link not in known_links:
            raise FragmentError('urdf: parent link %r (URDFConfiguration.link) is not a link of the '
                                'robot' % link)
        for name in fragment.links:
            if name in known_links:
                raise FragmentError('urdf: link %r is already a link of the robot%s'
                                    % (name, self._owner(name, 'links', others)))
        for name in fragment.joints:
            if name in known_joints:
                raise FragmentError('urdf: joint %r is already a joint of the robot%s'
                                    % (name, self._owner(name, 'joints', others)))
        fragments = OrderedDict(self.fragments)
        fragments[joint] = fragment                  # a replacement keeps its place
        dropped = self._orphans(fragments)
        xml, model, frames = self._build(fragments)
        missing = [n for n in fragment.links if not model.has_frame(n)]
        if missing:                                  # pragma: no cover - parser disagreement
            raise FragmentError('urdf: links %s did not make it into the model' % ', '.join(missing))
        before = set(self.fragment_links())
        self._commit(fragments, xml)
        after = set(self.fragment_links())
        kind = 'replaced' if old is not None else 'added'
        note = (' (left out: %s)' % ', '.join('<%s>' % t for t in fragment.ignored)) if fragment.ignored else ''
        return Change(kind, link, joint, xml=xml, model=model, frames=frames,
                      links_added=tuple(n for n in fragment.links if n not in before),
                      links_removed=tuple(sorted(before - after)), dropped=tuple(dropped),
                      message='%s fragment %r on %r: links %s%s%s'
                      % (kind, joint, link, ', '.join(fragment.links), note,
                         self._dropped_text(dropped)))

    # --- helpers ---------------------------------------------------------------------
    def _owner(self, name, attr, others):
        for j, f in others.items():
            if name in getattr(f, attr):
                return ' (fragment %r)' % j
        return ''

    def _orphans(self, fragments):
        """Remove (in place) and return the root joints of fragments whose parent link is
        gone (they hung from a fragment removed or replaced without that link)."""
        dropped = []
        while True:
            links = set(self.base_links).union(*(f.links for f in fragments.values()))
            lost = [j for j, f in fragments.items() if f.link not in links]
            if not lost:
                return dropped
            for j in lost:
                del fragments[j]
                dropped.append(j)

    @staticmethod
    def _dropped_text(dropped):
        return ('; also removed the fragment(s) hanging from it: %s' % ', '.join(dropped)) if dropped else ''

    def _compose(self, fragments):
        if not fragments:
            return self.base_xml
        defined = set(self.base_materials)
        parts = [self._head.rstrip() + '\n\n']
        for f in fragments.values():
            parts.append(f.xml(skip_materials=defined))
            defined.update(f.materials)
        parts.append(self._tail)
        return ''.join(parts)

    def _build(self, fragments):
        xml = self._compose(fragments)
        model, frames = build_models(xml)
        return xml, model, frames

    def _commit(self, fragments, xml):
        self.fragments = fragments
        self._xml = xml
