/* What the C extensions of core/trace share (_nest.c, _replay.c): numpy arrays as buffers. */
#ifndef GPUPERF_BUFFER_H
#define GPUPERF_BUFFER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Get a contiguous buffer of n items of `itemsize` bytes (n < 0: any length, set here; else the
 * buffer must have n items); -1 with an exception otherwise. */
static int get(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, Py_ssize_t *n) {
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return -1;
    if (view->itemsize != itemsize || view->len % itemsize) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "unexpected item size");
        return -1;
    }
    Py_ssize_t items = view->len / itemsize;
    if (*n >= 0 && items != *n) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "arrays of different lengths");
        return -1;
    }
    *n = items;
    return 0;
}

#endif
