/*
 * The C hot loops of kafka_tools.format, shared declarations. One file per concern, as format/ is split:
 *
 *   crc.c          CRC-32 of magic 0/1 messages, CRC-32C of v2 batches
 *   record_reader.h the v2 record reader (varints, lengths, headers: every bound checked once), inline
 *   records_v2.c   decode_records, which turns what the reader reads into Record tuples, record_stats
 *                  (a section's count and smallest timestamp, no tuple), and the reader's error texts
 *   snappy.c       snappy_decompress: a snappy payload (xerial or one raw block) into one bytes object
 *   batches_v2.c   scan_batches: validate's v2 header walk (framing, CRC-32C, header checks), totals only
 *   batch_columns.c batch_columns: the `batches` table's columns of a run of plain v2 batches
 *   messages_v01.c the magic 0/1 message reader and the walks scan_messages / scan_inner
 *   out_buffer.h   the writers' output (the bytes object handed back) and the escaping of keys and
 *                  values for text and JSON, valid UTF-8 as written, 16 bytes at a time, inline
 *   writers.c      the dump-log lines (text and JSON) of a record or a message, with format_records /
 *                  format_payload / format_messages: a reader plus a writer
 *   kraft.c        the table interpreter of framed metadata values (AbstractApiMessageSerde): one table
 *                  for __cluster_metadata (KRaft), one for __remote_log_metadata (tiered storage)
 *   kraft_tables.c those tables, compiled at import into kraft_programs.h's form, and freed
 *   arrow_records.c RecordColumns: the records table's Arrow columns, filled by the record readers
 *   arrow_buffers.c their growable buffers, binary columns and the pool of recycled buffers
 *                  (arrow_buffers.h: the appends, inline; it knows nothing of Arrow)
 *   arrow_export.c  their export through the Arrow C data interface (arrow_columns.h: the shared types),
 *                  and the builder's buffers set up and freed
 *   remote_events.c remote_span_events: a span's __remote_log_metadata records as the tiered replay's
 *                  flat events (an update record's fields, else its value), one call for many batches
 *   map_guard.c    the SIGBUS guard of ktool's mapped files: a page lost to a cut file is one line, exit 3
 *   state.c        the module's state as the entry points read it (set by configure())
 *   module.c       the module: configure(), method table, init (it names every entry point; none
 *                  calls back into it)
 *
 * Every reader here has the same contract as its pure-Python reference in format/: the same values, or
 * the same error with the same message and position. No input makes them read out of bounds or
 * allocate more than a small multiple of the input's size.
 */
#ifndef KTOOL_SPEEDUPS_H
#define KTOOL_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* ---- module state (state.c) ----------------------------------------------------------------------- */

typedef struct KProg KProg;

typedef struct {
    PyObject *name; /* NULL: no such type */
    long low, high;
    KProg **progs;  /* by version - low */
} KType;

#define K_MAX_TYPES 256
#define K_ATTRS 8

typedef struct {
    KType types[K_MAX_TYPES];
    PyObject *record_type; /* MetadataRecord, RemoteLogMetadataRecord */
    PyObject *error;       /* MetadataDecodeError */
    PyObject *fallback;    /* the known pre-release layouts (pre_release.py), tried on failure */
    PyObject *unknown_name;
    PyObject *label;          /* the table's name in a frame-version error ("metadata") */
    PyObject *attr[K_ATTRS];  /* the record's attribute for each value k_record makes (NULL: none) */
    Py_ssize_t slot[K_ATTRS]; /* byte offsets of the record's slots (0: set by attribute) */
} kraft_state;

/* The tables kraft_configure fills: one per topic whose values are framed metadata messages. */
enum { K_TABLE_KRAFT, K_TABLE_REMOTE, K_TABLES };

typedef struct {
    PyTypeObject *record_type; /* Record (a tuple subclass), from configure() */
    PyObject *decode_error;    /* RecordDecodeError, from configure() */
    PyObject *empty_tuple;
    PyObject *columns_type; /* RecordColumns (arrow_records.c), made on first use */
    kraft_state kraft[K_TABLES];
} speedups_state;

speedups_state *state_of(PyObject *module);
/* The state with configure() done, else NULL with RuntimeError set. */
speedups_state *configured_state(PyObject *module);
/* Raise error_class(message, position). */
void raise_at(PyObject *error_class, const char *message, Py_ssize_t position);

/* ---- big-endian integers as Kafka writes them; the caller has checked the bytes are there ---------- */

static inline int64_t
be64s(const unsigned char *q)
{
    return (int64_t)((uint64_t)q[0] << 56 | (uint64_t)q[1] << 48 | (uint64_t)q[2] << 40 | (uint64_t)q[3] << 32 |
                     (uint64_t)q[4] << 24 | (uint64_t)q[5] << 16 | (uint64_t)q[6] << 8 | (uint64_t)q[7]);
}

static inline uint32_t
be32u(const unsigned char *q)
{
    return (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | (uint32_t)q[3];
}

static inline int32_t
be32s(const unsigned char *q)
{
    return (int32_t)be32u(q);
}

/* A walk's [at, limit) as Python asked for it, kept inside a buffer of len bytes: limit no further than
 * the end, and a start outside the buffer walks nothing. */
static inline void
clamp_walk(Py_ssize_t len, Py_ssize_t *at, Py_ssize_t *limit)
{
    if (*limit > len)
        *limit = len;
    if (*at < 0 || *at > len)
        *at = len;
}

/* ---- the cursor: bytes p[pos..end), every read bounded by end ---------------------------------------- */

typedef struct {
    const unsigned char *p;
    Py_ssize_t pos, end;
} cursor_t;

/* Why a read failed; the texts equal the pure-Python decoder's (records_v2.c: failure_text). */
enum failure {
    OK = 0, PAST_END, TOO_LONG, BAD_LENGTH, BAD_KEY, BAD_VALUE, BAD_HEADER_COUNT, BAD_HEADER_KEY,
    BAD_HEADER_VALUE, FIELDS_MISMATCH, OFFSET_OVERFLOW, TIMESTAMP_OVERFLOW, STRAY_BYTES
};

/* Zigzag varint at the cursor: OK, PAST_END or TOO_LONG. Keeps the low 64 bits, as Java does. */
static inline int
cursor_varint(cursor_t *c, int64_t *out)
{
    Py_ssize_t i = c->pos;
    if (i < c->end && c->p[i] < 0x80) {
        uint64_t b = c->p[i];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        c->pos = i + 1;
        return OK;
    }
    if (i + 1 < c->end && c->p[i + 1] < 0x80) { /* two bytes: most lengths and deltas in records */
        uint64_t b = (uint64_t)(c->p[i] & 0x7F) | ((uint64_t)c->p[i + 1] << 7);
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        c->pos = i + 2;
        return OK;
    }
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (i >= c->end)
            return PAST_END;
        unsigned char b = c->p[i++];
        if (shift < 64)
            result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift >= 70)
            return TOO_LONG;
    }
    *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
    c->pos = i;
    return OK;
}

/* A key, value or header field: `len` bytes at p + at, or null (len -1). */
typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
} field_t;

/* ---- v2 records (records_v2.c) ---------------------------------------------------------------------- */

#define NO_SEQUENCE (-1)

typedef struct {
    Py_ssize_t count;
    long long base_offset, base_timestamp, base_sequence;
    int log_append; /* LogAppendTime: every record's timestamp is log_append_time */
    long long log_append_time;
} batch_t;

/* One record of a section, as read and checked: every length lies within the record. */
typedef struct {
    Py_ssize_t start, end; /* the record's bytes, its length varint included */
    long long offset, timestamp, sequence;
    field_t key, value;
    int64_t header_count;
    Py_ssize_t headers_at; /* the first header key's length varint */
} record_t;

/* The reader of a records section: records_next until it gives 0 (the section ends where the
 * batch's count says) or -1 (why, bad and at say what, records_raise raises it). The reader's
 * functions are inline, in record_reader.h. */
typedef struct {
    cursor_t c;
    batch_t batch;
    Py_ssize_t index; /* records read */
    int why;
    long long bad;   /* the value the failure names */
    Py_ssize_t at;   /* the failure's position in the section */
} records_t;

void records_raise(const records_t *r, PyObject *error_class);

/* The headers of a record records_next gave (already checked, so read without checks), or of a
 * Record tuple: headers_next gives 1 and the next key and value, 0 at the end, -1 with an exception
 * set (tuples only). */
typedef struct {
    const unsigned char *p;
    Py_ssize_t pos;
    int64_t left;
    PyObject *tuple; /* or headers of a Record tuple ((str, bytes | None) pairs) */
    Py_ssize_t index;
} headers_t;


/* Parse decode_records' batch arguments (data, count, base_offset, base_timestamp, log_append_time,
 * base_sequence, ...): 0, or -1 with an exception set. */
int parse_batch(PyObject *log_append_obj, batch_t *b);

/* The leading arguments of decode_records and format_payload, (data, count, base_offset, base_timestamp,
 * log_append_time, base_sequence), parsed and checked in one place: 0 with `view` held (the caller
 * releases it) and, when `rest` is given, the arguments after them in *rest (a new reference; without
 * `rest` there must be none); -1 with an exception set and nothing held. */
int records_args(PyObject *args, Py_buffer *view, batch_t *b, PyObject **rest);

/* The start of every call that reads one records section: the module's state (configured) and
 * records_args' arguments, in one place. 0 with `call->view` held (the caller releases it); -1 with an
 * exception set and nothing held. */
typedef struct {
    speedups_state *st;
    Py_buffer view;
    batch_t b;
} records_call_t;
int records_call(PyObject *module, PyObject *args, records_call_t *call, PyObject **rest);

PyObject *decode_records(PyObject *module, PyObject *args);
PyObject *iter_records(PyObject *module, PyObject *args);
PyObject *record_stats(PyObject *module, PyObject *args);
/* snappy.c */
PyObject *snappy_decompress(PyObject *module, PyObject *args);
PyObject *slot_fields(PyObject *module, PyObject *cls);

/* ---- magic 0/1 messages (messages_v01.c) ------------------------------------------------------------ */

typedef struct {
    int64_t offset;
    int32_t size;
    uint32_t crc;
    int magic;
    int attributes;
    int64_t timestamp;
    field_t key, value;
} message_t;

/* The message at p[at..end): 0 when it is one message_set.parse_message accepts, -1 otherwise. */
int read_message(const unsigned char *p, Py_ssize_t at, Py_ssize_t end, message_t *m);

PyObject *scan_messages(PyObject *module, PyObject *args);
PyObject *scan_inner(PyObject *module, PyObject *args);

/* ---- v2 header walk (batches_v2.c) ----------------------------------------------------------------- */

PyObject *scan_batches(PyObject *module, PyObject *args);
/* remote_events.c */
PyObject *remote_span_events(PyObject *module, PyObject *args);
PyObject *batch_columns(PyObject *module, PyObject *args); /* batch_columns.c */

/* RecordColumns (arrow_records.c) as batch_columns fills it in its walk: record_columns_check, 0 when
 * obj is one (else -1, TypeError set); record_columns_full, whether it holds max_rows rows or max_bytes of
 * keys, values and headers; record_columns_add_section, the records of one v2 records section for the batch
 * at `position`, with their count and smallest timestamp: 0, 1 when they cannot be read (no row added),
 * -1 with an exception set. */
int record_columns_check(PyObject *module, PyObject *obj);
int record_columns_full(PyObject *obj, Py_ssize_t max_rows, Py_ssize_t max_bytes);
int record_columns_add_section(PyObject *obj, const unsigned char *p, Py_ssize_t len, const batch_t *b,
                               int64_t position, Py_ssize_t *count, long long *min_ts);

/* ---- CRC-32 (crc.c) ---------------------------------------------------------------------------------- */

void crc_init(void);
/* CRC-32 of a message: magic..end of value. */
uint32_t message_crc(const unsigned char *p, Py_ssize_t at, const message_t *m);
PyObject *crc32_py(PyObject *module, PyObject *args);
/* CRC-32C (Castagnoli): hardware (SSE4.2) when the CPU has it, else slicing by 8. crc32c_init first. */
void crc32c_init(void);
uint32_t crc32c_update(uint32_t crc, const unsigned char *q, size_t n);
int crc32c_uses_hardware(void);
PyObject *crc32c_py(PyObject *module, PyObject *args);

/* ---- output (writers.c) ------------------------------------------------------------------------------ */

PyObject *format_records(PyObject *module, PyObject *args);
PyObject *format_payload(PyObject *module, PyObject *args);
PyObject *format_messages(PyObject *module, PyObject *args);

/* ---- Arrow columns (arrow_records.c) ------------------------------------------------------------------ */

PyObject *record_columns(PyObject *module, PyObject *unused);
PyObject *arrow_blocks_alive(PyObject *module, PyObject *unused);

/* ---- KRaft (kraft.c) --------------------------------------------------------------------------------- */

PyObject *kraft_configure(PyObject *module, PyObject *args);
PyObject *kraft_decode_metadata(PyObject *module, PyObject *arg);
PyObject *kraft_decode_remote(PyObject *module, PyObject *arg);

/* map_guard.c: a SIGBUS in a registered map is one line and exit 3, never a signal */
PyObject *map_guard_install(PyObject *module, PyObject *unused);
PyObject *map_guard_add(PyObject *module, PyObject *args);
PyObject *map_guard_remove(PyObject *module, PyObject *arg);
void kraft_clear(kraft_state *k);
int kraft_traverse(kraft_state *k, visitproc visit, void *arg);

#endif
