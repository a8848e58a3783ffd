# cython: language_level=3
"""The common YAML document built straight from libyaml's events, compiled.

Reading a cluster's YAML through PyYAML's C loader makes a Python object per event or
node (a node, two marks, a tag tuple) before the documents are built, and that, not
libyaml's parsing, is most of the time. This module drives the libyaml that PyYAML's
compiled module carries (its functions' addresses, which ``ctypes`` finds in that
module, are handed to :func:`enable`; nothing is linked at build time) and builds the plain documents directly: dicts, lists, strings, and the
scalars PyYAML's constructors make of the tags libyaml's events resolve to.

It takes only the common case, and answers None for anything else, so that the caller
reads the text the general way (:mod:`draspeed.api.text`), which reports every error
and handles every feature exactly as before:

- no anchors, aliases, explicit tags or directives;
- mapping keys that resolve to strings, none repeated in one mapping;
- scalars whose resolved tag is str, int, float, bool or null, built by the loader's
  own constructors (a constructor that raises -- ``.nan`` is no JSON -- means None);
- no more open collections than the loader's depth limit allows;
- text libyaml parses without an error.

Tags are resolved by the loader's ``resolve`` (PyYAML's implicit resolvers; a quoted
scalar is a string without asking), each distinct plain text once per call.

The event layout is libyaml's public ``yaml_event_t`` (stable since libyaml 0.1); a
probe document at import compares this module's documents with PyYAML's own, and a
libyaml this module does not read right is not used.
"""

from libc.stdlib cimport calloc, free
from libc.string cimport memset
from cpython.dict cimport PyDict_Contains, PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8

# libyaml's public event structure (yaml.h), as far as this module reads it.
ctypedef enum _event_type:
    NO_EVENT
    STREAM_START_EVENT
    STREAM_END_EVENT
    DOCUMENT_START_EVENT
    DOCUMENT_END_EVENT
    ALIAS_EVENT
    SCALAR_EVENT
    SEQUENCE_START_EVENT
    SEQUENCE_END_EVENT
    MAPPING_START_EVENT
    MAPPING_END_EVENT

ctypedef struct _mark:
    size_t index
    size_t line
    size_t column

ctypedef struct _tag_directives:
    void *start
    void *end

ctypedef struct _document_start:
    void *version_directive
    _tag_directives tag_directives
    int implicit

ctypedef struct _scalar:
    char *anchor
    char *tag
    char *value
    size_t length
    int plain_implicit
    int quoted_implicit
    int style

ctypedef struct _collection_start:
    char *anchor
    char *tag
    int implicit
    int style

ctypedef union _event_data:
    _document_start document_start
    _scalar scalar
    _collection_start collection_start

ctypedef struct _event:
    _event_type type
    _event_data data
    _mark start_mark
    _mark end_mark

# The parser is opaque here: libyaml's own functions initialise and read it. 0.2.5's is
# under 500 bytes; this much room holds any libyaml this module would accept.
DEF _PARSER_ROOM = 16384

ctypedef int (*_parser_initialize_t)(void *parser) noexcept nogil
ctypedef void (*_parser_delete_t)(void *parser) noexcept nogil
ctypedef void (*_parser_set_input_string_t)(void *parser, const unsigned char *data, size_t size) noexcept nogil
ctypedef int (*_parser_parse_t)(void *parser, _event *event) noexcept nogil
ctypedef void (*_event_delete_t)(_event *event) noexcept nogil
ctypedef void (*_get_version_t)(int *major, int *minor, int *patch) noexcept nogil

cdef _parser_initialize_t _parser_initialize = NULL
cdef _parser_delete_t _parser_delete = NULL
cdef _parser_set_input_string_t _parser_set_input_string = NULL
cdef _parser_parse_t _parser_parse = NULL
cdef _event_delete_t _event_delete = NULL
cdef bint _usable = False

# What this module calls, by name (found by the caller: see ``enable``).
FUNCTIONS = (
    "yaml_get_version",
    "yaml_parser_initialize",
    "yaml_parser_delete",
    "yaml_parser_set_input_string",
    "yaml_parser_parse",
    "yaml_event_delete",
)
cdef tuple _FUNCTIONS = FUNCTIONS

cdef str _STR = "tag:yaml.org,2002:str"
# Tags whose constructors make immutable values (shared between equal texts).
cdef frozenset _SCALAR_TAGS = frozenset({
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
})


class _Uncommon(Exception):
    """Something this module leaves to the general reading."""


cdef bint _take_functions(dict addresses) except -1:
    """libyaml's functions at the addresses ``ctypes`` found them (name -> address)."""
    global _parser_initialize, _parser_delete, _parser_set_input_string
    global _parser_parse, _event_delete
    cdef size_t at
    for name in _FUNCTIONS:
        if not addresses.get(name):
            return False
    at = addresses["yaml_parser_initialize"]
    _parser_initialize = <_parser_initialize_t>at
    at = addresses["yaml_parser_delete"]
    _parser_delete = <_parser_delete_t>at
    at = addresses["yaml_parser_set_input_string"]
    _parser_set_input_string = <_parser_set_input_string_t>at
    at = addresses["yaml_parser_parse"]
    _parser_parse = <_parser_parse_t>at
    at = addresses["yaml_event_delete"]
    _event_delete = <_event_delete_t>at
    cdef int major = -1, minor = -1, patch = -1
    at = addresses["yaml_get_version"]
    (<_get_version_t>at)(&major, &minor, &patch)
    return major == 0 and minor >= 1


cdef class _Builder:
    """One text's documents (see the module docstring)."""

    cdef object loader
    cdef object resolve
    cdef object scalar_node
    cdef dict constructors
    cdef dict plain  # plain scalar text -> its value (up to ``remembered`` of them)
    cdef Py_ssize_t remembered
    cdef Py_ssize_t max_depth

    def __cinit__(self, object loader, object scalar_node, Py_ssize_t max_depth):
        self.loader = loader
        self.resolve = loader.resolve
        self.scalar_node = scalar_node
        self.constructors = loader.yaml_constructors
        self.plain = {}
        # As many as the loader remembers tags of: a dump repeats a few hundred distinct
        # texts, and a text of distinct numbers must not cost a dict entry each.
        self.remembered = loader.tags_remembered
        self.max_depth = max_depth

    cdef object scalar(self, _event *event):
        cdef _scalar *s = &event.data.scalar
        if s.anchor != NULL or s.tag != NULL:
            raise _Uncommon()
        try:
            text = PyUnicode_DecodeUTF8(s.value, s.length, "strict")
        except UnicodeDecodeError:
            raise _Uncommon() from None  # (libyaml checks its input: not expected)
        if not s.plain_implicit:
            return text  # quoted (or block) text: a string, whatever it reads like
        cdef PyObject *known = PyDict_GetItem(self.plain, text)
        if known != NULL:
            return <object>known
        tag = self.resolve(self.scalar_node, text, (True, bool(s.quoted_implicit)))
        if tag == _STR:
            value = text
        elif tag in _SCALAR_TAGS:
            node = self.scalar_node(tag, text)
            try:
                value = self.constructors[tag](self.loader, node)
            except Exception:
                raise _Uncommon() from None
        else:  # a merge key, a timestamp the loader keeps, ...: the general way
            raise _Uncommon()
        if len(self.plain) < self.remembered:
            PyDict_SetItem(self.plain, text, value)
        return value

    cdef list documents(self, const unsigned char *data, size_t size):
        cdef void *parser = calloc(1, _PARSER_ROOM)
        cdef _event event
        cdef bint have_event = False
        cdef list docs = []
        # Open collections: a list, or a dict and the key waiting for its value.
        cdef list stack = []
        cdef list keys = []
        cdef object top, value, key
        cdef int ok
        if parser == NULL:
            raise MemoryError()
        memset(&event, 0, sizeof(event))
        if not _parser_initialize(parser):
            free(parser)
            raise MemoryError()
        try:
            _parser_set_input_string(parser, data, size)
            while True:
                ok = _parser_parse(parser, &event)
                if not ok:
                    raise _Uncommon()  # the general reading words the error
                have_event = True
                kind = event.type
                if kind == SCALAR_EVENT:
                    value = self.scalar(&event)
                elif kind == MAPPING_START_EVENT or kind == SEQUENCE_START_EVENT:
                    if (
                        event.data.collection_start.anchor != NULL
                        or event.data.collection_start.tag != NULL
                        or len(stack) >= self.max_depth
                    ):
                        raise _Uncommon()
                    if kind == MAPPING_START_EVENT:
                        PyList_Append(stack, {})
                    else:
                        PyList_Append(stack, [])
                    PyList_Append(keys, None)
                    _event_delete(&event)
                    have_event = False
                    continue
                elif kind == MAPPING_END_EVENT or kind == SEQUENCE_END_EVENT:
                    value = stack.pop()
                    keys.pop()
                elif kind == DOCUMENT_START_EVENT:
                    if (
                        event.data.document_start.version_directive != NULL
                        or event.data.document_start.tag_directives.start
                        != event.data.document_start.tag_directives.end
                    ):
                        raise _Uncommon()
                    _event_delete(&event)
                    have_event = False
                    continue
                elif kind == STREAM_START_EVENT or kind == DOCUMENT_END_EVENT:
                    _event_delete(&event)
                    have_event = False
                    continue
                elif kind == STREAM_END_EVENT:
                    return docs
                else:  # an alias, or an event libyaml should not send here
                    raise _Uncommon()
                _event_delete(&event)
                have_event = False
                if not stack:  # a document's root
                    if value is not None:
                        PyList_Append(docs, value)
                    continue
                top = stack[len(stack) - 1]
                if type(top) is list:
                    PyList_Append(<list>top, value)
                    continue
                key = keys[len(keys) - 1]
                if key is None:
                    if type(value) is not str or PyDict_Contains(<dict>top, value):
                        raise _Uncommon()  # a key of another type, or a repeated one
                    keys[len(keys) - 1] = value
                else:
                    PyDict_SetItem(<dict>top, key, value)
                    keys[len(keys) - 1] = None
        finally:
            if have_event:
                _event_delete(&event)
            _parser_delete(parser)
            free(parser)


def documents(object data, object loader, object scalar_node, Py_ssize_t max_depth):
    """The non-empty documents of the YAML ``data`` (bytes) as the loader reads them,
    or None when the text is not the common case (or libyaml is not usable here).

    ``loader``: a PyYAML loader whose ``resolve`` and ``yaml_constructors`` decide the
    scalars; ``scalar_node``: PyYAML's ScalarNode class (what the constructors take);
    ``max_depth``: the most collections open at once.
    """
    if not _usable or type(data) is not bytes:
        return None
    if data[:2] == b"\xff\xfe" or data[:2] == b"\xfe\xff":
        return None  # UTF-16: the general reading decodes it
    cdef const char *text = data
    cdef _Builder builder = _Builder(loader, scalar_node, max_depth)
    try:
        return builder.documents(<const unsigned char *>text, len(data))
    except _Uncommon:
        return None


def usable() -> bool:
    """Whether libyaml was found and reads the probe document as PyYAML does."""
    return _usable


def enable(dict addresses, object probe) -> bool:
    """Use libyaml's functions at ``addresses`` (each name of :data:`FUNCTIONS` -> its
    address) if ``probe()`` then finds this module's documents equal to PyYAML's."""
    global _usable
    _usable = False
    if not _take_functions(addresses):
        return False
    _usable = True
    try:
        _usable = bool(probe())
    except Exception:
        _usable = False
    return _usable
