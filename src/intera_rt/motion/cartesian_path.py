"""The designed path of a CARTESIAN goal: the active endpoint moves on straight lines
(position) with slerp (orientation) between the waypoints' poses, from its current pose.

Segment k runs from pose k-1 to pose k (pose 0 = the endpoint now). At a waypoint whose
corner_distance d > 0 the two lines are joined by a circular arc tangent to both, from d
before the waypoint to d after it (d capped at half of either segment); in the blend the
orientation passes from the first segment's slerp to the second's with a smoothstep weight,
so position, orientation and their rates are continuous. corner_distance 0 stops at the
waypoint. A segment that only rotates is a stop-to-stop run of its own. Pure geometry: the
joints that follow the path are cartesian_planner's, its timing cartesian_timing's.
"""
import math

import numpy as np

from intera_rt.motion.geometry import (matrix_to_quat, quat_to_matrix_many, rotation_angle,
                                       slerp_many, slerp_pairs)

SAMPLE_STEP = 0.03             # m between IK path points
SAMPLE_ANGLE = 0.05            # rad between IK path points
MIN_LENGTH = 1e-6              # m / rad: shorter segments are "already there"
MAX_TURN = math.radians(179.0)  # sharper corners are not blended (stop instead)
ROTATION_SCALE = 0.1           # m per rad: path parameter of a rotation-only run


class CartesianPiece:
    """One geometric piece of a run, over its own arc length [0, length]."""

    def __init__(self, seg, length):
        self.seg = seg               # index of the segment (waypoint) it belongs to
        self.length = length


class LinePiece(CartesianPiece):
    def __init__(self, seg, p0, p1, q0, q1, x0, x1, total):
        super().__init__(seg, x1 - x0)
        self.p0, self.p1, self.q0, self.q1 = p0, p1, q0, q1
        self.x0, self.total = x0, total
        self.e = (p1 - p0) / total

    def at_many(self, xs):
        d = self.x0 + xs
        n = len(xs)
        return (self.p0[None, :] + d[:, None] * self.e[None, :], slerp_many(self.q0, self.q1, d / self.total),
                np.tile(self.e, (n, 1)), np.zeros((n, 3)))


class BlendPiece(CartesianPiece):
    def __init__(self, seg, corner, e1, e2, d, line_in, line_out):
        cosa = float(np.clip(e1 @ e2, -1.0, 1.0))
        alpha = math.acos(cosa)
        self.corner, self.e1, self.e2, self.d, self.alpha = corner, e1, e2, d, alpha
        self.start = corner - d * e1
        if alpha < 1e-6:
            length = 2.0 * d
            self.rho = math.inf
        else:
            self.rho = d / math.tan(alpha / 2.0)
            normal = e2 - cosa * e1
            self.normal = normal / np.linalg.norm(normal)
            length = self.rho * alpha
        super().__init__(seg, length)
        self.line_in, self.line_out = line_in, line_out   # (q0, q1, total) of each segment

    def at_many(self, xs):
        n = len(xs)
        if math.isinf(self.rho):
            p = self.start[None, :] + xs[:, None] * self.e1[None, :]
            tangent, curvature = np.tile(self.e1, (n, 1)), np.zeros((n, 3))
        else:
            phi = xs / self.rho
            c, s = np.cos(phi)[:, None], np.sin(phi)[:, None]
            center = self.start + self.rho * self.normal
            p = center[None, :] - self.rho * c * self.normal[None, :] + self.rho * s * self.e1[None, :]
            tangent = c * self.e1[None, :] + s * self.normal[None, :]
            curvature = (center[None, :] - p) / (self.rho * self.rho)
        qa0, qa1, la = self.line_in
        qb0, qb1, lb = self.line_out
        qa = slerp_many(qa0, qa1, (la - self.d + xs) / la)
        qb = slerp_many(qb0, qb1, (self.d - (self.length - xs)) / lb)
        w = xs / self.length if self.length > 0 else np.ones(n)
        w = w * w * (3.0 - 2.0 * w)
        return p, slerp_pairs(qa, qb, w), tangent, curvature


class RotationPiece(CartesianPiece):
    def __init__(self, seg, p, q0, q1, angle):
        super().__init__(seg, angle * ROTATION_SCALE)
        self.p, self.q0, self.q1 = p, q0, q1

    def at_many(self, xs):
        n = len(xs)
        us = xs / self.length if self.length > 0 else np.ones(n)
        return np.tile(self.p, (n, 1)), slerp_many(self.q0, self.q1, us), np.zeros((n, 3)), np.zeros((n, 3))


def design(tip, q0, request):
    """(start position, start rotation, runs: the geometric pieces of each stop-to-stop
    run, marks: (run, arc length) where each waypoint is passed, per-segment metadata)."""
    p_start, r_start = tip.fk(q0[:tip.n])
    wps = request.waypoints
    q_start = matrix_to_quat(r_start)
    poses = [(p_start, q_start)]
    for w in wps:
        q = w.orientation.copy()
        if q @ poses[-1][1] < 0:
            q = -q
        poses.append((w.position.copy(), q))

    runs = []              # the geometric pieces of each stop-to-stop run
    seg_meta = []          # per segment: length, rotation angle, limits
    for k in range(1, len(poses)):
        (pa, qa), (pb, qb) = poses[k - 1], poses[k]
        seg_meta.append({'L': float(np.linalg.norm(pb - pa)), 'theta': rotation_angle(qa, qb),
                         'limits': wps[k - 1].limits})
    # Blend distances at interior waypoints (between segment k and k+1, 0-based k).
    blend = [0.0] * len(seg_meta)
    for k in range(len(seg_meta) - 1):
        a, b = seg_meta[k], seg_meta[k + 1]
        d = a['limits'].corner_distance
        if d <= 0 or a['L'] < MIN_LENGTH or b['L'] < MIN_LENGTH:
            continue
        e1 = (poses[k + 1][0] - poses[k][0]) / a['L']
        e2 = (poses[k + 2][0] - poses[k + 1][0]) / b['L']
        if math.acos(float(np.clip(e1 @ e2, -1, 1))) > MAX_TURN:
            continue
        blend[k] = min(d, 0.5 * a['L'], 0.5 * b['L'])
    # Geometric pieces, split into runs at the stops.
    marks = []             # (run index, arc length in run) at which each waypoint is passed
    current = []
    run_len = 0.0
    for k, meta in enumerate(seg_meta):
        (pa, qa), (pb, qb) = poses[k], poses[k + 1]
        L, theta = meta['L'], meta['theta']
        if L < MIN_LENGTH and theta < MIN_LENGTH:
            marks.append((len(runs), run_len) if current else (len(runs) - 1, None))
            continue
        if L < MIN_LENGTH:
            if current:
                runs.append(current)
                current, run_len = [], 0.0
            piece = RotationPiece(k, pa, qa, qb, theta)
            runs.append([piece])
            marks.append((len(runs) - 1, piece.length))
            continue
        x0 = blend[k - 1] if k > 0 else 0.0
        x1 = L - blend[k]
        if x1 - x0 > 1e-9:
            current.append(LinePiece(k, pa, pb, qa, qb, x0, x1, L))
            run_len += x1 - x0
        if blend[k] > 0:
            nxt = seg_meta[k + 1]
            e1 = (pb - pa) / L
            e2 = (poses[k + 2][0] - pb) / nxt['L']
            b = BlendPiece(k, pb, e1, e2, blend[k], (qa, qb, L), (qb, poses[k + 2][1], nxt['L']))
            current.append(b)
            marks.append((len(runs), run_len + 0.5 * b.length))
            run_len += b.length
        else:
            marks.append((len(runs), run_len))
            runs.append(current)
            current, run_len = [], 0.0
    if current:
        runs.append(current)
    return p_start, r_start, runs, marks, seg_meta


# --- one stop-to-stop run ----------------------------------------------------------
def sample_run(pieces):
    """Arc-length samples of a run: s, positions, quaternions, the segment (waypoint)
    each sample belongs to, and the sample indices where pieces meet."""
    ss, ps, qs, segs, breaks = [], [], [], [], []
    s0 = 0.0
    count_so_far = 0
    for i, piece in enumerate(pieces):
        if isinstance(piece, RotationPiece):
            angle = rotation_angle(piece.q0, piece.q1)
        elif isinstance(piece, LinePiece):
            angle = rotation_angle(piece.q0, piece.q1) * piece.length / piece.total
        else:
            angle = rotation_angle(piece.line_in[0], piece.line_in[1]) * piece.length / piece.line_in[2] + \
                rotation_angle(piece.line_out[0], piece.line_out[1]) * piece.length / piece.line_out[2]
        if isinstance(piece, RotationPiece):
            count = max(4, int(math.ceil(angle / SAMPLE_ANGLE)))
        else:
            count = max(4 if isinstance(piece, BlendPiece) else 2,
                        int(math.ceil(piece.length / SAMPLE_STEP)),
                        int(math.ceil(angle / SAMPLE_ANGLE)))
        xs = np.linspace(0.0, piece.length, count + 1)
        if i > 0:
            xs = xs[1:]
            breaks.append(count_so_far - 1)
        p, q, _, _ = piece.at_many(xs)
        ss.append(s0 + xs)
        ps.append(p)
        qs.append(q)
        # A blend belongs to the segment it leaves until its middle.
        if isinstance(piece, BlendPiece):
            segs.append(np.where(xs < 0.5 * piece.length, piece.seg, piece.seg + 1))
        else:
            segs.append(np.full(len(xs), piece.seg))
        count_so_far += len(xs)
        s0 += piece.length
    qs = np.concatenate(qs)
    # Keep consecutive quaternions in one hemisphere.
    flip = np.concatenate([[False], np.einsum('ij,ij->i', qs[1:], qs[:-1]) < 0])
    qs[np.logical_xor.accumulate(flip)] *= -1.0
    segs = np.concatenate(segs)
    switches = (np.flatnonzero(np.diff(segs)) + 1).tolist()       # a new waypoint's bias
    breaks = sorted(set(breaks) | set(switches))
    return np.concatenate(ss), np.concatenate(ps), qs, segs, breaks


def pose_on(pieces):
    """pose_at(s) → (position, rotation matrix) anywhere on a run's pieces."""
    starts = np.concatenate([[0.0], np.cumsum([p.length for p in pieces])])

    def pose_at(s):
        k = int(np.clip(np.searchsorted(starts, s, side='right') - 1, 0, len(pieces) - 1))
        p, q, _, _ = pieces[k].at_many(np.array([min(max(s - starts[k], 0.0), pieces[k].length)]))
        return p[0], quat_to_matrix_many(q)[0]
    return pose_at

def poses_on(pieces, ss):
    """Positions (N×3) and rotation matrices (N×3×3) of a run's pieces at each s."""
    starts = np.concatenate([[0.0], np.cumsum([p.length for p in pieces])])
    ks = np.clip(np.searchsorted(starts, ss, side='right') - 1, 0, len(pieces) - 1)
    P, R = np.empty((len(ss), 3)), np.empty((len(ss), 3, 3))
    for k in np.unique(ks):
        sel = ks == k
        x = np.clip(ss[sel] - starts[k], 0.0, pieces[k].length)
        p, q, _, _ = pieces[k].at_many(x)
        P[sel], R[sel] = p, quat_to_matrix_many(q)
    return P, R


def reference_polyline(plan, spacing=0.001):
    """The designed path of a Cartesian plan as positions ≤ `spacing` apart (the chords
    stay within spacing²/(8·radius) of the arcs)."""
    cached = getattr(plan, '_reference_polyline', None)
    if cached is not None:
        return cached
    out = [np.asarray(plan.start_position)[None, :]]
    for piece in plan.reference_pieces:
        n = max(2, int(math.ceil(piece.length / spacing)) + 1)
        out.append(piece.at_many(np.linspace(0.0, piece.length, n))[0])
    plan._reference_polyline = np.concatenate(out)
    return plan._reference_polyline
