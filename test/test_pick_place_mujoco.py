"""An SDK-style client picks a block from a table on MuJoCo and places it (issue 21 item 4,
through ROS): the demo's kind of table and a 4 cm block spawned with /gazebo/spawn_sdf_model,
IK on right_gripper_tip (/robot_description carries the gripper with --gripper), joint
positions streamed at 100 Hz as intera_interface.Limb.set_joint_positions does, the gripper
closed and opened through its IO signals as intera_interface.Gripper does; the block is
carried by the fingers' friction in MuJoCo, and judged by /gazebo/get_model_state. The
client aims 2 mm off the block's centre across the fingers (a streamed descent's tip lands
up to ~1 mm off by itself, a camera's estimate further): the first finger shoves the block
before the second meets it, and that is not a collision — collision_detection_state stays
false throughout, as on a real Sawyer."""
import os

import numpy as np
import pytest

from clients import ARM, Arm, Series, arm_positions, pace
from io_client import IODevice
from rosharness import wait_for

pytestmark = pytest.mark.sawyer_args(['--backend', 'mujoco', '--gripper'])

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, 'data', 'world', 'world_test_pkg', 'models', 'table', 'model.sdf')
NS = '/ExternalTools/right/PositionKinematicsNode/'
TIP = 'right_gripper_tip'
BASE_Z = 0.93                      # the robot's base above the world (sawyer_world.launch)
TABLE_TOP = 0.75                   # world z of the table's top
BLOCK = 0.04                       # m: the block's edge
PICK = (0.65, 0.05)                # world x, y of the block
PLACE = (0.65, -0.15)              # ... and where it goes (20 cm away)
OPEN, CLOSED = 0.041667, 0.0
AIM_OFF = (0.0, 0.002, 0.0)        # m: where the client aims, off the block's centre (world y
                                   # is across the fingers with the tip pointing down, yaw 0)
TIMEOUT = 20.0


def block_sdf(mass=0.1):
    i = mass * BLOCK * BLOCK / 6.0
    return ('<sdf version="1.6"><model name="block"><link name="link"><inertial><mass>%g</mass>'
            '<inertia><ixx>%g</ixx><iyy>%g</iyy><izz>%g</izz></inertia></inertial>'
            '<collision name="c"><geometry><box><size>%g %g %g</size></box></geometry></collision>'
            '<visual name="v"><geometry><box><size>%g %g %g</size></box></geometry></visual>'
            '</link></model></sdf>' % ((mass, i, i, i) + (BLOCK,) * 6))


@pytest.fixture(scope='module')
def cell(robot):
    import rospy
    from gazebo_msgs.srv import GetModelState, SpawnModel
    from geometry_msgs.msg import Pose
    from intera_core_msgs.msg import CollisionDetectionState
    from intera_core_msgs.srv import SolvePositionIK
    for name in ('spawn_sdf_model', 'get_model_state'):
        rospy.wait_for_service('/gazebo/' + name, 10.0)
    rospy.wait_for_service(NS + 'IKService', 10.0)
    wait_for(lambda: TIP in rospy.get_param('/robot_description'), TIMEOUT,
             'the gripper in /robot_description')
    spawn = rospy.ServiceProxy('/gazebo/spawn_sdf_model', SpawnModel)
    get = rospy.ServiceProxy('/gazebo/get_model_state', GetModelState)

    def put(name, xml, x, y, z):
        p = Pose()
        p.position.x, p.position.y, p.position.z = x, y, z
        p.orientation.w = 1.0
        r = spawn(name, xml, '', p, 'world')
        assert r.success, r.status_message

    with open(TABLE) as f:
        put('table', f.read(), 0.75, 0.0, 0.0)
    put('block', block_sdf(), PICK[0], PICK[1], TABLE_TOP + BLOCK / 2 + 0.005)
    gripper = IODevice('end_effector', 'right_gripper')
    yield {'get': get, 'ik': rospy.ServiceProxy(NS + 'IKService', SolvePositionIK),
           'arm': Arm(), 'gripper': gripper,
           'detection': Series('/robot/limb/right/collision_detection_state', CollisionDetectionState)}
    gripper.close()


def block(cell):
    r = cell['get']('block', 'world')
    assert r.success, r.status_message
    p, t = r.pose.position, r.twist
    return np.array((p.x, p.y, p.z)), max(abs(v) for v in (t.linear.x, t.linear.y, t.linear.z))


def ik(cell, x, y, z, seed):
    """Joint angles putting right_gripper_tip at world (x, y, z), pointing down."""
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.srv import SolvePositionIKRequest
    from sensor_msgs.msg import JointState
    p = PoseStamped()
    p.header.frame_id = 'base'
    p.pose.position.x, p.pose.position.y, p.pose.position.z = x, y, z - BASE_Z
    p.pose.orientation.y = 1.0
    req = SolvePositionIKRequest(pose_stamp=[p], tip_names=[TIP],
                                 seed_angles=[JointState(name=list(ARM), position=list(seed))])
    resp = cell['ik'](req)
    assert resp.result_type[0] > 0, 'no IK solution for %s' % ((x, y, z),)
    return np.array(resp.joints[0].position)


def move(cell, start, goal, seconds, clock='wall'):
    """Stream IK solutions along the straight line start → goal (world) at 100 Hz (paced by
    `clock`, as clients.pace), as a demo script's Cartesian approach does, then hold the
    last one until the arm is there."""
    arm = cell['arm']
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    q = arm_positions(arm.js.last())
    steps = max(1, int(seconds * 100))
    path = []
    for k in range(1, steps + 1):
        q = ik(cell, *(start + (goal - start) * k / steps), seed=q)
        path.append(q)
    sent = iter(path)

    def body(_t):
        target = next(sent, None)
        arm.set_positions(dict(zip(ARM, path[-1] if target is None else target)))
        return target is None and np.abs(arm_positions(arm.js.last()) - path[-1]).max() < 2e-3

    pace(100.0, body, seconds + 5.0, clock=clock)


def grip(cell, position, done, what):
    """intera_interface.Gripper.set_position: the position signal, then wait (as a demo
    polls the gripper's state) until `done(gripper)`."""
    g = cell['gripper']
    assert g.set('position_m', position) == ''
    g.wait(lambda: done(g), TIMEOUT, what)
    return g


def pick_and_place(cell, aim_off=AIM_OFF, clock='wall'):
    """The SDK-style client's pick-and-place: to the approach pose, down around the block
    (aimed `aim_off` from its centre), grip, lift 20 cm, carry to PLACE, lower, release,
    retreat; each move's stream paced by `clock` (clients.pace). Judged on the way (stopped
    on the block, carried, still gripping when lowered, open when released) and at the end
    (the block at rest on the table within 1 cm of PLACE). Returns the robot time (t0, t1)
    from just before the descent to the retreat's end."""
    wait_for(lambda: block(cell)[1] < 1e-6, TIMEOUT, 'the block at rest on the table')
    at, _ = block(cell)
    assert abs(at[2] - (TABLE_TOP + BLOCK / 2)) < 2e-3
    above = at + aim_off + (0, 0, 0.15)
    cell['arm'].tolerate_stalls()
    move(cell, above, above, 3.0, clock)                     # to the approach pose
    detection = cell['detection']
    t0 = detection.last().header.stamp.to_sec()
    aim = at + aim_off
    move(cell, above, aim, 1.5, clock)                       # down around the block
    g = grip(cell, CLOSED, lambda g: g.value('is_gripping') is True, 'the block gripped')
    # stopped on the block, not closed (the compliant pads give ~0.7 mm each under the squeeze)
    assert 0.018 < g.value('position_response_m') < 0.04
    lifted = aim + (0, 0, 0.20)
    move(cell, aim, lifted, 1.5, clock)
    now, _ = block(cell)
    assert abs(now[2] - lifted[2]) < 0.01 and np.hypot(*(now[:2] - at[:2])) < 0.01   # carried 20 cm
    place = np.array((PLACE[0], PLACE[1], lifted[2]))
    move(cell, lifted, place, 2.0, clock)
    down = np.array((PLACE[0], PLACE[1], at[2] + 0.003))
    move(cell, place, down, 1.5, clock)
    assert g.value('is_gripping') is True
    g = grip(cell, OPEN, lambda g: g.value('position_response_m') > OPEN - 0.002, 'the fingers open')
    assert g.value('is_gripping') is False
    move(cell, down, down + (0, 0, 0.15), 1.0, clock)
    t1 = detection.last().header.stamp.to_sec()
    wait_for(lambda: block(cell)[1] < 1e-6, TIMEOUT, 'the block at rest')
    final, _ = block(cell)
    assert np.hypot(final[0] - PLACE[0], final[1] - PLACE[1]) < 0.01
    assert abs(final[2] - (TABLE_TOP + BLOCK / 2)) < 2e-3
    return t0, t1


def test_an_sdk_client_picks_a_block_carries_it_and_places_it(cell):
    t0, t1 = pick_and_place(cell)
    # Not a collision anywhere from the descent to the retreat (the fingers' strike on the
    # block included): collision_detection_state, published all along, never true.
    states = cell['detection'].between(t0, t1)
    stamps = [t0] + [m.header.stamp.to_sec() for m in states] + [t1]
    assert max(np.diff(stamps)) < 0.5, 'collision_detection_state was not heard all along'
    hits = [m.header.stamp.to_sec() for m in states if m.collision_state]
    assert not hits, ('collision detection stopped the arm during the pick-and-place: %d states '
                      'true from %.2f s after the descent began' % (len(hits), hits[0] - t0))
