"""--from-cluster against a fake API server that injects faults: timeouts, retries
with backoff on 429/5xx and broken connections, 410 Gone restarting a list, and one
line naming the server and the reason (exit status 4) when the cluster cannot be read.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from draspeed.cli import main
from draspeed.generate import generate
from draspeed.kube.client import ClientMissing, ClusterReadError, RequestPolicy
from draspeed.kube.listing import ListStats, PodQuery, list_cluster
from draspeed.testing.apiserver import FakeAPIServer, Fault

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "default", "labels": {"app": "trainer"}},
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        "containers": [{"name": "main"}],
    },
}


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return [*generate("example", nodes=3).document()["items"], POD]


@pytest.fixture()
def server(objects: list[dict]) -> Iterator[FakeAPIServer]:
    with FakeAPIServer(objects) as fake:
        yield fake


@pytest.fixture()
def kubeconfig(server: FakeAPIServer, tmp_path: Path) -> str:
    return str(server.write_kubeconfig(tmp_path / "kubeconfig"))


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_429_and_5xx_are_retried_with_backoff(server: FakeAPIServer, kubeconfig: str) -> None:
    slept: list[float] = []
    server.fail("/resourceslices", Fault(status=429, retry_after=0.25, times=2))
    server.fail("/deviceclasses", Fault(status=503, times=3))
    server.fail("/nodes", Fault(drop=True))  # a connection closed without an answer
    objects = list_cluster(kubeconfig=kubeconfig, policy=RequestPolicy(sleep=slept.append))
    assert len(objects.slices) == 3 and len(objects.nodes) == 3 and len(objects.classes) == 1
    # DeviceClasses first: 0.5, 1, 2 s of backoff; then Retry-After as the server said;
    # then the broken connection, retried after the first backoff step.
    assert slept == [0.5, 1.0, 2.0, 0.25, 0.25, 0.5]


def test_retries_are_bounded_and_backoff_capped(server: FakeAPIServer, kubeconfig: str) -> None:
    slept: list[float] = []
    server.fail("/deviceclasses", Fault(status=500, times=10))
    policy = RequestPolicy(retries=6, sleep=slept.append)
    with pytest.raises(ClusterReadError) as caught:
        list_cluster(kubeconfig=kubeconfig, policy=policy)
    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert str(caught.value) == (
        f"cannot read the cluster at {server.url}: 500 Internal Server Error: injected fault"
    )


def test_expired_continue_token_restarts_the_list_whole(
    server: FakeAPIServer, kubeconfig: str
) -> None:
    server.fail("/resourceslices", Fault(status=410, only_continue=True))
    stats = ListStats()
    objects = list_cluster(kubeconfig=kubeconfig, page_size=2, stats=stats)
    assert sorted(s.metadata.name for s in objects.slices) == sorted(
        o["metadata"]["name"] for o in server.objects("ResourceSlice")
    )
    assert stats.restarts == {"ResourceSlices": 1}
    lists = [r for r in server.requests if r.path.endswith("/resourceslices")]
    # Page 1 (limit 2), page 2 refused with 410, then the whole list without a limit.
    assert [(r.query.get("limit"), r.query.get("continue")) for r in lists] == [
        (["2"], None),
        (["2"], ["2"]),
        (None, None),
    ]


def test_a_hung_server_times_out(server: FakeAPIServer, kubeconfig: str) -> None:
    server.fail("/deviceclasses", Fault(hang=2.0))
    with pytest.raises(ClusterReadError) as caught:
        list_cluster(kubeconfig=kubeconfig, policy=RequestPolicy(timeout=0.3))
    assert caught.value.reason == "no answer within 0.3s (--request-timeout)"
    # The same through the CLI, with a Go duration: one line, exit status 4.
    server.fail("/deviceclasses", Fault(hang=2.0))
    code, out, err = _cli(
        "feasible", "--from-cluster", "--kubeconfig", kubeconfig, "--request-timeout", "300ms"
    )
    assert (code, out) == (4, "")
    assert err == (
        f"error: cannot read the cluster at {server.url}: no answer within 0.3s "
        "(--request-timeout)\n"
    )


def test_unreachable_and_unauthorised_servers_are_one_line(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    wrong = str(server.write_kubeconfig(tmp_path / "wrong", token="not-the-token"))
    code, out, err = _cli("allocate", "--from-cluster", "--kubeconfig", wrong, "--node", "x")
    assert (code, out) == (4, "")
    assert err == (
        f"error: cannot read the cluster at {server.url}: 401 Unauthorized: "
        "you must be logged in to the server\n"
    )
    server.fail("/deviceclasses", Fault(status=403))
    right = str(server.write_kubeconfig(tmp_path / "right"))
    code, _, err = _cli("explain", "--from-cluster", "--kubeconfig", right, "--node", "x")
    assert code == 4
    assert err.endswith(": 403 Forbidden: injected fault\n") and err.count("\n") == 1
    closed = tmp_path / "closed"
    closed.write_text((tmp_path / "right").read_text().replace(server.url, "http://127.0.0.1:9"))
    code, _, err = _cli("feasible", "--from-cluster", "--kubeconfig", str(closed))
    assert code == 4
    assert err == (
        "error: cannot read the cluster at http://127.0.0.1:9: unreachable: connection refused\n"
    )


def test_without_the_kubernetes_client_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(ClientMissing):
        list_cluster()
    code, out, err = _cli("feasible", "--from-cluster")
    assert (code, out) == (2, "")
    assert err == (
        "error: reading a live cluster needs the kubernetes client: pip install 'draspeed[kube]'\n"
    )


def test_feasible_for_a_pod_of_the_live_cluster(server: FakeAPIServer, kubeconfig: str) -> None:
    code, out, err = _cli(
        "feasible", "--from-cluster", "--kubeconfig", kubeconfig, "--pod", "trainer", "-o", "name"
    )
    assert code == 0, err
    assert out == "node/node-00000\nnode/node-00001\nnode/node-00002\n"
    # The pod was read by name, not listed with every other pod.
    reads = [r.path for r in server.requests if "/pods" in r.path]
    assert reads == ["/api/v1/namespaces/default/pods/trainer"]
    # --pods lists the pending pods of the namespace with the label selector.
    code, out, err = _cli(
        "feasible",
        "--from-cluster",
        "--kubeconfig",
        kubeconfig,
        "--pods",
        "-n",
        "default",
        "-l",
        "app=trainer",
        "-o",
        "name",
    )
    assert (code, out) == (0, "pod/trainer\n"), err
    [listed] = [r for r in server.requests if r.path == "/api/v1/namespaces/default/pods"]
    assert listed.query["labelSelector"] == ["app=trainer"]
    assert listed.query["fieldSelector"] == ["spec.nodeName="]


def test_pods_are_read_only_when_asked_for(server: FakeAPIServer, kubeconfig: str) -> None:
    objects = list_cluster(kubeconfig=kubeconfig)
    assert objects.pods == []
    assert not [r for r in server.requests if "/pods" in r.path]
    objects = list_cluster(kubeconfig=kubeconfig, pods=PodQuery(namespace=None))
    assert [p.key for p in objects.pods] == ["default/trainer"]
