# Declarations shared by the compiled modules (cimported; not a Python module).
#
# Slot access to ``__slots__`` model classes: the compiled decoders fill the slots of
# the model's dataclasses directly, and the tree walker copies and signs them, with
# the offsets read once from the member descriptors. And a byte-string hash mix.

from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

cdef extern from "structmember.h":
    int T_OBJECT_EX
    int READONLY

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
    /* Fill an empty slot of a new instance, taking over the caller's reference. */
    static inline void draspeed_put_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
        *(PyObject **)((char *)obj + offset) = value;
    }
    /* The object in a slot (borrowed; NULL when empty). */
    static inline PyObject *draspeed_get_slot(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    /* Ask the memory for an object's first two cache lines (a hint: nothing happens
       where the compiler has no prefetch). Reading millions of small objects is
       waiting on memory; asking for the next ones first overlaps the waits. */
    static inline void draspeed_prefetch(const void *p) {
    /* As instructions: GCC 12 drops __builtin_prefetch calls from a loop that makes
       more than a few of them (measured on read_slices). */
    #if defined(__GNUC__) && defined(__x86_64__)
        __asm__ volatile("prefetcht0 (%0)" : : "r"(p));
        __asm__ volatile("prefetcht0 64(%0)" : : "r"(p));
    #elif defined(__GNUC__) && defined(__aarch64__)
        __asm__ volatile("prfm pldl1keep, [%0]" : : "r"(p));
        __asm__ volatile("prfm pldl1keep, [%0, #64]" : : "r"(p));
    #elif defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(p);
        __builtin_prefetch((const char *)p + 64);
    #endif
    }
    /* A dict's table of entries, a list's array of items (their second level). */
    static inline void draspeed_prefetch_contents(PyObject *o) {
        if (o == NULL) return;
        if (PyDict_CheckExact(o)) {  /* a device's map of a dozen entries: eight lines */
            const char *keys = (const char *)((PyDictObject *)o)->ma_keys;
            draspeed_prefetch(keys);
            draspeed_prefetch(keys + 128);
            draspeed_prefetch(keys + 256);
            draspeed_prefetch(keys + 384);
        }
        else if (PyList_CheckExact(o) && PyList_GET_SIZE(o) > 0)
            draspeed_prefetch(((PyListObject *)o)->ob_item);
    }
    /* The same for the object in a slot, when the slot is filled. */
    static inline void draspeed_prefetch_slot(PyObject *obj, Py_ssize_t offset) {
        PyObject *value = *(PyObject **)((char *)obj + offset);
        if (value != NULL) draspeed_prefetch(value);
    }
    /* Before item i of an array of n `type` instances is read, ask for the items
       ahead, in three steps a few items apart, each level by then asked for a step
       before: the item 8 on; what the `fields` slots of the one 4 on point to; the
       entries of the maps and lists in the `contents` slots of the one 2 on. */
    static inline void draspeed_prefetch_ahead_items(
        PyObject **items, Py_ssize_t n, Py_ssize_t i, PyTypeObject *type,
        const Py_ssize_t *fields, int n_fields, const Py_ssize_t *contents, int n_contents
    ) {
        PyObject *ahead;
        int k;
        if (i + 8 < n) draspeed_prefetch(items[i + 8]);
        if (i + 4 < n) {
            ahead = items[i + 4];
            if (Py_TYPE(ahead) == type)
                for (k = 0; k < n_fields; k++) draspeed_prefetch_slot(ahead, fields[k]);
        }
        if (i + 2 < n) {
            ahead = items[i + 2];
            if (Py_TYPE(ahead) == type)
                for (k = 0; k < n_contents; k++)
                    draspeed_prefetch_contents(*(PyObject **)((char *)ahead + contents[k]));
        }
    }
    /* The same over the items of a list. */
    static inline void draspeed_prefetch_ahead(
        PyObject *list, Py_ssize_t i, PyTypeObject *type,
        const Py_ssize_t *fields, int n_fields, const Py_ssize_t *contents, int n_contents
    ) {
        draspeed_prefetch_ahead_items(((PyListObject *)list)->ob_item, PyList_GET_SIZE(list),
                                      i, type, fields, n_fields, contents, n_contents);
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
    void draspeed_set_slot(object obj, Py_ssize_t offset, PyObject *value)
    void draspeed_put_slot(object obj, Py_ssize_t offset, PyObject *value)
    PyObject *draspeed_get_slot(object obj, Py_ssize_t offset)
    void draspeed_prefetch(const void *p)
    void draspeed_prefetch_ahead(
        list items, Py_ssize_t i, PyTypeObject *type, const Py_ssize_t *fields, int n_fields,
        const Py_ssize_t *contents, int n_contents,
    )
    void draspeed_prefetch_ahead_items(
        PyObject **items, Py_ssize_t n, Py_ssize_t i, PyTypeObject *type,
        const Py_ssize_t *fields, int n_fields, const Py_ssize_t *contents, int n_contents,
    )
    dict draspeed_dict_presized(Py_ssize_t n)



cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *o)


cdef inline list out_of_collector_sight(list items):
    """``items`` itself (not what it holds) taken out of the cyclic collector's sight,
    for good: a list stays untracked whatever is appended to it. For the long-lived
    per-device and per-node lists of a snapshot, which no item refers back to: each
    collection that reaches such a list visits every item (four young lists of
    40,000 devices, drivers and attributes cost 2.4 ms of a 5,000-node first pass, and
    the older generations visit them again). Returns ``items``."""
    PyObject_GC_UnTrack(<void*>items)
    return items


cdef inline Py_ssize_t slot_offset(object cls, str name) except -1:
    """Where the slot ``name`` of the __slots__ class ``cls`` lives in its instances
    (read once, at import); a RuntimeError when the model is not what the compiled
    modules expect (a property, or a read-only member, in place of a plain slot)."""
    descr = vars(cls).get(name)
    cdef Py_ssize_t offset = -1 if descr is None else draspeed_slot_offset(descr)
    if offset < 0:
        raise RuntimeError(f"draspeed: {cls.__name__}.{name} is not a plain slot")
    return offset

cdef inline uint64_t mix_bytes(uint64_t h, const unsigned char *p, Py_ssize_t n) noexcept nogil:
    # Fold n bytes into h, eight at a time (a quick hash for sorting and pre-filtering:
    # equal keys are always told by their bytes).
    cdef uint64_t word
    while n >= 8:
        memcpy(&word, p, 8)
        h = (h ^ word) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 32
        p += 8
        n -= 8
    if n > 0:
        word = 0
        memcpy(&word, p, <size_t>n)
        h = (h ^ word) * 0xC4CEB9FE1A85EC53ULL
        h ^= h >> 29
    return h


# ---- a map from object addresses to int32, in C (no Python int made per lookup)

cdef extern from "stdlib.h":
    void *calloc(size_t n, size_t size) nogil
    void free(void *p) nogil

cdef struct PtrMap:
    size_t *keys      # 0: empty
    int *values
    Py_ssize_t cap    # a power of two
    Py_ssize_t n


cdef inline size_t _ptr_hash(size_t key, Py_ssize_t cap) noexcept nogil:
    return ((key >> 4) * <size_t>0x9E3779B97F4A7C15) & <size_t>(cap - 1)


cdef inline int ptrmap_init(PtrMap *m, Py_ssize_t cap) noexcept nogil:
    """0 on success, -1 when out of memory."""
    m.cap = 16
    while m.cap < cap:
        m.cap *= 2
    m.n = 0
    m.keys = <size_t*>calloc(m.cap, sizeof(size_t))
    m.values = <int*>calloc(m.cap, sizeof(int))
    return 0 if m.keys != NULL and m.values != NULL else -1


cdef inline void ptrmap_free(PtrMap *m) noexcept nogil:
    free(m.keys)
    free(m.values)
    m.keys = NULL
    m.values = NULL


cdef inline int ptrmap_get(PtrMap *m, void *ptr, int missing) noexcept nogil:
    """The value stored for ``ptr``, or ``missing``."""
    cdef size_t key = <size_t>ptr
    cdef size_t i = _ptr_hash(key, m.cap)
    while m.keys[i] != 0:
        if m.keys[i] == key:
            return m.values[i]
        i = (i + 1) & <size_t>(m.cap - 1)
    return missing


cdef inline int ptrmap_put(PtrMap *m, void *ptr, int value) noexcept nogil:
    """Store ``value`` for ``ptr``; 0 on success, -1 when out of memory."""
    cdef size_t key = <size_t>ptr, i, j
    cdef size_t *old_keys
    cdef int *old_values
    cdef Py_ssize_t old_cap
    if 2 * (m.n + 1) > m.cap:
        old_keys, old_values, old_cap = m.keys, m.values, m.cap
        m.cap *= 2
        m.keys = <size_t*>calloc(m.cap, sizeof(size_t))
        m.values = <int*>calloc(m.cap, sizeof(int))
        if m.keys == NULL or m.values == NULL:
            return -1
        m.n = 0
        for j in range(<size_t>old_cap):
            if old_keys[j] != 0:
                ptrmap_put(m, <void*>old_keys[j], old_values[j])
        free(old_keys)
        free(old_values)
    i = _ptr_hash(key, m.cap)
    while m.keys[i] != 0 and m.keys[i] != key:
        i = (i + 1) & <size_t>(m.cap - 1)
    if m.keys[i] == 0:
        m.n += 1
    m.keys[i] = key
    m.values[i] = value
    return 0
