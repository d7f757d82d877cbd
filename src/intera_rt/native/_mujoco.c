/* The MuJoCo backend's step, compiled (boards.mujoco_boards): the drives' torques into
 * MuJoCo's controls, mj_step, and the joints' state and transmitted torques read back, in
 * one call through MuJoCo's C API. The Python around mj_step (a view assignment, the
 * unstable-step check, two takes and the torque sum: ~4 us a tick) cost half as much as
 * the step itself. The reads are the same IEEE operations in the same order as
 * MujocoBoards' Python path, so both give identical results; test_native checks that bit
 * for bit. Linked against the libmujoco of the venv's `mujoco` package (the same library
 * its Python bindings load); built by scripts/setup (intera_rt.native says when it is
 * missing). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <setjmp.h>
#include <string.h>
#include <mujoco/mujoco.h>
#include "args.h"

/* MuJoCo reports a fatal error through mju_user_error and expects it not to return: the
 * step's call catches it (setjmp) and raises it as a Python exception, as MuJoCo's own
 * bindings do. The core runs one thread. */
static jmp_buf error_jump;
static char error_message[512];

static void on_mujoco_error(const char *message)
{
    strncpy(error_message, message, sizeof(error_message) - 1);
    error_message[sizeof(error_message) - 1] = '\0';
    longjmp(error_jump, 1);
}

typedef struct {
    PyObject_HEAD
    PyObject *model_obj, *data_obj;  /* the MjModel and MjData: kept alive while bound */
    const mjModel *m;
    mjData *d;
    int n;                           /* the boards' joints: ctrl[0..n) are their drives */
    int nstep;                       /* MuJoCo steps a call */
    int *qadr, *dof;                 /* each joint's qpos and dof address */
    int *joint_of;                   /* each dof: the boards' joint it is, or -1 (nv) */
} Step;

static void step_dealloc(Step *self)
{
    Py_XDECREF(self->model_obj);
    Py_XDECREF(self->data_obj);
    PyMem_Free(self->qadr);
    PyMem_Free(self->dof);
    PyMem_Free(self->joint_of);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void *address(PyObject *o)
{
    PyObject *a = PyObject_GetAttrString(o, "_address");
    if (!a) return NULL;
    void *p = PyLong_AsVoidPtr(a);
    Py_DECREF(a);
    return p;
}

/* Step(model, data, qadr, dof, nstep): bound to one MjModel and MjData (rebind after a
 * recompile). qadr, dof: int64 addresses of the boards' joints, whose drives are the first
 * len(qadr) actuators. */
static int step_init(Step *self, PyObject *args, PyObject *kwds)
{
    PyObject *model, *data, *qadr_o, *dof_o;
    int nstep;
    if (!PyArg_ParseTuple(args, "OOOOi", &model, &data, &qadr_o, &dof_o, &nstep)) return -1;
    const mjModel *m = address(model);
    mjData *d = m ? address(data) : NULL;
    if (!m || !d) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Step takes an MjModel and an MjData");
        return -1;
    }
    if (!PyArray_Check(qadr_o) || PyArray_NDIM((PyArrayObject *)qadr_o) != 1) {
        PyErr_SetString(PyExc_TypeError, "qadr: a 1-D int64 array");
        return -1;
    }
    npy_intp n = PyArray_DIM((PyArrayObject *)qadr_o, 0);
    const npy_int64 *qa = indices(qadr_o, n, m->nq), *da = qa ? indices(dof_o, n, m->nv) : NULL;
    if (!da || n > m->nu || nstep < 1) {
        PyErr_SetString(PyExc_ValueError, "Step: qadr and dof must be int64 addresses within "
                        "the model, no more than its actuators, nstep >= 1");
        return -1;
    }
    self->qadr = PyMem_Malloc(n * sizeof(int));
    self->dof = PyMem_Malloc(n * sizeof(int));
    self->joint_of = PyMem_Malloc((m->nv ? m->nv : 1) * sizeof(int));
    if (!self->qadr || !self->dof || !self->joint_of) {
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < m->nv; k++) self->joint_of[k] = -1;
    for (npy_intp k = 0; k < n; k++) {
        self->qadr[k] = (int)qa[k];
        self->dof[k] = (int)da[k];
        self->joint_of[da[k]] = (int)k;
    }
    Py_INCREF(model);
    Py_INCREF(data);
    self->model_obj = model;
    self->data_obj = data;
    self->m = m;
    self->d = d;
    self->n = (int)n;
    self->nstep = nstep;
    return 0;
}

/* step(tau) -> (q, qd, transmitted), or None when MuJoCo found the step unstable (its
 * bad-acceleration warning counted: it has reset its state, the caller restores the arm).
 * tau: float64, one torque per joint (the drives' controls). transmitted: each drive's
 * motor torque, less viscous damping (passive) and dry friction (the friction-loss rows of
 * the constraint solver). */
static PyObject *step_step(Step *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(1, "step");
    npy_intp n = self->n;
    const double *tau = vec(args[0], &n);
    if (!tau) {
        PyErr_Format(PyExc_TypeError, "step: tau must be a float64 vector of %d", self->n);
        return NULL;
    }
    const mjModel *m = self->m;
    mjData *d = self->d;
    memcpy(d->ctrl, tau, n * sizeof(double));
    int bad = d->warning[mjWARN_BADQACC].number;
    void (*previous)(const char *) = mju_user_error;
    mju_user_error = on_mujoco_error;
    if (setjmp(error_jump)) {
        mju_user_error = previous;
        PyErr_Format(PyExc_RuntimeError, "MuJoCo: %s", error_message);
        return NULL;
    }
    for (int k = 0; k < self->nstep; k++) mj_step(m, d);
    mju_user_error = previous;
    if (d->warning[mjWARN_BADQACC].number != bad) Py_RETURN_NONE;
    double *q = NULL, *qd = NULL, *out = NULL;
    PyObject *result = triple(new_vec(n, &q), new_vec(n, &qd), new_vec(n, &out));
    if (!result) return NULL;
    for (npy_intp k = 0; k < n; k++) {
        int v = self->dof[k];
        q[k] = d->qpos[self->qadr[k]];
        qd[k] = d->qvel[v];
        out[k] = d->qfrc_actuator[v] + d->qfrc_passive[v];
    }
    for (int r = d->ne; r < d->ne + d->nf; r++) {
        if (d->efc_type[r] != mjCNSTR_FRICTION_DOF) continue;
        int k = self->joint_of[d->efc_id[r]];
        if (k >= 0) out[k] += d->efc_force[r];
    }
    return result;
}

static PyMethodDef step_methods[] = {
    {"step", (PyCFunction)(void (*)(void))step_step, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StepType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "intera_rt.native._mujoco.Step",
    .tp_basicsize = sizeof(Step),
    .tp_dealloc = (destructor)step_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Step(model, data, qadr, dof, nstep): MujocoBoards' step, compiled",
    .tp_methods = step_methods,
    .tp_init = (initproc)step_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mujoco", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__mujoco(void)
{
    /* built against one MuJoCo: another's structs may differ */
    if (mj_version() != mjVERSION_HEADER) {
        PyErr_Format(PyExc_ImportError, "built for MuJoCo %d, running %d", mjVERSION_HEADER,
                     mj_version());
        return NULL;
    }
    import_array();
    return module_with_type(&module, &StepType, "Step");
}
