"""Fuzzing the compiled core through its Python entry points, in a child process.

Run as ``python -m draspeed.testing.core_fuzz --iterations N --seed S [--core SO]``.
It captures the arrays real ``allocate`` calls hand to ``_core.Problem`` (the
scenarios of the corpora given with ``--cases``), then mutates them -- values,
lengths, pointer arrays, dtypes, flags, deadlines -- and calls ``Problem(...)`` and
``search_nodes(...)``. The contract:

- ``Problem`` accepts the arrays or raises ``ValueError`` (its shape checks; a
  buffer of the wrong dtype is a ``ValueError`` too);
- whatever ``Problem`` accepts, ``search_nodes`` searches without crashing and returns a
  well-formed answer (known outcome; picks within the arrays);
- arrays ``Problem`` accepts keep every pointer array monotonic and within the array
  it points into, since the search indexes with them unchecked.

A crash kills this process: the parent sees the signal and the last line of
``--progress`` names the iteration (``--replay K`` repeats just that one). With
``--core`` a debug (or AddressSanitizer) build of the extension is loaded instead of
the installed one. The summary is printed as one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

# Pointer arrays: name -> (the array whose index range it covers, or an int bound name).
POINTERS = {
    "claim_req_ptr": "req_has_subs",
    "req_alt_ptr": "alt_all",
    "all_ptr": "all_pos",
    "pool_slot_ptr": "slot_available",
    "cap_ptr": "cap_room",
    "claim_con_ptr": "con_distinct",
    "con_value_ptr": "con_values",
    "node_ptr": "in_use",
    "node_pool_ptr": "pos_pool",  # bounded by the pools (len(pool_slot_ptr) - 1), see below
}
# Scalar arguments of Problem besides its arrays, mutated as flags are.
SCALARS = ("n_codes", "max_results")


def load_core(path: str | None) -> ModuleType:
    """The extension to fuzz: the installed one, or a build at ``path``."""
    if path is None:
        from draspeed.engine import _core

        return _core
    import draspeed

    spec = importlib.util.spec_from_file_location("draspeed.engine._core", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["draspeed.engine._core"] = module
    spec.loader.exec_module(module)
    setattr(draspeed, "_core", module)  # noqa: B010 - the package imports it lazily
    return module


def capture(core: ModuleType, cases: list[Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The Problem arguments of every allocate call the cases make (fast engine)."""
    from draspeed.errors import DraspeedError
    from draspeed.testing.cases import read_case
    from draspeed.testing.engines import run

    captured: list[tuple[dict[str, Any], dict[str, Any]]] = []
    real = getattr(core, "Problem")  # noqa: B009 - replaced below, so looked up by name

    dtypes = {name: dtype for name, dtype, _, _ in core.ARRAYS}

    def recording(arrays: dict[str, Any], **flags: Any) -> Any:
        # Captured as the arrays Problem makes of them (callers may pass lists).
        captured.append(
            ({k: np.array(v, dtype=dtypes.get(k)) for k, v in arrays.items()}, dict(flags))
        )
        return real(arrays, **flags)

    setattr(core, "Problem", recording)  # noqa: B010
    try:
        for case in cases:
            try:
                run("fast", read_case(case)[0], timeout=5.0)
            except DraspeedError:
                continue
    finally:
        setattr(core, "Problem", real)  # noqa: B010
    return captured


def unchecked_problems(arrays: dict[str, Any]) -> list[str]:
    """Ways the arrays break what the search relies on without checking.

    Pointer arrays must be monotonic within the array they index, and a request
    without subrequests must own an alternative (the search takes its first one).
    """
    found = []
    for name, target in POINTERS.items():
        ptr = arrays.get(name)
        covered = arrays.get(target)
        if not isinstance(ptr, np.ndarray) or not isinstance(covered, np.ndarray):
            continue
        if ptr.ndim != 1 or len(ptr) == 0:
            continue
        limit = len(covered)
        if name == "node_pool_ptr":
            limit = len(arrays.get("pool_slot_ptr", [0])) - 1
        if ptr[0] < 0 or ptr.max() > limit or np.any(np.diff(ptr.astype(np.int64)) < 0):
            found.append(f"{name} not monotonic within [0, len({target})={limit}]")
    start, length, rel = (arrays.get(k) for k in ("cons_start", "cons_len", "cons_rel"))
    if (
        isinstance(start, np.ndarray)
        and isinstance(length, np.ndarray)
        and isinstance(rel, np.ndarray)
        and len(start) == len(length) > 0
    ):
        ends = start.astype(np.int64) + length
        if start.min() < 0 or length.min() < 0 or ends.max() > len(rel):
            found.append("a position's consumption lies outside cons_rel")
    subs, alts = arrays.get("req_has_subs"), arrays.get("req_alt_ptr")
    if isinstance(subs, np.ndarray) and isinstance(alts, np.ndarray) and len(alts) == len(subs) + 1:
        owned = np.diff(alts.astype(np.int64))
        if np.any((owned < 1) & (subs == 0)):
            found.append("a request without subrequests owns no alternative")
    return found


_INTERESTING = [-(2**31), -2, -1, 0, 1, 2, 31, 32, 33, 255, 2**15, 2**31 - 1]


def _fit(value: int, dtype: np.dtype[Any]) -> Any:
    """``value`` clipped into what ``dtype`` holds (floats take it as it is)."""
    if dtype.kind not in "iu":
        return float(value)
    info = np.iinfo(dtype)
    return min(max(value, int(info.min)), int(info.max))


def mutate(rng: random.Random, arrays: dict[str, Any], flags: dict[str, Any]) -> str:
    """Apply one random edit in place; return what it did."""
    keys = sorted(arrays)
    key = rng.choice(keys)
    value = arrays[key]
    op = rng.choice(
        [
            "value",
            "value",
            "value",
            "pointer",
            "length",
            "dtype",
            "drop",
            "scalar",
            "flags",
            "layout",
        ]
    )
    if op == "flags":
        name = rng.choice(sorted(k for k in flags if isinstance(flags[k], bool)))
        flags[name] = not flags[name]
        return f"flag {name}={flags[name]}"
    if op == "scalar":
        name = rng.choice(SCALARS)
        flags[name] = rng.choice(_INTERESTING)
        return f"{name}={flags[name]}"
    if op == "drop":
        del arrays[key]
        return f"drop {key}"
    if not isinstance(value, np.ndarray):
        arrays[key] = rng.choice([*_INTERESTING, None, "x", 1.5])
        return f"{key}={arrays[key]!r}"
    if op == "pointer" or (op == "value" and key in POINTERS and rng.random() < 0.5):
        key = rng.choice(sorted(k for k in POINTERS if k in arrays))
        value = arrays[key]
    if op in ("value", "pointer") and len(value):
        i = rng.randrange(len(value))
        bound = max(len(value), 4) * 2
        new = rng.choice([*_INTERESTING, rng.randint(-2, bound)])
        value = value.copy()
        value[i] = _fit(new, value.dtype)
        arrays[key] = value
        return f"{key}[{i}]={value[i]}"
    if op == "length":
        delta = rng.choice([-2, -1, 1, 2, 7])
        if delta < 0:
            arrays[key] = value[: max(len(value) + delta, 0)].copy()
        else:
            fill = _fit(rng.choice(_INTERESTING[2:6]), value.dtype)
            arrays[key] = np.concatenate([value, np.full(delta, fill, dtype=value.dtype)])
        return f"{key} length {len(value)}->{len(arrays[key])}"
    if op == "dtype":
        dtype = rng.choice([np.int8, np.int16, np.int32, np.int64, np.uint8, np.float64])
        arrays[key] = value.astype(dtype)
        return f"{key} dtype {dtype.__name__}"
    # layout: a strided view or a read-only copy
    if rng.random() < 0.5 and len(value) > 1:
        arrays[key] = np.repeat(value, 2)[::2]
        return f"{key} strided"
    frozen = value.copy()
    frozen.setflags(write=False)
    arrays[key] = frozen
    return f"{key} read-only"


def check_answer(answer: dict[str, Any], problem: Any, core: ModuleType) -> list[str]:
    """Problems with what ``search_nodes`` returned (every node of the problem)."""
    found = []
    n_alts, C, M = problem.n_alts, problem.n_claims, problem.max_results
    node_ptr = problem.node_offsets()
    for j, outcome in enumerate(answer["outcome"].tolist()):
        if outcome not in core.OUTCOME_NAMES:
            found.append(f"unknown outcome {outcome}")
        if answer["work"][j] < 0:
            found.append(f"negative work {answer['work'][j]}")
        size = node_ptr[j + 1] - node_ptr[j]
        for c in range(C):
            n = int(answer["res_n"][j * C + c])
            if not 0 <= n <= M:
                found.append(f"claim {c} of node {j}: {n} results")
                continue
            base = (j * C + c) * M
            for alt, pos in zip(
                answer["res_alt"][base : base + n].tolist(),
                answer["res_pos"][base : base + n].tolist(),
                strict=True,
            ):
                if not (0 <= alt < n_alts and 0 <= pos < size):
                    found.append(f"pick ({alt}, {pos}) out of range for node {j}")
    return found


def fuzz(
    core: ModuleType,
    seeds: list[tuple[dict[str, Any], dict[str, Any]]],
    iterations: int,
    seed: int,
    progress: Path | None,
    replay: int | None,
) -> dict[str, Any]:
    rng = random.Random(seed)
    stats: Counter[str] = Counter()
    findings: dict[str, str] = {}
    log = progress.open("w", buffering=1) if progress else None
    started = time.monotonic()
    for iteration in range(iterations):
        base_arrays, base_flags = seeds[rng.randrange(len(seeds))]
        arrays = dict(base_arrays)
        flags = dict(base_flags)
        edits = [mutate(rng, arrays, flags) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        deadline = rng.choice([0.0, 0.0, 0.0, time.monotonic() + 0.001])
        if replay is not None and iteration != replay:
            continue
        if log:
            log.write(f"{iteration}: {'; '.join(edits)}\n")
        try:
            problem = core.Problem(arrays, **flags)
        except ValueError:
            stats["rejected (ValueError)"] += 1
            continue
        except (KeyError, TypeError) as exc:
            # Not an array problem: a missing key or a wrong object (not an ndarray).
            stats[f"rejected ({type(exc).__name__})"] += 1
            continue
        except Exception as exc:  # recorded as a finding
            findings.setdefault(
                f"Problem raised {type(exc).__name__}",
                f"iteration {iteration}: {'; '.join(edits)}: {exc}",
            )
            continue
        stats["accepted"] += 1
        unchecked = unchecked_problems(arrays)
        for text in unchecked:
            findings.setdefault(f"accepted: {text}", f"iteration {iteration}: {'; '.join(edits)}")
        if unchecked:
            # The search would read out of bounds (a crash, or garbage): reported above,
            # not run, so the fuzzer goes on looking for other problems.
            stats["accepted, not searched (unchecked problem)"] += 1
            continue
        try:
            answer = core.search_nodes(problem, deadline)
        except Exception as exc:
            findings.setdefault(
                f"search raised {type(exc).__name__}",
                f"iteration {iteration}: {'; '.join(edits)}: {exc}",
            )
            continue
        for outcome in answer["outcome"].tolist():
            stats[f"outcome {core.OUTCOME_NAMES.get(outcome, outcome)}"] += 1
        for text in check_answer(answer, problem, core):
            findings.setdefault(text, f"iteration {iteration}: {'; '.join(edits)}")
    if log:
        log.write("done\n")
        log.close()
    return {
        "iterations": iterations,
        "seeds": len(seeds),
        "seconds": time.monotonic() - started,
        "stats": dict(stats),
        "findings": findings,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--core", help="path of an extension build to load instead")
    parser.add_argument(
        "--cases",
        action="append",
        default=[],
        help="folder of differential-format cases to capture arrays from",
    )
    parser.add_argument("--progress", type=Path, help="file naming each iteration before it runs")
    parser.add_argument("--replay", type=int, help="run only this iteration")
    args = parser.parse_args(argv)
    core = load_core(args.core)
    from draspeed.testing.cases import case_files

    cases = [c for folder in args.cases for c in case_files(Path(folder))]
    seeds = capture(core, cases)
    if not seeds:
        print(json.dumps({"error": "no arrays captured"}))
        return 2
    report = fuzz(core, seeds, args.iterations, args.seed, args.progress, args.replay)
    report["core"] = getattr(core, "__file__", "?")
    print(json.dumps(report, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
