/* The records table's columns (arrow_records.c builds them, arrow_export.c hands them to pyarrow and
 * sets up and frees the builder's buffers): the Arrow C data interface and the builder. The buffers the
 * rows are appended to are arrow_buffers.h's, which knows nothing of this file. */
#ifndef KTOOL_ARROW_COLUMNS_H
#define KTOOL_ARROW_COLUMNS_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_buffers.h"
#include "record_reader.h"

/* ---- the Arrow C data interface (arrow/c/abi.h, stable ABI) ---------------------------------------- */

#define ARROW_FLAG_NULLABLE 2

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};


extern atomic_long blocks_alive; /* exported arrays and schemas not yet released: the leak tests read it */

/* ---- the builder ---------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *module;
    buf_t position, offset, timestamp;
    binary_t key, value;
    buf_t header_offsets; /* int32, rows + 1 */
    binary_t header_key, header_value;
    int64_t rows;
    int ready; /* buffers initialised */
} columns_t;

typedef struct {
    size_t fixed;
    binary_mark_t key, value, header_key, header_value;
    int64_t rows;
} mark_t;

/* arrow_records.c */
speedups_state *columns_state(columns_t *c);
/* arrow_export.c */
void columns_free(columns_t *c);
int columns_init(columns_t *c);
PyObject *columns_finish(columns_t *c, PyObject *args);
PyObject *columns_schema(PyObject *cls, PyObject *unused);

#endif
