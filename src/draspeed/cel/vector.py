"""Evaluate a selector over a whole :class:`DeviceTable` with numpy.

The plan splits the expression at ``&&``, ``||``, ``!`` and ``?:`` (after inlining
``cel.bind`` variables that name a path such as ``device.attributes["d"]``) into
leaves. Each leaf is a closed sub-expression; a static analysis finds what it reads
(the driver, allowMultipleAllocations, attribute and capacity keys, domain presence,
whether a device has an attribute or capacity (``has()``), the names alone of a
domain map or of the domains — for ``in``, ``size`` and one-variable macros, which
see keys only —, whole domain maps, or — when it uses ``device`` in a way the
analysis does not follow — the whole device). The leaf is
then evaluated by the general evaluator once per *distinct combination* of the values
it reads, on a synthetic device holding just those values, and the per-combination
results are broadcast to the rows with numpy (a range compare when the true ids are
contiguous — ids are sorted by value — a few equality compares, or a gather). Leaves
combine with CEL's commutative error absorption; a cost-limit error is not absorbed,
as in the evaluator.

Results are exact, errors included: a leaf error is an error for its rows, never a
silent false. Devices whose attributes upstream cannot convert are errors for every
selector.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

import draspeed.cel._columns as _columns
from draspeed.cel.ast import (
    Bind,
    Call,
    Comprehension,
    Const,
    Ident,
    Index,
    ListLit,
    Logical,
    MapLit,
    Node,
    Select,
    Shared,
    Ternary,
    children,
    walk,
)
from draspeed.cel.cost import call_cost
from draspeed.cel.deadline import CHECK_EVERY, check_deadline
from draspeed.cel.evaluator import Activation, Compiler
from draspeed.cel.meter import COST_LIMIT, COST_MESSAGE, swap_meter
from draspeed.cel.row_messages import RowMessages, TextCodes
from draspeed.cel.runtime_errors import runtime_error
from draspeed.cel.table import Column
from draspeed.cel.values import CostLimitExceeded, DomainMap, GoPanic, to_bool_result
from draspeed.errors import CELRuntimeError

if TYPE_CHECKING:
    from draspeed.cel.selector import Selector
    from draspeed.cel.table import DeviceTable

ReadKey = tuple[str, ...]
_MAX_DENSE = 1 << 22


# ---- plan -----------------------------------------------------------------------


@dataclass(slots=True)
class Leaf:
    node: Node
    reads: tuple[ReadKey, ...]
    program: Any
    nslots: int
    mode: str  # "bool": a logical operand; "top": the selector's result


@dataclass(slots=True)
class Branch:
    op: str  # "&&", "||", "!", "?:"
    parts: list[Any]


@dataclass(slots=True)
class Plan:
    root: Any
    leaves: list[Leaf] = field(default_factory=list)
    # Per Shared group (an inlined cel.bind): what initialising the variable costs.
    init_costs: list[int] = field(default_factory=list)

    @property
    def attributes(self) -> set[tuple[str, str]]:
        """The attributes (domain, ident) the leaves read from a table's attribute
        columns: values and presence."""
        return {
            (key[1], key[2])
            for leaf in self.leaves
            for key in leaf.reads
            if key[0] in ("attr", "attr_present")
        }


def plan_for(selector: Selector) -> Plan:
    cached = selector._vector
    if cached is not None:
        return cached
    with selector._vector_lock:
        if selector._vector is None:
            inliner = _Inliner()
            tree = selector.ast
            # The inliner rewrites in place, and only a tree with a bind changes: only
            # such a tree is copied first (the selector's own tree stays as parsed).
            if any(isinstance(node, Bind) for node in walk(tree)):
                tree = inliner.rewrite(copy.deepcopy(tree), {}, in_loop=False)
            plan = Plan(root=None, init_costs=inliner.init_costs)
            # A selector that is one leaf (no &&, ||, ! or ?: at its top) runs the
            # program the selector compiled already.
            compiled = (selector.ast, selector._program, selector._nslots)
            plan.root = _build(tree, "top", plan, branch=False, compiled=compiled)
            selector._vector = plan
        return selector._vector


def _build(
    node: Node,
    mode: str,
    plan: Plan,
    branch: bool,
    compiled: tuple[Node, Any, int] | None = None,
) -> Any:
    """Split at &&, ||, ! and ?:. ``branch``: the node is a ?: branch, which cel-go
    resolves without observing it when it is an attribute. ``compiled``: a node whose
    program (and slot count) is made already, as ``Compiler.compile`` makes it."""
    if isinstance(node, Logical):
        return Branch(node.op, [_build(o, "bool", plan, False) for o in node.operands])
    if isinstance(node, Call) and node.function == "!_" and node.target is None:
        return Branch("!", [_build(node.args[0], "bool", plan, False)])
    if isinstance(node, Ternary):
        return Branch(
            "?:",
            [
                _build(node.cond, "bool", plan, False),
                _build(node.then, mode, plan, True),
                _build(node.other, mode, plan, True),
            ],
        )
    if compiled is not None and compiled[0] is node and not branch:
        program, nslots = compiled[1], compiled[2]
    else:
        compiler = Compiler()
        program = compiler.compile_branch(node) if branch else compiler.compile(node)
        nslots = compiler.nslots
    leaf = Leaf(node, tuple(sorted(analyze_reads(node))), program, nslots, mode)
    plan.leaves.append(leaf)
    return leaf


# ---- bind inlining ----------------------------------------------------------------

_MAX_GROUPS = 62  # Shared groups are bits of an int64


def _shared_path_cost(node: Node) -> int | None:
    """What cel-go charges to evaluate ``node`` if it is a path into ``device`` that
    cannot fail (``device``, a field, or a domain of attributes/capacity: 1 for the
    attribute, 1 per qualifier), else None."""
    quals: list[Node] = []
    while not isinstance(node, Ident):
        if (isinstance(node, Select) and not node.optional and not node.test_only) or (
            isinstance(node, Index) and not node.optional and isinstance(node.key, Const)
        ):
            quals.append(node)
            node = node.operand
        else:
            return None
    if node.name != "device" or len(quals) > 2:
        return None
    if len(quals) == 2:
        top = quals[-1]
        if not isinstance(top, Select) or top.field not in ("attributes", "capacity"):
            return None
    return 1 + len(quals)


class _Inliner:
    """Replace ``cel.bind`` variables bound to device paths by :class:`Shared` nodes
    (leaves can then split the body and read the path's columns). Only binds outside
    comprehension bodies: those are initialised at most once per evaluation, which is
    what charging each group's ``init_costs`` once per row assumes."""

    def __init__(self) -> None:
        self.init_costs: list[int] = []

    def rewrite(self, node: Node, env: dict[str, Shared | None], in_loop: bool) -> Node:
        if isinstance(node, Ident):
            target = env.get(node.name)
            return copy.deepcopy(target) if target is not None else node
        if isinstance(node, Bind):
            init = self.rewrite(node.init, env, in_loop)
            cost = _shared_path_cost(init)
            if (
                cost is not None
                and not in_loop
                and "device" not in env
                and len(self.init_costs) < _MAX_GROUPS
            ):
                shared = Shared(init.pos, init, len(self.init_costs), cost)
                self.init_costs.append(cost)
                return self.rewrite(node.body, {**env, node.var: shared}, in_loop)
            node.init = init
            node.body = self.rewrite(node.body, {**env, node.var: None}, in_loop)
            return node
        if isinstance(node, Comprehension):
            node.range = self.rewrite(node.range, env, in_loop)
            inner: dict[str, Shared | None] = {**env, node.var: None}
            if node.var2 is not None:
                inner[node.var2] = None
            if node.predicate is not None:
                node.predicate = self.rewrite(node.predicate, inner, True)
            if node.transform is not None:
                node.transform = self.rewrite(node.transform, inner, True)
            return node
        if isinstance(node, Select):
            node.operand = self.rewrite(node.operand, env, in_loop)
        elif isinstance(node, Index):
            node.operand = self.rewrite(node.operand, env, in_loop)
            node.key = self.rewrite(node.key, env, in_loop)
        elif isinstance(node, Call):
            if node.target is not None:
                node.target = self.rewrite(node.target, env, in_loop)
            node.args = [self.rewrite(a, env, in_loop) for a in node.args]
        elif isinstance(node, ListLit):
            node.elements = [self.rewrite(e, env, in_loop) for e in node.elements]
        elif isinstance(node, MapLit):
            node.entries = [
                (self.rewrite(k, env, in_loop), self.rewrite(v, env, in_loop), o)
                for k, v, o in node.entries
            ]
        elif isinstance(node, Ternary):
            node.cond = self.rewrite(node.cond, env, in_loop)
            node.then = self.rewrite(node.then, env, in_loop)
            node.other = self.rewrite(node.other, env, in_loop)
        elif isinstance(node, Logical):
            node.operands = [self.rewrite(o, env, in_loop) for o in node.operands]
        return node


# ---- read analysis ----------------------------------------------------------------

Sym = tuple[str, ...] | None


def analyze_reads(node: Node) -> set[ReadKey]:
    """What of the device ``node`` reads (see the module docstring)."""
    reads: set[ReadKey] = set()
    sym = _sym(node, {}, reads)
    _escalate(sym, reads)
    return reads


def _escalate(sym: Sym, reads: set[ReadKey]) -> None:
    """``sym`` is used as a value: read all of it."""
    if sym is None:
        return
    if sym[0] in ("device", "attrs", "caps"):
        reads.add(("device",))
    elif sym[0] == "domain":
        reads.add(("attr_domain", sym[1]))
    elif sym[0] == "capdomain":
        reads.add(("cap_domain", sym[1]))


_NAME_READS = {
    "domain": "attr_keys",
    "capdomain": "cap_keys",
    "attrs": "attr_domains",
    "caps": "cap_domains",
}


def _read_names(sym: Sym, reads: set[ReadKey]) -> None:
    """``sym`` is used for its keys alone (``k in m``, ``size(m)``, a one-variable
    macro over ``m``): read the names of a device map, not its values (which may
    differ on every device); anything else is read whole."""
    if sym is None:
        return
    kind = _NAME_READS.get(sym[0])
    if kind is None:
        _escalate(sym, reads)
    else:
        reads.add((kind, *sym[1:]))


def _member(sym: Sym, name: str, reads: set[ReadKey], plain: bool) -> Sym:
    """The symbol of ``sym.name`` / ``sym["name"]``; ``plain`` is false for .? and has()."""
    assert sym is not None
    kind = sym[0]
    if kind == "device":
        mapping = {"driver": ("driver",), "allowMultipleAllocations": ("multi",)}
        if name in mapping:
            reads.add(mapping[name])
            return None
        if name == "attributes" and plain:
            return ("attrs",)
        if name == "capacity" and plain:
            return ("caps",)
        reads.add(("device",))
        return None
    if kind == "attrs":
        if plain:
            return ("domain", name)
        reads.add(("attr_domain", name))
        return None
    if kind == "caps":
        if plain:
            return ("capdomain", name)
        reads.add(("cap_domain", name))
        return None
    if kind == "domain":
        reads.add(("attr", sym[1], name))
        return None
    if kind == "capdomain":
        reads.add(("cap", sym[1], name))
        return None
    _escalate(sym, reads)
    return None


def _sym(node: Node, env: dict[str, Sym], reads: set[ReadKey]) -> Sym:
    if isinstance(node, Shared):
        return _sym(node.path, env, reads)
    if isinstance(node, Ident):
        if node.name in env:
            return env[node.name]
        if node.name.lstrip(".") == "device":
            return ("device",)
        return None
    if isinstance(node, Select):
        base = _sym(node.operand, env, reads)
        if base is None:
            return None
        if node.test_only and base[0] in ("device", "attrs", "caps"):
            if base[0] == "device" and node.field not in (
                "driver",
                "allowMultipleAllocations",
                "attributes",
                "capacity",
            ):
                reads.add(("device",))
            return None  # always present
        if node.test_only and base[0] in ("domain", "capdomain"):
            # has() of an attribute or capacity: its presence, not its value.
            kind = "attr_present" if base[0] == "domain" else "cap_present"
            reads.add((kind, base[1], node.field))
            return None
        return _member(base, node.field, reads, not (node.test_only or node.optional))
    if isinstance(node, Index):
        base = _sym(node.operand, env, reads)
        key_sym = _sym(node.key, env, reads)
        _escalate(key_sym, reads)
        if base is None:
            return None
        if isinstance(node.key, Const) and node.key.kind == "string":
            return _member(base, node.key.value, reads, not node.optional)
        _escalate(base, reads)
        return None
    if isinstance(node, Call):
        if node.function == "@in" and len(node.args) == 2 and node.target is None:
            item, container = node.args
            sym = _sym(container, env, reads)
            if isinstance(item, Const) and item.kind == "string":
                if sym == ("attrs",):
                    reads.add(("attr_presence", item.value))
                    return None
                if sym == ("caps",):
                    reads.add(("cap_domain", item.value))
                    return None
                if sym is not None and sym[0] in ("domain", "capdomain"):
                    # A constant name in a domain's map: whether the device has that
                    # attribute or capacity, as has() asks (one flag per device,
                    # not every name the map holds; map membership costs the same).
                    kind = "attr_present" if sym[0] == "domain" else "cap_present"
                    reads.add((kind, sym[1], item.value))
                    return None
            _escalate(_sym(item, env, reads), reads)
            _read_names(sym, reads)
            return None
        if node.function == "size" and len(node.args) + (node.target is not None) == 1:
            # size(m) and m.size() of a map count its keys.
            _read_names(_sym(node.target or node.args[0], env, reads), reads)
            return None
        for child in children(node):
            _escalate(_sym(child, env, reads), reads)
        return None
    if isinstance(node, Bind):
        init = _sym(node.init, env, reads)
        return _sym(node.body, {**env, node.var: init}, reads)
    if isinstance(node, Comprehension):
        # A one-variable macro over a map iterates its keys only.
        rng = _sym(node.range, env, reads)
        if node.var2 is None:
            _read_names(rng, reads)
        else:
            _escalate(rng, reads)
        inner = {**env, node.var: None}
        if node.var2 is not None:
            inner[node.var2] = None
        for part in (node.predicate, node.transform):
            if part is not None:
                _escalate(_sym(part, inner, reads), reads)
        return None
    if isinstance(node, Ternary):
        _escalate(_sym(node.cond, env, reads), reads)
        then = _sym(node.then, env, reads)
        other = _sym(node.other, env, reads)
        if then == other:
            return then
        _escalate(then, reads)
        _escalate(other, reads)
        return None
    for child in children(node):
        _escalate(_sym(child, env, reads), reads)
    return None


# ---- synthetic devices --------------------------------------------------------------


def synthetic_device(values: dict[ReadKey, Any]) -> dict[str, Any]:
    """A ``device`` map holding exactly the read values (absent values stay absent)."""
    whole = values.get(("device",))
    if whole is not None:
        return {
            "driver": whole["driver"],
            "allowMultipleAllocations": whole["allowMultipleAllocations"],
            "attributes": DomainMap(whole["attributes"]),
            "capacity": DomainMap(whole["capacity"]),
        }
    attributes = DomainMap()
    capacity = DomainMap()
    # Names first, in the device's order; the values a leaf reads fill them in. A name
    # read for its presence alone holds None (never read: see _read_names).
    for domain in values.get(("attr_domains",), ()):
        attributes[domain] = {}
    for domain in values.get(("cap_domains",), ()):
        capacity[domain] = {}
    for key, value in values.items():
        kind = key[0]
        if kind in ("attr_keys", "cap_keys") and value:
            inner = (attributes if kind == "attr_keys" else capacity).setdefault(key[1], {})
            for ident in value:
                inner[ident] = None
        elif kind in ("attr_present", "cap_present") and value:
            maps = attributes if kind == "attr_present" else capacity
            maps.setdefault(key[1], {}).setdefault(key[2], None)
    for key, value in values.items():
        kind = key[0]
        if kind == "attr_domain" and value is not None:
            attributes.setdefault(key[1], {}).update(value)
        elif kind == "cap_domain" and value is not None:
            capacity.setdefault(key[1], {}).update(value)
        elif kind == "attr_presence" and value:
            attributes.setdefault(key[1], {})
    for key, value in values.items():
        if value is None:
            continue
        if key[0] == "attr":
            attributes.setdefault(key[1], {})[key[2]] = value
        elif key[0] == "cap":
            capacity.setdefault(key[1], {})[key[2]] = value
    return {
        "driver": values.get(("driver",), ""),
        "allowMultipleAllocations": values.get(("multi",), False),
        "attributes": attributes,
        "capacity": capacity,
    }


# ---- evaluation -------------------------------------------------------------------


class _Messages(TextCodes):
    """One table evaluation's error texts by code (code 0 = no error), and its deadline."""

    __slots__ = ("deadline", "work")

    def __init__(self, deadline: float | None) -> None:
        super().__init__()
        self.deadline = deadline
        self.work = 0  # cost charged by all leaf evaluations so far


@dataclass(slots=True)
class Errors:
    """Erring rows: ``mask``, and their codes (one int for all, or an int32 array)."""

    mask: np.ndarray
    codes: int | np.ndarray

    def at(self, rows: np.ndarray) -> np.ndarray:
        if isinstance(self.codes, int):
            return np.full(len(rows), self.codes, dtype=np.int32)
        return self.codes[rows]

    def full(self) -> np.ndarray:
        if isinstance(self.codes, int):
            out = np.zeros(len(self.mask), dtype=np.int32)
            out[self.mask] = self.codes
            return out
        return np.where(self.mask, self.codes, 0).astype(np.int32)


def _errors_from_codes(codes: np.ndarray) -> Errors | None:
    mask = codes != 0
    return Errors(mask, codes) if mask.any() else None


# (value bool[n], erring rows or None, cost per row, Shared groups read per row); cost
# and groups are 0 (not tracked) unless the selector can come near the cost limit.
Result = tuple[np.ndarray, Errors | None, "int | np.ndarray", "int | np.ndarray"]


@dataclass(slots=True)
class _LeafValues:
    """A leaf evaluated once per combination of the values it reads."""

    combined: np.ndarray  # row -> combination
    present: np.ndarray  # the combinations evaluated
    val: np.ndarray  # per combination
    err: np.ndarray
    cost: np.ndarray
    groups: np.ndarray
    max_cost: int


class _TooCostly(Exception):
    """The leaves charged more than the work budget: evaluate row by row instead."""


class _Panicked(Exception):
    """A leaf ended in a Go panic (:class:`GoPanic`), which ends the whole evaluation
    whatever operators surround the leaf, in cel-go's evaluation order: evaluate row by
    row instead (the general evaluator lets it through every operator)."""


# How much cost the leaf evaluations of one table may charge in total before a lazy
# evaluation (the search's) switches to row-by-row evaluation, which stops at the first
# device over the cost limit. Ordinary selectors cost a few units per combination.
_WORK_BUDGET = 2 * COST_LIMIT


def evaluate_table(
    selector: Selector, table: DeviceTable, deadline: float | None = None
) -> tuple[np.ndarray, np.ndarray, Mapping[int, str]]:
    """Every row's verdict (match, error, message per erroring row)."""
    match, error, messages, _ = _evaluate(selector, table, deadline, None, lazy=False)
    return match, error, messages


# How far below the cost limit a selector's estimated worst case must be to skip the
# lazy evaluation's probe of the first device.
_PROBE_MARGIN = 1000


def evaluate_lazily(
    selector: Selector,
    table: DeviceTable,
    rows: np.ndarray | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray, np.ndarray, Mapping[int, str], np.ndarray]:
    """The verdicts of ``rows`` (a bool mask; all rows if None), as a search needs them:
    once one device reaches the cost limit, the rows not evaluated yet are left
    ``pending`` (the fourth array), to be evaluated one by one if the search gets there
    (as upstream evaluates a selector only for the devices it tries)."""
    return _evaluate(selector, table, deadline, rows, lazy=True)


def _evaluate(
    selector: Selector,
    table: DeviceTable,
    deadline: float | None,
    rows: np.ndarray | None,
    lazy: bool,
) -> tuple[np.ndarray, np.ndarray, Mapping[int, str], np.ndarray]:
    plan = plan_for(selector)
    table.expect_attributes(plan.attributes)
    messages = _Messages(deadline)
    n = table.n
    wanted: np.ndarray | None = None  # every row
    if rows is not None or table.conversion_messages:
        wanted = np.ones(n, dtype=bool) if rows is None else rows
        wanted = wanted & ~table.conversion_error
    pending = np.zeros(n, dtype=bool)
    # A selector whose worst case (cel-go's estimate, over the declared sizes of what
    # it reads) is far below the limit cannot reach it on inputs the API server lets
    # through: no probe. (Past such sizes the verdicts are the same either way, each
    # combination's evaluation being bounded by the limit and the deadline.)
    cheap = selector.max_cost is not None and selector.max_cost * _PROBE_MARGIN <= COST_LIMIT
    if lazy and not cheap and wanted is not None and wanted.any():
        # A search tries devices in order: the first one alone first, so that a selector
        # over the cost limit everywhere costs one evaluation before the search gets its
        # error, as upstream's does.
        first = np.zeros(n, dtype=bool)
        first[int(np.argmax(wanted))] = True
        found = evaluate_rows(selector, table, deadline=deadline, rows=first)
        if found[1].any() and COST_MESSAGE in found[2].values():
            match, error, texts, _ = found
            return match, error, texts, wanted & ~first
    try:
        leaves = {id(leaf): _eval_leaf(leaf, table, wanted, messages, lazy) for leaf in plan.leaves}
    except _TooCostly:
        match, error, texts, pending = evaluate_rows(
            selector, table, deadline=deadline, rows=rows, stop_at_cost_limit=True
        )
        return match, error, texts, pending
    except _Panicked:
        match, error, texts, pending = evaluate_rows(
            selector, table, deadline=deadline, rows=rows, stop_at_cost_limit=lazy
        )
        return match, error, texts, pending
    bound = sum(v.max_cost for v in leaves.values()) + sum(plan.init_costs)
    bound += _count_nots(plan.root)
    track = bound > COST_LIMIT  # otherwise no row can reach the limit
    val, errs, cost, groups = _eval(plan.root, leaves, messages, track)
    if track:
        total = np.asarray(cost, dtype=np.int64) + np.zeros(n, dtype=np.int64)
        for g, init in enumerate(plan.init_costs):
            total += ((np.asarray(groups, dtype=np.int64) >> g) & 1) * init
        over = total > COST_LIMIT
        if over.any():
            codes = np.zeros(n, dtype=np.int32) if errs is None else errs.full()
            codes[over] = messages.code(COST_MESSAGE)
            val = val & ~over
            errs = _errors_from_codes(codes)
    if table.conversion_messages:
        codes = np.zeros(n, dtype=np.int32) if errs is None else errs.full()
        for row, text in table.conversion_messages.items():
            codes[row] = messages.code(text)
        val = val & ~table.conversion_error
        errs = _errors_from_codes(codes)
    if errs is None:
        return val, np.zeros(n, dtype=bool), {}, pending
    error = errs.mask
    match = val & ~error
    if wanted is not None:
        error = error & (wanted | table.conversion_error)
    erring = np.flatnonzero(error)
    return match, error, RowMessages(erring, errs.at(erring), messages.texts), pending


def _count_nots(part: Any) -> int:
    if isinstance(part, Leaf):
        return 0
    return (part.op == "!") + sum(_count_nots(p) for p in part.parts)


def _eval(part: Any, leaves: dict[int, _LeafValues], messages: _Messages, track: bool) -> Result:
    if isinstance(part, Leaf):
        return _gather_leaf(leaves[id(part)], track)
    results = [_eval(p, leaves, messages, track) for p in part.parts]
    if part.op == "!":
        nval, nerrs, ncost, ngroups = results[0]
        out = ~nval if nerrs is None else ~nval & ~nerrs.mask
        return out, nerrs, (ncost + 1 if track else 0), ngroups  # ``!_`` is a call: 1
    if part.op == "?:":
        (cval, cerr, ccost, cgroups), (tval, terr, tcost, tgroups), (fval, ferr, fcost, fgroups) = (
            results
        )
        val = np.where(cval, tval, fval)
        cost: int | np.ndarray = 0
        groups: int | np.ndarray = 0
        if track:
            ok = np.ones(len(cval), dtype=bool) if cerr is None else ~cerr.mask
            on_true = cval & ok
            on_false = ~cval & ok
            cost = ccost + np.where(on_true, tcost, np.where(on_false, fcost, 0))
            groups = cgroups | np.where(on_true, tgroups, np.where(on_false, fgroups, 0))
        if cerr is None and terr is None and ferr is None:
            return val, None, cost, groups
        n = len(cval)
        zero = np.zeros(n, dtype=np.int32)
        branch = np.where(
            cval,
            terr.full() if terr is not None else zero,
            ferr.full() if ferr is not None else zero,
        )
        codes = np.where(cerr.mask, cerr.full(), branch) if cerr is not None else branch
        errs = _errors_from_codes(codes.astype(np.int32, copy=False))
        return (val if errs is None else val & ~errs.mask), errs, cost, groups
    return _logical(part.op == "||", results, track)


def _logical(is_or: bool, results: list[Result], track: bool) -> Result:
    """CEL's commutative ``&&``/``||``: the deciding value wins over errors; otherwise
    the first operand's error (in operand order) is the result. Costs: operands are
    evaluated left to right until one decides (cel-go's short circuit)."""
    cost: int | np.ndarray
    groups: int | np.ndarray
    cost = groups = 0
    if track:
        n = len(results[0][0])
        running = np.ones(n, dtype=bool)
        cost = np.zeros(n, dtype=np.int64)
        groups = np.zeros(n, dtype=np.int64)
        for val, errs, c, g in results:
            # (Times the mask, not np.where: a mask that changes from row to row made
            # np.where branch on each, seven times slower on 152,000 rows.)
            cost = cost + c * running
            groups = groups | g * running
            decisive = val if is_or else ~val
            if errs is not None:
                decisive = decisive & ~errs.mask
            running = running & ~decisive
    if all(errs is None for _, errs, _, _ in results):
        out = results[0][0]
        for val, _, _, _ in results[1:]:
            out = (out | val) if is_or else (out & val)
        return out, None, cost, groups
    decided: np.ndarray | None = None  # an operand has the deciding value (and no error)
    erring: np.ndarray | None = None
    for val, errs, _, _ in results:
        decisive = val if is_or else ~val
        if errs is not None:
            decisive = decisive & ~errs.mask
            erring = errs.mask if erring is None else (erring | errs.mask)
        decided = decisive if decided is None else (decided | decisive)
    assert decided is not None and erring is not None
    erring = erring & ~decided
    if not erring.any():
        return (decided if is_or else ~decided), None, cost, groups
    rows = np.flatnonzero(erring)
    first = np.zeros(len(rows), dtype=np.int32)
    for _, errs, _, _ in results:
        if errs is not None:
            here = np.where(errs.mask[rows], errs.at(rows), 0)
            first = np.where(first == 0, here, first)
    codes = np.zeros(len(decided), dtype=np.int32)
    codes[rows] = first
    val_out = decided if is_or else ~decided & ~erring
    return val_out, Errors(erring, codes), cost, groups


def _eval_leaf(
    leaf: Leaf, table: DeviceTable, wanted: np.ndarray | None, messages: _Messages, lazy: bool
) -> _LeafValues:
    from_objects = _string_call_objects(leaf, table, wanted, messages, lazy)
    if from_objects is not None:
        return from_objects
    n = table.n
    columns = [table.column(key) for key in leaf.reads]
    combined, present, decode = _combine(columns, n)
    if wanted is None:
        size = int(present[-1]) + 1 if len(present) else 1
    elif combined.dtype == np.int32 and combined.flags.c_contiguous:  # (one column's)
        present, size = _columns.present_codes(combined, wanted.view(np.uint8))
    else:
        size = int(combined.max()) + 1 if n else 1
        picked = combined[wanted]
        # The combinations present: counted when their ids are few next to the rows
        # (one pass), else sorted.
        if size <= 4 * len(picked) + 64:
            present = np.flatnonzero(np.bincount(picked, minlength=size))
        else:
            present = np.unique(picked)
    # Per combination, in lists (one numpy store each at the end, not four per value).
    combos = present.tolist()
    vals: list[bool] = []
    errs: list[int] = []
    costs: list[int] = []
    groups_read: list[int] = []
    deadline = messages.deadline
    devices = _Devices(leaf.reads, columns)
    # One activation for every combination, made current once (reset before each run).
    act = Activation(None, leaf.nslots, COST_LIMIT, deadline)
    direct = _StringCall.of(leaf, columns)
    previous = swap_meter(act)
    try:
        for k, combo in enumerate(combos):
            if deadline is not None and not k & CHECK_EVERY:
                check_deadline(deadline)
            if direct is not None and direct.base is not None and direct.batch:
                # Learnt: the rest at once, where every one of them is a string.
                direct.batch = False
                rest = direct.answer_all(combos[k:])
                if rest is not None:
                    rest_vals, rest_costs = rest
                    total = int(rest_costs.sum())
                    if lazy and messages.work + total > _WORK_BUDGET:
                        raise _TooCostly()
                    vals.extend(rest_vals)
                    errs.extend([0] * len(rest_vals))
                    costs.extend(rest_costs.tolist())
                    groups_read.extend([0] * len(rest_vals))
                    messages.work += total
                    break
            found = None if direct is None else direct.answer(combo)
            if found is not None:
                value, error, cost, groups = found
            else:
                act.device = devices.at(decode(combo))
                value, error, cost, groups = _run_leaf(leaf, act)
                if direct is not None and error is None:
                    direct.learn(combo, cost)
            vals.append(value)
            errs.append(0 if error is None else messages.code(error))
            costs.append(cost)
            groups_read.append(groups)
            messages.work += cost
            if lazy and (cost > COST_LIMIT or messages.work > _WORK_BUDGET):
                raise _TooCostly()
    finally:
        swap_meter(previous)
    res_val = np.zeros(size, dtype=bool)
    res_err = np.zeros(size, dtype=np.int32)
    res_cost = np.zeros(size, dtype=np.int64)
    res_groups = np.zeros(size, dtype=np.int64)
    if combos:
        res_val[present] = vals
        res_err[present] = errs
        res_cost[present] = costs
        res_groups[present] = groups_read
    max_cost = max(costs, default=0)
    return _LeafValues(combined, present, res_val, res_err, res_cost, res_groups, max_cost)


# String methods a leaf may apply to one attribute, with a constant string argument:
# on two strings CEL's are Python's own (both read code points), which map() runs in C.
_STRING_METHODS = {
    "startsWith": str.startswith,
    "endsWith": str.endswith,
    "contains": str.__contains__,
}


def _plain_attribute(node: Node) -> tuple[str, str] | None:
    """(domain, name) if ``node`` is ``device.attributes[domain].name`` itself (written
    with selects or constant-string indexes, no ``.?``)."""
    names: list[str] = []
    for _ in range(3):
        if isinstance(node, Select) and not node.test_only and not node.optional:
            names.append(node.field)
            node = node.operand
        elif (
            isinstance(node, Index)
            and not node.optional
            and isinstance(node.key, Const)
            and node.key.kind == "string"
        ):
            names.append(node.key.value)
            node = node.operand
        else:
            return None
    if not (isinstance(node, Ident) and node.name.lstrip(".") == "device"):
        return None
    name, domain, attributes = names
    return (domain, name) if attributes == "attributes" else None


def _string_call(leaf: Leaf) -> tuple[Call, str, str] | None:
    """(the call, domain, name) when ``leaf`` is a string method of one attribute with a
    constant string argument (``device.attributes["d"].uuid.startsWith("GPU-")``)."""
    call = leaf.node
    if not (
        isinstance(call, Call)
        and call.function in _STRING_METHODS
        and call.target is not None
        and len(call.args) == 1
        and isinstance(call.args[0], Const)
        and call.args[0].kind == "string"
    ):
        return None
    read = _plain_attribute(call.target)
    if read is None or leaf.reads != (("attr", *read),):
        return None
    return call, read[0], read[1]


def _string_call_objects(
    leaf: Leaf, table: DeviceTable, wanted: np.ndarray | None, messages: _Messages, lazy: bool
) -> _LeafValues | None:
    """A string-method leaf (see :class:`_StringCall`) over an attribute whose column
    is not built yet, answered from the attribute objects the table filed: one C call
    per object (``_columns.string_calls``), where numbering the values first cost ten
    times that for a column of UUIDs, which has a value per device. Combinations are
    the filed objects (an object shared by a run of devices is one).

    The program runs for the first two strings, which give what it charges beside the
    call (they must agree, as :meth:`_StringCall.learn` requires), and for an absent
    attribute. None -- the column path then answers -- unless every object is a
    ``string`` attribute holding ASCII text within the cost limit."""
    found = _string_call(leaf)
    if found is None or table.built(leaf.reads[0]):
        return None
    call, domain, ident = found
    listed = table.attribute_objects(domain, ident)
    if listed is None:
        return None
    entries, objects = listed
    arg = call.args[0].value  # type: ignore[attr-defined]
    deadline = messages.deadline
    if deadline is not None:
        check_deadline(deadline)
    answered = _columns.string_calls(objects, call.function, arg)
    if answered is None:
        return None
    verdicts, lengths = answered
    size = len(objects) + 1
    present = np.flatnonzero(
        np.bincount(entries if wanted is None else entries[wanted], minlength=size)
    )
    learn_from = present[present > 0][:2].tolist()
    if len(learn_from) < 2:
        return None  # (a column of one value is numbered at once)
    overload = call.overloads[0] if len(call.overloads) == 1 else ""
    strings = [objects[k - 1].value for k in learn_from]
    devices = _Devices(leaf.reads, [_listed_column(strings)])
    act = Activation(None, leaf.nslots, COST_LIMIT, deadline)
    previous = swap_meter(act)
    try:
        runs = [_run_at(leaf, act, devices, i) for i in (1, 2)]
        absent = _run_at(leaf, act, devices, 0) if present[0] == 0 else None
    finally:
        swap_meter(previous)
    bases = set()
    for (value, error, cost, groups), text, k in zip(runs, strings, learn_from, strict=True):
        if error is not None or groups or value is not bool(verdicts[k - 1]):
            return None
        bases.add(cost - call_cost(call.function, overload, (text, arg)))
    if len(bases) != 1:
        return None
    costs = _costs_by_length(bases.pop(), call.function, overload, arg, lengths)
    if costs is None:
        return None  # the program words the limit
    res_val = np.zeros(size, dtype=bool)
    res_err = np.zeros(size, dtype=np.int32)
    res_cost = np.zeros(size, dtype=np.int64)
    res_groups = np.zeros(size, dtype=np.int64)
    res_val[1:] = verdicts
    res_cost[1:] = costs
    if absent is not None:
        value, error, cost, groups = absent
        res_val[0] = value
        res_err[0] = 0 if error is None else messages.code(error)
        res_cost[0] = cost
        res_groups[0] = groups
    charged = res_cost[present]
    total = int(charged.sum())
    if lazy and messages.work + total > _WORK_BUDGET:
        raise _TooCostly()
    messages.work += total
    max_cost = int(charged.max())
    return _LeafValues(entries, present, res_val, res_err, res_cost, res_groups, max_cost)


def _costs_by_length(
    base: int, function: str, overload: str, arg: str, lengths: np.ndarray
) -> np.ndarray | None:
    """What a string method's leaf charges for ASCII strings of ``lengths`` (``base``
    beside the call; the call's cost depends on the length alone for ASCII text,
    worked out once per length), or None when one is past the cost limit."""
    distinct, where = np.unique(lengths, return_inverse=True)
    per_length = [base + call_cost(function, overload, ("x" * n, arg)) for n in distinct.tolist()]
    if max(per_length, default=0) > COST_LIMIT:
        return None
    return np.asarray(per_length, dtype=np.int64)[where.reshape(-1)]


def _listed_column(values: list[Any]) -> Column:
    return Column(np.zeros(0, dtype=np.int32), values, True)


def _run_at(
    leaf: Leaf, act: Activation, devices: _Devices, value_id: int
) -> tuple[bool, str | None, int, int]:
    """The leaf's program on the synthetic device holding value ``value_id``."""
    act.device = devices.at((value_id,))
    return _run_leaf(leaf, act)


class _StringCall:
    """A leaf that is a string method of one attribute with a constant string argument
    (``device.attributes["d"].uuid.startsWith("GPU-")``), answered for a string value
    by the method itself: a selector reading what differs on every device is evaluated
    once per device, and the leaf's program, metered step by step, cost ten times the
    method. What the program charges beside the call does not depend on the string, so
    it is learnt from the program's own runs (two that agree); other values, and every
    value until then, take the program."""

    __slots__ = (
        "arg",
        "base",
        "batch",
        "first",
        "function",
        "learning",
        "method",
        "overload",
        "values",
    )

    def __init__(self, call: Call, values: list[Any]) -> None:
        self.function = call.function
        self.method = _STRING_METHODS[call.function]
        self.arg = call.args[0].value  # type: ignore[attr-defined]
        self.overload = call.overloads[0] if len(call.overloads) == 1 else ""
        self.values = values
        self.base: int | None = None  # known once two runs agreed
        self.first: int | None = None  # the first run's
        self.learning = True
        self.batch = True  # answer_all not tried yet

    @classmethod
    def of(cls, leaf: Leaf, columns: list[Column]) -> _StringCall | None:
        found = _string_call(leaf)
        if found is None or len(columns) != 1:
            return None
        return cls(found[0], columns[0].values)

    def _string(self, combo: int) -> str | None:
        value = self.values[combo - 1] if combo > 0 else None
        return value if type(value) is str else None

    def answer(self, combo: int) -> tuple[bool, None, int, int] | None:
        if self.base is None:
            return None
        value = self._string(combo)
        if value is None:
            return None
        cost = self.base + call_cost(self.function, self.overload, (value, self.arg))
        if cost > COST_LIMIT:
            return None  # the program words the limit
        return self.method(value, self.arg), None, cost, 0

    def answer_all(self, combos: list[int]) -> tuple[list[bool], np.ndarray] | None:
        """Once learnt: the values and costs of all ``combos`` at once (a value per
        device when they are UUIDs), or None unless each is an ASCII string within the
        cost limit (then :meth:`answer` and the program take them one by one). The
        method runs over them in C (``map``); the cost is worked out once per length,
        on which alone it depends for ASCII text."""
        assert self.base is not None
        values = self.values
        strings: list[Any] = [values[c - 1] if c > 0 else None for c in combos]
        if set(map(type, strings)) != {str} or not all(map(str.isascii, strings)):
            return None
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        costs = _costs_by_length(self.base, self.function, self.overload, self.arg, lengths)
        if costs is None:
            return None  # the program words the limit
        return list(map(self.method, strings, repeat(self.arg))), costs

    def learn(self, combo: int, cost: int) -> None:
        """What the program charged for ``combo``, answered without an error."""
        value = self._string(combo) if self.learning else None
        if value is None:
            return
        base = cost - call_cost(self.function, self.overload, (value, self.arg))
        if self.first is None:
            self.first = base
            return
        self.base = base if base == self.first else None  # else the program, always
        self.learning = False


class _Devices:
    """The synthetic device of each combination of a leaf's reads. When the leaf reads
    nothing but the driver, allowMultipleAllocations and single attributes or
    capacities, one device is made and its read entries are swapped per combination
    (a leaf reads what it reads and keeps nothing); otherwise one is made each time."""

    def __init__(self, reads: tuple[ReadKey, ...], columns: list[Column]) -> None:
        self.reads = reads
        self.columns = [c.values for c in columns]
        self.device: dict[str, Any] | None = None
        self.slots: list[tuple[dict[str, Any], str]] = []
        if all(key[0] in _SWAPPABLE for key in reads):
            self.device = synthetic_device({})
            for key in reads:
                if key[0] in ("attr", "cap"):
                    maps = self.device["attributes" if key[0] == "attr" else "capacity"]
                    self.slots.append((maps.setdefault(key[1], {}), key[2]))
                else:
                    self.slots.append((self.device, _DEVICE_FIELDS[key[0]]))

    def at(self, ids: tuple[int, ...]) -> dict[str, Any]:
        if self.device is None:
            values = {
                key: (column[i - 1] if i > 0 else None)
                for key, column, i in zip(self.reads, self.columns, ids, strict=True)
            }
            return synthetic_device(values)
        for (mapping, name), column, i, key in zip(
            self.slots, self.columns, ids, self.reads, strict=True
        ):
            if i > 0:
                mapping[name] = column[i - 1]
            elif key[0] in _DEVICE_FIELDS:
                mapping[name] = _DEVICE_DEFAULTS[key[0]]
            else:
                mapping.pop(name, None)
        return self.device


_DEVICE_FIELDS = {"driver": "driver", "multi": "allowMultipleAllocations"}
_DEVICE_DEFAULTS = {"driver": "", "multi": False}
_SWAPPABLE = frozenset({"attr", "cap", *_DEVICE_FIELDS})


def _gather_leaf(leaf: _LeafValues, track: bool) -> Result:
    n = len(leaf.combined)
    val = _gather(leaf.val, leaf.combined, leaf.present, n)
    errs = _gather_codes(leaf.err, leaf.combined, leaf.present)
    if not track:
        return val, errs, 0, 0
    return val, errs, _per_row(leaf.cost, leaf), _per_row(leaf.groups, leaf)


def _per_row(per_combination: np.ndarray, leaf: _LeafValues) -> int | np.ndarray:
    """Per-combination numbers spread to rows (one int when all are the same)."""
    values = per_combination[leaf.present]
    if len(values) and (values == values[0]).all():
        return int(values[0])
    return per_combination[leaf.combined]


def _run_leaf(leaf: Leaf, act: Activation) -> tuple[bool, str | None, int, int]:
    """(value, error text, cost, Shared groups read) of one leaf on ``act.device``;
    ``act`` is the current meter, and is reset here."""
    act.cost = act.allocated = act.groups = 0
    if leaf.nslots:
        act.slots = [None] * leaf.nslots
    try:
        value = leaf.program(act)
    except CostLimitExceeded:
        return False, COST_MESSAGE, COST_LIMIT + 1, act.groups
    except GoPanic:
        raise _Panicked() from None
    except Exception as exc:  # every failure becomes a CEL error (deadlines propagate)
        return False, str(runtime_error(exc)), act.cost, act.groups
    try:
        if leaf.mode == "top":
            return to_bool_result(value), None, act.cost, act.groups
    except CELRuntimeError as exc:
        return False, str(exc), act.cost, act.groups
    if type(value) is not bool:
        return False, "no such overload", act.cost, act.groups
    return value, None, act.cost, act.groups


def _one(c: int) -> tuple[int]:
    return (c,)


def _combine(columns: list[Column], n: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """Row → combination index, the combinations that occur, and a decoder to value ids."""
    if not columns:
        return np.zeros(n, dtype=np.int32), np.zeros(1 if n else 0, dtype=np.int64), lambda c: ()
    if len(columns) == 1:
        col = columns[0]
        return col.ids1, col.present(), _one
    bases = [c.cardinality + 1 for c in columns]
    total = 1
    for b in bases:
        total *= b
    if total <= max(_MAX_DENSE, 4 * n):
        combined = columns[0].ids1.astype(np.int64)
        for col, base in zip(columns[1:], bases[1:], strict=True):
            combined *= base
            combined += col.ids1
        present = np.flatnonzero(np.bincount(combined, minlength=total)) if n else combined

        def decode_dense(c: int) -> tuple[int, ...]:
            digits = []
            for base in reversed(bases):
                c, d = divmod(c, base)
                digits.append(d)
            return tuple(reversed(digits))

        return combined, present, decode_dense
    stacked = np.stack([c.ids1 for c in columns], axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return (
        inverse.reshape(-1).astype(np.int64),
        np.arange(len(uniq), dtype=np.int64),
        lambda c: tuple(int(x) for x in uniq[c]),
    )


def _gather(
    table_values: np.ndarray, combined: np.ndarray, present: np.ndarray, n: int
) -> np.ndarray:
    """Broadcast per-combination booleans to rows with as few passes as possible."""
    hits = present[table_values[present]]
    if len(hits) == 0:
        return np.zeros(n, dtype=bool)
    if len(hits) == len(present):
        return np.ones(n, dtype=bool)
    lo, hi = int(hits[0]), int(hits[-1])
    inside = np.count_nonzero((present >= lo) & (present <= hi))
    if inside == len(hits):  # the true combinations are one run of the present ones
        if lo == int(present[0]):
            return combined <= hi
        if hi == int(present[-1]):
            return combined >= lo
        return (combined >= lo) & (combined <= hi)
    misses = len(present) - len(hits)
    if misses == 1:
        return combined != int(present[~table_values[present]][0])
    if len(hits) <= 2:
        out = combined == int(hits[0])
        for h in hits[1:]:
            out |= combined == int(h)
        return out
    return table_values[combined]


def _gather_codes(
    table_codes: np.ndarray, combined: np.ndarray, present: np.ndarray
) -> Errors | None:
    erring = present[table_codes[present] != 0]
    if len(erring) == 0:
        return None
    if len(erring) == 1:
        c = int(erring[0])
        return Errors(combined == c, int(table_codes[c]))
    codes = table_codes[combined]
    return Errors(codes != 0, codes)


def evaluate_rows(
    selector: Selector,
    table: DeviceTable,
    *,
    memoize: bool = True,
    deadline: float | None = None,
    rows: np.ndarray | None = None,
    stop_at_cost_limit: bool = False,
) -> tuple[np.ndarray, np.ndarray, Mapping[int, str], np.ndarray]:
    """The general path over a table: ``matches`` per device, optionally memoised on the
    projection of what the whole expression reads (devices that agree on every value
    the selector can see share one evaluation). ``rows``: a bool mask of the rows to
    evaluate (all if None). With ``stop_at_cost_limit``, the rows after the first one
    that reaches the cost limit are left pending (the fourth array)."""
    n = table.n
    match = np.zeros(n, dtype=bool)
    error = np.zeros(n, dtype=bool)
    pending = np.zeros(n, dtype=bool)
    messages: dict[int, str] = {}
    order = np.flatnonzero(rows).tolist() if rows is not None else range(n)
    conv = table.conversion_messages
    reads = tuple(sorted(analyze_reads(selector.ast))) if memoize else ()
    columns = [table.column(key) for key in reads]
    # Only the rows asked about, as Python ints (a lazy evaluation's probe asks one).
    id_rows = (
        [dict(zip(order, col.ids1[order].tolist(), strict=True)) for col in columns]
        if rows is not None
        else [col.ids1.tolist() for col in columns]
    )
    memo: dict[tuple[int, ...], tuple[bool, str | None]] = {}
    for k, row in enumerate(order):
        if deadline is not None and not k & CHECK_EVERY:
            check_deadline(deadline)
        text = conv.get(row)
        if text is not None:
            error[row] = True
            messages[row] = text
            continue
        if not memoize:
            try:
                result: tuple[bool, str | None] = (
                    selector.matches(table.device_input(row), deadline),
                    None,
                )
            except CELRuntimeError as exc:
                result = (False, str(exc))
        else:
            key = tuple(ids[row] for ids in id_rows)
            found = memo.get(key)
            if found is None:
                values = {
                    k: (col.values[i - 1] if i > 0 else None)
                    for k, col, i in zip(reads, columns, key, strict=True)
                }
                try:
                    found = (
                        to_bool_result(
                            selector.evaluate_value(synthetic_device(values), deadline=deadline)
                        ),
                        None,
                    )
                except CELRuntimeError as exc:
                    found = (False, str(exc))
                memo[key] = found
            result = found
        value, text = result
        if text is not None:
            error[row] = True
            messages[row] = text
            if stop_at_cost_limit and text == COST_MESSAGE:
                pending[np.asarray(order[k + 1 :], dtype=np.int64)] = True
                break
        else:
            match[row] = value
    return match, error, messages, pending
