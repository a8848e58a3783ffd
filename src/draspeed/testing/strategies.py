"""Hypothesis strategies: random clusters and claim sets, shaped as kubectl prints them.

Everything is generated as plain ``resource.k8s.io/v1`` mappings (what ``kubectl get
-o yaml`` prints) and decoded by the tests with API validation on, so the inputs are
both realistic and valid. Values come from small vocabularies on purpose: with three
models, two NUMA nodes and a handful of devices, constraints, selectors, counters and
capacities collide often enough to exercise backtracking, not only first-fit.

The generated clusters cover: several drivers and pools; pools of several slices,
generations (stale, newer elsewhere, incomplete), pools spanning nodes; node names,
``allNodes``, node selectors and per-device node selection; attributes of every type
including lists and attributes without a value; capacities with request policies and
``allowMultipleAllocations``; counter sets and devices consuming them (also unknown
sets and duplicate set names: invalid pools); taints; binding conditions and
``bindsToNode``; claims already allocated (exclusive, admin access, shares with
consumed capacity). Claim sets cover ExactCount and All, ``firstAvailable``,
``matchAttribute`` / ``distinctAttribute`` (scoped and unscoped), admin access,
tolerations, capacity requests and configs, plus inputs only the allocator rejects
(unknown classes, CEL that does not compile or fails at run time, too many devices).

This module is the only one of draspeed that imports hypothesis (the ``test`` extra, not a
runtime dependency); only tests import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

try:
    from hypothesis import strategies as st
except ImportError as exc:  # the wheel's runtime dependencies leave hypothesis out
    raise ImportError(
        "draspeed.testing.strategies needs hypothesis: pip install 'draspeed[test]'"
    ) from exc

from draspeed.features import Features
from draspeed.testing.cases import Scenario

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy[T]], T]
Documents = list[dict[str, Any]]

DRIVERS = ("gpu.example.com", "net.example.com", "fpga.example.com")
SHORT = {d: d.split(".")[0] for d in DRIVERS}
NODES = {
    "node-1": {"region": "r1", "zone": "z1"},
    "node-2": {"region": "r2", "zone": "z1"},
    "node-3": {"region": "r1", "zone": "z2"},
}
TOPOLOGY = "topo.example.com/rack"
# Attribute name -> strategy of its value (the v1 DeviceAttribute object).
ATTRIBUTES: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "model": st.sampled_from(["a100", "h100", "l4"]).map(lambda v: {"string": v}),
    "numa": st.sampled_from([0, 1]).map(lambda v: {"int": v}),
    "healthy": st.booleans().map(lambda v: {"bool": v}),
    "driverVersion": st.sampled_from(["1.0.0", "2.0.0", "2.1.0-rc.1"]).map(
        lambda v: {"version": v}
    ),
    "links": st.lists(st.sampled_from(["l0", "l1", "l2"]), unique=True, max_size=3).map(
        lambda v: {"strings": v}
    ),
    "ids": st.lists(st.sampled_from([1, 2, 3]), unique=True, min_size=1, max_size=3).map(
        lambda v: {"ints": v}
    ),
    "flags": st.lists(st.booleans(), unique=True, min_size=1, max_size=2).map(
        lambda v: {"bools": v}
    ),
    "compat": st.lists(st.sampled_from(["1.0.0", "1.1.0", "2.0.0"]), unique=True, max_size=2).map(
        lambda v: {"versions": v}
    ),
    TOPOLOGY: st.sampled_from(["r1", "r2"]).map(lambda v: {"string": v}),
    # An attribute without a value: CEL and constraints must report or reject it.
    "broken": st.just({}),
}
CONSTRAINT_ATTRIBUTES = (
    "model",
    "numa",
    "links",
    "driverVersion",
    "healthy",
    "ids",
    "flags",
    "compat",
)

QUANTITIES_MEMORY = ("8Gi", "16Gi", "40Gi")
MEMORY_POLICIES: tuple[dict[str, Any], ...] = (
    {"default": "4Gi", "validRange": {"min": "2Gi", "max": "16Gi", "step": "2Gi"}},
    {"default": "4Gi", "validValues": ["2Gi", "4Gi", "8Gi"]},
    {"validRange": {"min": "1Gi"}},
    {"validRange": {"min": "1Gi", "step": "3Gi"}},
)


@dataclass(frozen=True, slots=True)
class DriverSchema:
    """What every device of one driver publishes (real drivers are uniform)."""

    attributes: tuple[str, ...]
    memory: bool
    cores: bool


def selector_menu(driver: str, schema: DriverSchema | None = None) -> list[str]:
    """CEL selectors that compile, for devices of one driver.

    Selectors that read a field directly are offered only when the driver publishes it
    (``schema``), as a user would write them; they still fail at run time on the odd
    device that lacks the field. Guarded ones (``has``, ``?.``) are always offered.
    """
    a = f'device.attributes["{driver}"]'
    c = f'device.capacity["{driver}"]'
    direct = {
        "model": [f'{a}.model == "a100"', f'{a}.model != "l4"'],
        "numa": [f"{a}.numa == 1"],
        "healthy": [f"{a}.healthy"],
        "driverVersion": [f'{a}.driverVersion.isGreaterThan(semver("1.5.0"))'],
        "memory": [f'{c}.memory.compareTo(quantity("16Gi")) >= 0'],
    }
    menu = [
        f"has({a}.model)",
        f'{a}.?model.orValue("none") == "h100"',
        f'has({c}.memory) && {c}.memory.isGreaterThan(quantity("10Gi"))',
        # Guarded with has(): an optional's orValue([]) has no size bound, so the API
        # server's cost estimate of a comprehension over it is unbounded (refused).
        f'has({a}.links) && "l1" in {a}.links',
        f"has({a}.ids) && {a}.ids.exists(x, x > 1)",
        f"has({a}.flags) && {a}.flags.exists(f, f)",
        f'has({a}.compat) && {a}.compat.exists(v, v.isGreaterThan(semver("1.0.0")))',
        "device.allowMultipleAllocations",
        f'device.driver == "{driver}"',
        'device.attributes["topo.example.com"].?rack.orValue("") == "r1"',
        "true",
        # Names alone (keys of a domain, or the domains).
        f'"model" in {a}',
        f"{a}.size() >= 2",
        f'{a}.exists(k, k.startsWith("n"))',
        f'"memory" in {c} || {c}.size() == 0',
        'device.attributes.exists(d, d == "topo.example.com")',
    ]
    if schema is None:
        published = set(direct)
    else:
        published = set(schema.attributes) | ({"memory"} if schema.memory else set())
    for field_name, selectors in direct.items():
        if field_name in published:
            menu += selectors
    return menu


BROKEN_SELECTORS = (
    "device.attributes[",  # syntax error
    "noSuchVariable == 1",  # undeclared reference
    'device.attributes["gpu.example.com"].numa',  # not a bool at run time
    "1 == 1 ? 2 : 3",  # compile-time result type int
    'device.attributes["gpu.example.com"].numa / 0 == 1',  # division by zero
)


# --------------------------------------------------------------------------------------
# Odds
# --------------------------------------------------------------------------------------


def chance(draw: Draw[Any], one_in: int) -> bool:
    """True about once in ``one_in`` draws.

    Hypothesis favours the smallest and the boundary values of a range, so a rare event
    is tied to values in the middle of it; shrinking moves towards 0, i.e. towards the
    common case, so counter-examples keep only the rare events they need.
    """
    return draw(st.integers(0, 4 * one_in - 1)) in range(2 * one_in, 2 * one_in + 4)


# --------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------


def features() -> st.SearchStrategy[Features]:
    """Mostly every gate on (upstream's default), sometimes some of them off."""
    gate = st.sampled_from([True, True, True, False])

    @st.composite
    def build(draw: Draw[Any]) -> Features:
        if not chance(draw, 6):
            return Features()
        return Features(
            admin_access=draw(gate),
            prioritized_list=draw(gate),
            partitionable_devices=draw(gate),
            device_taints=draw(gate),
            consumable_capacity=draw(gate),
            device_binding_conditions=draw(gate),
            resource_claim_device_status=draw(gate),
            list_type_attributes=draw(gate),
        )

    return build()


# --------------------------------------------------------------------------------------
# Cluster: nodes, classes, slices
# --------------------------------------------------------------------------------------


def node_document(name: str) -> dict[str, Any]:
    labels = {**NODES[name], "kubernetes.io/hostname": name}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _node_selector(draw: Draw[Any]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["region", "zone", "name", "not-region"]))
    if kind == "name":
        term = {
            "matchFields": [
                {
                    "key": "metadata.name",
                    "operator": "In",
                    "values": [draw(st.sampled_from(sorted(NODES)))],
                }
            ]
        }
    elif kind == "not-region":
        term = {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["r2"]}]}
    else:
        values = {"region": ["r1", "r2"], "zone": ["z1", "z2"]}[kind]
        term = {
            "matchExpressions": [
                {"key": kind, "operator": "In", "values": [draw(st.sampled_from(values))]}
            ]
        }
    return {"nodeSelectorTerms": [term]}


def _node_selection(draw: Draw[Any], mode: str, node: str) -> dict[str, Any]:
    """Slice-level (or device-level) node selection fields for one mode."""
    if mode == "node":
        return {"nodeName": node}
    if mode == "all":
        return {"allNodes": True}
    if mode == "selector":
        return {"nodeSelector": _node_selector(draw)}
    return {"perDeviceNodeSelection": True}


@st.composite
def driver_schemas(draw: Draw[Any]) -> DriverSchema:
    names = [n for n in ATTRIBUTES if n != "broken"]
    attributes = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=6))
    return DriverSchema(
        tuple(sorted(set(attributes) | {"model"})), draw(st.booleans()), draw(st.booleans())
    )


def _capacity(draw: Draw[Any], schema: DriverSchema) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    if schema.memory != chance(draw, 20):
        memory: dict[str, Any] = {"value": draw(st.sampled_from(QUANTITIES_MEMORY))}
        if chance(draw, 3):
            memory["requestPolicy"] = draw(st.sampled_from(MEMORY_POLICIES))
        caps["memory"] = memory
    if schema.cores != chance(draw, 20):
        caps["cores"] = {"value": draw(st.sampled_from(["4", "8"]))}
    return caps


def _taint(draw: Draw[Any]) -> dict[str, Any]:
    taint: dict[str, Any] = {
        "key": draw(st.sampled_from(["maint", "gpu-error"])),
        "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", "None"])),
    }
    value = draw(st.sampled_from(["", "soon", "true"]))
    if value:
        taint["value"] = value
    return taint


def _device(
    draw: Draw[Any], name: str, schema: DriverSchema, *, per_device: bool, counter_sets: list[str]
) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name}
    attributes = {n: draw(ATTRIBUTES[n]) for n in schema.attributes if not chance(draw, 20)}
    if chance(draw, 2):
        attributes[TOPOLOGY] = draw(ATTRIBUTES[TOPOLOGY])
    if chance(draw, 80):
        attributes["broken"] = {}  # a value this version cannot read: CEL fails on it
    if attributes:
        device["attributes"] = attributes
    capacity = _capacity(draw, schema)
    if capacity:
        device["capacity"] = capacity
    if counter_sets and not chance(draw, 3):
        counters = {"mem": {"value": draw(st.sampled_from(["8Gi", "16Gi", "24Gi"]))}}
        if not chance(draw, 3):
            counters["slots"] = {"value": "1"}
        device["consumesCounters"] = [
            {"counterSet": draw(st.sampled_from(counter_sets)), "counters": counters}
        ]
    if per_device:
        mode = draw(st.sampled_from(["node", "node", "all", "selector"]))
        if not chance(draw, 10):
            device.update(_node_selection(draw, mode, draw(st.sampled_from(sorted(NODES)))))
    if chance(draw, 5):
        device["taints"] = [_taint(draw)]
    if chance(draw, 8):
        device["bindingConditions"] = ["ready"]
        device["bindingFailureConditions"] = ["failed"]
    if chance(draw, 8):
        device["bindsToNode"] = True
    if chance(draw, 4):
        device["allowMultipleAllocations"] = True
    return device


def _counter_slice(
    name: str, driver: str, pool: dict[str, Any], selection: dict[str, Any], sets: list[str]
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "pool": dict(pool),
            **selection,
            "sharedCounters": [
                {"name": s, "counters": {"mem": {"value": "40Gi"}, "slots": {"value": "3"}}}
                for s in sets
            ],
        },
    }


def _pool_slices(
    draw: Draw[Any], driver: str, schema: DriverSchema, pool_name: str, device_names: list[str]
) -> list[dict[str, Any]]:
    """The slices of one pool: device slices, maybe a counter slice, maybe stale ones."""
    mode = draw(
        st.sampled_from(["node", "node", "node", "all", "selector", "per-device", "multi-node"])
    )
    generation = draw(st.integers(1, 2))
    n_device_slices = draw(st.integers(1, 2))
    counters = chance(draw, 3)
    sets = ["cs-0"] if counters else []
    if counters and chance(draw, 4):
        sets.append("cs-1")
    n_slices = n_device_slices + (1 if counters else 0)
    declared = n_slices + (1 if chance(draw, 25) else 0)  # one slice missing: incomplete
    pool = {"name": pool_name, "generation": generation, "resourceSliceCount": declared}
    slices: list[dict[str, Any]] = []
    home = draw(st.sampled_from(["node-1", "node-1", "node-2"]))
    for k in range(n_device_slices):
        node = home if mode != "multi-node" else ("node-1", "node-2")[k % 2]
        selection = _node_selection(draw, "node" if mode == "multi-node" else mode, node)
        consumable_sets = list(sets)
        if counters and chance(draw, 15):
            consumable_sets.append("cs-unknown")  # the pool becomes invalid
        devices = []
        for _ in range(draw(st.sampled_from([2, 0, 1, 2, 3, 3]))):
            if device_names and chance(draw, 30):
                name = device_names[-1]  # a duplicate name in the pool: invalid
            else:
                name = f"{SHORT[driver]}-{len(device_names)}"
            device_names.append(name)
            devices.append(
                _device(
                    draw,
                    name,
                    schema,
                    per_device=mode == "per-device",
                    counter_sets=consumable_sets,
                )
            )
        spec: dict[str, Any] = {"driver": driver, "pool": dict(pool), **selection}
        if devices:
            spec["devices"] = devices
        slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{pool_name}-s{k}"},
                "spec": spec,
            }
        )
    if counters:
        # Counters of a pool spanning nodes (or selected by labels) serve every node.
        selection = {"nodeName": home} if mode in ("node", "per-device") else {"allNodes": True}
        counter_sets = list(sets)
        if chance(draw, 20):
            counter_sets.append("cs-0")  # a duplicate set name: invalid pool
        slices.append(
            _counter_slice(f"{pool_name}-counters", driver, pool, selection, counter_sets)
        )
    if generation > 1 and chance(draw, 10):
        # A slice left over from the previous generation: ignored.
        stale = {**slices[0], "metadata": {"name": f"{pool_name}-stale"}}
        stale["spec"] = {**slices[0]["spec"], "pool": {**pool, "generation": generation - 1}}
        slices.append(stale)
    if chance(draw, 10):
        # A newer generation published for another node: obsolete unless complete here.
        newer = {**slices[0], "metadata": {"name": f"{pool_name}-newer"}}
        newer["spec"] = {
            **slices[0]["spec"],
            "pool": {**pool, "generation": generation + 1},
            "nodeName": "node-3",
        }
        for key in ("allNodes", "nodeSelector", "perDeviceNodeSelection", "devices"):
            newer["spec"].pop(key, None)
        slices.append(newer)
    return slices


def _classes(draw: Draw[Any], schemas: dict[str, DriverSchema]) -> Documents:
    classes = []
    drivers = sorted(schemas)
    for driver in drivers:
        classes.append(_class(SHORT[driver], [f'device.driver == "{driver}"']))
    for i in range(draw(st.integers(0, 3))):
        driver = draw(st.sampled_from(drivers))
        selectors = [f'device.driver == "{driver}"']
        menu = selector_menu(driver, schemas[driver])
        selectors += draw(st.lists(st.sampled_from(menu), max_size=2))
        config = None
        if draw(st.booleans()):
            config = {"driver": driver, "parameters": {"kind": "Config", "class": i}}
        classes.append(_class(f"{SHORT[driver]}-x{i}", selectors, config))
    if chance(draw, 4):
        classes.append(_class("any", []))
    if chance(draw, 25):
        classes.append(_class("broken", [draw(st.sampled_from(BROKEN_SELECTORS))]))
    return classes


def _class(name: str, selectors: list[str], config: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selectors:
        spec["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if config is not None:
        spec["config"] = [{"opaque": config}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass(frozen=True, slots=True)
class Cluster:
    """A random cluster as kubectl prints it, and what each driver publishes."""

    nodes: Documents
    classes: Documents
    slices: Documents
    schemas: dict[str, DriverSchema]

    @property
    def documents(self) -> Documents:
        return [*self.nodes, *self.classes, *self.slices]


@st.composite
def clusters(draw: Draw[Any]) -> Cluster:
    """Nodes, DeviceClasses and ResourceSlices of one random cluster."""
    drivers = draw(st.lists(st.sampled_from(DRIVERS), min_size=1, max_size=3, unique=True))
    schemas = {driver: draw(driver_schemas()) for driver in drivers}
    slices: Documents = []
    for driver in drivers:
        names: list[str] = []
        for p in range(draw(st.integers(1, 2))):
            slices += _pool_slices(
                draw, driver, schemas[driver], f"{SHORT[driver]}-pool-{p}", names
            )
    return Cluster(
        nodes=[node_document(n) for n in sorted(NODES)],
        classes=_classes(draw, schemas),
        slices=slices,
        schemas=schemas,
    )


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------


def _devices_of(cluster: Cluster) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for s in cluster.slices:
        for d in s["spec"].get("devices", ()):
            found.append((s["spec"]["driver"], s["spec"]["pool"]["name"], d))
    return found


def _allocated_claims(draw: Draw[Any], cluster: Cluster) -> Documents:
    """Claims other pods hold: exclusive devices, admin access, shares with capacity."""
    devices = _devices_of(cluster)
    claims = []
    for i in range(draw(st.integers(0, 2)) if devices else 0):
        picked = draw(st.lists(st.sampled_from(devices), min_size=1, max_size=3))
        results = []
        for j, (driver, pool, device) in enumerate(picked):
            result: dict[str, Any] = {
                "request": "req-0",
                "driver": driver,
                "pool": pool,
                "device": device["name"],
            }
            if device.get("allowMultipleAllocations") and not chance(draw, 3):
                result["shareID"] = f"{i:08x}-{j:04x}-4000-8000-000000000000"
                if "capacity" in device and not chance(draw, 4):
                    result["consumedCapacity"] = {
                        name: draw(st.sampled_from(["2Gi", "4Gi", "8Gi"]))
                        if name == "memory"
                        else "1"
                        for name in device["capacity"]
                    }
            elif chance(draw, 6):
                result["adminAccess"] = True
            results.append(result)
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"allocated-{i}", "namespace": "default"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "req-0",
                                "exactly": {"deviceClassName": "any", "count": len(results)},
                            }
                        ]
                    }
                },
                "status": {"allocation": {"devices": {"results": results}}},
            }
        )
    return claims


def _tolerations(draw: Draw[Any]) -> list[dict[str, Any]]:
    options = [
        {"key": "maint", "operator": "Exists"},
        {"key": "maint", "operator": "Equal", "value": "soon", "effect": "NoSchedule"},
        {"key": "gpu-error", "operator": "Exists", "effect": "NoExecute"},
        {"operator": "Exists"},
    ]
    return draw(st.lists(st.sampled_from(options), min_size=1, max_size=2, unique_by=repr))


def _request_body(
    draw: Draw[Any], cluster: Cluster, classes: dict[str, str | None], *, sub: bool
) -> dict[str, Any]:
    """The fields of an ``exactly`` request or of a subrequest.

    ``classes`` maps class names to the driver they select (None: any driver).
    """
    body: dict[str, Any] = {}
    name = draw(st.sampled_from(sorted(classes)))
    body["deviceClassName"] = "no-such-class" if chance(draw, 80) else name
    if chance(draw, 10):
        body["allocationMode"] = "All"
    else:
        body["allocationMode"] = "ExactCount"
        body["count"] = 33 if chance(draw, 80) else draw(st.sampled_from([1, 1, 1, 2, 2, 3]))
    driver = classes[name]
    drivers = [driver] if driver is not None else sorted(cluster.schemas)
    menu = [e for d in drivers for e in selector_menu(d, cluster.schemas.get(d))]
    selectors = draw(st.lists(st.sampled_from(menu), max_size=2))
    if chance(draw, 50):
        selectors.append(draw(st.sampled_from(BROKEN_SELECTORS)))
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if not sub and chance(draw, 6):
        body["adminAccess"] = not chance(draw, 4)
    if chance(draw, 3):
        body["tolerations"] = _tolerations(draw)
    if chance(draw, 5):
        body["capacity"] = {
            "requests": {
                draw(st.sampled_from(["memory", "memory", "cores"])): draw(
                    st.sampled_from(["1Gi", "3Gi", "4Gi", "10Gi", "16Gi", "2"])
                )
            }
        }
    return body


def _scope(draw: Draw[Any], addressable: list[str]) -> list[str]:
    """The ``requests`` of a constraint or config: mostly all (empty), else one or two."""
    if not chance(draw, 2):
        return []
    return draw(st.lists(st.sampled_from(addressable), unique=True, min_size=1, max_size=2))


def _claim(
    draw: Draw[Any], index: int, cluster: Cluster, classes: dict[str, str | None]
) -> dict[str, Any]:
    requests: Documents = []
    addressable: list[str] = []
    for r in range(draw(st.sampled_from([1, 1, 2, 2, 3]))):
        name = f"req-{r}"
        addressable.append(name)
        if chance(draw, 4):
            subs = []
            for k in range(draw(st.integers(1, 3))):
                subs.append({"name": f"sub-{k}", **_request_body(draw, cluster, classes, sub=True)})
                addressable.append(f"{name}/sub-{k}")
            requests.append({"name": name, "firstAvailable": subs})
        else:
            requests.append(
                {"name": name, "exactly": _request_body(draw, cluster, classes, sub=False)}
            )
    devices: dict[str, Any] = {"requests": requests}
    drivers = sorted(cluster.schemas)
    constraints = []
    for _ in range(draw(st.integers(1, 2)) if chance(draw, 2) else 0):
        attribute = draw(
            st.sampled_from(
                [f"{d}/{a}" for d in drivers for a in CONSTRAINT_ATTRIBUTES] + [TOPOLOGY]
            )
        )
        kind = "distinctAttribute" if chance(draw, 3) else "matchAttribute"
        constraint: dict[str, Any] = {kind: attribute}
        scope = _scope(draw, addressable)
        if scope:
            constraint["requests"] = scope
        constraints.append(constraint)
    if constraints:
        devices["constraints"] = constraints
    configs = []
    for c in range(draw(st.integers(1, 2)) if chance(draw, 3) else 0):
        config: dict[str, Any] = {
            "opaque": {
                "driver": draw(st.sampled_from(drivers)),
                "parameters": {"kind": "ClaimConfig", "n": c},
            }
        }
        scope = _scope(draw, addressable)
        if scope:
            config["requests"] = scope
        configs.append(config)
    if configs:
        devices["config"] = configs
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{index}", "namespace": "default"},
        "spec": {"devices": devices},
    }


def class_drivers(cluster: Cluster) -> dict[str, str | None]:
    """Class name -> the driver its first selector names (None: no driver selector)."""
    found: dict[str, str | None] = {}
    for c in cluster.classes:
        selectors = c["spec"].get("selectors") or []
        expression = selectors[0]["cel"]["expression"] if selectors else ""
        found[c["metadata"]["name"]] = next(
            (
                d
                for d in DRIVERS
                if f'"{d}"' in expression and expression.startswith("device.driver")
            ),
            None,
        )
    return found


def claim_sets(cluster: Cluster, first: int = 0) -> st.SearchStrategy[Documents]:
    """One pod's claims (1-3, named ``claim-<first>``...) over the cluster's classes."""
    classes = class_drivers(cluster)

    @st.composite
    def build(draw: Draw[Any]) -> Documents:
        n = draw(st.sampled_from([1, 1, 1, 2, 3]))
        return [_claim(draw, first + i, cluster, classes) for i in range(n)]

    return build()


@st.composite
def scenarios(draw: Draw[Any], gates: st.SearchStrategy[Features] | None = None) -> Scenario:
    """A cluster, its committed claims, one pod's claims, the node and the feature gates."""
    cluster = draw(clusters())
    allocated = _allocated_claims(draw, cluster)
    pending = draw(claim_sets(cluster))
    node = draw(st.sampled_from(["node-1", "node-1", "node-1", "node-2"]))
    chosen = draw(gates if gates is not None else features())
    documents = [*cluster.documents, *allocated, *pending]
    return Scenario(documents, node, chosen)


# --------------------------------------------------------------------------------------
# Fuzzing: mutated objects and texts, CEL expressions
# --------------------------------------------------------------------------------------

_STRANGE_SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**31,
    2**63,
    -(2**63) - 1,
    2**200,
    1.5,
    -0.0,
    float("inf"),
    float("nan"),
    1e308,
    "",
    " ",
    "0",
    "-1",
    "1e3",
    "Gi",
    "1Gi",
    "-5Gi",
    "1.5.0",
    "v1",
    "\x00",
    "é" * 70,
    "a" * 300,
    "x/y/z",
    "DRA",
    "true",
    "a.b.c",
    "🙂",
]


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values, biased towards values decoders find awkward."""
    scalars = st.one_of(
        st.sampled_from(_STRANGE_SCALARS),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(
                st.one_of(
                    st.text(max_size=8),
                    st.sampled_from(
                        [
                            "name",
                            "value",
                            "spec",
                            "devices",
                            "int",
                            "string",
                            "version",
                            "bool",
                            "count",
                            "requests",
                            "exactly",
                            "cel",
                            "expression",
                        ]
                    ),
                ),
                inner,
                max_size=4,
            ),
        ),
        max_leaves=max_leaves,
    )


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*prefix, i))
    return found


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _mutate_once(draw: Draw[Any], doc: Any) -> Any:
    path = draw(st.sampled_from(_paths(doc)))
    if not path:
        return draw(json_values())
    parent, key = _get(doc, path[:-1]), path[-1]
    value = parent[key]
    op = draw(st.sampled_from(["replace", "delete", "retype", "strange", "wrap", "grow", "clone"]))
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = draw(json_values())
    elif op == "strange":
        parent[key] = draw(st.sampled_from(_STRANGE_SCALARS))
    elif op == "wrap":
        parent[key] = draw(st.sampled_from([[value], {"value": value}, {str(key): value}]))
    elif op == "retype":
        parent[key] = draw(st.sampled_from([str(value), [], {}, 7, True, None]))
    elif op == "grow" and isinstance(value, list) and value:
        # Past the API's list limits (128 devices, 32 requests ...).
        parent[key] = value * draw(st.sampled_from([2, 33, 129]))
    elif op == "clone" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=10))] = value
    return doc


@st.composite
def mutated_documents(draw: Draw[Any], seeds: tuple[dict[str, Any], ...]) -> Any:
    """A real Kubernetes object with one to four random edits."""
    import copy

    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        doc = _mutate_once(draw, doc)
    return doc


_TEXT_SPLICES = [
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!python/object:os.system ",
    b"!!binary ",
    b"? ",
    b"%YAML 1.1\n",
    b"\t",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\n---\n",
    b"\n...\n",
    b"\xff\xfe",
    b"\x00",
    b"\xc3\x28",
    b": ",
    b"- ",
    b"'",
    b'"',
    b"#",
    b"|\n",
    b">-\n",
    b"\\u0000",
    b"1e999",
    b"0x1F",
    b"0o17",
    b".inf",
    b".nan",
    b"~",
    b"\r\n",
    b"\xef\xbb\xbf",
]


@st.composite
def mutated_texts(draw: Draw[Any], seeds: tuple[bytes, ...]) -> bytes:
    """A real YAML or JSON file with byte-level edits (splices, cuts, duplications)."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["splice", "cut", "dup", "bytes", "truncate"]))
        if op == "splice":
            data[at:at] = draw(st.sampled_from(_TEXT_SPLICES))
        elif op == "cut":
            del data[at : at + draw(st.integers(1, 40))]
        elif op == "dup":
            data[at:at] = data[at : at + draw(st.integers(1, 80))]
        elif op == "bytes":
            data[at:at] = draw(st.binary(max_size=6))
        else:
            del data[at:]
    return bytes(data)


# A small CEL grammar: enough to reach every part of the parser, checker and evaluator.
_IDENTS = ["device", "x", "y", "nope", "cel", "optional", "math"]
_DRIVER_MAP = 'device.attributes["gpu.example.com"]'
_CAP_MAP = 'device.capacity["gpu.example.com"]'


def _cel_literals() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-(2**64), 2**64).map(str),
        st.integers(0, 2**65).map(lambda v: f"{v}u"),
        st.sampled_from(
            [
                "1.5",
                "-0.0",
                "1e308",
                "1e-400",
                ".5",
                "0x7fffffffffffffff",
                "0xFFFFFFFFFFFFFFFFu",
                "true",
                "false",
                "null",
                "b'\\xff'",
                "'''x'''",
                'r"\\d"',
                '"\\u00e9"',
                '"\\x"',
                "[]",
                "{}",
            ]
        ),
        st.text(max_size=6).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
        st.sampled_from(
            [
                _DRIVER_MAP + ".model",
                _DRIVER_MAP + ".numa",
                _CAP_MAP + ".memory",
                "device.driver",
                "device.allowMultipleAllocations",
                _DRIVER_MAP + ".?links",
                'quantity("1Gi")',
                'semver("1.2.3")',
                "device.attributes",
                _DRIVER_MAP,
            ]
        ),
        st.sampled_from(_IDENTS),
    )


def _cel_compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.sampled_from(
        ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]
    )
    methods = st.sampled_from(
        [
            "size()",
            "startsWith({})",
            "matches({})",
            "contains({})",
            "isGreaterThan({})",
            "compareTo({})",
            "orValue({})",
            "exists(v, {})",
            "all(v, {})",
            "map(v, {})",
            "filter(v, {})",
            "exists_one(v, {})",
            "includes({})",
            "asInteger()",
            "major()",
            "lowerAscii()",
            "split({})",
            "join()",
            "sum()",
            "sort()",
            "transformList(i, v, {})",
        ]
    )
    functions = st.sampled_from(
        [
            "size({})",
            "has({}.x)",
            "int({})",
            "uint({})",
            "double({})",
            "string({})",
            "bytes({})",
            "type({})",
            "dyn({})",
            "quantity({})",
            "semver({})",
            "isQuantity({})",
            "cel.bind(z, {}, z)",
            "optional.of({})",
            "optional.none()",
            "duration({})",
            "lists.range({})",
            "sets.contains([1], [{}])",
            "ip({})",
            "cidr({})",
            "url({})",
        ]
    )
    return st.one_of(
        st.tuples(inner, binary, inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(["!", "-", "!!", "--"]), inner).map("".join),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(inner, methods, inner).map(lambda t: f"{t[0]}.{t[1].format(t[2])}"),
        st.tuples(functions, inner).map(lambda t: t[0].format(t[1])),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[?{t[1]}]"),
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(inner, inner), max_size=2).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
        ),
        inner.map(lambda e: f"({e})"),
    )


def cel_expressions() -> st.SearchStrategy[str]:
    """Random CEL text from a small grammar (mostly well-formed, often ill-typed)."""
    return st.recursive(_cel_literals(), _cel_compound, max_leaves=12)


# Expensive CEL: typed building blocks whose work grows with a size, combined so that
# an evaluation may run to the cost limit, past a deadline, or build large values (the
# bounds the deadline and memory fuzzer checks).
# Hypothesis favours a list's first element: a size where the work is already heavy.
_SIZES = st.sampled_from([1000, 10_000, 100_000, 300_000, 1_000_000, 100, 7, 1, 0])
_GPU = 'device.attributes["gpu.example.com"]'


def _cel_lists(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """List-of-int expressions built from ``inner`` lists."""
    return st.one_of(
        inner.map(lambda e: f"{e}.map(x, x + 1)"),
        inner.map(lambda e: f"{e}.filter(x, x % 3 == 0)"),
        inner.map(lambda e: f"{e}.map(x, x % 2 == 0, x * 2)"),
        inner.map(lambda e: f"{e}.sort()"),
        inner.map(lambda e: f"dyn({e}).sort()"),
        inner.map(lambda e: f"{e}.distinct()"),
        inner.map(lambda e: f"{e}.reverse()"),
        inner.map(lambda e: f"{e}.sortBy(x, -x)"),
        inner.map(lambda e: f"{e}.transformList(i, v, v + i)"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]} + {t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"(dyn({t[0]}) + dyn({t[1]}))"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}].flatten()"),
        st.tuples(inner, _SIZES).map(lambda t: f"{t[0]}.slice(0, {min(t[1], 5)})"),
        st.tuples(inner, inner).map(lambda t: f"cel.bind(l, {t[0]}, l + {t[1]} + l)"),
    )


def _cel_strings(lists: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    base = st.one_of(
        st.just('"x"'),
        st.just("device.driver"),
        lists.map(lambda e: f'{e}.map(i, "ab").join()'),
        lists.map(lambda e: f'{e}.map(i, string(i)).join(",")'),
    )

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map(lambda t: f"({t[0]} + {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"(dyn({t[0]}) + dyn({t[1]}))"),
            st.tuples(inner, inner).map(lambda t: f'{t[0]}.replace("", {t[1]})'),
            st.tuples(inner, inner).map(lambda t: f'"%s%s".format([{t[0]}, {t[1]}])'),
            st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}].join()"),
            inner.map(lambda e: f"{e}.lowerAscii()"),
            inner.map(lambda e: f"strings.quote({e})"),
            inner.map(lambda e: f'{e}.split("").join("-")'),
            inner.map(lambda e: f"cel.bind(s, {e}, s + s)"),
        )

    return st.recursive(base, grow, max_leaves=6)


def _cel_bools(lists: st.SearchStrategy[str], strings: st.SearchStrategy[str]) -> Any:
    return st.one_of(
        lists.map(lambda e: f"{e}.all(x, x >= 0)"),
        lists.map(lambda e: f"{e}.exists(x, x < 0)"),
        lists.map(lambda e: f"{e}.exists_one(x, x == 3)"),
        st.tuples(lists, lists).map(lambda t: f"{t[0]}.all(x, {t[1]}.exists(y, y == x))"),
        st.tuples(lists, lists).map(lambda t: f"sets.contains({t[0]}, {t[1]})"),
        st.tuples(lists, lists).map(lambda t: f"sets.intersects({t[0]}, {t[1]})"),
        st.tuples(lists, lists).map(lambda t: f"{t[0]} == {t[1]}"),
        lists.map(lambda e: f"-1 in dyn({e})"),
        lists.map(lambda e: f"-1 in {e}"),
        lists.map(lambda e: f"{e}.isSorted()"),
        lists.map(lambda e: f"{e}.sum() >= 0"),
        lists.map(lambda e: f"{e}.indexOf(-1) == -1"),
        strings.map(lambda e: f'{e}.matches("(a|b)*c")'),
        strings.map(lambda e: f'{e}.findAll("").size() > 0'),
        strings.map(lambda e: f'{e}.contains("abc")'),
        st.tuples(strings, strings).map(lambda t: f"{t[0]} < {t[1]}"),
        strings.map(lambda e: f"size({e}) > 0"),
        lists.map(lambda e: f"size({e}) > 0"),
        lists.map(lambda e: f"{e}.all(x, {_GPU}.numa != x + 1000000)"),
    )


def heavy_cel_expressions() -> st.SearchStrategy[str]:
    """Well-typed selectors whose work and values grow with random sizes: the inputs of
    the deadline and memory fuzzer."""
    ranges = _SIZES.map(lambda n: f"lists.range({n})")
    # Mostly ranges: the small literal lists alone rarely reach a bound.
    leaves = st.one_of(ranges, ranges, ranges, st.just(f"{_GPU}.ids"), st.just("[1, 2, 3]"))
    lists = st.recursive(leaves, _cel_lists, max_leaves=4)
    strings = _cel_strings(lists)
    bools = _cel_bools(lists, strings)
    return st.recursive(
        bools,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda t: f"({t[0]}) && ({t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]}) || ({t[1]})"),
            inner.map(lambda e: f"!({e})"),
        ),
        max_leaves=3,
    )


_CEL_SPLICES = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ".",
    "?",
    ":",
    "!",
    "&&",
    "||",
    '"',
    "'",
    "\\",
    "`",
    "@",
    "#",
    " in ",
    ".?",
    "[?",
    "1u",
    "-9223372036854775808",
    "e999",
    "\n",
    "\x00",
    "é",
    "device",
    ".exists(v, ",
    "size(",
    ", ",
]


@st.composite
def mutated_selectors(draw: Draw[Any], seeds: tuple[str, ...]) -> str:
    """A real selector with character-level edits."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["splice", "cut", "dup", "nest"]))
        if op == "splice":
            text = text[:at] + draw(st.sampled_from(_CEL_SPLICES)) + text[at:]
        elif op == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
        elif op == "dup":
            text = text[:at] + text[at : at + draw(st.integers(1, 30))] * 2 + text[at + 1 :]
        else:
            depth = draw(st.sampled_from([2, 10, 200, 400]))
            text = "(" * depth + text + ")" * depth
    return text
