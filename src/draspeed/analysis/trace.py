"""Pod traces: when pods of which shape arrive, and when they leave.

A trace is CSV (with a header) or JSON lines, one pod per row:

- ``arrival`` (seconds, a number >= 0): when the pod is created;
- ``shape``: the name of a pod shape (a ResourceClaimTemplate's name);
- ``duration`` (seconds >= 0): how long the pod runs once placed, or
  ``departure`` (seconds): when the pod is deleted, placed or not; neither (or an
  empty value): it never leaves;
- ``name`` (optional): the pod's name in reports (default ``pod-<row>``).

Rows need not be sorted. Bad input is one error naming the file, row and field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draspeed import arguments
from draspeed.errors import InputError


@dataclass(frozen=True, slots=True)
class TracePod:
    """One pod of a trace."""

    name: str
    arrival: float
    shape: str
    duration: float | None = None  # run time once placed
    departure: float | None = None  # deleted at this time, placed or not


def read_trace(path: str | Path, shapes: Iterable[str] | None = None) -> list[TracePod]:
    """The pods of a trace file (``.csv``; anything else is read as JSON lines),
    sorted by arrival (ties in file order). ``shapes``: the shape names allowed."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a file path, got {arguments.type_name(path)}")
    text = Path(path).read_text(encoding="utf-8")
    return parse_trace(text, str(path), shapes, csv_format=str(path).endswith(".csv"))


def parse_trace(
    text: str,
    source: str = "<trace>",
    shapes: Iterable[str] | None = None,
    *,
    csv_format: bool = False,
) -> list[TracePod]:
    """The pods of a trace given as text (see :func:`read_trace`)."""
    arguments.text(text, "text", "a trace's text")
    arguments.text(source, "source")
    arguments.flag(csv_format, "csv_format")
    known = None if shapes is None else set(arguments.names(shapes, "shapes"))
    rows: list[tuple[int, Mapping[str, Any]]] = []
    if csv_format:
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None or not {"arrival", "shape"} <= set(reader.fieldnames):
            raise InputError(source, "header", "a CSV trace needs the columns arrival and shape")
        rows = [(n, row) for n, row in enumerate(reader, start=2)]
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(source, f"line {n}", f"not JSON: {exc.msg}") from None
            if not isinstance(item, dict):
                raise InputError(source, f"line {n}", "expected a JSON object")
            rows.append((n, item))
    pods = [_pod(source, n, row, known, csv_format) for n, row in rows]
    return sorted(pods, key=lambda p: p.arrival)  # stable: ties keep file order


def _pod(
    source: str, n: int, row: Mapping[str, Any], known: set[str] | None, csv_format: bool
) -> TracePod:
    where = f"row {n}" if csv_format else f"line {n}"
    shape = row.get("shape")
    if not isinstance(shape, str) or not shape:
        raise InputError(source, f"{where}.shape", "a shape name is required")
    if known is not None and shape not in known:
        raise InputError(
            source, f"{where}.shape", f"unknown shape {shape!r} (known: {', '.join(sorted(known))})"
        )
    arrival = _number(source, where, "arrival", row.get("arrival"), required=True)
    duration = _number(source, where, "duration", row.get("duration"))
    departure = _number(source, where, "departure", row.get("departure"))
    assert arrival is not None
    if duration is not None and departure is not None:
        raise InputError(source, where, "give duration or departure, not both")
    if departure is not None and departure < arrival:
        raise InputError(source, f"{where}.departure", "before the arrival")
    name = row.get("name") or f"pod-{n}"
    return TracePod(str(name), arrival, shape, duration, departure)


def _number(
    source: str, where: str, field: str, value: Any, *, required: bool = False
) -> float | None:
    if value is None or value == "":
        if required:
            raise InputError(source, f"{where}.{field}", "a number is required")
        return None
    if isinstance(value, bool):
        raise InputError(source, f"{where}.{field}", f"not a number: {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(source, f"{where}.{field}", f"not a number: {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(source, f"{where}.{field}", f"must be a finite number >= 0, got {value!r}")
    return number
