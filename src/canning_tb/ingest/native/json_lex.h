/* The strict JSON lexer both trace scanners share (ingest/ascend/_scan.c, ingest/kineto/_scan.c): a
 * cursor, a table of distinct raw texts (interned as bytes, decoded once each in Python), the values
 * (anything that is not plain strict JSON fails: the caller then declines the piece), and the members of
 * an object handed one by one to a callback. Static functions: each scanner includes it once. */
#ifndef CANNING_JSON_LEX_H
#define CANNING_JSON_LEX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


#define MAX_DEPTH 64

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

/* digits[.digits], their integer m at most 2^53 and at most 22 decimals: m / 10^k with both exact doubles,
 * so the one correctly rounded division is the correctly rounded value (Clinger's fast path); 0 else */
static int fast_float(const unsigned char *s, const unsigned char *e, double *out) {
    static const double P10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = s < e && *s == '-', digits = 0, decimals = -1;
    uint64_t m = 0;
    for (const unsigned char *q = s + neg; q < e; q++) {
        if (*q == '.' && decimals < 0) {
            decimals = 0;
            continue;
        }
        if (*q < '0' || *q > '9') return 0; /* an exponent: the slow path */
        m = m * 10 + (uint64_t)(*q - '0');
        if (m && ++digits > 19) return 0; /* m still fits 64 bits */
        if (decimals >= 0 && ++decimals > 22) return 0;
    }
    if (m > ((uint64_t)1 << 53)) return 0;
    double v = (double)m / P10[decimals > 0 ? decimals : 0];
    *out = neg ? -v : v;
    return 1;
}

static double parse_float(const unsigned char *s, const unsigned char *e) {
    char buf[64], *stop;
    double fast;
    if (fast_float(s, e, &fast)) return fast;
    Py_ssize_t n = e - s;
    if (n >= (Py_ssize_t)sizeof buf) return NAN; /* longer than any number a profiler writes: the caller declines NaN */
    memcpy(buf, s, n);
    buf[n] = 0;
    return PyOS_string_to_double(buf, &stop, NULL);
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

static int key_is(const Tok *k, const Word *word) { /* the length and first byte first: most keys differ there */
    return k->e - k->s - 2 == word->n && (!word->n || k->s[1] == (unsigned char)word->w[0]) &&
           memcmp(k->s + 1, word->w, word->n) == 0;
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


/* an object's members kept (as tokens) for a later reading; past MAX_ARGS only `overflow` is set */
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

/* ---- one element of an array of event objects ---- */
#define MAX_TOP 16 /* top-level fields a scanner takes */

typedef struct {
    Tok top[MAX_TOP]; /* the fields taken, in the scanner's column order */
    unsigned seen;
    Members args;     /* "args", kept as members: its reading may depend on a later field */
} Element;

/* A scanner's top-level field reader, `fn`, for its NAMES (a Word array of N fields, ARGS_AT the index of
 * "args"): a field into el->top, a repeated one declines the element (left to the reader's plain decode),
 * the others skipped. A macro so that each scanner's names are constants in its loop (a generic reader
 * with the names in the element made the Kineto scan 20 % slower). */
#define DEFINE_TAKE_TOP(fn, NAMES, N, ARGS_AT)                                   \
    static int fn(void *ctx, const Tok *k, Cur *c) {                            \
        Element *el = ctx;                                                      \
        for (int i = 0; i < (N); i++) {                                         \
            if (!key_is(k, &(NAMES)[i])) continue;                              \
            if (el->seen & (1u << i)) return 0;                                 \
            el->seen |= 1u << i;                                                \
            Tok *v = &el->top[i];                                               \
            if (i == (ARGS_AT) && c->p < c->end && *c->p == '{') {              \
                v->s = c->p, v->kind = 'o', v->esc = 0;                         \
                if (!members(c, take_member, &el->args)) return 0;              \
                v->e = c->p;                                                    \
                return 1;                                                       \
            }                                                                   \
            return token(c, v);                                                 \
        }                                                                       \
        Tok skip;                                                               \
        return token(c, &skip);                                                 \
    }

/* the array "[" objects "]" that is the whole of c (blanks around): each element read into an Element of
 * these fields and handed to take(ctx, element, its first byte, the byte after it); 0 for an element that
 * is no object, any syntax the walk does not take, or when take says 0 (take_top: DEFINE_TAKE_TOP's, for n
 * fields) */
typedef int (*TakeElement)(void *ctx, Element *el, const unsigned char *start, const unsigned char *end);

static int each_element(Cur *c, Take take_top, int n, TakeElement take, void *ctx) {
    ws(c);
    if (c->p >= c->end || *c->p != '[') return 0;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
    } else {
        for (;;) {
            if (c->p >= c->end || *c->p != '{') return 0;
            Element el;
            memset(el.top, 0, (size_t)n * sizeof el.top[0]);
            el.seen = 0, el.args.n = 0, el.args.overflow = 0;
            const unsigned char *start = c->p;
            if (!members(c, take_top, &el) || !take(ctx, &el, start, c->p)) return 0;
            int sep = separator(c, ']');
            if (sep == 2) break;
            if (!sep) return 0;
        }
    }
    ws(c);
    return c->p == c->end;
}

/* cols_grow (every column of a scanner's Cols twice as long: its COLS_FIELDS(X) names each column and its
 * width in items per row) and cols_free, for the scanner that defines Cols and COLS_FIELDS */
#define DEFINE_COLS_MEMORY                                                                                   \
    static int cols_grow(Cols *o) {                                                                          \
        Py_ssize_t cap = o->cap ? o->cap * 2 : 4096;                                                         \
        COLS_FIELDS(COLS_GROW_ONE)                                                                           \
        o->cap = cap;                                                                                        \
        return 0;                                                                                            \
    }                                                                                                        \
    static void cols_free(Cols *o) { COLS_FIELDS(COLS_FREE_ONE) }
#define COLS_GROW_ONE(f, w)                                                                                  \
    {                                                                                                        \
        void *q = realloc(o->f, (size_t)cap * (w) * sizeof(*o->f));                                          \
        if (!q) {                                                                                            \
            PyErr_NoMemory();                                                                                \
            return -1;                                                                                       \
        }                                                                                                    \
        o->f = q;                                                                                            \
    }
#define COLS_FREE_ONE(f, w) free(o->f);

#endif
