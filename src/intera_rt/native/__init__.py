"""Compiled kernels of the realtime tick (_kernels.c, built by scripts/setup with the system
C compiler against this venv's numpy): numpy's cost per call on arrays of 7 joints exceeds
the arithmetic many times over, so the few kernels the tick's profile names are C. Each has
a Python twin with identical results; `kernels` is None when the module is missing or
stale (not built, another numpy) or switched off (INTERA_RT_NATIVE=0 in the environment,
for A/B measurements), and `why_not` then says why: the robot logs it once and runs the
Python path.
"""
import os

SWITCH = 'INTERA_RT_NATIVE'

if os.environ.get(SWITCH, '1').strip() == '0':
    kernels = None
    why_not = 'compiled kernels switched off (%s=0): the realtime tick runs its Python path' % SWITCH
else:
    try:
        from intera_rt.native import _kernels as kernels
        why_not = ''
    except ImportError as exc:              # not built (scripts/setup builds it) or stale
        kernels = None
        why_not = 'compiled kernels unavailable (%s): the realtime tick runs its Python path' % exc
