"""Every error draspeed raises on purpose derives from :class:`DraspeedError`."""

from __future__ import annotations


class DraspeedError(Exception):
    """Base class of draspeed's own errors."""


def printable(text: str) -> str:
    """``text`` with each character that is not printable (controls, line and
    paragraph separators ...) written as an escape: a name or key taken from the input
    is shown in a message, and a terminal must not act on it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return (
        f"\\x{code:02x}"
        if code < 0x80
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


class InputError(DraspeedError, ValueError):
    """Bad input: names the object (``Kind namespace/name``) and the field path (each
    shown with its unprintable characters escaped)."""

    def __init__(self, obj: str, path: str, message: str) -> None:
        self.obj = obj
        self.path = path
        self.message = message
        where = f"{printable(obj)}: {printable(path)}" if path else printable(obj)
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, str]]:
        # (Pickled as its three parts: a worker process's error reaches the caller whole.)
        return (type(self), (self.obj, self.path, self.message))


class SolverTimeLimit(DraspeedError, RuntimeError):
    """An analysis's solver reached its time limit before it found any answer."""


class QuantityError(DraspeedError, ValueError):
    """A string is not a Kubernetes resource.Quantity (upstream's ErrFormatWrong etc.)."""


class SemverError(DraspeedError, ValueError):
    """A string is not a strict semantic version."""


class CELError(DraspeedError):
    """Base of CEL compile and runtime errors; ``str()`` is upstream's inner text."""


class CELCompileError(CELError):
    """The expression does not compile (syntax, undeclared reference, result type, length)."""


class CELRuntimeError(CELError):
    """Evaluation failed for one device (no such key, overflow, cost limit, ...)."""


class AllocationError(DraspeedError):
    """A fatal allocation error; ``str()`` is upstream's message text."""


class NodeAllocationError(AllocationError):
    """Upstream's ErrFailedAllocationOnNode: this node is unsuitable, with a reason."""


class AllocationTimeout(AllocationError):
    """The deadline passed before the allocation ended; ``str()`` is upstream's text."""

    # What upstream's allocator returns when the scheduler's Filter context times out.
    TEXT = "filter operation aborted: context deadline exceeded"

    def __init__(self, message: str = TEXT) -> None:
        super().__init__(message)
