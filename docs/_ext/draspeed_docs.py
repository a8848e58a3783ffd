"""What the documentation takes from the package and the benchmarks at build time.

- ``.. cli-reference::`` -- one section per command of ``draspeed.cli.build_parser()``:
  its description and its ``--help``, as the installed ``draspeed`` prints them, so the
  reference cannot drift from the parser.
- ``.. performance-table::`` -- the side-by-side table of ``docs/performance.json``,
  which ``docs/performance.py`` writes from a pytest-benchmark JSON file.
- Before any page is read, ``examples/capacity_report.py`` draws the capacity-planning
  figure into ``docs/_generated/`` (the page shows what the example produces).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

DOCS = Path(__file__).resolve().parents[1]
GENERATED = DOCS / "_generated"
HELP_WIDTH = "88"


@contextlib.contextmanager
def _plain_help() -> Iterator[None]:
    """argparse wraps help to COLUMNS and colours it on request: neither in the docs."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")}
    os.environ.update(COLUMNS=HELP_WIDTH, NO_COLOR="1")
    os.environ.pop("FORCE_COLOR", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public way to list subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class CliReference(SphinxDirective):
    """Sections for ``draspeed`` and each of its commands, from the parser itself."""

    def run(self) -> list[nodes.Node]:
        from draspeed.cli import build_parser

        with _plain_help():
            parser = build_parser()
            commands = [("draspeed", parser)] + [
                (f"draspeed {name}", sub) for name, sub in _subcommands(parser).items()
            ]
            sections = []
            for title, command in commands:
                section = nodes.section(ids=[nodes.make_id(title)], names=[title])
                section += nodes.title(text=title)
                if command.description:
                    section += nodes.paragraph(text=command.description.split("\n\n")[0])
                text = command.format_help()
                section += nodes.literal_block(text, text, language="text")
                sections.append(section)
        return sections


def _cell(value: Any) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


class PerformanceTable(SphinxDirective):
    """The table of ``performance.json`` (path relative to the docs folder)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        path = DOCS / self.arguments[0]
        self.env.note_dependency(str(path))
        data = json.loads(path.read_text(encoding="utf-8"))
        columns = data["columns"]
        table = nodes.table()
        group = nodes.tgroup(cols=len(columns))
        table += group
        for _ in columns:
            group += nodes.colspec(colwidth=1)
        head = nodes.thead()
        group += head
        head += self._row([c["title"] for c in columns])
        body = nodes.tbody()
        group += body
        for row in data["rows"]:
            body += self._row([_cell(row.get(c["key"])) for c in columns])
        caption = nodes.paragraph(
            text=f"{data['title']} ({data['date']}). {data['source']}",
        )
        return [caption, table]

    @staticmethod
    def _row(cells: list[str]) -> nodes.row:
        row = nodes.row()
        for text in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=text)
            row += entry
        return row


def draw_capacity_figure(app: Sphinx) -> None:
    """Run the capacity example with --plot, as a reader would, into _generated/."""
    GENERATED.mkdir(exist_ok=True)
    os.environ.setdefault("MPLBACKEND", "Agg")
    script = DOCS.parent / "examples" / "capacity_report.py"
    argv = sys.argv
    sys.argv = [str(script), "--nodes", "4", "--plot", str(GENERATED / "capacity.png")]
    try:
        with contextlib.redirect_stdout(None):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"{script.name} exited with {exc.code}") from exc
    finally:
        sys.argv = argv


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("cli-reference", CliReference)
    app.add_directive("performance-table", PerformanceTable)
    app.connect("builder-inited", draw_capacity_figure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
