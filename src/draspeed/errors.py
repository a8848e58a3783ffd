"""Every error draspeed raises on purpose derives from :class:`DraspeedError`."""

from __future__ import annotations


class DraspeedError(Exception):
    """Base class of draspeed's own errors."""


class InputError(DraspeedError, ValueError):
    """Bad input: names the object (``Kind namespace/name``) and the field path."""

    def __init__(self, obj: str, path: str, message: str) -> None:
        self.obj = obj
        self.path = path
        self.message = message
        where = f"{obj}: {path}" if path else obj
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
