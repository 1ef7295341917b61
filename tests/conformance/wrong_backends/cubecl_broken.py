"""Backend ``broken``: the cpu backend, whose lowering emits source that does not
parse, so not even the trivial kernel compiles: the suite must report that one
failure and skip the rest, saying why."""

from __future__ import annotations

from cubecl_wrong_common import cpu_descriptor

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, CompiledKernel, CubeDim, hookimpl
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backends.cpu.compiler import CpuCompiler

NAME = "broken"


class BrokenCompiler(CpuCompiler):
    """The cpu Compiler, with a syntax error at the end of every module (the fault)."""

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower, then break the source."""
        done = super().compile(kernel, cube_dim, mode)
        return CompiledKernel(name=done.name, entry_point=done.entry_point,
                              source=done.source + "\n)(  # not Python\n",
                              extension=done.extension)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The broken backend."""
    return [cpu_descriptor(NAME, compiler=BrokenCompiler)]
