"""Objects at a URL: ``kubectl -f https://...`` and ``draspeed.load("https://...")``.

The body is fetched with a timeout over the whole transfer (connecting, waiting and
reading), and at most ``max_bytes`` of it; any failure is one InputError naming the
URL and the reason.
"""

from __future__ import annotations

import http.client
import socket
import time
import urllib.error
import urllib.request

from draspeed.errors import InputError

DEFAULT_URL_TIMEOUT = 30.0
_CHUNK = 1 << 16


def is_url(source: str) -> bool:
    """``http://`` or ``https://`` (the schemes kubectl fetches ``-f`` from)."""
    return source.startswith(("http://", "https://"))


def read_url(url: str, *, timeout: float, max_bytes: int) -> bytes:
    """The body of ``url``; InputError if it cannot be had within ``timeout`` seconds."""
    from draspeed import __version__

    deadline = time.monotonic() + timeout
    try:
        request = urllib.request.Request(
            url,
            headers={
                "Accept": "application/json, application/yaml;q=0.9, */*;q=0.8",
                "User-Agent": f"draspeed/{__version__}",
            },
        )
    except ValueError as exc:  # (a host urllib cannot read: "http://[::1")
        raise InputError(url, "", f"not a URL: {exc}") from None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            chunks: list[bytes] = []
            size = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                # The socket timeout bounds each wait; the deadline bounds them all.
                _set_timeout(response, left)
                chunk = response.read(min(_CHUNK, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    raise InputError(
                        url,
                        "",
                        f"more than the limit of {max_bytes} bytes (load(..., max_bytes=...))",
                    )
    except urllib.error.HTTPError as exc:
        raise InputError(url, "", f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise InputError(url, "", _timed_out(timeout)) from None
        raise InputError(url, "", f"cannot fetch: {exc.reason}") from None
    except TimeoutError:
        raise InputError(url, "", _timed_out(timeout)) from None
    except http.client.InvalidURL as exc:  # a control character, a port not a number
        raise InputError(url, "", f"not a URL: {exc}") from None
    except http.client.HTTPException as exc:  # an answer that is not HTTP
        raise InputError(url, "", f"cannot fetch: {exc!r}") from None
    except OSError as exc:
        raise InputError(url, "", f"cannot fetch: {exc.strerror or exc}") from None
    return b"".join(chunks)


def _timed_out(timeout: float) -> str:
    return f"no complete answer within {timeout:g}s"


def _set_timeout(response: object, seconds: float) -> None:
    fp = getattr(response, "fp", None)
    raw = getattr(fp, "raw", None)
    sock = getattr(raw, "_sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(seconds)
