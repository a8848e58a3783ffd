"""Patterns nested as deeply as Go's regexp parser allows, and one level deeper.

Go refuses a pattern whose parse tree is more than 1,000 nodes high; RE2 takes it.
``tests/data/cel/regex_nesting.json`` holds patterns built around that limit with the
upstream allocator's answer to each; draspeed must refuse exactly those, in Go's words,
when it compiles the pattern, when a selector reads it as a constant, and when both
evaluation paths meet it at run time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from draspeed.api.model import Device
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.cel.regex import regex_error
from draspeed.cel.regex_height import MAX_HEIGHT, nests_too_deeply
from draspeed.errors import CELCompileError, CELRuntimeError

DATA = json.loads((Path(__file__).parent / "data" / "cel" / "regex_nesting.json").read_text())
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def pattern(case: dict[str, Any], levels: int) -> str:
    """The case's atom wrapped in its first ``levels`` templates."""
    text = case["atom"]
    for n, step in enumerate(case["steps"][:levels]):
        template = DATA["templates"][_DIGITS.index(step)]
        hole = template.index("{}")
        text = template[:hole].replace("#", str(n)) + text + template[hole + 2 :]
    return text


def _cel_string(text: str) -> str:
    return text.replace("\\", "\\\\")


CASES = [
    (pattern(case, levels), answer)
    for case in DATA["cases"]
    for levels, answer in zip(case["levels"], case["upstream"], strict=True)
]


def test_the_data_straddles_the_limit() -> None:
    answers = [answer for _, answer in CASES]
    assert len(CASES) >= 100
    assert answers.count(None) >= 50 and len(answers) - answers.count(None) >= 50


@pytest.mark.parametrize(("text", "answer"), CASES, ids=lambda v: str(len(v or "")))
def test_compiling_agrees_with_upstream(text: str, answer: str | None) -> None:
    want = None if answer is None else answer.replace("{pattern}", text)
    assert regex_error(text) == want
    assert nests_too_deeply(text) == (want is not None and "nests too deeply" in want)


def _deepest() -> tuple[str, str]:
    """The first case's pattern one level below and at the limit."""
    case = DATA["cases"][0]
    below, at = case["levels"]
    return pattern(case, below), pattern(case, at)


def test_a_constant_pattern_is_a_compile_error() -> None:
    below, at = _deepest()
    compile_selector(f'"a".matches("{_cel_string(below)}")')
    with pytest.raises(CELCompileError, match="invalid matches argument"):
        compile_selector(f'"a".matches("{_cel_string(at)}")')


def test_both_paths_give_the_runtime_error() -> None:
    below, at = _deepest()
    devices = [("dr.example.com", Device(name="dev-0")), ("dr.example.com", Device(name="dev-1"))]
    table = DeviceTable.build(devices)
    for text, refused in ((below, False), (at, True)):
        selector = compile_selector(
            f'"a".matches(device.driver.substring(0, 0) + "{_cel_string(text)}")'
        )
        match, error, messages = selector.evaluate(table)
        for row, (driver, device) in enumerate(devices):
            if refused:
                want = f"error parsing regexp: expression nests too deeply: `{text}`"
                with pytest.raises(CELRuntimeError) as info:
                    selector.matches(device_input(driver, device))
                assert str(info.value) == want
                assert error[row] and messages[row] == want
            else:
                assert not error[row]
                assert bool(match[row]) == selector.matches(device_input(driver, device))


@pytest.mark.parametrize(
    ("template", "limit"),
    [
        ("({})", MAX_HEIGHT - 1),  # a capture per level, the literal below them
        ("(?:{})", None),  # groups that do not capture add nothing
        ("(?:{}|c|d)", None),  # alternations flatten into the one below
        ("(?:{})*", MAX_HEIGHT - 1),  # a star per level
        ("a(?:{})b", None),  # concatenations flatten too
        ("a({})b", (MAX_HEIGHT - 1) // 2),  # a capture and a concatenation per level
    ],
)
def test_heights_of_simple_shapes(template: str, limit: int | None) -> None:
    """Shapes whose height is plain to count (checked against upstream through the
    data above): ``limit`` levels pass and one more is refused; None: never refused."""
    hole = template.index("{}")

    def wrapped(levels: int) -> str:
        text = "x"
        for _ in range(levels):
            text = template[:hole] + text + template[hole + 2 :]
        return text

    if limit is None:
        assert not nests_too_deeply(wrapped(3 * MAX_HEIGHT))
        return
    assert not nests_too_deeply(wrapped(limit))
    assert nests_too_deeply(wrapped(limit + 1))


def test_counting_a_long_pattern_looks_at_the_deadline() -> None:
    """A pattern built at run time is counted within the evaluation's deadline."""
    from draspeed.cel.meter import Meter, swap_meter
    from draspeed.errors import AllocationTimeout

    previous = swap_meter(Meter(deadline=time.monotonic() - 1))
    try:
        with pytest.raises(AllocationTimeout):
            nests_too_deeply("(" * 5000 + ")" * 5000)
    finally:
        swap_meter(previous)
    assert nests_too_deeply("(" * 5000 + ")" * 5000)
