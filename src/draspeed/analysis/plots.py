"""Capacity plots with matplotlib (``pip install 'draspeed[analysis]'``), Agg backend.

- :func:`utilisation_heatmap`: one row per node, one column per DeviceClass (share
  of its devices in use) and per counter (share of its capacity used). Past
  ``max_rows`` nodes the rows are node types (nodes with the same devices per class
  and the same counter capacities), each split into up to ``buckets`` rows of nodes
  of similar utilisation, labelled with their node count;
- :func:`free_placements_chart`: free placements per MIG profile (cluster), with
  the free whole devices next to them (two reports: side by side, before and after);
- :func:`fit_curve`: pods that fit as nodes are added (a sweep of what-ifs);
- :func:`strategies_chart`: pods placed per strategy, with the optimal bound;
- :func:`capacity_figure`: heatmap and free placements (and the curve), as
  ``draspeed capacity --plot`` writes them, for the cluster after placement;
  :func:`what_if_figure` the same before and after a what-if, side by side;
- :func:`trace_figure`: a trace replay: utilisation and the queue over time.

Each function returns a :class:`matplotlib.figure.Figure` (not shown, not
registered with pyplot); ``save(figure, path)`` writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from draspeed import arguments

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from draspeed.analysis.fragmentation import FragmentationReport, NodeFragmentation
    from draspeed.analysis.simulate import TraceReport

MAX_ROWS = 60  # heatmap rows drawn one per node; more nodes are grouped by type
BUCKETS = 6  # rows per node type when grouped
MAX_COUNTERS = 8  # counters drawn in a trace's utilisation plot (the busiest)


def _figure(
    width: float, height: float, columns: int = 1, rows: int = 1
) -> tuple[Figure, list[Axes]]:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # the analysis extra
        raise ImportError("plots need matplotlib: pip install 'draspeed[analysis]'") from exc
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = [figure.add_subplot(rows, columns, i + 1) for i in range(rows * columns)]
    return figure, axes


def _heatmap_columns(report: FragmentationReport) -> tuple[list[str], np.ndarray]:
    classes = list(report.cluster.classes)
    counters = list(report.cluster.usage.counters)
    labels = [f"class {c}" for c in classes] + [f"counter {c}" for c in counters]
    values = np.zeros((len(report.nodes), len(labels)))
    for i, node in enumerate(report.nodes):
        for j, c in enumerate(classes):
            values[i, j] = node.utilisation(c) if c in node.classes else 0.0
        for j, c in enumerate(counters, start=len(classes)):
            use = node.usage.counters.get(c)
            values[i, j] = use.fraction if use is not None else 0.0
    return labels, values


def node_type(node: NodeFragmentation) -> str:
    """A node's type: its devices per class and its counter capacities."""
    parts = [f"{c.total} {name}" for name, c in node.classes.items() if c.total]
    if not parts:
        parts = [f"{node.usage.devices.total} devices"]
    return ", ".join(parts)


def _rows(
    report: FragmentationReport, max_rows: int, buckets: int
) -> tuple[list[str], np.ndarray, bool]:
    """Row labels and values: one row per node, or per type and utilisation bucket."""
    labels, values = _heatmap_columns(report)
    if len(report.nodes) <= max_rows:
        return [n.node for n in report.nodes], values, False
    types: dict[str, list[int]] = {}
    for i, node in enumerate(report.nodes):
        types.setdefault(node_type(node), []).append(i)
    names: list[str] = []
    rows: list[np.ndarray] = []
    for name, members in types.items():
        # Nodes of a type sorted by overall utilisation, cut into buckets of similar use.
        order = sorted(members, key=lambda i: (values[i].mean(), i))
        parts = np.array_split(np.asarray(order), min(buckets, len(order)))
        for k, part in enumerate(parts):
            rows.append(values[part].mean(axis=0))
            share = f" · {k + 1}/{len(parts)}" if len(parts) > 1 else ""
            names.append(f"{name}{share} ({len(part)} nodes)")
    return names, np.vstack(rows) if rows else np.zeros((0, len(labels))), True


def draw_utilisation(
    ax: Axes,
    report: FragmentationReport,
    title: str = "utilisation per node",
    *,
    max_rows: int = MAX_ROWS,
    buckets: int = BUCKETS,
) -> None:
    _fragmentation(report, "report")
    max_rows = arguments.whole(max_rows, "max_rows", 1)
    buckets = arguments.whole(buckets, "buckets", 1)
    labels = _heatmap_columns(report)[0]
    names, values, grouped = _rows(report, max_rows, buckets)
    image = ax.imshow(
        values, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0.0, vmax=1.0
    )
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
    if len(names) <= max_rows:
        ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel("device class / counter")
    count = len(report.nodes)
    ax.set_ylabel(f"node type, by utilisation ({count} nodes)" if grouped else f"node ({count})")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="share in use")


def draw_free_placements(
    ax: Axes, report: FragmentationReport, other: FragmentationReport | None = None
) -> None:
    """Free placements per profile; with ``other``, before (this) and after (other)."""
    _fragmentation(report, "report")
    if other is not None:
        _fragmentation(other, "other")
    reports = [report] if other is None else [report, other]
    profiles = sorted({p for r in reports for p in r.cluster.free_by_profile})
    labels = ["whole devices", *profiles]
    width = 0.8 / len(reports)
    highest = 0
    for k, r in enumerate(reports):
        counts = [
            r.cluster.free_whole_devices,
            *(r.cluster.free_by_profile.get(p, 0) for p in profiles),
        ]
        highest = max(highest, *counts)
        xs = np.arange(len(labels)) + (k - (len(reports) - 1) / 2) * width
        name = None if other is None else ("before", "after")[k]
        color = ["tab:gray"] + ["tab:blue"] * len(profiles) if other is None else None
        ax.bar(xs, counts, width=width, label=name, color=color)
    if highest == 0:  # a full cluster: say so rather than draw an axis around nothing
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "nothing free", transform=ax.transAxes, ha="center", va="center")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_xlabel(f"MIG profile ({report.profile_attribute})")
    ax.set_ylabel("free placements (each on its own)")
    ax.set_title("free placements per profile")
    if other is not None:
        ax.legend(fontsize=8)


def draw_fit_curve(
    ax: Axes, added: Sequence[int], pods: Sequence[int], label: str = "pods that fit"
) -> None:
    from matplotlib.ticker import MaxNLocator

    xs, ys = _curve(added, pods)
    ax.plot(xs, ys, marker="o")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("nodes added")
    ax.set_ylabel(label)
    ax.set_title("pods that fit as nodes are added")
    ax.grid(True, alpha=0.3)


def draw_strategies(ax: Axes, placed: Mapping[str, int], bound: int | None) -> None:
    placed, bound = _placed(placed, bound)
    names = list(placed)
    ax.bar(range(len(names)), [placed[n] for n in names], color="tab:blue")
    for x, n in enumerate(names):
        ax.annotate(str(placed[n]), (x, placed[n]), ha="center", va="bottom", fontsize=8)
    if bound is not None:
        ax.axhline(bound, color="tab:red", linestyle="--", label=f"optimal bound ({bound})")
        ax.legend(fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_xlabel("strategy")
    ax.set_ylabel("pods placed")
    ax.set_title("pods placed per strategy")


def draw_trace_utilisation(ax: Axes, report: TraceReport, max_counters: int = MAX_COUNTERS) -> None:
    _trace(report, "report")
    max_counters = arguments.whole(max_counters, "max_counters")
    times = report.times
    classes = [k for k in report.utilisation if k.startswith("class ")]
    counters = sorted(
        (k for k in report.utilisation if k.startswith("counter ")),
        key=lambda k: -report.peak(k),
    )[:max_counters]
    for k in classes:
        ax.step(times, report.utilisation[k], where="post", label=k, linewidth=1.5)
    for k in counters:
        ax.step(times, report.utilisation[k], where="post", label=k, linewidth=0.8, linestyle="--")
    ax.set_ylim(0.0, 1.05)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("share in use")
    ax.set_title("utilisation over time")
    ax.grid(True, alpha=0.3)
    if classes or counters:  # beside the plot: lines near 1.0 stay visible
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def draw_trace_queue(ax: Axes, report: TraceReport) -> None:
    _trace(report, "report")
    ax.step(report.times, report.waiting, where="post", label="waiting", color="tab:red")
    ax.step(report.times, report.running, where="post", label="running", color="tab:green")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("pods")
    ax.set_title("pods waiting and running")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _fragmentation(value: object, name: str) -> None:
    from draspeed.analysis.fragmentation import FragmentationReport

    what = "a FragmentationReport (what fragmentation returns)"
    arguments.instance_of(value, FragmentationReport, name, what)


def _trace(value: object, name: str) -> None:
    from draspeed.analysis.simulate import TraceReport

    arguments.instance_of(value, TraceReport, name, "a TraceReport (what simulate returns)")


def _counts(value: object, name: str) -> list[int]:
    """A sequence of whole numbers (a curve's axis), else a TypeError or ValueError
    naming ``name`` (or the item: ``name[i]``); matplotlib would fail inside, or draw a
    str's characters."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name}: expected a sequence of whole numbers, got {arguments.type_name(value)}"
        )
    return [arguments.whole(v, f"{name}[{i}]") for i, v in enumerate(value)]


def _curve(added: object, pods: object, name: str = "") -> tuple[list[int], list[int]]:
    """The fit curve's two axes, checked (``name``: the tuple they came in, if any)."""
    xs = _counts(added, f"{name}[0]" if name else "added")
    ys = _counts(pods, f"{name}[1]" if name else "pods")
    if len(xs) != len(ys):
        raise ValueError(
            f"{name or 'added and pods'}: {len(xs)} node counts but {len(ys)} pod counts "
            "(one of each per point)"
        )
    return xs, ys


def _placed(placed: object, bound: object, name: str = "") -> tuple[dict[str, int], int | None]:
    """Pods placed per strategy and the bound, checked (``name``: the tuple they came
    in, if any)."""
    where = f"{name}[0]" if name else "placed"
    if not isinstance(placed, Mapping):
        raise TypeError(
            f"{where}: expected a mapping of strategy names to pods placed, "
            f"got {arguments.type_name(placed)}"
        )
    out: dict[str, int] = {}
    for key, value in placed.items():
        if not isinstance(key, str):
            raise TypeError(f"{where}: expected str strategy names, got {arguments.type_name(key)}")
        out[key] = arguments.whole(value, f"{where}[{key!r}]")
    limit = None if bound is None else arguments.whole(bound, f"{name}[1]" if name else "bound")
    return out, limit


def _pair(value: object, name: str) -> tuple[object, object]:
    """A ``(first, second)`` pair argument, else a TypeError naming ``name``."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name}: expected a pair, got {arguments.type_name(value)}")
    return value[0], value[1]


def utilisation_heatmap(report: FragmentationReport) -> Figure:
    _fragmentation(report, "report")
    rows = min(len(report.nodes), MAX_ROWS)
    figure, (ax,) = _figure(8, max(3.0, min(12.0, 0.25 * rows + 2)))
    draw_utilisation(ax, report)
    return figure


def free_placements_chart(
    report: FragmentationReport, other: FragmentationReport | None = None
) -> Figure:
    _fragmentation(report, "report")
    if other is not None:
        _fragmentation(other, "other")
    figure, (ax,) = _figure(7, 4)
    draw_free_placements(ax, report, other)
    return figure


def fit_curve(added: Sequence[int], pods: Sequence[int]) -> Figure:
    _curve(added, pods)
    figure, (ax,) = _figure(6, 4)
    draw_fit_curve(ax, added, pods)
    return figure


def strategies_chart(placed: Mapping[str, int], bound: int | None = None) -> Figure:
    _placed(placed, bound)
    figure, (ax,) = _figure(6, 4)
    draw_strategies(ax, placed, bound)
    return figure


Strategies = tuple[Mapping[str, int], int | None]  # pods per strategy, the bound


def _figure_extras(curve: object, strategies: object) -> None:
    """Check a figure's optional curve and strategies before anything is drawn."""
    if curve is not None:
        _curve(*_pair(curve, "curve"), name="curve")
    if strategies is not None:
        _placed(*_pair(strategies, "strategies"), name="strategies")


def capacity_figure(
    report: FragmentationReport,
    curve: tuple[Sequence[int], Sequence[int]] | None = None,
    strategies: Strategies | None = None,
) -> Figure:
    """Heatmap and free placements of the cluster (after placement), with the fit
    curve and the strategies' counts next to the bound when given."""
    _fragmentation(report, "report")
    _figure_extras(curve, strategies)
    columns = 2 + (curve is not None) + (strategies is not None)
    figure, axes = _figure(6 * columns, 6, columns)
    draw_utilisation(axes[0], report, "utilisation per node after placement")
    draw_free_placements(axes[1], report)
    rest = axes[2:]
    if curve is not None:
        draw_fit_curve(rest.pop(0), *curve)
    if strategies is not None:
        draw_strategies(rest.pop(0), *strategies)
    return figure


def what_if_figure(
    before: FragmentationReport,
    after: FragmentationReport,
    curve: tuple[Sequence[int], Sequence[int]] | None = None,
    strategies: Strategies | None = None,
) -> Figure:
    """Before and after a what-if (each after placement): heatmaps side by side, free
    placements of both, the fit curve and the strategies' counts (after) when given."""
    _fragmentation(before, "before")
    _fragmentation(after, "after")
    _figure_extras(curve, strategies)
    columns = 3 + (curve is not None) + (strategies is not None)
    figure, axes = _figure(6 * columns, 6, columns)
    draw_utilisation(axes[0], before, "before: utilisation after placement")
    draw_utilisation(axes[1], after, "after: utilisation after placement")
    draw_free_placements(axes[2], before, after)
    rest = axes[3:]
    if curve is not None:
        draw_fit_curve(rest.pop(0), *curve)
    if strategies is not None:
        draw_strategies(rest.pop(0), *strategies)
    return figure


def trace_figure(report: TraceReport) -> Figure:
    """A trace replay: utilisation and the queue over time, one above the other."""
    _trace(report, "report")
    figure, (top, bottom) = _figure(12, 7, 1, 2)
    draw_trace_utilisation(top, report)
    draw_trace_queue(bottom, report)
    bottom.sharex(top)
    return figure


def save(figure: Figure, path: str, dpi: int = 100) -> None:
    """Write the figure (format from the file name: png, svg, pdf ...)."""
    if not callable(getattr(figure, "savefig", None)):
        raise TypeError(f"figure: expected a matplotlib Figure, got {arguments.type_name(figure)}")
    figure.savefig(path, dpi=dpi)
