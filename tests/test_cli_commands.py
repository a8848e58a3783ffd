"""The ``draspeed`` command as a user runs it: every command and exit status.

Commands run in subprocesses through the installed entry point when there is one
next to the interpreter (else ``python -m draspeed``), all at once in a thread pool
so the suite stays fast. ``feasible`` is checked against ``allocate`` node by node
(in-process: many runs) on the demo cluster and on generated clusters.
"""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

import draspeed
from draspeed.cli import build_parser, main
from draspeed.cli.demo import demo_cluster_text
from draspeed.cli.render import Progress, Style, format_table
from draspeed.generate import generate
from draspeed.testing.engines import normalise


def _command() -> list[str]:
    found = shutil.which("draspeed", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "draspeed"]


def _env(**extra: str) -> dict[str, str]:
    """The environment of a run: the draspeed these tests import comes first."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    source = str(Path(draspeed.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def _claim_docs(names: tuple[str, ...]) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(demo_cluster_text()) if d]
    return [d for d in docs if d["kind"] == "ResourceClaim" and d["metadata"]["name"] in names]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    out = {"cluster": root / "demo.yaml", "state": root / "state.yaml"}
    out["cluster"].write_text(demo_cluster_text())
    docs = [d for d in yaml.safe_load_all(demo_cluster_text()) if d]
    state = [d for d in docs if d["kind"] != "ResourceClaim" or "allocation" in d.get("status", {})]
    out["state"].write_text(yaml.safe_dump_all(state))
    for name, claims in {
        "six": ("six-gpus-one-root",),
        "trainer": ("trainer-gpus",),
        "h100": ("full-h100",),
    }.items():
        out[name] = root / f"{name}.yaml"
        out[name].write_text(yaml.safe_dump_all(_claim_docs(claims)))
    missing = _claim_docs(("trainer-gpus",))[0]
    missing["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "no-such-class"
    out["missing-class"] = root / "missing-class.yaml"
    out["missing-class"].write_text(yaml.safe_dump(missing))
    bad = _claim_docs(("trainer-gpus",))[0]
    bad["spec"]["devices"]["requests"][0]["exactly"]["count"] = "four"
    out["bad"] = root / "bad.yaml"
    out["bad"].write_text(yaml.safe_dump(bad))
    return out


# --------------------------------------------------------------------------------------
# The runs, all started together
# --------------------------------------------------------------------------------------


def _pty_run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run with stdout on a pseudo-terminal (colours wanted) and stderr piped."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, env=env, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    _, err = proc.communicate()
    return subprocess.CompletedProcess(args, proc.returncode, b"".join(chunks).decode(), err)


@pytest.fixture(scope="module")
def ran(files: dict[str, Path]) -> dict[str, subprocess.CompletedProcess[str]]:
    cmd, env = _command(), _env()
    f = str(files["cluster"])
    runs: dict[str, tuple[list[str], Callable[..., subprocess.CompletedProcess[str]]]] = {}

    def add(name: str, *args: str, tty: bool = False, **extra: str) -> None:
        argv = [*cmd, *args]
        run_env = _env(**extra) if extra else env
        if tty:
            runs[name] = (argv, lambda: _pty_run(argv, run_env))
        else:
            runs[name] = (
                argv,
                lambda: subprocess.run(
                    argv, capture_output=True, text=True, env=run_env, timeout=300
                ),
            )

    # One subprocess per (command, exit status); the rest runs in-process below.
    add("demo", "demo")
    add("feasible", "feasible", "-f", f, "--claims", str(files["trainer"]), tty=True)
    add(
        "feasible-no-color",
        "feasible",
        "-f",
        f,
        "--claims",
        str(files["trainer"]),
        tty=True,
        NO_COLOR="1",
    )
    add("feasible-nowhere", "feasible", "-f", f, "--claims", str(files["six"]))
    add("feasible-error", "feasible", "-f", f, "--claims", str(files["missing-class"]))
    add("feasible-bad", "feasible", "-f", f, "--claims", str(files["bad"]))
    add("explain-fits", "explain", "-f", f, "--claims", str(files["trainer"]), "--node", "node-b")
    add("explain-no", "explain", "-f", f, "--claims", str(files["six"]), "--node", "node-b")
    add(
        "explain-error",
        "explain",
        "-f",
        f,
        "--claims",
        str(files["missing-class"]),
        "--node",
        "node-a",
    )
    add(
        "allocate",
        "allocate",
        "-f",
        str(files["state"]),
        "-f",
        str(files["trainer"]),
        "--node",
        "node-b",
    )
    if cmd[0] != sys.executable:  # the entry point is installed: `python -m` works too
        runs["module"] = (
            [sys.executable, "-m", "draspeed", "--version"],
            lambda: subprocess.run(
                [sys.executable, "-m", "draspeed", "--version"],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            ),
        )
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2) * 2) as pool:
        futures = {name: pool.submit(fn) for name, (_, fn) in runs.items()}
        return {name: fut.result() for name, fut in futures.items()}


def _in_process(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _no_traceback(run: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout


# --------------------------------------------------------------------------------------
# Exit statuses and outputs
# --------------------------------------------------------------------------------------


def test_demo_table(ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    run = ran["demo"]
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Feasibility: each pending claim alone" in out
    assert "Scheduling: the claims one after another" in out
    assert "Why demo/six-gpus-one-root does not fit on node-b" in out
    assert "constraint #0 (matchAttribute resource.kubernetes.io/pcieRoot" in out
    assert "\x1b[" not in out  # piped: no colours
    assert run.stderr == ""  # piped stderr: no progress line
    _no_traceback(run)


def test_demo_json() -> None:
    code, out, _ = _in_process("demo", "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert set(report) == {"engine", "feasibility", "scheduled", "explanation"}
    fits = {(r["claim"], r["node"]) for r in report["feasibility"] if r["status"] == "fits"}
    assert ("demo/trainer-gpus", "node-a") in fits
    assert ("demo/six-gpus-one-root", "node-b") not in fits
    placed = {s["claim"]: s["node"] for s in report["scheduled"]}
    assert placed["demo/trainer-gpus"] == "node-a"
    assert placed["demo/six-gpus-one-root"] is None
    explanation = report["explanation"]
    assert (explanation["node"], explanation["status"]) == ("node-b", "does-not-fit")
    assert explanation["blockers"][0]["kind"] == "constraint"


def test_feasible_fits_with_colours_on_a_terminal(
    ran: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    run, plain = ran["feasible"], ran["feasible-no-color"]
    assert run.returncode == 0, run.stderr
    assert plain.returncode == 0, plain.stderr
    assert "\x1b[32mfits" in run.stdout  # green status
    assert "\x1b[" not in plain.stdout  # NO_COLOR wins over the terminal
    lines = plain.stdout.splitlines()
    assert lines[0].split() == ["NODE", "STATUS", "DEVICES"]
    assert [ln.split()[:2] for ln in lines[1:4]] == [
        ["node-a", "fits"],
        ["node-b", "fits"],
        ["node-mig", "does-not-fit"],
    ]
    assert "fits on 2 of 3 nodes" in plain.stdout
    # The pending claims of -f are ignored when --claims names the pod's claims.
    assert "ignored: --claims names the pod's claims" in run.stderr


def test_feasible_other_exit_statuses(ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    nowhere = ran["feasible-nowhere"]
    assert nowhere.returncode == 1
    assert "fits on 0 of 3 nodes" in nowhere.stdout
    assert "\x1b[" not in nowhere.stdout  # piped: no colours
    error = ran["feasible-error"]
    assert error.returncode == 3
    assert 'deviceclass.resource.k8s.io "no-such-class" not found' in error.stdout
    bad = ran["feasible-bad"]
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        "error: ResourceClaim demo/trainer-gpus: spec.devices.requests[0].exactly.count:"
    )
    for run in (nowhere, error, bad):
        _no_traceback(run)


def test_feasible_json_and_usage(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    f = str(files["cluster"])
    code, out, err = _in_process(
        "feasible", "-f", f, "--claims", str(files["trainer"]), "-o", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["feasible"] == ["node-a", "node-b"]
    assert [n["status"] for n in data["nodes"]] == ["fits", "fits", "does-not-fit"]
    devices = [r["device"] for r in data["nodes"][0]["allocations"][0]["devices"]["results"]]
    assert devices == ["gpu-4", "gpu-5", "gpu-6", "gpu-7"]
    # Every pending claim of the demo together fits nowhere.
    assert _in_process("feasible", "-f", f)[0] == 1
    code, _, err = _in_process("feasible", "--claims", str(files["six"]))
    assert code == 2
    assert err == "error: give the cluster with -f FILE or --from-cluster\n"
    capsys.readouterr()
    assert _in_process("feasible", "-f", f, "--timeout", "soon")[0] == 2
    assert 'time: invalid duration "soon"' in capsys.readouterr().err  # argparse: sys.stderr


def test_explain_exit_statuses(
    ran: dict[str, subprocess.CompletedProcess[str]],
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fits = ran["explain-fits"]
    assert fits.returncode == 0, fits.stderr
    assert fits.stdout.startswith("node node-b: fits (demo/trainer-gpus)")
    no = ran["explain-no"]
    assert no.returncode == 1
    assert "constraint #0 (matchAttribute resource.kubernetes.io/pcieRoot" in no.stdout
    assert "AVAILABLE" in no.stdout and "blockers:" in no.stdout
    error = ran["explain-error"]
    assert error.returncode == 3
    assert 'deviceclass.resource.k8s.io "no-such-class" not found' in error.stdout
    _no_traceback(error)
    code, out, _ = _in_process(
        "explain",
        "-f",
        str(files["cluster"]),
        "--claims",
        str(files["h100"]),
        "--node",
        "node-a",
        "-o",
        "yaml",
    )
    assert code == 1
    assert yaml.safe_load(out)["summary"] == "request gpu: needs 1, 0 match class gpu.nvidia.com"
    capsys.readouterr()
    assert _in_process("explain", "-f", str(files["cluster"]))[0] == 2
    assert "--node" in capsys.readouterr().err


def test_allocate_unchanged(ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    run = ran["allocate"]
    assert run.returncode == 0, run.stderr
    doc = yaml.safe_load(run.stdout)
    assert doc["kind"] == "List"
    [claim] = [i for i in doc["items"] if i["metadata"]["name"] == "trainer-gpus"]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == [
        "gpu-0",
        "gpu-1",
        "gpu-2",
        "gpu-3",
    ]
    code, _, err = _in_process("allocate", "-f", "/no/such/file.yaml", "--node", "n")
    assert code == 2
    assert err == "error: /no/such/file.yaml: no such file or directory\n"


def test_python_dash_m(ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    run = ran.get("module")
    if run is None:  # the runs above already went through `python -m draspeed`
        run = subprocess.run(
            [sys.executable, "-m", "draspeed", "--version"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=300,
        )
    assert run.returncode == 0 and run.stdout.startswith("draspeed ")


# --------------------------------------------------------------------------------------
# --help: every command has an example
# --------------------------------------------------------------------------------------


def _subcommands() -> list[list[str]]:
    parser = build_parser()
    found: list[list[str]] = [[]]
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            for name, sub in action.choices.items():
                found.append([name])
                for inner in sub._actions:
                    if hasattr(inner, "choices") and isinstance(inner.choices, dict):
                        found.extend([name, kind] for kind in inner.choices)
    return found


@pytest.mark.parametrize("command", _subcommands(), ids=lambda c: " ".join(c) or "draspeed")
def test_help_has_an_example(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "examples:" in text
    assert "draspeed " in text.split("examples:", 1)[1]


def test_every_command_is_there() -> None:
    names = {c[0] for c in _subcommands() if c}
    assert {"allocate", "feasible", "explain", "demo", "generate"} <= names


# --------------------------------------------------------------------------------------
# feasible == allocate on every node
# --------------------------------------------------------------------------------------


def _check_feasible_equals_allocate(path: Path, engine: str = "fast") -> dict[str, int]:
    code, out, err = _in_process("feasible", "-f", str(path), "-o", "json", "--engine", engine)
    assert code in (0, 1, 3), err
    report = json.loads(out)
    statuses: dict[str, int] = {}
    for entry in report["nodes"]:
        node, status = entry["node"], entry["status"]
        statuses[status] = statuses.get(status, 0) + 1
        a_code, a_out, a_err = _in_process(
            "allocate", "-f", str(path), "--node", node, "-o", "json", "--engine", engine
        )
        if status == "fits":
            assert a_code == 0, (node, a_err)
            items = json.loads(a_out)["items"]
            allocations = [normalise(i["status"]["allocation"]) for i in items]
            assert allocations == normalise(entry["allocations"]), node
        elif status == "does-not-fit":
            assert a_code == 1 and "do not fit on node" in a_err, (node, a_err)
        elif status == "node-error":
            assert a_code == 1 and a_err.strip() == entry["error"], node
        else:
            assert status == "error", entry
            assert a_code == 3 and a_err.strip() == entry["error"], node
    assert (code == 0) == ("fits" in statuses)
    return statuses


def test_feasible_equals_allocate_on_the_demo(tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(demo_cluster_text()) if d]
    pending = [
        d for d in docs if d["kind"] == "ResourceClaim" and "allocation" not in d.get("status", {})
    ]
    state = [d for d in docs if d not in pending]
    seen: dict[str, int] = {}
    for claim in pending:  # each pending claim as its own pod
        path = tmp_path / f"{claim['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump_all([*state, claim]))
        for status, n in _check_feasible_equals_allocate(path).items():
            seen[status] = seen.get(status, 0) + n
    assert seen["fits"] and seen["does-not-fit"]


GENERATED = [
    ("example", {"allocated": 0.5}, ["two-gpus-same-model", "two-or-one-gpus"]),
    ("nvidia-mig", {"allocated": 0.5}, ["mig-1g10gb", "two-mig-1g10gb-same-gpu"]),
    ("scheduler-perf", {"fill": 0.5}, ["test-claim-template-first-available"]),
    ("network-attached", {}, ["two-fabric-gpus-same-rack", "volume-10g"]),
]


@pytest.mark.parametrize(("kind", "options", "templates"), GENERATED, ids=[g[0] for g in GENERATED])
def test_feasible_equals_allocate_on_generated_clusters(
    tmp_path: Path, kind: str, options: dict[str, Any], templates: list[str]
) -> None:
    cluster = generate(kind, 4, seed=3, **options)
    document = cluster.document()
    document["items"] += [cluster.claim(t, f"{t}-{i}") for i, t in enumerate(templates)]
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(document))
    _check_feasible_equals_allocate(path)


def test_reference_engine_agrees(tmp_path: Path) -> None:
    cluster = generate("nvidia-mig", 2, seed=5, allocated=0.5)
    document = cluster.document()
    document["items"].append(cluster.claim("two-mig-1g10gb-same-gpu", "pair"))
    path = tmp_path / "mig.json"
    path.write_text(json.dumps(document))
    fast = json.loads(_in_process("feasible", "-f", str(path), "-o", "json")[1])
    ref = _in_process("feasible", "-f", str(path), "-o", "json", "--engine", "reference")
    assert normalise(json.loads(ref[1])) == normalise(fast)
    _check_feasible_equals_allocate(path, engine="reference")


def test_feasible_named_nodes_and_unknown_ones(files: dict[str, Path]) -> None:
    args = ["feasible", "-f", str(files["cluster"]), "--claims", str(files["trainer"])]
    code, out, _ = _in_process(*args, "--nodes", "node-b", "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert [(n["node"], n["status"]) for n in data["nodes"]] == [("node-b", "fits")]
    # A node neither given as a Node nor named by a slice is an input error, not
    # "does not fit".
    code, out, err = _in_process(*args, "--nodes", "node-b,ghost")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith('error: node "ghost": not found: no Node object')


# --------------------------------------------------------------------------------------
# Console helpers
# --------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_only_on_a_terminal_and_cleans_up() -> None:
    term = _Terminal()
    with Progress("nodes", total=4, stream=term, delay=0.0) as bar:
        bar.advance(2)
        time.sleep(0.35)
    text = term.getvalue()
    assert "nodes [" in text and "2/4" in text
    assert text.endswith("\r\x1b[K")
    piped = io.StringIO()
    with Progress("nodes", total=4, stream=piped, delay=0.0) as bar:
        bar.advance(4)
        time.sleep(0.2)
    assert piped.getvalue() == ""


def test_progress_waits_for_its_delay() -> None:
    term = _Terminal()
    with Progress("quick", stream=term, delay=5.0):
        time.sleep(0.2)
    assert term.getvalue() == ""


def test_style_respects_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert Style.for_stream(_Terminal()).enabled
    assert not Style.for_stream(io.StringIO()).enabled
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Style.for_stream(_Terminal()).enabled


def test_table_alignment_ignores_colour_codes() -> None:
    rows = [["A", "STATUS"], ["long-name", "fits"]]
    plain = format_table(rows)
    coloured = format_table(rows, Style(True), lambda r, c, t: "green" if c == 1 else None)
    assert plain == "A           STATUS\nlong-name   fits\n"
    strip = coloured.replace("\x1b[32m", "").replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert strip == plain


@pytest.mark.parametrize("command", ["feasible", "allocate", "explain"])
def test_timeout_defaults_to_kube_schedulers_filter_timeout(command: str) -> None:
    parser = build_parser("draspeed")
    base = [command, "-f", "cluster.yaml"] + ([] if command == "feasible" else ["--node", "n"])
    assert parser.parse_args(base).timeout == 10.0  # DynamicResourcesArgs.filterTimeout
    assert parser.parse_args([*base, "--timeout", "0"]).timeout == 0.0  # no bound
    assert parser.parse_args([*base, "--timeout", "1m30s"]).timeout == 90.0


class _Recorder(io.StringIO):
    """A text stream that remembers the size of every write."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, text: str) -> int:
        self.sizes.append(len(text))
        return super().write(text)


def test_long_output_is_written_in_pieces() -> None:
    # One write of more than 2 GiB is cut short by CPython's text streams: the JSON
    # of a big generated cluster is written a piece at a time.
    from draspeed.cli.render import write_text

    out = _Recorder()
    text = "".join(f"{i:08d}\n" for i in range(1000))
    write_text(out, text, chunk=1024)
    assert out.getvalue() == text
    assert max(out.sizes) == 1024 and len(out.sizes) == -(-len(text) // 1024)
    write_text(out, "", chunk=1024)
    assert out.getvalue() == text


def test_max_input_bytes_raises_or_lowers_the_limit_of_every_input(tmp_path: Path) -> None:
    """``--max-input-bytes`` bounds each -f file (and --claims file) as ``load``'s
    ``max_bytes`` does; sizes as whole numbers or quantities."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(demo_cluster_text())
    size = cluster.stat().st_size

    def feasible(*extra: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        status = main(["feasible", "-f", str(cluster), "-o", "name", *extra], out, err)
        return status, err.getvalue()

    answered = feasible()
    assert answered[0] in (0, 1)  # (nodes fit, or none does)
    assert feasible(f"--max-input-bytes={size}") == answered
    assert feasible("--max-input-bytes=1Mi") == answered
    status, err = feasible(f"--max-input-bytes={size - 1}")
    assert status == 2
    assert f"{size} bytes is more than the limit of {size - 1} bytes" in err
    assert "--max-input-bytes" in err
    for bad in ("0", "-5", "1.5", "lots"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["feasible", "-f", "x", "--max-input-bytes", bad])


def test_a_load_warning_is_written_once(tmp_path: Path) -> None:
    """The commands write the warnings the loaded objects list, and Python's own display
    of them (file, line and source of the call) is not written as well."""
    cluster = tmp_path / "cluster.yaml"
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    cluster.write_text(demo_cluster_text() + "---\n" + yaml.safe_dump(thing))
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump_all([*_claim_docs(("trainer-gpus",)), thing]))
    for extra in ([], ["--claims", str(claims)]):
        done = subprocess.run(
            [*_command(), "feasible", "-f", str(cluster), *extra, "-o", "name"],
            capture_output=True,
            text=True,
            env=_env(),
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        lines = done.stderr.splitlines()
        assert (
            lines.count("warning: skipped 1 object of kinds draspeed does not read: Thing (1)") == 1
        )
        assert not [line for line in lines if "DraspeedWarning" in line], done.stderr


@pytest.mark.parametrize(
    ("redirect", "command", "expected"),
    [
        ("<&-", ["feasible", "-f", "-", "-o", "name"], "<stdin>: standard input is closed"),
        (">&-", ["feasible", "-f", "{cluster}", "-o", "name"], "standard output is closed"),
        (">&-", ["demo"], "standard output is closed"),
        ("2>&-", ["allocate", "-f", "{cluster}", "--node", "nope"], ""),
    ],
)
def test_a_stream_closed_at_start_is_an_exit_status(
    redirect: str, command: list[str], expected: str, tmp_path: Path
) -> None:
    """A process started with a standard stream closed exits 2, with the reason where it
    can be written; each raised AttributeError (exit 1)."""
    import shlex

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(demo_cluster_text())
    argv = [*_command(), *(a.replace("{cluster}", str(cluster)) for a in command)]
    script = " ".join(map(shlex.quote, argv)) + " " + redirect
    if redirect != "2>&-":
        script += " 2>&1 >/dev/null" if redirect == "<&-" else ""
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=_env(), check=False
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--workers", "0", "must be at least 1, got 0"),
        ("--curve-points", "-1", "must be at least 1, got -1"),
        ("--time-limit", "0", "expected seconds above 0, got '0'"),
        ("--time-limit", "nan", "expected seconds above 0, got 'nan'"),
    ],
)
def test_capacity_counts_and_time_limits_are_checked(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["capacity", "-f", "x.yaml", "--template", "t", option, value]
    assert main(argv, io.StringIO(), io.StringIO()) == 2
    assert message in capsys.readouterr().err
