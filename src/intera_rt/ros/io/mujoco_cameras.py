"""The internal cameras' images rendered by MuJoCo offscreen (`--backend mujoco`), in the io
node's process (the realtime process owns the 1 kHz loop and never renders).

The io node builds its own MuJoCo model of the cell from the robot's URDF with the MuJoCo
backend's model builder (boards.mujoco_boards.mjcf_from_urdf: the same link shapes,
colours, floor and optional table as the physics), adds one MuJoCo camera per internal
camera at its URDF frame (optical frames: z along the view, y down; a MuJoCo camera looks
along its −z with y up, hence a half turn about x), with the camera's vertical field of
view. Per frame: the joint angles into qpos, forward kinematics, one offscreen render at the
reduced resolution (~render_scale of the image's), returned as linear rgb in [0, 1] so
exposure, gain and the up-scaling take the software renderer's path (io.render).

Headless OpenGL: MUJOCO_GL (default egl: Mesa's EGL, CPU llvmpipe without a GPU; osmesa
also works, slower here). Shadows and multisampling are off: on a CPU they cost many
times the rest of the frame.

Sim obstacles (the latched /intera_rt/sim/obstacles list) are drawn as the MuJoCo backend
places them; the model is rebuilt when the list changes.
"""
import math
import os

import numpy as np

# Before mujoco's GL context module reads it (on the first Renderer).
os.environ.setdefault('MUJOCO_GL', 'egl')
if os.environ['MUJOCO_GL'] in ('egl', 'osmesa'):
    os.environ.setdefault('PYOPENGL_PLATFORM', os.environ['MUJOCO_GL'])

import mujoco  # noqa: E402

from intera_rt.boards.mujoco_boards import mjcf_from_urdf  # noqa: E402
from intera_rt.model.robot_model import RobotModel  # noqa: E402
from intera_rt.robot import BOARD_JOINTS  # noqa: E402

OBSTACLE_RGBA = (0.2, 0.45, 0.8, 1.0)    # as the MuJoCo backend colours them (opaque here)


def vertical_fov(hfov, width, height):
    """Degrees of vertical field of view of a pinhole with horizontal `hfov` (rad)."""
    return math.degrees(2.0 * math.atan(math.tan(0.5 * hfov) * height / width))


def _inside(m, d, g, point):
    """Whether `point` (world) lies inside geom `g` (sphere, capsule-less cylinder, box)."""
    p = d.geom_xmat[g].reshape(3, 3).T @ (point - d.geom_xpos[g])
    size = m.geom_size[g]
    kind = m.geom_type[g]
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return float(p @ p) < size[0] ** 2
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return p[0] ** 2 + p[1] ** 2 < size[0] ** 2 and abs(p[2]) < size[1]
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        return bool(np.all(np.abs(p) < size[:3]))
    return False


class MujocoCameras:
    """Offscreen MuJoCo renders of the internal cameras.

    Args:
        urdf_xml: the robot's URDF (as /robot_description).
        cameras: {name: spec} (intera_rt.io.camera.CAMERAS entries: frame, width, height,
            hfov, near).
        render_scale: the rendered resolution as a share of the image's.
        table: the MuJoCo backend's table in the cell (its option `table`).

    Raises whatever MuJoCo raises when no OpenGL context can be made (the caller falls
    back to the software renderer).
    """

    def __init__(self, urdf_xml, cameras, render_scale=0.5, table=False):
        model = RobotModel(urdf_xml)
        self._xml = mjcf_from_urdf(model.urdf, model.limits, BOARD_JOINTS, table=table)
        self.cameras = {n: dict(s) for n, s in cameras.items()}
        self.sizes = {n: (max(8, round(int(s['height']) * render_scale)),
                          max(8, round(int(s['width']) * render_scale)))
                      for n, s in self.cameras.items()}
        self.obstacles = []
        self._renderers = {}
        self._build()

    def _build(self):
        spec = mujoco.MjSpec.from_string(self._xml)
        for name, cam in self.cameras.items():
            body = spec.body(cam['frame'])
            if body is None:
                raise ValueError('the URDF has no link %r (frame of %s)' % (cam['frame'], name))
            c = body.add_camera()
            c.name = name
            c.quat = [0.0, 1.0, 0.0, 0.0]            # optical (z ahead, y down) → MuJoCo's
            c.fovy = vertical_fov(float(cam['hfov']), int(cam['width']), int(cam['height']))
        for o in self.obstacles:
            g = spec.worldbody.add_geom()
            g.name = 'obstacle/%s' % o['name']
            size = [float(s) for s in o['size']]
            if o['shape'] == 'box':
                g.type, g.size = mujoco.mjtGeom.mjGEOM_BOX, [0.5 * s for s in size]
            else:
                g.type, g.size = mujoco.mjtGeom.mjGEOM_SPHERE, [size[0], 0.0, 0.0]
            g.pos = [float(p) for p in o['position']]
            x, y, z, w = (float(q) for q in o['quaternion'])
            g.quat = [w, x, y, z]
            g.contype = g.conaffinity = 0
            g.rgba = list(OBSTACLE_RGBA)
        spec.visual.quality.shadowsize = 0
        spec.visual.quality.offsamples = 0
        h = max(hw[0] for hw in self.sizes.values())
        w = max(hw[1] for hw in self.sizes.values())
        spec.visual.global_.offheight = max(h, 8)
        spec.visual.global_.offwidth = max(w, 8)
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        self._qadr = {}
        for j in range(self.m.njnt):
            self._qadr[mujoco.mj_id2name(self.m, mujoco.mjtObj.mjOBJ_JOINT, j)] = self.m.jnt_qposadr[j]
        for r in self._renderers.values():
            r.close()
        self._renderers = {n: mujoco.Renderer(self.m, *self.sizes[n]) for n in self.cameras}
        # The camera's near clip (MuJoCo's is one for the model, a share of its extent).
        self.m.vis.map.znear = min(float(c['near']) for c in self.cameras.values()) / self.m.stat.extent
        # A camera does not see the shapes it sits inside (the head's shell around the head
        # camera), as in io.render: each camera gets a geom group of its own for them.
        self._options = {}
        mujoco.mj_kinematics(self.m, self.d)
        for k, name in enumerate(self.cameras):
            group = 3 + k
            if group > 5:
                raise ValueError('at most 3 cameras')
            cam = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_CAMERA, name)
            eye = self.d.cam_xpos[cam]
            for g in range(self.m.ngeom):
                if self.m.geom_group[g] == 1 and _inside(self.m, self.d, g, eye):
                    self.m.geom_group[g] = group
            option = mujoco.MjvOption()
            option.geomgroup[:] = 1
            option.geomgroup[2] = 0                    # MuJoCo's default hidden groups
            option.geomgroup[3] = 0                    # the collision shapes
            option.geomgroup[group] = 0
            self._options[name] = option

    def set_obstacles(self, obstacles):
        """The sim obstacles to draw (dicts: name, shape, position, quaternion x y z w, size
        as /intera_rt/sim/obstacles lists them); rebuilds the model if they changed."""
        obstacles = list(obstacles)
        if obstacles != self.obstacles:
            before, self.obstacles = self.obstacles, obstacles
            try:
                self._build()
            except Exception:
                self.obstacles = before         # keep drawing what was drawable
                self._build()
                raise

    def render(self, name, positions):
        """(h, w, 3) float32 linear rgb in [0, 1] of camera `name` at `positions` (joint →
        rad; joints not given stay at zero)."""
        d = self.d
        for joint, q in positions.items():
            adr = self._qadr.get(joint)
            if adr is not None:
                d.qpos[adr] = q
        mujoco.mj_kinematics(self.m, d)
        mujoco.mj_camlight(self.m, d)
        r = self._renderers[name]
        r.update_scene(d, camera=name, scene_option=self._options[name])
        r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        rgb = r.render()
        # MuJoCo's output is display-encoded; io.render's conversions apply the gamma again.
        return (rgb.astype(np.float32) * (1.0 / 255.0)) ** 2.2

    def close(self):
        for r in self._renderers.values():
            r.close()
        self._renderers = {}
