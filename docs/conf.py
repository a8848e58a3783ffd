"""Sphinx configuration of draspeed's documentation site.

Sphinx rather than MkDocs: draspeed's docstrings are written with reStructuredText roles
(``:class:``, ``:meth:``, ``:mod:``), which autodoc renders as links; the pages are
Markdown (MyST). Built in CI with warnings as errors:
``python -m sphinx -W --keep-going -b html docs build/docs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import draspeed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "draspeed"
author = "draspeed developers"
copyright = "the draspeed developers"
release = version = draspeed.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "draspeed_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated/*.txt", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Type hints name classes of numpy, msgspec and the standard library: autodoc shows
# them as text; nitpicky mode (every reference resolved) stays off for that reason.
napoleon_google_docstring = False
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = f"draspeed {release}"
html_static_path: list[str] = []
