/*
 * The KRaft tables (kraft_configure): kafka_tools.format.kraft's programs, generated from Kafka's JSON
 * schemas, copied at import into the compact opcode form of kraft_programs.h, with the record class's
 * slots; freed with the module (kraft_clear, kraft_traverse). kraft.c interprets them.
 */

#include "kraft_programs.h"
#include <string.h>
#include <structmember.h>

static int kraft_table(kraft_state *ks, PyObject *types);
static int kraft_classes(kraft_state *ks, PyObject *rclass, PyObject *attrs, PyObject *err, PyObject *fallback);
static void k_free_prog(KProg *p);

/* -- the table, from kafka_tools.format.kraft.decoder.Program objects ------------------------------ */

static KProg *k_compile(PyObject *program);

static int
k_step(PyObject *step, KStep *s)
{
    /* step: (key, op, arg) as in decoder.Program.steps */
    if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != 3) {
        PyErr_SetString(PyExc_TypeError, "a KRaft step is (key, op, arg)");
        return -1;
    }
    PyObject *arg = PyTuple_GET_ITEM(step, 2);
    memset(s, 0, sizeof *s);
    s->key = Py_NewRef(PyTuple_GET_ITEM(step, 0));
    s->op = (int)PyLong_AsLong(PyTuple_GET_ITEM(step, 1));
    if (s->op == K_TAGGED)
        s->deflt = Py_NewRef(arg);
    else if (s->op == K_ARRAY) { /* (elem_op, elem_arg, nullable) */
        s->elem_op = (int)PyLong_AsLong(PyTuple_GET_ITEM(arg, 0));
        s->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(arg, 2));
        if (s->elem_op == K_STRUCT && (s->sub = k_compile(PyTuple_GET_ITEM(PyTuple_GET_ITEM(arg, 1), 0))) == NULL)
            return -1;
    }
    else if (s->op == K_STRUCT) { /* (program, nullable) */
        s->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(arg, 1));
        if ((s->sub = k_compile(PyTuple_GET_ITEM(arg, 0))) == NULL)
            return -1;
    }
    else
        s->nullable = PyObject_IsTrue(arg);
    return PyErr_Occurred() ? -1 : 0;
}

static KProg *
k_compile(PyObject *program)
{
    PyObject *steps = PyObject_GetAttrString(program, "steps");
    PyObject *tags = PyObject_GetAttrString(program, "tags");
    PyObject *flexible = PyObject_GetAttrString(program, "flexible");
    KProg *p = NULL;
    if (steps == NULL || tags == NULL || flexible == NULL || !PyTuple_Check(steps) || !PyDict_Check(tags))
        goto done;
    p = PyMem_Calloc(1, sizeof *p);
    if (p == NULL)
        goto done;
    p->flexible = PyObject_IsTrue(flexible);
    p->nsteps = PyTuple_GET_SIZE(steps);
    p->steps = PyMem_Calloc(p->nsteps + 1, sizeof(KStep));
    p->ntags = PyDict_GET_SIZE(tags);
    p->tags = PyMem_Calloc(p->ntags + 1, sizeof(KTag));
    if (p->steps == NULL || p->tags == NULL) {
        goto failed;
    }
    for (Py_ssize_t i = 0; i < p->nsteps; i++)
        if (k_step(PyTuple_GET_ITEM(steps, i), &p->steps[i]) < 0)
            goto failed;
    Py_ssize_t at = 0, j = 0;
    PyObject *tag, *step;
    while (PyDict_Next(tags, &at, &tag, &step)) {
        p->tags[j].tag = (uint32_t)PyLong_AsUnsignedLong(tag);
        if (k_step(step, &p->tags[j].step) < 0)
            goto failed;
        j++;
    }
    goto done;
failed:
    k_free_prog(p);
    p = NULL;
done:
    if (p == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "not a KRaft program");
    Py_XDECREF(steps);
    Py_XDECREF(tags);
    Py_XDECREF(flexible);
    return p;
}

/* Everything kraft_configure set: the programs, the types' names, the classes. */
static void
k_free_prog(KProg *p)
{
    if (p == NULL)
        return;
    for (Py_ssize_t i = 0; p->steps != NULL && i < p->nsteps; i++) {
        Py_XDECREF(p->steps[i].key);
        Py_XDECREF(p->steps[i].deflt);
        k_free_prog(p->steps[i].sub);
    }
    for (Py_ssize_t i = 0; p->tags != NULL && i < p->ntags; i++) {
        Py_XDECREF(p->tags[i].step.key);
        Py_XDECREF(p->tags[i].step.deflt);
        k_free_prog(p->tags[i].step.sub);
    }
    PyMem_Free(p->steps);
    PyMem_Free(p->tags);
    PyMem_Free(p);
}

void
kraft_clear(kraft_state *ks)
{
    for (int id = 0; id < K_MAX_TYPES; id++) {
        KType *t = &ks->types[id];
        for (long v = 0; t->progs != NULL && v <= t->high - t->low; v++)
            k_free_prog(t->progs[v]);
        PyMem_Free(t->progs);
        Py_CLEAR(t->name);
        t->progs = NULL;
        t->low = 0;
        t->high = -1;
    }
    Py_CLEAR(ks->record_type);
    Py_CLEAR(ks->error);
    Py_CLEAR(ks->fallback);
    Py_CLEAR(ks->unknown_name);
    Py_CLEAR(ks->label);
    for (int i = 0; i < K_ATTRS; i++)
        Py_CLEAR(ks->attr[i]);
}

int
kraft_traverse(kraft_state *ks, visitproc visit, void *arg)
{
    Py_VISIT(ks->record_type);
    Py_VISIT(ks->error);
    Py_VISIT(ks->fallback);
    return 0;
}

PyObject *
kraft_configure(PyObject *module, PyObject *args)
{
    /* (table, label, types, record_class, attrs, error_class[, fallback]): types maps type id -> (name,
     * {version: Program}); attrs names the record's attribute for each of K_ATTRS values (None: not
     * kept); fallback(value) -> record or None is called on a value the table fails on */
    int table;
    PyObject *label, *types, *rclass, *attrs, *err, *fallback = Py_None;
    if (!PyArg_ParseTuple(args, "iUO!O!O!O|O", &table, &label, &PyDict_Type, &types, &PyType_Type, &rclass,
                          &PyTuple_Type, &attrs, &err, &fallback))
        return NULL;
    if (table < 0 || table >= K_TABLES || PyTuple_GET_SIZE(attrs) != K_ATTRS) {
        PyErr_Format(PyExc_ValueError, "no KRaft table %d, or not %d attribute names", table, K_ATTRS);
        return NULL;
    }
    kraft_state *ks = &state_of(module)->kraft[table];
    kraft_clear(ks); /* a second call replaces the table */
    ks->label = Py_NewRef(label);
    if (kraft_table(ks, types) < 0 || kraft_classes(ks, rclass, attrs, err, fallback) < 0) {
        kraft_clear(ks);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The table: one compiled program per type and version. */
static int
kraft_table(kraft_state *ks, PyObject *types)
{
    Py_ssize_t at = 0;
    PyObject *key, *value;
    while (PyDict_Next(types, &at, &key, &value)) {
        long id = PyLong_AsLong(key);
        if (id < 0 || id >= K_MAX_TYPES || !PyTuple_Check(value) || PyTuple_GET_SIZE(value) != 2) {
            PyErr_Format(PyExc_ValueError, "KRaft record type %ld cannot be tabled", id);
            return -1;
        }
        PyObject *programs = PyTuple_GET_ITEM(value, 1);
        KType *t = &ks->types[id];
        long low = LONG_MAX, high = -1;
        Py_ssize_t p = 0;
        PyObject *version, *program;
        while (PyDict_Next(programs, &p, &version, &program)) {
            long v = PyLong_AsLong(version);
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
        if (high < 0)
            continue;
        t->progs = PyMem_Calloc(high - low + 1, sizeof(KProg *));
        if (t->progs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->low = low;
        t->high = high;
        p = 0;
        while (PyDict_Next(programs, &p, &version, &program))
            if ((t->progs[PyLong_AsLong(version) - low] = k_compile(program)) == NULL)
                return -1;
        t->name = Py_NewRef(PyTuple_GET_ITEM(value, 0));
    }
    return 0;
}

/* The record class (its slots' offsets), MetadataDecodeError and the pre-release fallback. */
static int
kraft_classes(kraft_state *ks, PyObject *rclass, PyObject *attrs, PyObject *err, PyObject *fallback)
{
    for (int i = 0; i < K_ATTRS; i++) {
        PyObject *name = PyTuple_GET_ITEM(attrs, i);
        if (name == Py_None)
            continue;
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "a record attribute name is a str or None");
            return -1;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        ks->attr[i] = name;
    }
    if ((ks->unknown_name = PyUnicode_InternFromString("Unknown")) == NULL)
        return -1;
    for (int i = 0; i < K_ATTRS; i++) {
        if (ks->attr[i] == NULL)
            continue;
        /* A slots dataclass keeps each field in a member descriptor: write it at its offset. */
        PyObject *descr = PyDict_GetItemWithError(((PyTypeObject *)rclass)->tp_dict, ks->attr[i]);
        ks->slot[i] = 0;
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
            if (member->type == T_OBJECT_EX)
                ks->slot[i] = member->offset;
        }
        if (PyErr_Occurred())
            return -1;
    }
    ks->fallback = fallback == Py_None ? NULL : Py_NewRef(fallback);
    ks->record_type = Py_NewRef(rclass);
    ks->error = Py_NewRef(err);
    return 0;
}
