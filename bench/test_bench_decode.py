"""Bulk decoding: a 12,500-slice ResourceSliceList (100,000 GPUs) from JSON to the model.

Run with ``pytest bench --benchmark-only -k decode``. ``load`` takes such a list the
bulk way (``draspeed.api.bulk``): one compiled scan for the input limits and the item
boundaries (``json_list_spans``, benchmarked alone), then each item decoded into typed
msgspec Structs and built into the model in compiled code. The JSON-only benchmark is
a reference floor (msgspec parsing the same bytes into dicts), ``parse_text`` the
ordinary path's text stage (dicts plus the limit checks), which other JSON texts take,
and ``load_parsed_objects`` the decoding of dicts. ``extra_info["megabytes_per_second"]``
is the file size over the fastest round.

Instruction counts (``valgrind --tool=callgrind``) repeat on a shared machine where
wall time does not: compare commits with them on a few hundred slices
(``conftest.resource_slice_list(400)``, ~1.5 MB).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.api._jsontext import json_list_spans
from draspeed.api.loader import load
from draspeed.api.text import parse_text

pytestmark = pytest.mark.benchmark(group="decode")


def _extra(benchmark: BenchmarkFixture, path: Path) -> None:
    info = benchmark.extra_info
    info["bytes"] = path.stat().st_size
    info["megabytes"] = round(path.stat().st_size / 1e6, 1)
    info["slices"] = 12_500
    info["devices"] = 100_000


def _throughput(benchmark: BenchmarkFixture, path: Path) -> None:
    stats = benchmark.stats
    if stats is not None:
        fastest = stats.stats.min
        benchmark.extra_info["megabytes_per_second"] = round(path.stat().st_size / 1e6 / fastest)


def test_bench_load_resource_slice_list(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    """Parse, decode, validate: bytes on disk to 12,500 ResourceSlice models."""
    _extra(benchmark, slice_list_json)
    data = slice_list_json.read_bytes()
    objects = benchmark.pedantic(load, args=(data,), rounds=3, iterations=1, warmup_rounds=1)
    _throughput(benchmark, slice_list_json)
    assert len(objects.slices) == 12_500
    assert sum(len(s.spec.devices) for s in objects.slices) == 100_000
    # Built by the bulk path: all but the first slices keep their text for ``raw``.
    benchmark.extra_info["slices_built_in_bulk"] = sum(
        s.raw_text is not None for s in objects.slices
    )


def test_bench_load_without_validation(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    _extra(benchmark, slice_list_json)
    data = slice_list_json.read_bytes()
    objects = benchmark.pedantic(
        load, args=(data,), kwargs={"validate": False}, rounds=3, iterations=1, warmup_rounds=1
    )
    _throughput(benchmark, slice_list_json)
    assert len(objects.slices) == 12_500


def test_bench_load_parsed_objects(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    """Decode and validate only: the list given as already parsed Python objects (as
    from ``json.load``; such input also skips one reuse that needs exact builtin types)."""
    _extra(benchmark, slice_list_json)
    doc = msgspec.json.decode(slice_list_json.read_bytes())
    objects = benchmark.pedantic(load, args=(doc,), rounds=3, iterations=1, warmup_rounds=1)
    _throughput(benchmark, slice_list_json)
    assert len(objects.slices) == 12_500


def _json_only(data: bytes) -> object:
    gc.disable()
    try:
        return msgspec.json.decode(data)
    finally:
        gc.enable()


def _text_only(data: bytes) -> list[Any]:
    gc.disable()
    try:
        return parse_text(data)
    finally:
        gc.enable()


def test_bench_parse_text(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    """The text stage of load(): msgspec plus the input-limit checks (GC paused)."""
    _extra(benchmark, slice_list_json)
    data = slice_list_json.read_bytes()
    docs = benchmark.pedantic(_text_only, args=(data,), rounds=3, iterations=1, warmup_rounds=1)
    _throughput(benchmark, slice_list_json)
    assert len(docs) == 1 and len(docs[0]["items"]) == 12_500


def test_bench_list_scan(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    """The bulk path's one pass over the bytes: depth, duplicate keys, item spans."""
    _extra(benchmark, slice_list_json)
    data = slice_list_json.read_bytes()
    found = benchmark.pedantic(
        json_list_spans, args=(data, 200), rounds=3, iterations=1, warmup_rounds=1
    )
    _throughput(benchmark, slice_list_json)
    assert found is not None and len(found[2]) == 12_500


def test_bench_json_parse_floor(benchmark: BenchmarkFixture, slice_list_json: Path) -> None:
    """msgspec alone on the same bytes (GC paused, as load() does)."""
    _extra(benchmark, slice_list_json)
    data = slice_list_json.read_bytes()
    doc = benchmark.pedantic(_json_only, args=(data,), rounds=3, iterations=1, warmup_rounds=1)
    _throughput(benchmark, slice_list_json)
    assert isinstance(doc, dict) and len(doc["items"]) == 12_500
