"""A leaf that applies a string method to one attribute (``uuid.startsWith("GPU-")``)
is answered by the method for string values: from the attribute objects at once while
the attribute has no column (draspeed.cel.vector._string_call_objects), else per value
of the column (draspeed.cel.vector._StringCall). Either way: the same verdict, error
and cost per device as the leaf's metered program, for strings of every length and
values of every kind."""

from __future__ import annotations

from typing import Any

import pytest

import draspeed.cel.vector as vector
from draspeed.api.model import Device, DeviceAttribute
from draspeed.cel import DeviceTable, compile_selector

DOMAIN = "gpu.example.com"

_VALUES: list[DeviceAttribute | None] = [
    DeviceAttribute("string", ""),
    DeviceAttribute("string", "GPU-"),
    DeviceAttribute("string", "GPU-1234"),
    DeviceAttribute("string", "gpu-1234"),
    DeviceAttribute("string", "x" * 9),
    DeviceAttribute("string", "x" * 11),
    DeviceAttribute("string", "ü" * 25 + "GPU-"),
    DeviceAttribute("string", "GPU-" + "y" * 100_000),
    DeviceAttribute("string", "z" * 10_000_001),  # past the cost limit for any method
    DeviceAttribute("int", 7),
    DeviceAttribute("bool", True),
    DeviceAttribute("version", "1.2.3"),
    DeviceAttribute("strings", ("GPU-1",)),
    DeviceAttribute(None),
    None,  # absent
]


def _table() -> DeviceTable:
    devices = []
    for i, value in enumerate(_VALUES * 2):
        attributes = {f"{DOMAIN}/model": DeviceAttribute("string", "a100")}
        if value is not None:
            attributes[f"{DOMAIN}/uuid"] = value
        devices.append((DOMAIN, Device(name=f"d{i}", attributes=attributes)))
    return DeviceTable.build(devices)


SELECTORS = [
    f'device.attributes["{DOMAIN}"].uuid.startsWith("GPU-")',
    f'device.attributes["{DOMAIN}"]["uuid"].endsWith("4")',
    f'device.attributes["{DOMAIN}"].uuid.contains("")',
    f'device.attributes["{DOMAIN}"].uuid.contains("ü")',
    f'device.attributes["{DOMAIN}"].uuid.startsWith("GPU-") && '
    f'device.attributes["{DOMAIN}"].model == "a100"',
    f'!device.attributes["{DOMAIN}"].uuid.endsWith("y") || device.driver == "x"',
]


def _leaf_values(expr: str, table: DeviceTable) -> list[Any]:
    """Each leaf's verdict, error text, cost and groups per device."""
    selector = compile_selector(expr)
    plan = vector.plan_for(selector)
    messages = vector._Messages(None)
    out = []
    for leaf in plan.leaves:
        got = vector._eval_leaf(leaf, table, None, messages, False)
        rows = got.combined
        texts = ["", *messages.texts]
        out.append(
            [
                got.val[rows].tolist(),
                [texts[code] for code in got.err[rows].tolist()],
                got.cost[rows].tolist(),
                got.groups[rows].tolist(),
            ]
        )
    return out


def _metered(patched: pytest.MonkeyPatch) -> None:
    """Neither the objects nor the method: the program for every value."""
    patched.setattr(vector, "_string_call_objects", lambda *args: None)
    patched.setattr(vector._StringCall, "of", classmethod(lambda cls, *args: None))


# Which path answers: the objects (no column yet), or the column's values.
PATHS = ("objects", "column")


def _take(path: str, patched: pytest.MonkeyPatch) -> None:
    if path == "column":
        patched.setattr(vector, "_string_call_objects", lambda *args: None)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("expr", SELECTORS)
def test_string_calls_answer_as_the_program(
    expr: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table()
    _take(path, monkeypatch)
    direct = _leaf_values(expr, table)
    answered = compile_selector(expr).evaluate(table)
    with monkeypatch.context() as patched:
        _metered(patched)
        assert _leaf_values(expr, table) == direct
        metered = compile_selector(expr).evaluate(table)
    (match, error, messages), (want_match, want_error, want_messages) = answered, metered
    assert match.tolist() == want_match.tolist()
    assert error.tolist() == want_error.tolist()
    assert messages == want_messages


def test_the_method_answers_string_values_after_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: past the two runs it learns from, every string value within the
    cost limit is answered by the method."""
    answered: list[Any] = []
    answer = vector._StringCall.answer

    def counting(self: Any, combo: int) -> Any:
        found = answer(self, combo)
        if found is not None:
            answered.append(combo)
        return found

    monkeypatch.setattr(vector._StringCall, "answer", counting)
    _take("column", monkeypatch)
    _leaf_values(SELECTORS[0], _table())
    strings = sum(1 for v in _VALUES if v is not None and v.kind == "string")
    assert len(answered) == strings - 3  # two learnt from, one past the cost limit


def _string_table(values: list[str]) -> DeviceTable:
    devices = [
        (DOMAIN, Device(name=f"d{i}", attributes={f"{DOMAIN}/uuid": DeviceAttribute("string", v)}))
        for i, v in enumerate(values)
    ]
    return DeviceTable.build(devices)


# A value per device, as UUIDs are: all strings, so that past the two runs the method
# answers the rest at once (answer_all); and the kinds of column it leaves to one by one.
_UUIDS = [f"GPU-{i:08x}-{'ab' * (i % 7)}" for i in range(300)] + ["", "GPU-", "4", "y"]
STRING_COLUMNS = {
    "uuids": _UUIDS,
    "one-non-ascii": [*_UUIDS, "GPU-\u00fc"],
    "one-past-the-limit": [*_UUIDS, "GPU-" + "z" * 10_000_001],
    # each within the cost limit, together past a lazy evaluation's work budget
    "past-the-work-budget": [f"GPU-{i:04}" + "w" * 100_000 for i in range(250)],
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("expr", SELECTORS)
@pytest.mark.parametrize("column", STRING_COLUMNS.values(), ids=STRING_COLUMNS.keys())
def test_columns_of_strings_answer_as_the_program(
    expr: str, column: list[str], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _string_table(column)
    _take(path, monkeypatch)
    direct = _leaf_values(expr, table)
    answered = compile_selector(expr).evaluate(table)
    lazily = vector.evaluate_lazily(compile_selector(expr), table)
    with monkeypatch.context() as patched:
        _metered(patched)
        assert _leaf_values(expr, table) == direct
        metered = compile_selector(expr).evaluate(table)
        metered_lazily = vector.evaluate_lazily(compile_selector(expr), table)
    for got, want in ((answered, metered), (lazily, metered_lazily)):
        assert [a.tolist() if hasattr(a, "tolist") else a for a in got] == [
            w.tolist() if hasattr(w, "tolist") else w for w in want
        ]


def test_a_column_of_strings_is_answered_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a column of ASCII strings within the limit is answered at once."""
    batches: list[int] = []
    answer_all = vector._StringCall.answer_all

    def counting(self: Any, combos: list[int]) -> Any:
        found = answer_all(self, combos)
        batches.append(-1 if found is None else len(found[0]))
        return found

    monkeypatch.setattr(vector._StringCall, "answer_all", counting)
    _take("column", monkeypatch)
    _leaf_values(SELECTORS[0], _string_table(_UUIDS))
    assert batches == [len(_UUIDS) - 2]  # all but the two the program is learnt from
    batches.clear()
    _leaf_values(SELECTORS[0], _string_table(STRING_COLUMNS["one-non-ascii"]))
    assert batches == [-1]


def _objects_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each objects-path attempt answered (not None)."""
    answers: list[bool] = []
    objects = vector._string_call_objects

    def counting(*args: Any) -> Any:
        found = objects(*args)
        answers.append(found is not None)
        return found

    monkeypatch.setattr(vector, "_string_call_objects", counting)
    return answers


def test_the_objects_answer_a_column_of_ascii_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a column of ASCII strings within the limit, not built yet, is
    answered from its objects; mixed kinds, non-ASCII text, a value past the limit, and
    a column already built are left to the column."""
    answers = _objects_answers(monkeypatch)
    _leaf_values(SELECTORS[0], _string_table(_UUIDS))
    assert answers == [True]
    for name in ("one-non-ascii", "one-past-the-limit"):
        answers.clear()
        _leaf_values(SELECTORS[0], _string_table(STRING_COLUMNS[name]))
        assert answers == [False], name
    answers.clear()
    _leaf_values(SELECTORS[0], _table())
    assert answers == [False]
    table = _string_table(_UUIDS)
    table.column(("attr", DOMAIN, "uuid"))
    answers.clear()
    _leaf_values(SELECTORS[0], table)
    assert answers == [False]


def _shared_objects_table() -> DeviceTable:
    """Runs of devices sharing one attribute object, some devices without the
    attribute, and one whose version attribute does not convert (every selector fails
    there, so evaluations leave it out of the rows they want)."""
    shared = [DeviceAttribute("string", f"GPU-{k}") for k in range(3)]
    devices = []
    for i in range(40):
        attributes: dict[str, DeviceAttribute] = {}
        if i % 5:
            attributes[f"{DOMAIN}/uuid"] = (
                shared[(i // 7) % 3] if i % 3 else (DeviceAttribute("string", f"MIG-{i}"))
            )
        if i == 11:
            attributes[f"{DOMAIN}/version"] = DeviceAttribute("version", "not-a-version")
        devices.append((DOMAIN, Device(name=f"d{i}", attributes=attributes)))
    return DeviceTable.build(devices)


@pytest.mark.parametrize("expr", SELECTORS)
def test_shared_objects_absent_values_and_unconvertible_rows(
    expr: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = _objects_answers(monkeypatch)
    table = _shared_objects_table()
    direct = _leaf_values(expr, table)
    answered = compile_selector(expr).evaluate(table)
    lazily = vector.evaluate_lazily(compile_selector(expr), table)
    assert True in answers
    with monkeypatch.context() as patched:
        _metered(patched)
        assert _leaf_values(expr, _shared_objects_table()) == direct
        metered = compile_selector(expr).evaluate(_shared_objects_table())
        metered_lazily = vector.evaluate_lazily(compile_selector(expr), _shared_objects_table())
    for got, want in ((answered, metered), (lazily, metered_lazily)):
        assert [a.tolist() if hasattr(a, "tolist") else a for a in got] == [
            w.tolist() if hasattr(w, "tolist") else w for w in want
        ]
