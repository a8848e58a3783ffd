"""Conformance: upstream's answers, as data, through the ``draspeed allocate`` command.

Three corpora share one format (``<case>.yaml`` objects in, ``<case>.expected.json``
answer out; see tests/data/differential/README.md):

- ``tests/data/differential``: 300 random scenarios and 11 written for CEL timestamps,
  durations and the format library, answered by the real upstream allocator;
- ``tests/conformance/upstream``: upstream's own allocator test table, ported to data;
- ``tests/conformance/drivers``: DeviceClasses, ResourceSlices and example claims that
  public DRA driver projects publish (NVIDIA GPU, dranet, dra-example-driver, the CPU
  and TPU drivers), each claim on its slices' node, answered by the upstream allocator.

Every case runs through the CLI in-process for each engine and must give the same
exit status, the same claims' ``status.allocation`` (shareIDs normalised), the same
error text and, where the case records it, the same work counter. Where an expected
answer reflects an upstream bug fixed after the snapshot, ``conformance/overrides.yaml``
holds the fixed answer and the reason.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.cli import main
from draspeed.rules import texts
from draspeed.testing.cases import scenario_validation
from draspeed.testing.engines import normalise

HERE = Path(__file__).parent
DIFFERENTIAL = HERE / "data" / "differential"
UPSTREAM = HERE / "conformance" / "upstream"
DRIVERS = HERE / "conformance" / "drivers"
OVERRIDES = HERE / "conformance" / "overrides.yaml"
ENGINES = ("fast", "reference")


def _cases(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.expected.json")) if folder.is_dir() else []


def _overrides() -> dict[str, dict[str, Any]]:
    if not OVERRIDES.exists():
        return {}
    return yaml.safe_load(OVERRIDES.read_text()) or {}


def run_case(expected_path: Path, engine: str, *, validate: str | None = None) -> None:
    """One case through the CLI; ``validate`` None: strict unless the objects hold a
    shape only the allocator takes (:func:`~draspeed.testing.cases.scenario_validation`)."""
    case = expected_path.name.removesuffix(".expected.json")
    objects = expected_path.with_name(case + ".yaml")
    if validate is None:
        validate = scenario_validation(str(objects))
    expected = json.loads(expected_path.read_text())
    expected.update(_overrides().get(case, {}).get("expected", {}))
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "allocate",
        "-f",
        str(objects),
        "--node",
        expected["node"],
        "-o",
        "json",
        "--feature-gates",
        expected["featureGates"],
        "--engine",
        engine,
        "--stats",
        f"--validate={validate}",
    ]
    status = main(argv, out, err)
    stderr = err.getvalue()
    lines = [ln for ln in stderr.splitlines() if not ln.startswith(("stats: ", "warning: "))]
    if "results" in expected:
        assert status == 0, f"{case}: expected an allocation, got exit {status}: {stderr}"
        items = json.loads(out.getvalue())["items"]
        got = [normalise(item["status"]["allocation"]) for item in items]
        assert got == normalise(expected["results"]), case
    elif expected.get("unsuitable"):
        assert status == 1, f"{case}: expected 'does not fit', got exit {status}: {stderr}"
    elif "error" in expected or "errorContains" in expected:
        node_local = expected.get("error") == texts.INVALID_POOLS
        assert status == (1 if node_local else 3), f"{case}: exit {status}: {stderr}"
        message = "\n".join(lines)
        if "error" in expected:
            assert message == expected["error"], case
        else:
            assert expected["errorContains"] in message, case
    else:
        pytest.fail(f"{case}: expected file has no answer")
    if "numAllocateOneInvocations" in expected:
        match = re.search(r"searchSteps=(\d+)", stderr)
        assert match, stderr
        steps, upstream = int(match.group(1)), expected["numAllocateOneInvocations"]
        if engine == "reference":  # mirrors upstream's search step for step
            assert steps == upstream, f"{case}: work counter"
        else:  # may skip subtrees that provably hold no solution, never do more
            assert steps <= upstream, f"{case}: work counter {steps} > upstream {upstream}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", _cases(DIFFERENTIAL), ids=lambda p: p.name.split(".")[0])
def test_differential(case: Path, engine: str) -> None:
    run_case(case, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", _cases(UPSTREAM), ids=lambda p: p.name.split(".")[0])
def test_upstream_table(case: Path, engine: str) -> None:
    # Upstream's fixtures are Go structs that never met API validation (e.g. subReq-0).
    run_case(case, engine, validate="ignore")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", _cases(DRIVERS), ids=lambda p: p.name.split(".")[0])
def test_real_driver_objects(case: Path, engine: str) -> None:
    run_case(case, engine, validate="strict")  # as published: the API server takes them


def test_corpora_present() -> None:
    """The corpora are in the repository: a clean clone runs every case."""
    assert len(_cases(DIFFERENTIAL)) == 311  # 300 random (s1-*), 11 CEL scenarios (t-*)
    assert len(_cases(UPSTREAM)) == 223
    assert len(_cases(DRIVERS)) == 160
