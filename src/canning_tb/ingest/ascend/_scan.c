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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define CKEYS 8            /* counter args kept per event; more: declined */
#define INT_ABSENT INT64_MIN
#define LIMIT (((int64_t)1) << 62)
#define DUR_LIMIT (((int64_t)1) << 43) /* below it a µs float times 1000 rounds as cells.dur_column does */

enum { R_NAME, R_CAT, R_PID, R_TID, R_ID, NREF };
enum { T_DIMS, T_STACK, T_ITYPE, T_TASK, T_DTYPE, NTEXT };
enum { I_PSTREAM, I_CONN, I_COUNT, I_SIZE, I_SID, NINT };
enum { TS_ABSENT = 0, TS_OK = 1, TS_ODD = 2 };

typedef struct {
    const unsigned char *p, *end;
    int fail;
} Cur;

/* ---- the table of distinct raw texts ---- */
typedef struct {
    Py_ssize_t *slot; /* index+1 into list, 0 empty */
    Py_ssize_t cap;
    uint64_t *hash;
    PyObject *list; /* bytes, in order of first sight */
    int aliased;    /* some text may decode equal to another: it holds an escape, or is -0 */
} Intern;

static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) { /* 8 bytes a step: stacks are KBs */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    for (; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ULL;
    return h ^ (h >> 29);
}

static int intern_init(Intern *t) {
    t->cap = 1024;
    t->slot = calloc(t->cap, sizeof(Py_ssize_t));
    t->hash = calloc(t->cap, sizeof(uint64_t));
    t->list = PyList_New(0);
    t->aliased = 0;
    return t->slot && t->hash && t->list ? 0 : -1;
}

static void intern_free(Intern *t) {
    free(t->slot);
    free(t->hash);
    Py_XDECREF(t->list);
}

static int intern_grow(Intern *t) {
    Py_ssize_t cap = t->cap * 2;
    Py_ssize_t *slot = calloc(cap, sizeof(Py_ssize_t));
    uint64_t *hash = calloc(cap, sizeof(uint64_t));
    if (!slot || !hash) {
        free(slot);
        free(hash);
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (!t->slot[i]) continue;
        Py_ssize_t j = (Py_ssize_t)(t->hash[i] & (uint64_t)(cap - 1));
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = t->slot[i];
        hash[j] = t->hash[i];
    }
    free(t->slot);
    free(t->hash);
    t->cap = cap;
    t->slot = slot;
    t->hash = hash;
    return 0;
}

/* id of the text s[0:n] (added if new); -1 on memory error */
static int32_t intern(Intern *t, const unsigned char *s, Py_ssize_t n) {
    uint64_t h = hash_bytes(s, n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->cap - 1));
    while (t->slot[j]) {
        if (t->hash[j] == h) {
            PyObject *b = PyList_GET_ITEM(t->list, t->slot[j] - 1);
            if (PyBytes_GET_SIZE(b) == n && memcmp(PyBytes_AS_STRING(b), s, n) == 0) return (int32_t)(t->slot[j] - 1);
        }
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)s, n);
    if (!b || PyList_Append(t->list, b) < 0) {
        Py_XDECREF(b);
        return -1;
    }
    Py_DECREF(b);
    if (memchr(s, '\\', n) || (n == 2 && s[0] == '-' && s[1] == '0')) t->aliased = 1;
    Py_ssize_t id = PyList_GET_SIZE(t->list);
    t->slot[j] = id;
    t->hash[j] = h;
    if (id * 2 > t->cap && intern_grow(t) < 0) return -1;
    return (int32_t)(id - 1);
}

/* ---- strict JSON ---- */
static void ws(Cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static int hexval(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* one UTF-8 sequence starting at a byte >= 0x80; returns its length or 0 if invalid */
static int utf8_seq(const unsigned char *s, const unsigned char *end) {
    unsigned char a = s[0];
    int n;
    uint32_t cp;
    if (a >= 0xC2 && a <= 0xDF) n = 2, cp = a & 0x1F;
    else if (a >= 0xE0 && a <= 0xEF) n = 3, cp = a & 0x0F;
    else if (a >= 0xF0 && a <= 0xF4) n = 4, cp = a & 0x07;
    else return 0;
    if (end - s < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* a string at c->p (on its quote); *esc set when it holds an escape */
static void string(Cur *c, int *esc) {
    const unsigned char *p = c->p + 1, *end = c->end;
    *esc = 0;
    for (;;) {
        while (end - p >= 8) { /* 8 plain bytes at a time: none a quote, a backslash, a control or >= 0x80 */
            uint64_t v, ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
            memcpy(&v, p, 8);
            uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
            if (((q - ones) & ~q & high) | ((b - ones) & ~b & high) | ((v - ones * 0x20) & ~v & high) | (v & high)) break;
            p += 8;
        }
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80) p++;
        if (p >= end) goto bad;
        unsigned char ch = *p;
        if (ch == '"') break;
        if (ch < 0x20) goto bad;
        if (ch == '\\') {
            *esc = 1;
            if (p + 1 >= end) goto bad;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6) goto bad;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) goto bad;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) goto bad; /* surrogates: left to the plain reading */
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
            } else {
                goto bad;
            }
            continue;
        }
        int n = utf8_seq(p, end);
        if (!n) goto bad;
        p += n;
    }
    c->p = p + 1;
    return;
bad:
    c->fail = 1;
}

/* a number at c->p: 1 for an integer, 2 for a float (fraction or exponent), 0 on a syntax error */
static int number(Cur *c) {
    const unsigned char *p = c->p, *end = c->end;
    int kind = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) goto bad;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < end && *p >= '0' && *p <= '9') p++;
    else goto bad;
    if (p < end && *p == '.') {
        p++, kind = 2;
        if (p >= end || *p < '0' || *p > '9') goto bad;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++, kind = 2;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') goto bad;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    c->p = p;
    return kind;
bad:
    c->fail = 1;
    return 0;
}

static int literal(Cur *c, const char *word, Py_ssize_t n) {
    if (c->end - c->p < n || memcmp(c->p, word, n) != 0) {
        c->fail = 1;
        return 0;
    }
    c->p += n;
    return 1;
}

/* after a member or element: 1 at a comma (and past it), 2 at the closing bracket (past it), 0 else */
static int separator(Cur *c, unsigned char close) {
    ws(c);
    if (c->p >= c->end) return 0;
    if (*c->p == ',') {
        c->p++;
        ws(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 2;
    }
    return 0;
}

/* any value; kinds: 's' string, 'i' int, 'f' float, 'n' null, 'b' bool, 'o' object, 'a' array, 0 failed */
static int value(Cur *c, int depth, int *esc);

static void container(Cur *c, int depth, unsigned char close) {
    int esc;
    if (depth > MAX_DEPTH) {
        c->fail = 1;
        return;
    }
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return;
    }
    for (;;) {
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"') goto bad;
            string(c, &esc);
            if (c->fail) return;
            ws(c);
            if (c->p >= c->end || *c->p != ':') goto bad;
            c->p++;
            ws(c);
        }
        if (!value(c, depth + 1, &esc)) return;
        int sep = separator(c, close);
        if (sep == 2) return;
        if (!sep) goto bad;
    }
bad:
    c->fail = 1;
}

static int value(Cur *c, int depth, int *esc) {
    *esc = 0;
    if (c->p >= c->end) {
        c->fail = 1;
        return 0;
    }
    int kind;
    switch (*c->p) {
    case '"': string(c, esc); kind = 's'; break;
    case '{': container(c, depth, '}'); kind = 'o'; break;
    case '[': container(c, depth, ']'); kind = 'a'; break;
    case 't': literal(c, "true", 4); kind = 'b'; break;
    case 'f': literal(c, "false", 5); kind = 'b'; break;
    case 'n': literal(c, "null", 4); kind = 'n'; break;
    default: kind = number(c) == 2 ? 'f' : 'i'; break;
    }
    return c->fail ? 0 : kind;
}

/* ---- values as the readers take them ---- */

/* an integer token -> int64; 0 when it does not fit (then the caller declines) */
static int parse_int(const unsigned char *s, const unsigned char *e, int64_t *out) {
    int neg = 0;
    uint64_t v = 0;
    if (*s == '-') neg = 1, s++;
    if (e - s > 19) return 0;
    for (; s < e; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static double parse_float(const unsigned char *s, const unsigned char *e) {
    char buf[64], *stop;
    Py_ssize_t n = e - s;
    if (n >= (Py_ssize_t)sizeof buf) return NAN; /* longer than any number torch_npu writes: declined below */
    memcpy(buf, s, n);
    buf[n] = 0;
    return PyOS_string_to_double(buf, &stop, NULL);
}

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

static int cols_grow(Cols *o) {
    Py_ssize_t cap = o->cap ? o->cap * 2 : 4096;
#define GROW(f, w) { void *q = realloc(o->f, (size_t)cap * (w) * sizeof(*o->f)); if (!q) { PyErr_NoMemory(); return -1; } o->f = q; }
    COLS_FIELDS(GROW)
#undef GROW
    o->cap = cap;
    return 0;
}

static void cols_free(Cols *o) {
#define FREE(f, w) free(o->f);
    COLS_FIELDS(FREE)
#undef FREE
}

typedef struct {
    const unsigned char *s, *e;
    int kind, esc;
} Tok;

typedef struct {
    const char *w;
    Py_ssize_t n;
} Word;
#define W(text) {text, sizeof(text) - 1}

static const Word TOP[] = {W("name"), W("cat"), W("pid"), W("tid"), W("id"), W("ph"), W("ts"), W("dur"), W("args")};
enum { K_PH = 5, K_TS, K_DUR, K_ARGS, NTOP };
static const Word XTEXT[] = {W("Input Dims"), W("Call stack"), W("Input type"), W("Task Type"), W("data_type")};
static const Word XINT[] = {W("Physic Stream Id"), W("connection_id"), W("count"), W("size(Byte)"), W("stream id")};
static const Word FLOPS = W("flops");

static int key_is(const Tok *k, const Word *word) {
    return k->e - k->s - 2 == word->n && memcmp(k->s + 1, word->w, word->n) == 0;
}

/* the members of the object at c->p (on its brace): take(ctx, key, c) reads each value; 0 on failure */
typedef int (*Take)(void *ctx, const Tok *key, Cur *c);

static int members(Cur *c, Take take, void *ctx) {
    int esc;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 1;
    }
    for (;;) {
        Tok k;
        if (c->p >= c->end || *c->p != '"') return 0;
        k.s = c->p;
        string(c, &esc);
        if (c->fail || esc) return 0; /* an escaped key: left to the plain reading */
        k.e = c->p;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return 0;
        c->p++;
        ws(c);
        if (!take(ctx, &k, c) || c->fail) return 0;
        int sep = separator(c, '}');
        if (sep != 1) return sep == 2;
    }
}

static int token(Cur *c, Tok *v) {
    v->s = c->p;
    v->kind = value(c, 2, &v->esc);
    v->e = c->p;
    return v->kind;
}

#define MAX_ARGS 32 /* args members kept while the element is read; more are read again from the text */

typedef struct {
    int n, overflow;
    Tok key[MAX_ARGS], val[MAX_ARGS];
} Members;

static int take_member(void *ctx, const Tok *k, Cur *c) {
    Members *m = ctx;
    Tok v;
    if (!token(c, &v)) return 0;
    if (m->n == MAX_ARGS) {
        m->overflow = 1;
        return 1;
    }
    m->key[m->n] = *k;
    m->val[m->n++] = v;
    return 1;
}

typedef struct {
    Tok top[NTOP];
    unsigned seen;
    Members args;
} Element;

/* a top-level field; args (whose reading depends on the phase, which may come after them) kept as members */
static int take_top(void *ctx, const Tok *k, Cur *c) {
    Element *el = ctx;
    for (int i = 0; i < NTOP; i++) {
        if (!key_is(k, &TOP[i])) continue;
        if (el->seen & (1u << i)) return 0; /* a repeated field: left to the plain reading */
        el->seen |= 1u << i;
        Tok *v = &el->top[i];
        if (i == K_ARGS && c->p < c->end && *c->p == '{') {
            v->s = c->p, v->kind = 'o', v->esc = 0;
            if (!members(c, take_member, &el->args)) return 0;
            v->e = c->p;
            return 1;
        }
        return token(c, v);
    }
    Tok skip;
    return token(c, &skip);
}

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

static int scan_array(Cur *c, const unsigned char *base, Intern *strings, Cols *o) {
    ws(c);
    if (c->p >= c->end || *c->p != '[') return 0;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        goto tail;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '{') return 0; /* an element that is no object: the plain reading */
        if (o->n == o->cap && cols_grow(o) < 0) return 0;
        Element el;
        memset(&el.top, 0, sizeof el.top);
        el.seen = 0, el.args.n = 0, el.args.overflow = 0;
        Py_ssize_t r = o->n;
        const unsigned char *start = c->p;
        if (!members(c, take_top, &el)) return 0;
        o->span[2 * r] = start - base;
        o->span[2 * r + 1] = c->p - base;
        if (!fill_row(strings, o, r, &el)) return 0;
        o->n++;
        int sep = separator(c, ']');
        if (sep == 2) break;
        if (!sep) return 0;
    }
tail:
    ws(c);
    return c->p == c->end;
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

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&MODULE); }
