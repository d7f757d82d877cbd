"""The robot's Pinocchio models and joint index maps, built once per URDF; every user takes
its own data. No ROS here.

Pinocchio's pattern: a Model is built once and only read; each user (a controller, the
plant, a monitor, a planner, a service thread) calls `createData()` for the buffers its
calls write, so callers that interleave never overwrite each other's results.
`pinocchio_models(urdf_xml)` is that build, shared by every RobotModel, CollisionModel and
AvoidanceModel made from the same URDF text in one process:

  full  every joint and inertia of the URDF (the plant's model, collision detection's)
  arm   the same joints with the head's inertia left out: the controller's model (it does
        not know where the head is; the head is a side branch on right_l0)

Both have the same joints in the same order, so one index map (`idx_q`, `idx_v`) serves both.
Never modify a model you are handed: build your own (pin.buildModelFromXML) if you must.
"""
import functools
import threading

import numpy as np
import pinocchio as pin

from intera_rt.robot import BASE_FRAME, GRAVITY, HEAD_JOINTS

CACHED_URDFS = 8            # distinct URDF texts kept built (boot, armnav, a few fragments)


class PinocchioModels:
    """The `full` and `arm` Pinocchio models of one URDF and their joint index maps.

    Args:
        urdf_xml: URDF text (str), already checked (safe_xml.safe_urdf).
    Raises:
        whatever Pinocchio raises for a URDF it cannot build (ValueError, RuntimeError, ...).
    """

    def __init__(self, urdf_xml):
        self.full = pin.buildModelFromXML(urdf_xml)
        self.full.gravity.linear = np.array(GRAVITY)
        self.arm = self.full.copy()
        for name in HEAD_JOINTS:
            if self.full.existJointName(name):
                self.arm.inertias[self.full.getJointId(name)] = pin.Inertia.Zero()
        # Pinocchio orders joints depth-first (the head comes between right_j0 and right_j1):
        # name → (index in q, index in v), built once here.
        self._index = {}
        for jid in range(1, self.full.njoints):
            joint = self.full.joints[jid]
            self._index[self.full.names[jid]] = (joint.idx_q, joint.idx_v)
        # Poses are reported in base, which need not be the URDF's root.
        data = self.full.createData()
        pin.framesForwardKinematics(self.full, data, pin.neutral(self.full))
        if self.full.existFrame(BASE_FRAME, pin.FrameType.BODY):
            base = data.oMf[self.full.getFrameId(BASE_FRAME, pin.FrameType.BODY)]
        else:
            base = pin.SE3.Identity()
        self.world_base = None if base.isIdentity() else base.copy()   # base in the root frame
        self.base_inv = None if base.isIdentity() else base.inverse()  # the root in base

    def has_joint(self, name):
        return name in self._index

    def idx_q(self, names):
        """Indices in a configuration vector q of the named joints, in their order (an int
        array); KeyError naming a joint the model lacks."""
        return np.array([self._entry(n)[0] for n in names], dtype=int)

    def idx_v(self, names):
        """Indices in a velocity (or torque) vector of the named joints (see idx_q)."""
        return np.array([self._entry(n)[1] for n in names], dtype=int)

    def body_frame(self, name):
        """The id of link `name`'s frame; KeyError when the model has no such link."""
        if not self.full.existFrame(name, pin.FrameType.BODY):
            raise KeyError('no link named %r in the robot model' % name)
        return self.full.getFrameId(name, pin.FrameType.BODY)

    def _entry(self, name):
        try:
            return self._index[name]
        except KeyError:
            raise KeyError('the robot model has no joint %r' % (name,)) from None


_lock = threading.Lock()


@functools.lru_cache(maxsize=CACHED_URDFS)
def _build(urdf_text):
    return PinocchioModels(urdf_text)


def pinocchio_models(urdf_xml):
    """The PinocchioModels of this URDF text (str or UTF-8 bytes), built on first use and
    shared after; pass XML that passed safe_xml.safe_urdf."""
    text = urdf_xml.decode('utf-8') if isinstance(urdf_xml, (bytes, bytearray)) else urdf_xml
    with _lock:                     # (two threads asking at once build it once)
        return _build(text)
