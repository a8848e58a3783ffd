# cython: language_level=3
"""A prepared pod's Filter call on a node it has an answer for, in compiled code.

A scheduler asks every node once per pod, and pods of one shape ask the same nodes
again: after the first pass nearly every call is a lookup of a remembered answer and
a copy of it. In Python the way to the copy (the call, the lookups, the checks) cost
as much as the copy itself; here it costs a tenth of it. Everything else -- a node not
answered yet, a deadline, an answer that needs fresh shareIDs -- is
:meth:`draspeed.engine.allocator.PreparedClaims` 's own (Python) way.
"""

import threading

from draspeed.api.model import Node
from draspeed.api import _model_tree
from draspeed.api._model_tree import Template

from libc.stdint cimport int32_t, int64_t, uint64_t
from cpython.dict cimport PyDict_GetItemWithError as PyDict_GetItem
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from cpython.long cimport PyLong_FromVoidPtr
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer

cdef extern from "Python.h":
    ctypedef struct PyThreadState:
        pass
    PyThreadState *PyThreadState_Get()
    # Unique in the interpreter's life: never a dead thread's, unlike an ident.
    uint64_t PyThreadState_GetID(PyThreadState *tstate)

ctypedef object (*FillFunction)(object shape, tuple leaves)

cdef object _NODE = Node
cdef object _TEMPLATE = Template
# ``fill_template``'s compiled body (see draspeed.api._model_tree._FILL_CAPSULE).
cdef FillFunction _fill = <FillFunction>PyCapsule_GetPointer(
    _model_tree._FILL_CAPSULE, b"draspeed.api._model_tree._fill"
)


cdef class PerThread:
    """One value per thread, as ``threading.local`` keeps one attribute: a thread that
    set none reads ``default``.

    The first thread to set a value keeps it in a field, found by comparing its
    thread-state id; every other thread keeps its own in a ``threading.local``. A
    scheduler's loop sets the stats of a call and reads them back once per node, and
    two ``threading.local`` accesses per call cost about 0.1 us of a remembered
    answer's 0.8 us call.
    """

    cdef uint64_t owner  # the first setter's thread-state id (0: none yet)
    cdef object owner_value
    cdef object others
    cdef readonly object default

    def __cinit__(self, object default):
        self.default = default
        self.owner_value = default
        self.others = threading.local()

    cdef inline object get_(self):
        if self.owner != 0 and PyThreadState_GetID(PyThreadState_Get()) == self.owner:
            return self.owner_value
        return getattr(self.others, "value", self.default)

    cdef inline int set_(self, object value) except -1:
        cdef uint64_t me = PyThreadState_GetID(PyThreadState_Get())
        if self.owner == 0:
            self.owner = me
        if me == self.owner:
            self.owner_value = value
        else:
            self.others.value = value
        return 0

    def get(self):
        """The calling thread's value."""
        return self.get_()

    def set(self, value):
        """Set the calling thread's value."""
        self.set_(value)


cdef class KnownAnswers:
    """What :meth:`PreparedClaims.allocate` answers without searching: the remembered
    answers of one claim set on the nodes of one layout.

    Read once from the claim arrays (typed, for the compiled lookup): ``position``, a
    known node's index by its identity (``id(node)``); ``nodes``, those nodes (the
    identity is checked, an id can be reused); ``answers``, per node index,
    ``(stats, shape, leaves, shared)`` as :class:`ClaimArrays` remembers them.
    """

    cdef readonly dict position
    cdef readonly list nodes
    cdef readonly dict answers
    cdef readonly object arrays

    def __cinit__(self, object arrays not None):
        self.arrays = arrays
        self.position = arrays.layout.position
        self.nodes = arrays.layout.nodes
        self.answers = arrays.answers


cdef class PreparedAnswers:
    """The compiled first step of a prepared pod's ``allocate``: see the module."""

    cdef public object allocator
    cdef public KnownAnswers known
    # Per thread, the stats of its last call on this pod (``last_stats``)...
    cdef public PerThread stats
    # ... and on the allocator (the allocator's own ``last_stats``, set here too).
    cdef public PerThread allocator_stats

    # (A compiled property: a scheduler that counts the work reads it after every call,
    # and as a Python property it cost a fifth of a remembered answer's call.)
    property last_stats:
        """The counters of the calling thread's last ``allocate`` on this pod."""

        def __get__(self):
            return self.stats.get_()

        def __set__(self, stats):
            self.stats.set_(stats)

    def allocate(self, node, *, deadline=None):
        """One result per claim (input order), or None: see ``Allocator.allocate``."""
        cdef KnownAnswers known = self.known
        cdef PyObject *found
        if known is not None and deadline is None and type(node) is _NODE:
            # (The node's address as ``id()`` gives it, without that builtin's call.)
            found = PyDict_GetItem(known.position, PyLong_FromVoidPtr(<void*>node))
            if found != NULL and known.nodes[<object>found] is node:
                found = PyDict_GetItem(known.answers, <object>found)
                if found != NULL:
                    stats, shape, leaves, shared = <tuple>found
                    # (Shared devices take fresh shareIDs: the long way.)
                    if not shared and type(shape) is _TEMPLATE and type(leaves) is tuple:
                        self.stats.set_(stats)
                        self.allocator_stats.set_(stats)
                        return _fill(shape, <tuple>leaves)
        return self._long_way(node, deadline)  # (the subclass's)


def remember_filled(dict answers not None, const int32_t[::1] nodes, const int64_t[::1] work,
                    tuple few_steps not None, object stats_of, object shape,
                    tuple leaves not None, const int32_t[:, ::1] holes, list node_names not None,
                    const int32_t[:, ::1] pools, const int32_t[:, ::1] devices,
                    list pool_keys not None, list strings not None):
    """Remember the answers of ``nodes`` (node indices; a node with an answer keeps it),
    all of one shape: node k's leaves are ``leaves`` with, at each hole ``(at, pick,
    field)``, the node's name (pick -1) or its pick's driver (field 0) or pool name
    (1) of pool ``pools[k, pick]`` (``pool_keys``), or device name (2) of string id
    ``devices[k, pick]`` (``strings``). Its Stats: ``few_steps[work[k]]``, or
    ``stats_of(work[k])`` beyond them."""
    cdef Py_ssize_t K = nodes.shape[0], H = holes.shape[0], L = len(leaves), k, h, i
    cdef Py_ssize_t P = pools.shape[1], n_steps = len(few_steps)
    cdef int32_t at, pick, field
    if work.shape[0] != K or pools.shape[0] != K or devices.shape[0] != K:
        raise ValueError("draspeed: one row per node")
    if devices.shape[1] != P or (H and holes.shape[1] != 3):
        raise ValueError("draspeed: holes are (at, pick, field), picks alike")
    for h in range(H):
        if not (0 <= holes[h, 0] < L and -1 <= holes[h, 1] < P and 0 <= holes[h, 2] <= 2):
            raise ValueError("draspeed: a hole beyond the leaves or the picks")
    cdef object item
    for k in range(K):
        n = nodes[k]
        if n in answers:
            continue
        made = PyTuple_New(L)
        for i in range(L):
            item = <object>PyTuple_GET_ITEM(leaves, i)
            Py_INCREF(item)
            PyTuple_SET_ITEM(made, i, item)
        for h in range(H):
            at, pick, field = holes[h, 0], holes[h, 1], holes[h, 2]
            if pick < 0:
                item = node_names[n]
            elif field == 2:
                item = strings[devices[k, pick]]
            else:
                item = (<tuple>pool_keys[pools[k, pick]])[field]
            Py_DECREF(<object>PyTuple_GET_ITEM(made, at))
            Py_INCREF(item)
            PyTuple_SET_ITEM(made, at, item)
        stats = few_steps[work[k]] if work[k] < n_steps else stats_of(work[k])
        answers[n] = (stats, shape, made, False)
