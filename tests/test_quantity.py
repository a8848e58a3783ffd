"""draspeed.quantity against upstream resource.Quantity (data: tests/data/quantity_cases.yaml)."""

from __future__ import annotations

import copy
import math
import pickle
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.errors import QuantityError
from draspeed.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NOT_INTEGER,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    parse_quantity,
)

DATA = yaml.safe_load((Path(__file__).parent / "data" / "quantity_cases.yaml").read_text())
ERRORS = {"format": ERR_FORMAT_WRONG, "suffix": ERR_SUFFIX, "numeric": ERR_NUMERIC}
NANO = 10**9


def build(spec: Any) -> Quantity:
    """A quantity string, or {int: n, format: f} for resource.NewQuantity(n, f)."""
    if isinstance(spec, str):
        return Quantity.parse(spec)
    return Quantity.from_int(spec["int"], spec["format"])


def exact(text: str) -> Fraction:
    return Fraction(text)


# -- data-driven ---------------------------------------------------------------


@pytest.mark.parametrize(("text", "value", "fmt"), DATA["parse"], ids=[c[0] for c in DATA["parse"]])
def test_parse_value_and_format(text: str, value: str, fmt: str) -> None:
    expected = exact(value)
    for prefix, sign in (("", 1), ("-", -1), ("+", 1)):
        q = Quantity.parse(prefix + text)
        assert Fraction(q.nanos, NANO) == sign * expected, prefix + text
        assert q.format == fmt, prefix + text


CASES = DATA["cases"]


@pytest.mark.parametrize("case", CASES, ids=[repr(c["in"]) for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    text = case["in"]
    if "error" in case:
        with pytest.raises(QuantityError) as info:
            Quantity.parse(text)
        assert str(info.value) == ERRORS[case["error"]]
        return
    q = Quantity.parse(text)
    assert str(q) == case["str"]
    assert q.to_json() == case["str"]
    if "value" in case:
        assert q.value() == case["value"]
    if "milli" in case:
        assert q.milli_value() == case["milli"]
    if "format" in case:
        assert q.format == case["format"]
    if "int" in case:
        assert q.is_integer() is case["int"]
        if case["int"]:
            assert q.as_integer() == case.get("integer", q.value())
        else:
            with pytest.raises(QuantityError, match=ERR_NOT_INTEGER):
                q.as_integer()


def test_enough_cases() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", DATA["go_values"], ids=[c["in"] for c in DATA["go_values"]])
def test_go_values(case: dict[str, Any]) -> None:
    q = Quantity.parse(case["in"])
    if "value" in case:
        assert q.value() == case["value"]
    if "milli" in case:
        assert q.milli_value() == case["milli"]
    if "go_value" in case:
        assert q.go_value() == case["go_value"]
    if "go_milli" in case:
        assert q.go_milli_value() == case["go_milli"]


@pytest.mark.parametrize(("text", "expected"), DATA["floats"], ids=[c[0] for c in DATA["floats"]])
def test_as_approximate_float(text: str, expected: float) -> None:
    got = Quantity.parse(text).as_approximate_float()
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("x", "y", "expected"), DATA["cmp"], ids=[f"{c[0]}~{c[1]}" for c in DATA["cmp"]]
)
def test_cmp(x: str, y: str, expected: int) -> None:
    a, b = Quantity.parse(x), Quantity.parse(y)
    assert a.cmp(b) == expected
    assert b.cmp(a) == -expected
    assert (a == b) is (expected == 0)
    assert (a < b) is (expected < 0)
    assert (a <= b) is (expected <= 0)
    assert (a > b) is (expected > 0)
    assert (a >= b) is (expected >= 0)
    if expected == 0:
        assert hash(a) == hash(b)


@pytest.mark.parametrize("case", DATA["arithmetic"], ids=lambda c: f"{c['a']} {c['op']} {c['b']}")
def test_arithmetic(case: dict[str, Any]) -> None:
    a, b = build(case["a"]), build(case["b"])
    result = a.add(b) if case["op"] == "add" else a.sub(b)
    assert str(result) == case["str"]
    if "format" in case:
        assert result.format == case["format"]
    sign = 1 if case["op"] == "add" else -1
    assert result.nanos == a.nanos + sign * b.nanos


@pytest.mark.parametrize("case", DATA["same_representation"], ids=lambda c: f"{c['a']} == {c['b']}")
def test_same_representation(case: dict[str, Any]) -> None:
    a, b = build(case["a"]), build(case["b"])
    assert a.same_representation(b) is case["same"]
    assert b.same_representation(a) is case["same"]


# -- focused -------------------------------------------------------------------


def test_equality_hash_and_ints() -> None:
    gi = Quantity.parse("1Gi")
    assert gi == Quantity.parse("1073741824") == 1073741824
    assert hash(gi) == hash(1073741824)
    assert hash(Quantity.parse("1.5")) == hash(Fraction(3, 2))
    assert hash(Quantity.parse("-1")) == hash(-1)
    assert hash(Quantity.parse("1e400")) == hash(10**400)
    assert len({Quantity.parse("1k"), Quantity.parse("1000"), Quantity.parse("1e3")}) == 1
    assert Quantity.parse("1k") != Quantity.parse("1001")
    assert Quantity.parse("1.5") != 1
    assert Quantity.parse("2") > 1
    assert Quantity.parse("0.5") < 1
    assert (Quantity.parse("1") == "1") is False
    assert sorted([Quantity.parse(s) for s in ("1Gi", "1", "1m", "-1", "1G")]) == [
        Quantity.parse(s) for s in ("-1", "1m", "1", "1G", "1Gi")
    ]


def test_sign_and_zero() -> None:
    assert Quantity.parse("-5m").sign() == -1
    assert Quantity.parse("0Gi").sign() == 0
    assert Quantity.parse("1n").sign() == 1
    assert Quantity.parse("-0").is_zero()


def test_format_memory() -> None:
    assert Quantity.parse("1Gi").format == "BinarySI"
    assert Quantity.parse("1G").format == "DecimalSI"
    assert Quantity.parse("1e9").format == "DecimalExponent"
    assert Quantity.parse("1E").format == "DecimalSI"  # decimalSI table is tried first
    assert Quantity.parse("0.5Ki").format == "BinarySI"  # 512 >= 1: stays binary
    assert Quantity.parse("0.0005Ki").format == "DecimalSI"  # 0 < x < 1: switches


def test_add_keeps_receiver_format_unless_zero() -> None:
    a = Quantity.parse("1Ki").add(Quantity.parse("1k"))
    assert (a.format, str(a)) == ("BinarySI", "2024")
    b = Quantity.parse("1k").add(Quantity.parse("1Ki"))
    assert (b.format, str(b)) == ("DecimalSI", "2024")
    c = Quantity.parse("0").add(Quantity.parse("2Ki"))
    assert (c.format, str(c)) == ("BinarySI", "2Ki")


def test_neg() -> None:
    assert str(Quantity.parse("9.01").neg()) == "-9010m"
    assert str(Quantity.parse("1.5Gi").neg()) == "-1536Mi"
    assert Quantity.parse("0").neg() == 0
    assert Quantity.parse("5").neg().neg() == Quantity.parse("5")


def test_arithmetic_round_trip_across_scales() -> None:
    total = Quantity.from_int(0)
    parts = [Quantity.from_nanos(j * 7919 ** (j % 5), "DecimalSI") for j in range(1, 60)]
    parts += [Quantity.parse(f"{j}e{j % 20 - 10}") for j in range(1, 60)]
    for part in parts:
        total = total.add(part)
    for part in parts:
        total = total.sub(part)
    assert total.is_zero()


def test_cel_integer_semantics_follow_go_as_int64() -> None:
    assert Quantity.parse("80Gi").as_integer() == 80 * 2**30
    assert not Quantity.parse("1000m").is_integer()  # int64Amount with negative scale
    assert not Quantity.parse("100Ti").is_integer()  # slow path: inf.Dec
    assert not Quantity.parse("1e19").is_integer()  # beyond int64
    assert Quantity.parse("1E").as_integer() == 10**18
    assert not Quantity.parse("1").as_dec_form().is_integer()
    with pytest.raises(QuantityError, match="cannot convert value to integer"):
        Quantity.parse("1.5").as_integer()
    summed = Quantity.parse("1").add(Quantity.parse("1.5Gi"))
    assert summed.is_dec_form and not summed.is_integer()


def test_int64_addition_overflow_moves_to_dec_form() -> None:
    big = Quantity.parse("9000000000000000000k")  # 19 digits: slow path already
    assert big.is_dec_form
    a = Quantity.from_int(2**62)
    assert a.add(a).is_dec_form  # 2**63 does not fit an int64Amount
    assert a.add(Quantity.from_int(5)).as_integer() == 2**62 + 5


def test_constructors() -> None:
    assert str(Quantity.from_int(1024, "BinarySI")) == "1Ki"
    assert str(Quantity.from_int(1000000, "DecimalExponent")) == "1e6"
    assert str(Quantity.from_int(1234000)) == "1234k"
    assert str(Quantity.from_nanos(1)) == "1n"
    assert str(Quantity.from_nanos(1024 * NANO // 1000, "BinarySI")) == "1024m"
    assert Quantity.from_nanos(1500000000).value() == 2
    assert Quantity("1Gi") == Quantity.parse("1Gi") == parse_quantity("1Gi")
    assert Quantity.from_int(2**70, "BinarySI").is_dec_form
    assert str(Quantity.from_int(2**70, "BinarySI")) == str(2**70)  # past Ei: base 10
    assert str(Quantity.from_int(10**70, "BinarySI")) == "10e69"
    with pytest.raises(QuantityError):
        Quantity.from_int(1, "Decimal")


def test_immutable_picklable_copyable() -> None:
    q = Quantity.parse("1.5Gi")
    with pytest.raises(AttributeError):
        q.format = "DecimalSI"
    for other in (pickle.loads(pickle.dumps(q)), copy.copy(q), copy.deepcopy(q)):
        assert other == q and str(other) == str(q) and other.format == q.format
    assert repr(Quantity.parse("5.")) == "Quantity('5.', format='DecimalSI')"


def test_parse_rejects_non_strings_and_whitespace() -> None:
    with pytest.raises(TypeError):
        Quantity.parse(5)  # type: ignore[arg-type]
    with pytest.raises(QuantityError, match="regular expression"):
        Quantity.parse("\t1Gi")
    # UnmarshalJSON trims Go whitespace of the JSON text first (TestJSONWhitespace)
    for text in (" 1", "1 ", "\u30001\xa0", "\u20281\x85"):
        assert str(Quantity.from_json(text)) == "1"
    assert str(Quantity.from_json(" -1")) == "-1"
    # Not a space to Go, or a space JSON holds only as an escape (a backslash there).
    for text in ("\x1c1", "\t1", "1\n", "1\r", "\v1", "\f1"):
        with pytest.raises(QuantityError, match="regular expression"):
            Quantity.from_json(text)


def test_huge_exponents_are_cheap_until_materialised() -> None:
    huge = Quantity.parse("1e2147483647")
    assert huge > Quantity.parse("9Ei") and huge.sign() == 1
    assert huge.as_approximate_float() == math.inf
    assert hash(huge) == hash(huge)
    assert huge.go_value() == 2**63 - 1  # saturated
    with pytest.raises(QuantityError):
        _ = huge.nanos
    assert Quantity.parse("1e400").nanos == 10**409


def test_long_digit_strings() -> None:
    digits = "7" * 6000  # beyond Python's default int/str conversion limit
    q = Quantity.parse(digits)
    assert str(q) == digits
    assert Quantity.parse(digits + "000") > q
    assert str(Quantity.parse("1" + "0" * 6000)) == "1e6000"
    assert str(Quantity.parse("1" + "0" * 6001)) == "10e6000"


# -- properties ------------------------------------------------------------------

MANTISSAS = st.one_of(
    st.integers(min_value=0, max_value=10**25).map(str),
    st.tuples(st.integers(0, 10**12), st.integers(0, 10**12)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.integers(0, 10**6).map(lambda n: f".{n}"),
    st.integers(0, 10**6).map(lambda n: f"{n}."),
    st.text("0123456789", min_size=1, max_size=30),
)
SUFFIXES = st.one_of(
    st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]),
    st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
    st.integers(-40, 40).flatmap(
        lambda e: st.sampled_from([f"e{e}", f"E{e}", f"e+{e}" if e >= 0 else f"e{e}"])
    ),
)
QUANTITY_TEXT = st.tuples(st.sampled_from(["", "-", "+"]), MANTISSAS, SUFFIXES).map("".join)


@settings(max_examples=300, deadline=None)
@given(QUANTITY_TEXT)
def test_string_round_trip(text: str) -> None:
    q = Quantity.parse(text)
    printed = str(q)
    again = Quantity.parse(printed)
    assert again == q
    assert str(again) == printed
    assert Quantity.parse(q.canonical()) == q
    magnitude = -(-abs(q.nanos) // NANO)  # ceil
    assert q.value() == magnitude * q.sign()


@settings(max_examples=150, deadline=None)
@given(QUANTITY_TEXT, QUANTITY_TEXT)
def test_order_matches_exact_value(left: str, right: str) -> None:
    a, b = Quantity.parse(left), Quantity.parse(right)
    expected = (a.nanos > b.nanos) - (a.nanos < b.nanos)
    assert a.cmp(b) == expected
    assert (a == b) is (expected == 0)
    assert a.add(b).nanos == a.nanos + b.nanos
    assert a.sub(b).nanos == a.nanos - b.nanos
