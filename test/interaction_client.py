"""Interaction control as the SDK drives it, shared by the interaction test modules: the
`ros` fixture (sim-control services, the interaction command publisher, the state series,
the robot's log, the motion controller's client; no collision detected while it is up),
`fresh` (neutral, position hold, no obstacle), and the SDK-style messages and pushes."""
import threading
import time

import numpy as np
import pytest

from clients import Series, now, sync_publisher
from contract import ARM, NS
from rosharness import CollisionWatch, wait_connected

from intera_rt.robot import NEUTRAL

NEUTRAL = np.array(NEUTRAL)


@pytest.fixture(scope='module')
def ros(robot):
    import actionlib
    import rospy
    from intera_core_msgs.msg import (EndpointState, InteractionControlCommand,
                                      InteractionControlState, SEAJointState)
    from intera_motion_msgs.msg import MotionCommandAction
    from intera_rt_msgs.msg import RealtimeState
    from intera_rt_msgs.srv import AddObstacle, ApplyWrench, RemoveObstacle, SetJointPositions
    from rosgraph_msgs.msg import Log
    from sensor_msgs.msg import JointState
    out = {}
    for name, srv in (('add_obstacle', AddObstacle), ('remove_obstacle', RemoveObstacle),
                      ('apply_wrench', ApplyWrench), ('set_joint_positions', SetJointPositions)):
        rospy.wait_for_service('/intera_rt/sim/' + name, 10.0)
        out[name] = rospy.ServiceProxy('/intera_rt/sim/' + name, srv)
    out['pub'] = sync_publisher(NS + 'interaction_control_command', InteractionControlCommand,
                                tcp_nodelay=True)
    wait_connected(out['pub'], '/realtime_loop')
    out['endpoint'] = Series(NS + 'endpoint_state', EndpointState)
    out['state'] = Series(NS + 'interaction_control_state', InteractionControlState)
    out['sea'] = Series(NS + 'gravity_compensation_torques', SEAJointState)
    out['realtime'] = Series('/intera_rt/realtime_state', RealtimeState)
    out['joints'] = Series('/robot/joint_states', JointState)
    lines, lock = [], threading.Lock()

    def keep(msg):
        if msg.name == '/realtime_loop':
            with lock:
                lines.append(msg.msg)
    out['rosout'] = lines
    sub = rospy.Subscriber('/rosout', Log, keep, queue_size=1000)
    client = actionlib.SimpleActionClient('/motion/motion_command', MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30.0)), 'no /motion/motion_command server'
    out['mc'] = client
    for key in ('endpoint', 'state', 'realtime', 'joints'):
        out[key].last()
    watch = CollisionWatch()
    yield out
    watch.close()
    sub.unregister()
    for key in ('endpoint', 'state', 'sea', 'realtime', 'joints'):
        out[key].unregister()
    watch.check('interaction control in normal use')


@pytest.fixture
def fresh(ros):
    """Each test starts at neutral in position hold, no obstacle."""
    ros['pub'].publish(options(active=False))
    resp = ros['set_joint_positions'](list(ARM), list(NEUTRAL))
    assert resp.success, resp.message
    ros['realtime'].wait(lambda m: m.controller == 'hold' and not m.collision, 10.0, 'holding')
    yield ros
    ros['pub'].publish(options(active=False))
    ros['remove_obstacle']('table')


def options(active=True, K=(1300.0,) * 3 + (30.0,) * 3, max_impedance=(True,) * 6,
            mode=(1,) * 6, force=(0.0,) * 6, K_nullspace=(5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0)):
    """An InteractionControlCommand as the SDK's InteractionOptions fills it (its defaults:
    max_impedance all true, D_impedance empty, frame base at the identity)."""
    from intera_core_msgs.msg import InteractionControlCommand
    msg = InteractionControlCommand(interaction_control_active=active)
    msg.header.frame_id = 'base'
    msg.K_impedance, msg.max_impedance = list(K), list(max_impedance)
    msg.K_nullspace, msg.force_command = list(K_nullspace), list(force)
    msg.interaction_control_mode = list(mode)
    msg.interaction_frame.orientation.w = 1.0
    msg.endpoint_name = 'right_hand'
    return msg


class Republisher:
    """set_interaction_options.py -r 10: the message at 10 Hz until stopped, then one with
    interaction_control_active false (InteractionPublisher.send_position_mode_cmd)."""

    def __init__(self, pub, msg, rate=10.0):
        self._pub, self._msg, self._stop = pub, msg, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(1.0 / rate,), daemon=True)
        self._thread.start()

    def _run(self, period):
        while not self._stop.is_set():
            self._pub.publish(self._msg)
            self._stop.wait(period)

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._pub.publish(options(active=False))


def push(ros, wrench, hold, steps=10, ramp=0.4):
    """A person's push on the hand: `wrench` ramped up in `steps` increments over `ramp` s,
    held until `ramp + hold` s from now (robot time), which is returned, then let go of as
    it came, an increment every `ramp` / `steps` s. (A hand does not drop
    20 N within a millisecond; one that did would be a sudden change of torque, which
    collision detection rightly takes for an impact.)"""
    from geometry_msgs.msg import Vector3, Wrench
    t_end = now() + ramp + hold
    w = np.array(wrench, float) / steps
    for i in range(steps):
        resp = ros['apply_wrench']('right_hand', Wrench(force=Vector3(*w[:3]), torque=Vector3(*w[3:])),
                                   t_end + ramp * i / steps - now())
        assert resp.success, resp.message
        time.sleep(ramp / steps)        # the ramp's cadence, not a wait
    return t_end


def position(msg):
    p = msg.pose.position
    return np.array([p.x, p.y, p.z])


def mean_position(ros, t0, t1):
    msgs = ros['endpoint'].between(t0, t1)
    assert msgs, 'no endpoint_state between %.2f and %.2f' % (t0, t1)
    return np.mean([position(m) for m in msgs], axis=0)


def table_below(ros, gap=0.05):
    """A table whose top is `gap` below right_hand's origin (15 mm below the hand's shape)."""
    from geometry_msgs.msg import Pose
    p = position(ros['endpoint'].last())
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = p[0], p[1], p[2] - gap - 0.1
    pose.orientation.w = 1.0
    resp = ros['add_obstacle']('table', 'box', pose, [0.4, 0.4, 0.2])
    assert resp.success, resp.message
