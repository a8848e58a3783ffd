# cython: language_level=3
"""Documents built by Python code, looked over in compiled code.

A dict a Python program hands to ``load`` is read as Go reads the JSON that Python's
encoder writes of it (:mod:`draspeed.api.json_as_go`). That JSON says something else
than the dict in two rare cases: a key that is not a str (``json.dumps`` writes ``1``
as ``"1"`` and ``True`` as ``"true"``, and refuses a tuple), and a str holding a
surrogate (Go reads U+FFFD). :func:`needs_rewriting` finds either with one C walk over
the dicts, lists and strings; a Python walk cost twice the rest of loading the dicts.
Only a str whose storage can hold a surrogate (two or four bytes a character) is
scanned, character by character.
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

# Deeper than any document the decoders take (a value that contains itself is theirs
# to report): the walk stops there, finding nothing.
cdef int _MAX_DEPTH = 1000


def needs_rewriting(object value):
    """Whether ``value`` (dicts, lists and tuples of scalars) holds a key that is not a
    str or a str holding a surrogate."""
    return _needs(value, 0)


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


cdef bint _needs(object value, int depth) except -1:
    cdef type kind = type(value)
    cdef Py_ssize_t at = 0
    cdef PyObject *key
    cdef PyObject *item
    if kind is str:
        return _has_surrogate(<str>value)
    if depth >= _MAX_DEPTH:
        return False
    if kind is dict:
        while PyDict_Next(value, &at, &key, &item):
            if type(<object>key) is not str or _has_surrogate(<str>key):
                return True
            if _needs(<object>item, depth + 1):
                return True
        return False
    if kind is list or kind is tuple:
        for entry in value:
            if _needs(entry, depth + 1):
                return True
    return False
