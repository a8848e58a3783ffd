"""Documents built by Python code, looked over in compiled code (cext/api/_python_tree.pyx)."""

def needs_rewriting(value: object) -> bool:
    """Whether ``value`` (dicts, lists and tuples of scalars) holds a key that is not a
    str or a str holding a surrogate."""
    ...
