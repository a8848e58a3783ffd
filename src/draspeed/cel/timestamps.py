"""CEL's ``google.protobuf.Timestamp`` and ``google.protobuf.Duration`` as cel-go has them.

Values: :class:`Duration` is a signed int64 count of nanoseconds (Go's time.Duration);
:class:`Timestamp` is an instant in nanoseconds since the Unix epoch, years 0001-9999,
plus the UTC offset it prints with (a timestamp parsed from ``...+01:00`` prints as
``+01:00``, as Go keeps the parsed zone; arithmetic keeps it; ``timestamp(int)`` is UTC).

Functions and overloads (cel-go ``common/stdlib/standard.go``, ``common/types/
{timestamp,duration,overflow}.go``): ``timestamp(string|int|timestamp)``,
``duration(string|int|duration)``, ``int()`` and ``string()`` of both, ``+``, ``-``
(timestamp±duration, timestamp-timestamp, duration±duration, negation), ordering and
equality, and the accessors getFullYear, getMonth, getDayOfYear, getDayOfMonth, getDate,
getDayOfWeek, getHours, getMinutes, getSeconds, getMilliseconds -- on timestamps in UTC
(Kubernetes sets DefaultUTCTimeZone) or in a zone given as an IANA name or a ``±hh:mm``
offset, on durations as whole hours/minutes/seconds/milliseconds.

Parsing is Go's: ``time.Parse(time.RFC3339, s)`` (with its leniencies: a one-digit hour,
a comma before the fraction, fraction digits beyond nine ignored, offsets up to 24:60) and
``time.ParseDuration``. Errors carry cel-go's texts.
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from decimal import Decimal
from functools import lru_cache
from typing import Any

from draspeed.cel.extensions import SUM_ZEROS
from draspeed.cel.functions import declare, register_guarded
from draspeed.cel.stdlib import (
    ADD_HOOKS,
    CONVERSION_HOOKS,
    NEG_HOOKS,
    ORDER_TYPES,
    SUB_HOOKS,
    conversion_error,
)
from draspeed.cel.values import (
    INT64_MAX,
    INT64_MIN,
    RECEIVER_TYPES,
    EvalError,
    no_such_overload,
    type_name,
)

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
# Seconds from the Unix epoch to 0001-01-01T00:00:00Z and to 9999-12-31T23:59:59Z.
MIN_UNIX = -62135596800
MAX_UNIX = 253402300799

TIMESTAMP_TYPE = "google.protobuf.Timestamp"
DURATION_TYPE = "google.protobuf.Duration"

_INT_OVERFLOW = "integer overflow"
_TIMESTAMP_OVERFLOW = "timestamp overflow"


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_rem(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _int64(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise EvalError(_INT_OVERFLOW)


# ---- values -----------------------------------------------------------------------


class Duration:
    """A CEL duration: signed nanoseconds within int64."""

    __slots__ = ("ns",)
    cel_type_name = DURATION_TYPE

    def __init__(self, ns: int) -> None:
        self.ns = ns

    def __eq__(self, other: object) -> bool:
        return type(other) is Duration and other.ns == self.ns

    def __hash__(self) -> int:
        return hash(("duration", self.ns))

    def __lt__(self, other: Duration) -> bool:
        return self.ns < other.ns

    def __gt__(self, other: Duration) -> bool:
        return self.ns > other.ns

    def __repr__(self) -> str:
        return f"duration({duration_text(self)!r})"

    def cel_is_zero(self) -> bool:
        return self.ns == 0

    def cel_string(self) -> str:
        return duration_text(self)


class Timestamp:
    """A CEL timestamp: nanoseconds since the Unix epoch, and the offset it prints with."""

    __slots__ = ("ns", "offset")
    cel_type_name = TIMESTAMP_TYPE

    def __init__(self, ns: int, offset: int = 0) -> None:
        self.ns = ns
        self.offset = offset  # seconds east of UTC

    def __eq__(self, other: object) -> bool:
        return type(other) is Timestamp and other.ns == self.ns

    def __hash__(self) -> int:
        return hash(("timestamp", self.ns))

    def __lt__(self, other: Timestamp) -> bool:
        return self.ns < other.ns

    def __gt__(self, other: Timestamp) -> bool:
        return self.ns > other.ns

    def __repr__(self) -> str:
        return f"timestamp({timestamp_text(self)!r})"

    def cel_is_zero(self) -> bool:
        # Go's Time.IsZero: the instant 0001-01-01T00:00:00Z.
        return self.ns == MIN_UNIX * SECOND

    def cel_string(self) -> str:
        return timestamp_text(self)


def _checked_timestamp(ns: int, offset: int) -> Timestamp:
    if not MIN_UNIX <= ns // SECOND <= MAX_UNIX:
        raise EvalError(_TIMESTAMP_OVERFLOW)
    return Timestamp(ns, offset)


# ---- civil calendar (proleptic Gregorian, any year) ---------------------------------


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a Gregorian date."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in(month: int, year: int) -> int:
    if month == 2 and _is_leap(year):
        return 29
    return _DAYS_IN_MONTH[month - 1]


class _Civil:
    """The calendar fields of an instant at a UTC offset."""

    __slots__ = ("day", "hour", "minute", "month", "nanos", "second", "weekday", "yday", "year")

    def __init__(self, ns: int, offset: int) -> None:
        seconds, self.nanos = divmod(ns, SECOND)
        days, rest = divmod(seconds + offset, 86400)
        self.year, self.month, self.day = civil_from_days(days)
        self.hour, rest = divmod(rest, 3600)
        self.minute, self.second = divmod(rest, 60)
        self.weekday = (days + 4) % 7  # 1970-01-01 was a Thursday; Sunday is 0
        self.yday = days - days_from_civil(self.year, 1, 1) + 1


# ---- text ------------------------------------------------------------------------


def timestamp_text(t: Timestamp) -> str:
    """Go's ``Format(time.RFC3339Nano)`` in the timestamp's own offset."""
    c = _Civil(t.ns, t.offset)
    text = f"{c.year:04d}-{c.month:02d}-{c.day:02d}T{c.hour:02d}:{c.minute:02d}:{c.second:02d}"
    if c.nanos:
        text += "." + f"{c.nanos:09d}".rstrip("0")
    if t.offset == 0:
        return text + "Z"
    minutes = abs(t.offset) // 60
    return f"{text}{'-' if t.offset < 0 else '+'}{minutes // 60:02d}:{minutes % 60:02d}"


def _go_seconds(ns: int, unit: int) -> float:
    """Go's Duration.Seconds()/Minutes()/Hours(): whole units plus the float remainder."""
    return float(_go_div(ns, unit)) + float(_go_rem(ns, unit)) / float(unit)


def duration_text(d: Duration) -> str:
    """cel-go's string(duration): ``strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"``."""
    text = format(Decimal(repr(_go_seconds(d.ns, SECOND))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "s"


# ---- parsing ---------------------------------------------------------------------


def _digits(s: str, i: int, n: int) -> int | None:
    """The ``n`` ASCII digits of ``s`` at ``i`` as a number, or None."""
    part = s[i : i + n]
    if len(part) != n or not all("0" <= c <= "9" for c in part):
        return None
    return int(part)


def parse_rfc3339(s: str) -> tuple[int, int] | None:
    """Go's ``time.Parse(time.RFC3339, s)``: (nanoseconds since the epoch, offset seconds)
    or None where Go reports a parse error."""
    year = _digits(s, 0, 4)
    if year is None or s[4:5] != "-":
        return None
    month = _digits(s, 5, 2)
    if month is None or not 1 <= month <= 12 or s[7:8] != "-":
        return None
    day = _digits(s, 8, 2)
    if day is None or s[10:11] != "T":
        return None
    i = 11
    hour = _digits(s, i, 2)
    if hour is not None:
        i += 2
    else:  # Go's "15" takes one digit too
        hour = _digits(s, i, 1)
        if hour is None:
            return None
        i += 1
    if hour >= 24 or s[i : i + 1] != ":":
        return None
    minute = _digits(s, i + 1, 2)
    if minute is None or minute >= 60 or s[i + 3 : i + 4] != ":":
        return None
    second = _digits(s, i + 4, 2)
    if second is None or second >= 60:
        return None
    i += 6
    nanos = 0
    if s[i : i + 1] in (".", ",") and "0" <= s[i + 1 : i + 2] <= "9" and s[i + 1 : i + 2]:
        j = i + 1
        while j < len(s) and "0" <= s[j] <= "9":
            j += 1
        digits = s[i + 1 : j][:9]
        nanos = int(digits) * 10 ** (9 - len(digits))
        i = j
    rest = s[i:]
    if rest.startswith("Z"):
        offset = 0
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3] != ":":
            return None
        oh = _digits(rest, 1, 2)
        om = _digits(rest, 4, 2)
        if oh is None or om is None or oh > 24 or om > 60 or rest[0] not in "+-":
            return None
        offset = (oh * 60 + om) * 60 * (-1 if rest[0] == "-" else 1)
        rest = rest[6:]
    if rest or day < 1 or day > _days_in(month, year):
        return None
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return (seconds - offset) * SECOND + nanos, offset


_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_U64 = 1 << 64
_2_63 = 1 << 63


def parse_go_duration(text: str) -> int | None:
    """Go's ``time.ParseDuration``: nanoseconds, or None where Go reports an error.

    Go works on bytes in uint64 with its own overflow checks (and one wrap-around, which
    is reproduced); the same checks are made here on the UTF-8 bytes.
    """
    s = text.encode("utf-8")
    neg = False
    if s[:1] in (b"-", b"+"):
        neg = s[:1] == b"-"
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        return None
    total = 0
    while s:
        if not (s[:1] == b"." or b"0" <= s[:1] <= b"9"):
            return None
        i = 0
        v = 0
        while i < len(s) and 48 <= s[i] <= 57:
            if v > _2_63 // 10:
                return None
            v = v * 10 + s[i] - 48
            if v > _2_63:
                return None
            i += 1
        pre = i > 0
        s = s[i:]
        frac, scale, post = 0, 1.0, False
        if s[:1] == b".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and 48 <= s[i] <= 57:
                if not overflow:
                    if frac > (_2_63 - 1) // 10:
                        overflow = True
                    else:
                        y = frac * 10 + s[i] - 48
                        if y > _2_63:
                            overflow = True
                        else:
                            frac = y
                            scale *= 10
                i += 1
            post = i > 0
            s = s[i:]
        if not pre and not post:
            return None
        i = 0
        while i < len(s) and not (s[i] == 46 or 48 <= s[i] <= 57):
            i += 1
        if i == 0:
            return None
        unit = _UNITS.get(s[:i].decode("utf-8", "replace"))
        s = s[i:]
        if unit is None:
            return None
        if v > _2_63 // unit:
            return None
        v *= unit
        if frac > 0:
            v += int(float(frac) * (float(unit) / scale))
            if v > _2_63:
                return None
        total = (total + v) % _U64  # Go's uint64 addition
        if total > _2_63:
            return None
    if neg:
        return -total if total != _2_63 else INT64_MIN
    if total > INT64_MAX:
        return None
    return total


# ---- conversions -----------------------------------------------------------------


def to_timestamp(v: Any) -> Timestamp:
    t = type(v)
    if t is Timestamp:
        return v
    if t is str:
        parsed = parse_rfc3339(v)
        if parsed is None:
            raise conversion_error(v, TIMESTAMP_TYPE)
        return _checked_timestamp(*parsed)
    if t is int:
        if not MIN_UNIX <= v <= MAX_UNIX:
            raise EvalError(_TIMESTAMP_OVERFLOW)
        return Timestamp(v * SECOND)
    raise no_such_overload(f"timestamp({type_name(v)})")


def to_duration(v: Any) -> Duration:
    t = type(v)
    if t is Duration:
        return v
    if t is str:
        ns = parse_go_duration(v)
        if ns is None:
            raise conversion_error(v, DURATION_TYPE)
        return Duration(ns)
    if t is int:
        # Declared (int64_to_duration) but cel-go's Int has no conversion to Duration.
        raise conversion_error(v, DURATION_TYPE)
    raise no_such_overload(f"duration({type_name(v)})")


def _timestamp_to_int(t: Timestamp) -> int:
    return t.ns // SECOND


def _duration_to_int(d: Duration) -> int:
    return d.ns


# ---- arithmetic ------------------------------------------------------------------


def _add_duration_duration(a: Duration, b: Duration) -> Duration:
    return Duration(_int64(a.ns + b.ns))


def _sub_duration_duration(a: Duration, b: Duration) -> Duration:
    return Duration(_int64(a.ns - b.ns))


def _neg_duration(a: Duration) -> Duration:
    return Duration(_int64(-a.ns))


def _add_timestamp_duration(t: Timestamp, d: Duration) -> Timestamp:
    return _checked_timestamp(t.ns + d.ns, t.offset)


def _add_duration_timestamp(d: Duration, t: Timestamp) -> Timestamp:
    return _add_timestamp_duration(t, d)


def _sub_timestamp_duration(t: Timestamp, d: Duration) -> Timestamp:
    return _checked_timestamp(t.ns + _int64(-d.ns), t.offset)


def _sub_timestamp_timestamp(a: Timestamp, b: Timestamp) -> Duration:
    seconds = a.ns // SECOND - b.ns // SECOND
    nanos = a.ns % SECOND - b.ns % SECOND
    return Duration(_int64(_int64(seconds * SECOND) + nanos))


# ---- accessors -------------------------------------------------------------------


@lru_cache(maxsize=256)
def _zone(name: str) -> zoneinfo.ZoneInfo | None:
    try:
        return zoneinfo.ZoneInfo(name)
    except Exception:  # not found, or a key zoneinfo refuses
        return None


def _strconv_atoi(text: str) -> int:
    """Go's strconv.Atoi, with its error texts."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise EvalError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise EvalError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def _wrap_int64(v: int) -> int:
    return (v + _2_63) % _U64 - _2_63


def zone_offset(ns: int, tz: str) -> int:
    """Seconds east of UTC of zone ``tz`` at instant ``ns`` (cel-go's inTimeZone)."""
    colon = tz.find(":")
    if colon == -1:
        if tz in ("", "UTC"):
            return 0
        if tz == "Local":
            return _local_offset(ns)
        if ".." in tz or tz[0] in "/\\":
            raise EvalError("time: invalid location name")
        zone = _zone(tz)
        if zone is None:
            raise EvalError(f"unknown time zone {tz}")
        return _offset_in(zone, ns)
    hours = _strconv_atoi(tz[:colon])
    minutes = _strconv_atoi(tz[colon + 1 :])
    offset = hours * 60 - minutes if tz[0] == "-" else hours * 60 + minutes
    # Go: int((time.Duration(offset) * time.Minute).Seconds()), int64 arithmetic.
    return int(_go_seconds(_wrap_int64(_wrap_int64(offset) * MINUTE), SECOND))


def _offset_in(zone: _dt.tzinfo, ns: int) -> int:
    # datetime spans years 1-9999; the zone's offset a day inside that span is the
    # offset at the span's edges too (no zone changes its rules on January 1st of year 1
    # or December 31st of 9999).
    seconds = min(max(ns // SECOND, MIN_UNIX + 86400), MAX_UNIX - 86400)
    local = _dt.datetime.fromtimestamp(seconds, zone)
    delta = local.utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def _local_offset(ns: int) -> int:
    seconds = min(max(ns // SECOND, MIN_UNIX + 86400), MAX_UNIX - 86400)
    delta = _dt.datetime.fromtimestamp(seconds).astimezone().utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def _civil(t: Any, tz: tuple[Any, ...]) -> _Civil:
    if type(t) is not Timestamp:
        raise no_such_overload()
    if not tz:
        return _Civil(t.ns, 0)
    if type(tz[0]) is not str:
        raise no_such_overload()
    return _Civil(t.ns, zone_offset(t.ns, tz[0]))


def get_full_year(t: Any, *tz: Any) -> int:
    return _civil(t, tz).year


def get_month(t: Any, *tz: Any) -> int:
    return _civil(t, tz).month - 1


def get_day_of_year(t: Any, *tz: Any) -> int:
    return _civil(t, tz).yday - 1


def get_day_of_month(t: Any, *tz: Any) -> int:
    return _civil(t, tz).day - 1


def get_date(t: Any, *tz: Any) -> int:
    return _civil(t, tz).day


def get_day_of_week(t: Any, *tz: Any) -> int:
    return _civil(t, tz).weekday


def _duration_part(unit: int) -> Any:
    """Go's int64(d.Hours()) etc.: the float conversion truncated toward zero."""

    def part(d: Duration) -> int:
        return int(_go_seconds(d.ns, unit))

    return part


_DURATION_HOURS = _duration_part(HOUR)
_DURATION_MINUTES = _duration_part(MINUTE)
_DURATION_SECONDS = _duration_part(SECOND)


def get_hours(v: Any, *tz: Any) -> int:
    if type(v) is Duration and not tz:
        return _DURATION_HOURS(v)
    return _civil(v, tz).hour


def get_minutes(v: Any, *tz: Any) -> int:
    if type(v) is Duration and not tz:
        return _DURATION_MINUTES(v)
    return _civil(v, tz).minute


def get_seconds(v: Any, *tz: Any) -> int:
    if type(v) is Duration and not tz:
        return _DURATION_SECONDS(v)
    return _civil(v, tz).second


def get_milliseconds(v: Any, *tz: Any) -> int:
    if type(v) is Duration and not tz:
        return _go_div(v.ns, 1_000_000)
    return _civil(v, tz).nanos // 1_000_000


# ---- registration ----------------------------------------------------------------


def _register() -> None:
    ADD_HOOKS[(Duration, Duration)] = _add_duration_duration
    ADD_HOOKS[(Timestamp, Duration)] = _add_timestamp_duration
    ADD_HOOKS[(Duration, Timestamp)] = _add_duration_timestamp
    SUB_HOOKS[(Duration, Duration)] = _sub_duration_duration
    SUB_HOOKS[(Timestamp, Duration)] = _sub_timestamp_duration
    SUB_HOOKS[(Timestamp, Timestamp)] = _sub_timestamp_timestamp
    NEG_HOOKS[Duration] = _neg_duration
    ORDER_TYPES.update((Duration, Timestamp))
    RECEIVER_TYPES.update((Duration, Timestamp))
    SUM_ZEROS[DURATION_TYPE] = Duration(0)
    CONVERSION_HOOKS[(Timestamp, "int")] = _timestamp_to_int
    CONVERSION_HOOKS[(Duration, "int")] = _duration_to_int
    CONVERSION_HOOKS[(Timestamp, "string")] = timestamp_text
    CONVERSION_HOOKS[(Duration, "string")] = duration_text
    declare(
        "g timestamp(timestamp) -> timestamp\ng timestamp(int) -> timestamp\n"
        "g timestamp(string) -> timestamp",
        to_timestamp,
    )
    declare(
        "g duration(duration) -> duration\ng duration(int) -> duration\n"
        "g duration(string) -> duration",
        to_duration,
    )
    for name, impl in (
        ("getFullYear", get_full_year),
        ("getMonth", get_month),
        ("getDayOfYear", get_day_of_year),
        ("getDayOfMonth", get_day_of_month),
        ("getDate", get_date),
        ("getDayOfWeek", get_day_of_week),
    ):
        declare(f"m timestamp {name}() -> int\nm timestamp {name}(string) -> int", impl)
    for name, accessor in (
        ("getHours", get_hours),
        ("getMinutes", get_minutes),
        ("getSeconds", get_seconds),
        ("getMilliseconds", get_milliseconds),
    ):
        declare(
            f"m timestamp {name}() -> int\nm timestamp {name}(string) -> int\n"
            f"m duration {name}() -> int",
            accessor,
        )


register_guarded(_register)
