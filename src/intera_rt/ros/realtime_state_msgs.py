"""The robot's state messages, built from one state of the realtime core (a
realtime.state.StateView): joint states, endpoint and tip states, SEA joint state, robot
assembly state, head, collision, interaction control, homing, joint limits, diagnostics
and /intera_rt/realtime_state. Pure functions of the state and the robot model; the
realtime_loop node decides when each is published.

Fields of a stage the registry may leave out (collision detection and avoidance,
interaction control) are read only when the state has that stage (StateView.has), and
then by attribute: a misspelt field raises instead of reading a default.
"""
import struct

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3, Wrench
from intera_core_msgs.msg import (EndpointState, HeadState, HomingState,
                                  InteractionControlState, JointLimits, RobotAssemblyState,
                                  SEAJointState)
from intera_rt_msgs.msg import RealtimeState, SafetyStatus
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from intera_rt.control import model_effort
from intera_rt.control.collision_avoidance import CollisionAvoidance
from intera_rt.control.collision_detection import CollisionDetection
from intera_rt.control.high_speed_scaling import HighSpeedScaling
from intera_rt.control.interaction import InteractionController
from intera_rt.control.safety_status import SafetyStatus as SafetyStatusStage
from intera_rt.model.avoidance import objects_from_mask
from intera_rt.realtime.state import CONTROLLER_NAMES, INDEX, StateView
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, HEAD_JOINTS, LOOP_PERIOD, SUPPRESS_TOPICS
from intera_rt.ros.direct import SerializedMessage, wire_string

# Joint order of /robot/joint_states (docs/interface_notes.md): head first, as the robot does.
JOINT_STATE_ORDER = HEAD_JOINTS + ARM_JOINTS
_JS_INDEX = [BOARD_JOINTS.index(n) for n in JOINT_STATE_ORDER]
_JS_COUNT = struct.pack('<I', len(JOINT_STATE_ORDER))
_JS_NAMES = _JS_COUNT + b''.join(wire_string(n) for n in JOINT_STATE_ORDER)
WRENCH_DAMPING = 1e-6                 # λ² of the endpoint wrench's damped least squares
HAS_DETECTION = StateView.has(CollisionDetection.name)
HAS_AVOIDANCE = StateView.has(CollisionAvoidance.name)
HAS_INTERACTION = StateView.has(InteractionController.name)
HAS_HIGH_SPEED = StateView.has(HighSpeedScaling.name)
HAS_SAFETY_STATUS = StateView.has(SafetyStatusStage.name)
_ZEROS7 = np.zeros(7)


def _at(names):
    """The state vector's indices of one-element fields `names`."""
    out = [INDEX[n] for n in names]
    if not all(isinstance(k, int) for k in out):
        raise ValueError('not one-element state fields: %s' % names)
    return np.array(out)


# What each message built on change reads of the state vector: its key is their bytes (the
# adapter compares them every state; a tuple of Python values cost several µs more).
_ROBOT_STATE_FIELDS = ['homed', 'enabled', 'stopped', 'error', 'low_voltage', 'estop_button',
                       'estop_source']
_ROBOT_STATE = _at(_ROBOT_STATE_FIELDS)
_REALTIME_KEY = _at(_ROBOT_STATE_FIELDS + ['controller', 'cuff']
                    + ['suppress.' + w for w in SUPPRESS_TOPICS.values()]
                    + ['collision', 'contacts', 'contact_at']
                    + (['%s.active' % CollisionAvoidance.name] if HAS_AVOIDANCE else [])
                    + (['%s.%s' % (CollisionDetection.name, f) for f in
                        ('impact', 'squish', 'hand_overwrench', 'detected_at')] if HAS_DETECTION else [])
                    + (['%s.active' % HighSpeedScaling.name] if HAS_HIGH_SPEED else []))
if HAS_SAFETY_STATUS:
    # (rounded to what is worth a new message: mm of clearance, a percent of scale, 0.1 s)
    _SAFETY_KEY = _at(['%s.%s' % (SafetyStatusStage.name, f) for f in
                       ('min_clearance', 'speed_scale', 'bypassed', 'bypass_left')]
                      + (['%s.scale' % HighSpeedScaling.name] if HAS_HIGH_SPEED else []))
    _SAFETY_ROUND = np.array([1e3, 1e2, 1.0, 10.0] + ([1e2] if HAS_HIGH_SPEED else []))
    _PAIR = INDEX['%s.pair' % SafetyStatusStage.name]
# /robot/joint_states' positions, velocities and efforts in the vector, in its joint order
_JS_VALUES = np.concatenate([np.arange(INDEX[f].start, INDEX[f].stop)[_JS_INDEX]
                             for f in ('q', 'qd', 'effort')])
_ROBOT_STATES = {}                    # wire forms of /robot/state by key (few ever occur)


def joint_state_msg(view, stamp, seq):
    """/robot/joint_states in its wire form (the most listened-to state: its latency is
    every client's): header, the constant names, then positions, velocities, efforts."""
    values = view.vector[_JS_VALUES].astype('<f8').tobytes()
    n = 8 * len(JOINT_STATE_ORDER)
    return SerializedMessage(JointState, b''.join((
        struct.pack('<IIII', seq, stamp.secs, stamp.nsecs, 0), _JS_NAMES,
        _JS_COUNT, values[:n], _JS_COUNT, values[n:2 * n], _JS_COUNT, values[2 * n:])))


def endpoint_msg(view, model, dynamics, tip, stamp):
    """EndpointState of `tip` by `model`'s kinematics. The wrench is what the joints
    transmit beyond the arm's weight by `dynamics` (an ArmDynamics carrying the robot's
    tool, as the core does)."""
    q, qd, eff = view.q[:7], view.qd[:7], view.effort[:7]
    n = model.chain(tip).n                       # the joints that move the tip
    p, quat, jac = model.arm_dynamics.tip(tip, q)
    jac = jac[:, :n]
    twist = jac @ qd[:n]
    # Links past the tip included: their weight is not external.
    tau_ext = (eff - dynamics.gravity(q))[:n]
    # τ = Jᵀ w, solved in the least-squares sense with a little damping (it stays
    # bounded at a singular wrist instead of blowing up along the lost direction).
    jjt = jac @ jac.T
    jjt.flat[::7] += WRENCH_DAMPING
    wrench = np.linalg.solve(jjt, jac @ tau_ext)
    p, quat, twist, wrench = p.tolist(), quat.tolist(), twist.tolist(), wrench.tolist()
    return EndpointState(
        header=Header(stamp=stamp, frame_id='base'), valid=True,
        pose=Pose(position=Point(*p), orientation=Quaternion(*quat)),
        twist=Twist(linear=Vector3(*twist[:3]), angular=Vector3(*twist[3:])),
        wrench=Wrench(force=Vector3(*wrench[:3]), torque=Vector3(*wrench[3:])))


def _robot_state_values(view):
    """RobotAssemblyState's fields in their order, from the state vector."""
    homed, enabled, stopped, error, low, button, source = view.vector[_ROBOT_STATE].tolist()
    return (bool(homed), not stopped and not error, bool(enabled), bool(stopped), bool(error),
            bool(low), int(button), int(source))


def robot_state(view):
    """The robot's state as /robot/state reports it, a RobotAssemblyState."""
    return RobotAssemblyState(*_robot_state_values(view))


def robot_state_msg(view):
    """/robot/state in its wire form (100 Hz, and the same few values almost always)."""
    key = view.vector[_ROBOT_STATE].tobytes()
    msg = _ROBOT_STATES.get(key)
    if msg is None:
        msg = SerializedMessage(RobotAssemblyState, struct.pack('<8B', *_robot_state_values(view)))
        if len(_ROBOT_STATES) < 256:
            _ROBOT_STATES[key] = msg
    return msg


def sea_msg(view, header, dynamics, armature):
    """SEAJointState as seed 000 defines its fields: gravity_only is the model's gravity
    torque (`dynamics`: an ArmDynamics carrying the robot's tool, as the core does) (even
    while suppressed), gravity_model_effort what was applied of the model
    terms, interaction_torque the interaction controller's torques and what the plugins
    added (collision avoidance, ...)."""
    q, qd, eff = view.q[:7], view.qd[:7], view.effort[:7]
    zeros = [0.0] * 7
    msg = SEAJointState(header=header, name=list(ARM_JOINTS),
                        actual_position=q.tolist(), actual_velocity=qd.tolist(),
                        actual_effort=eff.tolist(), interaction_torque=view.interaction_torque.tolist(),
                        hysteresis_model_effort=zeros, crosstalk_model_effort=zeros,
                        commanded_position=view.cmd_p.tolist(),
                        commanded_velocity=view.cmd_v.tolist(),
                        commanded_acceleration=view.cmd_a.tolist(),
                        commanded_effort=view.cmd_effort.tolist())
    if view.controlled:
        applied, gravity = model_effort(dynamics, armature, q, view.cmd_a,
                                        bool(view.gravity_compensation.suppressed))
        msg.gravity_model_effort, msg.gravity_only = applied.tolist(), gravity.tolist()
    else:                                  # brakes on: nothing commanded
        msg.gravity_model_effort, msg.gravity_only = zeros, dynamics.gravity(q).tolist()
    return msg


def head_state_msg(view):
    return HeadState(pan=float(view.q[7]), isTurning=bool(view.head_turning), isBlocked=False,
                     panMode=int(view.pan_mode))


def avoidance_objects(view, links):
    """The links (of `links`, in the avoidance stage's order) whose avoidance shapes
    overlap (CollisionAvoidanceState's collision_object)."""
    if links is None or not HAS_AVOIDANCE or not view.collision_avoidance.active:
        return []
    return objects_from_mask(int(view.collision_avoidance.objects), links)


def realtime_state_key(view):
    """What /intera_rt/realtime_state reports that may change, as bytes (NaN equal to
    itself)."""
    return view.vector[_REALTIME_KEY].tobytes()


def _suppressed(view):
    return tuple(what for what in SUPPRESS_TOPICS.values() if getattr(view.suppress, what))


def realtime_state_msg(view, header, loop_stamp):
    """/intera_rt/realtime_state; loop_stamp: a loop time → a ROS time (0 for none)."""
    controller = CONTROLLER_NAMES[int(view.controller)]
    msg = RealtimeState(
        header=header, robot=robot_state(view), controller=controller,
        zero_g=controller == 'zero_g', cuff=bool(view.cuff),
        suppressed=list(_suppressed(view)), collision=bool(view.collision),
        halt_remaining=view.halt_left, sim_contacts=int(view.contacts),
        sim_contact_began=loop_stamp(view.contact_at), last_detection=loop_stamp(0.0),
        collision_avoidance_torque=list(_ZEROS7), external_torque=list(_ZEROS7))
    if HAS_AVOIDANCE:
        a = view.collision_avoidance
        msg.collision_avoidance_active = bool(a.active)
        msg.collision_avoidance_torque = list(a.torque)
    if HAS_DETECTION:
        d = view.collision_detection
        msg.impact, msg.squish = bool(d.impact), bool(d.squish)
        msg.hand_overwrench = bool(d.hand_overwrench)
        msg.last_detection = loop_stamp(d.detected_at)
        msg.external_torque = list(d.external_torque)
    if HAS_HIGH_SPEED:
        h = view.high_speed_scaling
        msg.high_speed_scaling_active = bool(h.active)
        msg.high_speed_scale, msg.limb_speed = h.scale, h.speed
    else:
        msg.high_speed_scale = 1.0
    return msg


def safety_status_key(view, links):
    """What /intera_rt/safety_status reports, rounded to what is worth a new message (mm of
    clearance, a percent of scale, 0.1 s of bypass left; the closest pair's links); None
    without the stage."""
    if not HAS_SAFETY_STATUS:
        return None
    v = view.vector
    # (np.rint: np.round's result, without its Python wrapper)
    return np.rint(v[_SAFETY_KEY] * _SAFETY_ROUND).tobytes(), v[_PAIR].tobytes(), links


def closest_pair(view, links):
    """The links of the pair safety_status found closest ([] before its first look, and
    for a state the core computed with other shapes than `links`: a tool just taken off)."""
    a, b = (int(i) for i in view.safety_status.pair)
    if links is None or a < 0 or b < 0 or max(a, b) >= len(links):
        return []
    return [links[a], links[b]]


def safety_status_msg(view, header, links, velocity_scaling):
    """/intera_rt/safety_status; links: the armnav shapes' links (shape_links)."""
    st = view.safety_status
    return SafetyStatus(header=header, min_clearance=st.min_clearance,
                        closest_pair=closest_pair(view, links), scale=st.speed_scale,
                        high_speed_scale=view.high_speed_scaling.scale if HAS_HIGH_SPEED else 1.0,
                        velocity_scaling=bool(velocity_scaling), bypassed=bool(st.bypassed),
                        bypass_remaining=st.bypass_left)


def interaction_state_msg(view, header):
    """InteractionControlState: whether interaction control is active, and the parameters
    in force (the latest applied: after caps, max_impedance resolved for the pose,
    damping defaulted; stiffness and damping 0 on axes a force mode leaves them out)."""
    i = view.interaction
    flags = i.flags
    return InteractionControlState(
        header=header, interaction_control_active=CONTROLLER_NAMES[int(view.controller)] == 'interaction',
        K_impedance=i.K_impedance.tolist(), D_impedance=i.D_impedance.tolist(),
        endpoint_force_command=i.force_command.tolist(), endpoint_name='right_hand',
        in_endpoint_frame=bool(flags[0]), disable_damping_in_force_control=bool(flags[1]),
        disable_reference_resetting=bool(flags[2]), rotations_for_constrained_zeroG=bool(flags[3]))


def homing_key(view):
    return view.homing.tobytes()


def homing_msg(view):
    return HomingState(name=list(ARM_JOINTS), state=[int(s) for s in view.homing])


def joint_limits_msg(model):
    names = list(ARM_JOINTS + HEAD_JOINTS)
    lim = model.limit_arrays(names)
    return JointLimits(joint_names=names, position_lower=lim['lower'].tolist(),
                       position_upper=lim['upper'].tolist(), velocity=lim['velocity'].tolist(),
                       accel=lim['accel'].tolist(), effort=lim['effort'].tolist())


def diagnostics_msg(stats, stamp):
    """/diagnostics from the core's tick statistics (realtime.pipe.Stats)."""
    summary = dict(stats)
    timeouts = summary.pop('command_timeouts', 0)
    level = DiagnosticStatus.OK if not summary.get('overruns') else DiagnosticStatus.WARN
    status = DiagnosticStatus(level=level, name='Realtime Control Loop', hardware_id='sawyer',
                              message='%d overruns' % summary.get('overruns', 0))
    status.values = [KeyValue(k, '%.1f' % v if isinstance(v, float) else str(v))
                     for k, v in summary.items()]
    status.values.append(KeyValue('rate_hz', '%.0f' % (1.0 / LOOP_PERIOD)))
    status.values.append(KeyValue('command_timeouts', str(timeouts)))
    return DiagnosticArray(header=Header(stamp=stamp), status=[status])
