"""``draspeed.load``: anything ``kubectl get -o yaml|json`` prints, in one call.

Sources may be paths (files, or directories: their ``*.yaml``, ``*.yml`` and ``*.json``
files in sorted order, and with ``recursive=True`` those of every directory below, as
``kubectl -f DIR [-R]`` reads them), ``http://`` and ``https://`` URLs (fetched with a
timeout), ``"-"`` for standard input, YAML or JSON text (``str`` or ``bytes``), decoded
objects (``dict``), lists of any of these, and objects of the Kubernetes Python clients
(``kubernetes`` models, lightkube and kr8s objects). ``kind: List`` and typed lists
(``ResourceSliceList`` ...) are expanded. Objects without ``apiVersion`` and ``kind``
(the items of an API list call) take them from their list, from their client model's
class, or from the ``kind=`` argument.

One object per kind, namespace and name, as the API server keeps them: an object given
again (``-f x.yaml -f x.yaml``, a file inside a directory also given) is read once when
both copies say the same (compared as decoded, whatever the API version and
resourceVersion), and is an InputError naming both places when they differ.

Objects of kinds draspeed does not read (a Service, a Deployment: anything outside
the DRA API group but Nodes and Pods) are skipped, and one warning says how many of
which kinds, as ``kubectl`` reads what it can of a mixed dump.

JSON takes a fast path (msgspec, with the cyclic garbage collector paused while the
object trees are built: it would otherwise rescan millions of young containers), and
ResourceSlice devices of the common shape are built from per-load caches
(the compiled ``draspeed.api._decode``). A JSON ``List`` or ``ResourceSliceList`` goes
faster still: its ResourceSlices are decoded item by item into typed Structs and built
in compiled code, keeping their text for ``raw`` (:mod:`draspeed.api.bulk`). YAML is
not tuned for bulk input: even libyaml parses it ~40x slower than msgspec parses the
same JSON, so dump big clusters as JSON.

Input limits (keyword arguments of :func:`load`, defaults in :mod:`draspeed.api.text`):
``max_bytes`` per file or standard input (1 GiB; checked before reading),
``max_depth`` of nested collections (200) and ``max_alias_expansion`` of YAML aliases
(10 million nodes and characters); duplicate mapping keys are refused. A text beyond
them raises one InputError naming the file (and document) and the limit.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from draspeed import arguments
from draspeed.api import bulk, json_as_go
from draspeed.api._jsontext import JSONCompactor
from draspeed.api._model_tree import untrack
from draspeed.api._python_tree import REWRITE, TOO_DEEP, document_shape
from draspeed.api.bulk import ListText, NotJSON, read_list
from draspeed.api.bulk_claims import ClaimBuilder, JSONClaim
from draspeed.api.clients import to_plain
from draspeed.api.clients import type_meta as model_type_meta
from draspeed.api.common import object_name
from draspeed.api.context import (
    Caches,
    DraspeedWarning,
    Pending,
    Validation,
    dict_of,
    validation_mode,
)
from draspeed.api.decode import decode_known, is_foreign, lookup, supported_versions, unsupported
from draspeed.api.messages import wrong_type
from draspeed.api.model import (
    DeviceClass,
    DeviceTaintRule,
    DRAObject,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draspeed.api.remote import DEFAULT_URL_TIMEOUT, is_url, read_url
from draspeed.api.slice_schema import FAST_API_VERSIONS, SLICE_DECODER, JSONSlice
from draspeed.api.slices import CheckedDevices, SliceBuilder
from draspeed.api.text import (
    DEFAULT_MAX_ALIAS_EXPANSION,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    Limits,
    TextError,
    parse_documents,
    too_deep,
)
from draspeed.api.text import parse_text as _parse_text
from draspeed.collector import collector_paused
from draspeed.errors import InputError, printable

_FILE_SUFFIXES = (".yaml", ".yml", ".json")
# A URL fetched with timeout 0 or None (no bound, as kubectl's --request-timeout 0).
_NO_URL_TIMEOUT = 10.0**9


@dataclass
class Objects:
    """Decoded objects by kind, each list in input order, plus conversion warnings.

    ``skipped`` counts the objects of kinds draspeed does not read, by kind.
    """

    slices: list[ResourceSlice] = field(default_factory=list)
    classes: list[DeviceClass] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    templates: list[ResourceClaimTemplate] = field(default_factory=list)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

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
        elif isinstance(obj, Pod):
            self.pods.append(obj)
        else:
            what = "a decoded object (draspeed.load)"
            self.nodes.append(arguments.instance_of(obj, Node, "obj", what))

    def by_kind(self) -> dict[str, list[Any]]:
        """``{"ResourceSlice": [...], "DeviceClass": [...], ...}`` (every kind present)."""
        return {
            "ResourceSlice": self.slices,
            "DeviceClass": self.classes,
            "ResourceClaim": self.claims,
            "ResourceClaimTemplate": self.templates,
            "DeviceTaintRule": self.taint_rules,
            "Node": self.nodes,
            "Pod": self.pods,
        }

    def __iter__(self) -> Iterator[DRAObject]:
        """Every object, kind by kind (the order of :meth:`by_kind`)."""
        for objects in self.by_kind().values():
            yield from objects

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_kind().values())

    def extend(self, other: Objects) -> None:
        """Append another load's objects, warnings and skipped counts."""
        arguments.instance_of(other, Objects, "other", "Objects (draspeed.load)")
        for mine, theirs in zip(self.by_kind().values(), other.by_kind().values(), strict=True):
            mine.extend(theirs)
        self.warnings.extend(other.warnings)
        for kind, count in other.skipped.items():
            self.skipped[kind] = self.skipped.get(kind, 0) + count


def load(
    *sources: Any,
    validate: bool | Validation = "strict",
    kind: str | None = None,
    api_version: str | None = None,
    recursive: bool = False,
    timeout: float | None = DEFAULT_URL_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
) -> Objects:
    """Decode every object of every source; raise one InputError on the first bad one.

    ``kind`` (and ``api_version``, default the newest version draspeed reads of that
    kind) is the type of objects that carry none and are not items of a typed list:
    ``load(items, kind="ResourceSlice")``. ``recursive`` reads the directories below a
    directory too (``kubectl -R``); ``timeout`` bounds fetching a URL (seconds; 0 or
    None: no bound).

    ``validate`` as ``kubectl --validate`` takes it: "strict" (the default, or True)
    checks every object as the API server does and refuses unknown and duplicate
    fields; "warn" checks the same but only warns about unknown and duplicate fields
    (the last of duplicates is used); "ignore" (or False) checks neither (see
    :data:`~draspeed.api.context.Validation`).

    An unknown kind of the DRA API group, or a known kind in a version draspeed does
    not read, is an error naming the document; other kinds are skipped with one
    warning (``Objects.skipped``). Conversion losses of older API versions are both
    warned (``warnings.warn``) and listed in ``Objects.warnings``. ``max_bytes`` bounds
    each file, URL and standard input, ``max_depth`` the nesting of collections in any
    text, ``max_alias_expansion`` what YAML aliases add to a document once expanded.
    """
    limits = Limits(max_bytes, max_depth, max_alias_expansion)
    default = _default_type(kind, api_version)
    seconds = arguments.timeout(timeout)  # (TypeError / ValueError naming it)
    loader = _Loader(
        validation_mode(validate),
        limits,
        default,
        recursive,
        _NO_URL_TIMEOUT if seconds is None else seconds,
    )
    # Objects given in Python are named by where they sit among the arguments:
    # "<object>" alone, "<object>[1]" the second argument, "<object>[0][3]" the fourth
    # item of the first argument's list.
    several = len(sources) > 1
    with collector_paused():
        for i, source in enumerate(sources):
            loader.source(source, f"[{i}]" if several else "")
        objects = loader.objects
        # Long-lived and acyclic: out of the cyclic collector's walks (see untrack).
        for decoded in objects.by_kind().values():
            untrack(decoded)
    if objects.skipped:
        text = skipped_warning(objects.skipped)
        objects.warnings.append(text)
        warnings.warn(text, DraspeedWarning, stacklevel=2)
    return objects


def skipped_warning(skipped: Mapping[str, int]) -> str:
    """The one warning about the objects of kinds draspeed does not read."""
    total = sum(skipped.values())
    kinds = ", ".join(f"{printable(kind)} ({count})" for kind, count in sorted(skipped.items()))
    objects = "object" if total == 1 else "objects"
    return f"skipped {total} {objects} of kinds draspeed does not read: {kinds}"


def _default_type(kind: str | None, api_version: str | None) -> tuple[str, str] | None:
    if kind is None:
        if api_version is not None:
            raise ValueError("api_version= needs kind=")
        return None
    if api_version is None:
        versions = supported_versions(kind)
        if not versions:
            raise InputError("kind=", "", unsupported("", kind))
        api_version = versions[0]
    if lookup(api_version, kind) is None:
        raise InputError("kind=", "", unsupported(api_version, kind))
    return api_version, kind


# ------------------------------------------------------------------------------ text


def parse_text(text: str | bytes, limits: Limits | None = None) -> list[Any]:
    """The documents of a YAML or JSON text; one InputError naming ``<text>`` if bad."""
    try:
        return _parse_text(text, limits or Limits())
    except TextError as exc:
        raise _text_error("<text>", exc) from None


# Pieces of a file read at a time while it is compacted.
_PIECE = 16 << 20


def _compacted(
    f: io.BufferedReader, origin: str, head: bytes, limit: int, size: int
) -> bytes | None:
    """The rest of the open file ``f``, after ``head``, compacted with ``head``
    (:class:`~draspeed.api._jsontext.JSONCompactor`); None if it is no JSON that way.
    InputError past ``limit`` bytes (a file that grew since its size was read)."""
    compactor = JSONCompactor(size)
    compactor.feed(head)
    read = len(head)
    piece = bytearray(_PIECE)
    view = memoryview(piece)
    while True:
        n = f.readinto(piece)
        if not n:
            break
        read += n
        if read > limit:
            raise InputError(origin, "", _too_big(None, limit))
        compactor.feed(view[:n])
    return compactor.finish()


def _text_error(origin: str, exc: TextError) -> InputError:
    where = origin if exc.document is None else f"{origin} document {exc.document}"
    return InputError(where, exc.path, exc.message)


# Dicts' JSON text for the compiled slice build (see _Loader.slice_by_json).
_JSON_ENCODER = json_as_go.ENCODER

# -------------------------------------------------------------------------- sources


class _Loader:
    def __init__(
        self,
        mode: Validation,
        limits: Limits,
        default: tuple[str, str] | None = None,
        recursive: bool = False,
        timeout: float = DEFAULT_URL_TIMEOUT,
    ) -> None:
        self.mode = mode
        self.validate = mode != "ignore"
        self.limits = limits
        self.default = default  # (apiVersion, kind) of objects that carry none
        self.recursive = recursive
        self.timeout = timeout
        self.objects = Objects()
        self.caches = Caches()
        self.pending: Pending | None = None  # warnings held back (see json_list)
        # The documents being read are JSON-exact (see draspeed.api.text.Parsed).
        self.json_exact = False
        # The documents being read were built by Python code (see _as_go_reads).
        self.from_python = False
        self.open_lists: set[int] = set()  # lists being read (their ids; see opened)
        self._slice_builder: SliceBuilder | None = None  # made at the first slice built
        # (kind, namespace, name) -> the object kept and where it was read.
        self.seen: dict[tuple[str, str, str], tuple[DRAObject, str, int | None]] = {}

    def source(self, source: Any, at: str = "") -> None:
        """Read one source; ``at`` is where an object given in Python sits (``[0][3]``)."""
        if isinstance(source, os.PathLike):
            self.path(Path(source))
        elif isinstance(source, str):
            if not source.strip():
                raise InputError(
                    f"<text>{at}", "", "an empty string: neither a file path nor YAML/JSON text"
                )
            if source == "-":
                self.text(self.read_stdin(), "<stdin>")
            elif is_url(source):
                data = read_url(source, timeout=self.timeout, max_bytes=self.limits.max_bytes)
                self.text(data, source)
            elif "\n" in source or source.lstrip()[:1] in ("{", "["):
                self.text(source, f"<text>{at}")
            elif os.path.exists(source):
                self.path(Path(source))
            elif ":" in source:
                self.text(source, f"<text>{at}")
            else:
                raise InputError(source, "", "no such file or directory")
        elif isinstance(source, (bytes, bytearray, memoryview)):
            self.text(bytes(source), f"<bytes>{at}")
        elif isinstance(source, Mapping):
            self.python_document(source, f"<object>{at}")
        elif isinstance(source, (list, tuple)):
            with self.opened(source, f"<object>{at}"):
                for j, item in enumerate(source):
                    self.source(item, f"{at}[{j}]")
        else:
            plain = to_plain(source)
            meta = model_type_meta(source)
            if meta is not None and isinstance(plain, dict):
                plain = {"apiVersion": meta[0], "kind": meta[1], **plain}
            self.python_document(plain, f"<{type(source).__name__}>{at}")

    def python_document(self, doc: Any, where: str) -> None:
        """A document built by Python code (a dict, a client's object)."""
        self.from_python = True
        try:
            self.document(doc, where, None)
        finally:
            self.from_python = False

    def path(self, path: Path) -> None:
        if path.is_dir():
            found = path.rglob("*") if self.recursive else path.glob("*")
            files = sorted(p for p in found if p.suffix in _FILE_SUFFIXES and p.is_file())
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
                if stat.S_ISREG(info.st_mode):
                    head = f.read(min(limit + 1, bulk.SAMPLE))
                    if bulk.indented_list(head):
                        # Read a piece at a time, without its indentation: the whole
                        # text is never in memory. What the bulk reading does not take
                        # is read again as it is, the ordinary way (its errors name
                        # places in that text).
                        compact = _compacted(f, str(path), head, limit, info.st_size)
                        if compact is not None and self.bulk_text(compact, str(path)):
                            return
                    f.seek(0)
                data = f.read(limit + 1)
        except OSError as exc:
            raise InputError(str(path), "", exc.strerror or str(exc)) from exc
        if len(data) > limit:
            raise InputError(str(path), "", _too_big(None, limit))
        self.text(data, str(path))

    def read_stdin(self) -> str | bytes:
        limit = self.limits.max_bytes
        if sys.stdin is None:  # (the process was started with it closed: <&-)
            raise InputError("<stdin>", "", "standard input is closed")
        stream = getattr(sys.stdin, "buffer", sys.stdin)  # bytes if it has them
        data: str | bytes = stream.read(limit + 1)
        if len(data) > limit:
            raise InputError("<stdin>", "", _too_big(None, limit))
        return data

    def text(self, text: str | bytes, origin: str) -> None:
        if self.bulk_text(text, origin):
            return

        def duplicate(document: int, path: str, message: str) -> None:
            self.warn_text(f"{origin} document {document}: {path}: {message}")

        try:
            parsed = parse_documents(text, self.limits, self.mode, duplicate)
        except TextError as exc:
            raise _text_error(origin, exc) from None
        self.json_exact = parsed.json_exact
        try:
            self.documents(parsed.docs, origin)
        finally:
            self.json_exact = False

    def bulk_text(self, text: str | bytes, origin: str) -> bool:
        """Read ``text`` as a JSON list item by item (:mod:`draspeed.api.bulk`); False,
        with nothing added, when it is no such list (or not JSON after all)."""
        listed = read_list(text, self.limits)
        return listed is not None and self.json_list(listed, f"{origin} document 1")

    def warn_text(self, text: str) -> None:
        """A warning about the input: listed, and warned (held back while a bulk list
        may still be undone, see :meth:`json_list`)."""
        self.objects.warnings.append(text)
        if self.pending is not None:
            self.pending.append((text, DraspeedWarning))
        else:
            warnings.warn(text, DraspeedWarning, stacklevel=4)

    def json_list(self, listed: ListText, where: str) -> bool:
        """:meth:`list_items` for a list read by :func:`~draspeed.api.bulk.read_list`,
        decoding and building one item at a time. False, with nothing added, when an
        item is no JSON after all: the caller then parses the text the ordinary way.

        So that the outcome is the ordinary one in every case, warnings are held back
        until the end, and an item's error is raised only once the rest of the text is
        known to be JSON (else the ordinary parse reports the text instead).
        """
        objects = self.objects
        marks = [len(found) for found in objects.by_kind().values()]
        warned = len(objects.warnings)
        skipped = dict(objects.skipped)
        seen = len(self.seen)
        pending: Pending = []
        self.pending = pending
        try:
            complete = self.json_items(listed, where)
        except BaseException:
            self.warn(pending)
            raise
        finally:
            self.pending = None
        if not complete:
            for found, mark in zip(objects.by_kind().values(), marks, strict=True):
                del found[mark:]
            del objects.warnings[warned:]
            objects.skipped = skipped
            for _ in range(len(self.seen) - seen):
                self.seen.popitem()  # the newest first: those this list added
            return False
        self.warn(pending)
        return True

    def json_items(self, listed: ListText, where: str) -> bool:
        envelope = listed.envelope
        kind = envelope["kind"]
        item_kind = None if kind == "List" else kind[: -len("List")]
        api_version = envelope.get("apiVersion")
        build = self.slice_builder().build
        checked = self.checked_devices()
        slices = self.objects.slices
        claims = self.objects.claims
        build_claim = ClaimBuilder(self.caches, self.validate).build
        for j in range(len(listed)):
            try:
                item, text = listed.item(j)
            except NotJSON:
                return False
            try:
                if type(item) is JSONSlice:
                    if item_kind is None:
                        version, kind = item.apiVersion, item.kind
                    else:
                        version, kind = item.apiVersion or api_version, item.kind or item_kind
                    if kind == "ResourceSlice" and version in FAST_API_VERSIONS:
                        try:
                            built = build(item, text, version, checked)
                        except InputError as exc:
                            _note(exc, where, j)
                            raise
                        if built is not None:
                            if self.first(built, where, j):
                                slices.append(built)
                            continue
                    item = json_as_go.decode(text)  # as the ordinary parse gives it
                elif type(item) is JSONClaim:
                    if item_kind is None:
                        version, kind = item.apiVersion, item.kind
                    else:
                        version, kind = item.apiVersion or api_version, item.kind or item_kind
                    if kind == "ResourceClaim" and type(version) is str:
                        claim = build_claim(item, text, version)
                        if claim is not None:
                            if self.first(claim, where, j):
                                claims.append(claim)
                            continue
                    item = json_as_go.decode(text)
                decoded = self.list_item(item, j, where, api_version, item_kind)
                if type(decoded) is ResourceClaim and decoded.raw is item:
                    # The claim keeps its text, decoded again if ``raw`` is read: the
                    # dicts of a dump's allocated claims were half of their memory.
                    del decoded.raw
                    decoded.raw_text = text
            except Exception:
                if not listed.decodes_from(j + 1):
                    return False
                raise
        return True

    @staticmethod
    def warn(pending: Pending) -> None:
        for text, category in pending:
            warnings.warn(text, category, stacklevel=3)

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
        with self.opened(doc, where):
            for j, item in enumerate(items):
                self.list_item(item, j, where, api_version, item_kind)

    @contextlib.contextmanager
    def opened(self, collection: object, where: str) -> Iterator[None]:
        """While the sources or items of ``collection`` are read: lists of lists that
        Python code built nest at most ``max_depth`` deep and never hold themselves."""
        if id(collection) in self.open_lists:
            raise InputError(where, "", "a list that contains itself")
        if len(self.open_lists) >= self.limits.max_depth:
            raise InputError(where, "", too_deep(self.limits.max_depth))
        self.open_lists.add(id(collection))
        try:
            yield
        finally:
            self.open_lists.discard(id(collection))

    def list_item(
        self, item: Any, j: int, where: str, api_version: Any, item_kind: str | None
    ) -> DRAObject | None:
        if type(item) is not dict and not isinstance(item, Mapping):
            raise InputError(where, f"items[{j}]", wrong_type("object", item))
        kind = item.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in item:
            # A list in a list: its items are read too, as kubectl flattens lists.
            self.list_items(item, kind, f"{where} items[{j}]")
            return None
        type_meta = None
        if item_kind is not None:
            type_meta = (item.get("apiVersion") or api_version, item.get("kind") or item_kind)
        return self.one(item, where, j, type_meta)

    def one(
        self, obj: Mapping[str, Any], where: str, item: int | None, type_meta: Any = None
    ) -> DRAObject | None:
        """Decode one object: the document, or item ``item`` of its list. Returns it,
        or None when it is skipped or a copy of one read before."""
        api_version, kind = (
            type_meta if type_meta is not None else (obj.get("apiVersion"), obj.get("kind"))
        )
        if self.default is not None and not (api_version and kind):
            api_version = api_version or self.default[0]
            kind = kind or self.default[1]
        # Per item of a list of thousands: the path for errors is built only for errors.
        if not (type(api_version) is str and type(kind) is str and api_version and kind):
            self.check_type_meta(api_version, kind, where, item)
        assert isinstance(api_version, str) and isinstance(kind, str)
        found = lookup(api_version, kind)  # remembered per (apiVersion, kind)
        if found is None:
            if is_foreign(api_version, kind):
                self.objects.skipped[kind] = self.objects.skipped.get(kind, 0) + 1
                return None
            raise InputError(where, f"{_prefix(item)}kind", unsupported(api_version, kind))
        try:
            fast = None
            slice_by_json = kind == "ResourceSlice" and api_version in FAST_API_VERSIONS
            if slice_by_json:
                fast = self.slice_by_json(obj, api_version)
            if fast is None and self.from_python:
                # (A slice built from its JSON text needs no rewriting: msgspec writes no
                # such string, and a key that is not a str makes the text say otherwise.)
                shape = document_shape(obj, self.limits.max_depth)
                if shape == TOO_DEEP and not _contains_itself(obj, set(), self.limits.max_depth):
                    # (One that contains itself the decoders name with its path.)
                    name = object_name(kind, obj, namespaced=found[2])
                    raise InputError(name, "", too_deep(self.limits.max_depth))
                if shape == REWRITE:
                    obj = _as_go_reads(obj, kind, found[2])
                    if slice_by_json:
                        fast = self.slice_by_json(obj, api_version)
            decoded: DRAObject
            if fast is not None:
                decoded = fast
            else:
                decoded = decode_known(
                    obj,
                    kind,
                    found,
                    validate=self.mode,
                    caches=self.caches,
                    sink=self.objects.warnings,
                    pending=self.pending,
                )
        except InputError as exc:
            _note(exc, where, item)
            raise
        if not self.first(decoded, where, item):
            return None
        self.objects.add(decoded)
        return decoded

    def slice_builder(self) -> SliceBuilder:
        """The compiled slice builder of this load (one for bulk lists and single dicts:
        they share the load's caches)."""
        if self._slice_builder is None:
            self._slice_builder = SliceBuilder(self.caches, self.validate)
        return self._slice_builder

    def checked_devices(self) -> partial[CheckedDevices]:
        """The checked decoder of the devices the compiled builder does not take (warnings
        held back or not as the load is at this moment)."""
        return partial(
            CheckedDevices,
            validate=self.validate,
            caches=self.caches,
            sink=self.objects.warnings,
            pending=self.pending,
            fields=self.mode,
        )

    def slice_by_json(self, obj: Mapping[str, Any], api_version: str) -> ResourceSlice | None:
        """A slice given as a dict (a YAML document, a client's object, a JSON text's
        document) built as the bulk JSON reader builds its items, from the dict's JSON
        text, when that text says exactly what the dict says (no bytes, sets or keys
        that are not strings, which JSON would rewrite); None for the dict decoder. The
        dict decoder reads a dynamic-MIG device's counters and maps in Python, three
        quarters of loading a YAML dump after its parse. ``raw`` stays the dict."""
        try:
            text = _JSON_ENCODER.encode(obj)
            # (A JSON-exact document's text says what it says: no need to look.)
            if not self.json_exact and msgspec.json.decode(text) != obj:
                return None
            item = SLICE_DECODER.decode(text)
        except (msgspec.MsgspecError, TypeError, ValueError, OverflowError):
            return None
        build = self.slice_builder().build
        built = build(item, msgspec.Raw(text), api_version, self.checked_devices())
        if built is not None:
            built.raw = dict_of(obj)
            built.raw_text = None
        return built

    def first(self, obj: DRAObject, where: str, item: int | None) -> bool:
        """Whether ``obj`` is the first of its kind, namespace and name (False: a copy
        of one read before, to be dropped); InputError if it differs from that one.
        Objects without a name (``generateName`` only) are each their own."""
        meta = obj.metadata
        if not meta.name:
            return True
        key = (type(obj).__name__, meta.namespace, meta.name)
        before = self.seen.setdefault(key, (obj, where, item))
        if before[0] is obj:
            return True
        if _same(before[0], obj):
            return False
        kind, namespace, name = key
        raise InputError(
            f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}",
            "",
            f"given twice, differently: in {_place(*before[1:])} and in "
            f"{_place(where, item)} (the API server keeps one object per kind, "
            "namespace and name)",
        )

    @staticmethod
    def check_type_meta(api_version: Any, kind: Any, where: str, item: int | None) -> None:
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or not value:
                raise InputError(
                    where,
                    f"{_prefix(item)}{key}",
                    "Required value" if not value else wrong_type("string", value),
                )


def _contains_itself(value: Any, open_ids: set[int], levels: int) -> bool:
    """Whether a collection in ``value``'s first ``levels`` + 1 levels holds itself."""
    if type(value) is dict:
        items: Any = value.values()
    elif type(value) is list or type(value) is tuple:
        items = value
    else:
        return False
    if id(value) in open_ids:
        return True
    if levels < 0:
        return False
    open_ids.add(id(value))
    try:
        return any(_contains_itself(item, open_ids, levels - 1) for item in items)
    finally:
        open_ids.discard(id(value))


def _as_go_reads(obj: Mapping[str, Any], kind: str, namespaced: bool) -> Mapping[str, Any]:
    """A document Python code built, as Go reads the JSON Python's encoder writes of
    it (:func:`draspeed.api.json_as_go.rewritten`); one error for a key it refuses."""
    try:
        return json_as_go.rewritten(obj, "")
    except json_as_go.KeyProblem as problem:
        raise InputError(object_name(kind, obj, namespaced=namespaced), *problem.args) from None


def _same(a: DRAObject, b: DRAObject) -> bool:
    """Whether two decoded objects of one kind say the same: every field compared but
    the text they came from, their API version and their resourceVersion (one object
    read at two times, or in two versions, is one object)."""
    if replace(a.metadata, resource_version="") != replace(b.metadata, resource_version=""):
        return False
    ignored = ("metadata", "raw", "api_version")
    return all(
        getattr(a, f.name) == getattr(b, f.name)
        for f in fields(a)
        if f.compare and f.name not in ignored
    )


def _place(where: str, item: int | None) -> str:
    return where if item is None else f"{where}, items[{item}]"


def _note(exc: InputError, where: str, item: int | None) -> None:
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(f"in {where}" + ("" if item is None else f", items[{item}]"))


def _too_big(size: int | None, limit: int) -> str:
    what = "more" if size is None else f"{size} bytes is more"
    return (
        f"{what} than the limit of {limit} bytes "
        "(load(..., max_bytes=...); on the command line, --max-input-bytes)"
    )


def _prefix(item: int | None) -> str:
    return "" if item is None else f"items[{item}]."
