/* The compiled form of kafka_tools.format.kraft's tables (one program per record type and version):
 * kraft_tables.c makes and frees it, kraft.c interprets it. */
#ifndef KTOOL_KRAFT_PROGRAMS_H
#define KTOOL_KRAFT_PROGRAMS_H

#include "speedups.h"

enum { K_I8, K_I16, K_I32, K_I64, K_U16, K_U32, K_F64, K_BOOL, K_UUID, K_STR, K_BYTES, K_ARRAY, K_STRUCT,
       K_TAGGED };

typedef struct {
    PyObject *key;   /* the dict key (str) */
    int op;
    int nullable;
    int elem_op;     /* K_ARRAY: the elements' op */
    KProg *sub;      /* K_STRUCT, or K_ARRAY of K_STRUCT */
    PyObject *deflt; /* K_TAGGED: the value when the tag is absent */
} KStep;

typedef struct {
    uint32_t tag;
    KStep step;
} KTag;

struct KProg {
    int flexible;
    Py_ssize_t nsteps;
    KStep *steps;
    Py_ssize_t ntags;
    KTag *tags;
};

#endif
