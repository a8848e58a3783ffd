"""Building many long-lived objects at once, without the cyclic garbage collector.

Decoding a cluster, reading its slices into arrays and applying its committed claims
create hundreds of thousands of objects that all stay alive and form no cycles. Each
full collection the allocations trigger walks the whole heap for nothing, and there
are more of them the bigger the heap: on a 200,000-device cluster file they were
three fifths of ``draspeed allocate``'s time. :func:`collector_paused` switches the
collector off for the duration and back on after, if it was on. (What ``load`` decodes
is moreover taken out of the collector's sight for good:
``draspeed.api._model_tree.untrack``.)

Capacity fills and trace replays (:func:`without_collector`) run paused too: they make
and drop many objects (snapshot versions, answers) that reference counting frees, with
few cycles among them (368 objects over a 14,000-pod fill of 1,000 dynamic-MIG
nodes), while each full collection would walk the whole cluster's objects again (about
a fifth of that fill's time: 3.0 s with the collector on, 2.4 s off).

The switch is process-wide; a count kept under a lock makes nested and concurrent
pauses (threads building snapshots side by side) switch it back on only when the last
one ends, and never switch on a collector the program had switched off itself.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_lock = threading.Lock()
_pauses = 0
_restore = False  # the collector was on when the first pause began

P = ParamSpec("P")
R = TypeVar("R")


class _Paused:
    """The context manager of :func:`collector_paused` (a class: the generator-based
    form cost a few microseconds per use, on paths that answer in tens)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _pauses, _restore
        with _lock:
            if _pauses == 0:
                _restore = gc.isenabled()
                gc.disable()
            _pauses += 1

    def __exit__(self, *exc: object) -> None:
        global _pauses
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _restore:
                gc.enable()


_PAUSED = _Paused()


def collector_paused() -> _Paused:
    """The cyclic garbage collector off inside the block (see the module docstring)."""
    return _PAUSED


def without_collector(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside :func:`collector_paused`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return fn(*args, **kwargs)

    return wrapper
