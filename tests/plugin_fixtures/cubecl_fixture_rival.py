"""Fixture plugin that, like the override fixture, answers for the fixture backend's
Compiler: which of the two answers is decided by their entry-point names."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import hookimpl


class RivalCompiler:
    """A Compiler that says which plugin made it."""

    extension = "txt"
    provider = __name__

    def compile(self, kernel: Any, cube_dim: Any, mode: Any) -> Any:
        raise NotImplementedError


@hookimpl
def cubecl_server_compiler(descriptor: Any) -> RivalCompiler | None:
    return RivalCompiler() if descriptor.name == "fixture" else None
