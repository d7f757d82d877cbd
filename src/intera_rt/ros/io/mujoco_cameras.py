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

The world (the spawned models and the sim obstacles) is what the software renderer draws:
the same posed shapes (io.render.world_shapes, obstacle_shapes, at the link poses the
camera node reads), added to each frame's scene as extra geoms — no model rebuild when
a model moves, appears or goes. A mesh needs its triangles in the model: the model is
rebuilt when a frame needs a mesh it lacks (a spawn of a new mesh, not a motion).
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
from intera_rt.io.render import BOX, CYLINDER, MESH, SPHERE, contains  # noqa: E402
from intera_rt.model.robot_model import RobotModel  # noqa: E402
from intera_rt.robot import BOARD_JOINTS  # noqa: E402
from intera_rt.world.mesh import load_mesh  # noqa: E402
from intera_rt.world.model import WorldError  # noqa: E402

GEOM_TYPES = {BOX: mujoco.mjtGeom.mjGEOM_BOX, CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
              SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE, MESH: mujoco.mjtGeom.mjGEOM_MESH}


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
        self.meshes = {}                # (file, scale) → (mesh id, 4×4 of its compiled frame)
        self.unloadable = {}            # (file, scale) → why it cannot be drawn
        self._renderers = {}
        self._build()

    def _build(self, meshes=()):
        """Compile the cell with the cameras and the mesh assets `meshes` ((file, scale))."""
        spec = mujoco.MjSpec.from_string(self._xml)
        for name, cam in self.cameras.items():
            body = spec.body(cam['frame'])
            if body is None:
                raise ValueError('the URDF has no link %r (frame of %s)' % (cam['frame'], name))
            c = body.add_camera()
            c.name = name
            c.quat = [0.0, 1.0, 0.0, 0.0]            # optical (z ahead, y down) → MuJoCo's
            c.fovy = vertical_fov(float(cam['hfov']), int(cam['width']), int(cam['height']))
        for k, (path, scale) in enumerate(meshes):
            loaded = load_mesh(path, path, scale)
            mesh = spec.add_mesh(name='world_mesh/%d' % k)
            mesh.uservert = np.asarray(loaded.vertices, float).reshape(-1).tolist()
            mesh.userface = np.asarray(loaded.faces, int).reshape(-1).tolist()
        spec.visual.quality.shadowsize = 0
        spec.visual.quality.offsamples = 0
        h = max(hw[0] for hw in self.sizes.values())
        w = max(hw[1] for hw in self.sizes.values())
        spec.visual.global_.offheight = max(h, 8)
        spec.visual.global_.offwidth = max(w, 8)
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        # MuJoCo moves a mesh's vertices into its own frame (mesh_pos, mesh_quat): a mesh
        # geom drawn at a shape's pose composes that frame back.
        self.meshes = {}
        for k, key in enumerate(meshes):
            i = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_MESH, 'world_mesh/%d' % k)
            frame = np.eye(4)
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, self.m.mesh_quat[i])
            frame[:3, :3], frame[:3, 3] = rot.reshape(3, 3), self.m.mesh_pos[i]
            self.meshes[key] = (i, frame)
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

    def _need_meshes(self, extra):
        """Rebuild with the meshes `extra` draws when the model lacks one (then with this
        frame's meshes only, so deleted models' meshes do not pile up). A mesh that cannot be loaded or compiled is left
        out of the images (in `unloadable`, with why), not retried every frame."""
        wanted = {(s.mesh, tuple(s.dims)) for s, _ in extra if s.kind == MESH}
        wanted -= set(self.unloadable)
        if wanted <= set(self.meshes):
            return
        good = sorted(wanted)
        for key in list(good):
            try:
                load_mesh(key[0], key[0], key[1])
            except WorldError as exc:
                self.unloadable[key] = str(exc)
                good.remove(key)
        try:
            self._build(good)
        except ValueError as exc:        # MuJoCo's compiler: a mesh it refuses
            for key in good:
                self.unloadable[key] = str(exc)
            self._build([])

    def _add_geoms(self, scene, eye, extra):
        """The world's shapes into `scene` (after update_scene), but those that contain the
        camera's `eye` (as io.render leaves them out)."""
        for shape, pose in extra:
            if shape.kind == MESH:
                found = self.meshes.get((shape.mesh, tuple(shape.dims)))
                if found is None:
                    continue
                pose = pose @ found[1]
            elif contains(shape, pose[:3, :3].T @ (eye - pose[:3, 3])):
                continue
            if scene.ngeom >= scene.maxgeom:
                return
            g = scene.geoms[scene.ngeom]
            size = np.ones(3) if shape.kind == MESH else np.pad(shape.dims, (0, 3 - len(shape.dims)))
            mujoco.mjv_initGeom(g, GEOM_TYPES[shape.kind], size, pose[:3, 3],
                                pose[:3, :3].reshape(-1), np.append(shape.color, 1.0).astype(np.float32))
            if shape.kind == MESH:
                g.dataid = 2 * found[0]          # the mesh itself (2·id + 1: its hull)
            scene.ngeom += 1

    def render(self, name, positions, extra=()):
        """(h, w, 3) float32 linear rgb in [0, 1] of camera `name` at `positions` (joint →
        rad; joints not given stay at zero), with `extra` [(io.render.Shape, 4×4 pose in
        the root frame)]: the world's models and the obstacles."""
        extra = list(extra)
        self._need_meshes(extra)
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
        cam = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_CAMERA, name)
        self._add_geoms(r.scene, d.cam_xpos[cam].copy(), extra)
        rgb = r.render()
        # MuJoCo's output is display-encoded; io.render's conversions apply the gamma again.
        return (rgb.astype(np.float32) * (1.0 / 255.0)) ** 2.2

    def close(self):
        for r in self._renderers.values():
            r.close()
        self._renderers = {}
