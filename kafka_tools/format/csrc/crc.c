/*
 * CRC-32 (zlib's polynomial) of magic 0/1 messages: magic..end of value (LegacyRecord.java).
 */
#include "speedups.h"
#include <zlib.h>

/* CRC32 (zlib's polynomial) of a short message, slicing by 8 bytes: zlib's crc32 costs ~0.5 us a call
 * on a 100-byte message here (its set-up dominates), four times the walk's whole budget. */
static uint32_t crc_table[8][256];

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

uint32_t
message_crc(const unsigned char *p, Py_ssize_t at, const message_t *m)
{
    /* zlib's crc32 (for long messages) takes an unsigned int length: fed in pieces */
    const unsigned char *q = p + at + 16;
    Py_ssize_t left = (Py_ssize_t)m->size - 4;
    if (left < 4096)
        return crc32_short(q, left);
    uLong c = crc32(0L, Z_NULL, 0);
    while (left > 0) {
        uInt step = left > (1 << 30) ? (1u << 30) : (uInt)left;
        c = crc32(c, q, step);
        q += step;
        left -= step;
    }
    return (uint32_t)c;
}
