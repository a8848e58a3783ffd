# cython: language_level=3
"""Compiled checks of JSON text: nesting depth, duplicate keys, and the items of a list.

msgspec, like every JSON library, keeps the last of two equal keys silently and follows
any nesting depth, so :mod:`draspeed.api.text` measures both on the text itself, in one
pass over its bytes:

- :func:`json_text_check`: whether collections nest deeper than a limit, and whether any
  object repeats a key. Keys are compared as the strings they decode to (escapes such
  as ``\\u0061`` resolved), so the answer is exactly "the decoded objects lost a member".
- :func:`json_list_spans`: the same checks for a text shaped like an API list response,
  ``{..., "items": [{...}, {...}], ...}``, plus where each item's object starts and ends,
  so that the items can be decoded (and kept as text) one by one.

- :func:`json_compact`: the text without the whitespace between its tokens (kubectl
  indents its JSON: four spaces a level make a cluster dump three times its size,
  and every later pass, this module's and msgspec's, reads every byte).

The first two assume the text is JSON that msgspec accepts (or will be asked to accept): on other
bytes they stop without reading past the end, and their answers mean nothing.
"""

cimport cython

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcmp, memcpy

from model_slots cimport mix_bytes

cdef extern from "Python.h":
    char *PyBytes_AS_STRING(object o)
    Py_ssize_t PyBytes_GET_SIZE(object o)
    PyObject *PyBytes_FromStringAndSize(const char *v, Py_ssize_t size)
    int _PyBytes_Resize(PyObject **bytes, Py_ssize_t newsize) except -1


cdef struct Key:
    Py_ssize_t start  # of the key's text, or of its decoded form in the arena
    Py_ssize_t length
    bint decoded  # held in the arena (the text has escapes)
    # set only while the keys of an object too big to compare pairwise are sorted:
    uint64_t hash
    const unsigned char *bytes


cdef struct Frame:
    bint is_object
    Py_ssize_t first_key  # this object's first record in the key stack
    Py_ssize_t arena  # arena length when it opened


cdef enum Outcome:
    CLEAN
    TOO_DEEP
    DUPLICATE
    NOT_A_LIST  # list mode: no top-level "items" array of objects, or odd separators
    MALFORMED  # unbalanced brackets: not JSON


# Up to this many keys an object is checked pairwise; beyond, its keys are sorted by hash.
cdef enum:
    PAIRWISE_MAX = 16


cdef inline uint64_t _hash(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """A quick 64-bit hash of ``n`` bytes (it only sorts and pre-filters: equal keys are
    told by their bytes)."""
    return mix_bytes(<uint64_t>n * 0x9E3779B97F4A7C15ULL, p, n)


cdef int _key_order(const void *a, const void *b) noexcept nogil:
    """Hash, then length, then bytes: equal keys end up next to each other."""
    cdef const Key *x = <const Key *>a
    cdef const Key *y = <const Key *>b
    if x.hash != y.hash:
        return -1 if x.hash < y.hash else 1
    if x.length != y.length:
        return -1 if x.length < y.length else 1
    return memcmp(x.bytes, y.bytes, <size_t>x.length)


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #endif
    /* The index of the first quote or backslash in p[i:n], or n: sixteen bytes at a time
       with SSE2 (every x86-64 has it), else eight at a time where the byte order lets a
       count of trailing zeros find the lowest match, then byte by byte. */
    static inline Py_ssize_t jsontext_quote_or_backslash(
            const unsigned char *p, Py_ssize_t i, Py_ssize_t n) {
    #if (defined(__SSE2__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
        const __m128i quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C);
        while (i + 16 <= n) {
            __m128i w = _mm_loadu_si128((const __m128i *)(p + i));
            int hit = _mm_movemask_epi8(
                _mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, backslash)));
            if (hit) return i + __builtin_ctz((unsigned int)hit);
            i += 16;
        }
    #endif
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) \
            && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        while (i + 8 <= n) {
            uint64_t w, q, b, hit;
            memcpy(&w, p + i, 8);
            q = w ^ 0x2222222222222222ULL;  /* zero bytes where w has a quote */
            b = w ^ 0x5C5C5C5C5C5C5C5CULL;  /* ... and a backslash */
            /* The lowest byte flagged is a true zero; higher flags may be borrows. */
            hit = (((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
            if (hit) return i + (__builtin_ctzll(hit) >> 3);
            i += 8;
        }
    #endif
        while (i < n && p[i] != 0x22 && p[i] != 0x5C) i++;
        return i;
    }

    /* The index of the first byte in p[i:n] that is not JSON whitespace, or n: runs of
       spaces (indentation is most of a pretty-printed text) sixteen at a time. */
    static inline Py_ssize_t jsontext_space_end(
            const unsigned char *p, Py_ssize_t i, Py_ssize_t n) {
        for (;;) {
    #if (defined(__SSE2__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
            const __m128i space = _mm_set1_epi8(0x20);
            while (i + 16 <= n) {
                int same = _mm_movemask_epi8(
                    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), space));
                if (same != 0xFFFF) {
                    i += __builtin_ctz((unsigned int)~same);
                    break;
                }
                i += 16;
            }
    #endif
            while (i < n && p[i] == 0x20) i++;
            if (i < n && (p[i] == 0x0A || p[i] == 0x0D || p[i] == 0x09)) {
                i++;
                continue;
            }
            return i;
        }
    }
    """
    Py_ssize_t jsontext_quote_or_backslash(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) nogil
    Py_ssize_t jsontext_space_end(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) nogil


cdef inline Py_ssize_t _string_end(const unsigned char *p, Py_ssize_t i, Py_ssize_t n,
                                   bint *escaped) noexcept nogil:
    """The index of the quote closing the string whose content starts at ``i`` (or n);
    ``escaped`` tells whether the content has escapes."""
    while True:
        i = jsontext_quote_or_backslash(p, i, n)
        if i >= n or p[i] == b'"':
            return i
        escaped[0] = True
        i += 2  # the backslash and the character it escapes


cdef inline int _hex(unsigned char c) noexcept nogil:
    if c >= b'0' and c <= b'9':
        return c - 48
    if c >= b'a' and c <= b'f':
        return c - 87
    if c >= b'A' and c <= b'F':
        return c - 55
    return -1


cdef inline long _hex4(const unsigned char *p, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """The code unit of the 4 hex digits at ``i``, or -1."""
    cdef long value = 0
    cdef int digit, k
    if i + 4 > end:
        return -1
    for k in range(4):
        digit = _hex(p[i + k])
        if digit < 0:
            return -1
        value = value * 16 + digit
    return value


cdef Py_ssize_t _unescape(const unsigned char *p, Py_ssize_t i, Py_ssize_t end,
                          unsigned char *out) noexcept nogil:
    """Write the UTF-8 of the string content ``p[i:end]`` with its escapes resolved to
    ``out`` (room for ``end - i`` bytes: no escape is shorter than what it stands for);
    return the length. An invalid escape is copied as it is (msgspec refuses the text)."""
    cdef Py_ssize_t n = 0
    cdef long cp, low
    cdef unsigned char c
    while i < end:
        c = p[i]
        if c != b'\\' or i + 1 >= end:
            out[n] = c
            n += 1
            i += 1
            continue
        c = p[i + 1]
        if c == b'u':
            cp = _hex4(p, i + 2, end)
            if cp < 0:
                out[n] = b'\\'
                n += 1
                i += 1
                continue
            i += 6
            if 0xD800 <= cp < 0xDC00 and i + 1 < end and p[i] == b'\\' and p[i + 1] == b'u':
                low = _hex4(p, i + 2, end)
                if 0xDC00 <= low < 0xE000:
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
            if cp < 0x80:
                out[n] = <unsigned char>cp
                n += 1
            elif cp < 0x800:
                out[n] = <unsigned char>(0xC0 | (cp >> 6))
                out[n + 1] = <unsigned char>(0x80 | (cp & 0x3F))
                n += 2
            elif cp < 0x10000:
                out[n] = <unsigned char>(0xE0 | (cp >> 12))
                out[n + 1] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
                out[n + 2] = <unsigned char>(0x80 | (cp & 0x3F))
                n += 3
            else:
                out[n] = <unsigned char>(0xF0 | (cp >> 18))
                out[n + 1] = <unsigned char>(0x80 | ((cp >> 12) & 0x3F))
                out[n + 2] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
                out[n + 3] = <unsigned char>(0x80 | (cp & 0x3F))
                n += 4
            continue
        if c == b'b':
            c = b'\b'
        elif c == b'f':
            c = b'\f'
        elif c == b'n':
            c = b'\n'
        elif c == b'r':
            c = b'\r'
        elif c == b't':
            c = b'\t'
        # '"', '\\' and '/' stand for themselves
        out[n] = c
        n += 1
        i += 2
    return n


cdef inline Py_ssize_t _plain_number_end(const unsigned char *p, Py_ssize_t i,
                                         Py_ssize_t n) noexcept nogil:
    """The end of the number token at ``i`` when it is one msgspec certainly decodes
    (at most 18 digits before any fraction, no exponent), else -1.

    msgspec decodes what it skips less strictly (a float that overflows, an integer of
    thousands of digits): texts with such numbers take the ordinary path, which decodes
    every value."""
    cdef Py_ssize_t digits = 0
    if p[i] == b'-':
        i += 1
    while i < n and p[i] >= b'0' and p[i] <= b'9':
        i += 1
        digits += 1
    if digits > 18:
        return -1
    if i < n and p[i] == b'.':
        i += 1
        while i < n and p[i] >= b'0' and p[i] <= b'9':
            i += 1
    if i < n and (p[i] == b'e' or p[i] == b'E'):
        return -1
    return i


cdef extern from *:
    """
    /* Whether p[0:n] is UTF-8 as Python's strict decoder reads it (no overlong forms,
       no surrogates, nothing past U+10FFFF); ASCII runs sixteen bytes at a time. */
    static int jsontext_utf8_ok(const unsigned char *p, Py_ssize_t n) {
        Py_ssize_t i = 0;
        while (i < n) {
    #if (defined(__SSE2__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
            while (i + 16 <= n
                   && _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + i))) == 0) {
                i += 16;
            }
            if (i >= n) break;
    #endif
            unsigned char c = p[i];
            if (c < 0x80) { i++; continue; }
            Py_ssize_t len;
            unsigned char lo = 0x80, hi = 0xBF;  /* the range of the second byte */
            if (c >= 0xC2 && c <= 0xDF) len = 2;
            else if (c >= 0xE0 && c <= 0xEF) {
                len = 3;
                if (c == 0xE0) lo = 0xA0;  /* overlong */
                if (c == 0xED) hi = 0x9F;  /* surrogates */
            } else if (c >= 0xF0 && c <= 0xF4) {
                len = 4;
                if (c == 0xF0) lo = 0x90;  /* overlong */
                if (c == 0xF4) hi = 0x8F;  /* past U+10FFFF */
            } else return 0;
            if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return 0;
            for (Py_ssize_t k = 2; k < len; k++) {
                if (p[i + k] < 0x80 || p[i + k] > 0xBF) return 0;
            }
            i += len;
        }
        return 1;
    }
    """
    bint jsontext_utf8_ok(const unsigned char *p, Py_ssize_t n) nogil


# What each byte is to the scan outside strings (K_OTHER: letters of literals, ':').
cdef enum:
    K_OTHER
    K_QUOTE
    K_OPEN
    K_CLOSE
    K_COMMA
    K_NUMBER
    K_SPACE

cdef unsigned char _BYTE_KIND[256]


cdef void _byte_kinds() noexcept:
    cdef int c
    for c in range(256):
        _BYTE_KIND[c] = K_OTHER
    _BYTE_KIND[ord('"')] = K_QUOTE
    _BYTE_KIND[ord('{')] = _BYTE_KIND[ord('[')] = K_OPEN
    _BYTE_KIND[ord('}')] = _BYTE_KIND[ord(']')] = K_CLOSE
    _BYTE_KIND[ord(',')] = K_COMMA
    _BYTE_KIND[ord('-')] = K_NUMBER
    for c in range(ord('0'), ord('9') + 1):
        _BYTE_KIND[c] = K_NUMBER
    for c in b" \t\n\r":
        _BYTE_KIND[c] = K_SPACE


_byte_kinds()


@cython.final
cdef class _Scanner:
    """One pass over a text; the key stack holds the keys of every open object."""

    cdef const unsigned char *text
    cdef Py_ssize_t size, max_depth
    cdef Key *keys
    cdef Py_ssize_t n_keys, keys_room
    cdef unsigned char *arena
    cdef Py_ssize_t n_arena, arena_room
    cdef Frame *frames
    cdef Py_ssize_t *spans  # list mode: start and end of each item
    cdef Py_ssize_t n_spans, spans_room
    cdef Py_ssize_t items_open, items_close
    cdef bint duplicate  # found one (check mode goes on, for the depth)

    def __cinit__(self, bytes data, Py_ssize_t max_depth):
        self.text = <const unsigned char *>PyBytes_AS_STRING(data)
        self.size = PyBytes_GET_SIZE(data)
        self.max_depth = max_depth if max_depth > 0 else 0
        self.frames = <Frame *>PyMem_Malloc((self.max_depth + 1) * sizeof(Frame))
        if self.frames is NULL:
            raise MemoryError()

    def __dealloc__(self):
        PyMem_Free(self.keys)
        PyMem_Free(self.arena)
        PyMem_Free(self.frames)
        PyMem_Free(self.spans)

    cdef int push_key(self, Py_ssize_t start, Py_ssize_t end, bint escaped) except -1:
        cdef Key *grown
        cdef unsigned char *bigger
        cdef Py_ssize_t room, length = end - start
        cdef Key *key
        if self.n_keys == self.keys_room:
            room = 64 if self.keys_room == 0 else 2 * self.keys_room
            grown = <Key *>PyMem_Realloc(self.keys, room * sizeof(Key))
            if grown is NULL:
                raise MemoryError()
            self.keys, self.keys_room = grown, room
        key = &self.keys[self.n_keys]
        self.n_keys += 1
        if not escaped:
            key.start, key.length, key.decoded = start, length, False
            return 0
        if self.n_arena + length > self.arena_room:
            room = max(2 * self.arena_room, self.n_arena + length, 256)
            bigger = <unsigned char *>PyMem_Realloc(self.arena, room)
            if bigger is NULL:
                raise MemoryError()
            self.arena, self.arena_room = bigger, room
        key.start, key.decoded = self.n_arena, True
        key.length = _unescape(self.text, start, end, self.arena + self.n_arena)
        self.n_arena += key.length
        return 0

    cdef inline const unsigned char *key_bytes(self, Key *key) noexcept nogil:
        if key.decoded:
            return self.arena + key.start
        return self.text + key.start

    cdef inline bint same_key(self, Key *a, Key *b) noexcept nogil:
        return (
            a.length == b.length
            and memcmp(self.key_bytes(a), self.key_bytes(b), <size_t>a.length) == 0
        )

    cdef bint repeats_a_key(self, Py_ssize_t first) noexcept nogil:
        """Whether two keys of the object whose records start at ``first`` are equal."""
        cdef Py_ssize_t count = self.n_keys - first, i, j
        cdef Key *keys = self.keys + first
        if count < 2:
            return False
        if count <= PAIRWISE_MAX:
            for i in range(1, count):
                for j in range(i):
                    if self.same_key(&keys[i], &keys[j]):
                        return True
            return False
        # The records are popped when the object closes: sorting them in place is free.
        for i in range(count):
            keys[i].bytes = self.key_bytes(&keys[i])
            keys[i].hash = _hash(keys[i].bytes, keys[i].length)
        qsort(keys, <size_t>count, sizeof(Key), _key_order)
        for i in range(1, count):
            if _key_order(&keys[i - 1], &keys[i]) == 0:
                return True
        return False

    cdef int push_span(self, Py_ssize_t start, Py_ssize_t end) except -1:
        cdef Py_ssize_t room
        cdef Py_ssize_t *grown
        if self.n_spans + 2 > self.spans_room:
            room = 256 if self.spans_room == 0 else 2 * self.spans_room
            grown = <Py_ssize_t *>PyMem_Realloc(self.spans, room * sizeof(Py_ssize_t))
            if grown is NULL:
                raise MemoryError()
            self.spans, self.spans_room = grown, room
        self.spans[self.n_spans] = start
        self.spans[self.n_spans + 1] = end
        self.n_spans += 2
        return 0

    cdef Outcome scan(self, bint list_mode) except *:
        """Walk the text once; in list mode, stop at the first problem of any kind."""
        cdef const unsigned char *p = self.text
        cdef Py_ssize_t n = self.size, i = 0, end, depth = 0, item_start = 0
        cdef unsigned char c, kind
        cdef Frame *frame
        cdef bint want_key = False  # the next string is a key
        cdef bint escaped
        cdef bint check = True  # duplicates still looked for
        # list mode: the last key of the top-level object was "items"; the items array
        # is open; after '[' or ',' (0) or after an item (1) in it
        cdef bint items_key = False, in_items = False
        cdef int after_item = 0
        self.items_open = self.items_close = -1
        while i < n:
            c = p[i]
            kind = _BYTE_KIND[c]
            if kind == K_QUOTE:
                escaped = False
                end = _string_end(p, i + 1, n, &escaped)
                if want_key:
                    want_key = False
                    if check:
                        self.push_key(i + 1, end, escaped)
                    if list_mode and depth == 1:
                        items_key = end - i - 1 == 5 and memcmp(p + i + 1, b"items", 5) == 0
                    # A key is followed by its colon: step over it here.
                    i = end + 1
                    while i < n and _BYTE_KIND[p[i]] == K_SPACE:
                        i += 1
                    if i < n and p[i] == b':':
                        i += 1
                    continue
                if list_mode and in_items and depth == 2:
                    return NOT_A_LIST  # an item that is not an object
                i = end + 1
                continue
            if kind == K_OPEN:
                if depth == self.max_depth:
                    return TOO_DEEP
                if list_mode:
                    if depth == 1 and c == b'[' and items_key and self.items_open < 0:
                        in_items, after_item = True, 0
                        self.items_open = i
                    elif in_items and depth == 2:
                        if c == b'[' or after_item == 1:
                            return NOT_A_LIST
                        item_start = i
                frame = &self.frames[depth]
                frame.is_object = c == b'{'
                frame.first_key = self.n_keys
                frame.arena = self.n_arena
                depth += 1
                want_key = frame.is_object
            elif kind == K_CLOSE:
                if depth == 0:
                    return MALFORMED
                depth -= 1
                frame = &self.frames[depth]
                if frame.is_object != (c == b'}'):
                    return MALFORMED
                if frame.is_object and check:
                    if self.repeats_a_key(frame.first_key):
                        if list_mode:
                            return DUPLICATE
                        self.duplicate, check = True, False  # go on for the depth only
                        self.n_keys = self.n_arena = 0
                    else:
                        self.n_keys, self.n_arena = frame.first_key, frame.arena
                want_key = False
                if list_mode and in_items:
                    if depth == 2:
                        self.push_span(item_start, i + 1)
                        after_item = 1
                    elif depth == 1:
                        if after_item == 0 and self.n_spans > 0:
                            return NOT_A_LIST  # a trailing comma
                        in_items = False
                        self.items_close = i
            elif kind == K_COMMA:
                want_key = depth > 0 and self.frames[depth - 1].is_object
                if list_mode and in_items and depth == 2:
                    if after_item != 1:
                        return NOT_A_LIST
                    after_item = 0
            elif kind == K_NUMBER:
                if list_mode:
                    if in_items and depth == 2:
                        return NOT_A_LIST  # a number item
                    i = _plain_number_end(p, i, n)
                    if i < 0:
                        return NOT_A_LIST
                    continue
            elif kind == K_SPACE:
                i = jsontext_space_end(p, i + 1, n)
                continue
            elif list_mode and in_items and depth == 2:
                return NOT_A_LIST  # a literal item
            i += 1
        if depth != 0:
            return MALFORMED
        if self.duplicate:
            return DUPLICATE
        if list_mode and self.items_close < 0:
            return NOT_A_LIST
        return CLEAN


def json_text_check(data: bytes, Py_ssize_t max_depth) -> tuple:
    """``(too_deep, duplicate)`` of a JSON text msgspec decoded: whether collections
    nest more than ``max_depth`` deep, and whether an object repeats a key."""
    cdef _Scanner scanner = _Scanner(data, max_depth)
    cdef Outcome outcome = scanner.scan(False)
    return (outcome == TOO_DEEP, outcome == DUPLICATE)


def json_list_spans(data: bytes, Py_ssize_t max_depth) -> object:
    """For a text ``{..., "items": [{...}, ...], ...}`` that nests at most ``max_depth``
    deep and repeats no key in any object: ``(open, close, spans)``, the indexes of the
    items array's brackets and each item's ``(start, end)``. None for any other text,
    and for one whose items are not objects separated by single commas.

    Parts of the items are decoded by skipping them (msgspec checks less there than
    when it decodes a value), so the text must also be UTF-8 throughout and hold only
    numbers msgspec certainly decodes; else None too."""
    cdef _Scanner scanner = _Scanner(data, max_depth)
    if not jsontext_utf8_ok(scanner.text, scanner.size):
        return None
    if scanner.scan(True) != CLEAN:
        return None
    cdef Py_ssize_t k
    spans = [
        (scanner.spans[k], scanner.spans[k + 1]) for k in range(0, scanner.n_spans, 2)
    ]
    return (scanner.items_open, scanner.items_close, spans)


# Byte classes of the compaction: JSON's whitespace, the bytes that end a token
# (structure and quotes), and the rest (letters, digits, signs, dots: parts of a token).
cdef enum ByteClass:
    C_TOKEN = 0
    C_SPACE = 1
    C_EDGE = 2

cdef unsigned char _CLASS[256]
for _b in range(256):
    _CLASS[_b] = C_TOKEN
for _b in (32, 9, 10, 13):  # space, tab, line feed, carriage return
    _CLASS[_b] = C_SPACE
for _b in list(b'{}[]:,"'):
    _CLASS[_b] = C_EDGE

cdef unsigned char _STRING_STOP[256]  # what ends a string's plain run: quote, backslash
for _b in range(256):
    _STRING_STOP[_b] = _b == 34 or _b == 92

cdef uint64_t _SPACES8 = 0x2020202020202020


cdef inline uint64_t _load8(const unsigned char *p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)  # (unaligned: compilers make this one load)
    return v


cdef class JSONCompactor:
    """A JSON text without the whitespace outside its strings, fed in pieces (a big
    file a piece at a time, never whole in memory).

    Strings are copied as they are, escapes included; a string still open at the end
    is copied to the end (the decoder then finds what is wrong). Whitespace that
    separates two parts of what would then read as one token (``[1 2]`` is no JSON,
    and ``[12]`` would be) means the text is no JSON: :meth:`finish` gives None, and the
    text is left as it is for its error."""

    cdef PyObject *out  # the bytes being written (its only reference), or NULL
    cdef Py_ssize_t capacity, written
    cdef bint in_string, escaped, spaced, failed
    cdef unsigned char last  # class of the last byte written outside a string

    def __cinit__(self, Py_ssize_t size_hint=0):
        self.capacity = max(size_hint, 64)
        self.out = PyBytes_FromStringAndSize(NULL, self.capacity)
        if self.out == NULL:
            raise MemoryError()
        self.written = 0
        self.last = C_EDGE

    def __dealloc__(self):
        if self.out != NULL:
            Py_DECREF(<object>self.out)
            self.out = NULL

    def feed(self, const unsigned char[::1] piece not None) -> None:
        """Compact the next ``piece`` of the text (any bytes-like object)."""
        cdef Py_ssize_t n = piece.shape[0]
        if self.out == NULL:
            raise ValueError("finished")
        if self.failed or n == 0:
            return
        if self.written + n > self.capacity:  # the piece at most as long compacted
            self.capacity = max(self.written + n, 2 * self.capacity)
            _PyBytes_Resize(&self.out, self.capacity)
        cdef unsigned char *dst = <unsigned char *>PyBytes_AS_STRING(<object>self.out)
        with nogil:
            self._run(&piece[0], n, dst)

    def finish(self) -> object:
        """The compacted text, or None when it is no JSON (see the class)."""
        if self.out == NULL:
            raise ValueError("finished")
        if self.failed:
            Py_DECREF(<object>self.out)
            self.out = NULL
            return None
        _PyBytes_Resize(&self.out, self.written)  # (on failure: freed, error set)
        result = <object>self.out
        Py_DECREF(result)  # the reference this object held, now result's
        self.out = NULL
        return result

    cdef void _run(self, const unsigned char *src, Py_ssize_t n,
                   unsigned char *dst) noexcept nogil:
        cdef Py_ssize_t i = 0, w = self.written, start
        cdef unsigned char c
        while i < n:
            if self.in_string:
                start = i
                if self.escaped:  # the byte a backslash at the end of a piece escapes
                    self.escaped = False
                    i += 1
                while i < n:
                    c = src[i]
                    if _STRING_STOP[c]:
                        if c == 34:
                            i += 1
                            self.in_string = False
                            break
                        if i + 1 == n:
                            self.escaped = True
                            i += 1
                        else:
                            i += 2  # a backslash and the byte it escapes
                    else:
                        i += 1
                memcpy(dst + w, src + start, i - start)
                w += i - start
                continue
            c = src[i]
            if _CLASS[c] == C_SPACE:
                self.spaced = True
                i += 1
                # Indentation comes in long runs of spaces: eight at a time.
                while i + 8 <= n and _load8(src + i) == _SPACES8:
                    i += 8
                while i < n and _CLASS[src[i]] == C_SPACE:
                    i += 1
                continue
            if self.spaced:
                self.spaced = False
                if self.last == C_TOKEN and _CLASS[c] == C_TOKEN:
                    self.failed = True  # whitespace between two parts of tokens: no JSON
                    break
            dst[w] = c
            w += 1
            i += 1
            self.last = _CLASS[c]
            if c == 34:
                self.in_string = True
        self.written = w


def json_compact(data: bytes) -> object:
    """``data`` without whitespace outside its strings, or None when it is no JSON
    that way (see :class:`JSONCompactor`)."""
    cdef JSONCompactor compactor = JSONCompactor(len(data))
    compactor.feed(data)
    return compactor.finish()
