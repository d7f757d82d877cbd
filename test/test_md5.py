"""Generated message/service classes must match the reference md5 table.

Expects the output of tools/gen_msgs.py to be importable (on sys.path).
"""

import importlib
import os

import pytest

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'data', 'md5sums.tsv')
EXPECTED_ROWS = 126


def _load_table():
    rows = []
    with open(TABLE) as f:
        lines = [line.rstrip('\n') for line in f if line.strip()]
    assert lines[0].split('\t') == ['type', 'md5sum'], lines[0]
    for line in lines[1:]:
        type_name, md5 = line.split('\t')
        rows.append((type_name, md5))
    return rows


ROWS = _load_table()


def _find_class(type_name):
    pkg, name = type_name.split('/')
    for kind in ('msg', 'srv'):
        try:
            module = importlib.import_module('%s.%s' % (pkg, kind))
        except ModuleNotFoundError:
            continue                  # (a package with services only)
        cls = getattr(module, name, None)
        if cls is not None and hasattr(cls, '_md5sum'):
            return cls
    raise AssertionError('%s not found in %s.msg or %s.srv'
                         % (type_name, pkg, pkg))


def test_table_size():
    assert len(ROWS) == EXPECTED_ROWS
    assert len({t for t, _ in ROWS}) == EXPECTED_ROWS


@pytest.mark.parametrize('type_name,md5', ROWS, ids=[t for t, _ in ROWS])
def test_md5(type_name, md5):
    cls = _find_class(type_name)
    assert cls._type == type_name
    assert cls._md5sum == md5
