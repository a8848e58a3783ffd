"""Reading a live cluster (draspeed.kube.listing) from a fake API server.

The server replays list responses in the shape kube-apiserver 1.34 sends them
(tests/data/analysis/apiserver: pages of two objects with ``continue`` tokens and
``remainingItemCount``; DeviceTaintRules served in v1alpha3 only, 404 elsewhere)
to the real ``kubernetes`` client configured by a kubeconfig that points at it.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from draspeed.analysis import fit
from draspeed.cli import main
from draspeed.cluster import Cluster
from draspeed.kube.listing import ClusterReadError, ListStats, list_cluster

RECORDS = Path(__file__).parent / "data" / "analysis" / "apiserver"
TOKEN = "recorded-token"
RESOURCE = "/apis/resource.k8s.io"


def _pages(name: str) -> dict[str, bytes]:
    """continue token ("" for the first page) -> the page's bytes."""
    out: dict[str, bytes] = {}
    token = ""
    for path in sorted(RECORDS.glob(f"{name}-page*.json")):
        body = path.read_bytes()
        out[token] = body
        token = json.loads(body)["metadata"].get("continue", "")
    return out


ROUTES: dict[str, dict[str, bytes]] = {
    f"{RESOURCE}/v1/deviceclasses": _pages("deviceclasses"),
    f"{RESOURCE}/v1/resourceslices": _pages("resourceslices"),
    f"{RESOURCE}/v1/resourceclaims": _pages("resourceclaims"),
    f"{RESOURCE}/v1/resourceclaimtemplates": _pages("resourceclaimtemplates"),
    f"{RESOURCE}/v1alpha3/devicetaintrules": _pages("devicetaintrules"),
    "/api/v1/nodes": _pages("nodes"),
}


class _Handler(BaseHTTPRequestHandler):
    requests: list[tuple[str, dict[str, list[str]]]]

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        self.requests.append((url.path, query))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, b'{"kind":"Status","apiVersion":"v1","code":401}')
        elif url.path.rstrip("/") == RESOURCE:
            self._send(200, (RECORDS / "apigroup-resource.k8s.io.json").read_bytes())
        elif url.path in ROUTES:
            pages = ROUTES[url.path]
            token = query.get("continue", [""])[0]
            if token not in pages:
                self._send(410, b'{"kind":"Status","apiVersion":"v1","code":410}')
            else:
                self._send(200, pages[token])
        else:
            self._send(404, (RECORDS / "not-found.json").read_bytes())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[tuple[str, list[tuple[str, dict[str, list[str]]]]]]:
    seen: list[tuple[str, dict[str, list[str]]]] = []
    handler = type("Handler", (_Handler,), {"requests": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture()
def kubeconfig(tmp_path: Path, server: tuple[str, list]) -> Path:
    url, _ = server
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "recorded", "cluster": {"server": url}},
            {"name": "elsewhere", "cluster": {"server": "http://127.0.0.1:9"}},
        ],
        "users": [{"name": "tester", "user": {"token": TOKEN}}],
        "contexts": [
            {"name": "other", "context": {"cluster": "elsewhere", "user": "tester"}},
            {"name": "recorded", "context": {"cluster": "recorded", "user": "tester"}},
        ],
        "current-context": "other",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_lists_every_kind_page_by_page(kubeconfig: Path, server: tuple[str, list]) -> None:
    _, seen = server
    stats = ListStats()
    objects = list_cluster("recorded", kubeconfig=str(kubeconfig), page_size=2, stats=stats)
    assert len(objects.slices) == 3 and len(objects.nodes) == 3
    assert len(objects.classes) == 1
    assert len(objects.claims) == 4 and len(objects.templates) == 5
    assert len(objects.taint_rules) == 1
    assert stats.pages == {
        "DeviceClasses": 1,
        "ResourceSlices": 2,
        "ResourceClaims": 2,
        "ResourceClaimTemplates": 3,
        "DeviceTaintRules": 1,
        "Nodes": 2,
    }
    assert stats.versions["DeviceTaintRules"] == "v1alpha3"
    assert stats.versions["ResourceSlices"] == "v1"
    # Every list asked for pages of 2; later pages carried the previous page's token.
    lists = [(p, q) for p, q in seen if p in ROUTES]
    assert all(q["limit"] == ["2"] for _, q in lists)
    slices = [q.get("continue", [""])[0] for p, q in lists if p.endswith("/resourceslices")]
    assert slices == list(ROUTES[f"{RESOURCE}/v1/resourceslices"])
    # DeviceTaintRules: not served in v1 and v1beta2, found in v1alpha3. A version whose
    # API class in the kubernetes client has no lister for them is skipped without a
    # request (clients before 37 know them in fewer versions): the order is asserted.
    taint_paths = [p for p, _ in seen if p.endswith("/devicetaintrules")]
    preferred = [f"{RESOURCE}/{v}/devicetaintrules" for v in ("v1", "v1beta2", "v1alpha3")]
    assert taint_paths[-1] == preferred[-1]
    assert taint_paths == [p for p in preferred if p in taint_paths]


def test_the_listed_cluster_is_analysed(kubeconfig: Path) -> None:
    objects = list_cluster("recorded", kubeconfig=str(kubeconfig), page_size=2)
    snapshot = Cluster.from_objects(objects).snapshot()
    single = next(t for t in objects.templates if t.metadata.name == "single-gpu")
    report = fit(snapshot, single)
    # 6 GPUs, 3 taken by allocated claims, node-00002 tainted by the DeviceTaintRule.
    free = {n.node: n.total_pods for n in report.nodes}
    assert free["node-00002"] == 0
    assert report.placed == sum(free.values()) > 0
    taken = report.node("node-00002")
    assert taken.first_failure is not None and "taint" in (taken.first_failure.reason or "")


def test_cli_from_cluster(kubeconfig: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = main(
        [
            "capacity",
            "--from-cluster",
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "recorded",
            "--chunk-size",
            "2",
            "--template",
            "single-gpu",
            "-o",
            "json",
        ],
        out,
        err,
    )
    assert status == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["fit"]["placed"] >= 1
    assert doc["fragmentation"]["cluster"]["devices"]["cordoned"] == 2


def test_errors_are_reported(kubeconfig: Path, tmp_path: Path) -> None:
    with pytest.raises(ClusterReadError, match="context"):
        list_cluster("no-such-context", kubeconfig=str(kubeconfig))
    bad = yaml.safe_load(kubeconfig.read_text())
    bad["users"][0]["user"]["token"] = "wrong"
    wrong = tmp_path / "wrong"
    wrong.write_text(yaml.safe_dump(bad))
    with pytest.raises(ClusterReadError, match="401"):
        list_cluster("recorded", kubeconfig=str(wrong))
    out, err = io.StringIO(), io.StringIO()
    args = ["capacity", "--from-cluster", "--kubeconfig", str(wrong), "--context", "recorded"]
    assert main([*args, "--template", "x"], out, err) == 4
    [line] = err.getvalue().splitlines()
    assert line.startswith("error: cannot read the cluster at http://127.0.0.1:")
    assert line.endswith(": 401 Unauthorized: you must be logged in to the server")
