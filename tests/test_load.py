"""draspeed.api.loader: files, directories, stdin, text, lists, client objects."""

from __future__ import annotations

import gc
import inspect
import io
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from draspeed.api import DraspeedConversionWarning, DraspeedWarning
from draspeed.api import text as text_module
from draspeed.api.loader import Objects, load, to_plain
from draspeed.api.model import DeviceClass, Node, ResourceClaim, ResourceSlice
from draspeed.api.text import Limits
from draspeed.errors import InputError

DATA = Path(__file__).parent / "data" / "api"


def _class(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{name}"'}}]},
    }


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "a"}}}


def _slice(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "h100"}}}],
        },
    }


def _dump(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


# --------------------------------------------------------------------------- sources


def test_directories_in_sorted_order_recursive_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.yml").write_text(_dump([_class("two")]))
    (tmp_path / "a.yaml").write_text(_dump([_class("one"), _node("n1")]))
    (tmp_path / "c.json").write_text(json.dumps(_class("three")))
    (tmp_path / "notes.txt").write_text("kind: Nonsense")
    # As kubectl -f DIR: the directory's own files; -R (recursive=True) those below too.
    assert [c.metadata.name for c in load(tmp_path).classes] == ["one", "three"]
    objects = load(tmp_path, recursive=True)
    assert [c.metadata.name for c in objects.classes] == ["one", "two", "three"]
    assert [n.name for n in objects.nodes] == ["n1"]
    assert [c.metadata.name for c in load(str(tmp_path / "a.yaml")).classes] == ["one"]


def test_several_sources_keep_input_order(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(_dump([_class("from-file")]))
    objects = load(_class("first"), path, [_class("in-list"), _dump([_class("from-text")])])
    assert [c.metadata.name for c in objects.classes] == [
        "first",
        "from-file",
        "in-list",
        "from-text",
    ]


# ------------------------------------------------------------- one object per name


def _slice_list(*slices: dict[str, Any]) -> str:
    """A JSON ResourceSliceList: the bulk path reads its items."""
    return json.dumps(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "items": list(slices)}
    )


def test_the_same_object_twice_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        _dump(
            [
                _class("gpu"),
                _node("n1"),
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **_slice("n1")},
            ]
        )
    )
    once = load(path)
    twice = load(path, path, tmp_path)  # -f x.yaml -f x.yaml -f DIR
    assert len(twice) == len(once) == 3
    assert twice.slices == once.slices and twice.classes == once.classes
    # In bulk JSON lists too, and across the bulk and the ordinary path.
    bulk = _slice_list(_slice("n1"), _slice("n2"))
    assert [s.metadata.name for s in load(bulk, bulk, path).slices] == ["n1", "n2"]


def test_copies_read_at_other_times_or_versions_are_one_object() -> None:
    later = _class("gpu")
    later["metadata"] = {"name": "gpu", "resourceVersion": "42"}
    old = {**_class("gpu"), "apiVersion": "resource.k8s.io/v1beta1"}
    objects = load(_class("gpu"), later, old)
    assert len(objects.classes) == 1
    assert objects.classes[0].metadata.resource_version == ""  # the first copy is kept


def test_differing_copies_name_both_places(tmp_path: Path) -> None:
    other = _class("gpu")
    other["spec"]["selectors"][0]["cel"]["expression"] = "true"
    path = tmp_path / "x.yaml"
    path.write_text(_dump([_class("gpu"), other]))
    with pytest.raises(InputError) as excinfo:
        load(path)
    assert (excinfo.value.obj, excinfo.value.path) == ("DeviceClass gpu", "")
    assert str(excinfo.value) == (
        f"DeviceClass gpu: given twice, differently: in {path} document 1 and in {path} "
        "document 2 (the API server keeps one object per kind, namespace and name)"
    )
    # Objects given in Python: where they sit among the arguments.
    with pytest.raises(InputError, match=r"in <object>\[0\]\[1\] and in <object>\[1\] \("):
        load([_class("other"), _class("gpu")], other)
    changed = _slice("n1")
    changed["spec"]["devices"][0]["name"] = "gpu-1"
    with pytest.raises(
        InputError,
        match=r"^ResourceSlice n1: given twice, differently: "
        r"in <text> document 1, items\[0\] and in <text> document 1, "
        r"items\[1\] \(",
    ):
        load(_slice_list(_slice("n1"), changed))


def test_namespaces_and_kinds_keep_objects_apart() -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "a"},
        "spec": {},
    }
    elsewhere = {**claim, "metadata": {"name": "c", "namespace": "b"}}
    template = {**claim, "kind": "ResourceClaimTemplate", "spec": {"spec": {}}}
    objects = load(claim, elsewhere, template, _class("c"), _node("c"))
    assert len(objects) == 5


def test_unnamed_objects_are_each_their_own() -> None:
    unnamed = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"generateName": "gpu-"},
        "spec": {},
    }
    assert len(load(unnamed, unnamed, validate="ignore").classes) == 2


def test_a_list_read_again_the_ordinary_way_forgets_what_it_saw() -> None:
    # The bulk reader gives up on a list that is no JSON after all (here: a last item in
    # YAML flow style) and the ordinary parse reads every item again: the items the
    # bulk reader saw are no duplicates of themselves.
    flow = yaml.safe_dump(_slice("n3"), default_flow_style=True).strip()
    text = _slice_list(_slice("n1"), _slice("n2"))[:-2] + ", " + flow + "]}"
    assert [s.metadata.name for s in load(text).slices] == ["n1", "n2", "n3"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(_dump([_node("n1"), _class("gpu")])))
    objects = load("-")
    assert [type(o).__name__ for o in objects] == ["DeviceClass", "Node"]


def test_text_bytes_json_and_yaml() -> None:
    text = _dump([_class("a"), _class("b")])
    assert len(load(text).classes) == 2
    assert len(load(text.encode()).classes) == 2
    assert load(json.dumps(_class("j"))).classes[0].metadata.name == "j"
    assert load(json.dumps(_class("k")).encode()).classes[0].metadata.name == "k"
    # YAML flow style starts like JSON but is not JSON.
    assert load("{apiVersion: v1, kind: Node, metadata: {name: flow}}").nodes[0].name == "flow"


def test_kind_list_and_typed_lists() -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": [_class("a"), _node("n")]}
    objects = load(doc)
    assert (len(objects.classes), len(objects.nodes)) == (1, 1)
    typed = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "metadata": {},
        "items": [_slice("node-1"), _slice("node-2")],
    }
    slices = load(json.dumps(typed)).slices
    assert [s.metadata.name for s in slices] == ["node-1", "node-2"]
    assert all(s.api_version == "resource.k8s.io/v1" for s in slices)
    assert "kind" not in slices[0].raw  # raw is the item as given


def test_lists_in_lists_are_read_as_kubectl_flattens_them() -> None:
    typed = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "items": [_slice("node-1")],
    }
    inner = {"apiVersion": "v1", "kind": "List", "items": [_node("n"), typed]}
    doc = {"apiVersion": "v1", "kind": "List", "items": [_class("a"), inner]}
    for given in (doc, json.dumps(doc), yaml.safe_dump(doc)):
        objects = load(given)
        assert [c.metadata.name for c in objects.classes] == ["a"]
        assert [n.name for n in objects.nodes] == ["n"]
        assert [s.metadata.name for s in objects.slices] == ["node-1"]
        assert not objects.skipped


def test_typed_list_items_may_carry_their_own_version() -> None:
    item = dict(_slice("n"), apiVersion="resource.k8s.io/v1beta2", kind="ResourceSlice")
    typed = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "items": [item]}
    assert load(typed).slices[0].api_version == "resource.k8s.io/v1beta2"


def test_timestamps_stay_text() -> None:
    text = _dump([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]).replace(
        "metadata:", "metadata:\n  creationTimestamp: 2026-11-20T10:00:00Z"
    )
    node = load(text).nodes[0]
    assert node.raw["metadata"]["creationTimestamp"] == "2026-11-20T10:00:00Z"


def test_validate_false_is_passed_on() -> None:
    bad = _class("GPU")
    with pytest.raises(InputError, match=r"metadata\.name"):
        load(bad)
    assert load(bad, validate=False).classes[0].metadata.name == "GPU"


def test_gc_state_is_restored() -> None:
    assert gc.isenabled()
    load(_class("a"))
    assert gc.isenabled()
    with pytest.raises(InputError):
        load({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceThing"})
    assert gc.isenabled()


# ------------------------------------------------------------------------- errors


def test_unknown_kind_of_the_dra_group_names_the_document(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    thing = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceThing", "metadata": {}}
    path.write_text(_dump([_class("a"), thing]))
    with pytest.raises(InputError) as excinfo:
        load(path)
    assert str(excinfo.value) == (
        f"{path} document 2: kind: unsupported kind 'ResourceThing' (apiVersion "
        "'resource.k8s.io/v1'); supported kinds: ResourceSlice, DeviceClass, ResourceClaim, "
        "ResourceClaimTemplate, DeviceTaintRule, ResourceClass, Node, Pod"
    )


def test_known_kind_in_another_version_names_the_item() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_class("a"), {"apiVersion": "v2", "kind": "Node"}],
    }
    with pytest.raises(InputError) as excinfo:
        load(doc)
    assert excinfo.value.obj == "<object>"
    assert excinfo.value.path == "items[1].kind"


def test_other_kinds_are_skipped_with_one_warning(tmp_path: Path) -> None:
    # A `kubectl get all,resourceclaims,... -o yaml` dump: what draspeed does not read
    # is counted and named once, the rest is read.
    path = tmp_path / "dump.yaml"
    path.write_text(
        _dump(
            [
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
                _class("a"),
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "e"}},
            ]
        )
    )
    with pytest.warns(UserWarning) as caught:
        objects = load(path)
    assert [c.metadata.name for c in objects.classes] == ["a"]
    assert objects.skipped == {"Deployment": 2, "Service": 1}
    text = "skipped 3 objects of kinds draspeed does not read: Deployment (2), Service (1)"
    assert objects.warnings == [text]
    assert [str(w.message) for w in caught] == [text]


def test_a_skipped_kind_is_named_with_unprintable_characters_escaped() -> None:
    doc = {"apiVersion": "example.com/v1", "kind": "Ser\x1b[2Jvice", "metadata": {"name": "s"}}
    with pytest.warns(UserWarning) as caught:
        objects = load([doc])
    assert objects.skipped == {"Ser\x1b[2Jvice": 1}
    text = "skipped 1 object of kinds draspeed does not read: Ser\\x1b[2Jvice (1)"
    assert [str(w.message) for w in caught] == [text]


def test_document_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("just a string\n")
    with pytest.raises(InputError, match=r"x\.yaml document 1: expected object, got string"):
        load(path)
    path.write_text(json.dumps([_class("a"), 7]))
    with pytest.raises(
        InputError, match=r"x\.yaml document 1 item 2: expected object, got integer"
    ):
        load(path)


def test_top_level_array_and_empty_list() -> None:
    assert [c.metadata.name for c in load(json.dumps([_class("a"), _class("b")])).classes] == [
        "a",
        "b",
    ]
    assert len(load({"apiVersion": "v1", "kind": "List", "items": None})) == 0


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_string_is_neither_a_path_nor_text(blank: str) -> None:
    """Not a silent "nothing loaded", and not a missing file without a name."""
    with pytest.raises(InputError) as caught:
        load([_class("a"), blank])
    assert str(caught.value) == (
        "<text>[1]: an empty string: neither a file path nor YAML/JSON text"
    )


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        load(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="no such file or directory"):
        load("missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(InputError) as excinfo:
        load(bad)
    assert excinfo.value.obj == str(bad)


def test_missing_api_version() -> None:
    with pytest.raises(InputError) as excinfo:
        load({"kind": "Node", "metadata": {"name": "n"}})
    assert str(excinfo.value) == "<object>: apiVersion: Required value"


def test_decode_error_carries_the_document_as_a_note(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(_dump([_node("ok"), _class("Bad")]))
    with pytest.raises(InputError) as excinfo:
        load(path)
    assert str(excinfo.value).startswith("DeviceClass Bad: metadata.name: Invalid value")
    if sys.version_info >= (3, 11):
        assert excinfo.value.__notes__ == [f"in {path} document 2"]


# ------------------------------------------------------------------------ warnings


def test_conversion_warnings_are_listed_and_warned() -> None:
    with pytest.warns(DraspeedWarning) as caught:
        objects = load(
            DATA / "seeds" / "resourceclaim-v1alpha2.yaml",
            DATA / "seeds" / "deviceclass-v1beta1.yaml",
            validate="warn",
        )
    assert len(objects.warnings) == 4
    assert objects.warnings[-1] == 'DeviceClass dra.example.com: unknown field "spec.suitableNodes"'
    assert [str(w.message) for w in caught] == objects.warnings
    assert sum(w.category is DraspeedConversionWarning for w in caught) == 3


# ---------------------------------------------------------------- client objects


class _OpenAPIModel:
    """Shaped like a kubernetes-client (openapi-generator) model."""

    openapi_types: ClassVar[dict[str, str]] = {}
    attribute_map: ClassVar[dict[str, str]] = {}

    def __init__(self, **values: Any) -> None:
        for name in self.attribute_map:
            setattr(self, name, values.get(name))

    def to_dict(self) -> dict[str, Any]:  # snake_case keys, as the real client gives
        return {k: getattr(self, k) for k in self.attribute_map}


class V1ObjectMeta(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {
        "name": "name",
        "namespace": "namespace",
        "resource_version": "resourceVersion",
        "labels": "labels",
    }


class V1CELDeviceSelector(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {"expression": "expression"}


class V1DeviceSelector(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {"cel": "cel"}


class V1ExactDeviceRequest(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {
        "device_class_name": "deviceClassName",
        "allocation_mode": "allocationMode",
        "count": "count",
        "selectors": "selectors",
        "admin_access": "adminAccess",
    }


class V1DeviceRequest(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {
        "name": "name",
        "exactly": "exactly",
        "first_available": "firstAvailable",
    }


class V1DeviceClaim(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {"requests": "requests", "constraints": "constraints"}


class V1ResourceClaimSpec(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {"devices": "devices"}


class V1ResourceClaim(_OpenAPIModel):
    attribute_map: ClassVar[dict[str, str]] = {
        "api_version": "apiVersion",
        "kind": "kind",
        "metadata": "metadata",
        "spec": "spec",
        "status": "status",
    }


def test_kubernetes_client_model_is_converted_to_camel_case() -> None:
    claim = V1ResourceClaim(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=V1ObjectMeta(name="c", namespace="ns", resource_version="7", labels={"app": "x"}),
        spec=V1ResourceClaimSpec(
            devices=V1DeviceClaim(
                requests=[
                    V1DeviceRequest(
                        name="gpus",
                        exactly=V1ExactDeviceRequest(
                            device_class_name="gpu",
                            allocation_mode="ExactCount",
                            count=2,
                            selectors=[
                                V1DeviceSelector(cel=V1CELDeviceSelector(expression="true"))
                            ],
                        ),
                    )
                ]
            )
        ),
    )
    (decoded,) = load(claim).claims
    assert isinstance(decoded, ResourceClaim)
    exact = decoded.spec.devices.requests[0].exactly
    assert exact is not None
    assert (exact.device_class_name, exact.count, exact.admin_access) == ("gpu", 2, None)
    assert decoded.metadata.resource_version == "7"
    assert decoded.raw["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu"
    assert "status" not in decoded.raw  # unset fields are left out, as the server does


class _PydanticLike:
    def model_dump(self, *, by_alias: bool, exclude_none: bool, mode: str) -> dict[str, Any]:
        assert (by_alias, exclude_none, mode) == (True, True, "json")
        return _node("pydantic-node")


class _LightkubeLike:
    def to_dict(self) -> dict[str, Any]:
        return _class("lightkube-class")


class _Kr8sLike:
    raw: ClassVar[dict[str, Any]] = dict(
        _slice("kr8s-node"), apiVersion="resource.k8s.io/v1", kind="ResourceSlice"
    )


def test_other_client_objects() -> None:
    objects = load(_PydanticLike(), _LightkubeLike(), _Kr8sLike())
    assert isinstance(objects.nodes[0], Node) and objects.nodes[0].name == "pydantic-node"
    assert isinstance(objects.classes[0], DeviceClass)
    assert isinstance(objects.slices[0], ResourceSlice)


def test_to_plain_rejects_arbitrary_objects() -> None:
    with pytest.raises(InputError, match="not a Kubernetes object"):
        to_plain(object())


# ------------------------------------------------------------------------ Objects


def test_objects_helpers() -> None:
    objects = load(
        _class("a"),
        _node("n"),
        dict(_slice("s"), apiVersion="resource.k8s.io/v1", kind="ResourceSlice"),
    )
    assert len(objects) == 3
    assert [type(o).__name__ for o in objects] == ["ResourceSlice", "DeviceClass", "Node"]
    by_kind = objects.by_kind()
    assert set(by_kind) == {
        "ResourceSlice",
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "DeviceTaintRule",
        "Node",
        "Pod",
    }
    more = Objects()
    more.extend(objects)
    more.extend(load(_class("b")))
    assert [c.metadata.name for c in more.classes] == ["a", "b"]


# ------------------------------------------------------------------------- limits


def _class_with_parameters(parameters: Any) -> dict[str, Any]:
    """A DeviceClass whose opaque parameters are at nesting level 6."""
    doc = _class("gpu")
    doc["spec"]["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": parameters}}]
    return doc


def _nested(levels: int, innermost: Any = 1) -> Any:
    value = innermost
    for _ in range(levels):
        value = {"a": value}
    return value


def _error(*sources: Any, **limits: Any) -> InputError:
    with pytest.raises(InputError) as excinfo:
        load(*sources, **limits)
    return excinfo.value


def test_default_limits() -> None:
    limits = Limits()
    assert (limits.max_bytes, limits.max_depth, limits.max_alias_expansion) == (
        1 << 30,
        200,
        10_000_000,
    )
    defaults = {name: p.default for name, p in inspect.signature(load).parameters.items()}
    assert defaults["max_bytes"] == limits.max_bytes
    assert defaults["max_depth"] == limits.max_depth
    assert defaults["max_alias_expansion"] == limits.max_alias_expansion


@pytest.mark.parametrize("name", ["max_bytes", "max_depth", "max_alias_expansion"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_limits_must_be_positive_integers(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        load(_class("a"), **{name: value})


def test_file_size_limit_is_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_class("a")))
    size = path.stat().st_size
    assert len(load(path, max_bytes=size).classes) == 1
    error = _error(path, max_bytes=size - 1)
    assert (error.obj, error.path) == (str(path), "")
    assert error.message == (
        f"{size} bytes is more than the limit of {size - 1} bytes "
        "(load(..., max_bytes=...); on the command line, --max-input-bytes)"
    )


def test_size_limit_of_a_file_without_a_size() -> None:
    """A character device reports no size: it is read up to the limit, never beyond."""
    error = _error("/dev/zero", max_bytes=1000)
    assert str(error) == (
        "/dev/zero: more than the limit of 1000 bytes "
        "(load(..., max_bytes=...); on the command line, --max-input-bytes)"
    )


def test_stdin_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _dump([_class("a")]).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert len(load("-", max_bytes=len(data)).classes) == 1
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    error = _error("-", max_bytes=len(data) - 1)
    assert error.obj == "<stdin>" and "more than the limit" in error.message


DEPTH_FORMATS = {
    "json": lambda doc: json.dumps(doc),
    "json-bytes": lambda doc: json.dumps(doc, indent=2).encode(),
    "yaml-block": lambda doc: yaml.safe_dump(doc),
    "yaml-flow": lambda doc: yaml.safe_dump(doc, default_flow_style=True),
}


@pytest.mark.parametrize("fmt", sorted(DEPTH_FORMATS))
@pytest.mark.parametrize("innermost", [1, [], {}], ids=["scalar", "empty-list", "empty-map"])
def test_depth_limit_at_and_above(fmt: str, innermost: Any) -> None:
    # Levels: document, spec, config, item, opaque = 5, then the parameters' nesting.
    extra = 0 if innermost == 1 else 1  # an empty collection is a level of its own
    at_limit = DEPTH_FORMATS[fmt](_class_with_parameters(_nested(15 - extra, innermost)))
    assert len(load(at_limit, max_depth=20).classes) == 1
    above = DEPTH_FORMATS[fmt](_class_with_parameters(_nested(16 - extra, innermost)))
    error = _error(above, max_depth=20)
    assert error.message.startswith("collections nest more than 20 levels deep")
    assert error.obj in ("<text>", "<bytes>", "<text> document 1", "<bytes> document 1")
    assert len(load(above, max_depth=21).classes) == 1


def test_depth_limit_default_and_deep_inputs() -> None:
    """50,000 levels: one InputError, never a crash or a RecursionError (YAML in a
    child process would crash without the limit; here it must not get that far)."""
    deep_json = "[" * 50_000 + "]" * 50_000
    assert "nest more than 200" in str(_error(deep_json))
    deep_yaml = "a: " + "[" * 50_000 + "]" * 50_000 + "\n"
    error = _error(deep_yaml)
    assert error.obj == "<text> document 1" and "nest more than 200" in error.message
    fine = _class_with_parameters(_nested(194))
    assert len(load(json.dumps(fine)).classes) == 1
    assert len(load(yaml.safe_dump(fine)).classes) == 1


def test_deep_parameters_within_the_limit_survive_encoding() -> None:
    """What load accepts, the encoders copy: opaque parameters at the depth limit."""
    from draspeed.cluster import Cluster
    from draspeed.testing.documents import claim_with_parameters

    claim = claim_with_parameters(_nested(193))
    slice_ = dict(_slice("node-1"), apiVersion="resource.k8s.io/v1", kind="ResourceSlice")
    slice_["spec"]["driver"] = "gpu"
    text = json.dumps([_node("node-1"), slice_, _class("gpu"), claim])
    outcome = Cluster.from_objects(load(text)).allocate("node-1", engine="fast", timeout=30)
    assert outcome.error is None and outcome.results, outcome


YAML_ALIASES = """\
apiVersion: v1
kind: Node
metadata:
  name: n
  labels: {zone: a}
  annotations:
    long: &long "%s"
%s
"""


def test_alias_expansion_limit() -> None:
    value = "x" * 100
    uses = "\n".join(f"    copy{i}: *long" for i in range(20))
    text = YAML_ALIASES % (value, uses)
    node = load(text, max_alias_expansion=20 * 101).nodes[0]
    assert node.raw["metadata"]["annotations"]["copy19"] == value
    error = _error(text, max_alias_expansion=20 * 101 - 1)
    assert error.obj == "<text> document 1" and error.path == ""
    assert error.message == (
        "YAML aliases expand to more than 2019 nodes and characters with alias *long at "
        "line 27, column 13 (load(..., max_alias_expansion=...))"
    )


def test_billion_laughs_fails_fast() -> None:
    levels = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nbomb:\n" + "".join(
        f"  {line}\n" for line in levels
    )
    assert "YAML aliases expand to more than 10000000" in _error(text).message


def test_alias_cycles_and_alias_depth() -> None:
    cycle = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nloop: &x [1, *x]\n"
    assert _error(cycle).message == (
        "YAML alias *x at line 4, column 14 refers to a node that contains it"
    )
    deep = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nd: &d [[[[1]]]]\ne: [[[*d]]]\n"
    assert len(load(deep, max_depth=8, validate="ignore").nodes) == 1  # d, e: unknown
    error = _error(deep, max_depth=7)
    assert error.message == (
        "collections nest more than 7 levels deep with alias *d at "
        "line 5, column 7 (load(..., max_depth=...))"
    )


def test_merge_keys_are_not_duplicates() -> None:
    text = """\
apiVersion: v1
kind: Node
metadata:
  name: n
  labels: &base {zone: a, rack: r1}
  annotations:
    <<: [*base, {extra: x}]
    rack: r2
"""
    meta = load(text).nodes[0].raw["metadata"]
    assert meta["annotations"] == {"zone": "a", "rack": "r2", "extra": "x"}


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n",
            "metadata.name",
            'duplicate key "name" at line 5, column 3 (first at line 4, column 3)',
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {x: '1', 'x': '2'}}\n",
            "metadata.labels.x",
            'duplicate key "x" at line 3, column 38 (first at line 3, column 30)',
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nspec:\n  taints:\n  - {key: k}\n"
            "  - {key: k, key: j}\n",
            "spec.taints[1].key",
            'duplicate key "key" at line 7, column 14 (first at line 7, column 6)',
        ),
        (
            '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "name": "b"}}',
            "metadata.name",
            'duplicate key "name"',
        ),
        (
            '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "\\u006eame": "b"}}',
            "metadata.name",
            'duplicate key "name"',
        ),
        (
            '[{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "a"}, "kind": "Node"}]',
            "[0].kind",
            'duplicate key "kind"',
        ),
    ],
    ids=["yaml-block", "yaml-flow", "yaml-in-list", "json", "json-escaped", "json-list"],
)
def test_duplicate_keys(text: str, path: str, message: str) -> None:
    error = _error(text)
    assert (error.obj, error.path, error.message) == ("<text> document 1", path, message)


@pytest.mark.parametrize(
    "text",
    [
        '{"apiVersion" : "v1", "kind"\n:\t"Node", "metadata": {"name": "a"}}',
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", '
        '"labels": {"x": "a\\": b", "y": "c\\\\", "z": "\\\\\\": d"}}}',
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", '
        '"labels": {"a": "1"}, "annotations": {"a": "1", "b\\\\": "2"}}}',
    ],
    ids=["whitespace-before-colons", "escaped-quotes-in-values", "key-ending-in-backslash"],
)
def test_json_without_duplicates_is_accepted(text: str) -> None:
    # Odd label keys and values: what is read, not whether the API server takes them.
    assert len(load(text, validate="ignore").nodes) == 1
    assert len(load(text.encode(), validate="ignore").nodes) == 1


def test_a_byte_of_no_utf8_in_json_is_read_as_go_reads_it() -> None:
    """U+FFFD (which the API server then judges: here, in a name)."""
    data = json.dumps(_node("n")).encode().replace(b'"n"', b'"\xffn"')
    assert str(_error(data)).startswith('Node \ufffdn: metadata.name: Invalid value: "\ufffdn"')


def _pyyaml_documents(text: str) -> list[Any]:
    class Loader(yaml.CSafeLoader):
        pass

    Loader.yaml_implicit_resolvers = text_module._DocumentLoader.yaml_implicit_resolvers
    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


YAML_FEATURES = """\
plain: text
quoted: "1"
numbers: [1, 0x1f, 0o17, 1.5, 1e3, 12_000]
bools: [true, False, yes, off]
nulls: [null, ~, ]
time: 2026-11-20T10:00:00Z
date: 2026-11-20
binary: !!binary aGVsbG8=
set: !!set {a, b}
pairs: !!pairs [{a: 1}, {b: 2}]
omap: !!omap [{a: 1}]
block: |
  two
  lines
folded: >
  one
  line
"=": value key
? [complex, key]
: value
anchors: {a: &x [1, 2], b: *x, <<: {m: 1}}
---
second: document
--- # empty
---
- a list document
"""


@pytest.mark.parametrize("composer", ["libyaml", "limited"])
def test_yaml_reads_as_pyyaml_reads(composer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both composers (libyaml's when the text cannot nest too deep, the limited one
    otherwise) give what PyYAML's safe loader gives, on every YAML file of the tests."""
    if composer == "limited":
        monkeypatch.setattr(text_module, "_libyaml_composer_is_safe", lambda *args: False)
    texts = [YAML_FEATURES.replace("? [complex, key]\n: value\n", "")]
    here = Path(__file__).parent
    for path in sorted(here.rglob("*.yaml")):
        # PyYAML itself crashes on some of bad_input; the quantity cases hold .inf and
        # .nan, which draspeed refuses (JSON cannot hold them).
        if path.parent.name == "bad_input" or path.name == "quantity_cases.yaml":
            continue
        text = path.read_text(encoding="utf-8")
        # (A JSON text with surrogate escapes is no YAML: YAML refuses such escapes.)
        if not (text.startswith("{") and "\\ud8" in text):
            texts.append(text)
    assert len(texts) > 100
    for text in texts:
        assert text_module.parse_text(text) == _pyyaml_documents(text)
    with pytest.raises(text_module.TextError, match="found unhashable key"):
        text_module.parse_text(YAML_FEATURES)


@pytest.mark.parametrize(
    ("value", "shown"), [(".inf", "+Inf"), ("-.inf", "-Inf"), (".NaN", "NaN"), (".Inf", "+Inf")]
)
def test_floats_json_cannot_hold_are_refused(value: str, shown: str) -> None:
    """kubectl converts YAML to JSON first, and JSON has no NaN or infinities."""
    text = f"apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  x: [1, {value}]\n"
    error = _error(text)
    assert (error.obj, error.path) == ("<text> document 1", "metadata.x[1]")
    assert error.message == f"error converting YAML to JSON: json: unsupported value: {shown}"
