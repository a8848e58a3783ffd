"""kubectl's conventions on every command: -n/-A/-l, -o name|wide|jsonpath=..., -R,
-f URL, Go durations, tables cut to the terminal's width, exit statuses, and the
kubectl plugin (``kubectl draspeed ...`` with a real kubectl)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed import load
from draspeed.api.labels import SelectorError, parse_selector
from draspeed.cli import main
from draspeed.cli.jsonpath import JSONPathError, execute
from draspeed.errors import InputError
from draspeed.generate import generate
from draspeed.golang import DurationError, parse_go_duration


def _cli(*args: str, **env: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return main(list(args), out, err), out.getvalue(), err.getvalue()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two example nodes and four pending claims in two namespaces, labelled."""
    g = generate("example", nodes=2)
    docs = g.document()["items"]
    for name, namespace, labels in (
        ("a", "team-a", {"app": "train", "tier": "gold"}),
        ("b", "team-a", {"app": "serve"}),
        ("c", "team-b", {"app": "train"}),
        ("d", "team-b", {"app": "train", "canary": "yes"}),
    ):
        claim = g.claim("single-gpu", name)
        claim["metadata"]["namespace"] = namespace
        claim["metadata"]["labels"] = labels
        docs.append(claim)
    path = tmp_path_factory.mktemp("flags") / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _claims_of(out: str) -> list[str]:
    return [f"{c['namespace']}/{c['name']}" for c in _allocated(out)]


def _allocated(out: str) -> list[dict[str, Any]]:
    return [i["metadata"] for i in json.loads(out)["items"]]


# ------------------------------------------------------------- -n, -A, -l


@pytest.mark.parametrize(
    ("flags", "claims"),
    [
        ([], ["team-a/a", "team-a/b", "team-b/c", "team-b/d"]),  # files: every namespace
        (["-A"], ["team-a/a", "team-a/b", "team-b/c", "team-b/d"]),
        (["-n", "team-a"], ["team-a/a", "team-a/b"]),
        (["-l", "app=train"], ["team-a/a", "team-b/c", "team-b/d"]),
        (["-l", "app==train,!canary"], ["team-a/a", "team-b/c"]),
        (["-l", "app in (serve, other)"], ["team-a/b"]),
        (["-l", "app notin (train)"], ["team-a/b"]),
        (["-l", "tier"], ["team-a/a"]),
        (["-l", "app!=train", "-A"], ["team-a/b"]),
        (["-n", "team-b", "-l", "canary"], ["team-b/d"]),
    ],
)
def test_namespace_and_selector_choose_the_pending_claims(
    cluster: Path, flags: list[str], claims: list[str]
) -> None:
    code, out, err = _cli(
        "allocate", "-f", str(cluster), "--node", "node-00000", *flags, "-o", "json"
    )
    assert code == 0, err
    assert _claims_of(out) == claims


def test_nothing_selected_is_said_on_stderr(cluster: Path) -> None:
    code, out, err = _cli("allocate", "-f", str(cluster), "--node", "node-00000", "-n", "none")
    assert (code, out) == (0, "apiVersion: v1\nkind: List\nitems: []\n")
    assert err == (
        "warning: no pending claims in namespace none (claims without status.allocation) "
        "to allocate\n"
    )
    code, _, err = _cli("allocate", "-f", str(cluster), "--node", "x", "-n", "a", "-A")
    assert (code, err) == (2, "error: a namespace (-n) cannot be given with -A/--all-namespaces\n")


def test_unknown_node_is_an_input_error(cluster: Path) -> None:
    code, out, err = _cli("allocate", "-f", str(cluster), "--node", "nope")
    assert (code, out) == (2, "")
    assert err == (
        'error: node "nope": not found: no Node object of that name and no ResourceSlice '
        "names it (known nodes: node-00000, node-00001)\n"
    )
    assert _cli("explain", "-f", str(cluster), "--node", "nope")[0] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a=b,c", None),
        ("x in (a,b),y notin (c),!z,k>3", None),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("in", None),  # a key that happens to be a keyword
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        (
            "a>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', "
            "'Lt' operators, the value must be an integer",
        ),
        (
            "a~b",
            'unable to parse requirement: : Invalid value: "a~b": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        ("a=(b", "unable to parse requirement: found '(', expected: identifier"),
    ],
)
def test_label_selectors_parse_as_apimachinery(text: str, message: str | None) -> None:
    if message is None:
        parse_selector(text)
        return
    with pytest.raises(SelectorError) as caught:
        parse_selector(text)
    assert str(caught.value) == message


def test_label_selector_matching() -> None:
    selector = parse_selector("app in (a,b),!canary,n>2")
    assert selector.matches({"app": "a", "n": "3"})
    assert not selector.matches({"app": "a", "n": "2"})
    assert not selector.matches({"app": "a", "n": "3", "canary": ""})
    assert not selector.matches({"app": "c", "n": "3"})
    assert parse_selector("").matches({})


# ------------------------------------------------------------------------------ -o


def test_output_name_wide_and_jsonpath(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["-f", str(cluster), "-n", "team-a"]
    code, out, _ = _cli("allocate", *base, "--node", "node-00000", "-o", "name")
    assert (code, out) == (0, "resourceclaim.resource.k8s.io/a\nresourceclaim.resource.k8s.io/b\n")
    code, out, _ = _cli("feasible", *base, "-o", "name")
    assert (code, out) == (0, "node/node-00000\nnode/node-00001\n")
    code, out, _ = _cli("feasible", *base, "-o", "wide")
    assert out.splitlines()[0].split() == ["NODE", "STATUS", "DEVICES", "STEPS"]
    code, out, _ = _cli(
        "feasible", *base, "-o", 'jsonpath={range .nodes[*]}{.node}={.status}{"\\n"}{end}'
    )
    assert (code, out) == (0, "node-00000=fits\nnode-00001=fits\n")
    code, out, _ = _cli(
        "allocate",
        *base,
        "--node",
        "node-00001",
        "-o",
        "jsonpath={.items[*].status.allocation.devices.results[0].device}",
    )
    assert (code, out) == (0, "gpu-0 gpu-1")
    code, out, _ = _cli("explain", *base, "--node", "node-00001", "-o", "jsonpath={.status}")
    assert (code, out) == (0, "fits")
    code, out, _ = _cli("generate", "example", "--nodes", "1", "-o", "name")
    assert out.splitlines()[:2] == [
        "node/node-00000",
        "deviceclass.resource.k8s.io/gpu.example.com",
    ]
    capsys.readouterr()
    assert _cli("feasible", *base, "-o", "jsonpath={.nodes[")[0] == 2
    err = capsys.readouterr().err  # argparse's usage errors go to sys.stderr
    assert "error parsing jsonpath {.nodes[, unterminated array" in err
    assert _cli("feasible", *base, "-o", "xml")[0] == 2
    err = capsys.readouterr().err
    assert "unable to match a printer suitable for the output format 'xml'" in err


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.kind}", "List"),
        ("{.items[*].metadata.name}", "a b"),
        ("{.items[0].metadata}", '{"labels":{"x":"\\u003c1\\u003e"},"name":"a"}'),
        ("{.items[-1].n}", "1.5"),
        ("{.items[0:1].n}", "3"),
        ("{.items[::2].metadata.name}", "a"),
        ("{.items[0,1].n}", "3 1.5"),
        ('{.items[?(@.status=="fits")].metadata.name}', "a"),
        ("{.items[?(@.n>2)].metadata.name}", "a"),  # 3 > 2; 1.5 is not comparable
        ("{.items[?(@.metadata.labels)].metadata.name}", "a"),
        ("{..name}", "a b"),
        ("{.items[*]['status']}", "fits no"),
        ("{.missing}", ""),
        ("{.items[0].flag} {.items[0].none}", "true null"),
        ("{range .items[*]}[{.metadata.name}]{end}", "[a][b]"),
        ("{range .items[*]}{range .list[*]}{@}{end};{end}", "12;;"),
    ],
)
def test_jsonpath_as_kubectl(template: str, expected: str) -> None:
    doc: dict[str, Any] = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "a", "labels": {"x": "<1>"}},
                "status": "fits",
                "n": 3,
                "flag": True,
                "none": None,
                "list": [1, 2],
            },
            {"metadata": {"name": "b"}, "status": "no", "n": 1.5},
        ],
    }
    if template == "{.items[?(@.n>2)].metadata.name}":
        with pytest.raises(JSONPathError, match="incompatible types for comparison"):
            execute(template, doc)
        doc["items"][1]["n"] = 1
    assert execute(template, doc) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{.a", "unclosed action"),
        ("{end}", "not in range, nothing to end"),
        ("{.items[x]}", "invalid array index x"),
        ("{.items[5]}", "array index out of bounds: index 5, length 2"),
        ("{#}", "unrecognized character in action: U+0023 '#'"),
    ],
)
def test_jsonpath_errors(template: str, message: str) -> None:
    with pytest.raises(JSONPathError) as caught:
        execute(template, {"items": [1, 2]})
    assert str(caught.value) == message


def test_tables_fit_the_terminal_unless_wide(cluster: Path) -> None:
    code, out, _ = _cli(
        "feasible", "-f", str(cluster), "-n", "team-a", "--nodes", "node-00000", COLUMNS="40"
    )
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 40
    assert lines[1].endswith("…")
    _, wide, _ = _cli("feasible", "-f", str(cluster), "-n", "team-a", "-o", "wide", COLUMNS="40")
    assert max(len(line) for line in wide.splitlines()) > 40


# ------------------------------------------------------------------- -R, -f URL


def test_directories_are_recursive_only_with_dash_r(cluster: Path, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(cluster, tmp_path / "sub" / "cluster.yaml")
    code, _, err = _cli("feasible", "-f", str(tmp_path))
    assert code == 1 and "no pending claims" in err
    assert _cli("feasible", "-f", str(tmp_path), "-R")[0] == 0


class _Files(BaseHTTPRequestHandler):
    body = b""
    delay = 0.0

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(2.0)
        if self.path == "/missing":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def web(cluster: Path) -> Iterator[str]:
    handler = type("Files", (_Files,), {"body": cluster.read_bytes()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_filename_urls_are_fetched_with_a_timeout(web: str) -> None:
    code, out, err = _cli("feasible", "-f", f"{web}/cluster.yaml", "-n", "team-b", "-o", "name")
    assert (code, out) == (0, "node/node-00000\nnode/node-00001\n"), err
    start = time.monotonic()
    code, _, err = _cli("feasible", "-f", f"{web}/slow", "--request-timeout", "300ms")
    assert time.monotonic() - start < 1.5
    assert (code, err) == (2, f"error: {web}/slow: no complete answer within 0.3s\n")
    code, _, err = _cli("feasible", "-f", f"{web}/missing")
    assert (code, err) == (2, f"error: {web}/missing: HTTP 404 Not Found\n")
    assert len(load(f"{web}/cluster.yaml").claims) == 4


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://a b/x", "URL can't contain control characters"),
        ("https://host:abc/x", "nonnumeric port: 'abc'"),
    ],
)
def test_urls_that_are_not_urls_are_one_error(url: str, reason: str) -> None:
    """urllib's and http.client's refusals become the one error naming the URL."""
    code, _, err = _cli("feasible", "-f", url)
    assert code == 2 and err.startswith(f"error: {url}: not a URL: {reason}"), err
    with pytest.raises(InputError, match="not a URL"):
        load(url)


# ---------------------------------------------------------------- Go durations


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1m30s", 90 * 10**9),
        ("500ms", 5 * 10**8),
        ("1h", 3600 * 10**9),
        ("0", 0),
        ("1.5s", 15 * 10**8),
        (".5us", 500),
        ("2h45m0.5s", 9900 * 10**9 + 5 * 10**8),
    ],
)
def test_go_durations(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10", 'time: missing unit in duration "10"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("soon", 'time: invalid duration "soon"'),
        ("", 'time: invalid duration ""'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_go_duration_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_go_duration(text)
    assert str(caught.value) == message


def test_durations_on_the_command_line(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["feasible", "-f", str(cluster), "-n", "team-a", "-o", "name"]
    assert _cli(*args, "--timeout", "1m30s")[0] == 0
    assert _cli(*args, "--timeout", "10")[0] == 2
    assert 'time: missing unit in duration "10"' in capsys.readouterr().err


# -------------------------------------------------------------- kubectl plugin


def _kubectl() -> str | None:
    return shutil.which("kubectl")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed (.ci/run installs it)")
def test_kubectl_finds_and_runs_the_plugin(cluster: Path) -> None:
    plugin = shutil.which("kubectl-draspeed", path=str(Path(sys.executable).parent))
    assert plugin is not None, "the kubectl-draspeed entry point is not installed"
    env = {**os.environ, "PATH": f"{Path(plugin).parent}{os.pathsep}{os.environ['PATH']}"}
    kubectl = _kubectl()
    assert kubectl is not None
    listed = subprocess.run(
        [kubectl, "plugin", "list"], env=env, capture_output=True, text=True, timeout=60
    )
    assert plugin in listed.stdout, listed.stdout + listed.stderr
    ran = subprocess.run(
        [kubectl, "draspeed", "feasible", "-f", str(cluster), "-n", "team-a", "-o", "name"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ran.returncode, ran.stdout) == (0, "node/node-00000\nnode/node-00001\n"), ran.stderr
    usage = subprocess.run(
        [kubectl, "draspeed", "allocate"], env=env, capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 2 and usage.stderr.startswith("usage: kubectl draspeed allocate")
