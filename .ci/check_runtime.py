"""What a user gets from ``pip install draspeed``: the runtime dependencies suffice.

Run in a fresh environment holding the wheel and its runtime dependencies (.ci/run,
no extras) or a wheel's test environment (cibuildwheel): every module of the package
imports without importing any extra's modules, and draspeed.testing.strategies either
imports or names the extra it needs; the demo runs; the version has one source; the compiled
modules are release builds (no debug sections, no symbol table).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import struct
import subprocess
import sys
from pathlib import Path

import draspeed

NEEDS_TEST_EXTRA = {"draspeed.testing.strategies"}
EXTRAS_ONLY = ("matplotlib", "dask", "distributed", "scipy", "kubernetes", "hypothesis", "lark")


def elf_sections(path: Path) -> set[str]:
    """Section names of a 64-bit little-endian ELF file (what the wheels hold)."""
    data = path.read_bytes()
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple[int, int]:  # (name offset, file offset)
        name, _, _, _, offset = struct.unpack_from("<IIQQQ", data, shoff + i * shentsize)
        return name, offset

    strtab = header(shstrndx)[1]
    return {
        data[strtab + name : data.index(b"\0", strtab + name)].decode()
        for name, _ in (header(i) for i in range(shnum))
    }


def main() -> int:
    failures = []
    modules = sorted(m.name for m in pkgutil.walk_packages(draspeed.__path__, "draspeed."))
    for name in modules:
        if name in NEEDS_TEST_EXTRA:
            continue
        try:
            importlib.import_module(name)
        except ImportError as exc:
            failures.append(f"{name}: {exc!r}")
    loaded = sorted(m for m in EXTRAS_ONLY if m in sys.modules)
    if loaded:
        failures.append(f"modules of extras were imported: {loaded}")
    for name in sorted(NEEDS_TEST_EXTRA):
        try:  # imports where the test extra is installed, else names it
            importlib.import_module(name)
        except ImportError as exc:
            if "draspeed[test]" not in str(exc):
                failures.append(f"{name}: {exc!r}")
    version = importlib.metadata.version("draspeed")
    if version != draspeed.__version__:
        failures.append(
            f"metadata version {version} != draspeed.__version__ {draspeed.__version__}"
        )
    cli = subprocess.run(["draspeed", "--version"], capture_output=True, text=True, check=False)
    if cli.stdout.strip() != f"draspeed {version}":
        failures.append(f"draspeed --version printed {cli.stdout!r}")
    demo = subprocess.run(["draspeed", "demo"], capture_output=True, text=True, check=False)
    if demo.returncode != 0 or "node" not in demo.stdout:
        failures.append(f"draspeed demo: exit {demo.returncode}: {demo.stderr[-500:]}")
    package = Path(draspeed.__file__).parent
    for module in sorted(package.rglob("*.so")):
        extra = {".symtab"} | {n for n in elf_sections(module) if n.startswith(".debug")}
        found = extra & elf_sections(module)
        if found:
            failures.append(f"{module.name} is not stripped: {sorted(found)}")
    for failure in failures:
        print(f"runtime check: {failure}", file=sys.stderr)
    print(f"runtime check: {len(modules)} modules, draspeed {version}, demo ran")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
