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
from cpython.object cimport PyObject, PyTypeObject

from model_slots cimport (
    PtrMap, draspeed_get_slot, ptrmap_free, ptrmap_get, ptrmap_init, ptrmap_put, slot_offset,
)

cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object o)




cdef PyTypeObject *_DEVICE = <PyTypeObject*>model.Device
cdef PyTypeObject *_CAPACITY = <PyTypeObject*>model.DeviceCapacity
cdef PyTypeObject *_ATTRIBUTE = <PyTypeObject*>model.DeviceAttribute
cdef Py_ssize_t _attributes_at = slot_offset(model.Device, "attributes")
cdef Py_ssize_t _capacity_at = slot_offset(model.Device, "capacity")
cdef Py_ssize_t _multi_at = slot_offset(model.Device, "allow_multiple_allocations")
cdef Py_ssize_t _value_at = slot_offset(model.DeviceCapacity, "value")
cdef Py_ssize_t _kind_at = slot_offset(model.DeviceAttribute, "kind")


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
    ids_a = np.zeros(len(items), np.int32)
    cdef list values = [], keep = []
    cdef PtrMap by_identity  # address of an item -> its id + 1
    if ptrmap_init(&by_identity, 64) < 0:
        ptrmap_free(&by_identity)
        raise MemoryError()
    try:
        absent = _intern_scan(items, key_of, value_of, ids_a, &by_identity, values, keep)
    finally:
        ptrmap_free(&by_identity)
    return ids_a, values, absent


cdef bint _intern_scan(list items, object key_of, object value_of, int32_t[::1] ids,
                       PtrMap *by_identity, list values, list keep) except -1:
    cdef Py_ssize_t n = len(items), i
    cdef dict by_key = {}
    cdef bint absent = False
    cdef int32_t code
    cdef int found
    cdef PyObject *item
    for i in range(n):
        item = <PyObject*>items[i]
        if <object>item is None:
            absent = True
            continue
        found = ptrmap_get(by_identity, item, 0)
        if found != 0:
            code = found - 1
        else:
            key = key_of(<object>item)
            if key is None:
                code = 0
            else:
                hit = by_key.get(key)
                if hit is None:
                    value = value_of(<object>item)
                    if value is None:
                        code = 0
                    else:
                        values.append(value)
                        code = len(values)
                    by_key[key] = code
                else:
                    code = hit
            if ptrmap_put(by_identity, item, code + 1) < 0:
                raise MemoryError()
            keep.append(<object>item)  # ids stay unique while the items are alive
        if code == 0:
            absent = True
        ids[i] = code
    return absent


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


cdef enum:
    KINDS_REMEMBERED = 16  # distinct kind strings told apart by address (there are 8)


def conversion_errors(list devices, frozenset risky_kinds, object detail_of):
    """``(row, attribute name, detail)`` for each device with an attribute upstream
    cannot convert to a CEL value (the first such attribute, in its order):
    ``detail_of(attribute)`` is None when one converts, else the reason; it is asked
    once per distinct attribute object, and only for kinds in ``risky_kinds``."""
    cdef list out = []
    # Kinds are a handful of strings the decoder shares between attributes: most
    # attributes are told safe by the address of their kind alone, with no dictionary
    # lookup and no Python call (a million devices carry ten million attributes).
    cdef PyObject *kinds[KINDS_REMEMBERED]
    cdef bint kind_risky[KINDS_REMEMBERED]
    # address of a DeviceAttribute -> 1 (converts) or 2 + the index of its reason
    cdef PtrMap seen
    cdef list reasons = [], keep = []
    if ptrmap_init(&seen, 64) < 0:
        ptrmap_free(&seen)
        raise MemoryError()
    try:
        _conversion_scan(devices, risky_kinds, detail_of, &seen, kinds, kind_risky, out,
                         reasons, keep)
    finally:
        ptrmap_free(&seen)
    return out


cdef void _conversion_scan(list devices, frozenset risky_kinds, object detail_of,
                           PtrMap *seen, PyObject **kinds, bint *kind_risky, list out,
                           list reasons, list keep) except *:
    cdef Py_ssize_t n = len(devices), i, pos, j, n_kinds = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *kind
    cdef bint risky
    cdef int verdict
    for i in range(n):
        attrs = _field(devices[i], _attributes_at, "attributes", _DEVICE)
        if type(attrs) is not dict:
            attrs = dict(attrs)
        pos = 0
        while PyDict_Next(attrs, &pos, &key, &value):
            if Py_TYPE(<object>value) == _ATTRIBUTE:
                kind = draspeed_get_slot(<object>value, _kind_at)
                if kind != NULL:
                    risky = True
                    for j in range(n_kinds):
                        if kinds[j] == kind:
                            risky = kind_risky[j]
                            break
                    else:
                        risky = (<object>kind) in risky_kinds
                        if n_kinds < KINDS_REMEMBERED:
                            kinds[n_kinds] = kind
                            kind_risky[n_kinds] = risky
                            n_kinds += 1
                            keep.append(<object>kind)  # the address stays this string's
                    if not risky:
                        continue
            verdict = ptrmap_get(seen, value, 0)
            if verdict == 0:
                detail = (
                    detail_of(<object>value) if (<object>value).kind in risky_kinds else None
                )
                if detail is None:
                    verdict = 1
                else:
                    reasons.append(detail)
                    verdict = 1 + len(reasons)
                if ptrmap_put(seen, value, verdict) < 0:
                    raise MemoryError()
                keep.append(<object>value)  # its address stays unique while alive
            if verdict > 1:
                out.append((i, <object>key, reasons[verdict - 2]))
                break
