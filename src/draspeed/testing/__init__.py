"""Helpers for proving the allocator: used by draspeed's own tests, never by the fast path.

- :mod:`draspeed.testing.invariants`: ``check_allocation`` lists every property an
  allocation result must have (no double allocation, counters, capacity, selectors,
  taints, constraints, size, node selector), whatever engine produced it.
- :mod:`draspeed.testing.engines`: run the fast and the reference engine on the same
  inputs and compare their answers (results, "does not fit", error text).
- :mod:`draspeed.testing.cases`: scenarios in the differential format (``<id>.yaml`` +
  ``<id>.expected.json``), read and written.
- :mod:`draspeed.testing.oracle_cases`: model objects as one input line of the upstream
  allocator's JSON-lines harness (``shared/oracle``), to ask upstream the same question.
- :mod:`draspeed.testing.documents`: Kubernetes documents as dicts (a ResourceSlice) for
  tests to build clusters from.
- :mod:`draspeed.testing.strategies`: Hypothesis strategies for clusters and claim sets
  (the only module here that needs hypothesis, from the ``test`` extra; the others need
  only draspeed's runtime dependencies).
"""
