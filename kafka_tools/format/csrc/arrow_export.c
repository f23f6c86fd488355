/*
 * The records table's columns handed to pyarrow through the Arrow C data interface (the "arrow_schema"
 * / "arrow_array" PyCapsules): every exported array and schema is one block with a count of its live
 * nodes; each node's release callback releases its children still owned, then drops one count, and the
 * last frees the block. Buffers are malloc'd: pyarrow may release an array on any thread, without the GIL.
 */
#include "arrow_columns.h"

atomic_long blocks_alive;

/* ---- the builder's buffers, set up empty and freed (a finished batch starts the next empty) --------- */

void
columns_free(columns_t *c)
{
    free(c->position.data);
    free(c->offset.data);
    free(c->timestamp.data);
    free(c->header_offsets.data);
    memset(&c->position, 0, sizeof c->position);
    memset(&c->offset, 0, sizeof c->offset);
    memset(&c->timestamp, 0, sizeof c->timestamp);
    memset(&c->header_offsets, 0, sizeof c->header_offsets);
    binary_free(&c->key);
    binary_free(&c->value);
    binary_free(&c->header_key);
    binary_free(&c->header_value);
    c->rows = 0;
    c->ready = 0;
}

int
columns_init(columns_t *c)
{
    c->rows = 0;
    if (binary_init(&c->key) < 0 || binary_init(&c->value) < 0 || binary_init(&c->header_key) < 0 ||
        binary_init(&c->header_value) < 0 || buf_i32(&c->header_offsets, 0) < 0) {
        columns_free(c);
        PyErr_NoMemory();
        return -1;
    }
    c->ready = 1;
    return 0;
}

/* ---- export ----------------------------------------------------------------------------------------------- */

/* The nodes of the records table's struct: 0 the struct; 1 file, 2 topic (strings), 3 partition (int32),
 * 4-6 batch_position, offset, timestamp (int64), 7-8 key, value (binary), 9 headers (list), 10 its
 * struct, 11 header key (string), 12 header value (binary). */
#define NODES 13
#define TOP_CHILDREN 9
#define MAX_OWNED 32

static const char *const node_format[NODES] = {"+s", "u", "u", "i", "l", "l", "l", "z", "z", "+l", "+s", "u", "z"};
static const char *const node_name[NODES] = {"",      "file",  "topic",   "partition", "batch_position",
                                             "offset", "timestamp", "key", "value",   "headers",
                                             "item",  "key",   "value"};

/* The children of node i within a block's `children` array: (first, count). */
static void
node_children(int i, int *first, int *count)
{
    *first = i == 0 ? 0 : i == 9 ? TOP_CHILDREN : i == 10 ? TOP_CHILDREN + 1 : 0;
    *count = i == 0 ? TOP_CHILDREN : i == 9 ? 1 : i == 10 ? 2 : 0;
}

/* children[k] points at node k + 1: the top's 9 children are nodes 1-9, the list's child node 10,
 * the struct's nodes 11 and 12 */

typedef struct {
    atomic_int live; /* nodes not yet released */
    struct ArrowArray arrays[NODES];
    struct ArrowArray *children[NODES - 1];
    const void *buffers[NODES][3];
    void *owned[MAX_OWNED];
    size_t owned_cap[MAX_OWNED]; /* a builder buffer's capacity (recycled), 0 for one made here (freed) */
    int n_owned;
} array_block_t;

static void
block_free(array_block_t *b)
{
    for (int i = 0; i < b->n_owned; i++)
        pool_put(b->owned[i], b->owned_cap[i]);
    free(b);
    atomic_fetch_sub(&blocks_alive, 1);
}

static void
release_array(struct ArrowArray *a)
{
    array_block_t *b = (array_block_t *)a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL)
            a->children[i]->release(a->children[i]);
    a->release = NULL;
    if (atomic_fetch_sub(&b->live, 1) == 1)
        block_free(b);
}

static void
set_node(array_block_t *b, int i, int64_t length, int64_t nulls, int n_buffers)
{
    struct ArrowArray *a = &b->arrays[i];
    int first, count;
    node_children(i, &first, &count);
    a->length = length;
    a->null_count = nulls;
    a->offset = 0;
    a->n_buffers = n_buffers;
    a->n_children = count;
    a->buffers = b->buffers[i];
    a->children = count ? &b->children[first] : NULL;
    a->dictionary = NULL;
    a->release = release_array;
    a->private_data = b;
}

static const void *
own(array_block_t *b, buf_t *buf)
{
    void *p = buf->data;
    b->owned_cap[b->n_owned] = buf->cap;
    b->owned[b->n_owned++] = p;
    memset(buf, 0, sizeof *buf);
    return p;
}

/* A new buffer of `size` bytes (zeroed) the block owns, or NULL; a recycled one when one fits. */
static void *
own_new(array_block_t *b, size_t size)
{
    size_t cap = 0;
    void *p = size >= POOL_MIN ? pool_take(size, &cap) : NULL;
    if (p != NULL)
        memset(p, 0, size);
    else
        p = calloc(1, size ? size : 1);
    if (p != NULL) {
        b->owned_cap[b->n_owned] = cap;
        b->owned[b->n_owned++] = p;
    }
    return p;
}

static void
binary_node(array_block_t *b, int i, binary_t *c)
{
    b->buffers[i][0] = c->nulls ? own(b, &c->valid) : NULL;
    b->buffers[i][1] = own(b, &c->offsets);
    b->buffers[i][2] = own(b, &c->data);
    set_node(b, i, c->rows, 0, 3);
    b->arrays[i].null_count = c->nulls;
}

/* A string column of `rows` copies of text (NULL: all null): 0, or -1 (memory, or past int32). */
static int
repeated_string(array_block_t *b, int i, const char *text, Py_ssize_t len, int64_t rows)
{
    if (text != NULL && len > 0 && rows > INT32_MAX / len)
        return -1;
    int32_t *offsets = own_new(b, (size_t)(rows + 1) * 4);
    unsigned char *data = own_new(b, text == NULL ? 1 : (size_t)(len * rows));
    if (offsets == NULL || data == NULL)
        return -1;
    if (text != NULL) {
        /* an empty text (a writer that puts the column back itself) leaves the zeroed offsets */
        for (int64_t r = 0; len > 0 && r < rows; r++) {
            memcpy(data + r * len, text, (size_t)len);
            offsets[r + 1] = (int32_t)((r + 1) * len);
        }
        b->buffers[i][0] = NULL;
    }
    else if ((b->buffers[i][0] = own_new(b, (size_t)(rows + 7) / 8)) == NULL)
        return -1;
    b->buffers[i][1] = offsets;
    b->buffers[i][2] = data;
    set_node(b, i, rows, text == NULL ? rows : 0, 3);
    return 0;
}

static int
repeated_int32(array_block_t *b, int i, PyObject *value, int64_t rows)
{
    int32_t *data = own_new(b, (size_t)rows * 4);
    if (data == NULL)
        return -1;
    if (value != Py_None) {
        long v = PyLong_AsLong(value);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "partition is past int32");
            return -1;
        }
        for (int64_t r = 0; r < rows; r++)
            data[r] = (int32_t)v;
        b->buffers[i][0] = NULL;
    }
    else if ((b->buffers[i][0] = own_new(b, (size_t)(rows + 7) / 8)) == NULL)
        return -1;
    b->buffers[i][1] = data;
    set_node(b, i, rows, value == Py_None ? rows : 0, 2);
    return 0;
}

/* The file, topic and partition columns (the same value on every row): 0, or -1 with an exception set. */
static int
where_nodes(array_block_t *b, PyObject *file, PyObject *topic, PyObject *partition, int64_t rows)
{
    const char *text[2] = {NULL, NULL};
    Py_ssize_t len[2] = {0, 0};
    PyObject *values[2] = {file, topic};
    for (int k = 0; k < 2; k++) {
        if (values[k] == Py_None && k == 1)
            continue;
        if ((text[k] = PyUnicode_AsUTF8AndSize(values[k], &len[k])) == NULL)
            return -1;
    }
    if (repeated_string(b, 1, text[0], len[0], rows) < 0 || repeated_string(b, 2, text[1], len[1], rows) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (!PyLong_Check(partition) && partition != Py_None) {
        PyErr_SetString(PyExc_TypeError, "partition must be an int or None");
        return -1;
    }
    if (repeated_int32(b, 3, partition, rows) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The builder's rows as an exported struct array, file/topic/partition in front; the builder's
 * buffers are moved into it (the caller starts it again). NULL with an exception set. */
static array_block_t *
export_columns(columns_t *c, PyObject *file, PyObject *topic, PyObject *partition)
{
    /* every buffer has bytes: a pointer, never NULL, even for zero rows */
    if (buf_reserve(&c->position, 8) < 0 || buf_reserve(&c->offset, 8) < 0 || buf_reserve(&c->timestamp, 8) < 0 ||
        buf_reserve(&c->key.data, 1) < 0 || buf_reserve(&c->value.data, 1) < 0 ||
        buf_reserve(&c->header_key.data, 1) < 0 || buf_reserve(&c->header_value.data, 1) < 0) {
        PyErr_NoMemory();
        return NULL;
    }
    array_block_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    atomic_init(&b->live, NODES);
    atomic_fetch_add(&blocks_alive, 1);
    for (int k = 0; k < NODES - 1; k++)
        b->children[k] = &b->arrays[k + 1];
    int64_t rows = c->rows;
    if (where_nodes(b, file, topic, partition, rows) < 0) {
        block_free(b); /* nothing handed out yet; the builder keeps its rows */
        return NULL;
    }
    b->buffers[0][0] = NULL;
    set_node(b, 0, rows, 0, 1);
    buf_t *ints[3] = {&c->position, &c->offset, &c->timestamp};
    for (int k = 0; k < 3; k++) {
        b->buffers[4 + k][0] = NULL;
        b->buffers[4 + k][1] = own(b, ints[k]);
        set_node(b, 4 + k, rows, 0, 2);
    }
    binary_node(b, 7, &c->key);
    binary_node(b, 8, &c->value);
    b->buffers[9][0] = NULL;
    b->buffers[9][1] = own(b, &c->header_offsets);
    set_node(b, 9, rows, 0, 2);
    b->buffers[10][0] = NULL;
    set_node(b, 10, c->header_key.rows, 0, 1);
    binary_node(b, 11, &c->header_key);
    binary_node(b, 12, &c->header_value);
    return b;
}

/* The schema: the records table's struct, every column nullable (as pyarrow's schemas are made). */
typedef struct {
    atomic_int live;
    struct ArrowSchema nodes[NODES];
    struct ArrowSchema *children[NODES - 1];
} schema_block_t;

static void
release_schema(struct ArrowSchema *s)
{
    schema_block_t *b = (schema_block_t *)s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release != NULL)
            s->children[i]->release(s->children[i]);
    s->release = NULL;
    if (atomic_fetch_sub(&b->live, 1) == 1) {
        free(b);
        atomic_fetch_sub(&blocks_alive, 1);
    }
}

static schema_block_t *
export_schema(void)
{
    schema_block_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    atomic_init(&b->live, NODES);
    atomic_fetch_add(&blocks_alive, 1);
    for (int k = 0; k < NODES - 1; k++)
        b->children[k] = &b->nodes[k + 1];
    for (int i = 0; i < NODES; i++) {
        struct ArrowSchema *s = &b->nodes[i];
        int first, count;
        node_children(i, &first, &count);
        s->format = node_format[i];
        s->name = node_name[i];
        s->metadata = NULL;
        s->flags = i == 0 ? 0 : ARROW_FLAG_NULLABLE;
        s->n_children = count;
        s->children = count ? &b->children[first] : NULL;
        s->dictionary = NULL;
        s->release = release_schema;
        s->private_data = b;
    }
    return b;
}

/* Capsules own a malloc'd struct; pyarrow moves its content out (release set to NULL) when it imports. */
static void
schema_capsule_free(PyObject *capsule)
{
    struct ArrowSchema *s = PyCapsule_GetPointer(capsule, "arrow_schema");
    if (s == NULL)
        return;
    if (s->release != NULL)
        s->release(s);
    free(s);
}

static void
array_capsule_free(PyObject *capsule)
{
    struct ArrowArray *a = PyCapsule_GetPointer(capsule, "arrow_array");
    if (a == NULL)
        return;
    if (a->release != NULL)
        a->release(a);
    free(a);
}

static PyObject *
schema_capsule(void)
{
    schema_block_t *b = export_schema();
    struct ArrowSchema *top = b == NULL ? NULL : malloc(sizeof *top);
    if (top == NULL) {
        if (b != NULL) { /* nothing was handed out yet */
            free(b);
            atomic_fetch_sub(&blocks_alive, 1);
        }
        return PyErr_NoMemory();
    }
    *top = b->nodes[0]; /* the top node moved into the capsule's struct */
    PyObject *cap = PyCapsule_New(top, "arrow_schema", schema_capsule_free);
    if (cap == NULL) {
        top->release(top);
        free(top);
    }
    return cap;
}

/* The buffers that grow with the rows (not the bitmaps), in a fixed order. */
#define N_SIZED 12

static void
columns_sized(columns_t *c, buf_t **out)
{
    buf_t *all[N_SIZED] = {&c->position,          &c->offset,          &c->timestamp,         &c->key.offsets,
                           &c->key.data,          &c->value.offsets,   &c->value.data,        &c->header_offsets,
                           &c->header_key.offsets, &c->header_key.data, &c->header_value.offsets,
                           &c->header_value.data};
    memcpy(out, all, sizeof all);
}

/* A restarted builder's buffers sized for a batch like the one just exported (and a quarter more),
 * taken from the recycled ones when one fits: the next batch's rows go in without growing them, each
 * growth a realloc that copies the buffer (3% of an in-process `scan --out` before). A failure is no
 * error here (the rows then grow the buffers as before). */
static void
columns_presize(columns_t *c, const size_t *used)
{
    buf_t *sized[N_SIZED];
    columns_sized(c, sized);
    for (int k = 0; k < N_SIZED; k++) {
        buf_t *b = sized[k];
        size_t want = used[k] + used[k] / 4, cap;
        if (want <= b->cap)
            continue;
        unsigned char *p = want >= POOL_MIN ? pool_take(want, &cap) : NULL;
        if (p != NULL) {
            if (b->len)
                memcpy(p, b->data, b->len);
            free(b->data);
        }
        else if ((p = realloc(b->data, want)) != NULL)
            cap = want;
        else
            continue;
        b->data = p;
        b->cap = cap;
    }
}

/* finish(file, topic, partition) -> (schema capsule, array capsule): the rows so far, the builder
 * emptied; the file, topic and partition columns hold the given values on every row. */
PyObject *
columns_finish(columns_t *c, PyObject *args)
{
    PyObject *file, *topic, *partition;
    if (!PyArg_ParseTuple(args, "UOO", &file, &topic, &partition))
        return NULL;
    if (topic != Py_None && !PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "topic must be a str or None");
        return NULL;
    }
    size_t used[N_SIZED];
    buf_t *sized[N_SIZED];
    columns_sized(c, sized);
    for (int k = 0; k < N_SIZED; k++)
        used[k] = sized[k]->len;
    PyObject *schema = schema_capsule();
    if (schema == NULL)
        return NULL;
    array_block_t *b = export_columns(c, file, topic, partition);
    if (b == NULL) {
        Py_DECREF(schema);
        return NULL;
    }
    columns_free(c); /* what export_columns did not move: the bitmaps of columns without nulls */
    int restarted = columns_init(c);
    if (restarted == 0)
        columns_presize(c, used);
    struct ArrowArray *top = malloc(sizeof *top);
    if (top == NULL) {
        b->arrays[0].release(&b->arrays[0]);
        Py_DECREF(schema);
        return PyErr_NoMemory();
    }
    *top = b->arrays[0];
    PyObject *array = PyCapsule_New(top, "arrow_array", array_capsule_free);
    if (array == NULL) {
        top->release(top);
        free(top);
        Py_DECREF(schema);
        return NULL;
    }
    if (restarted < 0) {
        Py_DECREF(schema);
        Py_DECREF(array);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, schema, array);
    Py_DECREF(schema);
    Py_DECREF(array);
    return out;
}

PyObject *
columns_schema(PyObject *cls, PyObject *unused)
{
    (void)cls;
    (void)unused;
    return schema_capsule();
}

PyObject *
arrow_blocks_alive(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(atomic_load(&blocks_alive));
}
