"""Gazebo's world API served by the robot on the embedded plant (issue 21 items 2, 4, 6),
through ROS as sawyer_simulator's users call it: spawn a table (SDF) and a block (URDF),
read them back in any reference frame, move and delete them, watch /gazebo/model_states and
/gazebo/link_states, pause and reset; every bad request refused with success false and a
status_message naming the field, the world unchanged."""
import math
import os

import pytest

from rosharness import latest, wait_for, wait_for_message

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, 'data', 'world', 'world_test_pkg', 'models')
TABLE_TOP = 0.75                  # m, world: the table model's top at model z 0.75
BLOCK_AT = (0.7, 0.1, 0.85)       # spawned 10 cm above the table: it falls onto it
TIMEOUT = 10.0


def read(name, file):
    with open(os.path.join(MODELS, name, file)) as f:
        return f.read()


@pytest.fixture(scope='module')
def gz(robot):
    import rospy
    from gazebo_msgs import srv
    from std_srvs.srv import Empty
    kinds = {'spawn_sdf_model': srv.SpawnModel, 'spawn_urdf_model': srv.SpawnModel,
             'delete_model': srv.DeleteModel, 'get_model_state': srv.GetModelState,
             'set_model_state': srv.SetModelState, 'get_model_properties': srv.GetModelProperties,
             'get_world_properties': srv.GetWorldProperties, 'get_link_state': srv.GetLinkState,
             'apply_body_wrench': srv.ApplyBodyWrench, 'clear_body_wrenches': srv.BodyRequest,
             'pause_physics': Empty, 'unpause_physics': Empty, 'reset_world': Empty,
             'reset_simulation': Empty}
    proxies = {}
    for name, kind in kinds.items():
        rospy.wait_for_service('/gazebo/' + name, TIMEOUT)
        proxies[name] = rospy.ServiceProxy('/gazebo/' + name, kind)
    return proxies


def pose(x, y, z, qz=0.0, qw=1.0):
    from geometry_msgs.msg import Pose
    p = Pose()
    p.position.x, p.position.y, p.position.z = x, y, z
    p.orientation.z, p.orientation.w = qz, qw
    return p


def spawn(gz, name, xml, at, frame='', kind='spawn_sdf_model'):
    return gz[kind](name, xml, '', pose(*at), frame)


def where(gz, name, frame=''):
    r = gz['get_model_state'](name, frame)
    assert r.success, r.status_message
    return (r.pose.position.x, r.pose.position.y, r.pose.position.z)


def near(a, b, tol=3e-3):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


@pytest.fixture
def scene(gz):
    """A table at (0.75, 0, 0) and a block dropped onto it (each test starts from it)."""
    for name in gz['get_world_properties']().model_names:
        if name != 'sawyer':
            assert gz['delete_model'](name).success
    r = spawn(gz, 'table', read('table', 'model.sdf'), (0.75, 0.0, 0.0))
    assert r.success, r.status_message
    r = spawn(gz, 'block', read('block', 'model.urdf'), BLOCK_AT, kind='spawn_urdf_model')
    assert r.success, r.status_message
    wait_for(lambda: near(where(gz, 'block'), (0.7, 0.1, TABLE_TOP)) and resting(gz, 'block'), TIMEOUT,
             'the block at rest on the table')
    return gz


def resting(gz, name):
    """Model `name` does not move (a physics plant lands a dropped block still settling)."""
    t = gz['get_model_state'](name, '').twist
    return max(abs(v) for v in (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                t.angular.z)) < 1e-6


def test_spawned_models_are_in_the_world(scene):
    gz = scene
    assert gz['get_world_properties']().model_names == ['sawyer', 'table', 'block']
    # It fell and rests: its frame (the cube's bottom) on the top, at rest.
    r = gz['get_model_state']('block', 'world')
    assert r.success and max(abs(r.twist.linear.z), abs(r.twist.linear.x)) < 1e-6
    assert near(where(gz, 'block', 'table'), (-0.05, 0.1, TABLE_TOP))
    link = gz['get_link_state']('table::leg_1', '')
    assert link.success and near((link.link_state.pose.position.x, link.link_state.pose.position.y,
                                  link.link_state.pose.position.z), (1.2, 0.35, 0.355))
    props = gz['get_model_properties']('table')
    assert props.success and props.is_static and props.canonical_body_name == 'top'
    assert props.body_names == ['top', 'leg_1', 'leg_2', 'leg_3', 'leg_4']
    assert 'top_collision' in props.geom_names
    assert not gz['get_model_properties']('block').is_static


def test_the_scene_viewers_draw(scene):
    """/intera_rt/sim/world describes the spawned models' visuals; rviz_markers' builder puts
    them where /gazebo/link_states has their links."""
    import json
    from gazebo_msgs.msg import LinkStates
    from std_msgs.msg import String
    from intera_rt.ros.rviz_markers import world_markers
    models = json.loads(wait_for_message('/intera_rt/sim/world', String, TIMEOUT).data)
    assert [m['name'] for m in models] == ['table', 'block']
    links = wait_for_message('/gazebo/link_states', LinkStates, TIMEOUT)
    poses = {n: ((p.position.x, p.position.y, p.position.z),
                 (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))
             for n, p in zip(links.name, links.pose)}
    markers = world_markers(models, poses)
    cube = [m for m in markers if m.ns == 'world/block'][0]
    assert near((cube.pose.position.x, cube.pose.position.y, cube.pose.position.z), (0.7, 0.1, 0.775))
    assert (cube.scale.x, cube.scale.y, cube.scale.z) == (0.05, 0.05, 0.05)
    assert cube.header.frame_id == 'world'


def test_model_states_and_link_states_topics(scene):
    from gazebo_msgs.msg import LinkStates, ModelStates
    models = wait_for_message('/gazebo/model_states', ModelStates, TIMEOUT)
    assert models.name == ['sawyer', 'table', 'block']
    block = models.pose[2].position
    assert near((block.x, block.y, block.z), (0.7, 0.1, TABLE_TOP))
    assert near((models.pose[0].position.x, models.pose[0].position.y, models.pose[0].position.z),
                (0.0, 0.0, 0.93), 1e-9)
    links = wait_for_message('/gazebo/link_states', LinkStates, TIMEOUT)
    assert {'sawyer::base', 'sawyer::right_l6', 'table::top', 'block::block'} <= set(links.name)
    # With every robot state (100 Hz of the robot's time): as many as /robot/joint_states.
    from sensor_msgs.msg import JointState
    with latest('/gazebo/model_states', ModelStates, queue_size=200) as worlds, \
            latest('/robot/joint_states', JointState, queue_size=200) as joints:
        joints.wait(TIMEOUT)
        worlds.wait(TIMEOUT)
        w0, j0 = worlds.count, joints.count
        wait_for(lambda: joints.count - j0 >= 100, TIMEOUT, '100 joint states')
        w1, j1 = worlds.count, joints.count
    assert abs((w1 - w0) - (j1 - j0)) <= 3, (w1 - w0, j1 - j0)


def test_robot_frames(gz):
    import rospy
    import tf2_ros
    buf = tf2_ros.Buffer()
    tf2_ros.TransformListener(buf)
    t = buf.lookup_transform('world', 'base', rospy.Time(0), rospy.Duration(TIMEOUT)).transform
    assert (t.translation.x, t.translation.y, t.translation.z) == (0.0, 0.0, 0.93)
    assert near(where(gz, 'sawyer'), (0.0, 0.0, 0.93), 1e-9)
    hand = gz['get_link_state']('sawyer::right_l6', 'sawyer')
    tf_hand = buf.lookup_transform('base', 'right_l6', rospy.Time(0), rospy.Duration(TIMEOUT)).transform
    p = hand.link_state.pose.position
    assert hand.success and near((p.x, p.y, p.z), (tf_hand.translation.x, tf_hand.translation.y,
                                                   tf_hand.translation.z), 2e-3)


def test_set_model_state_service_and_topic(scene):
    import rospy
    from gazebo_msgs.msg import ModelState
    gz = scene
    # On the table, in the table's frame, turned 90° about z.
    s = ModelState('block', pose(0.2, -0.2, TABLE_TOP, math.sin(math.pi / 4), math.cos(math.pi / 4)),
                   None, 'table')
    from geometry_msgs.msg import Twist
    s.twist = Twist()
    r = gz['set_model_state'](s)
    assert r.success, r.status_message
    wait_for(lambda: near(where(gz, 'block'), (0.95, -0.2, TABLE_TOP)), TIMEOUT, 'the block moved')
    q = gz['get_model_state']('block', '').pose.orientation
    assert abs(q.z - math.sin(math.pi / 4)) < 1e-6
    # The topic: the same, nobody answers.
    pub = rospy.Publisher('/gazebo/set_model_state', ModelState, queue_size=1, latch=True)
    s2 = ModelState('block', pose(0.6, 0.0, 1.0), Twist(), 'world')
    pub.publish(s2)
    # dropped from 1 m onto the table
    wait_for(lambda: near(where(gz, 'block'), (0.6, 0.0, TABLE_TOP)), TIMEOUT, 'the block set by topic, on the table')
    pub.unregister()


def test_delete_takes_it_out_of_everything(scene):
    from gazebo_msgs.msg import ModelStates
    gz = scene
    r = gz['delete_model']('block')
    assert r.success, r.status_message
    assert gz['get_world_properties']().model_names == ['sawyer', 'table']
    wait_for(lambda: 'block' not in wait_for_message('/gazebo/model_states', ModelStates, TIMEOUT).name,
             TIMEOUT, 'block gone from model_states')
    r = gz['get_model_state']('block', '')
    assert not r.success and 'block' in r.status_message


def test_pause_stops_physics_and_time(scene):
    gz = scene
    gz['pause_physics']()
    try:
        t0 = gz['get_world_properties']().sim_time
        from gazebo_msgs.msg import ModelState
        from geometry_msgs.msg import Twist
        r = gz['set_model_state'](ModelState('block', pose(0.7, 0.1, 1.2), Twist(), ''))
        assert r.success, r.status_message
        import time
        time.sleep(0.5)     # an observation window: paused, nothing may fall or tick in it
        # Nothing falls, the world's time stands.
        assert near(where(gz, 'block'), (0.7, 0.1, 1.2))
        assert gz['get_world_properties']().sim_time == t0
    finally:
        gz['unpause_physics']()
    wait_for(lambda: near(where(gz, 'block'), (0.7, 0.1, TABLE_TOP)), TIMEOUT, 'the block fell after unpause')
    assert gz['get_world_properties']().sim_time > t0


def test_reset_world_puts_models_back(scene):
    from gazebo_msgs.msg import ModelState
    from geometry_msgs.msg import Twist
    gz = scene
    assert gz['set_model_state'](ModelState('block', pose(1.0, -0.3, TABLE_TOP), Twist(), '')).success
    wait_for(lambda: near(where(gz, 'block'), (1.0, -0.3, TABLE_TOP)), TIMEOUT, 'the block moved')
    gz['reset_world']()
    # Back where it was spawned (above the table), from where it falls onto it again.
    seen = []

    def back():
        seen[:] = [where(gz, 'block'), gz['get_world_properties']().sim_time]
        return near(seen[0], (0.7, 0.1, TABLE_TOP))
    try:
        wait_for(back, TIMEOUT, 'the block back')
    except AssertionError as exc:
        raise AssertionError('%s: the block last at %s, sim time %s' % (exc, seen[0], seen[1])) from None
    assert near(where(gz, 'table'), (0.75, 0.0, 0.0), 1e-9)


def test_a_body_wrench_pushes_a_block(scene):
    from geometry_msgs.msg import Point, Vector3, Wrench
    import rospy
    gz = scene
    r = gz['apply_body_wrench']('block::block', '', Point(), Wrench(Vector3(0, 1.5, 0), Vector3()),
                                rospy.Time(), rospy.Duration(0.1))
    assert r.success, r.status_message
    wait_for(lambda: where(gz, 'block')[1] > 0.12, TIMEOUT, 'the block pushed along y')


def test_a_body_wrench_waits_for_its_start_time(scene):
    """start_time 0.5 s ahead: every state stamped before it has the block where it rests;
    then the wrench pushes it."""
    from geometry_msgs.msg import Point, Vector3, Wrench
    import rospy
    gz = scene
    y0 = where(gz, 'block')[1]
    start = rospy.Time.now() + rospy.Duration(0.5)
    r = gz['apply_body_wrench']('block::block', '', Point(), Wrench(Vector3(0, 1.5, 0), Vector3()),
                                start, rospy.Duration(0.1))
    assert r.success, r.status_message
    seen_before = 0
    while True:
        s = gz['get_model_state']('block', '')
        assert s.success, s.status_message
        if s.header.stamp >= start:
            break
        assert abs(s.pose.position.y - y0) < 1e-4, (s.header.stamp.to_sec(), start.to_sec(), s.pose.position.y)
        seen_before += 1
    assert seen_before > 0
    wait_for(lambda: where(gz, 'block')[1] > y0 + 0.02, TIMEOUT, 'the block pushed along y after its start')


def test_a_wrench_on_the_robot_waits_for_its_start_time(gz):
    """sawyer::right_l6 pushed 40 N along y for 0.3 s from 0.5 s ahead: the held arm keeps
    its joints in every joint state stamped before start_time, and gives way after it."""
    import numpy as np
    import rospy
    from geometry_msgs.msg import Point, Vector3, Wrench
    from sensor_msgs.msg import JointState
    from clients import Series, arm_positions, stamp
    joints = Series('/robot/joint_states', JointState)
    try:
        q0 = np.array(arm_positions(joints.last()))
        start = rospy.Time.now() + rospy.Duration(0.5)
        r = gz['apply_body_wrench']('sawyer::right_l6', '', Point(), Wrench(Vector3(0, 40.0, 0), Vector3()),
                                    start, rospy.Duration(0.3))
        assert r.success, r.status_message
        joints.wait_until(start.to_sec() + 0.3)
        before = [np.abs(np.array(arm_positions(m)) - q0).max() for m in joints.between(0, start.to_sec() - 0.002)]
        after = [np.abs(np.array(arm_positions(m)) - q0).max() for m in joints.between(start.to_sec())]
    finally:
        joints.unregister()
    assert len(before) > 20 and max(before) < 2e-4, max(before)
    assert max(after) > 1e-3, max(after)


def test_clear_body_wrenches_ends_a_wrench_on_the_robot(gz):
    """sawyer::right_l6 pushed 10 N along y for 60 s (below an impact) gives the held arm
    way by a mrad or so; /gazebo/clear_body_wrenches on it ends the push, and the arm springs
    back (to within the joints' friction of where it was: less than half the way it gave)."""
    import numpy as np
    import rospy
    from geometry_msgs.msg import Point, Vector3, Wrench
    from sensor_msgs.msg import JointState
    from clients import Series, arm_positions, stamp
    joints = Series('/robot/joint_states', JointState)
    try:
        q0 = np.array(arm_positions(joints.last()))

        def off(m):
            return np.abs(np.array(arm_positions(m)) - q0).max()
        r = gz['apply_body_wrench']('sawyer::right_l6', '', Point(), Wrench(Vector3(0, 10.0, 0), Vector3()),
                                    rospy.Time(), rospy.Duration(60.0))
        assert r.success, r.status_message
        given = joints.wait(lambda m: off(m) > 4e-4, TIMEOUT, 'the push giving the arm way')
        pushed = off(joints.wait_until(stamp(given) + 0.5))
        gz['clear_body_wrenches']('sawyer::right_l6')
        joints.wait(lambda m: off(m) < 0.5 * pushed, TIMEOUT,
                    'the arm springing back (it gave %.5f rad)' % pushed)
    finally:
        gz['clear_body_wrenches']('sawyer::right_l6')
        joints.unregister()


def test_obstacles_are_models_of_the_same_world(gz, robot):
    import rospy
    from intera_rt_msgs.srv import AddObstacle, RemoveObstacle
    rospy.wait_for_service('/intera_rt/sim/add_obstacle', TIMEOUT)
    add = rospy.ServiceProxy('/intera_rt/sim/add_obstacle', AddObstacle)
    remove = rospy.ServiceProxy('/intera_rt/sim/remove_obstacle', RemoveObstacle)
    assert add('crate', 'box', pose(0.8, -0.5, 0.1), [0.2, 0.2, 0.2]).success
    try:
        assert 'crate' in gz['get_world_properties']().model_names
        # base → world: 0.93 m up
        assert near(where(gz, 'crate'), (0.8, -0.5, 1.03), 1e-9)
        assert gz['get_model_properties']('crate').is_static
        r = spawn(gz, 'crate', read('block', 'model.urdf'), (0, 0, 1), kind='spawn_urdf_model')
        assert not r.success and 'crate' in r.status_message
    finally:
        remove('crate')
    assert 'crate' not in gz['get_world_properties']().model_names


# --- bad input (item 6): refused, named, the world unchanged -------------------------------------
BOX_SDF = ('<sdf version="1.6"><model name="m"><link name="l"><collision name="c"><geometry>%s'
           '</geometry></collision></link></model></sdf>')
SPAWN_CASES = [
    # (id, name, xml, initial pose, reference frame, words in status_message)
    ('malformed', 'm', '<sdf version="1.6"><model name="m">', (0, 0, 1), '', ['not well-formed']),
    ('entity', 'm', '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><robot name="r">&x;</robot>',
     (0, 0, 1), '', ['DOCTYPE']),
    ('oversize', 'm', '<sdf version="1.6"><!--%s--></sdf>' % ('x' * (5 << 20)), (0, 0, 1), '',
     ['bytes, more than']),
    ('unresolved_uri', 'm', BOX_SDF % '<mesh><uri>model://no_such_model/m.stl</uri></mesh>', (0, 0, 1), '',
     ['no_such_model']),
    ('zero_size', 'm', BOX_SDF % '<box><size>0 0.1 0.1</size></box>', (0, 0, 1), '', ['<size>', '> 0']),
    ('negative_size', 'm', BOX_SDF % '<sphere><radius>-1</radius></sphere>', (0, 0, 1), '', ['<radius>', '-1']),
    ('nan_pose', 'm', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (float('nan'), 0, 1), '',
     ['initial_pose.position', 'finite']),
    ('zero_quaternion', 'm', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (0, 0, 1, 0.0, 0.0), '',
     ['initial_pose.orientation', 'zero']),
    ('duplicate', 'table', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (0, 0, 1), '',
     ["'table' already exists"]),
    ('robot_name', 'sawyer', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (0, 0, 1), '',
     ["'sawyer' already exists"]),
    ('unknown_frame', 'm', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (0, 0, 1), 'nowhere',
     ['reference_frame', "'nowhere'"]),
    ('unknown_link_frame', 'm', BOX_SDF % '<box><size>.1 .1 .1</size></box>', (0, 0, 1), 'table::wheel',
     ['reference_frame', "'wheel'"]),
    ('not_a_mesh', 'm', BOX_SDF % '<mesh><uri>model://table/model.config</uri></mesh>', (0, 0, 1), '',
     ['model.config']),
]


@pytest.fixture(scope='module')
def table_only(gz):
    for name in gz['get_world_properties']().model_names:
        if name != 'sawyer':
            gz['delete_model'](name)
    assert spawn(gz, 'table', read('table', 'model.sdf'), (0.75, 0.0, 0.0)).success
    return gz


@pytest.mark.parametrize('name,xml,at,frame,words', [c[1:] for c in SPAWN_CASES],
                         ids=[c[0] for c in SPAWN_CASES])
def test_bad_spawns_are_refused(table_only, name, xml, at, frame, words):
    gz = table_only
    before = gz['get_world_properties']().model_names
    r = spawn(gz, name, xml, at, frame)
    assert not r.success
    for w in words:
        assert w in r.status_message, r.status_message
    assert gz['get_world_properties']().model_names == before
    assert near(where(gz, 'table'), (0.75, 0.0, 0.0), 1e-9)


def test_bad_requests_on_models_are_refused(table_only):
    from gazebo_msgs.msg import ModelState
    from geometry_msgs.msg import Point, Twist, Vector3, Wrench
    import rospy
    gz = table_only
    r = gz['delete_model']('ghost')
    assert not r.success and "'ghost'" in r.status_message
    r = gz['delete_model']('sawyer')
    assert not r.success and 'robot' in r.status_message
    r = gz['get_model_state']('ghost', '')
    assert not r.success and 'model_name' in r.status_message and "'ghost'" in r.status_message
    r = gz['get_model_state']('table', 'ghost::link')
    assert not r.success and 'reference_frame' in r.status_message
    r = gz['get_link_state']('table::wheel', '')
    assert not r.success and 'link_name' in r.status_message and "'wheel'" in r.status_message
    r = gz['set_model_state'](ModelState('ghost', pose(0, 0, 1), Twist(), ''))
    assert not r.success and "'ghost'" in r.status_message
    r = gz['set_model_state'](ModelState('table', pose(0, 0, 1, 0.0, 0.0), Twist(), ''))
    assert not r.success and 'orientation' in r.status_message
    r = gz['set_model_state'](ModelState('table', pose(0, 0, 1), Twist(Vector3(float('inf'), 0, 0), Vector3()), ''))
    assert not r.success and 'twist.linear' in r.status_message
    r = gz['get_model_properties']('ghost')
    assert not r.success and "'ghost'" in r.status_message
    r = gz['apply_body_wrench']('table::wheel', '', Point(), Wrench(Vector3(1, 0, 0), Vector3()),
                                rospy.Time(), rospy.Duration(1))
    assert not r.success and 'body_name' in r.status_message
    r = gz['apply_body_wrench']('table::top', '', Point(), Wrench(Vector3(float('nan'), 0, 0), Vector3()),
                                rospy.Time(), rospy.Duration(1))
    assert not r.success and 'wrench.force' in r.status_message
    assert near(where(gz, 'table'), (0.75, 0.0, 0.0), 1e-9)
    assert gz['get_world_properties']().model_names == ['sawyer', 'table']
