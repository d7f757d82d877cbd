"""CARTESIAN interpolation: the joints that follow the designed path (cartesian_path) and
the plan made of its timed runs (cartesian_timing).

The path is sampled and followed by differential IK (damped least squares, warm-started from
the previous point). The waypoint's joint_positions bias the nullspace: along each segment
the remaining nullspace offset toward the bias is spread evenly over the remaining path, so
the arm reaches its preferred posture at the waypoint without sudden joint motion. Where no
continuous joint path follows near that posture, IK solutions of the waypoints are tried
instead. nso_start_offset_allowed: before the path, the arm may first move in its nullspace
(tip still) toward the first waypoint's bias. nso_check_end_offset: the final posture must be
within NSO_END_TOLERANCE of the last waypoint's nullspace goal (else
CARTESIAN_INTERPOLATION_FAILED). Joint accelerations over their limits are
PLANNED_JOINT_ACCEL_LIMIT, as the robot documents.
"""
import bisect

import numpy as np

from intera_rt.model.ik import SEED_CURRENT
from intera_rt.model.robot_model import ARM_JOINTS
from intera_rt.motion import analysis
from intera_rt.motion.cartesian_path import design, pose_on, poses_on, sample_run
from intera_rt.motion.cartesian_timing import joint_spline, time_joint_path, time_run
from intera_rt.motion.errors import (CARTESIAN_INTERPOLATION_FAILED, FAILED_TO_PARAMETERIZE,
                                     PLANNED_MOTION_COLLISION, MotionError)
from intera_rt.motion.geometry import quat_to_matrix_many, rotation_error_many
from intera_rt.motion.kinematics import (PATH_ORIENTATION_TOLERANCE, PATH_POSITION_TOLERANCE,
                                         EndpointKinematics, PathFollowError)
from intera_rt.motion.plan import HoldPlan, PiecewisePlan

NULLSPACE_STEP = 0.02          # rad per point of a nullspace (start offset) move
NSO_END_TOLERANCE = 0.1        # rad, nso_check_end_offset
MAX_POSTURE_ATTEMPTS = 5       # postures tried per stop-to-stop run (see _plan_run)
SPLINE_REFINE = 3              # re-follows of a run where its spline strays from the path
SPLINE_CHECK_STEP = 0.1        # rad: runs with a joint step this large (or refined) are checked
FALLBACK_REACH = 0.5           # share of a segment over which a fallback posture is taken
MAX_DURATION = 3600.0


def _close(a, b, tol=0.05):
    """Two postures (7 angles or None) within tol rad of each other, joint by joint."""
    if a is None or b is None:
        return a is None and b is None
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) < tol


class CartesianPlanner:
    """Plans CARTESIAN requests for one robot model (endpoints' kinematics cached by tip);
    ik_solver, when given, supplies alternative postures and reachability diagnostics."""

    def __init__(self, model, ik_solver=None):
        self.model = model
        self.ik = ik_solver
        lim = model.limit_arrays(model.arm.joint_names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']
        self._tips = {}
        self.notes = []

    def endpoint(self, tip):
        if tip not in self._tips:
            self._tips[tip] = EndpointKinematics(self.model, tip)
        return self._tips[tip]

    # --- entry point ------------------------------------------------------------------------
    def path(self, q0, request):
        """The designed path of a CARTESIAN request from the angles q0: one (pose_at(s) →
        (position, rotation matrix), length) per stop-to-stop run (for analysis)."""
        tip = self.endpoint(request.endpoint)
        _, _, runs, _, _ = design(tip, np.asarray(q0, dtype=float), request)
        return [(pose_on(pieces), float(sum(p.length for p in pieces))) for pieces in runs]

    def plan(self, q0, request, collision=None, q_head=0.0):
        """q0: current 7 angles; request: MotionRequest (CARTESIAN). collision: the
        self-collision model a path must keep clear of (None: unchecked). Returns a Plan
        with the designed path's pieces (reference_polyline(plan) for analysis); notes on
        how it was found are in self.notes."""
        self.notes = []
        tip = self.endpoint(request.endpoint)
        q0 = np.asarray(q0, dtype=float)
        p_start, r_start, runs, marks, seg_meta = design(tip, q0, request)
        wps = request.waypoints
        q = q0.copy()
        plan_pieces = []
        times = [0.0] * len(wps)
        reference = []
        t = 0.0
        first_bias = next((w.q for w in wps if w.q is not None), None)
        if request.nso_start_offset_allowed and first_bias is not None and tip.n == 7:
            piece = self._nullspace_move(tip, q, p_start, r_start, first_bias, wps[0].limits)
            if piece is not None:
                plan_pieces.append(piece)
                t += piece.duration
                q = piece.spline(piece.ss[-1])
        run_times = []
        for r, pieces in enumerate(runs):
            piece, end_q = self._plan_run(tip, q, pieces, wps, seg_meta, collision, q_head)
            reference.extend(pieces)
            run_times.append((t, piece))
            plan_pieces.append(piece)
            t += piece.duration
            q = end_q
        for k, (r, x) in enumerate(marks):
            if r < 0 or r >= len(run_times):
                times[k] = t if r >= len(run_times) else 0.0
                continue
            t0, piece = run_times[r]
            times[k] = t0 + (piece.duration if x is None else piece.time_at(x))
        times = list(np.maximum.accumulate(times))
        if t > MAX_DURATION:
            raise MotionError(FAILED_TO_PARAMETERIZE, 'the trajectory would take %.0f s (> %.0f s)'
                              % (t, MAX_DURATION))
        if request.nso_check_end_offset:
            goal = wps[-1].q
            if goal is not None and tip.n == 7:
                resid = tip.nullspace_residual(q, goal)
                if resid > NSO_END_TOLERANCE:
                    raise MotionError(CARTESIAN_INTERPOLATION_FAILED,
                                      'nso_check_end_offset: the final posture is %.3f rad (> %.3f) from '
                                      'the last waypoint\'s nullspace goal %s'
                                      % (resid, NSO_END_TOLERANCE, np.round(goal, 4).tolist()))
        plan = PiecewisePlan(plan_pieces, times) if plan_pieces else HoldPlan(q0, len(wps))
        plan.reference_pieces = reference
        plan.start_position = p_start
        plan.endpoint = request.endpoint
        return plan

    def _plan_run(self, tip, q_start, pieces, wps, seg_meta, collision=None, q_head=0.0):
        ss0, ps, qs, segs0, breaks0 = sample_run(pieces)
        rotations = quat_to_matrix_many(qs)
        # Where each segment's part of this run starts and ends, for the nullspace drift.
        seg_start, seg_end = {}, {}
        for i, (s, seg) in enumerate(zip(ss0, segs0)):
            seg = int(seg)
            seg_start.setdefault(seg, ss0[i - 1] if i > 0 else s)
            seg_end[seg] = s
        run_segs = sorted(seg_start)

        ss0_list, segs0_list = ss0.tolist(), segs0.tolist()

        def seg_of(s):
            """The segment of the path point at s (points inserted between two samples
            belong with the later one)."""
            return segs0_list[min(bisect.bisect_left(ss0_list, s - 1e-12), len(segs0_list) - 1)]

        def remaining_share(seg, s, reach=1.0):
            """Share of the nullspace offset still to go at s: 1 − smoothstep(progress),
            progress reaching 1 at the `reach` share of the segment."""
            a, b = seg_start[seg], seg_end[seg]
            u = 1.0 if b <= a else min(max((s - a) / ((b - a) * reach), 0.0), 1.0)
            return 1.0 - u * u * (3.0 - 2.0 * u)

        start_extra = q_start[tip.n:].copy()
        pose_at = pose_on(pieces)
        nominal = float(np.median(np.diff(ss0))) if len(ss0) > 1 else 1.0

        def attempt(biases, reach=1.0, ss_in=None, prefix=None):
            """Follow the run (the samples ss_in, default the run's own) with the nullspace
            biased toward `biases`; prefix = (ss, joints) already followed up to the first of
            ss_in: go on from there."""
            def nullspace(s_prev, s, q):
                seg = seg_of(s)
                goal = biases.get(seg)
                if goal is None:
                    return None
                before = remaining_share(seg, s_prev, reach)
                frac = 1.0 if before <= 1e-12 else 1.0 - remaining_share(seg, s, reach) / before
                return (goal - q) * frac

            def free_joints(s):
                goal = biases.get(seg_of(s))
                if goal is None:
                    return None
                frac = s / ss0[-1] if ss0[-1] > 0 else 1.0
                return start_extra + (goal[tip.n:] - start_extra) * frac
            if ss_in is None:
                ss_in, p_in, r_in = ss0, ps, rotations
            else:
                p_in, r_in = poses_on(pieces, ss_in)
            q_from = q_start if prefix is None else prefix[1][-1]
            ss, joints, _, _ = tip.track(q_from, ss_in, p_in, r_in, pose_at=pose_at, nullspace=nullspace,
                                         free_joints=free_joints if tip.n < 7 else None, nominal=nominal)
            if prefix is not None:
                ss = np.concatenate([prefix[0][:-1], ss])
                joints = np.concatenate([prefix[1][:-1], joints])
            return ss, joints

        # The waypoints' joint_positions bias the posture along the path. Where no
        # continuous joint path follows the line near that posture (a joint runs into its
        # limit, or the path only continues on another arm configuration), the posture is
        # steered instead toward IK solutions of the run's waypoints (nearest first, then
        # others): the goal fails only when none of them leads along the whole path.
        first, found, tried = None, None, []
        for biases in self._bias_candidates(tip, q_start, wps, run_segs, q_head):
            if len(tried) >= MAX_POSTURE_ATTEMPTS:
                break
            if any(all(_close(biases.get(k), t.get(k)) for k in run_segs) for t in tried):
                continue
            tried.append(biases)
            try:
                ss, joints = attempt(biases, 1.0 if len(tried) == 1 else FALLBACK_REACH)
            except PathFollowError as exc:
                if first is None:
                    seg = seg_of(exc.s) if exc.s is not None else int(segs0[-1])
                    first = MotionError(CARTESIAN_INTERPOLATION_FAILED, 'segment to waypoint %d: %s%s'
                                        % (seg, exc, self._reachability(tip, wps[seg], q_start)))
                continue
            hit = None if collision is None else \
                analysis.first_collision_on_points(joints, collision, q_head)
            if hit is not None:
                if first is None:
                    k, pairs = hit
                    first = MotionError(PLANNED_MOTION_COLLISION,
                                        'the path to waypoint %d is in self-collision at joints %s (links in '
                                        'contact: %s)' % (seg_of(ss[k]), np.round(joints[k], 3).tolist(),
                                                          ', '.join('%s–%s' % p for p in pairs) or '?'))
                continue
            found = ss, joints, biases, 1.0 if len(tried) == 1 else FALLBACK_REACH
            break
        if found is None:
            raise first
        ss, joints, biases, reach = found
        breaks_s = ss0[breaks0] if breaks0 else np.zeros(0)
        # The spline through the points must stay on the path too: where it strays beyond
        # the path tolerance between two points (joints moving fast and unevenly, near a
        # singular stretch), the points are made denser there and the run followed again.
        for _ in range(SPLINE_REFINE):
            # Evenly spaced points with slow joints (the common case) need no check.
            if len(ss) == len(ss0) and float(np.abs(np.diff(joints, axis=0)).max()) < SPLINE_CHECK_STEP:
                break
            spline = joint_spline(ss, joints, np.searchsorted(ss, breaks_s).tolist())
            mids = 0.5 * (ss[:-1] + ss[1:])
            P, R = poses_on(pieces, mids)
            qm = spline(mids)
            Pq, Rq = tip.fk_many(qm[:, :tip.n])
            dev_p = np.linalg.norm(Pq - P, axis=1)
            dev_r = np.linalg.norm(rotation_error_many(R, Rq), axis=1)
            bad = np.flatnonzero((dev_p > 0.5 * PATH_POSITION_TOLERANCE) | (dev_r > 0.5 * PATH_ORIENTATION_TOLERANCE))
            if not len(bad):
                break
            # The IK solution next to the spline there becomes a point of the path.
            added = [(mids[i], tip.solve_near(qm[i], P[i], R[i])) for i in bad]
            added = [(s, q) for s, q in added if q is not None]
            if not added:
                break
            ss = np.concatenate([ss, [s for s, _ in added]])
            joints = np.concatenate([joints, [q for _, q in added]])
            order = np.argsort(ss, kind='stable')
            ss, joints = ss[order], joints[order]
        if len(tried) > 1:
            self.notes.append('waypoint(s) %s: no continuous joint path follows the path near the requested '
                              'posture (%s); the arm takes the posture of an IK solution of the waypoint '
                              'instead (attempt %d)' % (', '.join(map(str, run_segs)), first.message,
                                                        len(tried)))
        segs = segs0[np.minimum(np.searchsorted(ss0, ss - 1e-12, side='left'), len(segs0) - 1)]
        breaks = np.searchsorted(ss, breaks_s).tolist()
        return time_run(tip, ss, joints, segs, breaks, wps, self.vel_limit, self.accel_limit), joints[-1]

    def _bias_candidates(self, tip, q_start, wps, run_segs, q_head):
        """Postures to steer a run's path toward, {segment: 7 angles or None}: the
        waypoints' own joint_positions first; then chains of IK solutions of the run's
        waypoints (each seeded from the one before), from the current angles (drawn toward
        joint_positions where given) and then from random seeds (deterministic)."""
        yield {k: wps[k].q for k in run_segs}
        if self.ik is None:
            return
        rng = np.random.default_rng(0)
        for attempt in range(2 * MAX_POSTURE_ATTEMPTS):
            prev = q_start if attempt == 0 else rng.uniform(self.lower, self.upper)
            chain = {}
            for k in run_segs:
                w = wps[k]
                goal = dict(zip(ARM_JOINTS, w.q)) if w.q is not None and attempt == 0 else None
                try:
                    found = self.ik.solve(tip.tip, w.position, w.orientation, prev, seed_mode=SEED_CURRENT,
                                          nullspace_goal=goal, check_collision=True, q_head=q_head)
                except Exception:  # noqa: BLE001 - alternatives only
                    found = None
                if found is None or not found.ok:
                    break
                chain[k] = prev = found.q
            else:
                yield chain

    def _reachability(self, tip, waypoint, q_seed):
        """Why a path could not be followed, as far as the IK solver can tell: is the
        waypoint itself out of reach?"""
        if self.ik is None:
            return ''
        try:
            bias = dict(zip(tip.names, waypoint.q)) if waypoint.q is not None else None
            found = self.ik.solve(tip.tip, waypoint.position, waypoint.orientation, q_seed,
                                  nullspace_goal=bias, check_collision=False)
        except Exception:  # noqa: BLE001 - only a diagnostic
            return ''
        if found.ok:
            return '; the waypoint itself is reachable, the straight path to it is not'
        return '; the waypoint is out of reach of %s (no IK solution)' % tip.tip

    # --- nso_start_offset_allowed ------------------------------------------------------------
    def _nullspace_move(self, tip, q0, p0, r0, bias, limits):
        """A joint move that keeps the tip still while the posture drifts toward `bias`."""
        q = q0.copy()
        points = [q.copy()]
        for _ in range(400):
            J = tip.jacobian(q)
            d = bias - q
            step = d - np.linalg.pinv(J, rcond=1e-6) @ (J @ d)
            size = np.abs(step).max()
            if size < 1e-3:
                break
            if size > NULLSPACE_STEP:
                step *= NULLSPACE_STEP / size
            try:
                q = tip.follow(q, [p0, p0], [r0, r0], nullspace=lambda i, qq, s=step: s)[1]
            except PathFollowError:
                break
            points.append(q.copy())
        if len(points) < 3:
            return None
        pts = np.array(points)
        s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
        keep = np.concatenate([[True], np.diff(s) > 1e-9])
        pts, s = pts[keep], s[keep]
        return time_joint_path(s, pts, limits.speed_ratio * self.vel_limit,
                               np.minimum(limits.joint_accel, self.accel_limit))
