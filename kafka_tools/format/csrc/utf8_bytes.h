/*
 * UTF-8 for the dump-log writers (out_buffer.h): a sequence's length and copy, an ill-formed one as
 * Python's decode(errors="replace") turns it into U+FFFD, and what each byte that begins no sequence
 * becomes in a JSON string and in a text line (a table, one branch a byte). Inline.
 */
#ifndef KTOOL_UTF8_BYTES_H
#define KTOOL_UTF8_BYTES_H

#include "speedups.h"
#include <string.h>

/* Length of the UTF-8 sequence at s[i] (*ok = 1), or of the maximal subpart of an ill-formed one that
 * Python's decode(errors="replace") turns into one U+FFFD (*ok = 0): a bad lead byte alone, else the
 * lead and the continuation bytes that were still acceptable. */
static inline Py_ssize_t
utf8_step(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, int *ok)
{
    unsigned char c = s[i];
    *ok = 1;
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4) {
        *ok = 0;
        return 1;
    }
    int need = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    for (int j = 1; j <= need; j++) {
        if (i + j >= n) {
            *ok = 0;
            return j;
        }
        unsigned char b = s[i + j];
        if (b < lo || b > hi) {
            *ok = 0;
            return j;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* The UTF-8 sequence at s[i] to d, or U+FFFD for an ill-formed one (as decode(errors="replace")):
 * the bytes of s it took. d has room for 4 bytes. *wrote: the bytes written. */
static inline Py_ssize_t
utf8_copy(char *d, const unsigned char *s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t *wrote)
{
    int ok = 0;
    Py_ssize_t len = 1;
    if (s[i] >= 0xC2 && s[i] <= 0xF4) /* else a byte no sequence starts with (most of random bytes) */
        len = utf8_step(s, n, i, &ok);
    if (ok) {
        memcpy(d, s + i, (size_t)len);
        *wrote = len;
    }
    else {
        memcpy(d, "\xEF\xBF\xBD", 3);
        *wrote = 3;
    }
    return len;
}

/* What a byte that does not begin a UTF-8 sequence (every byte but C2-F4) becomes on its own: in a JSON
 * string (itself, `\"`, `\n`, `\u00XX`, or U+FFFD past ASCII) and in a text line (itself, `\\`, or
 * `\xNN`). A table, so that binary keys, values and headers (random bytes: most of them need a look)
 * take one branch a byte, whether it begins a sequence, rather than one per class. Each entry is 8
 * bytes, copied whole: the JSON writer reserves 6 a byte and 18 more, the text writer 4 a byte and 8. */
typedef struct {
    char s[7];
    unsigned char len;
} byte_out_t;

static byte_out_t json_byte[256], text_byte[256];
static unsigned char utf8_lead[256]; /* 1 for C2-F4: the bytes a UTF-8 sequence of 2-4 may begin with */
static int byte_tables_ready;

static void
byte_tables_init(void)
{
    static const char hex[] = "0123456789abcdef";
    for (int c = 0; c < 256; c++) {
        byte_out_t *j = &json_byte[c], *t = &text_byte[c];
        utf8_lead[c] = c >= 0xC2 && c <= 0xF4;
        if (c >= 0x80) {
            memcpy(j->s, "\xEF\xBF\xBD", 3);
            j->len = 3;
        } else if (c == '"' || c == '\\') {
            j->s[0] = '\\';
            j->s[1] = (char)c;
            j->len = 2;
        } else if (c >= 0x20) {
            j->s[0] = (char)c;
            j->len = 1;
        } else {
            const char *two = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (two != NULL) {
                memcpy(j->s, two, 2);
                j->len = 2;
            } else {
                memcpy(j->s, "\\u00", 4);
                j->s[4] = hex[c >> 4];
                j->s[5] = hex[c & 15];
                j->len = 6;
            }
        }
        if (c == '\\') {
            memcpy(t->s, "\\\\", 2);
            t->len = 2;
        } else if ((c >= 0x20 && c < 0x7F) || c == '\t') {
            t->s[0] = (char)c;
            t->len = 1;
        } else {
            t->s[0] = '\\';
            t->s[1] = 'x';
            t->s[2] = hex[c >> 4];
            t->s[3] = hex[c & 15];
            t->len = 4;
        }
    }
    byte_tables_ready = 1;
}

#endif /* KTOOL_UTF8_BYTES_H */
