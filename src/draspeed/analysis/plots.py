"""Capacity plots with matplotlib (``pip install 'draspeed[analysis]'``), Agg backend.

- :func:`utilisation_heatmap`: one row per node, one column per DeviceClass (share
  of its devices in use) and per counter (share of its capacity used);
- :func:`free_placements_chart`: free placements per MIG profile (cluster), with
  the free whole devices next to them;
- :func:`fit_curve`: pods that fit as nodes are added (a sweep of what-ifs);
- :func:`capacity_figure`: the three side by side, as ``draspeed capacity --plot``
  writes them.

Each function returns a :class:`matplotlib.figure.Figure` (not shown, not
registered with pyplot); ``save(figure, path)`` writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from draspeed.analysis.fragmentation import FragmentationReport


def _figure(width: float, height: float, columns: int = 1) -> tuple[Figure, list[Axes]]:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # the analysis extra
        raise ImportError("plots need matplotlib: pip install 'draspeed[analysis]'") from exc
    figure = Figure(figsize=(width, height), layout="constrained")
    axes = [figure.add_subplot(1, columns, i + 1) for i in range(columns)]
    return figure, axes


def _heatmap_columns(report: FragmentationReport) -> tuple[list[str], np.ndarray]:
    classes = list(report.cluster.classes)
    counters = list(report.cluster.usage.counters)
    labels = [f"class {c}" for c in classes] + [f"counter {c}" for c in counters]
    values = np.zeros((len(report.nodes), len(labels)))
    for i, node in enumerate(report.nodes):
        for j, c in enumerate(classes):
            values[i, j] = node.utilisation(c)
        for j, c in enumerate(counters, start=len(classes)):
            use = node.usage.counters.get(c)
            values[i, j] = use.fraction if use is not None else 0.0
    return labels, values


def draw_utilisation(ax: Axes, report: FragmentationReport) -> None:
    labels, values = _heatmap_columns(report)
    image = ax.imshow(
        values, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0.0, vmax=1.0
    )
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
    names = [n.node for n in report.nodes]
    if len(names) <= 40:
        ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel("device class / counter")
    ax.set_ylabel(f"node ({len(names)})")
    ax.set_title("utilisation per node")
    ax.figure.colorbar(image, ax=ax, label="share in use")


def draw_free_placements(ax: Axes, report: FragmentationReport) -> None:
    cluster = report.cluster
    labels = ["whole devices", *cluster.free_by_profile]
    counts = [cluster.free_whole_devices, *cluster.free_by_profile.values()]
    ax.bar(range(len(labels)), counts, color=["tab:gray"] + ["tab:blue"] * (len(labels) - 1))
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_xlabel(f"MIG profile ({report.profile_attribute})")
    ax.set_ylabel("free placements (each on its own)")
    ax.set_title("free placements per profile")


def draw_fit_curve(
    ax: Axes, added: Sequence[int], pods: Sequence[int], label: str = "pods that fit"
) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.plot(list(added), list(pods), marker="o")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("nodes added")
    ax.set_ylabel(label)
    ax.set_title("pods that fit as nodes are added")
    ax.grid(True, alpha=0.3)


def utilisation_heatmap(report: FragmentationReport) -> Figure:
    figure, (ax,) = _figure(8, max(3.0, min(12.0, 0.25 * len(report.nodes) + 2)))
    draw_utilisation(ax, report)
    return figure


def free_placements_chart(report: FragmentationReport) -> Figure:
    figure, (ax,) = _figure(7, 4)
    draw_free_placements(ax, report)
    return figure


def fit_curve(added: Sequence[int], pods: Sequence[int]) -> Figure:
    figure, (ax,) = _figure(6, 4)
    draw_fit_curve(ax, added, pods)
    return figure


def capacity_figure(
    report: FragmentationReport, curve: tuple[Sequence[int], Sequence[int]] | None = None
) -> Figure:
    """Heatmap and free placements (and the fit curve when given), side by side."""
    figure, axes = _figure(18 if curve else 12, 6, 3 if curve else 2)
    draw_utilisation(axes[0], report)
    draw_free_placements(axes[1], report)
    if curve is not None:
        draw_fit_curve(axes[2], *curve)
    return figure


def save(figure: Figure, path: str, dpi: int = 100) -> None:
    """Write the figure (format from the file name: png, svg, pdf ...)."""
    figure.savefig(path, dpi=dpi)
