"""Small rotation helpers on numpy arrays (quaternions are x, y, z, w like ROS and KDL)."""
import math

import numpy as np


def quat_normalize(q):
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q)


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def quat_conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


def quat_to_rotvec(q):
    """Rotation vector (axis × angle, angle in [0, π]) of a unit quaternion."""
    q = np.asarray(q, dtype=float)
    if q[3] < 0:
        q = -q
    s = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    if s < 1e-12:
        return 2.0 * q[:3]
    angle = 2.0 * math.atan2(s, q[3])
    return q[:3] * (angle / s)


def rotvec_to_quat(v):
    v = np.asarray(v, dtype=float)
    angle = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if angle < 1e-12:
        q = np.array([0.5 * v[0], 0.5 * v[1], 0.5 * v[2], 1.0])
        return q / np.linalg.norm(q)
    s = math.sin(0.5 * angle) / angle
    return np.array([v[0] * s, v[1] * s, v[2] * s, math.cos(0.5 * angle)])


def quat_to_matrix(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_to_quat(m):
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    q = np.array(q)
    return q / np.linalg.norm(q)


def rotation_error(r_target, r):
    """Rotation vector (in the base frame) turning r into r_target (3×3 matrices)."""
    m = r_target @ r.T
    c = 0.5 * (m[0, 0] + m[1, 1] + m[2, 2] - 1.0)
    v = 0.5 * np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])
    s = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if c > 0.999999:
        return v                                   # small angle: sin θ ≈ θ
    if c > -0.99:
        return v * (math.atan2(s, c) / s)
    return quat_to_rotvec(matrix_to_quat(m))       # near π: go through the quaternion


def rotation_error_many(r_target, r):
    """Row-wise rotation_error over stacks of 3×3 matrices (N×3×3), with θ/sin θ applied at
    every angle (not only above 1e-3 rad) so that differences of small rotations stay exact."""
    m = r_target @ np.swapaxes(r, 1, 2)
    c = 0.5 * (m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2] - 1.0)
    v = 0.5 * np.stack([m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]], axis=1)
    s = np.sqrt((v * v).sum(axis=1))
    with np.errstate(divide='ignore', invalid='ignore'):
        out = v * np.where(s > 0.0, np.arctan2(s, c) / s, 1.0)[:, None]
    for k in np.flatnonzero(c <= -0.99):           # near π: go through the quaternion
        out[k] = quat_to_rotvec(matrix_to_quat(m[k]))
    return out


def slerp(q0, q1, u):
    """Spherical interpolation q0 → q1 along the shorter arc; u outside [0, 1] extrapolates
    the same rotation (constant angular rate)."""
    d = quat_mul(quat_conj(q0), q1)
    if d[3] < 0:
        d = -d
    return quat_mul(q0, rotvec_to_quat(quat_to_rotvec(d) * u))


def rotation_angle(q0, q1):
    """Angle (rad) of the shorter rotation between two unit quaternions."""
    d = abs(float(np.dot(q0, q1)))
    return 2.0 * math.acos(min(1.0, d))


# --- vectorised forms (rows are quaternions / rotation vectors) ------------------------------
def quat_mul_many(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def quat_to_rotvec_many(q):
    q = np.array(q, dtype=float)
    q[q[..., 3] < 0] *= -1.0
    s = np.linalg.norm(q[..., :3], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 3])
    with np.errstate(divide='ignore', invalid='ignore'):
        scale = np.where(s < 1e-12, 2.0, angle / np.where(s < 1e-12, 1.0, s))
    return q[..., :3] * scale[..., None]


def rotvec_to_quat_many(v):
    v = np.asarray(v, dtype=float)
    angle = np.linalg.norm(v, axis=-1)
    small = angle < 1e-12
    with np.errstate(divide='ignore', invalid='ignore'):
        s = np.where(small, 0.5, np.sin(0.5 * angle) / np.where(small, 1.0, angle))
    q = np.concatenate([v * s[..., None], np.cos(0.5 * angle)[..., None]], axis=-1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def slerp_many(q0, q1, us):
    """slerp(q0, q1, u) for each u (q0, q1 single quaternions)."""
    d = quat_mul(quat_conj(q0), q1)
    if d[3] < 0:
        d = -d
    w = quat_to_rotvec(d)
    return quat_mul_many(np.asarray(q0)[None, :], rotvec_to_quat_many(np.outer(us, w)))


def slerp_pairs(qa, qb, ws):
    """Row-wise slerp(qa[i], qb[i], ws[i])."""
    conj = qa * np.array([-1.0, -1.0, -1.0, 1.0])
    d = quat_mul_many(conj, qb)
    d[d[:, 3] < 0] *= -1.0
    return quat_mul_many(qa, rotvec_to_quat_many(quat_to_rotvec_many(d) * np.asarray(ws)[:, None]))


def quat_to_matrix_many(q):
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    m = np.empty((len(q), 3, 3))
    m[:, 0, 0] = 1 - 2 * (y * y + z * z)
    m[:, 0, 1] = 2 * (x * y - z * w)
    m[:, 0, 2] = 2 * (x * z + y * w)
    m[:, 1, 0] = 2 * (x * y + z * w)
    m[:, 1, 1] = 1 - 2 * (x * x + z * z)
    m[:, 1, 2] = 2 * (y * z - x * w)
    m[:, 2, 0] = 2 * (x * z - y * w)
    m[:, 2, 1] = 2 * (y * z + x * w)
    m[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return m
