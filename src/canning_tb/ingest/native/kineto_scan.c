/* One piece of a Kineto trace's traceEvents array ("[" elements "]") scanned into flat columns in one
 * pass, for kineto/scan.py. It takes what schema.Ev / schema.Args take, only where the typed msgspec
 * decode would accept it as it is; for anything else (a syntax error, bytes that are no UTF-8, a field of
 * another type, a repeated or escaped key, a \u surrogate, an integer past int64, a float past the
 * lengths below, deep nesting, an element that is no object) scan() returns None and the reader decodes
 * the piece with msgspec as before, so every odd input keeps the answer of that decode.
 *
 * Rows are the complete ("X"), flow-end ("f") and instant ("i" / "I": memory records, marks) events: the raw texts of cat, name, text pids / tids and
 * the str args as ids into one table of distinct JSON texts (decoded once each, in Python), the raw args
 * (schema's msgspec.Raw fields, and grid) as ids into a second table of raw texts kept as bytes; ts and
 * dur as the float64 the typed decode gives; the int and float args; each row's byte span (a few rows,
 * collectives, are decoded again from it). The metadata events ("M", a few per trace) come back as byte
 * spans only, for msgspec; the rest ("s" and other phases) are skipped, as the reader skips them.
 */
#include "json_lex.h"

#define INT_ABSENT INT64_MIN

/* The fields of schema.Ev and schema.Args, by type (the order is the column order of scan.py; a test
 * holds them equal to schema.py). */
static const Word TOP[] = {W("ph"), W("cat"), W("name"), W("pid"), W("tid"), W("ts"), W("dur"), W("args")};
enum { K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS, NTOP };
DEFINE_TAKE_TOP(take_top, TOP, NTOP, K_ARGS)
static const Word AINT[] = {W("device"), W("stream"), W("correlation"), W("External id"), W("external id"),
                            W("bytes"), W("In msg nelems"), W("Out msg nelems"), W("Device Type"), W("Device Id"),
                            W("Addr"), W("Bytes"), W("Total Allocated"), W("Total Reserved")};
static const Word AFLOAT[] = {W("flops"), W("blocks per SM"), W("est. achieved occupancy %"),
                              W("theoretical occupancy %"), W("registers per thread"), W("shared memory")};
static const Word ATEXT[] = {W("Call stack"), W("dtype"), W("Process Group Name"), W("Process Group Description"),
                             W("name"), W("labels")}; /* str | None */
static const Word ARAW[] = {W("Input Dims"), W("Input dims"), W("Input type"), W("Concrete Inputs"),
                            W("grid")}; /* msgspec.Raw; grid (list[int] | None) is checked in Python */
#define COUNT(a) ((int)(sizeof(a) / sizeof(a[0])))
enum { NI = COUNT(AINT), NF = COUNT(AFLOAT), NT = COUNT(ATEXT), NR = COUNT(ARAW) };
#define GRID (NR - 1)

/* ---- the output columns ---- */
typedef struct {
    Py_ssize_t n, cap;
    unsigned char *ph;
    int32_t *cat, *name;       /* ids into strings; name -1: None */
    int64_t *pid, *tid;        /* the int, where pid_ref / tid_ref is -1 */
    int32_t *pid_ref, *tid_ref; /* ids into strings of text pids / tids */
    double *ts, *dur;          /* NaN: absent */
    int64_t *ints;             /* [n][NI], INT_ABSENT: absent */
    double *floats;            /* [n][NF], NaN: absent */
    int32_t *texts;            /* [n][NT], -1: absent or null */
    int32_t *raws;             /* [n][NR], ids into raws, -1: absent */
    int64_t *span;             /* [n][2] */
} Cols;

#define COLS_FIELDS(X) X(ph, 1) X(cat, 1) X(name, 1) X(pid, 1) X(tid, 1) X(pid_ref, 1) X(tid_ref, 1) X(ts, 1) \
    X(dur, 1) X(ints, NI) X(floats, NF) X(texts, NT) X(raws, NR) X(span, 2)

DEFINE_COLS_MEMORY

/* the spans of the other events read (instants, metadata) */
typedef struct {
    Py_ssize_t n, cap;
    int64_t *span; /* [n][2] */
} Spans;

static int spans_add(Spans *s, int64_t lo, int64_t hi) {
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap ? s->cap * 2 : 256;
        void *q = realloc(s->span, (size_t)cap * 2 * sizeof(int64_t));
        if (!q) {
            PyErr_NoMemory();
            return 0;
        }
        s->span = q, s->cap = cap;
    }
    s->span[2 * s->n] = lo, s->span[2 * s->n + 1] = hi;
    s->n++;
    return 1;
}

/* ---- one element's args (the element itself: json_lex.h's Element) ---- */
typedef struct {
    Intern *strings, *raws;
    Cols *o;
    Py_ssize_t row;
    uint32_t seen;
} ArgCtx;

/* a float field: an int of magnitude at most 2^53 (exact as a double) or a float, finite */
static int float_of(const Tok *v, double *out) {
    int64_t i, exact = (int64_t)1 << 53;
    if (v->kind == 'i') { /* as an int made float: -0 is 0.0 */
        if (!parse_int(v->s, v->e, &i) || i > exact || i < -exact) return 0;
        *out = (double)i;
        return 1;
    }
    if (v->kind != 'f' || v->e - v->s >= 60) return 0;
    *out = parse_float(v->s, v->e);
    return isfinite(*out);
}

static int find(const Word *words, int n, const Tok *k) {
    for (int i = 0; i < n; i++)
        if (key_is(k, &words[i])) return i;
    return -1;
}

/* each field may come once (bit `bit` of a->seen) */
static int once(ArgCtx *a, int bit) {
    if (a->seen & (1u << bit)) return 0;
    a->seen |= 1u << bit;
    return 1;
}

static int apply_arg(ArgCtx *a, const Tok *k, const Tok *v) {
    Py_ssize_t r = a->row;
    int i;
    if ((i = find(AINT, NI, k)) >= 0)
        /* INT64_MIN itself is the absent mark: declined, so that it is never read as absent */
        return once(a, i) && v->kind == 'i' && parse_int(v->s, v->e, &a->o->ints[r * NI + i]) &&
               a->o->ints[r * NI + i] != INT_ABSENT;
    if ((i = find(AFLOAT, NF, k)) >= 0)
        return once(a, NI + i) && float_of(v, &a->o->floats[r * NF + i]);
    if ((i = find(ATEXT, NT, k)) >= 0) {
        if (!once(a, NI + NF + i)) return 0;
        if (v->kind == 'n') return 1;
        if (v->kind != 's') return 0;
        return (a->o->texts[r * NT + i] = intern(a->strings, v->s, v->e - v->s)) >= 0;
    }
    if ((i = find(ARAW, NR, k)) >= 0) {
        if (!once(a, NI + NF + NT + i)) return 0;
        if (i == GRID && v->kind != 'a' && v->kind != 'n') return 0;
        return (a->o->raws[r * NR + i] = intern(a->raws, v->s, v->e - v->s)) >= 0;
    }
    return 1; /* a field schema.Args does not declare: skipped, as the typed decode skips it */
}

static int take_arg(void *ctx, const Tok *k, Cur *c) {
    Tok v;
    return token(c, &v) && apply_arg(ctx, k, &v);
}

static int read_args(ArgCtx *a, const Element *el) {
    if (el->args.overflow) { /* read them all again from the text */
        Cur c = {el->top[K_ARGS].s, el->top[K_ARGS].e, 0};
        return members(&c, take_arg, a) && !c.fail;
    }
    for (int i = 0; i < el->args.n; i++)
        if (!apply_arg(a, &el->args.key[i], &el->args.val[i])) return 0;
    return 1;
}

static void defaults(Cols *o, Py_ssize_t r) {
    o->name[r] = -1, o->pid[r] = 0, o->tid[r] = 0, o->pid_ref[r] = -1, o->tid_ref[r] = -1;
    o->ts[r] = NAN, o->dur[r] = NAN;
    for (int i = 0; i < NI; i++) o->ints[r * NI + i] = INT_ABSENT;
    for (int i = 0; i < NF; i++) o->floats[r * NF + i] = NAN;
    for (int i = 0; i < NT; i++) o->texts[r * NT + i] = -1;
    for (int i = 0; i < NR; i++) o->raws[r * NR + i] = -1;
}

/* pid / tid: int | str (absent: 0) */
static int id_field(Intern *strings, const Tok *t, int64_t *num, int32_t *ref) {
    if (!t->kind) return 1;
    if (t->kind == 'i') return parse_int(t->s, t->e, num);
    if (t->kind != 's') return 0;
    return (*ref = intern(strings, t->s, t->e - t->s)) >= 0;
}

/* ts / dur: float (absent: NaN) */
static int time_field(const Tok *t, double *out) {
    return !t->kind || float_of(t, out);
}

static int fill_row(Intern *strings, Intern *raws, Cols *o, Py_ssize_t r, Element *el, int ph) {
    Tok *t = el->top;
    o->ph[r] = (unsigned char)ph;
    defaults(o, r);
    if (t[K_CAT].kind) {
        if (t[K_CAT].kind != 's' || (o->cat[r] = intern(strings, t[K_CAT].s, t[K_CAT].e - t[K_CAT].s)) < 0) return 0;
    } else if ((o->cat[r] = intern(strings, (const unsigned char *)"\"\"", 2)) < 0) { /* absent: "" */
        return 0;
    }
    if (t[K_NAME].kind && t[K_NAME].kind != 'n') {
        if (t[K_NAME].kind != 's' || (o->name[r] = intern(strings, t[K_NAME].s, t[K_NAME].e - t[K_NAME].s)) < 0)
            return 0;
    }
    if (!id_field(strings, &t[K_PID], &o->pid[r], &o->pid_ref[r]) ||
        !id_field(strings, &t[K_TID], &o->tid[r], &o->tid_ref[r]) || !time_field(&t[K_TS], &o->ts[r]) ||
        !time_field(&t[K_DUR], &o->dur[r]))
        return 0;
    Tok *args = &t[K_ARGS];
    if (!args->kind || args->kind == 'n') return 1;
    if (args->kind != 'o') return 0;
    ArgCtx a = {strings, raws, o, r, 0};
    return read_args(&a, el);
}

/* the phase: 'X', 'f', 'i' or 'I' for a row, 'o' for an event read elsewhere, 0 skipped, -1 declined */
static int phase_of(const Tok *t) {
    if (!t->kind) return 0;                  /* absent: "" */
    if (t->kind != 's' || t->esc) return -1; /* no str, or an escape: the typed decode decides */
    if (t->e - t->s != 3) return 0;          /* "" or longer: no phase the reader takes */
    unsigned char ph = t->s[1];
    if (ph == 'X' || ph == 'f' || ph == 'i' || ph == 'I') return ph;
    return ph == 'M' ? 'o' : 0;
}

static PyObject *column(void *data, Py_ssize_t bytes) {
    return PyBytes_FromStringAndSize((const char *)data, bytes);
}

static PyObject *result(Cols *o, Spans *other, Intern *strings, Intern *raws) {
    Py_ssize_t n = o->n;
    return Py_BuildValue(
        "{s:n,s:O,s:O,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "n", n,
        "strings", strings->list, "raws", raws->list, "ph", column(o->ph, n), "cat", column(o->cat, n * 4),
        "name", column(o->name, n * 4), "pid", column(o->pid, n * 8), "tid", column(o->tid, n * 8),
        "pid_ref", column(o->pid_ref, n * 4), "tid_ref", column(o->tid_ref, n * 4), "ts", column(o->ts, n * 8),
        "dur", column(o->dur, n * 8), "ints", column(o->ints, n * NI * 8), "floats", column(o->floats, n * NF * 8),
        "texts", column(o->texts, n * NT * 4), "raws_of", column(o->raws, n * NR * 4), "span", column(o->span, n * 16),
        "other", column(other->span, other->n * 16));
}

typedef struct {
    const unsigned char *base;
    Intern *strings, *raws;
    Cols *o;
    Spans *other;
} Scan;

static int take_event(void *ctx, Element *el, const unsigned char *start, const unsigned char *end) {
    Scan *s = ctx;
    Cols *o = s->o;
    int ph = phase_of(&el->top[K_PH]);
    if (ph < 0) return 0;
    if (ph == 'o') return spans_add(s->other, start - s->base, end - s->base);
    if (!ph) return 1;
    if (o->n == o->cap && cols_grow(o) < 0) return 0;
    Py_ssize_t r = o->n;
    o->span[2 * r] = start - s->base;
    o->span[2 * r + 1] = end - s->base;
    if (!fill_row(s->strings, s->raws, o, r, el, ph)) return 0;
    o->n++;
    return 1;
}

static int scan_array(Cur *c, const unsigned char *base, Intern *strings, Intern *raws, Cols *o, Spans *other) {
    Scan s = {base, strings, raws, o, other};
    return each_element(c, take_top, NTOP, take_event, &s);
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Intern strings, raws;
    Cols o;
    Spans other = {0, 0, NULL};
    memset(&o, 0, sizeof o);
    PyObject *out = NULL;
    int ready = intern_init(&strings) == 0;
    ready = intern_init(&raws) == 0 && ready;
    if (!ready) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *base = view.buf;
    Cur c = {base, base + view.len, 0};
    if (scan_array(&c, base, &strings, &raws, &o, &other)) {
        out = result(&o, &other, &strings, &raws);
    } else if (!PyErr_Occurred()) {
        out = Py_None;
        Py_INCREF(out);
    }
done:
    intern_free(&strings);
    intern_free(&raws);
    cols_free(&o);
    free(other.span);
    PyBuffer_Release(&view);
    return out;
}

/* the field names by type, for the test that holds them equal to schema.py */
static PyObject *words(const Word *w, int n) {
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) PyList_SET_ITEM(out, i, PyUnicode_FromStringAndSize(w[i].w, w[i].n));
    return out;
}

static PyObject *fields(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{s:N,s:N,s:N,s:N,s:N}", "top", words(TOP, NTOP), "int", words(AINT, NI),
                         "float", words(AFLOAT, NF), "text", words(ATEXT, NT), "raw", words(ARAW, NR));
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_O, "Columns of one piece of a Kineto traceEvents array (a dict), or None: see _scan.c."},
    {"fields", fields, METH_NOARGS, "The top-level and args field names the scanner reads, by type."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_kineto_scan", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__kineto_scan(void) { return PyModule_Create(&MODULE); }
