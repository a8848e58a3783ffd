# cython: language_level=3
"""Pool gathering and node layouts for many nodes at once, in compiled code.

:func:`gather` does for every node of a list what upstream's ``GatherPools`` and
``buildPool`` do for one node in each ``Allocate`` call, over the flat arrays of the
slice table (``draspeed.engine.slice_table``), and lays the nodes' searchable devices
end to end as the compiled search reads them (``draspeed.engine.layout``):

1. the candidate slices of a node (its own, then those without a node name) that
   select it are grouped by pool, the newest generation of each pool kept;
2. a pool whose slices on the node are fewer than its ``resourceSliceCount`` is
   completed from the whole cluster, dropped when a newer generation exists anywhere,
   or marked incomplete;
3. a complete pool is checked -- duplicate device names, duplicate counter sets,
   devices consuming counters no counter set of the pool has -- and marked invalid
   with the first reason found, in upstream's order;
4. pools are ordered by (driver, pool name), those with binding conditions last;
   slices inside a pool by name; devices in slice order. The devices of usable pools
   are the node's *positions*;
5. each pool's counters become *slots*, sorted by (counter set, counter) name, with
   what committed claims left of them, and each position's consumption is mapped to
   slots. Amounts are whole units when every quantity involved is a small whole
   number (``whole`` in the answer); otherwise the caller redoes the sums exactly.

Everything here is integers -- ids of the slice table's strings, quantities, pools and
consumption patterns -- and C arrays; the only Python objects touched are strings,
when a node's pools or a pool's slices or counters must be sorted by name (and those
sorts are remembered per counter layout). Errors come back as codes for the caller to
put into upstream's words.
"""

import array

import numpy as np

from cpython.bytes cimport PyBytes_AsString, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from cpython.buffer cimport PyBuffer_FillInfo
cimport cython

# Pool states (pool_state) and why a pool is invalid (pool_reason).
POOL_STATE = {"usable": 0, "incomplete": 1, "invalid": 2}
POOL_REASON = {"none": 0, "duplicate_device": 1, "duplicate_counter_set": 2,
               "counter_set_not_found": 3, "counter_not_found": 4}
# Per-device node selection verdicts (pdn), as node_matches answers them.
PDN = {"none": 0, "yes": 1, "no": 2, "error": 3}
# Node errors (node_error): a node selection that does not parse.
NODE_ERROR = {"none": 0, "slice_selector": 1, "device_selector": 2}
# quantity_whole[q] for a quantity that is not a small whole number of units.
NOT_WHOLE = -(1 << 63)

cdef enum:
    USABLE = 0
    INCOMPLETE = 1
    INVALID = 2
    R_NONE = 0
    R_DUP_DEVICE = 1
    R_DUP_SET = 2
    R_SET_NOT_FOUND = 3
    R_COUNTER_NOT_FOUND = 4
    PDN_NONE = 0
    PDN_YES = 1
    PDN_NO = 2
    PDN_ERROR = 3
    E_NONE = 0
    E_SLICE = 1
    E_DEVICE = 2
    # draspeed.engine._read.SELECTION
    SEL_NONE = 0
    SEL_NODE_NAME = 1
    SEL_ALL_NODES = 2
    SEL_SELECTOR = 3
    SEL_PER_DEVICE = 4
    # draspeed.engine._read.DEVICE_FLAGS
    F_BINDING = 4

from libc.stdint cimport INT64_MIN
cdef int64_t C_NOT_WHOLE = INT64_MIN
# At most this many pools of a node, or slices of a pool, are sorted by insertion.
cdef Py_ssize_t _FEW = 16
# FNV-1a, to find a pool's counter layout among those seen (then compared in full).
cdef uint64_t FNV_OFFSET = 14695981039346656037ULL
cdef uint64_t FNV_PRIME = 1099511628211ULL


# ------------------------------------------------------------------- growing buffers

cdef struct Buf:
    char *data
    Py_ssize_t n, cap, size


cdef int buf_init(Buf *b, Py_ssize_t size, Py_ssize_t cap) except -1:
    b.size, b.n, b.cap = size, 0, max(cap, 16)
    b.data = <char*>malloc(b.cap * size)
    if b.data == NULL:
        raise MemoryError()
    return 0


cdef int buf_grow(Buf *b) except -1:
    # Four times the room: outputs grow to the size of the cluster in a few steps.
    cdef char *bigger = <char*>realloc(b.data, 4 * b.cap * b.size)
    if bigger == NULL:
        raise MemoryError()
    b.data, b.cap = bigger, 4 * b.cap
    return 0


cdef inline int push32(Buf *b, int32_t v) except -1:
    if b.n == b.cap:
        buf_grow(b)
    (<int32_t*>b.data)[b.n] = v
    b.n += 1
    return 0


cdef inline int push64(Buf *b, int64_t v) except -1:
    if b.n == b.cap:
        buf_grow(b)
    (<int64_t*>b.data)[b.n] = v
    b.n += 1
    return 0


cdef int reserve(Buf *b, Py_ssize_t more) except -1:
    """Room for ``more`` items, so the writes that follow need no check."""
    cdef char *bigger
    cdef Py_ssize_t cap = b.cap
    if b.n + more <= cap:
        return 0
    while cap < b.n + more:
        cap *= 4
    bigger = <char*>realloc(b.data, cap * b.size)
    if bigger == NULL:
        raise MemoryError()
    b.data, b.cap = bigger, cap
    return 0


cdef inline int32_t *at32(Buf *b) noexcept:
    return <int32_t*>b.data


cdef inline int64_t *at64(Buf *b) noexcept:
    return <int64_t*>b.data


@cython.final
cdef class _Block:
    """A malloc'd block that numpy arrays read in place (freed with the last of them)."""

    cdef char *data
    cdef Py_ssize_t nbytes

    def __dealloc__(self):
        free(self.data)

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.data, self.nbytes, 0, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef object to_array(Buf *b, object dtype):
    """The buffer's items as an array, taking over its memory (the buffer is left
    empty): no copy into fresh pages, a cluster's outputs being megabytes."""
    if b.n == 0:
        return np.empty(0, dtype)
    cdef char *block = <char*>realloc(b.data, b.n * b.size)  # the spare room given back
    if block == NULL:
        block = b.data
    cdef _Block owner = _Block.__new__(_Block)
    owner.data = block
    owner.nbytes = b.n * b.size
    b.data = NULL
    b.n = b.cap = 0
    return np.frombuffer(owner, dtype)


# ------------------------------------------------------------------ counter layouts
#
# A pool's counter sets, in the order its counter-set slices (sorted by name) list
# them, are its *appearance sequence*; its slots are the same (set, counter) pairs
# sorted by name. Nodes of one kind repeat the same sets and counters, so each
# distinct sequence is sorted once (a *layout*), and each consumption pattern is
# mapped to a layout's slot offsets once.

cdef struct Layouts:
    Buf seq_ptr   # layout -> [ptr, ptr+1) of seq_set/seq_counter
    Buf seq_set
    Buf seq_counter
    Buf slot_of   # same indexing as seq_*: the slot offset of that entry
    Buf n_slots   # layout -> number of distinct slots
    Buf slot_ptr  # layout -> [ptr, ptr+1) of slot_set/slot_counter (sorted)
    Buf slot_set
    Buf slot_counter
    Buf set_ptr   # layout -> [ptr, ptr+1) of sets: the counter sets of the layout
    Buf sets
    Buf set_slot_lo  # same indexing as sets: [lo, hi) of slot_set/slot_counter
    Buf set_slot_hi  # holding that set's counters (contiguous: slots sort by set first)
    Buf memo      # layout * n_patterns + pattern -> offset into mapped, or code
    Buf mapped    # slot offsets of mapped patterns (-1: a set's own entry)
    # The consumption table the search reads: per mapped pattern, its entries without
    # the sets' own ones, shared by every position consuming alike.
    Buf table_start  # layout * n_patterns + pattern -> first entry in the table
    Buf table_len    # ... and its number of entries
    Buf table_rel    # entry -> slot, relative to the pool's first slot
    Buf table_quantity  # entry -> quantity id
    Buf table_layout    # entry -> layout id
    Buf fail_a    # failure k: (code, set, counter)
    Buf fail_b
    Buf fail_code


cdef int layouts_init(Layouts *t) except -1:
    buf_init(&t.seq_ptr, sizeof(int32_t), 16)
    push32(&t.seq_ptr, 0)
    buf_init(&t.seq_set, sizeof(int32_t), 64)
    buf_init(&t.seq_counter, sizeof(int32_t), 64)
    buf_init(&t.slot_of, sizeof(int32_t), 64)
    buf_init(&t.n_slots, sizeof(int32_t), 16)
    buf_init(&t.slot_ptr, sizeof(int32_t), 16)
    push32(&t.slot_ptr, 0)
    buf_init(&t.slot_set, sizeof(int32_t), 64)
    buf_init(&t.slot_counter, sizeof(int32_t), 64)
    buf_init(&t.set_ptr, sizeof(int32_t), 16)
    push32(&t.set_ptr, 0)
    buf_init(&t.sets, sizeof(int32_t), 16)
    buf_init(&t.set_slot_lo, sizeof(int32_t), 16)
    buf_init(&t.set_slot_hi, sizeof(int32_t), 16)
    buf_init(&t.memo, sizeof(int32_t), 64)
    buf_init(&t.mapped, sizeof(int32_t), 64)
    buf_init(&t.table_start, sizeof(int32_t), 64)
    buf_init(&t.table_len, sizeof(int32_t), 64)
    buf_init(&t.table_rel, sizeof(int32_t), 64)
    buf_init(&t.table_quantity, sizeof(int32_t), 64)
    buf_init(&t.table_layout, sizeof(int32_t), 64)
    buf_init(&t.fail_a, sizeof(int32_t), 16)
    buf_init(&t.fail_b, sizeof(int32_t), 16)
    buf_init(&t.fail_code, sizeof(int32_t), 16)
    return 0


cdef void layouts_free(Layouts *t) noexcept:
    free(t.seq_ptr.data); free(t.seq_set.data); free(t.seq_counter.data)
    free(t.slot_of.data); free(t.n_slots.data); free(t.slot_ptr.data)
    free(t.slot_set.data); free(t.slot_counter.data); free(t.memo.data)
    free(t.set_ptr.data); free(t.sets.data); free(t.set_slot_lo.data); free(t.set_slot_hi.data)
    free(t.table_start.data); free(t.table_len.data); free(t.table_rel.data); free(t.table_quantity.data)
    free(t.table_layout.data)
    free(t.mapped.data); free(t.fail_a.data); free(t.fail_b.data); free(t.fail_code.data)


# ----------------------------------------------------------------------- the gather

cdef class _Gather:
    """One gather call's inputs, scratch and outputs (see :func:`gather`)."""

    # inputs: the slice table
    cdef const int64_t[::1] s_first, s_gen, s_count, p_ptr
    cdef const int32_t[::1] s_ndev, s_pool, s_node, s_selector, s_name, s_cs_ptr
    cdef const uint8_t[::1] s_sel, s_per_device, d_flags, d_pdn, live, selector_verdict
    cdef const int32_t[::1] cs_name, cs_c_ptr, c_name, c_quantity
    cdef const int32_t[::1] d_name, d_pattern, d_pdn_node, d_pdn_selector
    cdef const int32_t[::1] p_set, p_counter, p_quantity
    cdef const int32_t[::1] pool_slice_ptr, pool_slices, node_names
    cdef const int32_t[::1] own_slices, own_lo, own_hi, shared_slices
    cdef const int32_t[::1] holds_exclusive, holds_shared, holds_capacity
    cdef const int64_t[::1] overlay_keys
    cdef const int32_t[::1] overlay_values
    cdef const int64_t[::1] quantity_whole
    cdef list strings
    cdef dict layout_ids  # hash of an appearance sequence -> list of layout ids
    # Appearance sequence (bytes) -> its sorted slots and each entry's slot, from
    # earlier calls on the same string table: a one-node gather (after each commit of a
    # fill) then sorts no names.
    cdef dict sorted_slots
    cdef Py_ssize_t n_selectors, n_patterns, n_layouts
    cdef bint partitionable, whole
    # scratch
    cdef int32_t *stamp      # string id -> stamp of the pool that saw it
    cdef int32_t *local      # string id -> index (counter sets of the current pool)
    cdef int32_t stamp_now
    cdef int32_t *cand, *grp_pool
    # A node's candidates of each group, in candidate order: group j's first and last,
    # and each candidate's next (-1 ends), so that a pool reads only its own slices.
    cdef int32_t *grp_first, *grp_last, *cand_next
    # pool id -> its group among the current node's candidates, valid where the pool's
    # stamp is the node's (a pool is found without scanning the groups).
    cdef int32_t *pool_group, *pool_stamp
    cdef int32_t pool_stamp_now
    # slice -> the stamp of the pool check that took it from the node's candidates
    cdef int32_t *slice_stamp
    cdef int32_t slice_stamp_now
    # Many pools on a node, or many slices in a pool, are sorted by rank: a pool's
    # place in (driver, name) order, a slice's name's place in name order, asked of
    # ``ranks()`` once, when first needed (a few are sorted by their strings).
    cdef object ranks
    cdef bint ranked
    cdef const int32_t[::1] pool_rank
    cdef const int32_t[::1] s_name_rank
    cdef list pool_keys
    cdef uint64_t *sort_keys
    cdef int32_t *sort_items
    cdef int64_t *grp_gen
    cdef int32_t *tgt, *everyone, *dev_sl, *cnt_sl, *oth_sl, *pools_order
    cdef Layouts lay
    # outputs
    cdef Buf g, pos_pool, pdn, cons_start, cons_len
    cdef Buf held_slot, held_quantity, node_ptr, node_pool_ptr, pool_layout
    cdef Buf pool_id, pool_state, pool_reason, pool_reason_a, pool_reason_b, pool_binding
    cdef Buf pool_slot_ptr, pool_member_ptr, pool_targeting, pool_members
    cdef Buf pool_slices_ptr, pool_slices_out, pool_slice_kind
    cdef Buf slot_set, slot_counter, slot_quantity, slot_available
    cdef Buf e_kind, e_slice, e_device, e_selector
    # per node: its pools before ordering
    cdef Buf np_pool, np_state, np_reason, np_a, np_b, np_binding
    cdef Buf np_slices_ptr, np_slices, np_kinds  # pool -> its slices, each with a kind
    cdef Buf np_layout

    def __dealloc__(self):
        free(self.stamp); free(self.local); free(self.cand)
        free(self.grp_pool); free(self.grp_gen); free(self.tgt)
        free(self.everyone); free(self.dev_sl); free(self.cnt_sl); free(self.oth_sl)
        free(self.pools_order); free(self.grp_first); free(self.grp_last)
        free(self.cand_next); free(self.pool_group); free(self.pool_stamp)
        free(self.sort_keys); free(self.sort_items); free(self.slice_stamp)
        layouts_free(&self.lay)
        free(self.g.data); free(self.pos_pool.data); free(self.pdn.data)
        free(self.cons_start.data); free(self.cons_len.data); free(self.pool_layout.data)
        free(self.held_slot.data); free(self.held_quantity.data)
        free(self.node_ptr.data); free(self.node_pool_ptr.data); free(self.pool_id.data)
        free(self.pool_state.data); free(self.pool_reason.data); free(self.pool_reason_a.data)
        free(self.pool_reason_b.data); free(self.pool_binding.data)
        free(self.pool_slot_ptr.data); free(self.pool_member_ptr.data)
        free(self.pool_targeting.data); free(self.pool_members.data)
        free(self.pool_slices_ptr.data); free(self.pool_slices_out.data)
        free(self.pool_slice_kind.data)
        free(self.slot_set.data); free(self.slot_counter.data); free(self.slot_quantity.data)
        free(self.slot_available.data); free(self.e_kind.data); free(self.e_slice.data)
        free(self.e_device.data); free(self.e_selector.data)
        free(self.np_pool.data); free(self.np_state.data); free(self.np_reason.data)
        free(self.np_a.data); free(self.np_b.data); free(self.np_binding.data)
        free(self.np_slices_ptr.data); free(self.np_slices.data); free(self.np_kinds.data)
        free(self.np_layout.data)

    cdef int setup(self, Py_ssize_t n_strings, Py_ssize_t max_cand, Py_ssize_t max_pool,
                   Py_ssize_t n_nodes, Py_ssize_t n_pools) except -1:
        self.stamp = <int32_t*>calloc(max(n_strings, 1), sizeof(int32_t))
        self.pool_group = <int32_t*>malloc(max(n_pools, 1) * sizeof(int32_t))
        self.pool_stamp = <int32_t*>calloc(max(n_pools, 1), sizeof(int32_t))
        self.slice_stamp = <int32_t*>calloc(max(self.s_name.shape[0], 1), sizeof(int32_t))
        self.local = <int32_t*>calloc(max(n_strings, 1), sizeof(int32_t))
        m = max(max_cand, 1)
        self.cand = <int32_t*>malloc(m * sizeof(int32_t))
        self.grp_pool = <int32_t*>malloc(m * sizeof(int32_t))
        self.grp_gen = <int64_t*>malloc(m * sizeof(int64_t))
        self.tgt = <int32_t*>malloc(m * sizeof(int32_t))
        self.pools_order = <int32_t*>malloc(m * sizeof(int32_t))
        self.grp_first = <int32_t*>malloc(m * sizeof(int32_t))
        self.grp_last = <int32_t*>malloc(m * sizeof(int32_t))
        self.cand_next = <int32_t*>malloc(m * sizeof(int32_t))
        self.sort_keys = <uint64_t*>malloc(m * sizeof(uint64_t))
        self.sort_items = <int32_t*>malloc(m * sizeof(int32_t))
        p = max(max_pool, m, 1)
        self.everyone = <int32_t*>malloc(p * sizeof(int32_t))
        self.dev_sl = <int32_t*>malloc(p * sizeof(int32_t))
        self.cnt_sl = <int32_t*>malloc(p * sizeof(int32_t))
        self.oth_sl = <int32_t*>malloc(p * sizeof(int32_t))
        if (self.stamp == NULL or self.local == NULL or self.cand == NULL
                or self.grp_pool == NULL
                or self.grp_gen == NULL or self.tgt == NULL or self.pools_order == NULL
                or self.everyone == NULL or self.dev_sl == NULL or self.cnt_sl == NULL
                or self.oth_sl == NULL or self.grp_first == NULL or self.grp_last == NULL
                or self.cand_next == NULL or self.pool_group == NULL
                or self.pool_stamp == NULL or self.sort_keys == NULL
                or self.slice_stamp == NULL
                or self.sort_items == NULL):
            raise MemoryError()
        layouts_init(&self.lay)
        cdef Py_ssize_t N = max(n_nodes, 1)
        buf_init(&self.g, 8, 1024); buf_init(&self.pos_pool, 4, 1024)
        buf_init(&self.pdn, 1, 1024); buf_init(&self.cons_start, 4, 1024)
        buf_init(&self.cons_len, 4, 1024); buf_init(&self.pool_layout, 4, N)
        buf_init(&self.held_slot, 4, 256)
        buf_init(&self.held_quantity, 4, 256)
        buf_init(&self.node_ptr, 4, N + 1); buf_init(&self.node_pool_ptr, 4, N + 1)
        buf_init(&self.pool_id, 4, N); buf_init(&self.pool_state, 1, N)
        buf_init(&self.pool_reason, 1, N); buf_init(&self.pool_reason_a, 4, N)
        buf_init(&self.pool_reason_b, 4, N); buf_init(&self.pool_binding, 1, N)
        buf_init(&self.pool_slot_ptr, 4, N + 1); buf_init(&self.pool_member_ptr, 4, N + 1)
        buf_init(&self.pool_targeting, 4, N); buf_init(&self.pool_members, 8, 1024)
        buf_init(&self.pool_slices_ptr, 4, N + 1); buf_init(&self.pool_slices_out, 4, N)
        buf_init(&self.pool_slice_kind, 1, N)
        buf_init(&self.slot_set, 4, 256); buf_init(&self.slot_counter, 4, 256)
        buf_init(&self.slot_quantity, 4, 256); buf_init(&self.slot_available, 8, 256)
        buf_init(&self.e_kind, 1, N); buf_init(&self.e_slice, 4, N)
        buf_init(&self.e_device, 8, N); buf_init(&self.e_selector, 4, N)
        buf_init(&self.np_pool, 4, 16); buf_init(&self.np_state, 4, 16)
        buf_init(&self.np_reason, 4, 16); buf_init(&self.np_a, 4, 16)
        buf_init(&self.np_b, 4, 16); buf_init(&self.np_binding, 4, 16)
        buf_init(&self.np_slices_ptr, 4, 16); buf_init(&self.np_slices, 4, 64)
        buf_init(&self.np_kinds, 4, 64); buf_init(&self.np_layout, 4, 16)
        push32(&self.node_ptr, 0)
        push32(&self.node_pool_ptr, 0)
        push32(&self.pool_slot_ptr, 0)
        push32(&self.pool_member_ptr, 0)
        push32(&self.pool_slices_ptr, 0)
        return 0

    # ---- relevance -----------------------------------------------------------------

    cdef int relevance(self, Py_ssize_t n, int32_t s) except -2:
        """1: slice s selects node n, 0: not, -1: a node selector that does not parse
        (recorded as the node's error)."""
        cdef uint8_t kind = self.s_sel[s], verdict
        cdef int64_t g
        if kind == SEL_NODE_NAME:
            return self.s_node[s] == self.node_names[n]
        if kind == SEL_ALL_NODES:
            return 1
        if kind == SEL_SELECTOR:
            verdict = self.selector_verdict[n * self.n_selectors + self.s_selector[s]]
            if verdict == 2:
                self.node_error(n, E_SLICE, s, -1, self.s_selector[s])
                return -1
            return verdict
        if kind == SEL_PER_DEVICE:
            for g in range(self.s_first[s], self.s_first[s] + self.s_ndev[s]):
                verdict = self.device_verdict(n, g)
                if verdict == PDN_ERROR:
                    self.node_error(n, E_DEVICE, s, g, self.d_pdn_selector[g])
                    return -1
                if verdict == PDN_YES:
                    return 1
            return 0
        return 0

    cdef inline uint8_t device_verdict(self, Py_ssize_t n, int64_t g) noexcept:
        """A device's own node selection on node n (upstream NodeMatches)."""
        cdef uint8_t kind = self.d_pdn[g], verdict
        if kind == SEL_NODE_NAME:
            return PDN_YES if self.d_pdn_node[g] == self.node_names[n] else PDN_NO
        if kind == SEL_ALL_NODES:
            return PDN_YES
        if kind == SEL_SELECTOR:
            verdict = self.selector_verdict[n * self.n_selectors + self.d_pdn_selector[g]]
            return PDN_ERROR if verdict == 2 else (PDN_YES if verdict == 1 else PDN_NO)
        return PDN_NO

    cdef inline bint held(self, int64_t g) noexcept:
        """Whether committed claims hold device g in any way (base arrays, then the
        overlay of devices changed since, a sorted array)."""
        cdef Py_ssize_t lo = 0, hi = self.overlay_keys.shape[0], mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.overlay_keys[mid] < g:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.overlay_keys.shape[0] and self.overlay_keys[lo] == g:
            return (self.overlay_values[3 * lo] > 0 or self.overlay_values[3 * lo + 1] > 0
                    or self.overlay_values[3 * lo + 2] > 0)
        if g >= self.holds_exclusive.shape[0]:
            return False
        return (self.holds_exclusive[g] > 0 or self.holds_shared[g] > 0
                or self.holds_capacity[g] > 0)

    cdef int node_error(self, Py_ssize_t n, int kind, int32_t s, int64_t g,
                        int32_t selector) except -1:
        (<uint8_t*>self.e_kind.data)[n] = kind
        at32(&self.e_slice)[n] = s
        at64(&self.e_device)[n] = g
        at32(&self.e_selector)[n] = selector
        return 0

    # ---- one node ------------------------------------------------------------------

    cdef int node(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t i, j, n_cand = 0, n_groups = 0
        cdef Py_ssize_t n_own = self.own_hi[n] - self.own_lo[n]
        cdef int32_t s, p
        cdef int rel
        cdef int64_t gen
        (<uint8_t*>self.e_kind.data)[n] = E_NONE
        at32(&self.e_slice)[n] = -1
        at64(&self.e_device)[n] = -1
        at32(&self.e_selector)[n] = -1
        self.e_kind.n = self.e_slice.n = self.e_device.n = self.e_selector.n = n + 1
        self.pool_stamp_now += 1
        for i in range(n_own + self.shared_slices.shape[0]):
            # Candidates: the node's own slices, then those without a node name.
            s = self.own_slices[self.own_lo[n] + i] if i < n_own else self.shared_slices[i - n_own]
            if not self.live[s]:
                continue
            if not self.partitionable and (
                    self.s_per_device[s] or self.s_cs_ptr[s + 1] > self.s_cs_ptr[s]):
                continue
            rel = self.relevance(n, s)
            if rel < 0:
                push32(&self.node_ptr, self.g.n)
                push32(&self.node_pool_ptr, self.pool_id.n)
                return 0
            if not rel:
                continue
            p = self.s_pool[s]
            gen = self.s_gen[s]
            if self.pool_stamp[p] == self.pool_stamp_now:
                j = self.pool_group[p]
            else:
                j = n_groups
                n_groups += 1
                self.pool_stamp[p], self.pool_group[p] = self.pool_stamp_now, <int32_t>j
                self.grp_pool[j], self.grp_gen[j] = p, gen
                self.grp_first[j] = -1
            if gen > self.grp_gen[j]:  # the pool's newest generation among them
                self.grp_gen[j] = gen
            self.cand[n_cand] = s
            self.cand_next[n_cand] = -1
            if self.grp_first[j] < 0:
                self.grp_first[j] = <int32_t>n_cand
            else:
                self.cand_next[self.grp_last[j]] = <int32_t>n_cand
            self.grp_last[j] = <int32_t>n_cand
            n_cand += 1
        self.np_pool.n = self.np_state.n = self.np_reason.n = self.np_a.n = 0
        self.np_b.n = self.np_binding.n = self.np_slices.n = self.np_kinds.n = 0
        self.np_layout.n = 0
        self.np_slices_ptr.n = 0
        push32(&self.np_slices_ptr, 0)
        for j in range(n_groups):
            self.pool(<int32_t>j, n_cand)
        self.emit(n)
        return 0

    cdef int pool(self, int32_t j, Py_ssize_t n_cand) except -1:
        """Complete, check and record group j's pool (or drop it when obsolete)."""
        cdef int32_t p = self.grp_pool[j], s
        cdef int64_t gen = self.grp_gen[j], expected
        cdef Py_ssize_t i, n_tgt = 0, n_all = 0, n_dev = 0, n_cnt = 0, n_oth = 0
        cdef bint complete_from_cluster = False
        i = self.grp_first[j]
        while i >= 0:  # the group's candidates, in candidate order
            if self.s_gen[self.cand[i]] == gen:
                self.tgt[n_tgt] = self.cand[i]
                n_tgt += 1
            i = self.cand_next[i]
        expected = self.s_count[self.tgt[0]]
        if n_tgt != expected:
            for i in range(self.pool_slice_ptr[p], self.pool_slice_ptr[p + 1]):
                s = self.pool_slices[i]
                if not self.live[s]:
                    continue
                if self.s_gen[s] > gen:
                    return 0  # obsolete: the driver is publishing a newer generation
                if self.s_gen[s] == gen:
                    self.everyone[n_all] = s
                    n_all += 1
            if n_all != expected:
                self.record(p, INCOMPLETE, R_NONE, -1, -1, False, 0, 0, 0, -1)
                return 0
            complete_from_cluster = n_all > n_tgt
        self.sort_slices(n_tgt)
        for i in range(n_tgt):
            s = self.tgt[i]
            if self.partitionable and self.s_cs_ptr[s + 1] > self.s_cs_ptr[s]:
                self.cnt_sl[n_cnt] = s
                n_cnt += 1
            else:
                self.dev_sl[n_dev] = s
                n_dev += 1
        if complete_from_cluster:
            # (the node's own marked once: a pool seen by part on many nodes is not
            # compared slice by slice)
            self.slice_stamp_now += 1
            for i in range(n_tgt):
                self.slice_stamp[self.tgt[i]] = self.slice_stamp_now
            for i in range(n_all):
                s = self.everyone[i]
                if self.slice_stamp[s] == self.slice_stamp_now:
                    continue
                if self.partitionable and self.s_cs_ptr[s + 1] > self.s_cs_ptr[s]:
                    self.cnt_sl[n_cnt] = s
                    n_cnt += 1
                else:
                    self.oth_sl[n_oth] = s
                    n_oth += 1
        return self.check(p, n_dev, n_cnt, n_oth)

    cdef int check(self, int32_t p, Py_ssize_t n_dev, Py_ssize_t n_cnt,
                   Py_ssize_t n_oth) except -1:
        """buildPool's checks, in upstream's order; records the pool."""
        cdef Py_ssize_t i, k, c
        cdef int64_t g
        cdef int32_t s, name, layout = -1, code
        cdef bint binding = False
        self.stamp_now += 1
        for i in range(n_dev):
            s = self.dev_sl[i]
            for g in range(self.s_first[s], self.s_first[s] + self.s_ndev[s]):
                name = self.d_name[g]
                if self.stamp[name] == self.stamp_now:
                    return self.record(p, INVALID, R_DUP_DEVICE, name, -1, False,
                                       n_dev, n_cnt, n_oth, -1)
                self.stamp[name] = self.stamp_now
                if self.d_flags[g] & F_BINDING:
                    binding = True
        if not self.partitionable:
            return self.record(p, USABLE, R_NONE, -1, -1, binding, n_dev, n_cnt, n_oth, -1)
        self.stamp_now += 1
        for i in range(n_cnt):
            s = self.cnt_sl[i]
            for k in range(self.s_cs_ptr[s], self.s_cs_ptr[s + 1]):
                name = self.cs_name[k]
                if self.stamp[name] == self.stamp_now:
                    return self.record(p, INVALID, R_DUP_SET, name, -1, False,
                                       n_dev, n_cnt, n_oth, -1)
                self.stamp[name] = self.stamp_now
        layout = self.layout_of(n_cnt)
        for i in range(n_dev + n_oth):
            s = self.dev_sl[i] if i < n_dev else self.oth_sl[i - n_dev]
            for g in range(self.s_first[s], self.s_first[s] + self.s_ndev[s]):
                if self.d_pattern[g] < 0:
                    continue
                code = self.mapped(layout, self.d_pattern[g])
                if code < 0:
                    k = -code - 1
                    return self.record(p, INVALID, at32(&self.lay.fail_code)[k],
                                       at32(&self.lay.fail_a)[k], at32(&self.lay.fail_b)[k],
                                       False, n_dev, n_cnt, n_oth, -1)
        return self.record(p, USABLE, R_NONE, -1, -1, binding, n_dev, n_cnt, n_oth, layout)

    cdef int record(self, int32_t p, int state, int reason, int32_t a, int32_t b,
                    bint binding, Py_ssize_t n_dev, Py_ssize_t n_cnt, Py_ssize_t n_oth,
                    int32_t layout) except -1:
        """Keep a pool of the node (with its device, counter-set and other slices)."""
        cdef Py_ssize_t i
        push32(&self.np_pool, p)
        push32(&self.np_state, state)
        push32(&self.np_reason, reason)
        push32(&self.np_a, a)
        push32(&self.np_b, b)
        push32(&self.np_binding, binding)
        push32(&self.np_layout, layout)
        if state != INCOMPLETE:
            for i in range(n_dev):
                push32(&self.np_slices, self.dev_sl[i])
                push32(&self.np_kinds, 0)
            for i in range(n_cnt):
                push32(&self.np_slices, self.cnt_sl[i])
                push32(&self.np_kinds, 1)
            for i in range(n_oth):
                push32(&self.np_slices, self.oth_sl[i])
                push32(&self.np_kinds, 2)
        push32(&self.np_slices_ptr, self.np_slices.n)
        return 0

    # ---- counter layouts -----------------------------------------------------------

    cdef int32_t layout_of(self, Py_ssize_t n_cnt) except -2:
        """The layout id of the current pool's counter sets (their appearance sequence)."""
        cdef uint64_t h = FNV_OFFSET
        cdef Py_ssize_t i, k, c, m = 0, start, length
        cdef int32_t s
        for i in range(n_cnt):
            s = self.cnt_sl[i]
            for k in range(self.s_cs_ptr[s], self.s_cs_ptr[s + 1]):
                h = (h ^ <uint64_t>(self.cs_name[k] + 1)) * FNV_PRIME
                m += 1  # the set's own entry (counter -1)
                for c in range(self.cs_c_ptr[k], self.cs_c_ptr[k + 1]):
                    h = (h ^ <uint64_t>(self.c_name[c] + 7)) * FNV_PRIME
                    m += 1
        candidates = self.layout_ids.get(h)
        if candidates is not None:
            for lid in candidates:
                start = at32(&self.lay.seq_ptr)[<int32_t>lid]
                length = at32(&self.lay.seq_ptr)[<int32_t>lid + 1] - start
                if length == m and self.same_sequence(n_cnt, start):
                    return <int32_t>lid
        return self.new_layout(n_cnt, m, h)

    cdef bint same_sequence(self, Py_ssize_t n_cnt, Py_ssize_t start) noexcept:
        cdef Py_ssize_t i, k, c, at = start
        cdef int32_t s
        for i in range(n_cnt):
            s = self.cnt_sl[i]
            for k in range(self.s_cs_ptr[s], self.s_cs_ptr[s + 1]):
                if (at32(&self.lay.seq_set)[at] != self.cs_name[k]
                        or at32(&self.lay.seq_counter)[at] != -1):
                    return False
                at += 1
                for c in range(self.cs_c_ptr[k], self.cs_c_ptr[k + 1]):
                    if (at32(&self.lay.seq_set)[at] != self.cs_name[k]
                            or at32(&self.lay.seq_counter)[at] != self.c_name[c]):
                        return False
                    at += 1
        return True

    cdef int32_t new_layout(self, Py_ssize_t n_cnt, Py_ssize_t m, uint64_t h) except -2:
        cdef Py_ssize_t i, k, c, n_slots, first_seq = self.lay.seq_set.n
        cdef Py_ssize_t first_slot = self.lay.slot_set.n
        cdef int32_t s, lid = <int32_t>self.n_layouts, set_id
        cdef const int32_t *cached
        for i in range(n_cnt):
            s = self.cnt_sl[i]
            for k in range(self.s_cs_ptr[s], self.s_cs_ptr[s + 1]):
                push32(&self.lay.sets, self.cs_name[k])
                push32(&self.lay.seq_set, self.cs_name[k])
                push32(&self.lay.seq_counter, -1)
                for c in range(self.cs_c_ptr[k], self.cs_c_ptr[k + 1]):
                    push32(&self.lay.seq_set, self.cs_name[k])
                    push32(&self.lay.seq_counter, self.c_name[c])
        push32(&self.lay.set_ptr, self.lay.sets.n)
        push32(&self.lay.seq_ptr, self.lay.seq_set.n)
        key = (PyBytes_FromStringAndSize(<char*>(at32(&self.lay.seq_set) + first_seq), 4 * m)
               + PyBytes_FromStringAndSize(<char*>(at32(&self.lay.seq_counter) + first_seq), 4 * m))
        value = self.sorted_slots.get(key)
        if value is None:
            value = self.sort_slots(first_seq, m)
            self.sorted_slots[key] = value
        # value: n_slots, then the slots' (set, counter) pairs, then each entry's slot.
        cached = <const int32_t*>PyBytes_AsString(value)
        n_slots = cached[0]
        for i in range(n_slots):
            push32(&self.lay.slot_set, cached[1 + 2 * i])
            push32(&self.lay.slot_counter, cached[2 + 2 * i])
        for i in range(m):
            push32(&self.lay.slot_of, cached[1 + 2 * n_slots + i])
        push32(&self.lay.n_slots, <int32_t>n_slots)
        push32(&self.lay.slot_ptr, self.lay.slot_set.n)
        for k in range(at32(&self.lay.set_ptr)[lid], at32(&self.lay.set_ptr)[lid + 1]):
            set_id = at32(&self.lay.sets)[k]
            i = first_slot
            while i < first_slot + n_slots and at32(&self.lay.slot_set)[i] != set_id:
                i += 1
            push32(&self.lay.set_slot_lo, <int32_t>i)
            while i < first_slot + n_slots and at32(&self.lay.slot_set)[i] == set_id:
                i += 1
            push32(&self.lay.set_slot_hi, <int32_t>i)
        for i in range(self.n_patterns):
            push32(&self.lay.memo, -(1 << 30))
            push32(&self.lay.table_start, -1)
            push32(&self.lay.table_len, 0)
        self.n_layouts += 1
        self.layout_ids.setdefault(h, []).append(lid)
        return lid

    cdef bytes sort_slots(self, Py_ssize_t first_seq, Py_ssize_t m):
        """An appearance sequence's slots, its distinct (set, counter) pairs sorted by
        their names, and each entry's slot (-1 for a set's own entry), as int32 bytes."""
        cdef Py_ssize_t i
        pairs = [
            (at32(&self.lay.seq_set)[first_seq + i], at32(&self.lay.seq_counter)[first_seq + i])
            for i in range(m)
        ]
        named = sorted([
            ((self.strings[a], self.strings[b]), a, b) for a, b in set(pairs) if b >= 0
        ])
        slots = [(a, b) for _, a, b in named]
        index = {sc: i for i, sc in enumerate(slots)}
        out = array.array("i", [len(slots)])
        for a, b in slots:
            out.append(a)
            out.append(b)
        for a, b in pairs:
            out.append(index[(a, b)] if b >= 0 else -1)
        return out.tobytes()

    cdef int32_t mapped(self, int32_t layout, int32_t pattern) except? -2147483647:
        """Where pattern's entries go in the layout's slots: an offset into ``mapped``
        (one slot offset per entry), or -(k + 1) for failure k (a set or counter the
        pool lacks)."""
        cdef Py_ssize_t key = <Py_ssize_t>layout * self.n_patterns + pattern
        cdef int32_t found = at32(&self.lay.memo)[key]
        if found != -(1 << 30):
            return found
        cdef Py_ssize_t e, i, lo = at32(&self.lay.slot_ptr)[layout]
        cdef Py_ssize_t start = self.lay.mapped.n
        cdef int32_t set_id, counter_id, slot
        cdef bint set_known
        cdef Py_ssize_t sets_lo = at32(&self.lay.set_ptr)[layout]
        cdef Py_ssize_t sets_hi = at32(&self.lay.set_ptr)[layout + 1]
        for e in range(self.p_ptr[pattern], self.p_ptr[pattern + 1]):
            set_id, counter_id = self.p_set[e], self.p_counter[e]
            set_known = False
            for i in range(sets_lo, sets_hi):
                if at32(&self.lay.sets)[i] == set_id:
                    set_known = True
                    break
            slot = -1
            if set_known and counter_id < 0:
                push32(&self.lay.mapped, -1)  # the set itself: no slot
                continue
            if set_known:  # among that set's slots only (i: the set's index)
                for i in range(at32(&self.lay.set_slot_lo)[i], at32(&self.lay.set_slot_hi)[i]):
                    if at32(&self.lay.slot_counter)[i] == counter_id:
                        slot = <int32_t>(i - lo)
                        break
            if slot < 0:
                self.lay.mapped.n = start
                push32(&self.lay.fail_code,
                       R_COUNTER_NOT_FOUND if set_known else R_SET_NOT_FOUND)
                push32(&self.lay.fail_a, counter_id if set_known else set_id)
                push32(&self.lay.fail_b, set_id if set_known else -1)
                found = -<int32_t>self.lay.fail_code.n
                at32(&self.lay.memo)[key] = found
                return found
            push32(&self.lay.mapped, slot)
        found = <int32_t>start
        at32(&self.lay.memo)[key] = found
        # Its entries in the table the search reads (the sets' own entries left out).
        at32(&self.lay.table_start)[key] = <int32_t>self.lay.table_rel.n
        i = start
        for e in range(self.p_ptr[pattern], self.p_ptr[pattern + 1]):
            slot = at32(&self.lay.mapped)[i]
            i += 1
            if slot >= 0:
                push32(&self.lay.table_rel, slot)
                push32(&self.lay.table_quantity, self.p_quantity[e])
                push32(&self.lay.table_layout, layout)
                if self.quantity_whole[self.p_quantity[e]] == C_NOT_WHOLE:
                    self.whole = False
        at32(&self.lay.table_len)[key] = (
            <int32_t>self.lay.table_rel.n - at32(&self.lay.table_start)[key]
        )
        return found

    # ---- order -----------------------------------------------------------------------

    cdef int rank(self) except -1:
        if not self.ranked:
            pool_rank, s_name_rank = self.ranks()
            self.pool_rank, self.s_name_rank = pool_rank, s_name_rank
            if (self.pool_rank.shape[0] < len(self.pool_keys)
                    or self.s_name_rank.shape[0] < self.s_name.shape[0]):
                raise ValueError("draspeed: a pool or a slice without a rank")
            self.ranked = True
        return 0

    cdef int sort_slices(self, Py_ssize_t n) except -1:
        """The pool's slices (``tgt``) by name, equal names in the order given: by
        insertion when few (as strings, Go and Python ordering them alike), else by
        the ranks of their names packed with their places into one key each."""
        cdef Py_ssize_t i, j
        cdef int32_t x
        cdef int32_t *items = self.tgt
        if n <= _FEW:
            for i in range(1, n):
                x = items[i]
                j = i - 1
                while j >= 0 and (<str>self.strings[self.s_name[x]]
                                  < <str>self.strings[self.s_name[items[j]]]):
                    items[j + 1] = items[j]
                    j -= 1
                items[j + 1] = x
            return 0
        self.rank()
        for i in range(n):
            self.sort_keys[i] = (<uint64_t>self.s_name_rank[items[i]] << 32) | <uint64_t>i
            self.sort_items[i] = items[i]
        qsort(self.sort_keys, n, sizeof(uint64_t), _ascending)
        for i in range(n):
            items[i] = self.sort_items[self.sort_keys[i] & 0xFFFFFFFF]
        return 0

    cdef int sort_pools(self, Py_ssize_t n) except -1:
        """The node's pools (``pools_order``): without binding conditions first, each
        group by (driver, name); by insertion when few, else by rank, packed with the
        pool's index into one key each (pools are distinct: so are the keys)."""
        cdef Py_ssize_t i, j
        cdef int32_t x
        cdef int32_t *order = self.pools_order
        cdef const int32_t *pool = at32(&self.np_pool)
        cdef const int32_t *binding = at32(&self.np_binding)
        if n <= _FEW:
            for i in range(n):
                order[i] = <int32_t>i
            for i in range(1, n):
                x = order[i]
                j = i - 1
                while j >= 0 and (
                    binding[x] < binding[order[j]]
                    or (binding[x] == binding[order[j]]
                        and <tuple>self.pool_keys[pool[x]] < <tuple>self.pool_keys[pool[order[j]]])
                ):
                    order[j + 1] = order[j]
                    j -= 1
                order[j + 1] = x
            return 0
        self.rank()
        for i in range(n):
            self.sort_keys[i] = ((<uint64_t>(binding[i] != 0) << 62)
                                 | (<uint64_t>self.pool_rank[pool[i]] << 31) | <uint64_t>i)
        qsort(self.sort_keys, n, sizeof(uint64_t), _ascending)
        for i in range(n):
            order[i] = <int32_t>(self.sort_keys[i] & 0x7FFFFFFF)
        return 0

    # ---- output --------------------------------------------------------------------

    cdef int emit(self, Py_ssize_t n) except -1:
        """Write node n's pools (ordered), positions and slots to the outputs."""
        cdef Py_ssize_t P = self.np_pool.n, i, j, k, e, lo, hi, first_slot, n_slots
        cdef int32_t s, pool_index, layout, q, off, kind
        cdef int64_t g, whole
        self.sort_pools(P)
        for k in range(P):
            i = self.pools_order[k]
            pool_index = <int32_t>self.pool_id.n
            push32(&self.pool_id, at32(&self.np_pool)[i])
            push_u8(&self.pool_state, at32(&self.np_state)[i])
            push_u8(&self.pool_reason, at32(&self.np_reason)[i])
            push32(&self.pool_reason_a, at32(&self.np_a)[i])
            push32(&self.pool_reason_b, at32(&self.np_b)[i])
            push_u8(&self.pool_binding, at32(&self.np_binding)[i])
            lo, hi = at32(&self.np_slices_ptr)[i], at32(&self.np_slices_ptr)[i + 1]
            layout = at32(&self.np_layout)[i]
            push32(&self.pool_layout, layout)
            # The pool's slices: device slices (targeting, sorted), counter-set slices,
            # then slices of other nodes; pool_slice_kind says which (0, 1, 2).
            for j in range(lo, hi):
                push32(&self.pool_slices_out, at32(&self.np_slices)[j])
                push_u8(&self.pool_slice_kind, at32(&self.np_kinds)[j])
            push32(&self.pool_slices_ptr, <int32_t>self.pool_slices_out.n)
            # Members: devices of device slices (targeting), then of other slices.
            for j in range(lo, hi):
                if at32(&self.np_kinds)[j] == 0:
                    s = at32(&self.np_slices)[j]
                    for g in range(self.s_first[s], self.s_first[s] + self.s_ndev[s]):
                        push64(&self.pool_members, g)
            push32(&self.pool_targeting,
                   <int32_t>(self.pool_members.n - at32(&self.pool_member_ptr)[self.pool_member_ptr.n - 1]))
            for j in range(lo, hi):
                if at32(&self.np_kinds)[j] == 2:
                    s = at32(&self.np_slices)[j]
                    for g in range(self.s_first[s], self.s_first[s] + self.s_ndev[s]):
                        push64(&self.pool_members, g)
            first_slot = self.slot_set.n
            if layout >= 0:
                self.slots(i, layout, lo, hi, at32(&self.pool_member_ptr)[self.pool_member_ptr.n - 1])
            push32(&self.pool_member_ptr, <int32_t>self.pool_members.n)
            push32(&self.pool_slot_ptr, <int32_t>self.slot_set.n)
            if at32(&self.np_state)[i] != USABLE:
                continue
            for j in range(lo, hi):
                if at32(&self.np_kinds)[j] != 0:
                    continue
                s = at32(&self.np_slices)[j]
                self.positions(n, s, pool_index, layout)
        push32(&self.node_ptr, <int32_t>self.g.n)
        push32(&self.node_pool_ptr, <int32_t>self.pool_id.n)
        return 0

    cdef int positions(self, Py_ssize_t n, int32_t s, int32_t pool_index,
                       int32_t layout) except -1:
        """Slice s's devices as positions of node n: where each one's consumption lies in
        the shared table (start, length)."""
        cdef int64_t g, first = self.s_first[s], end = first + self.s_ndev[s]
        cdef int32_t pattern, start, length
        cdef Py_ssize_t key, at
        cdef bint per_device = self.s_per_device[s]
        reserve(&self.g, end - first)
        reserve(&self.pos_pool, end - first)
        reserve(&self.pdn, end - first)
        reserve(&self.cons_start, end - first)
        reserve(&self.cons_len, end - first)
        cdef int64_t *out_g = at64(&self.g)
        cdef int32_t *out_pool = at32(&self.pos_pool)
        cdef uint8_t *out_pdn = <uint8_t*>self.pdn.data
        cdef int32_t *out_start = at32(&self.cons_start)
        cdef int32_t *out_len = at32(&self.cons_len)
        at = self.g.n
        for g in range(first, end):
            out_g[at] = g
            out_pool[at] = pool_index
            out_pdn[at] = self.device_verdict(n, g) if per_device else PDN_NONE
            start, length = 0, 0
            pattern = self.d_pattern[g]
            if layout >= 0 and pattern >= 0:
                self.mapped(layout, pattern)  # a usable pool maps every pattern it has
                key = <Py_ssize_t>layout * self.n_patterns + pattern
                start = at32(&self.lay.table_start)[key]
                length = at32(&self.lay.table_len)[key]
            out_start[at] = start
            out_len[at] = length
            at += 1
        self.g.n = self.pos_pool.n = self.pdn.n = self.cons_start.n = self.cons_len.n = at
        return 0

    cdef int slots(self, Py_ssize_t i, int32_t layout, Py_ssize_t lo, Py_ssize_t hi,
                   Py_ssize_t members_from) except -1:
        """Pool i's counter slots: capacity from its counter sets, minus what the
        committed claims' devices among its members consume."""
        cdef Py_ssize_t j, k, c, at, first = self.slot_set.n, e, m
        cdef Py_ssize_t a = at32(&self.lay.slot_ptr)[layout], b = at32(&self.lay.slot_ptr)[layout + 1]
        cdef int32_t s, q, off
        cdef int64_t whole, g
        for j in range(a, b):
            push32(&self.slot_set, at32(&self.lay.slot_set)[j])
            push32(&self.slot_counter, at32(&self.lay.slot_counter)[j])
            push32(&self.slot_quantity, -1)
            push64(&self.slot_available, 0)
        at = at32(&self.lay.seq_ptr)[layout]
        for j in range(lo, hi):
            if at32(&self.np_kinds)[j] != 1:
                continue
            s = at32(&self.np_slices)[j]
            for k in range(self.s_cs_ptr[s], self.s_cs_ptr[s + 1]):
                at += 1  # the set's own entry
                for c in range(self.cs_c_ptr[k], self.cs_c_ptr[k + 1]):
                    off = at32(&self.lay.slot_of)[at]
                    q = self.c_quantity[c]
                    at32(&self.slot_quantity)[first + off] = q
                    whole = self.quantity_whole[q]
                    if whole == C_NOT_WHOLE:
                        self.whole = False
                    at64(&self.slot_available)[first + off] = whole
                    at += 1
        for m in range(members_from, self.pool_members.n):
            g = at64(&self.pool_members)[m]
            if self.d_pattern[g] < 0:
                continue
            if not self.held(g):
                continue
            off = self.mapped(layout, self.d_pattern[g])
            if off < 0:
                continue  # an invalid pool has no slots; a usable one maps every pattern
            for e in range(self.p_ptr[self.d_pattern[g]], self.p_ptr[self.d_pattern[g] + 1]):
                if at32(&self.lay.mapped)[off] < 0:
                    off += 1
                    continue
                whole = self.quantity_whole[self.p_quantity[e]]
                if whole == C_NOT_WHOLE:
                    self.whole = False
                else:
                    at64(&self.slot_available)[first + at32(&self.lay.mapped)[off]] -= whole
                push32(&self.held_slot, <int32_t>(first + at32(&self.lay.mapped)[off]))
                push32(&self.held_quantity, self.p_quantity[e])
                off += 1
        return 0


cdef inline int push_u8(Buf *b, int v) except -1:
    if b.n == b.cap:
        buf_grow(b)
    (<uint8_t*>b.data)[b.n] = <uint8_t>v
    b.n += 1
    return 0


cdef int _ascending(const void *a, const void *b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


def gather(
    dict table not None,
    list strings not None,
    list pool_keys not None,
    const uint8_t[::1] live,
    const int32_t[::1] node_names,
    const int32_t[::1] own_slices,
    const int32_t[::1] own_lo,
    const int32_t[::1] own_hi,
    const int32_t[::1] shared_slices,
    const uint8_t[::1] selector_verdict,
    Py_ssize_t n_selectors,
    tuple holds not None,
    const int64_t[::1] overlay_keys,
    const int32_t[::1] overlay_values,
    const int64_t[::1] quantity_whole,
    bint partitionable,
    dict sorted_slots not None,
):
    """The pools and layout of nodes 0..N-1 (see the module docstring).

    ``table``: the slice table's arrays (``s_*`` per slice, ``d_*`` per device,
    ``cs_*``/``c_*`` counter sets and their counters, ``p_*`` consumption patterns,
    ``pool_slice_ptr``/``pool_slices`` each pool's slices in table order). ``live[s]``:
    slice s is part of this version. Node n's candidate slices are its own,
    ``own_slices[own_lo[n]:own_hi[n]]``, then ``shared_slices`` (those without a node
    name), in upstream's order; ``node_names[n]`` is its name's string id.
    ``selector_verdict[n * n_selectors + k]``: node selector k selects node n (1), not
    (0), or does not parse (2). ``holds``: per device, committed exclusive holders,
    shares and shares with consumed capacity (three int32 arrays), overridden for the
    devices in ``overlay_keys`` (sorted) by ``overlay_values`` (three per key).
    ``quantity_whole[q]``: quantity q in whole units, or ``NOT_WHOLE``.
    """
    cdef _Gather t = _Gather()
    t.s_first, t.s_gen, t.s_count = table["s_first"], table["s_gen"], table["s_count"]
    t.s_ndev, t.s_pool, t.s_node = table["s_ndev"], table["s_pool"], table["s_node"]
    t.s_selector, t.s_name, t.s_cs_ptr = table["s_selector"], table["s_name"], table["s_cs_ptr"]
    t.s_sel, t.s_per_device = table["s_sel"], table["s_per_device"]
    t.cs_name, t.cs_c_ptr = table["cs_name"], table["cs_c_ptr"]
    t.c_name, t.c_quantity = table["c_name"], table["c_quantity"]
    t.d_name, t.d_flags, t.d_pattern = table["d_name"], table["d_flags"], table["d_pattern"]
    t.d_pdn, t.d_pdn_node, t.d_pdn_selector = table["d_pdn"], table["d_pdn_node"], table["d_pdn_selector"]
    t.p_ptr, t.p_set = table["p_ptr"], table["p_set"]
    t.p_counter, t.p_quantity = table["p_counter"], table["p_quantity"]
    t.pool_slice_ptr, t.pool_slices = table["pool_slice_ptr"], table["pool_slices"]
    t.live, t.node_names = live, node_names
    t.own_slices, t.own_lo, t.own_hi, t.shared_slices = own_slices, own_lo, own_hi, shared_slices
    t.holds_exclusive, t.holds_shared, t.holds_capacity = holds
    t.overlay_keys, t.overlay_values = overlay_keys, overlay_values
    t.selector_verdict, t.n_selectors = selector_verdict, n_selectors
    t.quantity_whole = quantity_whole
    t.strings, t.pool_keys = strings, pool_keys
    t.ranks = table["ranks"]
    t.layout_ids = {}
    t.sorted_slots = sorted_slots
    t.n_patterns = t.p_ptr.shape[0] - 1
    t.partitionable = partitionable
    t.whole = True
    cdef Py_ssize_t N = node_names.shape[0], n, max_cand = 1, max_pool = 1, p
    for n in range(N):
        max_cand = max(max_cand, own_hi[n] - own_lo[n] + shared_slices.shape[0])
    for p in range(t.pool_slice_ptr.shape[0] - 1):
        max_pool = max(max_pool, t.pool_slice_ptr[p + 1] - t.pool_slice_ptr[p])
    t.setup(len(strings), max_cand, max_pool, N, len(pool_keys))
    for n in range(N):
        t.node(n)
    return {
        "g": to_array(&t.g, np.int64),
        "pos_pool": to_array(&t.pos_pool, np.int32),
        "pdn": to_array(&t.pdn, np.uint8),
        "cons_start": to_array(&t.cons_start, np.int32),
        "cons_len": to_array(&t.cons_len, np.int32),
        "table_rel": to_array(&t.lay.table_rel, np.int32),
        "table_quantity": to_array(&t.lay.table_quantity, np.int32),
        "table_layout": to_array(&t.lay.table_layout, np.int32),
        "pool_layout": to_array(&t.pool_layout, np.int32),
        "held_slot": to_array(&t.held_slot, np.int32),
        "held_quantity": to_array(&t.held_quantity, np.int32),
        "node_ptr": to_array(&t.node_ptr, np.int32),
        "node_pool_ptr": to_array(&t.node_pool_ptr, np.int32),
        "pool_id": to_array(&t.pool_id, np.int32),
        "pool_state": to_array(&t.pool_state, np.uint8),
        "pool_reason": to_array(&t.pool_reason, np.uint8),
        "pool_reason_a": to_array(&t.pool_reason_a, np.int32),
        "pool_reason_b": to_array(&t.pool_reason_b, np.int32),
        "pool_binding": to_array(&t.pool_binding, np.uint8),
        "pool_slot_ptr": to_array(&t.pool_slot_ptr, np.int32),
        "pool_member_ptr": to_array(&t.pool_member_ptr, np.int32),
        "pool_targeting": to_array(&t.pool_targeting, np.int32),
        "pool_members": to_array(&t.pool_members, np.int64),
        "pool_slices_ptr": to_array(&t.pool_slices_ptr, np.int32),
        "pool_slices": to_array(&t.pool_slices_out, np.int32),
        "pool_slice_kind": to_array(&t.pool_slice_kind, np.uint8),
        "slot_set": to_array(&t.slot_set, np.int32),
        "slot_counter": to_array(&t.slot_counter, np.int32),
        "slot_quantity": to_array(&t.slot_quantity, np.int32),
        "slot_available": to_array(&t.slot_available, np.int64),
        "node_error": to_array(&t.e_kind, np.uint8),
        "node_error_slice": to_array(&t.e_slice, np.int32),
        "node_error_device": to_array(&t.e_device, np.int64),
        "node_error_selector": to_array(&t.e_selector, np.int32),
        "whole": bool(t.whole),
    }
