/* pylog's optional compiled fast path: the producer's run encoder and CRC-32C.
 *
 * encode_run writes many v2 records with one timestamp straight into a batch's
 * bytearray; its pure-Python twin, the reference, is pylog.core.client.runs.
 * encode_run_py, and tests/test_fastpath_runs.py requires the same bytes and
 * errors from both. crc32c is the crc32c package's function (the reference), here
 * so that a pylog process need not import that package (its import reads its
 * distribution's metadata: a third of a short command's start-up). Part of the pylog.core._speedups module (see _speedups.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_speedups_records.h"


/* the inputs of one run: lists, or NULL where the argument was None */
typedef struct {
    PyObject *values, *keys, *headers, *vlens, *klens;
    PyObject *shared; /* headers shared by every record (bytes), or NULL */
} run_args;

/* item i of a list of bytes, checked */
static inline int
run_bytes(PyObject *list, Py_ssize_t i, const char *what, const char **data, Py_ssize_t *size)
{
    PyObject *o = PyList_GET_ITEM(list, i);
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: %s must be bytes, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *data = PyBytes_AS_STRING(o);
    *size = PyBytes_GET_SIZE(o);
    return 0;
}

/* the length written for item i: lens[i] (-1 for a null, whose item must be b""), else its size */
static inline int
run_length(PyObject *lens, Py_ssize_t i, Py_ssize_t size, const char *what, Py_ssize_t *out)
{
    if (lens == NULL) {
        *out = size;
        return 0;
    }
    PyObject *o = PyList_GET_ITEM(lens, i);
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: a %s length must be an int", what);
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(o);
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (n == -1 ? size != 0 : n != size) {
        PyErr_Format(PyExc_ValueError, "encode_run: the %s length %zd does not match the %s (%zd bytes)", what, n,
                     what, size);
        return -1;
    }
    *out = n;
    return 0;
}

/* record i's parts: key and value (data, written length), headers */
static int
run_record_at(const void *src, Py_ssize_t i, run_record *r)
{
    const run_args *a = src;
    Py_ssize_t size;
    if (run_bytes(a->values, i, "a value", &r->v, &size) < 0 || run_length(a->vlens, i, size, "value", &r->vl) < 0)
        return -1;
    if (a->keys == NULL) {
        r->k = NULL;
        r->kl = -1;
    } else if (run_bytes(a->keys, i, "a key", &r->k, &size) < 0 || run_length(a->klens, i, size, "key", &r->kl) < 0) {
        return -1;
    }
    if (a->shared != NULL) {
        r->h = PyBytes_AS_STRING(a->shared);
        r->hl = PyBytes_GET_SIZE(a->shared);
        return 0;
    }
    return run_bytes(a->headers, i, "encoded headers", &r->h, &r->hl);
}

/* a list argument, or NULL for None; else -1 with a TypeError */
static int
run_list(PyObject *o, const char *name, Py_ssize_t need, PyObject **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyList_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "encode_run: %s must be a list or None", name);
        return -1;
    }
    if (PyList_GET_SIZE(o) < need) {
        PyErr_Format(PyExc_ValueError, "encode_run: %s is shorter than the run", name);
        return -1;
    }
    *out = o;
    return 0;
}

/* encode_run(buf, od, tsd, room, values, start, stop, keys, headers, value_lens, key_lens) -> (taken, full):
 * see pylog.core.client.runs.encode_run_py. Takes every record that fits (the reference may take
 * fewer per call); two passes: the sizes (nothing written on an error), then the bytes. */
static PyObject *
sp_encode_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_run(buf, od, tsd, room, values, start, stop, keys, headers, value_lens, key_lens)");
        return NULL;
    }
    PyObject *buf = args[0];
    if (!PyByteArray_CheckExact(buf)) {
        PyErr_SetString(PyExc_TypeError, "encode_run: buf must be a bytearray");
        return NULL;
    }
    Py_ssize_t od = PyLong_AsSsize_t(args[1]), room = PyLong_AsSsize_t(args[3]);
    long long tsd = PyLong_AsLongLong(args[2]);
    Py_ssize_t start = PyLong_AsSsize_t(args[5]), stop = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred())
        return NULL;
    if (od < 0 || start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "encode_run: od, start and stop must be 0 <= start <= stop and od >= 0");
        return NULL;
    }
    run_args a = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (run_list(args[4], "values", stop, &a.values) < 0 || run_list(args[7], "keys", stop, &a.keys) < 0 ||
        run_list(args[9], "value_lens", stop, &a.vlens) < 0 || run_list(args[10], "key_lens", stop, &a.klens) < 0)
        return NULL;
    if (a.values == NULL) {
        PyErr_SetString(PyExc_TypeError, "encode_run: values must be a list");
        return NULL;
    }
    if (PyBytes_Check(args[8])) {
        a.shared = args[8];
    } else if (run_list(args[8], "headers", stop, &a.headers) < 0) {
        return NULL;
    } else if (a.headers == NULL) {
        PyErr_SetString(PyExc_TypeError, "encode_run: headers must be bytes or a list of bytes");
        return NULL;
    }
    return append_records(buf, od, tsd, room, start, stop, run_record_at, &a);
}


/* ------------------------------------------------------------------ column lengths (runs.column_lengths_py) */

/* column_lengths(items) -> (lengths with -1 for None, how many None, the longest or -1), or None
 * when items is not a list of bytes and None (the caller converts it first) */
static PyObject *
sp_column_lengths(PyObject *self, PyObject *items)
{
    if (!PyList_CheckExact(items))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(items), nulls = 0, longest = -1;
    PyObject *lens = PyList_New(n);
    if (lens == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(items, i);
        Py_ssize_t len;
        if (o == Py_None) {
            len = -1;
            nulls++;
        } else if (PyBytes_CheckExact(o)) {
            len = PyBytes_GET_SIZE(o);
        } else {
            Py_DECREF(lens); /* list_dealloc skips the slots not filled yet */
            Py_RETURN_NONE;
        }
        if (len > longest)
            longest = len;
        PyObject *v = PyLong_FromSsize_t(len);
        if (v == NULL) {
            Py_DECREF(lens);
            return NULL;
        }
        PyList_SET_ITEM(lens, i, v);
    }
    return Py_BuildValue("(Nnn)", lens, nulls, longest);
}

/* ------------------------------------------------------------------ CRC-32C (the record batch checksum) */

/* crc32c(data, value=0) -> int, as the crc32c package's crc32c (its reference here): the
 * SSE4.2 instruction where the CPU has it, else slicing by 8 over tables made at import */
static uint32_t crc_table[8][256];

static void
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

static uint32_t
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
static uint32_t crc_long[4][256], crc_short[4][256];

static uint32_t
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

static void
gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = gf2_times(mat, mat[n]);
}

/* the tables that apply `len` zero bytes (a power of two) to a CRC register, a byte of it at a time */
static void
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

static int crc_has_hw = -1;

static void
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
 * ~result out); the other C files' entry (the append's validating walk). Called with the GIL held the
 * first time (the tables are made then). */
uint32_t
pylog_crc32c_update(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    crc_setup();
#ifdef CRC_HW
    if (crc_has_hw)
        return crc_hw(crc, p, n);
#endif
    return crc_soft(crc, p, n);
}

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

PyMethodDef pylog_run_methods[] = {
    {"encode_run", (PyCFunction)(void (*)(void))sp_encode_run, METH_FASTCALL, "runs.encode_run"},
    {"column_lengths", (PyCFunction)sp_column_lengths, METH_O, "runs.column_lengths_py"},
    {"crc32c", (PyCFunction)(void (*)(void))sp_crc32c, METH_FASTCALL, "crc32c.crc32c (the package)"},
    {NULL, NULL, 0, NULL},
};
