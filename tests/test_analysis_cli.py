"""``draspeed capacity``: in process (the runner) and as a command (subprocess)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draspeed.cli import main
from draspeed.generate import generate
from draspeed.testing.documents import resource_slice


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("capacity") / "cluster.yaml"
    path.write_text(yaml.safe_dump(generate("nvidia-gpu", 2, gpus_per_node=2).document()))
    return path


@pytest.fixture(scope="module")
def claim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("capacity") / "claim.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu", "namespace": "team-a"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                            ]
                        }
                    }
                },
            }
        )
    )
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["capacity", *argv], out, err)
    return status, out.getvalue(), err.getvalue()


def test_table_output(cluster: Path, claim: Path) -> None:
    status, out, err = _run("-f", str(cluster), "--template", str(claim))
    assert status == 0, err
    assert out.startswith("4 pods fit (one-gpu: 4); strategy first-fit")
    assert "node-00000   2      2/2" in out
    assert "request gpu: needs 1, 0 available (2 in use)" in out
    assert "free whole devices: 4" in out
    assert "gpu.nvidia.com   4" in out
    assert err == ""  # no progress bar: stderr is not a terminal


def test_json_yaml_and_template_names(cluster: Path) -> None:
    status, out, _ = _run(
        "-f",
        str(cluster),
        "--template",
        "single-gpu",
        "--template",
        "two-gpus-same-pcie-root",
        "--ratio",
        "single-gpu=1",
        "--ratio",
        "two-gpus-same-pcie-root=2",
        "-o",
        "json",
        "--placements",
    )
    assert status == 0
    doc = json.loads(out)
    # Order two, single, two, ...: node-00000 for the pair, node-00001 for singles.
    assert doc["fit"]["placedByShape"] == {"single-gpu": 2, "two-gpus-same-pcie-root": 1}
    assert [p["node"] for p in doc["fit"]["placements"]] == [
        "node-00000",
        "node-00001",
        "node-00001",
    ]
    assert doc["fragmentation"]["cluster"]["freeWholeDevices"] == 4
    status, out, _ = _run(
        "-f",
        str(cluster),
        "--template",
        "default/single-gpu",
        "--max-pods",
        "3",
        "-o",
        "yaml",
        "--no-explain",
    )
    doc = yaml.safe_load(out)
    assert doc["fit"]["placed"] == 3 and doc["fit"]["stopped"] == "max-pods"


def test_what_if_curve_and_plot(cluster: Path, claim: Path, tmp_path: Path) -> None:
    plot = tmp_path / "capacity.png"
    status, out, err = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--add-nodes",
        "nvidia-gpu:4:gpus_per_node=2",
        "--add-nodes",
        "node-00001:1",
        "--cordon-node",
        "node-00000",
        "--curve-points",
        "2",
        "--workers",
        "2",
        "--plot",
        str(plot),
        "--no-explain",
    )
    assert status == 0, err
    assert (
        "After: add 4 nodes (nvidia-gpu:gpus_per_node=2); add 1 nodes (like node-00001); cordon"
        in out
    )
    assert "pods placed: +8" in out
    # Curve: 0, 2+1 (halves round up), 4+1 nodes added; node-00000 is cordoned throughout.
    assert "NODES ADDED   PODS\n0             2\n3             8\n5             12\n" in out
    assert plot.stat().st_size > 10_000


def test_usage_errors(cluster: Path, claim: Path) -> None:
    assert _run("--template", str(claim))[0] == 2
    status, _, err = _run("-f", str(cluster), "--template", "nope")
    assert status == 2 and "no such file, nor a ResourceClaimTemplate" in err
    status, _, err = _run("-f", str(cluster), "--template", str(claim), "--add-nodes", "gpu")
    assert status == 2 and "expected KIND:N" in err
    status, _, err = _run("-f", str(cluster), "--template", str(claim), "--add-nodes", "mystery:3")
    assert status == 2 and "not a generated kind" in err
    status, _, err = _run("-f", str(cluster), "--template", str(claim), "--ratio", "x")
    assert status == 2 and "NAME=WEIGHT" in err
    status, _, err = _run("-f", str(cluster), "-f", "missing.yaml", "--template", str(claim))
    assert status == 2 and "missing.yaml" in err


def _command() -> list[str]:
    """The installed ``draspeed capacity``, else ``python -m draspeed capacity``."""
    exe = shutil.which("draspeed", path=str(Path(sys.executable).parent))
    if exe is not None:
        probe = subprocess.run([exe, "capacity", "--help"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [exe, "capacity"]
    return [sys.executable, "-m", "draspeed", "capacity"]


def test_command_in_a_subprocess(cluster: Path, claim: Path) -> None:
    # The environment as it is: the installed package when there is one (CI), else
    # whatever this test process imports (a development tree on PYTHONPATH).
    env = dict(os.environ)
    done = subprocess.run(
        [*_command(), "-f", str(cluster), "--template", str(claim), "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fit"]["placed"] == 4
    shown = subprocess.run([*_command(), "--help"], capture_output=True, text=True, env=env)
    assert "--add-nodes nvidia-mig:20" in shown.stdout


def test_progress_lines_follow_the_work(
    cluster: Path, claim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import draspeed.cli.capacity as capacity_cli
    from draspeed.cli import render
    from draspeed.cli.render import Progress

    bars: list[Progress] = []

    class Recorded(Progress):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            bars.append(self)

    monkeypatch.setattr(capacity_cli, "Progress", Recorded)
    monkeypatch.setattr(render, "Progress", Recorded)  # the sweeps' bar (run_sweep)
    status, _, err = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--add-nodes",
        "nvidia-gpu:2:gpus_per_node=2",
        "--curve-points",
        "2",
        "--workers",
        "1",
    )
    assert status == 0, err
    fit, after, curve = bars
    assert (fit.done, fit.total) == (2, 2)
    assert fit.label == "fit: 4 pods placed, nodes full"
    assert (after.done, after.total) == (4, 4)
    assert after.label == "fit after: 8 pods placed, nodes full"
    assert (curve.done, curve.total) == (3, 3)
    assert err == ""  # stderr is not a terminal: nothing drawn


def test_strategies_bound_and_need(cluster: Path, claim: Path) -> None:
    status, out, err = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--strategy",
        "most-allocated",
        "--compare",
        "all",
        "--bound",
        "-o",
        "json",
        "--no-explain",
    )
    assert status == 0, err
    doc = json.loads(out)
    names = [s["strategy"] for s in doc["strategies"]]
    assert names[0] == "most-allocated" and "best-fit" in names and len(names) == 8
    assert all(s["placed"] == 4 for s in doc["strategies"])
    bound = doc["bound"]
    assert (bound["optimal"], bound["kept"], bound["gap"], bound["exact"]) == (4, 4, 0, True)
    assert bound["strategies"]["first-fit"] == {"placed": 4, "kept": 4, "gap": 0}
    assert doc["aloneFilled"] == {"one-gpu": 4}
    status, out, _ = _run("-f", str(cluster), "--template", str(claim), "--bound", "--no-explain")
    assert "Optimal bound (exact; " in out
    assert "first-fit placed 4; keeping its pods, the best device choice fits 4" in out
    assert "NODE         PODS   OPTIMAL   GAP" in out
    status, out, err = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--need",
        "8",
        "--node-type",
        "nvidia-gpu:gpus_per_node=2",
    )
    assert status == 0, err
    assert out.startswith("add 2 nodes (nvidia-gpu:gpus_per_node=2) for 8 pods of the mix")
    status, out, _ = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--need",
        "6",
        "--node-type",
        "node-00001",
        "-o",
        "yaml",
    )
    assert yaml.safe_load(out)["need"]["nodes"] == 1
    status, out, _ = _run(
        *need_args(cluster, claim, "8", "nvidia-gpu:gpus_per_node=2"), "-o", "name"
    )
    assert out == "node/new-nvidia-gpu-00000\nnode/new-nvidia-gpu-00001\n"


def need_args(cluster: Path, claim: Path, need: str, node_type: str) -> list[str]:
    return ["-f", str(cluster), "--template", str(claim), "--need", need, "--node-type", node_type]


def test_trace_replay(cluster: Path, claim: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "arrival,shape,duration\n" + "".join(f"{k},one-gpu,{3 + k % 4}\n" for k in range(12))
    )
    plot = tmp_path / "trace.png"
    status, out, err = _run(
        "-f", str(cluster), "--template", str(claim), "--trace", str(trace), "--plot", str(plot)
    )
    assert status == 0, err
    assert out.startswith(f"trace {trace}: 12 pods, 12 ran, 0 never ran; strategy first-fit")
    assert "class gpu.nvidia.com" in out and plot.stat().st_size > 10_000
    jsonl = tmp_path / "trace.jsonl"
    jsonl.write_text('{"arrival": 0, "shape": "one-gpu"}\n' * 6)
    status, out, err = _run(
        "-f",
        str(cluster),
        "--template",
        str(claim),
        "--trace",
        str(trace),
        "--trace",
        str(jsonl),
        "--workers",
        "1",
        "-o",
        "json",
    )
    assert status == 0, err
    first, second = json.loads(out)["traces"]
    assert first["ran"] == 12 and second["ran"] == 4 and second["neverRan"] == {"one-gpu": 2}
    status, out, _ = _run(
        "-f", str(cluster), "--template", str(claim), "--trace", str(jsonl), "-o", "name"
    )
    assert out == "pod/pod-5\npod/pod-6\n"  # four GPUs: the last two pods never run


def test_compare_reads_strategies_as_strategy_does(cluster: Path, claim: Path) -> None:
    base = ["-f", str(cluster), "--template", str(claim), "--no-explain", "-o", "json"]
    status, out, err = _run(*base, "--compare", "first-fit+best-fit,best-fit,round-robin")
    assert status == 0, err
    names = [s["strategy"] for s in json.loads(out)["strategies"]]
    assert names == ["first-fit", "best-fit", "round-robin"]


def test_new_usage_errors(cluster: Path, claim: Path, tmp_path: Path) -> None:
    base = ["-f", str(cluster), "--template", str(claim)]
    status, _, err = _run(*base, "--strategy", "worst-fit")
    assert status == 2 and "--strategy: unknown strategy 'worst-fit'" in err
    status, _, err = _run(*base, "--compare", "first-fit,nope")
    assert status == 2 and "--compare nope: unknown strategy" in err
    status, _, err = _run(*base, "--need", "5")
    assert status == 2 and "--need needs --node-type" in err
    status, _, err = _run(*base, "--need", "5", "--node-type", "mystery")
    assert status == 2 and "--node-type mystery: 'mystery' is not a generated kind" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival,shape\nsoon,one-gpu\n")
    status, _, err = _run(*base, "--trace", str(bad))
    assert status == 2 and f"{bad}: row 2.arrival: not a number: 'soon'" in err
    status, _, err = _run(*base, "--trace", str(tmp_path / "missing.csv"))
    assert status == 2 and "missing.csv" in err


def test_every_strategy_name_is_taken() -> None:
    import argparse

    from draspeed.analysis.strategies import STRATEGIES
    from draspeed.cli.capacity_inputs import parse_strategy

    for name in STRATEGIES:
        args = argparse.Namespace(strategy=name)
        parse_strategy(args)
        assert args.strategy == name
    args = argparse.Namespace(strategy="first-fit+best-fit")
    parse_strategy(args)
    assert args.strategy == "best-fit"  # as reports name it


@pytest.mark.parametrize(
    ("option", "name", "message"),
    [
        ("--remove-node", "nope", "--remove-node: no node 'nope' in the cluster"),
        ("--cordon-node", "nope", "--cordon-node: no node 'nope' in the cluster"),
        ("--cordon-pool", "nope", "--cordon-pool: no pool 'nope' in the cluster"),
        ("--cordon-pool", "", "--cordon-pool: no pool '' in the cluster"),
    ],
)
def test_a_what_if_that_matches_nothing_is_refused(
    cluster: Path, option: str, name: str, message: str
) -> None:
    """It changed nothing without a word (exit 0, the same "after" as before)."""
    status, _, err = _run("-f", str(cluster), "--template", "single-gpu", option, name)
    assert status == 2 and message in err


@pytest.fixture(scope="module")
def exponential(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A node of 30 GPUs, each on its own PCIe root, and a template for 15 + 15 of them
    whose second half must share a root: the search tries all C(30, 15) choices of the
    first half before "no" (minutes), as upstream's does."""
    gpus = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "a100"}, "pcieRoot": {"string": f"pci-{i}"}},
        }
        for i in range(30)
    ]
    template_spec = {
        "devices": {
            "requests": [
                {"name": n, "exactly": {"deviceClassName": "gpu", "count": 15}}
                for n in ("first", "second")
            ],
            "constraints": [{"matchAttribute": "gpu.example.com/pcieRoot", "requests": ["second"]}],
        }
    }
    documents = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        resource_slice("node-1-gpus", gpus, driver="gpu.example.com", nodeName="node-1"),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two-halves", "namespace": "default"},
            "spec": {"spec": template_spec},
        },
    ]
    path = tmp_path_factory.mktemp("capacity") / "exponential.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_timeout_bounds_every_allocation(exponential: Path, tmp_path: Path) -> None:
    """Fill, --need and --trace: each allocation ends at --timeout (it was unbounded:
    minutes here), the node's first failure a timeout."""
    common = ["-f", str(exponential), "--template", "two-halves", "--timeout", "0.2s"]
    status, out, err = _run(*common, "-o", "json")
    assert status == 0, err
    (node,) = json.loads(out)["fit"]["nodes"]
    assert node["firstFailure"]["status"] == "timeout"
    assert node["firstFailure"]["reason"] == "filter operation aborted: context deadline exceeded"
    status, out, err = _run(*common, "--need", "1", "--node-type", "node-1", "-o", "json")
    assert status == 0, err
    assert json.loads(out)["need"]["nodes"] is None
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,shape,duration\n0,two-halves,5\n")
    status, out, err = _run(*common, "--trace", str(trace))
    assert status == 0, err
    assert "1 pods, 0 ran, 1 never ran" in out
