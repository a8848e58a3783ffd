"""Decoding every served version and kind into the one v1 model."""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api import DraspeedConversionWarning, DraspeedWarning, decode
from draspeed.api.loader import load
from draspeed.api.model import (
    DeviceAttribute,
    DeviceClass,
    DeviceTaintRule,
    Node,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draspeed.errors import InputError
from draspeed.quantity import Quantity
from draspeed.testing.cases import scenario_validation

DATA = Path(__file__).parent / "data" / "api"
DIFFERENTIAL = Path(__file__).parent / "data" / "differential"
DIFFERENTIAL_FILES = sorted(DIFFERENTIAL.glob("*.yaml"))


def _one(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DraspeedWarning)
        (obj,) = list(load(path))
    return obj


def _strip(obj: Any, **changes: Any) -> Any:
    """The model without what legitimately differs between versions."""
    return dataclasses.replace(obj, raw={}, api_version="", **changes)


# ----------------------------------------------------------------- differential corpus


def test_differential_corpus_has_311_scenarios() -> None:
    # 300 random scenarios (s1-*) and 11 written for CEL timestamps, durations and formats (t-*)
    assert len(DIFFERENTIAL_FILES) == 311


_TOP_KIND = re.compile(r"^kind: (\w+)$", re.MULTILINE)
_TOP_NAME = re.compile(r"^metadata:\n  name: (\S+)$", re.MULTILINE)


@pytest.mark.parametrize("path", DIFFERENTIAL_FILES, ids=lambda p: p.stem)
def test_differential_scenario_decodes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # kubectl-style documents: top-level "kind:" and "metadata:\n  name:" lines, in order.
    kinds, names = _TOP_KIND.findall(text), _TOP_NAME.findall(text)
    objects = load(path, validate=scenario_validation(str(path)))
    assert len(objects) == len(kinds) == len(names)
    assert len(objects.nodes) >= 1
    by_kind = objects.by_kind()
    for kind, decoded in by_kind.items():
        expected = [n for k, n in zip(kinds, names, strict=True) if k == kind]
        assert [o.metadata.name for o in decoded] == expected, kind


# ------------------------------------------------------------------ version equivalence


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_slice_versions_decode_to_the_same_model(version: str) -> None:
    v1 = _one(DATA / "versions" / "slice-v1.yaml")
    other = _one(DATA / "versions" / f"slice-{version}.yaml")
    assert other.api_version == f"resource.k8s.io/{version}"
    assert _strip(other) == _strip(v1)


def test_v1alpha3_slice_matches_v1_without_the_newer_fields() -> None:
    v1 = _one(DATA / "versions" / "slice-v1.yaml")
    alpha = _one(DATA / "versions" / "slice-v1alpha3.yaml")
    # v1alpha3 has no list-type attributes (a "strings" value is an unknown field there).
    attributes = dict(v1.spec.devices[0].attributes)
    del attributes["gpu.example.com/links"]
    gpu0 = dataclasses.replace(v1.spec.devices[0], attributes=attributes)
    gpu1 = dataclasses.replace(
        v1.spec.devices[1],
        binds_to_node=None,
        binding_conditions=[],
        binding_failure_conditions=[],
        allow_multiple_allocations=None,
    )
    spec = dataclasses.replace(v1.spec, devices=[gpu0, gpu1])
    assert _strip(alpha) == _strip(v1, spec=spec)
    assert isinstance(alpha.spec.devices[0].capacity["memory"].value, Quantity)


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_claim_versions_decode_to_the_same_model(version: str) -> None:
    v1 = _one(DATA / "versions" / "claim-v1.yaml")
    other = _one(DATA / "versions" / f"claim-{version}.yaml")
    assert _strip(other) == _strip(v1)


def test_claim_model_details() -> None:
    claim = _one(DATA / "versions" / "claim-v1beta1.yaml")
    assert isinstance(claim, ResourceClaim)
    gpus, nic, monitor = claim.spec.devices.requests
    assert gpus.exactly is not None and gpus.exactly.count == 2
    assert gpus.exactly.capacity is not None
    assert gpus.exactly.capacity.requests == {"memory": Quantity.parse("40Gi")}
    assert nic.exactly is None  # deviceClassName "" next to firstAvailable is not a request
    assert [s.name for s in nic.first_available] == ["fast", "any"]
    assert nic.first_available[0].allocation_mode == "ExactCount"
    assert nic.first_available[0].count == 1
    assert (nic.first_available[1].allocation_mode, nic.first_available[1].count) == ("All", 0)
    assert monitor.exactly is not None and monitor.exactly.admin_access is True
    assert claim.key == "ml/train-0"
    result = claim.status.allocation
    assert result is not None
    assert result.devices.results[0].share_id == "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    assert str(result.devices.results[0].consumed_capacity["memory"]) == "40Gi"
    assert result.devices.config[0].opaque is not None
    assert result.devices.config[0].opaque.parameters == {
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }
    assert claim.status.reserved_for[0].name == "train-0-worker"


# ------------------------------------------------------------------------- the seeds


def test_seed_classic_claim_converts_with_warnings() -> None:
    path = DATA / "seeds" / "resourceclaim-v1alpha2.yaml"
    with pytest.warns(DraspeedConversionWarning) as record:
        objects = load(path)
    (claim,) = objects.claims
    assert claim.api_version == "resource.k8s.io/v1alpha2"
    (request,) = claim.spec.devices.requests
    assert request.name == "request"
    assert request.exactly is not None and request.exactly.device_class_name == "gpu.example.com"
    assert (request.exactly.allocation_mode, request.exactly.count) == ("ExactCount", 1)
    result = claim.status.allocation
    assert result is not None
    assert [(r.request, r.driver, r.pool, r.device) for r in result.devices.results] == [
        ("request", "gpu.example.com", "node-1", "gpu-0"),
        ("request", "gpu.example.com", "node-1", "gpu-1"),
    ]
    assert [(c.source, c.requests) for c in result.devices.config] == [
        ("FromClass", []),
        ("FromClaim", ["request"]),
    ]
    assert result.devices.config[1].opaque is not None
    assert result.devices.config[1].opaque.parameters == {
        "kind": "GpuRequestParameters",
        "memory": "40Gi",
    }
    assert result.node_selector is not None
    assert result.node_selector.node_selector_terms[0].match_fields[0].values == ["node-1"]
    assert claim.status.deallocation_requested is True
    assert claim.status.reserved_for[0].uid == "6a0e9f8d-1111-4c2b-9e3f-000000000042"
    # Every loss is both warned and listed.
    texts = [str(w.message) for w in record]
    assert objects.warnings == texts
    assert [t.split(": ")[1] for t in texts] == [
        "spec.allocationMode",
        "spec.parametersRef",
        "status.allocation.shareable",
    ]


def test_classic_allocation_without_node_name_says_pool_is_unknown() -> None:
    obj = yaml.safe_load((DATA / "seeds" / "resourceclaim-v1alpha2.yaml").read_text())
    del obj["status"]["allocation"]["resourceHandles"][0]["structuredData"]["nodeName"]
    obj["status"]["allocation"]["resourceHandles"].append(
        {"driverName": "x.example.com", "data": "opaque"}
    )
    with pytest.warns(DraspeedConversionWarning) as record:
        claim = decode(obj)
    assert isinstance(claim, ResourceClaim) and claim.status.allocation is not None
    assert {r.pool for r in claim.status.allocation.devices.results} == {""}
    texts = " | ".join(str(w.message) for w in record)
    assert "the pool of the allocated devices is unknown" in texts
    assert (
        "status.allocation.resourceHandles[1]: a resource handle with only opaque driver data"
        in texts
    )


def test_seed_device_class_v1beta1() -> None:
    # The reference page lists spec.suitableNodes, which v1beta1 never had (it was
    # dropped with classic DRA in 1.32, when v1beta1 came): an unknown field.
    path = DATA / "seeds" / "deviceclass-v1beta1.yaml"
    with pytest.raises(InputError, match=r'unknown field "spec\.suitableNodes"'):
        load(path)
    with pytest.warns(DraspeedWarning, match=r'unknown field "spec\.suitableNodes"'):
        (cls,) = load(path, validate="warn").classes
    assert isinstance(cls, DeviceClass)
    expressions = [s.cel.expression for s in cls.spec.selectors if s.cel]
    assert expressions[1].startswith("cel.bind(dra, device.attributes[")
    assert cls.spec.config[0].opaque is not None
    assert cls.spec.config[0].opaque.parameters["kind"] == "MyAPIObject"


def test_seed_resource_slices_v1() -> None:
    counters, devices = load(DATA / "seeds" / "resourceslice-v1.yaml").slices
    assert counters.spec.all_nodes is True
    assert counters.spec.shared_counters[0].counters["multiprocessors"].value == Quantity.parse(
        "132"
    )
    spec = devices.spec
    assert spec.per_device_node_selection is True
    gpu0, gpu1, gpu2 = spec.devices
    assert gpu0.node_name == "node-1" and gpu2.all_nodes is True
    assert gpu1.node_selector is not None
    assert gpu0.attributes["gpu.example.com/driverVersion"] == DeviceAttribute(
        "version", "550.54.15"
    )
    assert gpu0.attributes["gpu.example.com/mig"] == DeviceAttribute("bool", False)
    policy = gpu0.capacity["memory"].request_policy
    assert policy is not None and policy.valid_range is not None
    assert [str(q) for q in (policy.default, policy.valid_range.min, policy.valid_range.step)] == [
        "10Gi",
        "10Gi",
        "10Gi",
    ]
    values = gpu0.capacity["multiprocessors"].request_policy
    assert values is not None and [str(v) for v in values.valid_values] == ["33", "66", "132"]
    assert gpu0.consumes_counters[0].counter_set == "gpu-0-cs"
    assert gpu0.taints[0].effect == "NoExecute"
    assert gpu0.taints[0].time_added == "2025-08-27T12:00:00Z"
    assert gpu1.binds_to_node is True
    assert gpu1.binding_conditions == ["dra.example.com/is-prepared"]


def test_seed_claim_status_v1alpha3() -> None:
    with pytest.warns(DraspeedConversionWarning, match="status.allocation.controller"):
        (claim,) = load(DATA / "seeds" / "resourceclaim-v1alpha3-status.yaml").claims
    result = claim.status.allocation
    assert result is not None
    assert result.devices.results[0].admin_access is None
    assert result.devices.config[0].source == "FromClass"
    assert claim.spec.devices.requests[0].exactly is not None


# ---------------------------------------------------------------------- other kinds


def test_template_v1_and_v1beta1() -> None:
    v1 = decode(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}
                },
            },
        }
    )
    beta = decode(
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}},
        }
    )
    assert isinstance(v1, ResourceClaimTemplate) and isinstance(beta, ResourceClaimTemplate)
    assert v1.spec == beta.spec
    assert v1.spec.devices.requests[0].exactly is not None


def test_classic_claim_template_and_resource_class() -> None:
    tmpl = decode(
        {
            "apiVersion": "resource.k8s.io/v1alpha2",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"spec": {"resourceClassName": "gpu"}},
        }
    )
    assert isinstance(tmpl, ResourceClaimTemplate)
    assert tmpl.spec.devices.requests[0].exactly is not None
    cls = decode(
        {
            "apiVersion": "resource.k8s.io/v1alpha2",
            "kind": "ResourceClass",
            "metadata": {"name": "gpu"},
            "driverName": "gpu.example.com",
        }
    )
    assert isinstance(cls, DeviceClass)
    assert cls.spec.selectors[0].cel is not None
    assert cls.spec.selectors[0].cel.expression == 'device.driver == "gpu.example.com"'


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1alpha3"])
def test_device_taint_rule(version: str) -> None:
    rule = decode(
        {
            "apiVersion": f"resource.k8s.io/{version}",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "maint"},
            "spec": {
                "deviceSelector": {
                    "driver": "gpu.example.com",
                    "pool": "node-1",
                    "device": "gpu-0",
                },
                "taint": {"key": "example.com/maint", "value": "now", "effect": "NoExecute"},
            },
        }
    )
    assert isinstance(rule, DeviceTaintRule)
    assert rule.device_selector is not None
    assert (
        rule.device_selector.driver,
        rule.device_selector.pool,
        rule.device_selector.device,
    ) == (
        "gpu.example.com",
        "node-1",
        "gpu-0",
    )
    assert (rule.taint.key, rule.taint.value, rule.taint.effect) == (
        "example.com/maint",
        "now",
        "NoExecute",
    )


def test_device_taint_rule_v1alpha3_class_and_selectors() -> None:
    rule = decode(
        {
            "apiVersion": "resource.k8s.io/v1alpha3",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "r"},
            "spec": {
                "deviceSelector": {
                    "deviceClassName": "gpu",
                    "selectors": [{"cel": {"expression": "true"}}],
                },
                "taint": {"key": "k", "effect": "NoSchedule"},
            },
        }
    )
    assert isinstance(rule, DeviceTaintRule) and rule.device_selector is not None
    assert rule.device_selector.device_class_name == "gpu"
    assert rule.device_selector.selectors[0].cel is not None


def test_node() -> None:
    node = decode(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-1", "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": "8"}},
        }
    )
    assert isinstance(node, Node)
    assert (node.name, node.labels) == ("node-1", {"zone": "a"})


# ------------------------------------------------------------------------- details


def _slice_with(attributes: dict[str, Any], **device: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n",
            "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": "d", "attributes": attributes, **device}],
        },
    }


def test_attribute_names_are_fully_qualified() -> None:
    s = decode(_slice_with({"model": {"string": "x"}, "other.example.com/speed": {"int": 5}}))
    assert isinstance(s, ResourceSlice)
    assert list(s.spec.devices[0].attributes) == [
        "gpu.example.com/model",
        "other.example.com/speed",
    ]


def test_bare_and_qualified_duplicate_keeps_qualified() -> None:
    obj = _slice_with({"gpu.example.com/model": {"string": "long"}, "model": {"string": "short"}})
    with pytest.warns(DraspeedWarning, match="also given with its domain"):
        s = decode(obj)
    assert isinstance(s, ResourceSlice)
    assert s.spec.devices[0].attributes == {
        "gpu.example.com/model": DeviceAttribute("string", "long")
    }


def test_attribute_kinds_and_values() -> None:
    s = decode(
        _slice_with(
            {
                "a": {"int": -3},
                "b": {"bool": False},
                "c": {"string": ""},
                "d": {"version": "1.0.0"},
                "e": {"ints": [1, 2]},
                "f": {"bools": [True]},
                "g": {"versions": ["1.0.0", "2.0.0-rc.1"]},
                "h": {"string": None, "int": 4},
                "i": {"future": 1.5},
            }
        ),
        validate="ignore",  # "i": an unknown field, then no value at all
    )
    assert isinstance(s, ResourceSlice)
    attrs = {k.split("/")[1]: (v.kind, v.value) for k, v in s.spec.devices[0].attributes.items()}
    assert attrs == {
        "a": ("int", -3),
        "b": ("bool", False),
        "c": ("string", ""),
        "d": ("version", "1.0.0"),
        "e": ("ints", (1, 2)),
        "f": ("bools", (True,)),
        "g": ("versions", ("1.0.0", "2.0.0-rc.1")),
        "h": ("int", 4),
        "i": (None, None),
    }


def test_quantities_are_exact_and_canonical() -> None:
    s = decode(
        _slice_with(
            {},
            capacity={
                "memory": {"value": "1.5Gi"},
                "cores": {"value": 8},
                "bw": {"value": " 100M "},
            },
        )
    )
    assert isinstance(s, ResourceSlice)
    cap = s.spec.devices[0].capacity
    assert [str(cap[k].value) for k in ("memory", "cores", "bw")] == [
        "1536Mi",
        "8",
        "100M",
    ]


def test_raw_is_the_input_mapping_with_unknown_fields() -> None:
    obj = _slice_with({}, futureField={"x": 1})
    obj["spec"]["partitionTypeAttribute"] = "gpu.example.com/profile"
    with pytest.raises(InputError, match=r'unknown field "spec\.devices\[0\]\.futureField"'):
        decode(obj)
    with pytest.warns(DraspeedWarning, match="futureField"):
        s = decode(obj, validate="warn")
    assert isinstance(s, ResourceSlice)
    assert s.raw is obj
    assert s.raw["spec"]["devices"][0]["futureField"] == {"x": 1}


def test_defaults_applied_like_the_api_server() -> None:
    claim = decode(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "d"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "a",
                            "exactly": {
                                "deviceClassName": "x",
                                "tolerations": [{"key": "k", "value": "v"}],
                            },
                        },
                        {"name": "b", "exactly": {"deviceClassName": "x", "allocationMode": "All"}},
                    ]
                }
            },
        }
    )
    assert isinstance(claim, ResourceClaim)
    a, b = (r.exactly for r in claim.spec.devices.requests)
    assert a is not None and b is not None
    assert (a.allocation_mode, a.count, a.tolerations[0].operator) == ("ExactCount", 1, "Equal")
    assert (b.allocation_mode, b.count) == ("All", 0)


def test_decoding_without_validation_keeps_upstream_test_names() -> None:
    # Upstream's own allocator tests use names the API server refuses (subReq-0, capacity-0).
    claim = decode(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "claim-0"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "req-0",
                            "firstAvailable": [
                                {
                                    "name": "subReq-0",
                                    "deviceClassName": "class-a",
                                    "capacity": {"requests": {"capacity-0": "1"}},
                                }
                            ],
                        }
                    ]
                }
            },
        },
        validate=False,
    )
    assert isinstance(claim, ResourceClaim)
    assert claim.spec.devices.requests[0].first_available[0].name == "subReq-0"


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        ([1, 2], "object: expected object, got array"),
        ({"kind": "Node"}, "object: apiVersion: Required value"),
        (
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}},
            "Service p: apiVersion: unsupported kind 'Service' (apiVersion 'v1'); supported "
            "kinds: ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, "
            "DeviceTaintRule, ResourceClass, Node, Pod",
        ),
        (
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": "gpu"},
            "DeviceClass (unnamed): metadata: expected object, got string",
        ),
    ],
)
def test_decode_errors_name_the_object(obj: Any, text: str) -> None:
    with pytest.raises(InputError) as excinfo:
        decode(obj)
    assert str(excinfo.value) == text


@pytest.mark.parametrize("field", ["attributes", "capacity"])
@pytest.mark.parametrize(
    ("value", "got"), [([], "array"), ("", "string"), (0, "integer"), (False, "boolean")]
)
@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("form", ["json", "dict", "list"])
def test_a_device_map_of_a_falsy_other_type_is_refused(
    field: str, value: Any, got: str, validate: bool, form: str
) -> None:
    """Go cannot decode ``[]``, ``""``, ``0`` or ``false`` into a device's attributes or
    capacity map (only null is as absent); they were read as empty maps, every reading
    alike (the checked decoder, the compiled one of dicts, the bulk one of List text)."""
    import json

    from draspeed import load
    from draspeed.errors import InputError
    from draspeed.testing.documents import resource_slice

    devices = [{"name": "d0", field: value}, {"name": "d1"}]
    slice_ = resource_slice("s", devices, driver="d.example.com", pool="p", nodeName="node-1")
    other = {**slice_, "metadata": {"name": "s2"}}
    source: Any = {
        "json": json.dumps(slice_),
        "dict": [slice_],
        "list": json.dumps({"apiVersion": "v1", "kind": "List", "items": [slice_, other]}),
    }[form]
    with pytest.raises(InputError) as caught:
        load(source, validate=validate)
    assert caught.value.path.endswith(f"spec.devices[0].{field}")
    assert str(caught.value).endswith(f"expected object, got {got}")
