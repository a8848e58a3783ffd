"""A ResourceSlice given as a dict (a YAML document, a client's object) is built from
its JSON text by the compiled bulk builder when that text says what the dict says, and
by the dict decoder otherwise: the same objects, errors and warnings either way."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
import yaml

from draspeed.api import loader as loader_module
from draspeed.api.loader import load
from draspeed.errors import InputError
from draspeed.generate import generate


def _load(sources: list[Any], fast: bool, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    if not fast:
        monkeypatch.setattr(loader_module._Loader, "slice_by_json", lambda *args: None)
    else:
        monkeypatch.undo()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            objects = load(sources, **kw)
            outcome: Any = ("ok", list(objects))
        except InputError as exc:
            outcome = ("error", str(exc))
    return outcome, [str(w.message) for w in caught]


@pytest.mark.parametrize("kind", ["nvidia-mig", "nvidia-gpu", "example", "network-attached"])
@pytest.mark.parametrize("validate", [True, "ignore"])
def test_generated_clusters_read_alike(
    kind: str, validate: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = generate(kind, 2)
    docs = [*cluster.nodes, *cluster.classes, *cluster.slices, *cluster.claims]
    sources = [yaml.safe_dump_all(docs), "\n".join(json.dumps(d) for d in docs), *docs]
    for source in sources:
        fast = _load([source], True, monkeypatch, validate=validate)
        slow = _load([source], False, monkeypatch, validate=validate)
        assert fast == slow


def _slice(device: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n",
            "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


@pytest.mark.parametrize(
    "device",
    [
        {"name": "d", "attributes": {"model": {"string": b"a100"}}},  # bytes: JSON rewrites
        {"name": "d", "attributes": {1: {"int": 1}}},  # a key that is not a string
        {"name": "d", "attributes": {"model": {"string": "a100"}}, "extra": {1, 2}},  # a set
        {"name": "d", "capacity": {"memory": {"value": "40Gi"}}},  # the common shape
        {"name": "D!", "attributes": {}},  # invalid name: the same error
    ],
)
def test_dicts_json_cannot_say_fall_back(
    device: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _slice(device)
    assert _load([source], True, monkeypatch) == _load([source], False, monkeypatch)


def test_the_compiled_build_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[bool] = []
    original = loader_module._Loader.slice_by_json

    def spy(self: Any, obj: Any, version: str) -> Any:
        found = original(self, obj, version)
        built.append(found is not None)
        return found

    monkeypatch.setattr(loader_module._Loader, "slice_by_json", spy)
    cluster = generate("nvidia-mig", 1)
    objects = load([yaml.safe_dump_all(cluster.slices)])
    # (as in a bulk JSON list, a slice the compiled builder does not take, such as the
    # counter sets', is the dict decoder's)
    assert len(built) == len(cluster.slices) and sum(built) >= 2
    assert [s.raw for s in objects.slices] == cluster.slices  # raw stays the document
    built.clear()
    with pytest.raises(InputError):  # bytes, which JSON would write as base64 text
        load([_slice({"name": "d", "attributes": {"model": {"string": b"a100"}}})])
    assert built == [False]
