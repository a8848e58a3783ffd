"""The optimal bound: how many pods of some shapes could fit if devices were chosen best.

For each distinct node state (independent nodes in the same state share one solve,
:mod:`draspeed.analysis.placement`), a mixed-integer program over the node's devices
(:mod:`draspeed.analysis.node_model`), solved with ``scipy.optimize.milp`` (HiGHS):

- one integer per shape: its pods on the node; the objective is their sum;
- per request (or firstAvailable alternative) and device the selectors accept (class
  and request selectors evaluated as the engine evaluates them, taints against the
  request's tolerations): how many pods take that device for that request; each
  pod takes exactly ``count`` devices per request (``All``: every matching device);
- a device is exclusive (one use, none if in use), or shared within its capacity
  (consumable capacity: each share consumes what upstream's policy rounds the
  request to, committed shares included);
- counters (MIG memory slices, multiprocessors, ...) are never exceeded;
- ``matchAttribute``: each pod's devices for the constrained requests come from one
  value group (a pod count per group); ``distinctAttribute``: each pod takes at most
  one device per value.

The cluster bound is the sum over nodes. Where a feature is not modelled exactly
the node's bound is an upper bound and says why (``notes``): firstAvailable
alternatives are chosen freely (the allocator takes the first that fits), a
distinctAttribute over several requests or a second matchAttribute on the same
requests is relaxed, list-valued attributes in constraints are ignored, pools seen by
several nodes are counted in full for each of them, a solve cut short by the time
limit reports HiGHS's dual bound. A shape whose requests take no device (admin
access only) is unbounded: its bound is None.

With ``keep`` (a :class:`~draspeed.analysis.fit.FitReport`), each node must also keep
at least the pods of each shape the fill placed there: the optimum over device
choices for those pods and any more, so ``kept - placed`` is what the fill's device
choices cost (fragmentation).

scipy is imported when a bound is computed (``pip install 'draspeed[analysis]'``).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed import arguments
from draspeed.analysis.amounts import nanos_of
from draspeed.analysis.node_model import ModelDevice, NodeModel, Slot
from draspeed.analysis.placement import Placer, State
from draspeed.analysis.requests import (
    AlternativeSpec,
    ShapeRequests,
    eligible,
    erring,
)
from draspeed.analysis.shapes import ShapeSource, as_shapes
from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.errors import SolverTimeLimit
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.capacity import consumed_amount, violates_policy
from draspeed.rules.tolerations import taint_blocks

if TYPE_CHECKING:
    from draspeed.analysis.fit import FitReport
    from draspeed.api.model import Node
    from draspeed.engine.snapshot import Snapshot

DEFAULT_TIME_LIMIT = 10.0  # seconds per solve
# An upper bound for counts nothing else limits; an optimum this large is unbounded.
_UNLIMITED = 1e9
_LIST_KINDS = frozenset({"ints", "bools", "strings", "versions"})

SHARED_POOLS = "pools seen by several nodes are counted in full for each of them"


@dataclass
class NodeBound:
    """The bound on one node: the most pods of the shapes together, and each alone."""

    node: str
    optimal: int | None  # None: unbounded (a shape takes no device)
    by_shape: dict[str, int]  # the pods of each shape in one optimum
    alone: dict[str, int | None]  # each shape on its own
    exact: bool  # False: an upper bound (see notes)
    notes: list[str] = field(default_factory=list)
    # With a fill kept: the optimum keeping at least its pods, and its pods per shape.
    kept: int | None = None
    kept_by_shape: dict[str, int] | None = None
    placed: int | None = None
    placed_by_shape: dict[str, int] | None = None

    @property
    def gap(self) -> int | None:
        """Pods the fill's device choices cost on this node (with a fill kept)."""
        if self.kept is None or self.placed is None:
            return None
        return self.kept - self.placed

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "node": self.node,
            "optimal": self.optimal,
            "optimalByShape": dict(self.by_shape),
            "alone": dict(self.alone),
            "exact": self.exact,
            "notes": list(self.notes),
        }
        if self.kept is not None:
            out.update(
                {
                    "placed": self.placed,
                    "placedByShape": dict(self.placed_by_shape or {}),
                    "kept": self.kept,
                    "keptByShape": dict(self.kept_by_shape or {}),
                    "gap": self.gap,
                }
            )
        return out


@dataclass
class BoundReport:
    """The bound per node and for the cluster (sums)."""

    shapes: list[str]
    nodes: list[NodeBound]
    solves: int  # programs solved (distinct node states x objectives)
    seconds: float
    # Other fills kept (also_keep): strategy -> (placed, kept optimum, gap).
    strategies: dict[str, tuple[int, int | None, int | None]] = field(default_factory=dict)

    def node(self, name: str) -> NodeBound:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    @property
    def optimal(self) -> int | None:
        return _sum([n.optimal for n in self.nodes])

    @property
    def by_shape(self) -> dict[str, int]:
        return {s: sum(n.by_shape.get(s, 0) for n in self.nodes) for s in self.shapes}

    @property
    def alone(self) -> dict[str, int | None]:
        return {s: _sum([n.alone.get(s) for n in self.nodes]) for s in self.shapes}

    @property
    def exact(self) -> bool:
        return all(n.exact for n in self.nodes)

    @property
    def notes(self) -> list[str]:
        return sorted({note for n in self.nodes for note in n.notes})

    @property
    def kept(self) -> int | None:
        return _sum([n.kept for n in self.nodes])

    @property
    def placed(self) -> int | None:
        return _sum([n.placed for n in self.nodes])

    @property
    def gap(self) -> int | None:
        return _sum([n.gap for n in self.nodes])

    def gap_by_shape(self) -> dict[str, int]:
        """Per shape: pods more in the kept optimum than the fill placed."""
        out = dict.fromkeys(self.shapes, 0)
        for n in self.nodes:
            if n.kept_by_shape is not None and n.placed_by_shape is not None:
                for s in self.shapes:
                    out[s] += n.kept_by_shape.get(s, 0) - n.placed_by_shape.get(s, 0)
        return out

    def to_dict(self, *, nodes: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "shapes": list(self.shapes),
            "optimal": self.optimal,
            "optimalByShape": self.by_shape,
            "alone": self.alone,
            "exact": self.exact,
            "notes": self.notes,
            "solves": self.solves,
            "seconds": round(self.seconds, 6),
        }
        if self.kept is not None:
            out.update(
                {
                    "placed": self.placed,
                    "kept": self.kept,
                    "gap": self.gap,
                    "gapByShape": self.gap_by_shape(),
                }
            )
        if self.strategies:
            out["strategies"] = {
                name: {"placed": placed, "kept": kept, "gap": gap}
                for name, (placed, kept, gap) in self.strategies.items()
            }
        if nodes:
            out["nodes"] = [n.to_dict() for n in self.nodes]
        return out


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def optimal_bound(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    nodes: Sequence[Node | str] | None = None,
    *,
    keep: FitReport | None = None,
    also_keep: Sequence[FitReport] = (),
    alone: bool = True,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
) -> BoundReport:
    """The bound of the shapes on every node (``nodes``, default: every known node).

    ``keep``: a fill of the same shapes on the same snapshot; every node then also
    reports the optimum keeping at least that fill's pods (``kept``, ``gap``).
    ``also_keep``: more fills (other strategies): their kept optimum and gap, for the
    cluster, in ``report.strategies``. ``alone``: also the bound of each shape on its
    own. ``time_limit``: seconds per solve (None: no limit).
    """
    from draspeed.analysis.fit import FitReport
    from draspeed.analysis.node_list import resolve_nodes, snapshot_of

    start = time.monotonic()
    snapshot_of(snapshot)
    if keep is not None:
        arguments.instance_of(keep, FitReport, "keep", "a FitReport (what fit returns)")
    also_keep = arguments.items_of(also_keep, FitReport, "also_keep", "a FitReport")
    arguments.flag(alone, "alone")
    time_limit = arguments.time_limit(time_limit)
    shapes = as_shapes(templates)
    node_list = resolve_nodes(snapshot, nodes)
    placer = Placer(snapshot, node_list, shapes)
    solver = _Solver(placer, time_limit)
    names = [s.name for s in shapes]
    for fill in [*([keep] if keep is not None else []), *also_keep]:
        if fill.shapes != names:
            raise ValueError(f"keep: a fill of other shapes ({', '.join(fill.shapes)})")
    placed_of = {} if keep is None else {n.node: n.pods for n in keep.nodes}
    others = {fill.strategy: {n.node: n.pods for n in fill.nodes} for fill in also_keep}
    kept_others: dict[str, list[int | None]] = {name: [] for name in others}
    placed_others: dict[str, int] = {name: 0 for name in others}
    out: list[NodeBound] = []
    for i, node in enumerate(node_list):
        problem = solver.problem(i)
        total, composition, exact, notes = solver.solve(problem, None, None)
        bound = NodeBound(
            node.name,
            total,
            dict(zip(names, composition, strict=True)),
            {},
            exact,
            notes,
        )
        if alone:
            for s, name in enumerate(names):
                bound.alone[name] = solver.solve(problem, s, None)[0]
        if keep is not None:
            placed = placed_of.get(node.name, {})
            lower = tuple(placed.get(name, 0) for name in names)
            kept, kept_composition, kept_exact, kept_notes = solver.solve(problem, None, lower)
            bound.kept = kept
            bound.kept_by_shape = dict(zip(names, kept_composition, strict=True))
            bound.placed = sum(lower)
            bound.placed_by_shape = dict(zip(names, lower, strict=True))
            bound.exact = bound.exact and kept_exact
            bound.notes = sorted(set(bound.notes) | set(kept_notes))
        for strategy, pods_of in others.items():
            pods = pods_of.get(node.name, {})
            lower = tuple(pods.get(name, 0) for name in names)
            kept_others[strategy].append(solver.solve(problem, None, lower)[0])
            placed_others[strategy] += sum(lower)
        out.append(bound)
    report = BoundReport(names, out, solver.solves, time.monotonic() - start)
    for strategy, kept_values in kept_others.items():
        total = _sum(kept_values)
        gap = None if total is None else total - placed_others[strategy]
        report.strategies[strategy] = (placed_others[strategy], total, gap)
    return report


def mix_bound(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    node: Node | str,
    weights: Sequence[float],
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
) -> int | None:
    """The most pods of the shapes one node holds with each shape's pods within one
    of its share of the total (``weights``, shape order): the mix as a fill deals it."""
    from draspeed.analysis.node_list import resolve_nodes, snapshot_of

    snapshot_of(snapshot)
    time_limit = arguments.time_limit(time_limit)
    shapes = as_shapes(templates)
    [target] = resolve_nodes(snapshot, [node])
    solver = _Solver(Placer(snapshot, [target], shapes), time_limit)
    return solver.solve(solver.problem(0), None, None, tuple(float(w) for w in weights))[0]


# --------------------------------------------------------------------------- the model


@dataclass
class _Problem:
    """One node's program, built once and solved for several objectives."""

    key: Any
    n_vars: int = 0
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    rows: list[tuple[dict[int, float], float, float]] = field(default_factory=list)
    pods: list[int] = field(default_factory=list)  # per shape: its pod-count variable
    unbounded: list[bool] = field(default_factory=list)  # per shape
    notes: set[str] = field(default_factory=set)  # why this is an upper bound

    def var(self, lower: float, upper: float) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.n_vars += 1
        return self.n_vars - 1

    def row(self, coeffs: dict[int, float], lower: float, upper: float) -> None:
        self.rows.append((coeffs, lower, upper))


class _Solver:
    """Builds and solves the programs, once per distinct node state and objective."""

    def __init__(self, placer: Placer, time_limit: float | None) -> None:
        self.placer = placer
        self.time_limit = time_limit
        self.verdicts = placer.verdicts
        self.features = placer.features
        self._problems: dict[Any, _Problem] = {}
        self._answers: dict[Any, tuple[int | None, list[int], bool, list[str]]] = {}
        self.solves = 0
        self._real_allocated: AllocatedState | None = None

    def problem(self, i: int) -> _Problem:
        placer = self.placer
        state = placer.state[i]
        key: Any = ("state", state.id) if state is not None else ("node", i)
        found = self._problems.get(key)
        if found is None:
            model, node, shared = self._model(i, state)
            found = self._problems[key] = self._build(key, model, node)
            if shared:
                found.notes.add(SHARED_POOLS)
        return found

    def _model(self, i: int, state: State | None) -> tuple[NodeModel, Node, bool]:
        placer = self.placer
        consumable = self.features.consumable_capacity
        if state is not None:
            rep = placer.nodes[state.kind.rep]
            claim = placer._holding_claim(state, state.holds)
            allocated = AllocatedState.from_claims([claim], consumable_capacity=consumable)
            return NodeModel(placer.published(i), allocated), rep, False
        node = placer.nodes[i]
        if self._real_allocated is None:
            self._real_allocated = AllocatedState.from_claims(
                placer.base.allocated_claims, consumable_capacity=consumable
            )
        inventory = placer.inventory
        seen = inventory.pools_seen(node.name)
        shared = any(len(inventory.seers(pid) or ()) > 1 for pid in seen)
        return NodeModel(placer.published(i), self._real_allocated), node, shared

    def _build(self, key: Any, model: NodeModel, node: Node) -> _Problem:
        problem = _Problem(key)
        devices = [d for d in model.devices if d.usable]
        table = self.verdicts.evaluate([(d.id.driver, d.device) for d in devices])
        uses = _Uses()
        for shape in self.verdicts.shapes:
            _ShapeModel(self, problem, shape, devices, table, uses, model).add()
        uses.rows(problem, devices, model)
        return problem

    def solve(
        self,
        problem: _Problem,
        only: int | None,
        lower: tuple[int, ...] | None,
        mix: tuple[float, ...] | None = None,
    ) -> tuple[int | None, list[int], bool, list[str]]:
        """(optimum, pods per shape, exact, notes) for the sum of every shape's pods,
        or shape ``only``'s, with at least ``lower`` pods of each shape; with ``mix``
        (weights), each shape's pods within one of its share of the total."""
        key = (problem.key, only, lower, mix)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._solve(problem, only, lower, mix)
        return found

    def _solve(
        self,
        problem: _Problem,
        only: int | None,
        lower: tuple[int, ...] | None,
        mix: tuple[float, ...] | None,
    ) -> tuple[int | None, list[int], bool, list[str]]:
        try:
            from scipy.optimize import Bounds, LinearConstraint, milp
            from scipy.sparse import csr_array
        except ImportError as exc:  # the analysis extra
            raise ImportError(
                "the optimal bound needs scipy: pip install 'draspeed[analysis]'"
            ) from exc

        shapes = range(len(problem.pods))
        counted = [s for s in shapes if only is None or s == only]
        notes = sorted(problem.notes)
        if any(problem.unbounded[s] for s in counted):
            return None, [0] * len(problem.pods), False, notes
        lo = np.asarray(problem.lower, dtype=float)
        hi = np.asarray(problem.upper, dtype=float)
        for s in shapes:
            x = problem.pods[s]
            if only is not None and s != only:
                hi[x] = 0.0
            if lower is not None:
                lo[x] = max(lo[x], float(lower[s]))
        objective = np.zeros(problem.n_vars)
        for s in counted:
            objective[problem.pods[s]] = -1.0
        extra: list[tuple[dict[int, float], float, float]] = []
        if mix is not None:
            # x_s >= share_s * sum(x) - 1: the mix's proportions, within one pod.
            weight = sum(mix)
            for s in shapes:
                coeffs = {problem.pods[t]: -mix[s] / weight for t in shapes}
                coeffs[problem.pods[s]] = coeffs[problem.pods[s]] + 1.0
                extra.append((coeffs, -1.0, np.inf))
        rows, cols, vals = [], [], []
        row_lo, row_hi = [], []
        for r, (coeffs, a, b) in enumerate([*problem.rows, *extra]):
            for v, coefficient in coeffs.items():
                rows.append(r)
                cols.append(v)
                vals.append(coefficient)
            row_lo.append(a)
            row_hi.append(b)
        constraints = []
        if row_lo:
            matrix = csr_array(
                (vals, (rows, cols)), shape=(len(row_lo), problem.n_vars), dtype=float
            )
            constraints.append(LinearConstraint(matrix, row_lo, row_hi))
        options: dict[str, Any] = {"disp": False}
        if self.time_limit is not None:
            options["time_limit"] = self.time_limit
        self.solves += 1
        result = milp(
            objective,
            integrality=np.ones(problem.n_vars),
            bounds=Bounds(lo, hi),
            constraints=constraints,
            options=options,
        )
        if result.status == 2:
            # Infeasible: only with lower bounds the model cannot meet, i.e. a fill
            # the model says is impossible (a relaxation never does this).
            raise RuntimeError(f"the bound's model cannot hold the fill's pods ({problem.key})")
        if result.x is None and result.status == 1:
            raise SolverTimeLimit(
                f"the optimal bound's solver reached its time limit ({self.time_limit} s) "
                "before it found a solution; give it more time"
            )
        if result.x is None:
            raise RuntimeError(f"HiGHS found no solution: {result.message}")
        composition = [round(float(result.x[problem.pods[s]])) for s in shapes]
        total = sum(composition[s] for s in counted)
        exact = not problem.notes
        if total >= _UNLIMITED / 2:  # shares that take nothing
            return None, composition, False, sorted({*notes, "unbounded: shares take nothing"})
        if result.status == 1:  # time limit: HiGHS's dual bound is an upper bound
            total = int(np.floor(-result.mip_dual_bound + 1e-6))
            notes = sorted({*notes, "the solver's time limit was reached: its dual bound"})
            exact = False
        return total, composition, exact, notes


class _Uses:
    """Who uses each device and counter, gathered while shapes are modelled."""

    def __init__(self) -> None:
        self.exclusive: dict[int, dict[int, float]] = defaultdict(dict)  # device -> vars
        # device -> capacity name -> {var: consumed nanos}
        self.capacity: dict[int, dict[str, dict[int, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        self.shares: dict[int, list[int]] = defaultdict(list)  # device -> share vars

    def rows(self, problem: _Problem, devices: list[ModelDevice], model: NodeModel) -> None:
        counters: dict[Slot, dict[int, float]] = defaultdict(dict)
        for d, variables in self.exclusive.items():
            problem.row(variables, 0.0, 1.0)
            for v in variables:
                for slot, amount in devices[d].uses.items():
                    counters[slot][v] = counters[slot].get(v, 0.0) + amount
        for d, capacities in self.capacity.items():
            device = devices[d]
            for name, variables in capacities.items():
                what = f"device {device.id}, capacity {name}"
                total = nanos_of(device.device.capacity[name].value, what)
                used = device.consumed.get(name)
                taken = nanos_of(used, what) if used is not None else 0
                _at_most(problem, variables, total - taken)
            if device.uses and not device.held:
                # The first share takes the device's counters (later ones do not).
                first = problem.var(0.0, 1.0)
                many = max(1.0, sum(problem.upper[v] for v in self.shares[d]))
                for v in self.shares[d]:
                    problem.row({v: 1.0, first: -many}, -np.inf, 0.0)
                for slot, amount in device.uses.items():
                    counters[slot][first] = counters[slot].get(first, 0.0) + amount
        for slot, variables in counters.items():
            _at_most(problem, variables, model.remaining.get(slot, 0))


class _ShapeModel:
    """The variables and rows of one shape on one node."""

    def __init__(
        self,
        solver: _Solver,
        problem: _Problem,
        shape: ShapeRequests,
        devices: list[ModelDevice],
        table: np.ndarray,
        uses: _Uses,
        model: NodeModel,
    ) -> None:
        self.solver = solver
        self.problem = problem
        self.shape = shape
        self.devices = devices
        self.table = table
        self.uses = uses
        self.model = model
        # Per (claim, request, alternative): device -> its variable.
        self.assigned: dict[tuple[int, int, int], dict[int, int]] = {}

    def add(self) -> None:
        problem = self.problem
        consumes = any(
            not spec.alternative.admin for claim in self.shape.claims for r in claim for spec in r
        )
        problem.unbounded.append(not consumes)
        x = problem.var(0.0, _UNLIMITED if consumes else 0.0)
        problem.pods.append(x)
        if not consumes:
            return
        for c, claim in enumerate(self.shape.claims):
            smallest = sum(min(self._count(spec) for spec in request) for request in claim)
            if smallest > ALLOCATION_RESULTS_MAX_SIZE:
                problem.row({x: 1.0}, 0.0, 0.0)  # the allocator refuses such a claim
                return
            constraints = self._constraints(c)
            grouped = {r for kind, _, covered in constraints if kind == "match" for r in covered}
            for r, request in enumerate(claim):
                pods = [x]
                if len(request) > 1:
                    problem.notes.add(
                        "firstAvailable: alternatives are chosen freely "
                        "(the allocator takes the first that fits)"
                    )
                    pods = [problem.var(0.0, problem.upper[x]) for _ in request]
                    problem.row({**dict.fromkeys(pods, 1.0), x: -1.0}, 0.0, 0.0)
                for a, spec in enumerate(request):
                    self._alternative(c, r, a, spec, pods[a], r in grouped)
            for kind, attribute, covered in constraints:
                if kind == "match":
                    self._match(c, attribute, covered, x)
                else:
                    self._distinct(c, attribute, covered, x)

    def _count(self, spec: AlternativeSpec) -> int:
        alt = spec.alternative
        if alt.mode == "All":
            return int(eligible(self.table, spec).sum())
        return alt.count

    def _eligible(self, spec: AlternativeSpec, c: int) -> list[int]:
        """Devices the allocator could give ``spec``: selectors, taints, constrained
        attributes present."""
        ok = eligible(self.table, spec) & ~erring(self.table, spec)
        if erring(self.table, spec).any():
            self.problem.notes.add(
                "a selector fails on some devices (the allocator would stop with an error)"
            )
        tolerations = spec.alternative.tolerations
        taints = self.solver.features.device_taints
        needed = [
            attribute
            for requests, match, distinct in self.shape.constraints[c]
            for attribute in (match, distinct)
            if attribute and _applies(requests, spec)
        ]
        out = []
        for d in np.flatnonzero(ok).tolist():
            device = self.devices[d].device
            if taints and device.taints and taint_blocks(device.taints, tolerations):
                continue
            if any(_attribute(self.devices[d], name) is None for name in needed):
                continue
            out.append(d)
        return out

    def _alternative(
        self, c: int, r: int, a: int, spec: AlternativeSpec, pods: int, grouped: bool
    ) -> None:
        problem = self.problem
        alt = spec.alternative
        if self.solver.verdicts.broken(spec) is not None:
            problem.row({pods: 1.0}, 0.0, 0.0)
            return
        candidates = self._eligible(spec, c)
        if alt.admin:  # takes no device: only needs enough of them to exist
            if len(candidates) < max(alt.count, 1) and not (alt.mode == "All" and candidates):
                problem.row({pods: 1.0}, 0.0, 0.0)
            return
        variables: dict[int, int] = {}
        if alt.mode == "All":
            if not candidates or any(
                self.devices[d].held and not self.devices[d].shared for d in candidates
            ):
                problem.row({pods: 1.0}, 0.0, 0.0)
                return
            problem.upper[pods] = min(problem.upper[pods], 1.0)
            for d in candidates:
                v = self._use(d, spec, pods)
                if v is None:
                    problem.row({pods: 1.0}, 0.0, 0.0)
                    return
                variables[d] = v
                problem.row({v: 1.0, pods: -1.0}, 0.0, 0.0)
            self.assigned[(c, r, a)] = variables
            return
        if alt.mode != "ExactCount":
            problem.row({pods: 1.0}, 0.0, 0.0)  # a mode the allocator refuses
            return
        for d in candidates:
            v = self._use(d, spec, pods)
            if v is not None:
                variables[d] = v
        self.assigned[(c, r, a)] = variables
        if not grouped:
            coeffs = dict.fromkeys(variables.values(), 1.0)
            coeffs[pods] = coeffs.get(pods, 0.0) - float(alt.count)
            problem.row(coeffs, 0.0, 0.0)

    def _use(self, d: int, spec: AlternativeSpec, pods: int) -> int | None:
        """The variable of device d serving ``spec`` (None: it cannot serve it)."""
        problem = self.problem
        device = self.devices[d]
        alt = spec.alternative
        if device.shareable and self.solver.features.consumable_capacity:
            if device.held and not device.shared:
                return None
            consumed = _consumption(device, alt.capacity)
            if consumed is None:
                return None
            most = _UNLIMITED
            for name, amount in consumed.items():
                if amount > 0:
                    held = device.consumed.get(name)
                    what = f"device {device.id}, capacity {name}"
                    left = nanos_of(device.device.capacity[name].value, what) - (
                        nanos_of(held, what) if held is not None else 0
                    )
                    most = min(most, float(max(left, 0) // amount))
            if most == 0:
                return None
            v = problem.var(0.0, most)
            if alt.count > 1:  # a pod takes a device once per request
                problem.row({v: 1.0, pods: -1.0}, -np.inf, 0.0)
            for name, amount in consumed.items():
                self.uses.capacity[d][name][v] = float(amount)
            self.uses.shares[d].append(v)
            return v
        if device.held:
            return None
        v = problem.var(0.0, 1.0)
        self.uses.exclusive[d][v] = 1.0
        return v

    def _constraints(self, c: int) -> list[tuple[str, str, list[int]]]:
        """The claim's constraints that are modelled: (kind, attribute, requests)."""
        problem = self.problem
        claim = self.shape.claims[c]
        out: list[tuple[str, str, list[int]]] = []
        grouped: set[int] = set()
        for requests, match, distinct in self.shape.constraints[c]:
            covered = [
                r
                for r, request in enumerate(claim)
                if any(_applies(requests, spec) for spec in request)
            ]
            if not covered:
                continue
            if match:
                if any(len(claim[r]) > 1 for r in covered):
                    problem.notes.add("matchAttribute over firstAvailable alternatives relaxed")
                elif grouped & set(covered):
                    problem.notes.add("a second matchAttribute over the same requests relaxed")
                else:
                    grouped.update(covered)
                    out.append(("match", match, covered))
            if distinct:
                if len(covered) > 1 or any(len(claim[r]) > 1 for r in covered):
                    problem.notes.add("distinctAttribute over several requests: an upper bound")
                out.append(("distinct", distinct, covered))
        return out

    def _value(self, d: int, attribute: str) -> Any:
        """A device's value of an attribute, as constraints compare it; None for a
        list value (compared by intersection: not modelled)."""
        found = _attribute(self.devices[d], attribute)
        if found is None or found.kind in _LIST_KINDS:
            return None
        return (found.kind, found.value)

    def _match(self, c: int, attribute: str, covered: list[int], pods: int) -> None:
        """Every pod's devices for the covered requests share one value: a pod count
        per value group."""
        problem = self.problem
        claim = self.shape.claims[c]
        groups: dict[Any, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
        listed = False
        for r in covered:
            for d, v in self.assigned.get((c, r, 0), {}).items():
                value = self._value(d, attribute)
                if value is None:
                    listed = True
                    continue
                groups[value][r][v] = 1.0
        if listed:
            problem.notes.add("matchAttribute on list values relaxed")
            for r in covered:  # plain counts instead of groups
                variables = self.assigned.get((c, r, 0), {})
                coeffs = dict.fromkeys(variables.values(), 1.0)
                coeffs[pods] = coeffs.get(pods, 0.0) - float(claim[r][0].alternative.count)
                problem.row(coeffs, 0.0, 0.0)
            return
        total: dict[int, float] = {pods: -1.0}
        for by_request in groups.values():
            z = problem.var(0.0, problem.upper[pods])
            total[z] = 1.0
            for r in covered:
                coeffs = dict(by_request.get(r, {}))
                coeffs[z] = -float(claim[r][0].alternative.count)
                problem.row(coeffs, 0.0, 0.0)
        problem.row(total, 0.0, 0.0)

    def _distinct(self, c: int, attribute: str, covered: list[int], pods: int) -> None:
        """Each pod takes at most one device per value of the attribute."""
        problem = self.problem
        claim = self.shape.claims[c]
        by_value: dict[Any, dict[int, float]] = defaultdict(dict)
        for r in covered:
            for a in range(len(claim[r])):
                for d, v in self.assigned.get((c, r, a), {}).items():
                    value = self._value(d, attribute)
                    if value is None:
                        problem.notes.add("distinctAttribute on list values relaxed")
                        continue
                    by_value[value][v] = 1.0
        for variables in by_value.values():
            problem.row({**variables, pods: -1.0}, -np.inf, 0.0)


def _at_most(problem: _Problem, amounts: dict[int, float], limit: int) -> None:
    """``sum(amount * var) <= limit`` for exact integer amounts (nanos), divided by
    their greatest common divisor: HiGHS works in floating point, and amounts in
    nanos of mebibytes (1e19) would swamp its tolerances."""
    terms = {v: int(a) for v, a in amounts.items() if a}
    if not terms:
        return
    unit = math.gcd(*terms.values(), max(limit, 0))
    if limit < 0:  # more in use than there is: nothing more fits
        problem.row(dict.fromkeys(terms, 1.0), -np.inf, 0.0)
        return
    problem.row({v: a / unit for v, a in terms.items()}, -np.inf, float(limit // unit))


def _applies(requests: list[str], spec: AlternativeSpec) -> bool:
    """Whether a constraint naming ``requests`` applies to an alternative."""
    if not requests:
        return True
    name = spec.alternative.name
    parent = name.split("/", 1)[0]
    return parent in requests or name in requests


def _attribute(device: ModelDevice, name: str) -> Any:
    found = device.device.attributes.get(name)
    if found is None:
        domain, _, ident = name.partition("/")
        if domain == device.id.driver:
            found = device.device.attributes.get(ident)
    return found


def _consumption(device: ModelDevice, requests: dict[str, Any]) -> dict[str, int] | None:
    """What one share of the device consumes per capacity (nanos), or None if the
    request cannot be served (an unknown capacity, a policy it violates)."""
    # Names compared as written, as upstream compares them (draspeed.rules.capacity).
    wanted = requests
    capacities = device.device.capacity
    if any(name not in capacities for name in wanted):
        return None  # upstream: UnknownCapacityError
    out: dict[str, int] = {}
    for name, capacity in capacities.items():
        consumed = consumed_amount(wanted.get(name), capacity)
        if violates_policy(consumed, capacity.request_policy):
            return None
        out[name] = nanos_of(consumed, f"capacity {name}")
    return out
