"""Strict semantic versions as Kubernetes DRA and its CEL ``semver`` library see them.

:func:`parse_semver` accepts exactly what ``github.com/blang/semver/v4`` ``Parse`` accepts
(SemVer 2.0.0: no ``v``, no leading zeros, all three numbers, every number a uint64) and
raises :class:`~draspeed.errors.SemverError` with blang's message, which is the text a
failing CEL ``semver(...)`` call reports. ``normalize=True`` is the CEL library's
``normalizeAndParse`` (k8s.io/apiserver pkg/cel/library/semverlib.go): strip one leading
``v``, strip leading zeros of the numbers, pad a missing minor/patch with ``0``.

Ordering, equality and hashing ignore build metadata, as blang's ``Compare`` does.
Note for CEL: ``major()``/``minor()``/``patch()`` convert blang's uint64 to a CEL int, so
Go wraps values above 2**63-1; :attr:`SemVer.major` etc. hold the exact number.
"""

from __future__ import annotations

from typing import Any, Final

from draspeed.errors import SemverError
from draspeed.golang import go_quote

_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64_MAX: Final = (1 << 64) - 1

PrereleaseId = str | int


class SemVer:
    """An immutable semantic version; compared by SemVer 2.0.0 precedence (build ignored)."""

    __slots__ = ("_key", "build", "major", "minor", "patch", "prerelease")

    major: int
    minor: int
    patch: int
    prerelease: tuple[PrereleaseId, ...]  # numeric identifiers as int, others as str
    build: tuple[str, ...]
    _key: tuple[Any, ...]

    def __init__(
        self,
        major: int,
        minor: int,
        patch: int,
        prerelease: tuple[PrereleaseId, ...] = (),
        build: tuple[str, ...] = (),
    ) -> None:
        setter = object.__setattr__
        setter(self, "major", major)
        setter(self, "minor", minor)
        setter(self, "patch", patch)
        setter(self, "prerelease", tuple(prerelease))
        setter(self, "build", tuple(build))
        setter(self, "_key", _precedence_key(major, minor, patch, self.prerelease))

    def __str__(self) -> str:
        """blang ``Version.String()``."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(part) for part in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"SemVer({str(self)!r})"

    def sort_key(self) -> tuple[Any, ...]:
        """A tuple whose ordering is :meth:`compare`'s (build metadata left out)."""
        return self._key

    def compare(self, other: SemVer) -> int:
        """blang ``Compare``: -1, 0 or 1 by SemVer 2.0.0 precedence."""
        a, b = self._key, other._key
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key == other._key

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key != other._key

    def __lt__(self, other: SemVer) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key < other._key

    def __le__(self, other: SemVer) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key <= other._key

    def __gt__(self, other: SemVer) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key > other._key

    def __ge__(self, other: SemVer) -> bool:
        if not isinstance(other, SemVer):
            return NotImplemented
        return self._key >= other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("SemVer is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("SemVer is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (SemVer, (self.major, self.minor, self.patch, self.prerelease, self.build))


def _precedence_key(
    major: int, minor: int, patch: int, prerelease: tuple[PrereleaseId, ...]
) -> tuple[Any, ...]:
    # A release sorts after all of its pre-releases; within a pre-release numeric
    # identifiers sort before alphanumeric ones and a longer list wins a tie.
    if not prerelease:
        return (major, minor, patch, (1,))
    parts = tuple((0, p) if isinstance(p, int) else (1, p) for p in prerelease)
    return (major, minor, patch, (0, *parts))


def parse_semver(text: str, normalize: bool = False) -> SemVer:
    """blang ``semver.Parse`` (or the CEL library's ``normalizeAndParse``); SemverError."""
    if not isinstance(text, str):
        raise TypeError(f"parse_semver() takes a str, not {type(text).__name__}")
    return _parse_strict(_normalized(text) if normalize else text)


def is_semver(text: str, normalize: bool = False) -> bool:
    """CEL ``isSemver(text[, normalize])``."""
    try:
        parse_semver(text, normalize)
    except SemverError:
        return False
    return True


def _normalized(text: str) -> str:
    text = text[1:] if text.startswith("v") else text
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        # Go measures bytes, so a lone non-ASCII character counts as long.
        if len(part.encode()) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[index] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend("0" * (3 - len(parts)))
    return ".".join(parts)


def _parse_strict(text: str) -> SemVer:
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major", "Major")
    minor = _number(parts[1], "minor", "Minor")
    rest = parts[2]
    build: list[str] = []
    prerelease_text: list[str] = []
    plus = rest.find("+")
    if plus != -1:
        build = rest[plus + 1 :].split(".")
        rest = rest[:plus]
    dash = rest.find("-")
    if dash != -1:
        prerelease_text = rest[dash + 1 :].split(".")
        rest = rest[:dash]
    patch = _number(rest, "patch", "Patch")
    prerelease = tuple(_prerelease_id(part) for part in prerelease_text)
    for part in build:
        if not part:
            raise SemverError("Build meta data is empty")
        if not _only(part, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(part)}")
    return SemVer(major, minor, patch, prerelease, tuple(build))


def _number(text: str, lower: str, title: str) -> int:
    if not _only(text, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {lower} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{title} number must not contain leading zeroes {go_quote(text)}")
    return _parse_uint64(text)


def _prerelease_id(text: str) -> PrereleaseId:
    if not text:
        raise SemverError("Prerelease is empty")
    if _only(text, _NUMBERS):
        if len(text) > 1 and text[0] == "0":
            raise SemverError(
                f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}"
            )
        return _parse_uint64(text)
    if _only(text, _ALPHANUM):
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {go_quote(text)}")


def _parse_uint64(digits: str) -> int:
    """strconv.ParseUint(digits, 10, 64) for a string of ASCII digits."""
    if not digits:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    if len(digits) > 20 or int(digits) > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(digits)}: value out of range")
    return int(digits)


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)
