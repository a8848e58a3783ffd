"""Exact Kubernetes ``resource.Quantity`` (k8s.io/apimachinery/pkg/api/resource).

A :class:`Quantity` holds its exact value as a normalised decimal ``coef * 10**exp``
(Python ints, never floats) plus the few pieces of upstream's *representation* that
leak into observable behaviour:

* ``format`` -- DecimalSI, BinarySI or DecimalExponent, remembered from the input;
* whether Go keeps the value as an ``int64Amount`` (the fast parse path) or as an
  ``inf.Dec`` (the slow path, or after arithmetic that overflows int64), and Go's scale;
* the input string Go caches when it already looks canonical (``"5."`` prints as ``"5."``,
  ``"1.500k"`` as ``"1.500k"``, ``"1E3"`` as ``"1E3"``).

Those pieces decide ``str()``, :meth:`Quantity.is_integer` / :meth:`Quantity.as_integer`
(CEL ``isInteger``/``asInteger`` call Go's ``AsInt64``, which fails for every ``inf.Dec``
value and every negative scale: ``quantity("1000m").isInteger()`` is false upstream),
:meth:`Quantity.same_representation` (Go ``==`` on the struct) and
:meth:`Quantity.as_approximate_float` (bit for bit).

Upstream fixes merged after apimachinery eed236ce (2026-07-23) are applied, as the project
does for allocator bugs: String() of a DecimalSI value above ``E`` falls back to ``e``
notation (kubernetes#140459: ``"1000E"`` prints ``"1e21"``, not ``"1"``); exponents
outside ``[-(2**31-1), 2**31-1]`` are rejected (kubernetes#141203); ``Value()`` rounds
negative values away from zero and saturates instead of wrapping (kubernetes#138510,
#141305: :meth:`Quantity.go_value`); negating or subtracting an int64 ``-2**63`` is exact
(kubernetes#141264).

Deliberate divergences, for inputs where Go overflows its own int32 scale: an exponent
within a few digits of ``2**31`` is combined exactly (Go wraps and then hangs or yields
garbage; kubernetes#141306, still open, would do the same as here); computations that need
more than ``MAX_EXPONENT_DIGITS`` decimal digits raise :class:`~draspeed.errors.QuantityError`
instead of exhausting memory.
"""

from __future__ import annotations

import operator
import sys
from functools import lru_cache
from typing import Any, Final

from draspeed.arguments import type_name
from draspeed.errors import QuantityError

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"
FORMATS: Final = frozenset({DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT})

# Upstream's error texts (ErrFormatWrong, ErrNumeric, ErrSuffix), verbatim.
SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"
ERR_NOT_INTEGER: Final = "cannot convert value to integer"

#: Largest power of ten draspeed materialises (``1e400`` is fine, ``1e2000000000`` is not).
MAX_EXPONENT_DIGITS: Final = 100_000

INT64_MAX: Final = (1 << 63) - 1
INT64_MIN: Final = -(1 << 63)
_INT32_MAX: Final = (1 << 31) - 1
_HASH_MODULUS: Final = sys.hash_info.modulus

# What UnmarshalJSON's strings.TrimSpace removes of a quoted quantity: unicode.IsSpace
# (str.strip() would also drop \x1c-\x1f), but only what JSON text may hold unescaped.
# Go trims the raw bytes between the quotes, so a tab or a line break, which JSON holds
# only as an escape, is a backslash there: not trimmed, and no quantity.
_GO_SPACE_UNESCAPED: Final = (
    " \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_DIGITS: Final = frozenset("0123456789")
_SUFFIX_LETTERS: Final = frozenset("eEinumkKMGTP")
_DECIMAL_SUFFIXES: Final = {
    "": 0,
    "n": -9,
    "u": -6,
    "m": -3,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX_OF_EXPONENT: Final = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_OF_POWER: Final = {e // 10: s for s, e in _BINARY_SUFFIXES.items()}
# Go's fast path keeps at most 18 digits in an int64 (maxInt64Factors).
_MAX_INT64_DIGITS: Final = 18
_NANO_EXPONENT: Final = -9
# Python refuses int<->str conversions above this many digits (sys.int_max_str_digits).
_SAFE_STR_DIGITS: Final = 4000
_SAFE_STR_LIMIT: Final = 10**_SAFE_STR_DIGITS


# ---------------------------------------------------------------------------
# exact integer helpers
# ---------------------------------------------------------------------------


_SMALL_POW10 = tuple(10**i for i in range(64))  # the exponents real quantities use


def _pow10(n: int) -> int:
    """10**n for 0 <= n <= MAX_EXPONENT_DIGITS; larger powers are refused, not computed."""
    if 0 <= n < 64:
        return _SMALL_POW10[n]
    if n > MAX_EXPONENT_DIGITS:
        raise QuantityError(
            f"quantity needs 10^{n}, beyond draspeed's limit of 10^{MAX_EXPONENT_DIGITS}"
        )
    return 10**n


def _int_from_digits(digits: str) -> int:
    """int(digits) for ASCII digit strings of any length (beyond int_max_str_digits)."""
    if len(digits) <= _SAFE_STR_DIGITS:
        return int(digits)
    low_len = len(digits) // 2
    high = _int_from_digits(digits[:-low_len])
    return high * 10**low_len + _int_from_digits(digits[-low_len:])


def decimal_digits(n: int) -> str:
    """Decimal digits of n >= 0, for ints of any size."""
    if n < _SAFE_STR_LIMIT:
        return str(n)
    half = _digit_count(n) // 2
    high, low = divmod(n, 10**half)
    return decimal_digits(high) + decimal_digits(low).rjust(half, "0")


def _digit_count(n: int) -> int:
    """Number of decimal digits of n > 0 (exact, without converting to str)."""
    # 30102 = floor(log10(2) * 10**5), so the estimate is never above the answer.
    count = ((n.bit_length() - 1) * 30102) // 100000 + 1
    while n >= 10**count:
        count += 1
    return count


def _strip_tens(coef: int, exp: int) -> tuple[int, int]:
    """Move every factor 10 of coef into exp; zero is (0, 0)."""
    if coef == 0:
        return 0, 0
    if coef.bit_length() > 512 and coef % 10 == 0:
        # One digit at a time is quadratic on long numbers; count the zeros in the text.
        digits = decimal_digits(abs(coef))
        zeros = len(digits) - len(digits.rstrip("0"))
        return coef // 10**zeros, exp + zeros
    while coef % 10 == 0:
        coef //= 10
        exp += 1
    return coef, exp


def _fits_int64(v: int) -> bool:
    return INT64_MIN <= v <= INT64_MAX


def _int64_scaled(base: int, scale: int) -> int | None:
    """base * 10**scale when Go's positiveScaleInt64 succeeds (it fits an int64), else None."""
    if base == 0 or scale == 0:
        return base
    if scale > 19:
        return None
    scaled = base * 10**scale
    return scaled if _fits_int64(scaled) else None


def _go_pow10(n: int) -> float:
    """Go math.Pow10, bit for bit (a product of two table entries, not one rounding)."""
    if 0 <= n <= 308:
        return float(f"1e{32 * (n // 32)}") * float(f"1e{n % 32}")
    if -323 <= n < 0:
        return float(f"1e-{32 * (-n // 32)}") / float(f"1e{-n % 32}")
    return float("inf") if n > 0 else 0.0


def _float_of_int(v: int) -> float:
    """big.Float(v).Float64(): nearest float, +-inf when too large."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _go_parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None where Go returns an error."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(c not in _DIGITS for c in digits):
        return None
    digits = digits.lstrip("0") or "0"
    if len(digits) > 19:
        return None
    value = int(digits)
    value = -value if text[0] == "-" else value
    return value if _fits_int64(value) else None


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """Upstream parseQuantityString: (positive, number text, num, denom, suffix).

    ``num`` has its leading zeros removed ("0" when nothing is left); the number text keeps
    sign and zeros because the slow path parses it again as an inf.Dec.
    """
    end = len(text)
    pos = 0
    positive = True
    if end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    num = text[pos:i] or "0"
    if i >= end:
        return positive, text, num, "", ""
    pos = i
    denom = ""
    if text[pos] == ".":
        pos += 1
        i = pos
        while i < end and text[i] in _DIGITS:
            i += 1
        denom = text[pos:i]
        if i >= end:
            return positive, text, num, denom, ""
        pos = i
    number = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, number, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix; lookup order decimalSI, binarySI, e/E<int>."""
    exponent = _DECIMAL_SUFFIXES.get(suffix)
    if exponent is not None:
        return 10, exponent, DECIMAL_SI
    exponent = _BINARY_SUFFIXES.get(suffix)
    if exponent is not None:
        return 2, exponent, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _go_parse_int64(suffix[1:])
        # kubernetes#141203 rejects what int32 cannot hold (and MinInt32, whose
        # negation as an inf.Scale would overflow).
        if parsed is not None and -_INT32_MAX <= parsed <= _INT32_MAX:
            return 10, parsed, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _round_up_to_nano(coef: int, exp: int) -> tuple[int, int]:
    """Round |coef| * 10**exp up to a whole number of nanos (coef > 0)."""
    if exp >= _NANO_EXPONENT:
        return coef, exp
    shift = _NANO_EXPONENT - exp
    if shift > _digit_count(coef):
        return 1, _NANO_EXPONENT  # 0 < value < 1n
    quotient, remainder = divmod(coef, 10**shift)
    return quotient + (1 if remainder else 0), _NANO_EXPONENT


def _parse(text: str) -> Quantity:
    if not isinstance(text, str):
        raise _not_text(text)
    if text == "":
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity._make(0, 0, DECIMAL_SI, False, 0, "0")
    positive, number, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)

    if fmt == BINARY_SI:
        # Go estimates the digits of 2**exponent with float32(exponent)*3/10; exact here.
        precision = 15 - len(num) - exponent * 3 // 10 - 1 if not denom else -1
        scale = 0
        multiplier = 1 << exponent
    else:
        precision = _MAX_INT64_DIGITS - (len(num) + len(denom))
        scale = exponent
        multiplier = 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO_EXPONENT:
            shifted = num + denom
            magnitude = int(shifted) * multiplier
            if magnitude <= INT64_MAX:
                value = magnitude if positive else -magnitude
                if fmt == BINARY_SI:
                    canonical = int(shifted) & 0x07 != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                coef, exp = _strip_tens(value, scale)
                return Quantity._make(coef, exp, fmt, False, scale, text if canonical else "")
    return _parse_slow(number, base, exponent, fmt)


def _parse_slow(number: str, base: int, exponent: int, fmt: str) -> Quantity:
    """Upstream's inf.Dec path: exact value, nano round-up, BinarySI cap and format fallback."""
    negative = number[:1] == "-"
    unsigned = number[1:] if number[:1] in ("+", "-") else number
    whole, _, fraction = unsigned.partition(".")
    digits = whole + fraction
    if not digits:
        raise QuantityError(ERR_NUMERIC)
    magnitude = _int_from_digits(digits)
    if base == 10:
        exp = exponent - len(fraction)
    else:
        magnitude <<= exponent
        exp = -len(fraction)
    if magnitude == 0:
        # Zero is not rounded, so Go keeps the inf.Dec's own scale.
        return Quantity._make(0, 0, fmt, True, exp, "")
    stripped = len(digits) - len(digits.rstrip("0")) if base == 10 else 0
    if stripped:
        magnitude //= 10**stripped
        exp += stripped
    magnitude, exp = _round_up_to_nano(magnitude, exp)
    go_scale = _NANO_EXPONENT
    if fmt == BINARY_SI and _compare_magnitudes(magnitude, exp, INT64_MAX, 0) > 0:
        magnitude, exp, go_scale = INT64_MAX, 0, 0
    elif fmt == BINARY_SI and _compare_magnitudes(magnitude, exp, 1, 0) < 0:
        fmt = DECIMAL_SI
    coef, exp = _strip_tens(-magnitude if negative else magnitude, exp)
    return Quantity._make(coef, exp, fmt, True, go_scale, "")


def _compare_magnitudes(coef_a: int, exp_a: int, coef_b: int, exp_b: int) -> int:
    """Compare coef_a*10**exp_a with coef_b*10**exp_b for coef_a, coef_b > 0."""
    order_a = _digit_count(coef_a) + exp_a
    order_b = _digit_count(coef_b) + exp_b
    if order_a != order_b:
        return 1 if order_a > order_b else -1
    # Same order of magnitude: the exponent gap is at most the longer digit count.
    if exp_a > exp_b:
        coef_a *= 10 ** (exp_a - exp_b)
    else:
        coef_b *= 10 ** (exp_b - exp_a)
    return (coef_a > coef_b) - (coef_a < coef_b)


@lru_cache(maxsize=8192)
def _parse_cached(text: str) -> Quantity:
    # Quantities are immutable and device capacities repeat a lot ("80Gi" x 100k devices).
    return _parse(text)


def parse_quantity(text: str) -> Quantity:
    """Alias of :meth:`Quantity.parse`."""
    return Quantity.parse(text)


# ---------------------------------------------------------------------------
# the value type
# ---------------------------------------------------------------------------


class Quantity:
    """An exact, immutable Kubernetes quantity; ordered, equal and hashed by exact value.

    ``Quantity("1Gi") == Quantity("1073741824") == 1073741824``. Equality ignores the
    format; :meth:`same_representation` is Go's struct ``==``.
    """

    __slots__ = ("_coef", "_dec", "_exp", "_go_scale", "_hash", "_nanos", "_s", "_str", "format")

    _coef: int  # value == _coef * 10**_exp, _coef free of factors 10 (zero: 0, 0)
    _exp: int
    format: str  # DecimalSI | BinarySI | DecimalExponent
    _dec: bool  # Go holds an inf.Dec (True) or an int64Amount (False)
    _go_scale: int  # Go's unit as a power of ten: int64Amount.scale, or -inf.Dec.Scale()
    _s: str  # the string Go cached at parse time ("" when none)
    _str: str | None
    _hash: int | None
    _nanos: int | None

    def __new__(cls, text: str) -> Quantity:
        """``Quantity("1Gi")`` is ``Quantity.parse("1Gi")``."""
        return cls.parse(text)

    @classmethod
    def _make(cls, coef: int, exp: int, fmt: str, dec: bool, go_scale: int, s: str) -> Quantity:
        self = object.__new__(cls)
        setter = object.__setattr__
        setter(self, "_coef", coef)
        setter(self, "_exp", exp)
        setter(self, "format", fmt)
        setter(self, "_dec", dec)
        setter(self, "_go_scale", go_scale)
        setter(self, "_s", s)
        setter(self, "_str", s or None)
        setter(self, "_hash", None)
        setter(self, "_nanos", None)
        return self

    # -- construction -------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Upstream ``ParseQuantity``: grammar, rounding, caps and errors exactly.

        Surrounding whitespace is an error here; upstream's ``UnmarshalJSON`` trims it
        first, so object decoders should use :meth:`from_json`. Raises
        :class:`~draspeed.errors.QuantityError` with upstream's message. Results are
        cached by string (quantities are immutable).
        """
        try:
            return _parse_cached(text)
        except TypeError:  # (told here, off the path of every quantity parsed)
            if isinstance(text, str):
                raise
            raise _not_text(text) from None

    @classmethod
    def from_json(cls, text: str) -> Quantity:
        """``UnmarshalJSON`` of a JSON string's content: Go ``TrimSpace`` of its text as
        JSON writes it (a tab is ``\\t`` there, and stays), then :meth:`parse`."""
        if not isinstance(text, str):
            raise _not_text(text)
        return _parse_cached(text.strip(_GO_SPACE_UNESCAPED))

    @classmethod
    def zero(cls) -> Quantity:
        """Go's zero ``resource.Quantity``: what a JSON null, or an absent field, of a
        Quantity value decodes into. Go leaves its format unset, which nothing shows
        (a zero prints as "0", and a sum with it takes the other operand's format);
        here it is DecimalSI."""
        return cls._make(0, 0, DECIMAL_SI, False, 0, "")

    @classmethod
    def from_int(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity(value, format)``; beyond int64 it models an inf.Dec."""
        _check_format(format)
        try:
            value = operator.index(value)  # (int(1.5) would round: a whole number is asked for)
        except TypeError:
            raise TypeError(f"value: expected an int, got {type_name(value)}") from None
        coef, exp = _strip_tens(value, 0)
        return cls._make(coef, exp, format, not _fits_int64(value), 0, "")

    @classmethod
    def from_nanos(cls, nanos: int, format: str = DECIMAL_SI) -> Quantity:
        """``nanos * 1e-9``, held like ``NewScaledQuantity(nanos, Nano)`` with ``format``."""
        _check_format(format)
        try:
            nanos = operator.index(nanos)  # (int(1.5) would round: a whole number is asked for)
        except TypeError:
            raise TypeError(f"nanos: expected an int, got {type_name(nanos)}") from None
        coef, exp = _strip_tens(nanos, _NANO_EXPONENT)
        return cls._make(coef, exp, format, not _fits_int64(nanos), _NANO_EXPONENT, "")

    # -- exact value --------------------------------------------------------

    @property
    def nanos(self) -> int:
        """The exact value in units of 1e-9 (every quantity is a whole number of nanos)."""
        found = self._nanos
        if found is None:
            # Remembered: allocation reads the same (shared) quantities very often.
            found = self._coef * _pow10(self._exp - _NANO_EXPONENT)
            object.__setattr__(self, "_nanos", found)
        return found

    @classmethod
    def from_inf_dec(cls, coef: int, exp: int, go_scale: int, format: str) -> Quantity:
        """``coef * 10**exp`` held as Go holds an inf.Dec of unit ``10**go_scale``
        (``exp >= go_scale``; nothing is written out)."""
        _check_format(format)
        coef, exp = _strip_tens(coef, exp)
        return cls._make(coef, exp, format, True, go_scale, "")

    @property
    def go_scale(self) -> int:
        """Go's unit as a power of ten: ``int64Amount.scale``, or ``-inf.Dec.Scale()``."""
        return self._go_scale

    @property
    def decimal(self) -> tuple[int, int]:
        """(coef, exp) with ``coef * 10**exp`` the exact value, coef free of factors 10
        (zero: (0, 0)): the value without writing out ``10**exp``."""
        return self._coef, self._exp

    def nanos_below(self, digits: int) -> int | None:
        """:attr:`nanos` if its magnitude is below ``10**digits``, else None (told from
        the digit count, without materialising the value)."""
        coef = self._coef
        if coef and _digit_count(abs(coef)) + self._exp - _NANO_EXPONENT > digits:
            return None  # at least 10**digits
        return self.nanos

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._coef > 0) - (self._coef < 0)

    def is_zero(self) -> bool:
        return self._coef == 0

    def value(self) -> int:
        """``Value()``: the exact value rounded up, away from zero, to an integer.

        An unbounded Python int; :meth:`go_value` is the int64 Go returns.
        """
        return self._scaled_ceiling(0)

    def milli_value(self) -> int:
        """``MilliValue()``: ceil(value * 1000) away from zero, unbounded."""
        return self._scaled_ceiling(-3)

    def _scaled_ceiling(self, unit_exp: int) -> int:
        shift = self._exp - unit_exp
        if shift >= 0:
            return self._coef * _pow10(shift)
        magnitude = abs(self._coef)
        if -shift > _digit_count(magnitude):
            quotient, remainder = 0, magnitude
        else:
            quotient, remainder = divmod(magnitude, 10**-shift)
        quotient += 1 if remainder else 0
        return quotient if self._coef > 0 else -quotient

    def as_approximate_float(self) -> float:
        """``AsApproximateFloat64()`` bit for bit (Go's own representation and Pow10)."""
        exponent = self._go_scale
        if self._coef == 0:
            base = 0.0
        elif self._exp - exponent > 400:
            base = float("inf") if self._coef > 0 else float("-inf")
        else:
            base = _float_of_int(self._go_unscaled())
        if exponent == 0:
            return base
        return base * _go_pow10(exponent)

    # -- CEL integer semantics (Go AsInt64) ---------------------------------

    def is_integer(self) -> bool:
        """CEL ``isInteger()`` = Go ``AsInt64()`` succeeding.

        Representation-dependent upstream: false for every inf.Dec value (slow-path parses
        such as ``"100Ti"`` or ``"1.5Gi"``, int64 overflows) and every negative scale
        (``"1000m"``, ``"0m"``), even when the value is a whole number.
        """
        return self._as_int64() is not None

    def as_integer(self) -> int:
        """CEL ``asInteger()``; raises QuantityError("cannot convert value to integer")."""
        result = self._as_int64()
        if result is None:
            raise QuantityError(ERR_NOT_INTEGER)
        return result

    def _as_int64(self) -> int | None:
        if self._dec or self._go_scale < 0:
            return None
        if self._coef == 0:
            return 0
        if self._exp > 19:
            return None
        result = self._coef * 10**self._exp
        return result if _fits_int64(result) else None

    # -- Go int64 accessors ---------------------------------------------------

    def go_value(self) -> int:
        """Go ``Value()`` as an int64: rounded away from zero, saturated at the int64 rails.

        This is upstream after kubernetes#138510 (negative inf.Dec values round away from
        zero; before, ``-1n`` gave 1) and kubernetes#141305 (overflow saturates instead of
        wrapping). Use it where the allocator does int64 arithmetic on ``Value()``.
        """
        return self.go_scaled_value(0)

    def go_milli_value(self) -> int:
        """Go ``MilliValue()``: :meth:`milli_value` saturated at the int64 rails."""
        return self.go_scaled_value(-3)

    def go_scaled_value(self, scale: int) -> int:
        """Go ``ScaledValue(scale)``: ceil(value / 10**scale) away from zero, saturated."""
        if self._exp - scale > 19:  # |value| >= 10**20 units: beyond int64 for sure
            return INT64_MAX if self._coef > 0 else INT64_MIN
        return max(INT64_MIN, min(INT64_MAX, self._scaled_ceiling(scale)))

    def _go_unscaled(self) -> int:
        """Go's integer: int64Amount.value, or the inf.Dec unscaled big.Int."""
        return self._coef * _pow10(self._exp - self._go_scale) if self._coef else 0

    # -- representation -----------------------------------------------------

    @property
    def is_dec_form(self) -> bool:
        """True when upstream holds this value as an inf.Dec rather than an int64Amount."""
        return self._dec

    def as_dec_form(self) -> Quantity:
        """The same quantity after Go's in-place ``AsDec()`` (which ``Cmp`` does to its
        receiver when either side is an inf.Dec); only :meth:`is_integer` can tell."""
        if self._dec:
            return self
        return Quantity._make(self._coef, self._exp, self.format, True, self._go_scale, self._s)

    def same_representation(self, other: Quantity) -> bool:
        """Go ``==`` on two ``resource.Quantity`` structs (upstream ``violatesPolicy``).

        Go compares the int64Amount (value and scale), the inf.Dec *pointer*, the cached
        string and the format. A copy made with ``DeepCopy`` gets a fresh inf.Dec pointer, so
        inf.Dec values are never equal here; int64Amount values are equal when value,
        scale, cached string (what the parser kept: ``"1Gi"`` keeps it, ``"1024Mi"`` not)
        and format all match. Assumes nobody called Go's ``String()`` in between, which
        would fill the cached string.
        """
        _quantity(other)
        return (
            not self._dec
            and not other._dec
            and self._coef == other._coef
            and self._exp == other._exp
            and self._go_scale == other._go_scale
            and self._s == other._s
            and self.format == other.format
        )

    # -- arithmetic ---------------------------------------------------------

    def add(self, other: Quantity) -> Quantity:
        """``q.Add(y)`` on a copy: exact; keeps this format unless this value is zero."""
        return self._combine(other, _quantity(other)._coef)

    def sub(self, other: Quantity) -> Quantity:
        """``q.Sub(y)`` on a copy: exact; keeps this format unless this value is zero."""
        return self._combine(other, -_quantity(other)._coef)

    def neg(self) -> Quantity:
        """``q.Neg()`` on a copy (exact, as since kubernetes#141264)."""
        dec = self._dec or not _fits_int64(-self._go_unscaled())
        return Quantity._make(-self._coef, self._exp, self.format, dec, self._go_scale, "")

    def _combine(self, other: Quantity, other_coef: int) -> Quantity:
        fmt = other.format if self._coef == 0 else self.format
        if other_coef == 0:
            coef, exp = self._coef, self._exp
        elif self._coef == 0:
            coef, exp = other_coef, other._exp
        else:
            low = min(self._exp, other._exp)
            total = self._coef * _pow10(self._exp - low) + other_coef * _pow10(other._exp - low)
            coef, exp = _strip_tens(total, low)
        if not self._dec and not other._dec:
            int_scale = self._int64_sum_scale(other, other_coef)
            if int_scale is not None:
                return Quantity._make(coef, exp, fmt, False, int_scale, "")
        # inf.Dec addition keeps the larger inf scale, i.e. the smaller unit.
        return Quantity._make(coef, exp, fmt, True, min(self._go_scale, other._go_scale), "")

    def _int64_sum_scale(self, other: Quantity, other_coef: int) -> int | None:
        """The scale of Go's int64Amount.Add result, or None when Go falls back to inf.Dec."""
        a_value, a_scale = self._go_unscaled(), self._go_scale
        b_value = other_coef * _pow10(other._exp - other._go_scale) if other_coef else 0
        b_scale = other._go_scale
        if not _fits_int64(b_value):
            return None  # -(-2**63): exact since kubernetes#141264, so beyond int64
        if b_value == 0:
            return a_scale
        if a_value == 0:
            return b_scale
        if a_scale == b_scale:
            return a_scale if _fits_int64(a_value + b_value) else None
        if a_scale > b_scale:
            scaled = _int64_scaled(a_value, a_scale - b_scale)
            low_scale, other_value = b_scale, b_value
        else:
            scaled = _int64_scaled(b_value, b_scale - a_scale)
            low_scale, other_value = a_scale, a_value
        if scaled is None or not _fits_int64(scaled + other_value):
            return None
        return low_scale

    # -- comparison ---------------------------------------------------------

    def cmp(self, other: Quantity | int) -> int:
        """``Cmp``: -1, 0 or 1 by exact value."""
        coef, exp = _coerce(other)
        return _compare(self._coef, self._exp, coef, exp)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._coef == other._coef and self._exp == other._exp
        if isinstance(other, int):
            return (self._coef, self._exp) == _strip_tens(other, 0)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __lt__(self, other: Quantity | int) -> bool:
        if not isinstance(other, (Quantity, int)):
            return NotImplemented
        return self.cmp(other) < 0

    def __le__(self, other: Quantity | int) -> bool:
        if not isinstance(other, (Quantity, int)):
            return NotImplemented
        return self.cmp(other) <= 0

    def __gt__(self, other: Quantity | int) -> bool:
        if not isinstance(other, (Quantity, int)):
            return NotImplemented
        return self.cmp(other) > 0

    def __ge__(self, other: Quantity | int) -> bool:
        if not isinstance(other, (Quantity, int)):
            return NotImplemented
        return self.cmp(other) >= 0

    def __hash__(self) -> int:
        # Python's numeric hash, so a whole quantity hashes like the equal int (and any
        # value like the equal Fraction) without materialising 10**exp.
        cached = self._hash
        if cached is None:
            residue = abs(self._coef) % _HASH_MODULUS * pow(10, self._exp, _HASH_MODULUS)
            cached = residue % _HASH_MODULUS
            cached = -cached if self._coef < 0 else cached
            cached = -2 if cached == -1 else cached
            object.__setattr__(self, "_hash", cached)
        return cached

    # -- text ---------------------------------------------------------------

    def __str__(self) -> str:
        """Upstream ``String()``: the cached parse string or the canonical form."""
        cached = self._str
        if cached is None:
            cached = self._canonical()
            object.__setattr__(self, "_str", cached)
        return cached

    def to_json(self) -> str:
        """What ``MarshalJSON`` puts between the quotes (same as ``str()``)."""
        return str(self)

    def canonical(self) -> str:
        """``CanonicalizeBytes`` ignoring the cached parse string."""
        return self._canonical()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, format={self.format!r})"

    def _canonical(self) -> str:
        if self._coef == 0:
            return "0"
        if self.format == BINARY_SI and self._exp >= 0:
            whole = self._coef * _pow10(self._exp)
            if abs(whole) >= 1024:
                return _binary_text(whole)
        return _decimal_text(self._coef, self._exp, self.format == DECIMAL_EXPONENT)

    # -- plumbing -----------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Quantity is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        state = (self._coef, self._exp, self.format, self._dec, self._go_scale, self._s)
        return (_restore, state)

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self


def _restore(coef: int, exp: int, fmt: str, dec: bool, go_scale: int, s: str) -> Quantity:
    return Quantity._make(coef, exp, fmt, dec, go_scale, s)


def _check_format(fmt: str) -> None:
    if not isinstance(fmt, str) or fmt not in FORMATS:
        allowed = ", ".join(sorted(FORMATS))
        if not isinstance(fmt, str):
            raise TypeError(f"format: expected one of {allowed}, got {type_name(fmt)}")
        raise QuantityError(f"format: unknown quantity format {fmt!r}; expected one of {allowed}")


def _not_text(text: object) -> TypeError:
    return TypeError(f"text: expected a quantity's text (a str), got {type_name(text)}")


def _quantity(other: object, name: str = "other") -> Quantity:
    if not isinstance(other, Quantity):
        raise TypeError(f"{name}: expected a Quantity, got {type_name(other)}")
    return other


def _coerce(other: Quantity | int) -> tuple[int, int]:
    if isinstance(other, Quantity):
        return other._coef, other._exp
    if isinstance(other, int):
        return _strip_tens(other, 0)
    raise TypeError(f"other: expected a Quantity or an int, got {type_name(other)}")


def _compare(coef_a: int, exp_a: int, coef_b: int, exp_b: int) -> int:
    sign_a = (coef_a > 0) - (coef_a < 0)
    sign_b = (coef_b > 0) - (coef_b < 0)
    if sign_a != sign_b:
        return 1 if sign_a > sign_b else -1
    if sign_a == 0:
        return 0
    if -40 < exp_a < 40 and -40 < exp_b < 40:
        low = min(exp_a, exp_b)
        a = coef_a * 10 ** (exp_a - low)
        b = coef_b * 10 ** (exp_b - low)
        return (a > b) - (a < b)
    result = _compare_magnitudes(abs(coef_a), exp_a, abs(coef_b), exp_b)
    return result if sign_a > 0 else -result


def _decimal_text(coef: int, exp: int, exponent_format: bool) -> str:
    """Mantissa and suffix with the exponent lowered to a multiple of three."""
    lower = exp % 3
    mantissa = abs(coef) * 10**lower
    exp -= lower
    sign = "-" if coef < 0 else ""
    if exponent_format:
        suffix = f"e{exp}" if exp else ""
    else:
        # Past "E" upstream now falls back to e-notation (kubernetes#140459).
        found = _DECIMAL_SUFFIX_OF_EXPONENT.get(exp)
        suffix = found if found is not None else f"e{exp}"
    return f"{sign}{decimal_digits(mantissa)}{suffix}"


def _binary_text(whole: int) -> str:
    """A whole BinarySI value >= 1024 in magnitude: largest power of 1024 that divides."""
    magnitude = abs(whole)
    power = 0
    while magnitude % 1024 == 0:
        magnitude //= 1024
        power += 1
    if power == 0:
        return _decimal_int_text(whole)
    suffix = _BINARY_SUFFIX_OF_POWER.get(power)
    if suffix is None:
        # Beyond Ei: exact base-10 canonical form in e-notation (kubernetes#140459).
        coef, exp = _strip_tens(whole, 0)
        return _decimal_text(coef, exp, True)
    sign = "-" if whole < 0 else ""
    return f"{sign}{decimal_digits(magnitude)}{suffix}"


def _decimal_int_text(whole: int) -> str:
    return ("-" if whole < 0 else "") + decimal_digits(abs(whole))
