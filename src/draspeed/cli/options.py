"""What the ``draspeed`` commands share: exit codes, option types, the kubectl-shaped
input options and how they become a :class:`~draspeed.cluster.Cluster`.

Input, as kubectl takes it:

- ``-f FILE|DIR|URL|-`` (repeatable; a directory's own ``.yaml``/``.yml``/``.json``
  files, and those below it with ``-R``), or ``--from-cluster`` with
  ``--kubeconfig``/``--context`` (``--request-timeout``, ``--chunk-size``);
- ``-n NAMESPACE`` / ``-A``: whose pending claims (or pods) are asked about. Without
  either, files are taken whole and a live cluster is asked in the context's
  namespace, as kubectl does;
- ``-l SELECTOR``: only the pending claims (or, with ``--pods``, the pods) whose
  labels match;
- ``--pod [NAMESPACE/]NAME``: a pod's claims instead of the pending claims.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from draspeed.api.context import DraspeedWarning, Validation, validation_mode
from draspeed.api.text import DEFAULT_MAX_BYTES
from draspeed.cli.render import Progress
from draspeed.cluster import ENGINES, Cluster
from draspeed.errors import DraspeedError, InputError
from draspeed.features import Features
from draspeed.golang import DurationError, parse_go_duration

if TYPE_CHECKING:
    from draspeed.api.labels import Selector
    from draspeed.api.loader import Objects
    from draspeed.api.model import Pod

# Exit status of every command: 1 is "does not fit", never a crash.
EXIT_OK, EXIT_UNSUITABLE, EXIT_USAGE, EXIT_ERROR, EXIT_CLUSTER = 0, 1, 2, 3, 4

EXIT_CODES = """\
exit status: 0 success, 1 does not fit, 2 bad input or usage (the error names the
object and field), 3 allocation error (upstream's text), 4 the cluster could not be
read (--from-cluster: the server and the reason); a reader that went away (| head)
ends the command as SIGPIPE ends a Unix tool (the shell shows 141)"""


class Arguments(Protocol):
    """A parser or an argument group: what options are added to."""

    def add_argument(self, *names: str, **kwargs: Any) -> Any: ...


class UsageError(DraspeedError):
    """A usage error: printed as ``error: ...``, exit status 2."""


def parse_duration(text: str) -> float:
    """A Go duration (``1m30s``, ``500ms``, ``1h``, ``0``) → seconds; ``0`` disables."""
    try:
        nanos = parse_go_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (examples: 10s, 500ms, 1m30s)") from None
    if nanos < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must not be negative")
    return nanos / 1e9


def feature_gates(text: str) -> Features:
    """``--feature-gates``, refused with kube-scheduler's words (pflag's wrapping)."""
    try:
        return Features.parse(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(
            f'invalid argument "{text}" for "--feature-gates" flag: {exc.message}'
        ) from exc


def validation(text: str) -> Validation:
    """``--validate`` as kubectl takes it: strict|warn|ignore, or true (strict) / false."""
    value = {"true": "strict", "false": "ignore"}.get(text.lower(), text.lower())
    try:
        return validation_mode(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected strict, warn or ignore (or true / false), got {text!r}"
        ) from None


def node_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected node names separated by commas")
    return names


def label_selector(text: str) -> Selector:
    from draspeed.api.labels import SelectorError, parse_selector

    try:
        return parse_selector(text)
    except SelectorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (a solver's time limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text!r}")
    return value


def byte_size(text: str) -> int:
    """A size in bytes, as a whole number or a Kubernetes quantity (``2Gi``, ``1500M``)."""
    from draspeed.quantity import Quantity

    try:
        size = Quantity.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size in bytes (e.g. 2Gi, 1500M, 4000000000), got {text!r}"
        ) from None
    if size < 1 or not size.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, 1 or more: {text!r}")
    return size.nanos // 10**9


def command_parser(
    subparsers: Any,
    name: str,
    help: str,
    description: str,
    examples: str,
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A command's parser, its examples under ``--help``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    return parser


def add_source(p: Arguments) -> None:
    """``-f``, ``-R``, ``--from-cluster``, ``--kubeconfig``, ``--context``,
    ``--request-timeout``, ``--chunk-size``."""
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML/JSON file, directory or http(s) URL with Kubernetes objects; '-' reads "
        "stdin; repeatable",
    )
    p.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="read the directories of -f recursively, as kubectl -R",
    )
    p.add_argument(
        "--max-input-bytes",
        type=byte_size,
        default=DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help="the most a file, URL or stdin of -f may hold, e.g. 4Gi (default 1Gi)",
    )
    p.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the live cluster of the kubeconfig instead of -f (needs draspeed[kube])",
    )
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file for --from-cluster (default: $KUBECONFIG or ~/.kube/config)",
    )
    p.add_argument("--context", help="kubeconfig context for --from-cluster")
    p.add_argument(
        "--request-timeout",
        type=parse_duration,
        default=30.0,
        metavar="DURATION",
        help="give up on one API request, or fetching one -f URL, after this long (default 30s)",
    )
    p.add_argument(
        "--chunk-size",
        type=positive,
        default=500,
        metavar="N",
        help="objects per list page with --from-cluster (default 500)",
    )


def add_inputs(p: argparse.ArgumentParser, *, claims: bool, pods: str = "") -> None:
    """:func:`add_source`, ``--claims`` (if ``claims``), ``-n``, ``-A``, ``-l``, ``--pod``
    (``pods``: "one" or "many"; ``--pods`` too with "many"), ``--feature-gates``,
    ``--validate``."""
    add_source(p)
    if claims:
        p.add_argument(
            "--claims",
            action="append",
            metavar="FILE",
            help="the pod's claims: only the claims without status.allocation of these files "
            "(and a claim made from each ResourceClaimTemplate) are allocated (those of -f are "
            "then ignored); repeatable",
        )
    p.add_argument(
        "-n",
        "--namespace",
        help="only the pending claims (or pods) of this namespace",
    )
    p.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="the pending claims (or pods) of every namespace",
    )
    p.add_argument(
        "-l",
        "--selector",
        type=label_selector,
        default=None,
        metavar="SELECTOR",
        help="only the pending claims (with --pods: the pods) whose labels match, e.g. "
        "'app=trainer,tier in (a,b),!canary'",
    )
    if pods == "many":
        p.add_argument(
            "--pod",
            action="append",
            default=[],
            metavar="[NAMESPACE/]NAME",
            help="a pending pod: its claims, those made from its templates and its extended "
            "resources backed by a DeviceClass, as the scheduler asks for them; repeatable",
        )
        p.add_argument(
            "--pods",
            action="store_true",
            help="every pending pod (not bound to a node) of -n/-A that -l selects",
        )
    elif pods == "one":
        p.add_argument(
            "--pod",
            metavar="[NAMESPACE/]NAME",
            help="a pending pod: its claims, those made from its templates and its extended "
            "resources backed by a DeviceClass, as the scheduler asks for them",
        )
    p.add_argument(
        "--feature-gates",
        type=feature_gates,
        default=Features(),
        help="e.g. DRAAdminAccess=false,DRAPrioritizedList=true (default: all DRA gates on)",
    )
    p.add_argument(
        "--validate",
        type=validation,
        default="strict",
        metavar="strict|warn|ignore",
        help="as kubectl: strict (default, or true) checks objects as the API server does "
        "and refuses unknown or duplicate fields; warn only warns about those; ignore "
        "(or false) checks nothing",
    )


def add_engine(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument("--engine", choices=ENGINES, default="fast", help=help)


# kube-scheduler's DRA Filter timeout (DynamicResourcesArgs.filterTimeout, 10 s by
# default): what bounds every search unless --timeout says otherwise (0: no bound).
DEFAULT_TIMEOUT = "10s"


def add_timeout(p: Any, help: str) -> None:
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=parse_duration(DEFAULT_TIMEOUT),
        metavar="DURATION",
        help=f"{help} (default {DEFAULT_TIMEOUT}, kube-scheduler's Filter timeout; 0: no bound)",
    )


# ------------------------------------------------------------------------------ reading


@dataclass
class Inputs:
    """What the input options selected: the cluster, and the pods asked about."""

    cluster: Cluster
    pods: list[Pod]


def wanted_pods(args: argparse.Namespace) -> list[str]:
    """``--pod`` values as ``namespace/name`` (the namespace from -n, the kubeconfig
    context with --from-cluster, else ``default``)."""
    given = getattr(args, "pod", None)
    names = [given] if isinstance(given, str) else list(given or [])
    default = args.namespace or _context_namespace(args)
    return [n if "/" in n else f"{default}/{n}" for n in names]


def _context_namespace(args: argparse.Namespace) -> str:
    if getattr(args, "from_cluster", False):
        from draspeed.kube.client import context_namespace

        return context_namespace(args.context, args.kubeconfig)
    return "default"


def _namespace_filter(args: argparse.Namespace) -> str | None:
    """The namespace pending claims and pods are taken from (None: every one)."""
    if args.all_namespaces:
        if args.namespace:
            raise UsageError("a namespace (-n) cannot be given with -A/--all-namespaces")
        return None
    if args.namespace:
        return str(args.namespace)
    return _context_namespace(args) if args.from_cluster else None


def load_sources(args: argparse.Namespace, err: TextIO, *, pods: Any = None) -> Objects:
    """The objects of ``-f`` (or of the live cluster with ``--from-cluster``)."""
    objects = _read_sources(args, err, pods)
    if getattr(args, "freeze_inputs", False):
        # The command's own process (draspeed.cli.command) read them with the collector
        # off: they live until it ends, so the collector need never walk them.
        gc.freeze()
        gc.enable()
    return objects


def _read_sources(args: argparse.Namespace, err: TextIO, pods: Any) -> Objects:
    from draspeed.api.loader import load

    if args.from_cluster:
        if args.filename:
            raise UsageError("give either -f or --from-cluster, not both")
        from draspeed.kube.client import RequestPolicy
        from draspeed.kube.listing import list_cluster

        with Progress("listing the cluster", stream=err) as bar:

            def listed(what: str, count: int) -> None:
                bar.label = f"listing {what} ({count})"

            return list_cluster(
                args.context,
                kubeconfig=args.kubeconfig,
                page_size=args.chunk_size,
                pods=pods,
                policy=RequestPolicy(timeout=args.request_timeout or 30.0),
                progress=listed,
            )
    if not args.filename:
        raise UsageError("give the cluster with -f FILE or --from-cluster")
    sources = len(args.filename)
    label = f"loading {sources} input{'s' if sources != 1 else ''}"
    with Progress(label, stream=err), listed_warnings_only():
        return load(
            *args.filename,
            validate=getattr(args, "validate", True),
            recursive=args.recursive,
            timeout=args.request_timeout or 30.0,
            max_bytes=args.max_input_bytes,
        )


@contextlib.contextmanager
def listed_warnings_only() -> Iterator[None]:
    """Loading without Python's display of its warnings: the commands write the ones
    the loaded objects list (``Objects.warnings``), each once, as ``warning: ...``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DraspeedWarning)
        yield


def read_inputs(args: argparse.Namespace, err: TextIO) -> Inputs:
    """The cluster of the input options and the pods asked about (``--pod``,
    ``--pods``); the pending claims narrowed by ``-n``/``-l`` when no pod is asked
    about. Warnings are written to ``err``."""
    from draspeed.api.loader import load

    keys = wanted_pods(args)
    many = bool(getattr(args, "pods", False))
    if (keys or many) and getattr(args, "claims", None):
        raise UsageError("give either --claims or --pod/--pods, not both")
    namespace = _namespace_filter(args)
    query = None
    if keys or many:
        from draspeed.kube.listing import PodQuery

        # With --pods, every pending pod of the namespace that -l selects (listed, the
        # selector applied by the server); else just the pods named.
        selector = args.selector.text if args.selector is not None else ""
        query = PodQuery((), namespace, selector) if many else PodQuery(tuple(keys))
    objects = load_sources(args, err, pods=query)
    claims_files = getattr(args, "claims", None)
    with listed_warnings_only():
        claims = (
            load(*claims_files, validate=args.validate, max_bytes=args.max_input_bytes)
            if claims_files
            else None
        )
    cluster = Cluster.from_objects(objects, features=args.feature_gates, claims=claims)
    for warning in cluster.warnings:
        err.write(f"warning: {warning}\n")
    if keys or many:
        return Inputs(cluster, _selected_pods(cluster, keys, many, namespace, args.selector))
    if claims is not None:
        ignored = sum(1 for c in objects.claims if c.status.allocation is None)
        if ignored:
            err.write(
                f"warning: {ignored} claim{'s' if ignored != 1 else ''} without "
                "status.allocation in -f ignored: --claims names the pod's claims\n"
            )
    cluster.pending = [
        c
        for c in cluster.pending
        if (namespace is None or c.metadata.namespace == namespace)
        and (args.selector is None or args.selector.matches(c.metadata.labels))
    ]
    if not cluster.pending:
        where = f" in namespace {namespace}" if namespace else ""
        err.write(
            f"warning: no pending claims{where} (claims without status.allocation) to allocate\n"
        )
    return Inputs(cluster, [])


def _selected_pods(
    cluster: Cluster,
    keys: list[str],
    many: bool,
    namespace: str | None,
    selector: Selector | None,
) -> list[Pod]:
    found = [cluster.find_pod(k) for k in keys]
    if many:
        for pod in cluster.pods:
            if pod in found or pod.node_name or pod.deleting:
                continue
            if pod.phase in ("Succeeded", "Failed"):
                continue
            if namespace is not None and pod.metadata.namespace != namespace:
                continue
            if selector is not None and not selector.matches(pod.metadata.labels):
                continue
            found.append(pod)
    return found


def read_cluster(args: argparse.Namespace, err: TextIO) -> Cluster:
    """:func:`read_inputs` for commands without pods."""
    return read_inputs(args, err).cluster
