"""Fuzzing the CEL compiler and evaluator.

Inputs: random expressions from a small CEL grammar (every operator, macro, literal
form and many library functions, mostly ill-typed) and real selectors (the corpora's)
with character-level edits (splices, cuts, duplications, deep nesting).

Contract: ``compile_selector`` returns a selector or raises ``CELCompileError``;
``Selector.matches`` returns a bool or raises ``CELRuntimeError``; each call ends
within a time budget; the vector path over a ``DeviceTable`` gives every device the
verdict (match, or the same error text) the per-device path gives.

The default run does a short pass; ``-m fuzz`` runs the long one::

    pytest -m fuzz tests/test_fuzz_cel.py
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from draspeed.api.loader import load
from draspeed.api.model import Device, ResourceSlice
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.errors import CELCompileError, CELRuntimeError
from draspeed.testing.fuzz import Hang, seed_selectors, time_budget
from draspeed.testing.strategies import cel_expressions, mutated_selectors

BUDGET = 10.0  # seconds per compile or evaluation; the cost limit ends real work sooner
SHORT = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LONG = settings(SHORT, max_examples=30_000)

DEVICES = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fuzz}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: full
    allowMultipleAllocations: true
    attributes:
      model: {string: a100}
      numa: {int: 1}
      healthy: {bool: true}
      driverVersion: {version: 1.2.3}
      links: {strings: [l0, l1]}
      ids: {ints: [1, 2]}
      topo.example.com/rack: {string: r1}
    capacity:
      memory: {value: 40Gi}
  - name: sparse
    attributes:
      model: {string: ""}
  - name: bare
  - name: broken
    attributes:
      model: {}
"""


def _devices() -> list[tuple[str, Device]]:
    (slice_,) = load(DEVICES, validate=False).slices
    assert isinstance(slice_, ResourceSlice)
    return [(slice_.spec.driver, d) for d in slice_.spec.devices]


SAMPLE = _devices()
INPUTS = [device_input(driver, device) for driver, device in SAMPLE]


def cel_contract(expression: str) -> None:
    try:
        with time_budget(BUDGET, "compile"):
            selector = compile_selector(expression)
    except CELCompileError as exc:
        assert str(exc).strip(), "compile error without a message"
        return
    except Hang:
        raise
    except BaseException as exc:
        raise AssertionError(f"compile raised {type(exc).__name__}: {exc}") from exc
    verdicts: list[bool | str] = []
    for cel_input in INPUTS:
        try:
            with time_budget(BUDGET, "evaluate"):
                verdict: bool | str = selector.matches(cel_input)
            assert isinstance(verdict, bool)
        except CELRuntimeError as exc:
            assert str(exc).strip(), "runtime error without a message"
            verdict = str(exc)
        except Hang:
            raise
        except BaseException as exc:
            raise AssertionError(f"evaluation raised {type(exc).__name__}: {exc}") from exc
        verdicts.append(verdict)
    try:
        with time_budget(BUDGET, "vector evaluation"):
            match, error, messages = selector.evaluate(DeviceTable(SAMPLE))
    except Hang:
        raise
    except BaseException as exc:
        raise AssertionError(f"vector path raised {type(exc).__name__}: {exc}") from exc
    vector = [messages[i] if error[i] else bool(match[i]) for i in range(len(SAMPLE))]
    assert vector == verdicts, f"vector path {vector!r}, per device {verdicts!r}"


@SHORT
@given(cel_expressions())
def test_grammar_expressions(expression: str) -> None:
    cel_contract(expression)


@SHORT
@given(mutated_selectors(seed_selectors()))
def test_mutated_selectors(expression: str) -> None:
    cel_contract(expression)


@pytest.mark.fuzz
@LONG
@given(cel_expressions())
def test_grammar_expressions_long(expression: str) -> None:
    cel_contract(expression)


@pytest.mark.fuzz
@LONG
@given(mutated_selectors(seed_selectors()))
def test_mutated_selectors_long(expression: str) -> None:
    cel_contract(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "(" * 300 + "true" + ")" * 300,  # nesting beyond cel-go's limit of 250
        '"' + "a" * 10_300 + '" == ""',  # longer than 10 KiB
        "lists.range(60).all(i, lists.range(60).all(j, i * j >= 0))",
    ],
)
def test_adversarial(expression: str) -> None:
    cel_contract(expression)


# Slow, not wrong: a 10 KiB list literal takes seconds to compile and a selector that
# runs into the cost limit about a second per device (measured: see the report).
@pytest.mark.fuzz
@pytest.mark.parametrize(
    "expression",
    [
        "[" + ",".join(["1"] * 5000) + "].size() > 0",
        "lists.range(1000).map(i, lists.range(1000).map(j, i * j)).size() > 0",
        "device.attributes" + '["x"]' * 2000,
    ],
)
def test_adversarial_slow(expression: str) -> None:
    cel_contract(expression)
