"""world: the simulated world as data — Gazebo-style models (SDF 1.4–1.7, URDF), their
shapes, meshes and friction, the world's frames. No ROS here; the world service node and
the backends build on it (docs/world.md)."""
from intera_rt.model.safe_xml import UnsafeXMLError, check_xml
from intera_rt.world.frames import (
    ROBOT_MODEL, ROBOT_POSE, Snapshot, base_to_world, model_frames, parse_reference, robot_frames,
    world_to_base)
from intera_rt.world.model import (
    Box, Collision, Cylinder, Friction, Inertial, Joint, Link, Mesh, Model, Plane, Pose, RigidBody,
    Sphere, Visual, World, WorldError)
from intera_rt.world.resolve import Resolver
from intera_rt.world.sdf import load_world, parse_sdf, parse_world
from intera_rt.world.urdf import parse_urdf


def parse_model_xml(text, resolver=None, name=None, what='model_xml'):
    """The Model in SpawnModel's model_xml, SDF (<sdf>) or URDF (<robot>), as gazebo_ros
    takes either on both spawn services. WorldError naming what is wrong."""
    try:
        root = check_xml(text, what, root=None)
    except UnsafeXMLError as exc:
        raise WorldError(str(exc)) from None
    if root.tag == 'sdf':
        return parse_sdf(text, resolver, name, what=what)
    if root.tag == 'robot':
        return parse_urdf(text, resolver, name, what=what)
    raise WorldError('%s: the root element is <%s>: expected <sdf> (SDF) or <robot> (URDF)'
                     % (what, root.tag))


__all__ = ['Box', 'Collision', 'Cylinder', 'Friction', 'Inertial', 'Joint', 'Link', 'Mesh', 'Model',
           'Plane', 'Pose', 'RigidBody', 'Sphere', 'Visual', 'World', 'WorldError', 'Resolver',
           'Snapshot', 'ROBOT_MODEL', 'ROBOT_POSE', 'base_to_world', 'world_to_base', 'model_frames',
           'robot_frames', 'parse_reference', 'parse_model_xml', 'parse_sdf', 'parse_urdf',
           'parse_world', 'load_world']
