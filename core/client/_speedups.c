/* pylog's optional compiled fast path for the producer: pylog.core.client._speedups.
 *
 * encode_run writes many v2 records with one timestamp straight into a batch's bytearray; its
 * pure-Python twin, the reference, is pylog.core.client.runs.encode_run_py, and
 * tests/test_fastpath_runs.py requires the same bytes and errors from both. murmur2_many is
 * partitioner.murmur2_many_py in bulk; the framed-record encoders are in _speedups_frames.c.
 * pylog.core.client.fastpath decides which one runs. Nothing here does I/O.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_speedups_records.h"


/* the inputs of one run: lists, or NULL where the argument was None */
typedef struct {
    PyObject *values, *keys, *headers, *vlens, *klens;
    PyObject *shared; /* headers shared by every record (bytes), or NULL */
} run_args;

/* item i of a list of bytes, checked */
static inline int
run_bytes(PyObject *list, Py_ssize_t i, const char *what, const char **data, Py_ssize_t *size)
{
    PyObject *o = PyList_GET_ITEM(list, i);
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: %s must be bytes, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *data = PyBytes_AS_STRING(o);
    *size = PyBytes_GET_SIZE(o);
    return 0;
}

/* the length written for item i: lens[i] (-1 for a null, whose item must be b""), else its size */
static inline int
run_length(PyObject *lens, Py_ssize_t i, Py_ssize_t size, const char *what, Py_ssize_t *out)
{
    if (lens == NULL) {
        *out = size;
        return 0;
    }
    PyObject *o = PyList_GET_ITEM(lens, i);
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: a %s length must be an int", what);
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(o);
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (n == -1 ? size != 0 : n != size) {
        PyErr_Format(PyExc_ValueError, "encode_run: the %s length %zd does not match the %s (%zd bytes)", what, n,
                     what, size);
        return -1;
    }
    *out = n;
    return 0;
}

/* record i's parts: key and value (data, written length), headers */
static int
run_record_at(const void *src, Py_ssize_t i, run_record *r)
{
    const run_args *a = src;
    Py_ssize_t size;
    if (run_bytes(a->values, i, "a value", &r->v, &size) < 0 || run_length(a->vlens, i, size, "value", &r->vl) < 0)
        return -1;
    if (a->keys == NULL) {
        r->k = NULL;
        r->kl = -1;
    } else if (run_bytes(a->keys, i, "a key", &r->k, &size) < 0 || run_length(a->klens, i, size, "key", &r->kl) < 0) {
        return -1;
    }
    if (a->shared != NULL) {
        r->h = PyBytes_AS_STRING(a->shared);
        r->hl = PyBytes_GET_SIZE(a->shared);
        return 0;
    }
    return run_bytes(a->headers, i, "encoded headers", &r->h, &r->hl);
}

/* a list argument, or NULL for None; else -1 with a TypeError */
static int
run_list(PyObject *o, const char *name, Py_ssize_t need, PyObject **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyList_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: %s must be a list or None", name);
        return -1;
    }
    if (PyList_GET_SIZE(o) < need) {
        PyErr_Format(PyExc_ValueError, "encode_run: %s is shorter than the run", name);
        return -1;
    }
    *out = o;
    return 0;
}

/* encode_run(buf, od, tsd, room, values, start, stop, keys, headers, value_lens, key_lens) -> (taken, full):
 * see pylog.core.client.runs.encode_run_py. Takes every record that fits (the reference may take
 * fewer per call); two passes: the sizes (nothing written on an error), then the bytes. */
static PyObject *
sp_encode_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_run(buf, od, tsd, room, values, start, stop, keys, headers, value_lens, key_lens)");
        return NULL;
    }
    PyObject *buf = args[0];
    if (!PyByteArray_CheckExact(buf)) {
        PyErr_SetString(PyExc_TypeError, "encode_run: buf must be a bytearray");
        return NULL;
    }
    Py_ssize_t od = PyLong_AsSsize_t(args[1]), room = PyLong_AsSsize_t(args[3]);
    long long tsd = PyLong_AsLongLong(args[2]);
    Py_ssize_t start = PyLong_AsSsize_t(args[5]), stop = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred())
        return NULL;
    if (od < 0 || start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "encode_run: od, start and stop must be 0 <= start <= stop and od >= 0");
        return NULL;
    }
    run_args a = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (run_list(args[4], "values", stop, &a.values) < 0 || run_list(args[7], "keys", stop, &a.keys) < 0 ||
        run_list(args[9], "value_lens", stop, &a.vlens) < 0 || run_list(args[10], "key_lens", stop, &a.klens) < 0)
        return NULL;
    if (a.values == NULL) {
        PyErr_SetString(PyExc_TypeError, "encode_run: values must be a list");
        return NULL;
    }
    if (PyBytes_Check(args[8])) {
        a.shared = args[8];
    } else if (run_list(args[8], "headers", stop, &a.headers) < 0) {
        return NULL;
    } else if (a.headers == NULL) {
        PyErr_SetString(PyExc_TypeError, "encode_run: headers must be bytes or a list of bytes");
        return NULL;
    }
    return append_records(buf, od, tsd, room, start, stop, run_record_at, &a);
}


/* ------------------------------------------------------------------ column lengths (runs.column_lengths_py) */

/* column_lengths(items) -> (lengths with -1 for None, how many None, the longest or -1), or None
 * when items is not a list of bytes and None (the caller converts it first) */
static PyObject *
sp_column_lengths(PyObject *self, PyObject *items)
{
    if (!PyList_CheckExact(items))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(items), nulls = 0, longest = -1;
    PyObject *lens = PyList_New(n);
    if (lens == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(items, i);
        Py_ssize_t len;
        if (o == Py_None) {
            len = -1;
            nulls++;
        } else if (PyBytes_CheckExact(o)) {
            len = PyBytes_GET_SIZE(o);
        } else {
            Py_DECREF(lens); /* list_dealloc skips the slots not filled yet */
            Py_RETURN_NONE;
        }
        if (len > longest)
            longest = len;
        PyObject *v = PyLong_FromSsize_t(len);
        if (v == NULL) {
            Py_DECREF(lens);
            return NULL;
        }
        PyList_SET_ITEM(lens, i, v);
    }
    return Py_BuildValue("(Nnn)", lens, nulls, longest);
}

/* ------------------------------------------------------------------ murmur2 (partitioner.murmur2_many) */


#include "../_speedups_murmur2.h"
/* murmur2_many(keys) -> [murmur2(k) & 0x7fffffff for k in keys] */
static PyObject *
sp_murmur2_many(PyObject *self, PyObject *keys)
{
    PyObject *seq = PySequence_Fast(keys, "murmur2_many takes an iterable of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PySequence_Fast_GET_ITEM(seq, i);
        uint32_t h;
        if (PyBytes_CheckExact(k)) {
            h = murmur2((const unsigned char *)PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k));
        } else {
            Py_buffer view;
            if (PyObject_GetBuffer(k, &view, PyBUF_SIMPLE) < 0)
                goto fail;
            h = murmur2(view.buf, view.len);
            PyBuffer_Release(&view);
        }
        PyObject *o = PyLong_FromUnsignedLong(h & 0x7fffffffu);
        if (o == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, o);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"encode_run", (PyCFunction)(void (*)(void))sp_encode_run, METH_FASTCALL, "runs.encode_run"},
    {"column_lengths", (PyCFunction)sp_column_lengths, METH_O, "runs.column_lengths_py"},
    {"murmur2_many", (PyCFunction)sp_murmur2_many, METH_O, "partitioner.murmur2_many"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "pylog's compiled producer loops (see pylog.core.client.fastpath).", -1,
    methods,
};

extern PyMethodDef pylog_frame_methods[]; /* _speedups_frames.c */

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddFunctions(m, pylog_frame_methods) < 0))
        Py_CLEAR(m);
    return m;
}
