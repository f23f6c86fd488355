/*
 * slot_fields: Record's fields read as slots of the tuple (no item getter call), for every decoder.
 */
#include "speedups.h"

#include <structmember.h> /* T_OBJECT_EX, READONLY */
#include <string.h>

/* slot_fields(cls): give the tuple subclass `cls` (Record) a read-only member descriptor per name of
 * cls._fields, reading the item of that index straight from the tuple, in place of namedtuple's
 * item getters. Python (3.11+) runs `record.offset` on such a descriptor as a slot read in the
 * interpreter loop, with no call: reading a record's fields was a third of a full decode's time.
 * Every instance must have all its items: Record() and Record._make() see to it (a shorter tuple
 * made with tuple.__new__(Record, ...) is not supported). The definitions live as long as the
 * process (a descriptor keeps a pointer to its definition): a few bytes once per class. */
PyObject *
slot_fields(PyObject *module, PyObject *cls)
{
    (void)module;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "slot_fields() takes a tuple subclass");
        return NULL;
    }
    PyObject *fields = PyObject_GetAttrString(cls, "_fields");
    if (fields == NULL)
        return NULL;
    if (!PyTuple_Check(fields)) {
        Py_DECREF(fields);
        PyErr_SetString(PyExc_TypeError, "_fields must be a tuple of names");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    PyMemberDef *defs = PyMem_RawCalloc((size_t)n + 1, sizeof(PyMemberDef));
    if (defs == NULL) {
        Py_DECREF(fields);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *name = PyUnicode_Check(PyTuple_GET_ITEM(fields, i))
                               ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields, i))
                               : NULL;
        char *copy = name == NULL ? NULL : PyMem_RawMalloc(strlen(name) + 1);
        if (copy == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "_fields must be a tuple of names");
            Py_DECREF(fields);
            return NULL; /* the definitions made so far stay (unused): this is never reached in use */
        }
        strcpy(copy, name);
        defs[i].name = copy;
        defs[i].type = T_OBJECT_EX;
        defs[i].offset = (Py_ssize_t)(offsetof(PyTupleObject, ob_item) + (size_t)i * sizeof(PyObject *));
        defs[i].flags = READONLY;
        defs[i].doc = NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *descr = PyDescr_NewMember((PyTypeObject *)cls, &defs[i]);
        if (descr == NULL || PyObject_SetAttrString(cls, defs[i].name, descr) < 0) {
            Py_XDECREF(descr);
            Py_DECREF(fields);
            return NULL;
        }
        Py_DECREF(descr);
    }
    Py_DECREF(fields);
    Py_RETURN_NONE;
}
