"""draspeed.api: every served version of the DRA objects in, one model out, results back.

- :func:`decode` turns one object (``resource.k8s.io`` v1, v1beta2, v1beta1, v1alpha3,
  classic v1alpha2 claims and classes, core/v1 Node) into the model of
  :mod:`draspeed.api.model`, checking upstream's limits when ``validate=True``.
- :func:`validate` re-checks a decoded object.
- :func:`encode_allocation` and :func:`claim_with_allocation` write results back in the
  version the user asked for; :func:`decode_allocation` reads one.
"""

from __future__ import annotations

from draspeed.api.context import DraspeedConversionWarning, DraspeedWarning
from draspeed.api.decode import SUPPORTED_KINDS, decode, decode_allocation
from draspeed.api.encode import ENCODABLE_VERSIONS, claim_with_allocation, encode_allocation
from draspeed.api.model import DRAObject


def validate(obj: DRAObject) -> None:
    """Check a decoded object (from ``obj.raw``) against upstream's limits.

    Raises :class:`~draspeed.errors.InputError` on the first violation.
    """
    raw = obj.raw
    if "apiVersion" not in raw or "kind" not in raw:
        # Items of typed lists (ResourceSliceList, ...) may come without them.
        raw = {"apiVersion": getattr(obj, "api_version", "v1"), "kind": type(obj).__name__, **raw}
    decode(raw, validate=True)


__all__ = [
    "ENCODABLE_VERSIONS",
    "SUPPORTED_KINDS",
    "DraspeedConversionWarning",
    "DraspeedWarning",
    "claim_with_allocation",
    "decode",
    "decode_allocation",
    "encode_allocation",
    "validate",
]
