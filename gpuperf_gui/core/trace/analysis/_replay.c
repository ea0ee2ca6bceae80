/* The what-if's loops (core/trace/analysis/critical_path.py; optional, as _scan.c and _nest.c are).
 *
 * parents(start, end, parent): critical_path._parents' running stack over one thread's events
 *     (sorted by start, parents first on ties): before each event, the events that end at or
 *     before its start are popped from the top; its parent is the top (-1: none); it is pushed
 *     when it lasts (end > start). The same comparisons, so the same parents.
 *
 * replay(t_orig, d, fixed, reach, group, chain_lo, chain_hi, src, dst, w, slack, max_iter, t) -> bool
 *
 *     Every node's time, written into t (filled with -inf by the caller), by the passes of
 *     critical_path._replay_numpy, float operation for float operation, so the times are the
 *     same bits (tests/core/test_replay_c.py checks them on real traces):
 *
 *     each pass first takes every collective group's last arrival from the times of the pass
 *     before (max over its nodes of max(the node's predecessor, its ready time)); then, chain by
 *     chain in order, from the first node whose running maximum of trace times (reach) is at or
 *     after the frontier (np.searchsorted(.., side="left")) to the chain's end:
 *
 *         r[i]   = max(fixed[i], max over edges e into i of t[src[e]] + w[e], last[group[i]])
 *         D      = the running sum of d from the first node walked (np.cumsum: in order)
 *         a[i]   = r[i] - (D[i] - d[i]);  a[0] = max(a[0], t[first - 1])
 *         new[i] = D[i] + max(a[0..i])
 *
 *     and the chain takes new when some node moved by more than 1e-6 (the earliest such node's
 *     trace time sets the next pass's frontier, less slack and 1e-6). Returns True once a pass
 *     moved nothing, False after max_iter passes (the caller raises NotSettled).
 *
 * The maxima are numpy's (np.maximum: the first operand when >=, a NaN propagates); the edges must be
 * sorted by destination (build_graph sorts them). Arrays come as contiguous buffers: float64 and int64.
 * Index checks fail with ValueError before the walk (an index out of range is a bug in the graph:
 * numpy would refuse it too, so nothing falls back). Built with -ffp-contract=off (setup.py): no fused
 * multiply-add, each + and - rounded as numpy rounds it. Runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_buffer.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* np.maximum on two float64s. */
static inline double npmax(double a, double b) { return (a >= b || isnan(a)) ? a : b; }

/* numpy's sort order for doubles (NaN last). */
static inline int np_less(double a, double b) { return a < b || (b != b && a == a); }

/* np.searchsorted(arr[0:n], key, side="left") on a sorted array. */
static Py_ssize_t search_left_f(const double *arr, Py_ssize_t n, double key) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (np_less(arr[mid], key)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The first edge whose destination is >= node (dst sorted). */
static Py_ssize_t search_left_i(const int64_t *arr, Py_ssize_t n, int64_t key) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (arr[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* max(fixed[i], the edges into i) for the nodes lo..hi-1 into r, edges from e (the first into lo):
 * each destination's edges folded in edge order, then against fixed (the reduceat in critical_path._replay_numpy). */
static void ready_run(Py_ssize_t lo, Py_ssize_t hi, const double *fixed, const int64_t *src, const int64_t *dst,
                      const double *w, Py_ssize_t e, Py_ssize_t n_edges, const double *t, double *r) {
    for (Py_ssize_t i = lo; i < hi; i++) r[i - lo] = fixed[i];
    while (e < n_edges && dst[e] < hi) {
        int64_t node = dst[e];
        double red = t[src[e]] + w[e];
        for (e++; e < n_edges && dst[e] == node; e++) red = npmax(red, t[src[e]] + w[e]);
        r[node - lo] = npmax(r[node - lo], red);
    }
}

typedef struct {
    const double *t_orig, *d, *fixed, *reach, *w;
    const int64_t *group, *chain_lo, *chain_hi, *src, *dst;
    Py_ssize_t n, n_chains, n_edges;
    double slack;
    long max_iter;
    double *t;
} Walk;

/* The passes; 1: settled, 0: still moving after max_iter, -1: out of memory. */
static int walk(const Walk *x) {
    const Py_ssize_t n = x->n;
    Py_ssize_t longest = 0, n_grp = 0;
    int64_t n_groups = 0;
    for (Py_ssize_t c = 0; c < x->n_chains; c++)
        if (x->chain_hi[c] - x->chain_lo[c] > longest) longest = x->chain_hi[c] - x->chain_lo[c];
    for (Py_ssize_t i = 0; i < n; i++)
        if (x->group[i] >= 0) {
            n_grp++;
            if (x->group[i] + 1 > n_groups) n_groups = x->group[i] + 1;
        }
    double *r = malloc((size_t)(longest ? longest : 1) * sizeof *r);
    double *nw = malloc((size_t)(longest ? longest : 1) * sizeof *nw);
    double *last = malloc((size_t)(n_groups ? n_groups : 1) * sizeof *last);
    Py_ssize_t *grp = malloc((size_t)(n_grp ? n_grp : 1) * sizeof *grp);
    unsigned char *is_lo = calloc((size_t)(n ? n : 1), 1);
    int out = -1;
    if (!r || !nw || !last || !grp || !is_lo) goto done;
    for (Py_ssize_t i = 0, k = 0; i < n; i++)
        if (x->group[i] >= 0) grp[k++] = i;
    for (Py_ssize_t c = 0; c < x->n_chains; c++)
        if (x->chain_lo[c] < x->chain_hi[c]) is_lo[x->chain_lo[c]] = 1;
    double *t = x->t;
    double frontier = -INFINITY;
    out = 0;
    for (long pass = 0; pass < x->max_iter; pass++) {
        /* collectives: every rank's arrival, from the newest times */
        for (int64_t gi = 0; gi < n_groups; gi++) last[gi] = -INFINITY;
        Py_ssize_t ge = 0;   /* the first edge into the group node (dst sorted, nodes ascending) */
        for (Py_ssize_t k = 0; k < n_grp; k++) {
            Py_ssize_t node = grp[k];
            double rg;
            ge = ge + search_left_i(x->dst + ge, x->n_edges - ge, node);
            ready_run(node, node + 1, x->fixed, x->src, x->dst, x->w, ge, x->n_edges, t, &rg);
            double prev = is_lo[node] ? -INFINITY : t[node > 0 ? node - 1 : 0];
            double arrival = npmax(prev, rg);
            last[x->group[node]] = npmax(last[x->group[node]], arrival);
        }
        double earliest = INFINITY;
        for (Py_ssize_t c = 0; c < x->n_chains; c++) {
            Py_ssize_t lo = x->chain_lo[c], hi = x->chain_hi[c];
            Py_ssize_t k = lo + search_left_f(x->reach + lo, hi - lo, frontier);
            if (k >= hi) continue;
            Py_ssize_t m = hi - k;
            Py_ssize_t e = search_left_i(x->dst, x->n_edges, k);
            ready_run(k, hi, x->fixed, x->src, x->dst, x->w, e, x->n_edges, t, r);
            if (n_groups)
                for (Py_ssize_t i = 0; i < m; i++) {
                    int64_t gi = x->group[k + i];
                    if (gi >= 0) r[i] = npmax(r[i], last[gi]);
                }
            double carry = k > lo ? t[k - 1] : -INFINITY;
            const double *dd = x->d + k;
            double D = 0.0, run = 0.0;
            for (Py_ssize_t i = 0; i < m; i++) {
                D = i ? D + dd[i] : dd[i];
                double a = r[i] - (D - dd[i]);
                if (i == 0) {
                    if (carry > a) a = carry;   /* Python's max(a[0], carry) */
                    run = a;
                } else {
                    run = npmax(run, a);
                }
                nw[i] = D + run;
            }
            Py_ssize_t first = -1;
            for (Py_ssize_t i = 0; i < m; i++) {
                double nv = nw[i], ov = t[k + i];
                if (nv != ov && !(fabs(nv - ov) <= 1e-6)) { first = i; break; }
            }
            if (first >= 0) {
                double at = x->t_orig[k + first];
                if (at < earliest) earliest = at;
                for (Py_ssize_t i = 0; i < m; i++) t[k + i] = nw[i];
            }
        }
        if (earliest == INFINITY) { out = 1; break; }
        frontier = earliest - x->slack - 1e-6;
    }
done:
    free(r);
    free(nw);
    free(last);
    free(grp);
    free(is_lo);
    return out;
}

static PyObject *replay(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *o[13];
    double slack;
    long max_iter;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOdlO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &slack, &max_iter, &o[12]))
        return NULL;
    /* t_orig d fixed reach group | chain_lo chain_hi | src dst w | t */
    PyObject *objs[11] = {o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[12]};
    const int set[11] = {0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 0};   /* which arrays share a length */
    Py_buffer v[11];
    Py_ssize_t len[3] = {-1, -1, -1};
    int got = 0;
    for (; got < 11; got++)
        if (get(objs[got], &v[got], got == 10, 8, &len[set[got]])) break;
    if (got < 11) {
        while (got--) PyBuffer_Release(&v[got]);
        return NULL;
    }
    Walk x = {v[0].buf, v[1].buf, v[2].buf, v[3].buf, v[9].buf, v[4].buf, v[5].buf, v[6].buf, v[7].buf, v[8].buf,
              len[0], len[1], len[2], slack, max_iter, v[10].buf};
    const char *bad = NULL;
    for (Py_ssize_t c = 0; c < x.n_chains && !bad; c++)
        if (x.chain_lo[c] < 0 || x.chain_lo[c] > x.chain_hi[c] || x.chain_hi[c] > x.n) bad = "chain out of range";
    for (Py_ssize_t i = 0; i < x.n && !bad; i++)
        if (x.group[i] >= x.n) bad = "group id out of range";
    for (Py_ssize_t e = 0; e < x.n_edges && !bad; e++)
        if (x.src[e] < 0 || x.src[e] >= x.n || x.dst[e] < 0 || x.dst[e] >= x.n || (e && x.dst[e] < x.dst[e - 1]))
            bad = "edge out of range or not sorted by destination";
    if (bad) {
        for (int i = 0; i < 11; i++) PyBuffer_Release(&v[i]);
        PyErr_SetString(PyExc_ValueError, bad);
        return NULL;
    }
    int res;
    Py_BEGIN_ALLOW_THREADS
    res = walk(&x);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 11; i++) PyBuffer_Release(&v[i]);
    if (res < 0) return PyErr_NoMemory();
    return PyBool_FromLong(res);
}

static PyObject *parents(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *so, *eo, *po;
    if (!PyArg_ParseTuple(args, "OOO", &so, &eo, &po)) return NULL;
    Py_buffer sv, ev, pv;
    Py_ssize_t n = -1;
    if (get(so, &sv, 0, 8, &n)) return NULL;
    if (get(eo, &ev, 0, 8, &n)) { PyBuffer_Release(&sv); return NULL; }
    if (get(po, &pv, 1, 8, &n)) { PyBuffer_Release(&sv); PyBuffer_Release(&ev); return NULL; }
    const double *start = sv.buf, *end = ev.buf;
    int64_t *parent = pv.buf;
    Py_ssize_t *stack = malloc((size_t)(n ? n : 1) * sizeof *stack);
    if (stack) {
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t top = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            double s = start[i];
            while (top > 0 && end[stack[top - 1]] <= s) top--;
            parent[i] = top ? (int64_t)stack[top - 1] : -1;
            if (end[i] > s) stack[top++] = i;
        }
        Py_END_ALLOW_THREADS
    }
    free(stack);
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ev);
    PyBuffer_Release(&pv);
    if (!stack) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"parents", parents, METH_VARARGS,
     "parents(start, end, parent): each event's enclosing event by critical_path._parents' running\n"
     "stack, written into parent (int64, -1: none)."},
    {"replay", replay, METH_VARARGS,
     "replay(t_orig, d, fixed, reach, group, chain_lo, chain_hi, src, dst, w, slack, max_iter, t) -> bool:\n"
     "critical_path.replay's passes, every node's time written into t; False when still moving after\n"
     "max_iter passes."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_replay", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&MODULE); }
