"""The CEL parser's precomputed tables (draspeed.cel.lalr) against lark itself.

The tables are lark's LALR analysis of draspeed.cel.grammar, stored so that the first
compilation in a process costs ~1 ms instead of ~0.5 s; the small driver replays lark's
contextual lexer and tree shaping. Here both parse the selector corpus and thousands of
mutations of it: same trees (rule names, token types, texts, offsets), same errors.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import lark
import pytest
import yaml

from draspeed.cel import lalr
from draspeed.cel.grammar import GRAMMAR

CORPUS = Path(__file__).parent / "data" / "cel" / "corpus.yaml"
PIECES = [
    *"()[]{}.,?:!-+*/%<>=&|\"'`\\ \n0123456789abcxyzuUeE_",
    *("in", "true", "null", "r'", 'b"', "0x", "1.5", "//c\n", "&&", "||", "==", ".?", "[?"),
    *("'''", '"""'),
]


def _expressions() -> list[str]:
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("expression", "expr") and isinstance(item, str):
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(yaml.safe_load(CORPUS.read_text(encoding="utf-8")))
    return found


def _mutations(expressions: list[str], per_expression: int) -> list[str]:
    rng = random.Random(20261121)
    out = []
    for text in expressions:
        for _ in range(per_expression):
            chars = list(text)
            for _ in range(rng.randint(1, 3)):
                i = rng.randint(0, len(chars))
                roll = rng.random()
                if roll < 0.4 and chars:
                    del chars[min(i, len(chars) - 1)]
                elif roll < 0.8:
                    chars.insert(i, rng.choice(PIECES))
                else:
                    chars = chars[:i]
            out.append("".join(chars))
    return out


def _lark_outcome(parser: lark.Lark, text: str) -> Any:
    def shape(node: Any) -> Any:
        if isinstance(node, lark.Token):
            return (node.type, str(node), node.start_pos)
        if isinstance(node, lark.Tree):
            return (node.data, [shape(c) for c in node.children])
        return node

    try:
        return shape(parser.parse(text))
    except lark.exceptions.UnexpectedCharacters as exc:
        return ("character", exc.pos_in_stream)
    except lark.exceptions.UnexpectedToken as exc:
        tok = exc.token
        return ("token", tok.type, str(tok), None if tok.type == "$END" else tok.start_pos)


def _our_outcome(parser: lalr.Parser, text: str) -> Any:
    def shape(node: Any) -> Any:
        if isinstance(node, lalr.Token):
            return (node.type, str(node), node.start_pos)
        if isinstance(node, lalr.Tree):
            return (node.data, [shape(c) for c in node.children])
        return node

    try:
        return shape(parser.parse(text))
    except lalr.UnexpectedCharacter as exc:
        return ("character", exc.pos)
    except lalr.UnexpectedToken as exc:
        tok = exc.token
        return ("token", tok.type, str(tok), None if tok.type == "$END" else tok.start_pos)


def test_stored_tables_match_the_grammar() -> None:
    """Edit the grammar, then run ``python -m draspeed.cel.lalr``."""
    from draspeed.cel._lalr_tables import TABLES

    assert f'"grammar_sha256":"{lalr.grammar_digest()}"' in TABLES


def test_same_trees_and_errors_as_lark() -> None:
    reference = lark.Lark(
        GRAMMAR, parser="lalr", lexer="contextual", keep_all_tokens=True, start="start"
    )
    ours = lalr.parser()
    expressions = _expressions()
    assert len(expressions) >= 250
    cases = [*expressions, *_mutations(expressions, 6), "", " ", "//", "a.", "1 2", "§"]
    outcomes = [(text, _lark_outcome(reference, text), _our_outcome(ours, text)) for text in cases]
    differ = [(text, theirs, mine) for text, theirs, mine in outcomes if theirs != mine]
    assert differ == []
    kinds = {mine[0] if mine[0] in ("character", "token") else "tree" for _, _, mine in outcomes}
    assert kinds == {"character", "token", "tree"}


def test_runtime_does_not_import_lark() -> None:
    code = (
        "import sys; from draspeed.cel import compile_selector\n"
        "compile_selector('device.driver == \"x\"')\n"
        "print('lark' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert run.stdout.strip() == "False"


def test_stale_tables_are_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables from another grammar are not used: lark builds them again (slowly)."""
    monkeypatch.setattr(lalr, "_parser", None)
    monkeypatch.setattr(lalr, "grammar_digest", lambda: "another grammar")
    rebuilt = lalr.parser()
    assert rebuilt is not None
    assert _our_outcome(rebuilt, "a.b(1) in [2]")[0] == "start"
