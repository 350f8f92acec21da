/* Kafka's varints (zigzag over unsigned base-128), shared by the extension's C files. */
#ifndef PYLOG_SPEEDUPS_VARINT_H
#define PYLOG_SPEEDUPS_VARINT_H

#include <stdint.h>

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

#endif
