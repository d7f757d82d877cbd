"""Where a model's URIs point: model:// on GAZEBO_MODEL_PATH, package:// on
ROS_PACKAGE_PATH, file:// and absolute paths, and paths relative to the file that names
them. Gazebo's rules, without Gazebo: model://NAME/rest is NAME/rest in the first model
path directory that has it; package://PKG/rest is rest in the package PKG (the directory
holding a package.xml whose <name> is PKG). No '..' in a URI: a model sent over the
network must not reach outside the directories it names.
"""
import os

from intera_rt.model.safe_xml import UnsafeXMLError, check_xml
from intera_rt.world.model import WorldError

MAX_CRAWL_DIRS = 20000        # directories looked at when a package is not a direct child
MAX_CRAWL_DEPTH = 3           # a workspace's src/repo/package


def _split(value):
    return tuple(p for p in (value or '').split(os.pathsep) if p)


class Resolver:
    """Resolves URIs to files.

    Args:
        model_paths: the GAZEBO_MODEL_PATH directories, searched in order.
        package_paths: the ROS_PACKAGE_PATH directories, searched in order."""

    def __init__(self, model_paths=(), package_paths=()):
        self.model_paths = tuple(model_paths)
        self.package_paths = tuple(package_paths)
        self._packages = {}

    @classmethod
    def from_environ(cls, environ=None):
        env = os.environ if environ is None else environ
        return cls(_split(env.get('GAZEBO_MODEL_PATH')), _split(env.get('ROS_PACKAGE_PATH')))

    def resolve(self, uri, what, base_dir=None):
        """The existing file `uri` names; WorldError naming `what` and the URI otherwise.
        `base_dir`: the directory of the file that names it (for relative paths)."""
        if not isinstance(uri, str) or not uri.strip():
            raise WorldError('%s: a URI is required, got %r' % (what, uri))
        uri = uri.strip()
        scheme, sep, rest = uri.partition('://')
        if not sep:
            scheme, rest = '', uri
        parts = [p for p in rest.split('/') if p]
        if '..' in parts:
            raise WorldError('%s: URI %r: ".." is not allowed in a URI' % (what, uri))
        if scheme == 'model':
            if not parts:
                raise WorldError('%s: URI %r names no model' % (what, uri))
            return self._first(uri, what, [os.path.join(d, *parts) for d in self.model_paths],
                               'GAZEBO_MODEL_PATH (%s)' % (os.pathsep.join(self.model_paths) or 'empty'))
        if scheme == 'package':
            if not parts:
                raise WorldError('%s: URI %r names no package' % (what, uri))
            root = self.package(parts[0], what, uri)
            return self._first(uri, what, [os.path.join(root, *parts[1:])], 'package %r at %s'
                               % (parts[0], root))
        if rest.startswith('/') and scheme in ('file', ''):
            return self._first(uri, what, ['/' + '/'.join(parts)], 'the file system')
        if scheme in ('file', ''):                 # file://duck.dae: next to the model's file
            if base_dir is None:
                raise WorldError('%s: URI %r is a relative path, but the model was not read from '
                                 'a file: use model://, package:// or file://' % (what, uri))
            return self._first(uri, what, [os.path.join(base_dir, *parts)], base_dir)
        raise WorldError('%s: URI %r: scheme %r is not supported (model://, package://, file://)'
                         % (what, uri, scheme))

    @staticmethod
    def _first(uri, what, candidates, where):
        for path in candidates:
            if os.path.exists(path):
                return os.path.realpath(path)
        raise WorldError('%s: URI %r does not resolve: not found on %s' % (what, uri, where))

    # --- packages -----------------------------------------------------------------------
    def package(self, name, what='package', uri=None):
        """The directory of ROS package `name`; WorldError if no ROS_PACKAGE_PATH entry has it."""
        if name in self._packages:
            return self._packages[name]
        found = None
        for entry in self.package_paths:
            direct = os.path.join(entry, name)
            if _package_name(direct) == name:
                found = direct
                break
            if _package_name(entry) == name:
                found = entry
                break
        if found is None:
            found = self._crawl(name)
        if found is None:
            raise WorldError('%s: URI %r does not resolve: no package %r on ROS_PACKAGE_PATH (%s)'
                             % (what, uri or 'package://' + name, name,
                                os.pathsep.join(self.package_paths) or 'empty'))
        self._packages[name] = os.path.realpath(found)
        return self._packages[name]

    def _crawl(self, name):
        seen = 0
        for entry in self.package_paths:
            todo = [(entry, 0)]
            while todo:
                directory, depth = todo.pop(0)
                seen += 1
                if seen > MAX_CRAWL_DIRS:
                    return None
                found = _package_name(directory)
                if found is not None:
                    if found == name:
                        return directory
                    continue                  # a package: rospack does not look inside
                if depth >= MAX_CRAWL_DEPTH or os.path.exists(os.path.join(directory, 'CATKIN_IGNORE')):
                    continue
                try:
                    children = sorted(os.scandir(directory), key=lambda e: e.name)
                except OSError:
                    continue
                todo.extend((c.path, depth + 1) for c in children
                            if not c.name.startswith('.') and c.is_dir(follow_symlinks=True))
        return None

    # --- Gazebo model directories --------------------------------------------------------
    def model_file(self, uri, what):
        """The SDF file of the model directory `uri` names (model://NAME or a directory):
        the <sdf> its model.config lists, the newest version Gazebo 11 reads (≤ 1.7)."""
        directory = self.resolve(uri, what)
        if not os.path.isdir(directory):
            return directory
        config = os.path.join(directory, 'model.config')
        if not os.path.isfile(config):
            raise WorldError('%s: URI %r: %s has no model.config' % (what, uri, directory))
        with open(config, 'rb') as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
        try:
            root = check_xml(data, '%s: %s' % (what, config), max_bytes=MAX_CONFIG_BYTES, root='model')
        except UnsafeXMLError as exc:
            raise WorldError(str(exc)) from None
        choices = []
        for e in root.findall('sdf'):
            version = _version(e.get('version', '1.4'))
            name = (e.text or '').strip()
            if name and version is not None and version <= (1, 7):
                choices.append((version, name))
        if not choices:
            raise WorldError('%s: %s lists no <sdf> file of version 1.4-1.7' % (what, config))
        name = max(choices)[1]
        return self.resolve(name, '%s: %s <sdf>' % (what, config), base_dir=directory)


MAX_CONFIG_BYTES = 64 << 10


def _version(text):
    try:
        major, minor = text.strip().split('.')[:2]
        return int(major), int(minor)
    except (ValueError, AttributeError):
        return None


def _package_name(directory):
    """The <name> in directory/package.xml, or None when there is no readable one."""
    path = os.path.join(directory, 'package.xml')
    if not os.path.isfile(path):
        return None
    try:
        with open(path, 'rb') as f:
            root = check_xml(f.read(MAX_CONFIG_BYTES + 1), path, max_bytes=MAX_CONFIG_BYTES,
                             root='package')
    except (OSError, UnsafeXMLError):
        return None
    name = root.find('name')
    return (name.text or '').strip() if name is not None else None
