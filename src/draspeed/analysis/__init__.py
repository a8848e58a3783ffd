"""Capacity analysis: how many more pods fit, where, what blocks the rest, and what if.

Everything here is built on the real allocator (:class:`draspeed.Allocator`) and
the versioned snapshot updates, so a capacity answer is the answer kube-scheduler
would give, pod by pod.

- :func:`fit` places pods of one or more shapes (ResourceClaimTemplates or claims;
  a mix with ``ratios``) until none fits: pods per node, devices and counters
  used, and the first failure reason per node (:mod:`draspeed.explain`).
- :func:`fragmentation`: per node and cluster, free whole devices (full GPUs),
  free placements per MIG profile, stranded counters, per-DeviceClass utilisation.
- :func:`what_if` with :class:`AddNodes` / :class:`RemoveNodes` / :class:`Cordon`:
  before and after.
- :func:`sweep` runs many :class:`CapacityScenario` objects on a local process pool
  or a Dask cluster (``executor=dask.distributed.Client(...)``).
- :mod:`draspeed.kube` reads a live cluster (``kube`` extra);
  :mod:`draspeed.analysis.plots` draws (``analysis`` extra);
  :mod:`draspeed.cli.capacity` is ``draspeed capacity``.

Usage::

    import draspeed
    from draspeed.analysis import fit

    objects = draspeed.load("cluster.yaml")
    snapshot = draspeed.Cluster.from_objects(objects).snapshot()
    report = fit(snapshot, objects.templates[0])
    print(report.placed, report.node("node-00003").first_failure)
"""

from __future__ import annotations

from draspeed.analysis.accounting import Accounting, CounterUse, DeviceCounts, NodeUsage
from draspeed.analysis.capacity import CapacityReport, analyze
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
from draspeed.analysis.shapes import PodShape
from draspeed.analysis.sweep import (
    CapacityScenario,
    FileCluster,
    GeneratedCluster,
    InlineCluster,
    ScenarioResult,
    run_scenario,
    sweep,
)
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
    "NodeFit",
    "NodeFragmentation",
    "NodeTemplate",
    "NodeUsage",
    "Placement",
    "PodShape",
    "RemoveNodes",
    "ScenarioResult",
    "WhatIfReport",
    "analyze",
    "apply_changes",
    "fit",
    "fragmentation",
    "run_scenario",
    "sweep",
    "what_if",
]
