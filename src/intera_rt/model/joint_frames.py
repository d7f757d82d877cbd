"""Each URDF joint as the transform from its parent link to its child link: what
robot_state_publisher puts on /tf (movable joints, at the joint's position) and on
/tf_static (fixed joints). Any URDF, not only the Sawyer's."""
import numpy as np
import PyKDL as kdl
from urdf_parser_py.urdf import URDF

from intera_rt.model.safe_xml import safe_urdf

MOVABLE = ('revolute', 'continuous', 'prismatic')


def _origin(joint):
    origin = joint.origin
    xyz = origin.xyz if origin is not None and origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin is not None and origin.rpy is not None else [0.0, 0.0, 0.0]
    return [float(v) for v in xyz], kdl.Rotation.RPY(*rpy).GetQuaternion()    # x y z w


def _quat_mul(a, b):
    """Hamilton products of (n, 4) x y z w quaternions."""
    ax, ay, az, aw = a.T
    bx, by, bz, bw = b.T
    return np.stack((aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz), axis=1)


def _rotate(q, v):
    """(n, 3) vectors v rotated by (n, 4) unit quaternions q."""
    u, w = q[:, :3], q[:, 3:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


class JointFrames:
    """The joints of a URDF as parent → child transforms.

    `fixed`: (parent, child, xyz, quat) of every joint that does not move (fixed; floating
    and planar joints too, as at their zero). `movable`: the names of revolute, continuous
    and prismatic joints, whose transforms `transforms()` computes."""

    def __init__(self, urdf):
        self.fixed = []
        movable = []
        for joint in urdf.joints:
            xyz, quat = _origin(joint)
            if joint.type in MOVABLE:
                axis = np.array(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], float)
                norm = np.linalg.norm(axis)
                if not norm > 0:
                    raise ValueError('joint %s: axis %s has no direction' % (joint.name, list(axis)))
                movable.append((joint, xyz, quat, axis / norm))
            else:
                self.fixed.append((joint.parent, joint.child, xyz, quat))
        self.movable = tuple(j.name for j, _, _, _ in movable)
        self.parent = tuple(j.parent for j, _, _, _ in movable)
        self.child = tuple(j.child for j, _, _, _ in movable)
        self.index = {name: i for i, name in enumerate(self.movable)}
        self._xyz = np.array([m[1] for m in movable], float).reshape(-1, 3)
        self._quat = np.array([m[2] for m in movable], float).reshape(-1, 4)
        self._axis = np.array([m[3] for m in movable], float).reshape(-1, 3)
        self._prismatic = np.array([j.type == 'prismatic' for j, _, _, _ in movable], bool)
        # joint → (the joint it follows, multiplier, offset)
        self.mimic = {j.name: (j.mimic.joint, 1.0 if j.mimic.multiplier is None else j.mimic.multiplier,
                               0.0 if j.mimic.offset is None else j.mimic.offset)
                      for j, _, _, _ in movable if j.mimic is not None}

    @classmethod
    def from_xml(cls, urdf_xml):
        urdf_xml = safe_urdf(urdf_xml)          # hostile or oversized XML: UnsafeXMLError
        # lxml refuses str input that carries an encoding declaration.
        return cls(URDF.from_xml_string(urdf_xml.encode() if isinstance(urdf_xml, str) else urdf_xml))

    def subset(self, indices):
        """The movable joints `indices` (into `movable`), ready for `transforms()`."""
        return _Subset(self, indices)

    def transforms(self, indices, positions):
        """Translations (n, 3) and x y z w rotations (n, 4) of the movable joints `indices`
        at `positions` (rad or m)."""
        return self.subset(indices).transforms(positions)

    def positions_with_mimic(self, named):
        """`named` (joint → position) with the mimic joints whose leader is in it added
        (a mimic joint given explicitly keeps its own value)."""
        for name, (leader, multiplier, offset) in self.mimic.items():
            if name not in named and leader in named:
                named[name] = named[leader] * multiplier + offset
        return named


class _Subset:
    """Transforms of a fixed list of movable joints, with what does not depend on the
    positions computed once: a turn by q about the axis after the origin's rotation R is
    R ⊗ (axis sin q/2, cos q/2) = B (sin q/2, cos q/2), and a slide by q moves R axis q."""

    def __init__(self, frames, indices):
        idx = np.asarray(indices, dtype=np.intp).reshape(-1)
        quat, axis = frames._quat[idx], frames._axis[idx]
        slide = frames._prismatic[idx]
        self._turns = (~slide).astype(float)
        self._slides = slide.astype(float)
        self._sin_part = _quat_mul(quat, np.hstack((axis, np.zeros((len(idx), 1)))))
        self._cos_part = quat
        self._xyz = frames._xyz[idx]
        self._slide_axis = _rotate(quat, axis)

    def transforms(self, positions):
        q = np.asarray(positions, dtype=float)
        half = 0.5 * self._turns * q
        quat = self._sin_part * np.sin(half)[:, None] + self._cos_part * np.cos(half)[:, None]
        xyz = self._xyz + self._slide_axis * (self._slides * q)[:, None]
        return xyz, quat


def pose_matrix(xyz, quat):
    """4×4 homogeneous transform of a translation and an x y z w quaternion."""
    x, y, z, w = quat
    m = np.eye(4)
    m[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    m[:3, 3] = xyz
    return m


def link_poses(frames, positions, root):
    """4×4 pose in `root` of every link reachable from it, composing the fixed and movable
    joint transforms at `positions` (joint → value; a missing movable joint counts as 0)."""
    children = {}
    for parent, child, xyz, quat in frames.fixed:
        children.setdefault(parent, []).append((child, pose_matrix(xyz, quat)))
    names = frames.movable
    q = [positions.get(n, 0.0) for n in names]
    xyz, quat = frames.transforms(range(len(names)), q)
    for i in range(len(names)):
        children.setdefault(frames.parent[i], []).append((frames.child[i], pose_matrix(xyz[i], quat[i])))
    poses = {root: np.eye(4)}
    todo = [root]
    while todo:
        link = todo.pop()
        for child, m in children.get(link, ()):
            poses[child] = poses[link] @ m
            todo.append(child)
    return poses

