"""Plumbing for the fuzz tests: seed corpora, a hang guard, and the contract checks.

The contract every fuzz target must keep: on any input it returns, or raises one of
draspeed's own errors (:class:`~draspeed.errors.DraspeedError`) with a message; it
never raises anything else, never hangs, never crashes the interpreter.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from draspeed.errors import DraspeedError


def _project_root() -> Path:
    """The checkout whose ``tests/`` holds the seed corpora.

    Tests run against the installed package (site-packages), so the module's own path
    says nothing about the checkout: look from the working directory up, then fall
    back to the source tree this module sits in.
    """
    here = Path(__file__).resolve().parents[3]
    for base in (Path.cwd(), *Path.cwd().parents, here):
        if (base / "tests" / "conformance" / "upstream").is_dir():
            return base
    return here


PROJECT = _project_root()
SHARED = PROJECT.parent / "shared"  # beside the checkout, as CI and developers have it


class Hang(Exception):
    """A fuzz target ran past its time budget."""


@contextmanager
def time_budget(seconds: float, what: str = "call") -> Iterator[None]:
    """Raise :class:`Hang` inside the block once ``seconds`` of wall time have passed.

    Uses SIGALRM, so it only guards the main thread (elsewhere it does nothing). The
    exception is raised between Python bytecodes: a hang inside C code shows up as the
    test runner's own timeout instead.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"{what} still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def only_draspeed_errors(
    exc: BaseException, known: tuple[tuple[type[BaseException], str], ...] = ()
) -> None:
    """Fail unless ``exc`` is one of draspeed's errors with a message.

    ``known`` lists (exception type, text in its message) of bugs already reported and
    pinned by a test of their own, so a fuzz run can look past them for new ones.
    """
    if any(isinstance(exc, kind) and text in str(exc) for kind, text in known):
        return
    if isinstance(exc, Hang) or not isinstance(exc, DraspeedError):
        raise AssertionError(f"{type(exc).__name__} escaped: {exc}") from exc
    if not str(exc).strip():
        raise AssertionError(f"{type(exc).__name__} without a message") from exc


# --------------------------------------------------------------------------------------
# Seed corpora (real inputs the mutators start from)
# --------------------------------------------------------------------------------------


def _yaml_files() -> list[Path]:
    files = sorted((SHARED / "differential").glob("*.yaml"))[:40]
    for folder in ("versions", "seeds"):
        files += sorted((PROJECT / "tests" / "data" / "api" / folder).glob("*.yaml"))
    files += sorted((PROJECT / "tests" / "conformance" / "upstream").glob("*.yaml"))[::10]
    return files


@cache
def seed_documents() -> tuple[dict[str, Any], ...]:
    """Kubernetes objects (one per document) from the corpora beside the project."""
    found: list[dict[str, Any]] = []
    for path in _yaml_files():
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict):
                found.append(doc)
    return tuple(found)


@cache
def seed_texts() -> tuple[bytes, ...]:
    """Whole files as bytes (YAML), plus a few objects as JSON."""
    import json

    texts = [p.read_bytes() for p in _yaml_files()[:25]]
    texts += [json.dumps(d).encode() for d in seed_documents()[:25]]
    return tuple(texts)


@cache
def seed_selectors() -> tuple[str, ...]:
    """Every CEL selector the corpora contain (classes, requests, the CEL corpus)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expression", "expr") and isinstance(value, str):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in seed_documents():
        walk(doc)
    corpus = PROJECT / "tests" / "data" / "cel" / "corpus.yaml"
    if corpus.is_file():
        walk(yaml.safe_load(corpus.read_text(encoding="utf-8")))
    return tuple(sorted(found))
