"""URDF fragments: a gripper or tool grafted into the robot's model, as /robot/urdf asks
(intera_core_msgs/URDFConfiguration: `link` the robot link it hangs from, `joint` its root
joint, `urdf` the xacro-expanded XML; an empty `urdf` removes the fragment at `joint`).

FragmentManager holds the boot description and the fragments received. A fragment is links
and joints forming one tree under `link`, with names new to the robot and the other
fragments, and top-level materials (model.fragment_parse checks it on its own; anything else
is refused with a FragmentError naming it). The description is the boot one, byte for byte,
with each fragment's elements inserted before `</robot>`. Before a change is accepted the
whole model is rebuilt (urdf_parser_py and KDL, Pinocchio, the joint frames of /tf): a
fragment any of them refuses is refused and the robot keeps its model. The SDK republishes
one message at 5 Hz with the same `time`: it is applied once, the repeats cost a hash.
No ROS here. Design notes: docs/urdf_fragments.md.
"""
import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional, Tuple

from intera_rt.model.fragment_parse import (  # noqa: F401 (re-exported)
    MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS, FragmentError, parse_fragment, parse_xml)
from intera_rt.model.joint_frames import JointFrames
from intera_rt.model.robot_model import RobotModel
from intera_rt.model.tool import tool_of
from intera_rt.robot import ARM_JOINTS

DEFAULT_LINK = 'right_hand'            # URDFConfiguration.link when empty
DEFAULT_JOINT = 'right_gripper_base'   # URDFConfiguration.joint when empty
MAX_TIPS = 16                          # tips reported beyond the robot's own (100 Hz each)
SEEN_KEYS = 64                         # messages remembered for the republished bursts
# The electric gripper's description, which the gripper device puts on /robot/urdf (as the
# real robot's does when one is attached), hung from DEFAULT_LINK at DEFAULT_JOINT.
ELECTRIC_GRIPPER = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                                 '..', '..', 'urdf', 'fragments', 'electric_gripper.urdf'))


def electric_gripper_fragment():
    """The electric gripper's URDF fragment (text)."""
    with open(ELECTRIC_GRIPPER) as f:
        return f.read()


def with_electric_gripper(model):
    """A RobotModel of `model`'s description with the electric gripper grafted where the
    gripper device hangs it (a plant that must be built carrying it: Gazebo's model).
    FragmentError naming why it cannot be."""
    change = FragmentManager(model.urdf_xml).receive(0, '', '', electric_gripper_fragment())
    if not change.changed:
        raise FragmentError('the electric gripper cannot be grafted: %s' % change.error)
    return change.model


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

    def tool(self):
        """What the fragments weigh: a model.tool.Tool (None without fragments, or when they
        carry no <inertial>). Builds Pinocchio models: call it off the realtime path."""
        if not self.fragments:
            return None
        return tool_of(self.base_xml, self._xml, self.fragment_xml())

    def fragment_xml(self):
        """The fragments' elements as one <robot> (None without fragments)."""
        return self._compose(self.fragments, standalone=True) if self.fragments else None

    def fragment_links(self):
        """Links of every fragment, fragments in the order applied."""
        return [n for f in self.fragments.values() for n in f.links]

    def tips(self, model, extra=(), exclude=(), max_tips=MAX_TIPS):
        """Which links tip_states reports beyond the robot's own (`exclude`): the ends of each
        fragment's rigid part — the fragment links that move rigidly with the arm (their
        chain from base is right_j0.. in order; not a finger behind a sliding joint) with no
        such link below them, e.g. right_gripper_tip — then the `extra` names that are
        links moving rigidly with the arm in `model` (any robot or fragment link a client
        asked for); no repeats, at most `max_tips` (each is computed for every 100 Hz state)."""
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

    def _compose(self, fragments, standalone=False):
        """The boot description with `fragments` grafted; standalone: the fragments' elements
        alone, as one <robot> (their parent links are the robot's)."""
        if not fragments and not standalone:
            return self.base_xml
        defined = set(self.base_materials)
        parts = ['<robot name="fragments">\n' if standalone else self._head.rstrip() + '\n\n']
        for f in fragments.values():
            parts.append(f.xml(skip_materials=defined))
            defined.update(f.materials)
        parts.append('</robot>\n' if standalone else self._tail)
        return ''.join(parts)

    def _build(self, fragments):
        xml = self._compose(fragments)
        model, frames = build_models(xml)
        return xml, model, frames

    def _commit(self, fragments, xml):
        self.fragments = fragments
        self._xml = xml
