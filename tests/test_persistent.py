"""The structures snapshot versions share (draspeed.engine.persistent, and the building blocks
of draspeed.engine.committed made of them): each version reads as a plain copy would, whatever
its relatives did after it was made."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import draspeed.engine.committed
from draspeed.api.model import (
    AllocationResult,
    Device,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.engine.committed import (
    EXCLUSIVE,
    SHARE,
    SHARE_WITH_CAPACITY,
    ClaimLog,
    Holds,
)
from draspeed.engine.persistent import MAX_DEPTH, GrowingArray, PersistentMap, Trail
from draspeed.engine.store import SliceStore
from draspeed.features import Features
from draspeed.rules.ids import DeviceID

# -- PersistentMap ---------------------------------------------------------------------

# An operation on the tree of versions: derive a child of version i, or on version i
# (made writable) set, delete or pop a key.
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("derive"), st.integers(0, 40)),
        st.tuples(st.just("set"), st.integers(0, 40), st.integers(0, 30), st.integers()),
        st.tuples(st.just("del"), st.integers(0, 40), st.integers(0, 30)),
        st.tuples(st.just("pop"), st.integers(0, 40), st.integers(0, 30)),
    ),
    max_size=200,
)


def _check(m: PersistentMap[int, int], model: dict[int, int]) -> None:
    assert len(m) == len(model)
    for k in range(31):
        assert (k in m) == (k in model)
        assert m.get(k, -1) == model.get(k, -1)
    assert m.get_present(range(-2, 33)) == model
    assert m.get_present([3, 3, 5]) == {k: v for k, v in model.items() if k in (3, 5)}


@given(start=st.dictionaries(st.integers(0, 30), st.integers(), max_size=20), ops=_ops)
def test_map_versions_read_as_copies(start: dict[int, int], ops: list[tuple[int, ...]]) -> None:
    """A tree of versions (siblings, long chains, deletes then re-sets): every version,
    at every step, holds exactly what a dict copied at its derivation and changed the
    same way holds."""
    maps: list[PersistentMap[int, int]] = [PersistentMap(start)]
    models: list[dict[int, int]] = [dict(start)]
    for op in ops:
        i = op[1] % len(maps)
        if op[0] == "derive":
            maps.append(maps[i].derive())
            models.append(dict(models[i]))
            assert maps[i].frozen
            continue
        maps[i] = maps[i].for_writing()
        m, model = maps[i], models[i]
        key = op[2]
        if op[0] == "set":
            m[key] = op[3]
            model[key] = op[3]
        elif op[0] == "del":
            if key in model:
                del m[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del m[key]
        else:
            assert m.pop(key, None) == model.pop(key, None)
        for other, other_model in zip(maps, models, strict=True):
            _check(other, other_model)
    for m, model in zip(maps, models, strict=True):
        assert dict(m.items()) == model
        assert m.flat() == model
        assert m.depth == 1
        _check(m, model)


def test_long_chain_stays_shallow() -> None:
    """One key changed per version, thousands of versions: lookups never walk more than
    a few layers, and the oldest versions still read as they were."""
    versions = [PersistentMap({k: 0 for k in range(1000)})]
    for step in range(1, 3000):
        child = versions[-1].derive()
        child[step % 1000] = step
        if step % 7 == 0:
            del child[(step * 13) % 1000]
        versions.append(child)
        assert child.depth <= MAX_DEPTH + 1
    assert all(v == 0 for v in versions[0].values())
    assert versions[1][1] == 1 and versions[1][2] == 0
    model: dict[int, int] = {k: 0 for k in range(1000)}
    for step in range(1, 3000):
        model[step % 1000] = step
        if step % 7 == 0:
            model.pop((step * 13) % 1000, None)
    assert versions[-1].flat() == model


def test_merges_touch_the_change_not_the_map() -> None:
    """Over many one-key versions of a large map, the entries copied by merges stay a
    small multiple of the changes (the whole map is never copied per version)."""
    import draspeed.engine.persistent as persistent

    copied = 0
    original = persistent._replay

    def counting(layers: list[dict[int, int]], *, bottom: bool) -> dict[int, int]:
        nonlocal copied
        copied += sum(len(own) for own in layers)
        return original(layers, bottom=bottom)

    persistent._replay = counting
    try:
        m: PersistentMap[int, int] = PersistentMap({k: k for k in range(100_000)})
        for step in range(2000):
            m = m.derive()
            m[step] = -step
    finally:
        persistent._replay = original
    assert copied < 40 * 2000  # a full copy per version would be 200 million
    assert m[5] == -5 and m[50_000] == 50_000


def test_frozen_map_refuses_writes() -> None:
    m = PersistentMap({"a": 1})
    child = m.derive()
    with pytest.raises(RuntimeError):
        m["b"] = 2
    child["b"] = 2
    assert "b" not in m and child["b"] == 2
    again = m.for_writing()
    again["c"] = 3
    assert again is not m and "c" not in child and dict(again) == {"a": 1, "c": 3}
    assert repr(PersistentMap({1: 2})) == "PersistentMap({1: 2})"


def test_readers_while_others_derive_and_merge() -> None:
    """Threads reading a frozen map while other threads derive from it (merging its
    layers in place) always see its contents."""
    base: PersistentMap[int, int] = PersistentMap({k: k for k in range(500)})
    chain = [base]
    for step in range(MAX_DEPTH * 3):
        child = chain[-1].derive()
        child[step] = -step
        chain.append(child)
    frozen = chain[-2]
    expected = dict(frozen.items())
    errors: list[str] = []

    def read() -> None:
        for _ in range(200):
            for k in (0, 5, 17, 300, 499):
                if frozen.get(k) != expected.get(k):
                    errors.append(f"{k}: {frozen.get(k)} != {expected.get(k)}")

    def derive() -> None:
        for _ in range(200):
            frozen.derive()

    threads = [threading.Thread(target=f) for f in (read, derive, read, derive)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- GrowingArray ----------------------------------------------------------------------


def test_growing_array_views_keep_their_prefix() -> None:
    a = GrowingArray([1, 2, 3])
    first = a.view(3)
    assert a.append([4, 5]) == 3
    second = a.view(5)
    for k in range(100):  # forces the buffer to grow several times
        a.append([k])
    assert first.tolist() == [1, 2, 3]
    assert second.tolist() == [1, 2, 3, 4, 5]
    assert len(a) == 105 and a.view(105)[-1] == 99
    with pytest.raises(ValueError):
        first[0] = 7  # views are read-only
    empty = GrowingArray()
    assert empty.view(0).dtype == np.int64 and empty.append([]) == 0


def test_growing_array_takes_over_an_owned_first_array_and_copies_it_on_growing() -> None:
    a = GrowingArray(dtype=np.int32)
    made = np.arange(40, dtype=np.int32)
    assert a.append(made, owned=True) == 0
    first = a.view(40)
    assert np.shares_memory(first, made)  # taken over, not copied
    assert a.append([40, 41], owned=True) == 40  # not empty: appended as any values
    assert not np.shares_memory(a.view(42), made)
    assert first.tolist() == list(range(40)) and a.view(42).tolist() == list(range(42))
    # What it cannot take over as it is is copied: another dtype, a view, a list.
    for values in (np.arange(40, dtype=np.int64), made[::2], list(range(40))):
        b = GrowingArray(dtype=np.int32)
        b.append(values, owned=True)
        assert b.view(len(b)).dtype == np.int32
        assert not isinstance(values, np.ndarray) or not np.shares_memory(b.view(len(b)), values)
        assert b.view(len(b)).tolist() == list(np.asarray(values))


def test_growing_array_appends_from_threads_never_overlap() -> None:
    a = GrowingArray()
    starts: list[int] = []

    def push(value: int) -> None:
        for _ in range(200):
            starts.append(a.append([value, value]))

    threads = [threading.Thread(target=push, args=(v,)) for v in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = a.view(len(a))
    assert sorted(starts) == list(range(0, 1600, 2))
    assert all(values[s] == values[s + 1] for s in starts)


# -- Trail -----------------------------------------------------------------------------


def test_trail_unions_its_links() -> None:
    root: Trail[str] = Trail(["a"])
    left = root.add(["b"]).add(["c"])
    right = root.add(["d"])
    assert left.all() == {"a", "b", "c"}
    assert right.all() == {"a", "d"}
    assert left.add([]).all() == {"a", "b", "c"}
    assert root.all() == {"a"}
    assert Trail().all() == frozenset()


# -- Holds -------------------------------------------------------------------------------

# One change: device d (of 6 IDs, the last one known by no index) gains (+1) or loses
# (-1) a hold of a kind, in version i (a new version derived from version i).
_holds_ops = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 5), st.sampled_from([1, -1]), st.integers(0, 2)),
    max_size=60,
)


@pytest.mark.parametrize("fold", [1, 4096])
@given(ops=_holds_ops)
def test_holds_versions(fold: int, ops: list[tuple[int, int, int, int]]) -> None:
    """Counts per index and per ID, over a tree of versions, equal a model's; flags for
    few and for many devices agree; folding into new arrays changes nothing read."""
    saved = draspeed.engine.committed.FOLD_MIN
    draspeed.engine.committed.FOLD_MIN = fold
    try:
        ids = [DeviceID("drv", "pool", f"d{k}") for k in range(6)]
        # Five devices by index (20 of padding around them), device 5 by ID only.
        where = {ids[k]: [20 + k] for k in range(5)}
        versions = [Holds(40)]
        models: list[dict[DeviceID, tuple[int, int, int]]] = [{}]
        for i, d, sign, kind in ops:
            i %= len(versions)
            holds, model = versions[i].derive(), dict(models[i])
            touched: set[int] = set()
            holds.apply([(ids[d], kind)], sign, lambda x: where.get(x, []), touched)
            assert touched == set(where.get(ids[d], []))
            old = model.get(ids[d], (0, 0, 0))
            delta = [(sign, 0, 0), (0, sign, 0), (0, sign, sign)][kind]
            model[ids[d]] = (old[0] + delta[0], old[1] + delta[1], old[2] + delta[2])
            versions.append(holds)
            models.append(model)
        for holds, model in zip(versions, models, strict=True):
            for k, device in enumerate(ids):
                counts = model.get(device, (0, 0, 0))
                assert holds.counts_of(device) == counts
                if k < 5:
                    assert holds.get(20 + k) == counts
            many = np.arange(40, dtype=np.int64)
            few = np.asarray([20, 21, 22, 23, 24, 3], dtype=np.int64)
            for probe in (many, few):
                in_use, allocated, committed = holds.flags_at(probe)
                for j, g in enumerate(probe.tolist()):
                    c = holds.get(g)
                    assert in_use[j] == (c[0] > 0)
                    assert committed[j] == (c[1] > 0 or c[2] > 0)
                    assert allocated[j] == (c[0] > 0 or c[1] > 0 or c[2] > 0)
            assert holds.held_in_pool("drv", "pool") == {
                device.device: c for device, c in model.items() if c != (0, 0, 0)
            }
    finally:
        draspeed.engine.committed.FOLD_MIN = saved


def test_holds_grow_for_new_devices() -> None:
    holds = Holds(4)
    holds.put(2, (1, 0, 0))
    bigger = holds.derive(10)
    bigger.put(8, (0, 1, 1))
    assert bigger.get(2) == (1, 0, 0) and bigger.get(8) == (0, 1, 1) and bigger.get(9) == (0, 0, 0)
    assert holds.get(8) == (0, 0, 0)
    assert EXCLUSIVE != SHARE != SHARE_WITH_CAPACITY


# -- SliceStore --------------------------------------------------------------------------


def _slice(name: str, devices: int) -> ResourceSlice:
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver="drv",
            pool=ResourcePool(name="pool", generation=1, resource_slice_count=1),
            node_name="n",
            devices=[Device(name=f"{name}-{k}") for k in range(devices)],
        ),
    )


def test_slice_store_appends_never_overlap() -> None:
    store = SliceStore([_slice("a", 3), _slice("b", 0), _slice("c", 2)], Features())
    assert store.table.column("s_first").tolist() == [0, 3, 3] and store.table.n_devices == 5
    assert store.chunks == [(0, 5, None)]
    # Two versions appending from the same prefix: the second lands after the first.
    assert store.append([_slice("d", 4)]) == (3, 4, 2, 9)
    assert store.append([_slice("e", 1)]) == (4, 5, 3, 10)
    assert store.append([_slice("f", 0)]) == (5, 6, 3, 10)  # no devices: no chunk
    assert store.table.column("s_first", 6).tolist() == [0, 3, 3, 5, 9, 10]
    assert store.chunks[1:] == [(5, 9, None), (9, 10, None)]
    assert store.table.column("s_ndev").tolist() == [3, 0, 2, 4, 1, 0]


# -- ClaimLog ----------------------------------------------------------------------------


def _claim(name: str, device: str) -> ResourceClaim:
    result = DeviceRequestAllocationResult(request="r", driver="drv", pool="pool", device=device)
    allocation = AllocationResult(devices=DeviceAllocationResult(results=[result]))
    return ResourceClaim(
        metadata=ObjectMeta(name=name, namespace="ns"),
        spec=ResourceClaimSpec(),
        status=ResourceClaimStatus(allocation=allocation),
    )


def test_claim_log_chain_reads_as_the_list() -> None:
    """Adds, re-adds (moved to the end) and removals over a chain longer than the
    flattening depth: every link reads as the list it stands for, old links too."""
    logs = [ClaimLog([_claim("c0", "d0")])]
    models = [["ns/c0"]]
    for step in range(1, 80):
        added = [_claim(f"c{step % 13}", f"d{step}")]
        removed = [f"ns/c{(step * 7) % 13}"] if step % 3 == 0 else []
        logs.append(logs[-1].derive(added, removed))
        model = [k for k in models[-1] if k not in removed and k != added[0].key]
        models.append([*model, added[0].key])
    for log, model in zip(logs, models, strict=True):
        assert list(log.flat()) == model
        assert len(log) == len(model)
        for k in range(13):
            assert (f"ns/c{k}" in log) == (f"ns/c{k}" in model)
    assert logs[5].get("ns/c5") is not None and logs[5].get("ns/c12") is None
