"""What the arm carries, as realtime_loop's adapter sees it: the URDF fragments' tool
(/robot/urdf; the gripper device sends its own) becomes the core's SetTool (its dynamics and
a simulated plant carry it from the next tick), and the adapter's own copies of the arm's
dynamics and avoidance shapes, used for the published gravity, wrench and avoidance terms
off the realtime path, follow it."""
import rospy

from intera_rt.control import commands as cmds
from intera_rt.model.avoidance import default_armnav_xml, shape_links, tool_shapes


class CarriedTool:
    """`dynamics` (the arm's with its tool) and `avoidance_links` (the avoidance shapes'
    links in the order the core's collision_avoidance stage numbers them; None when no
    message needs them), replaced whole when the tool changes."""

    def __init__(self, model, send, with_links):
        """model: the robot's RobotModel; send: sends a typed command to the core;
        with_links: whether avoidance_links are wanted."""
        self.model, self._send = model, send
        self.dynamics = model.dynamics()
        armnav = rospy.get_param('/robot/armnav_robot_description', None)
        if armnav is None:
            armnav = default_armnav_xml()
        self._armnav = armnav
        self._armnav_links = self.avoidance_links = shape_links(armnav) if with_links else None

    def on_model_change(self, manager):
        """A fragment changed the robot's model (manager: the fragments' manager)."""
        tool = manager.tool()
        dynamics = self.model.dynamics()
        dynamics.set_tool(tool)
        shapes = self._tool_shapes(manager.fragment_xml())
        self._send(cmds.SetTool(tool=tool, shapes=shapes))
        self.dynamics = dynamics
        if self._armnav_links is not None:
            self.avoidance_links = shapes.shape_links if shapes else self._armnav_links
        rospy.loginfo('realtime_loop: the arm carries %s', 'a tool of %.3f kg (on %s)' % (
            tool.mass, ', '.join(name for name, _ in tool.loads)) if tool else 'no tool')

    def _tool_shapes(self, fragment_xml):
        """Collision avoidance's shapes with the fragments' (model.avoidance.ToolShapes), the
        pair selection done here, off the realtime path; None without fragments or when
        their shapes cannot be grown (meshes: the armnav shapes alone, logged)."""
        if fragment_xml is None:
            return None
        try:
            return tool_shapes(self._armnav, fragment_xml)
        except ValueError as exc:
            rospy.logwarn('realtime_loop: collision avoidance keeps the arm\'s shapes only: the '
                          'tool\'s cannot join them (%s)', exc)
            return None
