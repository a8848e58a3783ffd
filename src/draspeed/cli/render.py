"""What the ``draspeed`` command prints: documents, tables, colours, a progress line.

Colours only when writing to a terminal, and never with ``NO_COLOR`` set
(https://no-color.org) or ``TERM=dumb``; the progress line only on a terminal's
stderr, and only for work that has already taken a second, so quick commands and
piped output stay clean.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

import msgspec
import yaml

from draspeed.api import json_as_go
from draspeed.api.json_as_go import NumberText

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


# What each status of a node or explanation is painted with in tables.
STATUS_COLOURS = {
    "fits": "green",
    "does-not-fit": "yellow",
    "error": "red",
    "node-error": "red",
    "timeout": "red",
}


class _NoAliasDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Documents share identical sub-dicts; YAML must spell each one out (an
    ``&id001`` anchor is valid YAML but not what kubectl users expect)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# A number read from JSON text with its text (opaque parameters): YAML writes its value.
_NoAliasDumper.add_representer(NumberText, yaml.representer.SafeRepresenter.represent_float)


def dump_document(doc: Any, output: str, out: TextIO) -> None:
    """``doc`` as ``-o json`` (two-space indent, UTF-8 as written) or ``-o yaml``."""
    if output == "json":
        write_text(out, msgspec.json.format(json_as_go.ENCODER.encode(doc), indent=2).decode())
        out.write("\n")
    else:
        yaml.dump(
            doc, out, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False, width=120
        )


# CPython's text streams (3.11 at least) write one string of more than 2 GiB only in
# part and report it all written (the kernel takes at most 2 GiB - 4 KiB per write):
# a generated cluster file was cut off without a word. Long texts go in pieces.
WRITE_CHUNK = 1 << 28


def write_text(out: TextIO, text: str, chunk: int = WRITE_CHUNK) -> None:
    """``out.write(text)``, in pieces of at most ``chunk`` characters."""
    for start in range(0, len(text), chunk):
        out.write(text[start : start + chunk])


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


@dataclass(frozen=True, slots=True)
class Style:
    """Wraps text in ANSI colour codes when ``enabled``, else returns it unchanged."""

    enabled: bool = False

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        wanted = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        return cls(wanted and is_terminal(stream))

    def paint(self, text: str, colour: str | None) -> str:
        if not self.enabled or not colour or not text:
            return text
        return f"\x1b[{_CODES[colour]}m{text}\x1b[0m"


def format_table(
    rows: Sequence[Sequence[str]],
    style: Style = Style(),
    colour: Callable[[int, int, str], str | None] | None = None,
    gap: str = "   ",
    max_width: int | None = None,
) -> str:
    """Rows as aligned columns; the first row is the header (bold when coloured).

    ``colour(row, column, text)`` names a colour for a body cell (or None). Widths are
    measured on the plain text, so colour codes do not disturb the alignment. With
    ``max_width``, the widest columns are narrowed (their cells cut with ``…``) until
    the table fits, as far as 8 characters a column allow.
    """
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    if max_width is not None:
        widths = _fit(widths, max_width - len(gap) * (len(widths) - 1))
    lines = []
    for r, row in enumerate(rows):
        cells = []
        for c, (text, width) in enumerate(zip(row, widths, strict=True)):
            if len(text) > width:
                text = text[: width - 1] + "…"
            padded = text.ljust(width) if c < len(row) - 1 else text
            name = "bold" if r == 0 else (colour(r, c, text) if colour else None)
            cells.append(style.paint(padded, name) if text else padded)
        lines.append(gap.join(cells).rstrip())
    return "\n".join(lines) + "\n"


_MIN_COLUMN = 8


def _fit(widths: list[int], room: int) -> list[int]:
    """Column widths narrowed, widest (then rightmost) first, to fit ``room``."""
    widths = list(widths)
    excess = sum(widths) - room
    while excess > 0:
        widest = max(range(len(widths)), key=lambda i: (widths[i], i))
        # Narrow it down to the next widest column's width, or by what is left over.
        others = [w for i, w in enumerate(widths) if i != widest]
        floor = max([_MIN_COLUMN, *(w for w in others if w < widths[widest])])
        cut = min(excess, widths[widest] - floor)
        if cut <= 0:
            break
        widths[widest] -= cut
        excess -= cut
    return widths


class Progress:
    """A one-line progress indicator on a terminal, for work that takes a while.

    Nothing is drawn until ``delay`` seconds have passed, nor ever unless ``stream``
    is a terminal (or ``enabled`` says so). A background thread redraws ten times a
    second, so :meth:`advance` costs only an addition::

        with Progress("feasibility", total=len(nodes)) as bar:
            for chunk in chunks:
                ...
                bar.advance(len(chunk))

    Without ``total`` the line shows the label and the time taken so far.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        delay: float = 1.0,
        enabled: bool | None = None,
        width: int = 30,
    ) -> None:
        import sys

        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self.width = width
        self._start = 0.0
        self._drawn = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="draspeed-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def advance(self, n: int = 1) -> None:
        self.done += n

    def line(self) -> str:
        """The text drawn now (also what tests look at)."""
        elapsed = time.monotonic() - self._start
        if self.total is None:
            return f"{self.label} … {elapsed:.1f}s"
        total = max(self.total, 1)
        filled = min(self.width, self.width * self.done // total)
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {self.done}/{self.total} {elapsed:.1f}s"

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            if time.monotonic() - self._start < self.delay:
                continue
            try:
                self.stream.write("\r" + self.line() + "\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):  # the terminal went away: stop drawing quietly
                return
            self._drawn = True
