"""The holds of a snapshot's committed claims counted at once equal them applied one by one.

A snapshot built with allocated claims counts what they hold in one pass
(:meth:`Holds.of_committed`, devices matched by sorting); updates apply claims one at a
time (:meth:`Holds.apply`). Both must give the same counts per device and per device
ID, whatever the results name: devices a pool repeats in two slices, devices of dead
slices, shares, admin access, IDs no slice has.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.api.loader import load
from draspeed.engine.committed import Holds, claim_holds
from draspeed.engine.slice_table import SliceTable
from draspeed.rules.ids import DeviceID

_DRIVERS = ("a.example.com", "b.example.com")
_POOLS = ("p0", "p1", "p2")
_DEVICES = ("d0", "d1", "d2", "d3")


def _slice(i: int, driver: str, pool: str, devices: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"s{i}"},
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "nodeName": "n",
            "devices": [{"name": d} for d in devices],
        },
    }


def _claim(i: int, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"c{i}", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


_slices = st.lists(
    st.tuples(
        st.sampled_from(_DRIVERS),
        st.sampled_from(_POOLS),
        st.lists(st.sampled_from(_DEVICES), min_size=0, max_size=4, unique=True),
    ),
    min_size=1,
    max_size=8,
)
_results = st.lists(
    st.fixed_dictionaries(
        {
            "request": st.just("r"),
            "driver": st.sampled_from(_DRIVERS),
            "pool": st.sampled_from((*_POOLS, "p9")),
            "device": st.sampled_from((*_DEVICES, "d9")),
        },
        optional={
            "shareID": st.just("7b1dc2f0-3c58-4c6a-9e0a-4d6f1b6e2a11"),
            "adminAccess": st.booleans(),
            "consumedCapacity": st.just({"memory": "1Gi"}),
        },
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    slices=_slices,
    claims=st.lists(_results, max_size=6),
    dead=st.lists(st.booleans(), min_size=8, max_size=8),
    consumable=st.booleans(),
)
def test_counted_at_once_as_applied_one_by_one(
    slices: list[tuple[str, str, list[str]]],
    claims: list[list[dict[str, Any]]],
    dead: list[bool],
    consumable: bool,
) -> None:
    objects = load(
        [_slice(i, *s) for i, s in enumerate(slices)]
        + [_claim(i, results) for i, results in enumerate(claims)],
        validate=False,
    )
    table = SliceTable(objects.slices)
    live = np.asarray([0 if dead[s] else 1 for s in range(len(slices))], dtype=np.uint8)
    committed = [h for claim in objects.claims for h in claim_holds(claim, consumable)]

    def devices_named(device_id: DeviceID) -> list[int]:
        of_pool = [
            s
            for s, rs in enumerate(objects.slices)
            if live[s] and (rs.spec.driver, rs.spec.pool.name) == device_id[:2]
        ]
        return table.devices_named(device_id, of_pool)

    one_by_one = Holds(table.n_devices)
    for claim in objects.claims:
        one_by_one.apply(claim_holds(claim, consumable), 1, devices_named, set())
    at_once = Holds.of_committed(
        table.n_devices,
        committed,
        lambda ids: table.devices_named_many(ids, table.n_slices, live),
    )
    for g in range(table.n_devices):
        assert at_once.get(g) == one_by_one.get(g)
    for driver in _DRIVERS:
        for pool in (*_POOLS, "p9"):
            assert at_once.held_in_pool(driver, pool) == one_by_one.held_in_pool(driver, pool)
