/* One pass per lane for the op table's nesting (core/trace/nest.py; optional, as _scan.c is).
 *
 * enclosing(end, q_start, q_end, parent): for each event i of one thread, sorted by start, the
 *     latest j < i that encloses i's query, -1 if none (j fails when end[j] < q_end[i] or
 *     end[j] <= q_start[i]: optable._fails). One stack walk: an event that fails i's query is
 *     never the answer for a later event (a later event it enclosed, i encloses too, and i is
 *     later), so it is popped; what stays is the chain of ancestors of the event on top.
 * levels(parent, level): depth of each node of a parent-pointer forest whose parents precede
 *     their children (one forward pass).
 * add_at(target, index, values, out, skip_negative): out = target, then out[index[k]] += values[k]
 *     in k order (optable.add_at: np.bincount's additions onto 0.0 + the target's nonzero values);
 *     with skip_negative, entries whose index is negative are left out (a parent of -1: a root).
 * depths(start, sorted_ends, depth): build._depths' nesting depth of each event of a lane sorted by
 *     start: its index less the ends at or before its start (np.searchsorted(.., side="right")),
 *     clipped to [0, 32767], by one merge of the two sorted arrays (binary searches of 2M starts
 *     cost ~40 ms of cache misses); False when the starts are not in order (NaN, unsorted).
 * lane_counts(lane, counts) and lane_rows(lane, first, rows): the rows of each lane in row order,
 *     lane by lane (a stable counting sort; rows of lane -1 left out): build._lane_time_order's
 *     groups in two passes, not a pass per lane. lane_counts returns False for a lane beyond counts.
 * lane_keys(role_base, cat, pid, tid, n_tids, packed, present): each event's lane key
 *     role_base[cat] + pid * n_tids + tid (role_base: a category's role times pids x tids) into
 *     packed (int32), and present[key] = 1: EventColumns.lane_ids' packing and counting in one
 *     pass; False for a code out of range.
 * subtree_sums(own, parent, total): own plus the descendants' totals, each node's children added
 *     in row order onto 0.0 + own (the additions, so the rounding, of optable._subtree_sums' one
 *     np.bincount per level), in one backward pass over a children index.
 *
 * Arrays come as contiguous buffers (numpy arrays): float64 and int32 only. levels and
 * subtree_sums return False without writing anything useful when a parent does not precede its
 * child (the caller then runs its numpy version). Each runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../../_buffer.h"
#include <stdint.h>
#include <stdlib.h>

static PyObject *enclosing(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    Py_buffer v[4];
    Py_ssize_t n = -1, sizes[4] = {8, 8, 8, 4};
    int got = 0;
    for (; got < 4; got++)
        if (get(o[got], &v[got], got == 3, sizes[got], &n)) break;
    if (got < 4) {
        while (got--) PyBuffer_Release(&v[got]);
        return NULL;
    }
    const double *end = v[0].buf, *qs = v[1].buf, *qe = v[2].buf;
    int32_t *parent = v[3].buf;
    int32_t *stack = n > 0 ? malloc((size_t)n * sizeof *stack) : NULL;
    if (n > 0 && !stack) {
        for (int i = 0; i < 4; i++) PyBuffer_Release(&v[i]);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (top > 0) {
            int32_t j = stack[top - 1];
            if (end[j] < qe[i] || end[j] <= qs[i]) top--;   /* j does not enclose i */
            else break;
        }
        parent[i] = top ? stack[top - 1] : -1;
        stack[top++] = (int32_t)i;
    }
    Py_END_ALLOW_THREADS
    free(stack);
    for (int i = 0; i < 4; i++) PyBuffer_Release(&v[i]);
    Py_RETURN_NONE;
}

static PyObject *levels(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *po, *lo;
    if (!PyArg_ParseTuple(args, "OO", &po, &lo)) return NULL;
    Py_buffer pv, lv;
    Py_ssize_t n = -1;
    if (get(po, &pv, 0, 4, &n)) return NULL;
    if (get(lo, &lv, 1, 4, &n)) { PyBuffer_Release(&pv); return NULL; }
    const int32_t *parent = pv.buf;
    int32_t *level = lv.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t p = parent[i];
        if (p < 0) level[i] = 0;
        else if (p < i) level[i] = level[p] + 1;
        else { ok = 0; break; }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&pv);
    PyBuffer_Release(&lv);
    return PyBool_FromLong(ok);
}

static PyObject *subtree_sums(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *oo, *po, *to;
    if (!PyArg_ParseTuple(args, "OOO", &oo, &po, &to)) return NULL;
    Py_buffer ov, pv, tv;
    Py_ssize_t n = -1;
    if (get(oo, &ov, 0, 8, &n)) return NULL;
    if (get(po, &pv, 0, 4, &n)) { PyBuffer_Release(&ov); return NULL; }
    if (get(to, &tv, 1, 8, &n)) { PyBuffer_Release(&ov); PyBuffer_Release(&pv); return NULL; }
    const double *own = ov.buf;
    const int32_t *parent = pv.buf;
    double *total = tv.buf;
    /* children of each node in row order: first[p] .. first[p + 1] in kids */
    Py_ssize_t *first = calloc((size_t)n + 2, sizeof *first);
    int32_t *kids = n > 0 ? malloc((size_t)n * sizeof *kids) : NULL;
    int ok = first != NULL && (n == 0 || kids != NULL);
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t p = parent[i];
            if (p >= i) { ok = 0; break; }
            if (p >= 0) first[p + 2]++;
        }
        if (ok) {
            for (Py_ssize_t i = 0; i < n; i++) first[i + 2] += first[i + 1];
            for (Py_ssize_t i = 0; i < n; i++)   /* first[p + 1]: the next free slot of p's children */
                if (parent[i] >= 0) kids[first[parent[i] + 1]++] = (int32_t)i;
            for (Py_ssize_t i = n - 1; i >= 0; i--) {   /* children after parents: theirs are final */
                Py_ssize_t a = first[i], b = first[i + 1];
                if (a == b) { total[i] = own[i]; continue; }
                double s = 0.0;
                s += own[i];
                for (Py_ssize_t k = a; k < b; k++) s += total[kids[k]];
                total[i] = s;
            }
        }
        Py_END_ALLOW_THREADS
    }
    int no_memory = first == NULL || (n > 0 && kids == NULL);
    free(first);
    free(kids);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&tv);
    if (no_memory) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

static PyObject *add_at(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *to, *io, *vo, *oo;
    int skip_negative;
    if (!PyArg_ParseTuple(args, "OOOOp", &to, &io, &vo, &oo, &skip_negative)) return NULL;
    Py_buffer tv, iv, vv, ov;
    Py_ssize_t m = -1, k = -1;
    if (PyObject_GetBuffer(io, &iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) return NULL;
    if (iv.itemsize != 4 && iv.itemsize != 8) {
        PyBuffer_Release(&iv);
        PyErr_SetString(PyExc_TypeError, "index: int32 or int64");
        return NULL;
    }
    k = iv.len / iv.itemsize;
    if (get(vo, &vv, 0, 8, &k)) { PyBuffer_Release(&iv); return NULL; }
    if (get(to, &tv, 0, 8, &m)) { PyBuffer_Release(&iv); PyBuffer_Release(&vv); return NULL; }
    if (get(oo, &ov, 1, 8, &m)) { PyBuffer_Release(&iv); PyBuffer_Release(&vv); PyBuffer_Release(&tv); return NULL; }
    const double *target = tv.buf, *values = vv.buf;
    double *out = ov.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m; i++)
        out[i] = target[i] != 0.0 || target[i] != target[i] ? 0.0 + target[i] : 0.0;   /* NaN is nonzero */
    for (Py_ssize_t j = 0; j < k; j++) {
        int64_t at = iv.itemsize == 4 ? ((const int32_t *)iv.buf)[j] : ((const int64_t *)iv.buf)[j];
        if (at < 0 && skip_negative) continue;
        if (at < 0 || at >= m) { ok = 0; break; }
        out[at] += values[j];
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&iv);
    PyBuffer_Release(&vv);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&ov);
    return PyBool_FromLong(ok);
}

static PyObject *depths(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *so, *eo, *d_o;
    if (!PyArg_ParseTuple(args, "OOO", &so, &eo, &d_o)) return NULL;
    Py_buffer sv, ev, dv;
    Py_ssize_t n = -1;
    if (get(so, &sv, 0, 8, &n)) return NULL;
    if (get(eo, &ev, 0, 8, &n)) { PyBuffer_Release(&sv); return NULL; }
    if (get(d_o, &dv, 1, 2, &n)) { PyBuffer_Release(&sv); PyBuffer_Release(&ev); return NULL; }
    const double *start = sv.buf, *end = ev.buf;
    int16_t *depth = dv.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t closed = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && !(start[i] >= start[i - 1])) { ok = 0; break; }   /* not sorted, or NaN */
        while (closed < n && end[closed] <= start[i]) closed++;
        Py_ssize_t d = i - closed;
        depth[i] = (int16_t)(d < 0 ? 0 : d > 32767 ? 32767 : d);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ev);
    PyBuffer_Release(&dv);
    return PyBool_FromLong(ok);
}

static PyObject *lane_counts(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *lo, *co;
    if (!PyArg_ParseTuple(args, "OO", &lo, &co)) return NULL;
    Py_buffer lv, cv;
    Py_ssize_t n = -1, m = -1;
    if (get(lo, &lv, 0, 4, &n)) return NULL;
    if (get(co, &cv, 1, 8, &m)) { PyBuffer_Release(&lv); return NULL; }
    const int32_t *lane = lv.buf;
    int64_t *counts = cv.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m; k++) counts[k] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t k = lane[i];
        if (k >= m) { ok = 0; break; }
        if (k >= 0) counts[k]++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&lv);
    PyBuffer_Release(&cv);
    return PyBool_FromLong(ok);
}

static PyObject *lane_rows(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *lo, *fo, *ro;
    if (!PyArg_ParseTuple(args, "OOO", &lo, &fo, &ro)) return NULL;
    Py_buffer lv, fv, rv;
    Py_ssize_t n = -1, m = -1, k = -1;
    if (get(lo, &lv, 0, 4, &n)) return NULL;
    if (get(fo, &fv, 1, 8, &m)) { PyBuffer_Release(&lv); return NULL; }
    if (get(ro, &rv, 1, 8, &k)) { PyBuffer_Release(&lv); PyBuffer_Release(&fv); return NULL; }
    const int32_t *lane = lv.buf;
    int64_t *next = fv.buf, *rows = rv.buf;   /* next[k]: where lane k's next row goes */
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t l = lane[i];
        if (l < 0) continue;
        if (l >= m || next[l] < 0 || next[l] >= k) { ok = 0; break; }
        rows[next[l]++] = i;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&lv);
    PyBuffer_Release(&fv);
    PyBuffer_Release(&rv);
    return PyBool_FromLong(ok);
}

static PyObject *lane_keys(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *o[7];
    Py_ssize_t n_tids;
    if (!PyArg_ParseTuple(args, "OOOOnOO", &o[0], &o[1], &o[2], &o[3], &n_tids, &o[4], &o[5])) return NULL;
    Py_buffer v[6];
    Py_ssize_t n_roles = -1, n = -1, bound = -1;
    int got = get(o[0], &v[0], 0, 8, &n_roles) ? 0 : 1;
    if (got == 1 && !get(o[1], &v[1], 0, 4, &n)) got = 2;
    if (got == 2 && !get(o[2], &v[2], 0, 4, &n)) got = 3;
    if (got == 3 && !get(o[3], &v[3], 0, 4, &n)) got = 4;
    if (got == 4 && !get(o[4], &v[4], 1, 4, &n)) got = 5;
    if (got == 5 && !get(o[5], &v[5], 1, 1, &bound)) got = 6;
    if (got < 6) {
        while (got--) PyBuffer_Release(&v[got]);
        return NULL;
    }
    const int64_t *role_base = v[0].buf;
    const int32_t *cat = v[1].buf, *pid = v[2].buf, *tid = v[3].buf;
    int32_t *packed = v[4].buf;
    unsigned char *present = v[5].buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t c = cat[i];
        if (c < 0 || c >= n_roles || pid[i] < 0 || tid[i] < 0 || tid[i] >= n_tids) { ok = 0; break; }
        int64_t key = role_base[c] + (int64_t)pid[i] * n_tids + tid[i];
        if (key < 0 || key >= bound) { ok = 0; break; }
        packed[i] = (int32_t)key;
        present[key] = 1;
    }
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 6; i++) PyBuffer_Release(&v[i]);
    return PyBool_FromLong(ok);
}

static PyMethodDef METHODS[] = {
    {"enclosing", enclosing, METH_VARARGS,
     "enclosing(end, q_start, q_end, parent): the latest earlier event enclosing each query (-1:\n"
     "none), written into parent (int32)."},
    {"levels", levels, METH_VARARGS,
     "levels(parent, level) -> bool: each node's depth written into level; False when a parent\n"
     "does not precede its child."},
    {"add_at", add_at, METH_VARARGS,
     "add_at(target, index, values, out, skip_negative) -> bool: np.bincount's sums onto target's\n"
     "nonzero values, written into out; False (out unusable) for an index out of range."},
    {"depths", depths, METH_VARARGS,
     "depths(start, sorted_ends, depth) -> bool: each event's index less the ends at or before its\n"
     "start, clipped to int16, into depth; False when the starts are not sorted."},
    {"lane_counts", lane_counts, METH_VARARGS,
     "lane_counts(lane, counts) -> bool: the rows of each lane (-1 left out) into counts (int64);\n"
     "False for a lane beyond counts."},
    {"lane_rows", lane_rows, METH_VARARGS,
     "lane_rows(lane, next, rows) -> bool: each row index written at next[its lane]++ (int64)."},
    {"lane_keys", lane_keys, METH_VARARGS,
     "lane_keys(role_base, cat, pid, tid, n_tids, packed, present) -> bool: each event's lane key\n"
     "into packed (int32) and present[key] = 1 (uint8); False for a code out of range."},
    {"subtree_sums", subtree_sums, METH_VARARGS,
     "subtree_sums(own, parent, total) -> bool: own plus the descendants' into total; False when a\n"
     "parent does not precede its child."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_nest", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__nest(void) { return PyModule_Create(&MODULE); }
