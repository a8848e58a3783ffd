"""Fuzzing the compiled core: mutated arrays through ``_core.Problem`` and ``search_nodes``.

The fuzzer (``draspeed.testing.core_fuzz``) runs in a child process, so a crash is
seen as a signal instead of killing the test run; it starts from the arrays real
calls build (the upstream table's scenarios) and mutates values, lengths, pointers,
dtypes, flags and deadlines. ``Problem`` must accept or raise ``ValueError``;
``search_nodes`` must never crash or read outside its arrays, and must answer in shape.

- Default run: a short pass over the installed (release) build.
- ``-m fuzz``: a long pass over a debug build with AddressSanitizer (bounds checks on,
  every out-of-bounds read reported), built into a temporary folder from ``cext/``::

      pytest -m fuzz tests/test_fuzz_core.py

  By hand: ``python -m draspeed.testing.core_fuzz --iterations 20000 --seed 2
  --cases tests/conformance/upstream --cases tests/data/differential --core <so>``
  (with ``LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0``
  for an AddressSanitizer build).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from draspeed.engine import _core
from draspeed.testing.core_fuzz import capture, unchecked_problems

HERE = Path(__file__).parent
ROOT = HERE.parent
UPSTREAM = HERE / "conformance" / "upstream"
DIFFERENTIAL = HERE / "data" / "differential"


def _run_fuzzer(
    tmp_path: Path,
    iterations: int,
    seed: int,
    cases: list[Path],
    core: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> dict[str, Any]:
    progress = tmp_path / "progress.txt"
    argv = [
        sys.executable,
        "-m",
        "draspeed.testing.core_fuzz",
        "--iterations",
        str(iterations),
        "--seed",
        str(seed),
        "--progress",
        str(progress),
    ]
    for folder in cases:
        argv += ["--cases", str(folder)]
    if core is not None:
        argv += ["--core", str(core)]
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child_env.update(env or {})
    run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=child_env)
    if run.returncode != 0:
        last = progress.read_text().splitlines()[-1:] if progress.exists() else []
        pytest.fail(
            f"fuzzer died (exit {run.returncode}) at {last}; replay with --seed {seed} "
            f"--replay <iteration>\n{run.stderr[-3000:]}"
        )
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _check(report: dict[str, Any]) -> None:
    assert report["stats"].get("accepted", 0) > report["iterations"] // 5, report["stats"]
    # Every finding fails the run: the three it once reported (an alternative-less
    # request, an empty pool_slot_ptr, a non-ExactSums ``exact``) are refused now.
    assert not report["findings"], report["findings"]


def test_core_short(tmp_path: Path) -> None:
    seed = int(os.environ.get("DRASPEED_FUZZ_SEED", "0"))
    _check(_run_fuzzer(tmp_path, 2000, seed, [UPSTREAM], timeout=300))


def _debug_build(folder: Path) -> tuple[Path, dict[str, str]]:
    """A debug build (bounds checks) of cext/, with AddressSanitizer when gcc has it."""
    work = folder / "build"
    shutil.copytree(ROOT / "cext", work / "cext", ignore=shutil.ignore_patterns("*.c", "*.so"))
    shutil.copy(ROOT / "setup.py", work / "setup.py")
    env = {**os.environ, "DRASPEED_DEBUG": "1"}
    asan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    run_env: dict[str, str] = {}
    if asan and Path(asan).exists():
        env["CFLAGS"] = "-fsanitize=address -fno-omit-frame-pointer"
        env["LDFLAGS"] = "-fsanitize=address"
        run_env = {"LD_PRELOAD": str(Path(asan).resolve()), "ASAN_OPTIONS": "detect_leaks=0"}
    subprocess.run(
        [
            sys.executable,
            "setup.py",
            "build_ext",
            "--build-lib",
            "out",
            "--build-temp",
            "tmp",
            "-q",
        ],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        timeout=900,
    )
    (built,) = (work / "out" / "draspeed").glob("_core*.so")
    return built, run_env


@pytest.mark.fuzz
def test_core_long_debug_build(tmp_path: Path) -> None:
    core, env = _debug_build(tmp_path)
    seed = int(os.environ.get("DRASPEED_FUZZ_SEED", "2"))
    iterations = int(os.environ.get("DRASPEED_FUZZ_ITERATIONS", "20000"))
    cases = [UPSTREAM, DIFFERENTIAL]
    report = _run_fuzzer(tmp_path, iterations, seed, cases, core=core, env=env, timeout=7200)
    print(json.dumps(report, indent=1))
    _check(report)


# --------------------------------------------------------------------------------------
# Findings, pinned (expected failures until cext/_core.pyx checks them)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_arrays() -> tuple[dict[str, Any], dict[str, Any]]:
    """The Problem arguments of one real call with two requests."""
    case = next(UPSTREAM.glob("004-*.expected.json"))
    captured = capture(_core, [case])
    return captured[0]


def test_request_without_alternative_is_rejected(
    real_arrays: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    arrays, flags = dict(real_arrays[0]), real_arrays[1]
    ptr = arrays["req_alt_ptr"].copy()
    assert len(ptr) == 3 and not arrays["req_has_subs"].any()
    ptr[1] = ptr[2]  # request 0 owns both alternatives, request 1 none
    arrays["req_alt_ptr"] = ptr
    assert unchecked_problems(arrays)
    with pytest.raises(ValueError):
        _core.Problem(arrays, **flags)


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("req_alt_ptr", "start"),
        ("req_alt_ptr", "end"),
        ("claim_req_ptr", "end"),
        ("req_alt_ptr", "decrease"),
    ],
)
def test_pointer_arrays_start_at_zero_never_decrease_and_cover(
    real_arrays: tuple[dict[str, Any], dict[str, Any]], name: str, change: str
) -> None:
    """Every CSR pointer array starts at 0, never decreases and ends at its array's end."""
    arrays, flags = dict(real_arrays[0]), real_arrays[1]
    ptr = np.asarray(arrays[name], dtype=np.int32).copy()
    if change == "start":
        ptr[0] = 1
    elif change == "end":
        ptr[-1] += 1
    else:  # an entry above the end: the one after it decreases, the ends are kept
        assert len(ptr) >= 3, ptr
        ptr[1] = ptr[-1] + 1
    arrays[name] = ptr
    with pytest.raises(ValueError, match=f"Problem.{name}"):
        _core.Problem(arrays, **flags)


def test_exact_must_be_the_exact_sums_object(
    real_arrays: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    arrays, flags = real_arrays
    with pytest.raises(TypeError):
        _core.Problem(dict(arrays), **{**flags, "exact": 1})


def test_unknown_array_names_are_rejected(
    real_arrays: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    arrays, flags = real_arrays
    with pytest.raises(ValueError, match="unknown arrays: cons_ptr"):
        _core.Problem({**arrays, "cons_ptr": np.zeros(1, np.int32)}, **flags)


@pytest.mark.parametrize(
    ("name", "value"),
    [("cons_start", -1), ("cons_len", 1 << 20), ("cons_rel", 1 << 20)],
)
def test_consumption_outside_the_shared_table_is_rejected(
    real_arrays: tuple[dict[str, Any], dict[str, Any]], name: str, value: int
) -> None:
    """Each position's counter consumption must lie in cons_rel and name its pool's slots."""
    case = next(UPSTREAM.glob("083-*.expected.json"))  # partitionable devices: positions consume
    arrays, flags = capture(_core, [case])[0]
    assert arrays["cons_len"][0] > 0
    changed = arrays[name].copy()
    changed[0] = value
    arrays[name] = changed
    with pytest.raises(ValueError):
        _core.Problem(arrays, **flags)


def test_real_arrays_are_sound(real_arrays: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The shadow checks of the fuzzer accept what draspeed.engine.claim_arrays builds."""
    arrays, flags = real_arrays
    assert unchecked_problems(arrays) == []
    problem = _core.Problem(dict(arrays), **flags)
    answer = _core.search_nodes(problem, 0.0)
    outcomes = [_core.OUTCOME_NAMES[o] for o in answer["outcome"].tolist()]
    assert "found" in outcomes and answer["work"].min() > 0
    assert all(isinstance(v, (np.ndarray, int)) or v is None for v in arrays.values())
