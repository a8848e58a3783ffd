"""draspeed.semantic_version against blang/semver v4 and the Kubernetes CEL semver library."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.errors import SemverError
from draspeed.semantic_version import SemVer, is_semver, parse_semver

DATA = yaml.safe_load((Path(__file__).parent / "data" / "semver_cases.yaml").read_text())


@pytest.mark.parametrize("case", DATA["valid"], ids=lambda c: c["in"])
def test_valid(case: dict[str, Any]) -> None:
    v = parse_semver(case["in"])
    major, minor, patch, pre, build = case["parts"]
    assert (v.major, v.minor, v.patch) == (major, minor, patch)
    assert v.prerelease == tuple(pre)
    assert v.build == tuple(build)
    assert str(v) == case["in"]
    assert is_semver(case["in"])
    assert parse_semver(str(v)) == v


@pytest.mark.parametrize("case", DATA["invalid"], ids=lambda c: repr(c["in"]))
def test_invalid(case: dict[str, Any]) -> None:
    with pytest.raises(SemverError) as info:
        parse_semver(case["in"])
    assert str(info.value) == case["error"]
    assert not is_semver(case["in"])


def test_table_sizes() -> None:
    assert len(DATA["valid"]) + len(DATA["invalid"]) >= 40


@pytest.mark.parametrize("case", DATA["normalized"], ids=lambda c: repr(c["in"]))
def test_normalized(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(SemverError) as info:
            parse_semver(case["in"], normalize=True)
        assert str(info.value) == case["error"]
        assert not is_semver(case["in"], normalize=True)
    else:
        assert str(parse_semver(case["in"], normalize=True)) == case["out"]
        assert is_semver(case["in"], normalize=True)


def test_precedence_chain() -> None:
    chain = [parse_semver(s) for s in DATA["precedence"]]
    for lower, higher in itertools.pairwise(chain):
        assert lower.compare(higher) == -1, (lower, higher)
        assert higher.compare(lower) == 1
        assert lower < higher and higher > lower and lower <= higher and lower != higher
        assert lower.sort_key() < higher.sort_key()
    assert sorted(reversed(chain)) == chain


@pytest.mark.parametrize(("a", "b", "expected"), DATA["compare"], ids=lambda v: str(v))
def test_compare(a: str, b: str, expected: int) -> None:
    x, y = parse_semver(a), parse_semver(b)
    assert x.compare(y) == expected
    assert y.compare(x) == -expected
    assert (x == y) is (expected == 0)
    if expected == 0:
        assert hash(x) == hash(y)


def test_build_metadata_kept_but_ignored() -> None:
    a, b = parse_semver("1.0.0+build.1"), parse_semver("1.0.0+build.2")
    assert a == b and hash(a) == hash(b) and a.compare(b) == 0
    assert a.build == ("build", "1") and str(b) == "1.0.0+build.2"
    assert len({a, b, parse_semver("1.0.0")}) == 1


def test_cel_library_examples() -> None:
    assert parse_semver("v01.01", normalize=True) == parse_semver("1.1.0")
    assert parse_semver("1.0.0") < parse_semver("1.2.3")
    v = parse_semver("1.2.3")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    with pytest.raises(SemverError, match=r"^No Major\.Minor\.Patch elements found$"):
        parse_semver("v1.0")


def test_immutable_and_picklable() -> None:
    v = parse_semver("1.2.3-rc.1+b")
    with pytest.raises(AttributeError):
        v.major = 2
    again = pickle.loads(pickle.dumps(v))
    assert again == v and again.build == v.build
    assert repr(v) == "SemVer('1.2.3-rc.1+b')"
    assert v.__eq__("1.2.3") is NotImplemented


def test_non_string_rejected() -> None:
    with pytest.raises(TypeError):
        parse_semver(123)  # type: ignore[arg-type]


# -- properties -------------------------------------------------------------------

NUMBER = st.one_of(st.integers(0, 20), st.integers(0, 2**64 - 1))
IDENT = st.one_of(
    NUMBER.map(str),
    st.text("abcxyzABZ-0123456789", min_size=1, max_size=6).filter(
        lambda s: not s.isdigit() or s == "0" or not s.startswith("0")
    ),
)
VERSION_TEXT = st.builds(
    lambda ma, mi, pa, pre, build: (
        f"{ma}.{mi}.{pa}"
        + ("-" + ".".join(pre) if pre else "")
        + ("+" + ".".join(build) if build else "")
    ),
    NUMBER,
    NUMBER,
    NUMBER,
    st.lists(IDENT, max_size=4),
    st.lists(st.text("abc-019", min_size=1, max_size=4), max_size=2),
)


def blang_compare(a: SemVer, b: SemVer) -> int:
    """Reference implementation of the SemVer 2.0.0 precedence rules, written out."""
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return 1 if x > y else -1
    if not a.prerelease or not b.prerelease:
        return (not a.prerelease) - (not b.prerelease)
    for p, q in zip(a.prerelease, b.prerelease, strict=False):
        if isinstance(p, int) != isinstance(q, int):
            return -1 if isinstance(p, int) else 1
        if p != q:
            bigger = p > q if isinstance(p, int) and isinstance(q, int) else str(p) > str(q)
            return 1 if bigger else -1
    return (len(a.prerelease) > len(b.prerelease)) - (len(a.prerelease) < len(b.prerelease))


@settings(max_examples=300, deadline=None)
@given(VERSION_TEXT, VERSION_TEXT)
def test_sort_key_order_equals_compare(left: str, right: str) -> None:
    a, b = parse_semver(left), parse_semver(right)
    expected = blang_compare(a, b)
    assert a.compare(b) == expected
    key_order = (a.sort_key() > b.sort_key()) - (a.sort_key() < b.sort_key())
    assert key_order == expected
    assert str(a) == left


@settings(max_examples=200, deadline=None)
@given(VERSION_TEXT)
def test_normalize_is_identity_on_strict_versions(text: str) -> None:
    assert parse_semver(text, normalize=True) == parse_semver(text)
    assert str(parse_semver("v" + text, normalize=True)) == text
