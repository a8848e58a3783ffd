"""Replaying a pod trace over time: a discrete-event simulation on snapshot versions.

:func:`simulate` takes a cluster state and a trace (:mod:`draspeed.analysis.trace`)
and plays it as kube-scheduler would see it: pods arrive and wait in a queue; each
time something happens (arrivals, departures), the waiting pods are tried in
arrival order, each placed by the strategy's node order and device choice with the
real allocator (:mod:`draspeed.analysis.scheduler`), committed, and taken off when
they leave. A pod that does not fit waits; once a shape has not fitted, later pods of
that shape are not tried again until some pod leaves (nothing else can make room).
A pod with a ``duration`` leaves that long after it starts; a pod with a
``departure`` is deleted then, running or still waiting.

The report has, per event time, the pods running and waiting and the share in use
of every DeviceClass the shapes use and of every counter; per pod when it started
(how long it waited) and on which node; and the pods that never ran.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed import arguments
from draspeed.analysis.node_list import resolve_nodes, snapshot_of
from draspeed.analysis.placement import Placer
from draspeed.analysis.scheduler import Scheduler
from draspeed.analysis.shapes import ShapeSource, as_shapes
from draspeed.analysis.strategies import Strategy
from draspeed.analysis.trace import TracePod
from draspeed.collector import without_collector

if TYPE_CHECKING:
    from draspeed.api.model import Node
    from draspeed.engine.snapshot import Snapshot

# progress(pods arrived so far, pods in the trace)
TraceProgress = Callable[[int, int], None]


@dataclass(slots=True)
class PodRun:
    """What happened to one pod of the trace."""

    name: str
    shape: str
    arrival: float
    start: float | None = None  # None: never ran
    end: float | None = None  # left (None: still running at the end, or never ran)
    node: str | None = None
    deleted: bool = False  # deleted (its departure) before it could start

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.arrival

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": self.shape,
            "arrival": self.arrival,
            "start": self.start,
            "end": self.end,
            "node": self.node,
            "deletedWaiting": self.deleted,
        }


@dataclass
class TraceReport:
    """The simulation's outcome: counts, waits, and the state over time."""

    strategy: str
    shapes: list[str]
    pods: list[PodRun]
    times: np.ndarray  # event times, ascending
    running: np.ndarray  # pods running after each event time
    waiting: np.ndarray  # pods waiting after each event time
    # "class <name>" / "counter <name>" -> share in use after each event time.
    utilisation: dict[str, np.ndarray] = field(default_factory=dict)
    calls: int = 0
    seconds: float = 0.0

    @property
    def ran(self) -> int:
        return sum(1 for p in self.pods if p.start is not None)

    @property
    def never_ran(self) -> dict[str, int]:
        """Pods that never started, per shape."""
        out = dict.fromkeys(self.shapes, 0)
        for p in self.pods:
            if p.start is None:
                out[p.shape] += 1
        return out

    def waits(self) -> dict[str, float]:
        """Waiting times of the pods that ran: mean, median, 95th percentile, max."""
        values = np.asarray([p.wait for p in self.pods if p.wait is not None], dtype=float)
        if not len(values):
            return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}
        return {
            "mean": float(values.mean()),
            "p50": float(np.percentile(values, 50)),
            "p95": float(np.percentile(values, 95)),
            "max": float(values.max()),
        }

    def peak(self, column: str) -> float:
        """The highest share in use a class or counter reached."""
        values = self.utilisation.get(column)
        return float(values.max()) if values is not None and len(values) else 0.0

    def to_dict(self, *, samples: bool = False, pods: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "shapes": list(self.shapes),
            "pods": len(self.pods),
            "ran": self.ran,
            "neverRan": self.never_ran,
            "waits": {k: round(v, 6) for k, v in self.waits().items()},
            "peakWaiting": int(self.waiting.max()) if len(self.waiting) else 0,
            "peakUtilisation": {k: round(self.peak(k), 6) for k in self.utilisation},
            "end": float(self.times[-1]) if len(self.times) else 0.0,
            "calls": self.calls,
            "seconds": round(self.seconds, 6),
        }
        if samples:
            out["samples"] = {
                "time": self.times.tolist(),
                "running": self.running.tolist(),
                "waiting": self.waiting.tolist(),
                **{k: [round(x, 6) for x in v.tolist()] for k, v in self.utilisation.items()},
            }
        if pods:
            out["podRuns"] = [p.to_dict() for p in self.pods]
        return out


@without_collector
def simulate(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    trace: Sequence[TracePod],
    strategy: str | Strategy = "first-fit",
    nodes: Sequence[Node | str] | None = None,
    *,
    timeout: float | None = None,
    progress: TraceProgress | None = None,
    memoise: bool = True,
) -> TraceReport:
    """Replay ``trace`` on ``snapshot`` (see the module); its shapes are named after
    ``templates``. ``memoise=False`` asks the real snapshot every question (checks)."""
    start = time.monotonic()
    snapshot_of(snapshot)
    trace = arguments.items_of(trace, TracePod, "trace", "a TracePod")
    chosen = Strategy.parse(strategy)
    timeout = arguments.timeout(timeout)
    arguments.function(progress, "progress")
    arguments.flag(memoise, "memoise")
    shapes = as_shapes(templates)
    index = {s.name: k for k, s in enumerate(shapes)}
    unknown = sorted({p.shape for p in trace} - set(index))
    if unknown:
        raise ValueError(
            f"the trace names shapes that were not given: {', '.join(unknown)} "
            f"(given: {', '.join(index)})"
        )
    node_list = resolve_nodes(snapshot, nodes)
    placer = Placer(snapshot, node_list, shapes, timeout=timeout, memoise=memoise)
    run = _Simulation(placer, Scheduler(placer, chosen), list(trace), index, progress)
    run.go()
    return TraceReport(
        str(chosen),
        [s.name for s in shapes],
        run.runs,
        np.asarray(run.times, dtype=float),
        np.asarray(run.running, dtype=np.int64),
        np.asarray(run.waiting, dtype=np.int64),
        run.meter.series(),
        placer.calls,
        time.monotonic() - start,
    )


class _Simulation:
    """The event loop: arrivals, departures, the waiting queue, the samples."""

    def __init__(
        self,
        placer: Placer,
        scheduler: Scheduler,
        trace: list[TracePod],
        index: dict[str, int],
        progress: TraceProgress | None,
    ) -> None:
        self.placer = placer
        self.scheduler = scheduler
        self.trace = sorted(trace, key=lambda p: p.arrival)
        self.shape_of = [index[p.shape] for p in self.trace]
        self.progress = progress
        self.runs = [PodRun(p.name, p.shape, p.arrival) for p in self.trace]
        self.node_of: dict[int, int] = {}  # running pod -> node index
        # Departures: (time, order, pod); a pod deleted while waiting is dropped.
        self.leaving: list[tuple[float, int, int]] = []
        self.queues: list[deque[int]] = [deque() for _ in index]  # waiting, per shape
        self.blocked = [False] * len(index)
        self.deleted: set[int] = set()
        self.waiting_count = 0
        self.arrived = 0  # pods of the trace (in arrival order) that have arrived
        self.meter = _Meter(placer)
        self.times: list[float] = []
        self.running: list[int] = []
        self.waiting: list[int] = []

    def go(self) -> None:
        trace = self.trace
        arrived = 0
        order = 0
        for pod, p in enumerate(trace):  # deletions known in advance
            if p.departure is not None:
                heapq.heappush(self.leaving, (p.departure, order, pod))
                order += 1
        self._order = order
        while arrived < len(trace) or self.leaving:
            now = min(
                trace[arrived].arrival if arrived < len(trace) else np.inf,
                self.leaving[0][0] if self.leaving else np.inf,
            )
            freed = False
            while self.leaving and self.leaving[0][0] <= now:
                _, _, pod = heapq.heappop(self.leaving)
                freed |= self._leave(pod, now)
            while arrived < len(trace) and trace[arrived].arrival <= now:
                if arrived not in self.deleted:  # a pod deleted as it arrives never waits
                    self.queues[self.shape_of[arrived]].append(arrived)
                    self.waiting_count += 1
                arrived += 1
                self.arrived = arrived
            if freed:  # room was made: every shape may fit again
                self.blocked = [False] * len(self.blocked)
            self._schedule(now)
            self._sample(now)
            if self.progress is not None:
                self.progress(arrived, len(trace))

    def _leave(self, pod: int, now: float) -> bool:
        """Pod ``pod`` leaves at ``now``; True if it was running (room is made)."""
        run = self.runs[pod]
        i = self.node_of.pop(pod, None)
        if i is not None:
            self.scheduler.remove(i, pod)
            run.end = now
            self.meter.update(self.placer.changed)
            return True
        if run.start is None and pod not in self.deleted:  # deleted before it started
            self.deleted.add(pod)
            run.deleted = True
            if pod < self.arrived:  # it was waiting
                self.waiting_count -= 1
        return False

    def _schedule(self, now: float) -> None:
        """Try the waiting pods in arrival order, shape by shape as they come."""
        heads: list[tuple[int, int]] = []
        for s, queue in enumerate(self.queues):
            self._drop_deleted(queue)
            if queue and not self.blocked[s]:
                heads.append((queue[0], s))
        heapq.heapify(heads)
        while heads:
            pod, s = heapq.heappop(heads)
            queue = self.queues[s]
            found = self.scheduler.place(s, pod)
            if found is None:
                self.blocked[s] = True
                continue
            i, _ = found
            queue.popleft()
            self.waiting_count -= 1
            run = self.runs[pod]
            run.start, run.node = now, self.placer.nodes[i].name
            self.node_of[pod] = i
            self.meter.update(self.placer.changed)
            duration = self.trace[pod].duration
            if duration is not None:
                heapq.heappush(self.leaving, (now + duration, self._order, pod))
                self._order += 1
            self._drop_deleted(queue)
            if queue:
                heapq.heappush(heads, (queue[0], s))

    def _drop_deleted(self, queue: deque[int]) -> None:
        while queue and queue[0] in self.deleted:
            queue.popleft()

    def _sample(self, now: float) -> None:
        self.times.append(now)
        self.running.append(len(self.node_of))
        self.waiting.append(self.waiting_count)
        self.meter.sample()


class _Meter:
    """The cluster's devices per class and counters in use, kept per node and summed,
    updated for the nodes a change touched."""

    def __init__(self, placer: Placer) -> None:
        self.placer = placer
        self.columns: list[str] = []
        self.column: dict[str, int] = {}
        self.parts: dict[int, dict[int, tuple[float, float]]] = {}
        self.used: list[float] = []
        self.total: list[float] = []
        self.samples: list[list[float]] = []
        for i in range(len(placer.nodes)):
            self._add(i, 1)

    def _contribution(self, i: int) -> dict[int, tuple[float, float]]:
        out: dict[int, tuple[float, float]] = {}
        for name, (total, in_use) in self.placer.class_counts(i).items():
            out[self._col(f"class {name}")] = (float(in_use), float(total))
        for name, (used, capacity) in self.placer.counter_use(i).items():
            out[self._col(f"counter {name}")] = (float(used), float(capacity))
        return out

    def _col(self, name: str) -> int:
        found = self.column.get(name)
        if found is None:
            found = self.column[name] = len(self.columns)
            self.columns.append(name)
            self.used.append(0.0)
            self.total.append(0.0)
            for row in self.samples:  # earlier samples had none of it
                row.append(0.0)
        return found

    def _add(self, i: int, sign: int) -> None:
        if sign > 0:
            self.parts[i] = self._contribution(i)
        for k, (used, total) in self.parts[i].items():
            self.used[k] += sign * used
            self.total[k] += sign * total

    def update(self, nodes: set[int]) -> None:
        for i in nodes:
            self._add(i, -1)
            self._add(i, 1)

    def sample(self) -> None:
        self.samples.append(
            [u / t if t else 0.0 for u, t in zip(self.used, self.total, strict=True)]
        )

    def series(self) -> dict[str, np.ndarray]:
        table = np.asarray(self.samples, dtype=float).reshape(len(self.samples), len(self.columns))
        return {name: table[:, k] for k, name in enumerate(self.columns)}
