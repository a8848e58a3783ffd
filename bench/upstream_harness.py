"""The upstream allocator's harness (``shared/oracle``) as the benchmarks call it.

``oracle -bench-nodes -procs 1`` times one kube-scheduler cycle on one core: one
``NewAllocator`` for the pod's claims, then ``Allocate`` on every node of the case
(PreFilter + Filter). Its input is one case line (``draspeed.testing.oracle_cases``).

The binary is ``$DRASPEED_ORACLE``, else ``../shared/oracle/oracle`` beside the
repository. It is a development tool: benchmarks that need it skip without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = REPOSITORY.parent / "shared" / "oracle" / "oracle"


def oracle_path() -> Path:
    """Where the harness binary should be (it may be missing)."""
    configured = os.environ.get("DRASPEED_ORACLE")
    return Path(configured) if configured else DEFAULT_ORACLE


def missing_reason(path: Path) -> str | None:
    """Why the harness at ``path`` cannot run, or None when it can."""
    if not path.is_file():
        return f"upstream harness not found at {path} (set DRASPEED_ORACLE)"
    if not os.access(path, os.X_OK):
        return f"upstream harness at {path} is not executable"
    return None


@dataclass(frozen=True)
class UpstreamCycle:
    """What one ``-bench-nodes`` run measured: median times over ``iters`` cycles, and
    the outcome of the first cycle (its work counter summed over the nodes)."""

    nodes: int
    cycle_ns: int
    per_node_ns: int
    work: int
    suitable: int
    error_nodes: int
    iters: int


def bench_nodes(binary: Path, case: Path, *, iters: int, warmup: int) -> UpstreamCycle:
    """Run ``binary -bench-nodes -procs 1`` on the one case line in ``case``."""
    command = [
        str(binary),
        "-bench-nodes",
        "-procs",
        "1",
        "-iters",
        str(iters),
        "-warmup",
        str(warmup),
    ]
    with case.open("rb") as stdin:
        done = subprocess.run(command, stdin=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} < {case} exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()}"
        )
    lines = done.stdout.decode().splitlines()
    if len(lines) != 1:
        raise RuntimeError(f"expected one answer line from the harness, got {len(lines)}")
    answer = json.loads(lines[0])
    if answer.get("error"):
        raise RuntimeError(f"the harness could not run the case {case}: {answer['error']}")
    return UpstreamCycle(
        nodes=answer["nodes"],
        cycle_ns=answer["cycle_ns_median"],
        per_node_ns=answer["perNode_ns_median"],
        work=answer["numAllocateOneInvocations"],
        suitable=answer["suitableNodes"],
        error_nodes=answer["errorNodes"],
        iters=answer["iters"],
    )
