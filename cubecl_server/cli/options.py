"""Command-line options several commands share."""

from __future__ import annotations

import argparse
import textwrap

from cubecl_server.errors import BackendNotFound
from cubecl_server.plugins.registry import registry

__all__ = ["backend_name"]


def backend_name(text: str) -> str:
    """``--backend NAME``: an installed backend's name (an unknown one is an error that
    says which exist, not an empty listing)."""
    try:
        registry().descriptor(text)
    except BackendNotFound as e:
        # argparse puts "cubecl-server COMMAND: error: argument --backend: " before it, so
        # what exists goes on lines of its own, within 100 columns.
        head, _, rest = str(e).partition("; ")
        lines = textwrap.wrap(rest, 96, initial_indent="  ", subsequent_indent="  ")
        raise argparse.ArgumentTypeError("\n".join([head + ";" if rest else head, *lines])) \
            from None
    return text
