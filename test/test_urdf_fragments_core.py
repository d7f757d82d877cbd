"""URDF fragments without ROS (model.urdf_fragments): the safe parser refuses hostile or
broken XML with a message naming the problem, and the manager grafts a gripper into the
robot's model (new tips whose poses follow the fragment's geometry), applies a republished
fragment once, replaces and removes it (the boot description back byte for byte), and
refuses fragments that clash with the robot, leaving the model as it was."""
import os

import numpy as np
import pytest
import PyKDL as kdl

from intera_rt.model import RobotModel, default_urdf_path
from intera_rt.model.urdf_fragments import (FragmentError, FragmentManager, MAX_BYTES,
                                            parse_xml)

GRIPPER = os.path.join(os.path.dirname(default_urdf_path()), 'fragments', 'electric_gripper.urdf')
BASE = RobotModel.from_file().urdf_xml
TIP_OFFSET = 0.06 + 0.082          # right_gripper_tip past right_hand along its z (fragment)


def gripper_xml():
    with open(GRIPPER) as f:
        return f.read()


def tool(root='tool_joint', parent='right_hand', link='tool_tip', z=0.1, extra=''):
    return ('<robot name="tool"><link name="%s"/>'
            '<joint name="%s" type="fixed"><origin xyz="0 0 %r" rpy="0 0 0"/>'
            '<parent link="%s"/><child link="%s"/></joint>%s</robot>'
            % (link, root, z, parent, link, extra))


@pytest.fixture
def manager():
    return FragmentManager(BASE)


def refused(change, *words):
    assert change.kind == 'refused', change
    for w in words:
        assert w in change.error, change.error
    return change.error


# --- the parser -----------------------------------------------------------------------
BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "lol">'
                  + ''.join('<!ENTITY %s "%s">' % (chr(98 + i), ('&%s;' % chr(97 + i)) * 10)
                            for i in range(9))
                  + ']><robot name="x"><link name="&j;"/></robot>')
EXTERNAL = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            '<robot name="x"><link name="&e;"/></robot>')
PARAMETER = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY % p SYSTEM "http://example.com/x.dtd">'
             '%p;]><robot name="x"/>')


@pytest.mark.parametrize('text,words', [
    (BILLION_LAUGHS, ('DTD', 'line 1')),
    (EXTERNAL, ('DTD',)),
    (PARAMETER, ('DTD',)),
    ('<robot name="x"><link name="&ent;"/></robot>', ('not well-formed', 'undefined entity')),
    ('<robot name="x">\n  <link name="a">\n</robot>', ('not well-formed', 'line 3', 'mismatched tag')),
    ('', ('not well-formed', 'no element found')),
    ('<robot>' + '<a>' * 40 + '</a>' * 40 + '</robot>', ('nested more than 32 deep',)),
    ('<robot>' + '<a/>' * 20001 + '</robot>', ('more than 20000 elements',)),
    ('<robot>' + ' ' * MAX_BYTES + '</robot>', ('bytes, more than the %d' % MAX_BYTES,)),
])
def test_the_parser_refuses_hostile_and_broken_xml_naming_the_problem(text, words):
    with pytest.raises(FragmentError) as err:
        parse_xml(text)
    for w in words:
        assert w in str(err.value), str(err.value)


def test_the_parser_reads_plain_xml_with_character_references():
    root = parse_xml('<?xml version="1.0" encoding="utf-8"?><!-- c --><robot name="r&#233;">'
                     '<link name="a&amp;b"/></robot>')
    assert root.tag == 'robot' and root.get('name') == 'r\u00e9'
    assert root.find('link').get('name') == 'a&b'


# --- grafting ---------------------------------------------------------------------------
def test_a_gripper_adds_its_tips_where_its_geometry_puts_them(manager):
    change = manager.receive(1, 'right_hand', 'right_gripper_base', gripper_xml())
    assert change.kind == 'added', change.error
    assert change.links_added == ('right_gripper_base', 'right_gripper', 'right_gripper_tip',
                                  'right_gripper_l_finger', 'right_gripper_r_finger')
    model = change.model
    # The end of its rigid part is a tip; the fingers slide, so they are not.
    assert manager.tips(model) == ['right_gripper_tip']
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, 7)
        hand = model.chain('right_hand').fk_frame(q)
        tip = model.chain('right_gripper_tip').fk_frame(q)
        expected = hand * kdl.Frame(kdl.Rotation.RotZ(np.pi / 2), kdl.Vector(0, 0, TIP_OFFSET))
        assert np.allclose(list(tip.p), list(expected.p), atol=1e-9)
        assert kdl.diff(tip.M, expected.M).Norm() < 1e-9
        # The 100 Hz path (Pinocchio) agrees with the KDL chain.
        p, quat, jac = model.arm_dynamics.tip('right_gripper_tip', q)
        assert np.allclose(p, list(tip.p), atol=1e-9) and jac.shape == (6, 7)
    xml = manager.description()
    assert '<link name="right_gripper_tip"' in xml and xml.startswith(BASE[:200])
    assert 'joint right_gripper_base on right_hand' in xml
    # The description is what the robot's other readers can use too.
    assert change.frames.fixed[-1][1] in model.link_names
    assert {'right_gripper_l_finger_joint', 'right_gripper_r_finger_joint'} <= set(change.frames.movable)


def test_a_republished_fragment_is_applied_once(manager):
    text = gripper_xml()
    assert manager.receive(7, '', '', text).kind == 'added'      # defaults: right_hand, right_gripper_base
    before = manager.description()
    for _ in range(10):                                          # the rest of the 5 Hz burst
        assert manager.receive(7, 'right_hand', 'right_gripper_base', text).kind == 'repeat'
    again = manager.receive(8, 'right_hand', 'right_gripper_base', text)   # a new burst, same content
    assert again.kind == 'unchanged' and 'already applied' in again.message
    assert manager.description() == before


def test_a_fragment_with_the_same_root_joint_replaces_the_earlier_one(manager):
    assert manager.receive(1, '', 'tool_joint', tool(z=0.1)).kind == 'added'
    change = manager.receive(2, '', 'tool_joint', tool(z=0.25, link='long_tip'))
    assert change.kind == 'replaced'
    assert change.links_added == ('long_tip',) and change.links_removed == ('tool_tip',)
    q = np.zeros(7)
    hand, _ = change.model.tip_pose('right_hand', q)
    tip, _ = change.model.tip_pose('long_tip', q)
    assert np.linalg.norm(tip - hand) == pytest.approx(0.25, abs=1e-9)
    assert not change.model.has_frame('tool_tip')
    assert manager.description().count('URDF fragment') == 1


def test_an_empty_fragment_removes_it_and_gives_the_boot_description_back(manager):
    manager.receive(1, 'right_hand', 'right_gripper_base', gripper_xml())
    change = manager.receive(2, 'right_hand', 'right_gripper_base', '')
    assert change.kind == 'removed'
    assert 'right_gripper_tip' in change.links_removed
    assert manager.description() == BASE
    assert not change.model.has_frame('right_gripper_tip')
    assert manager.receive(3, 'right_hand', 'right_gripper_base', '  \n').kind == 'unchanged'
    refused(manager.receive(4, 'right_hand', 'right_j6', ''), "'right_j6' is part of the robot")


def test_removing_a_fragment_removes_the_ones_hanging_from_it(manager):
    manager.receive(1, 'right_hand', 'right_gripper_base', gripper_xml())
    camera = tool(root='cam_joint', parent='right_gripper', link='tool_cam', z=0.01)
    assert manager.receive(2, 'right_gripper', 'cam_joint', camera).kind == 'added'
    change = manager.receive(3, '', 'right_gripper_base', '')
    assert change.dropped == ('cam_joint',) and 'tool_cam' in change.links_removed
    assert manager.description() == BASE


def test_extra_elements_are_left_out_and_a_parent_link_copy_is_ignored(manager):
    text = tool(extra='<link name="right_hand"/><gazebo reference="tool_tip"/>'
                      '<material name="sawyer_red"><color rgba="0 0 1 1"/></material>'
                      '<material name="tool_blue"><color rgba="0 0 1 1"/></material>')
    change = manager.receive(1, '', 'tool_joint', text)
    assert change.kind == 'added', change.error
    assert 'left out: <gazebo>' in change.message
    xml = manager.description()
    assert xml.count('<material name="sawyer_red">') == 1 and 'tool_blue' in xml
    assert xml.count('<link name="right_hand"') == 1


def test_requested_tips_on_the_arm_join_the_fragment_tips(manager):
    change = manager.receive(1, '', '', gripper_xml())
    tips = manager.tips(change.model, extra=['right_l5', 'head', 'nonexistent', 'right_gripper_tip'],
                        exclude=['right_hand'])
    assert tips == ['right_gripper_tip', 'right_l5']
    assert len(manager.tips(change.model, extra=['right_l%d' % i for i in range(7)], max_tips=4)) == 4


WRONG = {
    'unknown parent': (('no_such_link', 'tool_joint', tool(parent='no_such_link')),
                       ("parent link 'no_such_link'", 'not a link of the robot')),
    'root joint parent differs': (('right_l6', 'tool_joint', tool()),
                                  ("root joint 'tool_joint' has parent link 'right_hand'",
                                   "URDFConfiguration.link is 'right_l6'")),
    'no root joint': (('right_hand', 'right_gripper_base', tool()),
                      ("no joint named 'right_gripper_base'", 'its joints: tool_joint')),
    'link clash': (('right_hand', 'tool_joint', tool(link='right_l6')),
                   ("link 'right_l6' is already a link of the robot",)),
    'joint clash': (('right_hand', 'right_j6', tool(root='right_j6')),
                    ("joint 'right_j6' is already a joint of the robot",)),
    'loose link': (('right_hand', 'tool_joint', tool(extra='<link name="floating_part"/>')),
                   ('floating_part', 'not connected')),
    'child outside': (('right_hand', 'tool_joint', tool(
        extra='<joint name="j2" type="fixed"><parent link="tool_tip"/><child link="right_l3"/></joint>')),
        ("joint 'j2': child link 'right_l3' is not a link of the fragment",)),
    'second attachment': (('right_hand', 'tool_joint', tool(
        extra='<link name="l2"/><joint name="j2" type="fixed"><parent link="right_l3"/>'
              '<child link="l2"/></joint>')),
        ("joint 'j2': parent link 'right_l3' is not a link of the fragment",)),
    'two parents': (('right_hand', 'tool_joint', tool(
        extra='<joint name="j2" type="fixed"><parent link="tool_tip"/><child link="tool_tip"/></joint>')),
        ("link 'tool_tip' is the child of two joints",)),
    'bad joint type': (('right_hand', 'tool_joint', tool().replace('type="fixed"', 'type="hinge"')),
                       ("joint 'tool_joint' has type 'hinge'",)),
    'not a robot': (('right_hand', 'tool_joint', '<model><link name="x"/></model>'),
                    ('root element is <model>',)),
    'xacro left in': (('right_hand', 'tool_joint', tool(z='${0.1+0.02}')),
                      ('unexpanded xacro',)),
    'xacro macro': (('right_hand', 'tool_joint',
                     '<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:gripper/></robot>'),
                    ('<xacro:gripper>', 'unexpanded xacro')),
    'bad name': (('right_hand', 'tool_joint', tool(link='tool tip')), ("<link name='tool tip'>",)),
    'unusable origin': (('right_hand', 'tool_joint', tool(z='not_a_number')),
                        ('cannot be built with the fragment',)),
    'malformed': (('right_hand', 'tool_joint', tool()[:-3]), ('not well-formed XML', 'line 1')),
    'billion laughs': (('right_hand', 'tool_joint', BILLION_LAUGHS), ('DTD',)),
    'external entity': (('right_hand', 'tool_joint', EXTERNAL), ('DTD',)),
    'oversize': (('right_hand', 'tool_joint', tool(extra='<!--%s-->' % ('x' * MAX_BYTES))),
                 ('more than the %d' % MAX_BYTES,)),
}


@pytest.mark.parametrize('case', list(WRONG))
def test_a_bad_fragment_is_refused_naming_the_problem_and_the_model_is_kept(manager, case):
    manager.receive(1, '', '', gripper_xml())
    before = manager.description()
    (link, joint, text), words = WRONG[case]
    refused(manager.receive(2, link, joint, text), *words)
    assert manager.description() == before
    assert list(manager.fragments) == ['right_gripper_base']
    # The refusal is said once per message, not once per republication.
    assert manager.receive(2, link, joint, text).kind == 'repeat'


def test_a_fragment_without_a_rigid_leaf_offers_its_base_as_tip(manager):
    fingers = tool(extra='<link name="finger"/><joint name="slide" type="prismatic">'
                         '<axis xyz="0 1 0"/><limit lower="0" upper="0.02" effort="1" velocity="1"/>'
                         '<parent link="tool_tip"/><child link="finger"/></joint>')
    change = manager.receive(1, '', 'tool_joint', fingers)
    assert change.kind == 'added', change.error
    assert manager.tips(change.model) == ['tool_tip']


def test_a_fragment_cannot_reuse_another_fragments_names(manager):
    manager.receive(1, '', '', gripper_xml())
    error = refused(manager.receive(2, 'right_hand', 'tool_joint', tool(link='right_gripper_tip')),
                    "link 'right_gripper_tip'")
    assert "(fragment 'right_gripper_base')" in error
