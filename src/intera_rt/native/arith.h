/* Arithmetic on raw arrays that both compiled modules run: _kernels.c (kernels around
 * Pinocchio's Python calls) and _dynamics.cpp (the same steps on Pinocchio's C++ API), so that
 * every path rounds as the Python twins do. The embedded plant's step (boards.embedded): n
 * joints driven, at indices idx of the model's nv; matrices nv x nv, C order. */
#ifndef INTERA_RT_ARITH_H
#define INTERA_RT_ARITH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double ir_clip(double x, double lo, double hi)   /* numpy's clip ufunc */
{
    if (isnan(x)) return x;
    double y = x > lo ? x : lo;
    if (isnan(y)) return y;
    return y < hi ? y : hi;
}

/* _plant_system: full_tau[idx] = τ − B·q̇ (+ external); mass += armature (in place);
 * solve = mass + h·B at the driven joints; rhs = full_tau − bias. ext may be NULL. */
static inline void plant_system_raw(long n, long nv, const double *tau_cmd, const double *damping,
                                    const double *qd, const double *ext, const int64_t *idx,
                                    double h, double *full_tau, double *mass, const double *arm,
                                    const double *bias, double *solve, double *rhs)
{
    for (long i = 0; i < n; i++) {
        double tau = tau_cmd[i] - damping[i] * qd[i];
        if (ext) tau += ext[i];
        full_tau[idx[i]] = tau;
    }
    for (long i = 0; i < nv * nv; i++) {
        mass[i] += arm[i];
        solve[i] = mass[i];
    }
    for (long i = 0; i < n; i++)
        solve[idx[i] * nv + idx[i]] += h * damping[i];
    for (long i = 0; i < nv; i++)
        rhs[i] = full_tau[i] - bias[i];
}

/* _plant_friction: the step's velocity (free_) and that less what Coulomb friction removes
 * (new_), which goes into removed[idx]. */
static inline void plant_friction_raw(long n, long nv, const double *qd, const double *qdd,
                                      const int64_t *idx, const double *coulomb,
                                      const double *mass, double h, double *free_,
                                      double *new_, double *removed)
{
    for (long i = 0; i < n; i++) {
        int64_t j = idx[i];
        double f = qd[i] + h * qdd[j];
        double reach = (coulomb[i] * h) / mass[j * nv + j];
        double r = ir_clip(f, -reach, reach);
        free_[i] = f;
        new_[i] = f - r;
        removed[j] = r;
    }
}

/* _plant_integrate: qn = q + h·q̇ onto the hard stops (qd zeroed in place where a joint
 * lands on one, moving into it), tt the torque each joint transmits. */
static inline void plant_integrate_raw(long n, const double *q, double *qd, double h,
                                       const double *lo, const double *hi, const double *tau_cmd,
                                       const double *damping, const double *qd_free,
                                       const double *friction, const int64_t *idx, double *qn,
                                       double *tt)
{
    int any = 0;
    for (long i = 0; i < n; i++) {
        qn[i] = q[i] + h * qd[i];
        any |= (qn[i] < lo[i]) | (qn[i] > hi[i]);
    }
    if (any)
        for (long i = 0; i < n; i++) {
            int below = qn[i] < lo[i], above = qn[i] > hi[i];
            qn[i] = ir_clip(qn[i], lo[i], hi[i]);
            if ((below & (qd[i] < 0.0)) | (above & (qd[i] > 0.0))) qd[i] = 0.0;
        }
    for (long i = 0; i < n; i++)
        tt[i] = tau_cmd[i] - damping[i] * qd_free[i] - friction[idx[i]];
}

/* Arm.track's law around its inverse dynamics: u = a + kp·(p − q) + kd·(v − qd) (before), then
 * τ = (τ + armature·u − gravity) + damping·v (after; tau in place). n joints. */
static inline void track_accel_raw(long n, const double *a, const double *p, const double *q,
                                   const double *v, const double *qd, const double *kp,
                                   const double *kd, double *u)
{
    for (long i = 0; i < n; i++) u[i] = a[i] + kp[i] * (p[i] - q[i]) + kd[i] * (v[i] - qd[i]);
}

static inline void track_torque_raw(long n, double *tau, const double *armature, const double *u,
                                    const double *gravity, const double *damping, const double *v)
{
    for (long i = 0; i < n; i++)
        tau[i] = (tau[i] + armature[i] * u[i] - gravity[i]) + damping[i] * v[i];
}

/* The momentum observer's reading into Pinocchio's order (q1, v1 of nv: the arm's at arm[],
 * the head's at head unless < 0) and acc = (v1 − v0)·inv_h; returns whether a joint is on its
 * mechanical stop (q1 ≥ upper or ≤ lower). */
static inline int observer_load_raw(long nv, long na, double *q1, double *v1, const double *q,
                                    const double *qd, const int64_t *arm, long head, double qh,
                                    double vh, const double *upper, const double *lower,
                                    const double *v0, double *acc, double inv_h)
{
    for (long i = 0; i < na; i++) {
        q1[arm[i]] = q[i];
        v1[arm[i]] = qd[i];
    }
    if (head >= 0) {
        q1[head] = qh;
        v1[head] = vh;
    }
    int on_stop = 0;
    for (long i = 0; i < nv; i++) {
        on_stop |= (q1[i] >= upper[i]) | (q1[i] <= lower[i]);
        acc[i] = (v1[i] - v0[i]) * inv_h;
    }
    return on_stop;
}

/* The momentum observer's step after its RNEA (control.momentum_observer._observe):
 * r += k·((tau + armature·acc)[arm] − tau_meas − r), na arm joints, r in place. */
static inline void observer_step_raw(long na, const double *tau, const double *acc,
                                     const double *armature, const int64_t *arm,
                                     const double *tau_meas, double *r, double k)
{
    for (long i = 0; i < na; i++) {
        int64_t j = arm[i];
        double raw = (tau[j] + acc[j] * armature[j]) - tau_meas[i];
        raw -= r[i];
        r[i] += raw * k;
    }
}

/* LAPACK's dposv and BLAS's dsymv, as scipy.linalg.cython_lapack / cython_blas hand them
 * out (scipy's own libraries, so the same results as scipy.linalg's wrappers). */
typedef void ir_posv_t(char *uplo, int *n, int *nrhs, double *a, int *lda, double *b, int *ldb,
                       int *info);
typedef void ir_symv_t(char *uplo, int *n, double *alpha, double *a, int *lda, double *x,
                       int *incx, double *beta, double *y, int *incy);

/* dst (Fortran order) = src (C order), rows x cols: the copy f2py makes. */
static inline void ir_fortran(const double *src, long rows, long cols, double *dst)
{
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++)
            dst[i + j * rows] = src[i * cols + j];
}

/* out = m·r for a 6×n m (C order), each row's sum in index order; *f2, *t2 the squared norms
 * of its force (0..2) and torque (3..5) parts, summed left to right: collision detection's
 * hand wrench (control.collision_detection._wrench_of). */
static inline void ir_hand_wrench(const double *m, const double *r, long n, double *out,
                                  double *f2, double *t2)
{
    for (long a = 0; a < 6; a++) {
        double s = 0.0;
        for (long i = 0; i < n; i++) s += m[a * n + i] * r[i];
        out[a] = s;
    }
    *f2 = out[0] * out[0] + out[1] * out[1] + out[2] * out[2];
    *t2 = out[3] * out[3] + out[4] * out[4] + out[5] * out[5];
}

/* g = J·Jᵀ + damping·I for a 6×n J (C order), each sum in index order, g 6×6 C order (and
 * symmetric: as Fortran order too): control.collision_detection._gram. */
static inline void ir_gram(const double *j, long n, double damping, double *g)
{
    for (long a = 0; a < 6; a++)
        for (long b = a; b < 6; b++) {
            double s = 0.0;
            for (long i = 0; i < n; i++) s += j[a * n + i] * j[b * n + i];
            g[a * 6 + b] = g[b * 6 + a] = s;
        }
    for (long a = 0; a < 6; a++) g[a * 6 + a] += damping;
}

/* y = alpha·A·x (A's upper triangle; C order, n ≤ 64), as scipy's dsymv(alpha, a, x,
 * lower=0). */
static inline void ir_symv(ir_symv_t *symv, double alpha, const double *a, const double *x,
                           long n, double *y)
{
    double fa[64 * 64], xs[64];
    ir_fortran(a, n, n, fa);
    memcpy(xs, x, n * sizeof(double));
    memset(y, 0, n * sizeof(double));
    char uplo = 'U';
    int nn = (int)n, one = 1;
    double beta = 0.0;
    symv(&uplo, &nn, &alpha, fa, &nn, xs, &one, &beta, y, &one);
}
#endif
