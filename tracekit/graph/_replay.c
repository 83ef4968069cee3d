/* The replay's loop, compiled (optional: tracekit/graph/engine.py runs the same loop in Python without it).
 * replay(order, ptr, src, gap, dur, base, start, end): int64 buffers; in topological order each node starts
 * at the latest of base[v] and end[src[e]] + gap[e] over its in-edges e in [ptr[v], ptr[v+1]) and ends dur[v]
 * later; start and end are written. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *replay(PyObject *self, PyObject *args) {
    Py_buffer b[8];
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7]))
        return NULL;
    const int64_t *order = b[0].buf, *ptr = b[1].buf, *src = b[2].buf, *gap = b[3].buf, *dur = b[4].buf,
                  *base = b[5].buf;
    int64_t *start = b[6].buf, *end = b[7].buf;
    Py_ssize_t n = b[4].len / 8, m = b[2].len / 8, k = b[0].len / 8;
    int ok = b[1].len / 8 == n + 1 && b[3].len / 8 == m && b[5].len / 8 == n && b[6].len / 8 == n
             && b[7].len / 8 == n && k == n;
    for (Py_ssize_t i = 0; ok && i < k; i++) {
        int64_t v = order[i];
        if (v < 0 || v >= n) { ok = 0; break; }
        int64_t t = base[v];
        for (int64_t e = ptr[v]; e < ptr[v + 1]; e++) {
            if (e < 0 || e >= m || src[e] < 0 || src[e] >= n) { ok = 0; break; }
            int64_t x = end[src[e]] + gap[e];
            if (x > t) t = x;
        }
        start[v] = t;
        end[v] = t + dur[v];
    }
    for (int j = 0; j < 8; j++) PyBuffer_Release(&b[j]);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "replay: arrays of inconsistent sizes or indices out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"replay", replay, METH_VARARGS, "the replay's loop over int64 buffers"}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay", NULL, -1, methods};
PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
