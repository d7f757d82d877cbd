"""An SDK-style pick and place on the embedded plant (issue 21's test), through ROS as
sawyer_sim_examples' ik_pick_and_place_demo.py does it: a table and a block spawned with
gazebo_ros's services, IK for right_gripper_tip, moves streamed as intera_interface's
Limb.move_to_joint_positions does (POSITION_MODE at 100 Hz), the gripper closed and opened
through its IO device (intera_interface.Gripper's signals). The block is carried 20 cm and
placed, judged by /gazebo/get_model_state; released in the air it falls and rests on the
table. The robot runs on sim time at 1x."""
import math

import numpy as np
import pytest

from clients import Arm  # noqa: F401
from io_client import IODevice
from rosharness import wait_for

SAWYER_ARGS = ['--gripper', '--sim-time', '--speed', '1']
NS = '/ExternalTools/right/PositionKinematicsNode/'
TIP = 'right_gripper_tip'
TABLE_TOP = 0.75                  # world z of the table's top
BASE_Z = 0.93                     # base in world
DOWN = (0.0, 1.0, 0.0, 0.0)       # the gripper pointing down (x y z w), as the demo's
HOVER = 0.10                      # m above the grasp
BLOCK = ('<sdf version="1.6"><model name="block"><link name="block"><inertial><mass>0.05</mass>'
         '<inertia><ixx>7.5e-6</ixx><iyy>7.5e-6</iyy><izz>7.5e-6</izz></inertia></inertial>'
         '<collision name="c"><pose>0 0 0.015 0 0 0</pose><geometry><box><size>0.03 0.03 0.03</size>'
         '</box></geometry></collision><visual name="v"><pose>0 0 0.015 0 0 0</pose><geometry>'
         '<box><size>0.03 0.03 0.03</size></box></geometry></visual></link></model></sdf>')
TABLE = ('<sdf version="1.6"><model name="table"><static>true</static><link name="top">'
         '<pose>0 0 0.73 0 0 0</pose><collision name="c"><geometry><box><size>0.8 1.0 0.04</size>'
         '</box></geometry></collision></link></model></sdf>')


@pytest.fixture(scope='module')
def ros(robot):
    import rospy
    from gazebo_msgs import srv
    from intera_core_msgs.srv import SolvePositionIK
    out = {}
    for name, kind in (('spawn_sdf_model', srv.SpawnModel), ('get_model_state', srv.GetModelState),
                       ('delete_model', srv.DeleteModel)):
        rospy.wait_for_service('/gazebo/' + name, 10.0)
        out[name] = rospy.ServiceProxy('/gazebo/' + name, kind)
    rospy.wait_for_service(NS + 'IKService', 10.0)
    out['ik'] = rospy.ServiceProxy(NS + 'IKService', SolvePositionIK)
    # The gripper in the robot's model (the device's own fragment).
    wait_for(lambda: TIP in rospy.get_param('/robot_description'), 20.0, 'the gripper in the model')
    out['arm'] = Arm()
    out['arm'].tolerate_stalls()
    out['gripper'] = IODevice('end_effector', 'right_gripper')
    return out


def pose_msg(x, y, z, q=DOWN):
    from geometry_msgs.msg import Pose
    p = Pose()
    p.position.x, p.position.y, p.position.z = x, y, z
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = q
    return p


def ik(ros, x, y, z, seed=None):
    """IK of right_gripper_tip at world (x, y, z) pointing down, as the demo asks (in base)."""
    from geometry_msgs.msg import PoseStamped
    from intera_core_msgs.srv import SolvePositionIKRequest
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header
    req = SolvePositionIKRequest(pose_stamp=[PoseStamped(Header(frame_id='base'),
                                                         pose_msg(x, y, z - BASE_Z))],
                                 tip_names=[TIP])
    if seed is not None:
        req.seed_mode = req.SEED_USER
        req.seed_angles = [JointState(name=['right_j%d' % i for i in range(7)], position=list(seed))]
    resp = ros['ik'](req)
    assert resp.result_type[0] > 0, 'IK failed for %s' % ((x, y, z),)
    return dict(zip(resp.joints[0].name, resp.joints[0].position))


def move(ros, target):
    ros['arm'].move_to(target, timeout=20.0)


def where(ros, name):
    r = ros['get_model_state'](name, '')
    assert r.success, r.status_message
    return np.array([r.pose.position.x, r.pose.position.y, r.pose.position.z])


def gripper(ros, position):
    """intera_interface.Gripper.set_position: position_m; wait until it stops."""
    g = ros['gripper']
    g.set('position_m', position)
    g.wait(lambda: not g.value('is_moving'), 10.0, 'the fingers to stop')


def test_pick_carry_and_place_a_block(ros):
    assert ros['spawn_sdf_model']('table', TABLE, '', pose_msg(0.75, 0.0, 0.0, (0, 0, 0, 1)), '').success
    r = ros['spawn_sdf_model']('block', BLOCK, '', pose_msg(0.7, 0.1, TABLE_TOP, (0, 0, 0, 1)), '')
    assert r.success, r.status_message
    start = where(ros, 'block')
    # A world with models: the plant's fingers are the gripper's (the device follows them).
    import rospy
    from intera_rt_msgs.msg import GripperState
    rospy.wait_for_message('/intera_rt/sim/gripper_state', GripperState, 10.0)
    g = ros['gripper']
    gripper(ros, 0.041667)                                         # open
    centre = start + (0, 0, 0.015)
    above = ik(ros, *(centre + (0, 0, HOVER)))
    move(ros, above)
    move(ros, ik(ros, *centre, seed=list(above.values())))
    gripper(ros, 0.0)                                              # close: on the block
    assert g.value('is_gripping') and abs(g.value('position_response_m') - 0.03) < 2e-3
    lift = ik(ros, *(centre + (0, 0, HOVER)), seed=list(above.values()))
    move(ros, lift)
    assert where(ros, 'block')[2] > start[2] + 0.08                # carried up with the hand
    # 20 cm along y, down onto the table, open: placed.
    goal = start + (0, -0.2, 0)
    over = ik(ros, *(goal + (0, 0, 0.015 + HOVER)), seed=list(lift.values()))
    move(ros, over)
    move(ros, ik(ros, *(goal + (0, 0, 0.015 + 0.002)), seed=list(over.values())))
    gripper(ros, 0.041667)
    assert not g.value('is_gripping')
    move(ros, over)
    np.testing.assert_allclose(where(ros, 'block'), goal, atol=0.01)
    # Picked again and released 10 cm above the table: it falls and rests on it.
    move(ros, ik(ros, *(goal + (0, 0, 0.015)), seed=list(over.values())))
    gripper(ros, 0.0)
    assert g.value('is_gripping')
    move(ros, over)
    ros['arm'].settle()             # released from where the hand holds still
    high = where(ros, 'block')
    assert high[2] > TABLE_TOP + 0.08
    gripper(ros, 0.041667)
    wait_for(lambda: abs(where(ros, 'block')[2] - TABLE_TOP) < 2e-3, 10.0, 'the block on the table')
    rest = where(ros, 'block')
    np.testing.assert_allclose(rest[:2], high[:2], atol=1e-3)
