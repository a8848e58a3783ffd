"""Build the compiled modules: ``cext/<package>/<name>.pyx`` becomes ``draspeed.<package>.<name>``
(``cext/engine/_core.pyx`` is ``draspeed.engine._core``).

``DRASPEED_DEBUG=1`` builds with bounds and wraparound checks on and without
optimisation, for fuzzing the core through its Python entry points.
``DRASPEED_ONLY=_name`` builds just that module (development: one extension at a time).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("DRASPEED_DEBUG", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}
compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]

extensions = [
    Extension(
        f"draspeed.{pyx.parent.name}.{pyx.stem}",
        [str(pyx)],
        include_dirs=[np.get_include(), str(pyx.parent)],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args,
    )
    for pyx in sorted(Path("cext").glob("*/*.pyx"))
    if os.environ.get("DRASPEED_ONLY", pyx.stem) == pyx.stem
]

# cext/api/model_slots.pxd (slot access to the model's dataclasses) is cimported by
# modules of several packages.
setup(
    ext_modules=cythonize(
        extensions, compiler_directives=directives, include_path=["cext/api"], quiet=True
    )
)
