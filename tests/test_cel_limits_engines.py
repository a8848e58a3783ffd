"""The CEL cost limit and the caller's deadline, through both engines.

- A selector over the cost limit on a device fails the allocation on the device the
  search tries first, as upstream's (answers measured with the oracle below); devices
  the search skips are not evaluated, in the fast engine too, which stops evaluating
  a table at the first device over the limit and evaluates the rest only if the
  search gets there.
- A deadline passes inside a long evaluation: allocate, feasible_nodes and explain
  return within a small overshoot instead of finishing every device's evaluation.
"""

from __future__ import annotations

import time

import pytest

from draspeed.api.loader import load
from draspeed.cluster import Engine, make_allocator
from draspeed.engine.allocator import Allocator
from draspeed.engine.feasibility import TIMEOUT
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout
from draspeed.explain import explain
from draspeed.features import Features
from draspeed.testing.engines import Inputs

LIMIT_ERROR = "CEL runtime error: operation cancelled: actual cost limit exceeded"
# Over the limit (4 * 400000 + 12) on heavy devices, a few units on the others.
HEAVY = 'device.attributes["gpu.example.com"].heavy ? lists.range(400000).all(i, i >= 0) : true'


def _cluster(selector: str, devices: list[str], used: list[str] = ()) -> str:  # type: ignore[assignment]
    items = "\n".join(
        f"  - name: {name}\n    attributes:\n      heavy: {{bool: {str(heavy).lower()}}}\n"
        f"      index: {{int: {i}}}"
        for i, (name, heavy) in enumerate((d.rstrip("!"), d.endswith("!")) for d in devices)
    )
    used_claims = "".join(
        f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: used-{name}, namespace: default}}
spec:
  devices:
    requests:
    - {{name: r, exactly: {{deviceClassName: gpu}}}}
status:
  allocation:
    devices:
      results:
      - {{request: r, driver: gpu.example.com, pool: p, device: {name}}}
"""
        for name in used
    )
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: node-1}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec: {{}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: s}}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {{name: p, generation: 1, resourceSliceCount: 1}}
  devices:
{items}
{used_claims}---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: claim, namespace: default}}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu
        selectors:
        - cel: {{expression: '{selector}'}}
"""


def _inputs(text: str) -> Inputs:
    return Inputs.from_objects(load(text, validate=False), "node-1", Features())


def _allocate(engine: Engine, inputs: Inputs, deadline: float | None = None) -> str:
    allocator = make_allocator(
        engine, inputs.slices, inputs.classes, inputs.allocated, inputs.features
    )
    try:
        results = allocator.allocate(inputs.claims, inputs.node, deadline=deadline)
    except AllocationError as exc:
        return str(exc)
    assert results is not None
    return ",".join(r.device for r in results[0].devices.results)


# (devices in order, "!" = over the limit; devices in use; upstream's answer)
CASES = [
    (
        ["d0!", "d1", "d2"],
        [],
        f"claim default/claim: selector #0 on device gpu.example.com/p/d0: {LIMIT_ERROR}",
    ),
    (["d0!", "d1", "d2"], ["d0"], "d1"),
    (
        ["d0", "d1!", "d2"],
        ["d0"],
        f"claim default/claim: selector #0 on device gpu.example.com/p/d1: {LIMIT_ERROR}",
    ),
    (["d0!", "d1!", "d2"], ["d0", "d1"], "d2"),
]


@pytest.mark.parametrize("engine", ["fast", "reference"])
@pytest.mark.parametrize(("devices", "used", "upstream"), CASES)
def test_the_cost_limit_fails_where_upstreams_search_looks(
    engine: Engine, devices: list[str], used: list[str], upstream: str
) -> None:
    assert _allocate(engine, _inputs(_cluster(HEAVY, devices, used))) == upstream


def test_the_fast_engine_stops_at_the_first_device_over_the_limit() -> None:
    """128 devices over the limit: the fast engine gets upstream's error after about the
    one evaluation the reference engine needs, not one per device."""
    inputs = _inputs(_cluster(HEAVY, [f"d{i}!" for i in range(128)]))
    timings = {}
    for engine in ("reference", "fast"):
        started = time.monotonic()
        assert "gpu.example.com/p/d0: " + LIMIT_ERROR in _allocate(engine, inputs)
        timings[engine] = time.monotonic() - started
    assert timings["fast"] < 3 * timings["reference"] + 0.2, timings


# 10^4 comprehension steps per device, never matching: every device is evaluated.
SLOW = (
    'lists.range(10000).all(i, i != device.attributes["gpu.example.com"].index + 20000)'
    ' && device.attributes["gpu.example.com"].index < 0'
)
BUDGET = 0.3
SLACK = 0.15  # what a busy shared machine may add to an evaluation step


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_a_deadline_ends_selector_evaluation(engine: Engine) -> None:
    inputs = _inputs(_cluster(SLOW, [f"d{i}" for i in range(128)]))
    deadline = time.monotonic() + BUDGET
    with pytest.raises(AllocationTimeout, match=r"^filter operation aborted: context deadline"):
        _allocate_raw(engine, inputs, deadline)
    assert time.monotonic() - deadline < SLACK


def _allocate_raw(engine: Engine, inputs: Inputs, deadline: float) -> None:
    allocator = make_allocator(
        engine, inputs.slices, inputs.classes, inputs.allocated, inputs.features
    )
    allocator.allocate(inputs.claims, inputs.node, deadline=deadline)


def test_feasible_and_explain_honour_the_deadline_inside_evaluation() -> None:
    objects = load(_cluster(SLOW, [f"d{i}" for i in range(128)]), validate=False)
    snapshot = Snapshot.build(objects.slices, objects.classes, [], nodes=objects.nodes)
    pending = [c for c in objects.claims if c.status is None or c.status.allocation is None]
    deadline = time.monotonic() + BUDGET
    feasible = Allocator(snapshot).feasible_nodes(pending, deadline=deadline)
    assert feasible.codes.tolist() == [TIMEOUT]
    assert time.monotonic() - deadline < SLACK
    snapshot = Snapshot.build(objects.slices, objects.classes, [], nodes=objects.nodes)
    started = time.monotonic()
    out = explain(snapshot, pending, "node-1", timeout=BUDGET)
    assert out.status == "timeout"
    # The allocator's run and the funnels share one budget.
    assert time.monotonic() - started < BUDGET + SLACK
