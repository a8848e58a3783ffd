"""Inputs edited as a careless user edits them: objects given twice, fields that do not
exist, random damage. Whatever the edit, draspeed gives one InputError naming the object
(and the field path where there is one) or the correct answer, never another exception
(issue 16).

"Correct" is checked two ways: an edit the API server would ignore (an identical copy,
an unknown field under ``--validate=warn|ignore``) leaves the answer of both engines
exactly as it was; any input that loads gets the same answer from both engines, and
every result passes the invariant checker (:func:`draspeed.testing.engines.check_engines`).

The default run does a short pass; ``-m fuzz`` runs a long one (examples per test from
``DRASPEED_FUZZ_EXAMPLES``, default 2,000).
"""

from __future__ import annotations

import copy
import os
import warnings
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from draspeed.api.context import Validation
from draspeed.api.loader import Objects, load
from draspeed.errors import InputError, printable
from draspeed.testing.cases import Scenario, scenario_validation
from draspeed.testing.engines import Answer, Inputs, check_engines
from draspeed.testing.strategies import mutated_documents, scenarios

SHORT = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LONG = settings(SHORT, max_examples=int(os.environ.get("DRASPEED_FUZZ_EXAMPLES", "2000")))
UNKNOWN = "zzNoSuchField"  # a field no version of any kind has


def _answer(objects: Objects, scenario: Scenario) -> Answer:
    """Both engines' answer, asserted equal and sound."""
    fast, _, problems = check_engines(
        Inputs.from_objects(objects, scenario.node, scenario.features)
    )
    assert not problems, "\n".join(problems)
    return fast


def _load(documents: list[dict[str, Any]], mode: Any) -> tuple[Objects, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        objects = load(documents, validate=mode)
    return objects, [str(w.message) for w in caught]


def _name(doc: dict[str, Any]) -> str:
    """The object as draspeed's errors name it."""
    meta = doc["metadata"]
    where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    return f"{doc['kind']} {where}"


# ------------------------------------------------------------------- objects given twice


def _copies(draw: Any, documents: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    """The documents with a copy of one of them inserted somewhere; the positions of the
    original and of its copy."""
    i = draw(st.integers(0, len(documents) - 1))
    j = draw(st.integers(0, len(documents)))
    edited = [*documents[:j], copy.deepcopy(documents[i]), *documents[j:]]
    original = i if i < j else i + 1
    return edited, original, j


@SHORT
@given(scenarios(), st.data())
def test_identical_copies_change_nothing(scenario: Scenario, data: st.DataObject) -> None:
    documents = scenario.documents
    mode = scenario_validation(documents)
    expected = _answer(load(documents, validate=mode), scenario)
    edited = documents
    for _ in range(data.draw(st.integers(1, 3))):
        edited, _, position = _copies(data.draw, edited)
        if data.draw(st.booleans()):  # the same object read at another time
            edited[position]["metadata"]["resourceVersion"] = "424242"
    objects, _ = _load(edited, mode)
    assert len(objects) == len(documents)
    assert _answer(objects, scenario) == expected
    event(f"outcome: {expected.outcome}")


@SHORT
@given(scenarios(), st.data())
def test_differing_copies_name_both(scenario: Scenario, data: st.DataObject) -> None:
    documents = scenario.documents
    edited, original, position = _copies(data.draw, documents)
    edited[position]["metadata"].setdefault("labels", {})["draspeed.test/copy"] = "2"
    with pytest.raises(InputError) as excinfo:
        load(edited, validate=scenario_validation(documents))
    first, second = sorted((original, position))
    obj = _name(documents[original if original < position else original - 1])
    assert (excinfo.value.obj, excinfo.value.path) == (obj, "")
    assert str(excinfo.value) == (
        f"{obj}: given twice, differently: in <object>[{first}] and in <object>[{second}] "
        "(the API server keeps one object per kind, namespace and name)"
    )


# ------------------------------------------------------------------------ unknown fields


def _struct_paths(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Places in a document where a field of a struct (not an entry of a map) may go."""
    found: list[tuple[Any, ...]] = [(), ("metadata",)]
    if doc["kind"] == "Node":
        return found  # draspeed knows a Node's top level and metadata only
    spec = doc.get("spec", {})
    found.append(("spec",))
    devices = spec.get("devices")
    if doc["kind"] == "ResourceSlice":
        found += [("spec", "devices", k) for k in range(len(devices or []))]
        found += [("spec", "pool")]
    elif doc["kind"] == "ResourceClaim":
        found.append(("spec", "devices"))
        for k, request in enumerate(devices.get("requests", [])):
            found.append(("spec", "devices", "requests", k))
            if "exactly" in request:
                found.append(("spec", "devices", "requests", k, "exactly"))
    elif doc["kind"] == "DeviceClass":
        for k in range(len(spec.get("selectors", []))):
            found += [("spec", "selectors", k), ("spec", "selectors", k, "cel")]
    return found


def _path_text(path: tuple[Any, ...]) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else key
    return text


@SHORT
@given(scenarios(), st.data(), st.sampled_from(get_args(Validation)))
def test_unknown_fields(scenario: Scenario, data: st.DataObject, mode: Validation) -> None:
    documents = scenario.documents
    needed = scenario_validation(documents)
    if needed != "strict":
        mode = "ignore"  # the scenario holds shapes only the allocator takes: no API object
    i = data.draw(st.integers(0, len(documents) - 1))
    where = data.draw(st.sampled_from(_struct_paths(documents[i])))
    edited = copy.deepcopy(documents)
    target = edited[i]
    for key in where:
        target = target[key]
    target[UNKNOWN] = data.draw(st.sampled_from([1, "x", {"a": 1}, [], None]))
    path = _path_text((*where, UNKNOWN))
    obj = _name(documents[i])
    if mode == "strict":
        with pytest.raises(InputError) as excinfo:
            load(edited, validate=mode)
        assert (excinfo.value.obj, excinfo.value.path) == (obj, path)
        assert str(excinfo.value) == f'{obj}: {path}: strict decoding error: unknown field "{path}"'
        return
    objects, warned = _load(edited, mode)
    unknown = [w for w in warned if "unknown field" in w]
    assert unknown == ([f'{obj}: unknown field "{path}"'] if mode == "warn" else [])
    assert _answer(objects, scenario) == _answer(load(documents, validate=needed), scenario)


# ------------------------------------------------------------------------ random damage


def _damage_contract(scenario: Scenario, data: st.DataObject) -> None:
    documents = scenario.documents
    i = data.draw(st.integers(0, len(documents) - 1))
    edited = [*documents]
    edited[i] = data.draw(mutated_documents((documents[i],)))
    note(f"document {i} became {edited[i]!r}")
    for mode in ("strict", "ignore"):
        try:
            objects, _ = _load(edited, mode)
        except InputError as exc:
            # One error, the object first: "<object>: <path>: <message>" (the object
            # shown with its unprintable characters escaped).
            assert exc.obj, exc
            assert str(exc).startswith(f"{printable(exc.obj)}: "), exc
            event(f"{mode}: refused")
            continue
        event(f"{mode}: loaded")
        _answer(objects, scenario)  # both engines agree and are sound, or this fails


@SHORT
@given(scenarios(), st.data())
def test_damaged_inputs(scenario: Scenario, data: st.DataObject) -> None:
    _damage_contract(scenario, data)


@pytest.mark.fuzz
@LONG
@given(scenarios(), st.data())
def test_damaged_inputs_long(scenario: Scenario, data: st.DataObject) -> None:
    _damage_contract(scenario, data)
