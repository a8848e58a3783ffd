"""The built-in demo cluster and ``draspeed demo``.

The demo asks what a scheduler and an operator would ask of the cluster:

1. feasibility: every pending claim alone, on every node (``feasible_nodes``);
2. scheduling: the pending claims one after another, each on the first node where it
   fits and committed before the next one is placed;
3. why one claim does not fit on one node (:func:`draspeed.explain.explain`), on the
   node where it came closest.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.explain import render_explanation
from draspeed.cli.options import EXIT_OK, add_engine, command_parser
from draspeed.cli.output import Output, add_output, emit
from draspeed.cli.render import STATUS_COLOURS, Progress, Style, format_table
from draspeed.cluster import Cluster, Engine

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.api.model import Node, ResourceClaim
    from draspeed.explain import Explanation, Funnel

EXAMPLES = """\
examples:
  draspeed demo              # tables: feasibility, scheduling, one explanation
  draspeed demo -o json      # the same, machine-readable
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "demo",
        "the built-in demo cluster: feasibility, scheduling and one explanation",
        "Runs the built-in demo cluster (two nodes with 8 example GPUs each, one 2x H100 "
        "node in dynamic-MIG mode): every pending claim on every node, the claims "
        "scheduled one after another, and why one claim does not fit on a node.",
        EXAMPLES,
    )
    add_output(p, ("table", "json", "yaml"), "table")
    add_engine(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return run_demo(args.output, args.engine, out, err)


def demo_cluster_text() -> str:
    """The demo cluster as YAML (what ``kubectl get -o yaml`` would print)."""
    return resources.files(__package__).joinpath("demo-cluster.yaml").read_text(encoding="utf-8")


def demo_objects() -> Objects:
    from draspeed.api.loader import load

    return load(demo_cluster_text())


def _devices(results: Any) -> list[str]:
    return [f"{r.pool}/{r.device}" for result in results or [] for r in result.devices.results]


def _closeness(e: Explanation) -> tuple[int, int, int]:
    """How near the claims came to fitting: every request with enough devices on its
    own beats any shortfall; else the deepest funnel stage the worst request reached,
    then how many devices were left there."""
    from draspeed.explain import STAGES

    short = [f for f in e.requests if f.short]
    if not short:
        return (1, 0, 0)
    order = [key for key, _ in STAGES]

    def reach(f: Funnel) -> tuple[int, int]:
        stage = f.short_at
        if stage is None:
            return (len(order), f.taints)
        return (order.index(stage), dict(f.counts())[stage])

    depth, count = min(reach(f) for f in short)
    return (0, depth, count)


def _closest(job: Cluster, nodes: list[Node]) -> Explanation | None:
    """The explanation of the node where the pod's claims came closest to fitting."""
    from draspeed.explain import explain

    snapshot = job.snapshot()
    found = [explain(snapshot, job.pending, node) for node in nodes]
    return max(found, key=_closeness) if found else None


def demo_report(engine: Engine = "fast") -> dict[str, Any]:
    """The demo's three parts as JSON-ready data (what ``draspeed demo -o json`` prints)."""
    base = Cluster.from_objects(demo_objects())
    nodes = base.known_nodes()
    by_name = {n.name: n for n in nodes}

    rows: list[dict[str, Any]] = []
    nowhere: list[ResourceClaim] = []
    for claim in base.pending:
        result = replace(base, pending=[claim]).feasible_nodes(nodes, engine=engine)
        if not result.feasible:
            nowhere.append(claim)
        for o in result:
            rows.append(
                {
                    "claim": claim.key,
                    "node": o.node,
                    "status": o.status,
                    "devices": _devices(o.results),
                    "error": o.error,
                    "work": o.work,
                }
            )

    scheduled: list[dict[str, Any]] = []
    allocated = list(base.allocated)
    for claim in base.pending:
        job = replace(base, allocated=list(allocated), pending=[claim])
        result = job.feasible_nodes(nodes, engine=engine)
        if result.feasible:
            node = result.feasible[0]
            [allocation] = result.result(node) or []
            allocated.append(replace(claim, status=replace(claim.status, allocation=allocation)))
            scheduled.append({"claim": claim.key, "node": node, "devices": _devices([allocation])})
            continue
        closest = _closest(job, [by_name[o.node] for o in result])
        reason = f"{closest.node}: {closest.summary}" if closest else "no nodes"
        scheduled.append({"claim": claim.key, "node": None, "devices": [], "reason": reason})

    explanation = None
    if nowhere:
        closest = _closest(replace(base, pending=[nowhere[-1]]), nodes)
        explanation = closest.to_dict() if closest else None
    return {
        "engine": engine,
        "feasibility": rows,
        "scheduled": scheduled,
        "explanation": explanation,
    }


def run_demo(output: Output | str, engine: Engine, out: TextIO, err: TextIO) -> int:
    from draspeed.explain import Explanation

    with Progress("demo", stream=err):
        report = demo_report(engine)
    output = Output(output) if isinstance(output, str) else output
    if output.is_document:
        emit(report, output, out)
        return EXIT_OK

    style = Style.for_stream(out)
    out.write(style.paint("Feasibility: each pending claim alone, on every node", "bold") + "\n")
    table = [["CLAIM", "NODE", "STATUS", "DEVICES", "STEPS"]]
    for r in report["feasibility"]:
        what = ", ".join(r["devices"]) or r["error"] or "-"
        table.append([r["claim"], r["node"], r["status"], what, str(r["work"])])
    out.write(
        format_table(
            table, style, lambda row, col, text: STATUS_COLOURS.get(text) if col == 2 else None
        )
    )

    out.write(
        "\n"
        + style.paint(
            "Scheduling: the claims one after another, each on the first node where it fits",
            "bold",
        )
        + "\n"
    )
    table = [["CLAIM", "NODE", "DEVICES"]]
    for s in report["scheduled"]:
        if s["node"] is None:
            table.append([s["claim"], "-", f"fits nowhere now; {s['reason']}"])
        else:
            table.append([s["claim"], s["node"], ", ".join(s["devices"]) or "-"])
    out.write(
        format_table(
            table,
            style,
            lambda row, col, text: "yellow" if text.startswith("fits nowhere") else None,
        )
    )

    if report["explanation"] is not None:
        explanation = Explanation.from_dict(report["explanation"])
        title = f"Why {', '.join(explanation.claims)} does not fit on {explanation.node}"
        out.write("\n" + style.paint(title, "bold") + "\n")
        out.write(render_explanation(explanation, style))
    out.write(
        f'\nengine: {engine}; the cluster: `python -c "import draspeed.cli.demo as d; '
        f'print(d.demo_cluster_text())"`\n'
    )
    return EXIT_OK
