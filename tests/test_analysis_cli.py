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
    assert "After: add 4 nodes (nvidia-gpu); add 1 nodes (like node-00001); cordon" in out
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
    from draspeed.cli.render import Progress

    bars: list[Progress] = []

    class Recorded(Progress):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            bars.append(self)

    monkeypatch.setattr(capacity_cli, "Progress", Recorded)
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
