"""The world's frames without ROS: gazebo_ros' reference frames ("" / "world" / model /
"model::link"), the robot as model 'sawyer' with its base at (0, 0, 0.93), and the
conversions a world service and the sim-control API (obstacles in base) need."""
import math
import os

import numpy as np
import pytest

from intera_rt.world import (
    ROBOT_MODEL, ROBOT_POSE, Pose, Resolver, Snapshot, WorldError, base_to_world, model_frames,
    parse_reference, parse_sdf, robot_frames, world_to_base)
from intera_rt.world.frames import (
    model_pose_of_body, obstacle_model, placed_collisions, spawn_pose, twist_from_world, twist_to_world)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'world')
TABLE = os.path.join(DATA, 'world_test_pkg', 'models', 'table', 'model.sdf')


def yaw(angle, position=(0.0, 0.0, 0.0)):
    return Pose.make(position, (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)))


@pytest.fixture
def scene():
    """The robot, a table at x 0.75 turned 90°, a block on it."""
    with open(TABLE) as f:
        table = parse_sdf(f.read(), Resolver()).with_pose(yaw(math.pi / 2, (0.75, 0.0, 0.0)))
    snap = Snapshot()
    models, links = robot_frames({'right_hand': Pose((0.8, 0.1, 0.3))})
    snap.models.update(models)
    snap.links.update(links)
    models, links = model_frames(table)
    snap.models.update(models)
    snap.links.update(links)
    snap.models['block'] = Pose((0.8, 0.05, 0.775))
    snap.links['block::block'] = snap.models['block']
    snap.model_twists['block'] = ((0.1, 0.0, 0.0), (0.0, 0.0, 0.5))
    return snap


def test_reference_names():
    for world in ('', 'world', 'map', ' world '):
        assert parse_reference(world) == (None, None)
    assert parse_reference('table') == ('table', None)
    assert parse_reference('table::top') == ('table', 'top')
    for bad in ('a::b::c', '::top', 'table::'):
        with pytest.raises(WorldError, match='reference_frame: %r' % bad):
            parse_reference(bad)
    with pytest.raises(WorldError, match='reference_frame: expected a frame name'):
        parse_reference(None)


def test_robot_base_at_sawyer_worlds_height():
    assert ROBOT_MODEL == 'sawyer'
    assert ROBOT_POSE.position == (0.0, 0.0, 0.93) and ROBOT_POSE.quaternion == (0, 0, 0, 1)
    # an obstacle 0.5 m ahead of the base at base height is 0.93 m up in the world
    obstacle = Pose.make((0.5, 0.0, 0.0), (0, 0, 0, 1))
    assert base_to_world(obstacle).position == pytest.approx((0.5, 0.0, 0.93))
    # the table top at 0.75 m in the world is 0.18 m below the base
    assert world_to_base(Pose((0.75, 0.0, 0.75))).position == pytest.approx((0.75, 0.0, -0.18))
    # round trip, with a robot placed elsewhere and turned
    robot = yaw(0.7, (1.0, -2.0, 0.5))
    p = Pose.make((0.3, 0.2, 0.1), (0.1, 0.2, 0.3, 0.9))
    back = world_to_base(base_to_world(p, robot), robot)
    assert back.position == pytest.approx(p.position)
    assert back.quaternion == pytest.approx(p.quaternion)


def test_model_state_in_each_reference_frame(scene):
    pose, twist = scene.model_state('block', '')
    assert pose.position == pytest.approx((0.8, 0.05, 0.775))
    assert twist == ((0.1, 0.0, 0.0), (0.0, 0.0, 0.5))
    # in the robot's model frame, which is its base
    pose, _ = scene.model_state('block', 'sawyer')
    assert pose.position == pytest.approx((0.8, 0.05, 0.775 - 0.93))
    # in the table's frame: turned 90°, so world +x is the table's -y
    pose, twist = scene.model_state('block', 'table')
    assert pose.position == pytest.approx((0.05, -0.05, 0.775))
    assert twist[0] == pytest.approx((0.0, -0.1, 0.0))
    assert twist[1] == pytest.approx((0.0, 0.0, 0.5))
    # in a link's frame: the table top is 0.73 m up the table's frame
    pose, _ = scene.model_state('block', 'table::top')
    assert pose.position == pytest.approx((0.05, -0.05, 0.045))
    # in a robot link's frame
    pose, _ = scene.model_state('block', 'sawyer::right_hand')
    assert pose.position == pytest.approx((0.0, -0.05, 0.775 - 0.93 - 0.3))
    # a table leg, a link of a model, as "model::link"
    pose, _ = scene.link_state('table::leg_1', 'world')
    assert pose.position == pytest.approx((0.75 - 0.35, 0.45, 0.355))


def test_unknown_names(scene):
    with pytest.raises(WorldError, match="model_name: no model named 'ghost'"):
        scene.model_state('ghost')
    with pytest.raises(WorldError, match="reference_frame: 'ghost': no model named 'ghost'"):
        scene.model_state('block', 'ghost')
    with pytest.raises(WorldError, match="reference_frame: 'table::ghost': model 'table' has no link "
                                         "'ghost' \\(its links: top, leg_1"):
        scene.model_state('block', 'table::ghost')
    with pytest.raises(WorldError, match="link_name: 'table': expected \"model::link\""):
        scene.link_state('table')
    with pytest.raises(WorldError, match="link_name: 'table::ghost'"):
        scene.link_state('table::ghost')


def test_moving_reference_frame(scene):
    # the block relative to itself is at rest at the origin
    pose, twist = scene.model_state('block', 'block')
    assert pose.position == pytest.approx((0, 0, 0))
    assert np.allclose(twist, 0.0)


def test_twist_set_in_a_turned_frame_is_rotated_into_the_world():
    frame = yaw(math.pi / 2)
    linear, angular = twist_to_world(((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), frame)
    assert linear == pytest.approx((0.0, 1.0, 0.0)) and angular == pytest.approx((0.0, 0.0, 1.0))
    back = twist_from_world((linear, angular), frame)
    assert back[0] == pytest.approx((1.0, 0.0, 0.0))


def test_body_pose_gives_the_model_pose():
    with open(TABLE) as f:
        table = parse_sdf(f.read(), Resolver())
    (body,) = table.bodies()
    placed = yaw(0.4, (1.0, 2.0, 0.0))
    body_in_world = placed * body.pose            # where the backend finds the top
    recovered = model_pose_of_body(body, body_in_world)
    assert recovered.position == pytest.approx(placed.position)
    assert recovered.quaternion == pytest.approx(placed.quaternion)


def test_spawn_pose_composes_as_gazebo_ros():
    own = Pose((0.0, 0.0, 0.1))                              # the model's own <pose>
    initial = yaw(math.pi / 2, (1.0, 0.0, 0.0))              # SpawnModel.initial_pose
    placed = spawn_pose(own, initial)
    assert placed.position == pytest.approx((1.0, 0.0, 0.1))
    # given relative to the robot's model frame: its base
    placed = spawn_pose(own, Pose((0.5, 0.0, 0.0)), ROBOT_POSE)
    assert placed.position == pytest.approx((0.5, 0.0, 1.03))


def test_static_model_collisions_in_base_and_obstacles_as_models():
    with open(TABLE) as f:
        table = parse_sdf(f.read(), Resolver())
    placed = placed_collisions(table, Pose((0.75, 0.0, 0.0)), ROBOT_POSE)
    by_name = {c.name: c for c in placed}
    assert sorted(by_name) == ['table::leg_%d::leg_%d_collision' % (i, i) for i in range(1, 5)] + [
        'table::top::top_collision']
    # the top surface, 0.75 m up in the world, is 0.18 m below the robot's base
    top = by_name['table::top::top_collision']
    assert top.pose.position[2] + top.geometry.size[2] / 2 == pytest.approx(0.75 - 0.93)
    assert top.pose.position[0] == pytest.approx(0.75)
    # an add_obstacle box in base becomes a static world model, and comes back where it was put
    model = obstacle_model('wall', 'box', (0.1, 1.0, 0.5), Pose((0.6, 0.0, 0.2)))
    assert model.static and model.pose.position == pytest.approx((0.6, 0.0, 1.13))
    (c,) = placed_collisions(model, frame=ROBOT_POSE)
    assert c.pose.position == pytest.approx((0.6, 0.0, 0.2)) and c.geometry.size == (0.1, 1.0, 0.5)
    with pytest.raises(WorldError, match="shape: expected 'box' or 'sphere', got 'cone'"):
        obstacle_model('x', 'cone', (1,), Pose())
    with pytest.raises(WorldError, match=r'size: sizes must be > 0, got \(-1\)'):
        obstacle_model('x', 'sphere', (-1,), Pose())


def test_links_of_a_model_of_two_bodies_follow_their_bodies():
    """Links not joined move on their own: link states come from each body's pose."""
    xml = ('<sdf version="1.6"><model name="pair">'
           '<link name="b"><pose>0 0.2 0 0 0 0</pose></link>'
           '<link name="a"><pose>0 -0.2 0 0 0 0</pose></link>'
           '<link name="a_tip"><pose>0.1 -0.2 0 0 0 0</pose></link>'
           '<joint name="j" type="fixed"><parent>a</parent><child>a_tip</child></joint>'
           '</model></sdf>')
    pair = parse_sdf(xml, Resolver())
    bodies = pair.bodies()
    assert [b.name for b in bodies] == ['b', 'a']          # the canonical link's body first
    assert dict(bodies[1].links)['a_tip'].position == pytest.approx((0.1, 0, 0))
    models, links = model_frames(pair, body_poses={'b': Pose((1.0, 0.2, 0.5)),
                                                   'a': yaw(math.pi / 2, (2.0, 0.0, 0.0))})
    assert models['pair'].position == pytest.approx((1.0, 0.0, 0.5))
    assert links['pair::b'].position == pytest.approx((1.0, 0.2, 0.5))
    assert links['pair::a_tip'].position == pytest.approx((2.0, 0.1, 0.0))
