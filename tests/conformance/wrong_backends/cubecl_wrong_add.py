"""Backend ``wrong_add``: the cpu backend whose lowering makes ``a + b`` be ``a + b + 1``."""

from __future__ import annotations

import dataclasses
from typing import Any

from cubecl_wrong_common import cpu_descriptor

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, CompiledKernel, CubeDim, hookimpl
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backends.cpu.compiler import CpuCompiler

NAME = "wrong_add"


def _off_by_one(node: Any) -> Any:
    """The IR with every ADD given one more (the fault the suite must find)."""
    if isinstance(node, tuple):
        return tuple(_off_by_one(n) for n in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    changes = {f.name: _off_by_one(getattr(node, f.name)) for f in dataclasses.fields(node)
               if f.compare}
    new = dataclasses.replace(node, **changes)
    if isinstance(new, ir.Binary) and new.op is ir.BinOp.ADD and new.type is not ir.Elem.BOOL:
        return ir.Binary(ir.BinOp.ADD, new, ir.Const(1, new.type), new.type)
    return new


class WrongCompiler(CpuCompiler):
    """The cpu Compiler, off by one on every addition."""

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower the corrupted kernel."""
        return super().compile(_off_by_one(kernel), cube_dim, mode)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: the cpu backend with the off-by-one compiler."""
    return [cpu_descriptor(NAME, compiler=WrongCompiler)]
