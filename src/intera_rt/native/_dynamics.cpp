/* The realtime tick's calls into Pinocchio, made from C++ on the model and data the Python
 * side built (pinocchio's Python objects, read through boost.python's converters): each
 * Python call costs more than the dynamics it runs on eight joints, and the numpy around it
 * more again. A Rigid wraps one (model, data) pair, as Pinocchio wants one data per user;
 * each method computes what its Python twin computes, with the same Pinocchio algorithms,
 * LAPACK and BLAS routines and IEEE operations in the same order, so the two paths agree bit
 * for bit (test_native). Built by scripts/setup against the venv's Pinocchio (tools/
 * build_native.py); without it the tick runs its Python path. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <boost/python.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>

#include "args.h"
#include "arith.h"

namespace bp = boost::python;

static ir_posv_t *lapack_posv;
static ir_symv_t *blas_symv;
static const long MAX_NV = 64;

struct Rigid {
    PyObject_HEAD
    PyObject *model_obj, *data_obj;        /* kept alive: model and data point into them */
    pinocchio::Model *model;
    pinocchio::Data *data;
};

static int rigid_init(Rigid *self, PyObject *args, PyObject *kwds)
{
    PyObject *m, *d;
    if (!PyArg_ParseTuple(args, "OO:Rigid", &m, &d)) return -1;
    try {
        bp::object mo{bp::handle<>(bp::borrowed(m))}, dob{bp::handle<>(bp::borrowed(d))};
        bp::extract<pinocchio::Model &> em(mo);
        bp::extract<pinocchio::Data &> ed(dob);
        if (!em.check() || !ed.check()) {
            PyErr_SetString(PyExc_TypeError, "Rigid(model, data) takes a pinocchio Model and Data");
            return -1;
        }
        pinocchio::Model &model = em();
        pinocchio::Data &data = ed();
        if (model.nq != model.nv || model.nv > MAX_NV || data.M.rows() != model.nv) {
            PyErr_SetString(PyExc_ValueError, "Rigid: a model of at most 64 revolute joints and its data");
            return -1;
        }
        Py_INCREF(m);
        Py_INCREF(d);
        Py_XSETREF(self->model_obj, m);
        Py_XSETREF(self->data_obj, d);
        self->model = &model;
        self->data = &data;
        return 0;
    } catch (const bp::error_already_set &) {
        return -1;
    } catch (const std::exception &exc) {
        PyErr_SetString(PyExc_RuntimeError, exc.what());
        return -1;
    }
}

static void rigid_dealloc(Rigid *self)
{
    Py_XDECREF(self->model_obj);
    Py_XDECREF(self->data_obj);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

typedef Eigen::Map<const Eigen::VectorXd> CVec;

/* (a Rigid whose __init__ failed or never ran holds no model) */
#define BOUND(self) \
    if (!(self)->model) { \
        PyErr_SetString(PyExc_ValueError, "Rigid: not initialised with a model and its data"); \
        return NULL; \
    }

/* A float64 vector of the model's nv elements, writeable, or NULL. */
static double *full(PyObject *o, npy_intp nv)
{
    const double *p = vec(o, &nv);
    return p && PyArray_ISWRITEABLE((PyArrayObject *)o) ? (double *)p : NULL;
}

/* x[iv] as a new numpy vector of n. */
static PyObject *gathered(const Eigen::VectorXd &x, const npy_int64 *iv, npy_intp n)
{
    double *out;
    PyObject *o = new_vec(n, &out);
    if (o)
        for (npy_intp i = 0; i < n; i++) out[i] = x[iv[i]];
    return o;
}

/* plant_step(q, qd, tau_cmd, external, idx, full_q, full_v, full_tau, full_removed, damping,
 * coulomb, armature, stop_lower, stop_upper, h) -> (q_new, qd_new, tau_transmitted), or the
 * nonzero info of a Cholesky that failed (M + h·B not positive definite), or None for
 * arguments it does not take: boards.embedded's free step (no contacts) from Pinocchio's
 * crba and nonLinearEffects on. full_q holds q at idx; full_v, full_tau and full_removed
 * are written as the Python step writes them. */
static PyObject *plant_step(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(15, "plant_step")
    BOUND(self)
    npy_intp n = -1, nv = self->model->nv;
    int no_ext;
    const double *q = vec(args[0], &n), *qd = vec(args[1], &n), *tau_cmd = vec(args[2], &n);
    const double *ext = vec_or_none(args[3], &n, &no_ext);
    double *fq = full(args[5], nv), *fv = full(args[6], nv), *ftau = full(args[7], nv),
           *removed = full(args[8], nv);
    const double *damping = vec(args[9], &n), *coulomb = vec(args[10], &n),
                 *lo = vec(args[12], &n), *hi = vec(args[13], &n);
    const double *arm = square(args[11], nv);
    double h;
    if (!q || !qd || !tau_cmd || (!ext && !no_ext) || !fq || !fv || !ftau || !removed
            || !damping || !coulomb || !lo || !hi || !arm || !floats(args + 14, 1, &h)
            || !lapack_posv || !blas_symv)
        Py_RETURN_NONE;
    const npy_int64 *idx = n <= nv ? indices(args[4], n, nv) : NULL;   /* (n ≤ MAX_NV) */
    if (!idx) Py_RETURN_NONE;
    pinocchio::Data &data = *self->data;
    for (npy_intp i = 0; i < n; i++) fv[idx[i]] = qd[i];
    pinocchio::crba(*self->model, data, CVec(fq, nv));       /* the upper triangle */
    pinocchio::nonLinearEffects(*self->model, data, CVec(fq, nv), CVec(fv, nv));
    /* M as numpy sees data.M (C order, every element), the armature added there */
    double mass[MAX_NV * MAX_NV], solve[MAX_NV * MAX_NV], rhs[MAX_NV], chol[MAX_NV * MAX_NV];
    for (npy_intp i = 0; i < nv; i++)
        for (npy_intp j = 0; j < nv; j++) mass[i * nv + j] = data.M(i, j);
    plant_system_raw(n, nv, tau_cmd, damping, qd, ext, idx, h, ftau, mass, arm,
                     data.nle.data(), solve, rhs);
    ir_fortran(solve, nv, nv, chol);
    char uplo = 'U';
    int nn = (int)nv, one = 1, info = 0;
    lapack_posv(&uplo, &nn, &one, chol, &nn, rhs, &nn, &info);   /* rhs becomes q̈ */
    if (info != 0) return PyLong_FromLong(info);
    double *q_new, *qd_new, *tt, qd_free[MAX_NV], friction[MAX_NV];
    PyObject *qo = new_vec(n, &q_new), *vo = qo ? new_vec(n, &qd_new) : NULL,
             *to = vo ? new_vec(n, &tt) : NULL;
    if (!to) {
        Py_XDECREF(qo); Py_XDECREF(vo);
        return NULL;
    }
    plant_friction_raw(n, nv, qd, rhs, idx, coulomb, mass, h, qd_free, qd_new, removed);
    ir_symv(blas_symv, 1.0 / h, mass, removed, nv, friction);
    plant_integrate_raw(n, q, qd_new, h, lo, hi, tau_cmd, damping, qd_free, friction, idx,
                        q_new, tt);
    return Py_BuildValue("NNN", qo, vo, to);
}

/* rnea(q, qd, qdd, idx_q, idx_v, full_q, full_v, full_a) -> τ[idx_v]: Pinocchio's rnea with
 * q, qd, qdd written into the full vectors at idx_q / idx_v (in place, as
 * model.dynamics.ArmDynamics does), or None for arguments it does not take. */
static PyObject *rnea(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(8, "rnea")
    BOUND(self)
    npy_intp n = -1, nv = self->model->nv;
    const double *q = vec(args[0], &n), *qd = vec(args[1], &n), *qdd = vec(args[2], &n);
    double *fq = full(args[5], nv), *fv = full(args[6], nv), *fa = full(args[7], nv);
    if (!q || !qd || !qdd || !fq || !fv || !fa) Py_RETURN_NONE;
    const npy_int64 *iq = indices(args[3], n, nv), *iv = indices(args[4], n, nv);
    if (!iq || !iv) Py_RETURN_NONE;
    for (npy_intp i = 0; i < n; i++) {
        fq[iq[i]] = q[i];
        fv[iv[i]] = qd[i];
        fa[iv[i]] = qdd[i];
    }
    return gathered(pinocchio::rnea(*self->model, *self->data, CVec(fq, nv), CVec(fv, nv),
                                    CVec(fa, nv)), iv, n);
}

/* track(a, p, q, v, qd, kp, kd, armature, gravity, damping, idx_q, idx_v, full_q, full_v,
 * full_a) -> τ: control.arm.Arm.track's computed torque in one call, u = a + kp·(p − q) +
 * kd·(v − qd) (the kernels' track_accel), Pinocchio's rnea at (q, qd, u) written into the
 * full vectors as rnea() does, then (τ + armature·u − gravity) + damping·v (track_torque);
 * None for arguments it does not take. */
static PyObject *track(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(15, "track")
    BOUND(self)
    npy_intp n = -1, nv = self->model->nv;
    const double *x[10];
    for (int k = 0; k < 10; k++)
        if (!(x[k] = vec(args[k], &n))) Py_RETURN_NONE;
    double *fq = full(args[12], nv), *fv = full(args[13], nv), *fa = full(args[14], nv);
    if (!fq || !fv || !fa || n > nv) Py_RETURN_NONE;
    const npy_int64 *iq = indices(args[10], n, nv), *iv = indices(args[11], n, nv);
    if (!iq || !iv) Py_RETURN_NONE;
    const double *q = x[2], *v = x[3], *qd = x[4];
    double u[MAX_NV], *tau;
    track_accel_raw(n, x[0], x[1], q, v, qd, x[5], x[6], u);
    for (npy_intp i = 0; i < n; i++) {
        fq[iq[i]] = q[i];
        fv[iv[i]] = qd[i];
        fa[iv[i]] = u[i];
    }
    const Eigen::VectorXd &t = pinocchio::rnea(*self->model, *self->data, CVec(fq, nv),
                                               CVec(fv, nv), CVec(fa, nv));
    PyObject *o = new_vec(n, &tau);
    if (!o) return NULL;
    for (npy_intp i = 0; i < n; i++) tau[i] = t[iv[i]];
    track_torque_raw(n, tau, x[7], u, x[8], x[9], v);
    return o;
}

/* gravity(q, idx_q, idx_v, full_q) -> g(q)[idx_v]: Pinocchio's computeGeneralizedGravity with
 * q written into full_q at idx_q (in place), or None for arguments it does not take. */
static PyObject *gravity(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "gravity")
    BOUND(self)
    npy_intp n = -1, nv = self->model->nv;
    const double *q = vec(args[0], &n);
    double *fq = full(args[3], nv);
    if (!q || !fq) Py_RETURN_NONE;
    const npy_int64 *iq = indices(args[1], n, nv), *iv = indices(args[2], n, nv);
    if (!iq || !iv) Py_RETURN_NONE;
    for (npy_intp i = 0; i < n; i++) fq[iq[i]] = q[i];
    return gathered(pinocchio::computeGeneralizedGravity(*self->model, *self->data, CVec(fq, nv)),
                    iv, n);
}

/* observe_reading(q1, v1, q, qd, arm, head, q_head, qd_head, upper, lower, q0, v0, acc, inv_h,
 * armature, tau_meas, r, k, stopped) -> on_stop: control.momentum_observer.MomentumObserver.
 * update's compiled path in one call: the kernels' observer_load (the reading into q1, v1;
 * acc; whether a joint is on its stop), then, unless it is or `stopped` (the previous
 * reading was), the step from (q0, v0): Pinocchio's rnea at (q0, v0, acc) on the full
 * vectors of nv, then r += k·((τ + armature·acc)[arm] − tau_meas − r), r in place. None for
 * arguments it does not take. */
static PyObject *observe_reading(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(19, "observe_reading")
    BOUND(self)
    npy_intp nv = self->model->nv, na = -1;
    double *q1 = full(args[0], nv), *v1 = full(args[1], nv), *acc = full(args[12], nv);
    const double *q = vec(args[2], &na), *qd = vec(args[3], &na);
    const double *upper = vec(args[8], &nv), *lower = vec(args[9], &nv), *q0 = vec(args[10], &nv),
                 *v0 = vec(args[11], &nv), *arma = vec(args[14], &nv), *meas = vec(args[15], &na);
    double *r = (double *)vec(args[16], &na);
    double inv_h, k;
    if (!q1 || !v1 || !acc || !q || !qd || !upper || !lower || !q0 || !v0 || !arma || !meas
            || !r || !PyArray_ISWRITEABLE((PyArrayObject *)args[16]) || !PyLong_Check(args[5])
            || !floats(args + 13, 1, &inv_h) || !floats(args + 17, 1, &k)
            || !PyBool_Check(args[18]))
        Py_RETURN_NONE;
    const npy_int64 *arm = indices(args[4], na, nv);
    long head = PyLong_AsLong(args[5]);
    double qh = 0.0, vh = 0.0;
    if (!arm || head >= nv || PyErr_Occurred()
            || (head >= 0 && !head_reading(args[6], args[7], &qh, &vh))) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int on_stop = observer_load_raw(nv, na, q1, v1, q, qd, arm, head, qh, vh, upper, lower, v0,
                                    acc, inv_h);
    if (!on_stop && args[18] == Py_False) {
        const Eigen::VectorXd &tau = pinocchio::rnea(*self->model, *self->data, CVec(q0, nv),
                                                     CVec(v0, nv), CVec(acc, nv));
        observer_step_raw(na, tau.data(), acc, arma, arm, meas, r, k);
    }
    return PyBool_FromLong(on_stop);
}

/* frame_kinematics(fid, q, idx_q, idx_v, neutral) -> (R, p, J): model.dynamics.ArmDynamics.
 * frame_kinematics without a base transform: q written at idx_q into a copy of `neutral`
 * (the full configuration), Pinocchio's computeJointJacobians and updateFramePlacement, the
 * frame's rotation (3×3) and translation (3), and the columns idx_v of its LOCAL_WORLD_ALIGNED
 * Jacobian (6×n); None for arguments it does not take. */
static PyObject *frame_kinematics(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "frame_kinematics")
    BOUND(self)
    const pinocchio::Model &model = *self->model;
    npy_intp n = -1, nq = model.nq;
    if (!PyLong_Check(args[0])) Py_RETURN_NONE;
    long fid = PyLong_AsLong(args[0]);
    const double *q = vec(args[1], &n), *neutral = vec(args[4], &nq);
    if (fid < 0 || fid >= (long)model.nframes || !q || !neutral) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const npy_int64 *iq = indices(args[2], n, nq), *iv = indices(args[3], n, model.nv);
    if (!iq || !iv) Py_RETURN_NONE;
    Eigen::VectorXd config = CVec(neutral, nq);
    for (npy_intp i = 0; i < n; i++) config[iq[i]] = q[i];
    pinocchio::Data &data = *self->data;
    pinocchio::computeJointJacobians(model, data, config);      /* also the placements */
    pinocchio::updateFramePlacement(model, data, (pinocchio::FrameIndex)fid);
    pinocchio::Data::Matrix6x jac = pinocchio::Data::Matrix6x::Zero(6, model.nv);
    pinocchio::getFrameJacobian(model, data, (pinocchio::FrameIndex)fid,
                                pinocchio::LOCAL_WORLD_ALIGNED, jac);
    const pinocchio::SE3 &pose = data.oMf[fid];
    double *r, *t, *j;
    PyObject *ro = new_matrix(3, 3, &r), *to = ro ? new_vec(3, &t) : NULL,
             *jo = to ? new_matrix(6, n, &j) : NULL;
    if (!jo) {
        Py_XDECREF(ro); Py_XDECREF(to);
        return NULL;
    }
    for (int a = 0; a < 3; a++) {
        t[a] = pose.translation()[a];
        for (int b = 0; b < 3; b++) r[3 * a + b] = pose.rotation()(a, b);
    }
    for (int a = 0; a < 6; a++)
        for (npy_intp i = 0; i < n; i++) j[a * n + i] = jac(a, iv[i]);
    return triple(ro, to, jo);
}

/* wrench_map(fid, q, cols, damping) -> (map, info): collision detection's map from joint
 * torques to the wrench at frame fid (control.collision_detection._wrench_map): J, the columns
 * `cols` of Pinocchio's computeFrameJacobian at the full configuration q (LOCAL_WORLD_ALIGNED),
 * then LAPACK's dposv (upper) of J·Jᵀ + damping·I (arith.h's ir_gram) against J: map (6×n, C
 * order) and dposv's info (nonzero: the map is junk); None for arguments it does not take. */
static PyObject *wrench_map(Rigid *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "wrench_map")
    BOUND(self)
    const pinocchio::Model &model = *self->model;
    npy_intp nv = model.nv;
    const double *q = vec(args[1], &nv);
    double damping;
    if (!PyLong_Check(args[0]) || !q || !floats(args + 3, 1, &damping) || !lapack_posv
            || !PyArray_Check(args[2]))
        Py_RETURN_NONE;
    long fid = PyLong_AsLong(args[0]);
    npy_intp n = PyArray_DIM((PyArrayObject *)args[2], 0);
    const npy_int64 *cols = PyArray_NDIM((PyArrayObject *)args[2]) == 1 && n >= 1 && n <= MAX_NV
        ? indices(args[2], n, nv) : NULL;
    if (fid < 0 || fid >= (long)model.nframes || !cols) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    pinocchio::Data::Matrix6x jac = pinocchio::Data::Matrix6x::Zero(6, nv);
    pinocchio::computeFrameJacobian(model, *self->data, CVec(q, nv), (pinocchio::FrameIndex)fid,
                                    pinocchio::LOCAL_WORLD_ALIGNED, jac);
    double j[6 * MAX_NV], gram[36], b[6 * MAX_NV], *out;
    for (int a = 0; a < 6; a++)
        for (npy_intp i = 0; i < n; i++) j[a * n + i] = jac(a, cols[i]);
    ir_gram(j, n, damping, gram);              /* (symmetric: Fortran order as it is) */
    ir_fortran(j, 6, n, b);
    char uplo = 'U';
    int six = 6, m = (int)n, info = 0;
    lapack_posv(&uplo, &six, &m, gram, &six, b, &six, &info);   /* b becomes the map */
    PyObject *mo = new_matrix(6, n, &out);
    if (!mo) return NULL;
    for (int a = 0; a < 6; a++)
        for (npy_intp i = 0; i < n; i++) out[a * n + i] = b[a + i * 6];
    PyObject *io = PyLong_FromLong(info);
    return pair(mo, io);
}

static PyMethodDef rigid_methods[] = {
    {"plant_step", (PyCFunction)(void (*)(void))plant_step, METH_FASTCALL, NULL},
    {"rnea", (PyCFunction)(void (*)(void))rnea, METH_FASTCALL, NULL},
    {"track", (PyCFunction)(void (*)(void))track, METH_FASTCALL, NULL},
    {"gravity", (PyCFunction)(void (*)(void))gravity, METH_FASTCALL, NULL},
    {"observe_reading", (PyCFunction)(void (*)(void))observe_reading, METH_FASTCALL, NULL},
    {"frame_kinematics", (PyCFunction)(void (*)(void))frame_kinematics, METH_FASTCALL, NULL},
    {"wrench_map", (PyCFunction)(void (*)(void))wrench_map, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RigidType = {PyVarObject_HEAD_INIT(NULL, 0)};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dynamics", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__dynamics(void)
{
    import_array();
    /* pinocchio's converters (Model, Data) are registered when it is imported */
    PyObject *pin = PyImport_ImportModule("pinocchio");
    if (!pin) return NULL;
    Py_DECREF(pin);
    lapack_posv = (ir_posv_t *)capi_pointer("scipy.linalg.cython_lapack", "dposv");
    blas_symv = (ir_symv_t *)capi_pointer("scipy.linalg.cython_blas", "dsymv");
    RigidType.tp_name = "intera_rt.native._dynamics.Rigid";
    RigidType.tp_doc = "Rigid(model, data): Pinocchio's algorithms on one model and its data, from C++.";
    RigidType.tp_basicsize = sizeof(Rigid);
    RigidType.tp_flags = Py_TPFLAGS_DEFAULT;
    RigidType.tp_new = PyType_GenericNew;
    RigidType.tp_init = (initproc)rigid_init;
    RigidType.tp_dealloc = (destructor)rigid_dealloc;
    RigidType.tp_methods = rigid_methods;
    return module_with_type(&module, &RigidType, "Rigid");
}
