"""The package's imports, read from the source (no module is imported): no import cycle,
function-level imports included, and no import upward across the layers of docs/design.md
"Layers" (model ← control, motion, io ← boards ← realtime ← ros)."""
import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / 'src'
PACKAGE = 'intera_rt'

# Layer of each top-level module or subpackage of intera_rt: a module may import its own
# layer and those below it, never one above.
LAYERS = {
    # facts and helpers every layer shares; they import nothing of the package
    'robot': 0, 'numeric': 0, 'direct_writes': 0, 'options': 0, 'native': 0,
    'model': 1,
    'control': 2, 'motion': 2, 'io': 2, 'joint_trajectory': 2, 'world': 2,
    'boards': 3,
    'realtime': 4,
    'ros': 5,
    # tools on top of the robot: the launcher, benches, test tooling
    '__init__': 6, 'sawyer': 6, 'bench': 6, 'tooling': 6, 'fleet': 6,
    'robot_process': 6, 'rviz_screenshot': 6, 'xdisplay': 6,
}


def _modules():
    """{dotted module name: path} of every module of the package."""
    out = {}
    for path in sorted((SRC / PACKAGE).rglob('*.py')):
        parts = list(path.relative_to(SRC).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        out['.'.join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name):
    """The package's module `name` names (its longest known prefix), or None."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition('.')[0]
    return None


def _imports(module, path):
    """[(line, imported module of the package)] for every import statement in the module,
    at any depth (module level, in functions, in classes)."""
    package = module if path.name == '__init__.py' else module.rpartition('.')[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                anchor = package.split('.')
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = '.'.join(anchor + ([base] if base else []))
            # `from pkg import name`: the submodule pkg.name when there is one, else pkg
            names = [base + '.' + alias.name if base + '.' + alias.name in MODULES else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            if name == PACKAGE or name.startswith(PACKAGE + '.'):
                target = _resolve(name)
                if target is not None and target != module:
                    out.add((node.lineno, target))
    return sorted(out)


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _layer(module):
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else '__init__'


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each as a list."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for _, w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_reader_sees_every_kind_of_import():
    """The reader finds absolute, relative, submodule and function-level imports (else the
    tests below could not fail)."""
    targets = {t for _, t in GRAPH['intera_rt.boards.gazebo']}
    assert 'intera_rt.boards.base' in targets                   # from pkg.module import name
    assert 'intera_rt.boards.remote' in {t for _, t in GRAPH['intera_rt.boards.gazebo_launch']}
    # (that one: inside a function)
    assert 'intera_rt.model' in {t for _, t in GRAPH['intera_rt.boards.board_server']}
    graph = {'a': [(1, 'b')], 'b': [(2, 'c')], 'c': [(3, 'a')], 'd': [(4, 'a')]}
    assert _cycles(graph) == [['a', 'b', 'c']]


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    lines = []
    for component in cycles:
        members = set(component)
        for module in component:
            for line, target in GRAPH[module]:
                if target in members:
                    lines.append('  %s:%d imports %s' % (MODULES[module].relative_to(SRC), line, target))
    assert not cycles, 'import cycles among %s:\n%s' % (cycles, '\n'.join(lines))


def test_every_module_has_a_layer():
    unknown = sorted({_layer(m) for m in MODULES} - set(LAYERS))
    assert not unknown, ('intera_rt.%s: no layer in test_imports.LAYERS (add it where it '
                         'sits in docs/design.md "Layers")' % ', intera_rt.'.join(unknown))


@pytest.mark.parametrize('module', sorted(MODULES))
def test_no_upward_import(module):
    layer = LAYERS.get(_layer(module))
    if layer is None:
        pytest.fail('%s has no layer (see test_every_module_has_a_layer)' % module)
    upward = ['%s:%d imports %s (layer %s above %s)'
              % (MODULES[module].relative_to(SRC), line, target, _layer(target), _layer(module))
              for line, target in GRAPH[module]
              if LAYERS.get(_layer(target), 99) > layer]
    assert not upward, '\n'.join(upward)
