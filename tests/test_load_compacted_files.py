"""An indented JSON list file is read a piece at a time without its indentation
(``draspeed.api.loader._compacted``): the objects, raws, warnings and errors are those
of the same file read whole, and a file the bulk reading does not take is read again
as it is, so its errors name places in its own text."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from draspeed.api import bulk
from draspeed.api import loader as loader_module
from draspeed.api.loader import load
from draspeed.errors import InputError
from draspeed.generate import generate


def _outcome(path: Path, **options: Any) -> tuple[Any, ...]:
    """Everything ``load`` gives for a file: objects, raws, warnings, or the error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            objects = load(path, **options)
        except InputError as exc:
            result: tuple[Any, ...] = ("error", str(exc))
        else:
            raws = [s.raw for s in objects.slices] + [c.raw for c in objects.claims]
            result = ("objects", objects.by_kind(), raws, objects.warnings)
    return (*result, [(w.category, str(w.message)) for w in caught])


def _whole(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, ...]:
    """The outcome with the piecewise reading off (the file read whole)."""
    with monkeypatch.context() as patch:
        patch.setattr(bulk, "indented_list", lambda head: False)
        return _outcome(path, **options)


def _kubectl(doc: Any) -> bytes:
    return json.dumps(doc, indent=4).encode()


@pytest.fixture
def pieces(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small pieces (every token split somewhere), and how many files were compacted."""
    calls: list[int] = []
    real = loader_module._compacted

    def counted(*args: Any) -> bytes | None:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(loader_module, "_PIECE", 7)
    monkeypatch.setattr(loader_module, "_compacted", counted)
    return calls


@pytest.mark.parametrize("kind", ["nvidia-mig", "scheduler-perf", "network-attached"])
@pytest.mark.parametrize("validate", [True, False])
def test_a_kubectl_file_reads_as_the_whole_file(
    kind: str, validate: bool, tmp_path: Path, pieces: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cluster.json"
    path.write_bytes(
        _kubectl({"apiVersion": "v1", "kind": "List", "items": generate(kind, 2, seed=3).items()})
    )
    got = _outcome(path, validate=validate)
    assert pieces == [1]
    assert got[0] == "objects"
    assert got == _whole(path, monkeypatch, validate=validate)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda t: t.replace(b"{", b'{"x": [1 2],', 1), id="two-numbers"),
        pytest.param(lambda t: t[: len(t) // 2], id="cut-short"),
        pytest.param(lambda t: t.replace(b'"kind": "List"', b'"kind": "Lust"'), id="not-a-list"),
        pytest.param(
            lambda t: t.replace(b'"driver"', b'"driver": 1, "driver"', 1), id="repeated-key"
        ),
        pytest.param(lambda t: t.replace(b"{", b"{a: b, ", 1), id="yaml-flow"),
    ],
)
def test_what_the_bulk_reading_refuses_is_read_as_it_is(
    edit: Any, tmp_path: Path, pieces: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _kubectl(
        {"apiVersion": "v1", "kind": "List", "items": generate("nvidia-gpu", 2, seed=4).items()}
    )
    path = tmp_path / "cluster.json"
    path.write_bytes(edit(text))
    got = _outcome(path)
    assert pieces == [1]
    assert got == _whole(path, monkeypatch)


def test_compact_and_small_files_are_read_whole(tmp_path: Path, pieces: list[int]) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": generate("nvidia-gpu", 2, seed=5).items()}
    compact = tmp_path / "compact.json"
    compact.write_bytes(json.dumps(doc).encode())
    load(compact)
    yaml_file = tmp_path / "cluster.yaml"
    yaml_file.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    load(yaml_file)
    assert pieces == []


def test_a_file_that_grows_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_bytes(b"{\n" + b" " * 100 + b'"items": []}')
    with path.open("rb") as f:
        head = f.read(10)
        with pytest.raises(InputError) as caught:
            loader_module._compacted(f, str(path), head, 50, 10)
    assert str(caught.value) == str(InputError(str(path), "", loader_module._too_big(None, 50)))
