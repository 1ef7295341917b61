"""Fixture plugin that implements a hook name that does not exist."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import hookimpl


@hookimpl
def cubecl_server_compiller(backend: str) -> Any:
    return None
