"""draspeed.analysis.plots: figures with labelled axes, written as non-empty images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread
from matplotlib.patches import Rectangle

from draspeed.analysis import AddNodes, FragmentationReport, fragmentation
from draspeed.analysis.plots import (
    capacity_figure,
    fit_curve,
    free_placements_chart,
    save,
    strategies_chart,
    trace_figure,
    utilisation_heatmap,
    what_if_figure,
)
from draspeed.cluster import Cluster
from draspeed.generate import generate


@pytest.fixture(scope="module")
def report() -> FragmentationReport:
    objects = generate("nvidia-mig", 2, gpus_per_node=2, allocated=0.5).decoded()
    snap = AddNodes(1, kind="nvidia-gpu", options={"gpus_per_node": 2}).apply(
        Cluster.from_objects(objects).snapshot()
    )
    return fragmentation(snap)


def _labelled(figure: Figure) -> list[tuple[str, str, str]]:
    # Colorbars are axes too; only the plots carry titles.
    return [
        (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) for ax in figure.axes if ax.get_title()
    ]


def test_each_figure_has_labelled_axes(report: FragmentationReport) -> None:
    heat = utilisation_heatmap(report)
    [(title, x, y)] = _labelled(heat)
    assert title == "utilisation per node" and x == "device class / counter"
    assert y == "node (3)"
    image = heat.axes[0].images[0].get_array()
    assert image is not None
    assert image.shape == (3, 2 + len(report.cluster.usage.counters))
    assert np.nanmax(image) > 0  # the half-allocated MIG nodes show up
    bars = free_placements_chart(report)
    [(title, x, y)] = _labelled(bars)
    assert x.startswith("MIG profile") and y.startswith("free placements")
    heights = [p.get_height() for p in bars.axes[0].patches if isinstance(p, Rectangle)]
    assert heights == [report.cluster.free_whole_devices, *report.cluster.free_by_profile.values()]
    curve = fit_curve([0, 5, 10], [4, 44, 84])
    [(title, x, y)] = _labelled(curve)
    assert (x, y) == ("nodes added", "pods that fit")
    assert list(np.asarray(curve.axes[0].lines[0].get_ydata())) == [4, 44, 84]


def test_capacity_figure_is_written(report: FragmentationReport, tmp_path: Path) -> None:
    figure = capacity_figure(report, ([0, 1, 2], [3, 5, 9]))
    assert len(_labelled(figure)) == 3
    assert all(x and y for _, x, y in _labelled(figure))
    path = tmp_path / "capacity.png"
    save(figure, str(path))
    assert path.stat().st_size > 10_000
    pixels = imread(path)
    assert pixels.shape[0] == 600 and pixels.shape[1] == 1800  # 18 x 6 inches at 100 dpi
    assert pixels.std() > 0.05  # not a blank canvas
    two = capacity_figure(report)
    assert len(_labelled(two)) == 2


def test_the_heatmap_after_placement_is_not_blank(tmp_path: Path) -> None:
    from draspeed.analysis import fit

    objects = generate("nvidia-mig", 3, gpus_per_node=2).decoded()
    snap = Cluster.from_objects(objects).snapshot()
    templates = [t for t in objects.templates if t.metadata.name in ("mig-1g10gb", "mig-3g40gb")]
    report = fit(snap, templates, explain_failures=False)
    after = report.after()
    assert after is not None
    before = fragmentation(snap)
    figure = capacity_figure(after, strategies=({"first-fit": report.placed}, 80))
    image = np.asarray(figure.axes[0].images[0].get_array())
    assert np.nanmax(image) > 0.5  # placed pods show
    assert np.nanmax(np.asarray(utilisation_heatmap(before).axes[0].images[0].get_array())) == 0.0
    titles = [t for t, _, _ in _labelled(figure)]
    assert titles == [
        "utilisation per node after placement",
        "free placements per profile",
        "pods placed per strategy",
    ]
    assert any(np.asarray(line.get_ydata())[0] == 80 for line in figure.axes[2].lines)
    both = what_if_figure(before, after)
    assert [t for t, _, _ in _labelled(both)][:2] == [
        "before: utilisation after placement",
        "after: utilisation after placement",
    ]
    bars = [p for p in both.axes[2].patches if isinstance(p, Rectangle)]
    assert len(bars) == 2 * (1 + len(before.cluster.free_by_profile))  # before and after
    save(both, str(tmp_path / "what-if.png"))
    assert (tmp_path / "what-if.png").stat().st_size > 10_000
    chart = strategies_chart({"first-fit": 10, "best-fit": 12}, 14)
    assert [p.get_height() for p in chart.axes[0].patches if isinstance(p, Rectangle)] == [10, 12]
    # A full cluster: the free-placements panel says so instead of an empty axis.
    assert after.cluster.free_whole_devices == 0 and not any(after.cluster.free_by_profile.values())
    full = free_placements_chart(after)
    assert [t.get_text() for t in full.axes[0].texts] == ["nothing free"]
    assert full.axes[0].get_ylim() == (0.0, 1.0)
    assert not free_placements_chart(before).axes[0].texts


def test_a_thousand_nodes_are_drawn_by_node_type() -> None:
    # 1,000 nodes of two types, a third of one type in use: rows per type and
    # utilisation bucket, each labelled with its node count, not 1,000 rows.
    gpu = generate("nvidia-gpu", 1, gpus_per_node=2).decoded()
    empty = Cluster.from_objects(gpu).snapshot()
    snap = AddNodes(700, kind="nvidia-gpu", options={"gpus_per_node": 2}).apply(empty)
    snap = AddNodes(300, kind="example", options={"gpus_per_node": 4}).apply(snap)
    from draspeed.analysis import fit

    report = fit(snap, [t for t in gpu.templates if t.metadata.name == "single-gpu"], max_pods=466)
    after = report.after()
    assert after is not None and len(after.nodes) == 1001
    heat = utilisation_heatmap(after)
    ax = heat.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert 2 <= len(labels) <= 12
    assert sum(int(label.rsplit("(", 1)[1].split()[0]) for label in labels) == 1001
    assert any(label.startswith("2 gpu.nvidia.com") for label in labels)
    assert ax.get_ylabel() == "node type, by utilisation (1001 nodes)"
    values = ax.images[0].get_array()
    assert values is not None and values.shape[0] == len(labels)
    assert np.nanmax(values) == 1.0 and np.nanmin(values) == 0.0


def test_trace_figure() -> None:
    from draspeed.analysis import TracePod, simulate

    objects = generate("nvidia-gpu", 1, gpus_per_node=2).decoded()
    snap = Cluster.from_objects(objects).snapshot()
    single = [t for t in objects.templates if t.metadata.name == "single-gpu"]
    trace = [TracePod(f"p{k}", float(k), "single-gpu", duration=3.0) for k in range(6)]
    figure = trace_figure(simulate(snap, single, trace))
    assert [(t, x, y) for t, x, y in _labelled(figure)] == [
        ("utilisation over time", "time (s)", "share in use"),
        ("pods waiting and running", "time (s)", "pods"),
    ]
    waiting = np.asarray(figure.axes[1].lines[0].get_ydata())
    assert waiting.max() > 0  # six pods, two GPUs: some wait
