"""The bad-input catalogue (tests/bad_input/): every file gives its exact error.

``tests/bad_input/expected.yaml`` names, per file, the stage that must refuse it and
the error: for ``load``, the InputError's object, field path and full text; for
``allocate``, the allocation error's text and kind, the same from both engines.
Files that could crash the interpreter or exhaust memory run in a child process
with an address-space limit. Cases marked ``pending`` are protections draspeed does
not have yet: expected failures until the module the entry names gains them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api.loader import load
from draspeed.cluster import Cluster
from draspeed.errors import InputError

HERE = Path(__file__).parent / "bad_input"
INDEX: dict[str, dict[str, Any]] = yaml.safe_load((HERE / "expected.yaml").read_text())
MEMORY_LIMIT = 1_500_000_000  # bytes of address space for isolated cases

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from draspeed.api.loader import load
try:
    load(sys.argv[1], validate=sys.argv[2] == "True")
    print(json.dumps({{"loaded": True}}))
except BaseException as exc:
    print(json.dumps({{"type": type(exc).__name__, "message": str(exc),
                      "obj": getattr(exc, "obj", None), "path": getattr(exc, "path", None)}}))
"""


def _file(name: str, case: dict[str, Any], tmp_path: Path) -> Path:
    spec = case.get("generate")
    if spec is None:
        return HERE / name
    kind, size = spec.split()
    assert kind == "sparse"
    path = tmp_path / name
    with path.open("wb") as f:  # a hole: no disk used, but reading it costs the size
        f.truncate(int(size))
    return path


def _load_outcome(path: Path, case: dict[str, Any]) -> dict[str, Any]:
    validate = case.get("validate", True)
    if case.get("isolate"):
        child = subprocess.run(
            [sys.executable, "-c", CHILD.format(limit=MEMORY_LIMIT), str(path), str(validate)],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": ":".join(p for p in sys.path if p)},
        )
        if child.returncode != 0:
            return {"type": f"crash (exit {child.returncode})", "message": child.stderr[-500:]}
        outcome: dict[str, Any] = json.loads(child.stdout.splitlines()[-1])
        return outcome
    try:
        load(str(path), validate=validate)
    except InputError as exc:
        return {"type": "InputError", "message": str(exc), "obj": exc.obj, "path": exc.path}
    except Exception as exc:  # reported as the wrong error below
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"loaded": True}


@pytest.mark.parametrize("name", sorted(INDEX))
def test_bad_input(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    case = INDEX[name]
    if "pending" in case:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case["pending"]))
    path = _file(name, case, tmp_path)
    if case["stage"] == "allocate":
        objects = load(str(path), validate=case.get("validate", True))
        for engine in ("fast", "reference"):
            outcome = Cluster.from_objects(objects).allocate("node-1", engine=engine, timeout=30)
            assert outcome.error == case["error"], engine
            assert outcome.error_is_node_local == (case["kind"] == "node"), engine
        return
    got = _load_outcome(path, case)
    file = str(path)
    assert got.get("type") == "InputError", got
    assert got["obj"] == case["obj"].replace("{file}", file)
    assert got["path"] == case["path"]
    if "message" in case:
        assert got["message"] == case["message"].replace("{file}", file)
    else:
        assert case["contains"] in got["message"], got["message"]
    assert got["message"].startswith(f"{got['obj']}: "), "the object comes first"


def test_catalogue_size_and_files() -> None:
    """At least 60 cases; every file has its entry and every entry its file."""
    assert len(INDEX) >= 60
    files = {p.name for p in HERE.iterdir() if p.name != "expected.yaml"}
    generated = {name for name, case in INDEX.items() if "generate" in case}
    assert files == set(INDEX) - generated


def test_catalogue_covers_the_issue() -> None:
    """The kinds of bad input issue 5 lists, each present."""
    names = " ".join(INDEX)
    for topic in (
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
    ):
        assert topic in names, topic
