"""JSON text read as Go reads it: numbers' text, surrogate escapes, bytes of no UTF-8
(api.json_as_go).

A bare JSON number where a quantity goes is read from its text, as Go reads it.

``resource.Quantity``'s JSON decoding parses the number's own text, so ``1e3`` is the
quantity ``1e3`` (not ``1k``) and ``0.00001`` is ``10u`` (not ``10e-6``, the text of
the float's repr). Every quantity field of every JSON reading (one document, a List
read in bulk, a List item that is not of the bulk shape) must read a bare number as it
reads the same text quoted. A float from YAML is written as Python's JSON encoder
writes it (PyYAML, then ``json.dumps``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from draspeed import golang, load
from draspeed.api.json_as_go import NumberText, decode
from draspeed.errors import InputError
from draspeed.quantity import Quantity
from draspeed.testing.documents import resource_slice

# Number texts whose quantity differs from the quantity of the float's repr.
LITERALS = ["1e3", "1E3", "0.00001", "1.0e+16", "1.50", "2.0", "1e-7", "100e-2", "5e400", "0"]

SLICE = """{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
 "metadata": {"name": "node-1-gpus"},
 "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
  "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
  "sharedCounters": [{"name": "cs-0", "counters": {"mem": {"value": @}}}],
  "devices": [{"name": "gpu-0",
    "attributes": {"model": {"string": "a100"}},
    "capacity": {
      "memory": {"value": @, "requestPolicy": {"default": @, "validValues": [@]}},
      "cores": {"value": @, "requestPolicy": {"validRange": {"min": @, "max": @, "step": @}}}},
    "consumesCounters": [{"counterSet": "cs-0", "counters": {"mem": {"value": @}}}]}]}}"""

CLAIM = """{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "claim-0", "namespace": "default"},
 "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
   "deviceClassName": "gpu", "capacity": {"requests": {"memory": @}}}}]}},
 "status": {"allocation": {"devices": {"results": [{"request": "req-0",
   "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
   "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", "consumedCapacity": {"memory": @}}]}}}}"""


def _quantities(obj: Any) -> list[str]:
    """Every quantity in a model object, in field order, as text."""
    if isinstance(obj, Quantity):
        return [str(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [q for f in dataclasses.fields(obj) for q in _quantities(getattr(obj, f.name))]
    if isinstance(obj, dict):
        return [q for value in obj.values() for q in _quantities(value)]
    if isinstance(obj, list):
        return [q for value in obj for q in _quantities(value)]
    return []


def _read(texts: list[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        objects = load(text, validate=False)
        found += _quantities(objects.slices) + _quantities(objects.claims)
    return found


def _forms(number: str) -> list[list[str]]:
    """The documents with ``number`` in every quantity field: one JSON document each,
    and one List read in bulk."""
    slice_text, claim_text = SLICE.replace("@", number), CLAIM.replace("@", number)
    listed = f'{{"apiVersion": "v1", "kind": "List", "items": [{slice_text}, {claim_text}]}}'
    return [[slice_text, claim_text], [listed]]


@pytest.mark.parametrize("literal", LITERALS)
def test_a_bare_number_is_the_quantity_of_its_text(literal: str) -> None:
    for bare, quoted in zip(_forms(literal), _forms(json.dumps(literal)), strict=True):
        expected = _read(quoted)
        assert len(expected) == 11
        assert _read(bare) == expected
    assert expected[0] == str(Quantity.parse(literal))


def test_yaml_floats_are_written_as_pythons_json_encoder_writes_them() -> None:
    as_yaml = yaml.safe_dump(json.loads(SLICE.replace("@", "0.00001")))
    # YAML's reading of the slice, and the JSON text Python writes of that reading.
    from_yaml = _quantities(load(as_yaml, validate=False).slices)
    from_json = _quantities(load(json.dumps(yaml.safe_load(as_yaml)), validate=False).slices)
    assert from_yaml == from_json == ["10e-6"] * 9


def test_number_text_keeps_its_text_and_value() -> None:
    doc = decode(b'{"a": [1e3, 0.00001, 2, 1e400]}')
    first, small, two, huge = doc["a"]
    assert (first, first.text) == (1000.0, "1e3") and isinstance(first, NumberText)
    assert (small.text, type(two)) == ("0.00001", int)
    assert huge == float("inf") and huge.text == "1e400"
    import pickle

    copied = pickle.loads(pickle.dumps(first))
    assert type(copied) is NumberText and copied.text == "1e3"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r'"x\ud800y"', "x\ufffdy"),  # a lone high surrogate
        (r'"\udfff"', "\ufffd"),  # a lone low one
        (r'"\ud800\u0041"', "\ufffdA"),  # followed by an escape that does not pair
        (r'"\udc00\ud800"', "\ufffd\ufffd"),  # the wrong order
        (r'"\ud83d\ude00"', "\U0001f600"),  # a pair: one character
        (r'"\\ud800"', "\\ud800"),  # an escaped backslash: no escape
        (r'{"\ud800": 1, "\udfff": 2}', {"\ufffd": 2}),  # keys too (the last one kept)
        (r'[1.5, "\ud800"]', [1.5, "\ufffd"]),
    ],
)
def test_surrogate_escapes_are_read_as_go_reads_them(text: str, expected: Any) -> None:
    """Go's JSON decoding replaces a surrogate escape that is not half of a pair with
    U+FFFD; msgspec refuses the text."""
    assert decode(text) == expected
    assert decode(text.encode()) == expected


@pytest.mark.parametrize("text", [r'["\ud800", NaN]', r'["\ud800"', r'"\ud800" x'])
def test_a_text_with_surrogate_escapes_that_is_not_json_is_still_refused(text: str) -> None:
    import msgspec

    with pytest.raises(msgspec.DecodeError):
        decode(text)


def test_strings_python_code_built_are_read_as_go_reads_them_once_written() -> None:
    """A str built in Python may hold surrogates: it is what Go reads of the JSON text
    Python's encoder writes of it (the regression case's file is that text)."""
    from pathlib import Path

    case = Path(__file__).parent / "regressions/surrogate-escapes-are-replacement-characters.yaml"
    text = case.read_text(encoding="utf-8")
    docs = json.loads(text)["items"]  # Python's reading keeps the lone surrogates
    assert docs[2]["spec"]["devices"][0]["attributes"]["a"]["string"] == "x\ud800y"

    def values(source: Any) -> list[str]:
        (slice_,) = load(source, validate=False).slices
        return [d.attributes["gpu.example.com/a"].value for d in slice_.spec.devices]

    expected = ["x\ufffdy", "x\ufffdy", "x\U0001f600y"]
    assert values(text) == values(docs) == values(docs[2]) == expected
    assert docs[2]["spec"]["devices"][0]["attributes"]["a"]["string"] == "x\ud800y"  # as given


def _node(labels: dict[Any, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "labels": labels}}


@pytest.mark.parametrize(
    ("key", "name"),
    [(1, "1"), (42, "42"), (True, "true"), (False, "false"), (None, "null"), (1.5, "1.5")],
)
@pytest.mark.parametrize("validate", [True, False])
def test_keys_python_code_wrote_are_named_as_pythons_json_encoder_names_them(
    key: Any, name: str, validate: bool
) -> None:
    node = _node({key: "v"})
    assert json.loads(json.dumps({key: "v"})) == {name: "v"}
    assert load([node], validate=validate).nodes[0].labels == {name: "v"}


@pytest.mark.parametrize("key", [(1, 2), b"x", frozenset()])
def test_a_key_pythons_json_encoder_refuses_is_one_error_naming_its_mapping(key: Any) -> None:
    from draspeed.errors import InputError

    node = _node({key: "v"})
    with pytest.raises(InputError) as caught:
        load([{"apiVersion": "v1", "kind": "List", "items": [node]}], validate=False)
    assert (caught.value.obj, caught.value.path) == ("Node node-a", "metadata.labels")
    assert f"keys must be str, int, float, bool or None, not {type(key).__name__}" in str(
        caught.value
    )


def test_a_slice_dict_with_a_number_key_or_a_surrogate_is_built_as_its_json_text() -> None:
    text = SLICE.replace("@", '"1"')
    doc = json.loads(text)
    attributes = doc["spec"]["devices"][0]["attributes"]
    attributes[7] = {"string": "x\ud800y"}
    (slice_,) = load([doc], validate=False).slices
    assert slice_.spec.devices[0].attributes["gpu.example.com/7"].value == "x\ufffdy"
    assert 7 in attributes  # (the caller's dict is left as it was)


CLUSTER = """{"apiVersion": "v1", "kind": "List", "items": [
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
 "spec": {"selectors": [{"cel": {"expression": "device.driver == \\"gpu.example.com\\""}}]}},
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
 "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
  "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}},
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "c", "namespace": "default"},
 "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}],
  "config": [{"opaque": {"driver": "gpu.example.com",
   "parameters": {"ratio": 1.5, "big": 1e3, "small": 0.00001}}}]}}}]}"""


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_opaque_parameters_read_from_json_are_written_back(output: str, tmp_path: Any) -> None:
    """Opaque parameters are a RawExtension: Go writes their bytes as given (``1e3``
    stays ``1e3``); YAML writes the numbers' values. Before, a number with a fraction
    or an exponent in them made -o json and -o yaml raise."""
    import io

    from draspeed.cli import main

    cluster = tmp_path / "cluster.json"
    cluster.write_text(CLUSTER)
    out, err = io.StringIO(), io.StringIO()
    assert main(["allocate", "-f", str(cluster), "--node", "node-1", "-o", output], out, err) == 0
    if output == "json":
        assert '"big": 1e3' in out.getvalue() and '"small": 0.00001' in out.getvalue()
        written = json.loads(out.getvalue())
    else:
        written = yaml.safe_load(out.getvalue())
    items = written.get("items", [written])
    (claim,) = [item for item in items if item.get("kind") == "ResourceClaim"]
    config = claim["status"]["allocation"]["devices"]["config"][0]
    assert config["opaque"]["parameters"] == {"ratio": 1.5, "big": 1000.0, "small": 0.00001}


def test_harness_case_lines_write_numbers_as_read() -> None:
    from draspeed.testing.oracle_cases import case_line, oracle_case

    objects = load(CLUSTER)
    line = case_line(
        oracle_case(objects.slices, objects.classes, objects.claims, node=objects.nodes[0])
    )
    assert b'"big":1e3' in line


@pytest.mark.parametrize("kind", ["DeviceClass", "ResourceClaim", "Node"])
def test_surrogate_escapes_in_list_items_of_every_kind(kind: str) -> None:
    """A List's items are read one by one from their bytes (a ``msgspec.Raw``); a
    surrogate escape in any of them is U+FFFD there too (it raised AttributeError)."""
    items = {
        "DeviceClass": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "c"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver != "\ud800"'}}]},
        },
        "ResourceClaim": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "r", "namespace": "default", "labels": {"a": "\udfff"}},
            "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}}]}},
        },
        "Node": {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-1", "annotations": {"note": "x\ud800"}},
        },
    }
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [items[kind]] * 2})
    assert "\\ud800" in text or "\\udfff" in text
    objects = load(text, validate=False)
    (found,) = [o for o in objects if type(o).__name__ == kind]
    assert "\ufffd" in json.dumps(found.raw, ensure_ascii=False)


# Bytes that are no UTF-8, and how many U+FFFD Go's JSON decoding reads them as (each
# count is the length the upstream harness's CEL ``size()`` gave the string "a<bytes>b",
# minus two). The last is a valid character, for contrast.
INVALID_UTF8 = [
    (b"\xff", 1),
    (b"\xe2\x82", 2),  # the first two bytes of a three-byte character
    (b"\xf0\x9f\x98", 3),  # the first three of a four-byte one
    (b"\xed\xa0\x80", 3),  # a surrogate written in UTF-8
    (b"\xc0\x80", 2),  # an overlong NUL
    (b"\xe0\x80\xaf", 3),  # an overlong '/'
    (b"\xf4\x90\x80\x80", 4),  # beyond U+10FFFF
    (b"\x80\x80", 2),  # continuation bytes alone
    (b"\xf0\x9f\x98\x80", 0),  # U+1F600, valid
]


@pytest.mark.parametrize(("raw", "replaced"), INVALID_UTF8, ids=lambda x: repr(x))
@pytest.mark.parametrize("listed", [False, True], ids=["document", "list"])
def test_bytes_that_are_no_utf8_in_json_strings_are_read_as_go_reads_them(
    raw: bytes, replaced: int, listed: bool
) -> None:
    """The API server keeps such a JSON text, each byte of no valid character a U+FFFD
    (it was "invalid UTF-8 at byte N"); a YAML text stays refused, as go-yaml does."""
    doc = resource_slice(
        "s", [{"name": "d", "attributes": {"model": {"string": "MODEL"}}}], nodeName="n"
    )
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [doc]} if listed else doc)
    data = text.encode().replace(b"MODEL", b"a" + raw + b"b")
    (found,) = load(data).slices
    model = found.spec.devices[0].attributes["drv.example.com/model"].value
    assert model.count("\ufffd") == replaced
    assert len(model) == 2 + (replaced or 1)
    assert golang.utf8_as_go(raw).count("\ufffd") == replaced
    if replaced:
        with pytest.raises(InputError, match=r"UTF-8|Unicode"):
            load(yaml.safe_dump(doc).encode().replace(b"MODEL", b"a" + raw + b"b"))


# Quoted quantities with surrounding space. Go's Quantity.UnmarshalJSON trims the raw
# bytes between the quotes with strings.TrimSpace, so space JSON holds as it is goes,
# and a tab or line break, which JSON holds only as an escape (a backslash), stays and
# is no quantity. Each verdict is the upstream harness's, reading the same JSON text.
PADDED_ACCEPTED = [" 1 ", "\u00a01\u3000", "\u20281\u0085"]
PADDED_REFUSED = ["\t1", "1\n", "1\r", "\x1c1", "\v1", "\f1"]


def _one_field(padded: str, field: int) -> list[list[str]]:
    """:func:`_forms` with ``padded`` (quoted) in quantity field ``field`` and 1 in the
    others."""
    texts = (SLICE + "\0" + CLAIM).split("@")
    values = [json.dumps(padded) if i == field else "1" for i in range(len(texts) - 1)]
    joined = "".join(t + v for t, v in zip(texts, values, strict=False)) + texts[-1]
    slice_text, claim_text = joined.split("\0")
    listed = f'{{"apiVersion": "v1", "kind": "List", "items": [{slice_text}, {claim_text}]}}'
    return [[slice_text, claim_text], [listed]]


@pytest.mark.parametrize("field", range(11))
def test_a_quoted_quantity_is_trimmed_as_go_trims_its_json_text(field: int) -> None:
    """Unchecked (the slice has counters and devices both); a checked reading of a
    valid slice decodes its quantities by the same code (test_bad_input)."""
    for padded in PADDED_ACCEPTED:
        for texts in _one_field(padded, field):
            for text in texts:
                objects = load(text, validate=False)
                assert set(_quantities(objects.slices) + _quantities(objects.claims)) <= {"1"}
    for padded in PADDED_REFUSED:
        for texts in _one_field(padded, field):
            with pytest.raises(InputError, match="quantities must match the regular expression"):
                for text in texts:
                    load(text, validate=False)
