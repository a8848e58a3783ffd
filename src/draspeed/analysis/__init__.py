"""Capacity analysis: how many more pods fit, where, what blocks the rest, and what if.

Everything here is built on the real allocator (:class:`draspeed.Allocator`) and
the versioned snapshot updates, so a capacity answer is the answer kube-scheduler
would give, pod by pod.

- :func:`fit` places pods of one or more shapes (ResourceClaimTemplates or claims;
  a mix with ``ratios``) until none fits: pods per node, devices and counters
  used, and the first failure reason per node (:mod:`draspeed.explain`). A placement
  costs what it touches: identical nodes in the same state are asked once
  (:mod:`draspeed.analysis.placement`). ``strategy``: node orders first-fit,
  round-robin, least-allocated, most-allocated, with upstream's or a best-fit
  device choice (:class:`Strategy`).
- :func:`optimal_bound`: the most pods that could fit with the best device choice
  (scipy's MILP), per node and cluster, and the gap to a fill (fragmentation cost).
- :func:`nodes_needed`: how many nodes of a type must be added for N more pods.
- :func:`simulate`: replay a trace of arrivals and departures over time.
- :func:`fragmentation`: per node and cluster, free whole devices (full GPUs),
  free placements per MIG profile, stranded counters, per-DeviceClass utilisation.
- :func:`what_if` with :class:`AddNodes` / :class:`RemoveNodes` / :class:`Cordon`:
  before and after.
- :func:`sweep` runs many :class:`CapacityScenario` / :class:`TraceScenario`
  objects on a local process pool or a Dask cluster
  (``executor=dask.distributed.Client(...)``).
- :mod:`draspeed.kube` reads a live cluster (``kube`` extra);
  :mod:`draspeed.analysis.plots` draws (``analysis`` extra);
  :mod:`draspeed.cli.capacity` is ``draspeed capacity``.

Usage::

    import draspeed
    from draspeed.analysis import fit, optimal_bound

    objects = draspeed.load("cluster.yaml")
    snapshot = draspeed.Cluster.from_objects(objects).snapshot()
    report = fit(snapshot, objects.templates[0])
    print(report.placed, report.node("node-00003").first_failure)
    bound = optimal_bound(snapshot, objects.templates[0], keep=report)
    print(bound.optimal, bound.gap)
"""

from __future__ import annotations

from draspeed.analysis.accounting import Accounting, CounterUse, DeviceCounts, NodeUsage
from draspeed.analysis.bound import BoundReport, NodeBound, optimal_bound
from draspeed.analysis.capacity import CapacityReport, StrategyCount, analyze
from draspeed.analysis.fit import (
    STRATEGIES,
    Failure,
    FitReport,
    NodeFit,
    Placement,
    fit,
)
from draspeed.analysis.fragmentation import (
    FragmentationReport,
    NodeFragmentation,
    fragmentation,
)
from draspeed.analysis.need import NeedReport, nodes_needed
from draspeed.analysis.shapes import PodShape
from draspeed.analysis.simulate import PodRun, TraceReport, simulate
from draspeed.analysis.strategies import Strategy
from draspeed.analysis.sweep import (
    CapacityScenario,
    FileCluster,
    GeneratedCluster,
    InlineCluster,
    ScenarioResult,
    TraceResult,
    TraceScenario,
    run_scenario,
    run_trace_scenario,
    sweep,
)
from draspeed.analysis.trace import TracePod, parse_trace, read_trace
from draspeed.analysis.whatif import (
    AddNodes,
    Change,
    Cordon,
    NodeTemplate,
    RemoveNodes,
    WhatIfReport,
    apply_changes,
    what_if,
)

__all__ = [
    "STRATEGIES",
    "Accounting",
    "AddNodes",
    "BoundReport",
    "CapacityReport",
    "CapacityScenario",
    "Change",
    "Cordon",
    "CounterUse",
    "DeviceCounts",
    "Failure",
    "FileCluster",
    "FitReport",
    "FragmentationReport",
    "GeneratedCluster",
    "InlineCluster",
    "NeedReport",
    "NodeBound",
    "NodeFit",
    "NodeFragmentation",
    "NodeTemplate",
    "NodeUsage",
    "Placement",
    "PodRun",
    "PodShape",
    "RemoveNodes",
    "ScenarioResult",
    "Strategy",
    "StrategyCount",
    "TracePod",
    "TraceReport",
    "TraceResult",
    "TraceScenario",
    "WhatIfReport",
    "analyze",
    "apply_changes",
    "fit",
    "fragmentation",
    "nodes_needed",
    "optimal_bound",
    "parse_trace",
    "read_trace",
    "run_scenario",
    "run_trace_scenario",
    "simulate",
    "sweep",
    "what_if",
]
