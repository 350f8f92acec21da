/* pylog's optional compiled fast path: `pylog produce --format json` lines framed in C.
 *
 * json_key_values takes the common shape of a JSON line, {"key": "...", "value": "..."}
 * (either field may be missing or null), and cuts the strings out of each line
 * without building Python objects for the JSON; any line of another shape (other
 * fields, escapes, non-ASCII text, numbers, blank lines, damage) makes it answer
 * None, and the caller takes the pure-Python path, which is the reference
 * (pylog.commands.produce_input._json_fast; tests/test_fastpath_json.py).
 * Part of the pylog.commands._speedups module (see _speedups.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static inline const char *
js_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* a string of printable ASCII without escapes after the opening quote at p: its end (the
 * closing quote), or NULL when it is not one */
static inline const char *
js_plain_string(const char *p, const char *end)
{
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c == '\\' || c < 0x20 || c >= 0x80)
            return NULL;
    }
    return NULL;
}

/* one line: 1 when it has the common shape (slices in ks/kl, vs/vl; length -1 for a
 * missing or null field), 0 when not */
static int
js_line(const char *p, const char *end, const char **ks, Py_ssize_t *kl, const char **vs, Py_ssize_t *vl)
{
    *kl = *vl = -1;
    int seen_key = 0, seen_value = 0;
    p = js_ws(p, end);
    if (p == end || *p++ != '{')
        return 0;
    p = js_ws(p, end);
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (p == end || *p++ != '"')
                return 0;
            const char *name = p, *q = js_plain_string(p, end);
            if (q == NULL)
                return 0;
            int is_key;
            if (q - name == 3 && memcmp(name, "key", 3) == 0)
                is_key = 1;
            else if (q - name == 5 && memcmp(name, "value", 5) == 0)
                is_key = 0;
            else
                return 0;
            if (is_key ? seen_key++ : seen_value++)
                return 0; /* a repeated field: json keeps the last, leave that to it */
            p = js_ws(q + 1, end);
            if (p == end || *p++ != ':')
                return 0;
            p = js_ws(p, end);
            const char *s = NULL;
            Py_ssize_t n = -1;
            if (p < end && *p == '"') {
                s = p + 1;
                q = js_plain_string(s, end);
                if (q == NULL)
                    return 0;
                n = q - s;
                p = q + 1;
            } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
                p += 4;
            } else {
                return 0;
            }
            if (is_key) {
                *ks = s;
                *kl = n;
            } else {
                *vs = s;
                *vl = n;
            }
            p = js_ws(p, end);
            if (p < end && *p == ',') {
                p = js_ws(p + 1, end);
                continue;
            }
            if (p < end && *p == '}') {
                p++;
                break;
            }
            return 0;
        }
    }
    return js_ws(p, end) == end;
}

static int
js_set(PyObject *list, Py_ssize_t i, const char *s, Py_ssize_t n)
{
    PyObject *o;
    if (n < 0) {
        o = Py_None;
        Py_INCREF(o);
    } else if ((o = PyBytes_FromStringAndSize(s, n)) == NULL) {
        return -1;
    }
    PyList_SET_ITEM(list, i, o);
    return 0;
}

/* frame line [s, e) into slot i of keys and values: 1 done, 0 not the common shape, -1 an error
 * with keys[i] unset, -2 an error with keys[i] set and values[i] unset */
static int
js_frame(PyObject *keys, PyObject *values, Py_ssize_t i, const char *s, const char *e, Py_ssize_t *with_key)
{
    const char *ks = NULL, *vs = NULL;
    Py_ssize_t kl, vl;
    if (!js_line(s, e, &ks, &kl, &vs, &vl))
        return 0;
    if (js_set(keys, i, ks, kl) < 0)
        return -1;
    if (js_set(values, i, vs, vl) < 0)
        return -2;
    *with_key += kl >= 0;
    return 1;
}

/* the framers' answer to js_frame's r < 1: None for 0; for -2, the lists sized to their set slots
 * (filled becomes n, so js_release leaves the sizes alone) */
static PyObject *
js_stop(int r, PyObject *keys, PyObject *values, Py_ssize_t *filled, Py_ssize_t n)
{
    if (r == 0) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    if (r == -2) {
        Py_SET_SIZE(keys, *filled + 1);
        Py_SET_SIZE(values, *filled);
        *filled = n;
    }
    return NULL;
}

/* the two framers' exit: unfilled list slots are NULL, so shrink the lists to what was filled
 * before releasing them, then answer `result` */
static PyObject *
js_release(PyObject *keys, PyObject *values, Py_ssize_t filled, Py_ssize_t n, PyObject *result)
{
    if (filled < n) {
        if (keys)
            Py_SET_SIZE(keys, filled);
        if (values)
            Py_SET_SIZE(values, filled);
    }
    Py_XDECREF(keys);
    Py_XDECREF(values);
    return result;
}

/* json_key_values(lines) -> (keys, values), keys None when no line has a key; or None */
static PyObject *
sp_json_key_values(PyObject *self, PyObject *lines)
{
    if (!PyList_CheckExact(lines)) {
        PyErr_SetString(PyExc_TypeError, "json_key_values takes a list of bytes");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(lines);
    if (n == 0)
        Py_RETURN_NONE;
    PyObject *keys = PyList_New(n), *values = PyList_New(n), *result = NULL;
    Py_ssize_t filled = 0, with_key = 0;
    if (keys == NULL || values == NULL)
        goto done;
    for (; filled < n; filled++) {
        PyObject *line = PyList_GET_ITEM(lines, filled);
        if (!PyBytes_Check(line)) {
            PyErr_Format(PyExc_TypeError, "a line must be bytes, not %.100s", Py_TYPE(line)->tp_name);
            goto done;
        }
        const char *d = PyBytes_AS_STRING(line);
        int r = js_frame(keys, values, filled, d, d + PyBytes_GET_SIZE(line), &with_key);
        if (r < 1) {
            result = js_stop(r, keys, values, &filled, n);
            goto done;
        }
    }
    result = PyTuple_Pack(2, with_key ? keys : Py_None, values);
done:
    return js_release(keys, values, filled, n, result);
}

/* json_block_key_values(data, end) -> json_key_values(data[:end].split(b"\n")), without a
 * bytes object per line: the lines are framed where they lie in the read block */
static PyObject *
sp_json_block_key_values(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "y*n:json_block_key_values", &view, &end))
        return NULL;
    PyObject *keys = NULL, *values = NULL, *result = NULL;
    Py_ssize_t n = 0, filled = 0, with_key = 0;
    if (end < 0 || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "json_block_key_values: end out of range");
        goto done;
    }
    const char *d = (const char *)view.buf, *stop = d + end, *p;
    for (p = d, n = 1; (p = memchr(p, '\n', stop - p)) != NULL; p++)
        n++;
    if ((keys = PyList_New(n)) == NULL || (values = PyList_New(n)) == NULL)
        goto done;
    for (p = d; filled < n; filled++) {
        const char *nl = memchr(p, '\n', stop - p), *line_end = nl ? nl : stop;
        int r = js_frame(keys, values, filled, p, line_end, &with_key);
        if (r < 1) {
            result = js_stop(r, keys, values, &filled, n);
            goto done;
        }
        p = line_end + 1;
    }
    result = PyTuple_Pack(2, with_key ? keys : Py_None, values);
done:
    PyBuffer_Release(&view);
    return js_release(keys, values, filled, n, result);
}

PyMethodDef pylog_json_methods[] = {
    {"json_key_values", (PyCFunction)sp_json_key_values, METH_O, "produce_input._json_fast (the common shape)"},
    {"json_block_key_values", (PyCFunction)sp_json_block_key_values, METH_VARARGS,
     "json_key_values of data[:end].split(b'\\n'), framed in place"},
    {NULL, NULL, 0, NULL},
};
