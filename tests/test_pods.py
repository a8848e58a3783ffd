"""Pods: claims made from templates as kube-controller-manager makes them, the claim
kube-scheduler makes for extended resources backed by a DeviceClass, one pod's
claims per node, and ``feasible --pod``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from draspeed import Cluster, load
from draspeed.api.model import ObjectMeta, Pod, PodResourceClaim
from draspeed.cli import main
from draspeed.errors import InputError
from draspeed.generate import generate
from draspeed.pods.extended import (
    class_for,
    extended_claim,
    is_dra_extended_resource_name,
    pod_requests,
)
from draspeed.pods.templates import generate_name, generated_name, instantiate

EXT = "example.com/gpu"


def _pod(
    name: str = "trainer",
    *,
    claims: list[dict[str, Any]] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    uid: str = "pod-uid",
    **status: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers or [{"name": "main"}]}
    if claims:
        spec["resourceClaims"] = claims
    if init:
        spec["initContainers"] = init
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": spec,
    }
    if status:
        doc["status"] = status
    return doc


def _container(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": name,
        "resources": {
            "requests": {k.replace("__", "/").replace("_", "."): v for k, v in requests.items()}
        },
    }
    if restart:
        doc["restartPolicy"] = restart
    return doc


def _class(name: str, extended: str | None = None, created: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {}
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": meta,
        "spec": spec,
    }


# ------------------------------------------------------------------------- templates


@pytest.mark.parametrize(
    ("pod", "claim", "base"),
    [
        ("trainer", "gpu", "trainer-gpu-"),
        # 57 characters exactly: kept whole.
        ("p" * 40, "c" * 15, "p" * 40 + "-" + "c" * 15 + "-"),
        # Longer: both cut in proportion to their lengths (integer division), no
        # trailing "-": 50 and 20 characters of 72 -> 39 and 15.
        ("p" * 50, "c" * 20, "p" * 39 + "-" + "c" * 15),
    ],
)
def test_generate_name_as_the_claim_controller(pod: str, claim: str, base: str) -> None:
    assert generate_name(pod, claim) == base


def test_generated_names_are_repeatable_and_api_server_shaped() -> None:
    name = generated_name("trainer-gpu-", "seed")
    assert name == generated_name("trainer-gpu-", "seed") != generated_name("trainer-gpu-", "x")
    assert name.startswith("trainer-gpu-") and len(name) == len("trainer-gpu-") + 5
    assert set(name[-5:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    # The API server cuts a base to 58 characters before adding 5.
    assert len(generated_name("x" * 80, "s")) == 63


def test_instantiate_copies_the_template_as_the_controller_does() -> None:
    template: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-template", "namespace": "default"},
        "spec": {
            "metadata": {"labels": {"team": "ml"}, "annotations": {"note": "x"}},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            },
        },
    }
    objects = load(
        template, _pod(claims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}])
    )
    claim = instantiate(objects.templates[0], objects.pods[0], "gpu")
    meta = claim.raw["metadata"]
    assert meta["generateName"] == "trainer-gpu-"
    assert meta["name"].startswith("trainer-gpu-") and claim.metadata.namespace == "default"
    assert meta["labels"] == {"team": "ml"}
    assert meta["annotations"] == {"note": "x", "resource.kubernetes.io/pod-claim-name": "gpu"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": "pod-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim.raw["spec"] == template["spec"]["spec"]
    assert claim.status.allocation is None


# --------------------------------------------------------------- extended resources


@pytest.mark.parametrize(
    ("name", "dra"),
    [
        ("example.com/gpu", True),
        ("deviceclass.resource.kubernetes.io/gpu", True),
        ("nvidia.com/gpu", True),
        ("cpu", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/something", False),
        ("requests.example.com/gpu", False),
        # A name is a label key once prefixed: '-' and '.' after the domain too.
        ("example.com/sriov-port1", True),
        ("example.com/gpu.small", True),
        ("example.com/-gpu", False),
        ("example.com/gpu_", False),
    ],
)
def test_dra_extended_resource_names(name: str, dra: bool) -> None:
    assert is_dra_extended_resource_name(name) is dra


def test_extended_resources_asked_by_limits_alone_are_requested_as_limited() -> None:
    """The API server defaults a container's requests from its limits, so a pod written
    with limits only asks for its extended resources (and its own requests win)."""
    container = _container("main", cpu="1")
    container["resources"]["limits"] = {"example.com/sriov-port1": "2", "cpu": "2"}
    pod = load(_pod(containers=[container])).pods[0]
    requests = pod.containers[0].requests
    assert str(requests["example.com/sriov-port1"]) == "2" and str(requests["cpu"]) == "1"
    assert pod_requests(pod)["example.com/sriov-port1"] == 2 * 10**9


@pytest.mark.parametrize(
    ("where", "amount", "problem"),
    [
        ("requests", "-1", "must be greater than or equal to 0"),
        ("requests", "1.5", "must be an integer"),
        ("limits", "100m", "must be an integer"),
    ],
)
def test_extended_resource_amounts_are_checked_as_the_api_server_checks_them(
    where: str, amount: str, problem: str
) -> None:
    container: dict[str, Any] = {"name": "main", "resources": {where: {EXT: amount}}}
    with pytest.raises(InputError, match=problem) as raised:
        load(_pod(containers=[container]))
    assert raised.value.path == f"spec.containers[0].resources.{where}[{EXT}]"
    # Without validation the amount is kept (and the extended claim asks for nothing).
    assert load(_pod(containers=[container]), validate=False).pods


def test_class_for_explicit_newest_then_name_then_implicit() -> None:
    objects = load(
        _class("old", EXT, "2026-01-01T00:00:00Z"),
        _class("b-new", EXT, "2026-02-01T00:00:00Z"),
        _class("a-new", EXT, "2026-02-01T00:00:00Z"),
        _class("plain"),
    )
    classes = objects.classes
    found = class_for(EXT, classes)
    assert found is not None and found.metadata.name == "a-new"
    implicit = class_for("deviceclass.resource.kubernetes.io/plain", classes)
    assert implicit is not None and implicit.metadata.name == "plain"
    assert class_for("deviceclass.resource.kubernetes.io/none", classes) is None
    assert class_for("other.com/x", classes) is None


def test_pod_requests_add_up_as_pod_requests_does() -> None:
    pod = load(
        _pod(
            containers=[
                _container("a", example_com__gpu="1"),
                _container("b", example_com__gpu="2"),
            ],
            init=[
                _container("i0", example_com__gpu="4"),
                _container("s1", "Always", example_com__gpu="1"),
                _container("i2", example_com__gpu="3"),
            ],
        )
    ).pods[0]
    # Containers 3 plus the sidecar 1 = 4; init: max(4, 3 + 1 sidecar) = 4 -> 4.
    assert pod_requests(pod)[EXT] == 4 * 10**9


# Upstream's createRequestsAndMappings cases (extendeddynamicresources_test.go), as
# data: containers (init first; "Always" marks a sidecar), the resources the node must
# give through DRA, and the requests made (name, class, count).
_REQUEST_CASES = {
    "two resources, one container": (
        [],
        [{"name": "con0", "requests": {EXT: "1", EXT + "1": "2"}}],
        {EXT: 1, EXT + "1": 2},
        [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
    ),
    "two containers": (
        [],
        [{"name": "con0", "requests": {EXT: "1"}}, {"name": "con1", "requests": {EXT + "1": "2"}}],
        {EXT: 1, EXT + "1": 2},
        [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
    ),
    "one init container, one regular container": (
        [{"name": "init-con0", "requests": {EXT + "init": "2"}}],
        [{"name": "con0", "requests": {EXT: "1"}}],
        {EXT: 1, EXT + "init": 2},
        [("container-0-request-0", "class-init", 2), ("container-1-request-0", "class", 1)],
    ),
    "two init containers share the largest request": (
        [
            {"name": "init-con0", "requests": {EXT + "init": "1"}},
            {"name": "init-con1", "requests": {EXT + "init": "2"}},
        ],
        [{"name": "con0", "requests": {EXT: "1"}}],
        {EXT: 1, EXT + "init": 2},
        [("container-1-request-0", "class-init", 2), ("container-2-request-0", "class", 1)],
    ),
    "three init containers, one a sidecar": (
        [
            {"name": "init-con0", "requests": {EXT + "init": "1"}},
            {"name": "sidecar-con1", "requests": {EXT + "init": "1"}, "restart": "Always"},
            {"name": "init-con2", "requests": {EXT + "init": "2"}},
        ],
        [{"name": "con0", "requests": {EXT: "1"}}],
        {EXT: 1, EXT + "init": 2},
        [
            ("container-1-request-0", "class-init", 1),
            ("container-2-request-0", "class-init", 2),
            ("container-3-request-0", "class", 1),
        ],
    ),
}


@pytest.mark.parametrize("case", list(_REQUEST_CASES), ids=list(_REQUEST_CASES))
def test_extended_resource_claim_requests_as_upstream(case: str) -> None:
    init, containers, resources, expected = _REQUEST_CASES[case]

    def doc(c: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": c["name"], "resources": {"requests": c["requests"]}}
        if c.get("restart"):
            out["restartPolicy"] = c["restart"]
        return out

    objects = load(
        _pod(containers=[doc(c) for c in containers], init=[doc(c) for c in init]),
        _class("class", EXT),
        _class("class1", EXT + "1"),
        _class("class-init", EXT + "init"),
    )
    made = extended_claim(objects.pods[0], objects.classes, resources)
    assert made is not None
    claim, _ = made
    requests = [
        (r.name, r.exactly.device_class_name, r.exactly.count)
        for r in claim.spec.devices.requests
        if r.exactly is not None
    ]
    assert requests == expected
    meta = claim.raw["metadata"]
    assert meta["generateName"] == "trainer-extended-resources-"
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"][0]["controller"] is True


def test_mappings_send_init_containers_to_the_requests_they_use() -> None:
    init = [
        _container("init-con0", example_com__gpuinit="1"),
        _container("sidecar-con1", "Always", example_com__gpuinit="1"),
        _container("init-con2", example_com__gpuinit="2"),
    ]
    objects = load(
        _pod(containers=[_container("con0", example_com__gpu="1")], init=init),
        _class("class", EXT),
        _class("class-init", EXT + "init"),
    )
    made = extended_claim(objects.pods[0], objects.classes, {EXT: 1, EXT + "init": 2})
    assert made is not None
    assert [(m.container, m.request) for m in made[1]] == [
        ("con0", "container-3-request-0"),
        ("sidecar-con1", "container-1-request-0"),
        ("init-con0", "container-1-request-0"),  # the sidecar's device covers it
        ("init-con2", "container-2-request-0"),
    ]


# ------------------------------------------------------------------ a pod's claims


@pytest.fixture(scope="module")
def cluster_docs() -> list[dict[str, Any]]:
    """Three example nodes (8 GPUs each); the class backs ``gpu.example.com/gpu``;
    node-00002 offers that resource through a device plugin."""
    docs = generate("example", nodes=3).document()["items"]
    for d in docs:
        if d["kind"] == "DeviceClass":
            d["spec"]["extendedResourceName"] = "gpu.example.com/gpu"
        if d["kind"] == "Node" and d["metadata"]["name"] == "node-00002":
            d["status"] = {"allocatable": {"gpu.example.com/gpu": "8"}}
    return docs


def test_a_pods_claims_per_node(cluster_docs: list[dict[str, Any]]) -> None:
    pod = _pod(
        claims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        containers=[{"name": "main", "resources": {"requests": {"gpu.example.com/gpu": "2"}}}],
    )
    cluster = Cluster.from_objects(load(cluster_docs, pod))
    answer = cluster.pod_feasibility("default/trainer")
    assert answer.feasible == ["node-00000", "node-00001", "node-00002"]
    made = answer.pod.made[0].metadata.name
    ext = [c for c in answer.claims["node-00000"] if c.metadata.name != made]
    assert [c.metadata.name.startswith("trainer-extended-resources-") for c in ext] == [True]
    # The device plugin serves node-00002: no extended-resource claim there.
    assert [c.metadata.name for c in answer.claims["node-00002"]] == [made]
    on_0 = answer.feasibility.result("node-00000")
    assert on_0 is not None
    assert [len(r.devices.results) for r in on_0] == [1, 2]
    devices = {r.device for result in on_0 for r in result.devices.results}
    assert len(devices) == 3  # the claims together: no device twice


def test_unknown_resources_and_missing_objects_are_reasons(
    cluster_docs: list[dict[str, Any]],
) -> None:
    pods = [
        _pod("a", containers=[{"name": "m", "resources": {"requests": {"other.com/x": "1"}}}]),
        _pod("b", claims=[{"name": "c", "resourceClaimName": "nope"}]),
        _pod("c", claims=[{"name": "c", "resourceClaimTemplateName": "nope"}]),
    ]
    cluster = Cluster.from_objects(load(cluster_docs, pods))
    # "a" asks for nothing DRA backs: the DRA plugin has nothing to do.
    assert cluster.pod("default/a").needs_nothing
    reasons = {
        key: {o.error for o in cluster.pod_feasibility(key)} for key in ("default/b", "default/c")
    }
    assert reasons == {
        "default/b": {'resourceclaim.resource.k8s.io "nope" not found'},
        "default/c": {
            'resource claim template "nope": resourceclaimtemplate.resource.k8s.io "nope" not found'
        },
    }


def test_an_existing_claim_of_the_pod_is_used(cluster_docs: list[dict[str, Any]]) -> None:
    claim = generate("example", nodes=3).claim("single-gpu", "made-earlier")
    claim["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": "pod-uid", "controller": True}
    ]
    pod = _pod(
        claims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "made-earlier"}],
    )
    cluster = Cluster.from_objects(load(cluster_docs, pod, claim))
    claims = cluster.pod("default/trainer")
    assert [c.metadata.name for c in claims.claims] == ["made-earlier"] and not claims.made
    # Owned by another pod: the scheduler refuses it.
    claim["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    cluster = Cluster.from_objects(load(cluster_docs, pod, claim))
    assert cluster.pod("default/trainer").problem == (
        "ResourceClaim default/made-earlier was not created for pod default/trainer "
        "(pod is not owner)"
    )


# ---------------------------------------------------------------------- the CLI


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(args), out, err), out.getvalue(), err.getvalue()


@pytest.mark.filterwarnings("ignore:skipped 1 object")
def test_feasible_pod_from_a_dump(tmp_path: Any, cluster_docs: list[dict[str, Any]]) -> None:
    pod = _pod(
        claims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        containers=[{"name": "main", "resources": {"requests": {"gpu.example.com/gpu": "9"}}}],
    )
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    dump = tmp_path / "dump.json"
    dump.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [*cluster_docs, pod, service]})
    )
    code, out, err = _cli("feasible", "-f", str(dump), "--pod", "trainer", "-o", "json")
    # 9 GPUs fit on no node through DRA; node-00002 gives them by device plugin.
    assert code == 0, err
    doc = json.loads(out)
    assert doc["feasible"] == ["node-00002"]
    assert doc["extendedResources"] == {"gpu.example.com/gpu": 9}
    assert [n["status"] for n in doc["nodes"]] == ["does-not-fit", "does-not-fit", "fits"]
    assert err == "warning: skipped 1 object of kinds draspeed does not read: Service (1)\n"


def test_a_template_alone_is_instantiated_never_fits_by_mistake(
    tmp_path: Any, cluster_docs: list[dict[str, Any]]
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(
        json.dumps([d for d in cluster_docs if d["kind"] != "ResourceClaimTemplate"])
    )
    big: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "nine-gpus", "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": "gpu.example.com", "count": 9},
                        }
                    ]
                }
            }
        },
    }
    template = tmp_path / "template.yaml"
    template.write_text(json.dumps(big))
    code, out, err = _cli("feasible", "-f", str(cluster), "--claims", str(template))
    assert code == 1, err
    assert "fits on 0 of 3 nodes" in out
    big["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    template.write_text(json.dumps(big))
    code, out, err = _cli(
        "allocate", "-f", str(cluster), "-f", str(template), "--node", "node-00001", "-o", "name"
    )
    # In -f a template is cluster state (a dump holds many), not a claim to allocate.
    assert code == 0 and out == "" and "no pending claims" in err
    code, out, err = _cli("feasible", "-f", str(cluster), "--claims", str(template), "-o", "json")
    doc = json.loads(out)
    assert code == 0 and len(doc["feasible"]) == 3
    results = doc["nodes"][0]["allocations"][0]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-0", "gpu-1"]


def test_unit_pod_model() -> None:
    pod = Pod(
        metadata=ObjectMeta(name="p", namespace="ns"),
        resource_claims=[PodResourceClaim(name="c", resource_claim_name="x")],
    )
    assert pod.key == "ns/p"


# ------------------------------------------------- upstream's answers (the oracle)

ORACLE = Path(__file__).parent / "data" / "pods" / "oracle-extended.json"


def test_pod_claims_allocate_as_the_upstream_allocator() -> None:
    """Each pod's claims per node (template claims, the extended-resource claim with
    init containers, a sidecar and the implicit class name) allocated by the upstream
    allocator (recorded answers) and by draspeed: the same devices, or both none."""
    from draspeed.api import encode_allocation

    data = json.loads(ORACLE.read_text())
    cluster = Cluster.from_objects(load(data["cluster"], data["pods"]))
    for case in data["cases"]:
        outcome = cluster.allocate(cluster.node(case["node"]), pod=case["pod"])
        assert [c.metadata.name for c in outcome.claims] == case["claims"]
        got = None if outcome.results is None else [encode_allocation(r) for r in outcome.results]
        assert got == case["results"], (case["pod"], case["node"])
