/* pylog's optional compiled fast path: framed text records (core/_speedups_frames.h) into batches.
 *
 * encode_frame_run writes framed records into a batch's bytearray as the run encoder does
 * (runs.encode_run of the same keys and values gives the same bytes), frame_partitions is
 * murmur2 partitioning of the framed keys in bulk and frame_groups groups them by partition.
 * The reference is the list path: runs.encode_run_py and partitioner.murmur2_many_py
 * (tests/test_fastpath_lines.py). Part of the pylog.core.client._speedups module (see _speedups.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_speedups_frames.h"
#include "../_speedups_murmur2.h"
#include "../_speedups_records.h"

/* the framed records: data and the int64 slots, checked once per call */
typedef struct {
    const char *data;
    Py_ssize_t size, count;
    const int64_t *slots;
    PyObject *idx; /* a list of record indexes, or NULL: records start.. in order */
} frame_args;

/* record j of the run (idx[j] or j): key and value slices, checked against the data */
static int
frame_record(const frame_args *a, Py_ssize_t j, const char **k, Py_ssize_t *kl, const char **v, Py_ssize_t *vl)
{
    Py_ssize_t r = j;
    if (a->idx != NULL) {
        PyObject *o = PyList_GET_ITEM(a->idx, j);
        r = PyLong_Check(o) ? PyLong_AsSsize_t(o) : -1;
        if (r == -1 && PyErr_Occurred())
            return -1;
    }
    if (r < 0 || r >= a->count) {
        PyErr_SetString(PyExc_ValueError, "encode_frame_run: a record index out of range");
        return -1;
    }
    const int64_t *s = a->slots + r * LINES_SLOT;
    if (s[1] < -1 || (s[1] >= 0 && (s[0] < 0 || s[0] > a->size - s[1])) || s[2] < 0 || s[3] < 0 ||
        s[2] > a->size - s[3]) {
        PyErr_SetString(PyExc_ValueError, "encode_frame_run: a record's slices lie outside the data");
        return -1;
    }
    *k = a->data + (s[1] >= 0 ? s[0] : 0);
    *kl = (Py_ssize_t)s[1];
    *v = a->data + s[2];
    *vl = (Py_ssize_t)s[3];
    return 0;
}

/* a frame's records with the encoded headers they all share, for append_records */
typedef struct {
    const frame_args *a;
    const char *h;
    Py_ssize_t hl;
} frame_source;

static int
frame_record_at(const void *src, Py_ssize_t j, run_record *r)
{
    const frame_source *f = src;
    r->h = f->h;
    r->hl = f->hl;
    return frame_record(f->a, j, &r->k, &r->kl, &r->v, &r->vl);
}

/* the data and slots of a frame (offsets must be bytes of whole slots) */
static int
frame_open(PyObject *data, PyObject *offs, frame_args *a, const char *fn)
{
    if (!(PyBytes_Check(data) || PyByteArray_Check(data)) || !PyBytes_Check(offs) ||
        PyBytes_GET_SIZE(offs) % (LINES_SLOT * 8)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: data must be bytes or a bytearray and offsets bytes (of whole records)", fn);
        return -1;
    }
    a->data = PyBytes_Check(data) ? PyBytes_AS_STRING(data) : PyByteArray_AS_STRING(data);
    a->size = PyBytes_Check(data) ? PyBytes_GET_SIZE(data) : PyByteArray_GET_SIZE(data);
    a->slots = (const int64_t *)PyBytes_AS_STRING(offs);
    a->count = PyBytes_GET_SIZE(offs) / (LINES_SLOT * 8);
    return 0;
}

/* encode_frame_run(buf, od, tsd, room, data, offsets, idx, start, stop, headers) -> (taken, full):
 * runs.encode_run(buf, od, tsd, room, values, start, stop, keys, headers, None-or-lengths...)
 * where record j is the framed record idx[j] (idx a list of ints) or j (idx None); headers is
 * the encoded headers every record shares */
static PyObject *
sp_encode_frame_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_frame_run(buf, od, tsd, room, data, offsets, idx, start, stop, headers)");
        return NULL;
    }
    PyObject *buf = args[0];
    if (!PyByteArray_CheckExact(buf) || !PyBytes_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError, "encode_frame_run: buf must be a bytearray and headers bytes");
        return NULL;
    }
    Py_ssize_t od = PyLong_AsSsize_t(args[1]), room = PyLong_AsSsize_t(args[3]);
    long long tsd = PyLong_AsLongLong(args[2]);
    Py_ssize_t start = PyLong_AsSsize_t(args[7]), stop = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    frame_args a = {NULL, 0, 0, NULL, NULL};
    if (frame_open(args[4], args[5], &a, "encode_frame_run") < 0)
        return NULL;
    if (args[6] != Py_None) {
        if (!PyList_CheckExact(args[6])) {
            PyErr_SetString(PyExc_TypeError, "encode_frame_run: idx must be a list or None");
            return NULL;
        }
        a.idx = args[6];
    }
    Py_ssize_t limit = a.idx != NULL ? PyList_GET_SIZE(a.idx) : a.count;
    if (od < 0 || start < 0 || stop < start || stop > limit) {
        PyErr_SetString(PyExc_ValueError, "encode_frame_run: need 0 <= start <= stop <= records and od >= 0");
        return NULL;
    }
    frame_source src = {&a, PyBytes_AS_STRING(args[9]), PyBytes_GET_SIZE(args[9])};
    return append_records(buf, od, tsd, room, start, stop, frame_record_at, &src);
}

/* frame_partitions(data, offsets, n) -> [murmur2(key) & 0x7fffffff % n, or -1 for a null key]
 * per framed record: partitioner.murmur2_many of the keys, in bulk */
static PyObject *
sp_frame_partitions(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "frame_partitions(data, offsets, n)");
        return NULL;
    }
    frame_args a = {NULL, 0, 0, NULL, NULL};
    if (frame_open(args[0], args[1], &a, "frame_partitions") < 0)
        return NULL;
    long parts = PyLong_AsLong(args[2]);
    if (parts == -1 && PyErr_Occurred())
        return NULL;
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "frame_partitions: n must be at least 1");
        return NULL;
    }
    PyObject *out = PyList_New(a.count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < a.count; i++) {
        const char *k, *v;
        Py_ssize_t kl, vl;
        if (frame_record(&a, i, &k, &kl, &v, &vl) < 0) {
            Py_DECREF(out); /* list_dealloc skips the slots not filled yet */
            return NULL;
        }
        long part = kl < 0 ? -1 : (long)((murmur2((const unsigned char *)k, kl) & 0x7fffffffu) % (uint32_t)parts);
        PyObject *o = PyLong_FromLong(part);
        if (o == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, o);
    }
    return out;
}

/* frame_groups(data, offsets, n) -> [[record indexes of partition p, in order] for p in range(n)]:
 * the records grouped by frame_partitions' answer in one pass (a counting sort); a null key is a
 * ValueError (keyless records take the sticky partition, not a group) */
static PyObject *
sp_frame_groups(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *parts = sp_frame_partitions(self, args, nargs), *out = NULL;
    if (parts == NULL)
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[2]), count = PyList_GET_SIZE(parts);
    Py_ssize_t *sizes = PyMem_Calloc(n, sizeof(Py_ssize_t));
    if (sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(parts, i));
        if (p < 0) {
            PyErr_SetString(PyExc_ValueError, "frame_groups: a record without a key");
            goto done;
        }
        sizes[p]++;
    }
    if ((out = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t p = 0; p < n; p++) {
        PyObject *g = PyList_New(sizes[p]);
        if (g == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, p, g);
        sizes[p] = 0;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(parts, i));
        PyObject *idx = PyLong_FromSsize_t(i);
        if (idx == NULL) {
            Py_CLEAR(out); /* list_dealloc skips the slots not filled yet */
            goto done;
        }
        PyList_SET_ITEM(PyList_GET_ITEM(out, p), sizes[p]++, idx);
    }
done:
    PyMem_Free(sizes);
    Py_DECREF(parts);
    return out;
}

PyMethodDef pylog_frame_methods[] = {
    {"frame_groups", (PyCFunction)(void (*)(void))sp_frame_groups, METH_FASTCALL,
     "frame_partitions' records grouped by partition"},
    {"encode_frame_run", (PyCFunction)(void (*)(void))sp_encode_frame_run, METH_FASTCALL,
     "runs.encode_run of framed records"},
    {"frame_partitions", (PyCFunction)(void (*)(void))sp_frame_partitions, METH_FASTCALL,
     "partitioner.murmur2_many of framed keys, mod n"},
    {NULL, NULL, 0, NULL},
};
