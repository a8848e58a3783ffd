"""``draspeed.load``: anything ``kubectl get -o yaml|json`` prints, in one call.

Sources may be paths (files, or directories searched recursively for ``*.yaml``,
``*.yml`` and ``*.json`` in sorted order), ``"-"`` for standard input, YAML or JSON text
(``str`` or ``bytes``), decoded objects (``dict``), lists of any of these, and objects
of the Kubernetes Python clients (``kubernetes`` models, lightkube and kr8s objects).
``kind: List`` and typed lists (``ResourceSliceList`` ...) are expanded.

JSON takes a fast path (msgspec, with the cyclic garbage collector paused while the
object trees are built: it would otherwise rescan millions of young containers), and
ResourceSlice devices of the common shape are built from per-load caches
(the compiled ``draspeed._decode``). YAML is not tuned for bulk input: even libyaml
parses it ~40x slower than msgspec parses the same JSON, so dump big clusters as JSON.

Input limits (keyword arguments of :func:`load`, defaults in :mod:`draspeed.api.text`):
``max_bytes`` per file or standard input (1 GiB; checked before reading),
``max_depth`` of nested collections (200) and ``max_alias_expansion`` of YAML aliases
(10 million nodes and characters); duplicate mapping keys are refused. A text beyond
them raises one InputError naming the file (and document) and the limit.
"""

from __future__ import annotations

import gc
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draspeed.api.context import Caches
from draspeed.api.decode import decode_known, lookup, unsupported
from draspeed.api.messages import wrong_type
from draspeed.api.model import (
    DeviceClass,
    DeviceTaintRule,
    DRAObject,
    Node,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draspeed.api.text import (
    DEFAULT_MAX_ALIAS_EXPANSION,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    Limits,
    TextError,
)
from draspeed.api.text import parse_text as _parse_text
from draspeed.errors import InputError

_FILE_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class Objects:
    """Decoded objects by kind, each list in input order, plus conversion warnings."""

    slices: list[ResourceSlice] = field(default_factory=list)
    classes: list[DeviceClass] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    templates: list[ResourceClaimTemplate] = field(default_factory=list)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, obj: DRAObject) -> None:
        if isinstance(obj, ResourceSlice):
            self.slices.append(obj)
        elif isinstance(obj, DeviceClass):
            self.classes.append(obj)
        elif isinstance(obj, ResourceClaim):
            self.claims.append(obj)
        elif isinstance(obj, ResourceClaimTemplate):
            self.templates.append(obj)
        elif isinstance(obj, DeviceTaintRule):
            self.taint_rules.append(obj)
        else:
            self.nodes.append(obj)

    def by_kind(self) -> dict[str, list[Any]]:
        """``{"ResourceSlice": [...], "DeviceClass": [...], ...}`` (every kind present)."""
        return {
            "ResourceSlice": self.slices,
            "DeviceClass": self.classes,
            "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates,
            "DeviceTaintRule": self.taint_rules,
            "Node": self.nodes,
        }

    def __iter__(self) -> Iterator[DRAObject]:
        """Every object, kind by kind (the order of :meth:`by_kind`)."""
        for objects in self.by_kind().values():
            yield from objects

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_kind().values())

    def extend(self, other: Objects) -> None:
        """Append another load's objects and warnings."""
        for mine, theirs in zip(self.by_kind().values(), other.by_kind().values(), strict=True):
            mine.extend(theirs)
        self.warnings.extend(other.warnings)


def load(
    *sources: Any,
    validate: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
) -> Objects:
    """Decode every object of every source; raise one InputError on the first bad one.

    Unknown kinds are an error naming the document, never skipped. Conversion losses
    of older API versions are both warned (``warnings.warn``) and listed in
    ``Objects.warnings``. ``max_bytes`` bounds each file and standard input,
    ``max_depth`` the nesting of collections in any text, ``max_alias_expansion`` what
    YAML aliases add to a document once expanded.
    """
    limits = Limits(max_bytes, max_depth, max_alias_expansion)
    loader = _Loader(validate, limits)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for source in sources:
            loader.source(source)
    finally:
        if was_enabled:
            gc.enable()
    return loader.objects


# ------------------------------------------------------------------------------ text


def parse_text(text: str | bytes, limits: Limits | None = None) -> list[Any]:
    """The documents of a YAML or JSON text; one InputError naming ``<text>`` if bad."""
    try:
        return _parse_text(text, limits or Limits())
    except TextError as exc:
        raise _text_error("<text>", exc) from None


def _text_error(origin: str, exc: TextError) -> InputError:
    where = origin if exc.document is None else f"{origin} document {exc.document}"
    return InputError(where, exc.path, exc.message)


# ----------------------------------------------------------------- client objects


def to_plain(obj: Any) -> Any:
    """A Kubernetes client object as the JSON-shaped data the API server sent."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    attribute_map = getattr(obj, "attribute_map", None)
    if isinstance(attribute_map, Mapping):
        # kubernetes-client (openapi-generator) model: snake_case attributes, their JSON
        # names in attribute_map; unset fields are None.
        out = {}
        for attr, json_name in attribute_map.items():
            value = getattr(obj, attr, None)
            if value is not None:
                out[json_name] = to_plain(value)
        return out
    isoformat = getattr(obj, "isoformat", None)
    if callable(isoformat):
        return str(isoformat()).replace("+00:00", "Z")
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):  # pydantic models (kubernetes >= 35)
        return to_plain(model_dump(by_alias=True, exclude_none=True, mode="json"))
    raw = getattr(obj, "raw", None)
    if isinstance(raw, Mapping):  # kr8s objects
        return to_plain(raw)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):  # lightkube models (camelCase already)
        return to_plain(to_dict())
    raise InputError(
        type(obj).__name__, "", "not a Kubernetes object, path, YAML/JSON text or mapping"
    )


# -------------------------------------------------------------------------- sources


class _Loader:
    def __init__(self, validate: bool, limits: Limits) -> None:
        self.validate = validate
        self.limits = limits
        self.objects = Objects()
        self.caches = Caches()

    def source(self, source: Any) -> None:
        if isinstance(source, os.PathLike):
            self.path(Path(source))
        elif isinstance(source, str):
            if source == "-":
                self.text(self.read_stdin(), "<stdin>")
            elif "\n" in source or source.lstrip()[:1] in ("{", "["):
                self.text(source, "<text>")
            elif os.path.exists(source):
                self.path(Path(source))
            elif ":" in source:
                self.text(source, "<text>")
            else:
                raise InputError(source, "", "no such file or directory")
        elif isinstance(source, (bytes, bytearray, memoryview)):
            self.text(bytes(source), "<bytes>")
        elif isinstance(source, Mapping):
            self.document(source, "<object>", None)
        elif isinstance(source, (list, tuple)):
            for item in source:
                self.source(item)
        else:
            self.document(to_plain(source), f"<{type(source).__name__}>", None)

    def path(self, path: Path) -> None:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in _FILE_SUFFIXES and p.is_file())
            for file in files:
                self.file(file)
        elif path.exists():
            self.file(path)
        else:
            raise InputError(str(path), "", "no such file or directory")

    def file(self, path: Path) -> None:
        limit = self.limits.max_bytes
        try:
            with path.open("rb") as f:
                info = os.fstat(f.fileno())
                # A regular file says its size: refuse before reading any of it.
                if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                    raise InputError(str(path), "", _too_big(info.st_size, limit))
                data = f.read(limit + 1)
        except OSError as exc:
            raise InputError(str(path), "", exc.strerror or str(exc)) from exc
        if len(data) > limit:
            raise InputError(str(path), "", _too_big(None, limit))
        self.text(data, str(path))

    def read_stdin(self) -> str | bytes:
        limit = self.limits.max_bytes
        stream = getattr(sys.stdin, "buffer", sys.stdin)  # bytes if it has them
        data: str | bytes = stream.read(limit + 1)
        if len(data) > limit:
            raise InputError("<stdin>", "", _too_big(None, limit))
        return data

    def text(self, text: str | bytes, origin: str) -> None:
        try:
            docs = _parse_text(text, self.limits)
        except TextError as exc:
            raise _text_error(origin, exc) from None
        self.documents(docs, origin)

    def documents(self, docs: list[Any], origin: str) -> None:
        """Documents parsed from JSON/YAML text."""
        for i, doc in enumerate(docs):
            if isinstance(doc, list):
                # A top-level JSON/YAML array of objects: each element is a document.
                for j, item in enumerate(doc):
                    self.document(item, f"{origin} document {i + 1} item {j + 1}", None)
            else:
                self.document(doc, origin, i + 1)

    def document(self, doc: Any, origin: str, index: int | None) -> None:
        where = origin if index is None else f"{origin} document {index}"
        if not isinstance(doc, Mapping):
            raise InputError(where, "", wrong_type("object", doc))
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            self.list_items(doc, kind, where)
            return
        self.one(doc, where, None)

    def list_items(self, doc: Mapping[str, Any], kind: str, where: str) -> None:
        # Items of typed lists (API list responses) carry no apiVersion/kind of their own.
        item_kind = None if kind == "List" else kind[: -len("List")]
        api_version = doc.get("apiVersion")
        items = doc["items"] or []
        if not isinstance(items, list):
            raise InputError(where, "items", wrong_type("array", items))
        for j, item in enumerate(items):
            if type(item) is not dict and not isinstance(item, Mapping):
                raise InputError(where, f"items[{j}]", wrong_type("object", item))
            type_meta = None
            if item_kind is not None:
                type_meta = (item.get("apiVersion") or api_version, item.get("kind") or item_kind)
            self.one(item, where, j, type_meta)

    def one(
        self, obj: Mapping[str, Any], where: str, item: int | None, type_meta: Any = None
    ) -> None:
        """Decode one object: the document, or item ``item`` of its list."""
        api_version, kind = (
            type_meta if type_meta is not None else (obj.get("apiVersion"), obj.get("kind"))
        )
        # Per item of a list of thousands: the path for errors is built only for errors.
        if not (type(api_version) is str and type(kind) is str and api_version and kind):
            self.check_type_meta(api_version, kind, where, item)
        assert isinstance(api_version, str) and isinstance(kind, str)
        found = lookup(api_version, kind)  # remembered per (apiVersion, kind)
        if found is None:
            raise InputError(where, f"{_prefix(item)}kind", unsupported(api_version, kind))
        try:
            decoded = decode_known(
                obj,
                kind,
                found,
                validate=self.validate,
                caches=self.caches,
                sink=self.objects.warnings,
            )
        except InputError as exc:
            if hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"in {where}" + ("" if item is None else f", items[{item}]"))
            raise
        self.objects.add(decoded)

    @staticmethod
    def check_type_meta(api_version: Any, kind: Any, where: str, item: int | None) -> None:
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or not value:
                raise InputError(
                    where,
                    f"{_prefix(item)}{key}",
                    "Required value" if not value else wrong_type("string", value),
                )


def _too_big(size: int | None, limit: int) -> str:
    what = "more" if size is None else f"{size} bytes is more"
    return f"{what} than the limit of {limit} bytes (load(..., max_bytes=...))"


def _prefix(item: int | None) -> str:
    return "" if item is None else f"items[{item}]."
