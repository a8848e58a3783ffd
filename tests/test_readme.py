"""The project's promises: README's Quick start is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _commands(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_ci_runs_readme_test_command() -> None:
    readme, ci = ROOT / "README.md", ROOT / ".ci" / "run"
    if not readme.exists() or not ci.exists():
        pytest.skip("not run from a source checkout")
    quick_start = readme.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = _commands(quick_start)
    assert len(commands) == 2, "Quick start has exactly two commands"
    assert "draspeed demo" in commands[0]
    assert commands[1] in ci.read_text().splitlines(), ".ci/run must run README's test command"
