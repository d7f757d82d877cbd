"""What the arm's controllers share: right_j0..6's limits and model terms, the settings
clients change (speed ratio), the computed-torque law that tracks a joint reference, and the
acceleration-limited step the position references move by."""
import math

import numpy as np

from intera_rt.control.base import CommandRejected
from intera_rt.native import kernels
from intera_rt.numeric import clip, count_nonzero
from intera_rt.robot import ARM_JOINTS, ARMATURE, LOOP_PERIOD, NEUTRAL

DEFAULT_SPEED_RATIO = 0.3      # set_speed_ratio's default on the robot
DEFAULT_TIMEOUT = 0.2          # s, joint_command_timeout's default on the robot
MAX_TIMEOUT = 1.0              # s: longer timeouts are clamped (a lost client must stop the arm)
SETTLE_SNAP = 1e-5             # rad: a position reference lands on its target below this
LIMIT_SLACK = 1e-6             # rad a commanded position may exceed a joint limit by (float noise)
# rad/s: the most a joint's tracking bandwidth is raised on a plant lighter than the robot
# (per-joint feedback, Arm.track: on the Gazebo stand-in enough for right_j5 to keep the
# robot's stiffness, not right_j6; stable with several steps of latency state to command).
OMEGA_MAX = 160.0
FRICTION_SPEED = 0.01          # rad/s: below it the friction fed forward shrinks with the speed
# A still reference's friction integral (Arm.hold_friction): its time to make up a joint's
# friction from the error the feedback alone leaves, and the error it leaves alone.
FRICTION_INTEGRAL_TIME = 0.25  # s
FRICTION_DEADBAND = 2e-4       # rad
# The per-joint feedback's inertias (Arm.feedback_inertia) follow the pose slowly and cost an
# inverse and an eigenvalue problem: re-evaluated this often, or at once when a joint is this
# far from where they were (a teleport, a fast move).
FEEDBACK_REFRESH = 0.05        # s
FEEDBACK_JUMP = 0.05           # rad
JOINT_LISTS = 64               # joint lists a command names, remembered (Arm.joints)


class Joints:
    """The joints a command names, checked once per list (Arm.joints remembers them: a
    stream names the same joints in every command): `names` (a tuple), `idx` (their indices
    into right_j0..6) and their `lower`, `upper`, `vel_limit`, `acc_limit` and
    `effort_limit`. Its arrays are read-only: every command naming these joints shares them."""

    __slots__ = ('names', 'idx', 'lower', 'upper', 'vel_limit', 'acc_limit', 'effort_limit')

    def __init__(self, arm, names):
        """Raises CommandRejected for an empty list, an unknown name or one named twice."""
        if not names:
            raise CommandRejected('names is empty', 'names')
        idx = []
        for name in names:
            j = arm.index.get(name)
            if j is None:
                raise CommandRejected('unknown joint name %r' % (name,), 'names')
            if j in idx:
                raise CommandRejected('joint %r named twice' % (name,), 'names')
            idx.append(j)
        self.names = names
        self.idx = _frozen(np.array(idx))
        self.lower, self.upper = _frozen(arm.lower[self.idx]), _frozen(arm.upper[self.idx])
        self.vel_limit = _frozen(arm.vel_limit[self.idx])
        self.acc_limit = _frozen(arm.acc_limit[self.idx])
        self.effort_limit = _frozen(arm.effort_limit[self.idx])


class Arm:
    """right_j0..6 as the controllers see them. One per core; controllers keep a reference.

    Args:
        model: the RobotModel as the plant is (JointBoards.plant_model: its armature).
        latency: ticks a torque reaches the plant after the state it answers, beyond a
            lockstep simulation's (JointBoards.plant_latency: 0 in lockstep); controllers
            keep their damping stable for it.
    """

    def __init__(self, model, omega=40.0, zeta=1.0, latency=0):
        self.names = list(ARM_JOINTS)
        self.latency = int(latency)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.dynamics = model.dynamics()             # Pinocchio, the KDL chain's model; our own data
        lim = model.limit_arrays(self.names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.acc_limit = lim['velocity'], lim['accel']
        self.effort_limit, self.armature = lim['effort'], lim['armature']
        self.damping = lim['damping']                # the drives' viscous damping, fed forward
        self.kp = omega * omega
        self.kd = 2.0 * zeta * omega
        # Per joint: ω on the robot's drives; on a plant with less armature (Gazebo has none)
        # raised where stability allows, so that each joint keeps the robot's stiffness
        # (N·m/rad, against friction) about the joint inertia at neutral.
        m = np.diag(self.dynamics.mass_matrix(np.array(NEUTRAL)))
        robot = m + np.array([ARMATURE.get(n, 0.0) for n in self.names])
        w = np.minimum(np.maximum(OMEGA_MAX, omega), omega * np.sqrt(robot / (m + self.armature)))
        # The drives' damping acts on the tracking error too (fed forward at the reference
        # velocity, it is felt at the joint's): part of the derivative action. Where it alone
        # damps more than ω calls for (a light wrist without armature), ω is raised until
        # it does not, with no derivative gain: no slow creep onto the reference.
        own = self.damping / (m + self.armature)         # 1/s
        w = np.maximum(w, own / (2.0 * zeta))
        self.kp_joint = w * w
        self.kd_joint = np.maximum(0.0, 2.0 * zeta * w - own)
        # The joints' Coulomb friction, fed forward on a plant without drive armature (Gazebo):
        # there the light wrist's feedback is far too soft to push through it (right_j6: 7
        # mrad), and the momentum observer's model of the friction holds only while the
        # joints follow their reference. The robot's drives are stiff enough against theirs.
        self.friction = np.where(self.armature > 0.0, 0.0, lim['friction'])
        self.feeds_friction = bool(self.friction.any())
        # N·m/(rad·s): each joint's feedback stiffness (N·m/rad) per FRICTION_INTEGRAL_TIME
        self._friction_gain = self.kp_joint * (m + self.armature) / FRICTION_INTEGRAL_TIME
        # The robot's drives each close their own loop, about their own large reflected
        # inertia; the model's coupling is only fed forward. On a plant without drive armature
        # computed torque's stiffness M(q)·Kp is dominated by that coupling (a push on
        # right_j3 bends right_j5 instead), so there the feedback acts per joint, as the
        # drives' does (Arm.feedback_inertia).
        self.per_joint = not self.armature.any()
        if self.per_joint:
            self._rate_limit = damping_rate_limit(self.latency)
        self._feedback = self._feedback_q = None
        self._feedback_time = -math.inf
        self.speed_ratio = DEFAULT_SPEED_RATIO
        self.speed_ratio_serial = 0
        self.timeout = DEFAULT_TIMEOUT
        self._joint_lists = {}

    def joints(self, names):
        """Joints(self, names) for a command's names (a tuple or list), remembered.

        Raises:
            CommandRejected: an empty list, an unknown name or one named twice.
        """
        key = names if type(names) is tuple else tuple(names)
        joints = self._joint_lists.get(key)
        if joints is None:
            joints = Joints(self, key)
            if len(self._joint_lists) >= JOINT_LISTS:
                self._joint_lists.clear()
            self._joint_lists[key] = joints
        return joints

    def set_timeout(self, seconds):
        """joint_command_timeout: clamped to (0, 1] s; returns the value in force."""
        if not math.isfinite(seconds) or seconds <= 0.0:
            raise CommandRejected('joint_command_timeout must be a finite number > 0, got %r'
                                  % seconds, 'timeout')
        self.timeout = min(MAX_TIMEOUT, float(seconds))
        return self.timeout

    def set_speed_ratio(self, ratio):
        """set_speed_ratio: a fraction of the velocity limits for POSITION_MODE moves. Values
        outside [0, 1] are clipped, as the robot does (contract §3.2); returns the value in
        force. `speed_ratio_serial` counts the settings (a controller that warns once per
        setting of 0 compares it)."""
        if not math.isfinite(ratio):
            raise CommandRejected('set_speed_ratio must be finite, got %r' % ratio, 'speed-ratio')
        self.speed_ratio = min(1.0, max(0.0, float(ratio)))
        self.speed_ratio_serial += 1
        return self.speed_ratio

    def stop_at_limits(self, p, v, a):
        """A reference (p, v, a) extrapolated into a position limit stops there: clipped to
        the limits, no velocity or acceleration on the joints at one."""
        at_limit = (p <= self.lower) | (p >= self.upper)
        if count_nonzero(at_limit):
            v, a = v.copy(), a.copy()
            v[at_limit], a[at_limit] = 0.0, 0.0
            p = clip(p, self.lower, self.upper)
        return p, v, a

    def track(self, state, p, v, a):
        """Computed torque tracking the reference (p, v, a): u = a + Kp·e + Kd·ė,
        τ = M(q)·u + C(q, q̇)·q̇ (+ each drive's reflected inertia) + the drives' viscous
        damping at the reference velocity (so a move does not lag behind it; on a plant
        without drive armature their friction too), gravity left out (gravity compensation
        adds it). On a plant without drive armature (per_joint) the feedback acts per joint,
        as the robot's drives' does, the model's inertia only fed forward:
        τ = M(q)·a + C(q, q̇)·q̇ + diag(m_k)·Kp·e + diag(m_d)·Kd·ė + ..., with
        (m_k, m_d) = feedback_inertia(q), re-evaluated every FEEDBACK_REFRESH s of state.now
        or when a joint has moved FEEDBACK_JUMP since."""
        q, qd = state.q, state.qd
        if self.per_joint:
            m_k, m_d = self._feedback_inertia_at(state.now, q)
            fb = m_k * self.kp_joint * (p - q) + m_d * self.kd_joint * (v - qd)
            tau = self.dynamics.inverse_dynamics(q, qd, a) - state.gravity() + fb + self.damping * v
            return tau + self.friction_feed(v) if self.feeds_friction else tau
        if kernels is not None:
            # (the whole law in one compiled call; else the kernels around the dynamics)
            tau = self.dynamics.computed_torque(q, qd, a, p, v, self.kp_joint, self.kd_joint,
                                                self.armature, state.gravity(), self.damping)
            if tau is not None:
                return tau + self.friction_feed(v) if self.feeds_friction else tau
            u = kernels.track_accel(a, p, q, v, qd, self.kp_joint, self.kd_joint)
            if u is not None:
                tau = kernels.track_torque(self.dynamics.inverse_dynamics(q, qd, u), self.armature,
                                           u, state.gravity(), self.damping, v)
                if tau is not None:
                    return tau + self.friction_feed(v) if self.feeds_friction else tau
        u = a + self.kp_joint * (p - q) + self.kd_joint * (v - qd)
        # (summed in the compiled path's order: the two agree bit for bit)
        tau = (self.dynamics.inverse_dynamics(q, qd, u) + self.armature * u
               - state.gravity()) + self.damping * v
        return tau + self.friction_feed(v) if self.feeds_friction else tau

    def feedback_inertia(self, q):
        """Per joint, the inertias (kg·m²) the per-joint feedback's gains are scaled by at q,
        (m_k, m_d). Stiffness: the joint's own inertia M_jj(q), as a drive's loop sees its
        joint, so that a torque on a joint deflects it about as on the robot. Damping: the
        smaller inertia a diagonal gain meets on the coupled plant, 1/(M⁻¹)_jj, so that
        each joint's damping rate stays Kd·period; scaled down, should the joints' total
        period·λmax(M⁻¹·diag(Kd·m_d)) pass the limit for the plant's latency
        (damping_rate_limit)."""
        mass = self.dynamics.mass_matrix(q) + np.diag(self.armature)
        inv = np.linalg.inv(mass)
        m_d = 1.0 / np.diag(inv)
        s = np.sqrt(self.kd_joint * m_d)
        rate = float(np.linalg.eigvalsh(s[:, None] * inv * s[None, :])[-1]) * LOOP_PERIOD
        if rate > self._rate_limit:             # (the matrix is similar to M⁻¹·diag(Kd·m_d))
            m_d = m_d * (self._rate_limit / rate)
        return np.diag(mass).copy(), m_d

    def _feedback_inertia_at(self, now, q):
        """feedback_inertia(q), kept from the last evaluation while it is less than
        FEEDBACK_REFRESH s old (by `now`) and every joint within FEEDBACK_JUMP of it."""
        fresh = self._feedback_time <= now < self._feedback_time + FEEDBACK_REFRESH
        if not fresh or np.abs(q - self._feedback_q).max() > FEEDBACK_JUMP:
            self._feedback = self.feedback_inertia(q)
            self._feedback_time, self._feedback_q = now, q.copy()
        return self._feedback

    def friction_feed(self, v):
        """The joints' Coulomb friction at the reference velocity v, fed forward (on a plant
        without drive armature only) so that a move does not lag behind its reference."""
        return self.friction * clip(v / FRICTION_SPEED, -1.0, 1.0)

    def hold_friction(self, held, error, dt):
        """The torque that makes up the joints' friction against a still reference, `error`
        (reference − position) away: `held` (its value a tick ago, N·m) integrated with the
        error beyond FRICTION_DEADBAND, within ± each joint's friction (a bounded integral,
        as a robot arm's position loop has). For a plant without drive armature
        (feeds_friction; the friction is zero elsewhere): there a light wrist at rest stays
        where the feedback no longer beats its friction (right_j6: ~7 mrad). Returns the new
        value."""
        rate = self._friction_gain * (np.abs(error) > FRICTION_DEADBAND)
        return clip(held + rate * error * dt, -self.friction, self.friction)

    def stop_point(self, p, v):
        """Where a reference at (p, v) comes to rest braking at the acceleration limits,
        within the joint limits."""
        return clip(p + v * np.abs(v) / (2.0 * self.acc_limit), self.lower, self.upper)


def trapezoid_step(p, v, target, vmax, amax, dt):
    """One step of an online, acceleration-limited approach to `target` (per joint).
    Returns the new (p, v, a). Compiled where intera_rt.native is (float64 vectors of one
    length, dt a float); this Python twin otherwise, with identical results."""
    if kernels is not None:
        out = kernels.trapezoid_step(p, v, target, vmax, amax, dt, SETTLE_SNAP)
        if out is not None:
            return out
    return _trapezoid_step(p, v, target, vmax, amax, dt)


def _trapezoid_step(p, v, target, vmax, amax, dt):
    d = target - p
    v_des = np.sign(d) * np.minimum(vmax, np.sqrt(2.0 * amax * np.abs(d)))
    v_new = v + clip(v_des - v, -amax * dt, amax * dt)
    p_new = p + 0.5 * (v + v_new) * dt
    # Land exactly on the target instead of dithering around it.
    done = (np.abs(target - p_new) < np.maximum(SETTLE_SNAP, amax * dt * dt)) & \
        (np.abs(v_new) <= amax * dt)
    overshoot = np.sign(target - p_new) != np.sign(d)
    land = done | (overshoot & (np.abs(v_new) <= 2.0 * amax * dt))
    p_new = np.where(land, target, p_new)
    v_new = np.where(land, 0.0, v_new)
    return p_new, v_new, (v_new - v) / dt


def model_effort(dynamics, armature, q, a_ref, gravity_suppressed):
    """SEAJointState's model terms, (gravity_model_effort, gravity_only): what was applied
    of the model torques — gravity, unless suppressed, plus the inertial feed-forward of the
    reference acceleration M(q)·a_ref (zero in torque mode and zero-G, which track none) —
    and the model's gravity torque itself, reported even while suppressed (seed 000: the
    torque holding the arm still would take). Computed by whoever publishes them (100 Hz),
    not on the 1 kHz path."""
    gravity = dynamics.gravity(q)
    if count_nonzero(a_ref):
        inertial = dynamics.inverse_dynamics(q, np.zeros(len(q)), a_ref) - gravity + armature * a_ref
    else:
        inertial = np.zeros(len(q))
    return (inertial if gravity_suppressed else inertial + gravity), gravity


def damping_rate_limit(latency):
    """The damping rate (D·period/m) a joint's damping may reach, half the most that keeps
    an inertia stable when its damping acts `latency` ticks late (beyond lockstep's): v(k+1)
    = v(k) − a·v(k−n) is stable for a < 2·sin(π/(2(2n+1))): 2 in lockstep, 1 a tick late."""
    return math.sin(math.pi / (2 * (2 * int(latency) + 1)))


def _frozen(array):
    array.flags.writeable = False
    return array
