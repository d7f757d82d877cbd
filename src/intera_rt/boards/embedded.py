"""Embedded physics: rigid-body dynamics of right_j0..6 and head_pan from the URDF inertias
(Pinocchio CRBA + RNEA), reflected motor inertia, viscous and Coulomb friction, effort limits and
joint limits as hard stops, integrated semi-implicitly at `substeps` × the loop rate."""
import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv

from intera_rt.boards.base import BoardsReading, JointBoards
from intera_rt.model import ARM_JOINTS, HEAD_JOINTS
from intera_rt.numeric import clip as _clip


class EmbeddedBoards(JointBoards):
    simulated = True

    def __init__(self, model, joint_names=ARM_JOINTS + HEAD_JOINTS, substeps=1):
        self.joint_names = tuple(joint_names)
        self.substeps = int(substeps)
        self.pin = pin.buildModelFromXML(model.urdf_xml)
        self.data = self.pin.createData()
        # Pinocchio orders joints depth-first; map ours onto its q/v indices.
        self._idx = np.array([self.pin.joints[self.pin.getJointId(n)].idx_v for n in self.joint_names])
        lim = model.limit_arrays(self.joint_names)
        self.lower, self.upper = lim['lower'], lim['upper']
        self.effort_limit = lim['effort']
        self.damping, self.coulomb = lim['damping'], lim['friction']
        # Pinocchio 2.x leaves model.armature out of ABA/CRBA: add it to M ourselves.
        self._armature_matrix = np.zeros((self.pin.nv, self.pin.nv))
        self._armature_matrix[self._idx, self._idx] = lim['armature']
        n = len(self.joint_names)
        self.q = np.zeros(n)
        self.qd = np.zeros(n)
        self.tau_cmd = np.zeros(n)
        self.tau_transmitted = np.zeros(n)
        self.brakes = True
        self._wrenches = []          # [frame_id, 6-vector in base (force; torque), remaining s]
        self._full_q = pin.neutral(self.pin)
        self._full_v = np.zeros(self.pin.nv)
        self._full_tau = np.zeros(self.pin.nv)

    # --- joint-boards interface -------------------------------------------------------
    def read(self):
        return BoardsReading(self.q.copy(), self.qd.copy(), self.tau_transmitted.copy())

    def write(self, torque):
        torque = np.asarray(torque, dtype=float)
        if np.count_nonzero(~np.isfinite(torque)):          # never let a bad number into the plant
            torque = np.where(np.isfinite(torque), torque, 0.0)
        self.tau_cmd = _clip(torque, -self.effort_limit, self.effort_limit)

    def set_brakes(self, engaged):
        self.brakes = bool(engaged)
        if self.brakes:
            self.qd[:] = 0.0

    def advance(self, dt):
        h = dt / self.substeps
        for _ in range(self.substeps):
            self._step(h)
        for w in self._wrenches:
            w[2] -= dt
        self._wrenches = [w for w in self._wrenches if w[2] > 0.0]

    # --- sim control ------------------------------------------------------------------
    def apply_wrench(self, link, wrench, duration):
        """Push `wrench` (force xyz, torque xyz; in base, about the link origin) on `link`."""
        # Fixed joints often share their child link's name: ask for the body frame.
        if not self.pin.existFrame(link, pin.FrameType.BODY):
            raise KeyError('no link named %r' % link)
        frame_id = self.pin.getFrameId(link, pin.FrameType.BODY)
        self._wrenches.append([frame_id, np.asarray(wrench, float), float(duration)])

    def reset_pose(self, positions):
        self.q = _clip(np.asarray(positions, float), self.lower, self.upper)
        self.qd[:] = 0.0
        self._wrenches = []

    # --- physics ----------------------------------------------------------------------
    def _external_torques(self):
        """Joint torques produced by the external wrenches (J^T w, world-aligned frame); only
        called while there are some."""
        tau = np.zeros(len(self.joint_names))
        pin.computeJointJacobians(self.pin, self.data, self._full_q)
        pin.updateFramePlacements(self.pin, self.data)
        for frame_id, w, _ in self._wrenches:
            jac = pin.getFrameJacobian(self.pin, self.data, frame_id, pin.LOCAL_WORLD_ALIGNED)
            tau += (jac.T @ w)[self._idx]
        return tau

    def _step(self, h):
        idx = self._idx
        self._full_q[idx] = self.q
        if self.brakes:
            # The brake holds the motor side; the SEA still carries the static load.
            self.tau_transmitted = pin.computeGeneralizedGravity(self.pin, self.data, self._full_q)[idx]
            self.qd[:] = 0.0
            return
        self._full_v[idx] = self.qd
        tau = self.tau_cmd - self.damping * self.qd
        if self._wrenches:
            tau += self._external_torques()
        mass = pin.crba(self.pin, self.data, self._full_q)     # upper triangle only
        mass += self._armature_matrix
        bias = pin.nonLinearEffects(self.pin, self.data, self._full_q, self._full_v)
        self._full_tau[idx] = tau
        # M is symmetric positive definite: a Cholesky solve that reads its upper triangle.
        _, qdd_full, info = dposv(mass, self._full_tau - bias, lower=0)
        if info != 0:               # cannot happen for a valid model; never integrate junk
            raise FloatingPointError('mass matrix not positive definite (dposv info %d)' % info)
        qd_free = self.qd + h * qdd_full[idx]
        # Coulomb friction as a bounded impulse: it removes up to `reach` of each joint's
        # velocity this step, and sticks the joint when that is all of it.
        m_eff = mass.diagonal()[idx]
        reach = (self.coulomb * h) / m_eff
        removed = _clip(qd_free, -reach, reach)
        qd_new = qd_free - removed
        friction = removed * m_eff / h                          # signed friction torque applied
        q_new = self.q + h * qd_new
        # Hard stops: inelastic contact at the joint limits.
        below, above = q_new < self.lower, q_new > self.upper
        if np.count_nonzero(below | above):
            q_new = _clip(q_new, self.lower, self.upper)
            qd_new[(below & (qd_new < 0)) | (above & (qd_new > 0))] = 0.0
        self.q, self.qd = q_new, qd_new
        # What each joint transmits: the drive torque less the friction it loses to.
        self.tau_transmitted = self.tau_cmd - self.damping * qd_new - friction
