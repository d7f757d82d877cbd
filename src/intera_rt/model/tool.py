"""The tool the robot carries (a gripper, any /robot/urdf fragment with <inertial>): its mass
and inertia, as the loads it adds to the bodies of the robot's own joints. No ROS here.

A Tool is plain data (it crosses the pipe to the realtime core): each load is a joint of
the boot model and the 10 dynamic parameters (m, m·c, I about the joint's origin; Pinocchio's
Inertia.toDynamicParameters) the tool adds to the body that joint moves. The tool's own
movable joints (the fingers) are welded where they are at rest (q = 0): the arm's dynamics
keep the boot model's joints, frames and indices, so a controller, the observer and the
plant swap inertias between ticks and nothing else. Design notes: docs/urdf_fragments.md.
"""
from dataclasses import dataclass
from typing import Tuple

import numpy as np
import pinocchio as pin

from intera_rt.model.pinocchio_model import pinocchio_models

NEGLIGIBLE = 1e-12           # a dynamic parameter this small is no load


@dataclass(frozen=True)
class Tool:
    """What the robot carries beyond its boot model.

    fragment: the grafted fragments' links and joints as one <robot> (what a plant that
        builds bodies needs: their shapes, their movable joints).
    loads: ((joint name, 10 dynamic parameters), ...) added to the body each joint moves.
    mass: kg, the tool's total (for logs and tests)."""
    fragment: str
    loads: Tuple[Tuple[str, Tuple[float, ...]], ...]
    mass: float

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
    return Tool(fragment=fragment_xml, loads=tuple(loads), mass=mass)
