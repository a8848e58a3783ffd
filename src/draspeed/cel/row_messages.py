"""Error texts of many rows, kept as codes into a few texts.

A selector that fails on most devices of a cluster (it reads an attribute only some
devices have) fails with one of a few texts: stored as a code per row and the texts
once, its errors cost an array, not a dict entry per device.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import overload

import numpy as np


class RowMessages(Mapping[int, str]):
    """The error text of each erring row: ``rows`` (ascending), each one's 1-based
    ``codes`` into ``texts``. Reads as a read-only ``{row: text}``."""

    __slots__ = ("codes", "rows", "texts")

    def __init__(self, rows: np.ndarray, codes: np.ndarray, texts: list[str]) -> None:
        self.rows = np.asarray(rows, dtype=np.int64)
        self.codes = np.asarray(codes, dtype=np.int32)
        self.texts = texts

    def __getitem__(self, row: int) -> str:
        i = int(np.searchsorted(self.rows, row))
        if i == len(self.rows) or self.rows[i] != row:
            raise KeyError(row)
        return self.texts[int(self.codes[i]) - 1]

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, (int, np.integer)):
            return False
        i = int(np.searchsorted(self.rows, row))
        return i < len(self.rows) and self.rows[i] == row

    def __repr__(self) -> str:
        return f"RowMessages({dict(self.items())!r})"


class TextCodes:
    """A few texts, each with its 1-based code (0 stands for none)."""

    __slots__ = ("codes", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        found = self.codes.get(text)
        if found is None:
            self.texts.append(text)
            found = self.codes[text] = len(self.texts)
        return found


class DeviceMessages:
    """The error text of each device a selector failed on, by global device index:
    a code per device (0: none) and the texts once. Grows with the family's devices."""

    __slots__ = ("_codes", "_texts")

    def __init__(self, n_devices: int) -> None:
        self._codes = np.zeros(n_devices, dtype=np.int32)
        self._texts = TextCodes()

    def cover(self, n_devices: int) -> None:
        """Room for ``n_devices`` devices (under the store's lock)."""
        if len(self._codes) < n_devices:
            bigger = np.zeros(max(n_devices, 2 * len(self._codes)), dtype=np.int32)
            bigger[: len(self._codes)] = self._codes
            self._codes = bigger

    @overload
    def get(self, device: int) -> str | None: ...
    @overload
    def get(self, device: int, default: str) -> str: ...
    def get(self, device: int, default: str | None = None) -> str | None:
        """Device ``device``'s text, or ``default``."""
        code = int(self._codes[device]) if 0 <= device < len(self._codes) else 0
        return self._texts.texts[code - 1] if code else default

    def __setitem__(self, device: int, text: str) -> None:
        self.cover(device + 1)
        self._codes[device] = self._texts.code(text)

    def update(self, first: int, messages: Mapping[int, str]) -> None:
        """Take ``messages`` of rows counted from device ``first``."""
        if isinstance(messages, RowMessages):
            if not len(messages):
                return
            mine = np.asarray([self._texts.code(t) for t in messages.texts], dtype=np.int32)
            self.cover(first + int(messages.rows[-1]) + 1)
            self._codes[first + messages.rows] = mine[messages.codes - 1]
            return
        for row, text in messages.items():
            self[first + row] = text
