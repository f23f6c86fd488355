/*
 * The SIGBUS guard of memory-mapped files. A page of a map past the file's end (the file was shortened
 * after it was mapped: a broker's recovery, `truncate -s`, anything outside ktool's own lock) raises
 * SIGBUS at the instruction that touches it, in C or in CPython's own copying of a mapped slice. No
 * Python exception can come out of that point safely (it may be half way through building a list), so
 * the handler ends the process as ktool ends on any unreadable input: one line naming the file on
 * stderr, exit 3 (environment). Only addresses inside the maps ktool registered are taken; any other
 * SIGBUS goes to the handler that was there before (faulthandler, or the default).
 */
#include "speedups.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define GUARD_SLOTS 512
#define GUARD_PATH 1024

typedef struct {
    volatile uintptr_t start, end; /* end 0: the slot is free */
    char path[GUARD_PATH];
} guard_slot;

static guard_slot slots[GUARD_SLOTS];
static struct sigaction previous;
static int installed;

static void
say(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void
on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)context;
    uintptr_t at = (uintptr_t)info->si_addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (slots[i].end != 0 && slots[i].start <= at && at < slots[i].end) {
            say("ktool: ", 7);
            say(slots[i].path, strnlen(slots[i].path, GUARD_PATH));
            static const char tail[] = ": changed under us (shortened while read)\n";
            say(tail, sizeof tail - 1);
            _exit(3);
        }
    }
    /* Not a map of ours: the disposition before ours decides (the access faults again when we return). */
    sigaction(sig, &previous, NULL);
}

PyObject *
map_guard_install(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (!installed) {
        struct sigaction act;
        memset(&act, 0, sizeof act);
        act.sa_sigaction = on_sigbus;
        act.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&act.sa_mask);
        if (sigaction(SIGBUS, &act, &previous) != 0)
            return PyErr_SetFromErrno(PyExc_OSError);
        installed = 1;
    }
    Py_RETURN_NONE;
}

PyObject *
map_guard_add(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *mapped;
    const char *path;
    Py_ssize_t path_len;
    if (!PyArg_ParseTuple(args, "Os#", &mapped, &path, &path_len))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(mapped, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uintptr_t start = (uintptr_t)view.buf, end = start + (uintptr_t)view.len;
    PyBuffer_Release(&view); /* only the address is kept: the map stays closable */
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (slots[i].end == 0) {
            size_t n = (size_t)path_len < GUARD_PATH - 1 ? (size_t)path_len : GUARD_PATH - 1;
            memcpy(slots[i].path, path, n);
            slots[i].path[n] = '\0';
            slots[i].start = start;
            slots[i].end = end; /* last: the handler reads a slot only once its end is set */
            return PyLong_FromLong(i);
        }
    }
    return PyLong_FromLong(-1); /* full: the caller reads without a map */
}

PyObject *
map_guard_remove(PyObject *module, PyObject *arg)
{
    (void)module;
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i >= 0 && i < GUARD_SLOTS) {
        slots[i].end = 0;
        slots[i].start = 0;
    }
    Py_RETURN_NONE;
}
