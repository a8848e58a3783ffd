"""Many independent capacity scenarios, on a local process pool or a Dask cluster.

A :class:`CapacityScenario` is a small picklable description: a cluster source
(generated, files, or inline objects), pod shapes, what-if changes and fit
options; a :class:`TraceScenario` a trace to replay on such a cluster.
:func:`run_scenario` / :func:`run_trace_scenario` build the cluster (cached per
worker process, so scenarios over the same cluster decode it once per worker),
apply the changes and return a :class:`ScenarioResult` / :class:`TraceResult` (no
snapshot inside: cheap to send back).

:func:`sweep` submits every scenario to an executor and returns the results in
scenario order. One code path for every executor: anything with
``submit(fn, *args)`` returning a future with ``result()`` and
``add_done_callback()`` -- :class:`concurrent.futures.ProcessPoolExecutor` (the
default, created and shut down here), a thread pool, or a
``dask.distributed.Client`` (a ``LocalCluster`` of worker processes or a remote
scheduler: ``Client("tcp://scheduler:8786")``; workers need draspeed installed,
and file sources must be readable on them)::

    from dask.distributed import Client, LocalCluster
    scenarios = [CapacityScenario(f"+{k}", GeneratedCluster("nvidia-gpu", 100),
                                  ("single-gpu",), (AddNodes(k, kind="nvidia-gpu"),))
                 for k in range(0, 64)]
    with LocalCluster(n_workers=2, processes=True) as cluster, Client(cluster) as client:
        results = sweep(scenarios, executor=client)
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from draspeed import arguments
from draspeed.analysis.capacity import CapacityReport, analyze
from draspeed.analysis.shapes import PodShape, ShapeSource, as_shapes
from draspeed.analysis.strategies import Strategy
from draspeed.analysis.trace import TracePod
from draspeed.analysis.whatif import Change, apply_changes, changes_of
from draspeed.api.model import ResourceClaim, ResourceClaimTemplate
from draspeed.cluster import Cluster

if TYPE_CHECKING:
    from draspeed.analysis.simulate import TraceReport
    from draspeed.api.loader import Objects
    from draspeed.engine.snapshot import Snapshot


# ----------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class GeneratedCluster:
    """A cluster of :mod:`draspeed.generate` (same arguments, same cluster)."""

    kind: str
    nodes: int
    seed: int = 0
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        arguments.text(self.kind, "kind", "a generator's name")
        arguments.whole(self.nodes, "nodes", 1)
        arguments.whole(self.seed, "seed", None)

    @classmethod
    def of(cls, kind: str, nodes: int, seed: int = 0, **options: Any) -> GeneratedCluster:
        return cls(kind, nodes, seed, tuple(sorted(options.items())))

    @property
    def key(self) -> Hashable:
        return ("generated", self.kind, self.nodes, self.seed, self.options)

    def load(self) -> Objects:
        from draspeed.generate import generate_objects

        return generate_objects(self.kind, self.nodes, self.seed, **dict(self.options))


@dataclass(frozen=True)
class FileCluster:
    """Cluster dumps on disk (what ``draspeed.load`` reads)."""

    paths: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", arguments.names(self.paths, "paths"))

    @property
    def key(self) -> Hashable:
        stamps = []
        for p in self.paths:
            try:
                stamps.append((str(Path(p).resolve()), os.stat(p).st_mtime_ns))
            except OSError:
                stamps.append((p, 0))
        return ("files", tuple(stamps))

    def load(self) -> Objects:
        from draspeed.api.loader import load

        return load(*self.paths)


class InlineCluster:
    """Decoded objects sent along with each scenario.

    The objects are pickled once, the first time a scenario carrying them is sent,
    and every later scenario carries the same bytes; a worker unpickles them once
    (the per-process cache is keyed by ``token``).
    """

    def __init__(self, objects: Objects, token: str | None = None) -> None:
        from draspeed.api.loader import Objects

        arguments.instance_of(objects, Objects, "objects", "Objects (what draspeed.load returns)")
        if token is not None:
            arguments.text(token, "token")
        self._objects: Objects | None = objects
        self._blob: bytes | None = None
        self._lock = threading.Lock()
        self.token = token or uuid.uuid4().hex

    @property
    def key(self) -> Hashable:
        return ("inline", self.token)

    def load(self) -> Objects:
        with self._lock:
            if self._objects is None:
                assert self._blob is not None
                self._objects = pickle.loads(self._blob)
            return self._objects

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            if self._blob is None:
                self._blob = pickle.dumps(self._objects, protocol=pickle.HIGHEST_PROTOCOL)
            return {"token": self.token, "blob": self._blob}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.token = state["token"]
        self._blob = state["blob"]
        self._objects = None
        self._lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InlineCluster) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"InlineCluster(token={self.token!r})"

    def __dask_tokenize__(self) -> Hashable:
        # Dask names tasks after their arguments; hashing every object would cost
        # far more than the scenario (tens of seconds for a thousand nodes).
        return self.key


ClusterSource = GeneratedCluster | FileCluster | InlineCluster


# Per worker process: the last few clusters built, with their claim templates.
_CACHE: OrderedDict[Hashable, tuple[Snapshot, Objects]] = OrderedDict()
_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()


def _base(source: ClusterSource) -> tuple[Snapshot, Objects]:
    key = source.key
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    objects = source.load()
    built = (Cluster.from_objects(objects).snapshot(), objects)
    with _CACHE_LOCK:
        _CACHE[key] = built
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return built


# ---------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class CapacityScenario:
    """One independent question: this cluster, these changes, how many pods of these shapes.

    ``templates``: names of ResourceClaimTemplates of the cluster, or shapes
    (templates, claims, :class:`PodShape`, YAML-shaped dicts).
    """

    name: str
    cluster: ClusterSource
    templates: tuple[str | ShapeSource, ...]
    changes: tuple[Change, ...] = ()
    strategy: str = "first-fit"  # a Strategy name (draspeed.analysis.strategies)
    ratios: tuple[float, ...] | None = None
    max_pods: int | None = None
    explain_failures: bool = False
    placements: bool = False  # keep the list of placements in the result
    profile_attribute: str = "profile"
    compare: tuple[str, ...] = ()  # other strategies to count pods with
    bound: bool = False  # the optimal bound too (needs scipy on the workers)
    timeout: float | None = None  # seconds each allocate call may take (None: unbounded)

    def __post_init__(self) -> None:
        _check_scenario(self)
        if self.max_pods is not None:
            arguments.whole(self.max_pods, "max_pods")
        for flag in ("explain_failures", "placements", "bound"):
            arguments.flag(getattr(self, flag), flag)
        arguments.text(self.profile_attribute, "profile_attribute", "an attribute name")
        compare = arguments.names_or_items(self.compare, Strategy, "compare", "Strategies")
        for other in compare:
            Strategy.parse(other, "compare")
        object.__setattr__(self, "compare", tuple(compare))

    def run(self) -> ScenarioResult:
        return run_scenario(self)


@dataclass(frozen=True)
class TraceScenario:
    """One trace replayed on one cluster (after some changes) with one strategy.

    ``trace``: a trace file (CSV or JSON lines, readable where the scenario runs) or
    its pods; ``templates`` as for :class:`CapacityScenario`, the shapes the trace
    names.
    """

    name: str
    cluster: ClusterSource
    templates: tuple[str | ShapeSource, ...]
    trace: str | tuple[TracePod, ...]
    changes: tuple[Change, ...] = ()
    strategy: str = "first-fit"
    samples: bool = True  # keep the state over time in the result
    timeout: float | None = None  # seconds each allocate call may take (None: unbounded)

    def __post_init__(self) -> None:
        _check_scenario(self)
        if not isinstance(self.trace, str):
            pods = arguments.items_of(self.trace, TracePod, "trace", "a TracePod")
            object.__setattr__(self, "trace", tuple(pods))
        arguments.flag(self.samples, "samples")

    def run(self) -> TraceResult:
        return run_trace_scenario(self)


def _check_scenario(scenario: CapacityScenario | TraceScenario) -> None:
    """What both kinds of scenario hold: checked, and normalised to tuples, when made
    (a mistake is told by the caller, not later by a worker)."""
    arguments.text(scenario.name, "name", "a scenario name")
    if not isinstance(scenario.cluster, (GeneratedCluster, FileCluster, InlineCluster)):
        raise TypeError(
            "cluster: expected a GeneratedCluster, FileCluster or InlineCluster, "
            f"got {arguments.type_name(scenario.cluster)}"
        )
    object.__setattr__(scenario, "templates", _templates(scenario.templates))
    object.__setattr__(scenario, "timeout", arguments.timeout(scenario.timeout))
    object.__setattr__(scenario, "changes", tuple(changes_of(scenario.changes)))
    Strategy.parse(scenario.strategy)


_TEMPLATE = (str, PodShape, ResourceClaimTemplate, ResourceClaim, Mapping)


def _templates(value: Any) -> tuple[str | ShapeSource, ...]:
    """Template names or shapes; one alone is one (a name is not its characters)."""
    return tuple(
        arguments.items_of(
            value, _TEMPLATE, "templates", "a ResourceClaimTemplate's name or a shape"
        )
    )


@dataclass
class TraceResult:
    """A trace scenario's report and where it ran."""

    name: str
    report: TraceReport
    seconds: float
    worker: str

    def to_dict(self, *, timings: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, **self.report.to_dict(samples=True)}
        if timings:
            out["seconds"] = round(self.seconds, 6)
            out["worker"] = self.worker
        else:
            out.pop("seconds", None)
        return out


@dataclass
class ScenarioResult:
    """A scenario's capacity report (fit and fragmentation) and where it ran."""

    name: str
    report: CapacityReport
    seconds: float
    worker: str  # host:pid

    @property
    def placed(self) -> int:
        return self.report.fit.placed

    def to_dict(self, *, timings: bool = True) -> dict[str, Any]:
        """JSON-ready; ``timings=False`` leaves out what varies between runs."""
        report = self.report.to_dict(placements=bool(self.report.fit.placements))
        out: dict[str, Any] = {"name": self.name, **report}
        if timings:
            out["seconds"] = round(self.seconds, 6)
            out["worker"] = self.worker
        else:
            out["fit"] = {k: v for k, v in out["fit"].items() if k != "seconds"}
            if "bound" in out:
                out["bound"] = {k: v for k, v in out["bound"].items() if k != "seconds"}
            if "strategies" in out:
                out["strategies"] = [
                    {k: v for k, v in s.items() if k != "seconds"} for s in out["strategies"]
                ]
        return out


def _shapes(templates: Sequence[str | ShapeSource], objects: Objects) -> list[ShapeSource]:
    by_name = {t.metadata.name: t for t in objects.templates}
    out: list[ShapeSource] = []
    for t in templates:
        if isinstance(t, str):
            if t not in by_name:
                known = ", ".join(sorted(by_name)) or "none"
                raise ValueError(f"no ResourceClaimTemplate {t!r} in the cluster (have: {known})")
            out.append(by_name[t])
        else:
            out.append(t)
    return out


def run_scenario(scenario: CapacityScenario) -> ScenarioResult:
    """Build (or reuse) the cluster, apply the changes, analyze. Runs anywhere."""
    arguments.instance_of(scenario, CapacityScenario, "scenario", "a CapacityScenario")
    start = time.monotonic()
    snapshot, objects = _base(scenario.cluster)
    snapshot = apply_changes(snapshot, scenario.changes)
    report = analyze(
        snapshot,
        _shapes(scenario.templates, objects),
        scenario.strategy,
        list(scenario.ratios) if scenario.ratios is not None else None,
        max_pods=scenario.max_pods,
        explain_failures=scenario.explain_failures,
        profile_attribute=scenario.profile_attribute,
        compare=scenario.compare,
        bound=scenario.bound,
        timeout=scenario.timeout,
    )
    fit = report.fit.without_snapshot()
    if not scenario.placements:
        fit.placements = []
    return ScenarioResult(
        scenario.name,
        dataclasses.replace(report, fit=fit),
        time.monotonic() - start,
        _worker(),
    )


def run_trace_scenario(scenario: TraceScenario) -> TraceResult:
    """Build (or reuse) the cluster, apply the changes, replay the trace."""
    from draspeed.analysis.simulate import simulate
    from draspeed.analysis.trace import read_trace

    arguments.instance_of(scenario, TraceScenario, "scenario", "a TraceScenario")
    start = time.monotonic()
    snapshot, objects = _base(scenario.cluster)
    snapshot = apply_changes(snapshot, scenario.changes)
    shapes = as_shapes(_shapes(scenario.templates, objects))
    names = [s.name for s in shapes]
    pods = (
        read_trace(scenario.trace, names)
        if isinstance(scenario.trace, str)
        else list(scenario.trace)
    )
    report = simulate(snapshot, shapes, pods, scenario.strategy, timeout=scenario.timeout)
    if not scenario.samples:
        report = dataclasses.replace(report, utilisation={})
    return TraceResult(scenario.name, report, time.monotonic() - start, _worker())


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _run(scenario: CapacityScenario | TraceScenario) -> Any:
    return scenario.run()


class _Future(Protocol):
    def result(self) -> Any: ...

    def add_done_callback(self, fn: Callable[[Any], None]) -> None: ...


class Executor(Protocol):
    """What :func:`sweep` needs of an executor (concurrent.futures and Dask alike)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...


def _scenarios(value: Any) -> list[CapacityScenario | TraceScenario]:
    return arguments.items_of(
        value, (CapacityScenario, TraceScenario), "scenarios", "a CapacityScenario or TraceScenario"
    )


def sweep(
    scenarios: Sequence[CapacityScenario | TraceScenario],
    executor: Executor | None = None,
    *,
    max_workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Run every scenario (capacity or trace) on ``executor`` (default: a local process
    pool of ``max_workers`` processes); results (:class:`ScenarioResult`,
    :class:`TraceResult`) in scenario order. ``progress(done, total)``
    is called as scenarios finish (from whichever thread completes them)."""
    from concurrent.futures import ProcessPoolExecutor

    scenarios = _scenarios(scenarios)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(
            "executor: expected an executor (with submit(fn, *args)), "
            f"got {arguments.type_name(executor)}"
        )
    if max_workers is not None:
        max_workers = arguments.whole(max_workers, "max_workers", 1)
    arguments.function(progress, "progress")
    own: ProcessPoolExecutor | None = None
    if executor is None:
        if max_workers is not None:
            # No more processes than scenarios: each process is a whole interpreter.
            max_workers = max(1, min(max_workers, len(scenarios)))
        own = executor = ProcessPoolExecutor(max_workers=max_workers)
    try:
        done = 0
        lock = threading.Lock()

        def finished(_: Any) -> None:
            nonlocal done
            with lock:
                done += 1
                if progress is not None:
                    progress(done, len(scenarios))

        futures: list[_Future] = []
        for scenario in scenarios:
            future = executor.submit(_run, scenario)
            future.add_done_callback(finished)
            futures.append(future)
        return [f.result() for f in futures]
    finally:
        if own is not None:
            own.shutdown()
