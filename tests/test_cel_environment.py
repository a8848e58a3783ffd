"""The DRA CEL environment function by function, as upstream's at the pinned commit.

tests/data/cel/environment.json holds upstream's verdict for each probe (a function
called on values of many types): it compiles, or the exact compile error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draspeed.cel import compile_selector
from draspeed.errors import CELCompileError

DATA = json.loads((Path(__file__).parent / "data" / "cel" / "environment.json").read_text())


def _verdict(probe: str) -> str:
    try:
        compile_selector(DATA["wrapper"].format(probe))
    except CELCompileError as exc:
        return "\n".join(line for line in str(exc).split("\n") if not line.startswith(" | "))
    return "ok"


def test_probes_compile_as_upstream() -> None:
    wrong = {
        probe: (want, got)
        for probe, want in DATA["probes"].items()
        if (got := _verdict(probe)) != want
    }
    assert not wrong, f"{len(wrong)} probes differ, e.g. {list(wrong.items())[:3]}"


@pytest.mark.parametrize(
    ("probe", "verdict"),
    [
        # sign is a global function of a quantity, not a member (upstream quantity_sign).
        ('sign(quantity("1"))', "ok"),
        ('quantity("1").sign()', "no matching overload for 'sign'"),
        # flatten() takes a list of lists; flatten(int) any list.
        ("[[1]].flatten()", "ok"),
        ("[1].flatten()", "no matching overload for 'flatten'"),
        ("[1].flatten(1)", "ok"),
        # The optional library's newer functions.
        ("[1].first()", "ok"),
        ("[1].last()", "ok"),
        ("optional.unwrap([optional.of(1)])", "ok"),
        ("[optional.none()].unwrapOpt()", "ok"),
        # Authorizer functions exist (on a dyn receiver they type-check).
        ('dyn(1).path("/x")', "ok"),
        ("1.allowed()", "no matching overload for 'allowed' applied to 'int.()'"),
        # null is accepted where an object or an optional is expected.
        ("null.hasValue()", "ok"),
        ("ip.isCanonical(null)", "no matching overload for 'ip.isCanonical' applied to '(null)'"),
        # Reserved words cannot name functions.
        ("namespace(1)", "reserved identifier: namespace"),
    ],
)
def test_environment_facts(probe: str, verdict: str) -> None:
    got = _verdict(probe)
    assert got == "ok" if verdict == "ok" else verdict in got
