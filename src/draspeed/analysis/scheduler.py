"""Choosing the node for each pod as a strategy says, over a :class:`Placer`.

Per shape the scheduler keeps the nodes the shape may still fit on: a node that
answers "does not fit" leaves that list, and comes back only when something it
sees changes (a pod placed on it or taken off it, or on a pool it shares). So
first-fit takes the first node of the list, round-robin the first at or after the
node after the shape's previous pod, and the scored orders keep a heap of scores
that are computed again only for nodes that changed. The choice is the one asking
every node, in order, for every pod would make.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable

from draspeed.analysis.placement import Answer, Placer
from draspeed.analysis.strategies import Strategy, node_score

# on_failure(node, shape, pod, answer): a node answered that a shape does not fit.
FailureHook = Callable[[int, int, int, Answer], None]


class Scheduler:
    """Places pods one at a time (``place``) and takes them off (``remove``).

    Usage::

        scheduler = Scheduler(placer, Strategy.parse("most-allocated"))
        found = scheduler.place(shape, pod)    # (node, devices) or None
        scheduler.remove(node, pod)
    """

    def __init__(
        self, placer: Placer, strategy: Strategy, on_failure: FailureHook | None = None
    ) -> None:
        self.placer = placer
        self.strategy = strategy
        self.on_failure = on_failure
        n, shapes = len(placer.nodes), len(placer.shapes)
        # Nodes shape s may fit on (sorted), and a flag per node that it does not now.
        self.live = [list(range(n)) for _ in range(shapes)]
        self.out = [bytearray(n) for _ in range(shapes)]
        # round-robin: the node after the one shape s's previous pod went to.
        self.turn = [0] * shapes
        # Scored orders: per shape a heap of (-score, node, node version), made lazily.
        self.heaps: list[list[tuple[int, int, int]] | None] = [None] * shapes
        self.retired = [False] * shapes

    def place(self, s: int, pod: int) -> tuple[int, list[str]] | None:
        """Place pod number ``pod`` of shape ``s``: (node index, devices), or None when
        it fits nowhere now."""
        found = self._best(s, pod) if self.strategy.scored else self._first(s, pod)
        if found is None:
            return None
        i, answer = found
        devices = self.placer.commit(i, s, pod, answer)
        if self.strategy.nodes == "round-robin":
            self.turn[s] = i + 1
        self._changed(pod + 1)
        return i, devices

    def remove(self, i: int, pod: int) -> None:
        """Take pod number ``pod`` off node ``i``."""
        self.placer.remove(i, pod)
        self._changed(pod)

    def retire(self, s: int) -> None:
        """No more pods of shape ``s`` will be asked about (its lists are not kept)."""
        self.retired[s] = True

    def gone(self, s: int) -> int:
        """How many nodes shape ``s`` does not fit on now (all, once retired)."""
        n = len(self.placer.nodes)
        return n if self.retired[s] else n - len(self.live[s])

    # ------------------------------------------------------------------ choosing

    def _ask(self, i: int, s: int, pod: int) -> Answer:
        return self.placer.ask(i, s, pod, self.strategy.devices)

    def _first(self, s: int, pod: int) -> tuple[int, Answer] | None:
        """first-fit and round-robin: the first live node (from the shape's turn)."""
        live = self.live[s]
        k = bisect_left(live, self.turn[s]) if self.strategy.nodes == "round-robin" else 0
        while live:
            if k >= len(live):
                k = 0
            i = live[k]
            answer = self._ask(i, s, pod)
            if answer.fits:
                return i, answer
            self._failed(i, s, pod, answer)
            del live[k]
            self.out[s][i] = 1
        return None

    def _best(self, s: int, pod: int) -> tuple[int, Answer] | None:
        """Scored orders: the live node with the best score (the first on ties)."""
        heap = self.heaps[s]
        if heap is None:
            heap = self.heaps[s] = []
            for i in range(len(self.placer.nodes)):
                self._push(i, s, pod)
        version = self.placer.version
        while heap:
            _, i, v = heap[0]
            if v != version[i] or self.out[s][i]:
                heapq.heappop(heap)
                continue
            return i, self._ask(i, s, pod)
        return None

    def _push(self, i: int, s: int, pod: int) -> None:
        """Ask node ``i`` for shape ``s`` and queue it by score (or rule it out)."""
        heap = self.heaps[s]
        assert heap is not None
        answer = self._ask(i, s, pod)
        if not answer.fits:
            self._failed(i, s, pod, answer)
            if not self.out[s][i]:
                self.out[s][i] = 1
                self.live[s].remove(i)
            return
        if self.out[s][i]:
            self.out[s][i] = 0
            insort(self.live[s], i)
        score = node_score(self.strategy.nodes, self.placer.class_counts(i), answer.per_class)
        heapq.heappush(heap, (-score, i, self.placer.version[i]))

    def _changed(self, pod: int) -> None:
        """The nodes the last change touched: every shape may fit there again."""
        for i in self.placer.changed:
            for s in range(len(self.live)):
                if self.retired[s]:
                    continue
                if self.heaps[s] is not None:
                    self._push(i, s, pod)
                elif self.out[s][i]:
                    self.out[s][i] = 0
                    insort(self.live[s], i)

    def _failed(self, i: int, s: int, pod: int, answer: Answer) -> None:
        if self.on_failure is not None:
            self.on_failure(i, s, pod, answer)
