# cython: language_level=3
"""Documents built by Python code, looked over in compiled code.

A dict a Python program hands to ``load`` is read as Go reads the JSON that Python's
encoder writes of it (:mod:`draspeed.api.json_as_go`). That JSON says something else
than the dict in two rare cases: a key that is not a str (``json.dumps`` writes ``1``
as ``"1"`` and ``True`` as ``"true"``, and refuses a tuple), and a str holding a
surrogate (Go reads U+FFFD). Such a document may also nest deeper than ``load``'s
``max_depth``, or contain itself, which a text cannot. :func:`document_shape` finds
either with one C walk over the dicts, lists and strings; a Python walk cost twice the
rest of loading the dicts. Only a str whose storage can hold a surrogate (two or four
bytes a character) is scanned, character by character.
"""

from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject

cdef extern from "Python.h":
    ctypedef unsigned int Py_UCS4
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(object o)
    int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)
    Py_UCS4 PyUnicode_READ(int kind, void *data, Py_ssize_t index)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

# What document_shape finds (the deeper problem wins).
PLAIN = 0
REWRITE = 1  # a key that is not a str, or a str holding a surrogate
TOO_DEEP = 2  # collections nested deeper than asked (a value that contains itself too)


def document_shape(object value, int max_depth):
    """:data:`PLAIN`, :data:`REWRITE` or :data:`TOO_DEEP` for ``value`` (dicts, lists
    and tuples of scalars), whose collections may nest ``max_depth`` levels."""
    return _shape(value, 0, max_depth)


cdef bint _has_surrogate(str text):
    if PyUnicode_MAX_CHAR_VALUE(text) < 0xD800:
        return False
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    for i in range(PyUnicode_GET_LENGTH(text)):
        c = PyUnicode_READ(kind, data, i)
        if 0xD800 <= c <= 0xDFFF:
            return True
    return False


cdef int _shape(object value, int depth, int max_depth) except -1:
    cdef type kind = type(value)
    cdef Py_ssize_t at = 0
    cdef PyObject *key
    cdef PyObject *item
    cdef int found = PLAIN, inner
    if kind is str:
        return REWRITE if _has_surrogate(<str>value) else PLAIN
    if kind is dict:
        if depth >= max_depth:
            return TOO_DEEP
        while PyDict_Next(value, &at, &key, &item):
            if type(<object>key) is not str or _has_surrogate(<str>key):
                found = REWRITE
            inner = _shape(<object>item, depth + 1, max_depth)
            if inner == TOO_DEEP:
                return TOO_DEEP
            found = found | inner
        return found
    if kind is list or kind is tuple:
        if depth >= max_depth:
            return TOO_DEEP
        for entry in value:
            inner = _shape(entry, depth + 1, max_depth)
            if inner == TOO_DEEP:
                return TOO_DEEP
            found = found | inner
    return found
