/* The realtime tick's arithmetic on a few joints, compiled: numpy's per-call cost (~0.4 us a
 * ufunc on 7 elements) exceeds the work by far there. Each kernel computes exactly what its
 * Python twin computes (the same IEEE operations in the same order), so the compiled and the
 * Python path give identical results; test_native checks that bit for bit.
 * Built by scripts/setup (intera_rt.native says when it is missing). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>
#include "arith.h"
#include "args.h"

static double sign(double x)          /* np.sign: 0 for ±0, NaN kept */
{
    if (x > 0.0) return 1.0;
    if (x < 0.0) return -1.0;
    return x == 0.0 ? 0.0 : x;
}

static double minimum(double a, double b)          /* np.minimum, NaN kept */
{
    return (a < b || isnan(a)) ? a : b;
}

static double maximum(double a, double b)          /* np.maximum, NaN kept */
{
    return (a > b || isnan(a)) ? a : b;
}

#define clip ir_clip                                  /* numpy's clip ufunc (arith.h) */

/* trapezoid_step(p, v, target, vmax, amax, dt, snap) -> (p, v, a): control.arm.trapezoid_step
 * (snap its SETTLE_SNAP), or
 * None when an argument is not a float64 vector of p's length (the caller then takes the
 * Python path). */
static PyObject *trapezoid_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "trapezoid_step takes 7 arguments");
        return NULL;
    }
    npy_intp n = -1;
    const double *p = vec(args[0], &n), *v = p ? vec(args[1], &n) : NULL,
                 *target = v ? vec(args[2], &n) : NULL, *vmax = target ? vec(args[3], &n) : NULL,
                 *amax = vmax ? vec(args[4], &n) : NULL;
    if (!amax || !PyFloat_Check(args[5]) || !PyFloat_Check(args[6])) Py_RETURN_NONE;
    double dt = PyFloat_AS_DOUBLE(args[5]), snap = PyFloat_AS_DOUBLE(args[6]);
    double *pn = NULL, *vn = NULL, *an = NULL;
    PyObject *out = triple(new_vec(n, &pn), new_vec(n, &vn), new_vec(n, &an));
    if (!out) return NULL;
    for (npy_intp i = 0; i < n; i++) {
        double d = target[i] - p[i];
        double v_des = sign(d) * minimum(vmax[i], sqrt(2.0 * amax[i] * fabs(d)));
        double v_new = v[i] + clip(v_des - v[i], -amax[i] * dt, amax[i] * dt);
        double p_new = p[i] + 0.5 * (v[i] + v_new) * dt;
        int done = (fabs(target[i] - p_new) < maximum(snap, amax[i] * dt * dt))
                   & (fabs(v_new) <= amax[i] * dt);
        int overshoot = sign(target[i] - p_new) != sign(d);
        int land = done | (overshoot & (fabs(v_new) <= 2.0 * amax[i] * dt));
        if (land) {
            p_new = target[i];
            v_new = 0.0;
        }
        pn[i] = p_new;
        vn[i] = v_new;
        an[i] = (v_new - v[i]) / dt;
    }
    return out;
}

/* Arguments as float64 vectors of one length n (set by the first), or NULL. */
static int vecs(PyObject *const *args, int k, const double **out, npy_intp *n)
{
    *n = -1;
    for (int i = 0; i < k; i++)
        if (!(out[i] = vec(args[i], n))) return 0;
    return 1;
}

/* track_accel(a, p, q, v, qd, kp, kd) -> u = a + kp·(p − q) + kd·(v − qd), kp and kd per joint
 * (control.arm.Arm.track), or None for arguments it does not take. */
static PyObject *track_accel(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "track_accel")
    const double *x[7];
    double *u;
    npy_intp n;
    if (!vecs(args, 7, x, &n)) Py_RETURN_NONE;
    PyObject *o = new_vec(n, &u);
    if (!o) return NULL;
    track_accel_raw(n, x[0], x[1], x[2], x[3], x[4], x[5], x[6], u);
    return o;
}

/* track_torque(tau, armature, u, gravity, damping, v) -> (tau + armature·u − gravity) +
 * damping·v, written into tau (a fresh array of the caller's) and returned; None for
 * arguments it does not take. */
static PyObject *track_torque(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(6, "track_torque")
    const double *x[6];
    npy_intp n;
    if (!vecs(args, 6, x, &n) || !PyArray_ISWRITEABLE((PyArrayObject *)args[0])) Py_RETURN_NONE;
    track_torque_raw(n, (double *)x[0], x[1], x[2], x[3], x[4], x[5]);
    Py_INCREF(args[0]);
    return args[0];
}

/* velocity_step(cmd, scale, p, v, acc_limit, dt, lower, upper) -> (p, v, a):
 * control.velocity._velocity_step, or None for arguments it does not take. */
static PyObject *velocity_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(8, "velocity_step")
    npy_intp n = -1;
    const double *cmd = vec(args[0], &n), *p = vec(args[2], &n), *v = vec(args[3], &n),
                 *acc = vec(args[4], &n), *lo = vec(args[6], &n), *hi = vec(args[7], &n);
    double scale, dt;
    if (!cmd || !p || !v || !acc || !lo || !hi || !floats(args + 1, 1, &scale)
            || !floats(args + 5, 1, &dt))
        Py_RETURN_NONE;
    double *pn = NULL, *vn = NULL, *an = NULL;
    PyObject *out = triple(new_vec(n, &pn), new_vec(n, &vn), new_vec(n, &an));
    if (!out) return NULL;
    for (npy_intp i = 0; i < n; i++) {
        double c = scale == 1.0 ? cmd[i] : cmd[i] * scale;
        double dv = clip(c - v[i], -acc[i] * dt, acc[i] * dt);
        double v1 = v[i] + dv;
        double p1 = p[i] + 0.5 * (v[i] + v1) * dt;
        if ((p1 <= lo[i]) | (p1 >= hi[i])) v1 = 0.0;
        pn[i] = clip(p1, lo[i], hi[i]);
        vn[i] = v1;
        an[i] = dv / dt;
    }
    return out;
}

/* extrapolate_step(p, v, a, dt, vmax, lower, upper) -> (p, v, a): control.trajectory's
 * extrapolate (dt s of constant acceleration, a joint's velocity held at ±vmax once it gets
 * there) and then Arm.stop_at_limits (a joint at or past a position limit stops there), in
 * one call; None for arguments it does not take. */
static PyObject *extrapolate_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "extrapolate_step")
    npy_intp n = -1;
    const double *p = vec(args[0], &n), *v = vec(args[1], &n), *a = vec(args[2], &n),
                 *vmax = vec(args[4], &n), *lo = vec(args[5], &n), *hi = vec(args[6], &n);
    double dt;
    if (!p || !v || !a || !vmax || !lo || !hi || !floats(args + 3, 1, &dt)) Py_RETURN_NONE;
    double *pn = NULL, *vn = NULL, *an = NULL;
    PyObject *out = triple(new_vec(n, &pn), new_vec(n, &vn), new_vec(n, &an));
    if (!out) return NULL;
    int capped = 0;                     /* (backwards, dt <= 0: no bounds) */
    if (!(dt <= 0.0))
        for (npy_intp i = 0; i < n; i++)
            capped |= fabs(v[i] + a[i] * dt) > vmax[i];
    for (npy_intp i = 0; i < n; i++) {
        double v_end = v[i] + a[i] * dt;
        if (!capped) {
            pn[i] = p[i] + v[i] * dt + 0.5 * a[i] * dt * dt;
            vn[i] = v_end;
            an[i] = a[i];
            continue;
        }
        /* Once any joint is capped, every joint's position takes the capped formula (a joint
         * not capped: t_cap = dt, its last term v_end·0), as the twin's masks do. */
        int cap_here = fabs(v_end) > vmax[i];
        double t_cap = dt, v_cap = v_end;
        if (cap_here) {
            double cap = sign(a[i]) * vmax[i];
            t_cap = maximum(0.0, (cap - v[i]) / (a[i] == 0.0 ? 1.0 : a[i]));
            v_cap = cap;
        }
        t_cap = minimum(t_cap, dt);
        pn[i] = p[i] + v[i] * t_cap + 0.5 * a[i] * t_cap * t_cap + v_cap * (dt - t_cap);
        vn[i] = v_cap;
        an[i] = cap_here ? 0.0 : a[i];
    }
    int at_limit = 0;
    for (npy_intp i = 0; i < n; i++)
        at_limit |= (pn[i] <= lo[i]) | (pn[i] >= hi[i]);
    if (at_limit)
        for (npy_intp i = 0; i < n; i++) {
            if ((pn[i] <= lo[i]) | (pn[i] >= hi[i])) vn[i] = an[i] = 0.0;
            pn[i] = clip(pn[i], lo[i], hi[i]);
        }
    return out;
}

/* line_target(goal, from, t0, span, now) -> (target, ramping): control.position's
 * _move_target while a stream's lines run. A new target: each joint with a line (span > 0)
 * where its line puts it at `now`, from + (goal − from)·min((now − t0)/span, 1), the others
 * at their goal; a line that has arrived (now − t0 ≥ span) ends, its span set to 0 in
 * place; ramping: whether a line is left. None for arguments it does not take. */
static PyObject *line_target(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "line_target")
    const double *x[4];
    double now;
    npy_intp n;
    if (!vecs(args, 4, x, &n) || !floats(args + 4, 1, &now)
            || !PyArray_ISWRITEABLE((PyArrayObject *)args[3]))
        Py_RETURN_NONE;
    const double *goal = x[0], *from = x[1], *t0 = x[2];
    double *span = (double *)x[3], *target = NULL;
    PyObject *out = new_vec(n, &target);
    if (!out) return NULL;
    int ramping = 0;
    for (npy_intp i = 0; i < n; i++) {
        double g = goal[i];
        if (span[i] > 0.0) {
            double since = now - t0[i];
            g = from[i] + (g - from[i]) * minimum(since / span[i], 1.0);
            if (since >= span[i]) span[i] = 0.0;
        }
        target[i] = g;
        ramping |= span[i] != 0.0;          /* (count_nonzero: NaN counts) */
    }
    return pair(out, PyBool_FromLong(ramping));
}

/* observer_load(q1, v1, q, qd, arm, head, q_head, qd_head, upper, lower, v0, acc, inv_h) ->
 * on_stop (control.momentum_observer: the reading into Pinocchio's order; whether a joint
 * is on its mechanical stop; acc = (v1 − v0)·inv_h). arm: the arm joints' indices (int64),
 * head: the head's (−1: none). None for arguments it does not take. */
static PyObject *observer_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(13, "observer_load")
    npy_intp nv = -1, na = -1;
    double *q1 = (double *)vec(args[0], &nv), *v1 = (double *)vec(args[1], &nv);
    const double *q = vec(args[2], &na), *qd = vec(args[3], &na);
    const double *upper = vec(args[8], &nv), *lower = vec(args[9], &nv), *v0 = vec(args[10], &nv);
    double *acc = (double *)vec(args[11], &nv);
    if (!q1 || !v1 || !q || !qd || !upper || !lower || !v0 || !acc || !PyLong_Check(args[5])
            || !PyFloat_Check(args[12]))
        Py_RETURN_NONE;
    const npy_int64 *arm = indices(args[4], na, nv);
    long head = PyLong_AsLong(args[5]);
    if (!arm || head >= nv || PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    double qh = 0.0, vh = 0.0;
    if (head >= 0 && !head_reading(args[6], args[7], &qh, &vh)) Py_RETURN_NONE;
    return PyBool_FromLong(observer_load_raw(nv, na, q1, v1, q, qd, arm, head, qh, vh, upper,
                                             lower, v0, acc, PyFloat_AS_DOUBLE(args[12])));
}

/* observer_step(tau, acc, armature, arm, tau_meas, r, k): r += k·((tau + armature·acc)[arm] −
 * tau_meas − r), r in place (control.momentum_observer._observe after its RNEA). True, or
 * None for arguments it does not take. */
static PyObject *observer_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "observer_step")
    npy_intp nv = -1, na = -1;
    const double *tau = vec(args[0], &nv), *acc = vec(args[1], &nv), *arma = vec(args[2], &nv);
    const double *meas = vec(args[4], &na);
    double *r = (double *)vec(args[5], &na);
    if (!tau || !acc || !arma || !meas || !r || !PyFloat_Check(args[6])) Py_RETURN_NONE;
    const npy_int64 *arm = indices(args[3], na, nv);
    if (!arm) Py_RETURN_NONE;
    observer_step_raw(na, tau, acc, arma, arm, meas, r, PyFloat_AS_DOUBLE(args[6]));
    Py_RETURN_TRUE;
}

/* slow_step(judged, r_slow, band, band_gain, k_slow): band = judged − r_slow; r_slow +=
 * band·k_slow; band *= band_gain, in place (collision_detection._slow_step). True, or None
 * for arguments it does not take. */
static PyObject *slow_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "slow_step")
    const double *x[4];
    double k;
    npy_intp n;
    if (!vecs(args, 4, x, &n) || !floats(args + 4, 1, &k)) Py_RETURN_NONE;
    double *slow = (double *)x[1], *band = (double *)x[2];
    for (npy_intp i = 0; i < n; i++) {
        double b = x[0][i] - slow[i];
        slow[i] += b * k;
        band[i] = b * x[3][i];
    }
    Py_RETURN_TRUE;
}

/* interaction_wrench(F_cmd, K, e, D, vd, u, hand, limit, bound, wall_k, wall_d, v, rot_wall,
 * rot_wall_d, wall_scale, Fs, Fd, F, held): control.interaction._wrench_law into the last
 * four (6-vectors, written in place); hand, limit, bound, rot_wall may be None (wall_k and
 * wall_d are read only with a bound, wall_scale only with rot_wall). True, or None for arguments it does not take. */
static PyObject *interaction_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(19, "interaction_wrench")
    npy_intp n = 6, n3 = 3;
    const double *x[6];
    for (int i = 0; i < 6; i++)
        if (!(x[i] = vec(args[i], &n))) Py_RETURN_NONE;
    const double *Fc = x[0], *K = x[1], *e = x[2], *D = x[3], *vd = x[4], *u = x[5];
    int no_hand, no_limit, no_bound, no_rot;
    const double *hand = vec_or_none(args[6], &n, &no_hand);
    const double *limit = vec_or_none(args[7], &n, &no_limit);
    const double *bound = vec_or_none(args[8], &n, &no_bound);
    const double *wall_k = no_bound ? NULL : vec(args[9], &n);
    const double *wall_d = no_bound ? NULL : vec(args[10], &n);
    const double *v = vec(args[11], &n);
    const double *rot = vec_or_none(args[12], &n3, &no_rot);
    const double *rot_d = vec(args[13], &n3);
    double *out[4];
    for (int i = 0; i < 4; i++) {
        out[i] = (double *)vec(args[15 + i], &n);
        if (!out[i] || !PyArray_ISWRITEABLE((PyArrayObject *)args[15 + i])) Py_RETURN_NONE;
    }
    if ((!hand && !no_hand) || (!limit && !no_limit) || (!bound && !no_bound)
            || (!no_bound && (!wall_k || !wall_d)) || !v || (!rot && !no_rot) || !rot_d
            || !PyFloat_Check(args[14]))
        Py_RETURN_NONE;
    double wall_scale = PyFloat_AS_DOUBLE(args[14]);
    double *Fs = out[0], *Fd = out[1], *F = out[2], *held = out[3];
    for (int i = 0; i < 6; i++) {
        Fs[i] = Fc[i] - K[i] * e[i];
        Fd[i] = -D[i] * vd[i];
        if (hand) Fs[i] = Fs[i] + hand[i];
        if (limit) Fs[i] = clip(Fs[i], -limit[i], limit[i]);
    }
    if (bound) {
        double over[6];
        int any = 0;
        for (int i = 0; i < 6; i++) {
            over[i] = e[i] - clip(e[i], -bound[i], bound[i]);
            any |= over[i] != 0.0;
        }
        if (any)
            for (int i = 0; i < 6; i++) {
                Fs[i] = Fs[i] - wall_k[i] * over[i];
                Fd[i] = Fd[i] - wall_d[i] * v[i] * (over[i] != 0.0 ? 1.0 : 0.0);
            }
    }
    if (rot)
        for (int i = 0; i < 3; i++) {
            Fs[3 + i] -= rot[i] * wall_scale * e[3 + i];
            Fd[3 + i] -= rot[i] * rot_d[i] * v[3 + i];
        }
    for (int i = 0; i < 6; i++) {
        F[i] = Fs[i] + Fd[i] + u[i];
        if (limit) F[i] = clip(F[i], -limit[i], limit[i]);
        held[i] = Fs[i] - Fc[i] + u[i];
    }
    Py_RETURN_TRUE;
}

/* nullspace_error(K, q_ref, q, D, qd) -> K·(q_ref − q) − D·qd (control.interaction), or None
 * for arguments it does not take. */
static PyObject *nullspace_error(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(5, "nullspace_error")
    const double *x[5];
    double *w;
    npy_intp n;
    if (!vecs(args, 5, x, &n)) Py_RETURN_NONE;
    PyObject *o = new_vec(n, &w);
    if (!o) return NULL;
    for (npy_intp i = 0; i < n; i++)
        w[i] = x[0][i] * (x[1][i] - x[2][i]) - x[3][i] * x[4][i];
    return o;
}

/* rate_clip(tau, extra, prev, step) -> clip(tau + extra, prev − step, prev + step) (extra
 * None: tau alone), or None for arguments it does not take. */
static PyObject *rate_clip(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "rate_clip")
    npy_intp n = -1;
    int no_extra;
    const double *tau = vec(args[0], &n);
    const double *extra = tau ? vec_or_none(args[1], &n, &no_extra) : NULL;
    const double *prev = tau ? vec(args[2], &n) : NULL;
    double step, *out;
    if (!tau || (!extra && !no_extra) || !prev || !floats(args + 3, 1, &step)) Py_RETURN_NONE;
    PyObject *o = new_vec(n, &out);
    if (!o) return NULL;
    for (npy_intp i = 0; i < n; i++) {
        double t = extra ? tau[i] + extra[i] : tau[i];
        out[i] = clip(t, prev[i] - step, prev[i] + step);
    }
    return o;
}

/* plant_system(tau_cmd, damping, qd, external, idx, full_tau, mass, armature, bias, h) ->
 * (solve, rhs): boards.embedded._plant_system (full_tau and mass, the joint-space inertia,
 * updated in place; external None without external wrenches), or None for arguments it does
 * not take. */
static PyObject *plant_system(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(10, "plant_system")
    npy_intp n = -1, nv = -1;
    int no_ext;
    const double *tau_cmd = vec(args[0], &n), *damping = vec(args[1], &n), *qd = vec(args[2], &n);
    const double *ext = vec_or_none(args[3], &n, &no_ext);
    double *full_tau = (double *)vec(args[5], &nv);
    const double *bias = vec(args[8], &nv);
    if (!tau_cmd || !damping || !qd || (!ext && !no_ext) || !full_tau || !bias
            || !PyArray_ISWRITEABLE((PyArrayObject *)args[5]))
        Py_RETURN_NONE;
    const npy_int64 *idx = indices(args[4], n, nv);
    double *mass = square(args[6], nv);
    const double *arm = square(args[7], nv);
    double h;
    if (!idx || !mass || !arm || !floats(args + 9, 1, &h)) Py_RETURN_NONE;
    double *solve, *rhs;
    PyObject *so = new_matrix(nv, nv, &solve);
    PyObject *ro = so ? new_vec(nv, &rhs) : NULL;
    if (!so || !ro) {
        Py_XDECREF(so);
        return NULL;
    }
    plant_system_raw(n, nv, tau_cmd, damping, qd, ext, idx, h, full_tau, mass, arm, bias, solve, rhs);
    return pair(so, ro);
}

/* plant_friction(qd, qdd_full, idx, coulomb, mass, h, full_removed) -> (qd_free, qd_new):
 * boards.embedded._plant_friction (full_removed[idx] set in place), or None for arguments
 * it does not take. */
static PyObject *plant_friction(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "plant_friction")
    npy_intp n = -1, nv = -1;
    const double *qd = vec(args[0], &n), *coulomb = vec(args[3], &n);
    const double *qdd = vec(args[1], &nv);
    double *removed = (double *)vec(args[6], &nv);
    if (!qd || !coulomb || !qdd || !removed || !PyArray_ISWRITEABLE((PyArrayObject *)args[6]))
        Py_RETURN_NONE;
    const npy_int64 *idx = indices(args[2], n, nv);
    const double *mass = square(args[4], nv);
    double h;
    if (!idx || !mass || !floats(args + 5, 1, &h)) Py_RETURN_NONE;
    double *free_, *new_;
    PyObject *fo = new_vec(n, &free_);
    PyObject *no = fo ? new_vec(n, &new_) : NULL;
    if (!fo || !no) {
        Py_XDECREF(fo);
        return NULL;
    }
    plant_friction_raw(n, nv, qd, qdd, idx, coulomb, mass, h, free_, new_, removed);
    return pair(fo, no);
}

/* plant_integrate(q, qd_new, h, stop_lower, stop_upper, tau_cmd, damping, qd_free,
 * friction_full, idx) -> (q_new, tau_transmitted): boards.embedded._plant_integrate (qd_new
 * zeroed in place where a joint lands on its stop), or None for arguments it does not take. */
static PyObject *plant_integrate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(10, "plant_integrate")
    npy_intp n = -1, nv = -1;
    const double *q = vec(args[0], &n);
    double *qd = (double *)vec(args[1], &n);
    const double *lo = vec(args[3], &n), *hi = vec(args[4], &n), *tau_cmd = vec(args[5], &n),
                 *damping = vec(args[6], &n), *qd_free = vec(args[7], &n);
    const double *friction = vec(args[8], &nv);
    double h;
    if (!q || !qd || !lo || !hi || !tau_cmd || !damping || !qd_free || !friction
            || !PyArray_ISWRITEABLE((PyArrayObject *)args[1]) || !floats(args + 2, 1, &h))
        Py_RETURN_NONE;
    const npy_int64 *idx = indices(args[9], n, nv);
    if (!idx) Py_RETURN_NONE;
    double *qn, *tt;
    PyObject *qo = new_vec(n, &qn);
    PyObject *to = qo ? new_vec(n, &tt) : NULL;
    if (!qo || !to) {
        Py_XDECREF(qo);
        return NULL;
    }
    plant_integrate_raw(n, q, qd, h, lo, hi, tau_cmd, damping, qd_free, friction, idx, qn, tt);
    return pair(qo, to);
}

/* detect_step(judged, r_slow, band, band_gain, k_slow, bound, at_least) -> (level, over):
 * slow_step, then the impact level sqrt(Σ band²) and whether some |judged_j| reaches
 * bound_j (at_least: ≥, else >) — control.collision_detection._detect_step. None for
 * arguments it does not take. */
static PyObject *detect_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(7, "detect_step")
    const double *x[4], *bound;
    double k;
    npy_intp n;
    if (!vecs(args, 4, x, &n) || !floats(args + 4, 1, &k) || !(bound = vec(args[5], &n))
            || !PyBool_Check(args[6]))
        Py_RETURN_NONE;
    int at_least = args[6] == Py_True;
    double *slow = (double *)x[1], *band = (double *)x[2], sum = 0.0;
    int over = 0;
    for (npy_intp i = 0; i < n; i++) {
        double b = x[0][i] - slow[i];
        slow[i] += b * k;
        band[i] = b * x[3][i];
        double a = fabs(x[0][i]);
        over |= at_least ? a >= bound[i] : a > bound[i];
    }
    for (npy_intp i = 0; i < n; i++) sum += band[i] * band[i];
    PyObject *level = PyFloat_FromDouble(sqrt(sum));
    return level ? pair(level, PyBool_FromLong(over)) : NULL;
}

/* l1_distance(a, b) -> Σ|a − b| in index order (model.avoidance.joint_travel), or None for
 * arguments it does not take. */
static PyObject *l1_distance(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "l1_distance")
    const double *x[2];
    npy_intp n;
    if (!vecs(args, 2, x, &n)) Py_RETURN_NONE;
    double total = 0.0;
    for (npy_intp i = 0; i < n; i++) total += fabs(x[0][i] - x[1][i]);
    return PyFloat_FromDouble(total);
}

/* avoidance_push(gradients, clearances, qd, q, upper, lower, prev, step, limit, k, c,
 * inv_band, out) -> pushing: control.collision_avoidance._push_law (the spring-damper of each
 * overlapping pair summed, faded before the joint limits, bounded, rate limited from prev)
 * into out (n, written in place; it may be prev). gradients: m×n C-contiguous, clearances
 * m (m may be 0). True/False, or None for arguments it does not take. */
static PyObject *avoidance_push(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(13, "avoidance_push")
    if (!PyArray_Check(args[0])) Py_RETURN_NONE;
    PyArrayObject *ga = (PyArrayObject *)args[0];
    npy_intp m = -1, n = -1;
    const double *clear = vec(args[1], &m);
    const double *x[7];
    if (!clear || !vecs(args + 2, 7, x, &n) || PyArray_NDIM(ga) != 2
            || PyArray_TYPE(ga) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(ga)
            || PyArray_DIM(ga, 0) != m || PyArray_DIM(ga, 1) != n)
        Py_RETURN_NONE;
    double f[3];
    double *out = (double *)vec(args[12], &n);
    if (!floats(args + 9, 3, f) || !out || !PyArray_ISWRITEABLE((PyArrayObject *)args[12]))
        Py_RETURN_NONE;
    const double *grads = PyArray_DATA(ga);
    const double *qd = x[0], *q = x[1], *upper = x[2], *lower = x[3], *prev = x[4],
                 *step = x[5], *limit = x[6];
    double k = f[0], c = f[1], inv_band = f[2];
    double tau[64];
    if (n > 64) Py_RETURN_NONE;
    for (npy_intp j = 0; j < n; j++) tau[j] = 0.0;
    int pushing = 0;
    for (npy_intp i = 0; i < m; i++) {
        const double *g = grads + i * n;
        double rate = 0.0;
        for (npy_intp j = 0; j < n; j++) rate += g[j] * qd[j];
        double force = -k * clear[i] - c * rate;
        if (force > 0.0) {
            for (npy_intp j = 0; j < n; j++) tau[j] += force * g[j];
            pushing = 1;
        }
    }
    for (npy_intp j = 0; j < n; j++) {
        double fade = (tau[j] > 0.0 ? upper[j] - q[j] : q[j] - lower[j]) * inv_band;
        double t = clip(tau[j] * clip(fade, 0.0, 1.0), -limit[j], limit[j]);
        double lo = prev[j] >= 0.0 ? -step[j] : prev[j] - step[j];
        double hi = prev[j] <= 0.0 ? step[j] : prev[j] + step[j];
        out[j] = clip(t, lo, hi);
    }
    return PyBool_FromLong(pushing);
}

/* any_above(x, bound) -> whether some |x_i| > bound_i (NaN: never), the joint-speed monitor's
 * test (control.joint_speed: count_nonzero(np.abs(qd) > trip)), or None for arguments it does
 * not take. */
static PyObject *any_above(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "any_above")
    npy_intp n = -1;
    const double *x = vec(args[0], &n), *bound = x ? vec(args[1], &n) : NULL;
    if (!bound) Py_RETURN_NONE;
    for (npy_intp i = 0; i < n; i++)
        if (fabs(x[i]) > bound[i]) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* safe_torque(torque, lo, hi) -> clip(where(isfinite(torque), torque, 0), lo, hi): what the
 * simulated plants take of a written torque (boards.base.SimulatedPlant.write), or None for
 * arguments it does not take. */
static PyObject *safe_torque(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "safe_torque")
    npy_intp n = -1;
    const double *t = vec(args[0], &n), *lo = t ? vec(args[1], &n) : NULL,
                 *hi = lo ? vec(args[2], &n) : NULL;
    if (!hi) Py_RETURN_NONE;
    double *out;
    PyObject *o = new_vec(n, &out);
    if (o)
        for (npy_intp i = 0; i < n; i++)
            out[i] = clip(isfinite(t[i]) ? t[i] : 0.0, lo[i], hi[i]);
    return o;
}

/* board_torques(tau, lo, hi, head) -> [clip(tau, lo, hi)..., head]: the arm's torques within
 * their effort limits and the head's after them, the boards' order (realtime.core's tick),
 * or None for arguments it does not take. */
static PyObject *board_torques(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "board_torques")
    npy_intp n = -1;
    const double *tau = vec(args[0], &n), *lo = tau ? vec(args[1], &n) : NULL,
                 *hi = lo ? vec(args[2], &n) : NULL;
    double head;
    if (!hi || !floats(args + 3, 1, &head)) Py_RETURN_NONE;
    double *out;
    PyObject *o = new_vec(n + 1, &out);
    if (o) {
        for (npy_intp i = 0; i < n; i++) out[i] = clip(tau[i], lo[i], hi[i]);
        out[n] = head;
    }
    return o;
}

/* --- LAPACK's dposv and BLAS's dsymv as scipy's f2py wrappers call them, without their
 * ~2 us of argument handling a call: the same routines (scipy.linalg.cython_lapack's and
 * cython_blas's pointers into scipy's own LAPACK and BLAS), handed the same Fortran-ordered
 * copies, so the results are those of scipy.linalg.lapack.dposv(a, b, lower=0) and
 * scipy.linalg.blas.dsymv(alpha, a, x, lower=0) bit for bit. NULL pointers (scipy without
 * them): the kernels answer None. */
static ir_posv_t *lapack_posv;        /* (arith.h) */
static ir_symv_t *blas_symv;

/* A 2-D float64 C-contiguous array of shape (rows, *cols) (*cols < 0: any, which is set),
 * or NULL. */
static const double *mat(PyObject *o, npy_intp rows, npy_intp *cols)
{
    if (!PyArray_Check(o)) return NULL;
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 2 || PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_IS_C_CONTIGUOUS(a)
        || PyArray_DIM(a, 0) != rows)
        return NULL;
    if (*cols < 0) *cols = PyArray_DIM(a, 1);
    else if (PyArray_DIM(a, 1) != *cols) return NULL;
    return (const double *)PyArray_DATA(a);
}

/* A new Fortran-ordered rows x cols float64 array holding the C-ordered src. */
static PyObject *fortran_copy(const double *src, npy_intp rows, npy_intp cols)
{
    npy_intp dims[2] = {rows, cols};
    PyObject *o = PyArray_New(&PyArray_Type, 2, dims, NPY_DOUBLE, NULL, NULL, 0,
                              NPY_ARRAY_F_CONTIGUOUS, NULL);
    if (!o) return NULL;
    ir_fortran(src, rows, cols, PyArray_DATA((PyArrayObject *)o));
    return o;
}

/* hand_wrench(map, r, out) -> (‖force‖², ‖torque‖²): out = map·r for a 6×n map (C order) —
 * control.collision_detection._wrench_of; None for arguments it does not take. */
static PyObject *hand_wrench(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "hand_wrench")
    npy_intp n = -1, six = 6;
    const double *r = vec(args[1], &n), *out = vec(args[2], &six);
    const double *m = r ? mat(args[0], 6, &n) : NULL;
    if (!m || !out || !PyArray_ISWRITEABLE((PyArrayObject *)args[2])) Py_RETURN_NONE;
    double f2, t2;
    ir_hand_wrench(m, r, n, (double *)out, &f2, &t2);
    PyObject *a = PyFloat_FromDouble(f2);
    return a ? pair(a, PyFloat_FromDouble(t2)) : NULL;
}

/* posv(a, b) -> (c, x, info): scipy.linalg.lapack.dposv(a, b, lower=0) for a C-contiguous
 * n x n a and b of n (x of n) or n x m (x Fortran-ordered, as f2py hands it back); None for
 * other arguments. */
static PyObject *posv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "posv")
    npy_intp n = -1, m = -1;
    const double *a = NULL;
    if (lapack_posv && PyArray_Check(args[0]) && PyArray_NDIM((PyArrayObject *)args[0]) == 2) {
        n = PyArray_DIM((PyArrayObject *)args[0], 0);
        a = mat(args[0], n, &n);                         /* (square) */
    }
    if (!a || n < 1 || n > 64 || !PyArray_Check(args[1])) Py_RETURN_NONE;
    int vector = PyArray_NDIM((PyArrayObject *)args[1]) == 1;
    const double *b = NULL;
    if (vector) {
        npy_intp k = n;
        b = vec(args[1], &k);
        m = 1;
    } else {
        b = mat(args[1], n, &m);
    }
    if (!b || m < 1) Py_RETURN_NONE;
    PyObject *c = fortran_copy(a, n, n);
    PyObject *x = c ? (vector ? PyArray_SimpleNew(1, &n, NPY_DOUBLE) : fortran_copy(b, n, m)) : NULL;
    if (!x) {
        Py_XDECREF(c);
        return NULL;
    }
    if (vector) memcpy(PyArray_DATA((PyArrayObject *)x), b, n * sizeof(double));
    char uplo = 'U';
    int nn = (int)n, mm = (int)m, info = 0;
    lapack_posv(&uplo, &nn, &mm, PyArray_DATA((PyArrayObject *)c), &nn,
                PyArray_DATA((PyArrayObject *)x), &nn, &info);
    return Py_BuildValue("NNi", c, x, info);
}

/* symv(alpha, a, x) -> y: scipy.linalg.blas.dsymv(alpha, a, x, lower=0) for a C-contiguous
 * n x n a and x of n; None for other arguments. */
static PyObject *symv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(3, "symv")
    npy_intp n = -1;
    const double *x = blas_symv && PyFloat_Check(args[0]) ? vec(args[2], &n) : NULL;
    const double *a = x && n >= 1 && n <= 64 ? mat(args[1], n, &n) : NULL;
    if (!a) Py_RETURN_NONE;
    double *y;
    PyObject *yo = new_vec(n, &y);
    if (!yo) return NULL;
    ir_symv(blas_symv, PyFloat_AS_DOUBLE(args[0]), a, x, n, y);
    return yo;
}

/* joint_values(values, n) -> a command's array as control.joint_command._array makes it
 * (np.array(values, float)), when `values` is a tuple or list of exactly n Python floats, all
 * finite; None otherwise: the Python path then converts the other numbers it takes, or names
 * what is wrong. */
static PyObject *joint_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(2, "joint_values")
    PyObject *values = args[0];
    if (!PyLong_Check(args[1]) || !(PyTuple_Check(values) || PyList_Check(values)))
        Py_RETURN_NONE;
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    if (n == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (n < 0 || PySequence_Fast_GET_SIZE(values) != n) Py_RETURN_NONE;
    PyObject **items = PySequence_Fast_ITEMS(values);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyFloat_Check(items[i]) || !isfinite(PyFloat_AS_DOUBLE(items[i]))) Py_RETURN_NONE;
    double *out;
    PyObject *o = new_vec(n, &out);
    if (o)
        for (Py_ssize_t i = 0; i < n; i++) out[i] = PyFloat_AS_DOUBLE(items[i]);
    return o;
}

/* within_limits(pos, lo, hi, slack) -> clip(pos, lo, hi) when no pos_i < lo_i - slack and
 * no pos_i > hi_i + slack (control.joint_command.parse's position check), else None; None
 * too for arguments it does not take (the Python path then says which joint is outside). */
static PyObject *within_limits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    NARGS(4, "within_limits")
    npy_intp n = -1;
    const double *pos = vec(args[0], &n), *lo = pos ? vec(args[1], &n) : NULL,
                 *hi = lo ? vec(args[2], &n) : NULL;
    if (!hi || !PyFloat_Check(args[3])) Py_RETURN_NONE;
    double slack = PyFloat_AS_DOUBLE(args[3]);
    for (npy_intp i = 0; i < n; i++)
        if (pos[i] < lo[i] - slack || pos[i] > hi[i] + slack) Py_RETURN_NONE;
    double *out;
    PyObject *o = new_vec(n, &out);
    if (o)
        for (npy_intp i = 0; i < n; i++) out[i] = clip(pos[i], lo[i], hi[i]);
    return o;
}

static PyMethodDef methods[] = {
    {"trapezoid_step", (PyCFunction)(void (*)(void))trapezoid_step, METH_FASTCALL,
     "control.arm.trapezoid_step, compiled (None: arguments it does not take)."},
    {"track_accel", (PyCFunction)(void (*)(void))track_accel, METH_FASTCALL, NULL},
    {"track_torque", (PyCFunction)(void (*)(void))track_torque, METH_FASTCALL, NULL},
    {"velocity_step", (PyCFunction)(void (*)(void))velocity_step, METH_FASTCALL, NULL},
    {"extrapolate_step", (PyCFunction)(void (*)(void))extrapolate_step, METH_FASTCALL, NULL},
    {"line_target", (PyCFunction)(void (*)(void))line_target, METH_FASTCALL, NULL},
    {"observer_load", (PyCFunction)(void (*)(void))observer_load, METH_FASTCALL, NULL},
    {"observer_step", (PyCFunction)(void (*)(void))observer_step, METH_FASTCALL, NULL},
    {"slow_step", (PyCFunction)(void (*)(void))slow_step, METH_FASTCALL, NULL},
    {"interaction_wrench", (PyCFunction)(void (*)(void))interaction_wrench, METH_FASTCALL, NULL},
    {"nullspace_error", (PyCFunction)(void (*)(void))nullspace_error, METH_FASTCALL, NULL},
    {"rate_clip", (PyCFunction)(void (*)(void))rate_clip, METH_FASTCALL, NULL},
    {"plant_system", (PyCFunction)(void (*)(void))plant_system, METH_FASTCALL, NULL},
    {"plant_friction", (PyCFunction)(void (*)(void))plant_friction, METH_FASTCALL, NULL},
    {"plant_integrate", (PyCFunction)(void (*)(void))plant_integrate, METH_FASTCALL, NULL},
    {"avoidance_push", (PyCFunction)(void (*)(void))avoidance_push, METH_FASTCALL, NULL},
    {"detect_step", (PyCFunction)(void (*)(void))detect_step, METH_FASTCALL, NULL},
    {"hand_wrench", (PyCFunction)(void (*)(void))hand_wrench, METH_FASTCALL, NULL},
    {"l1_distance", (PyCFunction)(void (*)(void))l1_distance, METH_FASTCALL, NULL},
    {"any_above", (PyCFunction)(void (*)(void))any_above, METH_FASTCALL, NULL},
    {"safe_torque", (PyCFunction)(void (*)(void))safe_torque, METH_FASTCALL, NULL},
    {"board_torques", (PyCFunction)(void (*)(void))board_torques, METH_FASTCALL, NULL},
    {"posv", (PyCFunction)(void (*)(void))posv, METH_FASTCALL, NULL},
    {"symv", (PyCFunction)(void (*)(void))symv, METH_FASTCALL, NULL},
    {"joint_values", (PyCFunction)(void (*)(void))joint_values, METH_FASTCALL, NULL},
    {"within_limits", (PyCFunction)(void (*)(void))within_limits, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void)
{
    import_array();
    lapack_posv = (ir_posv_t *)capi_pointer("scipy.linalg.cython_lapack", "dposv");
    blas_symv = (ir_symv_t *)capi_pointer("scipy.linalg.cython_blas", "dsymv");
    return PyModule_Create(&module);
}
