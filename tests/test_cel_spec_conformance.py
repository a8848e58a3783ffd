"""Google's CEL conformance suite (cel-spec ``tests/simple``) through draspeed's CEL.

Every test of ``tests/data/cel-spec/*.json`` (converted from cel-spec's text protos, see
the README there) is compiled with its declared variables -- checked, unless the test
disables checking -- evaluated with its bindings, and its value or error compared with
the expected one. ``skips.yaml`` names what does not apply to the Kubernetes CEL
environment, each entry with its reason; an entry naming a single test asserts that the
test really does not pass as written (strict xfail), so the list cannot go stale.
"""

from __future__ import annotations

import base64
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.cel.program import compile_expression
from draspeed.cel.values import Optional, TypeValue, UInt, make_map, map_items
from draspeed.errors import CELCompileError, CELRuntimeError

DATA = Path(__file__).parent / "data" / "cel-spec"
_SKIP_FILE = yaml.safe_load((DATA / "skips.yaml").read_text(encoding="utf-8"))
REASONS: dict[str, str] = _SKIP_FILE["reasons"]
SKIPS: dict[str, dict[str, Any]] = _SKIP_FILE["skip"]


def _load() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(DATA.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for section in doc["sections"]:
            for test in section["tests"]:
                cases.append((f"{doc['name']}/{section['name']}/{test['name']}", test))
    return cases


CASES = _load()


def skip_entry(case_id: str) -> tuple[str, dict[str, Any]] | None:
    """The skip entry covering ``case_id`` (test, section or file), most specific first.
    (Test names may contain slashes; file and section names do not.)"""
    file, section, _ = case_id.split("/", 2)
    for key in (case_id, f"{file}/{section}", file):
        if key in SKIPS:
            return key, SKIPS[key]
    return None


# ---- values ------------------------------------------------------------------------


class Unsupported(Exception):
    """A value kind draspeed has no counterpart for (protobuf messages, enums)."""


def to_cel(tagged: dict[str, Any]) -> Any:
    """A tagged JSON value (see README) as a draspeed CEL value."""
    from draspeed.cel.timestamps import Duration, Timestamp

    ((kind, payload),) = tagged.items()
    if kind == "int":
        return int(payload)
    if kind == "uint":
        return UInt(payload)
    if kind == "double":
        return float(payload.replace("Infinity", "inf") if isinstance(payload, str) else payload)
    if kind == "string":
        return payload
    if kind == "bytes":
        return base64.b64decode(payload)
    if kind == "bool":
        return payload
    if kind == "null":
        return None
    if kind == "list":
        return [to_cel(v) for v in payload]
    if kind == "map":
        return make_map([(to_cel(k), to_cel(v)) for k, v in payload])
    if kind == "type":
        return TypeValue(payload)
    if kind == "duration":
        return Duration(payload[0] * 1_000_000_000 + payload[1])
    if kind == "timestamp":
        return Timestamp(payload[0] * 1_000_000_000 + payload[1])
    raise Unsupported(kind)


def same_value(got: Any, want: Any) -> bool:
    """Exact CEL equality for test results: same type, NaN equals NaN, -0 is not 0."""
    both_lists = isinstance(got, (list, tuple)) and isinstance(want, (list, tuple))
    both_maps = isinstance(got, dict) and isinstance(want, dict)
    if type(got) is not type(want) and not both_lists and not both_maps:
        return False
    if isinstance(want, float):
        if math.isnan(want):
            return math.isnan(got)
        return bool(got == want) and math.copysign(1, got) == math.copysign(1, want)
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(map(same_value, got, want))
    if isinstance(want, dict):
        got_items = list(map_items(got))
        want_items = list(map_items(want))
        if len(got_items) != len(want_items):
            return False
        return all(
            any(same_value(gk, wk) and same_value(gv, wv) for gk, gv in got_items)
            for wk, wv in want_items
        )
    if isinstance(want, Optional):
        return got.has == want.has and (not want.has or same_value(got.value, want.value))
    return bool(got == want)


# ---- the run -------------------------------------------------------------------------


def run_case(test: dict[str, Any]) -> None:
    variables = {d["name"]: d["type"] for d in test.get("type_env", [])}
    bindings = {name: to_cel(v) for name, v in test.get("bindings", {}).items()}
    try:
        program = compile_expression(
            test["expr"],
            variables,
            check_types=not test.get("disable_check", False),
            macros=not test.get("disable_macros", False),
        )
    except CELCompileError as exc:
        if "error" in test and _early_error(str(exc), test["error"]):
            return
        raise
    if "type" in test:
        assert program.output_type is not None
        assert str(program.output_type) == test["type"], "deduced type"
    if test.get("check_only"):
        return
    if "error" in test:
        with pytest.raises(CELRuntimeError):
            program.evaluate(bindings)
        return
    got = program.evaluate(bindings)
    want = to_cel(test["value"])
    assert same_value(got, want), f"got {got!r}, want {want!r}"


# Where a test expects an evaluation error, the same failure found before evaluation
# counts: Kubernetes validates duration/timestamp/regex literals while compiling and
# builds programs with cel.OptOptimize, which evaluates constant conversions
# (int('x'), uint(-1)...); and a test may expect a type-check error by its text.
_EARLY_ERRORS = (
    "program instantiation failed: ",
    "invalid duration argument",
    "invalid timestamp argument",
    "invalid matches argument",
)


def _early_error(message: str, expected: list[str]) -> bool:
    if message.startswith("program instantiation failed: "):
        return True
    first = message.splitlines()[0]
    return any(e in first for e in _EARLY_ERRORS[1:]) or any(e and e in first for e in expected)


def run_kubernetes(test: dict[str, Any], expected: dict[str, Any]) -> None:
    """Assert upstream's answer in Kubernetes' environment (a skip entry's ``kubernetes``)."""
    variables = {d["name"]: d["type"] for d in test.get("type_env", [])}
    bindings = {name: to_cel(v) for name, v in test.get("bindings", {}).items()}

    def build() -> Any:
        return compile_expression(
            test["expr"], variables, check_types=not test.get("disable_check", False)
        )

    if "compile_error" in expected:
        with pytest.raises(CELCompileError) as info:
            build()
        assert str(info.value) == expected["compile_error"]
        return
    program = build()
    if "error" in expected:
        with pytest.raises(CELRuntimeError) as error:
            program.evaluate(bindings)
        assert str(error.value) == expected["error"]
        return
    got = program.evaluate(bindings)
    want = to_cel(expected["value"])
    assert same_value(got, want), f"got {got!r}, want {want!r}"


def _param(case_id: str, test: dict[str, Any]) -> Any:
    found = skip_entry(case_id)
    if found is None:
        return pytest.param(test, None, id=case_id)
    key, entry = found
    reason = REASONS[entry["because"]]
    if key != case_id:
        return pytest.param(test, None, id=case_id, marks=pytest.mark.skip(reason=reason))
    if "kubernetes" in entry:
        return pytest.param(test, entry["kubernetes"], id=case_id)
    return pytest.param(test, None, id=case_id, marks=pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize(("test", "kubernetes"), [_param(cid, t) for cid, t in CASES])
def test_cel_spec(test: dict[str, Any], kubernetes: dict[str, Any] | None) -> None:
    if kubernetes is not None:
        run_kubernetes(test, kubernetes)
        return
    try:
        run_case(test)
    except CELCompileError as exc:
        pytest.fail(f"compile error: {exc}")


def test_skip_entries_name_real_tests() -> None:
    """Every skip entry covers at least one test and names a known reason."""
    ids = [cid for cid, _ in CASES]
    for key, entry in SKIPS.items():
        assert entry["because"] in REASONS, key
        assert any(cid == key or cid.startswith(key + "/") for cid in ids), key
        if "kubernetes" in entry:
            assert key in ids, f"{key}: upstream's answer belongs to one test"


def figures() -> dict[str, Any]:
    """Cases total, run as written, asserted as upstream answers, skipped by reason."""
    by_reason: Counter[str] = Counter()
    as_written = upstream = 0
    for cid, _ in CASES:
        found = skip_entry(cid)
        if found is None:
            as_written += 1
        elif "kubernetes" in found[1]:
            upstream += 1
            by_reason[found[1]["because"]] += 1
        else:
            by_reason[found[1]["because"]] += 1
    return {"total": len(CASES), "as_written": as_written, "upstream": upstream, **by_reason}


def test_corpus_figures() -> None:
    """Every converted file is here, and the README's figures are the current ones."""
    numbers = figures()
    assert numbers["total"] == 2456
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for key, value in numbers.items():
        assert f"| {key} | {value} |" in readme, (key, value)
