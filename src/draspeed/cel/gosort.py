"""Go's ``sort.Slice``: pattern-defeating quicksort, not stable.

cel-go's lists extension sorts (``sort()``, ``sortBy()``) with ``sort.Slice``, so the order
of equal keys in lists longer than 12 is whatever Go's pdqsort leaves -- visible in a
selector such as ``lists.range(20).sortBy(x, x % 2)``. Python's sort is stable and would
order ties differently, so this module follows Go's algorithm step for step (insertion
sort up to 12 elements, median-of-three or ninther pivots, partial insertion sort on
nearly sorted input, the equal-elements partition, pattern breaking with Go's xorshift,
heapsort after too many bad pivots). ``less(i, j)`` and ``swap(i, j)`` act on positions.
"""

from __future__ import annotations

from collections.abc import Callable

Less = Callable[[int, int], bool]
Swap = Callable[[int, int], None]

_MASK64 = (1 << 64) - 1
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


def sort_slice(n: int, less: Less, swap: Swap) -> None:
    """Sort positions 0..n-1 as Go's ``sort.Slice`` does."""
    _Sorter(less, swap).pdqsort(0, n, n.bit_length())


class _Sorter:
    def __init__(self, less: Less, swap: Swap) -> None:
        self.less = less
        self.swap = swap

    def insertion_sort(self, a: int, b: int) -> None:
        less, swap = self.less, self.swap
        for i in range(a + 1, b):
            j = i
            while j > a and less(j, j - 1):
                swap(j, j - 1)
                j -= 1

    def sift_down(self, lo: int, hi: int, first: int) -> None:
        root = lo
        while True:
            child = 2 * root + 1
            if child >= hi:
                return
            if child + 1 < hi and self.less(first + child, first + child + 1):
                child += 1
            if not self.less(first + root, first + child):
                return
            self.swap(first + root, first + child)
            root = child

    def heap_sort(self, a: int, b: int) -> None:
        first, hi = a, b - a
        for i in range((hi - 1) // 2, -1, -1):
            self.sift_down(i, hi, first)
        for i in range(hi - 1, -1, -1):
            self.swap(first, first + i)
            self.sift_down(0, i, first)

    def pdqsort(self, a: int, b: int, limit: int) -> None:
        was_balanced = True
        was_partitioned = True
        while True:
            length = b - a
            if length <= 12:
                self.insertion_sort(a, b)
                return
            if limit == 0:
                self.heap_sort(a, b)
                return
            if not was_balanced:
                self.break_patterns(a, b)
                limit -= 1
            pivot, hint = self.choose_pivot(a, b)
            if hint == _DECREASING:
                self.reverse_range(a, b)
                pivot = (b - 1) - (pivot - a)
                hint = _INCREASING
            if (
                was_balanced
                and was_partitioned
                and hint == _INCREASING
                and self.partial_insertion_sort(a, b)
            ):
                return
            if a > 0 and not self.less(a - 1, pivot):
                a = self.partition_equal(a, b, pivot)
                continue
            mid, already = self.partition(a, b, pivot)
            was_partitioned = already
            left, right = mid - a, b - mid
            threshold = length // 8
            if left < right:
                was_balanced = left >= threshold
                self.pdqsort(a, mid, limit)
                a = mid + 1
            else:
                was_balanced = right >= threshold
                self.pdqsort(mid + 1, b, limit)
                b = mid

    def partition(self, a: int, b: int, pivot: int) -> tuple[int, bool]:
        less, swap = self.less, self.swap
        swap(a, pivot)
        i, j = a + 1, b - 1
        while i <= j and less(i, a):
            i += 1
        while i <= j and not less(j, a):
            j -= 1
        if i > j:
            swap(j, a)
            return j, True
        swap(i, j)
        i += 1
        j -= 1
        while True:
            while i <= j and less(i, a):
                i += 1
            while i <= j and not less(j, a):
                j -= 1
            if i > j:
                break
            swap(i, j)
            i += 1
            j -= 1
        swap(j, a)
        return j, False

    def partition_equal(self, a: int, b: int, pivot: int) -> int:
        less, swap = self.less, self.swap
        swap(a, pivot)
        i, j = a + 1, b - 1
        while True:
            while i <= j and not less(a, i):
                i += 1
            while i <= j and less(a, j):
                j -= 1
            if i > j:
                return i
            swap(i, j)
            i += 1
            j -= 1

    def partial_insertion_sort(self, a: int, b: int) -> bool:
        less, swap = self.less, self.swap
        i = a + 1
        for _ in range(5):
            while i < b and not less(i, i - 1):
                i += 1
            if i == b:
                return True
            if b - a < 50:
                return False
            swap(i, i - 1)
            if i - a >= 2:
                # Go shifts down to index 1 here (not to a + 1).
                for j in range(i - 1, 0, -1):
                    if not less(j, j - 1):
                        break
                    swap(j, j - 1)
            if b - i >= 2:
                for j in range(i + 1, b):
                    if not less(j, j - 1):
                        break
                    swap(j, j - 1)
        return False

    def break_patterns(self, a: int, b: int) -> None:
        length = b - a
        if length < 8:
            return
        state = length
        modulus = 1 << length.bit_length()
        for idx in range(a + (length // 4) * 2 - 1, a + (length // 4) * 2 + 2):
            state ^= (state << 13) & _MASK64
            state ^= state >> 7
            state ^= (state << 17) & _MASK64
            other = state & (modulus - 1)
            if other >= length:
                other -= length
            self.swap(idx, a + other)

    def choose_pivot(self, a: int, b: int) -> tuple[int, int]:
        length = b - a
        swaps = [0]
        i, j, k = a + length // 4, a + length // 4 * 2, a + length // 4 * 3
        if length >= 8:
            if length >= 50:
                i = self.median(i - 1, i, i + 1, swaps)
                j = self.median(j - 1, j, j + 1, swaps)
                k = self.median(k - 1, k, k + 1, swaps)
            j = self.median(i, j, k, swaps)
        if swaps[0] == 0:
            return j, _INCREASING
        if swaps[0] == 12:
            return j, _DECREASING
        return j, _UNKNOWN

    def median(self, a: int, b: int, c: int, swaps: list[int]) -> int:
        a, b = self.order2(a, b, swaps)
        b, c = self.order2(b, c, swaps)
        a, b = self.order2(a, b, swaps)
        return b

    def order2(self, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
        if self.less(b, a):
            swaps[0] += 1
            return b, a
        return a, b

    def reverse_range(self, a: int, b: int) -> None:
        i, j = a, b - 1
        while i < j:
            self.swap(i, j)
            i += 1
            j -= 1
