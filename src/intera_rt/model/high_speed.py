"""High-speed scaling's shapes (seed 003's third collision model): the armnav shapes inflated
once more, by `margin`, and the limb's Cartesian speed. No ROS here.

Seed 003: "the collision blocks for this purpose [are larger] than the original collision
blocks", used when "the speed of the limb in cartesian space is higher than 0.2 m/s". The
blocks are model.avoidance's armnav shapes grown by `margin` on every face (sphere and
cylinder radius + margin, cylinder length + 2·margin, box sizes + 2·margin), with the same
pair selection and rest-pose allowances (AvoidanceModel). Their velocity_scale runs from 1
where two blocks begin to overlap beyond their allowance to 0 at 2·margin of overlap, about
where the armnav shapes themselves meet (exact for spheres and cylinder sides).
"""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from intera_rt.model.avoidance import AvoidanceModel
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.model.shape_growth import grow_geometry
from intera_rt.robot import ARM_JOINTS

DEFAULT_MARGIN = 0.05          # m grown on every face of the armnav shapes
LIMB_TIP = 'right_hand'        # the limb's last frame, besides the joints' origins


def inflate_shapes(urdf_xml, margin):
    """The URDF text with every <collision> primitive grown by `margin` (m, ≥ 0) on every
    face (model.shape_growth). ValueError for a mesh or another shape that cannot be grown."""
    margin = float(margin)
    if not margin >= 0.0:
        raise ValueError('high-speed shapes: margin must be ≥ 0 m, got %r' % margin)
    root = ET.fromstring(safe_urdf(urdf_xml, 'armnav URDF'))
    for link in root.findall('link'):
        for geometry in link.iterfind('collision/geometry'):
            grow_geometry(geometry, margin, where='link %s' % link.get('name'))
    return ET.tostring(root, encoding='unicode')


class HighSpeedShapes(AvoidanceModel):
    """The armnav shapes grown by `margin` (see the module docstring).

    Args:
        armnav_xml: the armnav URDF text (/robot/armnav_robot_description).
        margin: m grown on every face; velocity_scale reaches 0 at 2·margin of overlap.
    """

    def __init__(self, armnav_xml, margin=DEFAULT_MARGIN, **kwargs):
        margin = float(margin)
        if not margin > 0.0:
            raise ValueError('high-speed shapes: margin must be > 0 m, got %r' % margin)
        self.margin = margin
        super().__init__(inflate_shapes(armnav_xml, margin), padding=-2.0 * margin, zone=0.0,
                         **kwargs)
        model = self.model
        self._joint_ids = [model.getJointId(name) for name in ARM_JOINTS]
        self._tip = model.getFrameId(LIMB_TIP, pin.BODY) if model.existFrame(LIMB_TIP, pin.BODY) \
            else None
        self._v = np.zeros(model.nv)

    def velocity_scale_unchecked(self, q_arm, q_head, qd_ref):
        """velocity_scale for the 1 kHz path: inputs unchecked."""
        return self._velocity_scale(self._set_q(q_arm, q_head), qd_ref)

    def limb_speed(self, q_arm, q_head, qd_arm):
        """The limb's Cartesian speed (m/s) at joint velocity qd_arm (7, rad/s): the largest
        linear speed of the arm joints' origins and of right_hand. Inputs unchecked (1 kHz
        path)."""
        model, data = self.model, self.data
        v = self._v
        v[self._arm_v] = qd_arm
        pin.forwardKinematics(model, data, self._set_q(q_arm, q_head), v)
        # The largest squared speed, then its root: the same float as the largest of the
        # norms (np.linalg.norm is sqrt(x·x); sqrt is monotone), without norm's ~2 µs a call.
        fastest = 0.0
        velocities = data.v
        for j in self._joint_ids:
            # data.v is in the joint's frame: the norm of its linear part is the origin's speed
            linear = velocities[j].linear
            fastest = max(fastest, float(linear.dot(linear)))
        if self._tip is not None:
            linear = pin.getFrameVelocity(model, data, self._tip, pin.LOCAL).linear
            fastest = max(fastest, float(linear.dot(linear)))
        return math.sqrt(fastest)
