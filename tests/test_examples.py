"""Every script in examples/ runs, as a user would run it, and prints what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(script: str, *args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == [
        "capacity_report.py",
        "scheduler_loop.py",
        "what_if.py",
    ]


def test_scheduler_loop(tmp_path: Path) -> None:
    out = _run("scheduler_loop.py", "--nodes", "3", "--pods", "8", cwd=tmp_path)
    lines = out.splitlines()
    assert lines[0].startswith("pod-0 (single-gpu): node-00000 [")
    # 3 nodes of 8 GPUs, some already taken: the last pod finds no node left.
    assert any("unschedulable on 3 nodes" in line for line in lines)
    assert lines[-1].startswith("7 of 8 pods bound")


def test_capacity_report_with_plot(tmp_path: Path) -> None:
    png = tmp_path / "capacity.png"
    out = _run("capacity_report.py", "--nodes", "2", "--plot", str(png), cwd=tmp_path)
    assert "more pods of mig-1g10gb fit" in out
    assert "node-00001:" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_what_if(tmp_path: Path) -> None:
    out = _run("what_if.py", "--nodes", "3", cwd=tmp_path)
    assert out.splitlines()[:3] == [
        "change: add 2 nodes (nvidia-mig)",
        "change: remove nodes node-00000",
        "change: cordon (NoSchedule) pools of nodes node-00001",
    ]
    assert '"placedByShape"' in out
