"""Trace replay: reading traces, the event loop by hand, remembered answers vs plain."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from draspeed.analysis import TracePod, parse_trace, read_trace, simulate
from draspeed.cluster import Cluster
from draspeed.errors import InputError
from draspeed.generate import generate


def _cluster(kind: str, nodes: int, **options: object) -> tuple[object, list[object]]:
    objects = generate(kind, nodes, **options).decoded()  # type: ignore[arg-type]
    return Cluster.from_objects(objects).snapshot(), list(objects.templates)


def test_csv_and_json_lines_read_alike(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("arrival,shape,duration,departure,name\n5,b,,20,late\n0,a,10,,first\n0,b,,,\n")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(
        '{"arrival": 5, "shape": "b", "departure": 20, "name": "late"}\n'
        '{"arrival": 0, "shape": "a", "duration": 10, "name": "first"}\n'
        "\n"
        '{"arrival": 0, "shape": "b"}\n'
    )
    from_csv = read_trace(csv, ["a", "b"])
    from_json = read_trace(jsonl, ["a", "b"])
    assert [(p.name, p.arrival, p.shape, p.duration, p.departure) for p in from_csv] == [
        ("first", 0.0, "a", 10.0, None),
        ("pod-4", 0.0, "b", None, None),
        ("late", 5.0, "b", None, 20.0),
    ]
    assert [(p.arrival, p.shape, p.duration, p.departure) for p in from_json] == [
        (p.arrival, p.shape, p.duration, p.departure) for p in from_csv
    ]


@pytest.mark.parametrize(
    ("text", "csv", "message"),
    [
        ("arrival,name\n1,x\n", True, "t: header: a CSV trace needs the columns arrival and shape"),
        ("arrival,shape\nsoon,a\n", True, "t: row 2.arrival: not a number: 'soon'"),
        ("arrival,shape\n-1,a\n", True, "t: row 2.arrival: must be a finite number >= 0"),
        ("arrival,shape\n1,c\n", True, "t: row 2.shape: unknown shape 'c' (known: a, b)"),
        ('{"arrival": 1}\n', False, "t: line 1.shape: a shape name is required"),
        ('{"arrival": 1, "shape": "a", "duration": 1, "departure": 3}\n', False, "not both"),
        ('{"arrival": 5, "shape": "a", "departure": 3}\n', False, "line 1.departure: before"),
        ("[1, 2]\n", False, "t: line 1: expected a JSON object"),
        ("{nope\n", False, "t: line 1: not JSON"),
        ('{"arrival": true, "shape": "a"}\n', False, "not a number: True"),
    ],
)
def test_bad_traces_name_the_row_and_field(text: str, csv: bool, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_trace(text, "t", ["a", "b"], csv_format=csv)


def test_a_trace_replayed_by_hand() -> None:
    # One node, two GPUs. A runs 0-10 (gpu-0), B 1-6 (gpu-1); C arrives at 2 and
    # waits for B: it runs 6-7. D is deleted at 3 while waiting: it never runs.
    snap, templates = _cluster("nvidia-gpu", 1, gpus_per_node=2)
    single = [t for t in templates if t.metadata.name == "single-gpu"]  # type: ignore[attr-defined]
    trace = [
        TracePod("A", 0.0, "single-gpu", duration=10.0),
        TracePod("B", 1.0, "single-gpu", duration=5.0),
        TracePod("C", 2.0, "single-gpu", duration=1.0),
        TracePod("D", 2.5, "single-gpu", departure=3.0),
    ]
    report = simulate(snap, single, trace)  # type: ignore[arg-type]
    runs = {p.name: (p.start, p.end, p.node) for p in report.pods}
    assert runs == {
        "A": (0.0, 10.0, "node-00000"),
        "B": (1.0, 6.0, "node-00000"),
        "C": (6.0, 7.0, "node-00000"),
        "D": (None, None, None),
    }
    assert report.never_ran == {"single-gpu": 1}
    assert report.pods[3].deleted
    assert report.times.tolist() == [0.0, 1.0, 2.0, 2.5, 3.0, 6.0, 7.0, 10.0]
    assert report.running.tolist() == [1, 2, 2, 2, 2, 2, 1, 0]
    assert report.waiting.tolist() == [0, 0, 1, 2, 1, 0, 0, 0]
    gpus = report.utilisation["class gpu.nvidia.com"]
    assert gpus.tolist() == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    assert report.waits()["max"] == 4.0 and report.waits()["mean"] == pytest.approx(4 / 3)
    doc = report.to_dict(samples=True, pods=True)
    assert doc["ran"] == 3 and doc["peakWaiting"] == 2 and len(doc["podRuns"]) == 4


@pytest.mark.parametrize("strategy", ["first-fit", "most-allocated", "best-fit"])
def test_remembered_answers_replay_as_asking_the_real_snapshot(strategy: str) -> None:
    snap, templates = _cluster("nvidia-mig", 2, gpus_per_node=2, allocated=0.25)
    names = ("mig-1g10gb", "mig-3g40gb", "single-gpu")
    shapes = [t for t in templates if t.metadata.name in names]  # type: ignore[attr-defined]
    rng = random.Random(7)
    now, trace = 0.0, []
    for k in range(120):
        now += rng.expovariate(1.0)
        shape = rng.choice(names)
        if k % 5 == 0:
            trace.append(TracePod(f"p{k}", now, shape, departure=now + rng.uniform(0, 20)))
        else:
            trace.append(TracePod(f"p{k}", now, shape, duration=rng.expovariate(1 / 15)))
    fast = simulate(snap, shapes, trace, strategy)  # type: ignore[arg-type]
    plain = simulate(snap, shapes, trace, strategy, memoise=False)  # type: ignore[arg-type]
    assert [p.to_dict() for p in fast.pods] == [p.to_dict() for p in plain.pods]
    assert fast.waiting.tolist() == plain.waiting.tolist()
    for column, values in plain.utilisation.items():
        assert np.allclose(fast.utilisation[column], values), column
    assert fast.calls < plain.calls
    assert fast.ran > 0 and fast.peak("counter memory") > 0.5


def test_unknown_shapes_are_refused() -> None:
    snap, templates = _cluster("example", 1)
    with pytest.raises(ValueError, match="names shapes that were not given: nope"):
        simulate(snap, templates[:1], [TracePod("x", 0.0, "nope")])  # type: ignore[arg-type]
