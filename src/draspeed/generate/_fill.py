"""Pre-allocating devices the way a busy cluster got there: one claim at a time,
each landing on a random node that still has room and taking the first free
device there (what scheduler_perf's ``allocResourceClaims`` does with upstream's
first-fit allocator)."""

from __future__ import annotations

import random
from collections.abc import Sequence


def first_fit_on_random_nodes(
    rng: random.Random, sizes: Sequence[int], count: int
) -> list[tuple[int, int]]:
    """``count`` picks ``(node, k)``: the k-th device (search order) of that node.

    ``sizes`` is the number of devices of each node. Each pick chooses a node
    uniformly among those with a free device left, then takes its next free device.
    """
    total = sum(sizes)
    if count > total:
        raise ValueError(f"cannot pre-allocate {count} devices, the cluster has {total}")
    open_nodes = [i for i, n in enumerate(sizes) if n]
    taken = [0] * len(sizes)
    out: list[tuple[int, int]] = []
    for _ in range(count):
        slot = rng.randrange(len(open_nodes))
        n = open_nodes[slot]
        out.append((n, taken[n]))
        taken[n] += 1
        if taken[n] == sizes[n]:
            # Swap-remove keeps each pick O(1).
            open_nodes[slot] = open_nodes[-1]
            open_nodes.pop()
    return out
