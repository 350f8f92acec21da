/* CRC-32C, the record batch checksum: the records extension's crc32c and the storage extension's
 * validating append both checksum with it. */
#ifndef PYLOG_SPEEDUPS_CRC32C_H
#define PYLOG_SPEEDUPS_CRC32C_H

#include "_speedups_common.h"

/* ------------------------------------------------------------------ CRC-32C (the record batch checksum) */

/* crc32c(data, value=0) -> int, as the crc32c package's crc32c (its reference here): the
 * SSE4.2 instruction where the CPU has it, else slicing by 8 over tables made at import */
static SP_SHARED uint32_t crc_table[8][256];

static SP_SHARED void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static SP_SHARED uint32_t
crc_soft(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
              crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
              crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define CRC_HW 1
/* The crc32 instruction has a latency of 3 cycles and a throughput of 1: one chain reaches a third of
 * what the core can do. Long buffers are cut in three lanes of CRC_LONG (then CRC_SHORT) bytes, each
 * lane its own chain, and the lanes' CRCs joined by shifting the first ones over the later lanes'
 * lengths (multiplying by x^(8 * lane) in GF(2), tables made at import): Mark Adler's crc32c.c method,
 * the one Linux and the crc32c package use. */
#define CRC_LONG 8192
#define CRC_SHORT 256
static SP_SHARED uint32_t crc_long[4][256], crc_short[4][256];

static SP_SHARED uint32_t
gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static SP_SHARED void
gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = gf2_times(mat, mat[n]);
}

/* the tables that apply `len` zero bytes (a power of two) to a CRC register, a byte of it at a time */
static SP_SHARED void
crc_zeros(uint32_t zeros[4][256], size_t len)
{
    uint32_t odd[32], even[32], row = 1;
    odd[0] = 0x82F63B78u; /* one zero bit */
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); /* two zero bits */
    gf2_square(odd, even); /* four */
    const uint32_t *op;
    for (;;) {
        gf2_square(even, odd); /* a byte, then 4, 16... bytes */
        len >>= 1;
        if (len == 0) {
            op = even;
            break;
        }
        gf2_square(odd, even);
        len >>= 1;
        if (len == 0) {
            op = odd;
            break;
        }
    }
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(op, n);
        zeros[1][n] = gf2_times(op, n << 8);
        zeros[2][n] = gf2_times(op, n << 16);
        zeros[3][n] = gf2_times(op, n << 24);
    }
}

static inline uint32_t
crc_shift(uint32_t zeros[4][256], uint32_t crc)
{
    return zeros[0][crc & 0xFF] ^ zeros[1][(crc >> 8) & 0xFF] ^ zeros[2][(crc >> 16) & 0xFF] ^ zeros[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    uint64_t c0 = crc, c1, c2, w0, w1, w2;
    for (Py_ssize_t lane = CRC_LONG; lane >= CRC_SHORT; lane = lane == CRC_LONG ? CRC_SHORT : 0) {
        uint32_t (*zeros)[256] = lane == CRC_LONG ? crc_long : crc_short;
        while (n >= 3 * lane) {
            const unsigned char *end = p + lane;
            c1 = c2 = 0;
            do {
                memcpy(&w0, p, 8);
                memcpy(&w1, p + lane, 8);
                memcpy(&w2, p + 2 * lane, 8);
                c0 = __builtin_ia32_crc32di(c0, w0);
                c1 = __builtin_ia32_crc32di(c1, w1);
                c2 = __builtin_ia32_crc32di(c2, w2);
                p += 8;
            } while (p < end);
            c0 = crc_shift(zeros, (uint32_t)c0) ^ (uint32_t)c1;
            c0 = crc_shift(zeros, (uint32_t)c0) ^ (uint32_t)c2;
            p += 2 * lane;
            n -= 3 * lane;
        }
    }
    while (n >= 8) {
        memcpy(&w0, p, 8);
        c0 = __builtin_ia32_crc32di(c0, w0);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c0;
    while (n-- > 0)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

static SP_SHARED int crc_has_hw = -1;

static SP_SHARED void
crc_setup(void)
{
    if (crc_has_hw < 0) {
        crc_init();
#ifdef CRC_HW
        int hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        if (hw) {
            crc_zeros(crc_long, CRC_LONG);
            crc_zeros(crc_short, CRC_SHORT);
        }
        crc_has_hw = hw; /* set last: the tables are whole before anyone reads it */
#else
        crc_has_hw = 0;
#endif
    }
}

/* The CRC-32C register after `n` bytes at p, from register `crc` (the caller conditions it: ~value in,
 * ~result out); crc32c's and the append's validating walk's. Called with the GIL held the
 * first time (the tables are made then). */
static inline uint32_t
pylog_crc32c_update(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    crc_setup();
#ifdef CRC_HW
    if (crc_has_hw)
        return crc_hw(crc, p, n);
#endif
    return crc_soft(crc, p, n);
}


#endif
