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

from draspeed.api.loader import load
from draspeed.features import Features
from draspeed.testing.engines import Inputs


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
        """Decoded (``validate``: with the API's checks) and split as the scheduler would."""
        objects = load(self.documents, validate=validate)
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


def case_files(folder: Path) -> list[Path]:
    """The ``*.expected.json`` files of a folder, sorted (empty if it does not exist)."""
    return sorted(folder.glob("*.expected.json")) if folder.is_dir() else []
