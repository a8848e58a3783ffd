"""Malformed selectors: rejected where upstream rejects them.

The corpus (tests/data/cel/syntax_errors.yaml) holds upstream's full texts, ANTLR's
expected-token lists included. draspeed's parser reports its first error at the same
position for all but the cases in ``POSITION_DIFFERS``; the full texts are not matched
yet (ANTLR's error recovery is not reproduced).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from draspeed.cel import compile_selector
from draspeed.errors import CELCompileError

CASES = yaml.safe_load((Path(__file__).parent / "data/cel/syntax_errors.yaml").read_text())["cases"]

# ANTLR's lexer takes ".1" (a float) and "in" (a keyword) where draspeed's grammar does not.
POSITION_DIFFERS = {"device.1", "1.2.3", "in 1"}


def _first_location(text: str) -> str:
    found = re.search(r"<input>:\d+:\d+", text)
    assert found, text
    return found.group()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["expr"])
def test_rejected_at_upstreams_position(case: dict[str, str]) -> None:
    with pytest.raises(CELCompileError) as raised:
        compile_selector(case["expr"])
    got = str(raised.value)
    assert got.startswith("compilation failed: ERROR: <input>:")
    if case["expr"] not in POSITION_DIFFERS:
        assert _first_location(got) == _first_location(case["error"])
