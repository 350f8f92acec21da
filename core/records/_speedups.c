/* pylog's optional compiled fast path for the record formats: pylog.core.records._speedups.
 *
 * Each function here has a pure-Python twin in pylog.core.records that is the reference (named in
 * its comment); tests/test_fastpath_*.py drive both with the same inputs, damaged ones included,
 * and require the same bytes, records and errors. pylog.core.records.fastpath decides which one
 * runs. Nothing here does I/O.
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_speedups_common.h"
#include "../_speedups_crc32c.h"
#include "../_speedups_walk.h"

/* ------------------------------------------------------------------ varints (varint.py) */

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

/* ------------------------------------------------------------------ the append's header fields (header.patch_append_fields_py) */


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

/* ------------------------------------------------------------------ encoding (batch.encode_record) */

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

/* ------------------------------------------------------------------ CRC-32C (the crc32c package's crc32c) */

static PyObject *
sp_crc32c(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32c(data, value=0)");
        return NULL;
    }
    unsigned long long value = 0;
    if (nargs == 2) {
        if (!PyLong_Check(args[1])) {
            PyErr_SetString(PyExc_TypeError, "crc32c: value must be an int");
            return NULL;
        }
        value = PyLong_AsUnsignedLongLongMask(args[1]) & 0xFFFFFFFFull; /* modulo 2**32, as the package */
        if (PyErr_Occurred())
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    crc_setup(); /* with the GIL held */
    uint32_t crc = ~(uint32_t)value;
    PyThreadState *ts = view.len >= 32768 ? PyEval_SaveThread() : NULL; /* other threads run meanwhile */
    crc = pylog_crc32c_update(crc, view.buf, view.len);
    if (ts != NULL)
        PyEval_RestoreThread(ts);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(~crc);
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
    {"encode_record", (PyCFunction)(void (*)(void))sp_encode_record, METH_FASTCALL, "batch.encode_record"},
    {"crc32c", (PyCFunction)(void (*)(void))sp_crc32c, METH_FASTCALL, "crc32c.crc32c (the package)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "pylog's compiled record codecs (see pylog.core.records.fastpath).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
