/* pylog's optional compiled fast path: `pylog produce --format text`, the read block framed.
 *
 * frame_text frames a read block's lines where they lie (no bytes object per line,
 * key or value): each record is four int64s in one bytes object (core/_speedups_frames.h),
 * with the lines without the key separator listed by index and the key + value byte count
 * of the block. The data may be a bytearray (the read buffer). The client extension
 * (core/client/_speedups_frames.c) encodes and partitions the framed records. The
 * reference is the list path: read_blocks' lines and produce_input.parse_text
 * (tests/test_fastpath_lines.py). Part of the pylog.commands._speedups module (see _speedups.c).
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../core/_speedups_frames.h"


/* frame_text(data, end, sep, cr) -> (offsets, nbytes, longest, bad): the records of
 * data[:end].split(b"\n") (each line without its trailing "\r"s when cr), values only
 * when sep is None, else each line split at its first sep (a line without one is no
 * record: its index is in bad); nbytes = key + value bytes, longest = the largest key +
 * value of a record (-1: no record) */
static PyObject *
sp_frame_text(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t end;
    PyObject *sep_obj;
    int cr;
    if (!PyArg_ParseTuple(args, "y*nOp:frame_text", &view, &end, &sep_obj, &cr))
        return NULL;
    PyObject *offs = NULL, *bad = NULL, *result = NULL;
    const char *sep = NULL;
    Py_ssize_t sl = 0;
    if (sep_obj != Py_None) {
        if (!PyBytes_Check(sep_obj) || PyBytes_GET_SIZE(sep_obj) == 0) {
            PyErr_SetString(PyExc_ValueError, "frame_text: sep must be None or non-empty bytes");
            goto done;
        }
        sep = PyBytes_AS_STRING(sep_obj);
        sl = PyBytes_GET_SIZE(sep_obj);
    }
    if (end < 0 || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "frame_text: end out of range");
        goto done;
    }
    const char *d = (const char *)view.buf, *stop = d + end, *p;
    Py_ssize_t n = 1;
    for (p = d; (p = memchr(p, '\n', stop - p)) != NULL; p++)
        n++;
    if ((bad = PyList_New(0)) == NULL || (offs = PyBytes_FromStringAndSize(NULL, n * LINES_SLOT * 8)) == NULL)
        goto done;
    int64_t *o = (int64_t *)PyBytes_AS_STRING(offs);
    Py_ssize_t good = 0, nbytes = 0, longest = -1;
    p = d;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *nl = memchr(p, '\n', stop - p), *e = nl ? nl : stop;
        const char *next = e + 1;
        if (cr)
            while (e > p && e[-1] == '\r')
                e--;
        Py_ssize_t len = e - p, kl = -1, vs = p - d;
        if (sep != NULL) {
            const char *hit = sl == 1 ? memchr(p, sep[0], len) : (len >= sl ? memmem(p, len, sep, sl) : NULL);
            if (hit == NULL) {
                PyObject *idx = PyLong_FromSsize_t(i);
                if (idx == NULL || PyList_Append(bad, idx) < 0) {
                    Py_XDECREF(idx);
                    goto done;
                }
                Py_DECREF(idx);
                p = next;
                continue;
            }
            kl = hit - p;
            vs = hit + sl - d;
        }
        Py_ssize_t vl = e - d - vs, size = (kl < 0 ? 0 : kl) + vl;
        int64_t *slot = o + good * LINES_SLOT;
        slot[0] = p - d;
        slot[1] = kl;
        slot[2] = vs;
        slot[3] = vl;
        good++;
        nbytes += size;
        if (size > longest)
            longest = size;
        p = next;
    }
    if (good < n && _PyBytes_Resize(&offs, good * LINES_SLOT * 8) < 0)
        goto done; /* offs is NULL now */
    result = Py_BuildValue("(OnnO)", offs, nbytes, longest, bad);
done:
    Py_XDECREF(offs);
    Py_XDECREF(bad);
    PyBuffer_Release(&view);
    return result;
}

PyMethodDef pylog_lines_methods[] = {
    {"frame_text", (PyCFunction)sp_frame_text, METH_VARARGS, "produce_input.parse_text of a read block, framed"},
    {NULL, NULL, 0, NULL},
};
