/* Number cells of a CSV column converted straight from the file's bytes, for cells.py: each cell is a
 * [start, end) byte range of the file (csv_fast found them). Only the plain shapes torch_npu writes are
 * converted here; every other cell is marked ODD and cells.py gives its text to csv_io's scalar rule,
 * so each cell gets exactly that rule's answer (tests/ingest/test_csv_cells.py holds the two together).
 *
 * A cell is stripped of spaces and TABs (the trailing TAB of torch_npu's timestamps). Then:
 *   NONE  when it is one of csv_io._MISSING's texts ('' 'N/A' 'NA' 'n/a' 'None' 'null' '-' 'nan' 'NaN'),
 *         or (floats) a number whose value is not finite (1e400);
 *   KNOWN when it is a plain decimal: us_to_ns: [+-] digits [. digits] (some digit; at most 18 before the
 *         point; the 4th decimal rounds half up, the rest are dropped; |ns| < 2**62); floats: the same
 *         with an optional exponent, read exactly (exact_float) or by Python's own float parser
 *         (PyOS_string_to_double);
 *   ODD   otherwise (quotes, other whitespace, exponents in µs, inf, underscores, out of range ...).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { ODD = 0, KNOWN = 1, NONE = 2 };
#define LIMIT (((int64_t)1) << 62)
#define MAX_FLOAT_TEXT 63

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The cell without its spaces and TABs around it. */
static void strip(const unsigned char **s, const unsigned char **e) {
    while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

static int is_missing(const unsigned char *s, Py_ssize_t n) {
    static const char *const texts[] = {"N/A", "NA", "n/a", "None", "null", "-", "nan", "NaN"};
    if (n == 0) return 1;
    if (s[0] != 'N' && s[0] != 'n' && s[0] != '-') return 0; /* the common case: a number */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if ((Py_ssize_t)strlen(texts[i]) == n && memcmp(s, texts[i], (size_t)n) == 0) return 1;
    return 0;
}

static int us_cell(const unsigned char *s, const unsigned char *e, int64_t *out) {
    strip(&s, &e);
    if (is_missing(s, e - s)) return NONE;
    int negative = 0;
    if (s < e && (*s == '+' || *s == '-')) negative = *s++ == '-';
    int64_t whole = 0;
    int whole_digits = 0, frac_digits = 0, frac[4] = {0, 0, 0, 0};
    for (; s < e && is_digit(*s); s++, whole_digits++) {
        if (whole_digits == 18) return ODD; /* past int64 at * 1000: the scalar rule decides */
        whole = whole * 10 + (*s - '0');
    }
    if (s < e && *s == '.') {
        for (s++; s < e && is_digit(*s); s++, frac_digits++)
            if (frac_digits < 4) frac[frac_digits] = *s - '0';
    }
    if (s != e || whole_digits + frac_digits == 0) return ODD;
    if (whole >= LIMIT / 1000) return ODD; /* near or past the range: the scalar rule decides */
    int64_t ns = whole * 1000 + frac[0] * 100 + frac[1] * 10 + frac[2] + (frac[3] >= 5);
    *out = negative ? -ns : ns;
    return KNOWN;
}

/* Clinger's fast path, for a cell of plain float syntax: when its digits make an integer m <= 2**53 and
 * its decimal exponent k lies in [-22, 22], m and 10**|k| are exact doubles, and the one multiplication
 * or division rounds correctly, so the result is the float Python's parser gives. 0 when not so. */
static int exact_float(const unsigned char *s, const unsigned char *e, double *out) {
    static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int negative = 0, digits = 0, k = 0;
    uint64_t m = 0;
    if (*s == '+' || *s == '-') negative = *s++ == '-';
    for (; s < e && is_digit(*s); s++, digits++) m = m * 10 + (uint64_t)(*s - '0');
    if (s < e && *s == '.')
        for (s++; s < e && is_digit(*s); s++, digits++, k--) m = m * 10 + (uint64_t)(*s - '0');
    if (digits > 19) return 0; /* m may have wrapped */
    if (s < e) { /* the exponent: e or E, a sign, digits (float_cell checked the syntax) */
        int minus = 0, x = 0, xdigits = 0;
        s++;
        if (*s == '+' || *s == '-') minus = *s++ == '-';
        for (; s < e; s++, xdigits++) x = x * 10 + (*s - '0');
        if (xdigits > 4) return 0;
        k += minus ? -x : x;
    }
    if (m > ((uint64_t)1 << 53) || k < -22 || k > 22) return 0;
    double f = k < 0 ? (double)m / POW10[-k] : (double)m * POW10[k];
    *out = negative ? -f : f;
    return 1;
}

static int float_cell(const unsigned char *s, const unsigned char *e, double *out) {
    strip(&s, &e);
    Py_ssize_t n = e - s;
    if (is_missing(s, n)) return NONE;
    if (n > MAX_FLOAT_TEXT) return ODD;
    const unsigned char *p = s;
    int mantissa = 0;
    if (p < e && (*p == '+' || *p == '-')) p++;
    for (; p < e && is_digit(*p); p++) mantissa++;
    if (p < e && *p == '.')
        for (p++; p < e && is_digit(*p); p++) mantissa++;
    if (!mantissa) return ODD;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        int exponent = 0;
        for (; p < e && is_digit(*p); p++) exponent++;
        if (!exponent) return ODD;
    }
    if (p != e) return ODD;
    if (exact_float(s, e, out)) return KNOWN;
    char text[MAX_FLOAT_TEXT + 1];
    memcpy(text, s, (size_t)n);
    text[n] = '\0';
    char *stop = NULL;
    double f = PyOS_string_to_double(text, &stop, NULL); /* no exception: overflow gives +-inf */
    if (f == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return ODD;
    }
    if (stop != text + n) return ODD;
    if (!isfinite(f)) return NONE;
    *out = f;
    return KNOWN;
}

/* (buf, starts, ends, values, status): the buffers' sizes checked against each other and every range
 * against buf, before any cell is read. */
static PyObject *convert(PyObject *args, int floats) {
    Py_buffer buf, starts, ends, values, status;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &buf, &starts, &ends, &values, &status)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int64_t);
    if (starts.len != n * (Py_ssize_t)sizeof(int64_t) || ends.len != starts.len || values.len != n * 8 ||
        status.len != n) {
        PyErr_SetString(PyExc_ValueError, "cells: starts, ends (int64), values (8 bytes) and status (uint8) "
                                          "must hold one item per cell");
        goto done;
    }
    const int64_t *lo = starts.buf, *hi = ends.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (lo[k] < 0 || lo[k] > hi[k] || hi[k] > buf.len) {
            PyErr_Format(PyExc_ValueError, "cells: cell %zd's range [%lld, %lld) is not inside the %zd bytes", k,
                         (long long)lo[k], (long long)hi[k], buf.len);
            goto done;
        }
    }
    const unsigned char *text = buf.buf;
    unsigned char *st = status.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (floats) {
            double f = 0.0;
            st[k] = (unsigned char)float_cell(text + lo[k], text + hi[k], &f);
            ((double *)values.buf)[k] = f;
        } else {
            int64_t ns = 0;
            st[k] = (unsigned char)us_cell(text + lo[k], text + hi[k], &ns);
            ((int64_t *)values.buf)[k] = ns;
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&values);
    PyBuffer_Release(&status);
    return result;
}

static PyObject *us_to_ns(PyObject *self, PyObject *args) { return convert(args, 0); }
static PyObject *floats(PyObject *self, PyObject *args) { return convert(args, 1); }

static PyMethodDef METHODS[] = {
    {"us_to_ns", us_to_ns, METH_VARARGS, "us_to_ns(buf, starts, ends, values int64, status uint8): µs cells -> ns"},
    {"floats", floats, METH_VARARGS, "floats(buf, starts, ends, values float64, status uint8): cells -> floats"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_ascend_cells",
                                    "Number cells of a CSV converted from the file's bytes (cells.py).", -1, METHODS};

PyMODINIT_FUNC PyInit__ascend_cells(void) { return PyModule_Create(&MODULE); }
