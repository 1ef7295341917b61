"""Command-line options several commands share."""

from __future__ import annotations

import argparse

from cubecl_server.errors import BackendNotFound
from cubecl_server.plugins.registry import registry

__all__ = ["backend_name"]


def backend_name(text: str) -> str:
    """``--backend NAME``: an installed backend's name (an unknown one is an error that
    says which exist, not an empty listing)."""
    try:
        registry().descriptor(text)
    except BackendNotFound as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text
