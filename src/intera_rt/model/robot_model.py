"""The robot model loaded from URDF text: joint limits, KDL chains for kinematics and
the gravity model (what the robot itself uses), the tip frames tip_states reports, and the
Pinocchio models (built once per URDF, model.pinocchio_model) from which each user makes
its own ArmDynamics."""
import copy
import math
import os
import threading
from dataclasses import dataclass, replace

import numpy as np
import PyKDL as kdl
from urdf_parser_py.urdf import URDF

from intera_rt.model.dynamics import ArmDynamics
from intera_rt.model.pinocchio_model import pinocchio_models
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.robot import (ACCEL_LIMITS, ARM_JOINTS, ARMATURE, BASE_FRAME,  # noqa: F401 (re-exported)
                             DRIVES, GRAVITY, HARD_STOP_MARGIN, HEAD_JOINTS, Drive)


def default_urdf_path():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, '..', '..', '..', 'urdf', 'sawyer.urdf'))


@dataclass(frozen=True)
class JointLimit:
    name: str
    lower: float
    upper: float
    velocity: float
    effort: float
    accel: float
    damping: float
    friction: float
    armature: float


def _kdl_frame(origin):
    xyz = origin.xyz if origin is not None and origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin is not None and origin.rpy is not None else [0.0, 0.0, 0.0]
    return kdl.Frame(kdl.Rotation.RPY(*rpy), kdl.Vector(*xyz))


def _kdl_inertia(inertial):
    if inertial is None:
        return kdl.RigidBodyInertia()
    origin = _kdl_frame(inertial.origin)
    i = inertial.inertia
    rot_inertia = kdl.RotationalInertia(i.ixx, i.iyy, i.izz, i.ixy, i.ixz, i.iyz)
    # URDF gives the inertia at the COM frame, which may be rotated; KDL wants it about the
    # COM expressed in the link frame.
    return kdl.RigidBodyInertia(inertial.mass, origin.p, _rotate_inertia(origin.M, rot_inertia))


def _rotate_inertia(rot, rot_inertia):
    r = np.array([[rot[i, j] for j in range(3)] for i in range(3)])
    m = np.array([[rot_inertia[3 * i + j] for j in range(3)] for i in range(3)])
    m = r @ m @ r.T
    return kdl.RotationalInertia(m[0, 0], m[1, 1], m[2, 2], m[0, 1], m[0, 2], m[1, 2])


def _to_kdl_tree(robot):
    """URDF → KDL tree (Debian ships no kdl_parser for Python)."""
    tree = kdl.Tree(robot.get_root())

    def add_children(parent):
        for joint_name, child in robot.child_map.get(parent, []):
            joint = robot.joint_map[joint_name]
            frame = _kdl_frame(joint.origin)
            if joint.type in ('revolute', 'continuous'):
                axis = kdl.Vector(*(joint.axis or [1.0, 0.0, 0.0]))
                kjoint = kdl.Joint(joint_name, frame.p, frame.M * axis, kdl.Joint.RotAxis)
            elif joint.type == 'prismatic':
                axis = kdl.Vector(*(joint.axis or [1.0, 0.0, 0.0]))
                kjoint = kdl.Joint(joint_name, frame.p, frame.M * axis, kdl.Joint.TransAxis)
            else:
                kjoint = kdl.Joint(joint_name, kdl.Joint.Fixed)
            segment = kdl.Segment(child, kjoint, frame, _kdl_inertia(robot.link_map[child].inertial))
            tree.addSegment(segment, parent)
            add_children(child)

    add_children(robot.get_root())
    return tree


class Chain:
    """A KDL chain base → tip with its solvers; joint arrays are numpy in chain order."""

    def __init__(self, tree, tip):
        self.tip = tip
        self.chain = tree.getChain(BASE_FRAME, tip)
        self.joint_names = [self.chain.getSegment(i).getJoint().getName()
                            for i in range(self.chain.getNrOfSegments())
                            if self.chain.getSegment(i).getJoint().getType() != kdl.Joint.Fixed]
        self.n = len(self.joint_names)
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._jac = kdl.ChainJntToJacSolver(self.chain)
        self._dyn = kdl.ChainDynParam(self.chain, kdl.Vector(*GRAVITY))
        self._rne = kdl.ChainIdSolver_RNE(self.chain, kdl.Vector(*GRAVITY))
        self._q = kdl.JntArray(self.n)
        self._qd = kdl.JntArray(self.n)
        self._qdd = kdl.JntArray(self.n)
        self._out = kdl.JntArray(self.n)
        self._wrenches = [kdl.Wrench() for _ in range(self.chain.getNrOfSegments())]

    def _load(self, arr, values):
        for i in range(self.n):
            arr[i] = float(values[i])
        return arr

    def _unload(self, arr):
        return np.array([arr[i] for i in range(self.n)])

    def fk(self, q):
        """Pose of the tip in base: (position[3], quaternion xyzw[4])."""
        frame = kdl.Frame()
        self._fk.JntToCart(self._load(self._q, q), frame)
        return np.array(list(frame.p)), np.array(frame.M.GetQuaternion())

    def fk_frame(self, q):
        frame = kdl.Frame()
        self._fk.JntToCart(self._load(self._q, q), frame)
        return frame

    def jacobian(self, q):
        """6×n geometric Jacobian of the tip (linear; angular), referred to the tip origin in base."""
        jac = kdl.Jacobian(self.n)
        self._jac.JntToJac(self._load(self._q, q), jac)
        return np.array([[jac[r, c] for c in range(self.n)] for r in range(6)])

    def gravity(self, q):
        self._dyn.JntToGravity(self._load(self._q, q), self._out)
        return self._unload(self._out)

    def mass_matrix(self, q):
        m = kdl.JntSpaceInertiaMatrix(self.n)
        self._dyn.JntToMass(self._load(self._q, q), m)
        return np.array([[m[r, c] for c in range(self.n)] for r in range(self.n)])

    def inverse_dynamics(self, q, qd, qdd):
        """Joint torques for the motion (gravity included), by recursive Newton-Euler."""
        self._rne.CartToJnt(self._load(self._q, q), self._load(self._qd, qd),
                            self._load(self._qdd, qdd), self._wrenches, self._out)
        return self._unload(self._out)


class RobotModel:
    """The Sawyer model built from URDF XML."""

    stop_margin = HARD_STOP_MARGIN      # rad: the mechanical stops beyond the limits (for_plant)

    def __init__(self, urdf_xml):
        urdf_xml = safe_urdf(urdf_xml)          # hostile or oversized XML: UnsafeXMLError
        self.urdf_xml = urdf_xml
        # lxml refuses str input that carries an encoding declaration.
        self.urdf = URDF.from_xml_string(urdf_xml.encode() if isinstance(urdf_xml, str) else urdf_xml)
        self.tree = _to_kdl_tree(self.urdf)
        self.limits = {}
        for joint in self.urdf.joints:
            if joint.type not in ('revolute', 'prismatic', 'continuous') or joint.mimic is not None:
                continue
            lim = joint.limit
            dyn = joint.dynamics
            # The Sawyer's drives have their one home in robot.py; another joint (a tool's)
            # takes its URDF <dynamics>.
            drive = DRIVES.get(joint.name) or Drive(
                0.0, (dyn.damping or 0.0) if dyn is not None else 0.0,
                (dyn.friction or 0.0) if dyn is not None else 0.0)
            self.limits[joint.name] = JointLimit(
                name=joint.name,
                lower=lim.lower if lim is not None and lim.lower is not None else -math.pi,
                upper=lim.upper if lim is not None and lim.upper is not None else math.pi,
                velocity=lim.velocity if lim is not None else 1.0,
                effort=lim.effort if lim is not None else 1.0,
                accel=ACCEL_LIMITS.get(joint.name, 10.0),
                damping=drive.damping, friction=drive.friction, armature=drive.armature)
        self.arm = Chain(self.tree, 'right_hand')
        if tuple(self.arm.joint_names) != ARM_JOINTS:
            raise ValueError('URDF chain base→right_hand has joints %s, expected %s'
                             % (self.arm.joint_names, ARM_JOINTS))
        self._chains = {'right_hand': self.arm}
        self._pinocchio = None
        self._per_thread = threading.local()

    @property
    def pinocchio(self):
        """The robot's Pinocchio models and joint index maps (PinocchioModels: `full`, `arm`,
        idx_q, idx_v), shared and read-only: each user takes its own data."""
        if self._pinocchio is None:
            self._pinocchio = pinocchio_models(self.urdf_xml)
        return self._pinocchio

    def dynamics(self):
        """A new ArmDynamics (Pinocchio; the same model as `arm`) with its own data: for a
        user that keeps one (a controller, a stage, a plant's helper)."""
        return ArmDynamics(self.pinocchio)

    @property
    def arm_dynamics(self):
        """The calling thread's ArmDynamics, for occasional calls; a user that keeps one
        makes its own with dynamics()."""
        dyn = getattr(self._per_thread, 'dynamics', None)
        if dyn is None:
            dyn = self._per_thread.dynamics = self.dynamics()
        return dyn

    @classmethod
    def from_file(cls, path=None):
        with open(path or default_urdf_path()) as f:
            return cls(f.read())

    @classmethod
    def load(cls, path=None, text=''):
        """From the URDF file `path` when given, else from URDF `text` unless it is blank,
        else from the project's URDF (a process started with --urdf FILE or the URDF on
        stdin)."""
        if path:
            return cls.from_file(path)
        return cls(text) if text and text.strip() else cls.from_file()

    @property
    def link_names(self):
        return [link.name for link in self.urdf.links]

    def has_frame(self, name):
        return name in self.urdf.link_map

    def chain(self, tip):
        """The KDL chain base → tip, for any link in the URDF; KeyError when absent."""
        if tip not in self._chains:
            if not self.has_frame(tip):
                raise KeyError('no link named %r in the robot model' % tip)
            self._chains[tip] = Chain(self.tree, tip)
        return self._chains[tip]

    def arm_tips(self):
        """Links whose chain from base runs through right_j6: valid endpoints of the arm."""
        tips = []
        for link in self.urdf.links:
            try:
                names = self.chain(link.name).joint_names
            except Exception:
                continue
            if tuple(names) == ARM_JOINTS:
                tips.append(link.name)
        return tips

    def tip_pose(self, tip, q_arm):
        """Pose of any frame in base given the 7 arm joint angles (frames off the arm
        chain, e.g. right_hand_camera on right_l5, use the leading joints)."""
        chain = self.chain(tip)
        return chain.fk(q_arm[:chain.n])

    def for_plant(self, armature=None, stop_margin=None):
        """This model as a plant other than the robot is: other drive armature ({joint:
        kg·m²}; joints not named keep theirs) — Gazebo has none — and mechanical stops
        `stop_margin` rad beyond the joint limits (Gazebo's are at them). Shares everything
        else (the URDF, KDL and Pinocchio models) with this one."""
        armature = armature or {}
        unknown = sorted(set(armature) - set(self.limits))
        if unknown:
            raise KeyError('for_plant: no joint named %s' % ', '.join(unknown))
        _ = self.pinocchio                      # built once, shared
        other = copy.copy(self)
        other.limits = {n: replace(l, armature=float(armature.get(n, l.armature)))
                        for n, l in self.limits.items()}
        if stop_margin is not None:
            other.stop_margin = float(stop_margin)
        other._per_thread = threading.local()
        return other

    def limit_arrays(self, names):
        lims = [self.limits[n] for n in names]
        return {field: np.array([getattr(l, field) for l in lims])
                for field in ('lower', 'upper', 'velocity', 'effort', 'accel', 'damping',
                              'friction', 'armature')}
