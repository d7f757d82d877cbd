/* Reading a kernel's arguments (numpy arrays and floats, checked; a kernel answers None for
 * arguments it does not take, and its caller then takes the Python path) and building its
 * results: shared by _kernels.c and _dynamics.cpp. Include after numpy/arrayobject.h. */
#ifndef INTERA_RT_ARGS_H
#define INTERA_RT_ARGS_H

/* A 1-D float64 C-contiguous array of n elements (*n < 0: of any length, which is set), or
 * NULL. */
static inline const double *vec(PyObject *o, npy_intp *n)
{
    if (!PyArray_Check(o)) return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 1 || PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(a))
        return NULL;
    if (*n < 0) *n = PyArray_DIM(a, 0);
    else if (PyArray_DIM(a, 0) != *n) return NULL;
    return (const double *)PyArray_DATA(a);
}

static inline int floats(PyObject *const *args, int k, double *out)
{
    for (int i = 0; i < k; i++) {
        if (!PyFloat_Check(args[i])) return 0;
        out[i] = PyFloat_AS_DOUBLE(args[i]);
    }
    return 1;
}

static inline PyObject *new_vec(npy_intp n, double **data)
{
    PyObject *o = PyArray_SimpleNew(1, &n, NPY_DOUBLE);
    if (o) *data = (double *)PyArray_DATA((PyArrayObject *)o);
    return o;
}

/* A new C-order rows×cols float64 matrix (*data its elements), or NULL. */
static inline PyObject *new_matrix(npy_intp rows, npy_intp cols, double **data)
{
    npy_intp dims[2] = {rows, cols};
    PyObject *o = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (o) *data = (double *)PyArray_DATA((PyArrayObject *)o);
    return o;
}

/* The head's reading for arith.h's observer_load_raw from two Python objects (each a float,
 * or None: 0); 0 when one is neither. */
static inline int head_reading(PyObject *q, PyObject *v, double *qh, double *vh)
{
    if ((q != Py_None && !PyFloat_Check(q)) || (v != Py_None && !PyFloat_Check(v))) return 0;
    *qh = q == Py_None ? 0.0 : PyFloat_AS_DOUBLE(q);
    *vh = v == Py_None ? 0.0 : PyFloat_AS_DOUBLE(v);
    return 1;
}

#define NARGS(k, name) \
    if (nargs != (k)) { \
        PyErr_SetString(PyExc_TypeError, name " takes " #k " arguments"); \
        return NULL; \
    }

/* A float64 vector of n elements, or NULL (None allowed: *none set). */
static inline const double *vec_or_none(PyObject *o, npy_intp *n, int *none)
{
    *none = o == Py_None;
    if (*none) return NULL;
    return vec(o, n);
}

/* int64 indices of n elements, each in [0, bound), or NULL. */
static inline const npy_int64 *indices(PyObject *o, npy_intp n, npy_intp bound)
{
    if (!PyArray_Check(o)) return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 1 || PyArray_TYPE(a) != NPY_INT64 || PyArray_DIM(a, 0) != n
            || !PyArray_IS_C_CONTIGUOUS(a))
        return NULL;
    const npy_int64 *ix = (const npy_int64 *)PyArray_DATA(a);
    for (npy_intp i = 0; i < n; i++)
        if (ix[i] < 0 || ix[i] >= bound) return NULL;
    return ix;
}

/* A C-contiguous float64 n×n matrix, or NULL. */
static inline double *square(PyObject *o, npy_intp n)
{
    if (!PyArray_Check(o)) return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 2 || PyArray_TYPE(a) != NPY_DOUBLE || PyArray_DIM(a, 0) != n
            || PyArray_DIM(a, 1) != n || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a))
        return NULL;
    return (double *)PyArray_DATA(a);
}

static inline PyObject *pair(PyObject *a, PyObject *b)
{
    if (!a || !b) {
        Py_XDECREF(a); Py_XDECREF(b);
        return NULL;
    }
    PyObject *out = PyTuple_New(2);
    if (!out) {
        Py_DECREF(a); Py_DECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, a);
    PyTuple_SET_ITEM(out, 1, b);
    return out;
}

/* (a, b, c), taking the three references; NULL (all released) when one is NULL. */
static inline PyObject *triple(PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *out = a && b && c ? PyTuple_New(3) : NULL;
    if (!out) {
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, a);
    PyTuple_SET_ITEM(out, 1, b);
    PyTuple_SET_ITEM(out, 2, c);
    return out;
}

/* A module `def` holding the type `type` as `name` (readied here), or NULL. */
static inline PyObject *module_with_type(PyModuleDef *def, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0) return NULL;
    PyObject *mod = PyModule_Create(def);
    if (!mod) return NULL;
    Py_INCREF(type);
    if (PyModule_AddObject(mod, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}

/* A function pointer a Cython module exports (its __pyx_capi__), or NULL. */
static inline void *capi_pointer(const char *module, const char *name)
{
    void *ptr = NULL;
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *capi = mod ? PyObject_GetAttrString(mod, "__pyx_capi__") : NULL;
    PyObject *capsule = capi ? PyDict_GetItemString(capi, name) : NULL;
    if (capsule && PyCapsule_CheckExact(capsule))
        ptr = PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
    Py_XDECREF(capi);
    Py_XDECREF(mod);
    PyErr_Clear();
    return ptr;
}

#endif
