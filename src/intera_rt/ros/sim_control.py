"""The sim-control API of a simulated robot (/intera_rt/sim/*): the E-stop button, error,
an external wrench, a pose reset and obstacles, as services whose requests become typed
sim commands (control.commands) the realtime core applies between two ticks and answers
with (success, message); and the latched list of obstacles placed, for viewers.

Offered by the realtime_loop node only when its boards are simulated.
"""
import json
import threading

import rospy
from intera_rt_msgs.srv import (AddObstacle, AddObstacleResponse, ApplyWrench,
                                ApplyWrenchResponse, RemoveObstacle, RemoveObstacleResponse,
                                SetJointPositions, SetJointPositionsResponse)
from std_msgs.msg import String
from std_srvs.srv import SetBool, SetBoolResponse

from intera_rt.boards.base import check_obstacle
from intera_rt.control import commands as cmds

SIM_NS = '/intera_rt/sim/'


class SimControl:
    """The services, registered at construction. call: a sim command → the core's
    (success, message); on_obstacles: told the obstacles (name → Obstacle) on each change
    (the Gazebo world shows them as models)."""

    def __init__(self, call, on_obstacles=None):
        self._call = call
        self._on_obstacles = on_obstacles
        self._obstacles = {}
        self._lock = threading.Lock()
        rospy.Service(SIM_NS + 'estop_button', SetBool, self._estop)
        rospy.Service(SIM_NS + 'error', SetBool, self._error)
        rospy.Service(SIM_NS + 'apply_wrench', ApplyWrench, self._wrench)
        rospy.Service(SIM_NS + 'set_joint_positions', SetJointPositions, self._positions)
        rospy.Service(SIM_NS + 'add_obstacle', AddObstacle, self._add_obstacle)
        rospy.Service(SIM_NS + 'remove_obstacle', RemoveObstacle, self._remove_obstacle)
        # Read-only: the obstacles placed (for viewers such as rviz_markers).
        self._pub_obstacles = rospy.Publisher(SIM_NS + 'obstacles', String, queue_size=1, latch=True)
        self._publish_obstacles()

    def _estop(self, req):
        return SetBoolResponse(*self._call(cmds.SimEstop(pressed=req.data)))

    def _error(self, req):
        return SetBoolResponse(*self._call(cmds.SimError(on=req.data)))

    def _wrench(self, req):
        w = req.wrench
        values = (w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z)
        return ApplyWrenchResponse(*self._call(cmds.SimWrench(link=req.link, wrench=values,
                                                              duration=req.duration)))

    def _positions(self, req):
        return SetJointPositionsResponse(*self._call(cmds.SimJointPositions(
            names=tuple(req.names), positions=tuple(req.positions))))

    def _add_obstacle(self, req):
        p, o = req.pose.position, req.pose.orientation
        position, quaternion, size = (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), tuple(req.size)
        success, message = self._call(cmds.SimAddObstacle(
            name=req.name, shape=req.shape, position=position, quaternion=quaternion, size=size))
        if success:                      # the core accepted it: the values are valid
            obstacle = check_obstacle(req.name, req.shape, position, quaternion, size)
            with self._lock:
                self._obstacles[req.name] = obstacle
                self._publish_obstacles()
        return AddObstacleResponse(success, message)

    def _remove_obstacle(self, req):
        success, message = self._call(cmds.SimRemoveObstacle(name=req.name))
        if success:
            with self._lock:
                self._obstacles.pop(req.name, None)
                self._publish_obstacles()
        return RemoveObstacleResponse(success, message)

    def _publish_obstacles(self):
        """The latched /intera_rt/sim/obstacles: a JSON list of the obstacles placed, in the
        order placed, each {name, shape, position, quaternion (x, y, z, w), size} as
        add_obstacle took them (quaternion normalised)."""
        self._pub_obstacles.publish(String(json.dumps(
            [o._asdict() for o in self._obstacles.values()])))
        if self._on_obstacles is not None:
            self._on_obstacles(dict(self._obstacles))
