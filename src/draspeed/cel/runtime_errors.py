"""Upstream's texts for a selector evaluation that fails."""

from __future__ import annotations

from draspeed.cel.values import CostLimitExceeded, GoPanic
from draspeed.errors import CELRuntimeError

NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)


def runtime_error(exc: Exception, *, hint: bool = True) -> CELRuntimeError:
    """Upstream's text for an evaluation failure (with ``hint``, the DRA allocator's
    EnhanceRuntimeError hint for missing keys)."""
    if isinstance(exc, CELRuntimeError):
        message = str(exc)
        if hint and "no such key:" in message and not message.endswith(NO_SUCH_KEY_HINT):
            return CELRuntimeError(message + NO_SUCH_KEY_HINT)
        return exc
    if isinstance(exc, GoPanic):  # recovered by cel-go, whatever was being evaluated
        return CELRuntimeError(f"internal error: {exc}")
    if isinstance(exc, (CostLimitExceeded, RecursionError)):
        return CELRuntimeError("operation cancelled: actual cost limit exceeded")
    if isinstance(
        exc, (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError)
    ):
        # A value combination no overload accepts, surfaced by Python instead of a check.
        return CELRuntimeError(f"no such overload: {exc}")
    raise exc
