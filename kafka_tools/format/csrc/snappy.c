/*
 * Snappy payloads (codec 2), decoded from the format's description (google/snappy's
 * format_description.txt): the xerial framing Kafka's Java client writes (a 16-byte header, then
 * blocks each behind its int32 length) or one raw block, into one bytes object of the size the blocks
 * declare. A raw block is a varint of its uncompressed length, then elements: a literal (tag & 3 == 0)
 * or a copy of earlier output (1, 2, 3: 1-, 2- or 4-byte offsets).
 *
 * This decoder only ever answers for a payload it reads whole and exactly (every block fills its
 * declared length and ends where its bytes end); anything else gives None, and compression.py decodes
 * the payload with cramjam, which says what is wrong: the messages never depend on this file. Every
 * read is bounded by the block, every write by the output; no output is allocated past `limit` or
 * past what the blocks can hold (22 bytes per input byte, as compression.py bounds it).
 */
#include "speedups.h"

#include <string.h>

static const unsigned char XERIAL_MAGIC[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
#define XERIAL_HEADER 16

/* The uncompressed length a raw block states (at most 5 varint bytes, below 2^32): its value, and
 * where the elements start; -1 when it is cut, too long or too big. */
static long long
block_declared(const unsigned char *p, Py_ssize_t len, Py_ssize_t *start)
{
    unsigned long long v = 0;
    for (int i = 0; i < 5 && i < len; i++) {
        v |= (unsigned long long)(p[i] & 0x7F) << (7 * i);
        if (p[i] < 0x80) {
            *start = i + 1;
            return v <= 0xFFFFFFFFull ? (long long)v : -1;
        }
    }
    return -1;
}

/* 8 bytes from src to dst, as one load and one store (the areas may overlap only when dst - src >= 8) */
static inline void
copy8(unsigned char *dst, const unsigned char *src)
{
    uint64_t w;
    memcpy(&w, src, 8);
    memcpy(dst, &w, 8);
}

/* The elements of a raw block, p[0:len), into out[0:out_len): 0 when they fill it exactly and end with
 * the block, -1 otherwise. */
static int
block_decode(const unsigned char *p, const unsigned char *end, unsigned char *out, size_t out_len)
{
    unsigned char *op = out, *op_end = out + out_len;
    while (p < end) {
        unsigned t = *p++;
        size_t n, offset;
        if ((t & 3) == 0) { /* literal: its length - 1 in the tag, or in the 1-4 bytes after it */
            n = (t >> 2) + 1;
            if (n > 60) {
                size_t k = n - 60, v = 0;
                if (end - p < 4) /* as cramjam's decoder (the snap crate), which reads a 32-bit word here */
                    return -1;
                for (size_t i = 0; i < k; i++)
                    v |= (size_t)p[i] << (8 * i);
                p += k;
                n = v + 1;
            }
            size_t in_left = (size_t)(end - p), out_left = (size_t)(op_end - op);
            if (n > in_left || n > out_left)
                return -1;
            if (n <= 16 && in_left >= 16 && out_left >= 16) { /* short: 16 bytes, the rest rewritten after */
                copy8(op, p);
                copy8(op + 8, p + 8);
            }
            else
                memcpy(op, p, n);
            op += n;
            p += n;
            continue;
        }
        if ((t & 3) == 1) { /* 4-11 bytes, an 11-bit offset */
            if (p >= end)
                return -1;
            n = 4 + ((t >> 2) & 7);
            offset = ((size_t)(t >> 5) << 8) | p[0];
            p += 1;
        }
        else if ((t & 3) == 2) { /* 1-64 bytes, a 16-bit offset */
            if (end - p < 2)
                return -1;
            n = (t >> 2) + 1;
            offset = (size_t)p[0] | (size_t)p[1] << 8;
            p += 2;
        }
        else { /* 1-64 bytes, a 32-bit offset */
            if (end - p < 4)
                return -1;
            n = (t >> 2) + 1;
            offset = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
            p += 4;
        }
        size_t out_left = (size_t)(op_end - op);
        if (offset == 0 || offset > (size_t)(op - out) || n > out_left)
            return -1;
        const unsigned char *src = op - offset;
        if (offset >= 8 && out_left >= ((n + 7) & ~(size_t)7)) {
            /* each 8 bytes read lie before the 8 written (offset >= 8): the overlapping copy's bytes;
             * what is written past n is within the output and rewritten by what follows */
            for (size_t i = 0; i < n; i += 8)
                copy8(op + i, src + i);
        }
        else
            for (size_t i = 0; i < n; i++) /* a repeating pattern (offset < n) or the output's end */
                op[i] = src[i];
        op += n;
    }
    return op == op_end ? 0 : -1;
}

typedef struct {
    const unsigned char *p; /* the block's elements */
    Py_ssize_t len;         /* their bytes */
    Py_ssize_t size;        /* the block's bytes, its length preamble included */
    Py_ssize_t declared;
} block_t;

/* The raw blocks of a payload: the xerial framing's, or the payload as one block. Fills up to `room`
 * of them and gives how many there are (more than room: call again with room for them), or -1 when
 * the framing or a block's length preamble is not what the decoder takes. */
static Py_ssize_t
payload_blocks(const unsigned char *p, Py_ssize_t len, block_t *blocks, Py_ssize_t room)
{
    Py_ssize_t count = 0;
    Py_ssize_t pos = 0;
    int xerial = len >= 8 && memcmp(p, XERIAL_MAGIC, 8) == 0;
    if (xerial)
        pos = XERIAL_HEADER;
    while (xerial ? pos < len : count == 0) {
        Py_ssize_t n = len;
        if (xerial) {
            if (len - pos < 4)
                return -1;
            int32_t framed = be32s(p + pos);
            pos += 4;
            if (framed < 0 || framed > len - pos)
                return -1;
            n = framed;
        }
        Py_ssize_t start = 0;
        long long declared = block_declared(p + pos, n, &start);
        if (declared < 0)
            return -1;
        if (count < room) {
            blocks[count].p = p + pos + start;
            blocks[count].len = n - start;
            blocks[count].size = n;
            blocks[count].declared = (Py_ssize_t)declared;
        }
        count++;
        pos += n;
    }
    return count;
}

#define BLOCKS_ON_STACK 16

/* snappy_decompress(data, limit) -> bytes, or None: see the top of this file. */
PyObject *
snappy_decompress(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "y*n", &view, &limit))
        return NULL;
    const unsigned char *p = view.buf;
    PyObject *out = NULL;
    block_t stack_blocks[BLOCKS_ON_STACK], *blocks = stack_blocks;
    Py_ssize_t count = payload_blocks(p, view.len, blocks, BLOCKS_ON_STACK);
    if (count > BLOCKS_ON_STACK) {
        /* a block takes 5 bytes of the payload at least (length and preamble): count is bounded */
        blocks = PyMem_Malloc((size_t)count * sizeof(block_t));
        if (blocks == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        payload_blocks(p, view.len, blocks, count);
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* compression.py's bound: a snappy element gives 64 bytes from 3 at most, so ~22x */
        if (blocks[i].declared > 22 * blocks[i].size + 64 || blocks[i].declared > limit - total) {
            count = -1;
            break;
        }
        total += blocks[i].declared;
    }
    if (count < 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < count; i++) {
        const unsigned char *b = blocks[i].p;
        if (block_decode(b, b + blocks[i].len, o, (size_t)blocks[i].declared) < 0) {
            Py_SETREF(out, Py_NewRef(Py_None));
            break;
        }
        o += blocks[i].declared;
    }
done:
    if (blocks != stack_blocks)
        PyMem_Free(blocks);
    PyBuffer_Release(&view);
    return out;
}
