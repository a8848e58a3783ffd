"""Scenarios in the differential format (shared/differential/README.md).

``<id>.yaml`` holds the objects as ``kubectl get -o yaml`` prints them (the Node,
DeviceClasses, ResourceSlices, claims already allocated, then the claims to
allocate); ``<id>.expected.json`` the node, the ``--feature-gates`` string and one
answer (``results`` / ``unsuitable`` / ``error``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draspeed.api.context import Validation
from draspeed.api.loader import load
from draspeed.errors import InputError
from draspeed.features import Features
from draspeed.testing.engines import Inputs

# What the API server refuses but upstream's allocator takes, and random scenarios may
# hold: such a scenario is an allocator case for objects that never met an API server.
# (field path fragment, message fragment) of each such refusal.
ALLOCATOR_ONLY_SHAPES = (
    ("spec", "only one of `sharedCounters` or `devices` is allowed"),
    ("spec.devices[", "is required when `perDeviceNodeSelection` is set to true"),
    (".attributes", "exactly one value must be specified"),  # an attribute without a value
    (".attributes", "must not be empty if specified"),  # an empty list attribute
    ("spec.sharedCounters[", "Duplicate value"),  # one counter set name twice
    ("spec.devices[", "Duplicate value"),  # one device name twice
    # A request policy the API server refuses: on a device that allows one allocation,
    # without a default, or with bounds beyond the capacity (upstream's own allocator
    # tests use such policies, and random scenarios make them).
    (".requestPolicy", ""),
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """Kubernetes objects (plain mappings, in corpus order) and where to allocate them."""

    documents: list[dict[str, Any]]
    node: str
    features: Features

    def yaml_text(self) -> str:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump_all(
            self.documents,
            Dumper=dumper,
            sort_keys=False,
            default_flow_style=False,
            explicit_start=True,
        )

    def inputs(self, *, validate: bool = True) -> Inputs:
        """Decoded (``validate``: with the API's checks, unless the scenario holds a shape
        only the allocator takes) and split as the scheduler would."""
        mode = scenario_validation(self.documents) if validate else "ignore"
        objects = load(self.documents, validate=mode)
        return Inputs.from_objects(objects, self.node, self.features)


def read_case(expected_path: Path) -> tuple[Inputs, dict[str, Any]]:
    """(inputs, expected answer) of one case; objects are decoded without API validation,
    as the conformance corpora are."""
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    objects_path = expected_path.with_name(
        expected_path.name.removesuffix(".expected.json") + ".yaml"
    )
    features = Features.parse(expected["featureGates"])
    objects = load(str(objects_path), validate=False)
    inputs = Inputs.from_objects(objects, expected["node"], features)
    return inputs, expected


def scenario_validation(objects: Any) -> Validation:
    """How to read a random scenario's objects: "strict", unless they hold a shape of
    :data:`ALLOCATOR_ONLY_SHAPES` ("ignore", as upstream's own test fixtures are read).
    Any other refusal is raised."""
    try:
        load(objects)
    except InputError as exc:
        if any(
            path in exc.path and message in exc.message for path, message in ALLOCATOR_ONLY_SHAPES
        ):
            return "ignore"
        raise
    return "strict"


def case_files(folder: Path) -> list[Path]:
    """The ``*.expected.json`` files of a folder, sorted (empty if it does not exist)."""
    return sorted(folder.glob("*.expected.json")) if folder.is_dir() else []
