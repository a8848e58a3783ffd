"""The ``draspeed`` command: kubectl-shaped input, upstream-shaped answers.

One module per command (``allocate``, ``feasible``, ``explain``, ``capacity``,
``generate``, ``demo``), each with ``add_parser(subparsers)`` and ``run(args, out, err)``;
:mod:`~draspeed.cli.options` holds what they share, :mod:`~draspeed.cli.render` what
they print with. Exit status of every command: 0 success, 1 does not fit, 2 bad input or
usage (the error names object and field), 3 allocation error (upstream's text), 4 the
cluster could not be read (``--from-cluster``: one line naming the server and the reason).
When the reader of the output goes away (``draspeed demo | head -1``) the command ends as
a Unix tool ends on SIGPIPE: no message, killed by the signal (the shell shows 141);
where that signal does not exist, exit status 141.

Installed as ``draspeed`` and as ``kubectl-draspeed``, so that kubectl finds it as a
plugin: ``kubectl draspeed feasible --pod default/trainer``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from draspeed.cli import allocate, capacity, demo, explain, feasible, generate
from draspeed.cli.options import EXIT_CLUSTER, EXIT_CODES, EXIT_USAGE
from draspeed.errors import DraspeedError

EXAMPLES = (
    """\
examples:
  draspeed demo                                        # the built-in demo cluster
  draspeed feasible -f cluster.yaml --claims pod-claims.yaml
  draspeed explain -f cluster.yaml --claims pod-claims.yaml --node node-1
  draspeed allocate -f cluster.yaml -f claims.yaml --node node-1 -o yaml
  draspeed generate nvidia-mig --nodes 4 --claim mig-1g10gb | draspeed feasible -f -
  kubectl draspeed feasible --from-cluster --pod default/trainer   # as a kubectl plugin

"""
    + EXIT_CODES
    + "\n"
)

_COMMANDS = (allocate, feasible, explain, demo, generate, capacity)


def build_parser(prog: str = "draspeed") -> argparse.ArgumentParser:
    from draspeed import __version__

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Kubernetes DRA device allocation, decided exactly as the upstream "
        "allocator decides it.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"draspeed {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    prog: str = "draspeed",
    freeze_inputs: bool = False,
) -> int:
    """Entry point; returns the exit status (also used by tests with captured streams).

    ``freeze_inputs``: hand the objects read from the input to ``gc.freeze`` (see
    :func:`command`; only for a process of its own)."""
    from draspeed.kube.client import ClientMissing, ClusterReadError

    out, err = out or sys.stdout, err or sys.stderr
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's own usage errors exit 2 already
        return int(exc.code or 0)
    # A stream the process was started with closed (>&-) is None: what would go to a
    # closed standard error is lost, not the exit status; without standard output
    # there is nowhere to answer.
    if err is None:
        err = open(os.devnull, "w")  # noqa: SIM115 (for the life of the process)
    if out is None:
        err.write("error: standard output is closed\n")
        return EXIT_USAGE
    args.freeze_inputs = freeze_inputs
    if freeze_inputs:
        gc.disable()  # until the inputs are read and frozen (options.load_sources)
    try:
        status = int(args.run(args, out, err))
        out.flush()  # a reader gone now is met here, not in the interpreter's shutdown
        return status
    except ClusterReadError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_CLUSTER
    except ClientMissing as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except DraspeedError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        return _reader_gone(out)
    except OSError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130
    finally:
        if freeze_inputs:
            gc.enable()


# The exit status of a tool killed by SIGPIPE, as a shell reports it: 128 + 13.
EXIT_BROKEN_PIPE = 141


def _reader_gone(out: TextIO) -> int:
    """The reader of standard output went away (``draspeed ... | head``): stop as Unix
    tools do, killed by SIGPIPE, without a traceback. The shell reports 141 (and a
    pipeline under ``set -o pipefail`` fails, as ``yes | head`` does); where there is no
    SIGPIPE (Windows), or output goes elsewhere, the status is 141 all the same."""
    if out is sys.stdout:
        # Python's shutdown would flush stdout again and complain: point it at nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sigpipe = getattr(signal, "SIGPIPE", None)
        if sigpipe is not None:
            signal.signal(sigpipe, signal.SIG_DFL)
            os.kill(os.getpid(), sigpipe)
    return EXIT_BROKEN_PIPE


def command(prog: str = "draspeed") -> NoReturn:
    """The installed executables (``draspeed``, ``python -m draspeed``): :func:`main`
    run as a process of its own.

    Two things only a process that owns its heap may do, each worth seconds on a big
    cluster file (200,000 devices, 100,000 claims: 30 s became 8 s): the objects read
    from the input are moved out of the garbage collector's reach once read (they live
    until the command ends, and every collection would walk them again), and the
    process ends without freeing its heap object by object, as mypy's fast exit does.
    """
    status = main(prog=prog, freeze_inputs=True)
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe or stream (None: closed when the process started): nothing
        # left to write.
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    os._exit(status)


def kubectl_main() -> NoReturn:
    """``kubectl-draspeed``: the same commands, as ``kubectl draspeed ...``."""
    command(prog="kubectl draspeed")
