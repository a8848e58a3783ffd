# cython: language_level=3
"""Slices read once into flat arrays: what pool gathering and node layouts need.

:func:`read_slices` walks a batch of ResourceSlice model objects once, in compiled
code, and returns per-slice and per-device arrays (``draspeed.engine.slice_table``
appends them to the family's table). Strings become ids of one interning table
(device names, node names, counter names ...), quantities ids of a quantity table,
pools ids of a pool table; what a device consumes of counters becomes the id of a
consumption *pattern* (a list of (counter set, counter, quantity) ids) shared by every
device that consumes the same. Objects shared between devices -- the decoder shares
equal counter consumptions, capacities, quantities and node selectors -- are read once
and recognised by identity afterwards.

Model objects of draspeed's own classes are read through their slots directly (the
offsets come from the classes' member descriptors); anything else, e.g. a subclass,
through ordinary attribute access. Nothing here decides anything: it only reads.
"""

import numpy as np

from draspeed.api import model
from draspeed.engine import beyond

from libc.stdint cimport int32_t, int64_t, uint8_t
from cpython.dict cimport PyDict_GetItemWithError as PyDict_GetItem, PyDict_Next
from cpython.long cimport PyLong_FromVoidPtr
from cpython.object cimport PyObject, PyTypeObject
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Realloc

from model_slots cimport (
    PtrMap, draspeed_get_slot, draspeed_prefetch, draspeed_prefetch_ahead_items, ptrmap_free,
    ptrmap_get, ptrmap_init, PyObject_GC_UnTrack, out_of_collector_sight, ptrmap_put, slot_offset,
)

cdef inline object _identity(object o):
    """The object's address as a dict key (what ``id()`` gives, without the audit
    event that builtin raises on every call)."""
    return PyLong_FromVoidPtr(<void*>o)


cdef extern from "Python.h":
    PyTypeObject *Py_TYPE(object o)

# Device flags (d_flags).
DEVICE_FLAGS = {
    "multi": 1,  # allowMultipleAllocations: true
    "consumes": 2,  # consumes counters
    "binding": 4,  # has bindingConditions
    "tainted": 8,  # has taints
    "capacity": 16,  # has capacities
    "capacity_policy": 32,  # a capacity has a requestPolicy
    "binds_to_node": 64,
    "binding_failures": 128,  # has bindingFailureConditions
}
cdef enum:
    F_MULTI = 1
    F_CONSUMES = 2
    F_BINDING = 4
    F_TAINTED = 8
    F_CAPACITY = 16
    F_POLICY = 32
    F_BINDS = 64
    F_BINDING_FAILURES = 128

# How a slice, or a device of a perDeviceNodeSelection slice, selects nodes (s_sel,
# d_pdn): upstream checks nodeName, then allNodes, then nodeSelector.
SELECTION = {"none": 0, "node_name": 1, "all_nodes": 2, "node_selector": 3, "per_device": 4}
cdef enum:
    SEL_NONE = 0
    SEL_NODE_NAME = 1
    SEL_ALL_NODES = 2
    SEL_SELECTOR = 3
    SEL_PER_DEVICE = 4




# Where the Device fields read per device are, for Device instances.
cdef PyTypeObject *_DEVICE = <PyTypeObject*>model.Device
cdef PyTypeObject *_CAPACITY = <PyTypeObject*>model.DeviceCapacity
cdef Py_ssize_t _name_at = slot_offset(model.Device, "name")
cdef Py_ssize_t _capacity_at = slot_offset(model.Device, "capacity")
cdef Py_ssize_t _consumes_at = slot_offset(model.Device, "consumes_counters")
cdef Py_ssize_t _taints_at = slot_offset(model.Device, "taints")
cdef Py_ssize_t _binding_at = slot_offset(model.Device, "binding_conditions")
cdef Py_ssize_t _failures_at = slot_offset(model.Device, "binding_failure_conditions")
cdef Py_ssize_t _multi_at = slot_offset(model.Device, "allow_multiple_allocations")
cdef Py_ssize_t _binds_at = slot_offset(model.Device, "binds_to_node")
cdef Py_ssize_t _policy_at = slot_offset(model.DeviceCapacity, "request_policy")


# ... and the per-slice fields, for instances of the slice's classes.
cdef PyTypeObject *_USE = <PyTypeObject*>model.DeviceCounterConsumption
cdef PyTypeObject *_COUNTER = <PyTypeObject*>model.Counter
cdef Py_ssize_t _use_set_at = slot_offset(model.DeviceCounterConsumption, "counter_set")
cdef Py_ssize_t _use_counters_at = slot_offset(model.DeviceCounterConsumption, "counters")
cdef Py_ssize_t _counter_value_at = slot_offset(model.Counter, "value")

cdef PyTypeObject *_SLICE = <PyTypeObject*>model.ResourceSlice
cdef PyTypeObject *_META = <PyTypeObject*>model.ObjectMeta
cdef PyTypeObject *_SPEC = <PyTypeObject*>model.ResourceSliceSpec
cdef PyTypeObject *_POOL = <PyTypeObject*>model.ResourcePool
cdef Py_ssize_t _spec_at = slot_offset(model.ResourceSlice, "spec")
cdef Py_ssize_t _metadata_at = slot_offset(model.ResourceSlice, "metadata")
cdef Py_ssize_t _meta_name_at = slot_offset(model.ObjectMeta, "name")
cdef Py_ssize_t _driver_at = slot_offset(model.ResourceSliceSpec, "driver")
cdef Py_ssize_t _pool_at = slot_offset(model.ResourceSliceSpec, "pool")
cdef Py_ssize_t _node_name_at = slot_offset(model.ResourceSliceSpec, "node_name")
cdef Py_ssize_t _all_nodes_at = slot_offset(model.ResourceSliceSpec, "all_nodes")
cdef Py_ssize_t _node_selector_at = slot_offset(model.ResourceSliceSpec, "node_selector")
cdef Py_ssize_t _per_device_at = slot_offset(model.ResourceSliceSpec, "per_device_node_selection")
cdef Py_ssize_t _devices_at = slot_offset(model.ResourceSliceSpec, "devices")
cdef Py_ssize_t _counters_at = slot_offset(model.ResourceSliceSpec, "shared_counters")
cdef Py_ssize_t _pool_name_at = slot_offset(model.ResourcePool, "name")
cdef Py_ssize_t _generation_at = slot_offset(model.ResourcePool, "generation")
cdef Py_ssize_t _slice_count_at = slot_offset(model.ResourcePool, "resource_slice_count")


cdef PyTypeObject *_NODE = <PyTypeObject*>model.Node
cdef Py_ssize_t _node_metadata_at = slot_offset(model.Node, "metadata")


cdef inline PyObject *_metadata_slot(PyObject *item) noexcept:
    """What a ResourceSlice's or Node's metadata slot holds (NULL: another object, or
    an empty slot)."""
    if Py_TYPE(<object>item) == _SLICE:
        return draspeed_get_slot(<object>item, _metadata_at)
    if Py_TYPE(<object>item) == _NODE:
        return draspeed_get_slot(<object>item, _node_metadata_at)
    return NULL


cdef inline PyObject *_metadata_of(PyObject *item) noexcept:
    """A ResourceSlice's or Node's ObjectMeta (NULL: another object, or none)."""
    cdef PyObject *meta = _metadata_slot(item)
    return meta if meta != NULL and Py_TYPE(<object>meta) == _META else NULL


def object_names(list items not None):
    """Each item's ``metadata.name``, ResourceSlices' and Nodes' read from their slots
    with the items ahead asked for (the item eight on, the metadata of the one four on,
    the name of the one two on): a cluster's slices and Nodes are each a chain of three
    objects to the name, a cache miss each when read one after the other (5,000 Nodes:
    about 1 ms). Any other object's name is read as Python reads it."""
    cdef Py_ssize_t n = len(items), i
    cdef list out = PyList_New(n)
    cdef PyObject *item
    cdef PyObject *meta
    cdef PyObject *name
    for i in range(n):
        if i + 8 < n:
            draspeed_prefetch(PyList_GET_ITEM(items, i + 8))
        if i + 4 < n:
            meta = _metadata_slot(PyList_GET_ITEM(items, i + 4))
            if meta != NULL:
                draspeed_prefetch(meta)
        if i + 2 < n:
            meta = _metadata_of(PyList_GET_ITEM(items, i + 2))
            if meta != NULL:
                name = draspeed_get_slot(<object>meta, _meta_name_at)
                if name != NULL:
                    draspeed_prefetch(name)
        item = PyList_GET_ITEM(items, i)
        meta = _metadata_of(item)
        name = NULL if meta == NULL else draspeed_get_slot(<object>meta, _meta_name_at)
        value = <object>name if name != NULL else (<object>item).metadata.name
        Py_INCREF(value)
        PyList_SET_ITEM(out, i, value)
    return out


cdef inline object _get(object obj, Py_ssize_t offset, str name, bint direct):
    """A field of a model object: its slot when ``direct``, else getattr."""
    cdef PyObject *value
    if direct:
        value = draspeed_get_slot(obj, offset)
        if value == NULL:
            raise AttributeError(name)
        return <object>value
    return getattr(obj, name)


cdef inline int32_t _intern(dict table, list values, object text) except -1:
    cdef PyObject *found = PyDict_GetItem(table, text)
    if found != NULL:
        return <int32_t><object>found
    cdef int32_t sid = len(values)
    table[text] = sid
    values.append(text)
    return sid


cdef class Interning:
    """The tables that give strings, quantities, pools, node selectors and counter
    consumption patterns their ids.

    Shared by every version of a snapshot family and only ever appended to (under the
    family's lock), so an id means the same thing everywhere.
    """

    cdef public dict strings  # str -> id
    cdef public list string_list  # id -> str
    cdef public dict pools  # (driver id, pool name id) -> pool id
    cdef public list pool_keys  # pool id -> (driver, pool name)
    cdef public list quantities  # quantity id -> Quantity
    cdef public list quantity_nanos  # quantity id -> its nano units (engine.beyond.nanos)
    cdef public list selectors  # selector id -> NodeSelector
    # Consumption patterns: pattern id -> entries [ptr[id], ptr[id + 1]) of the lists.
    cdef public list pattern_ptr
    cdef public list pattern_set
    cdef public list pattern_counter
    cdef public list pattern_quantity
    cdef dict _quantity_by_value  # nanos (a stand-in's: (quantity,)) -> quantity id
    cdef dict _selector_by_object  # address of a NodeSelector -> selector id
    cdef dict _pattern  # entries (int32 triples, as bytes) -> pattern id
    cdef int32_t *_scratch  # the entries of the device being read (triples)
    cdef Py_ssize_t _scratch_cap
    cdef list _alive  # objects whose address is a key above: kept alive
    cdef PtrMap _use_pattern  # address of a device's only consumption entry -> pattern id
    cdef PtrMap _quantity_at  # address of a Quantity -> quantity id

    def __cinit__(self):
        if ptrmap_init(&self._use_pattern, 1024) < 0 or ptrmap_init(&self._quantity_at, 64) < 0:
            raise MemoryError()
        # (The lists that grow with the devices, or with the pools, are never walked by
        # the cyclic collector: nothing in them refers back.)
        self.strings = {}
        self.string_list = out_of_collector_sight([])
        self.pools = {}
        self.pool_keys = out_of_collector_sight([])
        self.quantities = out_of_collector_sight([])
        self.quantity_nanos = out_of_collector_sight([])
        self.selectors = out_of_collector_sight([])
        self.pattern_ptr = out_of_collector_sight([0])
        self.pattern_set = out_of_collector_sight([])
        self.pattern_counter = out_of_collector_sight([])
        self.pattern_quantity = out_of_collector_sight([])
        self._quantity_by_value = {}
        self._selector_by_object = {}
        self._pattern = {}
        self._alive = out_of_collector_sight([])

    def __dealloc__(self):
        ptrmap_free(&self._use_pattern)
        PyMem_Free(self._scratch)
        ptrmap_free(&self._quantity_at)

    def string(self, str text):
        """The id of ``text`` (added if new)."""
        return _intern(self.strings, self.string_list, text)

    def find(self, str text):
        """The id of ``text``, or -1 if it was never interned."""
        found = self.strings.get(text)
        return -1 if found is None else found

    def find_all(self, object texts, Py_ssize_t n):
        """The ids of the ``n`` strings ``texts`` yields (-1 for one never interned), as
        an int32 array: one C loop, not a call per node name."""
        ids_a = np.full(n, -1, np.int32)
        cdef int32_t[::1] ids = ids_a
        cdef Py_ssize_t i = 0
        cdef PyObject *found
        for text in texts:
            if i == n:
                raise ValueError("more strings than announced")
            if type(text) is not str:
                raise TypeError(f"expected str, got {type(text).__name__}")
            found = PyDict_GetItem(self.strings, text)
            if found != NULL:
                ids[i] = <int32_t><object>found
            i += 1
        if i != n:
            raise ValueError("fewer strings than announced")
        return ids_a

    def pattern_arrays(self):
        """The consumption patterns as arrays: (ptr, set ids, counter ids, quantity ids)."""
        return (
            np.asarray(self.pattern_ptr, np.int64),
            np.asarray(self.pattern_set, np.int32),
            np.asarray(self.pattern_counter, np.int32),
            np.asarray(self.pattern_quantity, np.int32),
        )

    cdef int32_t quantity(self, object q) except -1:
        cdef int known = ptrmap_get(&self._quantity_at, <void*>q, -1)
        if known >= 0:
            return known
        nanos = beyond.nanos(q)
        # (Quantities beyond the exact range share a stand-in: told apart by value.)
        key = (q,) if beyond.is_stand_in(nanos) else nanos
        existing = self._quantity_by_value.get(key)
        if existing is None:
            existing = len(self.quantities)
            self.quantities.append(q)
            self.quantity_nanos.append(nanos)
            self._quantity_by_value[key] = existing
        if ptrmap_put(&self._quantity_at, <void*>q, <int>existing) < 0:
            raise MemoryError()
        self._alive.append(q)
        return <int32_t>existing

    cdef int32_t selector(self, object selector) except -1:
        cdef PyObject *found = PyDict_GetItem(self._selector_by_object, _identity(selector))
        if found != NULL:
            return <int32_t><object>found
        cdef int32_t sid = len(self.selectors)
        self.selectors.append(selector)
        self._selector_by_object[_identity(selector)] = sid
        self._alive.append(selector)
        return sid

    cdef int32_t pool(self, int32_t driver, int32_t name) except -1:
        key = (driver, name)
        found = self.pools.get(key)
        if found is None:
            found = len(self.pool_keys)
            # (Tuples of numbers and of strings, untracked now rather than at the first
            # collection, which would visit each of them: one pair of each per pool.)
            PyObject_GC_UnTrack(<void*>key)
            self.pools[key] = found
            names = (self.string_list[driver], self.string_list[name])
            PyObject_GC_UnTrack(<void*>names)
            self.pool_keys.append(names)
        return <int32_t>found

    cdef int _reserve(self, Py_ssize_t triples) except -1:
        """Room for ``triples`` entries in the scratch buffer."""
        cdef Py_ssize_t cap
        cdef int32_t *grown
        if triples <= self._scratch_cap:
            return 0
        cap = max(2 * self._scratch_cap, triples, 16)
        grown = <int32_t*>PyMem_Realloc(self._scratch, cap * 3 * sizeof(int32_t))
        if grown == NULL:
            raise MemoryError()
        self._scratch = grown
        self._scratch_cap = cap
        return 0

    cdef Py_ssize_t _fill(self, object use, Py_ssize_t m) except -1:
        """Write one consumption entry's (set id, counter id, quantity id) triples into
        the scratch buffer from triple ``m`` on: first the set itself, as (set id, -1,
        -1) (a set may be named with no counters, and must exist all the same), then
        each counter. Returns the next free triple."""
        cdef Py_ssize_t pos = 0, room
        cdef PyObject *key
        cdef PyObject *value
        cdef int32_t *at
        cdef int32_t set_id, counter_id, quantity_id
        cdef bint direct = Py_TYPE(use) == _USE
        set_id = _intern(self.strings, self.string_list,
                         _get(use, _use_set_at, "counter_set", direct))
        counters = _get(use, _use_counters_at, "counters", direct)
        if type(counters) is not dict:
            counters = dict(counters)
        room = m + 1 + len(counters)
        self._reserve(room)
        at = self._scratch + 3 * m
        at[0], at[1], at[2] = set_id, -1, -1
        m += 1
        while PyDict_Next(counters, &pos, &key, &value):
            counter_id = _intern(self.strings, self.string_list, <object>key)
            quantity_id = self.quantity(_get(<object>value, _counter_value_at, "value",
                                             Py_TYPE(<object>value) == _COUNTER))
            if m >= room:  # (the map grew while it was read)
                raise ValueError("draspeed: the slices changed while they were read")
            at = self._scratch + 3 * m
            at[0], at[1], at[2] = set_id, counter_id, quantity_id
            m += 1
        return m

    cdef int32_t consumption(self, object uses) except -1:
        """The pattern id of a device's consumesCounters list: one lookup by address
        for a list of one entry already seen; else its entries, written as int32
        triples in C, looked up as one bytes key (a MIG device's own entry of eight
        counters made ten tuples and hashed them, 40% of reading the slices)."""
        cdef bint single = len(uses) == 1
        cdef int known
        cdef Py_ssize_t m = 0, t
        if single:
            known = ptrmap_get(&self._use_pattern, <void*>uses[0], -1)
            if known >= 0:
                return known
        for use in uses:
            m = self._fill(use, m)
        key = PyBytes_FromStringAndSize(<char*>self._scratch, m * 3 * sizeof(int32_t))
        cdef PyObject *hit = PyDict_GetItem(self._pattern, key)
        cdef int32_t found
        if hit != NULL:
            found = <int32_t><object>hit
        else:
            found = len(self.pattern_ptr) - 1
            for t in range(m):
                self.pattern_set.append(self._scratch[3 * t])
                self.pattern_counter.append(self._scratch[3 * t + 1])
                self.pattern_quantity.append(self._scratch[3 * t + 2])
            self.pattern_ptr.append(len(self.pattern_set))
            self._pattern[key] = found
        if single:
            if ptrmap_put(&self._use_pattern, <void*>uses[0], <int>found) < 0:
                raise MemoryError()
            self._alive.append(uses[0])  # its address stays this entry's
        return found


cdef inline bint _is_true(object value):
    """A ``bool | None`` field that is set to true."""
    return value is True or (value is not None and value is not False and bool(value))


cdef inline bint _non_empty(object value):
    """A list field with items (a plain list: its size, without a call)."""
    if type(value) is list:
        return PyList_GET_SIZE(value) > 0
    return bool(value)


cdef bint _has_policy(object capacity) except -1:
    """Whether any capacity of a device's capacity map has a request policy."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *policy
    if type(capacity) is not dict:
        capacity = dict(capacity)
    while PyDict_Next(capacity, &pos, &key, &value):
        if Py_TYPE(<object>value) == _CAPACITY:
            policy = draspeed_get_slot(<object>value, _policy_at)
            if policy != NULL and policy != <PyObject*>None:
                return True
        elif (<object>value).request_policy is not None:
            return True
    return False


# What the device loop asks the memory for ahead of each device
# (draspeed_prefetch_ahead_items):
# the objects every device's fields read point to, and the entries of its capacity map
# and consumption list.
cdef Py_ssize_t _PREFETCH_FIELDS[6]
_PREFETCH_FIELDS[:] = [_name_at, _capacity_at, _consumes_at, _taints_at, _binding_at, _failures_at]
cdef Py_ssize_t _PREFETCH_CONTENTS[2]
_PREFETCH_CONTENTS[:] = [_capacity_at, _consumes_at]


def read_slices(list slices, Interning names not None, Py_ssize_t first_device):
    """Per-slice and per-device arrays of ``slices`` (device indices from ``first_device``).

    Returns a dict of numpy arrays: ``s_*`` one entry per slice, ``d_*`` one per
    device (``d_pattern``: the consumption pattern id, -1 for none), ``cs_*`` the
    counter sets of counter-set slices and ``c_*`` their counters (``s_cs_ptr`` and
    ``cs_c_ptr`` index them, batch-local); and two lists, ``devices`` and each one's
    ``drivers``, for the devices' CEL table (listed here, while each device is at hand: a
    second pass over them waited on the memory for each again).
    """
    cdef Py_ssize_t S = len(slices), s, n_dev = 0, n_sets = 0, n_counters = 0
    cdef bint direct
    for rs in slices:
        spec = _get(rs, _spec_at, "spec", Py_TYPE(rs) == _SLICE)
        direct = Py_TYPE(spec) == _SPEC
        n_dev += len(_get(spec, _devices_at, "devices", direct))
        for counter_set in _get(spec, _counters_at, "shared_counters", direct):
            n_sets += 1
            n_counters += len(counter_set.counters)
    s_first_a = np.empty(S, np.int64)
    s_ndev_a = np.empty(S, np.int32)
    s_pool_a = np.empty(S, np.int32)
    s_gen_a = np.empty(S, np.int64)
    s_count_a = np.empty(S, np.int64)
    s_node_a = np.empty(S, np.int32)
    s_sel_a = np.empty(S, np.uint8)
    s_per_device_a = np.zeros(S, np.uint8)
    s_selector_a = np.empty(S, np.int32)
    s_name_a = np.empty(S, np.int32)
    s_cs_ptr_a = np.empty(S + 1, np.int32)
    cs_name_a = np.empty(n_sets, np.int32)
    cs_c_ptr_a = np.empty(n_sets + 1, np.int32)
    c_name_a = np.empty(n_counters, np.int32)
    c_quantity_a = np.empty(n_counters, np.int32)
    d_name_a = np.empty(n_dev, np.int32)
    d_flags_a = np.empty(n_dev, np.uint8)
    d_pattern_a = np.full(n_dev, -1, np.int32)
    d_pdn_a = np.zeros(n_dev, np.uint8)
    d_pdn_node_a = np.full(n_dev, -1, np.int32)
    d_pdn_selector_a = np.full(n_dev, -1, np.int32)
    cdef list device_list = out_of_collector_sight(PyList_New(n_dev))
    cdef list driver_list = out_of_collector_sight(PyList_New(n_dev))
    cdef int64_t[::1] s_first = s_first_a, s_gen = s_gen_a, s_count = s_count_a
    cdef int32_t[::1] s_ndev = s_ndev_a, s_pool = s_pool_a
    cdef int32_t[::1] s_node = s_node_a, s_selector = s_selector_a, s_name = s_name_a
    cdef int32_t[::1] s_cs_ptr = s_cs_ptr_a, cs_name = cs_name_a, cs_c_ptr = cs_c_ptr_a
    cdef int32_t[::1] c_name = c_name_a, c_quantity = c_quantity_a
    cdef uint8_t[::1] s_sel = s_sel_a, s_per_device = s_per_device_a
    cdef int32_t[::1] d_name = d_name_a, d_pattern = d_pattern_a
    cdef int32_t[::1] d_pdn_node = d_pdn_node_a, d_pdn_selector = d_pdn_selector_a
    cdef uint8_t[::1] d_flags = d_flags_a, d_pdn = d_pdn_a
    cdef dict strings = names.strings
    cdef list string_list = names.string_list
    cdef Py_ssize_t g = 0, pos, k = 0, c = 0, j
    cdef uint8_t flags
    cdef int32_t driver
    cdef bint per_device
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *policy
    # Every device's address listed first, in one run over the slices' lists that
    # touches no device: the loop below then asks for the devices ahead of it across
    # the slices' ends (every eight devices on a GPU node, where asking within each
    # list stopped short). The lists are held in ``lists`` while read, and the loop
    # checks each device against its listed address.
    ahead_a = np.empty(max(n_dev, 1), np.uintp)  # (pointer-sized integers)
    cdef size_t[::1] ahead_view = ahead_a
    cdef PyObject **ahead = <PyObject**>&ahead_view[0]
    cdef list lists = []
    for s in range(S):
        rs = slices[s]
        spec = _get(rs, _spec_at, "spec", Py_TYPE(rs) == _SLICE)
        devices = _get(spec, _devices_at, "devices", Py_TYPE(spec) == _SPEC)
        if type(devices) is not list:
            devices = list(devices)
        lists.append(devices)
        s_ndev[s] = PyList_GET_SIZE(devices)
        if g + s_ndev[s] > n_dev:  # (a device list longer than when it was counted above)
            raise ValueError("draspeed: the slices changed while they were read")
        for j in range(s_ndev[s]):
            ahead[g] = PyList_GET_ITEM(devices, j)
            g += 1
    if g != n_dev:
        raise ValueError("draspeed: the slices changed while they were read")
    g = 0
    s_cs_ptr[0] = 0
    cs_c_ptr[0] = 0
    for s in range(S):
        rs = slices[s]
        direct = Py_TYPE(rs) == _SLICE
        spec = _get(rs, _spec_at, "spec", direct)
        metadata = _get(rs, _metadata_at, "metadata", direct)
        direct = Py_TYPE(spec) == _SPEC
        driver = _intern(strings, string_list, _get(spec, _driver_at, "driver", direct))
        # The one str of this driver's name, for every device of every slice of the
        # driver: the CEL table's columns read a run of one object without a lookup.
        driver_name = string_list[driver]
        pool = _get(spec, _pool_at, "pool", direct)
        node_name = _get(spec, _node_name_at, "node_name", direct)
        all_nodes = _get(spec, _all_nodes_at, "all_nodes", direct)
        node_selector = _get(spec, _node_selector_at, "node_selector", direct)
        per_device_selection = _get(spec, _per_device_at, "per_device_node_selection", direct)
        devices = <list>PyList_GET_ITEM(lists, s)
        shared_counters = _get(spec, _counters_at, "shared_counters", direct)
        direct = Py_TYPE(pool) == _POOL
        s_pool[s] = names.pool(
            driver, _intern(strings, string_list, _get(pool, _pool_name_at, "name", direct))
        )
        s_gen[s] = _get(pool, _generation_at, "generation", direct)
        s_count[s] = _get(pool, _slice_count_at, "resource_slice_count", direct)
        direct = Py_TYPE(metadata) == _META
        s_name[s] = _intern(strings, string_list, _get(metadata, _meta_name_at, "name", direct))
        s_first[s] = first_device + g
        s_selector[s] = -1
        s_node[s] = _intern(strings, string_list, node_name) if node_name else -1
        if node_name:
            s_sel[s] = SEL_NODE_NAME
        elif all_nodes:
            s_sel[s] = SEL_ALL_NODES
        elif node_selector is not None:
            s_sel[s] = SEL_SELECTOR
            s_selector[s] = names.selector(node_selector)
        elif per_device_selection:
            s_sel[s] = SEL_PER_DEVICE
        else:
            s_sel[s] = SEL_NONE
        per_device = _is_true(per_device_selection)
        s_per_device[s] = per_device
        for counter_set in shared_counters:
            cs_name[k] = _intern(strings, string_list, counter_set.name)
            for counter_name, counter in counter_set.counters.items():
                c_name[c] = _intern(strings, string_list, counter_name)
                c_quantity[c] = names.quantity(counter.value)
                c += 1
            k += 1
            cs_c_ptr[k] = c
        s_cs_ptr[s + 1] = k
        if PyList_GET_SIZE(devices) != s_ndev[s]:  # (a device list changed since listed)
            raise ValueError("draspeed: the slices changed while they were read")
        for j in range(s_ndev[s]):
            device = <object>PyList_GET_ITEM(devices, j)
            if <PyObject*>device != ahead[g]:
                raise ValueError("draspeed: the slices changed while they were read")
            draspeed_prefetch_ahead_items(
                ahead, n_dev, g, _DEVICE, _PREFETCH_FIELDS, 6, _PREFETCH_CONTENTS, 2
            )
            Py_INCREF(device)
            PyList_SET_ITEM(device_list, g, device)
            Py_INCREF(driver_name)
            PyList_SET_ITEM(driver_list, g, driver_name)
            direct = Py_TYPE(device) == _DEVICE
            d_name[g] = _intern(strings, string_list, _get(device, _name_at, "name", direct))
            flags = 0
            if _is_true(_get(device, _multi_at, "allow_multiple_allocations", direct)):
                flags |= F_MULTI
            if _non_empty(_get(device, _binding_at, "binding_conditions", direct)):
                flags |= F_BINDING
            if _non_empty(_get(device, _failures_at, "binding_failure_conditions", direct)):
                flags |= F_BINDING_FAILURES
            if _non_empty(_get(device, _taints_at, "taints", direct)):
                flags |= F_TAINTED
            if _is_true(_get(device, _binds_at, "binds_to_node", direct)):
                flags |= F_BINDS
            capacity = _get(device, _capacity_at, "capacity", direct)
            if _non_empty(capacity):
                flags |= F_CAPACITY
                if _has_policy(capacity):
                    flags |= F_POLICY
            uses = _get(device, _consumes_at, "consumes_counters", direct)
            if _non_empty(uses):
                flags |= F_CONSUMES
                d_pattern[g] = names.consumption(uses)
            d_flags[g] = flags
            if per_device:
                if device.node_name:
                    d_pdn[g] = SEL_NODE_NAME
                    d_pdn_node[g] = _intern(strings, string_list, device.node_name)
                elif device.all_nodes:
                    d_pdn[g] = SEL_ALL_NODES
                elif device.node_selector is not None:
                    d_pdn[g] = SEL_SELECTOR
                    d_pdn_selector[g] = names.selector(device.node_selector)
            g += 1
    if g != n_dev:
        raise ValueError("draspeed: the slices changed while they were read")
    return {
        "s_first": s_first_a, "s_ndev": s_ndev_a, "s_pool": s_pool_a,
        "s_gen": s_gen_a, "s_count": s_count_a, "s_node": s_node_a, "s_sel": s_sel_a,
        "s_per_device": s_per_device_a,
        "s_selector": s_selector_a, "s_name": s_name_a, "s_cs_ptr": s_cs_ptr_a,
        "cs_name": cs_name_a, "cs_c_ptr": cs_c_ptr_a,
        "c_name": c_name_a, "c_quantity": c_quantity_a,
        "d_name": d_name_a, "d_flags": d_flags_a, "d_pattern": d_pattern_a,
        "d_pdn": d_pdn_a, "d_pdn_node": d_pdn_node_a, "d_pdn_selector": d_pdn_selector_a,
        "devices": device_list, "drivers": driver_list,
    }


cdef inline Py_ssize_t _slice_at(const int64_t[::1] s_first, Py_ssize_t S, int64_t g) noexcept:
    """The last slice whose first device is at or before global device g."""
    cdef Py_ssize_t lo = 0, hi = S, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if s_first[mid] <= g:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


cdef class _DeviceAt:
    """The device at a global index, for indices asked in (mostly) ascending order: the
    slice of the last one is kept, so one slice's devices cost one search."""

    cdef list slices
    cdef const int64_t[::1] s_first
    cdef Py_ssize_t n_slices, last
    cdef list devices
    cdef object driver  # the driver of the last device's slice

    def __cinit__(self, list slices, const int64_t[::1] s_first):
        self.slices = slices
        self.s_first = s_first
        self.n_slices = s_first.shape[0]
        self.last = -1
        self.devices = None
        self.driver = None

    cdef object at(self, int64_t g):
        cdef Py_ssize_t s = _slice_at(self.s_first, self.n_slices, g)
        if s != self.last:
            spec = self.slices[s].spec
            self.devices = spec.devices
            self.driver = spec.driver
            self.last = s
        return self.devices[g - self.s_first[s]]


def attribute_codes(list slices, const int64_t[::1] s_first, const int64_t[::1] positions,
                    str attribute, bint list_types, object values_of):
    """One attribute of the devices at ``positions`` (global indices), as constraints
    compare it: ``(value_ptr, codes, present, n_codes)``. ``present[i]``: the device has
    the attribute at all; its values (a set: a scalar is a set of one) become small
    integer codes, equal values equal codes. ``values_of(attribute, list_types)`` is
    the rule that turns one DeviceAttribute into its typed values (called once per
    distinct attribute object)."""
    cdef Py_ssize_t L = positions.shape[0], i
    cdef _DeviceAt device_at = _DeviceAt(slices, s_first)
    ptr_a = np.zeros(L + 1, np.int64)
    present_a = np.zeros(L, np.uint8)
    cdef int64_t[::1] ptr = ptr_a
    cdef uint8_t[::1] present = present_a
    cdef list codes_out = []
    cdef dict codes = {}, memo = {}
    cdef list keep = []
    cdef PyObject *found
    # Upstream looks the name up as written, then, under the device's own driver's
    # domain, the rest of it. The model keys a bare name by its qualified one, so the
    # second lookup finds only a name that unvalidated input wrote with a '/' of its own.
    domain, slash, rest = attribute.partition("/")
    for i in range(L):
        attrs = device_at.at(positions[i]).attributes
        attr = attrs.get(attribute)
        if attr is not None or attribute in attrs:
            present[i] = 1
        elif slash and domain == device_at.driver:
            attr = attrs.get(rest)
            if attr is not None or rest in attrs:
                present[i] = 1
        if attr is not None:
            found = PyDict_GetItem(memo, _identity(attr))
            if found != NULL:
                mine = <list>found
            else:
                mine = [codes.setdefault(v, len(codes)) for v in values_of(attr, list_types)]
                memo[_identity(attr)] = mine
                keep.append(attr)
            codes_out.extend(mine)
        ptr[i + 1] = len(codes_out)
    return ptr_a, np.asarray(codes_out, np.int32), present_a, len(codes)


def distinct_ids(list slices, const int64_t[::1] s_first, const int64_t[::1] positions,
                 str field, dict by_key, list values, object signature_of):
    """Which distinct value of a device field (``capacity``, ``taints``) each device at
    ``positions`` (global indices) has: an id per device into ``values``, which gets
    each new value (the first device's object) appended.

    Values are told apart by ``signature_of(value)`` (bytes that only equal model
    trees write), kept in ``by_key``; a value that signature cannot write (TypeError)
    is one of its own, keyed by its address (``values`` keeps it alive).
    """
    cdef Py_ssize_t L = positions.shape[0], i
    cdef _DeviceAt device_at = _DeviceAt(slices, s_first)
    cdef PyObject *found
    ids_a = np.empty(L, np.int32)
    cdef int32_t[::1] ids = ids_a
    for i in range(L):
        value = getattr(device_at.at(positions[i]), field)
        try:
            key = signature_of(value)
        except TypeError:
            key = _identity(value)
        found = PyDict_GetItem(by_key, key)
        if found != NULL:
            ids[i] = <int32_t><object>found
        else:
            ids[i] = len(values)
            by_key[key] = len(values)
            values.append(value)
    return ids_a
