"""draspeed.analysis.sweep: the same results in process, on a local process pool,
on a thread pool and on a Dask LocalCluster of worker processes."""

from __future__ import annotations

import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from draspeed.analysis import (
    AddNodes,
    CapacityScenario,
    Cordon,
    FileCluster,
    GeneratedCluster,
    InlineCluster,
    run_scenario,
    sweep,
)
from draspeed.generate import generate


def _scenarios() -> list[CapacityScenario]:
    base = GeneratedCluster.of("nvidia-gpu", 2, gpus_per_node=2, allocated=0.25)
    mig = GeneratedCluster.of("nvidia-mig", 1, gpus_per_node=1)
    out = [
        CapacityScenario(
            f"gpu+{k}",
            base,
            ("single-gpu",),
            (AddNodes(k, kind="nvidia-gpu", options={"gpus_per_node": 2}),),
        )
        for k in range(4)
    ]
    out.append(
        CapacityScenario(
            "gpu-cordoned",
            base,
            ("single-gpu",),
            (Cordon(nodes=("node-00000",)),),
            explain_failures=True,
        )
    )
    out.append(
        CapacityScenario(
            "mig-mix", mig, ("mig-1g10gb", "mig-3g40gb"), ratios=(1, 1), placements=True
        )
    )
    return out


def _comparable(results: list) -> list[dict]:
    return [r.to_dict(timings=False) for r in results]


@pytest.fixture(scope="module")
def expected() -> list[dict]:
    return _comparable([run_scenario(s) for s in _scenarios()])


def test_scenario_results(expected: list[dict]) -> None:
    assert [e["fit"]["placed"] for e in expected[:4]] == [3, 5, 7, 9]
    assert expected[4]["fit"]["placed"] == 1
    assert expected[4]["fit"]["nodes"][0]["firstFailure"]["reason"]
    mig = expected[5]
    # 1g.10gb@0, 3g.40gb@4 (slices 4-7), then 1g.10gb@1..3: slices 0-3.
    assert mig["fit"]["placedByShape"] == {"mig-1g10gb": 4, "mig-3g40gb": 1}
    assert [p["devices"] for p in mig["fit"]["placements"]] == [
        ["gpu.nvidia.com/node-00000/gpu-0-mig-1g10gb-19-0"],
        ["gpu.nvidia.com/node-00000/gpu-0-mig-3g40gb-9-4"],
        *[[f"gpu.nvidia.com/node-00000/gpu-0-mig-1g10gb-19-{i}"] for i in (1, 2, 3)],
    ]
    assert "placements" not in expected[0]["fit"]


def test_local_process_pool_and_threads_equal_in_process(expected: list[dict]) -> None:
    assert _comparable(sweep(_scenarios(), max_workers=2)) == expected
    seen: list[tuple[int, int]] = []
    with ThreadPoolExecutor(2) as pool:
        results = sweep(_scenarios(), pool, progress=lambda d, n: seen.append((d, n)))
    assert _comparable(results) == expected
    assert sorted(seen) == [(i, 6) for i in range(1, 7)]


def test_dask_local_cluster_equals_local_run(expected: list[dict]) -> None:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        results = sweep(_scenarios(), client)
    assert _comparable(results) == expected
    # The scenarios ran in the worker processes (each result names its host:pid).
    assert all(not r.worker.endswith(f":{os.getpid()}") for r in results)


def test_file_and_inline_sources(tmp_path: Path) -> None:
    cluster = generate("example", 2, gpus_per_node=2)
    path = tmp_path / "cluster.yaml"
    import yaml

    path.write_text(yaml.safe_dump(cluster.document()))
    from_file = run_scenario(CapacityScenario("f", FileCluster((str(path),)), ("single-gpu",)))
    inline = InlineCluster(cluster.decoded())
    from_objects = run_scenario(CapacityScenario("f", inline, ("single-gpu",)))
    assert from_file.to_dict(timings=False) == from_objects.to_dict(timings=False)
    assert from_file.placed == 4
    # Scenarios and results travel between processes.
    assert pickle.loads(pickle.dumps(inline)).key == inline.key
    assert pickle.loads(pickle.dumps(from_file)).to_dict(timings=False) == from_file.to_dict(
        timings=False
    )
    with pytest.raises(ValueError, match="no ResourceClaimTemplate 'nope'"):
        run_scenario(CapacityScenario("x", inline, ("nope",)))


def test_traces_and_bounds_in_a_sweep(tmp_path: Path) -> None:
    from draspeed.analysis import TracePod, TraceScenario

    base = GeneratedCluster.of("nvidia-mig", 2, gpus_per_node=1)
    trace = tuple(
        TracePod(f"p{k}", float(k), "mig-1g10gb" if k % 3 else "mig-3g40gb", duration=4.0)
        for k in range(20)
    )
    path = tmp_path / "trace.jsonl"
    path.write_text(
        "".join(f'{{"arrival": {p.arrival}, "shape": "{p.shape}", "duration": 4}}\n' for p in trace)
    )
    scenarios: list[CapacityScenario | TraceScenario] = [
        TraceScenario("inline", base, ("mig-1g10gb", "mig-3g40gb"), trace),
        TraceScenario("file", base, ("mig-1g10gb", "mig-3g40gb"), str(path)),
        TraceScenario(
            "plus-one",
            base,
            ("mig-1g10gb", "mig-3g40gb"),
            trace,
            (AddNodes(1, kind="nvidia-mig", options={"gpus_per_node": 1}),),
            "best-fit",
        ),
        CapacityScenario(
            "bound", base, ("mig-1g10gb", "mig-3g40gb"), bound=True, compare=("best-fit",)
        ),
    ]
    in_process = [s.run().to_dict(timings=False) for s in scenarios]
    with ThreadPoolExecutor(2) as pool:
        pooled = [r.to_dict(timings=False) for r in sweep(scenarios, pool)]
    assert pooled == in_process
    inline, from_file, plus_one, bound = in_process
    assert {k: v for k, v in inline.items() if k != "name"} == {
        k: v for k, v in from_file.items() if k != "name"
    }
    assert inline["ran"] == 20 and plus_one["strategy"] == "best-fit"
    assert max(plus_one["samples"]["waiting"]) <= max(inline["samples"]["waiting"])
    assert bound["bound"]["optimal"] == 14 and bound["bound"]["gap"] >= 0
    assert [s["strategy"] for s in bound["strategies"]] == ["first-fit", "best-fit"]
