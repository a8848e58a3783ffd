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

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcmp
from cpython.list cimport PyList_GET_ITEM
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_GetItemWithError as PyDict_GetItem, PyDict_Next
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject, PyTypeObject

from model_slots cimport (
    PtrMap, draspeed_get_slot, draspeed_prefetch_ahead, ptrmap_free, ptrmap_get, ptrmap_init,
    out_of_collector_sight, ptrmap_put, slot_offset,
)

cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object o)
    int _list_append "PyList_Append"(PyObject *items, PyObject *item) except -1
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_ssize_t PyUnicode_Tailmatch(object s, object sub, Py_ssize_t start, Py_ssize_t end,
                                   int direction) except -1
    Py_ssize_t PyUnicode_Find(object s, object sub, Py_ssize_t start, Py_ssize_t end,
                              int direction) except -2




cdef PyTypeObject *_DEVICE = <PyTypeObject*>model.Device
cdef PyTypeObject *_CAPACITY = <PyTypeObject*>model.DeviceCapacity
cdef PyTypeObject *_ATTRIBUTE = <PyTypeObject*>model.DeviceAttribute
cdef Py_ssize_t _attributes_at = slot_offset(model.Device, "attributes")
cdef Py_ssize_t _capacity_at = slot_offset(model.Device, "capacity")
cdef Py_ssize_t _multi_at = slot_offset(model.Device, "allow_multiple_allocations")
cdef Py_ssize_t _value_at = slot_offset(model.DeviceCapacity, "value")
cdef Py_ssize_t _kind_at = slot_offset(model.DeviceAttribute, "kind")
cdef Py_ssize_t _attribute_value_at = slot_offset(model.DeviceAttribute, "value")


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


# _code_of's "no value known yet: ask value_of".
cdef object _ASK = object()


cdef inline int32_t _code_of(dict by_key, list values, object key, object item,
                             object value_of, object value) except -1:
    """The code of ``key`` among the keys seen (``by_key``): 0 for a None key or a None
    value, else 1 + the index in ``values`` of the value of the key's first item. A new
    key's value is ``value``, or ``value_of(item)`` when that is :data:`_ASK`."""
    cdef PyObject *hit
    cdef int32_t code
    if key is None:
        return 0
    hit = PyDict_GetItem(by_key, key)
    if hit != NULL:
        return <int32_t><object>hit
    if value is _ASK:
        value = value_of(item)
    if value is None:
        code = 0
    else:
        values.append(value)
        code = <int32_t>len(values)
    by_key[key] = code
    return code


cdef bint _intern_scan(list items, object key_of, object value_of, int32_t[::1] ids,
                       PtrMap *by_identity, list values, list keep) except -1:
    cdef Py_ssize_t n = len(items), i
    cdef dict by_key = {}
    cdef bint absent = False
    cdef int32_t code = 0
    cdef int found
    cdef PyObject *item
    cdef PyObject *previous = NULL
    for i in range(n):
        item = PyList_GET_ITEM(items, i)  # (borrowed: ``items`` holds it)
        if <object>item is None:
            absent = True
            continue
        if item == previous:  # a run (a driver's devices): the code just found
            ids[i] = code
            continue
        previous = item
        found = ptrmap_get(by_identity, item, 0)
        if found != 0:
            code = found - 1
        else:
            code = _code_of(by_key, values, key_of(<object>item), <object>item, value_of, _ASK)
            if ptrmap_put(by_identity, item, code + 1) < 0:
                raise MemoryError()
            keep.append(<object>item)  # ids stay unique while the items are alive
        if code == 0:
            absent = True
        ids[i] = code
    return absent


cdef inline void _prefetch_ahead(list devices, Py_ssize_t i, Py_ssize_t map_at) noexcept:
    """Before device i is read, ask the memory for the devices ahead: the map in slot
    ``map_at`` and its entries (see draspeed_prefetch_ahead)."""
    draspeed_prefetch_ahead(devices, i, _DEVICE, &map_at, 1, &map_at, 1)


def capacities(list devices, list drivers, str domain, str ident):
    """Each device's capacity ``domain/ident`` as its Quantity (bare ``ident`` too for
    the device's own driver, unless it has a '/': a name is cut at its first one, so
    ``a/b`` is in domain ``a``), or None."""
    cdef Py_ssize_t n = len(devices), i
    cdef str qualified = domain + "/" + ident
    cdef bint bare = "/" not in ident
    cdef list out = [None] * n
    cdef PyObject *found
    for i in range(n):
        _prefetch_ahead(devices, i, _capacity_at)
        caps = _field(devices[i], _capacity_at, "capacity", _DEVICE)
        if type(caps) is not dict:
            caps = dict(caps)
        found = PyDict_GetItem(caps, qualified)
        if found == NULL and bare and <str>drivers[i] == domain:
            found = PyDict_GetItem(caps, ident)
        if found != NULL:
            out[i] = _field(<object>found, _value_at, "value", _CAPACITY)
    return out


def key_sets(list devices, list drivers, bint capacity):
    """Each device's attribute (or capacity) names with its driver, as a set id:
    ``(ids, sets)``, ``sets[ids[i]]`` = ``(driver, names)`` of device i, the names a
    tuple in the map's order. For selectors that read only which names a device has
    (``k in m``, ``m.size()``, a macro over ``m``'s keys): they are evaluated once per
    distinct set, not per device, whatever the values (which differ per device, as
    UUIDs do).

    Names are numbered by address first (the decoder shares them between devices) and
    by value when an address is new, so equal names are one number however they were
    made; a device's set is the byte string of its driver's and names' numbers.
    """
    cdef Py_ssize_t n = len(devices), i
    ids_a = np.zeros(n, np.int32)
    cdef list sets = []
    cdef _Numbering numbering = _Numbering()
    try:
        _key_scan(devices, drivers, capacity, ids_a, sets, numbering)
    finally:
        numbering.release()
    return ids_a, sets


cdef class _Numbering:
    """Numbers for hashable objects: by address (a C map) first, then by value."""

    cdef PtrMap by_address  # address -> number + 1
    cdef dict by_value
    cdef list keep  # objects whose address is a key of by_address: kept alive
    cdef bint ready

    def __cinit__(self):
        self.by_value = {}
        self.keep = []
        if ptrmap_init(&self.by_address, 64) < 0:
            ptrmap_free(&self.by_address)
            raise MemoryError()
        self.ready = True

    cdef void release(self) noexcept:
        if self.ready:
            ptrmap_free(&self.by_address)
            self.ready = False

    def __dealloc__(self):
        self.release()

    cdef int32_t number(self, PyObject *o) except -1:
        cdef int found = ptrmap_get(&self.by_address, o, 0)
        if found != 0:
            return found - 1
        known = self.by_value.get(<object>o)
        if known is None:
            known = len(self.by_value)
            self.by_value[<object>o] = known
        self.keep.append(<object>o)
        if ptrmap_put(&self.by_address, o, <int>known + 1) < 0:
            raise MemoryError()
        return <int32_t>known


cdef void _key_scan(list devices, list drivers, bint capacity, int32_t[::1] ids, list sets,
                    _Numbering numbering) except *:
    cdef Py_ssize_t n = len(devices), i, pos, k, size = 0, previous_size = -1
    cdef int32_t *numbers = NULL
    cdef int32_t *grown
    # The names of this device's map and of the device before, by address: a driver's
    # devices list the same name objects in the same order, and such a device's set is
    # the one before it, told without numbering its names or looking its set up (the
    # maps, kept alive by their devices for the whole pass, keep the names alive).
    cdef PyObject **names = NULL
    cdef PyObject **previous = NULL
    cdef PyObject **swap
    cdef PyObject *previous_driver = NULL
    cdef int32_t previous_id = -1
    cdef bint remembered
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *found
    cdef dict by_numbers = {}  # bytes of a device's numbers -> its set id
    try:
        for i in range(n):
            _prefetch_ahead(devices, i, _capacity_at if capacity else _attributes_at)
            if capacity:
                mapping = _field(devices[i], _capacity_at, "capacity", _DEVICE)
            else:
                mapping = _field(devices[i], _attributes_at, "attributes", _DEVICE)
            # (A dict made here may hold names nothing else keeps: never remembered.)
            remembered = type(mapping) is dict
            if not remembered:
                mapping = dict(mapping)
            if len(mapping) + 1 > size:
                size = 2 * (len(mapping) + 1)
                grown = <int32_t*>PyMem_Realloc(numbers, size * sizeof(int32_t))
                if grown == NULL:
                    raise MemoryError()
                numbers = grown
                swap = <PyObject**>PyMem_Realloc(names, size * sizeof(PyObject*))
                if swap == NULL:
                    raise MemoryError()
                names = swap
                swap = <PyObject**>PyMem_Realloc(previous, size * sizeof(PyObject*))
                if swap == NULL:
                    raise MemoryError()
                previous = swap
            driver = drivers[i]
            pos = 0
            k = 0
            while PyDict_Next(mapping, &pos, &key, &value):
                names[k] = key
                k += 1
            if (
                remembered and k == previous_size and <PyObject*>driver == previous_driver
                and memcmp(names, previous, k * sizeof(PyObject*)) == 0
            ):
                ids[i] = previous_id
                continue
            numbers[0] = numbering.number(<PyObject*>driver)
            for pos in range(k):
                numbers[pos + 1] = numbering.number(names[pos])
            signature = PyBytes_FromStringAndSize(<char*>numbers, (k + 1) * sizeof(int32_t))
            found = PyDict_GetItem(by_numbers, signature)
            if found != NULL:
                ids[i] = <int32_t><object>found
            else:
                ids[i] = len(sets)
                by_numbers[signature] = len(sets)
                sets.append((driver, tuple(mapping)))
            if remembered:
                swap = previous
                previous = names
                names = swap
                previous_size = k
                previous_driver = <PyObject*>driver
                previous_id = ids[i]
            else:
                previous_size = -1
    finally:
        PyMem_Free(numbers)
        PyMem_Free(names)
        PyMem_Free(previous)


def present_codes(const int32_t[::1] codes not None, const uint8_t[::1] wanted not None):
    """``(present, size)``: the distinct codes (non-negative) of the ``wanted`` rows,
    ascending, and the largest code of all rows + 1 (1 with no rows). One pass for the
    largest and one for the flags, without the GIL: numpy's bincount copied the codes
    to int64 first, and a wanted mask made a second copy (0.8 ms a leaf on 152,000
    devices, against 0.14 ms here)."""
    cdef Py_ssize_t n = codes.shape[0], i
    cdef int32_t most = 0
    if wanted.shape[0] != n:
        raise ValueError("codes and wanted differ in length")
    with nogil:
        for i in range(n):
            if codes[i] > most:
                most = codes[i]
    seen = np.zeros(<Py_ssize_t>most + 1, dtype=np.uint8)
    cdef uint8_t[::1] flags = seen
    with nogil:
        for i in range(n):
            if wanted[i] and codes[i] >= 0:
                flags[codes[i]] = 1
    return np.flatnonzero(seen), <Py_ssize_t>most + 1


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


cdef class AttributeObjects:
    """What :func:`attribute_pass` files per attribute name: each device's attribute
    object.

    A column is an int32 array of entries (0: the device has no such attribute, k:
    ``objects[k - 1]`` of the column's list). An object is listed again only when it
    differs from the column's previous one, so a column of one shared value lists it
    once and a column of UUIDs once per device, with no lookup: numbering objects in
    the pass took a lookup by address per attribute in a table as large as the
    distinct objects, a quarter of the pass's time on 5,000 GPU nodes. A column is
    numbered (each listed object told apart) only when a selector reads it
    (:meth:`codes`).
    """

    cdef list arrays  # column -> its entries (numpy int32)
    cdef list objects  # column -> its list of objects
    cdef dict index  # (domain, ident) -> column
    cdef int32_t **data  # column -> its entries' data
    cdef PyObject **last  # column -> its last listed object (held by its list)
    cdef int32_t *count  # column -> how many objects its list has
    cdef Py_ssize_t n, cap

    def __cinit__(self, Py_ssize_t n):
        self.arrays = []
        self.objects = []
        self.index = {}
        self.n = n
        self.cap = 16
        self.data = <int32_t**>PyMem_Malloc(self.cap * sizeof(int32_t*))
        self.last = <PyObject**>PyMem_Malloc(self.cap * sizeof(PyObject*))
        self.count = <int32_t*>PyMem_Malloc(self.cap * sizeof(int32_t))
        if self.data == NULL or self.last == NULL or self.count == NULL:
            raise MemoryError()

    def __dealloc__(self):
        PyMem_Free(self.data)
        PyMem_Free(self.last)
        PyMem_Free(self.count)

    cdef Py_ssize_t column(self, tuple name) except -1:
        """The column of ``(domain, ident)`` (added, all absent, if new)."""
        cdef int32_t **grown
        cdef PyObject **grown_last
        cdef int32_t *grown_count
        cdef int32_t[::1] view
        found = self.index.get(name)
        if found is not None:
            return <Py_ssize_t>found
        k = len(self.arrays)
        if k == self.cap:
            grown = <int32_t**>PyMem_Realloc(self.data, 2 * self.cap * sizeof(int32_t*))
            if grown == NULL:
                raise MemoryError()
            self.data = grown
            grown_last = <PyObject**>PyMem_Realloc(self.last, 2 * self.cap * sizeof(PyObject*))
            if grown_last == NULL:
                raise MemoryError()
            self.last = grown_last
            grown_count = <int32_t*>PyMem_Realloc(self.count, 2 * self.cap * sizeof(int32_t))
            if grown_count == NULL:
                raise MemoryError()
            self.count = grown_count
            self.cap *= 2
        array = np.zeros(self.n, np.int32)
        view = array
        self.data[k] = &view[0] if self.n else NULL
        self.last[k] = NULL
        self.count[k] = 0
        self.arrays.append(array)
        # (As long as the column, and referring to nothing that refers back.)
        self.objects.append(out_of_collector_sight([]))
        self.index[name] = k
        return k

    cdef inline int put(self, Py_ssize_t k, Py_ssize_t i, PyObject *value) except -1:
        """File ``value`` for device ``i`` in column ``k`` (its list only touched when
        the object differs from the column's previous one: no reference counting per
        device)."""
        if value != self.last[k]:
            _list_append(PyList_GET_ITEM(self.objects, k), value)
            self.last[k] = value
            self.count[k] += 1
        self.data[k][i] = self.count[k]
        return 0

    def present(self, tuple name not None):
        """Whether each device has attribute ``name`` (a bool array), or None when no
        device has it."""
        found = self.index.get(name)
        if found is None:
            return None
        return self.arrays[<Py_ssize_t>found] != 0

    def listed(self, tuple name not None):
        """Column ``name`` as filed: ``(entries, objects)`` (entry 0: no such attribute,
        k: ``objects[k - 1]``), or None when no device has it."""
        found = self.index.get(name)
        if found is None:
            return None
        return self.arrays[<Py_ssize_t>found], self.objects[<Py_ssize_t>found]

    def codes(self, tuple name not None, object key_of, object value_of):
        """Column ``name`` numbered: ``(codes, values, absent)`` as :func:`object_codes`
        gives them for the devices' objects, or None when no device has it."""
        found = self.index.get(name)
        if found is None:
            return None
        entries = self.arrays[<Py_ssize_t>found]
        listed, values, absent = object_codes(self.objects[<Py_ssize_t>found], key_of, value_of)
        code_of = np.zeros(len(listed) + 1, np.int32)
        code_of[1:] = listed
        return code_of[entries], values, absent or bool((entries == 0).any())


def object_codes(list items not None, object key_of, object value_of):
    """Codes for ``items`` (attribute objects, an object possibly many times; None:
    absent): 0 where absent, else 1 + the index of the item's CEL value among
    ``values``, the first distinct key first. Returns ``(codes, values, absent)``,
    ``absent`` whether some item has no value. ``key_of``/``value_of`` decide, as ``draspeed.cel.table``
    defines them, once per distinct object (by address); an attribute of a plain kind
    (int, bool, string) with a value of exactly that type is decided here without
    them (its key is ``(kind, value)``, its CEL value the value itself), which is what
    they would answer: a column of UUIDs has a distinct object per device."""
    cdef Py_ssize_t n = len(items), i
    cdef int code
    cdef bint absent = False
    cdef dict by_key = {}
    cdef list values = []
    cdef PyObject *item
    cdef PyObject *kind
    cdef PyObject *raw
    # address of an object -> its code + 1
    cdef PtrMap seen
    codes_a = np.zeros(n, np.int32)
    cdef int32_t[::1] codes = codes_a
    if ptrmap_init(&seen, 64) < 0:
        ptrmap_free(&seen)
        raise MemoryError()
    try:
        for i in range(n):
            item = PyList_GET_ITEM(items, i)
            code = ptrmap_get(&seen, item, 0) - 1
            if code < 0:
                kind = raw = NULL
                if Py_TYPE(<object>item) == _ATTRIBUTE:
                    kind = draspeed_get_slot(<object>item, _kind_at)
                    raw = draspeed_get_slot(<object>item, _attribute_value_at)
                if kind != NULL and raw != NULL and (
                    (type(<object>raw) is str and <object>kind == "string")
                    or (type(<object>raw) is int and <object>kind == "int")
                    or (type(<object>raw) is bool and <object>kind == "bool")
                ):
                    code = _code_of(by_key, values, (<object>kind, <object>raw), <object>item,
                                    value_of, <object>raw)
                elif <object>item is None:
                    code = 0
                else:
                    code = _code_of(by_key, values, key_of(<object>item), <object>item,
                                    value_of, _ASK)
                if ptrmap_put(&seen, item, code + 1) < 0:
                    raise MemoryError()
            if code == 0:
                absent = True
            codes[i] = code
    finally:
        ptrmap_free(&seen)
    return codes_a, values, absent


def attribute_pass(list devices, list drivers, frozenset risky_kinds, object detail_of,
                   frozenset wanted=None):
    """One walk over every device's attributes, for everything a device table reads
    of them: ``(errors, columns)``.

    ``errors``: ``(row, attribute name, detail)`` for each device with an attribute
    upstream cannot convert to a CEL value (the first such attribute, in its order);
    ``detail_of(attribute)`` is None when one converts, else the reason. It is asked
    once per distinct attribute object, and only for kinds in ``risky_kinds``.

    ``columns``: an :class:`AttributeObjects` of every attribute name some device has
    (those in ``wanted`` alone, unless it is None), filed under ``(domain, ident)``. A device's own driver's attribute may be named by
    its bare identifier; the fully qualified name wins when a device has both, as
    upstream looks attributes up.

    Attribute names and kinds are strings the decoder shares, and attribute objects
    are shared between devices wherever their values repeat, so most lookups here are
    by address, in C; one pass replaces a pass per attribute a selector reads.
    """
    cdef Py_ssize_t n = len(devices)
    cdef list out = [], reasons = [], keep = []
    cdef PyObject *kinds[KINDS_REMEMBERED]
    cdef bint kind_risky[KINDS_REMEMBERED]
    cdef AttributeObjects columns = AttributeObjects(n)
    # address of a DeviceAttribute -> 1 (converts) or 2 + the index of its reason
    cdef PtrMap seen
    # address of a qualified attribute name -> its column + 1; -1: a bare name
    cdef PtrMap name_column
    if ptrmap_init(&seen, 64) < 0 or ptrmap_init(&name_column, 64) < 0:
        ptrmap_free(&seen)
        ptrmap_free(&name_column)
        raise MemoryError()
    try:
        _attribute_scan(devices, drivers, risky_kinds, detail_of, wanted, &seen, &name_column,
                        kinds, kind_risky, columns, out, reasons, keep)
    finally:
        ptrmap_free(&seen)
        ptrmap_free(&name_column)
    return out, columns


cdef enum:
    # Entries of the previous device remembered (a driver's devices list their
    # attributes in one order, most of them the objects the device before had).
    ENTRIES_REMEMBERED = 32


cdef void _attribute_scan(list devices, list drivers, frozenset risky_kinds, object detail_of,
                          frozenset wanted, PtrMap *seen, PtrMap *name_column,
                          PyObject **kinds, bint *kind_risky, AttributeObjects columns,
                          list out, list reasons, list keep) except *:
    cdef Py_ssize_t n = len(devices), i, pos, j
    cdef int n_kinds = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef bint failed, bare, same_dict
    cdef int verdict, column
    # What an entry at place j held: its name and object, and what they decided (the
    # column; the verdict, 0 while not asked). A pure function of the two objects,
    # which the devices' own dicts keep alive for the whole pass: an entry repeated
    # from an earlier device is decided without a lookup.
    cdef PyObject *prev_key[ENTRIES_REMEMBERED]
    cdef PyObject *prev_value[ENTRIES_REMEMBERED]
    cdef int prev_column[ENTRIES_REMEMBERED]
    cdef int prev_verdict[ENTRIES_REMEMBERED]
    for j in range(ENTRIES_REMEMBERED):
        prev_key[j] = prev_value[j] = NULL
    for i in range(n):
        _prefetch_ahead(devices, i, _attributes_at)
        attrs = _field(devices[i], _attributes_at, "attributes", _DEVICE)
        # (A dict made here may hold objects nothing else keeps: not remembered.)
        same_dict = type(attrs) is dict
        if not same_dict:
            attrs = dict(attrs)
        pos = 0
        j = 0
        failed = False
        bare = False
        while PyDict_Next(attrs, &pos, &key, &value):
            if j < ENTRIES_REMEMBERED and prev_key[j] == key and prev_value[j] == value:
                column = prev_column[j]
                verdict = prev_verdict[j]
                if verdict == 0 and not failed:
                    verdict = prev_verdict[j] = _verdict(value, risky_kinds, detail_of, seen,
                                                         kinds, kind_risky, &n_kinds, reasons,
                                                         keep)
            else:
                column = _name_column(key, name_column, columns, keep, wanted)
                verdict = 0 if failed else _verdict(value, risky_kinds, detail_of, seen, kinds,
                                                    kind_risky, &n_kinds, reasons, keep)
                if j < ENTRIES_REMEMBERED and same_dict:
                    prev_key[j], prev_value[j] = key, value
                    prev_column[j], prev_verdict[j] = column, verdict
            j += 1
            # The value, in the column of its name.
            if column > 0:
                columns.put(column - 1, i, value)
            elif column == -1:
                bare = True
            if verdict > 1 and not failed:
                out.append((i, <object>key, reasons[verdict - 2]))
                failed = True
        if bare:
            _bare_names(attrs, <str>drivers[i], i, columns, wanted)


cdef inline int _name_column(PyObject *key, PtrMap *name_column, AttributeObjects columns,
                             list keep, frozenset wanted) except? -3:
    """The column of attribute name ``key`` + 1; -1 for a bare name, -2 for a name no
    selector reads (or not ``wanted``)."""
    cdef int column = ptrmap_get(name_column, key, 0)
    if column != 0:
        return column
    name = <object>key
    if type(name) is not str:
        column = -2
    elif "/" in name:
        filed = tuple((<str>name).split("/", 1))
        if wanted is not None and filed not in wanted:
            column = -2
        else:
            column = columns.column(filed) + 1
    else:
        column = -1
    if ptrmap_put(name_column, key, column) < 0:
        raise MemoryError()
    keep.append(name)  # its address stays this name's
    return column


cdef int _verdict(PyObject *value, frozenset risky_kinds, object detail_of, PtrMap *seen,
                  PyObject **kinds, bint *kind_risky, int *n_kinds, list reasons,
                  list keep) except -1:
    """1 when the attribute converts to a CEL value, else 2 + the index of the reason
    in ``reasons`` (most are told by their kind's address)."""
    cdef PyObject *kind
    cdef bint risky
    cdef int verdict, k
    if Py_TYPE(<object>value) == _ATTRIBUTE:
        kind = draspeed_get_slot(<object>value, _kind_at)
        if kind != NULL:
            risky = True
            for k in range(n_kinds[0]):
                if kinds[k] == kind:
                    risky = kind_risky[k]
                    break
            else:
                risky = (<object>kind) in risky_kinds
                if n_kinds[0] < KINDS_REMEMBERED:
                    kinds[n_kinds[0]] = kind
                    kind_risky[n_kinds[0]] = risky
                    n_kinds[0] += 1
                    keep.append(<object>kind)  # the address stays this string's
            if not risky:
                return 1
    verdict = ptrmap_get(seen, value, 0)
    if verdict == 0:
        detail = detail_of(<object>value) if (<object>value).kind in risky_kinds else None
        if detail is None:
            verdict = 1
        else:
            reasons.append(detail)
            verdict = 1 + len(reasons)
        if ptrmap_put(seen, value, verdict) < 0:
            raise MemoryError()
    return verdict


cdef void _bare_names(dict attrs, str driver, Py_ssize_t i, AttributeObjects columns,
                      frozenset wanted) except *:
    """The attributes a device names by their bare identifier: its driver's, unless
    the device also has the fully qualified name (those ``wanted``, unless None)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef Py_ssize_t k
    while PyDict_Next(attrs, &pos, &key, &value):
        name = <object>key
        if type(name) is not str or "/" in name:
            continue
        if wanted is not None and (driver, name) not in wanted:
            continue
        k = columns.column((driver, name))
        if (driver + "/" + name) not in attrs:
            columns.put(k, i, value)




# The string methods string_calls applies (CEL's and Python's agree on two strings: both
# read code points).
STRING_METHODS = ("startsWith", "endsWith", "contains")


def string_calls(list objects not None, str function, str arg):
    """``function`` (one of :data:`STRING_METHODS`) with argument ``arg`` applied to
    each attribute object of ``objects``: ``(verdicts, lengths)``, a bool and an int64
    array, or None unless every object is a ``string`` attribute holding an ASCII
    ``str`` (whose CEL value is that string, and whose cost depends on its length
    alone). One C call per object: a column of UUIDs is answered without numbering its
    values."""
    cdef Py_ssize_t n = len(objects), i, found
    cdef int method = STRING_METHODS.index(function)
    cdef PyObject *item
    cdef PyObject *kind
    cdef PyObject *raw
    verdicts_a = np.empty(n, np.bool_)
    lengths_a = np.empty(n, np.int64)
    cdef uint8_t[::1] verdicts = verdicts_a.view(np.uint8)
    cdef int64_t[::1] lengths = lengths_a
    for i in range(n):
        item = PyList_GET_ITEM(objects, i)
        if Py_TYPE(<object>item) != _ATTRIBUTE:
            return None
        kind = draspeed_get_slot(<object>item, _kind_at)
        raw = draspeed_get_slot(<object>item, _attribute_value_at)
        if kind == NULL or raw == NULL or type(<object>raw) is not str:
            return None
        if type(<object>kind) is not str or <str>kind != "string":
            return None
        if not PyUnicode_IS_ASCII(<object>raw):
            return None
        lengths[i] = PyUnicode_GET_LENGTH(<object>raw)
        if method == 2:
            found = PyUnicode_Find(<object>raw, arg, 0, lengths[i], 1)
            verdicts[i] = found >= 0
        else:
            verdicts[i] = PyUnicode_Tailmatch(
                <object>raw, arg, 0, lengths[i], -1 if method == 0 else 1
            ) == 1
    return verdicts_a, lengths_a
