"""Collision avoidance (seed 000): when the inflated armnav shapes of two links overlap
beyond what the robot's rest poses already overlap (model.avoidance), joint torques
proportional to the overlap push the links apart: per pair overlapping by e, with
g = ∂distance/∂q and ḋ = g·q̇, f = max(0, k·e − c·ḋ) (a spring-damper that never pulls) and
τ = Σ g·f, faded out over the last LIMIT_BAND before a joint limit it would push past, each
joint bounded to MAX_SHARE of its effort limit and in its rate of change to RATE_SHARE per
tick (a controller driving deep into an overlap is not fought with saturated torques that
flip sign as pairs come and go). Idle under a planned path (trajectory mode) and while
/robot/limb/right/suppress_collision_avoidance keeps arriving.

It also acts on the commands (seed 000: the motor controller modifies velocity and torque
commands for collision avoidance), which a push of bounded torque alone cannot hold off: in
VELOCITY_MODE the reference velocity is scaled to 0 while it closes an overlapping pair
(speed_scale; the arm stops, the push then holds it off), and in TORQUE_MODE the part of the
user's torque that closes an overlapping pair (each joint's, where it does) is cancelled.

Also `velocity_scale`: distance-aware scaling of a reference velocity near the shapes
(seed 002's directional_collision_scaling), applied by the core to the position and velocity
controllers' references when the `velocity_scaling` option is on. Options: OPTIONS.

State fields: `active` (1 while pushing), `torque` (7, N·m added this tick), `depth` (m,
the deepest overlap beyond an allowance), `objects` (the shapes overlapping beyond their
allowance, a bit mask over model.avoidance.shape_links(armnav URDF), named by the adapter
with objects_from_mask; a float64 holds it exactly up to 53 shapes).
"""
import math

import numpy as np

from intera_rt.control.base import Additive
from intera_rt.model.avoidance import (DEFAULT_PADDING, DEFAULT_ZONE, AvoidanceModel,
                                       default_armnav_xml, objects_from_mask)
from intera_rt.native import kernels
from intera_rt.numeric import count_nonzero
from intera_rt.options import Option
from intera_rt.robot import ARM_JOINTS

# Tuned against a computed-torque position hold (ω 40 rad/s, ζ 1) on the embedded plant
# (test_collision_avoidance_core: pushed back without ringing, released gently).
STIFFNESS = 10000.0            # N/m
DAMPING = 500.0                # N·s/m: about critical for the 3–10 kg the contacts see
LIMIT_BAND = 0.05              # rad before a joint limit over which a push toward it fades out
MAX_SHARE = 0.75               # of each joint's effort limit
RATE_SHARE = 0.02              # of each joint's effort limit per tick (0 → MAX in 25 ms)
VELOCITY_MODE, TORQUE_MODE = 2, 3  # the JointCommand modes whose commands it acts on


class CollisionAvoidance(Additive):
    name = 'collision_avoidance'
    # Not in trajectory mode (seed 000): a planned path is the planner's to keep clear.
    idle_roles = ('planned',)
    OPTIONS = {
        'stiffness': Option(float, STIFFNESS, 'k, N/m of overlap (≥ 0)'),
        'damping': Option(float, DAMPING, 'c, N·s/m of closing speed (≥ 0)'),
        'armnav_urdf': Option(str, None, "the armnav URDF text (default: this checkout's "
                              'urdf/sawyer_armnav.urdf; the robot passes '
                              '/robot/armnav_robot_description)'),
        'padding': Option(float, DEFAULT_PADDING, "velocity scaling's padding, m of clearance"),
        'zone': Option(float, DEFAULT_ZONE, "velocity scaling's zone, m of clearance"),
        'velocity_scaling': Option(bool, False, "the core scales the position and velocity "
                                   "controllers' references near the shapes"),
    }
    state_fields = (('active', 1), ('torque', 7), ('depth', 1), ('objects', 1))

    def __init__(self, context):
        super().__init__(context)
        option = self.options
        self.stiffness = _gain('stiffness', option['stiffness'])
        self.damping = _gain('damping', option['damping'])
        xml = option['armnav_urdf']
        if xml is None:
            xml = default_armnav_xml()
        self.model = AvoidanceModel(xml, padding=option['padding'], zone=option['zone'])
        self._armnav_model = self.model          # without a tool's shapes
        _check_shape_count(self.model)
        self.velocity_scaling = option['velocity_scaling']
        lim = context.model.limit_arrays(ARM_JOINTS)
        self.effort_limit, self.lower, self.upper = lim['effort'], lim['lower'], lim['upper']
        self._max = MAX_SHARE * self.effort_limit
        self._step = RATE_SHARE * self.effort_limit
        self.torque = np.zeros(7)
        self._zero = self.torque
        self._active = False
        self._depth = 0.0
        self._objects = 0
        self._closing_guard = ()     # the overlapping pairs' gradients, while in VELOCITY_MODE

    def update(self, state, controller, out):
        self._closing_guard = ()
        if controller.role in self.idle_roles or state.suppressed('collision_avoidance'):
            return self._idle()
        contacts, gradients, clearances = self.model.push_terms(state.q, state.q_head)
        if not contacts:
            return self._release()
        mode = getattr(controller, 'joint_command_mode', None)
        if mode == VELOCITY_MODE:
            self._closing_guard = list(gradients)
        torque = np.empty(7)
        args = (gradients, clearances, state.qd, state.q, self.upper, self.lower, self.torque,
                self._step, self._max, self.stiffness, self.damping, 1.0 / LIMIT_BAND, torque)
        pushing = None if kernels is None else kernels.avoidance_push(*args)
        if pushing is None:
            pushing = _push_law(*args)
        self.torque = torque
        if mode == TORQUE_MODE and out.effort is not None:
            cancel = _closing_part(out.effort, contacts)
            if cancel is not None:
                self.torque = self.torque - cancel
                pushing = True
        self._active = pushing
        self._depth = -float(clearances.min())
        self._objects = self.model.objects(contacts)
        return self.torque if pushing or count_nonzero(self.torque) else None

    def _release(self):
        return self._idle()

    def _idle(self):
        self.torque = self._zero
        self._active = False
        self._depth = 0.0
        self._objects = 0
        return None

    def reset(self, state):
        self._idle()

    def set_tool_shapes(self, shapes):
        model = self._armnav_model if shapes is None else self._armnav_model.with_tool(shapes)
        _check_shape_count(model)
        self.model = model
        self._objects = 0                       # its bits named the old shapes

    def report(self, put):
        put('active', 1.0 if self._active else 0.0)
        put('torque', self.torque)
        put('depth', self._depth)
        put('objects', float(self._objects))

    def colliding_objects(self):
        """The links whose shapes overlap beyond their allowance this tick
        (CollisionAvoidanceState's collision_object)."""
        return objects_from_mask(self._objects, self.model.shape_links)

    def speed_scale(self, state, velocity):
        """In VELOCITY_MODE, 0 while the commanded velocity closes a pair that overlapped at
        the last tick; with the velocity_scaling option, velocity_scale of where the active
        controller heads (seed 002); else 1."""
        for grad in self._closing_guard:
            if float(grad @ velocity) < 0.0:
                return 0.0
        if not self.velocity_scaling or not count_nonzero(velocity):
            return 1.0
        return self.velocity_scale(state, velocity)

    def velocity_scale(self, state, qd_ref):
        """The fraction (0..1) of the reference velocity qd_ref (7, rad/s) to keep at the
        measured pose (model.AvoidanceModel.velocity_scale); 1 while avoidance is
        suppressed. ValueError on a malformed qd_ref."""
        if state.suppressed('collision_avoidance'):
            return 1.0
        return self.model.velocity_scale(state.q, state.q_head, qd_ref)


def _push_law(gradients, clearances, qd, q, upper, lower, prev, step, limit, k, c, inv_band,
              out):
    """The push of the overlapping pairs (gradients: m×7, one row per pair; clearances: m)
    into `out`: per pair f = max(0, k·e − c·ḋ) with e = −clearance and ḋ = g·q̇, τ = Σ g·f,
    faded over the band (1/inv_band rad) before a joint limit it pushes toward, bounded by
    ±limit, and its growth away from 0 bounded by `step` from `prev`. Returns whether any
    pair pushes. In Python floats, as the compiled kernels' avoidance_push computes it
    (the same operations in the same order)."""
    n = len(qd)
    tau = [0.0] * n
    qd = qd.tolist()
    pushing = False
    for g, clearance in zip(gradients.tolist(), clearances.tolist()):
        rate = 0.0
        for gj, vj in zip(g, qd):
            rate += gj * vj
        force = -k * clearance - c * rate
        if force > 0.0:
            for j in range(n):
                tau[j] += force * g[j]
            pushing = True
    for j in range(n):
        fade = (float(upper[j]) - float(q[j]) if tau[j] > 0.0 else float(q[j]) - float(lower[j])) * inv_band
        t = _clip(tau[j] * _clip(fade, 0.0, 1.0), -float(limit[j]), float(limit[j]))
        p, s = float(prev[j]), float(step[j])
        out[j] = _clip(t, -s if p >= 0.0 else p - s, s if p <= 0.0 else p + s)
    return pushing


def _clip(x, lo, hi):
    """numpy's clip of one float (NaN kept)."""
    if x != x:
        return x
    y = x if x > lo else lo
    if y != y:
        return y
    return y if y < hi else hi


def _closing_part(effort, contacts):
    """The part of the torque `effort` (7) that drives overlapping pairs together: each
    joint's torque whose sign closes a pair (g_j·τ_j < 0, g the pair's gradient); None when
    it closes none."""
    closing = np.zeros(len(effort), dtype=bool)
    for contact in contacts:
        closing |= contact.gradient * effort < 0.0
    return np.where(closing, effort, 0.0) if np.count_nonzero(closing) else None


def _check_shape_count(model):
    if len(model.shape_links) > 53:       # `objects` rides in a float64
        raise ValueError('collision_avoidance reports at most 53 shapes, the avoidance model '
                         'has %d' % len(model.shape_links))


def _gain(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError('collision_avoidance %s must be a number ≥ 0, got %r' % (name, value))
    if not math.isfinite(value) or value < 0.0:
        raise ValueError('collision_avoidance %s must be a number ≥ 0, got %r' % (name, value))
    return value
