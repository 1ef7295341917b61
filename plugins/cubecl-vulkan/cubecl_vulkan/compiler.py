"""The ``vulkan`` backend's Compiler: IR -> a SPIR-V 1.3 compute module, written
directly by :class:`~cubecl_vulkan.emitter.SpirvEmitter` (no GLSL, no glslang).

The shader's interface (what :class:`ShaderLayout` records and the server fills):

- ``set 0, binding 0``: the info words, a uniform block of ``uvec4`` (std140) bound as
  a *dynamic* uniform buffer, so one descriptor set serves every launch with the same
  arrays and only the dynamic offset changes. Its layout is the core's
  :class:`~cubecl_server.backend.lowering.InfoLayout` (:attr:`ShaderLayout.info`): the words of
  every scalar parameter, every length, shape and stride the kernel reads (``Len``
  and the checked-mode bounds use the element count), and the launch's cube count
  (3 words): the cube builtins are computed from it, so a count past the device's
  ``maxComputeWorkGroupCount`` on one axis is dispatched folded onto the others
  (:func:`~cubecl_server.backend.lowering.fold_count`); specialization constants
  (:data:`~cubecl_vulkan.interface.SPEC_FOLDED`, :data:`~cubecl_vulkan.interface.SPEC_SURPLUS`)
  say whether it was, so the unfolded pipeline pays nothing for it.
- ``set 0, binding 1 + i``: array parameter ``i`` as a runtime array (a bool as a
  byte), bound as a descriptor *range* at the slice's offset. So arrays may start
  anywhere inside a pooled allocation that is aligned to
  ``minStorageBufferOffsetAlignment``; the shader indexes from 0. Arrays the kernel
  never writes are ``NonWritable``; none is ``Restrict`` (two parameters may be one
  buffer). An f32 array a compare-exchange acts on the bits of (the core IR's loop
  for an f32 atomic the device lacks) is declared a second time at its binding, as
  ``uint`` (not on shared arrays: a workgroup variable has one type).
- The cube dim is the ``LocalSize`` execution mode: part of the ArtifactId, so a
  constant here.

What the core's passes write before a word is (the rules of the IR the device does
not compute itself, :mod:`cubecl_vulkan.native`), how the rest is spelled
(:mod:`cubecl_vulkan.emitter`) and what is refused for the device's features and
limits (:mod:`cubecl_vulkan.checks`, ``CompilationError`` naming the feature) are
those modules'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cubecl_server import ir
from cubecl_server.backend import CompiledKernel, CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import InfoLayout
from cubecl_vulkan.emitter import SpirvEmitter
from cubecl_vulkan.native import ShaderFeatures

__all__ = ["ShaderFeatures", "ArrayBinding", "ShaderLayout", "LoweredModule",
           "VulkanCompiler"]


@dataclass(frozen=True)
class ArrayBinding:
    """One array parameter's storage buffer: its element type and whether it is written."""

    name: str
    elem: ir.Elem
    writable: bool


@dataclass(frozen=True)
class ShaderLayout:
    """What a launch must bind and fill: the arrays (bindings 1..n), the info words
    (binding 0) and the work-group size compiled in."""

    arrays: tuple[ArrayBinding, ...]
    info: InfoLayout
    local_size: tuple[int, int, int]
    entry_point: str = "main"

    def to_header(self) -> dict[str, Any]:
        """The layout as JSON-ready values (what the artifact header keeps)."""
        return {
            "entry_point": self.entry_point,
            "local_size": list(self.local_size),
            "arrays": [[a.name, a.elem.value, a.writable] for a in self.arrays],
            "info": self.info.to_header(),
        }

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> ShaderLayout:
        """The inverse of :meth:`to_header`; KeyError/ValueError/TypeError when malformed."""
        x, y, z = (int(v) for v in header["local_size"])
        return cls(
            arrays=tuple(ArrayBinding(str(n), ir.Elem(e), bool(w)) for n, e, w in header["arrays"]),
            info=InfoLayout.from_header(header["info"]),
            local_size=(x, y, z), entry_point=str(header["entry_point"]))


@dataclass(frozen=True)
class LoweredModule:
    """What finalize needs of a lowered kernel: the module's bytes and its layout (the
    CompiledKernel's ``repr``; its ``source`` is the module as readable text)."""

    spirv: bytes
    layout: ShaderLayout


class VulkanCompiler:
    """The ``vulkan`` backend's Compiler: an IR kernel -> a SPIR-V compute module.

    ``features`` says what the target device supports; the ArtifactCompiler of a
    server uses :meth:`for_device` to get one that matches its device.
    """

    extension = "spv.txt"
    """The listing's (readable text, not spirv-as input)."""

    def __init__(self, features: ShaderFeatures | None = None) -> None:
        self.features = features or ShaderFeatures()

    def for_device(self, features: ShaderFeatures) -> VulkanCompiler:
        """A compiler like this one for a device with ``features``."""
        return VulkanCompiler(features)

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` for work groups of ``cube_dim`` in ``mode``: the module
        (and its layout) is the CompiledKernel's ``repr``, its text the ``source``."""
        e = SpirvEmitter(kernel, cube_dim, mode, self.features)
        binary = e.module()
        layout = ShaderLayout(tuple(ArrayBinding(p.name, p.elem, p.name in e.written)
                                    for p in e.arrays.values()), e.info.layout(), e.dim)
        return CompiledKernel(name=kernel.name, entry_point="main", source=e.listing(binary),
                              extension=self.extension, repr=LoweredModule(binary, layout),
                              core=e.kernel)
