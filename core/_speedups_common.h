/* The helpers every compiled extension of pylog shares: the lazily imported Python classes and the
 * exceptions raised as the pure-Python twins raise them, varint readers, bytes views, argument
 * checks, big-endian reads, an output buffer. Static, so each extension (records, client, storage,
 * CLI text) compiles its own copy: extensions cannot link against one another portably, and one
 * header keeps the twins' error messages the same in all of them. In core/ because every layer
 * that owns an extension sits above core. */
#ifndef PYLOG_SPEEDUPS_COMMON_H
#define PYLOG_SPEEDUPS_COMMON_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_speedups_varint.h"

#if defined(__GNUC__) || defined(__clang__)
#define SP_SHARED __attribute__((unused)) /* a helper some of the including extensions leave unused */
#define SP_NOINLINE __attribute__((noinline))
#else
#define SP_SHARED
#define SP_NOINLINE
#endif

/* ------------------------------------------------------------------ lazily imported Python classes */

static SP_SHARED PyObject *CorruptRecordError, *MalformedVarintError, *InvalidRecordFraming, *RecordsCheck, *Record;
static SP_SHARED PyObject *BatchHeader; /* pylog.core.records.header.BatchHeader, a NamedTuple: filled in place */

/* Attributes `a` (and `b`, when not NULL) of a module: 0, or -1 with the error set */
static SP_SHARED int
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

static SP_SHARED int
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
static SP_SHARED void
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
static SP_SHARED void
raise_fmt(PyObject *cls, Py_ssize_t position, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    raise_v(cls, 0, position, fmt, va);
    va_end(va);
}

/* raise InvalidRecordFraming(index, message) */
static SP_SHARED void
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

static SP_SHARED void
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

static SP_SHARED int
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

static SP_SHARED void
release_view(bytes_view *v)
{
    if (v->owned)
        PyBuffer_Release(&v->view);
}

/* lo <= nargs <= hi: 0; else -1 with a TypeError showing the call (`usage`) */
static SP_SHARED int
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

/* ------------------------------------------------------------------ int helpers */

static SP_SHARED PyObject *
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


/* (a, b) of two new references, stolen (NULL if either is NULL or the tuple fails; both released) */
static SP_SHARED PyObject *
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

/* ------------------------------------------------------------------ the cleaner's key scan (compaction_rules.scan_records) */

static SP_SHARED int
append_ssize(PyObject *list, Py_ssize_t x)
{
    PyObject *o = PyLong_FromSsize_t(x);
    if (o == NULL)
        return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* ------------------------------------------------------------------ encoding (batch.encode_record) */

typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
} outbuf;

static SP_SHARED int
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

static SP_SHARED int
ob_put(outbuf *b, const void *data, Py_ssize_t n)
{
    if (ob_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

#endif
