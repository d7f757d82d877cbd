"""Hostile and oversized XML where the robot reads URDFs (intera_rt.model.safe_xml): refused
with an UnsafeXMLError (a ValueError) naming what is wrong, by the check itself and by every
model built from a URDF (robot model, collision and avoidance models, joint frames, the
camera scene). No ROS; the same through ROS (the IK/FK node re-reading /robot_description)
is in test_reliability_catalogue.py."""
import time
from pathlib import Path

import pytest

from intera_rt.model.safe_xml import MAX_BYTES, UnsafeXMLError, check_xml, safe_urdf

URDF_DIR = Path(__file__).resolve().parents[1] / 'urdf'
SAWYER = (URDF_DIR / 'sawyer.urdf').read_text()
ARMNAV = (URDF_DIR / 'sawyer_armnav.urdf').read_text()
DECL = '<?xml version="1.0" encoding="utf-8"?>'


def with_doctype(doctype, name_ref):
    """The Sawyer's URDF with a DTD after the XML declaration and the robot's name made an
    entity reference."""
    assert SAWYER.startswith(DECL)
    return SAWYER.replace(DECL, DECL + '\n' + doctype, 1).replace('name="sawyer"', 'name="%s"' % name_ref, 1)


BILLION_LAUGHS = with_doctype(
    '<!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">' + ''.join(
        '<!ENTITY %s "%s">' % (chr(98 + i), ('&%s;' % chr(97 + i)) * 10) for i in range(8)) + ']>', '&i;')
EXTERNAL_ENTITY = with_doctype('<!DOCTYPE robot [<!ENTITY x SYSTEM "file:///etc/passwd">]>', '&x;')
PARAMETER_ENTITY = with_doctype('<!DOCTYPE robot [<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]>',
                                'sawyer')
DOCTYPE_ONLY = with_doctype('<!DOCTYPE robot>', 'sawyer')
DEEP = SAWYER.replace('</robot>', '<x>' * 200 + '</x>' * 200 + '</robot>')
MANY = SAWYER.replace('</robot>', '<x/>' * 150000 + '</robot>')
HUGE = SAWYER.replace('</robot>', '<!--' + 'x' * (MAX_BYTES + 10) + '--></robot>')

CASES = {
    'billion laughs': (BILLION_LAUGHS, 'declares a DOCTYPE'),
    'external entity': (EXTERNAL_ENTITY, 'declares a DOCTYPE'),
    'parameter entity': (PARAMETER_ENTITY, 'declares a DOCTYPE'),
    'a bare DOCTYPE': (DOCTYPE_ONLY, 'declares a DOCTYPE'),
    'an undeclared entity': (SAWYER.replace('name="sawyer"', 'name="&x;"', 1), 'not well-formed'),
    'nested 201 deep': (DEEP, 'nests elements 33 deep'),
    'too many elements': (MANY, 'more than 100000 elements'),
    'oversized': (HUGE, 'more than the %d allowed' % MAX_BYTES),
    'not well-formed': (SAWYER[:-40], 'not well-formed'),
    'not XML': ('hello', 'not well-formed'),
    'empty': ('', 'not well-formed'),
    'another root': ('<launch><node/></launch>', 'the root element is <launch>, expected <robot>'),
    'not text': (42, 'expected XML text, got int'),
}


@pytest.mark.parametrize('case', list(CASES))
def test_hostile_or_broken_xml_is_refused_saying_why(case):
    text, words = CASES[case]
    t0 = time.monotonic()
    with pytest.raises(UnsafeXMLError) as err:
        check_xml(text, '/robot_description')
    assert time.monotonic() - t0 < 2.0
    assert str(err.value).startswith('/robot_description') and words in str(err.value), str(err.value)
    assert isinstance(err.value, ValueError)


def test_the_robots_own_urdfs_pass_quickly():
    t0 = time.perf_counter()
    for _ in range(20):
        check_xml(SAWYER)
        check_xml(ARMNAV)
    per_check = (time.perf_counter() - t0) / 40
    assert per_check < 0.05, per_check
    assert safe_urdf(SAWYER.encode()) == SAWYER


def _robot_model(xml):
    from intera_rt.model import RobotModel
    return RobotModel(xml)


def _collision_model(xml):
    from intera_rt.model.collision import CollisionModel
    return CollisionModel(xml)


def _avoidance_model(xml):
    from intera_rt.model.avoidance import AvoidanceModel
    return AvoidanceModel(xml)


def _shape_links(xml):
    from intera_rt.model.avoidance import shape_links
    return shape_links(xml)


def _joint_frames(xml):
    from intera_rt.model.joint_frames import JointFrames
    return JointFrames.from_xml(xml)


def _scene(xml):
    from intera_rt.io.render import Scene
    return Scene(xml)


@pytest.mark.parametrize('build', [_robot_model, _collision_model, _avoidance_model, _shape_links,
                                   _joint_frames, _scene], ids=lambda f: f.__name__.strip('_'))
@pytest.mark.parametrize('case', ['billion laughs', 'external entity', 'nested 201 deep'])
def test_every_model_built_from_a_urdf_refuses_it(build, case):
    text, words = CASES[case]
    with pytest.raises(UnsafeXMLError) as err:
        build(text)
    assert words in str(err.value)
