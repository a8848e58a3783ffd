"""One pod's claims turned into arrays over a :class:`~draspeed.engine.layout.Layout`.

The pre-flight runs here, in upstream's order, and yields upstream's errors:
feature checks per request, request validation (selectors, admin access, class),
All-mode device lists, the claim size limit, constraint types.  It does not depend
on the node unless a request asks for All devices; then it runs once per node.

Then every fact the search needs that cannot change while it runs is decided once
per (alternative, position) for all nodes of the layout together, with numpy over
whole rows: the selector verdict (with the message of a selector error, raised only
if the search reaches that device, as upstream does), taints, static capacity
verdicts, the bounds the core prunes with.  Constraint attribute values become small
integer codes.  The result is one ``_core.Problem`` whose node blocks the core
searches one after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api._model_tree import Template, split_template
from draspeed.api._model_tree import signature as tree_signature
from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import (
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    ResourceClaim,
)
from draspeed.collector import collector_paused
from draspeed.engine import _core, beyond
from draspeed.engine.layout import INCOMPLETE, INVALID, PDN_ERROR, PDN_NO, Layout, unit_of
from draspeed.engine.selector_failures import SelectorFailure, SelectorFailures
from draspeed.engine.store import ERROR, FALSE, UNKNOWN, SelectorResults
from draspeed.errors import AllocationError, AllocationTimeout
from draspeed.quantity_sum import QuantitySum
from draspeed.rules import texts
from draspeed.rules.capacity import UnknownCapacityError, consumed_capacity, request_fits
from draspeed.rules.preflight import ClaimPlan, preflight
from draspeed.rules.preflight import RequestSpec as Alternative
from draspeed.rules.texts import ClaimAllocationError, ClaimText
from draspeed.rules.tolerations import taint_blocks

if TYPE_CHECKING:
    from draspeed.engine.analogy import Recipe
    from draspeed.quantity import Quantity

MAX_RESULTS = ALLOCATION_RESULTS_MAX_SIZE
SEL_NO, SEL_YES, SEL_ERROR = _core.SEL["no"], _core.SEL["yes"], _core.SEL["error"]
CAP_FAIL, CAP_OK, CAP_DYNAMIC = _core.CAP["fail"], _core.CAP["ok"], _core.CAP["dynamic"]
_INT64_LIMIT = 2**62  # headroom: sums of two in-range terms cannot wrap before the check
_INT32_MAX = 2**31 - 1  # the largest count or bound the core's int32 arrays hold
_CLAIM_SETS_PER_LAYOUT = 32  # distinct claim sets remembered per layout
_PREFIX_ROWS_PER_LAYOUT = 64  # selector rows after a run of selectors, per layout

# The runtime error of a device whose verdict the search must first compute.
DEFERRED = "\x00deferred"


@dataclass(slots=True)
class Plan:
    """The pre-flight's outcome for one node (or for all, without All-mode requests)."""

    alternatives: list[Alternative]
    request_alts: list[list[int]]  # global request index -> its alternatives
    request_has_subs: list[bool]
    claim_requests: list[list[int]]  # claim -> global request indices
    all_positions: list[list[int]]  # per alternative: its All-mode list (node-local)
    rows: list[int]  # per alternative: its selector verdict row

    @classmethod
    def of(
        cls, claims: list[ClaimPlan], rows: dict[int, int], listed: dict[int, list[int]]
    ) -> Plan:
        """The claims' plans flattened: alternatives in order, requests numbered across
        claims (``rows`` and ``listed``: by ``id`` of each alternative)."""
        plan = cls([], [], [], [], [], [])
        for claim in claims:
            requests_of_claim = []
            for alternatives, has_subs in zip(claim.requests, claim.has_subrequests, strict=True):
                requests_of_claim.append(len(plan.request_alts))
                plan.request_alts.append(
                    list(range(len(plan.alternatives), len(plan.alternatives) + len(alternatives)))
                )
                plan.request_has_subs.append(has_subs)
                for alt in alternatives:
                    plan.alternatives.append(alt)
                    plan.rows.append(rows[id(alt)])
                    plan.all_positions.append(listed.get(id(alt), []))
            plan.claim_requests.append(requests_of_claim)
        return plan


def claims_signature(claims: list[ResourceClaim]) -> bytes:
    """A key for a claim set: the specs, in order (what a claim set's arrays depend on).

    Names are left out, so every pod made from the same templates shares one entry;
    messages about a claim are kept as templates (:class:`~draspeed.rules.texts.ClaimText`)
    and shown by :func:`render` with the caller's claims.
    """
    specs = [c.spec for c in claims]
    # Each way of writing the key has its own first byte, so the two never collide.
    try:
        return b"\x01" + tree_signature(specs)
    except (TypeError, ValueError):
        # A value of a type the walk does not know (opaque parameters given as other
        # Python objects) or a string UTF-8 cannot hold: the model's repr is slower but
        # total and just as deterministic.
        return b"\x02" + repr(specs).encode()


def render(message: str | ClaimText, claims: list[ResourceClaim]) -> str:
    """A stored message, about the caller's claims."""
    return message if isinstance(message, str) else message.render(claims)


def claim_arrays(
    layout: Layout,
    claims: list[ResourceClaim],
    deadline: float | None = None,
    key: bytes | None = None,
) -> ClaimArrays:
    """The arrays for ``claims`` over ``layout``, built once per claim set and remembered.

    The key holds every claim's spec, so a hit is the same question up to names;
    results and messages are made from the caller's claim objects. ``key``: the
    :func:`claims_signature` of ``claims``, if the caller made it already.
    """
    if key is None:
        key = claims_signature(claims)
    found = layout.claim_sets.get(key)  # a dict read is atomic: no lock for a hit
    if found is not None:
        return found
    if layout.beyond is not None:  # (the allocator asks the reference engine instead)
        raise layout.beyond
    with layout._lock, collector_paused():
        found = layout.claim_sets.get(key)
        if found is None:
            # A deadline that passes while selectors compile or evaluate raises
            # AllocationTimeout from here, and nothing half-built is remembered.
            found = ClaimArrays(layout, claims, deadline)
            if len(layout.claim_sets) >= _CLAIM_SETS_PER_LAYOUT:
                layout.claim_sets.pop(next(iter(layout.claim_sets)))
            layout.claim_sets[key] = found
        return found


def _prefix_keys(binding: bool, sources: list[tuple[bool, int, Any]]) -> list[tuple[Any, ...]]:
    """The key of each run of ``sources`` from the first (the empty run first): what a
    selector row after that run depends on besides the layout."""
    keys: list[tuple[Any, ...]] = [(binding,)]
    for from_class, _, selector in sources:
        text = None if selector.cel is None else selector.cel.expression
        keys.append((*keys[-1], from_class, text))
    return keys


def _remember(
    prefixes: dict[tuple[Any, ...], tuple[np.ndarray, SelectorFailures]],
    key: tuple[Any, ...],
    row: np.ndarray,
    failures: SelectorFailures,
) -> None:
    """Keep a copy of a selector row after a run of selectors (the oldest forgotten
    past a bound; under the layout's lock, as claim arrays are built)."""
    if len(prefixes) >= _PREFIX_ROWS_PER_LAYOUT:
        prefixes.pop(next(iter(prefixes)))
    prefixes[key] = (row.copy(), failures.copy())


def forget_claim_arrays(layout: Layout, key: bytes, arrays: ClaimArrays | None) -> None:
    """Drop the remembered arrays of a claim set (``arrays``: only if still those), to
    build them again: a deferred selector verdict became known."""
    with layout._lock:
        found = layout.claim_sets.get(key)
        if found is not None and (arrays is None or found is arrays):
            del layout.claim_sets[key]


def _fits_alone(already: Mapping[str, QuantitySum], alt: Alternative, device: Device) -> bool:
    """upstream CmpRequestOverCapacity of ``alt`` on ``device`` with nothing in flight
    (a capacity the device lacks: does not fit)."""
    try:
        return request_fits(already, alt.capacity, device.capacity, {})
    except UnknownCapacityError:
        return False


class ClaimArrays:
    """The claims-dependent half of a Problem, over every node of a layout.

    ``node_errors[n]`` is the error upstream would return on node n before searching
    (pool gathering, pre-flight); such nodes are not searched.
    """

    def __init__(
        self, layout: Layout, claims: list[ResourceClaim], deadline: float | None = None
    ) -> None:
        self.layout = layout
        self.deadline = deadline
        self.snap = snap = layout.snap
        self.claims = claims
        self.features = snap.features
        N = len(layout.nodes)
        node_error: list[str | ClaimText | None] = [None] * N
        for n, text in layout.errors.items():
            node_error[n] = text
        # Selector verdict rows, shared by alternatives with the same class and selectors.
        self._rows: list[tuple[np.ndarray, SelectorFailures]] = []
        self._row_of: dict[Any, int] = {}
        self.alt_failures: list[SelectorFailures] = []
        self.has_all_mode = any(
            (r.exactly is not None and r.exactly.allocation_mode == "All")
            or any(s.allocation_mode == "All" for s in r.first_available)
            for c in claims
            for r in c.spec.devices.requests
        )
        plans: list[Plan | None] = [None] * N
        if not self.has_all_mode:
            try:
                plan = self._preflight(None)
            except AllocationTimeout:
                raise  # not an answer about these claims: nothing is remembered
            except AllocationError as exc:
                node_error = [e or texts.message_of(exc) for e in node_error]
                plan = None
            plans = [plan] * N
        else:
            for n in range(N):
                if n in layout.errors:
                    continue
                try:
                    plans[n] = self._preflight(n)
                except AllocationTimeout:
                    raise
                except AllocationError as exc:
                    node_error[n] = texts.message_of(exc)
        self.plan = next((p for p in plans if p is not None), None)
        if self.plan is None or self.has_all_mode:
            self.node_errors = {n: e for n, e in enumerate(node_error) if e is not None}
        else:  # one plan for every node: the nodes' errors are the gathering's
            self.node_errors = dict(layout.errors)
        searchable = np.ones(N, dtype=bool)
        searchable[list(self.node_errors)] = False
        self.searchable = np.flatnonzero(searchable).astype(np.int32)
        self.results: dict[Any, list[AllocationResult]] = {}
        # ids of the ``results`` lists that hold a shared device (a fresh shareID a copy)
        self.shared_results: set[int] = set()
        # node -> (its Stats, its results as a template's shape and leaves, whether they
        # hold a shared device) of a node that fitted, searched with these arrays' state
        self.answers: dict[int, tuple[Any, Template, tuple[object, ...], bool]] = {}
        # The shapes of the remembered answers, one object each (see remember).
        self.shapes: dict[bytes, Template] = {}
        # Kinds of answers -> how a node's first answer of the kind is made from an
        # earlier node's (None: the long way; see draspeed.engine.analogy).
        self.analogies: dict[Any, Recipe | None] = {}
        # search_nodes' answer over ``searchable`` with these arrays' state (read only)
        self.searched: dict[str, Any] | None = None
        # The nodes a prepared pod's pass searched ahead (draspeed.engine.answers_ahead),
        # answered or not: none is searched ahead twice.
        self.ahead: np.ndarray | None = None
        # Windows ahead that made no answer (the answers of this claim set are not
        # made so, a shared device say): after two, none is searched.
        self.ahead_idle = 0
        # Per claim and subrequests taken: its requests' classes, the subrequests and
        # the merged configs of its results (see allocator._build_results).
        self.configs: dict[
            Any, tuple[list[Any], list[int | None], list[DeviceAllocationConfiguration]]
        ] = {}
        # Per alternative: what a share of a device with capacity map c takes (by c),
        # and the static capacity verdicts over the layout (rows by alternative).
        self.shares: list[dict[int, dict[str, Quantity]]] = []
        self.any_shares = False  # whether any alternative takes any device share by share
        self.capacity = np.zeros((0, layout.L), dtype=np.uint8)
        self.problem: _core.Problem | None = None
        if self.plan is not None:
            self._build(plans)
        self.deadline = None  # only the build was bounded by it

    # ----------------------------------------------------------------------------------
    # Pre-flight (upstream order)
    # ----------------------------------------------------------------------------------

    def remember(self, n: int, stats: Any, results: list[AllocationResult]) -> None:
        """Remember node n's answer (``results``: remembered results, never handed out),
        searched with these arrays' state: kept as a shape shared with every answer of
        its kind and the answer's own leaves."""
        _, shape, leaves = split_template(results, self.shapes)
        self.answers[n] = (stats, shape, leaves, id(results) in self.shared_results)

    def _preflight(self, node: int | None) -> Plan:
        """upstream's pre-flight (on ``node``, for All-mode requests), as a Plan."""
        rows: dict[int, int] = {}
        listed: dict[int, list[int]] = {}

        def on_request(alt: Alternative) -> None:
            rows[id(alt)] = self._selector_row(alt)
            if alt.all_mode:
                assert node is not None  # All-mode claim sets are planned node by node
                listed[id(alt)] = self._all_devices(alt, rows[id(alt)], node)
                alt.count = len(listed[id(alt)])

        claims = preflight(
            self.claims, self._claim_key, self.features, self.snap.classes, on_request
        )
        return Plan.of(claims, rows, listed)

    def _all_devices(self, alt: Alternative, row_index: int, n: int) -> list[int]:
        """upstream's All-mode device list on node n: every selectable device of every
        pool (node-local positions); a pool being updated, an invalid pool or a selector
        error on the way is upstream's error."""
        layout = self.layout
        row, failures = self._rows[row_index]
        off = int(layout.node_ptr[n])
        picked: list[np.ndarray] = []
        for k in layout.pools_of(n):
            state = layout.pool_state[k]
            if state == INCOMPLETE:
                raise texts.claim_error(
                    alt.claim,
                    self._claim_key(alt.claim),
                    texts.all_devices_pool_incomplete,
                    alt.name,
                    layout.pool_id(k),
                )
            if state == INVALID:
                raise texts.claim_error(
                    alt.claim,
                    self._claim_key(alt.claim),
                    texts.all_devices_pool_invalid,
                    alt.name,
                    layout.pool_id(k),
                )
            lo, hi = int(layout.pool_pos_ptr[k]), int(layout.pool_pos_ptr[k + 1])
            for lp in (lo + np.flatnonzero(row[lo:hi] == SEL_ERROR)).tolist():
                failure: SelectorFailure | None = failures[lp]
                assert failure is not None
                if failure[3] == DEFERRED:
                    failure = self.resolve_deferred(alt, row_index, lp)  # updates the row
                if failure is not None:
                    raise _error(self.selector_error_text(alt, failure, lp), self.claims)
            picked.append(lo + np.flatnonzero(row[lo:hi] == SEL_YES))
        listed = np.concatenate(picked) if picked else np.zeros(0, dtype=np.int64)
        if self.features.consumable_capacity and len(listed):
            # Collected by static capacity, ignoring what committed shares use, so a
            # matching but used-up device makes the request fail (upstream #140769).
            listed = listed[self._fits_ignoring_use(alt, listed)]
        return (listed - off).tolist()

    def _fits_ignoring_use(self, alt: Alternative, positions: np.ndarray) -> np.ndarray:
        """Whether ``alt`` fits each of ``positions``' devices by static capacity with
        nothing committed or in flight: once per distinct capacity map."""
        layout = self.layout
        fits = np.ones(len(positions), dtype=bool)
        # Without a request, only a policy can make a capacity not fit whole.
        check = (
            np.arange(len(positions))
            if alt.capacity
            else np.flatnonzero(layout.has_capacity[positions] & layout.has_policy[positions])
        )
        fits[check] = self._maps_fit(alt, positions[check])
        return fits

    # ----------------------------------------------------------------------------------
    # Static verdicts, over every position of the layout
    # ----------------------------------------------------------------------------------

    def _selector_row(self, alt: Alternative) -> int:
        """Index of the alternative's selector verdict row (upstream isSelectable, eagerly),
        shared by alternatives with the same class and request selectors."""
        key = (
            alt.device_class.metadata.name,
            tuple(s.cel.expression for s in alt.selectors if s.cel is not None),
        )
        found = self._row_of.get(key)
        if found is None:
            self._rows.append(self._compute_selectable(alt))
            found = self._row_of[key] = len(self._rows) - 1
        return found

    def _compute_selectable(self, alt: Alternative) -> tuple[np.ndarray, SelectorFailures]:
        snap, layout = self.snap, self.layout
        sources = [(True, i, s) for i, s in enumerate(alt.device_class.spec.selectors)]
        sources += [(False, i, s) for i, s in enumerate(alt.selectors)]
        # The row after the longest run of these selectors that an earlier claim set of
        # the layout began with (a new claim shape is most often an old one with a
        # selector more): only the rest are applied here.
        prefixes = layout.selector_prefixes
        keys = _prefix_keys(self.features.device_binding_and_status, sources)
        done = 0
        for done in range(len(sources), -1, -1):
            found = prefixes.get(keys[done])
            if found is not None:
                row, failures = found[0].copy(), found[1].copy()
                break
        else:
            row = np.full(layout.L, SEL_YES, dtype=np.uint8)
            failures = SelectorFailures()
            if not self.features.device_binding_and_status:
                row[layout.binding] = SEL_NO
            _remember(prefixes, keys[0], row, failures)
        complete = True  # no verdict deferred so far: the row may be remembered
        # Every selector of the claim set made before the first is applied, so that the
        # first pass over the devices' attributes files what all of them read.
        for _, _, selector in sources[done:]:
            if selector.cel is not None:
                snap.selector_results(selector.cel.expression, self.deadline)
        for k in range(done, len(sources)):
            from_class, i, selector = sources[k]
            pending = np.flatnonzero(row == SEL_YES)
            if not len(pending):
                break
            if selector.cel is None:
                # Only a class can get here (API validation refuses it; upstream would
                # crash on it): an error for each device the search reaches, as a
                # selector's runtime error is, said as the reference engine says it.
                row[pending] = SEL_ERROR
                failures.add_many(pending, _same(_without_cel(alt, from_class, i)))
                break
            results = snap.selector_results(selector.cel.expression, self.deadline)
            verdict = snap.evaluate(results, layout.g[pending], self.deadline, lazy=True)
            row[pending[verdict == FALSE]] = SEL_NO
            erring = pending[verdict == ERROR]
            row[erring] = SEL_ERROR
            failures.add_many(erring, _runtime_failure(from_class, i, results, layout.g))
            # Not evaluated because another device reached the CEL cost limit: an error
            # position for the search, resolved device by device if it gets there.
            deferred = pending[verdict == UNKNOWN]
            row[deferred] = SEL_ERROR
            failures.add_many(deferred, _same((from_class, i, None, DEFERRED)))
            # (A row with deferred verdicts is built again once one of them is known:
            # never remembered, so that the rebuild sees the verdict.)
            complete = complete and not len(deferred)
            if complete and k + 1 < len(sources):
                _remember(prefixes, keys[k + 1], row, failures)
        # Each device's own node selection, where the selectors let it through.
        row[(row == SEL_YES) & (layout.pdn == PDN_NO)] = SEL_NO
        erring = np.flatnonzero((row == SEL_YES) & (layout.pdn == PDN_ERROR))
        row[erring] = SEL_ERROR
        pdn_errors = layout.pdn_errors
        failures.add_many(erring, lambda lp: (False, -1, None, pdn_errors[lp]))
        return row, failures

    def resolve_deferred(self, alt: Alternative, row_index: int, lp: int) -> SelectorFailure | None:
        """Layout position lp's verdicts were deferred (another device reached the CEL
        cost limit first): compute them for that device alone, as upstream evaluates a
        device's selectors when its search tries it. Returns the failure, if any; else
        the selector row now holds the device's verdict."""
        snap, layout = self.snap, self.layout
        row, failures = self._rows[row_index]
        g = int(layout.g[lp])
        sources = [(True, i, s) for i, s in enumerate(alt.device_class.spec.selectors)]
        sources += [(False, i, s) for i, s in enumerate(alt.selectors)]
        outcome = SEL_YES
        for from_class, i, selector in sources:
            if selector.cel is None:  # a class selector without CEL, as in the row
                failures[lp] = _without_cel(alt, from_class, i)
                return failures[lp]
            results = snap.selector_results(selector.cel.expression, self.deadline)
            verdict = snap.evaluate_device(results, g, self.deadline)
            if verdict == ERROR:
                failure = (from_class, i, results.compile_error, results.messages.get(g))
                failures[lp] = failure
                return failure
            if verdict == FALSE:
                outcome = SEL_NO
                break
        if outcome == SEL_YES and layout.pdn[lp] == PDN_NO:
            outcome = SEL_NO
        if outcome == SEL_YES and layout.pdn[lp] == PDN_ERROR:
            failures[lp] = (False, -1, None, layout.pdn_errors[lp])
            return failures[lp]
        failures.remove(lp)
        row[lp] = outcome
        return None

    def _capacity_with_use(
        self,
        alt: Alternative,
        lp: int,
        already: Mapping[str, QuantitySum],
        seen: dict[tuple[bytes, frozenset[tuple[str, QuantitySum]]], bool],
    ) -> int:
        """upstream CmpRequestOverCapacity with nothing in flight, for layout position lp
        whose device committed shares use ``already`` of. ``seen``: the verdicts of
        ``alt`` so far, by the device's capacities (written as bytes) and that use."""
        layout = self.layout
        device = layout.device_at(lp)
        key = (tree_signature(device.capacity), frozenset(already.items()))
        fits = seen.get(key)
        if fits is None:
            fits = seen[key] = _fits_alone(already, alt, device)
        if not fits:
            return CAP_FAIL
        return CAP_DYNAMIC if layout.multi[lp] else CAP_OK

    def _capacity_row(self, alt: Alternative, selectable: np.ndarray) -> np.ndarray:
        """The static capacity verdicts of ``alt``: worked out only where its selectors
        let a device through (the core asks nowhere else), once per distinct capacity
        map; a device that committed shares use is checked on its own."""
        layout = self.layout
        if not self.features.consumable_capacity:
            return np.full(layout.L, CAP_OK, dtype=np.uint8)
        row = layout.capacity_verdicts.copy()
        if not alt.capacity and not layout.any_capacity_checks:
            return row
        through = np.flatnonzero(selectable == SEL_YES)
        check = through if alt.capacity else layout.capacity_checks(through)
        if not len(check):
            return row
        used = layout.committed_use()
        if used:
            own = np.isin(check, np.fromiter(used, dtype=np.int64, count=len(used)))
            seen: dict[tuple[bytes, frozenset[tuple[str, QuantitySum]]], bool] = {}
            for lp in check[own].tolist():
                row[lp] = self._capacity_with_use(alt, lp, used[lp], seen)
            check = check[~own]
        row[check[~self._maps_fit(alt, check)]] = CAP_FAIL
        return row

    def _maps_fit(self, alt: Alternative, positions: np.ndarray) -> np.ndarray:
        """:meth:`_map_fits` for each of ``positions``' devices, once per distinct map."""
        table = self.snap.table
        ids = table.capacity_maps.ids(table, self.layout.g[positions])
        distinct, which = np.unique(ids, return_inverse=True)
        fits = np.fromiter(
            (self._map_fits(alt, c) for c in distinct.tolist()), dtype=bool, count=len(distinct)
        )
        return fits[which]

    def _map_fits(self, alt: Alternative, c: int) -> bool:
        """upstream CmpRequestOverCapacity of ``alt`` on a device with capacity map c and
        nothing in flight or committed."""
        maps = self.snap.table.capacity_maps
        if not alt.capacity and not maps.has_policy[c]:
            return True  # each capacity consumed whole: value <= value
        try:
            return request_fits({}, alt.capacity, maps.values[c], {})
        except UnknownCapacityError:
            return False

    # ----------------------------------------------------------------------------------
    # Arrays
    # ----------------------------------------------------------------------------------

    def _build(self, plans: list[Plan | None]) -> None:
        layout, f = self.layout, self.features
        plan = self.plan
        assert plan is not None
        alts = plan.alternatives
        N, L, A = len(layout.nodes), layout.L, len(alts)
        claims_n = max(len(self.claims), 1)
        rows = self._rows
        self.alt_failures = [rows[row][1] for row in plan.rows]
        selectable = (
            np.stack([rows[row][0] for row in plan.rows]) if A else np.zeros((0, L), np.uint8)
        )
        capacity = (
            np.stack([self._capacity_row(alt, selectable[a]) for a, alt in enumerate(alts)])
            if A
            else np.zeros((0, L), np.uint8)
        )
        taint_rows = self._taint_rows(alts)

        # What could be allocated at all, ignoring what is in flight and what is
        # committed: an upper bound the core uses to skip subtrees without solutions
        # (never a subtree that errors). The core discounts devices in use itself, so
        # these arrays stay valid for later versions with other committed claims.
        possible = selectable == SEL_YES
        if f.consumable_capacity:
            possible &= capacity != CAP_FAIL
        if f.device_taints:
            possible &= taint_rows == 0
        possible &= ~layout.counters_blocked.astype(bool)[None, :]
        admin = np.fromiter((alt.admin for alt in alts), dtype=bool, count=A)

        # Last selector error per (node, alternative), as a node-local position.
        last_error = np.full((N, A), -1, dtype=np.int64)
        for a in range(A):
            erring = np.flatnonzero(selectable[a] == SEL_ERROR)
            if len(erring):
                owner = layout.node_of(erring)
                np.maximum.at(last_error[:, a], owner, erring - layout.node_ptr[owner])

        # Device counts per (node, alternative), and the All-mode lists (node by node:
        # only All-mode claim sets have any).
        # (A subrequest may ask for up to 2^63 - 1 devices, never found: the core's int32
        # counts hold any count above the positions as its largest value.)
        counts = np.fromiter((min(alt.count, _INT32_MAX) for alt in alts), np.int64, count=A)
        alt_count = np.ascontiguousarray(np.broadcast_to(counts, (N, A)), dtype=np.int32)
        all_ptr: Any = np.zeros(N * A + 1, dtype=np.int32)
        all_pos: list[int] = []
        if self.has_all_mode:
            pointers = [0]
            for n in range(N):
                node_plan = plans[n] if n not in self.node_errors else None
                for a, alt in enumerate(alts):
                    if alt.all_mode:
                        listed = node_plan.all_positions[a] if node_plan is not None else []
                        all_pos.extend(listed)
                        alt_count[n, a] = len(listed)
                    pointers.append(len(all_pos))
            all_ptr = pointers

        rest = self._rest_bounds(plan, possible, last_error)

        self.capacity = capacity
        cap_room, alt_cap_use, cap_exact = self._shared_capacity(alts, capacity, claims_n)
        slot_available, cons_amount = layout.slot_available, layout.cons_amount
        exact: ExactSums | None = None
        if layout.needs_exact or layout.slots_may_overflow(claims_n) or cap_exact:
            exact_available, exact_amounts = layout.exact_lists()
            exact = ExactSums(
                layout.pos_pool.tolist(),
                layout.pool_slot_ptr.tolist(),
                exact_available,
                layout.cons_start.tolist(),
                layout.cons_len.tolist(),
                layout.cons_rel.tolist(),
                exact_amounts,
                layout.cap_ptr.tolist(),
                cap_room.tolist(),
                alt_cap_use.tolist(),
                layout.n_caps,
            )
            slot_available = np.zeros_like(slot_available)
            cons_amount = np.zeros_like(cons_amount)
            cap_room = np.zeros(len(cap_room), dtype=np.int64)
            alt_cap_use = np.zeros(len(alt_cap_use), dtype=np.int64)

        con, n_codes = self._constraints(plan)
        # The arrays of _core.ARRAYS (the Problem makes each contiguous in its dtype).
        arrays: dict[str, Any] = {
            "node_ptr": layout.node_ptr,
            "node_pool_ptr": layout.node_pool_ptr,
            "claim_req_ptr": np.cumsum([0, *map(len, plan.claim_requests)]),
            "req_has_subs": plan.request_has_subs,
            "req_alt_ptr": np.cumsum([0, *map(len, plan.request_alts)]),
            "alt_all": [alt.all_mode for alt in alts],
            "alt_admin": admin,
            "alt_count": alt_count.ravel(),
            "all_ptr": all_ptr,
            "all_pos": all_pos,
            "selectable": selectable.ravel(),
            "taint_blocks": taint_rows.ravel(),
            "capacity": capacity.ravel(),
            "possible": possible.ravel(),
            "last_error": last_error.ravel(),
            **rest,
            "in_use": layout.in_use,
            "allow_multi": layout.multi,
            "counters_blocked": layout.counters_blocked,
            "committed_share": layout.committed,
            "pos_pool": layout.pos_pool,
            "cons_start": layout.cons_start,
            "cons_len": layout.cons_len,
            "cons_rel": layout.cons_rel,
            "cons_amount": cons_amount,
            "pool_slot_ptr": layout.pool_slot_ptr,
            "slot_available": slot_available,
            "cap_ptr": layout.cap_ptr,
            "cap_room": cap_room,
            "alt_cap_use": alt_cap_use,
            **con,
        }
        self.problem = _core.Problem(
            arrays,
            taints_enabled=f.device_taints,
            consumable_enabled=f.consumable_capacity,
            max_results=MAX_RESULTS,
            exact=exact,
            n_codes=n_codes,
        )

    def _taint_rows(self, alts: list[Alternative]) -> np.ndarray:
        """Whether each alternative's tolerations leave a taint of each position's device
        untolerated: once per distinct taint list, then spread over the positions."""
        layout, table = self.layout, self.snap.table
        rows = np.zeros((len(alts), layout.L), dtype=np.uint8)
        if not len(layout.tainted):
            return rows
        ids = table.taint_lists.ids(table, layout.g[layout.tainted])
        distinct, which = np.unique(ids, return_inverse=True)
        lists = [table.taint_lists.values[t] for t in distinct.tolist()]
        for a, alt in enumerate(alts):
            blocks = np.fromiter(
                (taint_blocks(taints, alt.tolerations) for taints in lists),
                dtype=np.uint8,
                count=len(lists),
            )
            rows[a, layout.tainted] = blocks[which]
        return rows

    def share_at(self, a: int, lp: int) -> dict[str, Quantity] | None:
        """What a share of the device at position lp takes when alternative a picks it,
        or None when a takes it whole (it is not a shared use)."""
        if not self.any_shares or self.capacity[a, lp] != CAP_DYNAMIC:
            return None
        return self.shares[a][int(self.layout.cap_map[lp])]

    def _shared_capacity(
        self, alts: list[Alternative], capacity: np.ndarray, claims_n: int
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """Room and use of every capacity entry of the layout's shared devices, for the
        core: ``(cap_room, alt_cap_use, exact)``. int64 in a unit per entry (a common
        divisor of its room and of what each alternative takes of it), or, when some
        sum could leave int64, exact Python integers, unscaled, and ``exact`` true.

        What a share takes depends on the device's capacity map alone: worked out once
        per alternative and map (:attr:`shares`), then spread over the entries."""
        layout, maps = self.layout, self.snap.table.capacity_maps
        A, K = len(alts), layout.n_caps
        self.shares = [{} for _ in alts]
        if self.features.consumable_capacity:
            for a, alt in enumerate(alts):
                for c in np.unique(layout.cap_map[capacity[a] == CAP_DYNAMIC]).tolist():
                    self.shares[a][c] = consumed_capacity(alt.capacity, maps.values[c])
            self.any_shares = any(self.shares)
        if not K:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), False
        # The distinct map entries among the layout's entries: values, uses, units.
        entries, which = np.unique(layout.cap_entry, return_inverse=True)
        values = [maps.entry_nanos[e] for e in entries.tolist()]
        uses = [[0] * len(values) for _ in alts]
        for a in range(A):
            for i, e in enumerate(entries.tolist()):
                share = self.shares[a].get(maps.entry_map[e])
                if share is not None:
                    uses[a][i] = beyond.nanos(share[maps.entry_name[e]])
        units = [unit_of([v, *(u[i] for u in uses)]) for i, v in enumerate(values)]
        dynamic = capacity[:, layout.cap_pos] == CAP_DYNAMIC  # (A, K)
        scale = MAX_RESULTS * claims_n

        def too_big(room: int, used: list[int], unit: int) -> bool:
            return abs(room) // unit + scale * max((abs(u) // unit for u in used), default=0) >= (
                _INT64_LIMIT
            )

        # Entries of devices that committed shares use: a room of their own, the value
        # less that use as one exact sum (either may be beyond the exact range).
        own: dict[int, tuple[int, int, int]] = {}  # entry -> (distinct entry, room, unit)
        rooms: dict[int, QuantitySum] = {}
        for k, committed in layout.cap_used.items():
            i = int(which[k])
            e = int(entries[i])
            value = maps.values[maps.entry_map[e]][maps.entry_name[e]].value
            rooms[k] = committed.neg().add(value)
            room = beyond.nanos(rooms[k])
            own[k] = (i, room, unit_of([room, *(u[i] for u in uses)]))
        if (
            any(map(beyond.is_stand_in, values))
            or any(beyond.is_stand_in(u) for row in uses for u in row)
            or any(beyond.is_stand_in(room) for _, room, _ in own.values())
        ):
            self._check_one_side(entries.tolist(), which, values, uses, own, rooms)
        exact = any(
            too_big(v, [u[i] for u in uses], units[i]) for i, v in enumerate(values)
        ) or any(too_big(room, [u[i] for u in uses], unit) for i, room, unit in own.values())
        if exact:
            cap_room: np.ndarray = np.array(values, dtype=object)[which]
            use_rows: np.ndarray = np.array(uses, dtype=object).reshape(A, len(values))
            for k, (_, room, _) in own.items():
                cap_room[k] = room
            return cap_room, np.where(dynamic, use_rows[:, which], 0).ravel(), True
        smaller = [v // unit for v, unit in zip(values, units, strict=True)]
        cap_room = np.array(smaller, np.int64)[which]
        scaled = np.array(
            [[u[i] // unit for i, unit in enumerate(units)] for u in uses], np.int64
        ).reshape(A, len(values))
        alt_cap_use = np.where(dynamic, scaled[:, which], 0).astype(np.int64)
        for k, (i, room, unit) in own.items():
            cap_room[k] = room // unit
            for a in range(A):
                alt_cap_use[a, k] = uses[a][i] // unit if dynamic[a, k] else 0
        return cap_room, alt_cap_use.ravel(), False

    def _check_one_side(
        self,
        entries: list[int],
        which: np.ndarray,
        values: list[int],
        uses: list[list[int]],
        own: dict[int, tuple[int, int, int]],
        rooms: dict[int, QuantitySum],
    ) -> None:
        """:func:`draspeed.engine.beyond.one_side` for each shared capacity entry: its
        value, or the room committed shares leave of it (``own``, ``rooms``), against
        what the alternatives take of it."""
        maps = self.snap.table.capacity_maps
        for i, e in enumerate(entries):
            c, name = maps.entry_map[e], maps.entry_name[e]
            taken = [self.shares[a].get(c, {}).get(name) for a in range(len(uses))]
            used = [(row[i], q) for row, q in zip(uses, taken, strict=True) if q is not None]
            beyond.one_side([(values[i], maps.values[c][name].value)], used, f"capacity {name}")
            for k, (j, room, _) in own.items():
                if j == i:
                    beyond.one_side([(room, rooms[k])], used, f"capacity {name}")

    def _rest_bounds(
        self, plan: Plan, possible: np.ndarray, last_error: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Per request: what it and the claim's later requests need at least / at most, and
        which positions any of them could use (for the core's claim-level bound)."""
        R, L, N = len(plan.request_alts), self.layout.L, len(self.layout.nodes)
        prunable_of = np.zeros((N, R), dtype=bool)
        need_of = np.zeros(R, dtype=np.int64)
        max_of = np.zeros(R, dtype=np.int64)
        count_of = np.zeros(R, dtype=np.int64)
        union_of = np.zeros((R, L), dtype=bool)
        alts = plan.alternatives
        for reqs in plan.claim_requests:
            prunable = np.ones(N, dtype=bool)
            need, most, union = 0, 0, np.zeros(L, dtype=bool)
            for n, r in enumerate(reversed(reqs), start=1):
                alt_ids = plan.request_alts[r]
                static = all(not alts[a].all_mode and not alts[a].admin for a in alt_ids)
                if not static:
                    prunable[:] = False
                prunable &= (last_error[:, alt_ids] < 0).all(axis=1)
                # (Sums kept within int32, as the arrays hold them: counts may be huge.)
                need = min(need + min(alts[a].count for a in alt_ids), _INT32_MAX)
                most = min(most + max(alts[a].count for a in alt_ids), _INT32_MAX)
                union = union | possible[alt_ids].any(axis=0)
                prunable_of[:, r], need_of[r], max_of[r], count_of[r] = prunable, need, most, n
                union_of[r] = union
        return {
            "rest_prunable": prunable_of.ravel(),
            "rest_need": need_of,
            "rest_max": max_of,
            "rest_requests": count_of,
            "rest_possible": union_of.ravel(),
        }

    def _constraints(self, plan: Plan) -> tuple[dict[str, Any], int]:
        """Constraint attribute values as codes (sets; a scalar is a set of one), and the
        number of codes."""
        layout, A = self.layout, len(plan.alternatives)
        list_types = self.features.list_type_attributes
        distinct: list[bool] = []
        first_needs_value: list[bool] = []
        present: list[np.ndarray] = []
        applies: list[np.ndarray] = []
        ptr_parts: list[np.ndarray] = []
        value_parts: list[np.ndarray] = []
        n_values = 0
        n_codes = 0
        for c, claim in enumerate(self.claims):
            for constraint in claim.spec.devices.constraints:
                attribute = constraint.attribute
                assert attribute is not None  # checked in preflight
                distinct.append(constraint.match_attribute is None)
                first_needs_value.append(constraint.match_attribute is not None and list_types)
                ptr, values, has, codes = layout.attribute_codes(attribute, list_types)
                present.append(has)
                wanted = set(constraint.requests)
                row = np.zeros(A, dtype=bool)
                for a, alt in enumerate(plan.alternatives):
                    if alt.claim == c:
                        row[a] = (
                            not wanted
                            or (alt.parent or alt.name) in wanted
                            or (alt.parent is not None and f"{alt.parent}/{alt.name}" in wanted)
                        )
                applies.append(row)
                # Each constraint counts its own values: its codes follow the previous ones.
                ptr_parts.append(ptr[:-1] + n_values)
                value_parts.append(values + n_codes)
                n_values += len(values)
                n_codes += codes
        claim_con_ptr = [0]
        for claim in self.claims:
            claim_con_ptr.append(claim_con_ptr[-1] + len(claim.spec.devices.constraints))
        value_ptr = np.concatenate([*ptr_parts, np.asarray([n_values], dtype=np.int64)])
        return {
            "claim_con_ptr": claim_con_ptr,
            "con_distinct": distinct,
            "con_applies": (np.stack(applies) if applies else np.zeros((0, A), bool)).ravel(),
            "con_value_ptr": value_ptr,
            "con_values": np.concatenate(value_parts) if value_parts else [],
            "con_present": np.concatenate(present) if present else np.zeros(0, np.uint8),
            "con_first_needs_value": first_needs_value,
        }, n_codes

    # ----------------------------------------------------------------------------------
    # Messages
    # ----------------------------------------------------------------------------------

    def _claim_key(self, c: int) -> str:
        return self.claims[c].key

    def selector_error_text(
        self, alt: Alternative, failure: SelectorFailure, lp: int
    ) -> str | ClaimText:
        """Upstream's message for the selector that failed on layout position lp for
        ``alt`` (a template: the claim set answers for claims of other names too)."""
        from_class, index, compile_error, runtime_error = failure
        if index < 0:  # a message returned bare: a per-device node selection that does
            # not parse, a class selector without CEL
            return runtime_error or ""
        class_name = alt.device_class.metadata.name
        if compile_error is not None:
            return ClaimText(
                alt.claim,
                texts.claim_selector_compile_error,
                (class_name, from_class, index, compile_error),
            )
        device = self.layout.located_at(lp)[0]  # (the layout's places: no search per call)
        return ClaimText(
            alt.claim,
            texts.claim_selector_runtime_error,
            (class_name, from_class, index, device, runtime_error or ""),
        )


def _same(failure: SelectorFailure) -> Callable[[int], SelectorFailure]:
    """The reason of positions that all fail alike."""
    return lambda lp: failure


def _runtime_failure(
    from_class: bool, index: int, results: SelectorResults, devices: np.ndarray
) -> Callable[[int], SelectorFailure]:
    """The reason of a position whose device a selector failed on: its compile error,
    or the device's runtime error."""
    return lambda lp: (
        from_class,
        index,
        results.compile_error,
        results.messages.get(int(devices[lp])),
    )


def _without_cel(alt: Alternative, from_class: bool, index: int) -> SelectorFailure:
    """The failure of a class selector without CEL: its message, returned bare."""
    owner = texts.selector_owner("", alt.device_class.metadata.name, from_class=True)
    return (from_class, -1, None, texts.selector_empty(owner, index))


def _error(message: str | ClaimText, claims: list[ResourceClaim]) -> AllocationError:
    """The error of a stored message, about ``claims``."""
    if isinstance(message, str):
        return AllocationError(message)
    return ClaimAllocationError(message, claims[message.claim].key)


class ExactSums:
    """Counter and capacity sums in Python integers, for values beyond int64.

    The core calls these (taking the GIL) instead of its int64 arithmetic when the
    builder finds that some slot's worst-case sum might not fit; everything else
    about the search stays compiled. Same arrays, same meaning, unbounded integers.
    Positions arrive node-local; ``reset(offset)`` names the node being searched.
    """

    def __init__(
        self,
        pos_pool: list[int],
        pool_slot_ptr: list[int],
        available: list[int],
        cons_start: list[int],
        cons_len: list[int],
        cons_rel: list[int],
        cons_amount: list[int],
        cap_ptr: list[int],
        cap_room: list[int],
        alt_cap_use: list[int],
        n_cap: int,
    ):
        self.pos_pool, self.pool_slot_ptr, self.available = pos_pool, pool_slot_ptr, available
        self.cons_start, self.cons_len = cons_start, cons_len
        self.cons_rel, self.cons_amount = cons_rel, cons_amount
        self.cap_ptr, self.cap_room, self.alt_cap_use, self.n_cap = (
            cap_ptr,
            cap_room,
            alt_cap_use,
            n_cap,
        )
        self.reset()

    def reset(self, offset: int = 0) -> None:
        self.offset = offset
        self.consumed = [0] * len(self.available)
        self.cap_used = [0] * len(self.cap_room)

    def _add_counters(self, lp: int, sign: int) -> None:
        first = self.pool_slot_ptr[self.pos_pool[lp]]
        start = self.cons_start[lp]
        for k in range(start, start + self.cons_len[lp]):
            self.consumed[first + self.cons_rel[k]] += sign * self.cons_amount[k]

    def charge(self, p: int) -> bool:
        """Charge p's counters; undo and refuse if any counter of its pool is exceeded."""
        lp = self.offset + p
        self._add_counters(lp, 1)
        pool = self.pos_pool[lp]
        for slot in range(self.pool_slot_ptr[pool], self.pool_slot_ptr[pool + 1]):
            if self.available[slot] < self.consumed[slot]:
                self._add_counters(lp, -1)
                return False
        return True

    def release(self, p: int) -> None:
        self._add_counters(self.offset + p, -1)

    def fits(self, a: int, p: int) -> bool:
        lp, base = self.offset + p, a * self.n_cap
        return all(
            self.cap_used[k] + self.alt_cap_use[base + k] <= self.cap_room[k]
            for k in range(self.cap_ptr[lp], self.cap_ptr[lp + 1])
        )

    def take(self, a: int, p: int, sign: int) -> None:
        lp, base = self.offset + p, a * self.n_cap
        for k in range(self.cap_ptr[lp], self.cap_ptr[lp + 1]):
            self.cap_used[k] += sign * self.alt_cap_use[base + k]
