"""The invariant checker: each invariant catches its violation, sound results pass.

The table below feeds hand-written results for a small cluster to
``check_allocation``: every row breaks one invariant (or none) and names the text of
the violation it must produce. Then the checker runs on every result both
conformance corpora produce (tests/data/differential and the upstream table), which
must all be sound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draspeed.api import decode, decode_allocation
from draspeed.api.loader import load
from draspeed.api.model import AllocationResult, ResourceClaim
from draspeed.features import Features
from draspeed.testing.cases import case_files, read_case
from draspeed.testing.engines import Inputs, run
from draspeed.testing.invariants import check_allocation

HERE = Path(__file__).parent
CORPORA = {
    "differential": HERE / "data" / "differential",
    "upstream": HERE / "conformance" / "upstream",
}
GPU = "gpu.example.com"

CLUSTER = f"""
apiVersion: v1
kind: Node
metadata: {{name: node-1, labels: {{region: r1}}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{GPU}"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-1-gpu}}
spec:
  driver: {GPU}
  nodeName: node-1
  pool: {{name: p, generation: 1, resourceSliceCount: 3}}
  devices:
  - name: gpu-0
    attributes:
      model: {{string: a100}}
      numa: {{int: 0}}
      links: {{strings: [l0, l1]}}
    allowMultipleAllocations: true
    capacity:
      memory:
        value: 40Gi
        requestPolicy:
          default: 4Gi
          validRange: {{min: 2Gi, step: 2Gi}}
    consumesCounters:
    - counterSet: cs-0
      counters: {{mem: {{value: 24Gi}}}}
  - name: gpu-1
    attributes:
      model: {{string: h100}}
      numa: {{int: 1}}
      links: {{strings: [l1]}}
    taints:
    - {{key: maint, value: soon, effect: NoSchedule}}
  - name: gpu-2
    attributes:
      model: {{string: a100}}
      numa: {{int: 1}}
      links: {{strings: [l2]}}
    consumesCounters:
    - counterSet: cs-0
      counters: {{mem: {{value: 24Gi}}}}
  - name: gpu-3
    attributes:
      model: {{string: h100}}
    bindingConditions: [ready]
    bindingFailureConditions: [failed]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-1-counters}}
spec:
  driver: {GPU}
  nodeName: node-1
  pool: {{name: p, generation: 1, resourceSliceCount: 3}}
  sharedCounters:
  - name: cs-0
    counters: {{mem: {{value: 40Gi}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: fabric}}
spec:
  driver: {GPU}
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{{key: region, operator: In, values: [r1]}}]
  pool: {{name: p, generation: 1, resourceSliceCount: 3}}
  devices:
  - name: gpu-9
    attributes:
      model: {{string: a100}}
"""

NODE_PIN = {
    "nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    ]
}
REGION = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}
    ]
}


def claim(name: str, requests: list[dict[str, Any]], constraints: Any = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": devices},
    }


def exactly(name: str, count: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", "count": count, **fields}}


def result(
    *devices: tuple[str, str] | tuple[str, str, dict[str, Any]], node_selector: Any = NODE_PIN
) -> dict[str, Any]:
    """An allocation of (request, device[, extra fields]) in pool ``p``."""
    items = []
    for d in devices:
        item: dict[str, Any] = {"request": d[0], "driver": GPU, "pool": "p", "device": d[1]}
        if len(d) == 3:
            item.update(d[2])
        items.append(item)
    out: dict[str, Any] = {"devices": {"results": items}}
    if node_selector is not None:
        out["nodeSelector"] = node_selector
    return out


ONE = claim("c", [exactly("r")])
SHARE = {"shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", "consumedCapacity": {"memory": "4Gi"}}
TOLERATE = [{"key": "maint", "operator": "Exists"}]

# (case, pending claims, their results, committed claims (claim, result), expected texts)
CASES: list[
    tuple[
        str,
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[tuple[dict[str, Any], dict[str, Any]]],
        list[str],
    ]
] = [
    ("sound", [ONE], [result(("r", "gpu-2"))], [], []),
    ("sound-share", [ONE], [result(("r", "gpu-0", SHARE))], [], []),
    ("sound-network-device", [ONE], [result(("r", "gpu-9"), node_selector=REGION)], [], []),
    (
        "too-few-devices",
        [claim("c", [exactly("r", 2)])],
        [result(("r", "gpu-2"))],
        [],
        ["claim default/c, request r: 1 devices, requested 2"],
    ),
    (
        "unknown-request",
        [ONE],
        [result(("r", "gpu-2"), ("x", "gpu-1"))],
        [],
        ["result for unknown request x"],
    ),
    (
        "device-not-on-node",
        [ONE],
        [result(("r", "gpu-7"))],
        [],
        ["device gpu.example.com/p/gpu-7: no such device"],
    ),
    (
        "twice-in-one-claim",
        [claim("c", [exactly("r", 2)])],
        [result(("r", "gpu-2"), ("r", "gpu-2"))],
        [],
        ["allocated twice within one claim"],
    ),
    (
        "two-claims",
        [ONE, claim("d", [exactly("r")])],
        [result(("r", "gpu-2")), result(("r", "gpu-2"))],
        [],
        ["without admin access"],
    ),
    (
        "admin-after-plain-is-fine",
        [ONE, claim("d", [exactly("r", adminAccess=True)])],
        [
            result(("r", "gpu-9"), node_selector=REGION),
            result(("r", "gpu-9", {"adminAccess": True}), node_selector=REGION),
        ],
        [],
        [],
    ),
    # Admin access does not exempt from counters: the device pays them again.
    (
        "admin-pays-counters",
        [ONE, claim("d", [exactly("r", adminAccess=True)])],
        [result(("r", "gpu-2")), result(("r", "gpu-2", {"adminAccess": True}))],
        [],
        ["counter cs-0/mem overdrawn: 48Gi consumed of 40Gi"],
    ),
    (
        "committed",
        [ONE],
        [result(("r", "gpu-2"))],
        [(ONE, result(("r", "gpu-2")))],
        ["already allocated to another claim"],
    ),
    ("share-id-missing", [ONE], [result(("r", "gpu-0"))], [], ["shareID missing"]),
    (
        "committed-share-blocks-whole",
        [ONE],
        [result(("r", "gpu-2"))],
        [(ONE, result(("r", "gpu-2", SHARE)))],
        ["allocated whole while another claim holds"],
    ),
    (
        "admin-flag-missing",
        [claim("c", [exactly("r", adminAccess=True)])],
        [result(("r", "gpu-2"))],
        [],
        ["adminAccess None for a request with adminAccess True"],
    ),
    (
        "selector",
        [
            claim(
                "c",
                [
                    exactly(
                        "r",
                        selectors=[
                            {"cel": {"expression": f'device.attributes["{GPU}"].model == "h100"'}}
                        ],
                    )
                ],
            )
        ],
        [result(("r", "gpu-2"))],
        [],
        ["does not match request r selector"],
    ),
    (
        "selector-error",
        [
            claim(
                "c",
                [
                    exactly(
                        "r",
                        selectors=[{"cel": {"expression": f'device.attributes["{GPU}"].missing'}}],
                    )
                ],
            )
        ],
        [result(("r", "gpu-2"))],
        [],
        ["fails: no such key: missing"],
    ),
    ("taint", [ONE], [result(("r", "gpu-1"))], [], ["taint maint=soon:NoSchedule"]),
    (
        "taint-tolerated",
        [claim("c", [exactly("r", tolerations=TOLERATE)])],
        [result(("r", "gpu-1", {"tolerations": TOLERATE}))],
        [],
        [],
    ),
    (
        "tolerations-not-copied",
        [claim("c", [exactly("r", tolerations=TOLERATE)])],
        [result(("r", "gpu-1"))],
        [],
        ["result tolerations differ"],
    ),
    (
        "counters",
        [claim("c", [exactly("r", 2)])],
        [result(("r", "gpu-0", SHARE), ("r", "gpu-2"))],
        [],
        ["counter cs-0/mem overdrawn: 48Gi consumed of 40Gi"],
    ),
    (
        "counters-committed",
        [ONE],
        [result(("r", "gpu-2"))],
        [(ONE, result(("r", "gpu-0", SHARE)))],
        ["counter cs-0/mem overdrawn"],
    ),
    (
        "capacity-overcommitted",
        [ONE],
        [result(("r", "gpu-0", {**SHARE, "consumedCapacity": {"memory": "38Gi"}}))],
        [(ONE, result(("r", "gpu-0", SHARE)))],
        ["capacity memory overcommitted"],
    ),
    (
        "capacity-policy",
        [claim("c", [exactly("r", capacity={"requests": {"memory": "3Gi"}})])],
        [result(("r", "gpu-0", {**SHARE, "consumedCapacity": {"memory": "3Gi"}}))],
        [],
        ["not allowed by its request policy"],
    ),
    (
        "capacity-below-request",
        [claim("c", [exactly("r", capacity={"requests": {"memory": "6Gi"}})])],
        [result(("r", "gpu-0", SHARE))],
        [],
        ["less than the requested 6Gi"],
    ),
    (
        "capacity-unrequested-not-default",
        [ONE],
        [result(("r", "gpu-0", {**SHARE, "consumedCapacity": {"memory": "8Gi"}}))],
        [],
        ["expected 4Gi"],
    ),
    (
        "capacity-unknown",
        [claim("c", [exactly("r", capacity={"requests": {"cores": "1"}})])],
        [result(("r", "gpu-2"))],
        [],
        ["request for capacity cores"],
    ),
    (
        "match-attribute",
        [claim("c", [exactly("r", 2)], [{"matchAttribute": f"{GPU}/model"}])],
        [result(("r", "gpu-1"), ("r", "gpu-2", {}))],
        [],
        ["constraint #0 (gpu.example.com/model)"],
    ),
    (
        "match-attribute-lists",
        [claim("c", [exactly("r", 2)], [{"matchAttribute": f"{GPU}/links"}])],
        [result(("r", "gpu-0", SHARE), ("r", "gpu-2"))],
        [],
        ["not satisfied"],
    ),
    (
        "match-attribute-lists-common",
        [claim("c", [exactly("r", 2, tolerations=TOLERATE)], [{"matchAttribute": f"{GPU}/links"}])],
        [
            result(
                ("r", "gpu-0", {**SHARE, "tolerations": TOLERATE}),
                ("r", "gpu-1", {"tolerations": TOLERATE}),
            )
        ],
        [],
        [],
    ),
    (
        "distinct-attribute",
        [claim("c", [exactly("r", 2)], [{"distinctAttribute": f"{GPU}/model"}])],
        [result(("r", "gpu-0", SHARE), ("r", "gpu-2"))],
        [],
        ["not satisfied"],
    ),
    (
        "constraint-missing-attribute",
        [claim("c", [exactly("r", 2)], [{"matchAttribute": f"{GPU}/numa"}])],
        [result(("r", "gpu-2"), ("r", "gpu-3"))],
        [],
        ["a device lacks the attribute"],
    ),
    (
        "constraint-scoped",
        [
            claim(
                "c",
                [exactly("r"), exactly("s")],
                [{"matchAttribute": f"{GPU}/model", "requests": ["r"]}],
            )
        ],
        [result(("r", "gpu-2"), ("s", "gpu-3"))],
        [],
        [],
    ),
    (
        "node-selector-missing",
        [ONE],
        [result(("r", "gpu-2"), node_selector=None)],
        [],
        ["not pinned to node node-1"],
    ),
    (
        "node-selector-excludes",
        [ONE],
        [
            result(
                ("r", "gpu-9"),
                node_selector={
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": ["r2"]}
                            ]
                        }
                    ]
                },
            )
        ],
        [],
        ["result node selector excludes node node-1"],
    ),
    (
        "too-many",
        [claim("c", [exactly("r", 33)])],
        [result(*[("r", "gpu-2")] * 33)],
        [],
        ["33 devices, more than 32"],
    ),
    (
        "subrequests",
        [
            claim(
                "c",
                [
                    {
                        "name": "r",
                        "firstAvailable": [
                            {"name": "a", "deviceClassName": "gpu"},
                            {"name": "b", "deviceClassName": "gpu"},
                        ],
                    }
                ],
            )
        ],
        [result(("r/a", "gpu-2"), ("r/b", "gpu-9"))],
        [],
        ["expected exactly one subrequest"],
    ),
    (
        "subrequest-sound",
        [
            claim(
                "c",
                [
                    {
                        "name": "r",
                        "firstAvailable": [
                            {"name": "a", "deviceClassName": "gpu"},
                            {"name": "b", "deviceClassName": "gpu"},
                        ],
                    }
                ],
            )
        ],
        [result(("r/b", "gpu-2"))],
        [],
        [],
    ),
]


def _claims(documents: list[dict[str, Any]]) -> list[ResourceClaim]:
    claims = []
    for d in documents:
        obj = decode(d)
        assert isinstance(obj, ResourceClaim)
        claims.append(obj)
    return claims


def _allocation(raw: dict[str, Any]) -> AllocationResult:
    # Unvalidated: the table holds results the API server would refuse (33 devices),
    # which the checker must catch itself.
    return decode_allocation(raw, validate="ignore")


@pytest.mark.parametrize(
    ("pending", "results", "committed", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_checker_table(
    pending: list[dict[str, Any]],
    results: list[dict[str, Any]],
    committed: list[tuple[dict[str, Any], dict[str, Any]]],
    expected: list[str],
) -> None:
    objects = load(CLUSTER)
    allocated = []
    for i, (document, allocation) in enumerate(committed):
        held = {
            **document,
            "metadata": {"name": f"held-{i}", "namespace": "default"},
            "status": {"allocation": allocation},
        }
        allocated += _claims([held])
    problems = check_allocation(
        objects.slices,
        objects.classes,
        allocated,
        _claims(pending),
        objects.nodes[0],
        [_allocation(r) for r in results],
        Features(),
    )
    if not expected:
        assert problems == []
    for text in expected:
        assert any(text in p for p in problems), f"{text!r} not in {problems}"


def test_checker_sees_feature_gates() -> None:
    """Binding conditions, counters and taints are judged under the call's gates."""
    objects = load(CLUSTER)
    off = Features(device_binding_conditions=False, partitionable_devices=False)
    problems = check_allocation(
        objects.slices,
        objects.classes,
        [],
        _claims([ONE]),
        objects.nodes[0],
        [_allocation(result(("r", "gpu-3")))],
        off,
    )
    assert any("binding conditions" in p for p in problems), problems
    untainted = Features(device_taints=False)
    assert (
        check_allocation(
            objects.slices,
            objects.classes,
            [],
            _claims([ONE]),
            objects.nodes[0],
            [_allocation(result(("r", "gpu-1")))],
            untainted,
        )
        == []
    )


def test_nothing_to_check_when_nothing_fits() -> None:
    objects = load(CLUSTER)
    assert (
        check_allocation(
            objects.slices, objects.classes, [], _claims([ONE]), objects.nodes[0], None
        )
        == []
    )


def test_result_count_must_match_claims() -> None:
    objects = load(CLUSTER)
    problems = check_allocation(
        objects.slices, objects.classes, [], _claims([ONE]), objects.nodes[0], []
    )
    assert problems == ["0 results for 1 claims"]


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_every_conformance_result_is_sound(corpus: str) -> None:
    """The fast engine's result for every case of a corpus passes the checker (the
    reference gives the same results: the conformance tests compare them)."""
    cases = case_files(CORPORA[corpus])
    if not cases:
        pytest.skip(f"corpus {corpus} is not beside this checkout")
    checked, problems = 0, []
    for case in cases:
        inputs: Inputs
        inputs, _ = read_case(case)
        answer = run("fast", inputs)
        if answer.raw is None:
            continue
        checked += 1
        found = check_allocation(
            inputs.slices,
            inputs.classes,
            inputs.allocated,
            inputs.claims,
            inputs.node,
            answer.raw,
            inputs.features,
        )
        problems += [f"{case.name}: {p}" for p in found]
    assert checked > 50
    assert problems == []
