"""Error message bodies, phrased like the Kubernetes API server's field errors.

Each function returns the part after ``<object>: <field path>: `` so that a user who
knows ``kubectl apply`` errors recognises them (``Required value``, ``Too many: ...``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from draspeed.golang import go_json, go_quote


def show(value: Any) -> str:
    """A value as the API server prints it in errors: strings as Go's ``%q`` quotes
    them, numbers bare, anything else as compact JSON (Go's ``json.Marshal``)."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple, dict)):
        return go_json(value)
    return str(value)


def required(detail: str = "") -> str:
    return f"Required value: {detail}" if detail else "Required value"


def invalid(value: Any, detail: str) -> str:
    return f"Invalid value: {show(value)}: {detail}"


def too_long(limit: int) -> str:
    return f"Too long: may not be more than {limit} bytes"


def too_many(count: int, limit: int) -> str:
    return f"Too many: {count}: must have at most {limit} items"


def duplicate(value: Any) -> str:
    return f"Duplicate value: {show(value)}"


def not_found(value: Any) -> str:
    return f"Not found: {show(value)}"


def not_supported(value: Any, supported: Iterable[str]) -> str:
    choices = ", ".join(show(s) for s in supported)
    return f"Unsupported value: {show(value)}: supported values: {choices}"


def forbidden(detail: str) -> str:
    return f"Forbidden: {detail}"


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for "expected X, got Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def wrong_type(expected: str, value: Any) -> str:
    return f"expected {expected}, got {json_type(value)}"
