"""A prepared pod's answers on the nodes it is about to ask, made in one pass.

kube-scheduler asks every node once per pod. A node's first answer the long way is
a search and an answer made in Python from the node's chosen devices (by analogy with
an earlier node's, :mod:`draspeed.engine.analogy`): about ten times a remembered
answer's copy. Once a prepared pod asks a second node, it is going through the nodes:
the next ones are searched in one compiled pass (``search_nodes``) and each fitting
node whose answer is of a kind with a known recipe gets its answer's leaves from the
arrays -- the node's name and each chosen device's driver, pool and device name --
without reading a model object. The window ahead doubles with the answers already
remembered, so a pass over all nodes searches each once, and one that asks the nodes
in order and stops early has searched at most twice as many as it asked, or
:data:`MIN_AHEAD` more.

Only answers that analogy would make the same way are made here: every chosen device
whole (no shared device), without binding conditions (or failure conditions), and
bound to the node by its name (the slice's or its own ``nodeName``, or
``bindsToNode``). Any other node is left to its own long way, which answers it as
before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from draspeed.engine import _core
from draspeed.engine._prepared import remember_filled
from draspeed.engine.analogy import PINNED, Recipe, kind_of_answer
from draspeed.engine.claim_arrays import MAX_RESULTS, ClaimArrays
from draspeed.engine.slice_table import FLAGS, SELECTION

# The fewest nodes searched ahead at once.
MIN_AHEAD = 32

_FOUND = _core.OUTCOME["found"]
# A chosen device whose answer analogy makes some other way (see the module).
_NOT_BY_NAME = FLAGS["multi"] | FLAGS["binding"] | FLAGS["binding_failures"]
_NODE_NAME = SELECTION["node_name"]


# Windows that made no answer after which a claim set's pass stops searching ahead.
IDLE_WINDOWS = 2


def worth_a_window(arrays: ClaimArrays, n: int) -> bool:
    """Whether answering ahead from node n on may make answers: a kind of answer is
    known, fewer than :data:`IDLE_WINDOWS` windows made none, and n was not searched
    ahead."""
    if arrays.problem is None or not arrays.analogies or arrays.ahead_idle >= IDLE_WINDOWS:
        return False
    return arrays.ahead is None or not arrays.ahead[n]


def answer_ahead(
    arrays: ClaimArrays, n: int, few_steps: tuple[Any, ...], stats_of: Callable[[int], Any]
) -> None:
    """Remember the answers of the searchable nodes from node n on (a window as wide
    as the answers remembered, or the nodes searched ahead, at least
    :data:`MIN_AHEAD`), searched with the arrays' own state. The Stats of a search of
    ``work`` steps: ``few_steps[work]``, else ``stats_of(work)``."""
    layout, problem = arrays.layout, arrays.problem
    if not worth_a_window(arrays, n):
        return
    assert problem is not None
    ahead = arrays.ahead
    if ahead is None:
        ahead = arrays.ahead = np.zeros(len(layout.nodes), dtype=bool)
    searchable = arrays.searchable
    at = int(np.searchsorted(searchable, n))
    # (As wide as the answers, or the nodes searched ahead: a pass whose answers are
    # not made here still takes few windows.)
    width = max(MIN_AHEAD, len(arrays.answers), int(np.count_nonzero(ahead)))
    window = searchable[at : at + width]
    window = window[~ahead[window]]
    ahead[window] = True
    if layout.stale:
        window = window[~np.isin(window, list(layout.stale))]
    if not len(window):
        return
    before = len(arrays.answers)
    out = _core.search_nodes(problem, 0.0, window, None)
    rows = np.flatnonzero(out["outcome"] == _FOUND)
    if len(rows):
        _answer_rows(arrays, window, out, rows, few_steps, stats_of)
    if len(arrays.answers) == before:
        arrays.ahead_idle += 1


def _answer_rows(
    arrays: ClaimArrays,
    window: np.ndarray,
    out: dict[str, Any],
    rows: np.ndarray,
    few_steps: tuple[Any, ...],
    stats_of: Callable[[int], Any],
) -> None:
    """The answers of the fitting ``rows`` of a search of ``window``."""
    C = len(arrays.claims)
    R = len(arrays.plan.request_alts) if arrays.plan is not None else 0
    res_n = out["res_n"].reshape(-1, C)[rows]
    # Rows with equal pick counts per claim are grouped; within a group, by kind.
    counts_of, which = _distinct_rows(res_n)
    for k, counts in enumerate(counts_of):
        group = rows if len(counts_of) == 1 else rows[which == k]
        _answer_group(arrays, window, out, group, counts, R, few_steps, stats_of)


def _distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a 2-D integer array and each row's index among them (one
    row, the usual case, without sorting)."""
    if (matrix == matrix[:1]).all():
        return matrix[:1], np.zeros(len(matrix), dtype=np.intp)
    rows = np.ascontiguousarray(matrix)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return rows[first], which.reshape(-1)


def _answer_group(
    arrays: ClaimArrays,
    window: np.ndarray,
    out: dict[str, Any],
    group: np.ndarray,
    counts: np.ndarray,
    R: int,
    few_steps: tuple[Any, ...],
    stats_of: Callable[[int], Any],
) -> None:
    """The rows of ``group`` (all with ``counts`` picks per claim): each one's kind,
    and the answers of the kinds with a recipe."""
    layout = arrays.layout
    C = len(counts)
    # Each row's picks, claim by claim, as (alternative, node-local position) columns.
    slot = np.concatenate([c * MAX_RESULTS + np.arange(k) for c, k in enumerate(counts.tolist())])
    alts = out["res_alt"].reshape(-1, C * MAX_RESULTS)[group][:, slot]
    nodes = window[group]
    positions = out["res_pos"].reshape(-1, C * MAX_RESULTS)[group][:, slot]
    positions = positions + layout.node_ptr[nodes][:, None]
    subs = out["chosen_sub"].reshape(-1, R)[group] if R else np.zeros((len(group), 0), np.int32)
    # Only rows whose every chosen device is whole and bound to the node by name.
    g = layout.g[positions]
    table = arrays.snap.table
    n_slices = arrays.snap.n_slices
    slices = table.slices_of(g, n_slices)
    flags = table.column("d_flags")[g]
    per_device = table.column("s_per_device", n_slices)[slices] != 0
    by_name = np.where(
        per_device,
        table.column("d_pdn")[g] == _NODE_NAME,
        table.column("s_sel", n_slices)[slices] == _NODE_NAME,
    ) | ((flags & FLAGS["binds_to_node"]) != 0)
    usable = ((flags & _NOT_BY_NAME) == 0).all(axis=1) & by_name.all(axis=1)
    if not usable.any():
        return
    keep = np.flatnonzero(usable)
    alts, subs, nodes, slices, g = alts[keep], subs[keep], nodes[keep], slices[keep], g[keep]
    work = out["work"][group][keep]
    kinds, inverse = _distinct_rows(np.hstack([alts, subs]).astype(np.int32))
    bounds = np.cumsum([0, *counts.tolist()])
    pool_ids = table.column("s_pool", n_slices)[slices]
    device_names = table.column("d_name")[g]
    for k, kind_row in enumerate(kinds.tolist()):
        picked = kind_row[: bounds[-1]]
        picks = [[(a, 0) for a in picked[bounds[c] : bounds[c + 1]]] for c in range(C)]
        kind = kind_of_answer(picks, kind_row[bounds[-1] :], (PINNED,) * len(picked))
        recipe = arrays.analogies.get(kind)
        if not isinstance(recipe, Recipe):
            continue  # no recipe yet (or none possible): each node's long way
        members = np.arange(len(nodes)) if len(kinds) == 1 else np.flatnonzero(inverse == k)
        remember_filled(
            arrays.answers,
            nodes[members].astype(np.int32),
            work[members].astype(np.int64),
            few_steps,
            stats_of,
            recipe.shape,
            recipe.leaves,
            np.array(recipe.holes, dtype=np.int32).reshape(-1, 3),
            layout.names,
            np.ascontiguousarray(pool_ids[members], dtype=np.int32),
            np.ascontiguousarray(device_names[members], dtype=np.int32),
            table.names.pool_keys,
            table.names.string_list,
        )
