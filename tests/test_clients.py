"""Objects people already hold: kubernetes-client models and API list items without
apiVersion/kind, in; claim status patches and kubernetes-client models, out."""

from __future__ import annotations

from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client  # noqa: E402

import draspeed  # noqa: E402
from draspeed.api.clients import to_model, type_meta  # noqa: E402
from draspeed.binding import FINALIZER, claim_document, finalizer_patch, status_patch  # noqa: E402
from draspeed.errors import InputError  # noqa: E402
from draspeed.generate import generate  # noqa: E402


@pytest.fixture(scope="module")
def example() -> Any:
    return generate("example", nodes=2)


def _items(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Items as a list call returns them: no apiVersion, no kind."""
    out = []
    for d in docs:
        if d["kind"] == kind:
            item = dict(d)
            item.pop("apiVersion")
            item.pop("kind")
            out.append(item)
    return out


@pytest.mark.parametrize(
    ("model", "meta"),
    [
        ("ResourceV1ResourceClaim", ("resource.k8s.io/v1", "ResourceClaim")),
        ("V1ResourceSlice", ("resource.k8s.io/v1", "ResourceSlice")),
        ("V1beta2DeviceClass", ("resource.k8s.io/v1beta2", "DeviceClass")),
        ("V1alpha3DeviceTaintRule", ("resource.k8s.io/v1alpha3", "DeviceTaintRule")),
        ("V1ResourceClaimList", ("resource.k8s.io/v1", "ResourceClaimList")),
        ("V1Node", ("v1", "Node")),
        ("V1Pod", ("v1", "Pod")),
        ("V1Service", None),
    ],
)
def test_type_meta_from_the_model_class(model: str, meta: tuple[str, str] | None) -> None:
    cls = getattr(client, model)
    # An empty instance: required fields are checked by both generations of models
    # (pydantic from kubernetes 35, client-side validation before).
    if hasattr(cls, "model_construct"):
        instance = cls.model_construct()
    else:
        unchecked = client.Configuration()
        unchecked.client_side_validation = False
        instance = cls(local_vars_configuration=unchecked)
    assert type_meta(instance) == meta


def test_list_items_without_type_meta(example: Any) -> None:
    docs = example.document()["items"]
    # Models of a list call's items: apiVersion and kind are None, the class says them.
    nodes = [to_model(i, "V1Node") for i in _items(docs, "Node")]
    slices = [to_model(i, "V1ResourceSlice") for i in _items(docs, "ResourceSlice")]
    objects = draspeed.load(nodes, slices)
    assert [n.name for n in objects.nodes] == ["node-00000", "node-00001"]
    assert len(objects.slices) == len(slices)
    # Plain dicts of a list call: the kind from kind=.
    assert len(draspeed.load(_items(docs, "ResourceSlice"), kind="ResourceSlice").slices) == len(
        slices
    )
    with pytest.raises(InputError, match="apiVersion: Required value"):
        draspeed.load(_items(docs, "ResourceSlice"))
    with pytest.raises(InputError, match="unsupported kind 'Nonsense'"):
        draspeed.load({}, kind="Nonsense")


def test_allocators_take_client_models(example: Any) -> None:
    cluster = draspeed.Cluster.from_objects(draspeed.load(example.document()))
    claim = to_model(example.claim("single-gpu", "from-model"))
    assert type(claim).__name__ == "ResourceV1ResourceClaim"
    node = client.V1Node(metadata=client.V1ObjectMeta(name="node-00001"))
    for engine in ("fast", "reference"):
        allocator = cluster.allocator(engine)
        results = allocator.allocate([claim], node)
        assert results is not None and results[0].devices.results[0].pool == "node-00001"
        # A list object, and a node as a dict (the JSON the API server sends), work too.
        listed = client.V1ResourceClaimList(items=[claim])
        as_json = client.ApiClient().sanitize_for_serialization(node)
        assert allocator.allocate(listed, as_json) is not None
        # to_dict() writes the model's snake_case attributes: no Kubernetes object.
        with pytest.raises(InputError, match='unknown field "api_version"'):
            allocator.allocate(listed, node.to_dict())
    fast = draspeed.Allocator(cluster.snapshot())
    assert fast.feasible_nodes([claim], [node]).feasible == ["node-00001"]
    assert fast.prepare([claim]).allocate(node) is not None
    with pytest.raises(TypeError, match=r"^claims: expected a list of ResourceClaims, got str"):
        fast.allocate("not claims", node)


def test_results_as_patches_and_models(example: Any) -> None:
    objects = draspeed.load(example.document(), example.claim("single-gpu", "mine"))
    cluster = draspeed.Cluster.from_objects(objects)
    [claim] = cluster.pending
    [result] = cluster.allocator().allocate([claim], cluster.node("node-00000")) or []
    pod = draspeed.load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
        }
    ).pods[0]
    patch = status_patch(claim, result, pod)
    assert patch == {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": "node-00000",
                            "device": "gpu-0",
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-00000"]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
        }
    }
    assert finalizer_patch(claim) == {"metadata": {"finalizers": [FINALIZER]}}
    model = to_model(claim_document(claim, result, pod))
    assert type(model).__name__ == "ResourceV1ResourceClaim"
    assert model.status.allocation.devices.results[0].device == "gpu-0"
    assert model.status.reserved_for[0].uid == "u1"
