"""The one-walk YAML construction (``construct_tree``, used when libyaml's composer
reads a text without anchors) builds what PyYAML's general construction builds.

Every YAML file of the test corpora, plus texts chosen for the cases the walk handles
itself or hands back (merge keys, explicit tags, non-string scalars, complex keys,
duplicate keys, YAML 1.1 booleans and numbers), is read both ways: the same documents,
or the same error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draspeed.api import text as text_module
from draspeed.api.text import Limits

TESTS = Path(__file__).parent
FILES = sorted(p for p in TESTS.rglob("*.yaml") if p.stat().st_size < 2_000_000)

TEXTS = {
    "merge-keys": "a: {x: 1}\nb:\n  <<: {y: 2, z: 3}\n  z: 4\n",
    "tags": "a: !!str 1\nb: !!int '7'\nc: !!float 1.5\nd: !!binary aGk=\ne: !!set {x, y}\n",
    "yaml11": "a: yes\nb: off\nc: 0x1f\nd: 0o17\ne: 1_000\nf: 1:20\ng: ~\nh: 2026-01-01\n",
    "complex-key": "? [a, b]\n: c\n",
    "duplicate": "a: 1\nb: 2\na: 3\n",
    "nested": "spec:\n  devices:\n  - name: d\n    attributes: {model: {string: 'a && b'}}\n",
    "floats": "a: .nan\n",
    "documents": "---\na: 1\n---\n---\nb: [1, {c: d}]\n",
    "cel-and": "expression: device.driver == 'x' && device.attributes['x'].y\n",
}


def _read(text: str | bytes, tree: bool) -> Any:
    limits = Limits()
    saved = text_module._TREE_MAX_DEPTH
    text_module._TREE_MAX_DEPTH = limits.max_depth if tree else 0
    try:
        return ("docs", list(text_module._general_documents(text, limits)))
    except Exception as exc:  # the two ways must fail alike
        return ("error", type(exc).__name__, str(exc))
    finally:
        text_module._TREE_MAX_DEPTH = saved


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_corpus_files_read_alike(path: Path) -> None:
    data = path.read_bytes()
    assert _read(data, tree=True) == _read(data, tree=False)


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_chosen_texts_read_alike(text: str) -> None:
    assert text_module._libyaml_composer_is_safe(text, Limits().max_depth)
    assert _read(text, tree=True) == _read(text, tree=False)


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("a: &x 1\nb: *x\n", True),
        ("- &x 1\n", True),
        ("&x a\n", True),
        ("a:\n  &x\n  1\n", True),
        ("[&x 1, *x]\n", True),
        ("{a: &x 1}\n", True),
        ("a: !!str &x b\n", True),
        ("--- &x a\n", True),
        ("? &x a\n: b\n", True),
        ("a:&x b\n", True),
        ("e: a && b\n", False),
        ("e: x == 1 && y\n", False),
        ("e: 'a && b'\n", False),
    ],
)
def test_anchor_positions(text: str, anchor: bool) -> None:
    assert text_module._may_hold_anchor(text.encode()) is anchor


def test_remembered_tags_are_the_resolvers() -> None:
    # Tags are remembered per (kind, text, implicit): the same text plain and quoted,
    # and every YAML 1.1 form, resolve as PyYAML resolves them afresh.
    import yaml

    values = ["1", "yes", "off", "0x1f", "1_000", "1:20", "~", "null", "", "1.5", "a"]
    text = "".join(f"p{i}: {v}\nq{i}: '{v}'\nr{i}: {v}\n" for i, v in enumerate(values))
    (doc,) = text_module.parse_text(text)
    assert doc == yaml.load(text, Loader=yaml.SafeLoader)
    assert not text_module._DocumentLoader.yaml_path_resolvers  # nothing else decides a tag


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("yes", "true"),
        ("off", "false"),
        ("1", "1"),
        ("-7", "-7"),
        ("0x1f", "31"),
        ("1.5", "1.5"),
        ("0.1", "0.1"),
        ("1.0e+20", "1e+20"),
        ("123456.0", "123456"),
        ("1234567.0", "1.234567e+06"),
        ("0.0001", "0.0001"),
        ("1.0e-5", "1e-05"),
        ('"1"', "1"),
    ],
)
def test_keys_that_are_not_strings_are_named_as_kubectl_names_them(key: str, expected: str) -> None:
    """sigs.k8s.io/yaml writes a bool, integer or float key as a JSON string key (a
    float as Go's FormatFloat(key, 'g', -1, 32)); a label key ``yes`` is ``true``."""
    from draspeed import load

    text = f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    {key}: v\n"
    assert load(text, validate=False).nodes[0].labels == {expected: "v"}


@pytest.mark.parametrize("text", ["=", "<<"])
def test_plain_equals_and_merge_signs_outside_keys_are_text(text: str) -> None:
    """PyYAML resolves a plain ``=`` to its "value" tag and a plain ``<<`` to a merge,
    and its safe loader cannot build either as a value; go-yaml (kubectl) reads both
    as text, and so does draspeed: an attribute ``{string: =}`` is the string "="."""
    from draspeed import load

    doc = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec:\n  driver: d.example.com\n  nodeName: n1\n"
        "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
        f"  devices:\n  - name: dev\n    attributes:\n      a: {{string: {text}}}\n"
    )
    (device,) = load(doc).slices[0].spec.devices
    assert device.attributes["d.example.com/a"].value == text
    assert text_module.parse_text(f"a: {text}\nb: [{text}, '{text}']\n") == [
        {"a": text, "b": [text, text]}
    ]
    if text == "=":  # (a plain << key is a merge)
        assert text_module.parse_text("=: 1\n") == [{"=": 1}]


def test_a_null_key_is_one_error_and_keys_equal_once_converted_are_duplicates() -> None:
    from draspeed import load
    from draspeed.errors import InputError

    head = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
    with pytest.raises(InputError, match="found a null key"):
        load(head + "    ~: v\n")
    with pytest.raises(InputError, match='duplicate key "1"'):
        load(head + '    1: v\n    "1": w\n')
