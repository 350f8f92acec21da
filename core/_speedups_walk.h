/* The validating walk over a batch's records (framing.check_records), shared by the records
 * extension (check_records) and the storage extension (validate_batches, the append's walk). */
#ifndef PYLOG_SPEEDUPS_WALK_H
#define PYLOG_SPEEDUPS_WALK_H

#include "_speedups_common.h"

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
static SP_SHARED int
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
 * and the first keyless record's index (-1: none) in *null_key, or -1 with InvalidRecordFraming raised.
 * Out of line: inlined into check_records, its one caller in the records extension, gcc's code for
 * the loop ran 1.7x slower (python -m bench fastpath, check_records rows). */
static SP_SHARED SP_NOINLINE int
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

#endif
