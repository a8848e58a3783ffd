"""The compiled JSON text checks (``draspeed.api._jsontext``) against the decoded text.

- ``json_text_check``: the nesting depth, and whether an object repeats a key once the
  keys are decoded, for generated documents whose keys are written plainly, with
  ``\\uXXXX`` escapes (surrogate pairs too) or mixed, with non-ASCII text and spacing;
  objects big enough to be checked by sorting as well as small ones.
- ``json_list_spans``: the items of a list text, exactly where they are, and None for
  every text that is not such a list (or is too deep, or repeats a key).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from draspeed.api._jsontext import json_compact, json_list_spans, json_text_check

# ------------------------------------------------------------------ writing JSON

_STYLES = ("plain", "ascii", "escaped")


def _key_text(key: str, style: str) -> str:
    """A JSON string for ``key``: as json.dumps writes it, ASCII-only, or every
    character as a \\u escape (astral ones as surrogate pairs)."""
    if style == "plain":
        return json.dumps(key, ensure_ascii=False)
    if style == "ascii":
        return json.dumps(key, ensure_ascii=True)
    units = key.encode("utf-16-be")
    pairs = range(0, len(units), 2)
    return '"' + "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in pairs) + '"'


def _is_object(value: Any) -> bool:
    """Generated objects are lists of (key, style, value), so that keys may repeat."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, tuple) for v in value)


def _depth(value: Any) -> int:
    if _is_object(value):
        return 1 + max(_depth(v) for _, _, v in value)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _repeats(value: Any) -> bool:
    if _is_object(value):
        keys = [k for k, _, _ in value]
        return len(set(keys)) != len(keys) or any(_repeats(v) for _, _, v in value)
    if isinstance(value, list):
        return any(_repeats(v) for v in value)
    return False


def _write(value: Any, indent: int | None) -> str:
    pad = "" if indent is None else " " * indent
    if _is_object(value):
        items = [f"{_key_text(k, style)}{pad}:{pad}{_write(v, indent)}" for k, style, v in value]
        return "{" + f",{pad}".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",\n".join(_write(v, indent) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_keys = st.text(alphabet='ab:"\\{}[] é😀\n', max_size=4)
_pairs = st.tuples(_keys, st.sampled_from(_STYLES))
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), _keys
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(st.builds(lambda kv, v: (*kv, v), _pairs, inner), max_size=4),
    ),
    max_leaves=12,
)
# Objects past the pairwise limit (16 keys), from few distinct keys: repeats are common.
_big_objects = st.lists(
    st.builds(
        lambda k, style: (k, style, 1),
        st.text(alphabet="ab😀", max_size=3),
        st.sampled_from(_STYLES),
    ),
    min_size=17,
    max_size=40,
)


# ------------------------------------------------------------- json_text_check


@given(value=_values, indent=st.sampled_from([None, 0, 2]), max_depth=st.integers(1, 4))
def test_check_matches_the_decoded_text(value: Any, indent: int | None, max_depth: int) -> None:
    data = _write(value, indent).encode()
    msgspec.json.decode(data)  # the checks assume text msgspec accepts
    too_deep, duplicate = json_text_check(data, max_depth)
    assert too_deep == (_depth(value) > max_depth)
    if not too_deep:
        assert duplicate == _repeats(value)


@given(value=_big_objects, nested=st.booleans())
def test_check_sorts_big_objects(value: list[Any], nested: bool) -> None:
    document: Any = [("outer", "plain", value)] if nested else value
    data = _write(document, None).encode()
    assert json_text_check(data, 5) == (False, _repeats(value))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"[[1]]", (False, False)),
        (b"[[[]]]", (True, False)),
        (b'{"a": 1, "a": 2}', (False, True)),
        (b'{"a": 1, "\\u0061": 2}', (False, True)),
        (b'{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}', (False, False)),
        (b'{"a\\\\": {"b\\"": ":"}}', (False, False)),
        ('{"😀": 1, "\\ud83d\\ude00": 2}'.encode(), (False, True)),
        (b'{"\\n": 1, "\\u000a": 2}', (False, True)),
        (b'{"\\/": 1, "/": 2}', (False, True)),
        (b'{"a": 1, "a": [[[[1]]]]}', (True, False)),  # too deep wins, as it is checked first
        (b'"{[:"', (False, False)),
    ],
)
def test_check_examples(text: bytes, expected: tuple[bool, bool]) -> None:
    max_depth = 3 if text.startswith(b'{"a": 1, "a": [') else 2 if text.startswith(b"[") else 5
    assert json_text_check(text, max_depth) == expected


def test_check_takes_bytes_only() -> None:
    with pytest.raises(TypeError):
        json_text_check("{}", 1)  # type: ignore[arg-type]  # str is refused


# ------------------------------------------------------------- json_list_spans


def _list_text(items: list[Any], before: str, after: str, spacing: str) -> bytes:
    inner = f",{spacing}".join(json.dumps(item) for item in items)
    return (
        f'{{{before}"kind":{spacing}"List",{spacing}"items":{spacing}[{spacing}{inner}{spacing}]'
        f"{after}}}"
    ).encode()


_plain_numbers = st.one_of(
    st.integers(-(10**18) + 1, 10**18 - 1),
    st.floats(-1e15, 1e15, allow_nan=False).map(lambda x: float(f"{x:.6f}")),  # no exponent
)
_items = st.lists(
    st.dictionaries(
        st.text(alphabet="ab[]{}é😀", max_size=3),
        st.one_of(_plain_numbers, st.text(alphabet='x"é', max_size=3)),
        max_size=3,
    ),
    max_size=5,
)


@given(
    items=_items,
    before=st.sampled_from(["", '"apiVersion": "v1", ', '"metadata": {"items": [1]}, ']),
    after=st.sampled_from(["", ', "x": [{"items": []}]']),
    spacing=st.sampled_from(["", " ", "\n  "]),
)
def test_spans_are_the_items(items: list[Any], before: str, after: str, spacing: str) -> None:
    data = _list_text(items, before, after, spacing)
    found = json_list_spans(data, 10)
    assert found is not None
    items_open, items_close, spans = found
    assert data[items_open : items_open + 1] == b"["
    assert data[items_close : items_close + 1] == b"]"
    assert [msgspec.json.decode(data[a:b]) for a, b in spans] == items
    envelope = msgspec.json.decode(data[: items_open + 1] + data[items_close:])
    assert envelope == {**msgspec.json.decode(data), "items": []}


@pytest.mark.parametrize(
    "text",
    [
        b'{"kind": "List", "items": [{"a": 1}, 2]}',  # an item that is not an object
        b'{"kind": "List", "items": [{"a": 1}, "b"]}',
        b'{"kind": "List", "items": [{"a": 1}, [1]]}',
        b'{"kind": "List", "items": [{"a": 1},]}',  # separators msgspec refuses
        b'{"kind": "List", "items": [{"a": 1} {"b": 2}]}',
        b'{"kind": "List", "items": [,{"a": 1}]}',
        b'{"kind": "List", "items": {"a": 1}}',  # no items array
        b'{"kind": "List", "items": null}',
        b'{"kind": "List"}',
        b'[{"items": [{"a": 1}]}]',  # not at the top level
        b'{"kind": "List", "items": [{"a": 1, "a": 2}]}',  # a repeated key
        b'{"kind": "List", "kind": "List", "items": []}',
        b'{"kind": "List", "items": [{"a": [[[[1]]]]}]}',  # too deep
        b'{"kind": "List", "items": [{"a": 1}]',  # unbalanced
        b'{"kind": "List", "items": [{"a": 1}]}}',
    ],
)
def test_spans_refuse_other_texts(text: bytes) -> None:
    assert json_list_spans(text, 4) is None


@pytest.mark.parametrize(
    "value",
    [
        b"1e5",  # any exponent
        b"-1E-5",
        b"1.5e308",
        b"1234567890123456789",  # more than 18 digits
        b"-1234567890123456789.5",
        b'"\xff"',  # not UTF-8
        b'"\xc0\x80"',  # overlong
        b'"\xed\xa0\x80"',  # a surrogate
        b'"\xf4\x90\x80\x80"',  # past U+10FFFF
        b'"\xe2\x82"',  # cut short
    ],
)
def test_spans_refuse_what_msgspec_skips_less_strictly(value: bytes) -> None:
    """msgspec does not check these where it skips a value (msgspec.Raw, unknown
    fields), though decoding them fails: such texts take the ordinary path."""
    value = value.decode("unicode_escape").encode("latin-1")
    text = b'{"kind": "List", "items": [{"metadata": {"x": ' + value + b"}}]}"
    assert json_list_spans(text, 10) is None


@pytest.mark.parametrize(
    "value",
    [
        b"0",
        b"-0",
        b"123456789012345678",
        b"-1.5",
        b"0.000000000000000000001",
        rb'"\u00e9"',
        '"é😀"'.encode(),
    ],
)
def test_spans_take_plain_numbers_and_text(value: bytes) -> None:
    text = b'{"kind": "List", "items": [{"metadata": {"x": ' + value + b"}}]}"
    found = json_list_spans(text, 10)
    assert found is not None and len(found[2]) == 1


def test_spans_of_an_empty_list() -> None:
    assert json_list_spans(b'{"items": []}', 2) == (10, 11, [])


# ---------------------------------------------------------------- json_compact

_SPACE = st.text(alphabet=" \t\n\r", max_size=3)
_TOKENS = ["{", "}", "[", "]", ":", ",", '"a"', '"b c"', '" \\" "', "1", "-2", "3.5", "1e3"]
_TOKENS += ["true", "false", "null", "tru", "e", "2", '"', "\\", "+", "."]


def _spaced(tokens: list[str], spaces: list[str]) -> bytes:
    spaces = (spaces + [""] * len(tokens))[: len(tokens)]
    return "".join(t + sp for t, sp in zip(tokens, spaces, strict=True)).encode()


def _decoded(data: bytes) -> tuple[str, Any]:
    try:
        return ("json", msgspec.json.decode(data))
    except (msgspec.DecodeError, ValueError):
        return ("no json", None)


@given(value=_values, indent=st.sampled_from([None, 0, 2, 4]), data=st.data())
def test_compact_text_decodes_alike(value: Any, indent: int | None, data: st.DataObject) -> None:
    """Whitespace drawn between any two characters of a JSON text: where the text is
    still JSON, its compact form decodes to the same (whitespace in strings stays)."""
    tokens = list(json.dumps(msgspec.json.decode(_write(value, None).encode()), indent=indent))
    text = _spaced(tokens, data.draw(st.lists(_SPACE, max_size=len(tokens))))
    if _decoded(text)[0] == "no json":  # a space drawn inside a number or a literal
        return
    compact = json_compact(text)
    assert compact is not None
    assert _decoded(compact) == _decoded(text)
    assert json_compact(compact) == compact  # nothing left to take


@given(tokens=st.lists(st.sampled_from(_TOKENS), max_size=12), data=st.data())
def test_compact_never_makes_json_of_no_json(tokens: list[str], data: st.DataObject) -> None:
    text = _spaced(tokens, data.draw(st.lists(_SPACE, max_size=len(tokens))))
    compact = json_compact(text)
    if _decoded(text)[0] == "json":
        assert compact is not None and _decoded(compact) == _decoded(text)
    else:
        assert compact is None or _decoded(compact)[0] == "no json"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{ "a" : [ 1 , 2 ] }\n', b'{"a":[1,2]}'),
        (b'\t"in a string:  \\"  kept"\r\n', b'"in a string:  \\"  kept"'),
        (b"[1 2]", None),
        (b"[tru e]", None),
        (b"[-1 .5]", None),
        (b'"unterminated  ', b'"unterminated  '),
        (b'"ends in an escape\\', b'"ends in an escape\\'),
        (b"   ", b""),
        (b"", b""),
        (b"[1,\x0c2]", b"[1,\x0c2]"),  # a form feed is no JSON whitespace: left for the decoder
    ],
)
def test_compact_examples(text: bytes, expected: bytes | None) -> None:
    assert json_compact(text) == expected
