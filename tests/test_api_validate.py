"""Validation: upstream's limits, one exact error per bad object, and the inputs that
must pass without validation because upstream's allocator answers them itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api import decode, validate
from draspeed.api.loader import load
from draspeed.api.model import ResourceClaim, ResourceSlice
from draspeed.errors import InputError

DATA = Path(__file__).parent / "data" / "api"
INVALID = sorted((DATA / "invalid").glob("*.yaml"))
ACCEPTED = sorted((DATA / "accepted").glob("*.yaml"))


def _case(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return case


def test_catalogue_is_large() -> None:
    assert len(INVALID) >= 40


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_object_fails_with_exact_text(path: Path) -> None:
    case = _case(path)
    with pytest.raises(InputError) as excinfo:
        decode(case["object"])
    assert str(excinfo.value) == case["error"]
    # The error names the object first, then the field path.
    assert str(excinfo.value).startswith(f"{excinfo.value.obj}: ")


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_object_without_validation(path: Path) -> None:
    """Malformed objects fail either way; objects that only break a limit decode."""
    case = _case(path)
    expected = case["error_without_validation"]
    if expected is None:
        decode(case["object"], validate=False)
    else:
        with pytest.raises(InputError) as excinfo:
            decode(case["object"], validate=False)
        assert str(excinfo.value) == expected


@pytest.mark.parametrize("path", INVALID[:12], ids=lambda p: p.stem)
def test_load_reports_the_same_error(path: Path) -> None:
    case = _case(path)
    with pytest.raises(InputError) as excinfo:
        load(case["object"])
    assert str(excinfo.value) == case["error"]


# -------------------------------------------------------------------------- accepted


def _claim(path: Path) -> ResourceClaim:
    obj = decode(yaml.safe_load(path.read_text(encoding="utf-8")), validate="ignore")
    assert isinstance(obj, ResourceClaim)
    return obj


def _slice(path: Path) -> ResourceSlice:
    obj = decode(yaml.safe_load(path.read_text(encoding="utf-8")), validate="ignore")
    assert isinstance(obj, ResourceSlice)
    return obj


def _check_accepted(name: str, path: Path) -> None:
    if name == "empty-device-class-name":
        exact = _claim(path).spec.devices.requests[0].exactly
        assert exact is not None and exact.device_class_name == ""
    elif name == "selector-without-cel":
        exact = _claim(path).spec.devices.requests[0].exactly
        assert exact is not None and exact.selectors[0].cel is None
    elif name == "unknown-allocation-mode":
        exact = _claim(path).spec.devices.requests[0].exactly
        assert exact is not None and exact.allocation_mode == "future-mode"
    elif name == "empty-constraint":
        c = _claim(path).spec.devices.constraints[0]
        assert (
            c.requests == ["req-0"] and c.match_attribute is None and c.distinct_attribute is None
        )
    elif name == "admin-access":
        exact = _claim(path).spec.devices.requests[0].exactly
        assert exact is not None and exact.admin_access is False
    elif name == "too-many-devices-requested":
        exact = _claim(path).spec.devices.requests[0].exactly
        assert exact is not None and exact.count == 500
    elif name == "attribute-without-value":
        devices = _slice(path).spec.devices
        assert devices[0].attributes["driver-a/stringAttribute"].kind is None
        assert devices[1].attributes["driver-a/stringAttribute"].kind == "strings"
        assert devices[1].attributes["driver-a/stringAttribute"].value == ()
    elif name == "duplicate-device-names":
        assert [d.name for d in _slice(path).spec.devices] == ["device-1", "device-1"]
    elif name == "duplicate-counter-sets":
        assert [c.name for c in _slice(path).spec.shared_counters] == ["counter-set-1"] * 2
    elif name == "per-device-selection-without-node":
        device = _slice(path).spec.devices[0]
        assert (device.node_name, device.node_selector, device.all_nodes) == (None, None, None)
    elif name == "devices-and-counters-in-one-slice":
        spec = _slice(path).spec
        assert len(spec.devices) == 1 and len(spec.shared_counters) == 1
    elif name == "request-policy-beyond-capacity":
        cap = _slice(path).spec.devices[0].capacity["capacity0"]
        assert cap.request_policy is not None and cap.request_policy.valid_range is not None
        assert str(cap.request_policy.valid_range.max) == "4"
    else:  # pragma: no cover - a new file needs its check here
        raise AssertionError(f"no check for {name}")


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.stem)
def test_allocator_handled_input_is_accepted(path: Path) -> None:
    _check_accepted(path.stem, path)


def test_accepted_catalogue_covers_the_allocator_errors() -> None:
    names = {p.stem for p in ACCEPTED}
    assert {
        "empty-device-class-name",
        "selector-without-cel",
        "unknown-allocation-mode",
        "empty-constraint",
        "admin-access",
        "attribute-without-value",
    } <= names


# ---------------------------------------------------------------------- validate()


def test_validate_rechecks_a_decoded_object() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "subReq-0", "exactly": {"deviceClassName": "a"}}]}
        },
    }
    claim = decode(obj, validate=False)
    assert isinstance(claim, ResourceClaim)
    assert claim.spec.devices.requests[0].name == "subReq-0"
    with pytest.raises(
        InputError, match=r"spec.devices.requests\[0\].name: Invalid value: \"subReq-0\""
    ):
        validate(claim)


def test_validate_accepts_typed_list_items_without_type_meta() -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClassList",
        "items": [{"metadata": {"name": "gpu"}, "spec": {}}],
    }
    (cls,) = load(doc).classes
    assert "kind" not in cls.raw
    validate(cls)


def test_first_violation_is_reported_once() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "BAD DRIVER",
            "pool": {"name": "", "generation": -1, "resourceSliceCount": 0},
        },
    }
    with pytest.raises(InputError) as excinfo:
        decode(obj)
    assert excinfo.value.path == "spec.driver"
    assert excinfo.value.obj == "ResourceSlice s"


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("numa", "numa"),
        ("gpu.example.com/numa", "gpu.example.com/numa"),
        # validateMap shortens keys beyond 96 bytes (domain, "/", identifier) in the
        # middle: 47 bytes, "...", the last 46.
        ("d" * 63 + "/" + "n" * 40, "d" * 47 + "..." + "d" * 5 + "/" + "n" * 40),
    ],
)
def test_map_entries_are_written_as_the_api_server_writes_them(key: str, shown: str) -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-1",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {key: {"version": "v1"}}}],
        },
    }
    with pytest.raises(InputError) as excinfo:
        decode(obj)
    if len(key) > 96:  # the name itself is too long
        assert excinfo.value.path == f"spec.devices[0].attributes[{shown}]"
    else:
        assert excinfo.value.path == f"spec.devices[0].attributes[{shown}].version"


# A struct field or item (not a pointer) that is absent or null decodes into Go's zero
# value, validated as the API server validates it: (object, validated outcome).
ZERO_VALUES = {
    "template-without-spec": (
        {"kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "default"}},
        None,  # the zero claim spec asks for nothing: valid
    ),
    "taint-rule-without-spec": (
        {"kind": "DeviceTaintRule", "metadata": {"name": "r"}},
        'DeviceTaintRule r: spec.taint.key: Invalid value: "": name part must be non-empty',
    ),
    "claim-request-null": (
        {
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [None]}},
        },
        "ResourceClaim default/c: spec.devices.requests[0].name: Required value",
    ),
    "capacity-request-null": (
        {
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "r",
                            "exactly": {
                                "deviceClassName": "gpu",
                                "capacity": {"requests": {"memory": None}},
                            },
                        }
                    ]
                }
            },
        },
        None,  # a request of zero
    ),
}


@pytest.mark.parametrize("name", sorted(ZERO_VALUES))
def test_absent_or_null_structs_and_quantities_are_go_zero_values(name: str) -> None:
    raw, error = ZERO_VALUES[name]
    version = "v1alpha3" if raw["kind"] == "DeviceTaintRule" else "v1"
    obj = {"apiVersion": f"resource.k8s.io/{version}", **raw}
    decode(obj, validate=False)  # Go decodes every one of them
    if error is None:
        decoded = decode(obj)
        if name == "capacity-request-null":
            assert isinstance(decoded, ResourceClaim)
            exactly = decoded.spec.devices.requests[0].exactly
            assert exactly is not None and exactly.capacity is not None
            assert str(exactly.capacity.requests["memory"]) == "0"
    else:
        with pytest.raises(InputError) as excinfo:
            decode(obj)
        assert str(excinfo.value) == error
