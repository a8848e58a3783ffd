# cython: language_level=3
"""Compiled fast paths of bulk decoding: common-shape devices, slice names, JSON checks.

Nearly every device of a cluster dump is a name, attributes with one scalar value each
and capacities without a request policy, whose names, values and quantities already
occurred earlier in the same load. :func:`decode_common_devices` builds such a device
from the load's :class:`~draspeed.api.context.Caches` with a few dict lookups and no
field paths. Whatever it is not sure about (another shape, extra fields, a name, int,
version or quantity seen for the first time, list values, duplicate keys, too many
entries, any type that is not exactly dict/str/int/bool) goes to the checked decoder of
:mod:`draspeed.api.slices`, which is the only one that reports errors and fills the
caches; so this path only has to be right for input it accepts, and it accepts only
what the checked decoder accepted before (or, for new strings, would accept).

The model objects are the dataclasses of :mod:`draspeed.api.model`. Calling their
generated ``__init__`` costs more than the rest of a device (a Python frame, twelve
attribute stores, four default factories), so they are allocated here and their slots
filled directly, exactly as that ``__init__`` fills them. The layout is read from the
dataclass fields at import; a model change this module does not understand (a
``__post_init__``, a ``__setattr__``, a default factory other than list/dict, a field
that is not a slot) fails the import instead of silently building objects differently.

Also here, because they run once per slice or once per byte of input:
:func:`dns_subdomain_ok` and :func:`pool_name_ok` (a one-pass "certainly valid" for the
names :mod:`draspeed.api.names` checks), and :func:`json_text_shape` and
:func:`count_members` (nesting depth and duplicate keys of a JSON text, for the input
limits of :mod:`draspeed.api.text`).

References borrowed from the input are held only while no Python code can run; the
input must not be mutated by another thread while it is being decoded.
"""

from dataclasses import MISSING, fields

cimport cython

from cpython.dict cimport PyDict_GetItemWithError, PyDict_Next, PyDict_SetItem
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.set cimport PySet_Contains
from cpython.unicode cimport PyUnicode_GET_LENGTH

from draspeed.api import limits, names
from draspeed.api.model import Device, DeviceAttribute

cdef extern from "structmember.h":
    int T_OBJECT_EX
    int READONLY

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyDict_GET_SIZE(object o)
    int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)
    char *PyBytes_AS_STRING(object o)
    Py_ssize_t PyBytes_GET_SIZE(object o)
    int Py_EnterRecursiveCall(const char *where)  # nonzero: RecursionError set
    void Py_LeaveRecursiveCall()

cdef extern from "string.h" nogil:
    const void *memchr(const void *s, int c, size_t n)

ctypedef unsigned char _ucs1
ctypedef unsigned short _ucs2
ctypedef unsigned int _ucs4

ctypedef fused _char:  # bytes, and the three widths of str storage
    _ucs1
    _ucs2
    _ucs4

cdef extern from *:
    """
    /* The offset of a writable object slot of a __slots__ class, or -1. */
    static Py_ssize_t draspeed_slot_offset(PyObject *descr) {
        PyMemberDef *m;
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return -1;
        return m->offset;
    }
    /* A new instance with every slot empty, as object.__new__ makes it. */
    static PyObject *draspeed_alloc(PyObject *tp) {
        return ((PyTypeObject *)tp)->tp_alloc((PyTypeObject *)tp, 0);
    }
    /* What the slot's member descriptor does on assignment. */
    static inline void draspeed_set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
        PyObject **slot = (PyObject **)((char *)obj + offset);
        PyObject *old = *slot;
        Py_INCREF(value);
        *slot = value;
        Py_XDECREF(old);
    }
    /* A dict with room for n entries (a plain dict resizes once past five). */
    static PyObject *draspeed_dict_presized(Py_ssize_t n) {
    #if PY_VERSION_HEX < 0x030F0000 && !defined(PYPY_VERSION)
        return _PyDict_NewPresized(n);
    #else
        return PyDict_New();
    #endif
    }
    """
    Py_ssize_t draspeed_slot_offset(object descr)
    object draspeed_alloc(object tp)
    void draspeed_set_slot(object obj, Py_ssize_t offset, object value)
    dict draspeed_dict_presized(Py_ssize_t n)


cdef Py_ssize_t _MAX_FIELDS = limits.RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE


# ------------------------------------------------------------------ model layouts

# How one Device slot is filled: from an argument, a shared constant, or a new container.
cdef enum Fill:
    FILL_NAME
    FILL_ATTRIBUTES
    FILL_CAPACITY
    FILL_CONSTANT
    FILL_LIST
    FILL_DICT

cdef enum:
    MAX_SLOTS = 32

cdef Py_ssize_t _device_slots = 0
cdef Py_ssize_t _device_offset[MAX_SLOTS]
cdef Fill _device_fill[MAX_SLOTS]
cdef list _device_constants = []  # FILL_CONSTANT values, in slot order
cdef Py_ssize_t _attribute_kind_offset = -1
cdef Py_ssize_t _attribute_value_offset = -1


cdef Py_ssize_t _offset(type cls, str name) except -1:
    descr = vars(cls).get(name)
    cdef Py_ssize_t offset = -1 if descr is None else draspeed_slot_offset(descr)
    if offset < 0:
        raise RuntimeError(f"draspeed._decode: {cls.__name__}.{name} is not a plain slot")
    return offset


cdef void _plain_dataclass(type cls) except *:
    """Refuse classes whose construction does more than store its fields."""
    frozen = cls.__dataclass_params__.frozen  # its __setattr__ only refuses
    if (
        getattr(cls, "__post_init__", None) is not None
        or cls.__new__ is not object.__new__
        or (not frozen and cls.__setattr__ is not object.__setattr__)
    ):
        raise RuntimeError(f"draspeed._decode: {cls.__name__} is not a plain slots dataclass")


cdef void _read_layouts() except *:
    global _device_slots, _attribute_kind_offset, _attribute_value_offset
    _plain_dataclass(Device)
    _plain_dataclass(DeviceAttribute)
    arguments = {"name": FILL_NAME, "attributes": FILL_ATTRIBUTES, "capacity": FILL_CAPACITY}
    found = set()
    cdef Fill fill
    for f in fields(Device):
        if _device_slots == MAX_SLOTS:
            raise RuntimeError("draspeed._decode: Device has too many fields")
        if f.name in arguments:
            fill = arguments[f.name]
            found.add(f.name)
        elif f.default is not MISSING:
            fill = FILL_CONSTANT
            _device_constants.append(f.default)
        elif f.default_factory is list:
            fill = FILL_LIST
        elif f.default_factory is dict:
            fill = FILL_DICT
        else:
            raise RuntimeError(f"draspeed._decode: no way to default Device.{f.name}")
        _device_offset[_device_slots] = _offset(Device, f.name)
        _device_fill[_device_slots] = fill
        _device_slots += 1
    if len(found) != len(arguments):
        raise RuntimeError("draspeed._decode: Device lacks name, attributes or capacity")
    if [f.name for f in fields(DeviceAttribute)] != ["kind", "value"]:
        raise RuntimeError("draspeed._decode: DeviceAttribute is not (kind, value)")
    _attribute_kind_offset = _offset(DeviceAttribute, "kind")
    _attribute_value_offset = _offset(DeviceAttribute, "value")


_read_layouts()


cdef object _new_device(str name, dict attributes, dict capacity):
    """``Device(name, attributes, capacity)`` without its ``__init__``."""
    device = draspeed_alloc(Device)
    cdef Py_ssize_t i, constant = 0
    cdef Fill fill
    for i in range(_device_slots):
        fill = _device_fill[i]
        if fill == FILL_NAME:
            draspeed_set_slot(device, _device_offset[i], name)
        elif fill == FILL_ATTRIBUTES:
            draspeed_set_slot(device, _device_offset[i], attributes)
        elif fill == FILL_CAPACITY:
            draspeed_set_slot(device, _device_offset[i], capacity)
        elif fill == FILL_CONSTANT:
            draspeed_set_slot(device, _device_offset[i], _device_constants[constant])
            constant += 1
        elif fill == FILL_LIST:
            draspeed_set_slot(device, _device_offset[i], [])
        else:
            draspeed_set_slot(device, _device_offset[i], {})
    return device


cdef object _new_string_attribute(str value):
    """``DeviceAttribute("string", value)`` without the frozen ``__init__``."""
    attr = draspeed_alloc(DeviceAttribute)
    draspeed_set_slot(attr, _attribute_kind_offset, "string")
    draspeed_set_slot(attr, _attribute_value_offset, value)
    return attr


def new_device(name: str, attributes: dict, capacity: dict) -> object:
    """The Device this module builds (for tests: it must equal the dataclass's own)."""
    return _new_device(name, attributes, capacity)


def new_string_attribute(value: str) -> object:
    """The string DeviceAttribute this module builds (for tests)."""
    return _new_string_attribute(value)


# ---------------------------------------------------------------------- devices


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
    a = None if pa is NULL else <object>pa
    c = None if pc is NULL else <object>pc

    cdef dict attrs
    if a:
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
    if c:
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
            p = PyDict_GetItemWithError(t.key_names, key)
            if p is NULL:
                return None
            PyDict_SetItem(caps, <object>p, cap)
        if PyDict_GET_SIZE(caps) != PyDict_GET_SIZE(c):
            return None
    else:
        caps = {}

    if t.validate and PyDict_GET_SIZE(attrs) + PyDict_GET_SIZE(caps) > _MAX_FIELDS:
        return None
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


# ----------------------------------------------------------------- name syntax

# Object, node and pool names are unique per slice, so their checks run for every slice.
# These predicates answer "certainly valid" in one pass; False only means "let the
# checked function of draspeed.api.names decide and word the error".

cdef Py_ssize_t _SUBDOMAIN_MAX = names.DNS_SUBDOMAIN_MAX
cdef Py_ssize_t _POOL_NAME_MAX = limits.POOL_NAME_MAX_LENGTH


cdef inline bint _alnum(_ucs1 c) noexcept nogil:
    return (c >= b'a' and c <= b'z') or (c >= b'0' and c <= b'9')


cdef bint _labels_ok(object name, Py_ssize_t max_length, bint slash):
    """Lower case letters, digits, '-' and separators ('.', and '/' if ``slash``),
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
        elif c == b'.' or (slash and c == b'/'):
            if not _alnum(previous):
                return False
        elif not _alnum(c):
            return False
        previous = c
    return _alnum(previous)


def dns_subdomain_ok(name: object) -> bool:
    """True only when ``names.check_dns_subdomain(name)`` passes."""
    return _labels_ok(name, _SUBDOMAIN_MAX, False)


def pool_name_ok(name: object) -> bool:
    """True only when ``names.check_pool_name(name)`` passes (every '/'-separated part
    is a DNS subdomain; the whole is at most as long as one)."""
    return _labels_ok(name, _POOL_NAME_MAX, True)


# ------------------------------------------------------------------ JSON text checks


cdef Py_ssize_t _string_end(const _char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The index of the quote closing the string whose content starts at ``i``."""
    cdef const unsigned char *hit
    cdef Py_ssize_t backslashes
    if _char is _ucs1:
        while i < n:
            hit = <const unsigned char *>memchr(p + i, b'"', <size_t>(n - i))
            if hit is NULL:
                return n
            i = hit - <const unsigned char *>p
            # Escaped only after an odd number of backslashes.
            backslashes = 0
            while backslashes < i and p[i - 1 - backslashes] == b'\\':
                backslashes += 1
            if backslashes % 2 == 0:
                return i
            i += 1
        return n
    else:
        while i < n:
            if p[i] == b'\\':
                i += 2
            elif p[i] == b'"':
                return i
            else:
                i += 1
        return n


cdef Py_ssize_t _scan(const _char *p, Py_ssize_t n, Py_ssize_t max_depth) noexcept nogil:
    """Object members (colons outside strings) of a valid JSON text, or -1 as soon as a
    collection opens inside ``max_depth`` open ones."""
    cdef Py_ssize_t i = 0, depth = 0, members = 0
    cdef unsigned int c
    while i < n:
        c = p[i]
        if c == b'"':
            i = _string_end(p, i + 1, n)
        elif c == b'[' or c == b'{':
            if depth == max_depth:
                return -1
            depth += 1
        elif c == b']' or c == b'}':
            depth -= 1
        elif c == b':':
            members += 1
        i += 1
    return members


def json_text_shape(text: str | bytes, Py_ssize_t max_depth) -> tuple:
    """``(too_deep, members)`` of a text msgspec decoded as JSON: whether collections
    nest more than ``max_depth`` deep, and how many object members (key-value pairs,
    duplicates included) it writes. One pass over the text, no copy."""
    cdef Py_ssize_t members, n
    cdef int kind
    cdef void *data
    if type(text) is bytes:
        members = _scan(<const _ucs1 *>PyBytes_AS_STRING(text),
                        PyBytes_GET_SIZE(text), max_depth)
    elif isinstance(text, str):
        n = PyUnicode_GET_LENGTH(text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        if kind == 1:
            members = _scan(<const _ucs1 *>data, n, max_depth)
        elif kind == 2:
            members = _scan(<const _ucs2 *>data, n, max_depth)
        else:
            members = _scan(<const _ucs4 *>data, n, max_depth)
    else:
        raise TypeError(f"json_text_shape() needs str or bytes, not {type(text).__name__}")
    if members < 0:
        return (True, 0)
    return (False, members)


cdef Py_ssize_t _members(object node) except -1:
    cdef Py_ssize_t total
    if Py_EnterRecursiveCall(" while counting JSON object members"):
        return -1
    try:
        total = _members_inside(node)
    finally:
        Py_LeaveRecursiveCall()
    return total


cdef Py_ssize_t _members_inside(object node) except -1:
    cdef Py_ssize_t total = 0, pos = 0
    cdef PyObject *pkey
    cdef PyObject *pvalue
    if type(node) is dict:
        total = PyDict_GET_SIZE(node)
        while PyDict_Next(node, &pos, &pkey, &pvalue):
            if type(<object>pvalue) is dict or type(<object>pvalue) is list:
                total += _members(<object>pvalue)
    else:
        for item in <list>node:
            if type(item) is dict or type(item) is list:
                total += _members(item)
    return total


def count_members(doc: object) -> int:
    """Entries of every dict in a decoded JSON document (dicts and lists nest, nothing
    else is looked into). Deeper than the interpreter's recursion limit: RecursionError."""
    if type(doc) is dict or type(doc) is list:
        return _members(doc)
    return 0
