"""``python -m draspeed``: the ``draspeed`` command."""

from __future__ import annotations

from draspeed.cli import command

if __name__ == "__main__":
    command()
