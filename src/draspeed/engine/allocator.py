"""The fast engine's public face: upstream's ``Allocate`` contract over a Snapshot."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from draspeed import arguments
from draspeed.api._model_tree import Template, clone, fill_template
from draspeed.api.coerce import ClaimsInput, NodeInput, as_claims, as_node
from draspeed.api.model import (
    AllocationResult,
    DeviceClass,
    Node,
    ResourceClaim,
)
from draspeed.cel import check_deadline
from draspeed.collector import collector_paused
from draspeed.engine import _core
from draspeed.engine._prepared import KnownAnswers, PerThread, PreparedAnswers
from draspeed.engine.analogy import Recipe, kind_of_answer, located_picks, make_recipe
from draspeed.engine.answers_ahead import answer_ahead, worth_a_window
from draspeed.engine.beyond import BeyondExactRange
from draspeed.engine.claim_arrays import (
    DEFERRED,
    MAX_RESULTS,
    ClaimArrays,
    SelectorFailure,
    claim_arrays,
    claims_signature,
    forget_claim_arrays,
    render,
)
from draspeed.engine.feasibility import DOES_NOT_FIT as F_DOES_NOT_FIT
from draspeed.engine.feasibility import ERROR as F_ERROR
from draspeed.engine.feasibility import FITS as F_FITS
from draspeed.engine.feasibility import NODE_ERROR as F_NODE_ERROR
from draspeed.engine.feasibility import TIMEOUT as F_TIMEOUT
from draspeed.engine.feasibility import Feasibility
from draspeed.engine.layout import Layout
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.rules import texts
from draspeed.rules.results import (
    ChosenDevice,
    ResultError,
    build_allocation_result,
    merge_config,
)

if TYPE_CHECKING:
    from draspeed.reference import ReferenceAllocator

_OUT = _core.OUTCOME
_OUTCOME_MIN = min(_OUT.values())
# A search outcome (less _OUTCOME_MIN) -> the node's feasibility status.
_STATUS_OF_OUTCOME = np.full(max(_OUT.values()) - _OUTCOME_MIN + 1, F_DOES_NOT_FIT, np.int8)
_STATUS_OF_OUTCOME[_OUT["found"] - _OUTCOME_MIN] = F_FITS
_STATUS_OF_OUTCOME[_OUT["deadline"] - _OUTCOME_MIN] = F_TIMEOUT
for _outcome in ("selector_error", "constraint_error", "overflow"):
    _STATUS_OF_OUTCOME[_OUT[_outcome] - _OUTCOME_MIN] = F_ERROR


class Stats(NamedTuple):
    """Counters of one call.

    ``search_steps`` is the fast engine's own work counter: one step where upstream's
    search makes one ``allocateOne`` call. It equals upstream's
    ``NumAllocateOneInvocations`` wherever the engine searches as upstream does, and
    is smaller where it prunes (subtrees that provably hold no solution: asking for
    n+1 of n identical devices takes 1 step, upstream 2^n); it is never larger. The
    reference engine counts upstream's steps exactly
    (``ReferenceAllocator.last_stats.num_allocate_one_invocations``).

    A named tuple: made on every call, and a frozen dataclass costs three times as much.
    """

    search_steps: int = 0


_NO_WORK = Stats()
# The counters of small searches, made once (a call makes one, and most take few steps).
_FEW_STEPS = tuple(Stats(k) for k in range(1024))


def _core_deadline(deadline: float | None) -> float:
    """``deadline`` as the compiled core takes it, where 0 means none: one at or before
    0 (long passed, as ``allocate`` treats it) becomes the smallest positive one."""
    if deadline is None:
        return 0.0
    return max(deadline, 1e-9)


def _stats_of(work: int) -> Stats:
    return _FEW_STEPS[work] if work < len(_FEW_STEPS) else Stats(work)


class Allocator:
    """Allocates claims on one node at a time, exactly as upstream's allocator does.

    Build once per snapshot and call :meth:`allocate` for each (claims, node).
    Thread-safety: ``allocate`` keeps its state per call; many threads may use one
    allocator. ``last_stats`` is per thread: the stats of the calling thread's last call.
    """

    def __init__(
        self, snapshot: Snapshot, *, share_id: Callable[[], str] = lambda: str(uuid.uuid4())
    ) -> None:
        """``share_id`` makes the shareID of each shared allocation (tests may fix it)."""
        self.snapshot = arguments.instance_of(snapshot, Snapshot, "snapshot", "a Snapshot")
        if not callable(share_id):
            raise TypeError(f"share_id: expected a function, got {arguments.type_name(share_id)}")
        self.share_id = share_id
        # The reference engine over the same state, made when first needed (rarely:
        # see _by_reference).
        self._reference: ReferenceAllocator | None = None
        # Per thread, the stats of its last call (a thread reading another's would read
        # the work of a search it did not ask for).
        self.stats = PerThread(_NO_WORK)

    @property
    def last_stats(self) -> Stats:
        """The counters of the calling thread's last call."""
        return cast(Stats, self.stats.get())

    @last_stats.setter
    def last_stats(self, stats: Stats) -> None:
        self.stats.set(stats)

    def allocate(
        self, claims: ClaimsInput, node: NodeInput, *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """One result per claim (input order), or None when the claims do not fit.

        Raises :class:`AllocationError` with upstream's text for fatal errors,
        :class:`NodeAllocationError` when invalid pools made the node unsuitable,
        and :class:`AllocationTimeout` when ``deadline`` (a ``time.monotonic()``
        value) passes first. The default, ``None``, is no bound at all (unlike the
        command line, whose ``--timeout`` defaults to kube-scheduler's 10 s): a
        scheduler passes ``time.monotonic() + 10`` to bound a Filter call as
        kube-scheduler does.

        ``claims`` and ``node`` may also be plain dicts or kubernetes-client models
        (``ResourceV1ResourceClaim``, ``V1ResourceClaimList``, ``V1Node``); ``node``
        a node name. Wrong types are a TypeError naming the argument.
        """
        claims = as_claims(claims)
        target = node if type(node) is Node else self._nodes([node], "node")[0]
        deadline = arguments.deadline(deadline)
        self.last_stats = _NO_WORK
        if not claims:
            return []
        return self._allocate(claims, claims_signature(claims), target, deadline)

    def prepare(self, claims: ClaimsInput) -> PreparedClaims:
        """One pod's claims, read once, to ask about node after node.

        As upstream's scheduler does (an allocator per pod in PreFilter, ``Allocate``
        per node in Filter): the claims' specs are read here, so changing them in place
        afterwards does not change the answers; prepare again instead.
        """
        return PreparedClaims(self, as_claims(claims))

    def _allocate(
        self, claims: list[ResourceClaim], key: bytes, node: Node, deadline: float | None
    ) -> list[AllocationResult] | None:
        try:  # (a try costs nothing until it catches: no call layer on the warm path)
            layout, n = self.snapshot.layout_for(node)
            while True:
                # (Inline: a warm call is a few microseconds, a Python call a tenth of one.)
                arrays = layout.claim_sets.get(key) or claim_arrays(layout, claims, deadline, key)
                if arrays.node_errors:
                    error = arrays.node_errors.get(n)
                    if error is not None:
                        raise AllocationError(render(error, claims))
                assert arrays.problem is not None
                if deadline is not None:
                    check_deadline(deadline)
                state = _state(arrays, layout)
                # The search is a function of the arrays and the node alone (with the arrays'
                # own state): a node that fitted before fits the same way, with the same work.
                known = arrays.answers.get(n) if state is None else None
                if known is not None:
                    stats, shape, leaves, shared = known
                    self.last_stats = stats
                    return _answer_copies(shape, leaves, shared, self.share_id)
                code, work, picks, chosen, err_alt, err_pos = _core.search_node(
                    arrays.problem, n, _core_deadline(deadline), state
                )
                stats = self.last_stats = _stats_of(work)
                templates = arrays.results.get((n, picks, chosen)) if code == _FOUND else None
                if templates is not None and state is None:
                    arrays.remember(n, stats, templates)
                if templates is not None:  # the common answer, usually asked before: copy and go
                    return _copies(arrays, templates, self.share_id)
                if code == _FOUND:
                    made = _by_analogy(arrays, claims, n, picks, chosen)
                    if made is not None:
                        if state is None:
                            arrays.answers[n] = (stats, made[0], made[1], False)
                        return fill_template(*made)
                outcome = _Outcome(arrays, claims, n, code, work, err_alt, err_pos, picks, chosen)
                try:
                    answer = outcome.raise_or_results(self.share_id)
                except _Deferred:
                    forget_claim_arrays(layout, key, arrays)  # search again, one verdict more known
                    continue
                if answer is not None and state is None:
                    # Remembered at once: the next pod asking this node copies it and goes
                    # (a scheduler asks every node once per pod of the shape).
                    arrays.remember(n, stats, arrays.results[(n, picks, chosen)])
                return answer
        except BeyondExactRange:
            return self._by_reference(claims, node, deadline)

    def _by_reference(
        self, claims: list[ResourceClaim], node: Node, deadline: float | None
    ) -> list[AllocationResult] | None:
        """The reference engine's answer, where the compiled search's stand-ins for
        quantities beyond the exact range cannot decide (two different ones meet in
        one comparison, :mod:`draspeed.engine.beyond`): the same answer and work, the
        reference engine's time."""
        reference = self._reference
        if reference is None:
            from draspeed.reference import ReferenceAllocator  # (rare: loaded when needed)

            snap = self.snapshot
            reference = self._reference = ReferenceAllocator(
                snap.slices, list(snap.classes.values()), snap.allocated_claims, snap.features
            )
        try:
            results = reference.allocate(claims, node, deadline=deadline)
        finally:
            self.last_stats = _stats_of(reference.last_stats.search_steps)
        if results is not None:
            _fresh_share_ids(results, self.share_id)
        return results

    def feasible_nodes(
        self,
        claims: ClaimsInput,
        nodes: Sequence[NodeInput] | None = None,
        *,
        deadline: float | None = None,
    ) -> Feasibility:
        """For every node (``nodes``, or the snapshot's known nodes): what ``allocate``
        would answer there, in one pass: the claims' arrays are built once over all
        nodes and the compiled core searches node after node without returning to
        Python. ``nodes`` are Nodes or names (one name alone is one node); names not
        known to the snapshot are unlabelled nodes. ``deadline`` as for ``allocate``."""
        claims = as_claims(claims)
        deadline = arguments.deadline(deadline)
        snap = self.snapshot
        layout = (
            snap.cluster_layout() if nodes is None else snap.layout(self._nodes(nodes, "nodes"))
        )
        if not claims:
            N = len(layout.nodes)
            return Feasibility(
                layout.names,
                np.full(N, F_FITS, dtype=np.int8),
                np.zeros(N, dtype=np.int64),
                {},
                lambda n: [],
            )
        key = claims_signature(claims)
        with collector_paused():  # per-node answers: many objects, no cycles
            while True:
                try:
                    return self._feasible(claims, layout, key, deadline)
                except _Deferred:
                    forget_claim_arrays(layout, key, None)  # search again, one verdict more known
                except BeyondExactRange:
                    return self._one_by_one(claims, layout.nodes, deadline)

    def _one_by_one(
        self, claims: list[ResourceClaim], nodes: Sequence[Node], deadline: float | None
    ) -> Feasibility:
        """:meth:`feasible_nodes` as ``allocate`` on each node in turn."""
        N = len(nodes)
        codes = np.full(N, F_ERROR, dtype=np.int8)
        work = np.zeros(N, dtype=np.int64)
        errors: dict[int, str] = {}
        found = self._ask_each(nodes, range(N), claims, deadline, codes, work, errors)
        share_id = self.share_id
        return Feasibility(
            [node.name for node in nodes],
            codes,
            work,
            errors,
            lambda n: [_copy_result(r, share_id) for r in found.get(n, ())],
        )

    def _feasible(
        self, claims: list[ResourceClaim], layout: Layout, key: bytes, deadline: float | None
    ) -> Feasibility:
        try:
            arrays = claim_arrays(layout, claims, deadline, key)
        except AllocationTimeout as exc:
            N = len(layout.nodes)
            codes = np.full(N, F_TIMEOUT, dtype=np.int8)
            errors = dict.fromkeys(range(N), str(exc))
            return Feasibility(layout.names, codes, np.zeros(N, np.int64), errors, lambda n: [])
        N = len(layout.nodes)
        codes = np.full(N, F_ERROR, dtype=np.int8)
        work = np.zeros(N, dtype=np.int64)
        errors = {n: render(e, claims) for n, e in arrays.node_errors.items()}
        out: dict[str, Any] = {}
        searched = arrays.searchable
        if layout.stale:  # nodes whose pools changed since the layout: asked one by one
            searched = searched[~np.isin(searched, list(layout.stale))]
        if arrays.problem is not None and len(searched):
            state = _state(arrays, layout)
            # Searched with the arrays' own state over all their searchable nodes, the
            # answer is the same every time (as for one node): remembered once complete.
            whole = state is None and not layout.stale
            passed = deadline is not None and time.monotonic() >= deadline
            remembered = arrays.searched if whole and not passed else None
            if remembered is not None:
                out = remembered
            else:
                out = _core.search_nodes(arrays.problem, _core_deadline(deadline), searched, state)
                if whole and not (out["outcome"] == _DEADLINE).any():
                    arrays.searched = out
            found = out["outcome"]
            # One lookup per node: outcome -> status (an invalid pool's node that failed
            # for want of devices is a node error).
            status = _STATUS_OF_OUTCOME[found - _OUTCOME_MIN]
            if layout.has_invalid:
                status[(status == F_DOES_NOT_FIT) & layout.any_invalid[searched]] = F_NODE_ERROR
            codes[searched] = status
            work[searched] = out["work"]
            # Messages only where there is one to say (usually no node at all).
            for j in np.flatnonzero(status > F_DOES_NOT_FIT).tolist():
                n = int(searched[j])
                error = _Outcome.from_row(arrays, claims, n, out, j).error()
                errors[n] = str(error)
        # Nodes whose pools changed after the layout was made: each asked on its own.
        stale = sorted(layout.stale)
        alone = self._ask_each(layout.nodes, stale, claims, deadline, codes, work, errors)
        share_id = self.share_id

        def results(n: int) -> list[AllocationResult]:
            if n in alone:
                return [_copy_result(r, share_id) for r in alone[n]]
            # The node's row among the searched (ascending), -1 if it was not searched.
            row = int(np.searchsorted(searched, n))
            if row == len(searched) or searched[row] != n:
                row = -1
            outcome = _Outcome.from_row(arrays, claims, n, out, row)
            return outcome.results(share_id)

        return Feasibility(layout.names, codes, work, errors, results)

    def _ask_each(
        self,
        nodes: Sequence[Node],
        which: Iterable[int],
        claims: list[ResourceClaim],
        deadline: float | None,
        codes: np.ndarray,
        work: np.ndarray,
        errors: dict[int, str],
    ) -> dict[int, list[AllocationResult]]:
        """``allocate`` on ``nodes[n]`` for each n of ``which``: its status, work and
        error into the arrays, its results returned (by n)."""
        found: dict[int, list[AllocationResult]] = {}
        for n in which:
            node = nodes[n]
            errors.pop(n, None)
            try:
                results = self.allocate(claims, node, deadline=deadline)
            except AllocationTimeout as exc:
                codes[n], errors[n] = F_TIMEOUT, str(exc)
            except NodeAllocationError as exc:
                codes[n], errors[n] = F_NODE_ERROR, str(exc)
            except AllocationError as exc:
                codes[n], errors[n] = F_ERROR, str(exc)
            else:
                codes[n] = F_DOES_NOT_FIT if results is None else F_FITS
                if results is not None:
                    found[n] = results
            work[n] = self.last_stats.search_steps
        return found

    def _nodes(self, nodes: Sequence[NodeInput] | NodeInput | None, name: str) -> list[Node]:
        if nodes is None:
            return self.snapshot.nodes
        if isinstance(nodes, (str, Node, Mapping)):
            nodes = [nodes]  # one node: a name is not a sequence of characters
        elif not isinstance(nodes, Iterable):
            raise TypeError(
                f"{name}: expected Nodes or node names, got {arguments.type_name(nodes)}"
            )
        known = self.snapshot.given_nodes
        found = []
        for i, n in enumerate(nodes):
            if isinstance(n, str):
                n = known.get(n) or n  # a name of a given Node: that Node, with its labels
            found.append(as_node(n, f"{name}[{i}]" if name == "nodes" else name))
        return found


class PreparedClaims(PreparedAnswers):
    """One pod's claims read once (:meth:`Allocator.prepare`), asked node after node.

    ``allocate(node)`` answers exactly as ``Allocator.allocate(claims, node)`` does for
    the claims as they were when prepared, without reading them again per node: a
    known node of the snapshot asked again is a compiled lookup and copy of its
    remembered answer (:mod:`draspeed.engine._prepared`), anything else the long way
    below. Thread-safety as :class:`Allocator` (``last_stats`` per thread: many threads
    may ask one prepared pod about different nodes, as kube-scheduler's Filter does).
    """

    def __init__(self, allocator: Allocator, claims: Sequence[ResourceClaim]) -> None:
        self.allocator = allocator
        self.claims = list(claims)
        # The specs as encoded now: what the answers are about from here on.
        self.key = claims_signature(self.claims) if self.claims else b""
        self.stats = PerThread(_NO_WORK)
        self.allocator_stats = allocator.stats
        self.known = None

    def _long_way(self, node: NodeInput, deadline: float | None) -> list[AllocationResult] | None:
        self.last_stats = _NO_WORK
        if not self.claims:
            return []
        allocator = self.allocator
        target = node if type(node) is Node else allocator._nodes([node], "node")[0]
        if deadline is not None:
            deadline = arguments.deadline(deadline)
        allocator.last_stats = _NO_WORK  # what a call that stops before searching leaves
        try:
            if self.known is not None and deadline is None:  # a pass over the nodes
                self._answer_ahead(self.known, target)
            return allocator._allocate(self.claims, self.key, target, deadline)
        finally:
            self.last_stats = allocator.last_stats
            # (Again after every long way: the claim arrays may have been made anew.)
            self.known = _known_answers(allocator.snapshot, self.key)

    def _answer_ahead(self, known: KnownAnswers, node: Node) -> None:
        """A known node without an answer, asked after another: the pod is going
        through the nodes, and the ones ahead are answered in one pass
        (:mod:`draspeed.engine.answers_ahead`)."""
        arrays: ClaimArrays = known.arrays
        n = known.position.get(id(node), -1)
        if n < 0 or known.nodes[n] is not node or n in known.answers:
            return
        if worth_a_window(arrays, n):
            with collector_paused():  # many answers at once, no cycles among them
                answer_ahead(arrays, n, _FEW_STEPS, Stats)

    def feasible_nodes(
        self, nodes: Sequence[NodeInput] | None = None, *, deadline: float | None = None
    ) -> Feasibility:
        """See :meth:`Allocator.feasible_nodes`."""
        return self.allocator.feasible_nodes(self.claims, nodes, deadline=deadline)


def _known_answers(snapshot: Snapshot, key: bytes) -> KnownAnswers | None:
    """Where a prepared pod's remembered answers are: the places of the snapshot's
    known nodes, and the answers of the claim arrays searched there with their own
    state."""
    layout = snapshot.known_layout()
    arrays = None if layout is None else layout.claim_sets.get(key)
    if arrays is None or arrays.layout is not layout:  # searched with another state
        return None
    # (Stale nodes have no answers here: they are searched in layouts of their own.)
    return KnownAnswers(arrays)


def _state(arrays: ClaimArrays, layout: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The committed state to search with: the layout's, if the claim arrays were built
    on an earlier version of it (they do not depend on that state)."""
    return None if arrays.layout is layout else layout.state


class _Deferred(Exception):
    """The search reached a device whose selector verdict was deferred, and it matches
    or does not: the claim arrays are built again with that verdict known."""


_FOUND = _OUT["found"]
_SELECTOR_ERROR = _OUT["selector_error"]
_CONSTRAINT_ERROR = _OUT["constraint_error"]
_DEADLINE = _OUT["deadline"]
_OVERFLOW = _OUT["overflow"]

Picks = tuple[tuple[tuple[int, int], ...], ...]  # per claim: (alternative, node-local position)


class _Outcome:
    """One node's search answer, turned into upstream's answer."""

    __slots__ = (
        "arrays",
        "chosen_sub",
        "claims",
        "code",
        "err_alt",
        "err_pos",
        "n",
        "picks",
        "work",
    )

    def __init__(
        self,
        arrays: ClaimArrays,
        claims: list[ResourceClaim],
        n: int,
        code: int,
        work: int,
        err_alt: int,
        err_pos: int,
        picks: Picks,
        chosen_sub: tuple[int, ...],
    ) -> None:
        self.arrays, self.claims, self.n = arrays, claims, n
        self.code, self.work, self.err_alt, self.err_pos = code, work, err_alt, err_pos
        self.picks, self.chosen_sub = picks, chosen_sub

    @classmethod
    def from_row(
        cls, arrays: ClaimArrays, claims: list[ResourceClaim], n: int, out: dict[str, Any], j: int
    ) -> _Outcome:
        """Row j of a ``search_nodes`` answer (picks are read only if the node fits)."""
        code = int(out["outcome"][j])
        picks: Picks = ()
        chosen_sub: tuple[int, ...] = ()
        if code == _FOUND:
            C = len(claims)
            plan = arrays.plan
            assert plan is not None
            R = len(plan.request_alts)
            res_n = out["res_n"][j * C : (j + 1) * C].tolist()
            per_claim = []
            for c in range(C):
                base = (j * C + c) * MAX_RESULTS
                alts = out["res_alt"][base : base + res_n[c]].tolist()
                positions = out["res_pos"][base : base + res_n[c]].tolist()
                per_claim.append(tuple(zip(alts, positions, strict=True)))
            picks = tuple(per_claim)
            chosen_sub = tuple(out["chosen_sub"][j * R : (j + 1) * R].tolist())
        return cls(
            arrays,
            claims,
            n,
            code,
            int(out["work"][j]),
            int(out["err_alt"][j]),
            int(out["err_pos"][j]),
            picks,
            chosen_sub,
        )

    def error(self) -> AllocationError | None:
        """The error upstream returns for this node, or None (found / does not fit)."""
        code = self.code
        if code == _FOUND:
            return None
        arrays = self.arrays
        plan = arrays.plan
        assert plan is not None
        offset = int(arrays.layout.node_ptr[self.n])
        if code == _SELECTOR_ERROR:
            a, lp = self.err_alt, offset + self.err_pos
            alt = plan.alternatives[a]
            failure: SelectorFailure | None = arrays.alt_failures[a][lp]
            assert failure is not None
            if failure[3] == DEFERRED:
                failure = arrays.resolve_deferred(alt, plan.rows[a], lp)
                if failure is None:  # the device does not fail: the search must go on
                    raise _Deferred()
            text = arrays.selector_error_text(alt, failure, lp)
            return AllocationError(render(text, self.claims))
        if code == _CONSTRAINT_ERROR:
            a, lp = self.err_alt, offset + self.err_pos
            alt = plan.alternatives[a]
            device = arrays.snap.device_id(int(arrays.layout.g[lp]))
            return AllocationError(
                texts.constraint_not_satisfied(self.claims[alt.claim].key, alt.name, device)
            )
        if code == _DEADLINE:
            return AllocationTimeout()
        if code == _OVERFLOW:
            # The builder switches to exact sums before int64 could overflow; reaching
            # this means that bound is wrong, and guessing would be worse than stopping.
            return AllocationError(
                "draspeed internal error: an int64 counter or capacity sum "
                "overflowed in the compiled core"
            )
        if arrays.layout.any_invalid[self.n] and self.n not in arrays.layout.errors:
            return NodeAllocationError(texts.INVALID_POOLS)
        return None

    def raise_or_results(self, share_id: Callable[[], str]) -> list[AllocationResult] | None:
        if self.code != _FOUND:
            error = self.error()
            if error is not None:
                raise error
            return None
        return self.results(share_id)

    def results(self, share_id: Callable[[], str]) -> list[AllocationResult]:
        """Same question, same picks: the same result, copied, with fresh shareIDs."""
        key = (self.n, self.picks, self.chosen_sub)
        found = _remembered(self.arrays, key, share_id)
        if found is not None:
            return found
        offset = int(self.arrays.layout.node_ptr[self.n])
        picks = [[(a, offset + p) for a, p in claim] for claim in self.picks]
        templates = _build_results(self.arrays, self.claims, self.n, picks, list(self.chosen_sub))
        self.arrays.results[key] = templates
        if any(r.share_id is not None for t in templates for r in t.devices.results):
            self.arrays.shared_results.add(id(templates))  # kept alive by ``results``
        return _copies(self.arrays, templates, share_id)


def _remembered(
    arrays: ClaimArrays, key: tuple[Any, ...], share_id: Callable[[], str]
) -> list[AllocationResult] | None:
    """Copies of the results remembered for (node, picks, subrequests), or None."""
    templates = arrays.results.get(key)
    return None if templates is None else _copies(arrays, templates, share_id)


def _copies(
    arrays: ClaimArrays, templates: list[AllocationResult], share_id: Callable[[], str]
) -> list[AllocationResult]:
    """Remembered results as the caller may change them: the list and every result in
    it copied in compiled code, with fresh shareIDs where a device is shared."""
    copies: list[AllocationResult] = clone(templates)
    if id(templates) in arrays.shared_results:
        _fresh_share_ids(copies, share_id)
    return copies


def _answer_copies(
    shape: Template,
    leaves: tuple[object, ...],
    shared: bool,
    share_id: Callable[[], str],
) -> list[AllocationResult]:
    """A remembered answer (``ClaimArrays.answers``) as the caller may change it."""
    copies: list[AllocationResult] = fill_template(shape, leaves)
    if shared:
        _fresh_share_ids(copies, share_id)
    return copies


_UNSEEN = object()


def _by_analogy(
    arrays: ClaimArrays,
    claims: list[ResourceClaim],
    n: int,
    picks: Picks,
    chosen_sub: tuple[int, ...],
) -> tuple[Template, tuple[object, ...]] | None:
    """Node n's first answer as a shape and its leaves, made from an earlier node's
    answer of the same kind (:mod:`draspeed.engine.analogy`), or None: the long way."""
    offset = arrays.layout.node_ptr.item(n)
    absolute = [[(a, offset + p) for a, p in claim] for claim in picks]
    found = located_picks(arrays, absolute)
    if found is None:
        return None
    located, selection = found
    kind = kind_of_answer(picks, chosen_sub, selection)
    recipe = arrays.analogies.get(kind, _UNSEEN)
    if recipe is None:
        return None
    node_name = arrays.layout.nodes[n].name
    if recipe is _UNSEEN:
        try:
            real = _build_results(arrays, claims, n, absolute, list(chosen_sub))
        except AllocationError:  # (a node selector upstream refuses: the long way says so)
            arrays.analogies[kind] = None
            return None
        made = make_recipe(arrays, claims, located, chosen_sub, node_name, real)
        arrays.analogies[kind] = made
        if made is None:
            return None
        return made.shape, made.leaves
    assert isinstance(recipe, Recipe)
    return recipe.shape, recipe.fill(node_name, located)


def _build_results(
    arrays: ClaimArrays,
    claims: list[ResourceClaim],
    n: int,
    picks: list[list[tuple[int, int]]],
    chosen_sub: list[int],
) -> list[AllocationResult]:
    snap, layout, plan = arrays.snap, arrays.layout, arrays.plan
    assert plan is not None
    node = layout.nodes[n]
    subs = tuple(chosen_sub)
    out = []
    for c, claim in enumerate(claims):
        chosen = []
        for a, lp in picks[c]:
            alt = plan.alternatives[a]
            device_id, device, rs = layout.located_at(lp)
            share = arrays.share_at(a, lp)
            multi = share is not None
            chosen.append(
                ChosenDevice(
                    request=alt.name,
                    parent_request=alt.parent,
                    device_id=device_id,
                    device=device,
                    slice=rs,
                    share_id="" if multi else None,  # a fresh one per copy
                    consumed_capacity=share or None,
                    admin_access=alt.admin,
                )
            )
        # The classes, subrequests and configs depend on the claim and the subrequests
        # taken, not on the node: worked out once per claim set (results are copied
        # before they are handed out).
        found = arrays.configs.get((c, subs))
        if found is None:
            classes: list[DeviceClass | None] = []
            selected: list[int | None] = []
            for r in plan.claim_requests[c]:
                alt_ids = plan.request_alts[r]
                if plan.request_has_subs[r]:
                    k = chosen_sub[r]
                    selected.append(k)
                    classes.append(plan.alternatives[alt_ids[k]].device_class)
                else:
                    selected.append(None)
                    classes.append(plan.alternatives[alt_ids[0]].device_class)
            found = (classes, selected, merge_config(claim, classes, selected))
            arrays.configs[(c, subs)] = found
        classes, selected, config = found
        try:
            out.append(
                build_allocation_result(
                    claim, chosen, classes, selected, node.name, snap.features, config
                )
            )
        except ResultError as exc:
            raise AllocationError(str(exc)) from exc
    return out


def _copy_result(template: AllocationResult, share_id: Callable[[], str]) -> AllocationResult:
    """A result the caller may change freely (a compiled deep copy of the remembered
    one), with a fresh shareID per shared device."""
    result: AllocationResult = clone(template)
    _fresh_share_ids([result], share_id)
    return result


def _fresh_share_ids(results: list[AllocationResult], share_id: Callable[[], str]) -> None:
    for result in results:
        for r in result.devices.results:
            if r.share_id is not None:
                r.share_id = share_id()
