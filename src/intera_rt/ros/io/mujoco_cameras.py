"""The internal cameras' images rendered by MuJoCo offscreen (`--backend mujoco`), in the io
node's process (the realtime process owns the 1 kHz loop and never renders).

The cell is the MuJoCo backend's (boards.mjcf.mjcf_from_urdf: the same link shapes, colours,
floor and table) with one MuJoCo camera per internal camera at its URDF frame (optical:
z ahead, y down; MuJoCo's looks along −z with y up, hence a half turn about x). Per frame:
the joint angles into qpos, forward kinematics, one offscreen render at ~render_scale of
the image's resolution, returned as linear rgb so exposure, gain and the up-scaling take the
software renderer's path (io.render). No shadows, no multisampling: costly on a CPU.

The robot's description is followed as the software renderer follows it: a fragment
grafted, replaced or removed rebuilds the cell in a thread of its own (a render context
takes a second or more on a CPU) while frames keep coming from the current one; each cell
has its own OpenGL context (MUJOCO_GL, default egl), so either thread may draw in it. A
gripper's fingers stand at the separation the caller passes (boards.mjcf.finger_position,
as the plant drives them). The world (spawned models, sim obstacles) is the software
renderer's posed shapes (io.render.world_shapes, obstacle_shapes) added to each frame's
scene: no rebuild when a model moves, appears or goes, but for a mesh the cell lacks.
"""
import math
import os
import threading
import time

import numpy as np

# Before mujoco's GL context module reads it (on the first Renderer).
os.environ.setdefault('MUJOCO_GL', 'egl')
if os.environ['MUJOCO_GL'] in ('egl', 'osmesa'):
    os.environ.setdefault('PYOPENGL_PLATFORM', os.environ['MUJOCO_GL'])

import mujoco  # noqa: E402
from mujoco import gl_context  # noqa: E402

from intera_rt.boards.mjcf import finger_position, mjcf_from_urdf  # noqa: E402
from intera_rt.io.render import BOX, CYLINDER, MESH, SPHERE, contains  # noqa: E402
from intera_rt.model.robot_model import RobotModel  # noqa: E402
from intera_rt.robot import BOARD_JOINTS  # noqa: E402
from intera_rt.world.mesh import load_mesh  # noqa: E402
from intera_rt.world.model import WorldError  # noqa: E402

SCENE_GEOMS = 10000             # the scene's capacity (the robot's shapes and the world's)
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


class _Cell:
    """One compiled cell and what draws it: an OpenGL context of its own (so that a cell can
    be built in another thread while the current one renders), MuJoCo's render context in
    it (its offscreen buffer as large as the largest camera's image) and a scene.

    Args:
        xml: the cell's MJCF (mjcf_from_urdf).
        cameras, sizes: MujocoCameras' (specs; rendered (height, width) per camera).
        meshes: the world's mesh assets to compile in ((file, scale)).
    """

    def __init__(self, xml, cameras, sizes, meshes=()):
        spec = mujoco.MjSpec.from_string(xml)
        for name, cam in cameras.items():
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
        h = max(hw[0] for hw in sizes.values())
        w = max(hw[1] for hw in sizes.values())
        spec.visual.global_.offheight = max(h, 8)
        spec.visual.global_.offwidth = max(w, 8)
        self.xml = xml
        self.m = m = spec.compile()
        self.d = mujoco.MjData(m)
        # MuJoCo moves a mesh's vertices into its own frame (mesh_pos, mesh_quat): a mesh
        # geom drawn at a shape's pose composes that frame back.
        self.meshes = {}
        for k, key in enumerate(meshes):
            i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_MESH, 'world_mesh/%d' % k)
            frame = np.eye(4)
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, m.mesh_quat[i])
            frame[:3, :3], frame[:3, 3] = rot.reshape(3, 3), m.mesh_pos[i]
            self.meshes[key] = (i, frame)
        self.qadr = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j): m.jnt_qposadr[j]
                     for j in range(m.njnt)}
        # A tool's fingers (slides): each at its side's half of the separation.
        self.fingers = [(m.jnt_qposadr[j], *m.jnt_range[j]) for j in range(m.njnt)
                        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE]
        # The camera's near clip (MuJoCo's is one for the model, a share of its extent).
        m.vis.map.znear = min(float(c['near']) for c in cameras.values()) / m.stat.extent
        # A camera does not see the shapes it sits inside (the head's shell around the head
        # camera), as in io.render: each camera gets a geom group of its own for them.
        self.options, self.views = {}, {}
        mujoco.mj_kinematics(m, self.d)
        for k, name in enumerate(cameras):
            group = 3 + k
            if group > 5:
                raise ValueError('at most 3 cameras')
            cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, name)
            eye = self.d.cam_xpos[cam]
            for g in range(m.ngeom):
                if m.geom_group[g] == 1 and _inside(m, self.d, g, eye):
                    m.geom_group[g] = group
            option = mujoco.MjvOption()
            option.geomgroup[:] = 1
            option.geomgroup[2] = 0                    # MuJoCo's default hidden groups
            option.geomgroup[3] = 0                    # the collision shapes
            option.geomgroup[group] = 0
            self.options[name] = option
            view = mujoco.MjvCamera()
            view.type, view.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, cam
            self.views[name] = (view, mujoco.MjrRect(0, 0, sizes[name][1], sizes[name][0]))
        self.scene = mujoco.MjvScene(m, maxgeom=SCENE_GEOMS)
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self.gl = gl_context.GLContext(spec.visual.global_.offwidth, spec.visual.global_.offheight)
        try:
            with self.gl.as_current():            # released after: any thread may draw with it
                self.con = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception:
            self.gl.free()
            raise

    def close(self):
        """Frees the cell's OpenGL resources (from any thread: none has its context then)."""
        if self.gl is not None:
            with self.gl.as_current():
                self.con.free()
            self.gl.free()
            self.gl = None


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
        self.table = table
        self.cameras = {n: dict(s) for n, s in cameras.items()}
        self.sizes = {n: (max(8, round(int(s['height']) * render_scale)),
                          max(8, round(int(s['width']) * render_scale)))
                      for n, s in self.cameras.items()}
        self.unloadable = {}            # (file, scale) → why it cannot be drawn
        self.generation = 0             # counts the cells drawn from (a new one: new images)
        self.descriptions = 0           # counts the descriptions' cells swapped in
        self.build_time = None          # s the last description's rebuild took
        self.build_error = None         # why the last description could not be drawn, or None
        self._lock = threading.Lock()
        self._wanted = None             # a description to rebuild for, not yet started
        self._latest = urdf_xml         # the last description asked for
        self._ready = None              # a cell rebuilt for a new description, not yet drawn
        self._worker = None
        self._cell = _Cell(self._mjcf(urdf_xml), self.cameras, self.sizes)

    @property
    def m(self):
        return self._cell.m

    @property
    def meshes(self):
        """(file, scale) → (mesh id, 4×4 of its compiled frame) of the current cell."""
        return self._cell.meshes

    def _mjcf(self, urdf_xml):
        model = RobotModel(urdf_xml)
        return mjcf_from_urdf(model.urdf, model.limits, BOARD_JOINTS, table=self.table)

    def _build(self, meshes=()):
        """The current description's cell again, with the mesh assets `meshes`."""
        cell = _Cell(self._cell.xml, self.cameras, self.sizes, meshes)
        self._cell.close()
        self._cell = cell
        self.generation += 1

    def set_description(self, urdf_xml):
        """Draw the robot of `urdf_xml` (a fragment grafted, replaced or removed). The cell
        is rebuilt in a thread of its own (a new render context takes a second or more on a
        CPU); frames keep the current cell until update() swaps the new one in. A
        description that cannot be built leaves the current cell (build_error says why)."""
        with self._lock:
            if urdf_xml == self._latest:
                return
            self._wanted = self._latest = urdf_xml
            if self._worker is None:
                self._worker = threading.Thread(target=self._rebuild, name='mujoco cameras rebuild',
                                                daemon=True)
                self._worker.start()

    def _rebuild(self):
        while True:
            with self._lock:
                xml, self._wanted = self._wanted, None
                if xml is None:
                    self._worker = None
                    return
            t0 = time.perf_counter()
            try:
                mjcf = self._mjcf(xml)
                try:
                    cell = _Cell(mjcf, self.cameras, self.sizes, sorted(self._cell.meshes))
                except (WorldError, ValueError):      # a mesh gone: the next frame asks again
                    cell = _Cell(mjcf, self.cameras, self.sizes)
            except Exception as exc:  # noqa: BLE001 - the URDF, the compiler or OpenGL refusing
                self.build_error = '%s: %s' % (type(exc).__name__, exc)
                continue
            with self._lock:
                stale, self._ready = self._ready, cell
                self.build_time, self.build_error = time.perf_counter() - t0, None
            if stale is not None:
                stale.close()

    def update(self):
        """Swap in a cell rebuilt for a new description, if one is ready; returns the
        generation of the cell the next frames come from."""
        with self._lock:
            ready, self._ready = self._ready, None
        if ready is not None:
            self._cell.close()
            self._cell = ready
            self.generation += 1
            self.descriptions += 1
        return self.generation

    def wait_rebuilt(self, timeout):
        """Whether no rebuild is pending or running within `timeout` s (for callers that
        want the new description's images next)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._worker is None:
                    return True
            time.sleep(0.01)
        return False

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

    def render(self, name, positions, extra=(), separation=None):
        """(h, w, 3) float32 linear rgb in [0, 1] of camera `name` at `positions` (joint →
        rad; joints not given stay at zero), with `extra` [(io.render.Shape, 4×4 pose in
        the root frame)]: the world's models and the obstacles; `separation`: the gap
        between a gripper's fingers (m; None: the fingers closed)."""
        extra = list(extra)
        self.update()
        self._need_meshes(extra)
        c = self._cell
        m, d = c.m, c.d
        for joint, q in positions.items():
            adr = c.qadr.get(joint)
            if adr is not None:
                d.qpos[adr] = q
        for adr, lower, upper in c.fingers:
            d.qpos[adr] = 0.0 if separation is None else finger_position(lower, upper, separation)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_camlight(m, d)
        view, rect = c.views[name]
        c.gl.make_current()
        mujoco.mjv_updateScene(m, d, c.options[name], None, view, mujoco.mjtCatBit.mjCAT_ALL, c.scene)
        self._add_geoms(c.scene, d.cam_xpos[view.fixedcamid].copy(), extra)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, c.con)
        mujoco.mjr_render(rect, c.scene, c.con)
        rgb = np.empty((rect.height, rect.width, 3), np.uint8)
        mujoco.mjr_readPixels(rgb, None, rect, c.con)
        # MuJoCo's output is display-encoded (and bottom row first); io.render's conversions
        # apply the gamma again.
        return (rgb[::-1].astype(np.float32) * (1.0 / 255.0)) ** 2.2

    def close(self):
        """Frees the OpenGL resources (a rebuild still running frees its own when done)."""
        with self._lock:
            ready, self._ready = self._ready, None
        for cell in (ready, self._cell):
            if cell is not None:
                cell.close()
