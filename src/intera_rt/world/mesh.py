"""Mesh files (STL, Collada) → a Mesh: the triangles in metres and their convex hull.

Loaded with trimesh (pycollada for Collada); the hull by qhull (scipy). A Collada
file is XML: it passes intera_rt.model.safe_xml first (no DTD or entities, size caps),
and its <unit meter> scales it as Gazebo does (its <up_axis> is ignored, as Gazebo does).
A file that is not a mesh, holds no triangles, is flat (no volume for a hull), too large or
non-finite is refused with WorldError naming the URI.
"""
import io
import os
import threading
from collections import OrderedDict

import numpy as np

from intera_rt.model.safe_xml import UnsafeXMLError, check_xml
from intera_rt.world.model import MAX_SIZE, Mesh, WorldError

MESH_TYPES = {'.stl': 'stl', '.dae': 'dae'}
_FORMATS = {'stl': 'STL', 'dae': 'Collada'}
MAX_MESH_BYTES = 16 << 20        # a collision mesh is kB; a detailed visual a few MB
MAX_MESH_FACES = 500000
MAX_DAE_DEPTH = 64               # Collada nests scene nodes
MAX_DAE_ELEMENTS = 200000
CACHE_SIZE = 32                  # meshes kept (ten blocks with one mesh load it once)

_cache = OrderedDict()
_cache_lock = threading.Lock()          # the world service loads from several threads


def mesh(uri, scale, what, resolver, base_dir=None):
    """The Mesh a URI names, resolved and loaded (shared by SDF and URDF)."""
    path = resolver.resolve(uri, what, base_dir)
    return load_mesh(path, uri, scale, what)


def load_mesh(path, uri, scale=(1.0, 1.0, 1.0), what='mesh'):
    """The Mesh in file `path` (which `uri` named), scaled by `scale` (checked by the
    caller); WorldError naming `what` and the URI when it is not a usable mesh."""
    name = '%s: mesh %r' % (what, uri)
    kind = MESH_TYPES.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise WorldError('%s: %s is not a supported mesh file (%s)'
                         % (name, os.path.basename(path), ', '.join(sorted(MESH_TYPES))))
    try:
        st = os.stat(path)
    except OSError as exc:
        raise WorldError('%s: cannot read %s: %s' % (name, path, exc.strerror)) from None
    if not os.path.isfile(path):
        raise WorldError('%s: %s is not a file' % (name, path))
    if st.st_size > MAX_MESH_BYTES:
        raise WorldError('%s: %s is %d bytes, more than the %d allowed'
                         % (name, path, st.st_size, MAX_MESH_BYTES))
    key = (path, st.st_mtime_ns, st.st_size, tuple(scale))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is not None:
        return Mesh(uri, path, tuple(scale), hit.vertices, hit.faces, hit.hull_vertices, hit.hull_faces)
    with open(path, 'rb') as f:
        data = f.read(MAX_MESH_BYTES + 1)
    vertices, faces = _triangles(data, kind, name)
    mesh = _make(uri, path, scale, vertices, faces, name)
    with _cache_lock:
        _cache[key] = mesh
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return mesh


def _triangles(data, kind, name):
    import trimesh                        # ~0.3 s to import: only when a mesh is loaded
    unit = 1.0
    if kind == 'dae':
        try:
            root = check_xml(data, name, max_bytes=MAX_MESH_BYTES, max_depth=MAX_DAE_DEPTH,
                             max_elements=MAX_DAE_ELEMENTS, root=None)
        except UnsafeXMLError as exc:
            raise WorldError(str(exc)) from None
        if _local(root.tag) != 'COLLADA':
            raise WorldError('%s: the root element is <%s>, not <COLLADA>: not a Collada mesh'
                             % (name, _local(root.tag)))
        unit = _collada_unit(root, name)
    try:
        loaded = trimesh.load(io.BytesIO(data), file_type=kind, force='mesh', process=False)
    except Exception as exc:             # noqa: BLE001 - whatever the file makes the loaders raise
        raise WorldError('%s: not a readable %s mesh: %s: %s'
                         % (name, _FORMATS[kind], type(exc).__name__, exc)) from None
    vertices = np.asarray(getattr(loaded, 'vertices', ()), dtype=float).reshape(-1, 3)
    faces = np.asarray(getattr(loaded, 'faces', ()), dtype=np.int64).reshape(-1, 3)
    if len(faces) == 0 or len(vertices) == 0:
        raise WorldError('%s: no triangles in it: not a %s mesh' % (name, _FORMATS[kind]))
    return vertices * unit, faces


def _local(tag):
    return tag.rsplit('}', 1)[-1] if isinstance(tag, str) else ''


def _collada_unit(root, name):
    for asset in root:
        if _local(asset.tag) != 'asset':
            continue
        for unit in asset:
            if _local(unit.tag) == 'unit' and unit.get('meter') is not None:
                try:
                    meter = float(unit.get('meter'))
                except ValueError:
                    meter = float('nan')
                if not (np.isfinite(meter) and meter > 0.0):
                    raise WorldError('%s: <unit meter=%r>: must be a number > 0'
                                     % (name, unit.get('meter')))
                return meter
    return 1.0


def convex_hull(points, name):
    """(vertices, faces) of the convex hull of `points`, faces wound counter-clockwise seen
    from outside; WorldError when the points span no volume."""
    from scipy.spatial import ConvexHull, QhullError
    try:
        hull = ConvexHull(points, qhull_options='Qt')
    except (QhullError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorldError('%s: its triangles span no volume (flat or degenerate): no convex hull '
                         '(%s)' % (name, first)) from None
    if not hull.volume > 0.0:
        raise WorldError('%s: its triangles span no volume (flat or degenerate): no convex hull' % name)
    faces = hull.simplices.copy()
    p = hull.points
    normals = np.cross(p[faces[:, 1]] - p[faces[:, 0]], p[faces[:, 2]] - p[faces[:, 0]])
    inward = np.einsum('ij,ij->i', normals, hull.equations[:, :3]) < 0.0
    faces[inward] = faces[inward][:, ::-1]
    index = np.full(len(p), -1, dtype=np.int64)
    index[hull.vertices] = np.arange(len(hull.vertices))
    return p[hull.vertices], index[faces]


def _make(uri, path, scale, vertices, faces, name):
    if len(faces) > MAX_MESH_FACES:
        raise WorldError('%s: %d triangles, more than the %d allowed' % (name, len(faces), MAX_MESH_FACES))
    if np.count_nonzero(~np.isfinite(vertices)):
        raise WorldError('%s: vertices that are not finite numbers' % name)
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise WorldError('%s: faces refer to vertices it does not have' % name)
    vertices = vertices * np.asarray(scale, dtype=float)
    extent = np.abs(vertices).max()
    if extent > MAX_SIZE:
        raise WorldError('%s: reaches %.6g m from its origin, more than %g m (a unit mistake?)'
                         % (name, extent, MAX_SIZE))
    hv, hf = convex_hull(vertices[np.unique(faces)], name)
    vertices, faces = np.array(vertices, dtype=float), np.array(faces, dtype=np.int64)
    for a in (vertices, faces, hv, hf):        # shared through the cache: read-only
        a.setflags(write=False)
    return Mesh(uri, path, tuple(float(s) for s in scale), vertices, faces, hv, hf)
