/* The growable buffers and binary columns the records table's rows are appended to (the appends inline:
 * they are the per-record cost), and the pool that recycles the buffers of released batches; their
 * out-of-line part is arrow_buffers.c. Below arrow_columns.h: nothing here knows of Arrow or the builder. */
#ifndef KTOOL_ARROW_BUFFERS_H
#define KTOOL_ARROW_BUFFERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "speedups.h"

/* ---- growable buffers --------------------------------------------------------------------------------- */

typedef struct {
    unsigned char *data;
    size_t len, cap;
} buf_t;

/* The growth of buf_reserve, out of line: the check that there is room is all a row usually costs. */
int buf_grow(buf_t *b, size_t extra);

static inline int
buf_reserve(buf_t *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    return buf_grow(b, extra);
}

/* d[0..n) = s[0..n): up to 16 bytes in two overlapping moves (a header key, a short key or value),
 * without a call into the C library's memcpy for each. */
static inline void
copy_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
    if (n > 16)
        memcpy(d, s, n);
    else if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
        memcpy(d, &head, 8);
        memcpy(d + n - 8, &tail, 8);
    }
    else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, s, 4);
        memcpy(&tail, s + n - 4, 4);
        memcpy(d, &head, 4);
        memcpy(d + n - 4, &tail, 4);
    }
    else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

static inline int
buf_put(buf_t *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n) /* data is NULL before the first byte */
        copy_bytes(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static inline int
buf_i64(buf_t *b, int64_t v)
{
    return buf_put(b, &v, sizeof v);
}

static inline int
buf_i32(buf_t *b, int32_t v)
{
    return buf_put(b, &v, sizeof v);
}

/* A binary (or string) column: int32 offsets, data, and a validity bitmap when it has nulls. */
typedef struct {
    buf_t offsets, data, valid;
    int64_t rows, nulls;
} binary_t;

int binary_init(binary_t *c);
/* The first null of a column: its validity bitmap starts here (arrow_buffers.c). */
int binary_first_null(binary_t *c);

static inline int
binary_add(binary_t *c, const unsigned char *p, Py_ssize_t len)
{
    if (len < 0 || c->nulls) {
        if (c->nulls == 0) {
            if (binary_first_null(c) < 0)
                return -1;
        }
        else if (c->rows % 8 == 0) {
            unsigned char zero = 0;
            if (buf_put(&c->valid, &zero, 1) < 0)
                return -1;
        }
        if (len < 0) {
            c->nulls++;
            len = 0;
        }
        else
            c->valid.data[c->rows / 8] |= (unsigned char)(1u << (c->rows % 8));
    }
    if ((size_t)len > (size_t)INT32_MAX - c->data.len)
        return -1; /* never with the caller's bounds: MAX_DECOMPRESSED and the batch byte limit */
    if (buf_put(&c->data, p, (size_t)len) < 0 || buf_i32(&c->offsets, (int32_t)c->data.len) < 0)
        return -1;
    c->rows++;
    return 0;
}

typedef struct {
    size_t data, valid;
    int64_t rows, nulls;
} binary_mark_t;

binary_mark_t binary_mark(const binary_t *c);
void binary_rollback(binary_t *c, binary_mark_t m);
void binary_free(binary_t *c);

/* Recycled buffers (arrow_buffers.c): keep `p` (`cap` bytes) for a later batch, or free it; a kept
 * buffer of `want` to 2 * `want` bytes, its capacity in *cap, or NULL. */
#define POOL_MIN ((size_t)64 << 10) /* smaller buffers: freed (malloc reuses them well) */
void pool_put(void *p, size_t cap);
unsigned char *pool_take(size_t want, size_t *cap);

#endif
