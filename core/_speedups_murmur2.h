/* Kafka's murmur2 (the Java client's Utils.murmur2): the client extension's murmur2_many and frame_partitions. */
#ifndef PYLOG_SPEEDUPS_MURMUR2_H
#define PYLOG_SPEEDUPS_MURMUR2_H

#include <stdint.h>

static inline uint32_t
murmur2(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28c ^ (uint32_t)length;
    Py_ssize_t n4 = length & ~(Py_ssize_t)3;
    for (Py_ssize_t i = 0; i < n4; i += 4) {
        uint32_t k = (uint32_t)data[i] | ((uint32_t)data[i + 1] << 8) | ((uint32_t)data[i + 2] << 16) |
                     ((uint32_t)data[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)data[n4 + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)data[n4 + 1] << 8;
        /* fall through */
    case 1:
        h ^= data[n4];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

#endif
