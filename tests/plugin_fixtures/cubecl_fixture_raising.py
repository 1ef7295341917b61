"""Fixture plugin whose Compiler hook raises for every backend: a plugin that imports
and registers fine, and breaks the first time the compile path asks it anything."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import hookimpl


def _explode(backend: str) -> None:
    raise RuntimeError(f"compiler hook exploded for {backend!r}")


@hookimpl
def cubecl_server_compiler(descriptor: Any) -> Any:
    _explode(descriptor.name)
