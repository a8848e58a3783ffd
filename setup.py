"""Build the compiled modules: ``cext/<package>/<name>.pyx`` becomes ``draspeed.<package>.<name>``
(``cext/engine/_core.pyx`` is ``draspeed.engine._core``).

Release builds (the default) are optimised and carry no debug information: ``-g0``
overrides the ``-g`` in Python's own CFLAGS and ``-s`` drops the symbol table at link
time (4.2 MB of ``.so`` files become 0.7 MB; only the module init symbols, which are
dynamic, are needed). ``DRASPEED_DEBUG=1`` builds with bounds and wraparound checks on,
without optimisation and with debug information, for fuzzing the core through its
Python entry points and for debuggers. ``DRASPEED_PROFILE=1`` keeps the optimisation and
adds the symbols and debug information profilers (callgrind, perf) need.
``DRASPEED_ONLY=_name`` builds just that module (development: one extension at a time).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("DRASPEED_DEBUG", "") not in ("", "0")
PROFILE = os.environ.get("DRASPEED_PROFILE", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}
compile_args = ["-O0", "-g"] if DEBUG else ["-O3", "-g" if PROFILE else "-g0"]
# -s is a GNU ld option; the wheels are built for Linux only.
link_args = ["-s"] if not (DEBUG or PROFILE) and sys.platform.startswith("linux") else []

extensions = [
    Extension(
        f"draspeed.{pyx.parent.name}.{pyx.stem}",
        [str(pyx)],
        include_dirs=[np.get_include(), str(pyx.parent)],
        define_macros=[
            ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
            # Built against numpy 2, the modules run on every numpy from this one on: keep it
            # equal to the lower bound of numpy in pyproject's dependencies.
            ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
        ],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for pyx in sorted(Path("cext").glob("*/*.pyx"))
    if os.environ.get("DRASPEED_ONLY", pyx.stem) == pyx.stem
]

# cext/api/model_slots.pxd (slot access to the model's dataclasses) is cimported by
# modules of several packages.
setup(
    ext_modules=cythonize(
        extensions, compiler_directives=directives, include_path=["cext/api", "cext/engine"], quiet=True
    )
)
