"""What the wrong backends share: the cpu runtime under another name, a descriptor of
the cpu backend's parts with one of them changed, and a cpu Compiler that lowers a
rewritten IR (the fault)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from cubecl_server import ir
from cubecl_server.backend import (
    BackendDescriptor,
    CompiledKernel,
    Compiler,
    ComputeServer,
    CubeDim,
)
from cubecl_server.backend.compiling import ArtifactStore, ExecutionMode
from cubecl_server.backends.cpu.artifact import CpuArtifactCompiler, CpuTarget
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.server import CpuRuntime, CpuServer
from cubecl_server.device import DeviceInfo


class NamedServer(CpuServer):
    """The cpu server, reporting another backend name."""

    def __init__(self, device: DeviceInfo, backend: str) -> None:
        super().__init__(device)
        self.backend = backend


class NamedRuntime(CpuRuntime):
    """The cpu runtime under another backend name."""

    def __init__(self, backend: str) -> None:
        self.name = backend

    def create_server(self, device: int) -> NamedServer:
        """The host, as this backend's server."""
        return NamedServer(super().create_server(device).device, self.name)


def cpu_descriptor(name: str, *, compiler: Callable[[], Compiler] = CpuCompiler,
                   target: Callable[[ArtifactStore | None], CpuTarget] = CpuTarget
                   ) -> BackendDescriptor:
    """The cpu backend under ``name`` (its store is its own), with ``compiler`` and
    ``target`` made as given."""
    def artifact_compiler(c: Compiler, server: ComputeServer) -> CpuArtifactCompiler:
        return CpuArtifactCompiler(c)

    return BackendDescriptor(contract=1, name=name, package=f"cubecl_{name}",
                             runtime=lambda: NamedRuntime(name),
                             compiler=lambda capabilities: compiler(),
                             artifact_compiler=artifact_compiler,
                             target=lambda server, store: target(store))


def rewrite(node: Any, on_node: Callable[[Any], Any],
            on_block: Callable[[tuple[Any, ...], int], tuple[Any, ...]] | None = None,
            depth: int = 0) -> Any:
    """``node`` (IR) rebuilt bottom-up: ``on_node`` maps each rebuilt dataclass node,
    ``on_block`` each rebuilt block (a tuple of statements) with the number of ``if``
    statements around it. Fields that take no part in equality (source locations) are
    kept as they are."""
    if isinstance(node, tuple):
        items = tuple(rewrite(n, on_node, on_block, depth) for n in node)
        is_block = bool(items) and all(isinstance(n, ir.Stmt) for n in items)
        return on_block(items, depth) if on_block is not None and is_block else items
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    inner = depth + 1 if isinstance(node, ir.If) else depth
    changes = {f.name: rewrite(getattr(node, f.name), on_node, on_block, inner)
               for f in dataclasses.fields(node) if f.compare}
    return on_node(dataclasses.replace(node, **changes))


class RewritingCompiler(CpuCompiler):
    """The cpu Compiler, lowering each kernel as :meth:`fault` rewrites it."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """The kernel as the wrong backend sees it (unchanged here)."""
        return kernel

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower the rewritten kernel."""
        return super().compile(self.fault(kernel), cube_dim, mode)
