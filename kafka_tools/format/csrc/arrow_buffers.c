/*
 * The buffers of the records table's columns (arrow_buffers.h): growth, binary columns' nulls, marks and
 * rollback, and the pool that recycles the buffers of released batches.
 */
#include <stdatomic.h>

#include "arrow_buffers.h"


/* The growth of buf_reserve, out of line: the check that there is room is all a row usually costs. */
__attribute__((noinline)) int
buf_grow(buf_t *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    unsigned char *p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}


int
binary_init(binary_t *c)
{
    memset(c, 0, sizeof *c);
    return buf_i32(&c->offsets, 0);
}

/* The first null of a column: its validity bitmap starts here, every row before it valid. Bitmaps are
 * kept only while a column holds a null (nulls > 0): a column without any is exported with none, and
 * a row costs no bit (most columns: value, header key, offsets). 0, or -1 (memory). */
__attribute__((noinline)) int
binary_first_null(binary_t *c)
{
    size_t full = (size_t)(c->rows / 8), bytes = full + 1;
    c->valid.len = 0;
    if (buf_reserve(&c->valid, bytes) < 0)
        return -1;
    memset(c->valid.data, 0xff, full);
    c->valid.data[full] = (unsigned char)((1u << (c->rows % 8)) - 1);
    c->valid.len = bytes;
    return 0;
}


binary_mark_t
binary_mark(const binary_t *c)
{
    binary_mark_t m = {c->data.len, c->valid.len, c->rows, c->nulls};
    return m;
}

void
binary_rollback(binary_t *c, binary_mark_t m)
{
    c->data.len = m.data;
    c->valid.len = m.valid;
    c->rows = m.rows;
    c->nulls = m.nulls;
    c->offsets.len = (size_t)(m.rows + 1) * 4;
    if (m.nulls && m.rows % 8) /* bits past the last row are set again as rows come */
        c->valid.data[m.rows / 8] &= (unsigned char)((1u << (m.rows % 8)) - 1);
}

void
binary_free(binary_t *c)
{
    free(c->offsets.data);
    free(c->data.data);
    free(c->valid.data);
    memset(c, 0, sizeof *c);
}

/* ---- recycled buffers ------------------------------------------------------------------------------------ */

/* The buffers of an exported batch, once pyarrow releases it, are kept here for the batches to come
 * (columns_presize): a new batch then writes into pages already mapped, where fresh ones cost a page
 * fault each (freed and allocated again a batch, 3-4 us a page here: more than the realloc copies) and
 * its buffers never grow by copying. At most POOL_SLOTS buffers and POOL_BYTES, the oldest dropped
 * first; pyarrow may release on any thread, without the GIL, hence the lock. */
#define POOL_SLOTS 48
#define POOL_BYTES ((size_t)128 << 20) /* a batch of each of the in-process scan's 4 lanes, at 65,536 rows */

static struct {
    unsigned char *data;
    size_t cap;
} pool[POOL_SLOTS];
static int pool_n;
static size_t pool_bytes;
static atomic_flag pool_busy = ATOMIC_FLAG_INIT;

static void
pool_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&pool_busy, memory_order_acquire))
        ;
}

static void
pool_unlock(void)
{
    atomic_flag_clear_explicit(&pool_busy, memory_order_release);
}

/* Keep `p` (`cap` bytes; 0: not a builder's buffer) for a later batch, or free it. */
void
pool_put(void *p, size_t cap)
{
    void *drop[POOL_SLOTS + 1];
    int n_drop = 0;
    if (p != NULL && cap >= POOL_MIN && cap <= POOL_BYTES) {
        pool_lock();
        while (pool_n > 0 && (pool_n == POOL_SLOTS || pool_bytes + cap > POOL_BYTES)) {
            drop[n_drop++] = pool[0].data; /* the oldest */
            pool_bytes -= pool[0].cap;
            memmove(&pool[0], &pool[1], (size_t)(pool_n - 1) * sizeof pool[0]);
            pool_n--;
        }
        pool[pool_n].data = p;
        pool[pool_n].cap = cap;
        pool_n++;
        pool_bytes += cap;
        pool_unlock();
        p = NULL;
    }
    free(p);
    for (int i = 0; i < n_drop; i++)
        free(drop[i]);
}

/* A kept buffer of `want` to 2 * `want` bytes (the smallest), its capacity in *cap; or NULL. */
unsigned char *
pool_take(size_t want, size_t *cap)
{
    unsigned char *p = NULL;
    pool_lock();
    int best = -1;
    for (int i = 0; i < pool_n; i++)
        if (pool[i].cap >= want && pool[i].cap / 2 <= want && (best < 0 || pool[i].cap < pool[best].cap))
            best = i;
    if (best >= 0) {
        p = pool[best].data;
        *cap = pool[best].cap;
        pool_bytes -= *cap;
        memmove(&pool[best], &pool[best + 1], (size_t)(pool_n - best - 1) * sizeof pool[0]);
        pool_n--;
    }
    pool_unlock();
    return p;
}
