"""The in-process plant's test scene (boards.embedded, boards.mujoco), no ROS: the robot
model, the arm at neutral in the boards' order, a wall across the hand's path, and a PD +
gravity controller ticked at 1 kHz like the realtime loop (model.dynamics.ArmDynamics for
gravity). Geometry: at neutral the hand's collision cylinder (radius 0.035 m, axis
vertical, z 0.181..0.211 m) sits on a circle of radius RHO about right_j0's axis (the z
axis), at angle PHI0; turning right_j0 positive swings it along that circle. The obstacles
in its path stay below z = 0.216 m, out of reach of the next shape up (right_l6, from
z 0.225 m).
"""
import math

import numpy as np

from intera_rt.model import RobotModel
from intera_rt.robot import NEUTRAL

DT = 0.001
Q0 = np.r_[NEUTRAL, 0.0]                       # boards order: right_j0..6, head_pan
KP = np.array([120.0, 800.0, 600.0, 600.0, 100.0, 100.0, 30.0, 10.0])
KD = np.array([15.0, 50.0, 30.0, 30.0, 6.0, 6.0, 1.5, 0.5])
HAND_RADIUS = 0.035                            # right_hand's collision cylinder (urdf/sawyer.urdf)
J0_TARGET = 0.45                               # rad: past every obstacle below


def radial(phi):
    return np.array([math.cos(phi), math.sin(phi), 0.0])


def tangent(phi):
    """The hand's direction of travel at angle phi when right_j0 turns positive."""
    return np.array([-math.sin(phi), math.cos(phi), 0.0])


def z_turn(phi, scale=1.0):
    """Quaternion (x, y, z, w) of a turn by phi about z, times `scale`."""
    return (0.0, 0.0, scale * math.sin(phi / 2.0), scale * math.cos(phi / 2.0))


MODEL = RobotModel.from_file()
_HAND0 = MODEL.arm_dynamics.tip('right_hand', NEUTRAL)[0]
RHO, PHI0 = math.hypot(_HAND0[0], _HAND0[1]), math.atan2(_HAND0[1], _HAND0[0])
HAND_Z = _HAND0[2] - 0.02                      # the cylinder's centre, 2 cm below the frame

# A wall across the hand's path: its face is the vertical plane through the z axis at angle
# PHI_WALL (the wall beyond it, 0.1 m thick, 0.2 m along the radius, z 0.06..0.216: the whole
# hand cylinder, not right_l6), so the hand meets it head on. Placed with a non-unit
# quaternion (2 × the unit one).
PHI_WALL = PHI0 + 0.25
WALL_NORMAL = -tangent(PHI_WALL)               # out of the wall, towards the oncoming hand
WALL = dict(shape='box', position=RHO * radial(PHI_WALL) + 0.05 * tangent(PHI_WALL) + (0, 0, 0.138),
            quaternion=z_turn(PHI_WALL, 2.0), size=(0.2, 0.1, 0.156))



def ramp_j0(t, target=J0_TARGET, rate=0.5):
    """Reference: neutral, with right_j0 turning at `rate` rad/s up to `target`."""
    q = Q0.copy()
    q[0] = min(target, rate * t)
    return q


def run(model, boards, seconds, ref=ramp_j0, t0=0.0, kp=KP, kd=KD):
    """Tick the plant under PD + gravity control towards ref(t) (callable or array).
    Returns per-tick arrays q, qd, effort (N×8) and the contacts after each tick."""
    dyn = model.arm_dynamics
    n = int(round(seconds / DT))
    qs, qds, efforts, contacts = np.empty((n, 8)), np.empty((n, 8)), np.empty((n, 8)), []
    for i in range(n):
        r = boards.read()
        q_ref = ref(t0 + i * DT) if callable(ref) else ref
        tau = kp * (q_ref - r.position) - kd * r.velocity
        tau[:7] += dyn.gravity(r.position[:7])
        boards.write(tau)
        boards.advance(DT)
        r = boards.read()
        qs[i], qds[i], efforts[i] = r.position, r.velocity, r.effort
        contacts.append(boards.contacts())
    return qs, qds, efforts, contacts


def hand_position(model, q):
    return model.arm_dynamics.tip('right_hand', q[:7])[0]


def torque_of(model, q, contact):
    """Joint torques (right_j0..6) of the contact's force at its point: J_pointᵀ f, from the
    link's Jacobian (independent of the plant's contact code)."""
    origin, _, jac = model.arm_dynamics.tip(contact.link, q[:7])
    return jac[:3].T @ contact.force + jac[3:].T @ np.cross(contact.point - origin, contact.force)

