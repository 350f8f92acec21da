/* pylog's optional compiled fast path for the command line's text: pylog.commands._speedups.
 *
 * `pylog produce` input (produce_input: key/value splitting, text framing in _speedups_lines.c, JSON
 * lines in _speedups_json.c) and `pylog consume` output (consume_output: format rendering). Each
 * function's pure-Python twin, in the module named in its comment, is the reference
 * (tests/test_fastpath_*.py). pylog.commands.fastpath decides which one runs. Nothing here does I/O.
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../core/_speedups_common.h"

/* ------------------------------------------------------------------ produce input (produce_input.split_key_value) */

/* split_key_value's separator: non-empty bytes (0), else -1 with the error set */
static int
check_separator(PyObject *sep)
{
    if (!PyBytes_Check(sep)) {
        PyErr_SetString(PyExc_TypeError, "the separator must be bytes");
        return -1;
    }
    if (PyBytes_GET_SIZE(sep) == 0) {
        PyErr_SetString(PyExc_ValueError, "empty separator");
        return -1;
    }
    return 0;
}

/* split_key_value(lines, sep) -> (keys, values, bad): each line split at the first sep;
 * lines without it are left out of keys and values and their indexes listed in bad */
static PyObject *
sp_split_key_value(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, 2, "split_key_value(lines, sep)") < 0 || check_separator(args[1]) < 0)
        return NULL;
    const char *sep = PyBytes_AS_STRING(args[1]);
    Py_ssize_t sl = PyBytes_GET_SIZE(args[1]);
    PyObject *seq = PySequence_Fast(args[0], "lines must be a sequence of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *keys = PyList_New(n), *values = PyList_New(n), *bad = PyList_New(0), *result = NULL;
    Py_ssize_t good = 0;
    if (!keys || !values || !bad)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *line = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(line)) {
            PyErr_Format(PyExc_TypeError, "a line must be bytes, not %.100s", Py_TYPE(line)->tp_name);
            goto done;
        }
        const char *d = PyBytes_AS_STRING(line);
        Py_ssize_t len = PyBytes_GET_SIZE(line);
        const char *hit = sl == 1 ? memchr(d, sep[0], len) : (len >= sl ? memmem(d, len, sep, sl) : NULL);
        if (hit == NULL) {
            if (append_ssize(bad, i) < 0)
                goto done;
            continue;
        }
        PyObject *k = PyBytes_FromStringAndSize(d, hit - d);
        if (k == NULL)
            goto done;
        PyObject *v = PyBytes_FromStringAndSize(hit + sl, len - (hit - d) - sl);
        if (v == NULL) {
            Py_DECREF(k);
            goto done;
        }
        PyList_SET_ITEM(keys, good, k);
        PyList_SET_ITEM(values, good, v);
        good++;
    }
    if (PyList_SetSlice(keys, good, n, NULL) < 0 || PyList_SetSlice(values, good, n, NULL) < 0)
        goto done;
    result = PyTuple_Pack(3, keys, values, bad);
done:
    if (result == NULL && keys && values) {
        /* unfilled slots are NULL: shrink to what was filled before releasing */
        Py_SET_SIZE(keys, good);
        Py_SET_SIZE(values, good);
    }
    Py_XDECREF(keys);
    Py_XDECREF(values);
    Py_XDECREF(bad);
    Py_DECREF(seq);
    return result;
}

/* ------------------------------------------------------------------ consume: format rendering */

static int
out_int(outbuf *o, PyObject *v)
{
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", x);
    return ob_put(o, tmp, n);
}

/* A key or value (None, bytes or any buffer): its bytes, or with length_only its length (-1: None) */
static int
out_data(outbuf *o, PyObject *v, int length_only)
{
    if (v == Py_None)
        return length_only ? ob_put(o, "-1", 2) : 0;
    bytes_view bv;
    if (get_view(v, &bv) < 0)
        return -1;
    int rc;
    if (length_only) {
        char tmp[24];
        rc = ob_put(o, tmp, snprintf(tmp, sizeof tmp, "%zd", bv.n));
    } else {
        rc = ob_put(o, bv.d, bv.n);
    }
    release_view(&bv);
    return rc;
}

/* render_format(pieces, records) -> bytes, or None when a record has headers and the format
 * shows them (%h: the caller renders those in Python). pieces: bytes (literal text, already
 * encoded) or an int token: 0 %s, 1 %k, 2 %o, 3 %T, 4 %K, 5 %S, 6 %h. records: a list of
 * (offset, timestamp, key, value, headers). The reference is consume_output.Renderer.render
 * encoded as UTF-8 with surrogateescape: stdout's bytes when it is piped. */
static PyObject *
sp_render_format(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "render_format(pieces, records)");
        return NULL;
    }
    PyObject *pieces = PySequence_Fast(args[0], "pieces must be a sequence");
    if (pieces == NULL)
        return NULL;
    PyObject *records = PySequence_Fast(args[1], "records must be a sequence");
    if (records == NULL) {
        Py_DECREF(pieces);
        return NULL;
    }
    Py_ssize_t np = PySequence_Fast_GET_SIZE(pieces), nr = PySequence_Fast_GET_SIZE(records);
    int codes[64];
    const char *lit[64];
    Py_ssize_t litlen[64];
    PyObject *result = NULL;
    outbuf o = {NULL, 0, 0};
    if (np > 64) {
        PyErr_SetString(PyExc_ValueError, "render_format: more than 64 pieces");
        goto done;
    }
    for (Py_ssize_t j = 0; j < np; j++) {
        PyObject *p = PySequence_Fast_GET_ITEM(pieces, j);
        if (PyBytes_Check(p)) {
            codes[j] = -1;
            lit[j] = PyBytes_AS_STRING(p);
            litlen[j] = PyBytes_GET_SIZE(p);
        } else {
            long c = PyLong_AsLong(p);
            if (c == -1 && PyErr_Occurred())
                goto done;
            if (c < 0 || c > 6) {
                PyErr_Format(PyExc_ValueError, "render_format: unknown token %ld", c);
                goto done;
            }
            codes[j] = (int)c;
        }
    }
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(records, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 5) {
            PyErr_SetString(PyExc_TypeError, "a record must be a tuple (offset, timestamp, key, value, headers)");
            goto done;
        }
        for (Py_ssize_t j = 0; j < np; j++) {
            int rc = 0;
            switch (codes[j]) {
            case -1: rc = ob_put(&o, lit[j], litlen[j]); break;
            case 0: rc = out_data(&o, PyTuple_GET_ITEM(r, 3), 0); break;
            case 1: rc = out_data(&o, PyTuple_GET_ITEM(r, 2), 0); break;
            case 2: rc = out_int(&o, PyTuple_GET_ITEM(r, 0)); break;
            case 3: rc = out_int(&o, PyTuple_GET_ITEM(r, 1)); break;
            case 4: rc = out_data(&o, PyTuple_GET_ITEM(r, 2), 1); break;
            case 5: rc = out_data(&o, PyTuple_GET_ITEM(r, 3), 1); break;
            case 6: {
                int has = PyObject_IsTrue(PyTuple_GET_ITEM(r, 4));
                if (has < 0)
                    goto done;
                if (has) {
                    Py_INCREF(Py_None);
    result = Py_None;
                    goto done;
                }
                break;
            }
            }
            if (rc < 0)
                goto done;
        }
    }
    result = PyBytes_FromStringAndSize(o.p ? (const char *)o.p : "", o.len);
done:
    PyMem_Free(o.p);
    Py_DECREF(pieces);
    Py_DECREF(records);
    return result;
}

/* render_records(pieces, data, base_offset, base_timestamp, log_append_time, from_offset)
 *   -> (bytes, records rendered, records walked), or None.
 * render_format's bytes for the records of one batch's records section (decompressed), straight
 * from `data` with no record object made, the records with an offset below from_offset left out.
 * None when it cannot say what decode_records says: a record with headers, or a record
 * decode_records would refuse (the caller then decodes the batch, which raises its error). The
 * reference is consume_output.render_records_py. */
static PyObject *
sp_render_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "render_records(pieces, data, base_offset, base_timestamp, log_append_time, from_offset)");
        return NULL;
    }
    long long base_offset, base_ts, lat = 0, from;
    int has_lat = args[4] != Py_None;
    if (as_long_long(args[2], &base_offset) < 0 || as_long_long(args[3], &base_ts) < 0
        || (has_lat && as_long_long(args[4], &lat) < 0) || as_long_long(args[5], &from) < 0)
        return NULL;
    PyObject *pieces = PySequence_Fast(args[0], "pieces must be a sequence");
    if (pieces == NULL)
        return NULL;
    Py_ssize_t np = PySequence_Fast_GET_SIZE(pieces);
    int codes[64];
    const char *lit[64];
    Py_ssize_t litlen[64];
    PyObject *result = NULL;
    outbuf o = {NULL, 0, 0};
    bytes_view v = {0};
    int have_view = 0;
    if (np > 64) {
        PyErr_SetString(PyExc_ValueError, "render_records: more than 64 pieces");
        goto done;
    }
    for (Py_ssize_t j = 0; j < np; j++) {
        PyObject *p = PySequence_Fast_GET_ITEM(pieces, j);
        if (PyBytes_Check(p)) {
            codes[j] = -1;
            lit[j] = PyBytes_AS_STRING(p);
            litlen[j] = PyBytes_GET_SIZE(p);
        } else {
            long c = PyLong_AsLong(p);
            if (c == -1 && PyErr_Occurred())
                goto done;
            if (c < 0 || c > 6) {
                PyErr_Format(PyExc_ValueError, "render_records: unknown token %ld", c);
                goto done;
            }
            codes[j] = (int)c;
        }
    }
    if (get_view(args[1], &v) < 0)
        goto done;
    have_view = 1;
    const unsigned char *d = v.d;
    Py_ssize_t end = v.n, pos = 0, walked = 0, rendered = 0;
    if (ob_reserve(&o, end + 64) < 0) /* about the output of a key and value format: one allocation */
        goto done;
    while (pos < end) {
        int64_t n, tsd, od, kl, vl, hc;
        Py_ssize_t errpos, rec_end, kpos, vpos;
        if (read_varint(d, end, &pos, &n, &errpos) != V_OK || n <= 0 || n > end - pos)
            goto cannot;
        rec_end = pos + (Py_ssize_t)n;
        pos += 1; /* attributes */
        if (read_varlong(d, end, &pos, &tsd, &errpos) != V_OK || read_varint(d, end, &pos, &od, &errpos) != V_OK
            || read_varint(d, end, &pos, &kl, &errpos) != V_OK || kl < -1 || kl > end - pos)
            goto cannot;
        kpos = pos;
        if (kl > 0)
            pos += (Py_ssize_t)kl;
        if (read_varint(d, end, &pos, &vl, &errpos) != V_OK || vl < -1 || vl > end - pos)
            goto cannot;
        vpos = pos;
        if (vl > 0)
            pos += (Py_ssize_t)vl;
        if (read_varint(d, end, &pos, &hc, &errpos) != V_OK || hc != 0 || pos != rec_end)
            goto cannot; /* headers, or a record decode_records refuses */
        long long off, ts;
        if (__builtin_add_overflow(base_offset, (long long)od, &off)
            || (!has_lat && __builtin_add_overflow(base_ts, (long long)tsd, &ts)))
            goto cannot;
        if (has_lat)
            ts = lat;
        walked++;
        if (off < from)
            continue;
        rendered++;
        for (Py_ssize_t j = 0; j < np; j++) {
            char tmp[24];
            int rc = 0;
            switch (codes[j]) {
            case -1: rc = ob_put(&o, lit[j], litlen[j]); break;
            case 0: rc = vl > 0 ? ob_put(&o, d + vpos, (Py_ssize_t)vl) : 0; break;
            case 1: rc = kl > 0 ? ob_put(&o, d + kpos, (Py_ssize_t)kl) : 0; break;
            case 2: rc = ob_put(&o, tmp, snprintf(tmp, sizeof tmp, "%lld", off)); break;
            case 3: rc = ob_put(&o, tmp, snprintf(tmp, sizeof tmp, "%lld", ts)); break;
            case 4: rc = ob_put(&o, tmp, snprintf(tmp, sizeof tmp, "%lld", (long long)kl)); break;
            case 5: rc = ob_put(&o, tmp, snprintf(tmp, sizeof tmp, "%lld", (long long)vl)); break;
            default: break; /* %h: no headers here */
            }
            if (rc < 0)
                goto done;
        }
    }
    result = Py_BuildValue("(y#nn)", o.p ? (const char *)o.p : "", o.len, rendered, walked);
    goto done;
cannot:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(o.p);
    if (have_view)
        release_view(&v);
    Py_DECREF(pieces);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"split_key_value", (PyCFunction)(void (*)(void))sp_split_key_value, METH_FASTCALL,
     "produce_input.split_key_value"},
    {"render_format", (PyCFunction)(void (*)(void))sp_render_format, METH_FASTCALL,
     "consume_output.Renderer.render, as piped bytes"},
    {"render_records", (PyCFunction)(void (*)(void))sp_render_records, METH_FASTCALL,
     "consume_output.render_records_py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "pylog's compiled command-line text loops (see pylog.commands.fastpath).", -1,
    methods,
};

extern PyMethodDef pylog_json_methods[]; /* _speedups_json.c */
extern PyMethodDef pylog_lines_methods[]; /* _speedups_lines.c */

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddFunctions(m, pylog_json_methods) < 0 ||
                      PyModule_AddFunctions(m, pylog_lines_methods) < 0))
        Py_CLEAR(m);
    return m;
}
