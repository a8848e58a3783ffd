"""A small fake Kubernetes API server on localhost, for tests and the documentation.

It serves what draspeed and a scheduler loop need: discovery of ``resource.k8s.io``,
lists of DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates,
DeviceTaintRules, Nodes and Pods (pages with ``limit``/``continue``, all namespaces
or one, ``labelSelector`` and the ``spec.nodeName=`` field selector for pods), reads
of one object, creating claims (``generateName`` honoured), and merge patches of a
claim and its status. It checks a bearer token (401 otherwise).

Faults are injected per request path (:meth:`FakeAPIServer.fail`): a status (429 with
``Retry-After``, 5xx, 410 for an expired continue token, 403), a hang longer than the
client's timeout, or a connection closed without an answer. Every request is logged
(:attr:`FakeAPIServer.requests`). Only for loopback addresses; stops with its
context manager::

    with FakeAPIServer(objects) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        ...
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "draspeed-test-token"
GROUP = "resource.k8s.io"
VERSION = "v1"

# plural -> (kind, namespaced, API prefix)
_RESOURCES: dict[str, tuple[str, bool, str]] = {
    "deviceclasses": ("DeviceClass", False, f"/apis/{GROUP}/{VERSION}"),
    "resourceslices": ("ResourceSlice", False, f"/apis/{GROUP}/{VERSION}"),
    "resourceclaims": ("ResourceClaim", True, f"/apis/{GROUP}/{VERSION}"),
    "resourceclaimtemplates": ("ResourceClaimTemplate", True, f"/apis/{GROUP}/{VERSION}"),
    "devicetaintrules": ("DeviceTaintRule", False, f"/apis/{GROUP}/{VERSION}"),
    "nodes": ("Node", False, "/api/v1"),
    "pods": ("Pod", True, "/api/v1"),
}
_KIND_PLURAL = {kind: plural for plural, (kind, _, _) in _RESOURCES.items()}
_PATH = re.compile(
    r"^(?P<prefix>/apis/resource\.k8s\.io/v1|/api/v1)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status))?$"
)


@dataclass
class Fault:
    """What the server does instead of answering, ``times`` times."""

    status: int = 0  # an HTTP status to answer with
    retry_after: float | None = None
    hang: float = 0.0  # seconds to wait before answering normally
    drop: bool = False  # close the connection without an answer
    times: int = 1
    only_continue: bool = False  # only requests that carry a continue token


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any = None


@dataclass
class _State:
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    faults: list[tuple[str, Fault]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    version: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeAPIServer:
    """A fake API server holding ``objects`` (dicts, any of the kinds above)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), token: str = TOKEN) -> None:
        self.token = token
        self.state = _State()
        for obj in objects:
            self.add(obj)
        handler = type("Handler", (_Handler,), {"server_state": self.state, "token": token})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def requests(self) -> list[Request]:
        return self.state.requests

    def add(self, obj: Mapping[str, Any]) -> None:
        """Store an object (a copy), given a resourceVersion and a uid if it has none."""
        doc = copy.deepcopy(dict(obj))
        plural = _KIND_PLURAL[doc["kind"]]
        meta = doc.setdefault("metadata", {})
        with self.state.lock:
            self.state.version += 1
            meta.setdefault("resourceVersion", str(self.state.version))
            meta.setdefault("uid", _uid(plural, meta.get("namespace", ""), meta.get("name", "")))
            self.state.objects.setdefault(plural, []).append(doc)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        """The stored objects of a kind (copies)."""
        return copy.deepcopy(self.state.objects.get(_KIND_PLURAL[kind], []))

    def fail(self, path_part: str, fault: Fault) -> None:
        """Inject ``fault`` into requests whose path contains ``path_part``."""
        with self.state.lock:
            self.state.faults.append((path_part, fault))

    def write_kubeconfig(self, path: Path, *, token: str | None = None) -> Path:
        """A kubeconfig whose current context is this server (and the token)."""
        import yaml

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": token or self.token}}],
            "contexts": [
                {"name": "fake", "context": {"cluster": "fake", "user": "tester"}},
            ],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def __enter__(self) -> FakeAPIServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a dropped connection (an injected fault) is no news


def _uid(plural: str, namespace: str, name: str) -> str:
    digest = hashlib.sha256(f"{plural}/{namespace}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


class _Handler(BaseHTTPRequestHandler):
    server_state: _State
    token: str
    protocol_version = "HTTP/1.1"

    # ------------------------------------------------------------------ dispatch

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        body = None
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            body = json.loads(self.rfile.read(length))
        state = self.server_state
        with state.lock:
            state.requests.append(Request(method, url.path, query, body))
            fault = self._take_fault(url.path, query)
        if fault is not None:
            if fault.drop:
                self.close_connection = True
                self.connection.close()
                return
            if fault.hang:
                time.sleep(fault.hang)
            if fault.status:
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
                self._status(fault.status, "injected fault", headers)
                return
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            self._status(401, "Unauthorized")
            return
        if url.path.rstrip("/") == f"/apis/{GROUP}":
            self._send(200, _api_group())
            return
        match = _PATH.match(url.path)
        if match is None:
            self._status(404, "the server could not find the requested resource")
            return
        plural = match["plural"]
        if plural not in _RESOURCES or _RESOURCES[plural][2] != match["prefix"]:
            self._status(404, "the server could not find the requested resource")
            return
        if method == "GET" and match["name"] is None:
            self._list(plural, match["namespace"], query)
        elif method == "GET":
            self._get(plural, match["namespace"], match["name"])
        elif method == "POST" and match["name"] is None:
            self._create(plural, match["namespace"], body)
        elif method == "PATCH" and match["name"] is not None:
            self._patch(plural, match["namespace"], match["name"], body)
        else:
            self._status(405, "method not allowed")

    def _take_fault(self, path: str, query: dict[str, list[str]]) -> Fault | None:
        for i, (part, fault) in enumerate(self.server_state.faults):
            if part not in path:
                continue
            if fault.only_continue and not query.get("continue"):
                continue
            fault.times -= 1
            if fault.times <= 0:
                del self.server_state.faults[i]
            return fault
        return None

    # ---------------------------------------------------------------- resources

    def _stored(self, plural: str) -> list[dict[str, Any]]:
        return self.server_state.objects.setdefault(plural, [])

    def _list(self, plural: str, namespace: str | None, query: dict[str, list[str]]) -> None:
        kind = _RESOURCES[plural][0]
        with self.server_state.lock:
            items = [
                copy.deepcopy(o)
                for o in self._stored(plural)
                if namespace is None or o["metadata"].get("namespace") == namespace
            ]
            version = str(self.server_state.version)
        items = [o for o in items if _selected(o, query)]
        start = int((query.get("continue") or ["0"])[0] or 0)
        limit = int((query.get("limit") or ["0"])[0] or 0)
        end = start + limit if limit else len(items)
        page = items[start:end]
        for item in page:  # list items carry no apiVersion/kind, as a real server sends
            item.pop("apiVersion", None)
            item.pop("kind", None)
        meta: dict[str, Any] = {"resourceVersion": version}
        if end < len(items):
            meta["continue"] = str(end)
            meta["remainingItemCount"] = len(items) - end
        api_version = "v1" if _RESOURCES[plural][2] == "/api/v1" else f"{GROUP}/{VERSION}"
        self._send(
            200, {"apiVersion": api_version, "kind": f"{kind}List", "metadata": meta, "items": page}
        )

    def _find(self, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        for obj in self._stored(plural):
            meta = obj["metadata"]
            if meta.get("name") == name and (
                namespace is None or meta.get("namespace") == namespace
            ):
                return obj
        return None

    def _get(self, plural: str, namespace: str | None, name: str) -> None:
        with self.server_state.lock:
            found = self._find(plural, namespace, name)
            doc = copy.deepcopy(found) if found is not None else None
        if doc is None:
            self._status(404, f'{plural}.{_group_of(plural)} "{name}" not found', reason="NotFound")
            return
        self._send(200, doc)

    def _create(self, plural: str, namespace: str | None, body: Any) -> None:
        doc = copy.deepcopy(body)
        meta = doc.setdefault("metadata", {})
        if namespace is not None:
            meta["namespace"] = namespace
        with self.server_state.lock:
            if not meta.get("name"):
                base = meta.get("generateName", "")
                meta["name"] = (
                    base[:58]
                    + hashlib.sha256(f"{base}{len(self._stored(plural))}".encode()).hexdigest()[:5]
                )
            if self._find(plural, namespace, meta["name"]) is not None:
                self._status(
                    409, f'{plural} "{meta["name"]}" already exists', reason="AlreadyExists"
                )
                return
            self.server_state.version += 1
            meta["resourceVersion"] = str(self.server_state.version)
            meta["uid"] = _uid(plural, namespace or "", meta["name"])
            doc.pop("status", None)  # the main resource ignores status
            self._stored(plural).append(doc)
            created = copy.deepcopy(doc)
        self._send(201, created)

    def _patch(self, plural: str, namespace: str | None, name: str, body: Any) -> None:
        kind = self.headers.get("Content-Type", "")
        if not isinstance(body, dict) or "merge-patch" not in kind:
            # A JSON patch (a list of operations) is not what this fake applies.
            self._status(
                415, f"only merge patches of an object, not {kind}", reason="UnsupportedMediaType"
            )
            return
        with self.server_state.lock:
            found = self._find(plural, namespace, name)
            if found is None:
                self._status(404, f'{plural} "{name}" not found', reason="NotFound")
                return
            wanted = (body or {}).get("metadata", {}).get("resourceVersion")
            if wanted is not None and wanted != found["metadata"].get("resourceVersion"):
                self._status(409, "the object has been modified", reason="Conflict")
                return
            is_status = self.path.split("?")[0].endswith("/status")
            patch = {"status": body.get("status")} if is_status else dict(body or {})
            if not is_status:
                patch.pop("status", None)
            _merge(found, patch)
            self.server_state.version += 1
            found["metadata"]["resourceVersion"] = str(self.server_state.version)
            doc = copy.deepcopy(found)
        self._send(200, doc)

    # -------------------------------------------------------------------- output

    def _status(
        self, code: int, message: str, headers: dict[str, str] | None = None, reason: str = ""
    ) -> None:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
        self._send(code, body, headers)

    def _send(self, code: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _api_group() -> dict[str, Any]:
    version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    }


def _group_of(plural: str) -> str:
    return GROUP if _RESOURCES[plural][2].startswith("/apis/") else ""


def _selected(obj: Mapping[str, Any], query: dict[str, list[str]]) -> bool:
    """The two selectors draspeed sends: ``key=value`` labels and ``spec.nodeName=``."""
    for text in query.get("labelSelector", []):
        labels = obj.get("metadata", {}).get("labels") or {}
        for part in filter(None, text.split(",")):
            key, _, value = part.partition("=")
            if labels.get(key.strip()) != value.strip():
                return False
    for text in query.get("fieldSelector", []):
        for part in filter(None, text.split(",")):
            key, _, value = part.partition("=")
            if key == "spec.nodeName" and (obj.get("spec") or {}).get("nodeName", "") != value:
                return False
    return True


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """A JSON merge patch (RFC 7386): maps merged, everything else replaced."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
