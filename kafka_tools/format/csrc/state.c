/*
 * The module's state as every entry point reads it (speedups.h, speedups_state): apart from module.c,
 * which names every entry point in its method table, so that the entry points depend on this file and
 * module.c on them, one way.
 */
#include "speedups.h"

speedups_state *
state_of(PyObject *module)
{
    return (speedups_state *)PyModule_GetState(module);
}

speedups_state *
configured_state(PyObject *module)
{
    speedups_state *st = state_of(module);
    if (st->record_type != NULL && st->decode_error != NULL)
        return st;
    PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
    return NULL;
}

void
raise_at(PyObject *error_class, const char *message, Py_ssize_t position)
{
    PyObject *exc = PyObject_CallFunction(error_class, "sn", message, position);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}
