# cython: language_level=3
"""The one-walk construction of a YAML node tree without aliases, compiled.

:meth:`draspeed.api.text._DocumentLoader.construct_tree` builds what PyYAML's general
construction builds from a node tree that libyaml's composer made: strings, mappings and
sequences directly, every other node by the loader's own constructors. The walk was a
quarter of reading a cluster's YAML in Python; here it is a C loop over the nodes.

Also here, because libyaml's composer calls them once per node: the loader's tag
resolution, remembered per (kind, text, implicit) (:func:`resolve_remembered`), and
the two path-resolver hooks, which have nothing to do when no path resolvers are set
(:func:`no_path_resolvers`).

Only the common case of construction is taken here: a mapping with a merge key or another special key,
a key that is not a string, or a repeated key is handed to the loader's own mapping
construction (``loader._mapping``), which words every error and keeps or refuses
duplicates as configured; that mapping is then built there entirely, as before.
"""

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from yaml.resolver import Resolver

from cpython.dict cimport PyDict_Contains, PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject
from cpython.list cimport PyList_Append

cdef str _STR_TAG = "tag:yaml.org,2002:str"
cdef str _MAP_TAG = "tag:yaml.org,2002:map"
cdef str _SEQ_TAG = "tag:yaml.org,2002:seq"
cdef str _MERGE_TAG = "tag:yaml.org,2002:merge"
cdef str _VALUE_TAG = "tag:yaml.org,2002:value"
cdef object _SCALAR = ScalarNode
cdef object _MAPPING = MappingNode
cdef object _SEQUENCE = SequenceNode


cdef object _resolve = Resolver.resolve


def resolve_remembered(object loader, object kind, object value, object implicit):
    """``Resolver.resolve`` of the loader, remembered in ``loader._tags`` (up to
    ``loader.tags_remembered`` distinct keys): PyYAML tries a list of regular
    expressions per plain scalar, while a dump repeats a few hundred distinct texts."""
    cdef dict tags = loader._tags
    key = (kind, value, implicit)
    cdef PyObject *found = PyDict_GetItem(tags, key)
    if found != NULL:
        return <object>found
    tag = _resolve(loader, kind, value, implicit)
    if len(tags) < loader.tags_remembered:
        PyDict_SetItem(tags, key, tag)
    return tag


def no_path_resolvers(object loader, object current_node=None, object current_index=None):
    """``Resolver.descend_resolver`` and ``ascend_resolver`` for a loader whose class
    sets no path resolvers: PyYAML's return at once then too."""
    return None


def construct_tree(object loader, object root):
    """What ``loader.construct_document(root)`` makes of ``root``, a tree without
    aliases (the loader's ``_mapping`` and ``construct_object`` do what is not common)."""
    return _node(loader, root)


cdef object _node(object loader, object node):
    cdef object kind = type(node)
    cdef object tag = node.tag
    if kind is _SCALAR:
        if tag == _STR_TAG:
            return node.value
        return loader.construct_object(node, deep=True)
    if kind is _MAPPING and tag == _MAP_TAG:
        return _mapping(loader, node)
    if kind is _SEQUENCE and tag == _SEQ_TAG:
        out = []
        for child in node.value:
            PyList_Append(out, _node(loader, child))
        return out
    return loader.construct_object(node, deep=True)


cdef object _mapping(object loader, object node):
    cdef list pairs = node.value
    cdef dict out = {}
    for key_node, value_node in pairs:
        key_tag = key_node.tag
        if key_tag == _MERGE_TAG or key_tag == _VALUE_TAG:
            return loader._mapping(node, loader._tree)
    for key_node, value_node in pairs:
        key = _node(loader, key_node)
        if type(key) is not str or PyDict_Contains(out, key):
            # Not a plain key, or a repeated one: the loader's own construction says
            # what to do (and builds the whole mapping again, from the nodes).
            return loader._mapping(node, loader._tree)
        PyDict_SetItem(out, key, _node(loader, value_node))
    return out
