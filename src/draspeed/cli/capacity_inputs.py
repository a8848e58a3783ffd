"""Reading ``draspeed capacity``'s inputs: the cluster, the pod shapes, their ratios
and the what-if changes (``--add-nodes`` specs: :func:`parse_add_nodes`); and where its
sweeps run (:func:`run_sweep`: local workers or ``--scheduler``'s Dask cluster).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.options import UsageError

if TYPE_CHECKING:
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.analysis.sweep import ClusterSource
    from draspeed.analysis.whatif import AddNodes, Change
    from draspeed.api.loader import Objects
    from draspeed.engine.snapshot import Snapshot

__all__ = ["UsageError", "parse_add_nodes", "read_cluster"]


def read_cluster(args: argparse.Namespace, err: TextIO) -> Objects:
    """The cluster of ``-f`` or ``--from-cluster`` (:func:`~draspeed.cli.options.load_sources`)."""
    from draspeed.cli.options import load_sources

    return load_sources(args, err)


def parse_shapes(args: argparse.Namespace, objects: Objects) -> list[ShapeSource]:
    from draspeed.api.loader import load

    shapes: list[ShapeSource] = []
    by_name = {t.metadata.name: t for t in objects.templates}
    by_key = {f"{t.metadata.namespace}/{t.metadata.name}": t for t in objects.templates}
    for spec in args.template:
        if spec == "-" or os.path.exists(spec):
            found = load(spec)
            pending = [c for c in found.claims if c.status.allocation is None]
            if not found.templates and not pending:
                raise UsageError(f"{spec}: no ResourceClaimTemplate or pending ResourceClaim")
            shapes.extend(found.templates)
            shapes.extend(pending)
        elif spec in by_key or spec in by_name:
            shapes.append(by_key.get(spec) or by_name[spec])
        else:
            known = ", ".join(sorted(by_name)) or "none"
            raise UsageError(
                f"--template {spec}: no such file, nor a ResourceClaimTemplate of "
                f"the input (templates: {known})"
            )
    return shapes


def parse_ratios(args: argparse.Namespace) -> dict[str, float] | None:
    if not args.ratio:
        return None
    out = {}
    for item in args.ratio:
        name, sep, weight = item.partition("=")
        try:
            out[name] = float(weight)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise UsageError(f"--ratio {item}: expected NAME=WEIGHT")
    return out


def _option_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_add_nodes(spec: str, snapshot: Snapshot) -> AddNodes:
    """``KIND:N[:k=v,...]``, ``NODE:N`` or ``FILE:N`` → an AddNodes change."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise UsageError(f"--add-nodes {spec}: expected KIND:N[:key=value,...], NODE:N or FILE:N")
    what, count_text = parts[0], parts[1]
    try:
        count = int(count_text)
    except ValueError:
        raise UsageError(f"--add-nodes {spec}: {count_text!r} is not a node count") from None
    return _add_nodes(
        f"--add-nodes {spec}", what, count, parts[2] if len(parts) == 3 else "", snapshot
    )


def parse_node_type(spec: str, snapshot: Snapshot) -> AddNodes:
    """``KIND[:k=v,...]``, ``NODE`` or ``FILE`` (what ``--add-nodes`` takes, without
    the count) → an AddNodes change of no nodes, to be given a count."""
    what, _, options = spec.partition(":")
    return _add_nodes(f"--node-type {spec}", what, 0, options, snapshot)


def _add_nodes(where: str, what: str, count: int, option_text: str, snapshot: Snapshot) -> AddNodes:
    from draspeed.analysis.whatif import AddNodes
    from draspeed.generate import KINDS

    options: dict[str, Any] = {}
    for item in filter(None, option_text.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{where}: option {item!r} is not key=value")
        options[key.replace("-", "_")] = _option_value(value)
    if what in KINDS:
        return AddNodes(count, kind=what, options=options)
    if options:
        raise UsageError(f"{where}: options are for generated kinds only")
    if any(n.name == what for n in snapshot.nodes):
        return AddNodes(count, like=what)
    if os.path.exists(what):
        return AddNodes(count, template=_file_template(what), prefix="new-node")
    raise UsageError(
        f"{where}: {what!r} is not a generated kind "
        f"({', '.join(KINDS)}), a node of the input or a file"
    )


def _file_template(path: str) -> Any:
    from draspeed.analysis.whatif import NodeTemplate
    from draspeed.api.loader import load
    from draspeed.api.model import Node, ObjectMeta

    found = load(path)
    names = {s.spec.node_name for s in found.slices if s.spec.node_name}
    if len(names) != 1:
        raise UsageError(
            f"{path}: expected the node-local ResourceSlices of exactly one node "
            f"(found nodes: {', '.join(sorted(names)) or 'none'})"
        )
    [name] = names
    node = next((n for n in found.nodes if n.name == name), Node(metadata=ObjectMeta(name=name)))
    slices = tuple(s for s in found.slices if s.spec.node_name == name)
    return NodeTemplate(node, slices, tuple(found.classes))


def parse_changes(args: argparse.Namespace, snapshot: Snapshot) -> list[Change]:
    from draspeed.analysis.whatif import Cordon, RemoveNodes

    changes: list[Change] = [parse_add_nodes(spec, snapshot) for spec in args.add_nodes]
    # A name that matches nothing would change nothing without a word: refused, as
    # feasible --nodes refuses an unknown node.
    nodes = {n.name for n in snapshot.nodes} | {
        s.spec.node_name for s in snapshot.slices if s.spec.node_name
    }
    for option, names in (("--remove-node", args.remove_node), ("--cordon-node", args.cordon_node)):
        for name in names:
            if name not in nodes:
                raise UsageError(f"{option}: no node {name!r} in the cluster")
    pools = {(s.spec.driver, s.spec.pool.name) for s in snapshot.slices}
    for spec in args.cordon_pool:
        driver, _, pool = spec.rpartition("/")
        if not any(p == pool and (not driver or d == driver) for d, p in pools):
            raise UsageError(f"--cordon-pool: no pool {spec!r} in the cluster")
    if args.remove_node:
        changes.append(RemoveNodes(tuple(args.remove_node)))
    if args.cordon_pool or args.cordon_node:
        changes.append(Cordon(pools=tuple(args.cordon_pool), nodes=tuple(args.cordon_node)))
    return changes


def parse_strategy(args: argparse.Namespace) -> None:
    """``--strategy`` checked (and written the way reports name it)."""
    from draspeed.analysis.strategies import Strategy

    try:
        args.strategy = str(Strategy.parse(args.strategy))
    except ValueError as exc:
        raise UsageError(f"--strategy: {exc}") from None


def parse_compare(args: argparse.Namespace) -> list[str]:
    """The strategies of ``--compare`` (names, comma lists, or ``all``)."""
    from draspeed.analysis.strategies import STRATEGIES, Strategy

    out: list[str] = []
    for item in args.compare:
        for name in filter(None, (n.strip() for n in item.split(","))):
            if name == "all":
                out.extend(STRATEGIES)
                continue
            try:  # as --strategy reads it, spellings like first-fit+best-fit included
                out.append(str(Strategy.parse(name)))
            except ValueError:
                raise UsageError(
                    f"--compare {name}: unknown strategy (expected one of "
                    f"{', '.join(STRATEGIES)}, or all)"
                ) from None
    return list(dict.fromkeys(out))


def shape_name(shape: ShapeSource) -> str:
    from draspeed.analysis.shapes import PodShape

    return PodShape.of(shape).name


def cluster_source(args: argparse.Namespace, objects: Objects) -> ClusterSource:
    from draspeed.analysis.sweep import FileCluster, InlineCluster

    local_files = (
        not args.scheduler
        and not args.from_cluster
        and all(f != "-" and os.path.exists(f) for f in args.filename)
    )
    if local_files:
        return FileCluster(tuple(args.filename))
    return InlineCluster(objects)


def run_sweep(scenarios: list[Any], args: argparse.Namespace, err: TextIO, label: str) -> list[Any]:
    """The sweep's results, in order: on ``--workers`` local processes, or on the Dask
    cluster at ``--scheduler``; a progress bar named ``label`` on ``err``."""
    from draspeed.analysis.sweep import sweep
    from draspeed.cli.render import Progress

    client = None
    if args.scheduler:
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise UsageError("--scheduler needs dask: pip install 'draspeed[analysis]'") from exc
        client = Client(args.scheduler)
    try:
        with Progress(label, total=len(scenarios), stream=err) as bar:

            def finished(done: int, total: int) -> None:
                bar.done = done

            return sweep(scenarios, client, max_workers=args.workers, progress=finished)
    finally:
        if client is not None:
            client.close()
