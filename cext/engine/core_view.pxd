# The contract between the Python side (draspeed.engine.claim_arrays builds it) and the
# compiled search (_core.pyx reads it): one Allocate question over one or many nodes as
# flat arrays. See _core.pyx for the search itself and its Problem,
# which owns the arrays a View points into.
#
# Positions are the searchable devices of every node, node after node (``node_ptr``):
# within a node, pools in upstream's order, slices by name, devices in slice order.
# Requests are flattened into *alternatives*: a request without subrequests is one, a
# firstAvailable request has one per subrequest. An array indexed by (row, position)
# holds rows over all positions of all nodes (stride S): a node's part of a row starts
# at the node's first position. Per-node values (All-mode lists and counts, bounds) are
# node-major. The search of node n sees exactly what a one-node problem made of the
# node's positions would show it (``node_view`` moves every pointer to the node).
#
# Invariants the Problem checks once, so the unchecked loops cannot read out of bounds:
# every CSR pointer array starts at 0, never decreases and ends at its array's length;
# every index (pool, slot, constraint code, All-mode position) is inside its array; a
# plain request owns exactly one alternative, a firstAvailable request at least one.

from libc.stdint cimport int32_t, int64_t, uint8_t

# Outcomes of the search and of its steps (negative values are errors; they unwind).
cdef enum:
    FOUND = 1
    NOT_FOUND = 0
    MAX_SIZE_EXCEEDED = -2   # upstream's errAllocationResultMaxSizeExceeded
    ERR_SELECTOR = -3        # a selector failed on a device the search reached
    ERR_CONSTRAINT = -4      # an All-mode device breaks a constraint
    ERR_DEADLINE = -5
    ERR_OVERFLOW = -6

# Per (alternative, position) selector verdicts, as the caller computes them.
cdef enum:
    SEL_NO = 0
    SEL_YES = 1
    SEL_ERROR = 2

# Per (alternative, position) capacity verdicts.
cdef enum:
    CAP_FAIL = 0      # capacity request cannot be met (or names unknown capacity)
    CAP_OK = 1        # fits, nothing in flight can change that
    CAP_DYNAMIC = 2   # fits unless in-flight shared allocations use the room up


cdef struct View:
    # ---- shape ------------------------------------------------------------------------
    int P                            # positions of the node being searched
    int S                            # stride of (row, position) arrays: positions of all nodes
    int A                            # alternatives
    int R                            # requests, over all claims
    int C                            # claims
    int K                            # capacity entries of shared devices, all nodes
    int N                            # nodes
    int Q                            # constraints, over all claims
    int M                            # results a claim may hold (AllocationResultsMaxSize)
    int slot_base                    # first counter slot of the node being searched
    int cap_base                     # first capacity entry of the node being searched
    bint taints                      # DRADeviceTaints: taint_blocks applies
    bint consumable                  # DRAConsumableCapacity: capacity verdicts apply
    # ---- nodes ------------------------------------------------------------------------
    const int32_t *node_ptr          # [N+1] node n owns positions [ptr[n], ptr[n+1])
    const int32_t *node_pool_ptr     # [N+1] node n owns pools [ptr[n], ptr[n+1])
    # ---- claims and requests ----------------------------------------------------------
    const int32_t *claim_req_ptr     # [C+1] claim c owns requests [ptr[c], ptr[c+1])
    const uint8_t *req_has_subs      # [R] the request came with firstAvailable
    const int32_t *req_alt_ptr       # [R+1] request r owns alternatives [ptr[r], ptr[r+1])
    const uint8_t *alt_all           # [A] allocationMode All
    const uint8_t *alt_admin         # [A] adminAccess
    const int32_t *alt_count         # [N*A] devices needed (All: the length of its list)
    const int32_t *all_ptr           # [N*A+1] All-mode lists, CSR over (node, alternative)
    const int32_t *all_pos           # ... of node-local positions, in upstream's order
    # ---- static verdicts, alternative-major (a * S + p) -------------------------------
    const uint8_t *selectable        # [A*S] SEL_*: class and request selectors, node selection
    const uint8_t *taint_blocks      # [A*S] an untolerated NoSchedule/NoExecute taint
    const uint8_t *capacity          # [A*S] CAP_*: consumable capacity, before anything in flight
    const uint8_t *possible          # [A*S] could be allocated if nothing were in flight
    const int32_t *last_error        # [N*A] node-local position of the last SEL_ERROR, or -1
    # Per request r: bounds over r and the claim's later requests (may_finish_claim).
    const uint8_t *rest_prunable     # [N*R] the bound may cut upstream's search here
    const int32_t *rest_need         # [R] devices they need at least
    const int32_t *rest_max          # [R] devices they may take at most
    const int32_t *rest_requests     # [R] how many requests that is
    const uint8_t *rest_possible     # [R*S] positions any of them could use
    # ---- positions --------------------------------------------------------------------
    const uint8_t *in_use            # [S] committed to other claims (exclusively)
    const uint8_t *allow_multi       # [S] allowMultipleAllocations (feature applied)
    const uint8_t *counters_blocked  # [S] consumes counters while DRAPartitionableDevices is off
    const uint8_t *committed_share   # [S] holds a committed share (or capacity of one)
    const int32_t *pos_pool          # [S] pool of each position (pools of all nodes)
    # Counter consumption: position p consumes entries [start[p], start[p] + len[p]) of a
    # table shared by the positions that consume alike; an entry's slot is relative to
    # the first slot of p's pool.
    const int32_t *cons_start        # [S]
    const int32_t *cons_len          # [S]
    const int32_t *cons_rel          # [E] slot of the entry, relative to its pool's first
    const int64_t *cons_amount       # [E] amount, in the slot's unit
    const int32_t *pool_slot_ptr     # [pools+1] pool q owns counter slots [ptr[q], ptr[q+1])
    const int64_t *slot_available    # [slots] what committed claims left of each counter
    const int32_t *cap_ptr           # [S+1] capacity entries of shared devices, CSR over positions
    const int64_t *cap_room          # [K] capacity minus what committed shares consume
    const int64_t *alt_cap_use       # [A*K] what a share for alternative a takes of entry k
    # ---- constraints (matchAttribute, distinctAttribute) --------------------------------
    const int32_t *claim_con_ptr     # [C+1] claim c owns constraints [ptr[c], ptr[c+1])
    const uint8_t *con_distinct      # [Q] distinctAttribute (else matchAttribute)
    const uint8_t *con_applies       # [Q*A] the constraint applies to alternative a
    const int32_t *con_value_ptr     # [Q*S+1] the attribute's value codes at (q, p), CSR
    const int32_t *con_values        # ... small integer codes: equal values, equal codes
    const uint8_t *con_present       # [Q*S] the device has the attribute at all
    const uint8_t *con_first_needs_value  # [Q] matchAttribute over sets: the first device
    #                                       needs a non-empty set to intersect
