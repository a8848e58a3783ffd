# cython: language_level=3
"""Compiled fast paths of bulk decoding: common-shape devices and slices, slice names.

Nearly every device of a cluster dump is a name, attributes with one scalar value each
and capacities without a request policy, whose names, values and quantities already
occurred earlier in the same load. Such a device is built here from the load's
:class:`~draspeed.api.context.Caches` with a few lookups and no field paths, from
either form the input may take:

- decoded JSON/YAML (dicts): :func:`decode_common_devices`, per device of a slice;
- typed Structs of :mod:`draspeed.api.slice_schema` (bulk JSON lists):
  :class:`SliceBuilder`, which also builds the slice around its devices and reads the
  devices' attribute and capacity maps straight from their JSON text, looking their
  parts up by their bytes (:class:`_Memo`, in front of the caches).

Whatever this module is not sure about (another shape, extra fields, a name, version
or quantity seen for the first time, list values, duplicate keys, too many entries, any
type that is not exactly dict/str/int/bool) goes to the checked decoder of
:mod:`draspeed.api.slices`, which is the only one that reports errors and warnings; so
this path only has to be right for input it accepts, and it accepts only what the
checked decoder accepted before (or, for new strings, ints, bools and device names,
would accept: their checks are simple enough to make here). The checked decoder fills
the caches; this module adds to them only what the checked decoder would add.

The model objects are the dataclasses of :mod:`draspeed.api.model`. Calling their
generated ``__init__`` costs more than the rest of a device (a Python frame, twelve
attribute stores, four default factories), so they are allocated here and their slots
filled directly, exactly as that ``__init__`` fills them (:class:`_Layout`). The layout
is read from the dataclass fields at import; a model change this module does not
understand (a ``__post_init__``, a ``__setattr__``, a default factory other than
list/dict, a field that is not a slot) fails the import instead of silently building
objects differently. The Structs' fields are read from their slots the same way.

Also here, because they run once per slice: :func:`dns_subdomain_ok` and
:func:`pool_name_ok` (a one-pass "certainly valid" for the names
:mod:`draspeed.api.names` checks).

References borrowed from the input are held only while no Python code can run; the
input must not be mutated by another thread while it is being decoded. A SliceBuilder
serves one load (its memo copies the bytes it keys on, so it holds no input).
"""

from dataclasses import MISSING, fields

import msgspec

cimport cython

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.dict cimport PyDict_GetItemWithError, PyDict_Next, PyDict_SetItem
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_FromLongLong
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Realloc
from cpython.object cimport PyObject, PyObject_IsTrue
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_GET_LENGTH
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy

from draspeed.api import limits, names
from draspeed.api.common import metadata_valid
from draspeed.api.meta_extras import structs_valid
from draspeed.api.model import (
    Device,
    DeviceAttribute,
    ObjectMeta,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.api.slice_schema import JSONDevice, JSONMetadata, JSONPool, JSONSlice, JSONSpec

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyDict_GET_SIZE(object o)
    void *PyUnicode_DATA(object o)
    PyObject *PyDict_SetDefault(object d, object key, object default) except NULL


cdef inline str _one_of(dict strings, str text):
    """The load's one str object equal to ``text`` (``text`` itself the first time).
    Device names repeat on every node of a kind (gpu-0 to gpu-7): one object per name
    is less memory (11-12 MB less on a 236 MB or 448 MB cluster file)."""
    return <str>PyDict_SetDefault(strings, text, text)

ctypedef unsigned char _ucs1

from model_slots cimport (
    PyObject_GC_UnTrack,
    draspeed_alloc,
    draspeed_dict_presized,
    draspeed_get_slot,
    draspeed_set_slot,
    mix_bytes,
    slot_offset,
)


cdef Py_ssize_t _MAX_FIELDS = limits.RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
cdef Py_ssize_t _MAX_DEVICES = limits.RESOURCE_SLICE_MAX_DEVICES
cdef Py_ssize_t _MAX_ADVANCED_DEVICES = limits.RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
cdef Py_ssize_t _LABEL_MAX = names.DNS_LABEL_MAX
cdef Py_ssize_t _SUBDOMAIN_MAX = names.DNS_SUBDOMAIN_MAX
cdef Py_ssize_t _POOL_NAME_MAX = limits.POOL_NAME_MAX_LENGTH


# ------------------------------------------------------------------ model layouts

cdef enum:
    MAX_SLOTS = 32
    # Where a slot's value comes from when it is not an argument:
    FROM_CONSTANT = -1  # the field's default
    FROM_LIST = -2  # a new list (default_factory=list)
    FROM_DICT = -3  # a new dict (default_factory=dict)




cdef void _plain_dataclass(type cls) except *:
    """Refuse classes whose construction does more than store its fields."""
    frozen = cls.__dataclass_params__.frozen  # its __setattr__ only refuses
    if (
        getattr(cls, "__post_init__", None) is not None
        or cls.__new__ is not object.__new__
        or (not frozen and cls.__setattr__ is not object.__setattr__)
    ):
        raise RuntimeError(f"draspeed.api._decode: {cls.__name__} is not a plain slots dataclass")


@cython.final
cdef class _Layout:
    """How to make an instance of a slots dataclass the way its ``__init__`` does, given
    the values of some fields (the *arguments*, in a fixed order) and defaulting the rest."""

    cdef object cls
    cdef Py_ssize_t n
    cdef Py_ssize_t offset[MAX_SLOTS]
    cdef Py_ssize_t source[MAX_SLOTS]  # the argument's index, or FROM_*
    cdef PyObject *constant[MAX_SLOTS]  # FROM_CONSTANT defaults (owned by ``defaults``)
    cdef list defaults
    cdef bint walked_later  # left tracked for the loader's walk (see make)

    cdef object make(self, PyObject **arguments):
        """The new instance; ``arguments`` are borrowed from the caller, and a NULL one
        leaves its slot empty (as ``del obj.field`` would)."""
        obj = draspeed_alloc(self.cls)
        cdef Py_ssize_t i, source
        for i in range(self.n):
            source = self.source[i]
            if source >= 0:
                if arguments[source] != NULL:
                    draspeed_set_slot(obj, self.offset[i], arguments[source])
            elif source == FROM_CONSTANT:
                draspeed_set_slot(obj, self.offset[i], self.constant[i])
            elif source == FROM_LIST:
                container = []
                PyObject_GC_UnTrack(<void *>container)  # (a dict is untracked while empty)
                draspeed_set_slot(obj, self.offset[i], <PyObject *>container)
            else:
                container = {}
                draspeed_set_slot(obj, self.offset[i], <PyObject *>container)
        # Decoded objects form no cycles and live as long as the caller keeps them: out
        # of the cyclic collector's walks from the start. A slice and its spec stay
        # tracked until the loader's walk (_model_tree.untrack) goes through them, and
        # through what the checked decoder made inside them on the way.
        if not self.walked_later:
            PyObject_GC_UnTrack(<void *>obj)
        return obj


cdef _Layout _layout(type cls, tuple arguments):
    _plain_dataclass(cls)
    cdef _Layout layout = _Layout.__new__(_Layout)
    layout.cls = cls
    layout.defaults = []
    given = set()
    for f in fields(cls):
        if layout.n == MAX_SLOTS:
            raise RuntimeError(f"draspeed.api._decode: {cls.__name__} has too many fields")
        if f.name in arguments:
            layout.source[layout.n] = arguments.index(f.name)
            given.add(f.name)
        elif f.default is not MISSING:
            default = f.default
            layout.defaults.append(default)
            layout.constant[layout.n] = <PyObject *>default
            layout.source[layout.n] = FROM_CONSTANT
        elif f.default_factory is list:
            layout.source[layout.n] = FROM_LIST
        elif f.default_factory is dict:
            layout.source[layout.n] = FROM_DICT
        else:
            raise RuntimeError(f"draspeed.api._decode: no way to default {cls.__name__}.{f.name}")
        layout.offset[layout.n] = slot_offset(cls, f.name)
        layout.n += 1
    if len(given) != len(arguments):
        raise RuntimeError(f"draspeed.api._decode: {cls.__name__} lacks one of {arguments}")
    return layout


cdef _Layout _DEVICE = _layout(Device, ("name", "attributes", "capacity"))
cdef _Layout _ATTRIBUTE = _layout(DeviceAttribute, ("kind", "value"))
cdef _Layout _META = _layout(
    ObjectMeta,
    ("name", "namespace", "uid", "labels", "annotations", "generation", "resource_version"),
)
cdef _Layout _POOL = _layout(ResourcePool, ("name", "generation", "resource_slice_count"))
cdef _Layout _SPEC = _layout(
    ResourceSliceSpec,
    (
        "driver",
        "pool",
        "node_name",
        "node_selector",
        "all_nodes",
        "per_device_node_selection",
        "devices",
        "shared_counters",
    ),
)
cdef _Layout _SLICE = _layout(
    ResourceSlice, ("metadata", "spec", "api_version", "raw", "raw_text")
)
_SPEC.walked_later = _SLICE.walked_later = True

# DeviceAttribute kinds (interned by the compiler: one object each).
cdef str _INT = "int"
cdef str _BOOL = "bool"
cdef str _STRING = "string"
cdef str _VERSION = "version"


cdef object _new_device(str name, dict attributes, dict capacity):
    """``Device(name, attributes, capacity)`` without its ``__init__``."""
    cdef PyObject *arguments[3]
    arguments[0] = <PyObject *>name
    arguments[1] = <PyObject *>attributes
    arguments[2] = <PyObject *>capacity
    return _DEVICE.make(arguments)


cdef object _new_attribute(str kind, object value):
    """``DeviceAttribute(kind, value)`` without the frozen ``__init__``."""
    cdef PyObject *arguments[2]
    arguments[0] = <PyObject *>kind
    arguments[1] = <PyObject *>value
    return _ATTRIBUTE.make(arguments)


cdef object _new_string_attribute(str value):
    return _new_attribute(_STRING, value)


def new_device(name: str, attributes: dict, capacity: dict) -> object:
    """The Device this module builds (for tests: it must equal the dataclass's own)."""
    return _new_device(name, attributes, capacity)


def new_string_attribute(value: str) -> object:
    """The string DeviceAttribute this module builds (for tests)."""
    return _new_string_attribute(value)


# ------------------------------------------------------------- devices of dicts


# The JSON keys the common shape is made of. msgspec hands out one str object per
# distinct short key, so after the first device a key is recognised by identity.
cdef enum Key:
    K_OTHER
    K_NAME
    K_BASIC
    K_ATTRIBUTES
    K_CAPACITY
    K_VALUE
    K_INT
    K_BOOL
    K_STRING
    K_VERSION
    K_COUNT

_KEY_TEXTS = (
    None, "name", "basic", "attributes", "capacity", "value", "int", "bool", "string", "version"
)


@cython.final
cdef class _Tables:
    """The caches one slice's devices are looked up in, and the key objects seen."""

    cdef dict key_names, strings, ints, bools, versions, capacities
    cdef dict names  # the load's repeated strings (Caches.strings)
    cdef set dns_labels
    cdef bint validate, nested, bare_capacity
    cdef PyObject *seen[<int>K_COUNT]  # Key -> a str equal to its text (owned)

    def __cinit__(self):
        cdef int i
        for i in range(<int>K_COUNT):
            self.seen[i] = <PyObject *>_KEY_TEXTS[i]
            Py_INCREF(_KEY_TEXTS[i])

    def __dealloc__(self):
        cdef int i
        for i in range(<int>K_COUNT):
            Py_XDECREF(self.seen[i])

    cdef inline Key key(self, object k, Key first, Key last):
        """Which of the keys ``first`` to ``last`` ``k`` is, else K_OTHER."""
        cdef int i
        for i in range(first, last + 1):
            if <PyObject *>k == self.seen[i]:
                return <Key>i
        return self.learn(k, first, last)

    cdef Key learn(self, object k, Key first, Key last):
        cdef int i
        if type(k) is not str:
            return K_OTHER
        for i in range(first, last + 1):
            if k == _KEY_TEXTS[i]:
                Py_INCREF(k)
                Py_XDECREF(self.seen[i])
                self.seen[i] = <PyObject *>k
                return <Key>i
        return K_OTHER


cdef bint _fields(_Tables t, dict body, bint with_name, PyObject **name,
                  PyObject **a, PyObject **c) except -1:
    """Read ``name``, ``attributes`` and ``capacity`` of a device body (borrowed); False
    if it has any other field, or a null one (the checked path reads those)."""
    cdef PyObject *pkey
    cdef PyObject *pvalue
    cdef Py_ssize_t pos = 0
    cdef Key k
    while PyDict_Next(body, &pos, &pkey, &pvalue):
        k = t.key(<object>pkey, K_NAME if with_name else K_ATTRIBUTES, K_CAPACITY)
        if k == K_ATTRIBUTES and pvalue != <PyObject *>None:
            a[0] = pvalue
        elif k == K_CAPACITY and pvalue != <PyObject *>None:
            c[0] = pvalue
        elif k == K_NAME:
            name[0] = pvalue
        else:
            return False  # more fields: taints, counters, node selection ...
    return True


cdef object _common_device(_Tables t, object d):
    """Device ``d`` when it has the common shape and every part is cached, else None."""
    cdef PyObject *p
    cdef PyObject *pkey
    cdef PyObject *pvalue
    cdef PyObject *pname = NULL
    cdef PyObject *pbody = NULL
    cdef PyObject *pa = NULL
    cdef PyObject *pc = NULL
    cdef Py_ssize_t pos, n
    cdef Key k
    if type(d) is not dict:
        return None
    if t.nested:
        if PyDict_GET_SIZE(d) != 2:
            return None
        pos = 0
        while PyDict_Next(d, &pos, &pkey, &pvalue):
            k = t.key(<object>pkey, K_NAME, K_BASIC)
            if k == K_NAME:
                pname = pvalue
            elif k == K_BASIC:
                pbody = pvalue
            else:
                return None
        if pbody is NULL or type(<object>pbody) is not dict:
            return None
        if not _fields(t, <dict>pbody, False, &pname, &pa, &pc):
            return None
    elif not _fields(t, <dict>d, True, &pname, &pa, &pc):
        return None
    if pname is NULL or type(<object>pname) is not str:
        return None
    name = <str>pname
    if t.validate and not PySet_Contains(t.dns_labels, name):
        return None
    name = _one_of(t.names, name)
    a = None if pa is NULL else <object>pa
    c = None if pc is NULL else <object>pc

    cdef dict attrs
    if a is not None:  # ([], "" or 0 too: not a map, which the checked path says)
        if type(a) is not dict:
            return None
        attrs = draspeed_dict_presized(PyDict_GET_SIZE(a))
        pos = 0
        while PyDict_Next(a, &pos, &pkey, &pvalue):
            key = <object>pkey
            value = <object>pvalue
            if type(value) is not dict or PyDict_GET_SIZE(value) != 1:
                return None
            n = 0
            PyDict_Next(value, &n, &pkey, &pvalue)  # its one {kind: value} entry
            v = <object>pvalue
            k = t.key(<object>pkey, K_INT, K_VERSION)
            if k == K_STRING:
                if type(v) is not str:
                    return None
                p = PyDict_GetItemWithError(t.strings, v)
                if p is NULL:
                    # Up to 16 characters, or 64 ASCII ones, are at most 64 bytes.
                    n = PyUnicode_GET_LENGTH(v)
                    if t.validate and n > 16 and (n > 64 or not PyUnicode_IS_ASCII(v)):
                        return None
                    attr = _new_string_attribute(v)
                    PyDict_SetItem(t.strings, v, attr)
                else:
                    attr = <object>p
            else:
                # bool and int hash alike: the type decides which table may answer.
                if k == K_INT and type(v) is int:
                    p = PyDict_GetItemWithError(t.ints, v)
                elif k == K_BOOL and type(v) is bool:
                    p = PyDict_GetItemWithError(t.bools, v)
                elif k == K_VERSION and type(v) is str:
                    p = PyDict_GetItemWithError(t.versions, v)
                else:
                    return None
                if p is NULL:
                    return None
                attr = <object>p
            p = PyDict_GetItemWithError(t.key_names, key)
            if p is NULL:
                return None
            PyDict_SetItem(attrs, <object>p, attr)
        if PyDict_GET_SIZE(attrs) != PyDict_GET_SIZE(a):
            return None  # "model" and "<driver>/model": the checked path warns
    else:
        attrs = {}

    cdef dict caps
    if c is not None:
        if type(c) is not dict:
            return None
        caps = draspeed_dict_presized(PyDict_GET_SIZE(c))
        pos = 0
        while PyDict_Next(c, &pos, &pkey, &pvalue):
            key = <object>pkey
            value = <object>pvalue
            if not t.bare_capacity:
                if type(value) is not dict or PyDict_GET_SIZE(value) != 1:
                    return None
                n = 0
                PyDict_Next(value, &n, &pkey, &pvalue)  # its one entry: {value: text}
                if t.key(<object>pkey, K_VALUE, K_VALUE) != K_VALUE:
                    return None
                value = <object>pvalue
            if type(value) is not str:
                return None
            p = PyDict_GetItemWithError(t.capacities, value)
            if p is NULL:
                return None
            cap = <object>p
            # A key checked before, kept as written: upstream compares and prints
            # capacity names literally.
            if PyDict_GetItemWithError(t.key_names, key) is NULL:
                return None
            PyDict_SetItem(caps, key, cap)
        if PyDict_GET_SIZE(caps) != PyDict_GET_SIZE(c):
            return None
    else:
        caps = {}

    if t.validate and PyDict_GET_SIZE(attrs) + PyDict_GET_SIZE(caps) > _MAX_FIELDS:
        return None
    PyObject_GC_UnTrack(<void *>attrs)
    PyObject_GC_UnTrack(<void *>caps)
    return _new_device(name, attrs, caps)


def decode_common_devices(
    ctx: object,
    list devices_raw,
    str driver,
    bint nested,
    bint bare_capacity,
    checked: object,
) -> list:
    """The devices of one slice; ``checked(i, raw)`` decodes device ``i`` with every
    check when it is not of the common shape.

    ``nested``: the fields are under ``basic`` (v1beta1, v1alpha3); ``bare_capacity``:
    capacities are bare quantities (v1alpha3).
    """
    caches = ctx.caches
    attributes = caches.attributes
    cdef _Tables t = _Tables.__new__(_Tables)
    t.key_names = caches.attribute_names[driver]
    t.strings = attributes["string"][1]
    t.ints = attributes["int"][1]
    t.bools = attributes["bool"][1]
    t.versions = attributes["version"][1]
    t.capacities = caches.capacities
    t.dns_labels = caches.dns_labels
    t.names = caches.strings
    t.validate = ctx.validate
    t.nested = nested
    t.bare_capacity = bare_capacity

    cdef list devices = []
    for d in devices_raw:
        try:
            device = _common_device(t, d)
        except Exception:
            device = None  # whatever it was, the checked decoder decides
        if device is None:
            device = checked(len(devices), d)
        devices.append(device)
    return devices


# ------------------------------------------------------------------ typed slices

cdef PyObject *_UNSET = <PyObject *>msgspec.UNSET  # a singleton, alive with msgspec

# JSONDevice: where its fields are; every field but these three is an "extra".
cdef Py_ssize_t _device_name_at = slot_offset(JSONDevice, "name")
cdef Py_ssize_t _device_attributes_at = slot_offset(JSONDevice, "attributes")
cdef Py_ssize_t _device_capacity_at = slot_offset(JSONDevice, "capacity")
cdef Py_ssize_t _device_taints_at = slot_offset(JSONDevice, "taints")
cdef Py_ssize_t _device_consumes_at = slot_offset(JSONDevice, "consumesCounters")
cdef Py_ssize_t _device_extra_at[MAX_SLOTS]
cdef Py_ssize_t _device_extras = 0


# JSONDevice.consumesCounters when the device has none (msgspec's default for it).
cdef object _NO_CONSUMPTION = JSONDevice.__struct_defaults__[
    JSONDevice.__struct_fields__.index("consumesCounters")
    - (len(JSONDevice.__struct_fields__) - len(JSONDevice.__struct_defaults__))
]


cdef object _NO_COUNTER_SETS = JSONSpec.__struct_defaults__[
    JSONSpec.__struct_fields__.index("sharedCounters")
    - (len(JSONSpec.__struct_fields__) - len(JSONSpec.__struct_defaults__))
]


cdef bint _is_null(object text) except -1:
    """Whether a JSON text is ``null`` (which the checked decoder takes for absent)."""
    cdef Py_buffer view
    PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
    cdef Py_ssize_t i = _ws(<const char *>view.buf, 0, view.len)
    cdef bint found = view.len - i >= 4 and memcmp(<const char *>view.buf + i, "null", 4) == 0
    PyBuffer_Release(&view)
    return found


cdef bint _starts_list(object text) except -1:
    """Whether a JSON text is a list."""
    cdef Py_buffer view
    PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
    cdef Py_ssize_t i = _ws(<const char *>view.buf, 0, view.len)
    cdef bint found = i < view.len and (<const char *>view.buf)[i] == b'['
    PyBuffer_Release(&view)
    return found


cdef void _read_struct_slots() except *:
    global _device_extras
    for name in JSONDevice.__struct_fields__:
        if name not in ("name", "attributes", "capacity", "consumesCounters"):
            if _device_extras == MAX_SLOTS:
                raise RuntimeError("draspeed.api._decode: JSONDevice has too many fields")
            _device_extra_at[_device_extras] = slot_offset(JSONDevice, name)
            _device_extras += 1


_read_struct_slots()


cdef inline bint _int64(object value) except -1:
    """An int within the range of a Go int64."""
    cdef int overflow = 0
    if type(value) is not int:
        return False
    PyLong_AsLongLongAndOverflow(value, &overflow)
    return overflow == 0


# ---- the attribute and capacity maps, read from their JSON text
#
# msgspec hands these maps over as text (JSONDevice.attributes/capacity are Raw):
# building a dict and a Struct per attribute, a str per value, only to look each up in
# the caches and drop it, was half of all the decoding. Here the text is read directly
# and its parts are looked up by their bytes in a memo in front of the caches. The text
# is JSON (msgspec checked its syntax while skipping it; the list scan of
# draspeed.api._jsontext its UTF-8, numbers and keys), so this reader only has to recognise
# the common shape and answer None to anything else: a string with escapes, a value
# kind other than int/bool/string/version, a fraction, a null ...

cdef enum Value:  # the value kinds of an attribute this reader takes
    V_INT
    V_BOOL
    V_STRING
    V_VERSION

cdef enum Space:  # what a memo entry maps from its bytes
    M_KEY  # an attribute or capacity key -> its _KeyInfo (per driver)
    M_STRING  # a string value -> its DeviceAttribute
    M_VERSION  # a version value -> its DeviceAttribute
    M_QUANTITY  # a capacity's quantity text -> its DeviceCapacity
    M_CONSUMES  # a device's consumesCounters text -> its DeviceCounterConsumption tuple
    M_COUNTER_SETS  # a slice's sharedCounters text -> its CounterSet tuple

cdef enum:
    # Longer values are mostly identifiers unique per device (uuids, serials): they are
    # looked up as str each time rather than fill the memo with entries never hit again.
    MEMO_TEXT_MAX = 32
    MEMO_MAX_ENTRIES = 1 << 16


cdef struct MemoEntry:
    uint64_t hash
    PyObject *value  # owned; NULL: a free slot
    void *tag  # M_KEY: the driver's key table
    Py_ssize_t start  # of the bytes, in the arena
    Py_ssize_t length
    int space


# Seeded per process, as str hashes are: crafted input cannot make the memo's probes
# long without knowing it.
cdef uint64_t _SEED = hash("draspeed.api._decode memo") & 0xFFFFFFFFFFFFFFFF


cdef inline uint64_t _hash_bytes(const char *p, Py_ssize_t n, int space, void *tag) noexcept nogil:
    cdef uint64_t h = (<uint64_t>n * 0x9E3779B97F4A7C15ULL) ^ (<uint64_t>space << 56) ^ _SEED
    h ^= <uint64_t><size_t>tag
    return mix_bytes(h, <const unsigned char *>p, n)


@cython.final
cdef class _KeyInfo:
    """What the memo knows of one attribute or capacity key of one driver."""

    cdef object name  # fully qualified (how attributes are keyed)
    cdef object published  # as the slice wrote it (how capacities are keyed)
    cdef Py_ssize_t strings, new_strings  # string values read, and how many were new
    # Its string values are (nearly) all different (uuids, serials): they are neither
    # looked up nor remembered, which would only fill the caches with values never
    # seen again and slow every other lookup down.
    cdef bint unique


cdef enum:
    # After this many string values of a key, at least 90% of them new: unique.
    UNIQUE_AFTER = 256


@cython.final
cdef class _Memo:
    """Bytes -> model object, an open-addressing table with the bytes in an arena."""

    cdef MemoEntry *table
    cdef Py_ssize_t mask, count
    cdef char *arena
    cdef Py_ssize_t arena_used, arena_room

    def __cinit__(self):
        self.table = <MemoEntry *>PyMem_Calloc(256, sizeof(MemoEntry))
        if self.table is NULL:
            raise MemoryError()
        self.mask = 255

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.table is not NULL:
            for i in range(self.mask + 1):
                Py_XDECREF(self.table[i].value)
            PyMem_Free(self.table)
        PyMem_Free(self.arena)

    cdef inline MemoEntry *slot(self, uint64_t h, int space, void *tag,
                                const char *p, Py_ssize_t n) noexcept:
        """The entry of these bytes, or the free slot where they would go."""
        cdef Py_ssize_t i = <Py_ssize_t>(h & <uint64_t>self.mask)
        cdef MemoEntry *e
        while True:
            e = &self.table[i]
            if e.value is NULL or (
                e.hash == h and e.length == n and e.space == space and e.tag == tag
                and memcmp(self.arena + e.start, p, <size_t>n) == 0
            ):
                return e
            i = (i + 1) & self.mask

    cdef PyObject *get(self, uint64_t h, int space, void *tag, const char *p,
                       Py_ssize_t n) noexcept:
        return self.slot(h, space, tag, p, n).value

    cdef int put(self, uint64_t h, int space, void *tag, const char *p, Py_ssize_t n,
                 object value) except -1:
        cdef MemoEntry *e
        cdef char *bigger
        cdef Py_ssize_t room
        if self.count >= MEMO_MAX_ENTRIES:
            return 0
        if 2 * (self.count + 1) > self.mask + 1:
            self.grow()
        if self.arena_used + n > self.arena_room:
            room = max(2 * self.arena_room, self.arena_used + n, 4096)
            bigger = <char *>PyMem_Realloc(self.arena, room)
            if bigger is NULL:
                raise MemoryError()
            self.arena, self.arena_room = bigger, room
        e = self.slot(h, space, tag, p, n)
        if e.value is not NULL:
            return 0
        memcpy(self.arena + self.arena_used, p, <size_t>n)
        e.hash, e.space, e.tag, e.start, e.length = h, space, tag, self.arena_used, n
        Py_INCREF(value)
        e.value = <PyObject *>value
        self.arena_used += n
        self.count += 1
        return 0

    cdef int grow(self) except -1:
        cdef Py_ssize_t old_size = self.mask + 1, i, j
        cdef MemoEntry *old = self.table
        cdef MemoEntry *fresh = <MemoEntry *>PyMem_Calloc(2 * old_size, sizeof(MemoEntry))
        if fresh is NULL:
            raise MemoryError()
        self.table, self.mask = fresh, 2 * old_size - 1
        for i in range(old_size):
            if old[i].value is not NULL:
                j = <Py_ssize_t>(old[i].hash & <uint64_t>self.mask)
                while fresh[j].value is not NULL:
                    j = (j + 1) & self.mask
                fresh[j] = old[i]
        PyMem_Free(old)
        return 0


cdef inline Py_ssize_t _ws(const char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (p[i] == b' ' or p[i] == b'\n' or p[i] == b'\r' or p[i] == b'\t'):
        i += 1
    return i


cdef inline Py_ssize_t _plain_string_end(const char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """For the string whose quote is at ``i``: the index of its closing quote, or -1 when
    it has escapes (or ``i`` is no quote)."""
    if i >= n or p[i] != b'"':
        return -1
    i += 1
    while i < n:
        if p[i] == b'"':
            return i
        if p[i] == b'\\':
            return -1
        i += 1
    return -1


cdef inline bint _is(const char *p, Py_ssize_t n, const char *word, Py_ssize_t length) noexcept nogil:
    return n == length and memcmp(p, word, <size_t>length) == 0


cdef int _value_kind(const char *p, Py_ssize_t n) noexcept nogil:
    if _is(p, n, "string", 6):
        return V_STRING
    if _is(p, n, "int", 3):
        return V_INT
    if _is(p, n, "bool", 4):
        return V_BOOL
    if _is(p, n, "version", 7):
        return V_VERSION
    return -1


cdef bint _mentions(const char *p, Py_ssize_t n, const char *word, Py_ssize_t length) noexcept nogil:
    """Whether the bytes hold ``word`` anywhere."""
    cdef Py_ssize_t i
    for i in range(n - length + 1):
        if p[i] == word[0] and memcmp(p + i, word, <size_t>length) == 0:
            return True
    return False


cdef bint _has_items(object text) except -1:
    """Whether the text of a list is more than ``null`` or ``[]``."""
    cdef Py_buffer view
    cdef Py_ssize_t i = 0, n
    cdef const char *p
    PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
    p, n = <const char *>view.buf, view.len
    i = _ws(p, 0, n)
    cdef bint empty = (n - i >= 4 and memcmp(p + i, "null", 4) == 0) or (
        i < n and p[i] == b'[' and _ws(p, i + 1, n) < n and p[_ws(p, i + 1, n)] == b']'
    )
    PyBuffer_Release(&view)
    return not empty


cdef bint _advanced(list devices) except -1:
    """Taints, counter consumption or list-type attributes on any device (the devices of
    such a slice are limited to 64), as ``slices._uses_advanced_features`` tells them;
    a list kind's name anywhere in the attributes' text counts (True only sends the
    slice to the checked decoder)."""
    cdef PyObject *p
    cdef Py_buffer view
    cdef bint found
    for d in devices:
        if type(d) is not JSONDevice:
            continue
        p = draspeed_get_slot(d, _device_taints_at)
        if p != _UNSET and PyObject_IsTrue(<object>p):
            return True
        p = draspeed_get_slot(d, _device_consumes_at)
        if p != <PyObject *>_NO_CONSUMPTION and _has_items(<object>p):
            return True
        PyObject_GetBuffer(<object>draspeed_get_slot(d, _device_attributes_at), &view, PyBUF_SIMPLE)
        found = (
            _mentions(<const char *>view.buf, view.len, '"ints"', 6)
            or _mentions(<const char *>view.buf, view.len, '"bools"', 7)
            or _mentions(<const char *>view.buf, view.len, '"strings"', 9)
            or _mentions(<const char *>view.buf, view.len, '"versions"', 10)
        )
        PyBuffer_Release(&view)
        if found:
            return True
    return False


@cython.final
cdef class SliceBuilder:
    """The model of typed slices (:mod:`draspeed.api.slice_schema`), built from and
    into one load's :class:`~draspeed.api.context.Caches`."""

    cdef dict attribute_names, strings, ints, bools, versions, capacities
    cdef dict names  # the load's repeated strings (Caches.strings)
    cdef set dns_labels, checked
    cdef bint validate
    cdef _Memo memo  # in front of the caches, for the text of attribute and capacity maps

    def __init__(self, caches: object, bint validate) -> None:
        attributes = caches.attributes
        self.attribute_names = caches.attribute_names
        self.strings = attributes["string"][1]
        self.ints = attributes["int"][1]
        self.bools = attributes["bool"][1]
        self.versions = attributes["version"][1]
        self.capacities = caches.capacities
        self.dns_labels = caches.dns_labels
        self.names = caches.strings
        self.checked = caches.checked
        self.validate = validate
        self.memo = _Memo()

    cdef _KeyInfo key(self, dict key_names, const char *p, Py_ssize_t n):
        """The memo's entry of an attribute or capacity key, if the key is known."""
        cdef uint64_t h = _hash_bytes(p, n, M_KEY, <void *>key_names)
        cdef PyObject *found = self.memo.get(h, M_KEY, <void *>key_names, p, n)
        cdef _KeyInfo info
        if found is not NULL:
            return <_KeyInfo>found
        published = PyUnicode_DecodeUTF8(p, n, NULL)
        name = key_names.get(published)
        if name is None:
            return None
        info = _KeyInfo.__new__(_KeyInfo)
        info.name = name
        info.published = published
        self.memo.put(h, M_KEY, <void *>key_names, p, n, info)
        return info

    cdef object text_attribute(self, int kind, const char *p, Py_ssize_t n, _KeyInfo key):
        """The DeviceAttribute of a string or version value: a known one, or (strings)
        a new one when it certainly fits 64 bytes."""
        cdef int space = M_STRING if kind == V_STRING else M_VERSION
        cdef uint64_t h = 0
        cdef PyObject *found
        cdef bint is_string = kind == V_STRING
        if is_string:
            key.strings += 1
            if key.unique:
                return self.new_string(PyUnicode_DecodeUTF8(p, n, NULL))
        if n <= MEMO_TEXT_MAX:
            h = _hash_bytes(p, n, space, NULL)
            found = self.memo.get(h, space, NULL, p, n)
            if found is not NULL:
                return <object>found
        value = PyUnicode_DecodeUTF8(p, n, NULL)
        table = self.strings if is_string else self.versions
        attr = table.get(value)
        if attr is None:
            if not is_string:
                return None  # a new version: its semver check is the checked decoder's
            attr = self.new_string(value)
            if attr is None:
                return None
            table[value] = attr
            key.new_strings += 1
            if key.strings >= UNIQUE_AFTER and 10 * key.new_strings >= 9 * key.strings:
                key.unique = True
        if n <= MEMO_TEXT_MAX:
            self.memo.put(h, space, NULL, p, n, attr)
        return attr

    cdef object new_string(self, str value):
        """A string DeviceAttribute, when the value certainly fits 64 bytes."""
        # Up to 16 characters, or 64 ASCII ones, are at most 64 bytes.
        cdef Py_ssize_t length = PyUnicode_GET_LENGTH(value)
        if self.validate and length > 16 and (length > 64 or not PyUnicode_IS_ASCII(value)):
            return None
        return _new_attribute(_STRING, value)

    cdef object int_attribute(self, const char *p, Py_ssize_t *at, Py_ssize_t n):
        """The DeviceAttribute of the integer at ``at[0]`` (which moves past it), or None
        for any other number."""
        cdef Py_ssize_t i = at[0], digits = 0
        cdef bint negative = False
        cdef long long value = 0
        if i < n and p[i] == b'-':
            negative = True
            i += 1
        while i < n and p[i] >= b'0' and p[i] <= b'9':
            value = value * 10 + (p[i] - 48)
            digits += 1
            i += 1
        if digits == 0 or digits > 18 or (i < n and (p[i] == b'.' or p[i] == b'e' or p[i] == b'E')):
            return None
        at[0] = i
        number = PyLong_FromLongLong(-value if negative else value)
        attr = self.ints.get(number)
        if attr is None:
            attr = _new_attribute(_INT, number)
            self.ints[number] = attr
        return attr

    cdef object bool_attribute(self, bint value):
        flag = True if value else False
        attr = self.bools.get(flag)
        if attr is None:
            attr = _new_attribute(_BOOL, flag)
            self.bools[flag] = attr
        return attr

    cdef object decoded(self, object text, int space):
        """What the checked decoder made of this text (a device's consumesCounters, a
        slice's sharedCounters) earlier in the load, or None."""
        cdef Py_buffer view
        cdef PyObject *found
        PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
        try:
            found = self.memo.get(
                _hash_bytes(<const char *>view.buf, view.len, space, NULL), space, NULL,
                <const char *>view.buf, view.len)
            return None if found is NULL else <object>found
        finally:
            PyBuffer_Release(&view)

    cdef int remember(self, object text, int space, tuple value) except -1:
        """What the checked decoder made of a text: the same bytes always decode, and
        check, to the same (shared) objects."""
        cdef Py_buffer view
        PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
        try:
            self.memo.put(
                _hash_bytes(<const char *>view.buf, view.len, space, NULL), space, NULL,
                <const char *>view.buf, view.len, value)
        finally:
            PyBuffer_Release(&view)
        return 0

    cdef object quantity(self, const char *p, Py_ssize_t n):
        """The DeviceCapacity of a capacity's quantity text, if known."""
        cdef uint64_t h = _hash_bytes(p, n, M_QUANTITY, NULL)
        cdef PyObject *found = self.memo.get(h, M_QUANTITY, NULL, p, n)
        if found is not NULL:
            return <object>found
        capacity = self.capacities.get(PyUnicode_DecodeUTF8(p, n, NULL))
        if capacity is not None:
            self.memo.put(h, M_QUANTITY, NULL, p, n, capacity)
        return capacity


    def build(self, item: object, raw: object, str api_version, fallback: object) -> object:
        """The ResourceSlice of a :class:`~draspeed.api.slice_schema.JSONSlice`, or None
        when anything but its devices needs the checked decoder.

        ``raw`` is the item's text, kept as the slice's ``raw_text`` (its ``raw`` slot
        stays empty until read). A device this module does not build is built by
        ``fallback(raw)(i, driver)``: ``fallback(raw)`` happens at most once per slice,
        and its ``raw`` attribute (the decoded item) becomes the slice's ``raw``. Errors
        of those devices propagate.
        """
        cdef bint validate = self.validate
        cdef PyObject *arguments[8]
        if type(item) is not JSONSlice:
            return None
        meta = item.metadata
        spec = item.spec
        if type(meta) is not JSONMetadata or type(spec) is not JSONSpec:
            return None

        name = meta.name
        uid = meta.uid
        version = meta.resourceVersion
        generation = meta.generation
        if type(name) is not str or type(uid) is not str or type(version) is not str:
            return None
        if not _int64(generation):
            return None
        if validate and not _labels_ok(name, _SUBDOMAIN_MAX, True, False):
            return None
        labels = meta.labels
        annotations = meta.annotations
        labels = {} if labels is None else labels
        annotations = {} if annotations is None else annotations
        if type(labels) is not dict or type(annotations) is not dict:
            return None
        finalizers = meta.finalizers
        finalizers = [] if finalizers is None else finalizers
        if validate and (labels or annotations or finalizers or generation or meta.generateName):
            if not metadata_valid(meta.generateName, generation, labels, annotations, finalizers):
                return None  # the checked decoder words what the API server refuses
        if not structs_valid(meta, validate):
            return None

        driver = spec.driver
        if type(driver) is not str:
            return None
        if validate and not PySet_Contains(self.checked, ("driver", driver)):
            return None  # a driver's first slice: the checked decoder checks its name
        pool = spec.pool
        if type(pool) is not JSONPool:
            return None
        pool_name = pool.name
        pool_generation = pool.generation
        count = pool.resourceSliceCount
        pool_generation = 0 if pool_generation is None else pool_generation
        count = 0 if count is None else count
        if type(pool_name) is not str or not _int64(pool_generation) or not _int64(count):
            return None
        if validate and not (_labels_ok(pool_name, _POOL_NAME_MAX, True, True)
                             and count > 0 and pool_generation >= 0):
            return None

        node_name = spec.nodeName
        all_nodes = spec.allNodes
        if spec.nodeSelector is not None or spec.perDeviceNodeSelection is not None:
            return None
        if node_name is not None and type(node_name) is not str:
            return None
        if all_nodes is not None and type(all_nodes) is not bool:
            return None
        if validate:
            # Exactly one of nodeName (a DNS subdomain) and allNodes (true).
            if node_name is not None:
                if all_nodes is not None or not _labels_ok(node_name, _SUBDOMAIN_MAX, True, False):
                    return None
            elif all_nodes is not True:
                return None
        shared = spec.sharedCounters
        if shared is _NO_COUNTER_SETS or _is_null(shared):
            shared = None
        elif not _starts_list(shared) or spec.devices is not None:
            # Its type, or devices beside it (refused when validating, "even empty"):
            # the checked decoder, in its order.
            return None
        elif not _has_items(shared):
            shared = None

        devices_raw = spec.devices
        if devices_raw is None:
            devices_raw = []
        elif type(devices_raw) is not list:
            return None
        cdef Py_ssize_t n = len(devices_raw), i
        if validate and n > _MAX_ADVANCED_DEVICES and (n > _MAX_DEVICES or _advanced(devices_raw)):
            return None  # the checked decoder words the limit
        cdef list devices = []
        checked = None
        if n:
            key_names = self.attribute_names.get(driver)
            if type(key_names) is not dict:
                return None  # a driver's first devices: the checked decoder starts its names
            for i in range(n):
                d = devices_raw[i]
                device = _typed_device(self, <dict>key_names, d)
                if device is None:
                    if checked is None:
                        checked = fallback(raw)
                    warned = checked.ctx.warned
                    device = checked(i, driver)
                    if type(d) is JSONDevice and checked.ctx.warned == warned:
                        # (a text that warns is warned about at each device: not kept)
                        uses = draspeed_get_slot(d, _device_consumes_at)
                        if uses != <PyObject *>_NO_CONSUMPTION:
                            self.remember(
                                <object>uses, M_CONSUMES, tuple(device.consumes_counters))
                devices.append(device)
        if validate and n > 1 and len({dev.name for dev in devices}) != n:
            return None  # a device name twice: the checked decoder names the device
        counter_sets = []
        if shared is not None:
            known = self.decoded(shared, M_COUNTER_SETS)
            if known is None:
                if checked is None:
                    checked = fallback(raw)
                warned = checked.ctx.warned
                known = tuple(checked.counter_sets())
                if checked.ctx.warned == warned:  # (a warning is given each time)
                    self.remember(shared, M_COUNTER_SETS, known)
            counter_sets = list(<tuple>known)
        decoded = None if checked is None else checked.raw

        empty = ""
        arguments[0] = <PyObject *>name
        arguments[1] = <PyObject *>empty
        arguments[2] = <PyObject *>uid
        arguments[3] = <PyObject *>labels
        arguments[4] = <PyObject *>annotations
        arguments[5] = <PyObject *>generation
        arguments[6] = <PyObject *>version
        metadata = _META.make(arguments)

        arguments[0] = <PyObject *>pool_name
        arguments[1] = <PyObject *>pool_generation
        arguments[2] = <PyObject *>count
        pool_model = _POOL.make(arguments)

        arguments[0] = <PyObject *>driver
        arguments[1] = <PyObject *>pool_model
        arguments[2] = <PyObject *>node_name
        arguments[3] = <PyObject *>None
        arguments[4] = <PyObject *>all_nodes
        arguments[5] = <PyObject *>None
        arguments[6] = <PyObject *>devices
        arguments[7] = <PyObject *>counter_sets
        spec_model = _SPEC.make(arguments)

        arguments[0] = <PyObject *>metadata
        arguments[1] = <PyObject *>spec_model
        arguments[2] = <PyObject *>api_version
        if decoded is None:
            arguments[3] = NULL  # read from the text on demand
            arguments[4] = <PyObject *>raw
        else:
            arguments[3] = <PyObject *>decoded
            arguments[4] = <PyObject *>None
        return _SLICE.make(arguments)


cdef object _read_map(SliceBuilder b, dict key_names, object text, bint capacity,
                      Py_ssize_t *count):
    """The attributes (keyed by fully qualified name) or capacities (keyed as written:
    upstream compares and prints capacity names literally) of a device from their JSON
    text, with ``count`` members; None when anything is not the common shape or not
    known."""
    cdef Py_buffer view
    PyObject_GetBuffer(text, &view, PyBUF_SIMPLE)
    try:
        return _parse_map(b, key_names, <const char *>view.buf, view.len, capacity, count)
    finally:
        PyBuffer_Release(&view)


cdef object _parse_map(SliceBuilder b, dict key_names, const char *p, Py_ssize_t n,
                       bint capacity, Py_ssize_t *count):
    cdef Py_ssize_t i = _ws(p, 0, n), end, members = 0
    cdef int kind
    cdef _KeyInfo key
    if _is(p + i, n - i, "null", 4):
        count[0] = 0
        return {}  # null is as absent
    if i >= n or p[i] != b'{':
        return None
    cdef dict result = draspeed_dict_presized(8)
    i = _ws(p, i + 1, n)
    if i < n and p[i] == b'}':
        count[0] = 0
        return result
    while True:
        end = _plain_string_end(p, i, n)  # the key
        if end < 0:
            return None
        key = b.key(key_names, p + i + 1, end - i - 1)
        if key is None:
            return None
        i = _ws(p, end + 1, n)
        if i >= n or p[i] != b':':
            return None
        i = _ws(p, i + 1, n)
        if i >= n or p[i] != b'{':
            return None
        i = _ws(p, i + 1, n)
        end = _plain_string_end(p, i, n)  # its one field: the value kind, or "value"
        if end < 0:
            return None
        if capacity:
            kind = V_STRING if _is(p + i + 1, end - i - 1, "value", 5) else -1
        else:
            kind = _value_kind(p + i + 1, end - i - 1)
        if kind < 0:
            return None
        i = _ws(p, end + 1, n)
        if i >= n or p[i] != b':':
            return None
        i = _ws(p, i + 1, n)
        if kind == V_STRING or kind == V_VERSION:
            end = _plain_string_end(p, i, n)
            if end < 0:
                return None
            if capacity:
                value = b.quantity(p + i + 1, end - i - 1)
            else:
                value = b.text_attribute(kind, p + i + 1, end - i - 1, key)
            i = end + 1
        elif kind == V_INT:
            value = b.int_attribute(p, &i, n)
        elif _is(p + i, min(n - i, 4), "true", 4):
            value = b.bool_attribute(True)
            i += 4
        elif _is(p + i, min(n - i, 5), "false", 5):
            value = b.bool_attribute(False)
            i += 5
        else:
            return None
        if value is None:
            return None
        i = _ws(p, i, n)
        if i >= n or p[i] != b'}':
            return None  # a second field
        PyDict_SetItem(result, key.published if capacity else key.name, value)
        members += 1
        i = _ws(p, i + 1, n)
        if i < n and p[i] == b',':
            i = _ws(p, i + 1, n)
            continue
        if i < n and p[i] == b'}':
            break
        return None
    if PyDict_GET_SIZE(result) != members:
        return None  # "model" and "<driver>/model": the checked path warns
    count[0] = members
    return result


cdef object _typed_device(SliceBuilder b, dict key_names, object d):
    """The Device of a :class:`~draspeed.api.slice_schema.JSONDevice` of the common
    shape whose parts are all known (or simple to check), else None."""
    cdef Py_ssize_t i, attributes, capacities
    if type(d) is not JSONDevice:
        return None
    for i in range(_device_extras):
        if draspeed_get_slot(d, _device_extra_at[i]) != _UNSET:
            return None  # taints, node selection ...: the checked decoder
    cdef object uses = None
    cdef PyObject *consumes = draspeed_get_slot(d, _device_consumes_at)
    if consumes != <PyObject *>_NO_CONSUMPTION:
        uses = b.decoded(<object>consumes, M_CONSUMES)
        if uses is None:
            return None  # a text not seen yet: the checked decoder, which remembers it
    name = <object>draspeed_get_slot(d, _device_name_at)
    if type(name) is not str:
        return None
    if b.validate and not PySet_Contains(b.dns_labels, name):
        if not _labels_ok(name, _LABEL_MAX, False, False):
            return None
        PySet_Add(b.dns_labels, name)  # as the checked decoder remembers a valid name
    name = _one_of(b.names, name)
    attrs = _read_map(b, key_names, <object>draspeed_get_slot(d, _device_attributes_at),
                      False, &attributes)
    if attrs is None:
        return None
    caps = _read_map(b, key_names, <object>draspeed_get_slot(d, _device_capacity_at),
                     True, &capacities)
    if caps is None:
        return None
    if b.validate and attributes + capacities > _MAX_FIELDS:
        return None
    PyObject_GC_UnTrack(<void *>attrs)
    PyObject_GC_UnTrack(<void *>caps)
    device = _new_device(name, attrs, caps)
    if uses:
        counters = list(<tuple>uses)
        PyObject_GC_UnTrack(<void *>counters)
        device.consumes_counters = counters
    return device


# ----------------------------------------------------------------- name syntax

# Object, node and pool names are unique per slice, so their checks run for every slice.
# These predicates answer "certainly valid" in one pass; False only means "let the
# checked function of draspeed.api.names decide and word the error".


cdef inline bint _alnum(_ucs1 c) noexcept nogil:
    return (c >= b'a' and c <= b'z') or (c >= b'0' and c <= b'9')


cdef bint _labels_ok(object name, Py_ssize_t max_length, bint dots, bint slash):
    """Lower case letters, digits, '-' and separators ('.' if ``dots``, '/' if ``slash``),
    starting and ending with a letter or digit, a separator next to neither a separator
    nor a '-' (so: DNS labels joined by separators, none empty)."""
    if type(name) is not str or not PyUnicode_IS_ASCII(name):
        return False  # non-ASCII is never valid; the checked function says why
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(name), i
    if n == 0 or n > max_length:
        return False
    cdef const _ucs1 *p = <const _ucs1 *>PyUnicode_DATA(name)
    cdef _ucs1 c, previous = b'.'  # as after a separator: the first must be alnum
    for i in range(n):
        c = p[i]
        if c == b'-':
            if not (_alnum(previous) or previous == b'-'):
                return False
        elif (dots and c == b'.') or (slash and c == b'/'):
            if not _alnum(previous):
                return False
        elif not _alnum(c):
            return False
        previous = c
    return _alnum(previous)


def dns_subdomain_ok(name: object) -> bool:
    """True only when ``names.check_dns_subdomain(name)`` passes."""
    return _labels_ok(name, _SUBDOMAIN_MAX, True, False)


def pool_name_ok(name: object) -> bool:
    """True only when ``names.check_pool_name(name)`` passes (every '/'-separated part
    is a DNS subdomain; the whole is at most as long as one)."""
    return _labels_ok(name, _POOL_NAME_MAX, True, True)


def dns_label_ok(name: object) -> bool:
    """True only when ``names.check_dns_label(name)`` passes."""
    return _labels_ok(name, _LABEL_MAX, False, False)
