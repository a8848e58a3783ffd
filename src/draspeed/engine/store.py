"""What a snapshot family reads once per slice or device and shares between versions:
the slice table, the CEL tables of the devices, and each selector's verdicts.

Device g is the same device in every version of a family (versions see a prefix of
the store, see :mod:`draspeed.engine.slice_table`), so a selector's verdict on it is
computed once for the family. ``lock`` guards appends, CEL tables and verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from draspeed.api.model import ResourceSlice
from draspeed.cel import check_deadline, compile_selector
from draspeed.cel.row_messages import DeviceMessages
from draspeed.cel.vector import plan_for
from draspeed.engine.slice_table import SliceTable
from draspeed.errors import CELCompileError
from draspeed.features import Features

if TYPE_CHECKING:
    from draspeed.cel import DeviceTable, Selector

# Selector verdicts per device, as kept in SelectorResults.
UNKNOWN, FALSE, TRUE, ERROR = 255, 0, 1, 2


class SelectorResults:
    """One CEL expression's verdict per device, filled lazily; shared by the versions of
    a snapshot family (device g is the same device in all of them)."""

    __slots__ = ("compile_error", "messages", "selector", "verdict")

    def __init__(self, n_devices: int, selector: Selector | None, compile_error: str | None):
        self.selector = selector
        self.compile_error = compile_error
        self.verdict = np.full(n_devices, UNKNOWN, dtype=np.uint8)
        self.messages = DeviceMessages(n_devices)

    def cover(self, n_devices: int) -> None:
        """Make room for the verdicts of ``n_devices`` devices (new ones unknown); the
        room doubles, so devices appended one pool at a time cost O(1) each. Under the
        store's lock; a reader holding the old array still finds what it had."""
        if len(self.verdict) < n_devices:
            bigger = np.full(max(n_devices, 2 * len(self.verdict)), UNKNOWN, dtype=np.uint8)
            bigger[: len(self.verdict)] = self.verdict
            self.verdict = bigger
            self.messages.cover(len(bigger))


class SliceStore:
    """Every slice the versions of one snapshot family have seen, append-only, with
    the CEL tables of its device chunks (one chunk per append) and selector verdicts."""

    def __init__(self, slices: Sequence[ResourceSlice], features: Features) -> None:
        self.features = features
        self.table = SliceTable(slices)
        self.lock = self.table.lock
        # The attributes (domain, ident) that the selectors made so far read from the
        # chunk tables' attribute columns (see DeviceTable.expect_attributes).
        self.expected_attributes: set[tuple[str, str]] = set()
        n = self.table.n_devices
        # [start, end) of devices -> their CEL table (built on first use).
        self.chunks: list[tuple[int, int, DeviceTable | None]] = [(0, n, None)] if n else []
        self.selectors: dict[str, SelectorResults] = {}

    def append(self, slices: Sequence[ResourceSlice]) -> tuple[int, int, int, int]:
        """Append ``slices``; (index of the first of them, then the numbers of slices,
        chunks and devices after the append), read together under the lock."""
        with self.lock:
            before = self.table.n_devices
            start, n_slices, n_devices = self.table.append(slices)
            if n_devices > before:
                self.chunks.append((before, n_devices, None))
            return start, n_slices, len(self.chunks), n_devices

    # ---- selectors -----------------------------------------------------------------

    def selector_results(self, expression: str, deadline: float | None = None) -> SelectorResults:
        """The (lazily filled) verdicts of one expression; compiles it once (a deadline
        that passes first raises AllocationTimeout and caches nothing)."""
        with self.lock:
            found = self.selectors.get(expression)
            if found is None:
                try:
                    selector = compile_selector(expression, deadline)
                    found = SelectorResults(self.table.n_devices, selector, None)
                    self.expected_attributes |= plan_for(selector).attributes
                except CELCompileError as exc:
                    found = SelectorResults(self.table.n_devices, None, str(exc))
                self.selectors[expression] = found
            else:  # made for fewer devices: a later version appended some
                found.cover(self.table.n_devices)
            return found

    def evaluate(
        self,
        results: SelectorResults,
        devices: np.ndarray,
        n_chunks: int,
        deadline: float | None = None,
        *,
        lazy: bool = False,
    ) -> np.ndarray:
        """Verdicts of ``results``' expression for ``devices`` (global indices) of a
        version that sees the first ``n_chunks`` chunks.

        Each chunk of the device table is evaluated at once the first time any of its
        devices is asked about (numpy over columns; rows it cannot lower are evaluated
        one by one, memoised on what they read); later asks only index the answer.
        ``lazy`` (a search's ask): once a device reaches the CEL cost limit, devices not
        evaluated yet stay UNKNOWN, for :meth:`Snapshot.evaluate_device` if the search
        gets there.
        """
        if results.selector is None:
            return np.full(len(devices), ERROR, dtype=np.uint8)
        unknown = results.verdict[devices] == UNKNOWN
        if unknown.any():
            with self.lock:
                results.cover(self.table.n_devices)
                wanted = np.zeros(self.table.n_devices, dtype=bool)
                # (Asked again under the lock: another thread may have evaluated some.)
                unknown = results.verdict[devices] == UNKNOWN
                wanted[devices[unknown] if not unknown.all() else devices] = True
                for k in range(n_chunks):
                    start, end, _ = self.chunks[k]
                    if start == end or not wanted[start:end].any():
                        continue
                    check_deadline(deadline)  # building a chunk's table is not interrupted
                    table = self._chunk_table(k)
                    # (The attributes every selector made so far reads: its first
                    # pass over them files those, whichever selector asks first.)
                    table.expect_attributes(self.expected_attributes)
                    rows = wanted[start:end] if lazy else None
                    if rows is not None:
                        match, error, messages, pending = results.selector.evaluate_lazily(
                            table, rows, deadline
                        )
                    else:
                        match, error, messages = results.selector.evaluate(table, deadline)
                        pending = np.zeros(end - start, dtype=bool)
                    verdict = match.astype(np.uint8)  # (TRUE is 1, FALSE 0: no np.where)
                    verdict[error] = ERROR
                    done = ~pending if rows is None else rows & ~pending
                    results.messages.update(start, messages)
                    np.copyto(results.verdict[start:end], verdict, where=done)
                    if pending.any():
                        break  # a device reached the cost limit: the rest waits for the search
        return results.verdict[devices]

    def _chunk_table(self, k: int) -> DeviceTable:
        """The columnar table of chunk k's devices, built once (under the lock)."""
        start, end, table = self.chunks[k]
        if table is None:
            from draspeed.cel import DeviceTable

            drivers, devices = self.table.device_lists(start)  # (a chunk is one append)
            table = DeviceTable.of_devices(
                drivers,
                devices,
                list_type_attributes=self.features.list_type_attributes,
                # The experimental allocator hands CEL the device's real value
                # whatever the DRAConsumableCapacity gate says.
                consumable_capacity=True,
            )
            self.chunks[k] = (start, end, table)
        return table
