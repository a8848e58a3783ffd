"""The project's promises: README's Quick start is what CI runs, and every Python
snippet of README and of the scheduler-loop guide runs as written (against generated
files, and against a local fake API server for the walkthrough)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.generate import generate
from draspeed.testing.apiserver import FakeAPIServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide-scheduler-loop.md"
WALKTHROUGH = "### A scheduler loop with the Kubernetes client"

pytestmark = pytest.mark.skipif(
    not README.exists() or not GUIDE.exists(), reason="not run from a source checkout"
)


def _commands(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def _python(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_ci_runs_readme_test_command() -> None:
    ci = ROOT / ".ci" / "run"
    quick_start = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = _commands(quick_start)
    assert len(commands) == 2, "Quick start has exactly two commands"
    assert "draspeed demo" in commands[0]
    assert commands[1] in ci.read_text().splitlines(), ".ci/run must run README's test command"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "main"}], **spec},
    }


def _cluster_docs() -> list[dict[str, Any]]:
    """Three example nodes of 8 GPUs; the class backs ``gpu.example.com/gpu``."""
    docs = generate("example", nodes=3).document()["items"]
    for d in docs:
        if d["kind"] == "DeviceClass":
            d["spec"]["extendedResourceName"] = "gpu.example.com/gpu"
    return docs


def _pods() -> list[dict[str, Any]]:
    """One pod with a claim from a template and 2 GPUs as an extended resource, one
    with a claim from a template only."""
    trainer = _pod(
        "trainer",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
        containers=[{"name": "main", "resources": {"requests": {"gpu.example.com/gpu": "2"}}}],
    )
    server = _pod(
        "server", resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "gpu-40gi"}]
    )
    return [trainer, server]


@contextlib.contextmanager
def _in(directory: Path, **env: str) -> Iterator[None]:
    cwd, saved = os.getcwd(), {k: os.environ.get(k) for k in env}
    os.chdir(directory)
    os.environ.update(env)
    try:
        yield
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(blocks: list[str], name: str) -> str:
    namespace: dict[str, Any] = {"__name__": name}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for i, block in enumerate(blocks):
            exec(compile(block, f"{name} python block {i + 1}", "exec"), namespace)
    return printed.getvalue()


def test_readme_python_snippets_run(tmp_path: Path) -> None:
    generated = generate("example", nodes=3)
    docs = generated.document()["items"]
    docs += [generated.claim("single-gpu", "first"), generated.claim("gpu-40gi", "second")]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "dump.yaml").write_text(json.dumps([*_cluster_docs(), *_pods()]))
    text = README.read_text()
    before, _, _ = text.partition(WALKTHROUGH)
    blocks = _python(before)
    assert len(blocks) >= 5
    with _in(tmp_path):
        printed = _run(blocks, "README")
    assert "fits" in printed  # explain's summary


def _walkthrough(
    blocks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeAPIServer, str]:
    kube_config = pytest.importorskip("kubernetes.config.kube_config")
    with FakeAPIServer([*_cluster_docs(), *_pods()]) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        # The client reads $KUBECONFIG when first imported; this process imported it.
        monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
        with _in(tmp_path, KUBECONFIG=str(kubeconfig)):
            printed = _run(blocks, "walkthrough")
    return server, printed


@pytest.mark.parametrize("source", ["README", "guide"])
def test_the_scheduler_loop_walkthrough_runs(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text().partition(WALKTHROUGH)[2] if source == "README" else GUIDE.read_text()
    server, printed = _walkthrough(_python(text), tmp_path, monkeypatch)
    lines = printed.splitlines()
    assert "default/trainer -> node-00000" in lines and "default/server -> node-00000" in lines
    claims = {c["metadata"]["name"]: c for c in server.objects("ResourceClaim")}
    made = [
        c
        for c in claims.values()
        if "status" in c
        and c["metadata"]["namespace"] == "default"
        and c["metadata"].get("ownerReferences")
    ]
    # Three claims created and allocated: the two from templates, the extended one.
    assert sorted(c["metadata"]["generateName"] for c in made) == [
        "server-gpus-",
        "trainer-extended-resources-",
        "trainer-gpu-",
    ]
    devices = []
    for claim in made:
        status = claim["status"]
        assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
        owner = claim["metadata"]["ownerReferences"][0]["name"]
        assert status["reservedFor"] == [{"resource": "pods", "name": owner, "uid": f"uid-{owner}"}]
        devices += [r["device"] for r in status["allocation"]["devices"]["results"]]
    # The second pod got devices the first did not: the loop updated its snapshot.
    assert len(devices) == len(set(devices)) == 4
    assert sum(1 for line in lines if " on node-00000, for default/" in line) == 3


def test_readme_walkthrough_is_the_guides() -> None:
    readme = _python(README.read_text().partition(WALKTHROUGH)[2])
    assert readme == _python(GUIDE.read_text())
