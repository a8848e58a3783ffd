"""The installed distribution is what pyproject.toml promises.

Runtime dependencies are exactly the third-party modules the package imports at module
level; everything imported only inside functions (or under TYPE_CHECKING) comes from
an extra. Checked on the installed files and metadata, not the source tree.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from pathlib import Path

from packaging.requirements import Requirement

import draspeed

PACKAGE = Path(draspeed.__file__).resolve().parent
# Import name -> distribution, for modules whose names differ.
DISTRIBUTION = {"yaml": "pyyaml", "re2": "google-re2", "dask": "dask", "distributed": "dask"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _requirements() -> tuple[set[str], dict[str, set[str]]]:
    """(runtime distributions, extra -> distributions), names normalised."""
    runtime: set[str] = set()
    extras: dict[str, set[str]] = {}
    for text in importlib.metadata.requires("draspeed") or []:
        req = Requirement(text)
        name = req.name.lower().replace("_", "-")
        if req.marker is None:
            runtime.add(name)
            continue
        extra = str(req.marker).split('extra == "', 1)[1].rstrip('"')
        extras.setdefault(extra, set()).add(name)
        if name == "draspeed":  # an extra that includes others: draspeed[analysis,kube]
            extras[extra] |= {f"draspeed[{e}]" for e in sorted(req.extras)}
    for extra, names in extras.items():
        for included in [n for n in names if n.startswith("draspeed[")]:
            for other in included[len("draspeed[") : -1].split(","):
                names |= extras.get(other, set())
        extras[extra] = {n for n in names if not n.startswith("draspeed")}
    return runtime, extras


def _third_party_imports() -> tuple[set[str], set[str]]:
    """(top-level names imported at module level, names imported lazily) in the package."""
    eager: set[str] = set()
    lazy: set[str] = set()

    def record(node: ast.AST, into: set[str]) -> None:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            return
        for name in names:
            top = name.split(".")[0]
            if top not in STDLIB and top != "draspeed":
                into.add(top)

    def walk(body: list[ast.stmt], into: set[str]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    record(inner, lazy)
                continue
            if isinstance(node, ast.ClassDef):
                walk(node.body, into)
                continue
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                walk(node.body, into)
                for handler in getattr(node, "handlers", []):
                    walk(handler.body, into)
                walk(getattr(node, "orelse", []), into)
                continue
            record(node, into)

    for path in PACKAGE.rglob("*.py"):
        walk(ast.parse(path.read_text(encoding="utf-8")).body, eager)
    return eager, lazy


def _distribution(module: str) -> str:
    return DISTRIBUTION.get(module, module).lower()


def test_runtime_dependencies_are_what_the_package_imports() -> None:
    runtime, _ = _requirements()
    eager, _ = _third_party_imports()
    # draspeed.testing.strategies is the one module that needs an extra (test) at import.
    eager.discard("hypothesis")
    assert {_distribution(m) for m in eager} == runtime


def test_lazy_imports_come_from_extras() -> None:
    runtime, extras = _requirements()
    _, lazy = _third_party_imports()
    offered = runtime.union(*extras.values())
    assert {_distribution(m) for m in lazy} <= offered
    assert {"scipy", "matplotlib", "dask"} <= extras["analysis"]
    assert "kubernetes" in extras["kube"]
    assert {"cel-python", "pytest-benchmark"} <= extras["bench"]
    assert not {"scipy", "cel-python", "semver"} & runtime


def test_one_version() -> None:
    assert importlib.metadata.version("draspeed") == draspeed.__version__


def test_metadata() -> None:
    meta = importlib.metadata.metadata("draspeed")
    assert meta["License-Expression"] == "Apache-2.0"
    classifiers = set(meta.get_all("Classifier") or [])
    assert "Typing :: Typed" in classifiers
    for minor in range(10, 15):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    free_threading = "Programming Language :: Python :: Free Threading"
    assert any(c.startswith(free_threading) for c in classifiers)
    assert meta.get_all("Project-URL")
    files = {str(f) for f in importlib.metadata.files("draspeed") or []}
    assert {f for f in files if f.endswith(("/LICENSE", "/NOTICE"))}, files


def test_typing_files_are_installed() -> None:
    assert (PACKAGE / "py.typed").exists()
    compiled = {p.name.split(".")[0] for p in PACKAGE.rglob("*.so")} | {
        p.name.split(".")[0] for p in PACKAGE.rglob("*.pyd")
    }
    assert compiled, "no compiled modules installed"
    stubs = {p.stem for p in PACKAGE.rglob("*.pyi")}
    assert compiled <= stubs
