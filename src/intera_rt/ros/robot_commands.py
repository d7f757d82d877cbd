"""The robot's command messages as the typed commands (control.commands) the realtime core
applies: field for field, arrays as tuples, nothing validated here (the core validates
and says what it refused). Pure functions of the message, for the realtime_loop node.
"""
import json

from intera_core_msgs.msg import HeadPanCommand

from intera_rt.control import commands as cmds

# Zero-G inputs: the cuff's grasp, and the navigators' circle buttons (seed 000).
CUFF_SIGNALS = ('right_cuff',)
NAVIGATOR_SIGNALS = ('right_button_circle', 'head_button_circle')


def joint_command(msg, loop_time_offset):
    """intera_core_msgs/JointCommand; its header.stamp in loop time (ROS time minus
    `loop_time_offset`; a zero stamp: None, now)."""
    stamp = msg.header.stamp
    t_cmd = None if stamp.is_zero() else stamp.to_sec() - loop_time_offset
    return cmds.JointCommand(mode=msg.mode, names=tuple(msg.names), position=tuple(msg.position),
                             velocity=tuple(msg.velocity), acceleration=tuple(msg.acceleration),
                             effort=tuple(msg.effort), stamp=t_cmd)


def interaction_command(msg):
    """intera_core_msgs/InteractionControlCommand (control.interaction validates it)."""
    p, o = msg.interaction_frame.position, msg.interaction_frame.orientation
    return cmds.InteractionCommand(
        interaction_control_active=bool(msg.interaction_control_active),
        # uint8[]: bytes on the wire
        interaction_control_mode=tuple(int(m) for m in msg.interaction_control_mode),
        K_impedance=tuple(msg.K_impedance), max_impedance=tuple(bool(b) for b in msg.max_impedance),
        D_impedance=tuple(msg.D_impedance), K_nullspace=tuple(msg.K_nullspace),
        force_command=tuple(msg.force_command),
        frame_position=(p.x, p.y, p.z), frame_orientation=(o.x, o.y, o.z, o.w),
        endpoint_name=msg.endpoint_name, in_endpoint_frame=bool(msg.in_endpoint_frame),
        disable_damping_in_force_control=bool(msg.disable_damping_in_force_control),
        disable_reference_resetting=bool(msg.disable_reference_resetting),
        rotations_for_constrained_zeroG=bool(msg.rotations_for_constrained_zeroG))


def head_command(msg):
    """intera_core_msgs/HeadPanCommand (pan_mode NO_MODE_CHANGE: None)."""
    return cmds.HeadCommand(
        target=msg.target, speed_ratio=msg.speed_ratio,
        pan_mode=None if msg.pan_mode == HeadPanCommand.NO_MODE_CHANGE else msg.pan_mode)


def homing_command(msg):
    """intera_core_msgs/HomingCommand."""
    return cmds.HomingCommand(names=tuple(msg.name), commands=tuple(msg.command))


def zero_g_pressed(msg, signals):
    """An IODeviceStatus: is any of `signals` nonzero (asking for zero-G)?"""
    return any(signal_value(sig) not in (None, 0, False) for sig in msg.signals
               if sig.name in signals)


def signal_value(signal):
    """An IO signal's value: the first element of its JSON `data` array (None if empty or
    unreadable)."""
    try:
        data = json.loads(signal.data)
    except (TypeError, ValueError):
        return None
    return data[0] if isinstance(data, list) and data else None
