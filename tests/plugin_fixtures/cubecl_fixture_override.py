"""Fixture plugin that provides no backend, only a Compiler for existing ones (the
fixture backend and the built-in cpu), and one that fails for backend "explode"."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import hookimpl


class OverrideCompiler:
    """A Compiler that says which plugin made it."""

    extension = "txt"
    provider = __name__

    def compile(self, kernel: Any, cube_dim: Any, mode: Any) -> Any:
        raise NotImplementedError


@hookimpl
def cubecl_server_compiler(descriptor: Any) -> OverrideCompiler | None:
    if descriptor.name == "explode":
        raise ValueError("boom")
    return OverrideCompiler() if descriptor.name in ("fixture", "cpu") else None
