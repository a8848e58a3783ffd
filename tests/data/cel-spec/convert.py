"""Convert cel-spec's simple conformance tests (text protobuf) into this folder's JSON.

Usage: ``python tests/data/cel-spec/convert.py <cel-spec checkout> [commit]``. Reads
``tests/simple/testdata/<name>.textproto`` for every name in :data:`FILES` and writes
``<name>.json`` here: one test per line, values tagged by kind (see README.md). Only the
test data is carried over (Apache-2.0, LICENSE beside it).

The text-format parser below covers what those files use: comments, fields with or
without ``:``, nested messages in ``{}``/``<>``, lists, adjacent string literals with
C escapes (strings are bytes, as in protobuf), numbers, identifiers (enum values, bools)
and ``[type.googleapis.com/...]`` Any expansions. protobuf's own text parser would need
the compiled cel.expr descriptors; this is smaller than generating them.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent

# The files whose libraries the Kubernetes CEL environment has (or partly has): the
# skip list (skips.yaml) then names what of them does not apply and why.
FILES = (
    "basic",
    "bindings_ext",
    "comparisons",
    "conversions",
    "dynamic",
    "fields",
    "fp_math",
    "integer_math",
    "lists",
    "logic",
    "macros",
    "macros2",
    "namespace",
    "optionals",
    "parse",
    "plumbing",
    "string",
    "string_ext",
    "timestamps",
    "type_deduction",
    "wrappers",
    "enums",
    "proto2",
    "proto3",
    "network_ext",
    "math_ext",
    "encoders_ext",
    "block_ext",
    "proto2_ext",
    "unknowns",
)

# ---- text format -------------------------------------------------------------------

_TOKEN = re.compile(
    rb"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ext>\[[A-Za-z0-9_./]+\])
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fF]?)
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}<>\[\]:,;])
    """,
    re.VERBOSE,
)

_ESCAPES = {
    ord("n"): b"\n",
    ord("t"): b"\t",
    ord("r"): b"\r",
    ord("a"): b"\a",
    ord("b"): b"\b",
    ord("f"): b"\f",
    ord("v"): b"\v",
    ord("\\"): b"\\",
    ord("'"): b"'",
    ord('"'): b'"',
    ord("?"): b"?",
}


def _unescape(body: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != ord("\\"):
            out.append(c)
            i += 1
            continue
        i += 1
        c = body[i]
        if c in _ESCAPES:
            out += _ESCAPES[c]
            i += 1
        elif ord("0") <= c <= ord("7"):
            j = i
            while j < len(body) and j < i + 3 and ord("0") <= body[j] <= ord("7"):
                j += 1
            out.append(int(body[i:j], 8) & 0xFF)
            i = j
        elif c in (ord("x"), ord("X")):
            j = i + 1
            while j < len(body) and j < i + 3 and chr(body[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 1 : j], 16))
            i = j
        elif c in (ord("u"), ord("U")):
            n = 4 if c == ord("u") else 8
            out += chr(int(body[i + 1 : i + 1 + n], 16)).encode("utf-8")
            i += 1 + n
        else:
            raise ValueError(f"unknown escape \\{chr(c)}")
    return bytes(out)


class Ident(str):
    """An unquoted identifier value (an enum name, true/false, inf/nan)."""


def _tokens(data: bytes) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    pos = 0
    while pos < len(data):
        m = _TOKEN.match(data, pos)
        if m is None:
            raise ValueError(f"cannot read text proto at byte {pos}: {data[pos : pos + 40]!r}")
        kind = m.lastgroup
        assert kind is not None
        if kind != "space":
            out.append((kind, m.group(0)))
        pos = m.end()
    return out


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.toks = _tokens(data)
        self.i = 0

    def peek(self) -> tuple[str, bytes] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, bytes]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def message(self, close: bytes | None) -> dict[str, list[Any]]:
        """Fields until ``close`` (None: end of input); every field is a list."""
        fields: dict[str, list[Any]] = {}
        while True:
            tok = self.peek()
            if tok is None:
                if close is not None:
                    raise ValueError("unexpected end of text proto")
                return fields
            if close is not None and tok == ("punct", close):
                self.take()
                return fields
            kind, text = self.take()
            if kind not in ("ident", "ext"):
                raise ValueError(f"expected a field name, found {text!r}")
            name = text.decode()
            if self.peek() == ("punct", b":"):
                self.take()
            values = self.value_or_list()
            fields.setdefault(name, []).extend(values)
            if self.peek() in (("punct", b","), ("punct", b";")):
                self.take()

    def value_or_list(self) -> list[Any]:
        if self.peek() == ("punct", b"["):
            self.take()
            items: list[Any] = []
            while self.peek() != ("punct", b"]"):
                items.append(self.value())
                if self.peek() == ("punct", b","):
                    self.take()
            self.take()
            return items
        return [self.value()]

    def value(self) -> Any:
        kind, text = self.take()
        if kind == "punct" and text in (b"{", b"<"):
            return self.message(b"}" if text == b"{" else b">")
        if kind == "string":
            raw = _unescape(text[1:-1])
            while self.peek() is not None and self.peek()[0] == "string":  # type: ignore[index]
                raw += _unescape(self.take()[1][1:-1])
            return raw
        if kind == "number":
            body = text.decode().rstrip("fF") if not text.lower().startswith(b"0x") else text
            if isinstance(body, bytes):
                return int(body, 16)
            if re.fullmatch(r"-?[0-9]+", body):
                return int(body)
            return float(body)
        if kind == "ident":
            return Ident(text.decode())
        raise ValueError(f"unexpected {text!r}")


def parse_text_proto(data: bytes) -> dict[str, list[Any]]:
    return _Reader(data).message(None)


# ---- cel.expr values and types to tagged JSON ----------------------------------------


def _one(fields: dict[str, list[Any]], name: str, default: Any = None) -> Any:
    values = fields.get(name)
    return values[-1] if values else default


def _text(raw: Any) -> str:
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


def _double(v: Any) -> Any:
    if isinstance(v, Ident):
        name = v.lower()
        return {"inf": "Infinity", "-inf": "-Infinity", "infinity": "Infinity"}.get(
            name, "NaN" if name.lstrip("-") == "nan" else v
        )
    f = float(v)
    if f == 0 and str(v).startswith("-"):
        return "-0"
    return f


def convert_value(fields: dict[str, list[Any]]) -> dict[str, Any]:
    """A cel.expr.Value as ``{kind: payload}``."""
    (kind,) = fields.keys()
    payload = _one(fields, kind)
    if kind == "int64_value":
        return {"int": int(payload)}
    if kind == "uint64_value":
        return {"uint": int(payload)}
    if kind == "double_value":
        return {"double": _double(payload)}
    if kind == "string_value":
        return {"string": _text(payload)}
    if kind == "bytes_value":
        return {"bytes": base64.b64encode(payload).decode()}
    if kind == "bool_value":
        return {"bool": payload == "true"}
    if kind == "null_value":
        return {"null": None}
    if kind == "type_value":
        return {"type": _text(payload)}
    if kind == "list_value":
        return {"list": [convert_value(v) for v in payload.get("values", [])]}
    if kind == "map_value":
        return {
            "map": [
                [convert_value(_one(e, "key")), convert_value(_one(e, "value"))]
                for e in payload.get("entries", [])
            ]
        }
    if kind == "enum_value":
        return {"enum": {"type": _text(_one(payload, "type")), "value": _one(payload, "value", 0)}}
    if kind == "object_value":
        ((url, body),) = ((k, v[-1]) for k, v in payload.items())
        type_name = url.strip("[]").rsplit("/", 1)[-1]
        if type_name == "google.protobuf.Duration":
            return {"duration": [int(_one(body, "seconds", 0)), int(_one(body, "nanos", 0))]}
        if type_name == "google.protobuf.Timestamp":
            return {"timestamp": [int(_one(body, "seconds", 0)), int(_one(body, "nanos", 0))]}
        return {"object": type_name}
    raise ValueError(f"unknown value kind {kind}")


_PRIMITIVES = {
    "BOOL": "bool",
    "INT64": "int",
    "UINT64": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
}
_WELL_KNOWN = {
    "ANY": "google.protobuf.Any",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "DURATION": "google.protobuf.Duration",
}
_WRAPPERS = {
    "BOOL": "google.protobuf.BoolValue",
    "INT64": "google.protobuf.Int64Value",
    "UINT64": "google.protobuf.UInt64Value",
    "DOUBLE": "google.protobuf.DoubleValue",
    "STRING": "google.protobuf.StringValue",
    "BYTES": "google.protobuf.BytesValue",
}


def convert_type(fields: dict[str, list[Any]]) -> str:
    """A cel.expr.Type as its CEL name (``list(int)``, ``map(string, dyn)``...)."""
    if not fields:
        return "dyn"
    (kind,) = fields.keys()
    payload = _one(fields, kind)
    if kind == "primitive":
        return _PRIMITIVES[str(payload)]
    if kind == "dyn":
        return "dyn"
    if kind == "null":
        return "null_type"
    if kind == "well_known":
        return _WELL_KNOWN[str(payload)]
    if kind == "wrapper":
        return _WRAPPERS[str(payload)]
    if kind == "message_type":
        return _text(payload)
    if kind == "list_type":
        return f"list({convert_type(_one(payload, 'elem_type', {}))})"
    if kind == "map_type":
        key = convert_type(_one(payload, "key_type", {}))
        return f"map({key}, {convert_type(_one(payload, 'value_type', {}))})"
    if kind == "type":
        return f"type({convert_type(payload)})" if payload else "type"
    if kind == "type_param":
        return _text(payload)
    if kind == "abstract_type":
        params = [convert_type(p) for p in payload.get("parameter_types", [])]
        name = _text(_one(payload, "name"))
        return f"{name}({', '.join(params)})" if params else name
    if kind == "error":
        return "*error*"
    raise ValueError(f"unknown type kind {kind}")


def _errors(error_set: dict[str, list[Any]]) -> list[str]:
    return [_text(_one(e, "message", b"")) for e in error_set.get("errors", [])]


def convert_test(t: dict[str, list[Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": _text(_one(t, "name")), "expr": _text(_one(t, "expr", b""))}
    for flag in ("disable_macros", "disable_check", "check_only"):
        if _one(t, flag) == "true":
            out[flag] = True
    for text_field in ("container", "locale"):
        if _one(t, text_field):
            out[text_field] = _text(_one(t, text_field))
    decls: list[dict[str, Any]] = []
    for decl in t.get("type_env", []):
        name = _text(_one(decl, "name"))
        if "ident" in decl:
            decls.append({"name": name, "type": convert_type(_one(_one(decl, "ident"), "type"))})
        else:
            decls.append({"name": name, "function": True})
    if decls:
        out["type_env"] = decls
    bindings = {}
    for entry in t.get("bindings", []):
        expr_value = _one(entry, "value")
        value = _one(expr_value, "value")
        bindings[_text(_one(entry, "key"))] = (
            convert_value(value) if value is not None else {"unsupported": True}
        )
    if bindings:
        out["bindings"] = bindings
    if "value" in t:
        out["value"] = convert_value(_one(t, "value"))
    elif "typed_result" in t:
        typed = _one(t, "typed_result")
        if "result" in typed:
            out["value"] = convert_value(_one(typed, "result"))
        out["type"] = convert_type(_one(typed, "deduced_type", {}))
    elif "eval_error" in t:
        out["error"] = _errors(_one(t, "eval_error"))
    elif "any_eval_errors" in t:
        out["error"] = [m for s in _one(t, "any_eval_errors").get("errors", []) for m in _errors(s)]
    elif "unknown" in t or "any_unknowns" in t:
        out["unknown"] = True
    elif not out.get("check_only"):
        out["value"] = {"bool": True}  # SimpleTest's default result matcher
    return out


def convert_file(path: Path) -> dict[str, Any]:
    doc = parse_text_proto(path.read_bytes())
    return {
        "name": _text(_one(doc, "name")),
        "sections": [
            {
                "name": _text(_one(s, "name")),
                "tests": [convert_test(t) for t in s.get("test", [])],
            }
            for s in doc.get("section", [])
        ],
    }


def dump(converted: dict[str, Any]) -> str:
    """JSON with one test per line (compact, and diffs stay readable)."""
    lines = ["{", f'"name": {json.dumps(converted["name"])},', '"sections": [']
    for i, section in enumerate(converted["sections"]):
        lines.append(f'{{"name": {json.dumps(section["name"])}, "tests": [')
        tests = section["tests"]
        for j, test in enumerate(tests):
            sep = "," if j < len(tests) - 1 else ""
            lines.append(json.dumps(test, ensure_ascii=False, allow_nan=False) + sep)
        lines.append("]}" + ("," if i < len(converted["sections"]) - 1 else ""))
    lines += ["]", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    root = Path(argv[0])
    for name in FILES:
        source = root / "tests" / "simple" / "testdata" / f"{name}.textproto"
        (HERE / f"{name}.json").write_text(dump(convert_file(source)), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
