"""Interaction control (seed 000 "Interaction Control"): impedance or force control at the
endpoint, per Cartesian axis, with stiffness control in the nullspace. The realtime
pipeline's controller of role `interaction`, driven by interaction_control_command
(control.commands.InteractionCommand, validated by control.interaction_params; it has no
command timeout) and, while it is active, by TRAJECTORY_MODE joint commands, which move its
reference (a motion with trajectory_options.interaction_control).

Each tick, on the 6 axes of the interaction frame, with e the endpoint's displacement from
its reference and v its twist: F_i = −K_i e_i − D_i v_i (impedance; clipped at ±|f_i| with a
force limit), f_i − D_i v_i (force; with a motion limit, a stiff wall at MOTION_BOUND), and
τ = J_aᵀ(F + u + h) + (I − Jᵀ(JJᵀ)⁻¹J)(K_ns(q_ns − q) − D_ns q̇): the nullspace term moves
only the elbow. u corrects the balance the drives' friction keeps short while the arm is at
rest; h is the wrench held before a reset or a takeover, fading out instead of vanishing.
Changes come without jumps: gains move with a FILTER_TIME constant, a force starts from
zero, the torque changes by at most TORQUE_RATE. expected_external_torque() is the reaction
to the wrench it commands, which collision detection excuses. docs/interaction_control.md has
the full law and its tuning.
"""
import math

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv

from intera_rt.control.arm import damping_rate_limit
from intera_rt.control.base import Controller, Output
from intera_rt.control.commands import InteractionCommand
from intera_rt.control.interaction_params import (D_SCALE, ENDPOINT, FORCE_WITH_MOTION_LIMIT,
                                                  IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT, K_CAP,
                                                  K_MAX_RANGE, describe, parse)
from intera_rt.control.trajectory import (TrajectoryController, extrapolate_within_limits,
                                          sample_reference)
from intera_rt.native import kernels
from intera_rt.numeric import clip, count_nonzero
from intera_rt.robot import LOOP_PERIOD

MOTION_BOUND = np.array([0.12] * 3 + [0.2618] * 3)       # m, rad (seed 000)
WALL_STIFFNESS = np.array([1e4] * 3 + [1e3] * 3)         # FORCE_WITH_MOTION_LIMIT's walls
ROTATION_WALL = math.radians(82.5)
ROTATION_WALL_STIFFNESS = 300.0                           # N·m/rad (the most max_impedance gives)
REFRESH_PERIOD = 0.05        # s between re-evaluations of max_impedance and apparent masses
FILTER_TIME = 0.05           # s: time constant of parameter changes
FILTER_TICKS = int(round(5 * FILTER_TIME / LOOP_PERIOD))   # then they land on their targets
TORQUE_RATE = 1000.0         # N·m/s: the most the output torque changes by
HANDOVER_TIME = 0.3          # s: time constant of the wrench handed over by a reset
DAMPING_GUARD = 0.5          # D·period/m at most, per axis
NULLSPACE_PINV_DAMPING = 1e-6    # λ² of (JJᵀ + λ²I) in the nullspace projector
SLOW_TICKS = 5               # ticks between updates of the projector and the balance
# The balance correction (see the module docstring): its rate per unit of imbalance, the
# imbalance it leaves alone, the most it adds, and how slow the endpoint must be for it.
BALANCE_GAIN = 4.0           # 1/s
BALANCE_LEAK = 0.1           # s: u's time constant of decay on an axis that moves
BALANCE_DEADBAND = np.array([0.1] * 3 + [0.01] * 3)      # N, N·m
BALANCE_MAX = np.array([8.0] * 3 + [2.0] * 3)            # N, N·m
BALANCE_SPEED = np.array([0.02] * 3 + [0.05] * 3)        # m/s, rad/s
BALANCE_JOINT_SPEED = 0.1    # rad/s: and every joint slower than this
NO_LIMIT = 1e9               # a force limit or motion bound that never binds


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


class InteractionController(Controller):
    name = 'interaction'
    role = 'interaction'
    command_timeout = False                       # a single publish keeps it (-r 0)
    reference_modes = (TrajectoryController.joint_command_mode,)
    state_fields = (('K_impedance', 6), ('D_impedance', 6), ('force_command', 6), ('mode', 6),
                    ('max_impedance', 6), ('K_nullspace', 7), ('flags', 4), ('displacement', 6))

    def __init__(self, context):
        super().__init__(context)
        self.arm = arm = context.arm
        self.dyn = arm.dynamics
        self._data = self.dyn.model.createData()
        self._fid = self.dyn.frame_id(ENDPOINT)
        self._armature = np.diag(arm.armature)
        self._u = np.zeros(6)
        self._slow_left = 0
        self._wrench_map = np.zeros((6, 7))
        self._eye7 = np.eye(7)
        self._projector = self._eye7.copy()
        self._handover = None            # wrench (base) fading out after a reset
        self._held = np.zeros(6)         # the static wrench of the latest tick (base)
        self._zero = np.zeros(7)
        # Gains in force, and the targets they move to: K, D, F (6 each), K_ns, D_ns (7 each).
        self._cur, self._tgt = np.zeros(32), np.zeros(32)
        self._K, self._D, self._F = self._cur[0:6], self._cur[6:12], self._cur[12:18]
        self._Kns, self._Dns = self._cur[18:25], self._cur[25:32]
        self._alpha = 1.0 - math.exp(-LOOP_PERIOD / FILTER_TIME)    # per tick
        self._filter_left = 0
        self._cmd = None                 # the command in force (None: the defaults)
        self._e = np.zeros(6)
        self._law_out = tuple(np.zeros(6) for _ in range(4))    # the kernel's Fs, Fd, F, held
        self._tau_prev = np.zeros(7)
        self._expected = None
        self._starting = False
        self._m_app = np.ones(6)
        self._M_diag = np.ones(7)
        self._rate_limit = damping_rate_limit(arm.latency)
        self._damping_scale = 1.0       # on every damping gain (_damping_scale_at)
        self._k_max = K_MAX_RANGE[0].copy()
        self._refresh_at = -math.inf
        self.params = parse(InteractionCommand(interaction_control_active=True))[0]
        self._derive()
        self._clear_reference(np.zeros(7))

    # --- commands ------------------------------------------------------------------------
    def validate(self, cmd, state):
        if cmd == self._cmd:                      # a client republishing: nothing new
            return self.params, []
        return parse(cmd)

    def command(self, parsed, state):
        if parsed is self.params and self._cmd is not None:
            return
        self._cmd, self.params = parsed.cmd, parsed
        self._derive()                            # the frame and tool point first
        if parsed.reset_reference:
            if not self._starting:
                # The new springs start from where the endpoint is; what the old ones held
                # (a push, a contact) is handed over and fades out instead of vanishing.
                self._hand_over(self._held)
            self._reset_reference(state)
        # max_impedance and the damping guards at this pose
        self._refresh(state.q, *self._kinematics(state.q)[::2], state.now)
        self._filter_left = FILTER_TICKS
        if self._starting:                        # gains at once, the force from zero
            self._cur[:] = self._tgt
            self._F[:] = 0.0
            self._ns = bool(count_nonzero(self._tgt[18:32]))

    def reference(self, parsed, state):
        """A TRAJECTORY_MODE sample: the joint reference the endpoint and nullspace references
        follow (extrapolated as the trajectory controller does)."""
        now = state.now
        self._jp, self._jv, self._ja = sample_reference(parsed, self._joint_reference(now)[0],
                                                        now, self.arm)
        self._jt = self._j_last = now
        self._driven = self._ref_dirty = True

    # --- references ------------------------------------------------------------------------
    def _clear_reference(self, q):
        self._q_ns = np.array(q, float)
        self._jp, self._jv, self._ja = self._q_ns, np.zeros(7), np.zeros(7)
        self._jt = self._j_last = 0.0
        self._driven = self._ref_dirty = False
        self._v_ref = None

    def _reset_reference(self, state, q=None):
        """The reference becomes the endpoint's pose at q (default: where the arm is)."""
        q = state.q if q is None else q
        self._clear_reference(q)
        R, p, _ = self._kinematics(q)
        self._R_ref, self._p_ref = R, p
        self._u = np.zeros(6)

    def _joint_reference(self, now):
        """The joint reference at `now`: extrapolated from the latest sample for at most the
        joint command timeout (a stream that stops leaves it where it got to)."""
        if not self._driven:
            return self._q_ns, self._jv, self._ja
        t_end = min(now, self._j_last + self.arm.timeout)
        if t_end > self._jt and (count_nonzero(self._jv) or count_nonzero(self._ja)):
            self._jp, self._jv, self._ja = extrapolate_within_limits(
                self._jp, self._jv, self._ja, t_end - self._jt, self.arm)
            self._ref_dirty = True
        self._jt = t_end
        if now >= self._j_last + self.arm.timeout and (count_nonzero(self._jv) or
                                                       count_nonzero(self._ja)):
            self._jv, self._ja = np.zeros(7), np.zeros(7)
            self._ref_dirty = True
        return self._jp, self._jv, self._ja

    def _kinematics(self, q):
        """(R, p, J) of the controlled point: right_hand's orientation, its origin moved by
        the tool offset (in_endpoint_frame), the 6×7 Jacobian of that point (base)."""
        R, p, J = self.dyn.frame_kinematics(self._fid, q, self._data)
        offset = self._offset
        if offset is not None:
            o = R @ offset
            p = p + o
            J[:3] -= _skew(o) @ J[3:]
        return R, p, J

    # --- gains -----------------------------------------------------------------------------
    def _refresh(self, q, R, J, now):
        """max_impedance's stiffness, the apparent masses and the joint inertias at this
        pose (R, J: the controlled point's orientation and Jacobian), and the targets that
        follow from them."""
        self._refresh_at = now + REFRESH_PERIOD
        M = self.dyn.mass_matrix(q, self._data) + self._armature
        TJ = self._axes_jacobian(self._axes(R), J)
        _, minv_jt, info = dposv(M, TJ.T.copy(), lower=0)
        if info == 0:
            inv_mass = np.einsum('ij,ji->i', TJ, minv_jt)    # diag(J M⁻¹ Jᵀ)
            self._m_app = 1.0 / np.maximum(inv_mass, 1e-9)
        self._M_diag = M.diagonal().copy()
        self._k_max = clip(self.arm.kp * self._m_app, K_MAX_RANGE[0], K_MAX_RANGE[1])
        self._derive()
        # (the gains in force and their targets: the larger of each while the filter moves)
        self._damping_scale = self._damping_scale_at(
            M, TJ, np.maximum(self._D, self._tgt[6:12]), np.maximum(self._Dns, self._tgt[25:32]))

    def _derive(self):
        """Targets, masks and limits from the parameters and the pose's figures."""
        p = self.params
        mode = p.mode
        imp = (mode == IMPEDANCE) | (mode == IMPEDANCE_WITH_FORCE_LIMIT)
        force_axes = ~imp
        K = np.where(p.max_impedance, self._k_max, p.K) * imp
        if p.D is not None:
            D = p.D.copy()
        else:
            D = D_SCALE * np.sqrt(np.where(imp, K, K_CAP))
        if not p.damp_force:
            D = D * imp
        guard = DAMPING_GUARD * self._m_app / LOOP_PERIOD
        D = np.minimum(D, guard)
        tgt = self._tgt
        tgt[0:6], tgt[6:12], tgt[12:18] = K, D, p.force * force_axes
        tgt[18:25] = p.K_nullspace
        tgt[25:32] = 2.0 * np.sqrt(p.K_nullspace * self._M_diag)
        self._imp = imp.astype(float)
        # Axes with a balance to keep: force axes, and impedance axes with stiffness (a free
        # axis of constrained zero-G has none: the arm stays where it is let go).
        self._balanced = force_axes | (K > 0.0)
        limited = mode == IMPEDANCE_WITH_FORCE_LIMIT
        self._limit = np.where(limited, np.abs(p.force), NO_LIMIT) if limited.any() else None
        bounded = mode == FORCE_WITH_MOTION_LIMIT
        if bounded.any():
            self._bound = np.where(bounded, MOTION_BOUND, NO_LIMIT)
            self._wall_k = WALL_STIFFNESS * bounded
            self._wall_d = np.minimum(D_SCALE * np.sqrt(WALL_STIFFNESS), guard) * bounded
        else:
            self._bound = self._wall_k = self._wall_d = None
        rot_imp = imp[3:]
        self._rot_wall = rot_imp.astype(float) if rot_imp.any() else None
        self._rot_wall_d = np.minimum(D_SCALE[3:] * math.sqrt(ROTATION_WALL_STIFFNESS), guard[3:])
        # The axes' rotation: None for base's own (the SDK's default frame), skipping the
        # products each tick.
        self._frame_R = None if np.array_equal(p.frame_rotation, np.eye(3)) else p.frame_rotation
        self._offset = p.frame_position if count_nonzero(p.frame_position) else None
        self._ns = bool(count_nonzero(tgt[18:32]) or count_nonzero(self._cur[18:32]))

    def _damping_scale_at(self, M, TJ, D, D_ns):
        """The factor (≤ 1) on every damping gain that keeps the damping the joints feel in
        all, the axes' D (through TJ, the axes' Jacobian) and the nullspace's D_ns together,
        within the plant's damping rate limit: its rate is period·|λ|max of M⁻¹D_q, M the
        plant's inertia at this pose. Each axis within DAMPING_GUARD is not enough: they add
        up in the joints, and a light joint (a wrist without drive armature) turned into a
        heavily damped axis (the axes' D are set at the pose of the command) feels several."""
        jjt = TJ @ TJ.T
        jjt.flat[::7] += NULLSPACE_PINV_DAMPING
        _, X, info = dposv(jjt, TJ, lower=0)
        if info != 0:
            return 1.0
        D_q = (TJ.T * D) @ TJ + (self._eye7 - TJ.T @ X) * D_ns
        rate = float(np.abs(np.linalg.eigvals(np.linalg.solve(M, D_q))).max()) * LOOP_PERIOD
        return min(1.0, self._rate_limit / rate) if rate > self._rate_limit else 1.0

    def _filter_step(self):
        self._filter_left -= 1
        if self._filter_left <= 0:
            self._cur[:] = self._tgt
            self._ns = bool(count_nonzero(self._tgt[18:32]))
        else:
            self._cur += self._alpha * (self._tgt - self._cur)

    def _axes(self, R):
        """The interaction axes' orientation in base (None: base's own)."""
        if not self.params.in_endpoint_frame:
            return self._frame_R
        return R if self._frame_R is None else R @ self._frame_R

    @staticmethod
    def _axes_jacobian(Ra, J):
        if Ra is None:
            return J
        RaT = Ra.T
        return np.vstack((RaT @ J[:3], RaT @ J[3:]))

    # --- the pipeline ------------------------------------------------------------------------
    def start(self, state, previous):
        """From where the arm is: the reference is the endpoint's pose (with
        disable_reference_resetting, that of the previous controller's reference), the
        gains those in force, a force command ramping up from zero."""
        self._derive()
        if previous is not None and not self.params.reset_reference:
            self._reset_reference(state, previous.position)
        else:
            self._reset_reference(state)
        self._tau_prev = np.array(previous.torque, float) if previous is not None else np.zeros(7)
        R, _, J = self._kinematics(state.q)
        self._handover = None
        if previous is not None:
            # What the previous controller pressed with at the endpoint (holding against a
            # push, on a table), handed over and fading out.
            jjt = J @ J.T
            jjt.flat[::7] += NULLSPACE_PINV_DAMPING
            _, w, info = dposv(jjt, J @ previous.torque, lower=0)
            if info == 0:
                self._hand_over(w)
        self._refresh(state.q, R, J, state.now)
        self._cur[:] = self._tgt
        self._F[:] = 0.0
        self._filter_left = FILTER_TICKS
        self._ns = bool(count_nonzero(self._tgt[18:32]))
        self._expected = None
        self._starting = True                     # the command that activates it: no ramp
        self._slow_left = 0                       # the projector at this pose first

    def reset(self, state):
        self._clear_reference(state.q)
        self._tau_prev = np.zeros(7)
        self._expected = None
        self._handover = None

    def _hand_over(self, wrench):
        w = np.array(wrench, float)
        self._handover = w if np.abs(w).max() > 1e-3 else None

    def describe(self):
        """One line on the parameters in force (logged when they are applied)."""
        return describe(self.params)

    def expected_external_torque(self):
        return self._expected

    def update(self, state):
        q, qd, now = state.q, state.qd, state.now
        self._starting = False
        if self._filter_left:
            self._filter_step()
        R, p, J = self._kinematics(q)
        if now >= self._refresh_at:
            self._refresh(q, R, J, now)
        if self._driven:
            self._follow(now)
        Ra = self._axes(R)
        e = self._e
        ep = p - self._p_ref
        phi = pin.log3(R @ self._R_ref.T)
        if Ra is None:
            e[:3], e[3:] = ep, phi
            TJ = J
        else:
            RaT = Ra.T
            e[:3], e[3:] = RaT @ ep, RaT @ phi
            TJ = np.vstack((RaT @ J[:3], RaT @ J[3:]))
        v = TJ @ qd
        if self._v_ref is not None:
            vr = self._v_ref if Ra is None else np.concatenate((RaT @ self._v_ref[:3], RaT @ self._v_ref[3:]))
            vd = v - vr * self._imp
        else:
            vd = v
        handover = self._handover
        hand = None
        if handover is not None:
            hand = handover if Ra is None else np.concatenate((RaT @ handover[:3], RaT @ handover[3:]))
        rot_wall, wall_scale = None, 0.0
        if self._rot_wall is not None and not (self.params.free_rotations and not self._driven):
            angle = math.sqrt(float(phi @ phi))
            if angle > ROTATION_WALL:
                rot_wall = self._rot_wall
                wall_scale = ROTATION_WALL_STIFFNESS * (angle - ROTATION_WALL) / angle
        D, D_ns, wall_d, rot_wall_d = self._D, self._Dns, self._wall_d, self._rot_wall_d
        scale = self._damping_scale
        if scale < 1.0:
            D, D_ns, rot_wall_d = D * scale, D_ns * scale, rot_wall_d * scale
            wall_d = None if wall_d is None else wall_d * scale
        args = (self._F, self._K, e, D, vd, self._u, hand, self._limit, self._bound,
                self._wall_k, wall_d, v, rot_wall, rot_wall_d, wall_scale)
        if kernels is not None and kernels.interaction_wrench(*args, *self._law_out):
            Fs, Fd, F, held = self._law_out
        else:
            Fs, Fd, F, held = _wrench_law(*args)
        if handover is not None:
            handover *= 1.0 - state.period / HANDOVER_TIME
            if np.abs(handover).max() < 1e-3:
                self._handover = None
        if Ra is None:
            self._held = held
        else:
            self._held = np.concatenate((Ra @ held[:3], Ra @ held[3:]))
        tau_task = F @ TJ
        tau = tau_task
        # Every SLOW_PERIOD ticks: the map X = (JJᵀ)⁻¹J (the endpoint wrench that joint
        # torques amount to) and the nullspace projector I − JᵀX, which change with the pose
        # only; and the balance correction, which works at a fraction of the loop's rate.
        self._slow_left -= 1
        slow = self._slow_left <= 0
        if slow:
            self._slow_left = SLOW_TICKS
            jjt = J @ J.T
            jjt.flat[::7] += NULLSPACE_PINV_DAMPING
            _, X, info = dposv(jjt, J, lower=0, overwrite_a=1)
            if info == 0:
                self._wrench_map = X
                self._projector = self._eye7 - J.T @ X
        extra = None
        if self._ns:
            error = None if kernels is None else kernels.nullspace_error(
                self._Kns, self._q_ns, q, D_ns, qd)
            if error is None:
                error = self._Kns * (self._q_ns - q) - D_ns * qd
            extra = self._projector @ error
        if slow and self._v_ref is None:
            w_ext = self._wrench_map @ (state.gravity() - state.effort)
            if Ra is not None:
                w_ext = np.concatenate((RaT @ w_ext[:3], RaT @ w_ext[3:]))
            self._balance(Fs + Fd + w_ext, v, qd, SLOW_TICKS * state.period)
        step = TORQUE_RATE * state.period
        prev = self._tau_prev
        tau = None if kernels is None else kernels.rate_clip(tau, extra, prev, step)
        if tau is None:
            tau = tau_task if extra is None else tau_task + extra
            tau = clip(tau, prev - step, prev + step)
        self._tau_prev = tau
        self._expected = -tau_task
        return Output(tau, q, qd, self._zero, interaction=tau)

    def _balance(self, z, v, qd, dt):
        """The balance correction u (module docstring): while the arm is at rest (the
        endpoint slower than BALANCE_SPEED on each axis, every joint than
        BALANCE_JOINT_SPEED) and the reference still, u integrates the imbalance z between the
        wrench the law commands (springs, force and damping, u left out) and the external
        wrench the joints measure, beyond a dead band. z is 0 when K·e = F_ext (or when a
        contact pushes back with f) at rest, or while the damping takes up the difference
        (free motion toward the balance); what else holds the endpoint short of it is the
        drives' friction (the joint torques are measured after it): u makes that up, at
        most BALANCE_MAX."""
        if count_nonzero(np.abs(v) >= BALANCE_SPEED) or np.abs(qd).max() >= BALANCE_JOINT_SPEED:
            # Moving: what held the endpoint is gone (a push let go, a joint broken free), a
            # correction left over would push it on, and the measured wrench is not the
            # external one (the links' inertia is in it).
            self._u *= 1.0 - dt / BALANCE_LEAK
            return
        act = self._balanced & (np.abs(z) > BALANCE_DEADBAND)
        if count_nonzero(act):
            self._u = clip(self._u + (BALANCE_GAIN * dt) * z * act, -BALANCE_MAX, BALANCE_MAX)

    def _follow(self, now):
        """A motion drives the reference: the endpoint pose and twist of the joint reference
        (recomputed while it moves), the nullspace reference its joint angles."""
        qr, vr, _ = self._joint_reference(now)
        if not self._ref_dirty:
            return
        self._ref_dirty = False
        R, p, J = self._kinematics(qr)
        self._R_ref, self._p_ref, self._q_ns = R, p, qr
        self._v_ref = J @ vr if count_nonzero(vr) else None

    # --- state ---------------------------------------------------------------------------------
    def report(self, put):
        p = self.params
        put('K_impedance', self._K)
        put('D_impedance', self._D * self._damping_scale)
        put('force_command', p.force)
        put('mode', p.mode)
        put('max_impedance', p.max_impedance)
        put('K_nullspace', self._Kns)
        put('flags', (float(p.in_endpoint_frame), float(not p.damp_force),
                      float(not p.reset_reference), float(p.free_rotations)))
        put('displacement', self._e)


def _wrench_law(F_cmd, K, e, D, vd, u, hand, limit, bound, wall_k, wall_d, v, rot_wall,
                rot_wall_d, wall_scale):
    """(Fs, Fd, F, held) on the interaction axes: the wrench the law means the endpoint to
    hold at rest (springs, force and the wrench handed over, `hand`), its damping, their sum
    with the balance u as commanded, and what the springs hold. `limit` (a force limit),
    `bound` (a motion limit's walls, wall_k and wall_d) and `rot_wall` (the rotation wall's
    axes, when beyond it, with wall_scale its stiffness per radian) may be None. The
    compiled kernels' interaction_wrench computes exactly this."""
    Fs = F_cmd - K * e
    Fd = -D * vd
    if hand is not None:
        Fs = Fs + hand
    if limit is not None:
        Fs = clip(Fs, -limit, limit)
    if bound is not None:
        over = e - clip(e, -bound, bound)
        if count_nonzero(over):
            Fs = Fs - wall_k * over
            Fd = Fd - wall_d * v * (over != 0.0)
    if rot_wall is not None:
        Fs[3:] -= rot_wall * wall_scale * e[3:]
        Fd[3:] -= rot_wall * rot_wall_d * v[3:]
    F = Fs + Fd + u
    if limit is not None:
        F = clip(F, -limit, limit)
    return Fs, Fd, F, Fs - F_cmd + u
