/*
 * CRC-32 (zlib's polynomial) of magic 0/1 messages: magic..end of value (LegacyRecord.java).
 */
#include "speedups.h"
#include <zlib.h>

/* CRC32 (zlib's polynomial) of a short message, slicing by 8 bytes: zlib's crc32 costs ~0.5 us a call
 * on a 100-byte message here (its set-up dominates), four times the walk's whole budget. */
static uint32_t crc_table[8][256];
static int crc32_clmul_ok; /* the CPU has PCLMULQDQ and SSE4.1 (crc_init) */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32_CPU_CHECK 1
#endif

void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
#ifdef CRC32_CPU_CHECK
    __builtin_cpu_init();
    crc32_clmul_ok = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

static inline uint32_t
crc32_short(const unsigned char *q, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t one = ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24) ^ c;
        uint32_t two = (uint32_t)q[4] | (uint32_t)q[5] << 8 | (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
        c = crc_table[7][one & 0xFF] ^ crc_table[6][(one >> 8) & 0xFF] ^ crc_table[5][(one >> 16) & 0xFF] ^
            crc_table[4][one >> 24] ^ crc_table[3][two & 0xFF] ^ crc_table[2][(two >> 8) & 0xFF] ^
            crc_table[1][(two >> 16) & 0xFF] ^ crc_table[0][two >> 24];
        q += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
    return ~c;
}

/*
 * CRC32 with PCLMULQDQ (carry-less multiply), for CPUs that have it (checked at run time): the
 * register is folded 16 bytes at a time, then reduced to 32 bits (Barrett), as in Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ"; the constants are x^k mod P for the reflected
 * polynomial 0xEDB88320. About four times the slicing-by-8 loop on a 120-byte message.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC32_HAVE_CLMUL 1

/* Byte shuffles for a tail of r (1-15) bytes, each read 16 bytes at (table + r): X[0..r) moved up to the
 * top r bytes, X[r..16) moved down (0x80: a zero byte; and blendv's mask for the tail). */
static const unsigned char clmul_shifts[32] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15};
static const unsigned char clmul_rshifts[32] = {
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

/* The raw register after `n` bytes (n at least 16), from register `c`. A tail of r = n % 16 bytes is
 * folded in one more step, not byte by byte (which cost as much as the folds on a 130-byte v0
 * message): the pending 16 bytes X and the tail T are 16 + r bytes, X[0..r) zero-padded to 16 (leading
 * zeros do not change a CRC whose register is in X) folded over X[r..16) || T, whose T is the last 16
 * bytes of the input read at once (n >= 16) with the bytes before T masked out. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc32_clmul(uint32_t c, const unsigned char *q, size_t n)
{
    const __m128i fold16 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0); /* hi R4, lo R3 */
    const __m128i r5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i poly = _mm_set_epi64x(0x1F7011641, 0x1DB710641); /* hi u', lo P' */
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)q), _mm_cvtsi32_si128((int)c));
    q += 16;
    n -= 16;
    while (n >= 16) {
        __m128i lo = _mm_clmulepi64_si128(x, fold16, 0x00);
        __m128i hi = _mm_clmulepi64_si128(x, fold16, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(lo, hi), _mm_loadu_si128((const __m128i *)q));
        q += 16;
        n -= 16;
    }
    if (n) {
        const __m128i last = _mm_loadu_si128((const __m128i *)(q + n - 16));
        const __m128i head = _mm_shuffle_epi8(x, _mm_loadu_si128((const __m128i *)(clmul_shifts + n)));
        const __m128i keep = _mm_loadu_si128((const __m128i *)(clmul_rshifts + n));
        /* keep's bytes are 0x80 (negative) where the tail goes: blendv takes `last` there */
        const __m128i body = _mm_blendv_epi8(_mm_shuffle_epi8(x, keep), last, keep);
        __m128i lo = _mm_clmulepi64_si128(head, fold16, 0x00);
        __m128i hi = _mm_clmulepi64_si128(head, fold16, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(lo, hi), body);
    }
    /* 128 -> 64 bits (adding 32 zero bits), then 64 -> 32 */
    __m128i t = _mm_clmulepi64_si128(x, fold16, 0x10); /* x.lo * R4 */
    x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
    t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), r5, 0x00);
    x = _mm_xor_si128(_mm_srli_si128(x, 4), t);
    /* Barrett reduction */
    t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10), mask32);
    t = _mm_clmulepi64_si128(t, poly, 0x00);
    x = _mm_xor_si128(x, t);
    return (uint32_t)_mm_extract_epi32(x, 1);
}
#endif

/* CRC32 of n bytes (the finished value, as zlib.crc32 gives it). */
static uint32_t
crc32_bytes(const unsigned char *q, size_t n)
{
#ifdef CRC32_HAVE_CLMUL
    if (crc32_clmul_ok && n >= 16)
        return ~crc32_clmul(0xFFFFFFFFu, q, n);
#endif
    return crc32_short(q, (Py_ssize_t)n);
}

PyObject *
crc32_py(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    uint32_t c = crc32_bytes(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

uint32_t
message_crc(const unsigned char *p, Py_ssize_t at, const message_t *m)
{
    /* zlib's crc32 (for long messages) takes an unsigned int length: fed in pieces */
    const unsigned char *q = p + at + 16;
    Py_ssize_t left = (Py_ssize_t)m->size - 4;
    if (left < 4096)
        return crc32_bytes(q, (size_t)left);
    uLong c = crc32(0L, Z_NULL, 0);
    while (left > 0) {
        uInt step = left > (1 << 30) ? (1u << 30) : (uInt)left;
        c = crc32(c, q, step);
        q += step;
        left -= step;
    }
    return (uint32_t)c;
}

/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of v2 batches (DefaultRecordBatch.java): with
 * SSE4.2's crc32 instruction when the CPU has it (checked at run time), else slicing by 8 bytes.
 *
 * The instruction has a latency of three cycles and a throughput of one, so the hardware path runs
 * three independent streams over three adjacent blocks and joins them: the CRC register is linear, so
 * crc(A || B) = zeros(crc(A), |B|) ^ crc(B) (from 0), where zeros(c, n) (the register after n zero
 * bytes) is itself linear in c and is read from four tables of 256 entries, made once per block size.
 */
#define CRC32C_POLY 0x82F63B78u
#define CRC32C_LONG 8192 /* bytes per stream in a long block (three streams: 24 KiB) */
#define CRC32C_SHORT 256 /* ... in a short block (768 bytes) */

static uint32_t crc32c_table[8][256];
static uint32_t crc32c_long[4][256], crc32c_short[4][256];
static int crc32c_hw_ok;

/* The register after `n` zero bytes, one byte at a time (only to make the tables). */
static uint32_t
crc32c_zeros_slow(uint32_t c, size_t n)
{
    while (n--)
        c = crc32c_table[0][c & 0xFF] ^ (c >> 8);
    return c;
}

static void
crc32c_zeros_table(uint32_t table[4][256], size_t n)
{
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++)
        basis[bit] = crc32c_zeros_slow(1u << bit, n);
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t c = 0;
            for (int bit = 0; bit < 8; bit++)
                if (b & (1u << bit))
                    c ^= basis[8 * k + bit];
            table[k][b] = c;
        }
}

static inline uint32_t
crc32c_shift(uint32_t table[4][256], uint32_t c)
{
    return table[0][c & 0xFF] ^ table[1][(c >> 8) & 0xFF] ^ table[2][(c >> 16) & 0xFF] ^ table[3][c >> 24];
}

static uint32_t
crc32c_soft(uint32_t c, const unsigned char *q, size_t n)
{
    while (n && ((uintptr_t)q & 7)) {
        c = crc32c_table[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t one = ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24) ^ c;
        uint32_t two = (uint32_t)q[4] | (uint32_t)q[5] << 8 | (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
        c = crc32c_table[7][one & 0xFF] ^ crc32c_table[6][(one >> 8) & 0xFF] ^
            crc32c_table[5][(one >> 16) & 0xFF] ^ crc32c_table[4][one >> 24] ^ crc32c_table[3][two & 0xFF] ^
            crc32c_table[2][(two >> 8) & 0xFF] ^ crc32c_table[1][(two >> 16) & 0xFF] ^
            crc32c_table[0][two >> 24];
        q += 8;
        n -= 8;
    }
    while (n--)
        c = crc32c_table[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <string.h>
#define CRC32C_HAVE_HW 1

static inline uint64_t
load64(const unsigned char *q)
{
    uint64_t v;
    memcpy(&v, q, 8); /* x86 is little-endian; memcpy keeps the compiler honest about alignment */
    return v;
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hard(uint32_t c32, const unsigned char *q, size_t n)
{
    uint64_t c = c32;
    while (n && ((uintptr_t)q & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *q++);
        n--;
    }
    while (n >= 3 * CRC32C_LONG) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = q + CRC32C_LONG;
        do {
            c = _mm_crc32_u64(c, load64(q));
            c1 = _mm_crc32_u64(c1, load64(q + CRC32C_LONG));
            c2 = _mm_crc32_u64(c2, load64(q + 2 * CRC32C_LONG));
            q += 8;
        } while (q < end);
        c = crc32c_shift(crc32c_long, (uint32_t)c) ^ (uint32_t)c1;
        c = crc32c_shift(crc32c_long, (uint32_t)c) ^ (uint32_t)c2;
        q += 2 * CRC32C_LONG;
        n -= 3 * CRC32C_LONG;
    }
    while (n >= 3 * CRC32C_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = q + CRC32C_SHORT;
        do {
            c = _mm_crc32_u64(c, load64(q));
            c1 = _mm_crc32_u64(c1, load64(q + CRC32C_SHORT));
            c2 = _mm_crc32_u64(c2, load64(q + 2 * CRC32C_SHORT));
            q += 8;
        } while (q < end);
        c = crc32c_shift(crc32c_short, (uint32_t)c) ^ (uint32_t)c1;
        c = crc32c_shift(crc32c_short, (uint32_t)c) ^ (uint32_t)c2;
        q += 2 * CRC32C_SHORT;
        n -= 3 * CRC32C_SHORT;
    }
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(q));
        q += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *q++);
    return (uint32_t)c;
}
#endif

void
crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^ crc32c_table[0][crc32c_table[t - 1][i] & 0xFF];
    crc32c_zeros_table(crc32c_long, CRC32C_LONG);
    crc32c_zeros_table(crc32c_short, CRC32C_SHORT);
#ifdef CRC32C_HAVE_HW
    __builtin_cpu_init();
    crc32c_hw_ok = __builtin_cpu_supports("sse4.2") != 0;
#endif
}

static uint32_t crc32c_pick(uint32_t crc, const unsigned char *q, size_t n, int hardware);

uint32_t
crc32c_update(uint32_t crc, const unsigned char *q, size_t n)
{
    return crc32c_pick(crc, q, n, crc32c_hw_ok);
}

static uint32_t
crc32c_pick(uint32_t crc, const unsigned char *q, size_t n, int hardware)
{
    uint32_t c = ~crc;
#ifdef CRC32C_HAVE_HW
    if (hardware)
        return ~crc32c_hard(c, q, n);
#endif
    return ~crc32c_soft(c, q, n);
}

int
crc32c_uses_hardware(void)
{
    return crc32c_hw_ok;
}

/* Inputs at least this long are checksummed with the GIL released (other threads walk other files). */
#define CRC32C_NOGIL 4096

PyObject *
crc32c_py(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    Py_buffer view;
    unsigned long value = 0;
    int software = 0;
    if (!PyArg_ParseTuple(args, "y*|kp", &view, &value, &software))
        return NULL;
    int hardware = crc32c_hw_ok && !software;
    uint32_t c;
    if (view.len >= CRC32C_NOGIL) {
        Py_BEGIN_ALLOW_THREADS
        c = crc32c_pick((uint32_t)value, view.buf, (size_t)view.len, hardware);
        Py_END_ALLOW_THREADS
    }
    else {
        c = crc32c_pick((uint32_t)value, view.buf, (size_t)view.len, hardware);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}
