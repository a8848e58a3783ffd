"""Exact sums of quantities (``draspeed.quantity_sum``).

Upstream adds quantities with inf.Dec, writing every digit out; draspeed compares sums
by clusters of digits instead, so what committed shares consume of a capacity, and what
is left of a counter, are compared exactly however far apart their exponents are. The
answers upstream gives for such sums are regression cases
(``tests/regressions/capacity-committed-share*-beyond-exact-range-*``,
``counter-*beyond-exact-range-*``, ``cel-quantity-beyond-exact-range-*``); here: the
arithmetic against written-out sums, and selectors upstream never finishes.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from draspeed import load
from draspeed.errors import QuantityError
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.testing.documents import resource_slice
from draspeed.testing.engines import Inputs, run

# Values within and beyond GAP digits of each other, of both signs.
TEXTS = ["0", "1", "-1", "1n", "1m", "999", "1Gi", "-5e39", "1e40", "-1e40", "1e41", "1e80"]
TEXTS += ["-2e80", "7e100", "-7e100", "3e-9", "123456789012345678901234567890e20"]


def _random_terms(rng: random.Random) -> list[Quantity]:
    return [Quantity.parse(rng.choice(TEXTS)) for _ in range(rng.randint(0, 5))]


def test_comparisons_equal_those_of_the_written_out_sum() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        terms, other = _random_terms(rng), Quantity.parse(rng.choice(TEXTS))
        total = sum((q.nanos for q in terms), 0)
        expected = (total > other.nanos) - (total < other.nanos)
        one_go = QuantitySum(terms)
        step_by_step = QuantitySum()
        for q in terms:
            step_by_step = step_by_step.add(q)
        assert one_go.cmp(other) == step_by_step.cmp(other) == expected
        assert (one_go == other) == (expected == 0)
        assert one_go.neg().cmp(other.neg()) == -expected
        assert one_go.sign() == (total > 0) - (total < 0)
        assert one_go.nanos == total
        assert one_go.nanos_below(60) == (total if abs(total) < 10**60 else None)
        # Hashed as the equal quantity, so sets of both hold one value once.
        assert hash(one_go) == hash(Quantity.from_nanos(total))


def test_sums_of_sums_and_the_running_add() -> None:
    rng = random.Random(11)
    for _ in range(500):
        a, b = _random_terms(rng), _random_terms(rng)
        joined = QuantitySum(a).add(QuantitySum(b))
        assert joined.nanos == sum((q.nanos for q in a + b), 0)
        assert joined.cmp(QuantitySum(b + a)) == 0
    # As upstream's running Add: the first term's format, the exact value.
    assert str(QuantitySum([Quantity.parse("1Gi"), Quantity.parse("1Gi")])) == "2Gi"
    assert QuantitySum().quantity().is_zero()


@pytest.mark.parametrize(
    ("terms", "other", "expected"),
    [
        (["1e999999", "1Gi"], "1e999999", 1),
        (["1e999998", "1Gi"], "1e999999", -1),
        (["5e999998", "5e999998"], "1e999999", 0),
        (["1e2147483647", "-1"], "1e2147483647", -1),
        (["1e2147483647", "-1e2147483647", "1n"], "0", 1),
        (["-1e2147483647", "1e-9"], "-1e2147483646", -1),
    ],
)
def test_exponents_far_apart_are_compared_without_their_digits(
    terms: list[str], other: str, expected: int
) -> None:
    total = QuantitySum(map(Quantity.parse, terms))
    assert total.cmp(Quantity.parse(other)) == expected


def test_a_sum_beyond_the_limit_is_refused_only_when_written_out() -> None:
    total = QuantitySum([Quantity.parse("1e999999"), Quantity.parse("1Gi")])
    assert total.sign() == 1 and total.nanos_below(1000) is None
    assert str(total) == "1e999999 + 1073741824"
    assert str(total.neg().add(Quantity.parse("1"))) == "-1e999999 - 1073741823"
    with pytest.raises(QuantityError, match="beyond draspeed's limit"):
        total.quantity()
    with pytest.raises(QuantityError, match="beyond draspeed's limit"):
        _ = total.nanos


def _selector_cluster(expression: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        resource_slice("s1", [{"name": "d0"}], nodeName="node-1"),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "c"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "cl", "namespace": "default", "uid": "u1"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
        },
    ]


@pytest.mark.parametrize(
    ("expression", "fits"),
    [
        ('quantity("1e2147483647").add(1).isGreaterThan(quantity("1e2147483647"))', True),
        (
            'quantity("1e2147483647").sub(quantity("1n")).compareTo(quantity("1e2147483647"))'
            " == -1",
            True,
        ),
        ('quantity("1e2147483647").add(1).sub(quantity("1e2147483647")) == quantity("1")', True),
        ('quantity("-1e2147483647").add(quantity("1Gi")).asApproximateFloat() < 0.0', True),
        ('quantity("1e2147483647").add(1).isInteger()', False),
    ],
)
def test_cel_sums_upstream_never_finishes_are_answered_at_once(expression: str, fits: bool) -> None:
    """Upstream writes 10^2147483647 + 1 out and does not finish; both engines answer
    as the exact value says (the regression cases hold upstream's answers for
    1e999999, which it finishes)."""
    inputs = Inputs.from_objects(load(_selector_cluster(expression)), "node-1", Features())
    for engine in ("fast", "reference"):
        start = time.monotonic()
        assert run(engine, inputs).outcome == ("results" if fits else "unsuitable"), engine
        assert time.monotonic() - start < 10  # (a hang guard, not a timing)


@pytest.mark.parametrize(
    ("terms", "text"),
    [
        (["1Gi", "1Gi"], "2Gi"),  # upstream's String() while the sum is written out
        (["1e999998", "1Gi"], "1" + "0" * (999998 - 10) + "1073741824"),
        (["1e999999", "5e99990"], "1" + "0" * (999999 - 99990 - 1) + "5e99990"),
        # Upstream's String() of this BinarySI sum would parse back capped at 2^63-1.
        (["1Gi", "1e50"], "1" + "0" * 40 + "1073741824e0"),
    ],
)
def test_exact_text_writes_the_value_out(terms: list[str], text: str) -> None:
    total = QuantitySum(map(Quantity.parse, terms))
    assert total.exact_text() == text
    assert Quantity.parse(text) == total
