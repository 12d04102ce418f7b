/* The time-ordered sweep over a trace's Python frames (stacks.py): each frame's parent and call path, in
 * one pass in C instead of a Python loop per frame (755k frames in a 1 GB with_stack trace).
 *
 * sweep(thread, start, end, name, hidden, frame) takes the rows (frames, and the ops whose stacks they give)
 * sorted by (thread, start, frames before ops, outer first), as int64 thread / start / end, int32 name ids and
 * uint8 hidden flags (C calls, not shown in a stack) and frame flags, and gives:
 *   parent: int64 per row, the index of the frame on top of the open ones at its start (-1: none);
 *   path:   int64 per row, a frame's own call path, an op's innermost open frame's (-1: none);
 *   paths:  int64 pairs (name, parent path or -1), one per distinct path, in order of first sight.
 * The open frames are a stack per thread: a row pops those on top that ended before it began (an end
 * equal to its start still encloses it), exactly as stacks._sweep_python and fill_python_stacks's walk up
 * the parents do; a hidden frame takes its parent's path; an op is pushed nothing. stacks.py turns the
 * distinct paths into their texts, in the same order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *key_name, *key_up, *value; /* value -1: empty slot */
    Py_ssize_t cap;
} Paths;

static uint64_t mix(int64_t a, int64_t b) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)b + 0x632BE59BD9B4E019ULL);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

static int paths_grow(Paths *t) {
    Py_ssize_t cap = t->cap ? t->cap * 2 : 1024;
    int64_t *kn = malloc(cap * sizeof(int64_t)), *ku = malloc(cap * sizeof(int64_t)),
            *v = malloc(cap * sizeof(int64_t));
    if (!kn || !ku || !v) {
        free(kn), free(ku), free(v);
        return -1;
    }
    memset(v, 0xff, cap * sizeof(int64_t)); /* every slot -1 */
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (t->value[i] < 0) continue;
        Py_ssize_t j = (Py_ssize_t)(mix(t->key_name[i], t->key_up[i]) & (uint64_t)(cap - 1));
        while (v[j] >= 0) j = (j + 1) & (cap - 1);
        kn[j] = t->key_name[i], ku[j] = t->key_up[i], v[j] = t->value[i];
    }
    free(t->key_name), free(t->key_up), free(t->value);
    t->key_name = kn, t->key_up = ku, t->value = v, t->cap = cap;
    return 0;
}

/* The path (name, up): its index, a new one (appended to pairs) the first time. -1 on no memory. */
static int64_t path_of(Paths *t, int64_t name, int64_t up, int64_t *pairs, Py_ssize_t *count) {
    if (2 * (*count + 1) > t->cap && paths_grow(t)) return -1;
    Py_ssize_t j = (Py_ssize_t)(mix(name, up) & (uint64_t)(t->cap - 1));
    while (t->value[j] >= 0) {
        if (t->key_name[j] == name && t->key_up[j] == up) return t->value[j];
        j = (j + 1) & (t->cap - 1);
    }
    t->key_name[j] = name, t->key_up[j] = up, t->value[j] = *count;
    pairs[2 * *count] = name, pairs[2 * *count + 1] = up;
    return (*count)++;
}

static PyObject *sweep(PyObject *self, PyObject *args) {
    Py_buffer thread, start, end, name, hidden, frame;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*", &thread, &start, &end, &name, &hidden, &frame)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = thread.len / 8;
    int64_t *parent = NULL, *path = NULL, *pairs = NULL, *open_end = NULL, *open_index = NULL, *open_path = NULL;
    Paths table = {NULL, NULL, NULL, 0};
    if (thread.len != n * 8 || start.len != n * 8 || end.len != n * 8 || name.len != n * 4 || hidden.len != n ||
        frame.len != n) {
        PyErr_SetString(PyExc_ValueError, "sweep: thread, start, end (int64), name (int32), hidden and frame "
                                          "(uint8) must hold one item per row");
        goto done;
    }
    size_t bytes = (size_t)(n ? n : 1) * sizeof(int64_t);
    parent = malloc(bytes), path = malloc(bytes), pairs = malloc(2 * bytes);
    open_end = malloc(bytes), open_index = malloc(bytes), open_path = malloc(bytes);
    if (!parent || !path || !pairs || !open_end || !open_index || !open_path || paths_grow(&table)) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *th = thread.buf, *begin = start.buf, *finish = end.buf;
    const int32_t *nm = name.buf;
    const unsigned char *skip = hidden.buf, *is_frame = frame.buf;
    Py_ssize_t depth = 0, count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || th[i] != th[i - 1]) depth = 0;
        while (depth && open_end[depth - 1] < begin[i]) depth--;
        int64_t up = depth ? open_path[depth - 1] : -1;
        parent[i] = depth ? open_index[depth - 1] : -1;
        int64_t own = up;
        if (!is_frame[i]) { /* an op: its innermost open frame's path */
            path[i] = up;
            continue;
        }
        if (!skip[i]) {
            own = path_of(&table, nm[i], up, pairs, &count);
            if (own < 0) {
                PyErr_NoMemory();
                goto done;
            }
        }
        path[i] = own;
        open_end[depth] = finish[i], open_index[depth] = i, open_path[depth] = own;
        depth++;
    }
    result = Py_BuildValue("(y#y#y#)", (char *)parent, n * 8, (char *)path, n * 8, (char *)pairs, count * 16);
done:
    free(parent), free(path), free(pairs), free(open_end), free(open_index), free(open_path);
    free(table.key_name), free(table.key_up), free(table.value);
    PyBuffer_Release(&thread);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&name);
    PyBuffer_Release(&hidden);
    PyBuffer_Release(&frame);
    return result;
}

static PyMethodDef METHODS[] = {
    {"sweep", sweep, METH_VARARGS, "sweep(thread, start, end, name, hidden, frame) -> (parent, path, paths)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_kineto_sweep", "The Python frames' sweep of stacks.py.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__kineto_sweep(void) { return PyModule_Create(&MODULE); }
