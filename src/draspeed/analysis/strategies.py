"""Placement strategies: in which order nodes are tried, and how devices are chosen.

A strategy is a node order and a device choice, written ``ORDER`` or
``ORDER+best-fit`` (``best-fit`` alone is ``first-fit+best-fit``):

Node orders:

- ``first-fit``: the first node, in node order, where the pod fits (packs nodes
  one after the other);
- ``round-robin``: the next node after the one the shape's previous pod went to,
  wrapping around (spreads pods);
- ``least-allocated`` / ``most-allocated``: the node kube-scheduler's
  ``NodeResourcesFit`` scoring strategies of those names would rank first, scoring
  the DeviceClasses the pod is allocated from the way upstream scores extended
  resources backed by DRA: per class, the devices of the class on the node are its
  capacity and those in use (exclusively or shared) plus the pod's are requested;
  ``(capacity - requested) * 100 / capacity`` (least) or ``requested * 100 /
  capacity`` (most), integer arithmetic, averaged over the classes. Where scores tie,
  kube-scheduler picks at random; here the first node in node order wins, so runs
  repeat.

Device choices:

- ``upstream`` (the default): the allocator's own answer, exactly as kube-scheduler
  binds it (first fit in upstream's search order). Answers given "as upstream" only
  ever use this.
- ``best-fit``: for pods on partitionable devices (devices that consume shared
  counters, such as MIG partitions), the placement that leaves the tightest fit:
  :mod:`draspeed.analysis.bestfit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from draspeed import arguments

NodeOrder = Literal["first-fit", "round-robin", "least-allocated", "most-allocated"]
DeviceChoice = Literal["upstream", "best-fit"]
NODE_ORDERS: tuple[NodeOrder, ...] = (
    "first-fit",
    "round-robin",
    "least-allocated",
    "most-allocated",
)
DEVICE_CHOICES: tuple[DeviceChoice, ...] = ("upstream", "best-fit")
# The names --strategy lists (every order, alone and with best-fit).
STRATEGIES: tuple[str, ...] = (
    *NODE_ORDERS,
    "best-fit",
    *(f"{o}+best-fit" for o in NODE_ORDERS if o != "first-fit"),
)
MAX_NODE_SCORE = 100  # kube-scheduler's framework.MaxNodeScore


@dataclass(frozen=True, slots=True)
class Strategy:
    """A node order and a device choice."""

    nodes: NodeOrder = "first-fit"
    devices: DeviceChoice = "upstream"

    def __post_init__(self) -> None:
        arguments.one_of(self.nodes, NODE_ORDERS, "nodes", "node order")
        arguments.one_of(self.devices, DEVICE_CHOICES, "devices", "device choice")

    @classmethod
    def parse(cls, text: str | Strategy, name: str = "strategy") -> Strategy:
        """``first-fit``, ``most-allocated+best-fit``, ``best-fit`` ... (see the module).
        ``name``: the argument named when ``text`` is neither."""
        if isinstance(text, Strategy):
            return text
        arguments.text(text, name, "a Strategy or its name")
        order, plus, choice = text.partition("+")
        if not plus and order == "best-fit":
            return cls("first-fit", "best-fit")
        if order not in NODE_ORDERS or (plus and choice != "best-fit"):
            raise ValueError(f"unknown strategy {text!r}; expected one of {', '.join(STRATEGIES)}")
        return cls(order, "best-fit" if plus else "upstream")

    def __str__(self) -> str:
        if self.devices == "upstream":
            return self.nodes
        return "best-fit" if self.nodes == "first-fit" else f"{self.nodes}+best-fit"

    @property
    def scored(self) -> bool:
        """Whether nodes are ranked by a score (every node is asked for every pod)."""
        return self.nodes in ("least-allocated", "most-allocated")


def node_score(order: NodeOrder, classes: dict[str, tuple[int, int]], pod: dict[str, int]) -> int:
    """kube-scheduler's least/most-allocated score (0..100) of a node for a pod.

    ``classes``: per DeviceClass, (devices of the class on the node, devices in use);
    ``pod``: per class, the devices the pod would take there. Classes the node has no
    device of do not count (upstream skips resources with no allocatable amount).
    """
    total = 0
    counted = 0
    for name, wanted in pod.items():
        capacity, in_use = classes.get(name, (0, 0))
        if capacity == 0:
            continue
        requested = in_use + wanted
        if order == "most-allocated":
            total += min(requested, capacity) * MAX_NODE_SCORE // capacity
        elif requested <= capacity:
            total += (capacity - requested) * MAX_NODE_SCORE // capacity
        counted += 1
    return total // counted if counted else 0
