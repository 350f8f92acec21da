/* Kafka's varints (zigzag over unsigned base-128), shared by the extensions' C files (records, client, storage: core/, below them all). */
#ifndef PYLOG_SPEEDUPS_VARINT_H
#define PYLOG_SPEEDUPS_VARINT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline int
put_uvarint(unsigned char *out, uint64_t u)
{
    int n = 0;
    while (u >= 0x80) {
        out[n++] = (unsigned char)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    out[n++] = (unsigned char)u;
    return n;
}

static inline int
put_varint(unsigned char *out, int64_t v)
{
    return put_uvarint(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline int
size_varint(int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

/* a record's key or value: its varint length (-1 for null) and its bytes */
static inline Py_ssize_t
part_size(Py_ssize_t n)
{
    return n < 0 ? 1 : size_varint(n) + n;
}

static inline unsigned char *
put_part(unsigned char *p, const char *data, Py_ssize_t n)
{
    p += put_varint(p, n);
    if (n > 0) {
        memcpy(p, data, n);
        p += n;
    }
    return p;
}

#endif
