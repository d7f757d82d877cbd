"""Compiled parts of the realtime tick, built by scripts/setup (tools/build_native.py):

- `kernels` (_kernels.c, the system C compiler against this venv's numpy): numpy's cost per
  call on arrays of 7 joints exceeds the arithmetic many times over, so the few kernels the
  tick's profile names are C;
- `dynamics` (_dynamics.cpp, against the venv's Pinocchio): its `Rigid(model, data)` runs
  Pinocchio's algorithms the tick calls (the embedded plant's step, inverse dynamics,
  gravity, the momentum observer's step, a link's pose and Jacobian) from C++, without a
  Python call into each and the numpy around it;
- `_mujoco` (_mujoco.c, against the venv's MuJoCo): the MuJoCo backend's step and the reads
  after it in one call (`mujoco_step`). Imported only by that backend: the others do not
  load MuJoCo.

Each has a Python twin with identical results. Each is off when its module is missing or
stale (not built, another numpy, Pinocchio or MuJoCo) or switched off (INTERA_RT_NATIVE=0 in the
environment, for A/B measurements): `kernels` or `dynamics` is then None and `why_not` says
why, `mujoco_step` answers why; the robot logs it once and runs the Python path of what is
missing.
"""
import os

SWITCH = 'INTERA_RT_NATIVE'

if os.environ.get(SWITCH, '1').strip() == '0':
    kernels = dynamics = None
    why_not = ('compiled kernels and dynamics switched off (%s=0): the realtime tick runs its '
               'Python path' % SWITCH)
else:
    missing = []
    try:
        from intera_rt.native import _kernels as kernels
    except ImportError as exc:              # not built (scripts/setup builds it) or stale
        kernels = None
        missing.append('compiled kernels unavailable (%s)' % exc)
    try:
        from intera_rt.native import _dynamics as dynamics
    except ImportError as exc:
        dynamics = None
        missing.append('compiled dynamics unavailable (%s)' % exc)
    why_not = '%s: the realtime tick runs its Python path there' % '; '.join(missing) if missing else ''


def rigid(model, data):
    """dynamics.Rigid(model, data), or None (the Python path) when the compiled dynamics are
    missing or the model is one it does not take (more than 64 joints, or joints whose
    configuration is not one number)."""
    if dynamics is None:
        return None
    try:
        return dynamics.Rigid(model, data)
    except (TypeError, ValueError):
        return None


def mujoco_step(model, data, qadr, dof, nstep):
    """_mujoco.Step bound to an MjModel and its MjData (the boards' joints' qpos and dof
    addresses, MuJoCo steps a call), or (None, why) when the compiled step is missing, stale
    or switched off: the MuJoCo backend then runs its Python path.

    Returns:
        (step, why): step a _mujoco.Step or None; why '' or the reason it is None.
    """
    if os.environ.get(SWITCH, '1').strip() == '0':
        return None, ('compiled MuJoCo step switched off (%s=0): the MuJoCo backend runs its '
                      'Python path' % SWITCH)
    try:
        from intera_rt.native import _mujoco
    except ImportError as exc:
        return None, ('compiled MuJoCo step unavailable (%s): the MuJoCo backend runs its '
                      'Python path' % exc)
    import numpy as np
    return _mujoco.Step(model, data, np.asarray(qadr, np.int64), np.asarray(dof, np.int64),
                        int(nstep)), ''
