"""Documents read straight from libyaml's events (``draspeed.api._libyaml``) are what
the general reading builds, and everything the direct reading does not take goes the
general way.

Every YAML file of the test corpora, texts of each kind the direct reading refuses,
and seeded random texts (every scalar style, YAML 1.1 booleans and numbers, flow and
block collections, several documents, depth limits, random edits that break the text)
are read both ways; a text the direct reading takes must give the general reading's
documents, to the type of every scalar.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from draspeed.api import _libyaml
from draspeed.api import text as text_module
from draspeed.api.text import Limits, parse_text

TESTS = Path(__file__).parent
FILES = sorted(p for p in TESTS.rglob("*.yaml") if p.stat().st_size < 2_000_000)


def _general(text: str | bytes, limits: Limits) -> tuple[Any, ...]:
    try:
        return ("docs", repr(list(text_module._general_documents(text, limits))))
    except Exception as exc:  # the general reading's error, for comparison
        return ("error", type(exc).__name__, str(exc))


def _direct(text: str | bytes, limits: Limits | None = None) -> list[Any] | None:
    return text_module._direct_documents(text, limits or Limits())


def _libyaml_found() -> bool:
    functions = text_module._libyaml_functions()
    return bool(yaml.__with_libyaml__ and functions and all(functions.values()))


def test_libyaml_is_used_where_its_functions_are_found() -> None:
    """PyYAML's compiled module carries libyaml (or links it): where its functions
    are found, they are used (PyYAML's wheels export them; a build that hides them
    reads every text the general way)."""
    assert _libyaml.usable() is _libyaml_found()


@pytest.mark.skipif(not _libyaml.usable(), reason="PyYAML without libyaml")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_corpus_files_read_alike(path: Path) -> None:
    data = path.read_bytes()
    direct = _direct(data)
    if direct is not None:
        assert _general(data, Limits()) == ("docs", repr(direct))
        assert repr(msgspec.json.decode(msgspec.json.encode(direct))) == repr(direct)


def test_the_corpus_is_mostly_read_directly() -> None:
    if not _libyaml.usable():
        pytest.skip("PyYAML without libyaml")
    taken = sum(_direct(p.read_bytes()) is not None for p in FILES)
    assert taken >= 0.9 * len(FILES)


# Texts the direct reading leaves to the general one, by what it does not take.
REFUSED = {
    "anchor-alias": "a: &x 1\nb: *x\n",
    "anchored-collection": "a: &x {b: 1}\n",
    "explicit-tag": "a: !!str 1\n",
    "non-specific-tag": "a: ! 1\n",
    "local-tag": "a: !thing {b: 1}\n",
    "merge-key": "a: {x: 1}\nb:\n  <<: {y: 2}\n",
    "merge-key-as-text": "a: <<\n",
    "int-key": "1: a\n",
    "bool-key": "on: a\n",
    "null-key": "~: a\n",
    "complex-key": "? [a, b]\n: c\n",
    "duplicate-key": "a: 1\na: 2\n",
    "nan": "a: .nan\n",
    "infinity": "a: -.inf\n",
    "version-directive": "%YAML 1.1\n---\na: 1\n",
    "tag-directive": "%TAG !e! tag:example.com,2000:\n---\na: 1\n",
    "syntax-error": "a: [1, 2\n",
    "tab-indent": "a:\n\tb: 1\n",
    "invalid-escape": 'a: "\\q"\n',
    "utf16": "a: 1\n".encode("utf-16"),
    "bom-in-decoded-text": "\ufeffa: 1\n",
    "lone-surrogate": "a: \ud800\n",
    "invalid-utf8": b"a: \xff\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_uncommon_texts_go_the_general_way(text: str | bytes) -> None:
    assert _direct(text) is None
    general = _general(text, Limits())
    try:
        docs, exact = text_module._yaml_documents(text, Limits())
        got: tuple[Any, ...] = ("docs", repr(docs))
        assert not exact
    except Exception as exc:
        got = ("error", type(exc).__name__, str(exc))
    assert got == general


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_depth_limit_is_the_general_readings(depth: int) -> None:
    """As deep as the limit allows is read directly; one level more is refused, and
    the general reading words the error."""
    limits = Limits(max_depth=depth)
    fits = "a:\n" + "".join("  " * k + f"b{k}:\n" for k in range(1, depth)) + "  " * depth + "c\n"
    assert _direct(fits, limits) is not None
    assert _general(fits, limits) == ("docs", repr(_direct(fits, limits)))
    deeper = "[" * (depth + 1) + "]" * (depth + 1)
    assert _direct(deeper, limits) is None
    with pytest.raises(text_module.TextError, match="nest more than"):
        parse_text(deeper, limits)


def test_empty_documents_are_skipped() -> None:
    assert _direct("---\n---\n~\n--- a\n...\n") == ["a"]
    assert _direct("") == []
    assert _direct("# only a comment\n") == []


def test_scalars_are_the_loaders() -> None:
    text = (
        "a: [yes, No, off, ~, null, '', 0x1F, 0o17, 017, 1_000, 1:30, 1.5, -.5, 1e3, +12, "
        "2024-01-01, 'true', \"1\"]\nb: |\n  x\n"
    )
    assert _general(text, Limits()) == ("docs", repr(_direct(text)))
    [doc] = _direct(text) or [None]
    assert doc["a"][:4] == [True, False, False, None]
    assert type(doc["a"][15]) is str  # timestamps stay text


def test_a_failing_probe_turns_the_direct_reading_off() -> None:
    functions = text_module._libyaml_functions()
    try:
        assert _libyaml.enable(functions, lambda: False) is False
        assert _direct("a: 1\n") is None
        assert parse_text("a: 1\n") == [{"a": 1}]
        assert _libyaml.enable({}, lambda: True) is False  # libyaml not found
        assert _direct("a: 1\n") is None
    finally:
        _libyaml.enable(functions, text_module._probe_direct)
    assert _libyaml.usable() is _libyaml_found()


# ---- random texts ------------------------------------------------------------------

_ATOMS = [
    "yes", "No", "ON", "off", "y", "n", "~", "null", "Null", "NULL", "", "true", "False",
    "TRUE", "0x1F", "0o17", "017", "0b101", "1_000", "1:30", "-1:30", "190:20:30", "1e3",
    "1.5e3", "-.inf", ".NaN", "+.5", "0.", "1.", "-0", "+0", "2024-01-01",
    "2001-12-14t21:59:43.10-05:00", "<<", "=", "x y", "a-b", "\u00e9", "\\", "0755", "08",
    "1__0", "_1", "0x_1", "9223372036854775808", "1e400", "0.0000001", "Yes", "abc",
    "device.driver == 'x' && y", "a && b", "1.0", "-1", "10Gi", "500m", "GPU-1234", "x:y",
    "http://a", "a,b", "[a]", "{a: b}", "- a", "#c", "!t", "&a", "*a", "'q'", '"d"', "%p",
    "@a", "`b", "|", "> x", "? k", "a\tb", " lead", "trail ", "multi\nline", "\u2028",
    "\x85", "\ufeff", "\U0001d11e",
]  # fmt: skip


def _scalar(r: random.Random, depth: int, key: bool = False) -> str:
    if r.random() < 0.8:
        atom = r.choice(_ATOMS)
    else:
        atom = "".join(r.choice("ab:-_ .#'\"0123x") for _ in range(r.randint(0, 5)))
    style = r.random()
    if style < 0.5:
        return atom
    if style < 0.7:
        return "'" + atom.replace("'", "''") + "'"
    if style < 0.9:
        escaped = atom.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        if r.random() < 0.2:
            escaped += r.choice(["\\t", "\\x41", "\\u00e9", "\\U0001F600", "\\0", "\\N", "\\_"])
        return '"' + escaped + '"'
    if key:
        return atom
    indent = "  " * (depth + 1)
    header = r.choice(["|", ">", "|-", ">+", "|2", ">-"])
    return header + "\n" + "\n".join(indent + line for line in atom.split("\n"))


def _node(r: random.Random, depth: int, flow: bool = False) -> str:
    k = r.random()
    if depth > 4 or k < 0.45:
        s = _scalar(r, depth)
        return "x" if flow and s.startswith(("|", ">")) else s
    if flow or r.random() < 0.25:
        if k < 0.7:
            return "[" + ", ".join(_node(r, depth + 1, True) for _ in range(r.randint(0, 3))) + "]"
        pairs = (f"{_scalar(r, depth, True)}: {_node(r, depth + 1, True)}" for _ in range(3))
        return "{" + ", ".join(list(pairs)[: r.randint(0, 3)]) + "}"
    indent = "  " * depth
    items = []
    if k < 0.7:
        for _ in range(r.randint(1, 3)):
            child = _node(r, depth + 1)
            block = "\n" in child and not child.startswith(("|", ">"))
            items.append(f"{indent}-\n{child}" if block else f"{indent}- {child}")
    else:
        for _ in range(r.randint(1, 4)):
            key, child = _scalar(r, depth, True), _node(r, depth + 1)
            sep = ":" if child.startswith("\n") else ": "
            items.append(f"{indent}{key}{sep}{child}")
    return "\n" + "\n".join(items)


def _random_text(r: random.Random) -> str:
    docs = []
    for _ in range(r.randint(1, 3)):
        start = r.choice(["", "", "---\n", "--- ", "# c\n", "---\n# c\n"])
        end = r.choice(["\n", "\n...\n", "", "\n# end\n"])
        docs.append(start + _node(r, 0).lstrip("\n") + end)
    text = "\n".join(docs) if r.random() < 0.5 else "---\n".join(docs)
    if r.random() < 0.3:  # edits that may break it
        chars = list(text)
        for _ in range(r.randint(1, 4)):
            at = r.randint(0, len(chars))
            if r.random() < 0.5:
                chars.insert(at, r.choice(":-[]{},&*!|>'\"#%@` \n\t<=~?"))
            elif chars:
                del chars[min(at, len(chars) - 1)]
        text = "".join(chars)
    if r.random() < 0.1:
        text = text.replace("\n", "\r\n")
    return text


@pytest.mark.skipif(not _libyaml.usable(), reason="PyYAML without libyaml")
@pytest.mark.parametrize("seed", range(4))
def test_random_texts_read_alike(seed: int) -> None:
    r = random.Random(seed)
    taken = 0
    for _ in range(1000):
        text = _random_text(r)
        limits = Limits(max_depth=r.choice([1, 2, 3, 200]))
        form: str | bytes = text if r.random() < 0.3 else text.encode("utf-8", "surrogatepass")
        direct = _direct(form, limits)
        if direct is not None:
            taken += 1
            assert _general(form, limits) == ("docs", repr(direct)), form
            # JSON-exact (the loader builds slices from their JSON text unchecked)
            assert repr(msgspec.json.decode(msgspec.json.encode(direct))) == repr(direct)
    assert taken >= 150  # the direct reading is exercised, not only refused


def test_remembered_scalars_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the loader's limit of remembered texts, scalars are still resolved, each
    time afresh (a text of a million distinct numbers costs no dict entry each)."""
    monkeypatch.setattr(text_module._DocumentLoader, "tags_remembered", 3)
    text = "a: [" + ", ".join(["1", "x", "yes", "~", "2.5", "1", "x", "yes", "0x1F"]) + "]\n"
    assert _direct(text) == [{"a": [1, "x", True, None, 2.5, 1, "x", True, 31]}]
    assert _general(text, Limits()) == ("docs", repr(_direct(text)))
