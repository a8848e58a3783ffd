# cython: language_level=3
"""The compiled search: upstream's depth-first allocation over flat integer arrays.

The Python layer (``draspeed.engine.claim_arrays``) turns one ``Allocate`` question, over one
node or many, into a :class:`Problem`: each node's devices as *positions* in
upstream's search order
(pools, then slices, then devices; incomplete and invalid pools left out), the
requests flattened into *alternatives* (a plain request, or one subrequest of a
``firstAvailable`` list), and every per-(alternative, position) fact that does not
change during the search precomputed (selector outcome, taint verdict, capacity
verdict, consumed capacity).  What changes during the search -- devices in flight,
counters consumed, capacity in flight, constraint state, results -- lives in
scratch arrays allocated per call and left clean after each node, so one call
searches node after node and a Problem can be searched again.  The search itself
holds no Python object and runs without the GIL.

The recursion mirrors upstream's ``allocateOne`` call for call, so the work
counter equals upstream's ``NumAllocateOneInvocations``.  Quantities arrive as
int64 in a per-slot unit chosen by the caller so that every term is an exact
integer; every sum is overflow-checked and an overflow is reported, never wrapped.
"""

from time import monotonic

from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from core_view cimport *

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    int CLOCK_MONOTONIC

cdef extern from *:
    """
    static inline int draspeed_add_overflow(long long a, long long b, long long *out) {
        return __builtin_add_overflow(a, b, out);
    }
    """
    bint add_overflow "draspeed_add_overflow"(long long a, long long b, long long *out) nogil

cdef enum:
    DEADLINE_CHECK_EVERY = 64
    MAX_RESULTS_BOUND = 4096

OUTCOME_NAMES = {
    FOUND: "found", NOT_FOUND: "not found", MAX_SIZE_EXCEEDED: "max size exceeded",
    ERR_SELECTOR: "selector error", ERR_CONSTRAINT: "constraint error",
    ERR_DEADLINE: "deadline", ERR_OVERFLOW: "overflow",
}
SEL = {"no": SEL_NO, "yes": SEL_YES, "error": SEL_ERROR}
CAP = {"fail": CAP_FAIL, "ok": CAP_OK, "dynamic": CAP_DYNAMIC}
OUTCOME = {"found": FOUND, "not_found": NOT_FOUND, "max_size": MAX_SIZE_EXCEEDED,
           "selector_error": ERR_SELECTOR, "constraint_error": ERR_CONSTRAINT,
           "deadline": ERR_DEADLINE, "overflow": ERR_OVERFLOW}


# The arrays of a Problem: name, dtype, expected length (an expression over the shape:
# N nodes, C claims, R requests, A alternatives, S positions, K capacity entries,
# Q constraints; None: any), and how a node's view moves it ("position": by the node's
# first position, "node_alt"/"node_req": by node * A / node * R). core_view.pxd says what
# each one holds.
ARRAYS = (
    ("node_ptr", "int32", "N + 1", None),
    ("node_pool_ptr", "int32", "N + 1", None),
    ("claim_req_ptr", "int32", "C + 1", None),
    ("req_has_subs", "uint8", "R", None),
    ("req_alt_ptr", "int32", "R + 1", None),
    ("alt_all", "uint8", "A", None),
    ("alt_admin", "uint8", "A", None),
    ("alt_count", "int32", "N * A", "node_alt"),
    ("all_ptr", "int32", "N * A + 1", "node_alt"),
    ("all_pos", "int32", None, None),
    ("selectable", "uint8", "A * S", "position"),
    ("taint_blocks", "uint8", "A * S", "position"),
    ("capacity", "uint8", "A * S", "position"),
    ("possible", "uint8", "A * S", "position"),
    ("last_error", "int32", "N * A", "node_alt"),
    ("rest_prunable", "uint8", "N * R", "node_req"),
    ("rest_need", "int32", "R", None),
    ("rest_max", "int32", "R", None),
    ("rest_requests", "int32", "R", None),
    ("rest_possible", "uint8", "R * S", "position"),
    ("in_use", "uint8", "S", "position"),
    ("allow_multi", "uint8", "S", "position"),
    ("counters_blocked", "uint8", "S", "position"),
    ("committed_share", "uint8", "S", "position"),
    ("pos_pool", "int32", "S", "position"),
    ("cons_start", "int32", "S", "position"),
    ("cons_len", "int32", "S", "position"),
    ("cons_rel", "int32", None, None),
    ("cons_amount", "int64", "E", None),
    ("pool_slot_ptr", "int32", None, None),
    ("slot_available", "int64", None, None),
    ("cap_ptr", "int32", "S + 1", "position"),
    ("cap_room", "int64", "K", None),
    ("alt_cap_use", "int64", "A * K", None),
    ("claim_con_ptr", "int32", "C + 1", None),
    ("con_distinct", "uint8", "Q", None),
    ("con_applies", "uint8", "Q * A", None),
    ("con_value_ptr", "int32", "Q * S + 1", "position"),
    ("con_values", "int32", None, None),
    ("con_present", "uint8", "Q * S", "position"),
    ("con_first_needs_value", "uint8", "Q", None),
)
# The arrays with an expected length, and one function of the shape that gives every
# such length at once (compiled once: compiling the expressions per Problem cost a fifth
# of a small cluster's first answer, evaluating them one by one 5 us a Problem).
_LENGTHS = tuple((name, length) for name, _, length, _ in ARRAYS if length is not None)
_EXPECTED_LENGTHS = eval(
    "lambda N, C, R, A, S, K, Q, E: ("
    + "".join(f"{length}, " for _, length in _LENGTHS)
    + ")"
)


cdef class Problem:
    """One Allocate question over one or many nodes, as arrays (``ARRAYS``, core_view.pxd).

    ``arrays`` maps every name of ``ARRAYS`` to an array (any integer array-like: it is
    made contiguous in the dtype the table says, once). The shape is read from the
    arrays themselves and checked, with every index the search follows, before any
    search runs.
    """

    cdef public int n_claims, n_positions, n_alts, n_constraints, n_nodes, n_codes
    cdef public int max_results
    cdef public bint taints_enabled, consumable_enabled
    cdef public object exact  # ExactSums when sums may leave int64 (claim_arrays), or None
    cdef public dict arrays  # name -> the array a View field points into (kept alive)
    cdef int max_slots  # counter slots of the node with the most
    cdef int max_caps  # capacity entries of the node with the most
    cdef View v

    def __init__(self, dict arrays not None, *, bint taints_enabled, bint consumable_enabled,
                 int max_results, object exact=None, int n_codes=0):
        import numpy as np
        missing = [name for name, _, _, _ in ARRAYS if name not in arrays]
        if missing:
            raise ValueError(f"Problem: arrays missing: {', '.join(missing)}")
        unknown = sorted(set(arrays) - {name for name, _, _, _ in ARRAYS})
        if unknown:
            raise ValueError(f"Problem: unknown arrays: {', '.join(unknown)}")
        self.arrays = {
            name: np.ascontiguousarray(arrays[name], dtype=dtype)
            for name, dtype, _, _ in ARRAYS
        }
        a = self.arrays
        for name in ("node_ptr", "node_pool_ptr", "claim_req_ptr", "req_alt_ptr", "all_ptr",
                     "pool_slot_ptr", "cap_ptr", "claim_con_ptr", "con_value_ptr"):
            if len(a[name]) == 0:  # every CSR pointer array holds its end
                raise ValueError(f"Problem.{name} is empty")
        self.n_nodes = len(a["node_ptr"]) - 1
        self.n_claims = len(a["claim_req_ptr"]) - 1
        self.n_positions = len(a["in_use"])
        self.n_alts = len(a["alt_all"])
        self.n_constraints = len(a["con_distinct"])
        self.n_codes = n_codes
        self.max_results = max_results
        self.exact = exact
        self.taints_enabled = taints_enabled
        self.consumable_enabled = consumable_enabled
        expected_lengths = _EXPECTED_LENGTHS(
            self.n_nodes, self.n_claims, len(a["req_has_subs"]), self.n_alts,
            self.n_positions, len(a["cap_room"]), self.n_constraints, len(a["cons_rel"]),
        )
        for (name, length), expected in zip(_LENGTHS, expected_lengths):
            if len(a[name]) != expected:
                raise ValueError(f"Problem.{name}: length {len(a[name])}, expected {length} "
                                 f"= {expected}")
        if not 1 <= max_results <= MAX_RESULTS_BOUND:
            # upstream's limit is 32; the bound keeps the scratch (claims x results) sane
            raise ValueError(f"Problem: max_results must be in [1, {MAX_RESULTS_BOUND}]")
        self._check_indices()
        self._point()

    def node_offsets(self):
        """Where each node's positions start, and the end: ``node_ptr`` as a list."""
        return self.arrays["node_ptr"].tolist()

    cdef void _point(self):
        """Fill ``self.v``: the arrays as raw pointers, read by the nogil search."""
        a = self.arrays
        cdef View *v = &self.v
        cdef Py_ssize_t n
        v.P = v.S = self.n_positions
        v.A, v.C, v.N, v.Q = self.n_alts, self.n_claims, self.n_nodes, self.n_constraints
        v.R = len(a["req_has_subs"])
        v.K = len(a["cap_room"])
        v.M = self.max_results
        v.slot_base = v.cap_base = 0
        v.taints, v.consumable = self.taints_enabled, self.consumable_enabled
        v.node_ptr = _i32(a["node_ptr"])
        v.node_pool_ptr = _i32(a["node_pool_ptr"])
        v.claim_req_ptr = _i32(a["claim_req_ptr"])
        v.req_has_subs = _u8(a["req_has_subs"])
        v.req_alt_ptr = _i32(a["req_alt_ptr"])
        v.alt_all = _u8(a["alt_all"])
        v.alt_admin = _u8(a["alt_admin"])
        v.alt_count = _i32(a["alt_count"])
        v.all_ptr = _i32(a["all_ptr"])
        v.all_pos = _i32(a["all_pos"])
        v.selectable = _u8(a["selectable"])
        v.taint_blocks = _u8(a["taint_blocks"])
        v.capacity = _u8(a["capacity"])
        v.possible = _u8(a["possible"])
        v.last_error = _i32(a["last_error"])
        v.rest_prunable = _u8(a["rest_prunable"])
        v.rest_need = _i32(a["rest_need"])
        v.rest_max = _i32(a["rest_max"])
        v.rest_requests = _i32(a["rest_requests"])
        v.rest_possible = _u8(a["rest_possible"])
        v.in_use = _u8(a["in_use"])
        v.allow_multi = _u8(a["allow_multi"])
        v.counters_blocked = _u8(a["counters_blocked"])
        v.committed_share = _u8(a["committed_share"])
        v.pos_pool = _i32(a["pos_pool"])
        v.cons_start = _i32(a["cons_start"])
        v.cons_len = _i32(a["cons_len"])
        v.cons_rel = _i32(a["cons_rel"])
        v.cons_amount = _i64(a["cons_amount"])
        v.pool_slot_ptr = _i32(a["pool_slot_ptr"])
        v.slot_available = _i64(a["slot_available"])
        v.cap_ptr = _i32(a["cap_ptr"])
        v.cap_room = _i64(a["cap_room"])
        v.alt_cap_use = _i64(a["alt_cap_use"])
        v.claim_con_ptr = _i32(a["claim_con_ptr"])
        v.con_distinct = _u8(a["con_distinct"])
        v.con_applies = _u8(a["con_applies"])
        v.con_value_ptr = _i32(a["con_value_ptr"])
        v.con_values = _i32(a["con_values"])
        v.con_present = _u8(a["con_present"])
        v.con_first_needs_value = _u8(a["con_first_needs_value"])
        # The scratch of one node's search is sized to the node with the most slots and
        # capacity entries (a node's own are contiguous: its pools', its positions').
        self.max_slots = self.max_caps = 0
        for n in range(v.N):
            self.max_slots = max(
                self.max_slots,
                v.pool_slot_ptr[v.node_pool_ptr[n + 1]] - v.pool_slot_ptr[v.node_pool_ptr[n]],
            )
            self.max_caps = max(
                self.max_caps, v.cap_ptr[v.node_ptr[n + 1]] - v.cap_ptr[v.node_ptr[n]]
            )

    cdef void _check_indices(self) except *:
        """Every pointer array monotone and covering its array; every index in range
        (the layout's arrays once per set of them, see :func:`_check_layout`)."""
        a = self.arrays
        cdef Py_ssize_t P = self.n_positions, A = self.n_alts, N = self.n_nodes
        cdef Py_ssize_t R = len(a["req_has_subs"])
        cdef const int32_t[::1] node_ptr = a["node_ptr"]
        cdef const int32_t[::1] req_alt_ptr = a["req_alt_ptr"], all_ptr = a["all_ptr"]
        cdef const int32_t[::1] all_pos = a["all_pos"], alt_count = a["alt_count"]
        cdef const uint8_t[::1] alt_all = a["alt_all"], req_has_subs = a["req_has_subs"]
        cdef const int32_t[::1] con_values = a["con_values"]
        cdef Py_ssize_t k, n, r
        covers = (
            ("claim_req_ptr", R), ("req_alt_ptr", A), ("all_ptr", len(a["all_pos"])),
            ("cap_ptr", len(a["cap_room"])), ("claim_con_ptr", self.n_constraints),
            ("con_value_ptr", len(a["con_values"])),
        )
        _check_pointers(a, covers)
        _check_layout(a, P)
        for n in range(N):
            for k in range(all_ptr[n * A], all_ptr[n * A + A]):
                if not 0 <= all_pos[k] < node_ptr[n + 1] - node_ptr[n]:
                    raise ValueError(f"Problem.all_pos[{k}] out of range for node {n}")
            for r in range(A):
                k = n * A + r
                if alt_count[k] < 0:
                    raise ValueError(f"Problem.alt_count[{k}] is negative")
                if alt_all[r] and all_ptr[k + 1] - all_ptr[k] != alt_count[k]:
                    raise ValueError(f"Problem: All-mode alternative {r} of node {n} has a "
                                     "list of another length")
        for k in range(con_values.shape[0]):
            if not 0 <= con_values[k] < self.n_codes:
                raise ValueError(f"Problem.con_values[{k}] out of range")
        for r in range(R):
            owned = req_alt_ptr[r + 1] - req_alt_ptr[r]
            if owned < 1 or (not req_has_subs[r] and owned != 1):
                raise ValueError(f"Problem: request {r} owns {owned} alternatives "
                                 "(a plain request owns one, a prioritized list at least one)")
        if self.exact is not None and not all(
                callable(getattr(self.exact, m, None))
                for m in ("reset", "charge", "release", "fits", "take")):
            raise TypeError("Problem.exact must be None or a draspeed.engine.claim_arrays.ExactSums")

# The layout arrays (positions, pools, counter slots) of the last few Problems that
# were checked: a layout's arrays never change once made, and every claim set asked
# about on it makes a Problem of the same arrays, so they are checked once. Keyed by
# the arrays' identities; the arrays are kept in the value so no identity is reused
# while it is remembered, and only the last few are remembered.
_LAYOUT_ARRAYS = ("node_ptr", "node_pool_ptr", "pool_slot_ptr", "pos_pool", "cons_start",
                  "cons_len", "cons_rel")
_CHECKED_LAYOUTS = {}
_CHECKED_KEPT = 8


cdef void _check_pointers(dict a, tuple covers) except *:
    """Each (int32) pointer array of ``covers`` starts at 0, never decreases and ends
    where its end is (one C loop each: numpy's comparison of the shifted arrays made two
    temporaries per array, 16 us a Problem)."""
    cdef const int32_t[::1] ptr
    cdef Py_ssize_t i, n
    cdef bint bad
    cdef int32_t drops
    for name, end in covers:
        ptr = a[name]
        n = ptr.shape[0]
        bad = n == 0 or ptr[0] != 0 or ptr[n - 1] != end
        if not bad:
            drops = 0
            with nogil:
                # (Without a branch, which the compiler vectorises: stopping at the first
                # decrease, a Problem over 1,000 MIG nodes took 127 us, 63 us so.)
                for i in range(1, n):
                    drops |= ptr[i] < ptr[i - 1]
            bad = drops != 0
        if bad:
            raise ValueError(f"Problem.{name} must start at 0, never decrease and end at {end}")


cdef void _check_layout(dict a, Py_ssize_t P) except *:
    """The layout's arrays: each position's pool, its counter consumption, the pools'
    slots and the nodes' positions and pools."""
    kept = tuple([a[name] for name in _LAYOUT_ARRAYS])
    key = (P, len(a["slot_available"]), *[id(x) for x in kept])
    if key in _CHECKED_LAYOUTS:
        return
    cdef const int32_t[::1] node_ptr = a["node_ptr"], node_pool_ptr = a["node_pool_ptr"]
    cdef const int32_t[::1] pos_pool = a["pos_pool"], pool_slot_ptr = a["pool_slot_ptr"]
    cdef const int32_t[::1] cons_start = a["cons_start"], cons_len = a["cons_len"]
    cdef const int32_t[::1] cons_rel = a["cons_rel"]
    cdef Py_ssize_t n_pools = pool_slot_ptr.shape[0] - 1, E = cons_rel.shape[0]
    cdef Py_ssize_t N = node_ptr.shape[0] - 1
    cdef Py_ssize_t p, k, n, pool, width
    _check_pointers(a, (("node_ptr", P), ("node_pool_ptr", n_pools),
                        ("pool_slot_ptr", len(a["slot_available"]))))
    for p in range(P):
        pool = pos_pool[p]
        if not 0 <= pool < n_pools:
            raise ValueError(f"Problem.pos_pool[{p}] out of range")
        width = pool_slot_ptr[pool + 1] - pool_slot_ptr[pool]
        if cons_len[p] < 0 or cons_start[p] < 0 or cons_start[p] + cons_len[p] > E:
            raise ValueError(f"Problem: position {p}'s consumption is outside cons_rel")
        for k in range(cons_start[p], cons_start[p] + cons_len[p]):
            if not 0 <= cons_rel[k] < width:
                raise ValueError(f"Problem.cons_rel[{k}] is not a slot of position {p}'s pool")
    for n in range(N):
        for p in range(node_ptr[n], node_ptr[n + 1]):
            if not node_pool_ptr[n] <= pos_pool[p] < node_pool_ptr[n + 1]:
                raise ValueError(f"Problem.pos_pool[{p}] is not a pool of node {n}")
    if len(_CHECKED_LAYOUTS) >= _CHECKED_KEPT:
        del _CHECKED_LAYOUTS[next(iter(_CHECKED_LAYOUTS))]
    _CHECKED_LAYOUTS[key] = kept


cdef struct Scratch:
    # in flight
    uint8_t *by_claim        # c * P + p: device in flight for claim c (not multi)
    int32_t *by_any          # p: number of claims with the device in flight
    int32_t *shared_n        # p: in-flight shared allocations (capacity recorded)
    int64_t *consumed        # counter slot: consumed in flight
    int64_t *cap_used        # capacity entry: consumed in flight by shared allocations
    int32_t *code_count      # constraint value code: devices holding it
    int32_t *con_added       # constraint: devices added
    # results, per claim: alternative, position, counters charged
    int32_t *res_alt
    int32_t *res_pos
    uint8_t *res_charged
    int32_t *res_n
    int32_t *chosen_sub      # request: chosen subrequest index
    void *block              # the one allocation all of the above point into
    # bookkeeping
    int64_t work
    int64_t deadline_ns      # CLOCK_MONOTONIC; 0 = none
    PyObject *exact          # draspeed.engine.claim_arrays.ExactSums, or NULL for int64 sums
    int32_t err_alt
    int32_t err_pos


cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef inline bint in_flight_elsewhere(View *v, Scratch *s, int p) noexcept nogil:
    """upstream deviceInUse: committed, or in flight for any claim."""
    return v.in_use[p] or s.by_any[p] > 0


cdef int charge_counters(View *v, Scratch *s, int p) noexcept nogil:
    """Add p's counter consumption; undo and fail if any counter of its pool is exceeded.

    Every counter of the pool is checked, not only those p consumes: a counter that
    committed allocations already overdrew blocks every further consumer (upstream).
    ``s.consumed`` is indexed from the node's first slot.
    """
    cdef int k, slot, pool = v.pos_pool[p]
    cdef int first = v.pool_slot_ptr[pool] - v.slot_base
    cdef int start = v.cons_start[p], end = v.cons_start[p] + v.cons_len[p]
    cdef long long total
    if s.exact != NULL:
        with gil:
            return FOUND if (<object>s.exact).charge(p) else NOT_FOUND
    for k in range(start, end):
        slot = first + v.cons_rel[k]
        if add_overflow(s.consumed[slot], v.cons_amount[k], &total):
            release_counters(v, s, p, k)
            return ERR_OVERFLOW
        s.consumed[slot] = total
    for slot in range(v.pool_slot_ptr[pool], v.pool_slot_ptr[pool + 1]):
        if v.slot_available[slot] < s.consumed[slot - v.slot_base]:
            release_counters(v, s, p, end)
            return NOT_FOUND
    return FOUND


cdef inline void release_counters(View *v, Scratch *s, int p, int upto) noexcept nogil:
    """Give back p's consumption entries before ``upto`` (all of them: the end)."""
    cdef int k, first = v.pool_slot_ptr[v.pos_pool[p]] - v.slot_base
    if s.exact != NULL:
        with gil:
            (<object>s.exact).release(p)
        return
    for k in range(v.cons_start[p], upto):
        s.consumed[first + v.cons_rel[k]] -= v.cons_amount[k]


cdef int capacity_fits(View *v, Scratch *s, int a, int p) noexcept nogil:
    """upstream CmpRequestOverCapacity, with the static part decided by the caller."""
    cdef uint8_t verdict = v.capacity[<Py_ssize_t>a * v.S + p]
    cdef int k
    cdef long long total
    if verdict != CAP_DYNAMIC:
        return FOUND if verdict == CAP_OK else NOT_FOUND
    if s.exact != NULL:
        with gil:
            return FOUND if (<object>s.exact).fits(a, p) else NOT_FOUND
    for k in range(v.cap_ptr[p], v.cap_ptr[p + 1]):
        if add_overflow(s.cap_used[k - v.cap_base], v.alt_cap_use[<Py_ssize_t>a * v.K + k], &total):
            return ERR_OVERFLOW
        if total > v.cap_room[k]:
            return NOT_FOUND
    return FOUND


cdef inline void take_capacity(View *v, Scratch *s, int a, int p, int sign) noexcept nogil:
    """Add (sign 1) or give back (sign -1) what a share of p for a consumes."""
    cdef int k
    if s.exact != NULL:
        with gil:
            (<object>s.exact).take(a, p, sign)
        return
    for k in range(v.cap_ptr[p], v.cap_ptr[p + 1]):
        s.cap_used[k - v.cap_base] += sign * v.alt_cap_use[<Py_ssize_t>a * v.K + k]


cdef inline bint constraint_accepts(View *v, Scratch *s, int q, int p) noexcept nogil:
    """matchAttribute: some value shared by every device so far (sets intersect);
    distinctAttribute: no value shared with any device so far.

    A device without the attribute is rejected. The first device only needs the
    attribute to exist (upstream compares later devices against it), except that
    matchAttribute over sets needs a non-empty set to intersect; after that, a
    device without a usable value (empty list, a list in scalar mode) is rejected.
    """
    cdef Py_ssize_t cell = <Py_ssize_t>q * v.S + p
    cdef int k, lo = v.con_value_ptr[cell], hi = v.con_value_ptr[cell + 1]
    if not v.con_present[cell]:
        return False
    if s.con_added[q] == 0:
        return lo < hi or not v.con_first_needs_value[q]
    if lo == hi:
        return False
    if v.con_distinct[q]:
        for k in range(lo, hi):
            if s.code_count[v.con_values[k]] > 0:
                return False
        return True
    for k in range(lo, hi):
        if s.code_count[v.con_values[k]] == s.con_added[q]:
            return True
    return False


cdef inline void constraint_add(View *v, Scratch *s, int q, int p, int delta) noexcept nogil:
    cdef int k
    for k in range(v.con_value_ptr[<Py_ssize_t>q * v.S + p], v.con_value_ptr[<Py_ssize_t>q * v.S + p + 1]):
        s.code_count[v.con_values[k]] += delta
    s.con_added[q] += delta


cdef void constraints_remove(View *v, Scratch *s, int c, int a, int p, int upto) noexcept nogil:
    cdef int q
    for q in range(v.claim_con_ptr[c], upto):
        if v.con_applies[<Py_ssize_t>q * v.A + a]:
            constraint_add(v, s, q, p, -1)


cdef int allocate_device(View *v, Scratch *s, int c, int a, int p, bint must) noexcept nogil:
    """upstream allocateDevice: availability, counters, taints, constraints, bookkeeping.

    On FOUND the device is recorded as the claim's next result; anything charged on
    the way to a rejection is released again (upstream #140431).
    """
    cdef bint multi = v.allow_multi[p], admin = v.alt_admin[a], charged = False
    cdef int q, rc, k, n
    if not multi and admin and s.by_claim[<Py_ssize_t>c * v.P + p]:
        return NOT_FOUND
    if not admin:
        if in_flight_elsewhere(v, s, p):
            return NOT_FOUND
        # A device somebody holds a share of is not handed out whole (upstream #140798).
        if not multi and v.committed_share[p]:
            return NOT_FOUND
    if v.counters_blocked[p]:
        return NOT_FOUND
    if v.cons_len[p] > 0 and not (multi and (v.committed_share[p] or s.shared_n[p] > 0)):
        rc = charge_counters(v, s, p)
        if rc != FOUND:
            return rc
        charged = True
    if v.taints and v.taint_blocks[<Py_ssize_t>a * v.S + p]:
        if charged:
            release_counters(v, s, p, v.cons_start[p] + v.cons_len[p])
        return NOT_FOUND
    for q in range(v.claim_con_ptr[c], v.claim_con_ptr[c + 1]):
        if not v.con_applies[<Py_ssize_t>q * v.A + a]:
            continue
        if not constraint_accepts(v, s, q, p):
            constraints_remove(v, s, c, a, p, q)
            if charged:
                release_counters(v, s, p, v.cons_start[p] + v.cons_len[p])
            if must:
                s.err_alt, s.err_pos = a, p
                return ERR_CONSTRAINT
            return NOT_FOUND
        constraint_add(v, s, q, p, 1)
    if v.consumable:
        rc = capacity_fits(v, s, a, p)
        if rc != FOUND:
            constraints_remove(v, s, c, a, p, v.claim_con_ptr[c + 1])
            if charged:
                release_counters(v, s, p, v.cons_start[p] + v.cons_len[p])
            return rc
    if not multi:
        s.by_claim[<Py_ssize_t>c * v.P + p] = 1
        s.by_any[p] += 1
    elif v.consumable:
        take_capacity(v, s, a, p, 1)
        s.shared_n[p] += 1
    n = s.res_n[c]
    s.res_alt[c * v.M + n] = a
    s.res_pos[c * v.M + n] = p
    s.res_charged[c * v.M + n] = charged
    s.res_n[c] = n + 1
    return FOUND


cdef void deallocate_last(View *v, Scratch *s, int c) noexcept nogil:
    """Undo the claim's newest result (upstream's rollback closure)."""
    cdef int n = s.res_n[c] - 1
    cdef int a = s.res_alt[c * v.M + n], p = s.res_pos[c * v.M + n], k
    constraints_remove(v, s, c, a, p, v.claim_con_ptr[c + 1])
    if not v.allow_multi[p]:
        s.by_claim[<Py_ssize_t>c * v.P + p] = 0
        s.by_any[p] -= 1
    elif v.consumable:
        take_capacity(v, s, a, p, -1)
        s.shared_n[p] -= 1
    if s.res_charged[c * v.M + n]:
        release_counters(v, s, p, v.cons_start[p] + v.cons_len[p])
    s.res_n[c] = n


cdef bint may_complete(View *v, Scratch *s, int c, int a, int start, int need) noexcept nogil:
    """Whether positions from ``start`` on could still supply ``need`` devices for ``a``.

    False proves that upstream's loop over them finds nothing and raises nothing
    (no selector error lies ahead), so skipping it cannot change the first solution;
    it only saves the exhaustive search of upstream issue #131730. Devices in flight
    stay in flight below this point, so they are rightly discounted.
    """
    cdef int p, found = 0
    cdef Py_ssize_t row = <Py_ssize_t>a * v.S
    if v.last_error[a] >= start:
        return True
    for p in range(start, v.P):
        if not v.possible[row + p]:
            continue
        if v.alt_admin[a]:
            if s.by_claim[<Py_ssize_t>c * v.P + p]:
                continue
        elif in_flight_elsewhere(v, s, p):
            continue
        found += 1
        if found >= need:
            return True
    return False


cdef bint may_finish_claim(View *v, Scratch *s, int c, int R) noexcept nogil:
    """Whether the devices left could cover request R and the claim's later requests.

    Only asked where the answer cannot change upstream's: every alternative of those
    requests is ExactCount without admin access and without selector errors, and the
    claim stays within the size limit whatever is chosen, so upstream's subtree can
    only end in "not found". A shareable device may serve each remaining request once.
    """
    cdef int p, found = 0, need = v.rest_need[R]
    cdef Py_ssize_t row = <Py_ssize_t>R * v.S
    for p in range(v.P):
        if not v.rest_possible[row + p]:
            continue
        if v.allow_multi[p]:
            found += v.rest_requests[R]
        elif not in_flight_elsewhere(v, s, p):
            found += 1
        if found >= need:
            return True
    return False


cdef int allocate_one(View *v, Scratch *s, int c, int r, int sub, int d,
                      bint in_sub, int start) noexcept nogil:
    """upstream allocateOne; (c, r, sub, d) = claim, request in claim, subrequest, device."""
    cdef int R, a, p, rc, k
    cdef bint all_exceeded
    s.work += 1
    if s.deadline_ns and s.work % DEADLINE_CHECK_EVERY == 0 and now_ns() > s.deadline_ns:
        return ERR_DEADLINE
    if c >= v.C:
        return FOUND
    R = v.claim_req_ptr[c] + r
    if R >= v.claim_req_ptr[c + 1]:
        rc = allocate_one(v, s, c + 1, 0, 0, 0, False, 0)
        # Not fatal: a different allocation of this claim may leave room later.
        return NOT_FOUND if rc == MAX_SIZE_EXCEEDED else rc
    if (d == 0 and not in_sub and v.rest_prunable[R]
            and s.res_n[c] + v.rest_max[R] <= v.M
            and not may_finish_claim(v, s, c, R)):
        return NOT_FOUND
    if not in_sub and v.req_has_subs[R]:
        all_exceeded = True
        for k in range(v.req_alt_ptr[R + 1] - v.req_alt_ptr[R]):
            rc = allocate_one(v, s, c, r, k, 0, True, 0)
            if rc == MAX_SIZE_EXCEEDED:
                continue
            all_exceeded = False
            if rc < 0:
                return rc
            if rc == FOUND:
                s.chosen_sub[R] = k
                return FOUND
        return MAX_SIZE_EXCEEDED if all_exceeded else NOT_FOUND
    a = v.req_alt_ptr[R] + sub
    if v.alt_all[a] and v.alt_count[a] == 0:
        return NOT_FOUND
    if d >= v.alt_count[a]:
        return allocate_one(v, s, c, r + 1, 0, 0, False, 0)
    if s.res_n[c] + v.alt_count[a] - d > v.M:
        return MAX_SIZE_EXCEEDED
    if v.alt_all[a]:
        p = v.all_pos[v.all_ptr[a] + d]
        rc = allocate_device(v, s, c, a, p, True)
        if rc != FOUND:
            return rc
        rc = allocate_one(v, s, c, r, sub, d + 1, in_sub, 0)
        if rc != FOUND:
            deallocate_last(v, s, c)
        return rc
    if v.alt_count[a] - d > 1 and not may_complete(v, s, c, a, start, v.alt_count[a] - d):
        return NOT_FOUND
    for p in range(start, v.P):
        if v.alt_admin[a]:
            if s.by_claim[<Py_ssize_t>c * v.P + p]:
                continue
        elif in_flight_elsewhere(v, s, p):
            continue
        k = v.selectable[<Py_ssize_t>a * v.S + p]
        if k == SEL_ERROR:
            s.err_alt, s.err_pos = a, p
            return ERR_SELECTOR
        if k != SEL_YES:
            continue
        if v.consumable:
            rc = capacity_fits(v, s, a, p)
            if rc < 0:
                return rc
            if rc != FOUND:
                continue
        rc = allocate_device(v, s, c, a, p, False)
        if rc < 0:
            return rc
        if rc != FOUND:
            continue
        rc = allocate_one(v, s, c, r, sub, d + 1, in_sub, p + 1)
        if rc == FOUND:
            return FOUND
        deallocate_last(v, s, c)
        if rc < 0:
            return rc
    return NOT_FOUND


cdef inline Py_ssize_t _carve(Py_ssize_t at, Py_ssize_t n, size_t size) noexcept nogil:
    """The offset after a part of n items of ``size`` bytes, kept 8-byte aligned."""
    return at + ((max(n, 1) * <Py_ssize_t>size + 7) & ~(<Py_ssize_t>7))


cdef void _alloc_scratch(Scratch *s, Problem pb, Py_ssize_t max_p) except *:
    """Zeroed scratch for searching nodes of up to ``max_p`` positions (a search leaves
    it zeroed again, so one allocation serves node after node). Counter slots and
    capacity entries are the node's own, indexed from its first: the scratch is the
    size of the largest node, not of the cluster. One block for all parts: a one-node
    call pays one calloc, not twelve."""
    cdef Py_ssize_t C = pb.n_claims, R = len(pb.arrays["req_has_subs"]), M = pb.max_results
    cdef Py_ssize_t at[13]
    at[0] = 0
    at[1] = _carve(at[0], C * max_p, sizeof(uint8_t))
    at[2] = _carve(at[1], max_p, sizeof(int32_t))
    at[3] = _carve(at[2], max_p, sizeof(int32_t))
    at[4] = _carve(at[3], pb.max_slots, sizeof(int64_t))
    at[5] = _carve(at[4], pb.max_caps, sizeof(int64_t))
    at[6] = _carve(at[5], pb.n_codes, sizeof(int32_t))
    at[7] = _carve(at[6], pb.n_constraints, sizeof(int32_t))
    at[8] = _carve(at[7], C * M, sizeof(int32_t))
    at[9] = _carve(at[8], C * M, sizeof(int32_t))
    at[10] = _carve(at[9], C * M, sizeof(uint8_t))
    at[11] = _carve(at[10], C, sizeof(int32_t))
    at[12] = _carve(at[11], R, sizeof(int32_t))
    cdef char *block = <char*>_zeroed(at[12], 1)
    s.block = block
    s.by_claim = <uint8_t*>(block + at[0])
    s.by_any = <int32_t*>(block + at[1])
    s.shared_n = <int32_t*>(block + at[2])
    s.consumed = <int64_t*>(block + at[3])
    s.cap_used = <int64_t*>(block + at[4])
    s.code_count = <int32_t*>(block + at[5])
    s.con_added = <int32_t*>(block + at[6])
    s.res_alt = <int32_t*>(block + at[7])
    s.res_pos = <int32_t*>(block + at[8])
    s.res_charged = <uint8_t*>(block + at[9])
    s.res_n = <int32_t*>(block + at[10])
    s.chosen_sub = <int32_t*>(block + at[11])


cdef void _free_scratch(Scratch *s) noexcept:
    free(s.block)
    s.block = NULL


cdef void node_view(const View *base, View *v, int n) noexcept nogil:
    """``v``: what the search of node n sees -- every pointer moved to the node's block,
    and its first counter slot and capacity entry as the scratch's origin."""
    cdef Py_ssize_t off = base.node_ptr[n]
    v[0] = base[0]
    v.P = base.node_ptr[n + 1] - base.node_ptr[n]
    v.slot_base = base.pool_slot_ptr[base.node_pool_ptr[n]]
    v.cap_base = base.cap_ptr[off]
    v.selectable = base.selectable + off
    v.taint_blocks = base.taint_blocks + off
    v.capacity = base.capacity + off
    v.possible = base.possible + off
    v.rest_possible = base.rest_possible + off
    v.in_use = base.in_use + off
    v.allow_multi = base.allow_multi + off
    v.counters_blocked = base.counters_blocked + off
    v.committed_share = base.committed_share + off
    v.pos_pool = base.pos_pool + off
    v.cons_start = base.cons_start + off
    v.cons_len = base.cons_len + off
    v.cap_ptr = base.cap_ptr + off
    v.con_present = base.con_present + off
    v.con_value_ptr = base.con_value_ptr + off
    v.last_error = base.last_error + <Py_ssize_t>n * base.A
    v.alt_count = base.alt_count + <Py_ssize_t>n * base.A
    v.all_ptr = base.all_ptr + <Py_ssize_t>n * base.A
    v.rest_prunable = base.rest_prunable + <Py_ssize_t>n * base.R


cdef void unwind(View *v, Scratch *s) noexcept nogil:
    """Give back everything a found solution holds, so the scratch is clean again."""
    cdef int c
    for c in range(v.C - 1, -1, -1):
        while s.res_n[c] > 0:
            deallocate_last(v, s, c)


def search_nodes(Problem pb not None, double deadline=0.0, nodes=None, state=None):
    """Search every node of the problem (or the node indices in ``nodes``), one after
    the other, without the GIL and without returning to Python between nodes.

    Returns a dict of arrays over the searched nodes (in the order searched):
    ``outcome``, ``work``, ``err_alt``, ``err_pos`` (one value per node), ``res_n``
    (node-major, one per claim), ``res_alt`` / ``res_pos`` (node, claim, slot: ``max_results``
    slots per claim, alternative and node-local position of each pick in upstream's order),
    ``chosen_sub`` (node, request). Once ``deadline`` (a ``time.monotonic()`` value)
    passes, the nodes not yet searched report the deadline outcome without a search.
    ``state``: ``(in_use, committed_share, slot_available)`` of a later cluster version
    to search with instead of the Problem's own (same positions and slots).
    """
    cdef View base = pb.v
    cdef View v
    cdef Scratch s
    cdef int rc, c, i, n, k, max_p = 0
    cdef int64_t deadline_ns = 0
    cdef Py_ssize_t C = base.C, R = base.R
    import numpy as np
    _use_state(pb, &base, state)
    if nodes is None:
        order = np.arange(base.N, dtype=np.int32)
    else:
        order = np.ascontiguousarray(nodes, dtype=np.int32)
    cdef const int32_t[::1] order_v = order
    cdef Py_ssize_t M = order_v.shape[0], j
    for j in range(M):
        n = order_v[j]
        if not 0 <= n < base.N:
            raise ValueError(f"node index {n} out of range")
        max_p = max(max_p, base.node_ptr[n + 1] - base.node_ptr[n])
    outcome = np.zeros(M, dtype=np.int32)
    work = np.zeros(M, dtype=np.int64)
    err_alt = np.full(M, -1, dtype=np.int32)
    err_pos = np.full(M, -1, dtype=np.int32)
    res_n = np.zeros(M * C, dtype=np.int32)
    res_alt = np.zeros(M * C * base.M, dtype=np.int32)
    res_pos = np.zeros(M * C * base.M, dtype=np.int32)
    chosen = np.full(M * R, -1, dtype=np.int32)
    cdef int32_t[::1] o_outcome = outcome, o_err_alt = err_alt, o_err_pos = err_pos
    cdef int64_t[::1] o_work = work
    cdef int32_t[::1] o_res_n = res_n, o_res_alt = res_alt, o_res_pos = res_pos
    cdef int32_t[::1] o_chosen = chosen
    found = {"outcome": outcome, "work": work, "err_alt": err_alt, "err_pos": err_pos,
             "res_n": res_n, "res_alt": res_alt, "res_pos": res_pos, "chosen_sub": chosen}
    if M == 0:
        return found
    cdef int32_t *p_outcome = &o_outcome[0]
    cdef int32_t *p_err_alt = &o_err_alt[0]
    cdef int32_t *p_err_pos = &o_err_pos[0]
    cdef int64_t *p_work = &o_work[0]
    cdef int32_t *p_res_n = _w32(o_res_n)
    cdef int32_t *p_res_alt = _w32(o_res_alt)
    cdef int32_t *p_res_pos = _w32(o_res_pos)
    cdef int32_t *p_chosen = _w32(o_chosen)
    memset(&s, 0, sizeof(Scratch))
    exact = pb.exact
    if deadline > 0:
        deadline_ns = now_ns() + <int64_t>((deadline - monotonic()) * 1e9)
        if deadline_ns <= 0:
            deadline_ns = 1
    try:
        _alloc_scratch(&s, pb, max_p)
        if exact is not None:
            # Exact sums call back into Python: node by node, with the GIL between them.
            s.exact = <PyObject*>exact
            for j in range(M):
                exact.reset(base.node_ptr[order_v[j]])
                _search_one(&base, &s, order_v[j], j, deadline_ns, C, R,
                            p_outcome, p_work, p_err_alt, p_err_pos, p_res_n, p_res_alt,
                            p_res_pos, p_chosen)
        else:
            with nogil:
                for j in range(M):
                    _search_one(&base, &s, order_v[j], j, deadline_ns, C, R,
                                p_outcome, p_work, p_err_alt, p_err_pos, p_res_n,
                                p_res_alt, p_res_pos, p_chosen)
        return found
    finally:
        _free_scratch(&s)


cdef void _search_one(const View *base, Scratch *s, int n, Py_ssize_t j, int64_t deadline_ns,
                      Py_ssize_t C, Py_ssize_t R,
                      int32_t *o_outcome, int64_t *o_work, int32_t *o_err_alt,
                      int32_t *o_err_pos, int32_t *o_res_n, int32_t *o_res_alt,
                      int32_t *o_res_pos, int32_t *o_chosen) noexcept nogil:
    """Search node n into output row j; leaves the scratch as clean as it found it."""
    cdef View v
    cdef int rc, c, i
    cdef Py_ssize_t out
    node_view(base, &v, n)
    s.work = 0
    s.err_alt = -1
    s.err_pos = -1
    s.deadline_ns = deadline_ns
    for i in range(R):
        s.chosen_sub[i] = -1
    if deadline_ns and now_ns() > deadline_ns:
        rc = ERR_DEADLINE
    else:
        rc = allocate_one(&v, s, 0, 0, 0, 0, False, 0)
    o_outcome[j] = rc
    o_work[j] = s.work
    o_err_alt[j] = s.err_alt
    o_err_pos[j] = s.err_pos
    if rc == FOUND:
        for c in range(C):
            o_res_n[j * C + c] = s.res_n[c]
            out = (j * C + c) * base.M
            for i in range(s.res_n[c]):
                o_res_alt[out + i] = s.res_alt[c * base.M + i]
                o_res_pos[out + i] = s.res_pos[c * base.M + i]
        for i in range(R):
            o_chosen[j * R + i] = s.chosen_sub[i]
        unwind(&v, s)


cdef void _use_state(Problem pb, View *v, object state) except *:
    """Point the view at a newer committed state (in use, shares, counters left).

    A Problem's claim arrays do not depend on what is committed, so a later version
    of the cluster with other allocations searches the same Problem with its own
    state; the state must describe the same positions and counter slots.
    """
    cdef const uint8_t[::1] in_use, committed
    cdef const int64_t[::1] available
    if state is None:
        return
    if pb.exact is not None:
        raise ValueError("state: a Problem with exact sums carries its own counters")
    in_use, committed, available = state
    if in_use.shape[0] != pb.n_positions or committed.shape[0] != pb.n_positions:
        raise ValueError("state: in_use/committed_share must have one entry per position")
    if available.shape[0] != len(pb.arrays["slot_available"]):
        raise ValueError("state: slot_available must have one entry per counter slot")
    v.in_use = _u8(in_use)
    v.committed_share = _u8(committed)
    v.slot_available = _i64(available)


def search_node(Problem pb not None, int n, double deadline=0.0, state=None):
    """Search node n alone. ``deadline`` is a ``time.monotonic()`` value (0: none).

    Returns ``(outcome, work, results, chosen_sub, err_alt, err_pos)`` where
    ``results[c]`` is the tuple of ``(alternative, position)`` picked for claim c in
    upstream's result order (node-local positions), and ``chosen_sub[r]`` the
    subrequest index taken for a ``firstAvailable`` request r.  The answer of
    ``search_nodes`` for that node, without building arrays for many nodes.
    """
    cdef View base = pb.v
    cdef View v
    cdef Scratch s
    cdef int rc, c, i, P
    cdef Py_ssize_t C = base.C, R = base.R
    if not 0 <= n < base.N:
        raise ValueError(f"node index {n} out of range")
    _use_state(pb, &base, state)
    node_view(&base, &v, n)
    P = v.P
    memset(&s, 0, sizeof(Scratch))
    s.err_alt = -1
    s.err_pos = -1
    exact = pb.exact
    if exact is not None:
        exact.reset(base.node_ptr[n])
        s.exact = <PyObject*>exact
    if deadline > 0:
        s.deadline_ns = now_ns() + <int64_t>((deadline - monotonic()) * 1e9)
        if s.deadline_ns <= 0:
            s.deadline_ns = 1
    try:
        _alloc_scratch(&s, pb, P)
        for i in range(R):
            s.chosen_sub[i] = -1
        if exact is not None:
            rc = allocate_one(&v, &s, 0, 0, 0, 0, False, 0)
        else:
            with nogil:
                rc = allocate_one(&v, &s, 0, 0, 0, 0, False, 0)
        # Tuples: the caller keys its result cache on them as they are.
        results = ()
        if rc == FOUND:
            results = tuple([
                tuple([(s.res_alt[c * base.M + i], s.res_pos[c * base.M + i])
                       for i in range(s.res_n[c])])
                for c in range(C)
            ])
        chosen = tuple([s.chosen_sub[i] for i in range(R)])
        return rc, s.work, results, chosen, s.err_alt, s.err_pos
    finally:
        _free_scratch(&s)


cdef bint _monotonic(const int32_t[::1] ptr):
    cdef Py_ssize_t i
    if ptr.shape[0] == 0 or ptr[0] != 0:
        return False
    for i in range(1, ptr.shape[0]):
        if ptr[i] < ptr[i - 1]:
            return False
    return True


def _one_node(in_use):
    """node_ptr of a problem with a single node: all positions."""
    import numpy as np
    return np.array([0, len(in_use)], dtype=np.int32)


cdef void *_zeroed(Py_ssize_t n, size_t size) except NULL:
    """calloc that never returns NULL for n == 0 and raises MemoryError on failure."""
    cdef void *ptr = calloc(n if n > 0 else 1, size)
    if ptr == NULL:
        raise MemoryError()
    return ptr


# Empty memoryviews have no element 0; a dummy keeps pointers valid (never read).
cdef int32_t _NO_I32 = 0
cdef int64_t _NO_I64 = 0
cdef uint8_t _NO_U8 = 0


cdef int32_t _SINK_I32 = 0


cdef inline int32_t *_w32(int32_t[::1] m):
    """A writable pointer; an empty output (no claims or requests) is never written."""
    return &m[0] if m.shape[0] else &_SINK_I32


cdef inline const int32_t *_i32(const int32_t[::1] m):
    return &m[0] if m.shape[0] else &_NO_I32


cdef inline const int64_t *_i64(const int64_t[::1] m):
    return &m[0] if m.shape[0] else &_NO_I64


cdef inline const uint8_t *_u8(const uint8_t[::1] m):
    return &m[0] if m.shape[0] else &_NO_U8
