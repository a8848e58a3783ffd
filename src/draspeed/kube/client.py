"""Talking to an API server: the client of a kubeconfig, and requests that fail well.

Every request has a timeout (``--request-timeout``, default 30 s). A request answered
with 429 (too many requests) or a 5xx status, or whose connection broke, is retried
with exponential backoff (0.5 s, doubling, at most 8 s; a ``Retry-After`` header is
honoured), at most ``retries`` times. Anything else that keeps the cluster from being
read is one :class:`ClusterReadError`: one line naming the server and the reason
(unreachable, refused, timed out, unauthorised, forbidden). Uses the official
``kubernetes`` client (``pip install 'draspeed[kube]'``); without it,
:class:`ClientMissing` says how to install it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draspeed.errors import DraspeedError

DEFAULT_REQUEST_TIMEOUT = 30.0
INSTALL_HINT = "reading a live cluster needs the kubernetes client: pip install 'draspeed[kube]'"


class ClusterReadError(DraspeedError):
    """The cluster could not be read: ``server`` and ``reason`` (one line)."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        where = f"cannot read the cluster at {server}" if server else "cannot read the cluster"
        super().__init__(f"{where}: {reason}")


class ClientMissing(DraspeedError, ImportError):
    """The ``kubernetes`` package is not installed."""

    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


class Gone(Exception):
    """410 Gone: a list's continue token expired."""


class NotServed(Exception):
    """404: the server does not serve what was asked for."""


@dataclass
class RequestPolicy:
    """Timeout and retries of each request; ``sleep`` is replaceable in tests."""

    timeout: float = DEFAULT_REQUEST_TIMEOUT
    retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)


def kubernetes_client() -> Any:
    """The ``kubernetes.client`` module, or ClientMissing."""
    try:
        from kubernetes import client
    except ImportError:
        raise ClientMissing() from None
    return client


def api_client_for(context: str | None = None, kubeconfig: str | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for a kubeconfig context (default: current;
    in a pod without a kubeconfig, its service account)."""
    client = kubernetes_client()
    from kubernetes import config

    configuration = client.Configuration()
    try:
        config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    except (config.ConfigException, OSError) as exc:
        if context is not None or kubeconfig is not None:
            raise ClusterReadError("", f"kubeconfig: {_first_line(exc)}") from None
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            raise ClusterReadError(
                "", f"no kubeconfig and not in a cluster: {_first_line(exc)}"
            ) from None
    # Retries are ours (with backoff, per status); urllib3's own would hide the reason.
    configuration.retries = False
    return client.ApiClient(configuration)


def context_namespace(context: str | None = None, kubeconfig: str | None = None) -> str:
    """The namespace of a kubeconfig context (``default`` if it names none)."""
    try:
        from kubernetes import config

        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # no client, no kubeconfig: kubectl's default
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else "default"


def server_of(api: Any) -> str:
    """The API server's address (for messages)."""
    return str(getattr(getattr(api, "configuration", None), "host", "") or "")


def request(api: Any, call: Callable[..., Any], policy: RequestPolicy, **kwargs: Any) -> bytes:
    """``call(**kwargs)`` (a client method) with the policy's timeout and retries; the
    raw body. Raises Gone (410), NotServed (404) or ClusterReadError."""
    from kubernetes.client.exceptions import ApiException

    server = server_of(api)
    wait = policy.backoff
    attempt = 0
    while True:
        try:
            # (connect, read): clients before 35 ignore a single float timeout.
            timeout = (policy.timeout, policy.timeout)
            response = call(_request_timeout=timeout, _preload_content=False, **kwargs)
            return _body(response)
        except ApiException as exc:
            status = int(exc.status or 0)
            if status == 410:
                raise Gone() from None
            if status == 404:
                raise NotServed() from None
            retry = status == 429 or 500 <= status < 600
            if not retry or attempt >= policy.retries:
                raise ClusterReadError(server, _status_reason(exc)) from None
            delay = _retry_after(exc)
        except Exception as exc:
            reason, transient = _connection_reason(exc, policy.timeout)
            if reason is None:
                raise
            if not transient or attempt >= policy.retries:
                raise ClusterReadError(server, reason) from None
            delay = None
        attempt += 1
        policy.sleep(min(policy.max_backoff, delay if delay is not None else wait))
        wait = min(policy.max_backoff, wait * 2)


def _body(response: Any) -> bytes:
    """The raw body of a ``_preload_content=False`` response (urllib3)."""
    try:
        data = response.data
    finally:
        release = getattr(response, "release_conn", None)
        if callable(release):
            release()
    return bytes(data)


def _status_reason(exc: Any) -> str:
    """``401 Unauthorized``, with the server's own message when it sent a Status."""
    status, reason = exc.status, exc.reason or ""
    text = f"{status} {reason}".strip()
    message = ""
    try:
        body = json.loads(exc.body) if exc.body else None
        if isinstance(body, dict):
            message = str(body.get("message") or "")
    except (TypeError, ValueError):
        pass
    if message.strip().lower() == str(reason).strip().lower():
        message = ""  # the Status repeats the reason
    if status == 401 and not message:
        message = "you must be logged in to the server"
    return f"{text}: {message}" if message else text


def _retry_after(exc: Any) -> float | None:
    headers = getattr(exc, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _connection_reason(exc: BaseException, timeout: float) -> tuple[str | None, bool]:
    """(one-line reason, worth retrying) for a transport failure; (None, False) if
    ``exc`` is not one."""
    import urllib3.exceptions as u3

    cause: BaseException = exc
    if isinstance(exc, u3.MaxRetryError) and exc.reason is not None:
        cause = exc.reason
    # NewConnectionError derives from ConnectTimeoutError in urllib3 2: ask it first.
    if isinstance(cause, u3.NewConnectionError):
        return f"unreachable: {_errno_text(cause)}", False
    if isinstance(cause, (u3.ReadTimeoutError, u3.ConnectTimeoutError, TimeoutError)):
        return f"no answer within {timeout:g}s (--request-timeout)", False
    if isinstance(cause, u3.SSLError):
        return f"TLS: {_first_line(cause)}", False
    if isinstance(cause, (u3.ProtocolError, ConnectionResetError)):
        return f"connection broken: {_first_line(cause)}", True
    if isinstance(cause, u3.HTTPError):
        return _first_line(cause), False
    if isinstance(exc, OSError):
        return _errno_text(exc), False
    return None, False


def _errno_text(exc: BaseException) -> str:
    inner = exc
    while inner.__context__ is not None and not isinstance(inner, OSError):
        inner = inner.__context__
    for candidate in (exc, inner, exc.__context__, exc.__cause__):
        if isinstance(candidate, OSError) and candidate.strerror:
            return candidate.strerror.lower()
    text = _first_line(exc)
    marker = "] "
    return text.split(marker, 1)[1] if marker in text else text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
