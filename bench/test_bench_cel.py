"""CEL selector benchmarks (pytest-benchmark; groups ``cel-compile`` and ``cel-eval``).

Run: ``PYTHONPATH=src pytest bench/test_bench_cel.py --benchmark-only``.

- cel-compile: compiling each representative selector from scratch (no cache).
- cel-eval: the vector path over 1,000,000 devices (columns already built, as in a
  snapshot that evaluates many selectors); the general path over 10,000 devices, per
  device (``matches``) and memoised on the projection of what the selector reads; and
  cel-python (celpy 0.5.0, interpreted) per device on the selectors it can express,
  for comparison. ``extra_info`` records devices and per-device nanoseconds.
"""

from __future__ import annotations

from typing import Any

import pytest

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.cel.selector import _compile
from draspeed.quantity import Quantity
from draspeed.semantic_version import SemVer, parse_semver

DRIVER = "gpu.example.com"

SELECTORS = [
    'device.driver == "gpu.example.com"',
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].healthy',
    'cel.bind(g, device.attributes["gpu.example.com"], g.numa == 0 || g.model == "l4")',
    'device.attributes["gpu.example.com"].model in ["a100", "h100"]',
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.1.0"))',
    '"topology.example.com" in device.attributes'
    ' && device.attributes["topology.example.com"].rack == "r1"',
    'device.attributes["gpu.example.com"].?model.orValue("none") == "h100"',
    'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("20Gi"))'
    ' && device.attributes["gpu.example.com"].numa >= 1',
    'device.attributes["gpu.example.com"].model.startsWith("a")'
    ' || device.attributes["gpu.example.com"].model.endsWith("4")',
]

# The same selectors in the form cel-python 0.5.0 accepts (no cel.bind, no optional
# syntax; library functions take their receiver as first argument); None = not expressible.
CELPY_FORMS: list[str | None] = [
    SELECTORS[0],
    'compareTo(device.capacity["gpu.example.com"].memory, quantity("40Gi")) >= 0',
    SELECTORS[2],
    'device.attributes["gpu.example.com"].numa == 0'
    ' || device.attributes["gpu.example.com"].model == "l4"',
    SELECTORS[4],
    'isGreaterThan(device.attributes["gpu.example.com"].driverVersion, semver("1.1.0"))',
    SELECTORS[6],
    None,
    'isGreaterThan(device.capacity["gpu.example.com"].memory, quantity("20Gi"))'
    ' && device.attributes["gpu.example.com"].numa >= 1',
    SELECTORS[9],
]

_MODELS = ["a100", "h100", "l4", "a10"]
_VERSIONS = ["1.0.0", "1.2.3", "2.0.0"]
_MEMORY = [Quantity.parse(q) for q in ("16Gi", "24Gi", "40Gi", "80Gi")]


def make_devices(n: int) -> list[tuple[str, Device]]:
    """``n`` GPUs (every 50th from another driver), each with a unique uuid attribute."""
    out: list[tuple[str, Device]] = []
    shared: dict[tuple[int, ...], dict[str, DeviceAttribute]] = {}
    for i in range(n):
        key = (i % 4, i % 2, i % 3, i % 7, i % 5)
        attrs = shared.get(key)
        if attrs is None:
            attrs = {
                f"{DRIVER}/model": DeviceAttribute("string", _MODELS[i % 4]),
                f"{DRIVER}/numa": DeviceAttribute("int", i % 2),
                f"{DRIVER}/driverVersion": DeviceAttribute("version", _VERSIONS[i % 3]),
                f"{DRIVER}/healthy": DeviceAttribute("bool", i % 7 != 0),
            }
            if i % 5:
                attrs["topology.example.com/rack"] = DeviceAttribute("string", f"r{i % 5}")
            shared[key] = attrs
        attributes = dict(attrs)
        attributes[f"{DRIVER}/uuid"] = DeviceAttribute("string", f"gpu-{i:08x}")
        device = Device(
            name=f"gpu-{i}",
            attributes=attributes,
            capacity={f"{DRIVER}/memory": DeviceCapacity(_MEMORY[i % 4])},
        )
        out.append((DRIVER if i % 50 else "other.example.com", device))
    return out


@pytest.fixture(scope="module")
def big_table() -> DeviceTable:
    table = DeviceTable.build(make_devices(1_000_000))
    for expr in SELECTORS:  # build the columns once, as a snapshot would
        compile_selector(expr).evaluate(table)
    return table


@pytest.fixture(scope="module")
def small_devices() -> list[tuple[str, Device]]:
    return make_devices(10_000)


def _short(i: int) -> str:
    return f"s{i}"


@pytest.mark.benchmark(group="cel-compile")
@pytest.mark.parametrize("index", range(len(SELECTORS)), ids=_short)
def test_compile(benchmark: Any, index: int) -> None:
    benchmark(_compile, SELECTORS[index])


@pytest.mark.benchmark(group="cel-eval")
@pytest.mark.parametrize("index", range(len(SELECTORS)), ids=_short)
def test_vector_1m(benchmark: Any, big_table: DeviceTable, index: int) -> None:
    selector = compile_selector(SELECTORS[index])
    match, error, _ = benchmark(selector.evaluate, big_table)
    assert not error.any()
    benchmark.extra_info.update(
        devices=big_table.n,
        matches=int(match.sum()),
        ns_per_device=benchmark.stats["mean"] * 1e9 / big_table.n,
    )


@pytest.mark.benchmark(group="cel-eval")
@pytest.mark.parametrize("index", range(len(SELECTORS)), ids=_short)
def test_general_10k(benchmark: Any, small_devices: list[tuple[str, Device]], index: int) -> None:
    selector = compile_selector(SELECTORS[index])
    inputs = [device_input(driver, device) for driver, device in small_devices]

    def run() -> int:
        return sum(selector.matches(dev) for dev in inputs)

    matched = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update(
        devices=len(inputs),
        matches=matched,
        ns_per_device=benchmark.stats["mean"] * 1e9 / len(inputs),
    )


@pytest.mark.benchmark(group="cel-eval")
@pytest.mark.parametrize("index", range(len(SELECTORS)), ids=_short)
def test_general_memoised_10k(
    benchmark: Any, small_devices: list[tuple[str, Device]], index: int
) -> None:
    selector = compile_selector(SELECTORS[index])
    table = DeviceTable.build(small_devices)
    selector.evaluate_rows(table)  # builds the columns it reads

    result = benchmark.pedantic(selector.evaluate_rows, args=(table,), rounds=3, iterations=1)
    benchmark.extra_info.update(
        devices=table.n,
        matches=int(result[0].sum()),
        ns_per_device=benchmark.stats["mean"] * 1e9 / table.n,
    )


def _celpy_program(expr: str) -> Any:
    import celpy
    from celpy import celtypes

    def quantity(s: Any) -> Quantity:
        return Quantity.parse(str(s))

    def semver(s: Any) -> SemVer:
        return parse_semver(str(s))

    def compare_to(a: Any, b: Any) -> Any:
        return celtypes.IntType(a.cmp(b) if isinstance(a, Quantity) else a.compare(b))

    def is_greater_than(a: Any, b: Any) -> Any:
        return celtypes.BoolType(compare_to(a, b) > 0)

    env = celpy.Environment()
    functions: dict[str, Any] = {
        "quantity": quantity,
        "semver": semver,
        "compareTo": compare_to,
        "isGreaterThan": is_greater_than,
    }
    return env.program(env.compile(expr), functions=functions)


def _celpy_activation(driver: str, device: Device) -> Any:
    from celpy import celtypes, json_to_cel

    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = name.split("/", 1)
        value = parse_semver(attr.value) if attr.kind == "version" else json_to_cel(attr.value)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = name.split("/", 1)
        capacity.setdefault(domain, {})[ident] = cap.value
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): celtypes.MapType(
                    {
                        celtypes.StringType(k): celtypes.MapType(
                            {celtypes.StringType(i): v for i, v in m.items()}
                        )
                        for k, m in attributes.items()
                    }
                ),
                celtypes.StringType("capacity"): celtypes.MapType(
                    {
                        celtypes.StringType(k): celtypes.MapType(
                            {celtypes.StringType(i): v for i, v in m.items()}
                        )
                        for k, m in capacity.items()
                    }
                ),
            }
        )
    }


@pytest.mark.benchmark(group="cel-eval")
@pytest.mark.parametrize(
    "index", [i for i, f in enumerate(CELPY_FORMS) if f is not None], ids=_short
)
def test_celpy_per_device(
    benchmark: Any, small_devices: list[tuple[str, Device]], index: int
) -> None:
    form = CELPY_FORMS[index]
    assert form is not None
    program = _celpy_program(form)
    # Devices without the optional rack/healthy attributes would raise in celpy where
    # draspeed gives the same error: keep the devices both can evaluate.
    sample = [
        (d, dev)
        for d, dev in small_devices[:2000]
        if d == DRIVER and "topology.example.com/rack" in dev.attributes
    ]
    activations = [_celpy_activation(d, dev) for d, dev in sample]

    def run() -> int:
        return sum(1 for act in activations if bool(program.evaluate(act)))

    matched = benchmark.pedantic(run, rounds=2, iterations=1)
    benchmark.extra_info.update(
        devices=len(activations),
        matches=matched,
        ns_per_device=benchmark.stats["mean"] * 1e9 / len(activations),
    )
