/* pylog's optional compiled fast path for the log on disk: pylog.storage._speedups.
 *
 * The append's validating walk (log_validator), the cleaner's key scans (compaction_rules) and the
 * index entries of an append (segment_indexes); each function's pure-Python twin, in the module named
 * in its comment, is the reference (tests/test_fastpath_*.py). pylog.storage.fastpath decides which
 * one runs. Nothing here does I/O.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../core/_speedups_common.h"
#include "../core/_speedups_crc32c.h"
#include "../core/_speedups_walk.h"

/* ------------------------------------------------------------------ the append's validating walk (log_validator.validate_batches_py) */


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
            crc_setup(); /* the tables made with the GIL held */
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

/* ------------------------------------------------------------------ the cleaner's key scan (compaction_rules.scan_records) */

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
    {"validate_batches", (PyCFunction)(void (*)(void))sp_validate_batches, METH_FASTCALL,
     "log_validator.validate_batches_py"},
    {"index_batches", (PyCFunction)(void (*)(void))sp_index_batches, METH_FASTCALL,
     "segment.LogSegment.append's index loop"},
    {"scan_records", (PyCFunction)(void (*)(void))sp_scan_records, METH_FASTCALL, "compaction_rules.scan_records"},
    {"map_keys", (PyCFunction)(void (*)(void))sp_map_keys, METH_FASTCALL, "compaction_rules.map_keys"},
    {"max_timestamp_delta", (PyCFunction)(void (*)(void))sp_max_timestamp_delta, METH_FASTCALL,
     "compaction_rules.max_timestamp_delta"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "pylog's compiled log scans (see pylog.storage.fastpath).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
