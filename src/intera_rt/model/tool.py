"""The tool the robot carries (a gripper, any /robot/urdf fragment with <inertial>): its mass
and inertia, as the loads it adds to the bodies of the robot's own joints. No ROS here.

A Tool is plain data (it crosses the pipe to the realtime core): each load is a joint of
the boot model and the 10 dynamic parameters (m, m·c, I about the joint's origin; Pinocchio's
Inertia.toDynamicParameters) the tool adds to the body that joint moves. The tool's own
movable joints (the fingers) are welded where they are at rest (q = 0): the arm's dynamics
keep the boot model's joints, frames and indices, so a controller, the observer and the
plant swap inertias between ticks and nothing else. Design notes: docs/urdf_fragments.md.
"""
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Tuple

import hppfcl
import numpy as np
import pinocchio as pin

from intera_rt.model.pinocchio_model import pinocchio_models
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.model.shape_growth import grow_geometry

NEGLIGIBLE = 1e-12           # a dynamic parameter this small is no load


@dataclass(frozen=True)
class Tool:
    """What the robot carries beyond its boot model.

    fragment: the grafted fragments' links and joints as one <robot> (what a plant that
        builds bodies needs: their shapes, their movable joints).
    loads: ((joint name, 10 dynamic parameters), ...) added to the body each joint moves.
    mass: kg, the tool's total (for logs and tests).
    shapes: the tool's collision primitives welded on the robot's joints (welded_shapes
        entries; a plant builds them with shape_object, between ticks)."""
    fragment: str
    loads: Tuple[Tuple[str, Tuple[float, ...]], ...]
    mass: float
    shapes: Tuple = ()

    def apply(self, model):
        """A copy of Pinocchio `model` (one with the boot model's joints) carrying the tool;
        KeyError naming a joint it lacks."""
        out = model.copy()
        for name, params in self.loads:
            if not out.existJointName(name):
                raise KeyError('the model has no joint %r to carry the tool on' % name)
            jid = out.getJointId(name)
            total = out.inertias[jid].toDynamicParameters() + np.asarray(params)
            out.inertias[jid] = pin.Inertia.FromDynamicParameters(total)
        return out


def tool_of(base_xml, description_xml, fragment_xml):
    """The Tool a description carries beyond the boot one (None when it adds no mass).

    Args:
        base_xml: the boot description.
        description_xml: the same with the fragments grafted (FragmentManager.description()).
        fragment_xml: the fragments' elements as one <robot> (Tool.fragment).
    Raises:
        ValueError when the grafted description lacks a joint of the boot one, or has a
        joint below none of them (FragmentManager never builds such a description)."""
    base = pinocchio_models(base_xml).full
    grafted = pin.buildModelFromXML(description_xml)
    params = {}                      # boot joint → what the tool adds to its body
    for jid in range(1, grafted.njoints):
        # A tool joint's body, welded at rest (q = 0), on the nearest of the robot's joints.
        place, k = pin.SE3.Identity(), jid
        while not base.existJointName(grafted.names[k]):
            place = grafted.jointPlacements[k] * place
            k = grafted.parents[k]
            if k == 0:
                raise ValueError('joint %r hangs from no joint of the robot' % grafted.names[jid])
        name = grafted.names[k]
        added = place.act(grafted.inertias[jid]).toDynamicParameters()
        if k == jid:                 # the robot's own body, with the tool's fixed links merged
            added = added - base.inertias[base.getJointId(name)].toDynamicParameters()
        params[name] = params.get(name, 0.0) + added
    loads, mass = [], 0.0
    for jid in range(1, base.njoints):
        name = base.names[jid]
        if name not in params:
            raise ValueError('the grafted description has no joint %r' % name)
        diff = params[name]
        if np.max(np.abs(diff)) > NEGLIGIBLE:
            loads.append((name, tuple(float(x) for x in diff)))
            mass += float(diff[0])
    if not loads:
        return None
    try:
        geom = pin.buildGeomFromUrdfString(grafted, description_xml, pin.COLLISION)
        links = [grafted.frames[g.parentFrame].name for g in geom.geometryObjects]
        shapes = tuple(s for s in welded_shapes(base, grafted, geom, links)
                       if not base.existFrame(s[0]))
    except (ValueError, RuntimeError):    # a mesh, not a primitive: no shapes to touch with
        shapes = ()
    return Tool(fragment=fragment_xml, loads=tuple(loads), mass=mass, shapes=shapes)


# hpp-fcl primitive → (kind, its constructor's arguments), and back (shape_object).
SHAPE_KINDS = {'sphere': hppfcl.Sphere, 'cylinder': hppfcl.Cylinder, 'box': hppfcl.Box,
               'capsule': hppfcl.Capsule}


def graft(urdf_xml, fragment_xml, margin=0.0):
    """`urdf_xml` with the fragments' links and joints grafted (no visuals, no materials),
    their collision primitives grown by `margin` m (model.shape_growth). `fragment_xml`:
    the fragments as one <robot> (Tool.fragment). ValueError for a shape that cannot be
    grown (a mesh, when margin > 0) or a URDF that does not end with </robot>."""
    root = ET.fromstring(safe_urdf(fragment_xml, 'tool fragment'))
    parts = []
    for element in root:
        if element.tag == 'link':
            for visual in element.findall('visual'):
                element.remove(visual)
            if margin:
                for geometry in element.iterfind('collision/geometry'):
                    grow_geometry(geometry, margin, where='link %s' % element.get('name'))
        elif element.tag != 'joint':
            continue
        parts.append(ET.tostring(element, encoding='unicode'))
    end = re.search(r'</robot\s*>\s*$', urdf_xml)
    if end is None:
        raise ValueError('the URDF does not end with </robot>')
    return urdf_xml[:end.start()] + '\n'.join(parts) + urdf_xml[end.start():]


def welded_shapes(base, grafted, geom, links):
    """The collision shapes of `geom` (a GeometryModel on the Pinocchio model `grafted`,
    `links` naming each shape's link) welded, as the tool's inertias are, onto the nearest
    joint of `base` (a tool's fingers where they rest, q = 0): a tuple of plain entries
    (link, base joint name, placement in that joint's frame as 9 rotation (row-major) + 3
    translation floats, kind in SHAPE_KINDS, the constructor's arguments). ValueError for
    a shape that is no primitive."""
    shapes = []
    for link, g in zip(links, geom.geometryObjects):
        place, k = g.placement, g.parentJoint
        while not base.existJointName(grafted.names[k]):
            place = grafted.jointPlacements[k] * place
            k = grafted.parents[k]
        shapes.append((link, grafted.names[k],
                       tuple(float(x) for x in place.rotation.flatten()) +
                       tuple(float(x) for x in place.translation)) + _shape_args(g.geometry, link))
    return tuple(shapes)


def shape_object(shape, model, k=0):
    """A Pinocchio GeometryObject for a welded_shapes entry on `model` (one with the base
    model's joints), named link_k. KeyError naming a joint the model lacks."""
    link, joint, placement, kind, args = shape
    if not model.existJointName(joint):
        raise KeyError('the model has no joint %r to carry %r on' % (joint, link))
    place = pin.SE3(np.array(placement[:9]).reshape(3, 3), np.array(placement[9:]))
    return pin.GeometryObject('%s_%d' % (link, k), model.getJointId(joint),
                              SHAPE_KINDS[kind](*args), place)


def _shape_args(shape, link):
    """(kind, constructor arguments) of an hpp-fcl primitive."""
    if isinstance(shape, hppfcl.Sphere):
        return 'sphere', (float(shape.radius),)
    if isinstance(shape, (hppfcl.Cylinder, hppfcl.Capsule)):
        kind = 'cylinder' if isinstance(shape, hppfcl.Cylinder) else 'capsule'
        return kind, (float(shape.radius), 2.0 * float(shape.halfLength))
    if isinstance(shape, hppfcl.Box):
        return 'box', tuple(2.0 * float(x) for x in shape.halfSide)
    raise ValueError('link %s has a %s, not a primitive shape' % (link, type(shape).__name__))
