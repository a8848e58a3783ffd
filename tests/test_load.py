"""draspeed.load: files, directories, stdin, text, lists, client objects."""

from __future__ import annotations

import gc
import io
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from draspeed.api import DraspeedConversionWarning
from draspeed.api.model import DeviceClass, Node, ResourceClaim, ResourceSlice
from draspeed.errors import InputError
from draspeed.load import Objects, load, to_plain

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


def test_file_directory_recursion_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.yml").write_text(_dump([_class("two")]))
    (tmp_path / "a.yaml").write_text(_dump([_class("one"), _node("n1")]))
    (tmp_path / "c.json").write_text(json.dumps(_class("three")))
    (tmp_path / "notes.txt").write_text("kind: Nonsense")
    objects = load(tmp_path)
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
        load({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert gc.isenabled()


# ------------------------------------------------------------------------- errors


def test_unknown_kind_names_the_document(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        _dump([_class("a"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}])
    )
    with pytest.raises(InputError) as excinfo:
        load(path)
    assert str(excinfo.value) == (
        f"{path} document 2: kind: unsupported kind 'Pod' (apiVersion 'v1'); supported kinds: "
        "ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule, "
        "ResourceClass, Node"
    )


def test_unknown_kind_in_a_list_names_the_item() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_class("a"), {"apiVersion": "v1", "kind": "Secret"}],
    }
    with pytest.raises(InputError) as excinfo:
        load(doc)
    assert excinfo.value.obj == "<object>"
    assert excinfo.value.path == "items[1].kind"


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
    with pytest.warns(DraspeedConversionWarning):
        objects = load(
            DATA / "seeds" / "resourceclaim-v1alpha2.yaml",
            DATA / "seeds" / "deviceclass-v1beta1.yaml",
        )
    assert len(objects.warnings) == 4
    assert objects.warnings[-1].startswith("DeviceClass dra.example.com: spec.suitableNodes:")


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
    }
    more = Objects()
    more.extend(objects)
    more.extend(load(_class("b")))
    assert [c.metadata.name for c in more.classes] == ["a", "b"]
