/* v2 records appended to an open batch: the one encoder loop behind encode_run (lists of keys and
 * values) and encode_frame_run (lines framed in a read buffer), which differ only in where a record's
 * key, value and headers lie. */
#ifndef PYLOG_SPEEDUPS_RECORDS_H
#define PYLOG_SPEEDUPS_RECORDS_H

#include <Python.h>

#include "_speedups_varint.h"

#define RUN_VARINT_LIMIT 16384 /* a record body, and an offset delta, stay below this */

typedef struct {
    const char *k, *v, *h;
    Py_ssize_t kl, vl, hl;
} run_record;

/* record i of a source into *r; -1 with an exception set */
typedef int (*run_record_fn)(const void *src, Py_ssize_t i, run_record *r);

/* records [start, stop) of src appended to buf (a bytearray) with offset deltas from od, while they fit
 * in `room` bytes (the batch's first record always goes in) -> (records taken, batch full) */
static PyObject *
append_records(PyObject *buf, Py_ssize_t od, long long tsd, Py_ssize_t room, Py_ssize_t start, Py_ssize_t stop,
               run_record_fn record_at, const void *src)
{
    Py_ssize_t count = stop - start;
    if (count > RUN_VARINT_LIMIT - 1 - od)
        count = RUN_VARINT_LIMIT - 1 - od;
    Py_ssize_t fixed = 1 + size_varint(tsd); /* attributes, timestamp delta */
    Py_ssize_t total = 0, n = 0;
    int full = 0;
    run_record r;
    for (; n < count; n++) {
        if (record_at(src, start + n, &r) < 0)
            return NULL;
        Py_ssize_t body = fixed + size_varint(od + n) + part_size(r.kl) + part_size(r.vl) + r.hl;
        if (body >= RUN_VARINT_LIMIT) {
            PyErr_SetString(PyExc_ValueError, "append_run: a record of 16384 bytes or more");
            return NULL;
        }
        Py_ssize_t whole = size_varint(body) + body;
        if (total + whole > room && !(n == 0 && od == 0)) {
            full = 1;
            break;
        }
        total += whole;
    }
    if (n > 0) {
        Py_ssize_t at = PyByteArray_GET_SIZE(buf);
        if (PyByteArray_Resize(buf, at + total) < 0)
            return NULL;
        unsigned char *p = (unsigned char *)PyByteArray_AS_STRING(buf) + at;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (record_at(src, start + i, &r) < 0)
                return NULL; /* cannot happen: checked in the first pass */
            Py_ssize_t body = fixed + size_varint(od + i) + part_size(r.kl) + part_size(r.vl) + r.hl;
            p += put_varint(p, body);
            *p++ = 0;
            p += put_varint(p, tsd);
            p += put_varint(p, od + i);
            p = put_part(p, r.k, r.kl);
            p = put_part(p, r.v, r.vl);
            memcpy(p, r.h, r.hl);
            p += r.hl;
        }
    }
    return Py_BuildValue("(nO)", n, full ? Py_True : Py_False);
}

#endif
