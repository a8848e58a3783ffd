"""Evaluate a selector over a whole :class:`DeviceTable` with numpy.

The plan splits the expression at ``&&``, ``||``, ``!`` and ``?:`` (after inlining
``cel.bind`` variables that name a path such as ``device.attributes["d"]``) into
leaves. Each leaf is a closed sub-expression; a static analysis finds what it reads
(the driver, allowMultipleAllocations, attribute and capacity keys, domain presence,
whole domain maps, or — when it uses ``device`` in a way the analysis does not follow —
the whole device). The leaf is then evaluated by the general evaluator once per
*distinct combination* of the values it reads, on a synthetic device holding just those
values, and the per-combination results are broadcast to the rows with numpy
(a range compare when the true ids are contiguous — ids are sorted by value — a few
equality compares, or a gather). Leaves combine with CEL's commutative error
absorption; a cost-limit error is not absorbed, as in the evaluator.

Results are exact, errors included: a leaf error is an error for its rows, never a
silent false. Devices whose attributes upstream cannot convert are errors for every
selector.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

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
    Ternary,
    children,
)
from draspeed.cel.deadline import CHECK_EVERY, check_deadline
from draspeed.cel.evaluator import Compiler
from draspeed.cel.values import DomainMap, to_bool_result
from draspeed.errors import CELRuntimeError

if TYPE_CHECKING:
    from draspeed.cel.selector import Selector
    from draspeed.cel.table import Column, DeviceTable

ReadKey = tuple[str, ...]
COST_MESSAGE = "operation cancelled: actual cost limit exceeded"
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


def plan_for(selector: Selector) -> Plan:
    cached = selector._vector
    if cached is not None:
        return cached
    with selector._vector_lock:
        if selector._vector is None:
            tree = _inline_binds(copy.deepcopy(selector.ast), {})
            plan = Plan(root=None)
            plan.root = _build(tree, "top", plan)
            selector._vector = plan
        return selector._vector


def _build(node: Node, mode: str, plan: Plan) -> Any:
    if isinstance(node, Logical):
        return Branch(node.op, [_build(o, "bool", plan) for o in node.operands])
    if isinstance(node, Call) and node.function == "!_" and node.target is None:
        return Branch("!", [_build(node.args[0], "bool", plan)])
    if isinstance(node, Ternary):
        return Branch(
            "?:",
            [
                _build(node.cond, "bool", plan),
                _build(node.then, mode, plan),
                _build(node.other, mode, plan),
            ],
        )
    compiler = Compiler()
    program = compiler.compile(node)
    leaf = Leaf(node, tuple(sorted(analyze_reads(node))), program, compiler.nslots, mode)
    plan.leaves.append(leaf)
    return leaf


# ---- bind inlining ----------------------------------------------------------------


def _is_device_path(node: Node) -> bool:
    while True:
        if isinstance(node, Ident):
            return node.name == "device"
        if (isinstance(node, Select) and not node.optional and not node.test_only) or (
            isinstance(node, Index) and not node.optional and isinstance(node.key, Const)
        ):
            node = node.operand
        else:
            return False


def _inline_binds(node: Node, env: dict[str, Node | None]) -> Node:
    """Replace ``cel.bind`` variables bound to device paths by the path itself."""
    if isinstance(node, Ident):
        target = env.get(node.name)
        return copy.deepcopy(target) if target is not None else node
    if isinstance(node, Bind):
        init = _inline_binds(node.init, env)
        if _is_device_path(init) and "device" not in env:
            return _inline_binds(node.body, {**env, node.var: init})
        node.init = init
        node.body = _inline_binds(node.body, {**env, node.var: None})
        return node
    if isinstance(node, Comprehension):
        node.range = _inline_binds(node.range, env)
        inner = {**env, node.var: None}
        if node.var2 is not None:
            inner[node.var2] = None
        if node.predicate is not None:
            node.predicate = _inline_binds(node.predicate, inner)
        if node.transform is not None:
            node.transform = _inline_binds(node.transform, inner)
        return node
    if isinstance(node, Select):
        node.operand = _inline_binds(node.operand, env)
    elif isinstance(node, Index):
        node.operand = _inline_binds(node.operand, env)
        node.key = _inline_binds(node.key, env)
    elif isinstance(node, Call):
        if node.target is not None:
            node.target = _inline_binds(node.target, env)
        node.args = [_inline_binds(a, env) for a in node.args]
    elif isinstance(node, ListLit):
        node.elements = [_inline_binds(e, env) for e in node.elements]
    elif isinstance(node, MapLit):
        node.entries = [
            (_inline_binds(k, env), _inline_binds(v, env), o) for k, v, o in node.entries
        ]
    elif isinstance(node, Ternary):
        node.cond = _inline_binds(node.cond, env)
        node.then = _inline_binds(node.then, env)
        node.other = _inline_binds(node.other, env)
    elif isinstance(node, Logical):
        node.operands = [_inline_binds(o, env) for o in node.operands]
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
        if (
            node.function == "@in"
            and isinstance(node.args[0], Const)
            and node.args[0].kind == "string"
        ):
            container = _sym(node.args[1], env, reads)
            if container == ("attrs",):
                reads.add(("attr_presence", node.args[0].value))
                return None
            if container == ("caps",):
                reads.add(("cap_domain", node.args[0].value))
                return None
            _escalate(container, reads)
            return None
        for child in children(node):
            _escalate(_sym(child, env, reads), reads)
        return None
    if isinstance(node, Bind):
        init = _sym(node.init, env, reads)
        return _sym(node.body, {**env, node.var: init}, reads)
    if isinstance(node, Comprehension):
        _escalate(_sym(node.range, env, reads), reads)
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


class _Messages:
    """One table evaluation's error texts by code (code 0 = no error; cost-limit codes
    are not absorbable), and its deadline."""

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.texts: list[str] = []
        self.codes: dict[str, int] = {}
        self.fatal: set[int] = set()

    def code(self, text: str) -> int:
        found = self.codes.get(text)
        if found is None:
            self.texts.append(text)
            found = self.codes[text] = len(self.texts)
            if text == COST_MESSAGE:
                self.fatal.add(found)
        return found


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


# (value bool[n], erring rows or None)
Result = tuple[np.ndarray, Errors | None]


def evaluate_table(
    selector: Selector, table: DeviceTable, deadline: float | None = None
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    plan = plan_for(selector)
    messages = _Messages()
    messages.deadline = deadline
    val, errs = _eval(plan.root, table, messages)
    if table.conversion_messages:
        codes = np.zeros(table.n, dtype=np.int32) if errs is None else errs.full()
        for row, text in table.conversion_messages.items():
            codes[row] = messages.code(text)
        val = val & ~table.conversion_error
        errs = _errors_from_codes(codes)
    if errs is None:
        return val, np.zeros(table.n, dtype=bool), {}
    error = errs.mask
    match = val & ~error
    rows = np.flatnonzero(error)
    texts = messages.texts
    codes_at = errs.at(rows)
    return match, error, {int(r): texts[int(c) - 1] for r, c in zip(rows, codes_at, strict=True)}


def _eval(part: Any, table: DeviceTable, messages: _Messages) -> Result:
    if isinstance(part, Leaf):
        return _eval_leaf(part, table, messages)
    results = [_eval(p, table, messages) for p in part.parts]
    if part.op == "!":
        val, errs = results[0]
        return (~val if errs is None else ~val & ~errs.mask), errs
    if part.op == "?:":
        (cval, cerr), (tval, terr), (fval, ferr) = results
        val = np.where(cval, tval, fval)
        if cerr is None and terr is None and ferr is None:
            return val, None
        n = len(cval)
        zero = np.zeros(n, dtype=np.int32)
        branch = np.where(
            cval,
            terr.full() if terr is not None else zero,
            ferr.full() if ferr is not None else zero,
        )
        codes = np.where(cerr.mask, cerr.full(), branch) if cerr is not None else branch
        errs = _errors_from_codes(codes.astype(np.int32, copy=False))
        return (val if errs is None else val & ~errs.mask), errs
    return _logical(part.op == "||", results, messages)


def _logical(is_or: bool, results: list[Result], messages: _Messages) -> Result:
    """CEL's commutative ``&&``/``||``: the deciding value wins over errors; otherwise
    the first operand's error (in operand order) is the result."""
    if all(errs is None for _, errs in results):
        out = results[0][0]
        for val, _ in results[1:]:
            out = (out | val) if is_or else (out & val)
        return out, None
    if messages.fatal:
        return _logical_with_fatal(is_or, results, messages)
    decided: np.ndarray | None = None  # an operand has the deciding value (and no error)
    erring: np.ndarray | None = None
    for val, errs in results:
        decisive = val if is_or else ~val
        if errs is not None:
            decisive = decisive & ~errs.mask
            erring = errs.mask if erring is None else (erring | errs.mask)
        decided = decisive if decided is None else (decided | decisive)
    assert decided is not None and erring is not None
    erring = erring & ~decided
    if not erring.any():
        return (decided if is_or else ~decided), None
    rows = np.flatnonzero(erring)
    first = np.zeros(len(rows), dtype=np.int32)
    for _, errs in results:
        if errs is not None:
            here = np.where(errs.mask[rows], errs.at(rows), 0)
            first = np.where(first == 0, here, first)
    codes = np.zeros(len(decided), dtype=np.int32)
    codes[rows] = first
    val_out = decided if is_or else ~decided & ~erring
    return val_out, Errors(erring, codes)


def _logical_with_fatal(is_or: bool, results: list[Result], messages: _Messages) -> Result:
    """As :func:`_logical`, when a cost-limit error may occur: it ends the evaluation
    unless an earlier operand already decided the result (left-to-right short circuit)."""
    n = len(results[0][0])
    fatal_codes = list(messages.fatal)
    decided = np.zeros(n, dtype=bool)
    fatal_err = np.zeros(n, dtype=np.int32)
    first_err = np.zeros(n, dtype=np.int32)
    for val, errs in results:
        if errs is None:
            decided |= val if is_or else ~val
            continue
        err = errs.full()
        ok = err == 0
        fatal_here = np.isin(err, fatal_codes) & ~decided & (fatal_err == 0)
        fatal_err = np.where(fatal_here, err, fatal_err)
        first_err = np.where((first_err == 0) & ~ok, err, first_err)
        decided |= (val if is_or else ~val) & ok
    err_out = np.where(decided, 0, first_err).astype(np.int32)
    err_out = np.where(fatal_err != 0, fatal_err, err_out).astype(np.int32)
    errs_out = _errors_from_codes(err_out)
    val_out = decided if is_or else ~decided
    return (val_out if errs_out is None else val_out & ~errs_out.mask), errs_out


def _eval_leaf(leaf: Leaf, table: DeviceTable, messages: _Messages) -> Result:
    n = table.n
    columns = [table.column(key) for key in leaf.reads]
    combined, present, decode = _combine(columns, n)
    size = int(present[-1]) + 1 if len(present) else 1
    res_val = np.zeros(size, dtype=bool)
    res_err = np.zeros(size, dtype=np.int32)
    deadline = messages.deadline
    for k, combo in enumerate(present):
        if deadline is not None and not k & CHECK_EVERY:
            check_deadline(deadline)
        ids = decode(int(combo))
        values = {
            key: (col.values[i - 1] if i > 0 else None)
            for key, col, i in zip(leaf.reads, columns, ids, strict=True)
        }
        value, error = _run_leaf(leaf, synthetic_device(values))
        if error is not None:
            res_err[combo] = messages.code(error)
        else:
            res_val[combo] = value
    return _gather(res_val, combined, present, n), _gather_codes(res_err, combined, present)


def _run_leaf(leaf: Leaf, device: dict[str, Any]) -> tuple[bool, str | None]:
    from draspeed.cel.selector import run_program

    try:
        value = run_program(leaf.program, leaf.nslots, device)
        if leaf.mode == "top":
            return to_bool_result(value), None
        if type(value) is not bool:
            return False, "no such overload"
        return value, None
    except CELRuntimeError as exc:
        return False, str(exc)


def _combine(columns: list[Column], n: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """Row → combination index, the combinations that occur, and a decoder to value ids."""
    if not columns:
        return np.zeros(n, dtype=np.int32), np.zeros(1 if n else 0, dtype=np.int64), lambda c: ()
    if len(columns) == 1:
        col = columns[0]
        return col.ids1, col.present(), lambda c: (c,)
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
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """The general path over a table: ``matches`` per device, optionally memoised on the
    projection of what the whole expression reads (devices that agree on every value
    the selector can see share one evaluation)."""
    n = table.n
    match = np.zeros(n, dtype=bool)
    error = np.zeros(n, dtype=bool)
    messages: dict[int, str] = {}
    if not memoize:
        for row in range(n):
            if deadline is not None and not row & CHECK_EVERY:
                check_deadline(deadline)
            try:
                match[row] = selector.matches(table.device_input(row))
            except CELRuntimeError as exc:
                error[row] = True
                messages[row] = str(exc)
        return match, error, messages
    reads = tuple(sorted(analyze_reads(selector.ast)))
    columns = [table.column(key) for key in reads]
    conv = table.conversion_messages
    memo: dict[tuple[int, ...], tuple[bool, str | None]] = {}
    id_rows = [col.ids1.tolist() for col in columns]
    for row in range(n):
        if deadline is not None and not row & CHECK_EVERY:
            check_deadline(deadline)
        text = conv.get(row)
        if text is not None:
            error[row] = True
            messages[row] = text
            continue
        key = tuple(ids[row] for ids in id_rows)
        result = memo.get(key)
        if result is None:
            values = {
                k: (col.values[i - 1] if i > 0 else None)
                for k, col, i in zip(reads, columns, key, strict=True)
            }
            try:
                result = (to_bool_result(selector.evaluate_value(synthetic_device(values))), None)
            except CELRuntimeError as exc:
                result = (False, str(exc))
            memo[key] = result
        value, text = result
        if text is not None:
            error[row] = True
            messages[row] = text
        else:
            match[row] = value
    return match, error, messages
