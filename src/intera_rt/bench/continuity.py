"""Is there any continuous joint path along a designed Cartesian path? An exhaustive check,
independent of the planner, that tells a goal no planner could follow from one the motion
controller's planner missed (scripts/bench, section motion). No ROS here.

Method: the 7-joint arm has a one-dimensional self-motion at each pose: the joint
configurations that put the tip at that pose form curves ("self-motion loops"), cut by the
joint limits and by self-collision. Starting from the current angles, the whole loop
portion reachable by self-motion at the start pose is traced (steps of LOOP_STEP rad along
the Jacobian's nullspace, each corrected back onto the pose). Every traced configuration
is then carried to the next pose along the path (a damped least-squares correction; the
carry fails where the joints would have to jump), and the loops through the carried
configurations are traced again, and so on to the end of the path. A continuous path
exists (to the resolution of the steps) iff some configuration reaches the end.
Self-motion at a standstill of the tip is allowed here: a planner can spread it over a
short stretch of the path.
"""
import math
import time

import numpy as np
import pinocchio as pin

PATH_STEP = 0.01         # m between checked poses ...
ANGLE_STEP = 0.02        # ... and rad of rotation
LOOP_STEP = 0.06         # rad along a self-motion loop
MAX_LOOP_POINTS = 240    # per traced loop, both directions together
CARRY_JUMP = 0.3         # rad a joint may move between neighbouring poses
MERGE = 0.04             # rad: configurations closer than this are one
RETRACE_EVERY = 4        # poses between re-tracing the loops (carried points in between)


class Continuity:
    def __init__(self, endpoint, collision=None, q_head=0.0):
        self.ep = endpoint
        self.collision = collision
        self.q_head = q_head

    def _correct(self, q, p, R, iterations=25):
        """q moved onto the pose (p, R) within 1e-4 (m, rad), or None."""
        ep = self.ep
        lo, hi = ep.lower, ep.upper
        for _ in range(iterations):
            pq, Rq = ep.fk(q)
            e = np.concatenate([p - pq, pin.log3(R @ Rq.T)])
            if e @ e < 1e-8:
                return q
            J = ep.jacobian(q)
            dq = J.T @ np.linalg.solve(J @ J.T + 1e-8 * np.eye(6), e)
            big = np.abs(dq).max()
            if big > 0.1:
                dq *= 0.1 / big
            q = np.clip(q + dq, lo, hi)
        return None

    def _free(self, q):
        ep = self.ep
        if np.any(q <= ep.lower + 1e-6) or np.any(q >= ep.upper - 1e-6):
            return False
        return self.collision is None or not self.collision.in_collision(q, self.q_head)

    def _trace(self, q0, p, R):
        """The configurations of the self-motion loop through q0 at the pose (p, R), both
        ways from q0 until a joint limit, a collision, or the loop closing."""
        out = [q0]
        for sign in (1.0, -1.0):
            q, heading = q0, None
            for _ in range(MAX_LOOP_POINTS // 2):
                _, _, vt = np.linalg.svd(self.ep.jacobian(q))
                n = vt[-1]
                if heading is None:
                    n = sign * n
                elif n @ heading < 0:
                    n = -n
                q2 = self._correct(q + LOOP_STEP * n, p, R)
                if q2 is None or not self._free(q2):
                    break
                if len(out) > 10 and np.abs(q2 - q0).max() < LOOP_STEP:
                    break                                   # round the loop
                out.append(q2)
                q, heading = q2, n
        return out

    @staticmethod
    def _grid(pose_at, length):
        """[(s, p, R)] along a run: at most PATH_STEP of travel and ANGLE_STEP of rotation
        apart."""
        ss = list(np.linspace(0.0, length, max(2, int(math.ceil(length / PATH_STEP)) + 1)))
        out = [(s,) + tuple(pose_at(s)) for s in ss]
        i = 0
        while i < len(out) - 1:
            (s0, p0, R0), (s1, p1, R1) = out[i], out[i + 1]
            c = 0.5 * (np.trace(R1 @ R0.T) - 1.0)
            if math.acos(min(1.0, max(-1.0, c))) > ANGLE_STEP and s1 - s0 > 1e-9:
                sm = 0.5 * (s0 + s1)
                out.insert(i + 1, (sm,) + tuple(pose_at(sm)))
            else:
                i += 1
        return out

    @staticmethod
    def _thin(points):
        kept = []
        for x in points:
            if not any(np.abs(x - y).max() < MERGE for y in kept):
                kept.append(x)
        return kept

    def check(self, q_start, runs, deadline=None):
        """runs: [(pose_at(s) → (p, R), length)] one after another (the arm at rest between
        them). Returns (True/False/None, share of the path where the last configuration
        was lost); None when the deadline (time.monotonic()) passed first."""
        frontier = [np.asarray(q_start, dtype=float)[:self.ep.n]]
        total = sum(length for _, length in runs) or 1.0
        done = 0.0
        for pose_at, length in runs:
            p0, R0 = pose_at(0.0)
            frontier = self._thin(sum((self._trace(q, p0, R0) for q in frontier), []))
            grid = self._grid(pose_at, length)
            n = len(grid) - 1
            for i, (s, p, R) in enumerate(grid[1:], start=1):
                if deadline is not None and time.monotonic() > deadline:
                    return None, (done + s) / total
                carried = []
                for q in frontier:
                    q2 = self._correct(q, p, R)
                    if q2 is not None and np.abs(q2 - q).max() < CARRY_JUMP and self._free(q2):
                        carried.append(q2)
                if not carried:
                    return False, (done + s) / total
                carried = self._thin(carried)
                if i % RETRACE_EVERY == 0 or i == n:
                    traced = []
                    for q in carried:
                        if not any(np.abs(q - x).max() < 2 * MERGE for x in traced):
                            traced.extend(self._trace(q, p, R))
                    carried = self._thin(traced)
                frontier = carried
            done += length
        return True, 1.0
