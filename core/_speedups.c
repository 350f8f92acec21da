/* pylog's optional compiled fast path.
 *
 * Each function here has a pure-Python twin that is the reference (named in
 * its comment); tests/test_fastpath_*.py drive both with the same inputs,
 * damaged ones included, and require the same bytes, records and errors.
 * pylog.core.fastpath decides which one runs. Nothing here does I/O.
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ lazily imported Python classes */

static PyObject *CorruptRecordError, *MalformedVarintError, *InvalidRecordFraming, *RecordsCheck, *Record;
static PyObject *BatchHeader; /* pylog.core.records.header.BatchHeader, a NamedTuple: filled in place */

/* Attributes `a` (and `b`, when not NULL) of a module: 0, or -1 with the error set */
static int
import_attrs(const char *module, const char *a, PyObject **pa, const char *b, PyObject **pb)
{
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL)
        return -1;
    *pa = PyObject_GetAttrString(m, a);
    if (b != NULL)
        *pb = PyObject_GetAttrString(m, b);
    Py_DECREF(m);
    return *pa == NULL || (b != NULL && *pb == NULL) ? -1 : 0;
}

static int
load_classes(void)
{
    if (Record != NULL)
        return 0;
    PyObject *rec = NULL;
    if (import_attrs("pylog.core.records.errors", "CorruptRecordError", &CorruptRecordError, "MalformedVarintError",
                     &MalformedVarintError) < 0 ||
        import_attrs("pylog.core.records.framing", "InvalidRecordFraming", &InvalidRecordFraming, "RecordsCheck",
                     &RecordsCheck) < 0 ||
        import_attrs("pylog.core.records.batch", "Record", &rec, NULL, NULL) < 0)
        return -1;
    if (!PyType_Check(rec) || !PyType_IsSubtype((PyTypeObject *)rec, &PyTuple_Type)) {
        Py_DECREF(rec);
        PyErr_SetString(PyExc_TypeError, "pylog.core.records.batch.Record is not a tuple type");
        return -1;
    }
    if (!PyType_Check(RecordsCheck) || !PyType_IsSubtype((PyTypeObject *)RecordsCheck, &PyTuple_Type)) {
        Py_DECREF(rec);
        PyErr_SetString(PyExc_TypeError, "pylog.core.records.framing.RecordsCheck is not a tuple type");
        return -1;
    }
    PyObject *bh = NULL;
    if (import_attrs("pylog.core.records.header", "BatchHeader", &bh, NULL, NULL) < 0) {
        Py_DECREF(rec);
        return -1;
    }
    if (!PyType_Check(bh) || !PyType_IsSubtype((PyTypeObject *)bh, &PyTuple_Type)) {
        Py_DECREF(rec);
        Py_DECREF(bh);
        PyErr_SetString(PyExc_TypeError, "pylog.core.records.header.BatchHeader is not a tuple type");
        return -1;
    }
    BatchHeader = bh;
    Record = rec;
    return 0;
}

/* raise cls(message, index) (`framing`: InvalidRecordFraming's order), else cls(message, position)
 * or, with no position (< 0), cls(message) */
static void
raise_v(PyObject *cls, int framing, Py_ssize_t n, const char *fmt, va_list va)
{
    PyObject *msg = PyUnicode_FromFormatV(fmt, va);
    if (msg == NULL)
        return;
    PyObject *exc = framing ? PyObject_CallFunction(cls, "nO", n, msg)
                  : n >= 0  ? PyObject_CallFunction(cls, "On", msg, n)
                            : PyObject_CallFunctionObjArgs(cls, msg, NULL);
    Py_DECREF(msg);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

/* raise cls(message) or cls(message, position) */
static void
raise_fmt(PyObject *cls, Py_ssize_t position, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    raise_v(cls, 0, position, fmt, va);
    va_end(va);
}

/* raise InvalidRecordFraming(index, message) */
static void
raise_framing(Py_ssize_t index, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    raise_v(InvalidRecordFraming, 1, index, fmt, va);
    va_end(va);
}

/* ------------------------------------------------------------------ varints (varint.py) */

enum { V_OK = 0, V_PAST_END = -1, V_TOO_LONG = -2 };

/* An unsigned base-128 varint of at most max_bytes at *pos, the same steps as
 * varint.decode_uvarint; bits beyond 64 are dropped. On error *errpos is the
 * position the Python reference reports. */
static inline int
read_uvarint(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int max_bytes, uint64_t *out,
             Py_ssize_t *errpos)
{
    Py_ssize_t p = *pos, start = p;
    if (p < 0 || p >= end) {
        *errpos = p;
        return V_PAST_END;
    }
    unsigned b = d[p++];
    if (b < 0x80) {
        *out = b;
        *pos = p;
        return V_OK;
    }
    uint64_t r = b & 0x7F;
    int shift = 7;
    for (;;) {
        if (p >= end) {
            *errpos = p;
            return V_PAST_END;
        }
        b = d[p++];
        if (shift < 64)
            r |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = r;
            *pos = p;
            return V_OK;
        }
        shift += 7;
        if (p - start >= max_bytes) {
            *errpos = start;
            return V_TOO_LONG;
        }
    }
}

/* zig-zag varint (32 bits kept, as Java's int) */
static inline int
read_varint(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int64_t *out, Py_ssize_t *errpos)
{
    uint64_t u;
    int rc = read_uvarint(d, end, pos, 5, &u, errpos);
    if (rc == V_OK) {
        uint32_t v = (uint32_t)u;
        *out = (int64_t)(int32_t)((v >> 1) ^ (0u - (v & 1)));
    }
    return rc;
}

/* zig-zag varlong (64 bits) */
static inline int
read_varlong(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int64_t *out, Py_ssize_t *errpos)
{
    uint64_t u;
    int rc = read_uvarint(d, end, pos, 10, &u, errpos);
    if (rc == V_OK)
        *out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
    return rc;
}

static void
raise_varint(int rc, int max_bytes, Py_ssize_t errpos)
{
    if (load_classes() < 0)
        return;
    if (rc == V_TOO_LONG)
        raise_fmt(MalformedVarintError, errpos, "varint longer than %d bytes", max_bytes);
    else
        raise_fmt(MalformedVarintError, errpos, "varint runs past the end of the buffer");
}

/* A readable view of any bytes-like object. */
typedef struct {
    Py_buffer view;
    const unsigned char *d;
    Py_ssize_t n;
    int owned;
} bytes_view;

static int
get_view(PyObject *obj, bytes_view *v)
{
    if (PyBytes_CheckExact(obj)) {
        v->d = (const unsigned char *)PyBytes_AS_STRING(obj);
        v->n = PyBytes_GET_SIZE(obj);
        v->owned = 0;
        return 0;
    }
    if (PyObject_GetBuffer(obj, &v->view, PyBUF_SIMPLE) < 0)
        return -1;
    v->d = (const unsigned char *)v->view.buf;
    v->n = v->view.len;
    v->owned = 1;
    return 0;
}

static void
release_view(bytes_view *v)
{
    if (v->owned)
        PyBuffer_Release(&v->view);
}

/* lo <= nargs <= hi: 0; else -1 with a TypeError showing the call (`usage`) */
static int
check_nargs(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char *usage)
{
    if (nargs >= lo && nargs <= hi)
        return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

/* A Python int as a long long: 0, or -1 with the error set */
static inline int
as_long_long(PyObject *o, long long *out)
{
    *out = PyLong_AsLongLong(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *
decode_zigzag(PyObject *const *args, Py_ssize_t nargs, int max_bytes, const char *name)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s(buf, pos=0)", name);
        return NULL;
    }
    Py_ssize_t pos = 0;
    if (nargs == 2) {
        pos = PyLong_AsSsize_t(args[1]);
        if (pos == -1 && PyErr_Occurred())
            return NULL;
    }
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    int64_t value;
    Py_ssize_t errpos;
    int rc = max_bytes == 5 ? read_varint(v.d, v.n, &pos, &value, &errpos)
                            : read_varlong(v.d, v.n, &pos, &value, &errpos);
    release_view(&v);
    if (rc != V_OK) {
        raise_varint(rc, max_bytes, errpos);
        return NULL;
    }
    return Py_BuildValue("Ln", (long long)value, pos);
}

/* varint.decode_varint */
static PyObject *
sp_decode_varint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return decode_zigzag(args, nargs, 5, "decode_varint");
}

/* varint.decode_varlong */
static PyObject *
sp_decode_varlong(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return decode_zigzag(args, nargs, 10, "decode_varlong");
}

#include "_speedups_varint.h"

/* varint.encode_varint (values of Java's long) */
static PyObject *
sp_encode_varint(PyObject *self, PyObject *arg)
{
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    unsigned char buf[10];
    int n = put_varint(buf, (int64_t)v);
    return PyBytes_FromStringAndSize((const char *)buf, n);
}

/* ------------------------------------------------------------------ int helpers */

static PyObject *
add_i64(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return PyLong_FromLongLong(r);
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b), *s = NULL;
    if (x && y)
        s = PyNumber_Add(x, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return s;
}

/* ------------------------------------------------------------------ records (batch.decode_records) */

#define VARINT_OR_FAIL(call) \
    do { \
        if ((call) != V_OK) \
            goto malformed; \
    } while (0)

/* A key, value or header value: *out is bytes, None, or NULL with an error set. */
static int
length_prefixed(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t index, const char *what,
                PyObject **out)
{
    int64_t n;
    Py_ssize_t errpos;
    if (read_varint(d, end, pos, &n, &errpos) != V_OK)
        return -2;
    if (n >= 0) {
        Py_ssize_t a = *pos, b = a + (Py_ssize_t)n;
        if (b > end)
            b = end;
        *out = PyBytes_FromStringAndSize((const char *)d + a, b - a);
        *pos += (Py_ssize_t)n;
        return *out == NULL ? -1 : 0;
    }
    if (n == -1) {
        Py_INCREF(Py_None);
        *out = Py_None;
        return 0;
    }
    raise_fmt(CorruptRecordError, -1, "record %zd: %s length %lld", index, what, (long long)n);
    return -1;
}

static PyObject *
decode_headers(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int64_t count, Py_ssize_t index,
               int *malformed)
{
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (int64_t i = 0; i < count; i++) {
        int64_t kl;
        Py_ssize_t errpos;
        if (read_varint(d, end, pos, &kl, &errpos) != V_OK) {
            *malformed = 1;
            goto fail;
        }
        if (kl < 0) {
            raise_fmt(CorruptRecordError, -1, "record %zd: header key length %lld", index, (long long)kl);
            goto fail;
        }
        if (kl > end - *pos) {
            raise_fmt(CorruptRecordError, -1, "record %zd: header key runs past the record", index);
            goto fail;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)d + *pos, (Py_ssize_t)kl, NULL);
        if (key == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                goto fail;
            PyErr_Clear();
            raise_fmt(CorruptRecordError, -1, "record %zd: header key is not UTF-8", index);
            goto fail;
        }
        *pos += (Py_ssize_t)kl;
        PyObject *val;
        int rc = length_prefixed(d, end, pos, index, "header value", &val);
        if (rc < 0) {
            Py_DECREF(key);
            if (rc == -2)
                *malformed = 1;
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, key, val);
        Py_DECREF(key);
        Py_DECREF(val);
        if (pair == NULL || PyList_Append(list, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
    }
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
fail:
    Py_DECREF(list);
    return NULL;
}

/* decode_records(data, base_offset, base_timestamp, log_append_time=None) -> [Record] */
static PyObject *
sp_decode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 3, 4, "decode_records(data, base_offset, base_timestamp, log_append_time=None)") < 0
        || load_classes() < 0)
        return NULL;
    long long base_offset, base_ts;
    if (as_long_long(args[1], &base_offset) < 0 || as_long_long(args[2], &base_ts) < 0)
        return NULL;
    PyObject *lat = nargs == 4 ? args[3] : Py_None;
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    const unsigned char *d = v.d;
    Py_ssize_t end = v.n, pos = 0, index = 0;
    PyTypeObject *rtype = (PyTypeObject *)Record;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto error;
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL)
        goto error;
    while (pos < end) {
        int64_t n, tsd, od, hc;
        Py_ssize_t errpos, rec_end;
        PyObject *key = NULL, *value = NULL, *headers = NULL;
        int malformed = 0, rc;
        index = PyList_GET_SIZE(out);
        VARINT_OR_FAIL(read_varint(d, end, &pos, &n, &errpos));
        rec_end = pos + (Py_ssize_t)n;
        if (n <= 0 || n > end - pos) {
            raise_fmt(CorruptRecordError, -1, "record %zd: length %lld does not fit the %zd bytes left", index,
                      (long long)n, end - pos);
            goto fail_empty;
        }
        pos += 1;
        VARINT_OR_FAIL(read_varlong(d, end, &pos, &tsd, &errpos));
        VARINT_OR_FAIL(read_varint(d, end, &pos, &od, &errpos));
        rc = length_prefixed(d, end, &pos, index, "key", &key);
        if (rc == -2)
            goto malformed;
        if (rc < 0)
            goto fail_empty;
        rc = length_prefixed(d, end, &pos, index, "value", &value);
        if (rc < 0) {
            Py_DECREF(key);
            if (rc == -2)
                goto malformed;
            goto fail_empty;
        }
        if (read_varint(d, end, &pos, &hc, &errpos) != V_OK) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto malformed;
        }
        if (hc == 0) {
            Py_INCREF(empty);
            headers = empty;
        } else if (hc < 0) {
            raise_fmt(CorruptRecordError, -1, "record %zd: header count %lld", index, (long long)hc);
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail_empty;
        } else {
            headers = decode_headers(d, end, &pos, hc, index, &malformed);
            if (headers == NULL) {
                Py_DECREF(key);
                Py_DECREF(value);
                if (malformed)
                    goto malformed;
                goto fail_empty;
            }
        }
        if (pos != rec_end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            raise_fmt(CorruptRecordError, -1, "record %zd: fields end at %zd, its length says %zd", index, pos,
                      rec_end);
            goto fail_empty;
        }
        PyObject *o = add_i64(base_offset, od);
        PyObject *ts;
        if (lat != Py_None) {
            Py_INCREF(lat);
            ts = lat;
        } else {
            ts = add_i64(base_ts, tsd);
        }
        PyObject *rec = rtype->tp_alloc(rtype, 5);
        if (o == NULL || ts == NULL || rec == NULL) {
            Py_XDECREF(o);
            Py_XDECREF(ts);
            Py_XDECREF(rec);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail_empty;
        }
        PyTuple_SET_ITEM(rec, 0, o);
        PyTuple_SET_ITEM(rec, 1, ts);
        PyTuple_SET_ITEM(rec, 2, key);
        PyTuple_SET_ITEM(rec, 3, value);
        PyTuple_SET_ITEM(rec, 4, headers);
        if (PyList_Append(out, rec) < 0) {
            Py_DECREF(rec);
            goto fail_empty;
        }
        Py_DECREF(rec);
        continue;
    malformed:
        raise_fmt(CorruptRecordError, -1, "record %zd runs past the end of the batch or holds a malformed varint",
                  index);
        goto fail_empty;
    }
    Py_DECREF(empty);
    release_view(&v);
    return out;
fail_empty:
    Py_DECREF(empty);
error:
    Py_XDECREF(out);
    release_view(&v);
    return NULL;
}

/* ------------------------------------------------------------------ records as Arrow columns (record_columns.decode_columns) */

/* append n bytes to a bytearray: 0, or -1 with the error set */
static inline int
ba_append(PyObject *ba, const void *src, Py_ssize_t n)
{
    Py_ssize_t old = PyByteArray_GET_SIZE(ba);
    if (PyByteArray_Resize(ba, old + n) < 0)
        return -1;
    if (n > 0)
        memcpy(PyByteArray_AS_STRING(ba) + old, src, (size_t)n);
    return 0;
}

/* one nullable binary column (validity bitmap, int32 offsets, data): append row `row`'s value,
 * NULL d for null. 0, or -1 with the error set. */
static int
col_append(PyObject *valid, PyObject *offs, PyObject *data, Py_ssize_t row, const unsigned char *d, int64_t n)
{
    Py_ssize_t need = row / 8 + 1;
    if (PyByteArray_GET_SIZE(valid) < need) {
        Py_ssize_t old = PyByteArray_GET_SIZE(valid);
        if (PyByteArray_Resize(valid, need) < 0)
            return -1;
        memset(PyByteArray_AS_STRING(valid) + old, 0, (size_t)(need - old));
    }
    if (d != NULL) {
        PyByteArray_AS_STRING(valid)[row / 8] |= (char)(1 << (row % 8));
        if (ba_append(data, d, (Py_ssize_t)n) < 0)
            return -1;
    }
    Py_ssize_t len = PyByteArray_GET_SIZE(data);
    if (len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "decode_columns: a binary column passed 2 GiB: flush it sooner");
        return -1;
    }
    int32_t o = (int32_t)len;
    return ba_append(offs, &o, 4);
}

/* a key or value field: *p (NULL: null) and *n, pos moved past it. 0; -2 malformed; -1 error set */
static int
field_span(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t index, const char *what,
           const unsigned char **p, int64_t *n)
{
    Py_ssize_t errpos;
    if (read_varint(d, end, pos, n, &errpos) != V_OK)
        return -2;
    if (*n >= 0) {
        if (*n > end - *pos)
            return -2;
        *p = d + *pos;
        *pos += (Py_ssize_t)*n;
        return 0;
    }
    if (*n == -1) {
        *p = NULL;
        *n = 0;
        return 0;
    }
    raise_fmt(CorruptRecordError, -1, "record %zd: %s length %lld", index, what, (long long)*n);
    return -1;
}

/* decode_columns(data, base_offset, base_timestamp, log_append_time, start, end, cols) -> records decoded.
 * cols = [offsets, timestamps_us, key_valid, key_offsets, key_data, value_valid, value_offsets,
 * value_data, headers]: bytearrays (int64, int64, bitmap, int32, bytes, ...) and a list of
 * (row, headers); the records with offsets in [start, end) are appended. */
static PyObject *
sp_decode_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, 7, "decode_columns(data, base_offset, base_timestamp, log_append_time, start, end, "
                    "cols)") < 0 || load_classes() < 0)
        return NULL;
    long long base_offset, base_ts, lat = 0, start, stop;
    int has_lat = args[3] != Py_None;
    if (as_long_long(args[1], &base_offset) < 0 || as_long_long(args[2], &base_ts) < 0
        || (has_lat && as_long_long(args[3], &lat) < 0) || as_long_long(args[4], &start) < 0
        || as_long_long(args[5], &stop) < 0)
        return NULL;
    PyObject *c[9];
    if (!PyList_Check(args[6]) || PyList_GET_SIZE(args[6]) != 9) {
        PyErr_SetString(PyExc_TypeError, "decode_columns: cols must be a list of 8 bytearrays and a list");
        return NULL;
    }
    for (int i = 0; i < 9; i++) {
        c[i] = PyList_GET_ITEM(args[6], i);
        if (i < 8 ? !PyByteArray_Check(c[i]) : !PyList_Check(c[i])) {
            PyErr_SetString(PyExc_TypeError, "decode_columns: cols must be a list of 8 bytearrays and a list");
            return NULL;
        }
    }
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    const unsigned char *d = v.d;
    Py_ssize_t end = v.n, pos = 0, index = 0;
    for (; pos < end; index++) {
        int64_t n, tsd, od, hc, kn, vn;
        const unsigned char *kp, *vp;
        Py_ssize_t errpos, rec_end;
        int rc;
        VARINT_OR_FAIL(read_varint(d, end, &pos, &n, &errpos));
        rec_end = pos + (Py_ssize_t)n;
        if (n <= 0 || n > end - pos) {
            raise_fmt(CorruptRecordError, -1, "record %zd: length %lld does not fit the %zd bytes left", index,
                      (long long)n, end - pos);
            goto fail;
        }
        pos += 1;
        VARINT_OR_FAIL(read_varlong(d, end, &pos, &tsd, &errpos));
        VARINT_OR_FAIL(read_varint(d, end, &pos, &od, &errpos));
        if ((rc = field_span(d, end, &pos, index, "key", &kp, &kn)) < 0 ||
            (rc = field_span(d, end, &pos, index, "value", &vp, &vn)) < 0) {
            if (rc == -2)
                goto malformed;
            goto fail;
        }
        VARINT_OR_FAIL(read_varint(d, end, &pos, &hc, &errpos));
        if (hc < 0) {
            raise_fmt(CorruptRecordError, -1, "record %zd: header count %lld", index, (long long)hc);
            goto fail;
        }
        PyObject *headers = NULL;
        if (hc > 0) {
            int malformed = 0;
            headers = decode_headers(d, end, &pos, hc, index, &malformed);
            if (headers == NULL) {
                if (malformed)
                    goto malformed;
                goto fail;
            }
        }
        if (pos != rec_end) {
            Py_XDECREF(headers);
            raise_fmt(CorruptRecordError, -1, "record %zd: fields end at %zd, its length says %zd", index, pos,
                      rec_end);
            goto fail;
        }
        int64_t off, ts_us;
        if (__builtin_add_overflow((int64_t)base_offset, od, &off)) {
            Py_XDECREF(headers);
            raise_fmt(CorruptRecordError, -1, "record %zd: offset overflows", index);
            goto fail;
        }
        if (off < start || off >= stop) {
            Py_XDECREF(headers);
            continue;
        }
        int64_t ts = has_lat ? (int64_t)lat : (int64_t)base_ts + tsd;
        Py_ssize_t row = PyByteArray_GET_SIZE(c[0]) / 8;
        if (__builtin_mul_overflow(ts, (int64_t)1000, &ts_us)) {
            Py_XDECREF(headers);
            raise_fmt(CorruptRecordError, -1, "record %zd: timestamp %lld out of range", index, (long long)ts);
            goto fail;
        }
        if (headers != NULL) {
            PyObject *pair = Py_BuildValue("(nN)", row, headers);
            if (pair == NULL || PyList_Append(c[8], pair) < 0) {
                Py_XDECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
        if (ba_append(c[0], &off, 8) < 0 || ba_append(c[1], &ts_us, 8) < 0
            || col_append(c[2], c[3], c[4], row, kp, kn) < 0 || col_append(c[5], c[6], c[7], row, vp, vn) < 0)
            goto fail;
        continue;
    malformed:
        raise_fmt(CorruptRecordError, -1, "record %zd runs past the end of the batch or holds a malformed varint",
                  index);
        goto fail;
    }
    release_view(&v);
    return PyLong_FromSsize_t(index);
fail:
    release_view(&v);
    return NULL;
}

/* ------------------------------------------------------------------ the validating walk (framing.check_records) */

/* framing._skip_nullable: the length of the key, value or header value at *p (-1: null) in *n,
 * *p moved past it. V_OK, a varint error (V_PAST_END, V_TOO_LONG), or 1 with InvalidRecordFraming
 * raised for a length below -1. */
static inline int
skip_nullable(const unsigned char *d, Py_ssize_t end, Py_ssize_t *p, Py_ssize_t index, const char *what,
              int64_t *n)
{
    Py_ssize_t errpos;
    int rc = read_varint(d, end, p, n, &errpos);
    if (rc != V_OK)
        return rc;
    if (*n < -1) {
        raise_framing(index, "%s length %lld", what, (long long)*n);
        return 1;
    }
    if (*n > 0)
        *p += (Py_ssize_t)*n;
    return V_OK;
}

/* in check_one: skip a nullable field; a malformed varint goes to `malformed`, a bad length fails */
#define SKIP_NULLABLE_OR_FAIL(what, n) \
    do { \
        int rc_ = skip_nullable(d, end, &p, index, what, &n); \
        if (rc_ > 0) \
            return -1; \
        if (rc_ < 0) \
            goto malformed; \
    } while (0)

/* framing._check_one: 0 with next and key_null set, or -1 with InvalidRecordFraming raised */
static int
check_one(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t index, long long last_delta,
          Py_ssize_t *next, int *key_null)
{
    int64_t n, tsd, od, kl, vl, hc, hk, hv;
    Py_ssize_t p = pos, errpos, rec_end;
    VARINT_OR_FAIL(read_varint(d, end, &p, &n, &errpos));
    rec_end = p + (Py_ssize_t)n;
    if (n <= 0 || n > end - p) {
        raise_framing(index, "length %lld does not fit the %zd bytes left", (long long)n, end - p);
        return -1;
    }
    p += 1;
    VARINT_OR_FAIL(read_varlong(d, end, &p, &tsd, &errpos));
    VARINT_OR_FAIL(read_varint(d, end, &p, &od, &errpos));
    if (!(0 <= od && od <= last_delta)) {
        raise_framing(index, "offset delta %lld outside [0, %lld]", (long long)od, last_delta);
        return -1;
    }
    SKIP_NULLABLE_OR_FAIL("key", kl);
    SKIP_NULLABLE_OR_FAIL("value", vl);
    if (p >= rec_end) {
        raise_framing(index, "key and value leave no room for the header count");
        return -1;
    }
    VARINT_OR_FAIL(read_varint(d, end, &p, &hc, &errpos));
    if (hc < 0) {
        raise_framing(index, "header count %lld", (long long)hc);
        return -1;
    }
    for (int64_t i = 0; i < hc; i++) {
        VARINT_OR_FAIL(read_varint(d, end, &p, &hk, &errpos));
        if (hk < 0) {
            raise_framing(index, "header key length %lld", (long long)hk);
            return -1;
        }
        p += (Py_ssize_t)hk;
        SKIP_NULLABLE_OR_FAIL("header value", hv);
        if (p > rec_end) {
            raise_framing(index, "headers run past the record's length");
            return -1;
        }
    }
    if (p != rec_end) {
        raise_framing(index, "fields end at byte %zd of a record of %zd bytes", p - pos, rec_end - pos);
        return -1;
    }
    *next = rec_end;
    *key_null = kl == -1;
    return 0;
malformed:
    raise_framing(index, "runs past the end of the batch or holds a malformed varint");
    return -1;
}

/* A varint of at most 3 bytes at d[*p], wholly below lim: 1 with its zig-zag value in *out and *p past it,
 * else 0 (longer, or past lim: check_one then walks the record and names any error) */
static inline int
short_varint(const unsigned char *d, Py_ssize_t *p, Py_ssize_t lim, int64_t *out)
{
    Py_ssize_t i = *p;
    if (i >= lim)
        return 0;
    uint32_t u = d[i];
    if (u < 0x80)
        i += 1;
    else {
        if (i + 1 >= lim)
            return 0;
        uint32_t b = d[i + 1];
        u = (u & 0x7F) | (b & 0x7F) << 7;
        if (b < 0x80)
            i += 2;
        else {
            if (i + 2 >= lim || d[i + 2] >= 0x80)
                return 0;
            u |= (uint32_t)d[i + 2] << 14;
            i += 3;
        }
    }
    *p = i;
    *out = (int64_t)(int32_t)((u >> 1) ^ (0u - (u & 1)));
    return 1;
}

/* check_one for the common record, in fewer steps: short varints, every field inside the record's length,
 * no headers. 1 with *next and *key_null set when the record is sound, 0 when this cannot tell (the
 * caller then runs check_one): it accepts only records check_one accepts. */
static inline int
check_common(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, long long last_delta, Py_ssize_t *next,
             int *key_null)
{
    int64_t n, v, kl, vl, hc;
    Py_ssize_t p = pos;
    if (!short_varint(d, &p, end, &n) || n <= 0 || n > end - p)
        return 0;
    Py_ssize_t rec_end = p + (Py_ssize_t)n;
    p += 1; /* attributes */
    if (!short_varint(d, &p, rec_end, &v)) /* timestamp delta */
        return 0;
    if (!short_varint(d, &p, rec_end, &v) || v < 0 || v > last_delta) /* offset delta */
        return 0;
    if (!short_varint(d, &p, rec_end, &kl) || kl < -1)
        return 0;
    if (kl > 0)
        p += (Py_ssize_t)kl;
    if (!short_varint(d, &p, rec_end, &vl) || vl < -1)
        return 0;
    if (vl > 0)
        p += (Py_ssize_t)vl;
    if (!short_varint(d, &p, rec_end, &hc) || hc != 0 || p != rec_end)
        return 0;
    *next = rec_end;
    *key_null = kl == -1;
    return 1;
}

/* short_varint with no bound: the caller keeps 3 readable bytes past *p */
static inline int
short_varint_nb(const unsigned char *d, Py_ssize_t *p, int64_t *out)
{
    const unsigned char *q = d + *p;
    uint32_t u = q[0];
    if (u < 0x80)
        *p += 1;
    else {
        uint32_t b = q[1];
        u = (u & 0x7F) | (b & 0x7F) << 7;
        if (b < 0x80)
            *p += 2;
        else {
            if (q[2] >= 0x80)
                return 0;
            u |= (uint32_t)q[2] << 14;
            *p += 3;
        }
    }
    *out = (int64_t)(int32_t)((u >> 1) ^ (0u - (u & 1)));
    return 1;
}

/* check_common for a record that ends at least 16 bytes before the section does: fields are read with no
 * bound (at most 10 bytes past the record's end, still inside the section) and the record's end is checked
 * where a field could start past it; any field that runs past the end leaves p past rec_end, so the last
 * check refuses it. 1 when the record is sound, 0 when this cannot tell (the caller then runs check_common,
 * check_one): it accepts only records check_one accepts. */
static inline int
check_common_inner(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, long long last_delta, Py_ssize_t *next,
                   int *key_null)
{
    int64_t n, v, kl, vl;
    Py_ssize_t p = pos;
    if (pos + 3 > end || !short_varint_nb(d, &p, &n) || n <= 0 || n > end - p - 16)
        return 0;
    Py_ssize_t rec_end = p + (Py_ssize_t)n;
    p += 1; /* attributes */
    /* the timestamp delta: any value, skipped */
    p += d[p] < 0x80 ? 1 : d[p + 1] < 0x80 ? 2 : d[p + 2] < 0x80 ? 3 : end;
    if (p > rec_end || !short_varint_nb(d, &p, &v) || v < 0 || v > last_delta) /* offset delta */
        return 0;
    if (!short_varint_nb(d, &p, &kl) || kl < -1)
        return 0;
    if (kl > 0)
        p += (Py_ssize_t)kl;
    if (p >= rec_end || !short_varint_nb(d, &p, &vl) || vl < -1)
        return 0;
    if (vl > 0)
        p += (Py_ssize_t)vl;
    if (p != rec_end - 1 || d[p] != 0) /* no headers: the count 0 is the record's last byte */
        return 0;
    *next = rec_end;
    *key_null = kl == -1;
    return 1;
}

/* framing.check_records' walk over the n bytes of a records section: 0 with the record count in *count_out
 * and the first keyless record's index (-1: none) in *null_key, or -1 with InvalidRecordFraming raised */
static int
walk_records(const unsigned char *d, Py_ssize_t n, long long count, long long last, Py_ssize_t *count_out,
             Py_ssize_t *null_key)
{
    Py_ssize_t pos = 0, index = 0;
    *null_key = -1;
    while (pos < n) {
        int key_null;
        if (!check_common_inner(d, pos, n, last, &pos, &key_null) &&
            !check_common(d, pos, n, last, &pos, &key_null) && check_one(d, pos, n, index, last, &pos, &key_null) < 0)
            return -1;
        if (key_null && *null_key < 0)
            *null_key = index;
        index++;
        if (index > count) {
            raise_framing(index - 1, "more records than the %lld the batch declares", count);
            return -1;
        }
    }
    if (index != count) {
        raise_framing(index, "the batch declares %lld records but holds %zd", count, index);
        return -1;
    }
    *count_out = index;
    return 0;
}

/* check_records(data, record_count, last_offset_delta) -> RecordsCheck(count, first_null_key) */
static PyObject *
sp_check_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 3, 3, "check_records(data, record_count, last_offset_delta)") < 0 || load_classes() < 0)
        return NULL;
    long long count, last;
    if (as_long_long(args[1], &count) < 0 || as_long_long(args[2], &last) < 0)
        return NULL;
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    Py_ssize_t index, null_key;
    PyObject *result = NULL;
    if (walk_records(v.d, v.n, count, last, &index, &null_key) < 0)
        goto done;
    /* RecordsCheck is a NamedTuple (checked in load_classes): filled in place, as decode_records fills
     * its Records, not through its Python-level __new__ (a microsecond of a 16 KB batch's validation) */
    PyObject *cnt = PyLong_FromSsize_t(index), *nk = PyLong_FromSsize_t(null_key);
    if (cnt && nk && (result = ((PyTypeObject *)RecordsCheck)->tp_alloc((PyTypeObject *)RecordsCheck, 2)) != NULL) {
        PyTuple_SET_ITEM(result, 0, cnt);
        PyTuple_SET_ITEM(result, 1, nk);
        cnt = nk = NULL;
    }
    Py_XDECREF(cnt);
    Py_XDECREF(nk);
done:
    release_view(&v);
    return result;
}

/* ------------------------------------------------------------------ the append's validating walk (log_validator.validate_batches_py) */

uint32_t pylog_crc32c_update(uint32_t crc, const unsigned char *p, Py_ssize_t n); /* _speedups_run.c */

static inline int64_t
be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static inline uint32_t
be32u(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline int16_t
be16(const unsigned char *p)
{
    return (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* The v2 header at d as a BatchHeader (HEADER_STRUCT's fields, filled in place), or NULL */
static PyObject *
batch_header(const unsigned char *d)
{
    PyObject *h = ((PyTypeObject *)BatchHeader)->tp_alloc((PyTypeObject *)BatchHeader, 13);
    if (h == NULL)
        return NULL;
    PyObject *f[13] = {
        PyLong_FromLongLong(be64(d)), PyLong_FromLong((int32_t)be32u(d + 8)),
        PyLong_FromLong((int32_t)be32u(d + 12)), PyLong_FromLong((int8_t)d[16]),
        PyLong_FromUnsignedLong(be32u(d + 17)), PyLong_FromLong(be16(d + 21)),
        PyLong_FromLong((int32_t)be32u(d + 23)), PyLong_FromLongLong(be64(d + 27)),
        PyLong_FromLongLong(be64(d + 35)), PyLong_FromLongLong(be64(d + 43)),
        PyLong_FromLong(be16(d + 51)), PyLong_FromLong((int32_t)be32u(d + 53)),
        PyLong_FromLong((int32_t)be32u(d + 57)),
    };
    int ok = 1;
    for (int i = 0; i < 13; i++) {
        if (f[i] == NULL)
            ok = 0;
        PyTuple_SET_ITEM(h, i, f[i]); /* NULL slots are fine for the tuple's dealloc */
    }
    if (!ok) {
        Py_DECREF(h);
        return NULL;
    }
    return h;
}

/* (a, b) of two new references, stolen (NULL if either is NULL or the tuple fails; both released) */
static PyObject *
pair_steal(PyObject *a, PyObject *b)
{
    PyObject *t = a && b ? PyTuple_New(2) : NULL;
    if (t == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    return t;
}

/* validate_batches(buf, max_message, create_time, lo, hi, check_compressed, tp)
 *   -> (batches, count, max_ts, has_pid) or None: log_validator.validate_batches_py, the walk of
 * validate_fast in one call. Each batch's header, CRC-32C (three lanes; without the GIL from 32 KB on,
 * as crc32c), the checks, and the records' framing where they lie; a compressed batch's records are
 * left to check_compressed(buf, pos, header, tp) -> bool. None as soon as anything is unusual. */
static PyObject *
sp_validate_batches(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, 7, "validate_batches(buf, max_message, create_time, lo, hi, check_compressed, tp)") < 0 ||
        load_classes() < 0)
        return NULL;
    long long max_message, lo, hi;
    if (as_long_long(args[1], &max_message) < 0 || as_long_long(args[3], &lo) < 0 || as_long_long(args[4], &hi) < 0)
        return NULL;
    int create_time = PyObject_IsTrue(args[2]);
    if (create_time < 0)
        return NULL;
    int lo_bounded = lo != LLONG_MIN;
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    PyObject *batches = PyList_New(0), *result = NULL;
    if (batches == NULL)
        goto done;
    Py_ssize_t pos = 0, end = v.n;
    long long count = 0, max_ts = -1;
    int has_pid = 0;
    while (pos < end) {
        const unsigned char *d = v.d + pos;
        if (end - pos < 61)
            goto unusual;
        long long size = (long long)(int32_t)be32u(d + 8) + 12;
        if (d[16] != 2 || size < 61 || size > max_message || size > end - pos)
            goto unusual;
        uint32_t crc;
        if (size >= 32768) {
            PyThreadState *ts = PyEval_SaveThread(); /* other threads run meanwhile */
            crc = ~pylog_crc32c_update(~0u, d + 21, (Py_ssize_t)size - 21);
            PyEval_RestoreThread(ts);
        } else
            crc = ~pylog_crc32c_update(~0u, d + 21, (Py_ssize_t)size - 21);
        if (crc != be32u(d + 17))
            goto unusual;
        int attrs = be16(d + 21);
        long long last_delta = (int32_t)be32u(d + 23), n = (int32_t)be32u(d + 57);
        long long max_timestamp = be64(d + 35), producer_id = be64(d + 43);
        if (n <= 0 || last_delta + 1 != n || attrs & 0x20 || (attrs & 0x07) > 4)
            goto unusual;
        if (producer_id >= 0) {
            if ((int32_t)be32u(d + 53) < 0)
                goto unusual;
            has_pid = 1;
        } else if (attrs & 0x10)
            goto unusual;
        if (create_time) {
            if (max_timestamp > hi ||
                (lo_bounded && !((n == 1 || attrs & 0x08) && (max_timestamp >= lo || max_timestamp == -1))))
                goto unusual; /* out of range, or only the records can tell */
        } else if (attrs & 0x08)
            goto unusual;
        PyObject *h = batch_header(d);
        if (h == NULL)
            goto done;
        if (attrs & 0x07) {
            PyObject *pp = PyLong_FromSsize_t(pos);
            PyObject *r = pp == NULL ? NULL : PyObject_CallFunctionObjArgs(args[5], args[0], pp, h, args[6], NULL);
            Py_XDECREF(pp);
            int ok = r == NULL ? -1 : PyObject_IsTrue(r);
            Py_XDECREF(r);
            if (ok <= 0) {
                Py_DECREF(h);
                if (ok < 0)
                    goto done;
                goto unusual;
            }
        } else {
            Py_ssize_t walked, null_key;
            if (walk_records(d + 61, (Py_ssize_t)size - 61, n, last_delta, &walked, &null_key) < 0) {
                Py_DECREF(h);
                if (!PyErr_ExceptionMatches(InvalidRecordFraming))
                    goto done;
                PyErr_Clear();
                goto unusual;
            }
        }
        PyObject *entry = pair_steal(PyLong_FromSsize_t(pos), h); /* Py_BuildValue parses its format each call */
        if (entry == NULL || PyList_Append(batches, entry) < 0) {
            Py_XDECREF(entry);
            goto done;
        }
        Py_DECREF(entry);
        count += n;
        if (max_timestamp > max_ts)
            max_ts = max_timestamp;
        pos += (Py_ssize_t)size;
    }
    result = PyTuple_New(4);
    PyObject *c = PyLong_FromLongLong(count), *m = PyLong_FromLongLong(max_ts);
    if (result == NULL || c == NULL || m == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(c);
        Py_XDECREF(m);
        result = NULL;
        goto done;
    }
    PyTuple_SET_ITEM(result, 0, Py_NewRef(batches));
    PyTuple_SET_ITEM(result, 1, c);
    PyTuple_SET_ITEM(result, 2, m);
    PyTuple_SET_ITEM(result, 3, Py_NewRef(has_pid ? Py_True : Py_False));
    goto done;
unusual:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(batches);
    release_view(&v);
    return result;
}

/* patch_append_fields(buf, batches, base_offset, leader_epoch) -> (patched, next_offset):
 * header.patch_append_fields_py. Each (position, BatchHeader) of `batches` gets its baseOffset (from
 * base_offset on), batchLength (the header's) and partitionLeaderEpoch written at its position in the
 * writable buf, and a BatchHeader with the two fields set, as written. A position or header the log
 * would never pass (out of the buffer, not a 13-field tuple) is a ValueError or TypeError. */
static PyObject *
sp_patch_append_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, 4, "patch_append_fields(buf, batches, base_offset, leader_epoch)") < 0 ||
        load_classes() < 0)
        return NULL;
    long long offset, epoch;
    if (!PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "patch_append_fields: batches must be a list");
        return NULL;
    }
    if (as_long_long(args[2], &offset) < 0 || as_long_long(args[3], &epoch) < 0)
        return NULL;
    if (epoch < INT32_MIN || epoch > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "patch_append_fields: leader_epoch out of the int32 range");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    unsigned char *d = view.buf;
    Py_ssize_t n = PyList_GET_SIZE(args[1]);
    PyObject *patched = PyList_New(n), *result = NULL;
    if (patched == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(args[1], i), *h;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyTuple_Check(h = PyTuple_GET_ITEM(item, 1)) ||
            PyTuple_GET_SIZE(h) != 13) {
            PyErr_SetString(PyExc_TypeError, "patch_append_fields: batches must be (position, BatchHeader)");
            goto done;
        }
        Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        long long length, delta;
        if ((pos == -1 && PyErr_Occurred()) || as_long_long(PyTuple_GET_ITEM(h, 1), &length) < 0 ||
            as_long_long(PyTuple_GET_ITEM(h, 6), &delta) < 0)
            goto done;
        if (pos < 0 || pos > view.len - 16 || length < INT32_MIN || length > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "patch_append_fields: no batch header at %zd of %zd bytes", pos, view.len);
            goto done;
        }
        uint64_t o = (uint64_t)offset;
        for (int k = 0; k < 8; k++)
            d[pos + k] = (unsigned char)(o >> (56 - 8 * k));
        uint32_t l = (uint32_t)length, e = (uint32_t)epoch;
        for (int k = 0; k < 4; k++) {
            d[pos + 8 + k] = (unsigned char)(l >> (24 - 8 * k));
            d[pos + 12 + k] = (unsigned char)(e >> (24 - 8 * k));
        }
        PyObject *nh = ((PyTypeObject *)BatchHeader)->tp_alloc((PyTypeObject *)BatchHeader, 13);
        if (nh == NULL)
            goto done;
        PyObject *entry = PyTuple_New(2);
        if (entry == NULL) {
            Py_DECREF(nh);
            goto done;
        }
        PyList_SET_ITEM(patched, i, entry);
        PyTuple_SET_ITEM(entry, 0, Py_NewRef(PyTuple_GET_ITEM(item, 0)));
        PyTuple_SET_ITEM(entry, 1, nh);
        for (int k = 1; k < 13; k++)
            if (k != 2)
                PyTuple_SET_ITEM(nh, k, Py_NewRef(PyTuple_GET_ITEM(h, k)));
        PyObject *bo = PyLong_FromLongLong(offset), *le = PyLong_FromLongLong(epoch);
        PyTuple_SET_ITEM(nh, 0, bo);
        PyTuple_SET_ITEM(nh, 2, le);
        if (bo == NULL || le == NULL)
            goto done;
        offset += delta + 1;
    }
    result = pair_steal(Py_NewRef(patched), PyLong_FromLongLong(offset));
done:
    Py_XDECREF(patched);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ the cleaner's key scan (compaction_rules.scan_records) */

static int
append_ssize(PyObject *list, Py_ssize_t x)
{
    PyObject *o = PyLong_FromSsize_t(x);
    if (o == NULL)
        return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* scan_records(data, base_offset, with_keys) -> (starts, keys, offsets, value positions) */
static PyObject *
sp_scan_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 3, 3, "scan_records(data, base_offset, with_keys)") < 0 || load_classes() < 0)
        return NULL;
    long long base;
    if (as_long_long(args[1], &base) < 0)
        return NULL;
    int with_keys = PyObject_IsTrue(args[2]);
    if (with_keys < 0)
        return NULL;
    bytes_view v;
    if (get_view(args[0], &v) < 0)
        return NULL;
    const unsigned char *d = v.d;
    Py_ssize_t end = v.n, pos = 0;
    PyObject *starts = PyList_New(0), *keys = PyList_New(0), *offsets = PyList_New(0), *vpos = PyList_New(0);
    PyObject *result = NULL;
    if (!starts || !keys || !offsets || !vpos)
        goto done;
    while (pos < end) {
        int64_t n, tsd, od, kl;
        Py_ssize_t p, p2, errpos;
        if (append_ssize(starts, pos) < 0)
            goto done;
        p = pos;
        if (read_varint(d, end, &p, &n, &errpos) != V_OK)
            goto corrupt;
        if (n <= 0)
            break;
        p2 = p + 1;
        if (read_varlong(d, end, &p2, &tsd, &errpos) != V_OK || read_varint(d, end, &p2, &od, &errpos) != V_OK)
            goto corrupt;
        PyObject *o = add_i64(base, od);
        if (o == NULL || PyList_Append(offsets, o) < 0) {
            Py_XDECREF(o);
            goto done;
        }
        Py_DECREF(o);
        if (with_keys) {
            if (read_varint(d, end, &p2, &kl, &errpos) != V_OK)
                goto corrupt;
            if (kl >= 0) {
                Py_ssize_t b = kl > end - p2 ? end : p2 + (Py_ssize_t)kl;
                PyObject *k = PyBytes_FromStringAndSize((const char *)d + p2, b - p2);
                if (k == NULL || PyList_Append(keys, k) < 0) {
                    Py_XDECREF(k);
                    goto done;
                }
                Py_DECREF(k);
                if (append_ssize(vpos, p2 + (Py_ssize_t)kl) < 0)
                    goto done;
            } else {
                if (PyList_Append(keys, Py_None) < 0 || append_ssize(vpos, p2) < 0)
                    goto done;
            }
        }
        pos = p + (Py_ssize_t)n;
    }
    if (pos != end)
        goto corrupt;
    result = PyTuple_Pack(4, starts, keys, offsets, vpos);
    goto done;
corrupt:
    raise_fmt(CorruptRecordError, -1, "records run past the end of their batch");
done:
    Py_XDECREF(starts);
    Py_XDECREF(keys);
    Py_XDECREF(offsets);
    Py_XDECREF(vpos);
    release_view(&v);
    return result;
}

/* max_timestamp_delta(data, starts) -> the largest timestamp delta of the records at these positions
 * (compaction_rules.max_timestamp_delta; the positions come from scan_records) */
static PyObject *
sp_max_timestamp_delta(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, 2, "max_timestamp_delta(data, starts)") < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(args[1], "starts must be a sequence of positions");
    if (seq == NULL)
        return NULL;
    bytes_view v;
    if (get_view(args[0], &v) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t best = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i)), errpos;
        if (p == -1 && PyErr_Occurred())
            goto done;
        int64_t len, tsd;
        int rc = read_varint(v.d, v.n, &p, &len, &errpos), max_bytes = 5;
        if (rc == V_OK) {
            p += 1;
            max_bytes = 10;
            rc = read_varlong(v.d, v.n, &p, &tsd, &errpos);
        }
        if (rc != V_OK) {
            raise_varint(rc, max_bytes, errpos);
            goto done;
        }
        if (i == 0 || tsd > best)
            best = tsd;
    }
    if (n == 0)
        PyErr_SetString(PyExc_ValueError, "max() arg is an empty sequence");
    else
        result = PyLong_FromLongLong(best);
done:
    release_view(&v);
    Py_DECREF(seq);
    return result;
}

/* One record of a records section at *pos, the steps of scan_records with keys: its offset delta and its
 * key (*key NULL: a null key; cut at the end of the section, as a Python slice is); *pos moves past it.
 * 0, or -1 where scan_records raises "records run past the end of their batch" (nothing set). */
static inline int
next_keyed(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int64_t *od,
           const unsigned char **key, Py_ssize_t *klen)
{
    int64_t n, tsd, kl;
    Py_ssize_t p = *pos, p2, errpos;
    if (read_varint(d, end, &p, &n, &errpos) != V_OK || n <= 0)
        return -1;
    p2 = p + 1;
    if (read_varlong(d, end, &p2, &tsd, &errpos) != V_OK || read_varint(d, end, &p2, od, &errpos) != V_OK ||
        read_varint(d, end, &p2, &kl, &errpos) != V_OK)
        return -1;
    if (kl >= 0) {
        *key = d + p2;
        *klen = kl > end - p2 ? end - p2 : (Py_ssize_t)kl;
    } else {
        *key = NULL;
    }
    *pos = p + (Py_ssize_t)n;
    return 0;
}

/* map_keys(d, data, base_offset, fits) -> keyed records put into the dict d, or None
 * (compaction_rules.map_keys): one walk finds the keyed records' count, longest key and last offset,
 * fits(count, longest, last offset or -1) decides, a second walk puts key -> offset into d with no
 * list in between. A damaged section raises before d changes. */
static PyObject *
sp_map_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, 4, "map_keys(d, data, base_offset, fits)") < 0 || load_classes() < 0)
        return NULL;
    PyObject *dict = args[0];
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "map_keys needs a dict");
        return NULL;
    }
    long long base;
    if (as_long_long(args[2], &base) < 0)
        return NULL;
    bytes_view v;
    if (get_view(args[1], &v) < 0)
        return NULL;
    const unsigned char *d = v.d, *key;
    Py_ssize_t end = v.n, pos = 0, klen, count = 0, longest = 0;
    int64_t od, last_od = 0;
    PyObject *result = NULL, *last = NULL;
    while (pos < end) {
        if (next_keyed(d, end, &pos, &od, &key, &klen) < 0)
            goto corrupt;
        if (key != NULL) {
            count++;
            if (klen > longest)
                longest = klen;
            last_od = od;
        }
    }
    if (pos != end)
        goto corrupt;
    last = count ? add_i64(base, last_od) : PyLong_FromLong(-1);
    if (last == NULL)
        goto done;
    PyObject *ok = PyObject_CallFunction(args[3], "nnO", count, longest, last);
    int yes = ok == NULL ? -1 : PyObject_IsTrue(ok);
    Py_XDECREF(ok);
    if (yes < 0)
        goto done;
    if (!yes) {
        Py_INCREF(Py_None);
    result = Py_None;
        goto done;
    }
    for (pos = 0; pos < end;) {
        if (next_keyed(d, end, &pos, &od, &key, &klen) < 0)
            goto corrupt; /* changed by fits() */
        if (key == NULL)
            continue;
        PyObject *k = PyBytes_FromStringAndSize((const char *)key, klen), *o = add_i64(base, od);
        int rc = k && o ? PyDict_SetItem(dict, k, o) : -1;
        Py_XDECREF(k);
        Py_XDECREF(o);
        if (rc < 0)
            goto done;
    }
    result = PyLong_FromSsize_t(count);
    goto done;
corrupt:
    raise_fmt(CorruptRecordError, -1, "records run past the end of their batch");
done:
    Py_XDECREF(last);
    release_view(&v);
    return result;
}

/* ------------------------------------------------------------------ encoding (batch.encode_record) */

typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
} outbuf;

static int
ob_reserve(outbuf *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    unsigned char *np = PyMem_Realloc(b->p, cap);
    if (np == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

static int
ob_put(outbuf *b, const void *data, Py_ssize_t n)
{
    if (ob_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

static int
ob_varint(outbuf *b, int64_t v)
{
    if (ob_reserve(b, 10) < 0)
        return -1;
    b->len += put_varint(b->p + b->len, v);
    return 0;
}

/* a length-prefixed field: None -> -1; str -> UTF-8 when allow_str; else any bytes-like */
static int
ob_field(outbuf *b, PyObject *obj, int allow_str)
{
    if (obj == Py_None)
        return ob_varint(b, -1);
    if (allow_str && PyUnicode_Check(obj)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
        if (s == NULL)
            return -1;
        if (ob_varint(b, n) < 0)
            return -1;
        return ob_put(b, s, n);
    }
    if (PyBytes_CheckExact(obj)) {
        Py_ssize_t n = PyBytes_GET_SIZE(obj);
        if (ob_varint(b, n) < 0)
            return -1;
        return ob_put(b, PyBytes_AS_STRING(obj), n);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return -1;
    int rc = ob_varint(b, view.len);
    if (rc == 0)
        rc = ob_put(b, view.buf, view.len);
    PyBuffer_Release(&view);
    return rc;
}

static int
ob_headers(outbuf *b, PyObject *headers)
{
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence of (key, value) pairs");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = ob_varint(b, n);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *pair = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a header must be a (key, value) pair");
        if (pair == NULL) {
            rc = -1;
            break;
        }
        if (PySequence_Fast_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_ValueError, "a header must be a (key, value) pair");
            rc = -1;
        } else {
            PyObject *k = PySequence_Fast_GET_ITEM(pair, 0);
            if (k == Py_None) {
                PyErr_SetString(PyExc_TypeError, "a header key cannot be None");
                rc = -1;
            } else {
                rc = ob_field(b, k, 1);
                if (rc == 0)
                    rc = ob_field(b, PySequence_Fast_GET_ITEM(pair, 1), 1);
            }
        }
        Py_DECREF(pair);
    }
    Py_DECREF(seq);
    return rc;
}

/* encode_record(offset_delta, timestamp_delta, key, value, headers=()) -> bytes, length prefix included */
static PyObject *
sp_encode_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, 5, "encode_record(offset_delta, timestamp_delta, key, value, headers=())") < 0)
        return NULL;
    long long od, tsd;
    if (as_long_long(args[0], &od) < 0 || as_long_long(args[1], &tsd) < 0)
        return NULL;
    outbuf b = {NULL, 0, 0};
    PyObject *result = NULL;
    /* the body after a 5-byte gap for its length (a varint of at most 5 bytes here) */
    if (ob_reserve(&b, 64) < 0)
        return NULL;
    b.len = 5;
    b.p[b.len++] = 0; /* attributes */
    if (ob_varint(&b, tsd) < 0 || ob_varint(&b, od) < 0 || ob_field(&b, args[2], 0) < 0 ||
        ob_field(&b, args[3], 0) < 0)
        goto done;
    if (nargs == 5 && args[4] != Py_None && PyObject_IsTrue(args[4])) {
        if (ob_headers(&b, args[4]) < 0)
            goto done;
    } else if (ob_varint(&b, 0) < 0) {
        goto done;
    }
    {
        Py_ssize_t body = b.len - 5;
        unsigned char pre[10];
        int w = put_varint(pre, body);
        if (w > 5) {
            PyErr_SetString(PyExc_OverflowError, "record too large");
            goto done;
        }
        memcpy(b.p + 5 - w, pre, w);
        result = PyBytes_FromStringAndSize((const char *)b.p + 5 - w, body + w);
    }
done:
    PyMem_Free(b.p);
    return result;
}

/* ------------------------------------------------------------------ murmur2 (partitioner.murmur2_many) */

#include "_speedups_murmur2.h"

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

/* ------------------------------------------------------------------ the segment's index entries of an append */

/* The fields index_batches reads of one (position, BatchHeader): 0, or -1 (not such a pair: the caller
 * clears the error and hands over) */
static int
batch_fields(PyObject *item, long long *pos, long long *last, long long *max_ts, long long *size)
{
    PyObject *h;
    long long base, delta, length;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyTuple_Check(h = PyTuple_GET_ITEM(item, 1)) ||
        PyTuple_GET_SIZE(h) != 13 || as_long_long(PyTuple_GET_ITEM(item, 0), pos) < 0 ||
        as_long_long(PyTuple_GET_ITEM(h, 0), &base) < 0 || as_long_long(PyTuple_GET_ITEM(h, 1), &length) < 0 ||
        as_long_long(PyTuple_GET_ITEM(h, 6), &delta) < 0 || as_long_long(PyTuple_GET_ITEM(h, 8), max_ts) < 0)
        return -1;
    if (base > LLONG_MAX / 2 || base < LLONG_MIN / 2 || delta > INT32_MAX || delta < INT32_MIN)
        return -1;
    *last = base + delta;
    *size = length + 12;
    return 0;
}

static inline void
put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int k = 0; k < bytes; k++)
        p[k] = (unsigned char)(v >> (8 * (bytes - 1 - k)));
}

/* index_batches(batches, start, since, interval, max_ts, max_ts_offset, base_offset,
 *               oi_map, oi_entries, oi_max, ti_map, ti_entries, ti_max)
 *   -> (since, max_ts, max_ts_offset, oi_entries, ti_entries, the last batch's next offset) or None.
 * LogSegment.append's index loop (Kafka's LogSegment.append: per batch, the max timestamp so far and,
 * past index.interval.bytes, one offset-index entry and the time index's maybeAppend) with the entries
 * written into the two maps. A first pass plays the loop without writing: when any entry would not fit
 * (a full index, an int32 overflow) or the time index would refuse it, nothing is written and None
 * hands the append to the Python loop (the reference), which raises exactly what it raises. */
static PyObject *
sp_index_batches(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 13, 13, "index_batches(batches, start, since, interval, max_ts, max_ts_offset, "
                                   "base_offset, oi_map, oi_entries, oi_max, ti_map, ti_entries, ti_max)") < 0)
        return NULL;
    long long v[13];
    static const int ints[] = {1, 2, 3, 4, 5, 6, 8, 9, 11, 12};
    for (int i = 0; i < 10; i++)
        if (as_long_long(args[ints[i]], &v[ints[i]]) < 0)
            return NULL;
    PyObject *batches = args[0];
    if (!PyList_Check(batches) || PyList_GET_SIZE(batches) == 0 || args[7] == Py_None || args[10] == Py_None)
        Py_RETURN_NONE;
    long long start = v[1], interval = v[3], base_offset = v[6];
    long long oi_max = v[9], ti_max = v[12];
    Py_buffer oi, ti;
    if (PyObject_GetBuffer(args[7], &oi, PyBUF_WRITABLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[10], &ti, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&oi);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches);
    unsigned char *om = oi.buf, *tm = ti.buf;
    for (int write = 0; write < 2; write++) {
        long long since = v[2], max_ts = v[4], max_off = v[5], oe = v[8], te = v[11];
        long long ti_ts = 0, ti_rel = 0, next = 0; /* the time index's newest entry (when te > 0) */
        if (te > 0) {
            if (te * 12 > ti.len)
                goto hand_over;
            ti_ts = be64(tm + (te - 1) * 12);
            ti_rel = (int32_t)be32u(tm + (te - 1) * 12 + 8);
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            long long pos, last, bts, size;
            if (batch_fields(PyList_GET_ITEM(batches, i), &pos, &last, &bts, &size) < 0) {
                PyErr_Clear();
                goto hand_over;
            }
            if (bts > max_ts) {
                max_ts = bts;
                max_off = last;
            }
            if (since > interval) {
                long long rel = last - base_offset, at = start + pos, trel = max_off - base_offset;
                /* OffsetIndex.append_in_order: the capacity, the entry's int32 fields */
                if (oe >= oi_max || (oe + 1) * 8 > oi.len || rel < INT32_MIN || rel > INT32_MAX || at < INT32_MIN ||
                    at > INT32_MAX)
                    goto hand_over;
                if (write)
                    put_be(om + oe * 8, (uint64_t)rel, 4), put_be(om + oe * 8 + 4, (uint64_t)at, 4);
                oe++;
                /* TimeIndex.maybe_append(max_ts, max_off) */
                if (max_ts >= 0) {
                    if (te >= ti_max - 1 || (te > 0 && max_off < base_offset + ti_rel))
                        goto hand_over; /* full, or out of order: the Python loop raises */
                    if (te == 0 || max_ts > ti_ts) {
                        if ((te + 1) * 12 > ti.len || trel < INT32_MIN || trel > INT32_MAX)
                            goto hand_over;
                        if (write)
                            put_be(tm + te * 12, (uint64_t)max_ts, 8), put_be(tm + te * 12 + 8, (uint64_t)trel, 4);
                        te++;
                        ti_ts = max_ts;
                        ti_rel = trel;
                    }
                }
                since = 0;
            }
            since += size;
            next = last + 1;
        }
        if (write) {
            long long out[6] = {since, max_ts, max_off, oe, te, next};
            if ((result = PyTuple_New(6)) == NULL)
                goto done;
            for (int k = 0; k < 6; k++) {
                PyObject *o = PyLong_FromLongLong(out[k]);
                if (o == NULL) {
                    Py_CLEAR(result);
                    goto done;
                }
                PyTuple_SET_ITEM(result, k, o);
            }
        }
    }
    goto done;
hand_over:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&oi);
    PyBuffer_Release(&ti);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"decode_varint", (PyCFunction)(void (*)(void))sp_decode_varint, METH_FASTCALL, "varint.decode_varint"},
    {"decode_varlong", (PyCFunction)(void (*)(void))sp_decode_varlong, METH_FASTCALL, "varint.decode_varlong"},
    {"encode_varint", (PyCFunction)sp_encode_varint, METH_O, "varint.encode_varint"},
    {"decode_records", (PyCFunction)(void (*)(void))sp_decode_records, METH_FASTCALL, "batch.decode_records"},
    {"decode_columns", (PyCFunction)(void (*)(void))sp_decode_columns, METH_FASTCALL,
     "record_columns.decode_columns"},
    {"check_records", (PyCFunction)(void (*)(void))sp_check_records, METH_FASTCALL, "framing.check_records"},
    {"patch_append_fields", (PyCFunction)(void (*)(void))sp_patch_append_fields, METH_FASTCALL,
     "header.patch_append_fields_py"},
    {"validate_batches", (PyCFunction)(void (*)(void))sp_validate_batches, METH_FASTCALL,
     "log_validator.validate_batches_py"},
    {"index_batches", (PyCFunction)(void (*)(void))sp_index_batches, METH_FASTCALL,
     "segment.LogSegment.append's index loop"},
    {"scan_records", (PyCFunction)(void (*)(void))sp_scan_records, METH_FASTCALL, "compaction_rules.scan_records"},
    {"encode_record", (PyCFunction)(void (*)(void))sp_encode_record, METH_FASTCALL, "batch.encode_record"},
    {"murmur2_many", (PyCFunction)sp_murmur2_many, METH_O, "partitioner.murmur2_many"},
    {"map_keys", (PyCFunction)(void (*)(void))sp_map_keys, METH_FASTCALL, "compaction_rules.map_keys"},
    {"max_timestamp_delta", (PyCFunction)(void (*)(void))sp_max_timestamp_delta, METH_FASTCALL,
     "compaction_rules.max_timestamp_delta"},
    {"split_key_value", (PyCFunction)(void (*)(void))sp_split_key_value, METH_FASTCALL,
     "produce_input.split_key_value"},
    {"render_format", (PyCFunction)(void (*)(void))sp_render_format, METH_FASTCALL,
     "consume_output.Renderer.render, as piped bytes"},
    {"render_records", (PyCFunction)(void (*)(void))sp_render_records, METH_FASTCALL,
     "consume_output.render_records_py"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "pylog's optional compiled fast path (see pylog.core.fastpath).", -1,
    methods,
};

extern PyMethodDef pylog_run_methods[];  /* _speedups_run.c */
extern PyMethodDef pylog_json_methods[]; /* _speedups_json.c */
extern PyMethodDef pylog_lines_methods[]; /* _speedups_lines.c */

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddFunctions(m, pylog_run_methods) < 0 ||
                      PyModule_AddFunctions(m, pylog_json_methods) < 0 ||
                      PyModule_AddFunctions(m, pylog_lines_methods) < 0))
        Py_CLEAR(m);
    return m;
}
