"""The external joint torques the arm feels, estimated by a generalized-momentum observer
(De Luca & Mattone 2005; Haddadin et al. 2017): r (N·m, right_j0..6; + = what the world
applies) is the low-pass (gain K) of M q̈ + C q̇ + g − τ from the momentum balance, with no
unfiltered q̈. τ is ArmState.effort, what each joint transmits to its link, so friction needs
no model. The model is the one the plant integrates: the URDF's inertias, the head's
included (its measured pose and velocity), each drive's armature on M's diagonal; one tick's
step is one RNEA call from the previous reading, as the plant steps (semi-implicit Euler).

A reading where a joint (or the head) sits on its mechanical stop, or sat there at the
previous reading, is not fed to it (r keeps its value): the stops are inelastic, and their
reaction is no push from the world. Used by collision detection (control.collision_detection);
docs/realtime_loop.md has the derivation.
"""
import math

import numpy as np
import pinocchio as pin

from intera_rt import native
from intera_rt.native import kernels
from intera_rt.numeric import count_nonzero
from intera_rt.robot import ARM_JOINTS, HEAD_JOINTS

NAME = 'momentum observer'
STOP_TOLERANCE = 1e-9   # rad: a joint this close to its mechanical stop is on it
GAIN_MEMO = 256         # step lengths whose gain is remembered (then forgotten all at once)


class GainMemo(dict):
    """compute(key) for each key, remembered: a hit is one dictionary lookup (memo[key]);
    a miss computes it through __missing__. Emptied when it holds GAIN_MEMO entries, so a
    stream of new keys cannot grow it without bound."""

    __slots__ = ('_compute',)

    def __init__(self, compute):
        super().__init__()
        self._compute = compute

    def __missing__(self, key):
        value = self._compute(key)
        if len(self) >= GAIN_MEMO:
            self.clear()
        self[key] = value
        return value


class MomentumObserver:
    """r, updated in place from one reading to the next (`restart`, then `update` each
    reading). `pin`, `data`, `rigid` (native.rigid of them, or None), `arm` (the arm joints'
    velocity indices) and `q` (the latest reading, Pinocchio's order) are shared with the
    caller for other terms at that pose."""

    def __init__(self, model, gain):
        self.gain = gain
        # The plant's model: every inertia of the URDF, the head's too (shared; our own data).
        models = self._models = model.pinocchio
        self._use(models.full)
        nv = self.pin.nv
        self._arm = models.idx_v(ARM_JOINTS)
        heads = [n for n in HEAD_JOINTS if models.has_joint(n)]
        self._head = models.idx_v(heads[:1])[0] if heads else None
        self._head_k = -1 if self._head is None else int(self._head)    # (the kernels')
        if self.pin.nq != nv:
            raise ValueError('%s: the model has joints with nq != nv (only revolute joints '
                             'are supported)' % NAME)
        self._armature = np.zeros(nv)
        self._armature[self._arm] = model.limit_arrays(ARM_JOINTS)['armature']
        if self._head is not None:
            self._armature[self._head] = model.limit_arrays(heads[:1])['armature'][0]

        # Joint limits in Pinocchio's order (a joint the model does not limit: never).
        self._lower, self._upper = np.full(nv, -math.inf), np.full(nv, math.inf)
        for name, i in zip(ARM_JOINTS + tuple(heads[:1]), models.idx_v(ARM_JOINTS + tuple(heads[:1]))):
            # Where the plant's mechanical stops are (the robot's just beyond the limits).
            self._lower[i] = model.limits[name].lower - model.stop_margin + STOP_TOLERANCE
            self._upper[i] = model.limits[name].upper + model.stop_margin - STOP_TOLERANCE
        self.arm = self._arm
        # Buffers, full (Pinocchio) order: the previous and this reading.
        self._q0, self._v0 = np.zeros(nv), np.zeros(nv)
        self._q1, self._v1 = np.zeros(nv), np.zeros(nv)
        self._acc = np.zeros(nv)
        self._tau_meas = np.zeros(7)
        self.r = np.zeros(7)
        self._on_stop = False
        self._h_cached = None
        self._k_fast = 0.0
        self._gain_memo = GainMemo(lambda key: 1.0 - math.exp(-key[0] * key[1]))  # (gain, h) → k

    def set_tool(self, tool):
        """The plant carries `tool` (model.tool.Tool, None: nothing) from now on: its mass
        and inertia enter the expected torques. r keeps its value."""
        self._use(self._models.full if tool is None else tool.apply(self._models.full))

    def _use(self, pin_model):
        self.pin, self.data = pin_model, pin_model.createData()
        self.rigid = native.rigid(pin_model, self.data)      # (the update from C++; None: Python)

    @property
    def q(self):
        """The latest reading's joint positions (Pinocchio's order)."""
        return self._q0

    def _load(self, state, q, v):
        q[self._arm] = state.q
        v[self._arm] = state.qd
        if self._head is not None:
            q[self._head] = 0.0 if state.q_head is None else state.q_head
            v[self._head] = 0.0 if state.qd_head is None else state.qd_head

    def restart(self, state):
        """Start from the current momentum: r = 0."""
        self._load(state, self._q0, self._v0)
        self.r[:] = 0.0
        self._on_stop = False

    def update(self, state, h):
        """The reading `state`, h s after the previous one: r follows, unless a joint is (or
        was) on its mechanical stop — the stop's reaction is no push from the world, and the
        model cannot tell it apart."""
        self._tau_meas = state.effort
        if self.rigid is not None and kernels is not None:
            # (the load, the stop check and the step in one compiled call)
            on_stop = self.rigid.observe_reading(
                self._q1, self._v1, state.q, state.qd, self._arm, self._head_k, state.q_head,
                state.qd_head, self._upper, self._lower, self._q0, self._v0, self._acc, 1.0 / h,
                self._armature, state.effort, self.r, self._gain_at(h), self._on_stop)
            if on_stop is not None:
                self._on_stop = on_stop
                self._swap()
                return
        on_stop = None if kernels is None else kernels.observer_load(
            self._q1, self._v1, state.q, state.qd, self._arm, self._head_k, state.q_head,
            state.qd_head, self._upper, self._lower, self._v0, self._acc, 1.0 / h)
        if on_stop is None:                 # the Python path
            self._load(state, self._q1, self._v1)
            q = self._q1
            on_stop = bool(count_nonzero((q >= self._upper) | (q <= self._lower)))
            compiled = False
        else:
            compiled = True                 # (and the velocity step is in self._acc)
        stopped, self._on_stop = on_stop or self._on_stop, on_stop
        if not stopped:
            self._observe(h, compiled)
        self._swap()

    def _swap(self):
        """This reading becomes the previous one."""
        self._q0, self._q1 = self._q1, self._q0
        self._v0, self._v1 = self._v1, self._v0

    def _gain_at(self, h):
        """k = 1 − exp(−K·h), the step's gain (remembered per gain and h, as collision
        detection's gains are)."""
        if h != self._h_cached:
            self._h_cached = h
            self._k_fast = self._gain_memo[(self.gain, h)]
        return self._k_fast

    def _observe(self, h, compiled=False):
        """One step over h s from (q0, v0) to (q1, v1) with the transmitted torque
        self._tau_meas (compiled: the kernels loaded the reading, the velocity step in
        self._acc)."""
        k_fast = self._gain_at(h)
        acc = self._acc
        if not compiled:
            np.subtract(self._v1, self._v0, out=acc)
            acc *= 1.0 / h
        # M(q0)·Δq̇/h + n(q0, q̇0): the torque the plant's step from the previous state needed.
        tau = pin.rnea(self.pin, self.data, self._q0, self._v0, acc)
        if compiled and kernels.observer_step(tau, acc, self._armature, self._arm, self._tau_meas,
                                              self.r, k_fast):
            return
        acc *= self._armature
        tau += acc
        raw = tau[self._arm]
        raw -= self._tau_meas
        r = self.r
        raw -= r
        raw *= self._k_fast
        r += raw
