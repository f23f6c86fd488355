/*
 * The dump-log writers' output (writers.c): a growing bytes object written in place (handed to Python
 * as it is, no copy of the whole output at the end), integers, and the escaping of keys, values and
 * header keys for text and JSON lines. Every writer here emits valid UTF-8 as it goes: what a
 * `.decode("utf-8", "replace")` of its raw bytes would give (an ill-formed byte run ends at the field's
 * end, and the separators around a field are ASCII, so fixing each field alone equals fixing the whole
 * output). The common case, printable ASCII, is checked and copied 16 bytes at a time (SSE2, part of
 * every x86-64; elsewhere 8 at a time in a 64-bit word).
 */
#ifndef KTOOL_OUT_BUFFER_H
#define KTOOL_OUT_BUFFER_H

#include "speedups.h"
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A failed allocation sets `failed` (and MemoryError) once; every write after it does nothing, so a
 * writer checks once, after a line. `bytes` is the result being filled: data points into it. */
typedef struct {
    PyObject *bytes;
    char *data;
    Py_ssize_t len, cap;
    int failed;
} out_t;

#define OUT_INIT {NULL, NULL, 0, 0, 0}

/* Room for `more` bytes: the common case inline, growing (or a failed buffer) out of line. A failed
 * buffer keeps cap == len, so every later reserve takes the slow path and fails. */
static int out_grow(out_t *o, Py_ssize_t more);

static inline int
out_reserve(out_t *o, Py_ssize_t more)
{
    if (more <= o->cap - o->len)
        return 0;
    return out_grow(o, more);
}

static int
out_grow(out_t *o, Py_ssize_t more)
{
    if (o->failed)
        return -1;
    if (more < 0 || more > PY_SSIZE_T_MAX / 4 - o->len)
        goto fail;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + more)
        cap *= 2;
    if (o->bytes == NULL)
        o->bytes = PyBytes_FromStringAndSize(NULL, cap);
    else
        _PyBytes_Resize(&o->bytes, cap); /* frees it and sets NULL on failure */
    if (o->bytes == NULL) {
        o->failed = 1;
        o->data = NULL;
        o->cap = o->len = 0;
        return -1; /* MemoryError set */
    }
    o->data = PyBytes_AS_STRING(o->bytes);
    o->cap = cap;
    return 0;
fail:
    o->failed = 1;
    o->cap = o->len;
    PyErr_NoMemory();
    return -1;
}

/* The bytes written (o is spent); NULL (the error set) when a write failed. */
static PyObject *
out_finish(out_t *o)
{
    PyObject *b = o->bytes;
    o->bytes = NULL;
    if (o->failed) {
        Py_XDECREF(b);
        return NULL;
    }
    if (b == NULL)
        return PyBytes_FromStringAndSize(NULL, 0);
    if (_PyBytes_Resize(&b, o->len) < 0)
        return NULL;
    return b;
}

static void
out_discard(out_t *o)
{
    Py_CLEAR(o->bytes);
}

static inline void
out_put(out_t *o, const char *s, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return;
    memcpy(o->data + o->len, s, (size_t)n);
    o->len += n;
}

#define PUT(o, lit) out_put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static inline void
out_char(out_t *o, char c)
{
    if (out_reserve(o, 1) < 0)
        return;
    o->data[o->len++] = c;
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

static inline void
out_int(out_t *o, long long v)
{
    if (out_reserve(o, 24) < 0)
        return;
    char *d = o->data + o->len;
    unsigned long long u = v;
    if (v < 0) {
        *d++ = '-';
        u = 0ULL - u;
    }
    /* the digits counted (compares, no division), then written from the last, in place */
    static const unsigned long long tens[19] = {
        10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
        1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
        100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
        1000000000000000000ULL, 10000000000000000000ULL};
    int digits = 1;
    while (digits < 20 && u >= tens[digits - 1])
        digits++;
    char *p = d + digits;
    while (u >= 100) {
        unsigned two = (unsigned)(u % 100) * 2;
        u /= 100;
        *--p = digit_pairs[two + 1];
        *--p = digit_pairs[two];
    }
    if (u >= 10) {
        *--p = digit_pairs[u * 2 + 1];
        *--p = digit_pairs[u * 2];
    }
    else
        *--p = (char)('0' + u);
    o->len = (d + digits) - o->data;
}

#include "utf8_bytes.h"

/* Copies s[i:] to d[i:] while the bytes are printable ASCII (0x20-0x7E); the index of the first that
 * is not (or n). May copy a few bytes past it (d has room for n bytes). */
static inline Py_ssize_t
copy_printable_ascii(char *d, const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
#if defined(__SSE2__)
    const __m128i under = _mm_set1_epi8(0x1F), del = _mm_set1_epi8(0x7F);
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        _mm_storeu_si128((__m128i *)(d + i), v);
        /* signed: 0x20-0x7F are the bytes greater than 0x1F; then DEL off */
        __m128i ok = _mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpgt_epi8(v, under));
        unsigned bad = ~(unsigned)_mm_movemask_epi8(ok) & 0xFFFFu;
        if (bad)
            return i + __builtin_ctz(bad);
        i += 16;
    }
#endif
    /* A byte past ASCII sets its top bit in w, one under 0x20 borrows into its top bit in
     * w - 0x20..20 (the lowest such byte at least, whatever the others), a DEL is a zero byte of
     * w ^ 0x7F..7F: any of them ends the word-at-a-time copy. */
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t x = w ^ 0x7F7F7F7F7F7F7F7FULL;
        if ((w | (w - 0x2020202020202020ULL) | ((x - 0x0101010101010101ULL) & ~x)) & 0x8080808080808080ULL)
            break;
        memcpy(d + i, &w, 8);
        i += 8;
    }
    while (i < n && s[i] >= 0x20 && s[i] < 0x7F) {
        d[i] = (char)s[i];
        i++;
    }
    return i;
}

/* Copies a key or value for a text line when it is printable text: valid UTF-8 without control
 * characters (C0 but the tab, DEL, C1), as render/values.py's printable_text decides. 1 when it was
 * (o->len moved past it), 0 when it is not (nothing counted as written). Room for n bytes reserved. */
static inline int
copy_if_printable(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    char *d = o->data + o->len;
    Py_ssize_t i = 0;
    for (;;) {
        i = copy_printable_ascii(d, s, i, n);
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c == '\t') {
            d[i++] = '\t';
            continue;
        }
        if (c < 0x80)
            return 0; /* C0 or DEL */
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (!ok || (c == 0xC2 && s[i + 1] < 0xA0))
            return 0; /* not UTF-8, or C1 */
        memcpy(d + i, s + i, (size_t)len);
        i += len;
    }
    o->len += n;
    return 1;
}

/* Nonzero when the 8 bytes of w hold one a JSON string cannot copy as it is (false alarms allowed, never
 * a miss): a byte past ASCII sets its top bit in w, one under 0x20 borrows into its top bit in
 * w - 0x20..20 (the lowest such byte at least), a `"` or `\` is a zero byte of w ^ 0x22..22 or
 * w ^ 0x5C..5C. */
static inline uint64_t
json_word_needs_look(uint64_t w)
{
    uint64_t q = w ^ 0x2222222222222222ULL, b = w ^ 0x5C5C5C5C5C5C5C5CULL;
    return (w | (w - 0x2020202020202020ULL) | ((q - 0x0101010101010101ULL) & ~q) | ((b - 0x0101010101010101ULL) & ~b)) &
           0x8080808080808080ULL;
}

/* JSON string of raw bytes: `"` `\` and control characters escaped as json.dumps does
 * (ensure_ascii=False), bytes that are not UTF-8 as U+FFFD (what decoding them with `replace` gives),
 * the rest as they are. */
static int
out_json_string(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    /* each byte takes at most 6 (\u00XX; an ill-formed run of 1-3 bytes takes 3), the quotes 2, and
     * the 16-byte copies below may write 16 past the end */
    if (out_reserve(o, n * 6 + 18) < 0)
        return -1;
    char *d = o->data + o->len;
    *d++ = '"';
    Py_ssize_t k = 0;
    if (n >= 8 && n < 16) {
        /* A short string (header keys, short values) as two words, the second ending it (they overlap):
         * copied whole when neither holds a byte to look at (a false alarm only takes the path below). */
        uint64_t first, last;
        memcpy(&first, s, 8);
        memcpy(&last, s + n - 8, 8);
        if (!(json_word_needs_look(first) | json_word_needs_look(last))) {
            memcpy(d, &first, 8);
            memcpy(d + n - 8, &last, 8);
            d += n;
            k = n;
        }
    }
    while (k < n) {
#if defined(__SSE2__)
        /* 16 bytes at a time (the last block of a string of 16 or more: the 16 ending it, its first
         * `from` bytes done already). Signed, the bytes under 0x20 are the controls and every byte
         * past ASCII: those stop the block for the byte-by-byte path below; a `"` or `\` (values
         * are often JSON themselves) is escaped here, the plain runs around it copied 16 at a time
         * from a copy of the block (the output has 16 bytes of room beyond what is left to write). */
        const __m128i under = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
        while (n - k >= 16 || (n >= 16 && k < n)) {
            int from = 0;
            const unsigned char *base = s + k;
            if (n - k < 16) {
                from = 16 - (int)(n - k);
                base = s + n - 16;
            }
            __m128i v = _mm_loadu_si128((const __m128i *)base);
            unsigned qs = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)));
            unsigned stop = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(v, under));
            qs = qs >> from << from;
            stop = stop >> from << from;
            if (!(qs | stop) && !from) {
                _mm_storeu_si128((__m128i *)d, v);
                d += 16;
                k += 16;
                continue;
            }
            /* the 16 bytes from block byte `prev`: read from the string while it has them (a read
             * of the block copy would wait on its store), the copy for the string's last bytes */
            unsigned char block[32];
            _mm_storeu_si128((__m128i *)block, v);
            Py_ssize_t in_string = n - (base - s) - 16; /* block bytes `prev` may reach from s */
            int end = stop ? __builtin_ctz(stop) : 16, prev = from;
            for (unsigned q = qs & ((1u << end) - 1); q; q &= q - 1) {
                int t = __builtin_ctz(q);
                memcpy(d, prev <= in_string ? base + prev : block + prev, 16);
                d += t - prev;
                d[0] = '\\';
                d[1] = (char)base[t];
                d += 2;
                prev = t + 1;
            }
            memcpy(d, prev <= in_string ? base + prev : block + prev, 16);
            d += end - prev;
            k += end - from;
            if (stop)
                break;
        }
#else
        /* 8 at a time: the word-at-a-time copy stops at the word holding a byte to look at */
        while (n - k >= 8) {
            uint64_t w;
            memcpy(&w, s + k, 8);
            if (json_word_needs_look(w))
                break;
            memcpy(d, &w, 8);
            d += 8;
            k += 8;
        }
#endif
        /* short strings and what is left: the plain bytes one by one */
        while (k < n && (unsigned char)(s[k] - 0x20) < 0x60 && s[k] != '"' && s[k] != '\\')
            *d++ = (char)s[k++];
        if (k >= n)
            break;
        /* bytes that need a look, one by one while they come often (binary values): back to the
         * runs above after 8 plain ones in a row */
        if (!byte_tables_ready)
            byte_tables_init();
        int plain = 0;
        do {
            unsigned char c = s[k];
            if (utf8_lead[c]) {
                Py_ssize_t wrote;
                k += utf8_copy(d, s, n, k, &wrote);
                d += wrote;
                plain = 0;
                continue;
            }
            const byte_out_t *e = &json_byte[c];
            memcpy(d, e->s, 8);
            d += e->len;
            k++;
            plain = (plain + 1) & -(int)(e->len == 1);
        } while (plain < 8 && k < n);
    }
    *d++ = '"';
    o->len = d - o->data;
    return 0;
}

/* Copy a key or value for a text line: as it is when printable, else escaped as printable_text does
 * (each byte not part of a printable character as \xNN, a backslash doubled), so that nothing raw
 * reaches a terminal. */
static int
out_text(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    /* 4 a byte, and 8 beyond for the table's whole-entry copies */
    if (out_reserve(o, n * 4 + 8) < 0)
        return -1;
    if (copy_if_printable(o, s, n))
        return 0;
    if (!byte_tables_ready)
        byte_tables_init();
    char *d = o->data + o->len; /* a local pointer: stores through it cannot change o */
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (!utf8_lead[c]) {
            const byte_out_t *e = &text_byte[c];
            memcpy(d, e->s, 8);
            d += e->len;
            i++;
            continue;
        }
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (ok && !(c == 0xC2 && s[i + 1] < 0xA0)) {
            memcpy(d, s + i, (size_t)len);
            d += len;
        } else {
            for (Py_ssize_t j = 0; j < len; j++) { /* an ill-formed run, or a C1 control: \xNN each */
                memcpy(d, text_byte[s[i + j]].s, 4);
                d += 4;
            }
        }
        i += len;
    }
    o->len = d - o->data;
    return 0;
}

/* A header key for a text line: as it is unless it holds a control character (C0 but the tab, DEL,
 * C1), then with those as \xNN and a backslash doubled; bytes that are not UTF-8 as U+FFFD (the
 * Python path decodes keys with errors="replace"). render/values.py's printable_name does the same. */
static int
out_name(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (out_reserve(o, n * 4) < 0)
        return -1;
    char *d = o->data + o->len;
    Py_ssize_t i = copy_printable_ascii(d, s, 0, n); /* most keys: nothing else to do */
    if (i >= n) {
        o->len += n;
        return 0;
    }
    int control = 0;
    for (Py_ssize_t j = i; j < n && !control; j++) {
        unsigned char c = s[j];
        control = (c < 0x20 && c != '\t') || c == 0x7F || (c == 0xC2 && j + 1 < n && s[j + 1] >= 0x80 && s[j + 1] < 0xA0);
    }
    if (control) {
        /* backslashes doubled from the first: start again */
        i = 0;
    }
    d += i;
    while (i < n) {
        unsigned char c = s[i];
        if (control) {
            int two = c == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xA0;
            if ((c < 0x20 && c != '\t') || c == 0x7F || two) {
                for (int j = 0; j <= two; j++) {
                    unsigned char b = s[i + j];
                    d[0] = '\\';
                    d[1] = 'x';
                    d[2] = hex[b >> 4];
                    d[3] = hex[b & 15];
                    d += 4;
                }
                i += 1 + two;
                continue;
            }
            if (c == '\\') {
                *d++ = '\\';
                *d++ = '\\';
                i++;
                continue;
            }
        }
        if (c < 0x80) {
            *d++ = (char)c;
            i++;
            continue;
        }
        Py_ssize_t wrote;
        i += utf8_copy(d, s, n, i, &wrote);
        d += wrote;
    }
    o->len = d - o->data;
    return 0;
}

#endif
