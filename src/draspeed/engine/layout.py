"""Nodes as the compiled search sees them: their pools, positions and counter slots.

A :class:`Layout` is the answer of :func:`draspeed.engine._gather.gather` for a list of
nodes -- every node's pools as upstream gathers them, the searchable devices of the
usable pools end to end (*positions*), each pool's counters as *slots* with what
committed claims left of them -- plus the per-position facts read from the slice table
and the committed holds, all as flat arrays. One problem over a layout
(``draspeed.engine.claim_arrays``) covers all its nodes, so the core walks from node to
node without coming back to Python. A one-node layout is the same with one node.

Later versions of the cluster reuse a layout: only the nodes whose committed state
changed are gathered again and their rows replaced (:meth:`Layout.derive`); nodes whose
pools changed are searched on their own until enough have that a new layout pays.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api._model_tree import untrack_list
from draspeed.api.coerce import object_name
from draspeed.api.model import Device, DeviceAttribute, Node, ResourceSlice
from draspeed.engine import _core, _gather, beyond
from draspeed.engine.beyond import BeyondExactRange
from draspeed.engine.slice_table import FLAGS
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.rules import texts
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.engine.snapshot import Snapshot
    from draspeed.quantity import Quantity

# Per-device node selection verdicts (claims-independent, node-dependent).
PDN_NONE, PDN_YES, PDN_NO, PDN_ERROR = (_gather.PDN[k] for k in ("none", "yes", "no", "error"))
USABLE, INCOMPLETE, INVALID = (_gather.POOL_STATE[k] for k in ("usable", "incomplete", "invalid"))
CAP_OK, CAP_DYNAMIC = _core.CAP["ok"], _core.CAP["dynamic"]
_INT64_SAFE = 2**62


def node_key(node: Node) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Nodes with the same name and labels see the same cluster."""
    return (node.name, tuple(sorted(node.labels.items())))


def unit_of(terms: Iterable[int]) -> int:
    """The largest unit in which every term is a whole number (their gcd), at least 1."""
    unit = 0
    for t in terms:
        unit = math.gcd(unit, t)
    return unit or 1


@dataclass(slots=True)
class PoolView:
    """One pool as gathered for one node (upstream's ``Pool``), for explain and analysis."""

    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Global device indices of the slices targeting the node, in search order.
    devices: list[int] = field(default_factory=list)
    # Devices of the pool's slices that do not target the node (counter accounting).
    other_devices: list[int] = field(default_factory=list)
    # counter set name -> counter name -> capacity, from the pool's counter-set slices.
    counter_sets: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    has_binding_conditions: bool = False


@dataclass(slots=True)
class NodeView:
    """What one node sees: its pools in upstream's order and its searchable devices."""

    node: Node
    pools: list[PoolView]
    any_invalid: bool
    positions: np.ndarray  # global device indices, in search order


class Layout:
    """The gathered pools and positions of many nodes, end to end: the
    claims-independent half of a Problem."""

    def __init__(
        self, snap: Snapshot, nodes: list[Node], key: tuple[Any, ...] | None = None
    ) -> None:
        self.snap = snap
        # The list itself when given one: the cluster layout of a later version finds
        # its nodes unchanged by identity (Snapshot.cluster_layout).
        self.nodes = nodes if isinstance(nodes, list) else list(nodes)
        self._key = key
        # (One per node, long-lived: out of the cyclic collector's walks.)
        known = snap.known_names_and_ids(self.nodes)
        self.names = untrack_list(
            list(known[0]) if known is not None else list(map(object_name, self.nodes))
        )
        self._lock = threading.RLock()
        # Nodes whose rows are out of date (their pools changed in a later version):
        # searched on their own, never through these arrays.
        self.stale: frozenset[int] = frozenset()
        self.claim_sets: dict[bytes, Any] = {}  # claims signature -> claim_arrays.ClaimArrays
        # A run of selectors -> the selector verdict row after it and its failures.
        self.selector_prefixes: dict[tuple[Any, ...], tuple[np.ndarray, Any]] = {}
        self._codes: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        self._committed_use: dict[int, Mapping[str, QuantitySum]] | None = None
        self._overflow: dict[int, bool] = {}  # claims -> slots_may_overflow
        self._adopt(snap.gather(self.nodes))

    @property
    def key(self) -> tuple[Any, ...]:
        """The nodes' keys (name and labels), in order: made when first asked for."""
        if self._key is None:
            self._key = tuple(node_key(n) for n in self.nodes)
        return self._key

    @cached_property
    def position(self) -> dict[int, int]:
        """The given Node objects by identity (the first place of each: filled from the
        last node back): a caller that passes them back is placed without reading a
        name. Made when first asked for: a first feasible_nodes never asks (0.43 ms
        for 5,000 nodes)."""
        last = len(self.nodes) - 1
        return dict(zip(map(id, reversed(self.nodes)), range(last, -1, -1), strict=True))

    @cached_property
    def named(self) -> dict[str, list[int]]:
        """Each node name's places (made when first asked for: most callers place
        nodes by identity)."""
        named: dict[str, list[int]] = {}
        for n, name in enumerate(self.names):
            named.setdefault(name, []).append(n)
        return named

    @cached_property
    def index(self) -> dict[Any, int]:
        return {k: n for n, k in enumerate(self.key)}

    # ---- building ------------------------------------------------------------------

    def _adopt(self, out: dict[str, Any]) -> None:
        """Take a gather answer: its arrays, and what follows from them per position."""
        snap, f = self.snap, self.snap.features
        self.gathered = out
        self.node_ptr = out["node_ptr"]
        self.L = int(self.node_ptr[-1])
        self.g = out["g"]
        self.pos_pool = out["pos_pool"]
        self.node_pool_ptr = out["node_pool_ptr"]
        self.pool_state = out["pool_state"]
        self.pool_slot_ptr = out["pool_slot_ptr"]
        # Position p consumes entries [cons_start[p], + cons_len[p]) of the shared table
        # (cons_rel, cons_amount); an entry's slot is relative to p's pool's first slot.
        self.cons_start = out["cons_start"]
        self.cons_len = out["cons_len"]
        self.cons_rel = out["table_rel"]
        self.n_pools = len(out["pool_id"])
        self.node_slot_ptr = self.pool_slot_ptr[self.node_pool_ptr].astype(np.int64)
        # Positions of each pool (usable pools only; others own none).
        counts = np.bincount(self.pos_pool, minlength=self.n_pools)
        self.pool_pos_ptr = np.zeros(self.n_pools + 1, dtype=np.int64)
        np.cumsum(counts, out=self.pool_pos_ptr[1:])
        invalid = np.concatenate([[0], np.cumsum(self.pool_state == INVALID)])
        ptr = self.node_pool_ptr
        self.any_invalid = (invalid[ptr[1:]] - invalid[ptr[:-1]]) > 0
        self.has_invalid = bool(self.any_invalid.any())
        self.errors = self._node_errors(out)
        table = snap.table
        flags = table.column("d_flags")[self.g] if self.L else np.zeros(0, np.uint8)
        self._flags = flags
        self.multi = ((flags & FLAGS["multi"]) != 0) & f.consumable_capacity
        self.multi = self.multi.astype(np.uint8)
        consumes = (flags & FLAGS["consumes"]) != 0
        self.counters_blocked = (consumes & (not f.partitionable_devices)).astype(np.uint8)
        self.binding = (flags & FLAGS["binding"]) != 0
        self.tainted = np.flatnonzero(flags & FLAGS["tainted"])
        self.pdn = out["pdn"]
        self.pdn_errors = self._pdn_errors()
        self._state_from_holds()
        self._counters(out)
        self._capacities()

    def _node_errors(self, out: dict[str, Any]) -> dict[int, str]:
        """Upstream's error for each node whose pool gathering failed (a node selector
        that does not parse)."""
        errors: dict[int, str] = {}
        kinds = out["node_error"]
        for n in np.flatnonzero(kinds).tolist():
            table = self.snap.table
            rs = table.slices[int(out["node_error_slice"][n])]
            if kinds[n] == _gather.NODE_ERROR["slice_selector"]:
                problem = _selector_problem(self.nodes[n], rs.spec.node_selector)
                errors[n] = texts.gather_pools(
                    texts.slice_node_selection(rs.metadata.name, problem)
                )
            else:
                device = table.device(int(out["node_error_device"][n]))
                problem = _selector_problem(self.nodes[n], device.node_selector)
                errors[n] = texts.gather_pools(
                    texts.device_node_selection(device.name, rs.metadata.name, problem)
                )
        return errors

    def _pdn_errors(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for lp in np.flatnonzero(self.pdn == PDN_ERROR).tolist():
            device = self.device_at(lp)
            out[lp] = str(_selector_problem(self.nodes[self.node_of_one(lp)], device.node_selector))
        return out

    def _state_from_holds(self) -> None:
        """What the committed claims decide per position: in use, holds a share."""
        f = self.snap.features
        in_use, _, committed = self.snap.holds().flags_at(self.g)
        self.in_use = in_use.astype(np.uint8)
        self.committed = (committed & f.consumable_capacity).astype(np.uint8)
        self.has_capacity = (self._flags & FLAGS["capacity"]) != 0
        self.has_policy = (self._flags & FLAGS["capacity_policy"]) != 0

    def _counters(self, out: dict[str, Any]) -> None:
        """Counter slots and the consumption table: whole units from the gather, or (when
        some value is not a small whole number) an exact unit per slot of each counter
        layout."""
        self.n_slots = len(out["slot_set"])
        if out["whole"]:
            available = out["slot_available"]
            amounts = self.snap.table.quantity_whole()[out["table_quantity"]]
            exact: tuple[list[int], list[int]] | None = None
            self.beyond: BeyondExactRange | None = None
        else:
            keys = _slot_keys(out)
            available, amounts, exact = _exact_units(self.snap, out, keys)
            # Counters the stand-ins cannot decide: told when a claim set is searched
            # here (claim_arrays), not while the node is laid out (explain reads it).
            self.beyond = _check_one_side(self.snap, out, keys)
        self._exact = exact
        self.slot_spread = np.abs(available.astype(np.float64))
        # What the positions of a pool can consume of one of its slots, at most: an
        # upper bound, enough for the core's overflow check (claim_arrays).
        largest = float(np.abs(amounts).max()) if len(amounts) else 0.0
        per_pool = np.bincount(self.pos_pool, minlength=self.n_pools).astype(np.float64)
        slot_pool = np.repeat(np.arange(self.n_pools), np.diff(self.pool_slot_ptr))
        width = float(max(int(np.diff(self.pool_slot_ptr).max()) if self.n_pools else 0, 1))
        self.slot_charges = per_pool[slot_pool] * largest * width
        self.needs_exact = exact is not None or bool(
            (self.slot_spread + self.slot_charges >= _INT64_SAFE).any()
        )
        self.slot_available = np.ascontiguousarray(available, dtype=np.int64)
        self.cons_amount = np.ascontiguousarray(amounts, dtype=np.int64)
        self.state = (self.in_use, self.committed, self.slot_available)

    def _capacities(self) -> None:
        """Capacity entries of shared devices: the only capacity that runs out mid-search.
        Position lp has entries ``cap_ptr[lp]`` to ``cap_ptr[lp + 1]``, one per capacity
        of its device's map, in the map's (sorted) order; ``cap_entry[k]`` is entry k's
        place in the family's :class:`CapacityMaps` lists, ``cap_pos[k]`` its position,
        and ``cap_used`` what committed shares use of an entry (an exact sum), for the
        few entries whose device has any (room = the map's value less that)."""
        maps = self.snap.table.capacity_maps
        multi = np.flatnonzero(self.multi)
        ids = maps.ids(self.snap.table, self.g[multi])
        sizes = maps.sizes(ids)
        self.cap_map = np.full(self.L, -1, dtype=np.int32)
        self.cap_map[multi] = ids
        self.cap_ptr = np.zeros(self.L + 1, dtype=np.int32)
        if len(multi):  # (else all zero: written, the pages of zeros cost a millisecond)
            counts = np.zeros(self.L, dtype=np.int64)
            counts[multi] = sizes
            np.cumsum(counts, out=self.cap_ptr[1:])
        self.n_caps = K = int(self.cap_ptr[-1])
        self.cap_pos = np.repeat(multi, sizes)
        offset = np.arange(K, dtype=np.int64) - np.repeat(self.cap_ptr[multi], sizes)
        self.cap_entry = np.repeat(maps.first_entries(ids), sizes) + offset
        self.cap_used: dict[int, QuantitySum] = {}
        if K:
            for lp, already in self.committed_use().items():
                c = int(self.cap_map[lp])
                if c < 0:
                    continue
                first, start = int(self.cap_ptr[lp]), maps.ptr[c]
                for j, name in enumerate(maps.entry_name[start : maps.ptr[c + 1]]):
                    used = already.get(name)
                    if used is not None:
                        self.cap_used[first + j] = used

    def committed_use(self) -> dict[int, Mapping[str, QuantitySum]]:
        """What committed shares use of each position's device, for the positions whose
        device they use any capacity of (found per committed device, not per position)."""
        found = self._committed_use
        if found is None:
            found = self._committed_use = {}
            snap = self.snap
            consumed = snap.allocated.consumed_capacity if self.L else {}
            if consumed:
                ids = list(consumed)
                which, devices = snap.table.devices_named_many(ids, snap.n_slices, snap._live())
                order = np.argsort(self.g, kind="stable")
                ordered = self.g[order]
                lo = np.searchsorted(ordered, devices, side="left").tolist()
                hi = np.searchsorted(ordered, devices, side="right").tolist()
                for i, a, b in zip(which.tolist(), lo, hi, strict=True):
                    for lp in order[a:b].tolist():
                        found[lp] = consumed[ids[i]]
        return found

    # ---- versions ------------------------------------------------------------------

    def derive(
        self,
        snap: Snapshot,
        changed: Collection[str] | None,
        *,
        keep_claim_arrays: bool,
        stale: Iterable[str] = (),
    ) -> Layout:
        """This layout for a later version of the cluster in which only the nodes named
        in ``changed`` had their committed state change (None: any node may have).

        Positions and every claims-independent array are shared; the nodes in
        ``changed`` are gathered again and, when they still have the same positions
        and slots, their rows of the committed state (in use, shares, counters left)
        replaced in copies of those arrays. Claim arrays carry over when
        ``keep_claim_arrays`` (they do not depend on that state) and are searched with
        this layout's ``state``. Otherwise the layout is laid out anew.

        Nodes named in ``stale`` see other pools now (a slice update): their rows are
        left as they were and they are searched on their own (:attr:`stale`), until
        more than a twentieth of the nodes are, when the layout is laid out anew.
        """
        if changed is None:
            return Layout(snap, self.nodes, self._key)
        gone = set(self.stale)
        for name in stale:
            gone.update(self.named.get(name, ()))
        if len(gone) > max(64, len(self.nodes) // 20):
            return Layout(snap, self.nodes, self._key)
        new = copy.copy(self)
        new.stale = frozenset(gone)
        new.snap = snap
        new._lock = threading.RLock()
        new._codes = dict(self._codes)
        new._committed_use = None  # of this version's committed claims
        new.__dict__.pop("any_capacity_checks", None)  # committed shares may differ
        rows = sorted({n for name in changed for n in self.named.get(name, ())} - gone)
        if not rows:  # nothing searchable changed: the committed state is shared too
            new.claim_sets = dict(self.claim_sets) if keep_claim_arrays else {}
            return new
        if self.needs_exact or any(n in self.errors for n in rows):
            return Layout(snap, self.nodes, self._key)
        fresh = snap.gather([self.nodes[n] for n in rows])
        if not fresh["whole"]:
            return Layout(snap, self.nodes, self._key)
        in_use, committed = self.in_use.copy(), self.committed.copy()
        available = self.slot_available.copy()
        f = snap.features
        holds = snap.holds()
        for k, n in enumerate(rows):
            lo, hi = int(self.node_ptr[n]), int(self.node_ptr[n + 1])
            a, b = int(fresh["node_ptr"][k]), int(fresh["node_ptr"][k + 1])
            s_lo, s_hi = int(self.node_slot_ptr[n]), int(self.node_slot_ptr[n + 1])
            fp = fresh["node_pool_ptr"]
            f_lo = int(fresh["pool_slot_ptr"][fp[k]])
            f_hi = int(fresh["pool_slot_ptr"][fp[k + 1]])
            if (
                hi - lo != b - a
                or not np.array_equal(self.g[lo:hi], fresh["g"][a:b])
                or s_hi - s_lo != f_hi - f_lo
                or self.multi[lo:hi].any()
            ):
                return Layout(snap, self.nodes, self._key)
            node_in_use, _, node_committed = holds.flags_at(self.g[lo:hi])
            in_use[lo:hi] = node_in_use
            committed[lo:hi] = node_committed & f.consumable_capacity
            available[s_lo:s_hi] = fresh["slot_available"][f_lo:f_hi]
        new.in_use, new.committed, new.slot_available = in_use, committed, available
        new.state = (in_use, committed, available)
        new.slot_spread = np.abs(available.astype(np.float64))
        new._overflow = {}
        new.needs_exact = bool((new.slot_spread + new.slot_charges >= _INT64_SAFE).any())
        if new.needs_exact:
            return Layout(snap, self.nodes, self._key)
        new.claim_sets = (
            {
                k: v
                for k, v in self.claim_sets.items()
                if v.problem is None or v.problem.exact is None
            }
            if keep_claim_arrays
            else {}
        )
        return new

    def carried(self, snap: Snapshot, *, keep_claim_arrays: bool) -> Layout:
        """This layout for a later version that sees its nodes exactly as this one's did:
        everything is shared, claim arrays too if ``keep_claim_arrays``."""
        new = copy.copy(self)
        new.snap = snap
        new._lock = threading.RLock()
        new.claim_sets = dict(self.claim_sets) if keep_claim_arrays else {}
        new._codes = dict(self._codes)
        return new

    # ---- reading -------------------------------------------------------------------

    def slots_may_overflow(self, claims: int) -> bool:
        """Whether a counter slot's sums could leave int64 (with headroom) when
        ``claims`` claims each charge every position of its pool (claim_arrays)."""
        found = self._overflow.get(claims)
        if found is None:
            bound = self.slot_spread + self.slot_charges * claims
            found = self._overflow[claims] = bool((bound >= _INT64_SAFE / 2).any())
        return found

    @cached_property
    def capacity_verdicts(self) -> np.ndarray:
        """The static capacity verdict of every position before any request's look: a
        shared device's capacity is taken share by share, any other's whole."""
        verdicts = np.full(self.L, CAP_OK, dtype=np.uint8)
        np.copyto(verdicts, np.uint8(CAP_DYNAMIC), where=self.multi.astype(bool))
        return verdicts

    @cached_property
    def any_capacity_checks(self) -> bool:
        """Whether :meth:`capacity_checks` can find any position at all."""
        return len(self.capacity_checks(np.arange(self.L))) > 0

    def capacity_checks(self, candidates: np.ndarray) -> np.ndarray:
        """Among ``candidates`` (positions), those whose static capacity verdict needs a
        closer look than "every capacity consumed whole fits": a capacity with a
        request policy, or capacity that committed shares use."""
        candidates = candidates[self.has_capacity[candidates]]
        keep = self.has_policy[candidates] | (self.committed[candidates] != 0)
        return candidates[keep]

    @cached_property
    def _places(self) -> tuple[np.ndarray, np.ndarray]:
        """Each position's slice and index in it: one vectorised search, made when a
        device is first named (a scalar search per device cost more than the rest of a
        one-device result)."""
        table = self.snap.table
        n_slices = self.snap.n_slices
        slices = table.slices_of(self.g, n_slices)
        first = table.column("s_first", n_slices)
        return slices, self.g - first[slices]

    def slice_and_device(self, lp: int) -> tuple[ResourceSlice, Device]:
        """The slice and the device at layout position lp."""
        slices, index = self._places
        rs = self.snap.table.slices[slices.item(lp)]
        return rs, rs.spec.devices[index.item(lp)]

    def device_at(self, lp: int) -> Device:
        """The device at layout position lp."""
        return self.slice_and_device(lp)[1]

    def located_at(self, lp: int) -> tuple[DeviceID, Device, ResourceSlice]:
        """The ID, device and slice at layout position lp."""
        rs, device = self.slice_and_device(lp)
        spec = rs.spec
        return DeviceID(spec.driver, spec.pool.name, device.name), device, rs

    def node_of(self, positions: np.ndarray) -> np.ndarray:
        """The node index of each layout position."""
        return np.searchsorted(self.node_ptr, positions, side="right") - 1

    def node_of_one(self, lp: int) -> int:
        return int(np.searchsorted(self.node_ptr, lp, side="right")) - 1

    def pools_of(self, n: int) -> range:
        """Node n's pools (layout pool indices), in upstream's order."""
        return range(int(self.node_pool_ptr[n]), int(self.node_pool_ptr[n + 1]))

    def pool_id(self, k: int) -> PoolID:
        driver, name = self.snap.table.names.pool_keys[int(self.gathered["pool_id"][k])]
        return PoolID(driver, name)

    def exact_lists(self) -> tuple[list[int], list[int]]:
        """Counter availability per slot and the consumption table's amounts as Python
        integers, for sums beyond int64 (rare: built only when asked)."""
        if self._exact is not None:
            return self._exact
        return self.slot_available.tolist(), self.cons_amount.tolist()

    def node_view(self, n: int) -> NodeView:
        """Node n as explain and capacity analysis read it."""
        out = self.gathered
        table = self.snap.table
        names = table.names
        pools: list[PoolView] = []
        first = table.column("s_first")
        count = table.column("s_ndev")
        for k in self.pools_of(n):
            state = int(self.pool_state[k])
            pool = PoolView(self.pool_id(k))
            if state == INCOMPLETE:
                pool.incomplete = True
                pools.append(pool)
                continue
            if state == INVALID:
                pool.invalid = True
                pool.invalid_reason = _reason_text(
                    names.string_list,
                    int(out["pool_reason"][k]),
                    int(out["pool_reason_a"][k]),
                    int(out["pool_reason_b"][k]),
                )
                pools.append(pool)
                continue
            pool.has_binding_conditions = bool(out["pool_binding"][k])
            lo, hi = int(out["pool_slices_ptr"][k]), int(out["pool_slices_ptr"][k + 1])
            for j in range(lo, hi):
                s, kind = int(out["pool_slices"][j]), int(out["pool_slice_kind"][j])
                devices = range(int(first[s]), int(first[s]) + int(count[s]))
                if kind == 0:
                    pool.devices.extend(devices)
                elif kind == 2:
                    pool.other_devices.extend(devices)
                else:
                    for cs in table.slices[s].spec.shared_counters:
                        pool.counter_sets[cs.name] = {c: v.value for c, v in cs.counters.items()}
            pools.append(pool)
        lo, hi = int(self.node_ptr[n]), int(self.node_ptr[n + 1])
        return NodeView(self.nodes[n], pools, bool(self.any_invalid[n]), self.g[lo:hi].copy())

    def attribute_codes(
        self, attribute: str, list_types: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(value_ptr over positions, value codes, present per position, number of codes)
        of one attribute, as constraints compare it; built once per layout."""
        key = (attribute, list_types)
        with self._lock:
            found = self._codes.get(key)
            if found is None:
                found = self._codes[key] = self.snap.attribute_codes(self.g, attribute, list_types)
            return found


def attribute_values(
    attribute: DeviceAttribute | None, list_types: bool
) -> list[tuple[str, object]]:
    """A constraint's view of one attribute: typed values; empty = no usable value."""
    if attribute is None or attribute.kind is None:
        return []
    kind = attribute.kind
    if kind in ("ints", "bools", "strings", "versions"):
        if not list_types:
            return []
        scalar = kind[:-1]
        return sorted({(scalar, v) for v in attribute.value}, key=repr)
    return [(kind, attribute.value)]


def _selector_problem(node: Node, selector: Any) -> NodeSelectorError | str:
    """The error a node selector that does not parse raises (as upstream words it)."""
    try:
        node_matches(node, "", False, selector)
    except NodeSelectorError as exc:
        return exc
    return "node selector does not parse"  # pragma: no cover - gather said it does not


def _reason_text(strings: list[str], reason: int, a: int, b: int) -> str:
    """Why a pool is invalid, in upstream's words."""
    if reason == _gather.POOL_REASON["duplicate_device"]:
        return texts.duplicate_device_name(strings[a])
    if reason == _gather.POOL_REASON["duplicate_counter_set"]:
        return texts.duplicate_counter_set(strings[a])
    if reason == _gather.POOL_REASON["counter_set_not_found"]:
        return texts.counter_set_not_found(strings[a])
    return texts.counter_not_found(strings[a], strings[b])


def _slot_keys(out: dict[str, Any]) -> tuple[list[int], list[int]]:
    """Each counter slot's counter layout and its place in that layout: the key its
    consumption table entries share."""
    slot_ptr = out["pool_slot_ptr"]
    slot_pool = np.repeat(np.arange(len(out["pool_id"])), np.diff(slot_ptr))
    slot_layout = out["pool_layout"][slot_pool].tolist()
    slot_rel = (np.arange(len(slot_pool)) - slot_ptr[slot_pool]).tolist()
    return slot_layout, slot_rel


def _exact_units(
    snap: Snapshot, out: dict[str, Any], keys: tuple[list[int], list[int]]
) -> tuple[np.ndarray, np.ndarray, tuple[list[int], list[int]] | None]:
    """Slot availability and the consumption table in exact units: one unit per slot of
    each counter layout (the gcd of every capacity and amount that slot sees, in every
    pool of the layout), so the table stays shared. As int64 arrays when the values
    fit, else also as Python integer lists (the third item) for the core's exact sums.
    ``keys``: :func:`_slot_keys` of ``out``.

    Python loops over distinct (layout, slot, quantity) triples and over slots: devices
    of a kind consume the same few amounts.
    """
    nanos = snap.table.names.quantity_nanos
    slot_layout, slot_rel = keys
    capacity = [nanos[q] if q >= 0 else 0 for q in out["slot_quantity"].tolist()]
    available = list(capacity)
    if len(out["held_slot"]):
        pairs, counts = np.unique(
            np.stack([out["held_slot"], out["held_quantity"]]), axis=1, return_counts=True
        )
        for (slot, q), k in zip(pairs.T.tolist(), counts.tolist(), strict=True):
            available[slot] -= nanos[q] * k
    terms: dict[tuple[int, int], int] = {}
    for key, value in zip(zip(slot_layout, slot_rel, strict=True), capacity, strict=True):
        terms[key] = math.gcd(terms.get(key, 0), value)
    entries = list(zip(out["table_layout"].tolist(), out["table_rel"].tolist(), strict=True))
    quantities = out["table_quantity"].tolist()
    for key, q in zip(entries, quantities, strict=True):
        terms[key] = math.gcd(terms.get(key, 0), nanos[q])
    scaled = [
        v // (terms.get(key, 0) or 1)
        for v, key in zip(available, zip(slot_layout, slot_rel, strict=True), strict=True)
    ]
    amounts_exact = [
        nanos[q] // (terms.get(key, 0) or 1) for key, q in zip(entries, quantities, strict=True)
    ]
    if all(abs(v) < _INT64_SAFE for v in scaled) and all(
        abs(a) < _INT64_SAFE for a in amounts_exact
    ):
        return np.asarray(scaled, dtype=np.int64), np.asarray(amounts_exact, np.int64), None
    return (
        np.zeros(len(scaled), dtype=np.int64),
        np.zeros(len(amounts_exact), dtype=np.int64),
        (scaled, amounts_exact),
    )


def _check_one_side(
    snap: Snapshot, out: dict[str, Any], keys: tuple[list[int], list[int]]
) -> BeyondExactRange | None:
    """:func:`draspeed.engine.beyond.one_side` for each counter slot: its value against
    what its layout's devices consume and committed devices hold of it (only where some
    value is beyond the exact range). The first refusal, or None."""
    nanos = snap.table.names.quantity_nanos
    if not any(map(beyond.is_stand_in, nanos)):
        return None
    quantities = snap.table.names.quantities
    zero = (0, Quantity.from_int(0))
    slot_value = [
        (nanos[q], quantities[q]) if q >= 0 else zero for q in out["slot_quantity"].tolist()
    ]
    slot_layout, slot_rel = keys
    consumed: dict[tuple[int, int], list[tuple[int, Quantity]]] = {}
    entries = zip(out["table_layout"].tolist(), out["table_rel"].tolist(), strict=True)
    for key, q in zip(entries, out["table_quantity"].tolist(), strict=True):
        consumed.setdefault(key, []).append((nanos[q], quantities[q]))
    held: dict[int, list[tuple[int, Quantity]]] = {}
    for slot, q in zip(out["held_slot"].tolist(), out["held_quantity"].tolist(), strict=True):
        held.setdefault(slot, []).append((nanos[q], quantities[q]))
    strings = snap.table.names.string_list
    for slot, key in enumerate(zip(slot_layout, slot_rel, strict=True)):
        set_id, counter_id = out["slot_set"][slot], out["slot_counter"][slot]
        what = f"counter {strings[set_id]}/{strings[counter_id]}"
        try:
            beyond.one_side([slot_value[slot]], consumed.get(key, []) + held.get(slot, []), what)
        except BeyondExactRange as exc:
            return exc
    return None
