"""``python -m draspeed``: the ``draspeed`` command."""

from __future__ import annotations

import sys

from draspeed.cli import main

if __name__ == "__main__":
    sys.exit(main())
