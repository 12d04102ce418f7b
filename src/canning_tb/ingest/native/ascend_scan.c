/* One piece of trace_view.json's bare array ("[" elements "]") scanned into flat columns in one pass, for
 * trace_scan.py. Only the plain shape torch_npu writes is taken; for anything else (a syntax error, bytes
 * that are no UTF-8, a field of another type, an escape in a key, a \u surrogate, numbers past the exact
 * ranges below, deep nesting) scan() returns None and the caller decodes the piece with msgspec as
 * before, so every odd input keeps the answer of that typed decode.
 *
 * The values a reader needs per element: the phase; the raw text of name, cat, pid, tid and id, and of
 * the text args of duration events, as ids into one table of distinct raw texts (decoded once each, in
 * Python); ts and dur as int ns (the exact decimal rule of cells.py); the int args; flops; a counter's
 * arg keys (as one raw JSON list, interned), its numeric values and the raw texts of its *id args; and
 * each element's byte span (for metadata events, decoded in Python).
 */
#include "json_lex.h"

#define CKEYS 8            /* counter args kept per event; more: declined */
#define INT_ABSENT INT64_MIN
#define LIMIT (((int64_t)1) << 62)
#define DUR_LIMIT (((int64_t)1) << 43) /* below it a µs float times 1000 rounds as cells.dur_column does */

enum { R_NAME, R_CAT, R_PID, R_TID, R_ID, NREF };
enum { T_DIMS, T_STACK, T_ITYPE, T_TASK, T_DTYPE, NTEXT };
enum { I_PSTREAM, I_CONN, I_COUNT, I_SIZE, I_SID, NINT };
enum { TS_ABSENT = 0, TS_OK = 1, TS_ODD = 2 };

/* µs as text (the inside of a string token): digits with exactly 3 decimals, or digits alone -> ns */
static int text_us(const unsigned char *s, const unsigned char *e, int64_t *ns) {
    const unsigned char *dot = e - 4;
    int64_t whole = 0;
    int frac = 0;
    if (e - s >= 5 && *dot == '.') {
        for (const unsigned char *q = dot + 1; q < e; q++) {
            if (*q < '0' || *q > '9') return 0;
            frac = frac * 10 + (*q - '0');
        }
    } else {
        dot = e;
    }
    if (dot - s < 1 || dot - s > 16) return 0;
    for (const unsigned char *q = s; q < dot; q++) {
        if (*q < '0' || *q > '9') return 0;
        whole = whole * 10 + (*q - '0');
    }
    if (whole >= LIMIT / 1000) return 0;
    *ns = whole * 1000 + frac;
    return 1;
}

/* ts or dur (is_dur): a string of µs text, an int or a float -> ns; TS_ODD for anything else or out of
 * range: ints below LIMIT / 1000 µs (ts) or DUR_LIMIT µs (dur); floats times 1000 below LIMIT ns (ts), or
 * below DUR_LIMIT µs (dur), rounded half to even as cells.py does */
static int time_value(int kind, const unsigned char *s, const unsigned char *e, int64_t *ns, int is_dur) {
    if (kind == 'n') return TS_ABSENT;
    if (kind == 's') return text_us(s + 1, e - 1, ns) ? TS_OK : TS_ODD;
    if (kind == 'i') {
        int64_t v, bound = is_dur ? DUR_LIMIT : LIMIT / 1000;
        if (!parse_int(s, e, &v) || v <= -bound || v >= bound) return TS_ODD;
        *ns = v * 1000;
        return TS_OK;
    }
    if (kind == 'f') {
        double f = parse_float(s, e), x = f * 1000.0;
        if (!(is_dur ? fabs(f) < (double)DUR_LIMIT : fabs(x) < (double)LIMIT)) return TS_ODD;
        *ns = (int64_t)nearbyint(x);
        return TS_OK;
    }
    return TS_ODD;
}

/* ---- the output columns ---- */
typedef struct {
    Py_ssize_t n, cap;
    unsigned char *ph;
    int32_t *ref;           /* [n][NREF] */
    int64_t *ts, *dur;      /* ns */
    unsigned char *ts_state; /* TS_ABSENT / TS_OK */
    int32_t *text;          /* [n][NTEXT] */
    int64_t *ints;          /* [n][NINT] */
    double *flops;          /* NaN: absent */
    int32_t *sig;           /* counters: -1 args no object */
    double *cval;           /* [n][CKEYS] */
    int32_t *cref;          /* [n][CKEYS] -1: no id arg there */
    int64_t *span;          /* [n][2] */
} Cols;

#define COLS_FIELDS(X) X(ph, 1) X(ref, NREF) X(ts, 1) X(dur, 1) X(ts_state, 1) X(text, NTEXT) X(ints, NINT) \
    X(flops, 1) X(sig, 1) X(cval, CKEYS) X(cref, CKEYS) X(span, 2)

DEFINE_COLS_MEMORY


static const Word TOP[] = {W("name"), W("cat"), W("pid"), W("tid"), W("id"), W("ph"), W("ts"), W("dur"), W("args")};
enum { K_PH = 5, K_TS, K_DUR, K_ARGS, NTOP };
DEFINE_TAKE_TOP(take_top, TOP, NTOP, K_ARGS)
static const Word XTEXT[] = {W("Input Dims"), W("Call stack"), W("Input type"), W("Task Type"), W("data_type")};
static const Word XINT[] = {W("Physic Stream Id"), W("connection_id"), W("count"), W("size(Byte)"), W("stream id")};
static const Word FLOPS = W("flops");

typedef struct ArgCtx ArgCtx;
typedef int (*Apply)(ArgCtx *a, const Tok *k, const Tok *v);
struct ArgCtx {
    Intern *strings;
    Cols *o;
    Py_ssize_t row;
    unsigned seen;
    int nkeys;
    Apply apply;
    Tok keys[CKEYS];
};

static int apply_xarg(ArgCtx *a, const Tok *k, const Tok *v) {
    Py_ssize_t r = a->row;
    for (int i = 0; i < NTEXT; i++) {
        if (!key_is(k, &XTEXT[i])) continue;
        if (a->seen & (1u << i)) return 0;
        a->seen |= 1u << i;
        if (v->kind == 'n') return 1;
        if (v->kind != 's') return 0;
        int32_t id = intern(a->strings, v->s, v->e - v->s);
        if (id < 0) return 0;
        a->o->text[r * NTEXT + i] = id;
        return 1;
    }
    for (int i = 0; i < NINT; i++) {
        if (!key_is(k, &XINT[i])) continue;
        if (a->seen & (1u << (NTEXT + i))) return 0;
        a->seen |= 1u << (NTEXT + i);
        return v->kind == 'i' && parse_int(v->s, v->e, &a->o->ints[r * NINT + i]);
    }
    if (key_is(k, &FLOPS)) {
        if (a->seen & (1u << 12)) return 0;
        a->seen |= 1u << 12;
        if (v->kind == 'n') return 1;
        if (v->kind != 'i' && v->kind != 'f') return 0;
        if (v->e - v->s > 15 && v->kind == 'i') return 0;
        double f = parse_float(v->s, v->e);
        if (!isfinite(f)) return 0; /* NaN stands for absent here: inf is left to the plain reading */
        a->o->flops[r] = f;
        return 1;
    }
    return 1;
}

static int ends_with_id(const Tok *k) {
    Py_ssize_t n = k->e - k->s - 2;
    return n >= 2 && (k->e[-3] | 0x20) == 'i' && (k->e[-2] | 0x20) == 'd';
}

static int apply_carg(ArgCtx *a, const Tok *k, const Tok *v) {
    Py_ssize_t r = a->row;
    int i = a->nkeys;
    if (i >= CKEYS) return 0;
    for (int j = 0; j < i; j++)
        if (a->keys[j].e - a->keys[j].s == k->e - k->s && memcmp(a->keys[j].s, k->s, k->e - k->s) == 0) return 0;
    a->keys[i] = *k;
    a->nkeys++;
    if (ends_with_id(k)) {
        if (v->kind == 'o' || v->kind == 'a') return 0;
        int32_t id = intern(a->strings, v->s, v->e - v->s);
        if (id < 0) return 0;
        a->o->cref[r * CKEYS + i] = id;
        return 1;
    }
    if (v->kind == 'i' || v->kind == 'f') {
        if (v->e - v->s >= 60 || (v->kind == 'i' && v->e - v->s > 18)) return 0;
        double f = parse_float(v->s, v->e);
        a->o->cval[r * CKEYS + i] = isfinite(f) ? f : NAN;
        return 1;
    }
    if (v->kind == 'n' || v->kind == 'b') return 1; /* no number: NaN, as float_column gives */
    return 0;
}

static int take_apply(void *ctx, const Tok *k, Cur *c) {
    Tok v;
    return token(c, &v) && ((ArgCtx *)ctx)->apply(ctx, k, &v);
}

/* apply to each member of the element's args: those kept, or all of them read again */
static int each_arg(ArgCtx *a, const Element *el) {
    if (el->args.overflow) {
        Cur c = {el->top[K_ARGS].s, el->top[K_ARGS].e, 0};
        return members(&c, take_apply, a) && !c.fail;
    }
    for (int i = 0; i < el->args.n; i++)
        if (!a->apply(a, &el->args.key[i], &el->args.val[i])) return 0;
    return 1;
}

/* the counter's arg keys as one raw JSON list, interned: its signature */
static int counter_sig(ArgCtx *a, int32_t *sig) {
    Py_ssize_t len = 2;
    for (int i = 0; i < a->nkeys; i++) len += a->keys[i].e - a->keys[i].s + 1;
    unsigned char stackbuf[512], *buf = len <= (Py_ssize_t)sizeof stackbuf ? stackbuf : malloc(len);
    if (!buf) return 0;
    Py_ssize_t at = 0;
    buf[at++] = '[';
    for (int i = 0; i < a->nkeys; i++) {
        if (i) buf[at++] = ',';
        memcpy(buf + at, a->keys[i].s, a->keys[i].e - a->keys[i].s);
        at += a->keys[i].e - a->keys[i].s;
    }
    buf[at++] = ']';
    *sig = intern(a->strings, buf, at);
    if (buf != stackbuf) free(buf);
    return *sig >= 0;
}

static int phase_of(const Tok *t) {
    if (!t->kind) return 0;                  /* absent: "" */
    if (t->kind != 's' || t->esc) return -1; /* no string, or an escape: the plain reading decides */
    if (t->e - t->s != 3) return 0;          /* "" or longer: no phase a reader takes */
    return t->s[1];
}

static int is_timed(int ph) {
    return ph == 'X' || ph == 'C' || ph == 's' || ph == 'f' || ph == 't';
}

static int is_time_kind(int kind) { /* ts and dur: str | int | float | None (or absent) */
    return !kind || kind == 's' || kind == 'i' || kind == 'f' || kind == 'n';
}

static void defaults(Cols *o, Py_ssize_t r) {
    o->ts[r] = 0, o->dur[r] = 0, o->ts_state[r] = TS_ABSENT;
    o->flops[r] = NAN, o->sig[r] = -1;
    for (int i = 0; i < NTEXT; i++) o->text[r * NTEXT + i] = -1;
    for (int i = 0; i < NINT; i++) o->ints[r * NINT + i] = INT_ABSENT;
    for (int i = 0; i < CKEYS; i++) o->cval[r * CKEYS + i] = NAN, o->cref[r * CKEYS + i] = -1;
}

static int refs(Intern *strings, Cols *o, Py_ssize_t r, const Tok *t) {
    for (int i = 0; i < NREF; i++) {
        o->ref[r * NREF + i] = -1;
        if (!t[i].kind && i == R_NAME) { /* an absent name is "" (trace_decode.Ev), a null one None */
            if ((o->ref[r * NREF + i] = intern(strings, (const unsigned char *)"\"\"", 2)) < 0) return 0;
            continue;
        }
        if (!t[i].kind || t[i].kind == 'n') continue;
        int64_t v;
        int ok = i < R_PID ? t[i].kind == 's' : (t[i].kind == 's' || (t[i].kind == 'i' && parse_int(t[i].s, t[i].e, &v)));
        if (!ok || (o->ref[r * NREF + i] = intern(strings, t[i].s, t[i].e - t[i].s)) < 0) return 0;
    }
    return 1;
}

static int fill_row(Intern *strings, Cols *o, Py_ssize_t r, Element *el) {
    Tok *t = el->top;
    int ph = phase_of(&t[K_PH]);
    if (ph < 0 || !refs(strings, o, r, t) || !is_time_kind(t[K_TS].kind) || !is_time_kind(t[K_DUR].kind)) return 0;
    o->ph[r] = (unsigned char)ph;
    defaults(o, r);
    if (!is_timed(ph)) return 1;
    if (t[K_TS].kind) {
        int st = time_value(t[K_TS].kind, t[K_TS].s, t[K_TS].e, &o->ts[r], 0);
        if (st == TS_ODD) return 0;
        o->ts_state[r] = (unsigned char)st;
    }
    Tok *args = &t[K_ARGS];
    if (ph == 'X') {
        if (t[K_DUR].kind == 's') return 0; /* durations as text: the plain reading's rules */
        if (t[K_DUR].kind && time_value(t[K_DUR].kind, t[K_DUR].s, t[K_DUR].e, &o->dur[r], 1) == TS_ODD)
            return 0;
        if (args->kind && args->kind != 'n' && args->kind != 'o') return 0;
        ArgCtx a = {strings, o, r, 0, 0, apply_xarg, {{0}}};
        return args->kind != 'o' || each_arg(&a, el);
    }
    if (ph == 'C' && args->kind == 'o') {
        ArgCtx a = {strings, o, r, 0, 0, apply_carg, {{0}}};
        return each_arg(&a, el) && counter_sig(&a, &o->sig[r]);
    }
    return 1;
}

static PyObject *column(void *data, Py_ssize_t bytes) {
    return PyBytes_FromStringAndSize((const char *)data, bytes);
}

static PyObject *result(Cols *o, Intern *strings) {
    Py_ssize_t n = o->n;
    return Py_BuildValue(
        "{s:n,s:O,s:O,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "n", n, "strings", strings->list,
        "aliased", strings->aliased ? Py_True : Py_False,
        "ph", column(o->ph, n), "ref", column(o->ref, n * NREF * 4), "ts", column(o->ts, n * 8),
        "dur", column(o->dur, n * 8), "ts_state", column(o->ts_state, n), "text", column(o->text, n * NTEXT * 4),
        "ints", column(o->ints, n * NINT * 8), "flops", column(o->flops, n * 8), "sig", column(o->sig, n * 4),
        "cval", column(o->cval, n * CKEYS * 8), "cref", column(o->cref, n * CKEYS * 4),
        "span", column(o->span, n * 16));
}

typedef struct {
    const unsigned char *base;
    Intern *strings;
    Cols *o;
} Scan;

static int take_event(void *ctx, Element *el, const unsigned char *start, const unsigned char *end) {
    Scan *s = ctx;
    Cols *o = s->o;
    if (o->n == o->cap && cols_grow(o) < 0) return 0;
    Py_ssize_t r = o->n;
    o->span[2 * r] = start - s->base;
    o->span[2 * r + 1] = end - s->base;
    if (!fill_row(s->strings, o, r, el)) return 0;
    o->n++;
    return 1;
}

static int scan_array(Cur *c, const unsigned char *base, Intern *strings, Cols *o) {
    Scan s = {base, strings, o};
    return each_element(c, take_top, NTOP, take_event, &s);
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Intern strings;
    Cols o;
    memset(&o, 0, sizeof o);
    PyObject *out = NULL;
    if (intern_init(&strings) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *base = view.buf;
    Cur c = {base, base + view.len, 0};
    if (scan_array(&c, base, &strings, &o)) {
        out = result(&o, &strings);
    } else if (!PyErr_Occurred()) {
        out = Py_None;
        Py_INCREF(out);
    }
done:
    intern_free(&strings);
    cols_free(&o);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_O, "Columns of one piece of trace_view.json's array (a dict), or None: see _scan.c."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_ascend_scan", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__ascend_scan(void) { return PyModule_Create(&MODULE); }
