"""A small software renderer for the internal cameras: the robot's primitive visual shapes
(URDF boxes, cylinders, spheres) posed by its joint angles, with the world's models and the
sim obstacles (`extra` shapes), on a checkered floor before a plain wall, seen through a
pinhole camera. numpy only, no GPU. A world model's mesh is drawn as its convex hull (the
shape MuJoCo collides with; MuJoCo's cameras draw its triangles).

Ray casting: each pixel's ray is intersected analytically with each shape, but only over
the pixels inside the shape's projected bounding box (a conservative box from its bounding
sphere), so a shape costs in proportion to the image area it may cover. The nearest hit
per pixel wins (a depth buffer of ray lengths). Shading: the URDF material colour lit by
an ambient term, a light from above and a weak headlight, so shapes read as solid, not
as flat silhouettes. Shapes that contain the camera (the head's shell around the head
camera) are left out, and surfaces nearer than the camera's near clip are not drawn.

Screens: an image can be shown on the front (+z) face of a link's box — the head's
`screen` shows what was sent to /robot/head_display. A screen is self-lit (its pixels are
drawn as they are, not shaded) and shows through the shapes of its parent link that
enclose it: the URDF's primitive head is a sphere around its screen, where on the robot the
screen is the head's face.

Camera frame: x right, y down, z along the view (the optical convention). World: the
URDF's root frame (base), z up.
"""
import functools
import math

import numpy as np
from urdf_parser_py.urdf import URDF, Box, Cylinder, Sphere

from intera_rt.model.joint_frames import JointFrames, link_poses, pose_matrix
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.world.mesh import load_mesh
from intera_rt.world.model import WorldError

SPHERE, CYLINDER, BOX, MESH = 0, 1, 2, 3       # MESH: drawn as its convex hull
DEFAULT_COLOR = (0.6, 0.6, 0.6)
AMBIENT, DIFFUSE, HEADLIGHT = 0.35, 0.55, 0.2
LIGHT_DIR = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])   # toward the light
FLOOR_TILE = 0.25                       # m, checker squares
FLOOR_COLORS = (0.65, 0.38)             # light / dark tile (grey)
WALL_LOW, WALL_HIGH = np.array([0.50, 0.52, 0.55]), np.array([0.78, 0.80, 0.84])
FOG = 15.0                              # m: the floor fades into the wall colour with distance
WORLD_COLOR = (0.85, 0.6, 0.25)         # the world's models (as RViz's markers show them)
OBSTACLE_COLOR = (0.2, 0.45, 0.8)       # add_obstacle's obstacles
PLANE_THICKNESS = 0.001                 # m: a plane is drawn as a thin box of its display size


class Shape:
    """One visual primitive of a link: kind, dimensions (sphere: radius; cylinder: radius,
    half length; box: half extents; mesh: its scale), pose in its link, colour,
    bounding-box corners, the mesh's file and its hull's planes (a mesh only: outward unit
    normals (F, 3) and offsets (F,), inside where normals · x <= offsets; None: the file
    could not be read, not drawn)."""
    __slots__ = ('link', 'kind', 'dims', 'origin', 'color', 'corners', 'mesh', 'hull')

    def __init__(self, link, kind, dims, origin, color, mesh=None):
        self.link, self.kind, self.dims, self.origin = link, kind, dims, origin
        self.color = np.asarray(color, np.float32)
        self.mesh = mesh
        self.hull, self.corners = None, None
        if kind == MESH:
            hull = hull_planes(mesh, tuple(dims)) if mesh else None
            if hull is not None:
                self.hull, self.corners = hull[:2], hull[2]
        else:
            self.corners = _corners(self)


@functools.lru_cache(maxsize=64)
def hull_planes(path, scale):
    """(normals, offsets, bounding-box corners) of the convex hull of the mesh file `path`
    scaled by `scale` (world.mesh: STL or Collada, loaded once), or None when it cannot be
    loaded (the world refused it at spawn already)."""
    try:
        mesh = load_mesh(path, path, scale)
    except (WorldError, OSError):
        return None
    v, f = np.asarray(mesh.hull_vertices, float), np.asarray(mesh.hull_faces)
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n /= np.linalg.norm(n, axis=1)[:, None]           # (wound counter-clockwise: outward)
    lo, hi = v.min(0), v.max(0)
    corners = np.array([[(lo, hi)[sx][0], (lo, hi)[sy][1], (lo, hi)[sz][2]]
                        for sx in (0, 1) for sy in (0, 1) for sz in (0, 1)])
    return (n.astype(np.float32), np.einsum('ij,ij->i', n, v[f[:, 0]]).astype(np.float32),
            corners)


class Scene:
    """The robot's visual shapes from URDF XML, and the floor below it."""

    def __init__(self, urdf_xml):
        urdf_xml = safe_urdf(urdf_xml)          # hostile or oversized XML: UnsafeXMLError
        robot = URDF.from_xml_string(urdf_xml.encode() if isinstance(urdf_xml, str) else urdf_xml)
        self.root = robot.get_root()
        self.frames = JointFrames(robot)
        self.parents = {j.child: j.parent for j in robot.joints}
        # A tool's fingers (prismatic joints): (name, lower, upper), posed by the gripper's
        # reported gap rather than by the arm's joint states.
        self.fingers = [(j.name, j.limit.lower, j.limit.upper) for j in robot.joints
                        if j.type == 'prismatic' and j.limit is not None]
        colors = {m.name: tuple(m.color.rgba[:3]) for m in (robot.materials or [])
                  if m.color is not None}
        self.shapes = []
        for link in robot.links:
            for visual in link.visuals or []:
                shape = _shape(link.name, visual, colors)
                if shape is not None:
                    self.shapes.append(shape)
        self.floor_z = self._floor(self.link_poses({}))

    def _floor(self, poses):
        """The floor: the lowest point of any shape at the zero pose (the pedestal's feet;
        1 m below the root when there is no shape)."""
        low = math.inf
        for s in self.shapes:
            pose = poses[s.link] @ s.origin
            low = min(low, float((pose[:3, :3] @ _corners(s).T)[2].min() + pose[2, 3]))
        return low if math.isfinite(low) else -1.0

    def shells(self, link):
        """The shapes of `link`'s parent that enclose the origin of `link`'s shapes (at the
        zero pose): what a screen on `link` shows through."""
        cache = self.__dict__.setdefault('_shells', {})
        if link not in cache:
            cache[link] = self._find_shells(link)
        return cache[link]

    def _find_shells(self, link):
        parent = self.parents.get(link)
        poses = self.link_poses({})
        inner = [poses[s.link] @ s.origin for s in self.shapes if s.link == link]
        out = []
        for s in self.shapes:
            if s.link != parent or s.link not in poses:
                continue
            to_shape = np.linalg.inv(poses[s.link] @ s.origin)
            if any(contains(s, (to_shape @ p[:, 3])[:3]) for p in inner):
                out.append(s)
        return out

    def only(self, links):
        """A copy of the scene with the shapes of `links` only (same floor)."""
        part = Scene.__new__(Scene)
        part.root, part.frames, part.floor_z = self.root, self.frames, self.floor_z
        part.parents = self.parents
        part.shapes = [s for s in self.shapes if s.link in links]
        return part

    def link_poses(self, positions):
        """4×4 pose in the root frame of every link at `positions` (joint → value)."""
        return link_poses(self.frames, positions, self.root)

    def posed(self, positions):
        """[(shape, 4×4 world pose)] at `positions`."""
        poses = self.link_poses(positions)
        return [(s, poses[s.link] @ s.origin) for s in self.shapes if s.link in poses]


def _shape(link, visual, colors):
    g = visual.geometry
    o = visual.origin
    origin = pose_matrix(o.xyz if o is not None and o.xyz else (0, 0, 0),
                         _rpy_quat(o.rpy if o is not None and o.rpy else (0, 0, 0)))
    mat = visual.material
    color = DEFAULT_COLOR
    if mat is not None:
        if mat.color is not None:
            color = tuple(mat.color.rgba[:3])
        elif mat.name in colors:
            color = colors[mat.name]
    if isinstance(g, Sphere):
        return Shape(link, SPHERE, (float(g.radius),), origin, color)
    if isinstance(g, Cylinder):
        return Shape(link, CYLINDER, (float(g.radius), 0.5 * float(g.length)), origin, color)
    if isinstance(g, Box):
        return Shape(link, BOX, tuple(0.5 * float(v) for v in g.size), origin, color)
    return None                           # meshes: not drawn


def world_shapes(models, link_poses):
    """The world's models as posed shapes: [(Shape, 4×4 pose in the root frame)].

    Args:
        models: /intera_rt/sim/world's list ({name, links: [{name, visuals: [{shape, size,
            position, quaternion}]}]}).
        link_poses: {"model::link": 4×4 pose in the root frame}; a link without one is left out.
    Boxes, cylinders, spheres, planes (a thin box) and meshes (kind MESH: the file and its
    scale; drawn here as the convex hull, by MuJoCo's cameras as their triangles).
    """
    out = []
    for model in models:
        for link in model['links']:
            name = '%s::%s' % (model['name'], link['name'])
            at = link_poses.get(name)
            if at is None:
                continue
            for v in link['visuals']:
                size = [float(x) for x in v['size']]
                kind = v['shape']
                if kind == 'box':
                    shape = (BOX, tuple(0.5 * x for x in size))
                elif kind == 'sphere':
                    shape = (SPHERE, (size[0],))
                elif kind == 'cylinder':
                    shape = (CYLINDER, (size[0], 0.5 * size[1]))
                elif kind == 'plane':
                    shape = (BOX, (0.5 * size[0], 0.5 * size[1], 0.5 * PLANE_THICKNESS))
                elif kind == 'mesh' and v.get('path'):
                    shape = (MESH, tuple(size))
                else:
                    continue
                s = Shape(name, shape[0], shape[1], pose_matrix(v['position'], v['quaternion']),
                          WORLD_COLOR, v.get('path') if shape[0] == MESH else None)
                out.append((s, at @ s.origin))
    return out


def obstacle_shapes(obstacles):
    """/intera_rt/sim/obstacles' boxes (full edge lengths) and spheres (radius), posed in
    `base` (the root frame): [(Shape, 4×4 pose)]."""
    out = []
    for o in obstacles:
        size = [float(x) for x in o['size']]
        kind, dims = (SPHERE, (size[0],)) if o['shape'] == 'sphere' else \
            (BOX, tuple(0.5 * x for x in size))
        pose = pose_matrix([float(x) for x in o['position']], [float(x) for x in o['quaternion']])
        out.append((Shape(str(o['name']), kind, dims, np.eye(4), OBSTACLE_COLOR), pose))
    return out


def _rpy_quat(rpy):
    r, p, y = (0.5 * float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


# the 12 edges of a box, as index pairs into _corners' order (corners differing in one axis)
_EDGES = np.array([(i, i ^ bit) for i in range(8) for bit in (1, 2, 4) if i < i ^ bit])


def _corners(shape):
    if shape.kind == SPHERE:
        r = shape.dims[0]
        e = (r, r, r)
    elif shape.kind == CYLINDER:
        e = (shape.dims[0], shape.dims[0], shape.dims[1])
    else:
        e = shape.dims
    return np.array([[sx * e[0], sy * e[1], sz * e[2]] for sx in (-1, 1) for sy in (-1, 1)
                     for sz in (-1, 1)])


def intrinsics(width, height, hfov):
    """f (= fx = fy), cx, cy in pixels of a pinhole camera `width` pixels wide over a
    horizontal field of view `hfov` (rad)."""
    return 0.5 * width / math.tan(0.5 * hfov), 0.5 * (width - 1), 0.5 * (height - 1)


class Camera:
    """A pinhole camera: `width`×`height` pixels, horizontal field of view `hfov` (rad),
    near clip `near` (m). `rays` are the unit view directions of every pixel (camera
    frame), computed once."""

    def __init__(self, width, height, hfov, near=0.02):
        self.width, self.height, self.near = int(width), int(height), float(near)
        self.f, self.cx, self.cy = intrinsics(self.width, self.height, hfov)
        u = (np.arange(self.width, dtype=np.float32) - self.cx) / self.f
        v = (np.arange(self.height, dtype=np.float32) - self.cy) / self.f
        d = np.empty((self.height, self.width, 3), np.float32)
        d[..., 0] = u[None, :]
        d[..., 1] = v[:, None]
        d[..., 2] = 1.0
        d /= np.linalg.norm(d, axis=2, keepdims=True)
        self.rays = d

    def bbox(self, corners):
        """Pixel rows and columns (v0, v1, u0, u1) that a convex body with these `corners`
        (n×3, camera frame; a shape's bounding box) may cover: the projection of its part
        in front of the near plane (edges crossing it are clipped). None when nothing of
        it is in view."""
        z = corners[:, 2]
        front = z >= self.near
        if not front.any():
            return None
        pts = corners[front]
        if not front.all():
            a, b = _EDGES[:, 0], _EDGES[:, 1]
            cross = front[a] != front[b]
            if cross.any():
                pa, pb = corners[a[cross]], corners[b[cross]]
                s = (self.near - pa[:, 2]) / (pb[:, 2] - pa[:, 2])
                pts = np.vstack((pts, pa + s[:, None] * (pb - pa)))
        u = pts[:, 0] / pts[:, 2] * self.f + self.cx
        v = pts[:, 1] / pts[:, 2] * self.f + self.cy
        u0 = max(int(math.floor(u.min())), 0)
        u1 = min(int(math.ceil(u.max())) + 1, self.width)
        v0 = max(int(math.floor(v.min())), 0)
        v1 = min(int(math.ceil(v.max())) + 1, self.height)
        if u0 >= u1 or v0 >= v1:
            return None
        return v0, v1, u0, u1


def render(scene, positions, camera_pose, camera, screens=None, extra=()):
    """Render the scene at joint `positions` from `camera_pose` (4×4, camera frame in the
    root frame).

    Args:
        extra: [(Shape, 4×4 pose in the root frame)] drawn with the robot: the world's
            models and the obstacles (world_shapes, obstacle_shapes); meshes as their hulls.
        screens: {link: (H, W, 3) float32 linear rgb}: images shown on the +z face of each
            link's box (rows from +y down, columns along +x; see the module's docstring).
    Returns:
        rgb: (height, width, 3) float32 in [0, 1] (linear, before exposure).
        depth: (height, width) float32, ray length to the nearest shape's surface (inf where
            only floor or wall is seen).
    """
    cam = camera
    h, w = cam.height, cam.width
    rot = camera_pose[:3, :3].astype(np.float32)
    eye = camera_pose[:3, 3]
    rgb = _background(scene, cam, rot, eye)
    depth = np.full((h, w), np.inf, np.float32)
    light_cam = (rot.T @ LIGHT_DIR).astype(np.float32)
    world_to_cam = np.linalg.inv(camera_pose)
    posed = scene.posed(positions) + list(extra)
    owner = np.full((h, w), -1, np.int32) if screens else None     # which shape is seen
    for k, (shape, pose) in enumerate(posed):
        if shape.corners is None:                     # (a mesh whose file did not load)
            continue
        rel = world_to_cam @ pose                     # shape frame → camera frame
        r = rel[:3, :3].astype(np.float32)
        o = (-(r.T @ rel[:3, 3])).astype(np.float32)  # the camera's origin in the shape frame
        if contains(shape, o):
            continue
        box = cam.bbox(shape.corners @ rel[:3, :3].T + rel[:3, 3])
        if box is None:
            continue
        v0, v1, u0, u1 = box
        d = cam.rays[v0:v1, u0:u1].reshape(-1, 3)
        ds = d @ r                                    # ray directions in the shape frame
        t, n = _intersect(shape, o, ds, cam.near)
        if t is None:
            continue
        zregion = depth[v0:v1, u0:u1].reshape(-1)
        hit = t < zregion
        if not hit.any():
            continue
        idx = np.nonzero(hit)[0]
        nc = n[idx] @ r.T                             # normals in the camera frame
        lam = (AMBIENT + DIFFUSE * np.maximum(nc @ light_cam, 0.0)
               + HEADLIGHT * np.maximum(-(nc * d[idx]).sum(1), 0.0))
        zregion[idx] = t[idx]
        depth[v0:v1, u0:u1] = zregion.reshape(v1 - v0, u1 - u0)
        region = rgb[v0:v1, u0:u1].reshape(-1, 3)
        region[idx] = shape.color[None, :] * lam[:, None]
        rgb[v0:v1, u0:u1] = region.reshape(v1 - v0, u1 - u0, 3)
        if owner is not None:
            oregion = owner[v0:v1, u0:u1].reshape(-1)
            oregion[idx] = k
            owner[v0:v1, u0:u1] = oregion.reshape(v1 - v0, u1 - u0)
    for link, image in (screens or {}).items():
        _draw_screen(scene, posed, owner, link, image, world_to_cam, cam, rgb, depth)
    np.clip(rgb, 0.0, 1.0, out=rgb)
    return rgb, depth


def _draw_screen(scene, posed, owner, link, image, world_to_cam, cam, rgb, depth):
    """`image` on the +z face of `link`'s box, where nothing but its shells is nearer."""
    k = next((i for i, (s, _) in enumerate(posed) if s.link == link and s.kind == BOX), None)
    if k is None:
        return
    shape, pose = posed[k]
    ex, ey, ez = shape.dims
    rel = world_to_cam @ pose
    r = rel[:3, :3].astype(np.float32)
    o = (-(r.T @ rel[:3, 3])).astype(np.float32)
    if o[2] <= ez:                                   # the camera is behind the screen's face
        return
    face = np.array([[sx * ex, sy * ey, ez] for sx in (-1, 1) for sy in (-1, 1)] * 2)
    box = cam.bbox(face @ rel[:3, :3].T + rel[:3, 3])
    if box is None:
        return
    v0, v1, u0, u1 = box
    d = cam.rays[v0:v1, u0:u1].reshape(-1, 3)
    ds = d @ r
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (ez - o[2]) / ds[:, 2]
    x, y = o[0] + t * ds[:, 0], o[1] + t * ds[:, 1]
    shell_shapes = scene.shells(link)
    shells = [i for i, (s, _) in enumerate(posed) if any(s is x for x in shell_shapes)]
    seen_owner = owner[v0:v1, u0:u1].reshape(-1)
    zregion = depth[v0:v1, u0:u1].reshape(-1)
    through = np.isin(seen_owner, shells) if shells else np.zeros(len(t), bool)
    hit = ((ds[:, 2] < 0) & (t >= cam.near) & (np.abs(x) <= ex) & (np.abs(y) <= ey)
           & ((t < zregion) | through))
    if not hit.any():
        return
    idx = np.nonzero(hit)[0]
    rows, cols = image.shape[:2]
    col = np.clip(((x[idx] + ex) / (2 * ex) * cols).astype(np.intp), 0, cols - 1)
    row = np.clip(((ey - y[idx]) / (2 * ey) * rows).astype(np.intp), 0, rows - 1)
    zregion[idx] = t[idx]
    depth[v0:v1, u0:u1] = zregion.reshape(v1 - v0, u1 - u0)
    region = rgb[v0:v1, u0:u1].reshape(-1, 3)
    region[idx] = image[row, col]
    rgb[v0:v1, u0:u1] = region.reshape(v1 - v0, u1 - u0, 3)


def _background(scene, cam, rot, eye):
    """Wall (a vertical gradient) and the checkered floor at scene.floor_z."""
    dw = cam.rays.reshape(-1, 3) @ rot.T               # ray directions in the world
    up = dw[:, 2]
    rgb = WALL_LOW[None, :] + (WALL_HIGH - WALL_LOW)[None, :] * np.clip(0.5 + up, 0.0, 1.0)[:, None]
    rgb = rgb.astype(np.float32)
    height = eye[2] - scene.floor_z
    down = up < -1e-6
    if height > 0 and down.any():
        idx = np.nonzero(down)[0]
        t = height / -up[idx]
        px = eye[0] + t * dw[idx, 0]
        py = eye[1] + t * dw[idx, 1]
        tile = (np.floor(px / FLOOR_TILE) + np.floor(py / FLOOR_TILE)) % 2
        shade = np.where(tile == 0, FLOOR_COLORS[0], FLOOR_COLORS[1]).astype(np.float32)
        shade *= AMBIENT + DIFFUSE * LIGHT_DIR[2] + HEADLIGHT * -up[idx]
        fog = np.exp(-t / FOG)[:, None].astype(np.float32)
        rgb[idx] = shade[:, None] * fog + rgb[idx] * (1.0 - fog)
    return rgb.reshape(cam.height, cam.width, 3)


def contains(shape, o):
    """Whether point `o` (the shape's frame) lies inside `shape` (a mesh: its hull)."""
    if shape.kind == MESH:
        return shape.hull is not None and bool(np.all(shape.hull[0] @ o <= shape.hull[1]))
    if shape.kind == SPHERE:
        return float(o @ o) <= shape.dims[0] ** 2
    if shape.kind == CYLINDER:
        return o[0] ** 2 + o[1] ** 2 <= shape.dims[0] ** 2 and abs(o[2]) <= shape.dims[1]
    return bool(np.all(np.abs(o) <= shape.dims))


def _intersect(shape, o, d, near):
    """Ray lengths t (inf on a miss or nearer than `near`) and unit normals (shape frame)
    of rays from `o` along the rows of `d` (unit, shape frame)."""
    if shape.kind == SPHERE:
        r = shape.dims[0]
        b = d @ o
        disc = b * b - (float(o @ o) - r * r)
        ok = disc >= 0
        t = np.full(len(d), np.inf, np.float32)
        t[ok] = -b[ok] - np.sqrt(disc[ok])
        t[t < near] = np.inf
        n = (o[None, :] + np.where(np.isfinite(t), t, 0.0)[:, None] * d) / r
        return t, n
    if shape.kind == CYLINDER:
        return _cylinder(shape.dims[0], shape.dims[1], o, d, near)
    if shape.kind == MESH:
        return _hull(shape.hull[0], shape.hull[1], o, d, near)
    return _box(np.asarray(shape.dims, np.float32), o, d, near)


def _cylinder(r, hl, o, d, near):
    n_rays = len(d)
    t = np.full(n_rays, np.inf, np.float32)
    n = np.zeros((n_rays, 3), np.float32)
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    a = dx * dx + dy * dy
    b = o[0] * dx + o[1] * dy
    c = o[0] ** 2 + o[1] ** 2 - r * r
    disc = b * b - a * c
    ok = (disc >= 0) & (a > 1e-12)
    ts = np.full(n_rays, np.inf, np.float32)
    ts[ok] = (-b[ok] - np.sqrt(disc[ok])) / a[ok]
    zs = o[2] + ts * dz
    side = np.isfinite(ts) & (ts >= near) & (np.abs(zs) <= hl)
    t[side] = ts[side]
    n[side, 0] = (o[0] + ts[side] * dx[side]) / r
    n[side, 1] = (o[1] + ts[side] * dy[side]) / r
    # the cap facing the camera (the other one is hidden behind the side or this cap)
    if abs(o[2]) > hl:
        zc = hl if o[2] > 0 else -hl
        with np.errstate(divide='ignore', invalid='ignore'):
            tc = (zc - o[2]) / dz
        px, py = o[0] + tc * dx, o[1] + tc * dy
        cap = np.isfinite(tc) & (tc >= near) & (px * px + py * py <= r * r) & (tc < t)
        t[cap] = tc[cap]
        n[cap] = 0.0
        n[cap, 2] = 1.0 if zc > 0 else -1.0
    return t, n


def _box(e, o, d, near):
    safe = np.where(np.abs(d) < 1e-12, np.float32(1e-12), d)
    t1 = (-e[None, :] - o[None, :]) / safe
    t2 = (e[None, :] - o[None, :]) / safe
    tlo = np.minimum(t1, t2)
    thi = np.maximum(t1, t2)
    axis = np.argmax(tlo, axis=1)
    tmin = tlo[np.arange(len(d)), axis]
    tmax = thi.min(axis=1)
    hit = (tmax >= tmin) & (tmin >= near)
    t = np.where(hit, tmin, np.inf).astype(np.float32)
    n = np.zeros((len(d), 3), np.float32)
    rows = np.nonzero(hit)[0]
    n[rows, axis[rows]] = -np.sign(d[rows, axis[rows]])
    return t, n


def _hull(normals, offsets, o, d, near):
    """A convex polytope's {x: normals · x <= offsets}: each ray enters at the last plane it
    crosses inward and leaves at the first it crosses outward (the slab test of _box over
    the hull's faces)."""
    dn = d @ normals.T                                 # (rays, faces): the rays' approach
    gap = offsets - normals @ o                        # (faces,): >= 0, the camera outside
    with np.errstate(divide='ignore', invalid='ignore'):
        tp = gap[None, :] / dn
    enter = np.where(dn < 0, tp, -np.inf)
    leave = np.where(dn > 0, tp, np.inf)
    # a ray parallel to a face the camera is outside of never enters
    blocked = ((dn == 0) & (gap[None, :] < 0)).any(1)
    face = np.argmax(enter, axis=1)
    tmin = enter[np.arange(len(d)), face]
    hit = ~blocked & (leave.min(1) >= tmin) & (tmin >= near)
    t = np.where(hit, tmin, np.inf).astype(np.float32)
    n = np.zeros((len(d), 3), np.float32)
    rows = np.nonzero(hit)[0]
    n[rows] = normals[face[rows]]
    return t, n


def resize_nearest(img, height, width):
    """`img` (h, w[, c]) resampled to height × width (nearest pixel)."""
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img
    if height % h == 0 and width % w == 0:                 # whole factors: a cheaper copy
        return img.repeat(height // h, axis=0).repeat(width // w, axis=1)
    rows = ((np.arange(height) + 0.5) * h / height).astype(np.intp)
    cols = ((np.arange(width) + 0.5) * w / width).astype(np.intp)
    return img[rows[:, None], cols[None, :]]


def to_bgr8(rgb, gain=1.0):
    """(h, w, 3) linear rgb in [0, 1] → bgr8 bytes of an image, brightness × `gain`
    (exposure and gain), with a display gamma."""
    img = np.clip(rgb * gain, 0.0, 1.0) ** (1 / 2.2)
    return (img[..., ::-1] * 255.0 + 0.5).astype(np.uint8)


def to_mono8(rgb, gain=1.0):
    """Luminance (Rec. 601) as mono8, brightness × `gain`, with a display gamma."""
    y = rgb @ np.array([0.299, 0.587, 0.114], np.float32)
    img = np.clip(y * gain, 0.0, 1.0) ** (1 / 2.2)
    return (img * 255.0 + 0.5).astype(np.uint8)
