"""Picking benchmark on MuJoCo (issue 21 item 7): what the world and the gripper's fingers
cost, and how often a pick-and-place succeeds.

plant       the MuJoCo plant's step (process CPU µs per 1 ms advance; no ROS): the arm with
            the gripper and a table; with 10 blocks resting on the table in contact (five
            touching in a row, five stacked on them), with MuJoCo's sleep and without it;
            with one block squeezed in the fingers.
lockstep    the robot at --sim-time --speed max on --backend mujoco: sim seconds per wall
            second of the bare arm (no gripper, no world), then, in another robot of the
            same run, with the gripper and the demo's table, then with 10 blocks spawned on
            it through /gazebo/spawn_sdf_model and resting; beside each the load average
            and each of the robot's processes' CPU per tick (µs: the core's process, each
            node), which the load disturbs far less than the speed.
pick_place  `trials` pick-and-places of a 4 cm block at random poses on the table (the
            realtime core in position mode, IK on right_gripper_tip streamed at 100 Hz as
            the SDK's demo does, the gripper closed at 20 N): approach, descend, close,
            lift 20 cm, carry 10-25 cm, lower, open, retreat. Success: the block rests
            upright within 1 cm of the place target. Every failure is counted with its
            kind (ik, not_gripped, dropped, misplaced, fault) and its numbers; the robot's
            collision detections are counted too (a pick is normal use: none expected).

    scripts/bench --only picking
"""
import math
import os
import time

import mujoco
import numpy as np

from intera_rt.bench import in_own_process
from intera_rt.boards.base import GripperCommand
from intera_rt.boards.mujoco_boards import gripper_fragment
from intera_rt.control import commands as cmds
from intera_rt.io.gripper import DEFAULT_SPEED
from intera_rt.model import RobotModel
from intera_rt.model.ik import IKSolver
from intera_rt.model.urdf_fragments import FragmentManager
from intera_rt.robot import ARM_JOINTS, NEUTRAL
from intera_rt.world import Pose, parse_model_xml

DT = 0.001
TABLE_X = 0.75                 # m ahead of the base: the table's centre (the demo's kind)
TABLE_TOP = 0.75               # m above the floor
BLOCK = 0.04                   # m: the blocks' edge
HOVER = 0.15                   # m above the block's centre: where the tip approaches from
GRIP_FORCE = 20.0              # N: the device's default holding force
OPEN = 0.041667                # m: the fingers fully open
STREAM = 0.01                  # s: IK streaming period (100 Hz)
ROBOT_BASE_Z = 0.93            # m: the robot's base above the world (sawyer_world.launch)


def table_sdf():
    """The demo's kind of table: a 1.0 × 0.8 m top 0.75 m up on four legs, static."""
    legs = ''.join(
        '<link name="leg_%d"><pose>%g %g 0.355 0 0 0</pose><collision name="c"><geometry><cylinder>'
        '<radius>0.03</radius><length>0.71</length></cylinder></geometry></collision></link>'
        '<joint name="leg_%d_joint" type="fixed"><parent>top</parent><child>leg_%d</child></joint>'
        % (k, sx * 0.45, sy * 0.35, k, k) for k, (sx, sy) in enumerate(((1, 1), (-1, 1), (-1, -1), (1, -1))))
    return ('<sdf version="1.6"><model name="table"><static>true</static><link name="top">'
            '<pose>0 0 0.73 0 0 0</pose><collision name="c"><geometry><box><size>1.0 0.8 0.04</size>'
            '</box></geometry></collision></link>%s</model></sdf>' % legs)


def block_sdf(name='block', size=BLOCK, mass=0.1, mu=1.0):
    i = mass * size * size / 6.0
    return ('<sdf version="1.6"><model name="%s"><link name="link"><inertial><mass>%g</mass>'
            '<inertia><ixx>%g</ixx><iyy>%g</iyy><izz>%g</izz></inertia></inertial>'
            '<collision name="c"><geometry><box><size>%g %g %g</size></box></geometry>'
            '<surface><friction><ode><mu>%g</mu><mu2>%g</mu2></ode></friction></surface>'
            '</collision></link></model></sdf>' % (name, mass, i, i, i, size, size, size, mu, mu))


def gripper_model(model=None):
    """The robot's model with the electric gripper grafted, as --gripper makes it."""
    model = model or RobotModel.from_file()
    return FragmentManager(model.urdf_xml).receive(
        0, 'right_hand', 'right_gripper_base', gripper_fragment()).model


def down(yaw=0.0):
    """right_gripper_tip pointing at the floor, turned `yaw` about the vertical."""
    return Pose.from_xyz_rpy((0.0, 0.0, 0.0, 0.0, math.pi, yaw)).quaternion


class Picker:
    """The realtime core (position mode) on the MuJoCo plant with the electric gripper and
    the demo's table on the floor: IK on right_gripper_tip streamed at 100 Hz along
    straight lines, as an SDK script does. `top`: the table top's height in base;
    `detections`: the collision detections (impact, squish, over-wrench) so far."""

    def __init__(self, model=None, start=(0.65, 0.0, 0.15)):
        from intera_rt.realtime.core import RealtimeCore
        self.model = model or gripper_model()
        self.ik = IKSolver(self.model)
        self.yaw = 0.0
        q = self.solve(start, np.array(NEUTRAL))
        if q is None:
            raise RuntimeError('no IK solution for the start %s' % (start,))
        self.core = RealtimeCore(self.model, 'mujoco', q_arm=list(q))
        self.boards = self.core.boards
        m = self.boards.m
        floor = m.geom_pos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, 'floor'), 2]
        self.boards.spawn_model(parse_model_xml(table_sdf()), Pose((TABLE_X, 0.0, floor)))
        self.top = floor + TABLE_TOP
        self.q = q
        self.detection = next(m for m in self.core.monitors if m.name == 'collision_detection')
        self.detections = 0

    def close(self):
        self.core.close()

    def solve(self, position, current):
        r = self.ik.solve('right_gripper_tip', position, down(self.yaw), current)
        return r.q if r.ok else None

    def tick(self, seconds):
        for i in range(int(round(seconds / DT))):
            if i % 10 == 0:
                self.core.apply(cmds.JointCommand(mode=1, names=ARM_JOINTS, position=tuple(self.q)))
            detected = self.detection.detected_at
            self.core.tick()
            if self.detection.detected_at != detected and not math.isnan(self.detection.detected_at):
                self.detections += 1

    def tip(self):
        return np.array(self.model.tip_pose('right_gripper_tip', self.boards.read().position[:7])[0])

    def move_to(self, position, seconds=1.0, settle=0.3):
        """Stream IK solutions along the line from the tip to `position` for `seconds`, then
        hold `settle` s. False when a waypoint has no IK solution (the arm stops there)."""
        start, goal = self.tip(), np.asarray(position, float)
        n = max(1, int(round(seconds / STREAM)))
        for k in range(1, n + 1):
            q = self.solve(start + (goal - start) * k / n, self.q)
            if q is None:
                return False
            self.q = q
            self.tick(STREAM)
        self.tick(settle)
        return True

    def grip(self, separation, force=GRIP_FORCE, speed=DEFAULT_SPEED, seconds=0.4):
        self.boards.set_gripper(GripperCommand(separation, speed, force))
        self.tick(seconds)
        return self.boards.gripper_state()

    def body(self, model):
        for s in self.boards.body_states():
            if s.model == model:
                return s
        raise KeyError(model)


# --- plant ---------------------------------------------------------------------------------
def _cpu_us(boards, ticks):
    t0 = time.process_time()
    for _ in range(ticks):
        boards.advance(DT)
    return 1e6 * (time.process_time() - t0) / ticks


def _ten_blocks(boards, top):
    for k in range(10):
        boards.spawn_model(parse_model_xml(block_sdf('b%d' % k)),
                           Pose((0.55 + 0.0405 * (k % 5), -0.2, top + BLOCK / 2 + BLOCK * (k // 5))))


def measure_plant(ticks):
    from intera_rt.boards import make_boards
    out = {}
    for label, sleep in (('sleep', True), ('no_sleep', False)):
        boards = make_boards('mujoco', RobotModel.from_file(), {'gripper': True})
        boards.reset_pose(np.r_[NEUTRAL, 0.0])
        m = boards.m
        floor = m.geom_pos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, 'floor'), 2]
        boards.spawn_model(parse_model_xml(table_sdf()), Pose((TABLE_X, 0.0, floor)))
        top = floor + TABLE_TOP
        if label == 'sleep':
            out['gripper_table_us'] = _cpu_us(boards, ticks)
        _ten_blocks(boards, top)
        if not sleep:
            boards.m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_SLEEP)
        _cpu_us(boards, 500)                            # settle
        out['ten_blocks_%s_us' % label] = _cpu_us(boards, ticks)
        out['ten_blocks_%s_contacts' % label] = int(boards.d.ncon)
    picker = Picker()
    picker.boards.spawn_model(parse_model_xml(block_sdf()), Pose((0.65, 0.0, picker.top + BLOCK / 2)))
    picker.move_to((0.65, 0.0, picker.top + BLOCK / 2))
    picker.grip(0.0)
    out['one_block_held_us'] = _cpu_us(picker.boards, ticks)
    out['held'] = picker.boards.gripper_state().gripping
    picker.close()
    return out


# --- lockstep through ROS ------------------------------------------------------------------
def _wait_ticking(timeout=120.0):
    """Until the robot's loop ticks (its first joint state): under sim time it starts once
    every node takes its states, and a world request before that waits for the loop."""
    import rospy
    from sensor_msgs.msg import JointState

    from intera_rt.bench.realtime_measures import _init_node
    _init_node()
    rospy.wait_for_message('/robot/joint_states', JointState, timeout)


LOCKSTEP_ARGS = ['--sim-time', '--speed', 'max', '--backend', 'mujoco']


def _speed(duration):
    """Lockstep's speed over `duration` s, the load average, and each of the robot's
    processes' CPU per 1 ms tick (µs): where a tick's time goes beyond the core."""
    from intera_rt.bench.realtime_measures import measure_lockstep as speed
    out = speed(duration)
    # (CPU s per sim s = ms per 1 ms tick)
    out['cpu_us_per_tick'] = {k: round(1e3 * v, 1) for k, v in sorted(out['cpu_per_sim_s'].items())
                              if v > 0.0}
    return dict(out, load_avg=list(os.getloadavg()))


def measure_lockstep_bare(out_dir, duration):
    """The bare arm's lockstep speed on MuJoCo (no gripper, no world), for comparison."""
    from intera_rt.bench import own_robot
    log = os.path.join(out_dir, 'picking_lockstep_bare.log')
    with own_robot(LOCKSTEP_ARGS, log, 120.0):
        _wait_ticking()
        return dict(_speed(duration), args=LOCKSTEP_ARGS)


def measure_lockstep(out_dir, duration):
    import rospy
    from gazebo_msgs.srv import SpawnModel
    from geometry_msgs.msg import Pose as PoseMsg

    from intera_rt.bench import own_robot
    args = LOCKSTEP_ARGS + ['--backend-option', 'gripper=true']
    out = {'args': args}
    with own_robot(args, os.path.join(out_dir, 'picking_lockstep.log'), 120.0):
        _wait_ticking()
        rospy.wait_for_service('/gazebo/spawn_sdf_model', 30.0)
        spawn = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel)

        def put(name, xml, x, y, z):
            p = PoseMsg()
            p.position.x, p.position.y, p.position.z = x, y, z
            p.orientation.w = 1.0
            r = spawn(name, xml, '', p, 'world')
            if not r.success:
                raise RuntimeError('spawning %s: %s' % (name, r.status_message))
        put('table', table_sdf(), TABLE_X, 0.0, 0.0)
        out['gripper_table'] = _speed(duration)
        for k in range(10):
            put('b%d' % k, block_sdf('b%d' % k), 0.55 + 0.0405 * (k % 5), -0.2,
                TABLE_TOP + BLOCK / 2 + BLOCK * (k // 5))
        time.sleep(1.0)                                 # resting (sleeping, to MuJoCo)
        out['ten_blocks'] = _speed(duration)
        from gazebo_msgs.srv import GetModelState
        get = rospy.ServiceProxy('/gazebo/get_model_state', GetModelState)
        zs = [get('b%d' % k, 'world').pose.position.z for k in range(10)]
        out['blocks_resting'] = all(abs(z - (TABLE_TOP + BLOCK / 2 + BLOCK * (k // 5))) < 0.01
                                    for k, z in enumerate(zs))
    return out


# --- pick and place ----------------------------------------------------------------------
def _trial_poses(rng):
    """A trial's random block pose on the table (x, y, yaw) and its place point (px, py),
    10-25 cm away, both within the reachable patch."""
    x, y, yaw = rng.uniform(0.55, 0.80), rng.uniform(-0.25, 0.25), rng.uniform(-math.pi / 4, math.pi / 4)
    for _ in range(100):
        angle, dist = rng.uniform(0, 2 * math.pi), rng.uniform(0.10, 0.25)
        px, py = x + dist * math.cos(angle), y + dist * math.sin(angle)
        if 0.55 <= px <= 0.80 and -0.25 <= py <= 0.25:
            break
    return x, y, yaw, px, py


def _trial(picker, rng, k):
    """One pick-and-place at a random pose; (ok, failure kind or '', details)."""
    top = picker.top
    x, y, yaw, px, py = _trial_poses(rng)
    name = 'block%d' % k
    centre = top + BLOCK / 2
    picker.boards.spawn_model(parse_model_xml(block_sdf(name)),
                              Pose.from_xyz_rpy((x, y, centre, 0.0, 0.0, yaw)))
    picker.tick(0.2)
    picker.yaw = yaw
    detail = {'pick': (round(x, 3), round(y, 3), round(yaw, 3)), 'place': (round(px, 3), round(py, 3))}
    try:
        steps = [((x, y, centre + HOVER), 1.5), ((x, y, centre), 1.0)]
        for goal, seconds in steps:
            if not picker.move_to(goal, seconds):
                return False, 'ik', dict(detail, at=goal)
        grip = picker.grip(0.0)
        if grip.gripping != name:
            return False, 'not_gripped', dict(detail, separation=grip.separation)
        for goal, seconds in (((x, y, centre + 0.20), 1.0), ((px, py, centre + 0.20), 1.5),
                              ((px, py, centre + 0.002), 1.0)):
            if not picker.move_to(goal, seconds):
                return False, 'ik', dict(detail, at=goal)
            if picker.boards.gripper_state().gripping != name:
                return False, 'dropped', dict(detail, at=goal, block=picker.body(name).pose.position)
        picker.grip(OPEN)
        picker.move_to((px, py, centre + HOVER), 0.5)
        picker.tick(0.5)
        s = picker.body(name)
        off = math.hypot(s.pose.position[0] - px, s.pose.position[1] - py)
        tilt = 2 * math.acos(min(1.0, math.hypot(s.pose.quaternion[2], s.pose.quaternion[3])))
        detail.update(off=round(off, 4), z=round(s.pose.position[2] - centre, 4), tilt=round(tilt, 4))
        if off > 0.01 or abs(s.pose.position[2] - centre) > 0.002 or tilt > 0.05:
            return False, 'misplaced', detail
        if picker.core.state.error:
            return False, 'fault', detail
        return True, '', detail
    finally:
        picker.boards.delete_model(name)


def measure_pick_place(trials, seed=21):
    rng = np.random.default_rng(seed)
    picker = Picker()
    results = []
    t0 = time.monotonic()
    for k in range(trials):
        before = picker.detections
        ok, kind, detail = _trial(picker, rng, k)
        results.append({'ok': ok, 'failure': kind, 'detections': picker.detections - before, **detail})
        if not ok and picker.core.state.error:          # a fault: start again from a fresh robot
            picker.close()
            picker = Picker()
    picker.close()
    failures = [r for r in results if not r['ok']]
    kinds = {}
    for r in failures:
        kinds[r['failure']] = kinds.get(r['failure'], 0) + 1
    return {'trials': trials, 'succeeded': trials - len(failures),
            'success_rate': (trials - len(failures)) / trials, 'failures_by_kind': kinds,
            'failures': failures, 'wall_s': time.monotonic() - t0,
            'detections': sum(r['detections'] for r in results),
            'trials_with_detections': sum(1 for r in results if r['detections']),
            'offsets_m': {'max': max((r.get('off', 0.0) for r in results), default=0.0)},
            'block_m': BLOCK, 'seed': seed}


# --- pick and place through ROS ----------------------------------------------------------
class _SdkClient:
    """What an SDK pick-and-place script does on the wire: IK on right_gripper_tip, joint
    positions streamed at 100 Hz (intera_interface.Limb), the gripper's position_m signal
    (intera_interface.Gripper), /gazebo/ services for the block; `detections` counts the
    collision stops collision_detection_state reports (its rising edges)."""
    GRIPPER = '/io/end_effector/right_gripper/'
    KIN = '/ExternalTools/right/PositionKinematicsNode/IKService'

    def __init__(self):
        import threading

        import rospy
        from gazebo_msgs.srv import DeleteModel, GetModelState, SpawnModel
        from intera_core_msgs.msg import (CollisionDetectionState, IOComponentCommand, IODeviceStatus,
                                          JointCommand)
        from intera_core_msgs.srv import SolvePositionIK
        from sensor_msgs.msg import JointState
        for name in ('/gazebo/spawn_sdf_model', '/gazebo/get_model_state', self.KIN):
            rospy.wait_for_service(name, 30.0)
        self.spawn = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel)
        self.get = rospy.ServiceProxy('/gazebo/get_model_state', GetModelState)
        self.delete = rospy.ServiceProxy('/gazebo/delete_model', DeleteModel)
        self.ik = rospy.ServiceProxy(self.KIN, SolvePositionIK)
        self._lock = threading.Lock()
        self.q, self.io = None, None
        self.detections, self._colliding = 0, False
        rospy.Subscriber('/robot/limb/right/collision_detection_state', CollisionDetectionState,
                         self._on_detection, queue_size=10)
        rospy.Subscriber('/robot/joint_states', JointState, self._on_joints, queue_size=1)
        rospy.Subscriber(self.GRIPPER + 'state', IODeviceStatus, self._on_io, queue_size=1)
        self.pub = rospy.Publisher('/robot/limb/right/joint_command', JointCommand, queue_size=1,
                                   tcp_nodelay=True)
        self.pub_io = rospy.Publisher(self.GRIPPER + 'command', IOComponentCommand, queue_size=10)
        self._cmd = JointCommand(mode=JointCommand.POSITION_MODE, names=list(ARM_JOINTS))
        self.model = gripper_model()           # FK of the tip, to say where it landed
        deadline = time.monotonic() + 60.0
        while (self.q is None or self.io is None or self.pub.get_num_connections() == 0
               or 'right_gripper_tip' not in rospy.get_param('/robot_description', '')):
            if time.monotonic() > deadline:
                raise RuntimeError('the robot with its gripper did not come up')
            time.sleep(0.05)

    def _on_joints(self, msg):
        if ARM_JOINTS[0] in msg.name:
            self.q = np.array([msg.position[msg.name.index(n)] for n in ARM_JOINTS])

    def _on_detection(self, msg):
        if msg.collision_state and not self._colliding:
            self.detections += 1
        self._colliding = msg.collision_state

    def _on_io(self, msg):
        import json
        with self._lock:
            self.io = {e.name: (json.loads(e.data) or [None])[0] for e in msg.signals}

    def signal(self, name):
        with self._lock:
            return self.io.get(name)

    def set_position(self, value):
        import json

        import rospy
        from intera_core_msgs.msg import IOComponentCommand
        msg = IOComponentCommand(time=rospy.Time.now(), op='set', args=json.dumps(
            {'signals': {'position_m': {'format': {'type': 'float'}, 'data': [value]}}}))
        for _ in range(3):                     # the SDK republishes until acknowledged
            self.pub_io.publish(msg)
            time.sleep(0.1)

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def solve(self, world_xyz, yaw, seed):
        from geometry_msgs.msg import PoseStamped
        from intera_core_msgs.srv import SolvePositionIKRequest
        from sensor_msgs.msg import JointState
        p = PoseStamped()
        p.header.frame_id = 'base'
        x, y, z = world_xyz
        p.pose.position.x, p.pose.position.y, p.pose.position.z = x, y, z - ROBOT_BASE_Z
        q = down(yaw)
        p.pose.orientation.x, p.pose.orientation.y, p.pose.orientation.z, p.pose.orientation.w = q
        r = self.ik(SolvePositionIKRequest(pose_stamp=[p], tip_names=['right_gripper_tip'],
                                           seed_angles=[JointState(name=list(ARM_JOINTS),
                                                                   position=list(seed))]))
        return np.array(r.joints[0].position) if r.result_type[0] > 0 else None

    def move(self, start, goal, yaw, seconds):
        """IK along the line (world), streamed at 100 Hz; then the last until there."""
        start, goal = np.asarray(start, float), np.asarray(goal, float)
        q, path = self.q, []
        for k in range(1, max(1, int(seconds / STREAM)) + 1):
            q = self.solve(start + (goal - start) * k / max(1, int(seconds / STREAM)), yaw, q)
            if q is None:
                return False
            path.append(q)
        t_next = time.monotonic()
        for q in path + [path[-1]] * 300:
            self._cmd.position = list(q)
            self.pub.publish(self._cmd)
            if q is path[-1] and np.abs(self.q - q).max() < 2e-3:
                break
            t_next += STREAM
            time.sleep(max(0.0, t_next - time.monotonic()))
        return True

    def block(self, name):
        r = self.get(name, 'world')
        p, t = r.pose.position, r.twist
        return (np.array((p.x, p.y, p.z)), (r.pose.orientation.z, r.pose.orientation.w),
                max(abs(v) for v in (t.linear.x, t.linear.y, t.linear.z)))


def _ros_trial(c, rng, k):
    from geometry_msgs.msg import Pose as PoseMsg
    top = TABLE_TOP
    x, y, yaw, px, py = _trial_poses(rng)
    name = 'block%d' % k
    centre = top + BLOCK / 2
    p = PoseMsg()
    p.position.x, p.position.y, p.position.z = x, y, centre + 0.002
    p.orientation.z, p.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    detail = {'pick': (round(x, 3), round(y, 3), round(yaw, 3)), 'place': (round(px, 3), round(py, 3))}
    r = c.spawn(name, block_sdf(name), '', p, 'world')
    if not r.success:
        return False, 'spawn', dict(detail, message=r.status_message)
    try:
        c.wait(lambda: c.block(name)[2] < 1e-6, 5.0)
        tip = c.solve((x, y, centre + HOVER), yaw, c.q)
        here = np.array((x, y, centre + HOVER))
        if tip is None or not c.move(here, here, yaw, 2.0) or not c.move(here, (x, y, centre), yaw, 1.0):
            return False, 'ik', detail
        landed = np.array(c.model.tip_pose('right_gripper_tip', list(c.q))[0]) + (0.0, 0.0, ROBOT_BASE_Z)
        detail['landed_mm'] = [round(1e3 * v, 2) for v in landed - c.block(name)[0]]   # tip - block
        c.set_position(0.0)
        if not c.wait(lambda: c.signal('is_gripping') is True, 5.0):
            return False, 'not_gripped', dict(detail, position=c.signal('position_response_m'))
        for a, b, secs in (((x, y, centre), (x, y, centre + 0.2), 1.0),
                           ((x, y, centre + 0.2), (px, py, centre + 0.2), 1.5),
                           ((px, py, centre + 0.2), (px, py, centre + 0.002), 1.0)):
            if not c.move(a, b, yaw, secs):
                return False, 'ik', dict(detail, at=b)
            if c.signal('is_gripping') is not True:
                return False, 'dropped', dict(detail, at=b, block=c.block(name)[0].tolist())
        held = c.block(name)[0]
        c.set_position(OPEN)
        c.wait(lambda: (c.signal('position_response_m') or 0.0) > OPEN - 0.002, 5.0)
        c.move((px, py, centre + 0.002), (px, py, centre + HOVER), yaw, 0.5)
        c.wait(lambda: c.block(name)[2] < 1e-6, 5.0)
        at, (qz, qw), _ = c.block(name)
        off = math.hypot(at[0] - px, at[1] - py)
        detail.update(off=round(off, 4), z=round(at[2] - centre, 4),
                      held_at=[round(v, 4) for v in held], rests_at=[round(v, 4) for v in at])
        if off > 0.01 or abs(at[2] - centre) > 0.002:
            return False, 'misplaced', detail
        return True, '', detail
    finally:
        c.delete(name)


def measure_pick_place_ros(out_dir, trials, seed=21):
    """`trials` pick-and-places through ROS on MuJoCo at real time (see _SdkClient)."""
    import rospy
    from gazebo_msgs.srv import SpawnModel
    from geometry_msgs.msg import Pose as PoseMsg

    from intera_rt.bench import own_robot
    args = ['--backend', 'mujoco', '--gripper']
    rng = np.random.default_rng(seed)
    results = []
    t0 = time.monotonic()
    with own_robot(args, os.path.join(out_dir, 'picking_ros.log'), 120.0):
        _wait_ticking()
        rospy.wait_for_service('/gazebo/spawn_sdf_model', 30.0)
        c = _SdkClient()                       # the robot up, with the gripper in its model
        p = PoseMsg()
        p.position.x, p.orientation.w = TABLE_X, 1.0
        r = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel)('table', table_sdf(), '', p, 'world')
        if not r.success:
            raise RuntimeError('spawning the table: %s' % r.status_message)
        for k in range(trials):
            before = c.detections
            ok, kind, detail = _ros_trial(c, rng, k)
            results.append({'ok': ok, 'failure': kind, 'detections': c.detections - before, **detail})
    failures = [r for r in results if not r['ok']]
    kinds = {}
    for r in failures:
        kinds[r['failure']] = kinds.get(r['failure'], 0) + 1
    return {'trials': trials, 'succeeded': trials - len(failures),
            'success_rate': (trials - len(failures)) / trials, 'failures_by_kind': kinds,
            'failures': failures, 'wall_s': time.monotonic() - t0, 'args': args,
            'detections': sum(r['detections'] for r in results),
            'trials_with_detections': sum(1 for r in results if r['detections']),
            'offsets_m': {'max': max((r.get('off', 0.0) for r in results), default=0.0)},
            'landed_mm': _landed(results), 'block_m': BLOCK, 'seed': seed}


def _landed(results):
    """How far the tip was from the block's centre, sideways, when the client closed: the
    median and the largest over the trials (mm), and in the trials with a detection."""
    side = [(math.hypot(*r['landed_mm'][:2]), r['detections']) for r in results if 'landed_mm' in r]
    if not side:
        return {}
    return {'median': float(np.median([d for d, _ in side])), 'max': max(d for d, _ in side),
            'with_detections': [d for d, n in side if n]}


def run(out_dir='bench_out', quick=False):
    out_dir = os.path.abspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    out = {'load_avg_at_start': list(os.getloadavg())}
    errors = {}
    for name, call in (('plant', lambda: measure_plant(1000 if quick else 5000)),
                       ('pick_place', lambda: measure_pick_place(5 if quick else 50)),
                       # one robot per process: rospy comes up once per process
                       ('pick_place_ros', lambda: in_own_process(
                           measure_pick_place_ros, out_dir, 3 if quick else 50)),
                       ('lockstep_bare', lambda: in_own_process(
                           measure_lockstep_bare, out_dir, 3.0 if quick else 10.0)),
                       ('lockstep', lambda: in_own_process(
                           measure_lockstep, out_dir, 3.0 if quick else 10.0))):
        print('[bench]   picking/%s ...' % name, flush=True)
        try:
            out[name] = call()
        except Exception as exc:  # noqa: BLE001 - report it, keep the other measurements
            errors[name] = '%s: %s' % (type(exc).__name__, exc)
    out['load_avg_at_end'] = list(os.getloadavg())
    lines = []
    p = out.get('plant')
    if p:
        lines.append('MuJoCo plant step (CPU us): gripper + table %.0f; + 10 blocks resting %.0f '
                     '(%.0f without sleep, %d contacts); one block held %.0f'
                     % (p['gripper_table_us'], p['ten_blocks_sleep_us'], p['ten_blocks_no_sleep_us'],
                        p['ten_blocks_no_sleep_contacts'], p['one_block_held_us']))
    pp = out.get('pick_place')
    if pp:
        lines.append('pick-and-place of a %.0f cm block: %d / %d (%.0f %%); failures %s; '
                     'collision detections %d (in %d trials)'
                     % (100 * pp['block_m'], pp['succeeded'], pp['trials'], 100 * pp['success_rate'],
                        pp['failures_by_kind'] or 'none', pp['detections'], pp['trials_with_detections']))
    pr = out.get('pick_place_ros')
    if pr:
        lines.append('pick-and-place through ROS (SDK-style client, real time): %d / %d (%.0f %%); '
                     'failures %s; collision detections %d (in %d trials)'
                     % (pr['succeeded'], pr['trials'], 100 * pr['success_rate'],
                        pr['failures_by_kind'] or 'none', pr['detections'], pr['trials_with_detections']))
    ls, bare = out.get('lockstep'), out.get('lockstep_bare')
    if ls:
        core = lambda r: r.get('cpu_us_per_tick', {}).get('core', math.nan)    # noqa: E731
        lines.append('lockstep --speed max, MuJoCo: bare arm %s; + gripper %.2fx with the table, '
                     '%.2fx with 10 blocks resting (target >= 10x; load %.1f); the core\'s CPU '
                     'per tick %s / %.0f / %.0f us'
                     % ('%.2fx' % bare['speedup'] if bare else 'not measured',
                        ls['gripper_table']['speedup'], ls['ten_blocks']['speedup'],
                        ls['ten_blocks']['load_avg'][0], '%.0f' % core(bare) if bare else '-',
                        core(ls['gripper_table']), core(ls['ten_blocks'])))
    out['summary'] = lines
    if errors:
        out['error'] = '; '.join('%s: %s' % kv for kv in errors.items())
    return out
