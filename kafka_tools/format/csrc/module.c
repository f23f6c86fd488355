/*
 * kafka_tools.format._speedups: the module. Its state (state.c) holds what configure() and
 * kraft_configure() are given (the types to make, the errors to raise), one copy per module object; the
 * entry points are in records_v2.c, messages_v01.c, writers.c, kraft.c and arrow_records.c. This file
 * names them all, so none of them calls back into it: the state they read is state.c's.
 */
#include "speedups.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *rtype, *err;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &rtype, &err))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rtype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record type must be a tuple subclass");
        return NULL;
    }
    speedups_state *st = state_of(module);
    Py_XSETREF(st->record_type, (PyTypeObject *)Py_NewRef(rtype));
    Py_XSETREF(st->decode_error, Py_NewRef(err));
    Py_RETURN_NONE;
}

/* keep_freed_memory(): the writers hand back one bytes object a batch (a few hundred KiB), freed as
 * soon as it is written. glibc returns such a block to the kernel when it is freed (unmapped, or the
 * heap's top trimmed), so the next batch's block is faulted in and zeroed page by page again: a fifth
 * of the JSON writer's time. Blocks under 16 MiB from the heap, and its top kept up to 64 MiB, make
 * the next batch reuse the same pages (peak RSS unchanged: those pages were in use at the peak). */
static PyObject *
keep_freed_memory(PyObject *module, PyObject *noargs)
{
    (void)module;
    (void)noargs;
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"keep_freed_memory", keep_freed_memory, METH_NOARGS,
     "keep_freed_memory(): freed blocks under 16 MiB stay in the process for the next (glibc; else nothing)"},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> list"},
    {"iter_records", iter_records, METH_VARARGS,
     "iter_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> iterator: "
     "decode_records' records one at a time (its error when the damaged record is reached)"},
    {"record_stats", record_stats, METH_VARARGS,
     "record_stats(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> (records, "
     "min_timestamp or None): decode_records' count and smallest timestamp, no Record made"},
    {"scan_messages", scan_messages, METH_VARARGS,
     "scan_messages(buf, at, limit, end, prev, lo, hi) -> (at, count, first, last, max_timestamp, gaps)"},
    {"scan_inner", scan_inner, METH_VARARGS, "scan_inner(data) -> (count, first, last, highest) or None"},
    {"format_messages", format_messages, METH_VARARGS,
     "format_messages(buf, position, json, print_data, file_json[, wrapper_position, shift, append_time]) -> bytes"},
    {"format_records", format_records, METH_VARARGS,
     "format_records(records, label, print_data) -> bytes: DumpLogSegments' record lines (UTF-8)"},
    {"format_payload", format_payload, METH_VARARGS,
     "format_payload(data, count, base_offset, base_timestamp, log_append_time, base_sequence, label, print_data, "
     "check_only[, file_json, batch_position, head]) -> bytes (or the count): the record lines from the records "
     "section, after `head`"},
    {"scan_batches", scan_batches, METH_VARARGS,
     "scan_batches(buf, at, limit, end, prev, lo, hi, wanted, shift[, check_crc]) -> "
     "(at, count, records, first, last, max_timestamp, gaps, hits)"},
    {"remote_span_events", remote_span_events, METH_VARARGS,
     "remote_span_events(buf, at, end, limit) -> (events, next): a span's __remote_log_metadata events"},
    {"batch_columns", batch_columns, METH_VARARGS,
     "batch_columns(buf, at, limit, max_rows) -> (rows, at, columns, bits): the batches table's columns of "
     "the plain v2 batches from buf[at]"},
    {"snappy_decompress", snappy_decompress, METH_VARARGS,
     "snappy_decompress(data, limit) -> bytes or None: a snappy payload (xerial or one raw block) decoded "
     "whole, or None for anything it does not decode exactly (the caller's decoder then says why)"},
    {"crc32", crc32_py, METH_VARARGS, "crc32(data) -> int: CRC32 as zlib.crc32 gives it (message_crc's)"},
    {"crc32c", crc32c_py, METH_VARARGS,
     "crc32c(data, value=0, software=False) -> int: CRC-32C (Castagnoli), continuing from `value`"},
    {"record_columns", record_columns, METH_NOARGS,
     "record_columns() -> RecordColumns: the records table's columns, built in C, exported as Arrow"},
    {"arrow_blocks_alive", arrow_blocks_alive, METH_NOARGS,
     "arrow_blocks_alive() -> int: exported Arrow arrays and schemas not yet released"},
    {"configure", configure, METH_VARARGS, "configure(record_type, error_type): set the types to produce"},
    {"slot_fields", slot_fields, METH_O,
     "slot_fields(cls): read a tuple subclass's _fields as slots (item i of the tuple), not item getters"},
    {"kraft_configure", kraft_configure, METH_VARARGS,
     "kraft_configure(table, label, types, record_class, attrs, error_class[, fallback]): table 0 (KRaft) or "
     "1 (__remote_log_metadata), types {id: (name, {version: Program})}, attrs the record's 8 attribute "
     "names (frame, type id, type name, version, fields, known, raw, layout; None: not kept)"},
    {"kraft_decode_metadata", kraft_decode_metadata, METH_O,
     "kraft_decode_metadata(value) -> MetadataRecord: decode_metadata_record in C"},
    {"kraft_decode_remote", kraft_decode_remote, METH_O,
     "kraft_decode_remote(value) -> RemoteLogMetadataRecord: decode_remote_log_metadata in C"},
    {"map_guard_install", map_guard_install, METH_NOARGS,
     "map_guard_install(): a SIGBUS in a map given to map_guard_add ends the process: one line, exit 3"},
    {"map_guard_add", map_guard_add, METH_VARARGS,
     "map_guard_add(map, path) -> slot: the map's pages are guarded, named `path` (-1: no slot free)"},
    {"map_guard_remove", map_guard_remove, METH_O, "map_guard_remove(slot): before the map is closed"},
    {NULL, NULL, 0, NULL},
};

static int
module_exec(PyObject *module)
{
    crc_init(); /* the same table every time: a second module object recomputes it harmlessly */
    crc32c_init();
    if (PyModule_AddIntConstant(module, "CRC32C_HARDWARE", crc32c_uses_hardware()) < 0)
        return -1;
    speedups_state *st = state_of(module);
    st->empty_tuple = PyTuple_New(0);
    return st->empty_tuple == NULL ? -1 : 0;
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    speedups_state *st = state_of(module);
    if (st == NULL)
        return 0;
    Py_VISIT(st->record_type);
    Py_VISIT(st->decode_error);
    Py_VISIT(st->columns_type);
    for (int i = 0; i < K_TABLES; i++) {
        int r = kraft_traverse(&st->kraft[i], visit, arg);
        if (r)
            return r;
    }
    return 0;
}

static int
module_clear(PyObject *module)
{
    speedups_state *st = state_of(module);
    if (st == NULL)
        return 0;
    Py_CLEAR(st->record_type);
    Py_CLEAR(st->decode_error);
    Py_CLEAR(st->empty_tuple);
    Py_CLEAR(st->columns_type);
    for (int i = 0; i < K_TABLES; i++)
        kraft_clear(&st->kraft[i]);
    return 0;
}

static void
module_free(void *module)
{
    module_clear((PyObject *)module);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "C hot loops of the format decoder.",
    .m_size = sizeof(speedups_state),
    .m_methods = methods,
    .m_slots = slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}
