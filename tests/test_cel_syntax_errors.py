"""Malformed selectors: rejected with upstream's text.

The corpus (tests/data/cel/syntax_errors.yaml) holds upstream's full texts: ANTLR's
messages with their expected-token lists, every error of an expression, in order
(:mod:`draspeed.cel.syntax_errors` reads an expression as cel-go's generated parser
does). Each must be upstream's, byte for byte.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from draspeed.cel import compile_selector
from draspeed.cel.syntax_errors import syntax_errors
from draspeed.errors import CELCompileError

DATA = yaml.safe_load((Path(__file__).parent / "data/cel/syntax_errors.yaml").read_text())
CASES = DATA["cases"]
RECOVERED = DATA["recovered_tree"]


def _errors(text: str) -> list[str]:
    """The ERROR blocks of a compile error's text."""
    return re.split(r"\n(?=ERROR: )", text.removeprefix("compilation failed: "))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["expr"])
def test_rejected_with_upstreams_text(case: dict[str, str]) -> None:
    with pytest.raises(CELCompileError) as raised:
        compile_selector(case["expr"])
    assert str(raised.value) == case["error"]


@pytest.mark.parametrize("case", RECOVERED, ids=lambda c: c["expr"])
def test_errors_on_a_recovered_tree(case: dict[str, str]) -> None:
    """Where cel-go's visitor adds errors to a tree ANTLR recovered (macros, reserved
    words, literals out of range, nesting too deep), draspeed gives the same errors."""
    with pytest.raises(CELCompileError) as raised:
        compile_selector(case["expr"])
    assert str(raised.value) == case["error"]


def test_valid_expressions_have_no_syntax_errors() -> None:
    """The reading of cel-go's parser accepts what draspeed's grammar accepts."""
    costs = yaml.safe_load((Path(__file__).parent / "data/cel/costs.yaml").read_text())
    for case in costs["cases"]:
        assert syntax_errors(case["expr"]) == [], case["expr"]


def test_taken_token_sequences_change_no_answer() -> None:
    """A text whose tokens were taken before is not read again by the rules: every
    malformed case gives the same errors with the sequences of every valid selector
    remembered as without, and a text the lexer refuses is still refused when the
    tokens it leaves form a sequence taken before."""
    from draspeed.cel import syntax_errors as module

    costs = yaml.safe_load((Path(__file__).parent / "data/cel/costs.yaml").read_text())
    texts = [c["expr"] for c in CASES + RECOVERED]
    module._ACCEPTED.clear()
    fresh = [syntax_errors(text) for text in texts]
    for case in costs["cases"]:
        assert syntax_errors(case["expr"]) == []
    assert syntax_errors('x == "a"') == []
    remembered = len(module._ACCEPTED)
    assert remembered > 100
    assert [syntax_errors(text) for text in texts] == fresh
    # '#' is no token: the lexer reports it and skips it, leaving the tokens of the
    # text taken just before.
    unknown_character = syntax_errors('x == "a"#')
    assert unknown_character == [(8, "Syntax error: token recognition error at: '#'")]
    module._ACCEPTED.clear()
    assert syntax_errors('x == "a"#') == unknown_character
