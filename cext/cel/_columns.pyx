# cython: language_level=3
"""The per-device passes of a device table (``draspeed.cel.table``), in compiled code.

A column gives each device the id of its value among the column's distinct values.
Values are model objects the decoder shares between devices (attributes, quantities,
capacities), so each pass looks a device's object up by identity first and asks
Python (``key_of``/``value_of``) only about objects it has not seen; a device table of
a million devices costs a million dictionary lookups in C, not a million Python calls.
"""

import numpy as np

from draspeed.api import model

from libc.stdint cimport int32_t, uint8_t
from cpython.dict cimport PyDict_GetItemWithError as PyDict_GetItem, PyDict_Next
from cpython.long cimport PyLong_FromVoidPtr
from cpython.object cimport PyObject, PyTypeObject

from model_slots cimport draspeed_get_slot, draspeed_slot_offset

cdef inline object _identity(object o):
    """The object's address as a dict key (what ``id()`` gives, without the audit
    event that builtin raises on every call)."""
    return PyLong_FromVoidPtr(<void*>o)


cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object o)


cdef Py_ssize_t _slot(object cls, str name) except -1:
    descr = vars(cls).get(name)
    cdef Py_ssize_t offset = -1 if descr is None else draspeed_slot_offset(descr)
    if offset < 0:
        raise RuntimeError(f"draspeed.cel._columns: {cls.__name__}.{name} is not a plain slot")
    return offset


cdef PyTypeObject *_DEVICE = <PyTypeObject*>model.Device
cdef PyTypeObject *_CAPACITY = <PyTypeObject*>model.DeviceCapacity
cdef Py_ssize_t _attributes_at = _slot(model.Device, "attributes")
cdef Py_ssize_t _capacity_at = _slot(model.Device, "capacity")
cdef Py_ssize_t _multi_at = _slot(model.Device, "allow_multiple_allocations")
cdef Py_ssize_t _value_at = _slot(model.DeviceCapacity, "value")


cdef inline object _field(object obj, Py_ssize_t offset, str name, PyTypeObject *cls):
    cdef PyObject *value
    if Py_TYPE(obj) == cls:
        value = draspeed_get_slot(obj, offset)
        if value != NULL:
            return <object>value
    return getattr(obj, name)


def intern_rows(list items, object key_of, object value_of):
    """Ids for ``items`` (one per device): 0 for None, else 1 + the index of the item's
    value among the distinct values; ``key_of(item)`` says which items are equal (None:
    treat as absent), ``value_of(item)`` gives the value of a new key (None: absent).
    Returns (ids, values, has_absent)."""
    cdef Py_ssize_t n = len(items), i
    ids_a = np.zeros(n, np.int32)
    cdef int32_t[::1] ids = ids_a
    cdef dict by_identity = {}, by_key = {}
    cdef list values = [], keep = []
    cdef bint absent = False
    cdef PyObject *found
    cdef int32_t code
    for i in range(n):
        item = items[i]
        if item is None:
            absent = True
            continue
        found = PyDict_GetItem(by_identity, _identity(item))
        if found != NULL:
            code = <int32_t><object>found
        else:
            key = key_of(item)
            if key is None:
                code = 0
            else:
                hit = by_key.get(key)
                if hit is None:
                    value = value_of(item)
                    if value is None:
                        code = 0
                    else:
                        values.append(value)
                        code = len(values)
                    by_key[key] = code
                else:
                    code = hit
            by_identity[_identity(item)] = code
            keep.append(item)  # ids stay unique while the items are alive
        if code == 0:
            absent = True
        ids[i] = code
    return ids_a, values, absent


def attributes(list devices, list drivers, str domain, str ident):
    """Each device's attribute ``domain/ident`` (a bare ``ident`` too when the domain is
    the device's driver, as upstream looks it up), or None."""
    cdef Py_ssize_t n = len(devices), i
    cdef str qualified = domain + "/" + ident
    cdef list out = [None] * n
    cdef PyObject *found
    for i in range(n):
        attrs = _field(devices[i], _attributes_at, "attributes", _DEVICE)
        if type(attrs) is not dict:
            attrs = dict(attrs)
        found = PyDict_GetItem(attrs, qualified)
        if found == NULL and <str>drivers[i] == domain:
            found = PyDict_GetItem(attrs, ident)
        if found != NULL:
            out[i] = <object>found
    return out


def capacities(list devices, list drivers, str domain, str ident):
    """Each device's capacity ``domain/ident`` as its Quantity (bare ``ident`` too for
    the device's own driver), or None."""
    cdef Py_ssize_t n = len(devices), i
    cdef str qualified = domain + "/" + ident
    cdef list out = [None] * n
    cdef PyObject *found
    for i in range(n):
        caps = _field(devices[i], _capacity_at, "capacity", _DEVICE)
        if type(caps) is not dict:
            caps = dict(caps)
        found = PyDict_GetItem(caps, qualified)
        if found == NULL and <str>drivers[i] == domain:
            found = PyDict_GetItem(caps, ident)
        if found != NULL:
            out[i] = _field(<object>found, _value_at, "value", _CAPACITY)
    return out


def multi_flags(list devices):
    """Each device's allowMultipleAllocations as a bool (unset: False)."""
    cdef Py_ssize_t n = len(devices), i
    cdef list out = [False] * n
    for i in range(n):
        value = _field(devices[i], _multi_at, "allow_multiple_allocations", _DEVICE)
        out[i] = value is True
    return out


def conversion_errors(list devices, frozenset risky_kinds, object detail_of):
    """``(row, attribute name, detail)`` for each device with an attribute upstream
    cannot convert to a CEL value (the first such attribute, in its order):
    ``detail_of(attribute)`` is None when one converts, else the reason; it is asked
    once per distinct attribute object, and only for kinds in ``risky_kinds``."""
    cdef Py_ssize_t n = len(devices), i, pos
    cdef list out = []
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *hit
    cdef dict seen = {}  # address of a DeviceAttribute -> None (converts) or its reason
    cdef list keep = []
    for i in range(n):
        attrs = _field(devices[i], _attributes_at, "attributes", _DEVICE)
        if type(attrs) is not dict:
            attrs = dict(attrs)
        pos = 0
        while PyDict_Next(attrs, &pos, &key, &value):
            hit = PyDict_GetItem(seen, _identity(<object>value))
            if hit == NULL:
                detail = (
                    detail_of(<object>value) if (<object>value).kind in risky_kinds else None
                )
                seen[_identity(<object>value)] = detail
                keep.append(<object>value)
            else:
                detail = <object>hit
            if detail is not None:
                out.append((i, <object>key, detail))
                break
    return out
