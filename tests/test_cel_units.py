"""Focused tests of the CEL environment's contract (cache, limits, device input, errors)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.cel.selector import clear_cache
from draspeed.errors import CELCompileError, CELRuntimeError
from draspeed.quantity import Quantity

HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)


def gpu(**attrs: DeviceAttribute) -> Device:
    return Device(
        name="gpu-0",
        attributes={f"gpu.example.com/{k}": v for k, v in attrs.items()},
        capacity={"gpu.example.com/memory": DeviceCapacity(Quantity.parse("40Gi"))},
    )


# ---- compile and cache ---------------------------------------------------------------


def test_cache_returns_the_same_selector_for_the_same_text() -> None:
    expr = 'device.driver == "cache.example.com"'
    assert compile_selector(expr) is compile_selector(expr)


def test_surrogates_a_python_str_may_hold_are_read_as_go_reads_them() -> None:
    """A lone surrogate (only a str built in Python holds one) is U+FFFD, as Go's JSON
    decoding makes of a ``\\ud800`` escape; a pair is its character."""
    with pytest.raises(CELCompileError, match="token recognition error at: '\ufffd'"):
        compile_selector("\ud800")
    assert compile_selector('"\ud83d\ude00" == "\U0001f600"').matches(
        device_input("d", Device(name="d"))
    )


def test_failed_compilations_are_not_cached() -> None:
    clear_cache()
    for _ in range(2):
        with pytest.raises(CELCompileError, match="undeclared reference to 'nope'"):
            compile_selector("nope")


def test_concurrent_compiles_share_one_result() -> None:
    clear_cache()
    expr = 'device.attributes["x.example.com"].a == "concurrent"'
    results: list[object] = []

    def work() -> None:
        results.append(compile_selector(expr))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    assert all(r is results[0] for r in results)


def test_expression_length_limit() -> None:
    """cel-go's parser limit (100,000 code points; the API server's 10 KiB is
    validation's): what the upstream allocator answers for objects read unvalidated."""
    long_expr = 'device.driver == "' + "é" * 100_000 + '"'
    with pytest.raises(CELCompileError) as info:
        compile_selector(long_expr)
    assert str(info.value) == (
        "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds "
        "limit: size: 100019, limit 100000"
    )
    at_limit = 'device.driver == "' + "é" * (100_000 - 19) + '"'
    assert len(at_limit) == 100_000
    compile_selector(at_limit)


def test_syntax_error_text_is_cel_go_shaped() -> None:
    with pytest.raises(CELCompileError) as info:
        compile_selector('device.driver == "a" &&')
    text = str(info.value)
    assert text.startswith("compilation failed: ERROR: <input>:1:24: Syntax error:")
    assert text.endswith('\n | device.driver == "a" &&\n | .......................^')


def test_result_type_check() -> None:
    with pytest.raises(CELCompileError) as info:
        compile_selector('device.attributes["a"].x + 1')
    # dyn + int resolves to int: a selector must be bool or dyn
    assert str(info.value) == "must evaluate to bool or the unknown type, not int"
    compile_selector('device.attributes["a"].x')  # dyn is accepted


def test_nesting_limit() -> None:
    compile_selector("(" * 200 + "true" + ")" * 200)
    with pytest.raises(CELCompileError, match="expression recursion limit exceeded: 250"):
        compile_selector("(" * 300 + "true" + ")" * 300)


# ---- device input ----------------------------------------------------------------------


def test_bare_attribute_names_belong_to_the_driver_domain() -> None:
    device = Device(name="d", attributes={"dra.example.com/name": DeviceAttribute("bool", True)})
    dev = device_input("dra.example.com", device)
    assert compile_selector('device.attributes["dra.example.com"].name').matches(dev)


def test_allow_multiple_allocations_follows_the_variant() -> None:
    device = Device(name="d", allow_multiple_allocations=True)
    sel = compile_selector("device.allowMultipleAllocations")
    assert sel.matches(device_input("d.example.com", device))
    assert not sel.matches(device_input("d.example.com", device, consumable_capacity=False))
    assert not sel.matches(device_input("d.example.com", Device(name="unset")))


def test_list_attributes_are_lists_whatever_the_gate() -> None:
    device = Device(name="d", attributes={"a.example.com/l": DeviceAttribute("ints", (1, 2))})
    sel = compile_selector('device.attributes["a.example.com"].l.includes(2)')
    for flag in (True, False):
        assert sel.matches(device_input("a.example.com", device, list_type_attributes=flag))


def test_value_less_attribute_fails_every_selector() -> None:
    device = Device(
        name="d",
        attributes={
            "dra.example.com/ok": DeviceAttribute("string", "x"),
            "dra.example.com/empty": DeviceAttribute(None),
        },
    )
    dev = device_input("dra.example.com", device)
    for expr in ("true", 'device.driver == "dra.example.com"'):
        with pytest.raises(CELRuntimeError) as info:
            compile_selector(expr).matches(dev)
        assert str(info.value) == "attribute empty: unsupported attribute value"


def test_no_such_key_hint_is_added_once() -> None:
    sel = compile_selector('device.attributes["gpu.example.com"].missing == 1')
    with pytest.raises(CELRuntimeError) as info:
        sel.matches(device_input("gpu.example.com", gpu()))
    assert str(info.value) == "no such key: missing" + HINT


def test_version_attributes_are_semver_values() -> None:
    dev = device_input("gpu.example.com", gpu(v=DeviceAttribute("version", "1.2.3-rc.1+b")))
    sel = compile_selector('device.attributes["gpu.example.com"].v == semver("1.2.3-rc.1")')
    assert sel.matches(dev)  # build metadata is ignored by Semver equality


# ---- runtime limits ------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "lists.range(3000).all(x, lists.range(3000).all(y, x != y || true))",
        "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c,"
        " [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f,"
        ' "abcdef".matches("a.*f")))))))',
    ],
)
def test_hostile_expressions_stop_at_the_cost_limit(expr: str) -> None:
    sel = compile_selector(expr)
    # Ending with the cost-limit error (not running to completion) is what bounds it.
    with pytest.raises(CELRuntimeError, match="actual cost limit exceeded"):
        sel.matches(device_input("x", Device(name="d")))


# ---- vector path -----------------------------------------------------------------------


def test_vector_path_reports_errors_per_row() -> None:
    devices = [
        ("gpu.example.com", gpu(healthy=DeviceAttribute("bool", True))),
        ("gpu.example.com", gpu()),
        ("gpu.example.com", gpu(healthy=DeviceAttribute("bool", False))),
    ]
    table = DeviceTable.build(devices)
    match, error, messages = compile_selector(
        'device.attributes["gpu.example.com"].healthy'
    ).evaluate(table)
    assert match.tolist() == [True, False, False]
    assert error.tolist() == [False, True, False]
    assert messages == {1: "no such key: healthy" + HINT}


def test_a_go_panic_ends_the_evaluation_through_every_operator() -> None:
    # distinct() asserts its receiver is a list (upstream: an unchecked Go type
    # assertion, recovered as "internal error"): no || absorbs it, and on the vector path
    # only the rows whose evaluation reaches the call end in it.
    panic = (
        "internal error: interface conversion: types.String is not traits.Lister: "
        "missing method Contains"
    )
    devices = [
        ("gpu.example.com", gpu(model=DeviceAttribute("string", "a100"))),
        ("gpu.example.com", gpu(model=DeviceAttribute("string", "h100"))),
    ]
    sel = compile_selector(
        'device.attributes["gpu.example.com"].model == "a100" || '
        'dyn(device.attributes["gpu.example.com"].model).distinct() == [] || true'
    )
    with pytest.raises(CELRuntimeError) as raised:
        sel.matches(device_input(*devices[1]))
    assert str(raised.value) == panic
    assert sel.matches(device_input(*devices[0])) is True
    match, error, messages = sel.evaluate(DeviceTable.build(devices))
    assert match.tolist() == [True, False]
    assert error.tolist() == [False, True]
    assert messages == {1: panic}


def test_a_map_literal_with_a_key_go_cannot_hash_fails_when_evaluated() -> None:
    # Upstream builds the literal when planning and its process panics; here the
    # selector compiles and every evaluation ends in the panic's text.
    sel = compile_selector('{b"a": 1} == {}')
    with pytest.raises(CELRuntimeError, match=r"hash of unhashable type types\.Bytes"):
        sel.matches(device_input("gpu.example.com", gpu()))


def test_vector_path_on_an_empty_table() -> None:
    table = DeviceTable.build([])
    match, error, messages = compile_selector('device.driver == "x"').evaluate(table)
    assert match.shape == (0,) and error.shape == (0,) and messages == {}


def test_vector_columns_are_sorted_by_value() -> None:
    caps = ["80Gi", "16Gi", "40960Mi", "40Gi", "1Ti"]
    devices = [
        (
            "gpu.example.com",
            Device(
                name=f"d{i}", capacity={"gpu.example.com/memory": DeviceCapacity(Quantity.parse(c))}
            ),
        )
        for i, c in enumerate(caps)
    ]
    table = DeviceTable.build(devices)
    column = table.column(("cap", "gpu.example.com", "memory"))
    values = [v.value() for v in column.values]
    assert values == sorted(values)
    match, _, _ = compile_selector(
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    ).evaluate(table)
    assert match.tolist() == [True, False, True, True, True]
    assert isinstance(match, np.ndarray)


def test_compile_is_the_documented_entry_point() -> None:
    import draspeed.cel as cel

    selector = cel.compile('device.driver == "a.example.com"')
    assert selector is cel.compile_selector('device.driver == "a.example.com"')  # cached
    assert selector.matches(device_input("a.example.com", Device(name="d")))


@pytest.mark.parametrize(
    "expression",
    ["google.protobuf.Int64Value{value: 1} == 1", "list{} == []", "null_type{} == null"],
)
def test_well_known_messages_are_not_built(expression: str) -> None:
    """cel-go builds these protobuf messages; draspeed says plainly that it does not."""
    with pytest.raises(CELCompileError, match="unsupported message construction"):
        compile_selector(expression)
