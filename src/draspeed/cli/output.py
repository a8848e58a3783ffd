"""``-o/--output`` as kubectl takes it: ``yaml``, ``json``, ``name``, ``wide``, the
command's table, and ``jsonpath=TEMPLATE`` / ``jsonpath-file=FILE``.

A command says which formats it has; :func:`emit` prints a document in the
document formats (``yaml``, ``json``, ``jsonpath``) and :class:`Output` tells the
command when to print its table (``table`` or ``wide``) or names instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from draspeed.cli.jsonpath import JSONPathError, execute, parse
from draspeed.cli.render import dump_document, is_terminal, write_text

DOCUMENT_FORMATS = ("yaml", "json")


@dataclass(frozen=True)
class Output:
    """A parsed ``-o`` value: ``format`` is yaml, json, name, wide, table or jsonpath."""

    format: str
    template: str = ""

    @property
    def is_document(self) -> bool:
        return self.format in (*DOCUMENT_FORMATS, "jsonpath")

    @property
    def is_table(self) -> bool:
        return self.format in ("table", "wide")


def output_type(formats: Sequence[str]) -> Any:
    """An argparse ``type`` for ``-o`` accepting ``formats`` and ``jsonpath=...``."""

    def parse_output(text: str) -> Output:
        name, sep, value = text.partition("=")
        if name in ("jsonpath", "jsonpath-file") and sep:
            template = value
            if name == "jsonpath-file":
                try:
                    with open(value, encoding="utf-8") as f:
                        template = f.read()
                except OSError as exc:
                    raise argparse.ArgumentTypeError(f"{value}: {exc.strerror}") from None
            try:
                parse(template)
            except JSONPathError as exc:
                raise argparse.ArgumentTypeError(
                    f"error parsing jsonpath {template}, {exc}"
                ) from None
            return Output("jsonpath", template)
        if text in formats:
            return Output(text)
        allowed = ", ".join([*formats, "jsonpath=...", "jsonpath-file=..."])
        raise argparse.ArgumentTypeError(
            f"unable to match a printer suitable for the output format {text!r}, "
            f"the allowed formats are: {allowed}"
        )

    parse_output.__name__ = "output format"
    return parse_output


def add_output(p: Any, formats: Sequence[str], default: str, help: str = "") -> None:
    """``-o/--output`` with ``formats`` (and ``jsonpath=``), ``default`` if not given."""
    p.add_argument(
        "-o",
        "--output",
        type=output_type(formats),
        default=Output(default),
        metavar="FORMAT",
        help=help or f"output format: {'|'.join(formats)}|jsonpath=TEMPLATE (default {default})",
    )


def emit(doc: Any, output: Output, out: TextIO) -> None:
    """``doc`` as ``-o yaml``, ``-o json`` or ``-o jsonpath=...``."""
    if output.format == "jsonpath":
        try:
            text = execute(output.template, doc)
        except JSONPathError as exc:
            raise JSONPathError(f"error executing jsonpath {output.template!r}: {exc}") from None
        write_text(out, text)
        return
    dump_document(doc, output.format, out)


def emit_names(names: Iterable[str], out: TextIO) -> None:
    """``-o name``: one ``kind/name`` per line, as kubectl prints them."""
    for name in names:
        out.write(f"{name}\n")


def table_width(out: TextIO, output: Output) -> int | None:
    """How wide a table may be: the terminal's width (or ``COLUMNS``) for ``table``,
    unlimited for ``wide`` or when writing to a pipe without ``COLUMNS``."""
    if output.format == "wide":
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if is_terminal(out):
        return shutil.get_terminal_size().columns
    return None
