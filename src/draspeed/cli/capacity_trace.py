"""``draspeed capacity --trace FILE``: replay pod traces over time
(:func:`draspeed.analysis.simulate`); several traces run as a sweep (local pool or
Dask), each on the cluster after the what-if changes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.capacity_inputs import UsageError, cluster_source, run_sweep, shape_name
from draspeed.cli.output import emit, emit_names
from draspeed.cli.render import Progress, format_table
from draspeed.errors import InputError

if TYPE_CHECKING:
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.analysis.simulate import TraceReport
    from draspeed.analysis.whatif import Change
    from draspeed.api.loader import Objects
    from draspeed.engine.snapshot import Snapshot


def run_traces(
    args: argparse.Namespace,
    objects: Objects,
    snapshot: Snapshot,
    shapes: list[ShapeSource],
    changes: list[Change],
    out: TextIO,
    err: TextIO,
) -> None:
    from draspeed.analysis.trace import read_trace

    names = [shape_name(s) for s in shapes]
    try:
        traces = [read_trace(path, names) for path in args.trace]
    except OSError as exc:
        raise UsageError(f"--trace: {exc}") from exc
    except InputError as exc:
        raise UsageError(str(exc)) from exc
    if len(traces) == 1:
        from draspeed.analysis.simulate import simulate

        [pods] = traces
        with Progress("trace", total=len(pods), stream=err) as bar:

            def arrived(done: int, total: int) -> None:
                bar.done = done

            reports = [
                simulate(
                    snapshot,
                    shapes,
                    pods,
                    args.strategy,
                    progress=arrived,
                    timeout=args.timeout or None,
                )
            ]
    else:
        reports = _sweep(args, objects, shapes, changes, err)
    if args.plot:
        _plot(reports, args.trace, args.plot)
    print_traces(reports, args.trace, args, out)


def _sweep(
    args: argparse.Namespace,
    objects: Objects,
    shapes: list[ShapeSource],
    changes: list[Change],
    err: TextIO,
) -> list[TraceReport]:
    from draspeed.analysis.sweep import TraceScenario

    cluster = cluster_source(args, objects)
    scenarios = [
        TraceScenario(
            path,
            cluster,
            tuple(shapes),
            str(Path(path).resolve()),
            tuple(changes),
            args.strategy,
            timeout=args.timeout or None,
        )
        for path in args.trace
    ]
    results = run_sweep(scenarios, args, err, "traces")
    return [r.report for r in results]


def _plot(reports: list[TraceReport], paths: list[str], target: str) -> None:
    from draspeed.analysis import plots

    if len(reports) == 1:
        plots.save(plots.trace_figure(reports[0]), target)
        return
    path = Path(target)
    for k, report in enumerate(reports):
        name = path.with_name(f"{path.stem}-{k}{path.suffix}")
        plots.save(plots.trace_figure(report), str(name))


def print_traces(
    reports: list[TraceReport], paths: list[str], args: argparse.Namespace, out: TextIO
) -> None:
    output = args.output
    if output.format == "name":  # the pods that never ran, as kubectl names them
        emit_names((f"pod/{p.name}" for r in reports for p in r.pods if p.start is None), out)
        return
    if output.is_document:
        docs: list[dict[str, Any]] = [
            {"trace": path, **r.to_dict(samples=args.trace_samples, pods=args.trace_samples)}
            for path, r in zip(paths, reports, strict=True)
        ]
        emit({"traces": docs} if len(docs) > 1 else docs[0], output, out)
        return
    for k, (path, report) in enumerate(zip(paths, reports, strict=True)):
        if k:
            out.write("\n")
        _print_one(path, report, out)


def _print_one(path: str, report: TraceReport, out: TextIO) -> None:
    waits = report.waits()
    never = {s: n for s, n in report.never_ran.items() if n}
    end = float(report.times[-1]) if len(report.times) else 0.0
    out.write(
        f"trace {path}: {len(report.pods)} pods, {report.ran} ran, "
        f"{len(report.pods) - report.ran} never ran; strategy {report.strategy}; "
        f"{end:.1f}s of trace replayed in {report.seconds:.2f}s ({report.calls} allocate calls)\n"
    )
    out.write(
        f"  waiting: mean {waits['mean']:.1f}s, median {waits['p50']:.1f}s, "
        f"95th percentile {waits['p95']:.1f}s, longest {waits['max']:.1f}s; "
        f"at most {int(report.waiting.max()) if len(report.waiting) else 0} pods waiting\n"
    )
    if never:
        out.write("  never ran: " + ", ".join(f"{s}: {n}" for s, n in never.items()) + "\n")
    rows = [["CLASS / COUNTER", "PEAK IN USE", "MEAN IN USE"]]
    for name, values in report.utilisation.items():
        mean = _time_mean(report, values)
        rows.append([name, f"{100 * report.peak(name):.1f}%", f"{100 * mean:.1f}%"])
    out.write("\n")
    out.write("".join(f"  {line}\n" for line in format_table(rows).splitlines()))


def _time_mean(report: TraceReport, values: Any) -> float:
    """The share in use averaged over time (each sample holds until the next)."""
    times = report.times
    if len(times) < 2:
        return float(values[0]) if len(values) else 0.0
    spans = times[1:] - times[:-1]
    total = float(spans.sum())
    return float((values[:-1] * spans).sum() / total) if total else float(values[-1])
