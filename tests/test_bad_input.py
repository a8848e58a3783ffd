"""The bad-input catalogue (tests/bad_input/): every file gives its exact outcome.

``tests/bad_input/expected.yaml`` names, per file, the stage that must refuse it (or
answer it) and the outcome, through the Python API and through the ``draspeed``
command with its exit status:

- ``load``: ``draspeed.load`` raises InputError (its object, field path and full text);
  the command exits 2 printing ``error: <text>``.
- ``allocate``: the file loads; allocating its pending claims on node-1 fails with
  ``error`` (kind ``fatal``: exit 3, or ``node`` for upstream's
  ErrFailedAllocationOnNode: exit 1), the same from both engines.
- ``accept``: the file loads (``warnings``: what loading it warns, exactly) and its
  pending claims fit on node-1 with the ``results`` given (devices per claim, and
  ``consumed`` capacity where given), the same from both engines; the command exits 0.
  ``twice``: the file is given twice (``-f x -f x``).
- ``cli``: the command with ``args`` (``{file}``: the case's file, or ``input``'s)
  exits ``exit`` printing ``stderr`` (a phrase); ``engines``: once per engine
  (``--engine``); ``pipe``: run as a process whose reader goes away after one byte.

``validate`` is load's mode (strict, warn, ignore; true/false are strict/ignore).
Files that could crash the interpreter or exhaust memory (``isolate``) load in a child
process with an address-space limit. Cases marked ``pending`` are protections
draspeed does not have yet: expected failures until the module the entry names
gains them.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api.loader import load
from draspeed.cli import main
from draspeed.cluster import Cluster
from draspeed.errors import InputError, printable

HERE = Path(__file__).parent / "bad_input"
INDEX: dict[str, dict[str, Any]] = yaml.safe_load((HERE / "expected.yaml").read_text())
MEMORY_LIMIT = 1_500_000_000  # bytes of address space for isolated cases
STAGES = ("load", "allocate", "accept", "cli")

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from draspeed.api.loader import load
try:
    load(sys.argv[1], validate=json.loads(sys.argv[2]))
    print(json.dumps({{"loaded": True}}))
except BaseException as exc:
    print(json.dumps({{"type": type(exc).__name__, "message": str(exc),
                      "obj": getattr(exc, "obj", None), "path": getattr(exc, "path", None)}}))
"""


def _validate(case: dict[str, Any]) -> Any:
    """The case's mode as load() takes it."""
    return case.get("validate", "strict")


def _cli_validate(case: dict[str, Any]) -> str:
    """The case's mode as ``--validate`` takes it."""
    mode = _validate(case)
    if isinstance(mode, bool):
        return "strict" if mode else "ignore"
    return mode


def _file(name: str, case: dict[str, Any], tmp_path: Path) -> Path:
    spec = case.get("generate")
    if spec is None:
        return HERE / case.get("input", name)
    kind, size = spec.split()
    assert kind == "sparse"
    path = tmp_path / name
    with path.open("wb") as f:  # a hole: no disk used, but reading it costs the size
        f.truncate(int(size))
    return path


def _load_outcome(path: Path, case: dict[str, Any]) -> dict[str, Any]:
    validate = _validate(case)
    if case.get("isolate"):
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                CHILD.format(limit=MEMORY_LIMIT),
                str(path),
                json.dumps(validate),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": ":".join(p for p in sys.path if p)},
        )
        if child.returncode != 0:
            return {"type": f"crash (exit {child.returncode})", "message": child.stderr[-500:]}
        outcome: dict[str, Any] = json.loads(child.stdout.splitlines()[-1])
        return outcome
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            load(str(path), validate=validate)
        except InputError as exc:
            return {
                "type": "InputError",
                "message": str(exc),
                "obj": exc.obj,
                "path": exc.path,
                "warnings": [str(w.message) for w in caught],
            }
        except Exception as exc:  # reported as the wrong error below
            return {"type": type(exc).__name__, "message": str(exc)}
    return {"loaded": True}


def _command(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``draspeed argv`` in this process: exit status, output, errors (argparse's own
    usage errors go to sys.stderr, caught by capsys)."""
    out, err = io.StringIO(), io.StringIO()
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the command prints them; the API test counts them
        code = main(list(argv), out, err)
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out, err.getvalue() + captured.err


def _devices(results: Any) -> list[list[str]]:
    return [[f"{r.driver}/{r.pool}/{r.device}" for r in a.devices.results] for a in results]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_bad_input(
    name: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = INDEX[name]
    assert case["stage"] in STAGES, case["stage"]
    if "pending" in case:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case["pending"]))
    run = {"load": _run_load, "allocate": _run_allocate, "accept": _run_accept, "cli": _run_cli}
    run[case["stage"]](case, _file(name, case, tmp_path), capsys)


def _run_load(case: dict[str, Any], path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = _load_outcome(path, case)
    file = str(path)
    assert got.get("type") == "InputError", got
    assert got["obj"] == case["obj"].replace("{file}", file)
    assert got["path"] == case["path"]
    if "message" in case:
        assert got["message"] == case["message"].replace("{file}", file)
    else:
        assert case["contains"] in got["message"], got["message"]
    # The object comes first, shown with unprintable characters escaped.
    assert got["message"].startswith(f"{printable(got['obj'])}: "), "the object comes first"
    if "warnings" in case:
        assert got["warnings"] == case["warnings"]
    if case.get("isolate"):
        return  # the command would read it in this process
    code, _, err = _command(capsys, "feasible", "-f", file, "--validate", _cli_validate(case))
    assert code == 2, err
    assert f"error: {got['message']}\n" in err


def _run_allocate(case: dict[str, Any], path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validate = _validate(case)
    objects = load(str(path), validate=validate)
    for engine in ("fast", "reference"):
        outcome = Cluster.from_objects(objects).allocate("node-1", engine=engine, timeout=30)
        assert outcome.error == case["error"], engine
        assert outcome.error_is_node_local == (case["kind"] == "node"), engine
        argv = ["allocate", "-f", str(path), "--node", "node-1", "--engine", engine]
        code, out, err = _command(capsys, *argv, "--validate", _cli_validate(case))
        assert code == (1 if case["kind"] == "node" else 3), (engine, err)
        assert case["error"] in out + err, engine


def _run_accept(case: dict[str, Any], path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sources = [str(path)] * (2 if case.get("twice") else 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        objects = load(*sources, validate=_validate(case))
    assert [str(w.message) for w in caught] == [
        w.replace("{file}", str(path)) for w in case.get("warnings", [])
    ]
    for engine in ("fast", "reference"):
        outcome = Cluster.from_objects(objects).allocate("node-1", engine=engine, timeout=30)
        assert outcome.error is None, (engine, outcome.error)
        assert outcome.results is not None, engine
        assert _devices(outcome.results) == case["results"], engine
        if "consumed" in case:
            consumed = {
                key: str(value)
                for r in outcome.results[0].devices.results
                for key, value in r.consumed_capacity.items()
            }
            assert consumed == case["consumed"], engine
        files = [arg for source in sources for arg in ("-f", source)]
        argv = ["allocate", *files, "--node", "node-1", "--engine", engine, "-o", "json"]
        code, out, err = _command(capsys, *argv, "--validate", _cli_validate(case))
        assert code == 0, (engine, err)
        written = json.loads(out)["items"]  # the claims, their status.allocation filled in
        assert [
            [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results]
            for results in (c["status"]["allocation"]["devices"]["results"] for c in written)
        ] == case["results"], engine
        if "consumed" in case:
            results = written[0]["status"]["allocation"]["devices"]["results"]
            assert {k: v for r in results for k, v in r.get("consumedCapacity", {}).items()} == (
                case["consumed"]
            ), engine


def _run_cli(case: dict[str, Any], path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{file}", str(path)) for a in case["args"]]
    if case.get("pipe"):
        _run_pipe(case, args)
        return
    for engine in case.get("engines", [None]):
        argv = args if engine is None else [*args, "--engine", engine]
        code, _, err = _command(capsys, *argv)
        assert code == case["exit"], (engine, err)
        assert case["stderr"] in err, (engine, err)
        assert "Traceback" not in err


def _run_pipe(case: dict[str, Any], args: list[str]) -> None:
    """The command with a reader that goes away after one byte (``| head -c 1``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "draspeed", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": ":".join(p for p in sys.path if p)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    # Killed by SIGPIPE, as a Unix tool: the shell shows 128 + 13 = 141.
    assert code == -signal.SIGPIPE, (code, err)
    assert 128 - code == case["exit"]
    assert err == case["stderr"]


def test_catalogue_size_and_files() -> None:
    """At least 60 cases; every file has its entry and every entry its file (cases
    of generated input, or of another case's file, have none of their own)."""
    assert len(INDEX) >= 60
    files = {p.name for p in HERE.iterdir() if p.name != "expected.yaml"}
    borrowed = {
        name
        for name, case in INDEX.items()
        if "generate" in case
        or "input" in case
        or (case["stage"] == "cli" and "{file}" not in case["args"])
    }
    assert files == set(INDEX) - borrowed
    for name, case in INDEX.items():
        if "input" in case:
            assert case["input"] in INDEX, name


def test_catalogue_covers_the_issues() -> None:
    """The kinds of bad input issues 5 and 16 list, each present."""
    names = " ".join(INDEX)
    for topic in (
        # issue 5
        "unknown-kind",
        "unknown-api-version",
        "missing-",
        "-not-",
        "duplicate",
        "counter-set-unknown",
        "quantity",
        "version",
        "cel-syntax",
        "cel-too-long",
        "cel-too-costly",
        "yaml-bomb",
        "huge",
        "not-utf8",
        "129-devices",
        # issue 16: wrong answers
        "capacity-name-published",
        "duplicate-sources",
        "duplicate-claim-identical",
        "duplicate-class-differing",
        "duplicate-node-differing",
        "parameters-yaml-nan",
        "parameters-yaml-inf",
        # crashes and hangs
        "regex-forged-marker",
        "timeout-overflow",
        "search-timeout",
        "broken-pipe",
        "generate-too-many-nodes",
        # accepted but invalid
        "slice-duplicate-device-names",
        "shared-counters-with-devices",
        "per-device-node-selection-without-node",
        "binding-conditions-without-failure",
        "attribute-empty-object",
        "attribute-float",
        "request-without-class",
        "allocation-mode-some",
        "claim-selector-empty",
        "expression-empty",
        "constraint-empty",
        "class-selector-empty",
        "parameters-over-10k",
        "status-pool-invalid",
        "status-share-id-malformed",
        "status-33-results",
        "node-label-key-invalid",
        "extended-resource-name-invalid",
        "feature-gate-unknown",
        "feature-gate-misspelt",
        "attribute-name-two-slashes",
        # unknown fields
        "unknown-field-v1beta1-in-v1-shape",
        "unknown-field-warn",
        "unknown-field-ignore",
        "duplicate-field-warn",
        # API misuse (the rest: tests/test_api_misuse.py)
        "parameters-self-containing",
    ):
        assert topic in names, topic
