"""Decoders for the pieces every kind shares: metadata, node selectors, CEL selectors,
taints, tolerations and opaque configuration."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from draspeed.api import limits, meta_extras, names
from draspeed.api.context import DecodeContext, child
from draspeed.api.messages import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    wrong_type,
)
from draspeed.api.model import (
    CELDeviceSelector,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OpaqueDeviceConfiguration,
)
from draspeed.api.raw_json import NotJSON, encoded_length

TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")
_EXPRESSION_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")


def object_name(kind: str, obj: Mapping[str, Any], *, namespaced: bool) -> str:
    """``Kind ns/name`` or ``Kind name``, tolerant of a broken metadata stanza."""
    meta = obj.get("metadata")
    name = namespace = ""
    if type(meta) is dict or isinstance(meta, Mapping):
        raw_name, raw_ns = meta.get("name"), meta.get("namespace")
        name = raw_name if isinstance(raw_name, str) else ""
        namespace = raw_ns if isinstance(raw_ns, str) and namespaced else ""
    if not name:
        name = "(unnamed)"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _string_map(ctx: DecodeContext, d: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    m = ctx.mapping(d, key, path)
    if not m:
        return {}
    for k, v in m.items():
        if not isinstance(v, str) and v is not None:
            ctx.fail(child(child(path, key), str(k)), wrong_type("string", v))
    # (Go decodes null into a map's string as the empty string.)
    return {k: "" if v is None else v for k, v in m.items()}


def _plain_metadata(meta: dict[str, Any], namespaced: bool) -> ObjectMeta | None:
    """The metadata when every field has its plain type (strings, an int64, string maps
    of strings), else None: the typed readers then decide and report."""
    name = meta.get("name", "")
    namespace = meta.get("namespace", "") if namespaced else ""
    uid = meta.get("uid", "")
    version = meta.get("resourceVersion", "")
    generation = meta.get("generation", 0)
    if (
        type(name) is not str
        or type(namespace) is not str
        or type(uid) is not str
        or type(version) is not str
        or type(generation) is not int
        or not limits.INT64_MIN <= generation <= limits.INT64_MAX
    ):
        return None
    labels = _plain_string_map(meta.get("labels"))
    annotations = _plain_string_map(meta.get("annotations"))
    if labels is None or annotations is None:
        return None
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid,
        labels=labels,
        annotations=annotations,
        generation=generation,
        resource_version=version,
    )


_ONLY_STR = frozenset((str,))


def _plain_string_map(value: Any) -> dict[str, str] | None:
    """A copy of a dict of strings (empty for null), else None."""
    if value is None:
        return {}
    if type(value) is dict and (not value or set(map(type, value.values())) == _ONLY_STR):
        return dict(value)
    return None


def decode_metadata(ctx: DecodeContext, obj: Mapping[str, Any], *, namespaced: bool) -> ObjectMeta:
    meta = obj.get("metadata")
    result = _plain_metadata(meta, namespaced) if type(meta) is dict else None
    if result is None:
        result = _checked_metadata(ctx, obj, namespaced=namespaced)
    result.namespace = ctx.caches.strings.setdefault(result.namespace, result.namespace)
    raw = meta if isinstance(meta, Mapping) else {}
    extras = meta_extras.read(ctx, raw)  # decoded (typed) whatever validate says
    if ctx.validate:
        # In the API server's order (ValidateObjectMeta).
        generate_name = ctx.string(raw, "generateName", "metadata")
        if generate_name:
            problem = names.check_generate_name(generate_name)
            if problem is not None:
                ctx.fail("metadata.generateName", problem)
        # (The API server makes a name from generateName before it checks the name.)
        problem = names.check_object_name(result.name) if result.name or not generate_name else None
        if problem is not None:
            ctx.fail("metadata.name", problem)
        if result.namespace:
            problem = names.check_dns_label(result.namespace)
            if problem is not None:
                ctx.fail("metadata.namespace", problem)
        finalizers = ctx.string_list(raw, "finalizers", "metadata")
        for path, problem in _more_problems(
            result.generation, result.labels, result.annotations, finalizers, extras
        ):
            ctx.fail(path, problem)
    return result


# All annotations of an object together, keys and values (apimachinery's limit).
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def _map_problems(
    labels: Mapping[str, str], annotations: Mapping[str, str], path: str = "metadata"
) -> Iterator[tuple[str, str]]:
    """(field, message) of what the API server refuses in labels and annotations, in
    ValidateObjectMeta's order: errors name the map, not the key."""
    yield from _label_problems(labels, path)
    yield from _annotation_problems(annotations, path)


def _label_problems(labels: Mapping[str, str], path: str) -> Iterator[tuple[str, str]]:
    for key, value in labels.items():
        problem = names.label_key_problem(key)
        if problem is not None:
            yield f"{path}.labels", invalid(key, problem)
        problem = names.label_value_problem(value)
        if problem is not None:
            yield f"{path}.labels", invalid(value, problem)


def _annotation_problems(annotations: Mapping[str, str], path: str) -> Iterator[tuple[str, str]]:
    size = 0
    for key, value in annotations.items():
        # A label key in any case: the API server lower-cases it first.
        problem = names.label_key_problem(key.lower())
        if problem is not None:
            yield f"{path}.annotations", invalid(key, problem)
        size += len(key.encode()) + len(value.encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        yield f"{path}.annotations", too_long(TOTAL_ANNOTATION_SIZE_LIMIT)


# ObjectMeta's JSON fields but labels and annotations, in Go's field order. Refusing one,
# ValidateTemplateObjectMeta names it by Go's field name, its first letter lower-cased:
# the JSON name, but for UID ("uID").
_TEMPLATE_REFUSED = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def check_template_metadata(ctx: DecodeContext, spec: Mapping[str, Any], path: str) -> None:
    """The metadata of a template (a ResourceClaimTemplate's ``spec.metadata``), read
    with its types as any ObjectMeta and, when validating, checked as the API server's
    ValidateTemplateObjectMeta checks it: annotations, then labels; every other field
    refused if set (a list even when empty: Go's zero value is no list)."""
    meta = ctx.mapping(spec, "metadata", path)
    if meta is None:
        return
    where = child(path, "metadata")
    for key in ("name", "generateName", "namespace", "uid", "resourceVersion"):
        ctx.opt_string(meta, key, where)
    ctx.opt_int(meta, "generation", where)
    labels = _string_map(ctx, meta, "labels", where)
    annotations = _string_map(ctx, meta, "annotations", where)
    ctx.string_list(meta, "finalizers", where)
    meta_extras.read(ctx, meta, where)
    if not ctx.validate:
        return
    for field, problem in _annotation_problems(annotations, where):
        ctx.fail(field, problem)
    for field, problem in _label_problems(labels, where):
        ctx.fail(field, problem)
    for key in _TEMPLATE_REFUSED:
        value = meta.get(key)
        if (value is not None and value != "" and value != 0) or isinstance(value, list):
            ctx.fail(f"{where}.{'uID' if key == 'uid' else key}", forbidden("cannot be set"))


def _more_problems(
    generation: int,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    finalizers: list[str],
    extras: meta_extras.Extras,
) -> Iterator[tuple[str, str]]:
    """(field, message) of what the API server refuses in ObjectMeta after the name
    and the namespace, in its order."""
    if generation < 0:
        yield "metadata.generation", invalid(generation, "must be greater than or equal to 0")
    yield from _map_problems(labels, annotations)
    yield from meta_extras.owner_reference_problems(extras.owner_references)
    for problem in names.finalizer_problems(finalizers):
        yield "metadata.finalizers", problem
    yield from meta_extras.managed_fields_problems(extras.managed_fields)


def metadata_valid(
    generate_name: str,
    generation: int,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    finalizers: list[str],
) -> bool:
    """Whether the API server takes these fields of an ObjectMeta whose name (and
    namespace) it takes: for the fast paths of bulk decoding, which leave anything
    else to the checked decoder (the fields the model does not keep:
    :func:`draspeed.api.meta_extras.structs_valid`)."""
    if generate_name and names.check_generate_name(generate_name) is not None:
        return False
    if not (generation or labels or annotations or finalizers):
        return True
    problems = _more_problems(generation, labels, annotations, finalizers, meta_extras.NO_EXTRAS)
    return next(problems, None) is None


def _checked_metadata(
    ctx: DecodeContext, obj: Mapping[str, Any], *, namespaced: bool
) -> ObjectMeta:
    meta = ctx.mapping(obj, "metadata", "")
    if meta is None:
        if ctx.validate:
            ctx.fail("metadata.name", required("name or generateName is required"))
        return ObjectMeta()
    path = "metadata"
    return ObjectMeta(
        name=ctx.string(meta, "name", path),
        namespace=ctx.string(meta, "namespace", path) if namespaced else "",
        uid=ctx.string(meta, "uid", path),
        labels=_string_map(ctx, meta, "labels", path),
        annotations=_string_map(ctx, meta, "annotations", path),
        generation=ctx.opt_int(meta, "generation", path) or 0,
        resource_version=ctx.string(meta, "resourceVersion", path),
    )


# ------------------------------------------------------------------------------ nodes


def _requirement(
    ctx: DecodeContext, raw: Any, path: str, *, field_selector: bool
) -> NodeSelectorRequirement:
    raw = ctx.item(raw, path)
    req = NodeSelectorRequirement(
        key=ctx.shared_string(raw, "key", path),
        operator=ctx.shared_string(raw, "operator", path),
        values=[ctx.caches.strings.setdefault(v, v) for v in ctx.string_list(raw, "values", path)],
    )
    if not ctx.validate:
        return req
    op, values = req.operator, req.values
    if field_selector:
        if op not in ("In", "NotIn"):
            ctx.fail(child(path, "operator"), not_supported(op, ("In", "NotIn")))
        if len(values) != 1:
            ctx.fail(
                child(path, "values"),
                required(
                    "must be only one value when `operator` is 'In' or 'NotIn' "
                    "for node field selector"
                ),
            )
        if req.key != "metadata.name":
            ctx.fail(child(path, "key"), not_supported(req.key, ("metadata.name",)))
        problem = names.check_dns_subdomain(values[0])
        if problem is not None:
            ctx.fail(f"{child(path, 'values')}[0]", problem)
        return req
    if op in ("In", "NotIn"):
        if not values:
            ctx.fail(
                child(path, "values"),
                required("must be specified when `operator` is 'In' or 'NotIn'"),
            )
    elif op in ("Exists", "DoesNotExist"):
        if values:
            ctx.fail(
                child(path, "values"),
                forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            )
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            ctx.fail(
                child(path, "values"),
                required("must be specified single value when `operator` is 'Lt' or 'Gt'"),
            )
    else:
        ctx.fail(child(path, "operator"), not_supported(op, _EXPRESSION_OPERATORS))
    problem = names.check_label_name(req.key)
    if problem is not None:
        ctx.fail(child(path, "key"), problem)
    if op in ("In", "NotIn"):
        for i, v in enumerate(values):
            problem = names.check_label_value(v)
            if problem is not None:
                ctx.fail(f"{child(path, 'values')}[{i}]", problem)
    return req


def decode_node_selector(ctx: DecodeContext, raw: Any, path: str) -> NodeSelector:
    """A core/v1 NodeSelector, checked as the API server checks required node affinity."""
    if not isinstance(raw, Mapping):
        ctx.fail(path, wrong_type("object", raw))
    terms_raw = ctx.array(raw, "nodeSelectorTerms", path) or []
    terms_path = child(path, "nodeSelectorTerms")
    if ctx.validate and not terms_raw:
        ctx.fail(terms_path, required("must have at least one node selector term"))
    terms = []
    for i, term in enumerate(terms_raw):
        term_path = f"{terms_path}[{i}]"
        term = ctx.item(term, term_path)
        exprs = ctx.array(term, "matchExpressions", term_path) or []
        fields = ctx.array(term, "matchFields", term_path) or []
        terms.append(
            NodeSelectorTerm(
                match_expressions=[
                    _requirement(ctx, r, f"{term_path}.matchExpressions[{j}]", field_selector=False)
                    for j, r in enumerate(exprs)
                ],
                match_fields=[
                    _requirement(ctx, r, f"{term_path}.matchFields[{j}]", field_selector=True)
                    for j, r in enumerate(fields)
                ],
            )
        )
    return NodeSelector(node_selector_terms=terms)


# -------------------------------------------------------------------------- selectors


def decode_selectors(ctx: DecodeContext, d: Mapping[str, Any], path: str) -> list[DeviceSelector]:
    """``selectors``: a selector without ``cel`` decodes to ``cel=None``: upstream's
    allocator reports it ("CEL expression empty (unsupported selector type?)")."""
    raw = ctx.array(d, "selectors", path)
    if not raw:
        return []
    path = child(path, "selectors")
    if ctx.validate and len(raw) > limits.DEVICE_SELECTORS_MAX_SIZE:
        ctx.fail(path, too_many(len(raw), limits.DEVICE_SELECTORS_MAX_SIZE))
    selectors = []
    for i, sel in enumerate(raw):
        sel_path = f"{path}[{i}]"
        sel = ctx.item(sel, sel_path)
        cel = ctx.mapping(sel, "cel", sel_path)
        if cel is None:
            if ctx.validate:
                ctx.fail(f"{sel_path}.cel", required())
            selectors.append(DeviceSelector(cel=None))
            continue
        cel_path = f"{sel_path}.cel"
        expression = ctx.string(cel, "expression", cel_path)
        if ctx.validate:
            if len(expression.encode("utf-8")) > limits.CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
                ctx.fail(
                    f"{cel_path}.expression", too_long(limits.CEL_SELECTOR_EXPRESSION_MAX_LENGTH)
                )
            if not expression.strip():
                # The API server compiles every expression: an empty one does not parse.
                ctx.fail(f"{cel_path}.expression", invalid(expression, _compile_error(expression)))
            if _too_complex(expression):
                ctx.fail(f"{cel_path}.expression", forbidden("too complex, exceeds cost limit"))
        selectors.append(DeviceSelector(cel=CELDeviceSelector(expression=expression)))
    return selectors


def _compile_error(expression: str) -> str:
    """cel-go's error for an expression that does not compile (upstream's inner text)."""
    from draspeed.cel import compile_selector  # the CEL environment loads on first use
    from draspeed.errors import CELCompileError

    try:
        compile_selector(expression)
    except CELCompileError as exc:
        return str(exc)
    raise AssertionError(f"expected {expression!r} not to compile")


def _too_complex(expression: str) -> bool:
    """The API server's check: cel-go's worst-case cost estimate of the selector is over
    ``CELSelectorExpressionMaxCost``. A selector that does not compile is left to the
    allocator, which reports it with upstream's text."""
    from draspeed.cel import compile_selector  # the CEL layer loads on first use
    from draspeed.errors import CELCompileError

    try:
        selector = compile_selector(expression)
    except CELCompileError:
        return False
    return selector.max_cost is not None and selector.max_cost > (
        limits.CEL_SELECTOR_EXPRESSION_MAX_COST
    )


# ------------------------------------------------------------------ taints, tolerations


def decode_taint(ctx: DecodeContext, raw: Any, path: str) -> DeviceTaint:
    raw = ctx.item(raw, path)
    taint = DeviceTaint(
        key=ctx.string(raw, "key", path),
        value=ctx.string(raw, "value", path),
        effect=ctx.string(raw, "effect", path),
        time_added=ctx.timestamp(raw, "timeAdded", path),
    )
    if ctx.validate:
        problem = names.check_label_name(taint.key)
        if problem is not None:
            ctx.fail(child(path, "key"), problem)
        problem = names.check_label_value(taint.value)
        if problem is not None:
            ctx.fail(child(path, "value"), problem)
        if not taint.effect:
            ctx.fail(child(path, "effect"), required())
        if taint.effect not in TAINT_EFFECTS:
            ctx.fail(child(path, "effect"), not_supported(taint.effect, TAINT_EFFECTS))
    return taint


def decode_tolerations(
    ctx: DecodeContext, d: Mapping[str, Any], path: str
) -> list[DeviceToleration]:
    raw = ctx.array(d, "tolerations", path)
    if not raw:
        return []
    path = child(path, "tolerations")
    if ctx.validate and len(raw) > limits.DEVICE_TOLERATIONS_MAX_LENGTH:
        ctx.fail(path, too_many(len(raw), limits.DEVICE_TOLERATIONS_MAX_LENGTH))
    return [decode_toleration(ctx, t, f"{path}[{i}]") for i, t in enumerate(raw)]


def decode_toleration(ctx: DecodeContext, raw: Any, path: str) -> DeviceToleration:
    raw = ctx.item(raw, path)
    # The API server defaults an empty operator to Equal.
    tol = DeviceToleration(
        key=ctx.string(raw, "key", path),
        operator=ctx.string(raw, "operator", path) or "Equal",
        value=ctx.string(raw, "value", path),
        effect=ctx.string(raw, "effect", path),
        toleration_seconds=ctx.opt_int(raw, "tolerationSeconds", path),
    )
    if ctx.validate:
        if tol.key:
            problem = names.check_label_name(tol.key)
            if problem is not None:
                ctx.fail(child(path, "key"), problem)
        if tol.operator == "Exists":
            if tol.value:
                ctx.fail(
                    child(path, "value"), invalid(tol.value, "must be empty for operator `Exists`")
                )
        elif tol.operator == "Equal":
            problem = names.check_label_value(tol.value)
            if problem is not None:
                ctx.fail(child(path, "value"), problem)
        else:
            ctx.fail(child(path, "operator"), not_supported(tol.operator, TOLERATION_OPERATORS))
        if tol.effect and tol.effect not in TAINT_EFFECTS:
            ctx.fail(child(path, "effect"), not_supported(tol.effect, TAINT_EFFECTS))
    return tol


# ------------------------------------------------------------------ binding conditions


def check_binding_conditions(
    ctx: DecodeContext,
    conditions: list[str],
    failures: list[str],
    raw: Mapping[str, Any],
    prefix: str,
) -> None:
    """A device's (or a result's) ``bindingConditions`` and ``bindingFailureConditions``
    as the API server checks them: at most 4 label keys each, no repeats, no overlap,
    and each needs the other."""
    for key, values, limit in (
        ("bindingConditions", conditions, limits.BINDING_CONDITIONS_MAX_SIZE),
        ("bindingFailureConditions", failures, limits.BINDING_FAILURE_CONDITIONS_MAX_SIZE),
    ):
        path = f"{prefix}.{key}"
        if len(values) > limit:
            ctx.fail(path, too_many(len(values), limit))
        seen: set[str] = set()
        for j, cond in enumerate(values):
            problem = names.check_label_name(cond)
            if problem is not None:
                ctx.fail(f"{path}[{j}]", problem)
            if cond in seen:
                ctx.fail(f"{path}[{j}]", duplicate(cond))
            seen.add(cond)
    given = set(conditions)
    for j, cond in enumerate(failures):
        if cond in given:
            ctx.fail(
                f"{prefix}.bindingFailureConditions[{j}]",
                invalid(cond, "bindingFailureConditions must not overlap with bindingConditions"),
            )
    # Each needs the other; the missing one is printed as given: null, or an empty list.
    for key, mine, other, needs in (
        ("bindingConditions", conditions, failures, "bindingFailureConditions"),
        ("bindingFailureConditions", failures, conditions, "bindingConditions"),
    ):
        if other and not mine:
            ctx.fail(f"{prefix}.{key}", invalid(raw.get(key), f"{key} are required to use {needs}"))


# ----------------------------------------------------------------------- opaque config


def decode_opaque(
    ctx: DecodeContext, d: Mapping[str, Any], path: str
) -> OpaqueDeviceConfiguration | None:
    """The ``opaque`` member of a device configuration (``parameters`` kept verbatim)."""
    raw = ctx.mapping(d, "opaque", path)
    if raw is None:
        if ctx.validate:
            ctx.fail(child(path, "opaque"), required())
        return None
    path = child(path, "opaque")
    opaque = OpaqueDeviceConfiguration(
        driver=ctx.string(raw, "driver", path),
        parameters=raw.get("parameters"),
    )
    ppath = child(path, "parameters")
    size = 0
    if opaque.parameters is not None:
        # Always: a value JSON cannot hold could not have reached an API server, and
        # draspeed could not write it back.
        try:
            size = encoded_length(opaque.parameters)
        except NotJSON as exc:
            ctx.fail(f"{ppath}.{exc.path}" if exc.path else ppath, exc.message)
    if ctx.validate:
        problem = names.check_driver_name(opaque.driver)
        if problem is not None:
            ctx.fail(child(path, "driver"), problem)
        if opaque.parameters is None:
            ctx.fail(ppath, required())
        if size > limits.OPAQUE_PARAMETERS_MAX_LENGTH:
            ctx.fail(ppath, too_long(limits.OPAQUE_PARAMETERS_MAX_LENGTH))
        if not isinstance(opaque.parameters, Mapping):
            ctx.fail(ppath, invalid("<value omitted>", "must be a valid JSON object"))
    return opaque
