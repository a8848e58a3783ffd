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
    utilisation_heatmap,
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
