# cython: language_level=3
"""Model object trees in compiled code: deep copies and signatures.

Copies are what answers are handed out as (and templates, shapes with holes, what
remembered answers are kept as); signatures are what claim sets are remembered by.

The allocator remembers the results it built for a question and hands out a copy each
time the question comes again, so a caller may change its answer freely. Copying
through the dataclasses' generated ``__init__`` costs a Python frame per object; a
one-device result is about ten objects, which was a third of a warm ``allocate``.

Here a model object is copied by allocating an instance of its class and filling its
slots directly, with what the copy of each old slot value is:

- an instance of a mutable model dataclass (``draspeed.api.model``): copied the same way;
- a ``list`` or ``dict`` (exact types): a new one with copied items (dict keys shared);
- anything else (str, int, bool, None, Quantity, frozen model classes): shared, since
  it cannot be changed in place.

:func:`signature` writes a tree as bytes that only an equal tree (same classes, same
values, same order) writes: every value is tagged with its type, every string and
container carries its length, every model object its class and all of its slots.
msgspec does the same for the claim-set key in about 2.5 us for a one-request claim;
this walks the slots directly.

A model class the walker does not understand (a ``__post_init__``, a field that is not
a plain slot) fails the import instead of being copied differently from its
constructor.
"""

import dataclasses

from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.pycapsule cimport PyCapsule_New
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from libc.stdint cimport int64_t

from draspeed.api import model
from draspeed.quantity import Quantity

from model_slots cimport (
    PyObject_GC_UnTrack, draspeed_alloc, draspeed_dict_presized, draspeed_get_slot,
    draspeed_put_slot, draspeed_set_slot, draspeed_slot_offset, out_of_collector_sight,
)

cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object o)
    int PyObject_GC_IsTracked(object o)
    int Py_EnterRecursiveCall(const char *where)  # nonzero: RecursionError set
    void Py_LeaveRecursiveCall()
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    bytes PyBytes_FromStringAndSize(const char *v, Py_ssize_t n)
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1


cdef int _enter() except -1:
    """One level deeper (trees this deep are not results: stop before the C stack does)."""
    if Py_EnterRecursiveCall(" while walking a model object"):
        return -1  # the RecursionError is set
    return 0


cdef enum:
    MAX_CLASSES = 64
    MAX_FIELDS = 24

# The model classes and the offsets of their slots, in plain C arrays: a walk looks
# its class up by pointer, with no Python object touched on the way. Instances of
# frozen classes are shared by copies.
cdef PyObject *_classes[MAX_CLASSES]
cdef bint _frozen[MAX_CLASSES]
cdef Py_ssize_t _n_fields[MAX_CLASSES]
cdef Py_ssize_t _field_offset[MAX_CLASSES][MAX_FIELDS]
cdef Py_ssize_t _n_classes = 0
cdef list _kept = []  # strong references to the classes above
# Slots :func:`untrack` leaves alone: ``raw`` is what the caller gave (a dict of theirs).
cdef bint _keep_tracked[MAX_CLASSES][MAX_FIELDS]


cdef void _register(type cls) except *:
    global _n_classes
    if "__post_init__" in vars(cls) or "__slots__" not in vars(cls):
        raise RuntimeError(f"draspeed.api._model_tree: {cls.__name__} is not a plain slots dataclass")
    found = dataclasses.fields(cls)
    if _n_classes == MAX_CLASSES or len(found) > MAX_FIELDS:
        raise RuntimeError("draspeed.api._model_tree: the model outgrew the copier's tables")
    cdef Py_ssize_t k = _n_classes, i = 0
    for f in found:
        descr = vars(cls).get(f.name)
        offset = -1 if descr is None else draspeed_slot_offset(descr)
        if offset < 0:
            raise RuntimeError(f"draspeed.api._model_tree: {cls.__name__}.{f.name} is not a plain slot")
        _field_offset[k][i] = offset
        _keep_tracked[k][i] = f.name == "raw"
        i += 1
    _n_fields[k] = i
    _frozen[k] = cls.__dataclass_params__.frozen
    _kept.append(cls)
    _classes[k] = <PyObject*>cls
    _n_classes = k + 1


# The classes of an AllocationResult first: they are what is copied on every answer,
# and a class is looked up by a walk along this table.
_ANSWER_CLASSES = (
    "AllocationResult", "DeviceAllocationResult", "DeviceRequestAllocationResult",
    "NodeSelector", "NodeSelectorTerm", "NodeSelectorRequirement", "DeviceToleration",
    "DeviceAllocationConfiguration", "OpaqueDeviceConfiguration",
)
for _cls in sorted(
    (c for c in vars(model).values()
     if isinstance(c, type) and dataclasses.is_dataclass(c)
     and c.__module__ == model.__name__),
    key=lambda c: (
        _ANSWER_CLASSES.index(c.__name__) if c.__name__ in _ANSWER_CLASSES else len(_ANSWER_CLASSES),
        c.__name__,
    ),
):
    _register(_cls)


# Where a Quantity keeps its string once made (``str()`` fills it).
cdef Py_ssize_t _quantity_str_offset = draspeed_slot_offset(Quantity.__dict__["_str"])
if _quantity_str_offset < 0:
    raise RuntimeError("draspeed.api._model_tree: Quantity._str is not a plain slot")


cdef inline Py_ssize_t _class_index(PyObject *t) noexcept:
    cdef Py_ssize_t k
    for k in range(_n_classes):
        if _classes[k] == t:
            return k
    return -1


cdef object _HOLE = object()  # a hole in a template's shape (see split_template)


cdef object _copy(object o, tuple leaves, Py_ssize_t *at):
    """The copy of ``o``; a template's holes (``_HOLE``, only in shapes) take the next
    of ``leaves``."""
    cdef PyObject *t = <PyObject*>Py_TYPE(o)
    cdef Py_ssize_t i, k
    cdef PyObject *value
    # Most values of a result are strings, None, numbers and flags: shared at once,
    # without looking for their class among the model's.
    if t == <PyObject*>str or o is None or t == <PyObject*>bool or t == <PyObject*>int:
        return o
    if o is _HOLE:
        if at[0] >= len(leaves):
            raise ValueError("draspeed: a template has more holes than leaves given")
        item = leaves[at[0]]
        at[0] += 1
        return item
    if t == <PyObject*>list:
        if not <list>o:
            return []
        _enter()
        try:
            return [_copy(item, leaves, at) for item in <list>o]
        finally:
            Py_LeaveRecursiveCall()
    if t == <PyObject*>dict:
        new = {}
        if len(<dict>o):
            _enter()
            try:
                for key, v in (<dict>o).items():
                    new[key] = _copy(v, leaves, at)
            finally:
                Py_LeaveRecursiveCall()
        return new
    k = _class_index(t)
    if k < 0 or _frozen[k]:
        return o
    copy = draspeed_alloc(<object>t)
    _enter()
    try:
        for i in range(_n_fields[k]):
            value = draspeed_get_slot(o, _field_offset[k][i])
            if value != NULL:  # borrowed: ``o`` holds it while we copy
                item = _copy(<object>value, leaves, at)
                draspeed_set_slot(copy, _field_offset[k][i], <PyObject*>item)
    finally:
        Py_LeaveRecursiveCall()
    return copy


def clone(o):
    """A deep copy of a model object tree (see the module docstring for what is shared)."""
    cdef Py_ssize_t at = 0
    return _copy(o, (), &at)


# ------------------------------------------------------------------ templates

# A remembered answer is only ever copied, never handed out. Answers on different nodes
# mostly differ in their strings (pool, device and node names): kept as one *shape*
# per kind of answer (the tree, with every string, quantity or other shared leaf a
# hole, and one empty list and map for all) plus each answer's leaves in walk order, a
# pass over a thousand nodes' answers reads a few cache lines per node instead of one
# per object of each answer.
cdef list _EMPTY_LIST = []
cdef dict _EMPTY_DICT = {}


cdef object _shape(object o, list holes):
    cdef PyObject *t = <PyObject*>Py_TYPE(o)
    cdef Py_ssize_t i, k
    cdef PyObject *value
    if t == <PyObject*>str:
        holes.append(o)
        return _HOLE
    if o is None or t == <PyObject*>bool or t == <PyObject*>int:
        return o
    if t == <PyObject*>list:
        if not <list>o:
            return _EMPTY_LIST
        _enter()
        try:
            return [_shape(item, holes) for item in <list>o]
        finally:
            Py_LeaveRecursiveCall()
    if t == <PyObject*>dict:
        if not <dict>o:
            return _EMPTY_DICT
        new = {}
        _enter()
        try:
            for key, v in (<dict>o).items():
                new[key] = _shape(v, holes)
        finally:
            Py_LeaveRecursiveCall()
        return new
    k = _class_index(t)
    if k < 0 or _frozen[k]:  # shared by copies: a leaf like a string
        holes.append(o)
        return _HOLE
    shape = draspeed_alloc(<object>t)
    _enter()
    try:
        for i in range(_n_fields[k]):
            value = draspeed_get_slot(o, _field_offset[k][i])
            if value != NULL:
                item = _shape(<object>value, holes)
                draspeed_set_slot(shape, _field_offset[k][i], <PyObject*>item)
    finally:
        Py_LeaveRecursiveCall()
    return shape


# A shape is kept as a program: filling it runs a flat list of instructions over a
# stack of new objects, instead of a recursive walk that asks each node of the shape
# what it is (a third of a filled one-device answer's time went into that asking).
cdef enum:
    OP_CONST = 0  # push consts[arg] (None, a bool or an int: shared)
    OP_LEAF = 1  # push the next leaf
    OP_LIST = 2  # pop arg items into a new list
    OP_DICT = 3  # pop arg values into a new dict; the keys are consts[next arg words]
    OP_OBJ = 4  # a new instance of class arg; the next word: n, then the offsets of
                # the n slots set, whose values are popped (in slot order)


cdef class Template:
    """A remembered answer's shape, compiled (see :func:`split_template`)."""

    cdef int64_t *code
    cdef Py_ssize_t size, cap
    cdef list consts
    cdef Py_ssize_t depth, holes

    def __cinit__(self):
        self.cap = 32
        self.code = <int64_t*>malloc(self.cap * sizeof(int64_t))
        if self.code == NULL:
            raise MemoryError()
        self.consts = []

    def __dealloc__(self):
        free(self.code)

    cdef int emit(self, int64_t word) except -1:
        cdef int64_t *grown
        if self.size == self.cap:
            grown = <int64_t*>realloc(self.code, 2 * self.cap * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self.code, self.cap = grown, 2 * self.cap
        self.code[self.size] = word
        self.size += 1
        return 0

    cdef int64_t const(self, object value) except -1:
        self.consts.append(value)
        return len(self.consts) - 1


cdef Py_ssize_t _compile(Template t, object o, Py_ssize_t height) except -1:
    """Emit the program that builds ``o`` (a shape) onto a stack ``height`` deep; the
    stack's greatest height on the way is recorded in ``t.depth``."""
    cdef PyObject *tp = <PyObject*>Py_TYPE(o)
    cdef Py_ssize_t i, k, n = 0
    cdef list offsets = []
    cdef PyObject *value
    if height + 1 > t.depth:
        t.depth = height + 1
    if o is _HOLE:
        t.holes += 1
        t.emit(OP_LEAF)
        return 0
    if o is None or tp == <PyObject*>bool or tp == <PyObject*>int:
        t.emit(OP_CONST)
        t.emit(t.const(o))
        return 0
    _enter()
    try:
        if tp == <PyObject*>list:
            for item in <list>o:
                _compile(t, item, height + n)
                n += 1
            t.emit(OP_LIST)
            t.emit(n)
            return 0
        if tp == <PyObject*>dict:
            for v in (<dict>o).values():
                _compile(t, v, height + n)
                n += 1
            t.emit(OP_DICT)
            t.emit(n)
            for key in <dict>o:
                t.emit(t.const(key))
            return 0
        k = _class_index(tp)
        if k < 0 or _frozen[k]:
            raise TypeError(f"draspeed: {type(o).__name__} in a template's shape")
        for i in range(_n_fields[k]):
            value = draspeed_get_slot(o, _field_offset[k][i])
            if value != NULL:
                _compile(t, <object>value, height + n)
                offsets.append(_field_offset[k][i])
                n += 1
        t.emit(OP_OBJ)
        t.emit(k)
        t.emit(n)
        for offset in offsets:
            t.emit(offset)
        return 0
    finally:
        Py_LeaveRecursiveCall()


def split_template(o, dict known=None):
    """``(key, shape, leaves)`` of a tree that is only ever copied: the shape is the
    tree with each string (and quantity, or other leaf copies share) a hole, compiled
    (:class:`Template`); the leaves fill the holes in walk order, and only trees of one
    shape have the same key. ``known``: shapes by key, the one found there used (a
    shape is compiled once) and a new one added."""
    cdef list holes = []
    shape = _shape(o, holes)
    key = signature(shape)
    template = None if known is None else known.get(key)
    if template is None:
        template = Template()
        _compile(<Template>template, shape, 0)
        if known is not None:
            known[key] = template
    return key, template, tuple(holes)


def fill_template(Template shape, tuple leaves):
    """A copy of the tree :func:`split_template` took apart (as :func:`clone` copies)."""
    return _fill(shape, leaves)


cdef object _fill(Template shape, tuple leaves):
    if len(leaves) != shape.holes:
        raise ValueError(
            "draspeed: a template has "
            + ("more" if shape.holes > len(leaves) else "fewer")
            + " holes than leaves given"
        )
    cdef PyObject *small[64]  # the stack of most answers, without an allocation
    cdef PyObject **stack = small
    if shape.depth > 64:
        stack = <PyObject**>malloc(shape.depth * sizeof(PyObject*))
        if stack == NULL:
            raise MemoryError()
    cdef Py_ssize_t sp = 0, pc = 0, at = 0, n, i, base
    cdef int64_t op
    cdef PyObject *item
    cdef const int64_t *code = shape.code
    cdef list consts = shape.consts
    try:
        while pc < shape.size:
            op = code[pc]
            # Each instruction makes ``item`` (borrowed, or held by ``made``) from what
            # it takes off the stack (the stack's references pass to the new object,
            # and the stack shrinks once they have), then pushes one of its own.
            if op == OP_LEAF:
                item = PyTuple_GET_ITEM(leaves, at)
                at += 1
                pc += 1
            elif op == OP_CONST:
                item = PyList_GET_ITEM(consts, code[pc + 1])
                pc += 2
            elif op == OP_LIST:
                n = code[pc + 1]
                base = sp - n
                made = PyList_New(n)
                for i in range(n):  # the list takes the stack's references
                    PyList_SET_ITEM(made, i, <object>stack[base + i])
                sp = base
                item = <PyObject*>made
                pc += 2
            elif op == OP_DICT:
                n = code[pc + 1]
                base = sp - n
                made = draspeed_dict_presized(n)
                for i in range(n):
                    made[<object>PyList_GET_ITEM(consts, code[pc + 2 + i])] = <object>stack[base + i]
                for i in range(n):
                    Py_DECREF(<object>stack[base + i])
                sp = base
                item = <PyObject*>made
                pc += 2 + n
            else:  # OP_OBJ
                n = code[pc + 2]
                base = sp - n
                made = draspeed_alloc(<object>_classes[code[pc + 1]])
                for i in range(n):  # the empty slots take the stack's references
                    draspeed_put_slot(made, code[pc + 3 + i], stack[base + i])
                sp = base
                item = <PyObject*>made
                pc += 3 + n
            Py_INCREF(<object>item)
            stack[sp] = item
            sp += 1
        result = <object>stack[0]
        Py_DECREF(result)  # the stack's reference; ``result`` holds its own
        sp = 0
        return result
    finally:
        for i in range(sp):
            Py_DECREF(<object>stack[i])
        if stack != small:
            free(stack)


# ``_fill`` for other compiled modules, called without a Python call's argument
# parsing: a prepared pod's remembered answer is a lookup and this copy, and the call
# cost about 20 ns of its 0.67 us. (Takes a Template, as its first argument is
# declared; the caller checks.)
_FILL_CAPSULE = PyCapsule_New(<void*>_fill, b"draspeed.api._model_tree._fill", NULL)


# ------------------------------------------------------------------ signatures

cdef struct _Out:
    char *data
    Py_ssize_t n
    Py_ssize_t cap


cdef int _room(_Out *out, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap = out.cap
    cdef char *grown
    if out.n + more <= cap:
        return 0
    while cap < out.n + more:
        cap *= 2
    grown = <char*>realloc(out.data, cap)
    if grown == NULL:
        raise MemoryError()
    out.data, out.cap = grown, cap
    return 0


cdef int _put(_Out *out, char tag, const void *data, Py_ssize_t size) except -1:
    _room(out, 1 + size)
    out.data[out.n] = tag
    memcpy(out.data + out.n + 1, data, size)
    out.n += 1 + size
    return 0


cdef int _put_count(_Out *out, char tag, int64_t count) except -1:
    return _put(out, tag, &count, sizeof(int64_t))


cdef int _put_text(_Out *out, char tag, str text) except -1:
    cdef Py_ssize_t size
    cdef const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size)
    _put_count(out, tag, size)
    _room(out, size)
    memcpy(out.data + out.n, utf8, size)
    out.n += size
    return 0


cdef int _write(_Out *out, object o) except -1:
    cdef PyObject *t = <PyObject*>Py_TYPE(o)
    cdef Py_ssize_t i, k
    cdef int overflow = 0
    cdef long long whole
    cdef double real
    cdef PyObject *value
    if o is None:
        return _put(out, b'N', NULL, 0)
    if o is _HOLE:  # (only in a template's shape)
        return _put(out, b'H', NULL, 0)
    if o is True:
        return _put(out, b'T', NULL, 0)
    if o is False:
        return _put(out, b'F', NULL, 0)
    if t == <PyObject*>str:
        return _put_text(out, b's', <str>o)
    if t == <PyObject*>int:
        whole = PyLong_AsLongLongAndOverflow(o, &overflow)
        if overflow:
            return _put_text(out, b'I', str(o))
        return _put(out, b'i', &whole, sizeof(long long))
    if t == <PyObject*>float:
        real = o
        return _put(out, b'f', &real, sizeof(double))
    if t == <PyObject*>list or t == <PyObject*>tuple:
        _put_count(out, b'l' if t == <PyObject*>list else b't', len(o))
        _enter()
        try:
            for item in o:
                _write(out, item)
        finally:
            Py_LeaveRecursiveCall()
        return 0
    if t == <PyObject*>dict:
        _put_count(out, b'd', len(<dict>o))
        _enter()
        try:
            for key, item in (<dict>o).items():
                _write(out, key)
                _write(out, item)
        finally:
            Py_LeaveRecursiveCall()
        return 0
    if t == <PyObject*>Quantity:
        # Its exact value and its format (equal quantities written differently may
        # sign differently: a missed cache entry, never a wrong one). The string is
        # read from its cache slot when set: no Python call per quantity.
        value = draspeed_get_slot(o, _quantity_str_offset)
        if value != NULL and Py_TYPE(<object>value) == <PyTypeObject*>str:
            return _put_text(out, b'q', <str>value)
        return _put_text(out, b'q', f"{o!s}")
    k = _class_index(t)
    if k < 0:
        raise TypeError(f"no signature for {type(o).__name__}")
    _put_count(out, b'o', k)
    _enter()
    try:
        for i in range(_n_fields[k]):
            value = draspeed_get_slot(o, _field_offset[k][i])
            if value == NULL:
                _put(out, b'X', NULL, 0)
            else:
                _write(out, <object>value)
    finally:
        Py_LeaveRecursiveCall()
    return 0


def signature(o):
    """Bytes that only an equal model tree writes (TypeError for a value of a type the
    walker does not know; the caller then keys another way)."""
    cdef _Out out
    out.cap = 256
    out.n = 0
    out.data = <char*>malloc(out.cap)
    if out.data == NULL:
        raise MemoryError()
    try:
        _write(&out, o)
        return PyBytes_FromStringAndSize(out.data, out.n)
    finally:
        free(out.data)


# A decoded cluster is millions of small objects that form no cycles and live as long as
# the caller keeps them: the cyclic collector can free none of them, yet each
# collection walks every one it tracks (a million dynamic-MIG devices: 1.2 s for the
# first young-generation collection after the load; the older generations walk them
# again as they are promoted). Untracked, they are freed by reference counting as before; a cycle a caller
# makes through them later is never collected (as with msgspec's ``gc=False`` structs).


cdef int _untrack(object o) except -1:
    cdef PyObject *t = <PyObject*>Py_TYPE(o)
    cdef Py_ssize_t i, k
    cdef PyObject *value
    if not PyObject_GC_IsTracked(o):  # atoms, and what was untracked already (shared)
        return 0
    if t == <PyObject*>list:
        PyObject_GC_UnTrack(<void*>o)
        _enter()
        try:
            for item in <list>o:
                _untrack(item)
        finally:
            Py_LeaveRecursiveCall()
        return 0
    if t == <PyObject*>dict:
        PyObject_GC_UnTrack(<void*>o)
        _enter()
        try:
            for item in (<dict>o).values():  # (keys are strings)
                _untrack(item)
        finally:
            Py_LeaveRecursiveCall()
        return 0
    if t == <PyObject*>Quantity:  # numbers and its string
        PyObject_GC_UnTrack(<void*>o)
        return 0
    k = _class_index(t)
    if k < 0:  # not ours: left to the collector, and so is what it holds
        return 0
    PyObject_GC_UnTrack(<void*>o)
    _enter()
    try:
        for i in range(_n_fields[k]):
            if _keep_tracked[k][i]:
                continue
            value = draspeed_get_slot(o, _field_offset[k][i])
            if value != NULL:
                _untrack(<object>value)
    finally:
        Py_LeaveRecursiveCall()
    return 0


def untrack_list(list items):
    """``items`` itself taken out of the cyclic collector's sight for good (what it
    holds is left as it is): for long-lived lists of many devices or nodes that no item
    refers back to (see ``out_of_collector_sight``). Returns ``items``."""
    return out_of_collector_sight(items)


def untrack(list objects):
    """Take each model object of ``objects``, and the lists, dicts, model objects and
    quantities it holds, out of the cyclic collector's sight (``raw`` excepted: the
    caller's own). Objects of other types, and what they hold, stay tracked."""
    for o in objects:
        _untrack(o)
