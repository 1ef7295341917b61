"""Fixture plugin whose registration hook raises."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import hookimpl


@hookimpl
def cubecl_server_register_backends() -> list[Any]:
    raise RuntimeError("register exploded")


@hookimpl
def cubecl_server_compiler(descriptor: Any) -> Any:
    raise AssertionError("a broken plugin's hooks must never be called")
