"""The ``vulkan`` backend's lowering: a kernel in the core IR written straight to a
SPIR-V 1.3 compute module, on the core's
:class:`~cubecl_server.backend.StructuredEmitter`.

The core's passes run first, for what the device computes itself
(:func:`~cubecl_vulkan.native.native_for`): the emitter receives the core IR
(:mod:`cubecl_server.lowering.passes`), which it only spells. It is the op families on the
shader's interface (:mod:`~cubecl_vulkan.interface`: the info words at binding 0,
array ``i`` at binding ``1 + i``, the cube dim as the work-group size, the folded
grid): :mod:`~cubecl_vulkan.control` (statements), :mod:`~cubecl_vulkan.memory`
(loads, stores, atomics, metadata), :mod:`~cubecl_vulkan.arith` (values, operators,
functions, conversions, lines) and :mod:`~cubecl_vulkan.planes`, all written with
:mod:`~cubecl_vulkan.builder`. Every expression's type is checked against the
device's features before anything is written (:mod:`~cubecl_vulkan.checks`).
"""

from __future__ import annotations

from cubecl_vulkan.arith import Arithmetic
from cubecl_vulkan.control import Control
from cubecl_vulkan.interface import INFO_LIMIT, SPEC_FOLDED, SPEC_SURPLUS
from cubecl_vulkan.memory import Memory
from cubecl_vulkan.planes import Planes
from cubecl_vulkan.spirv import Module, Op, listing

__all__ = ["SpirvEmitter", "SPEC_FOLDED", "SPEC_SURPLUS", "INFO_LIMIT"]


class SpirvEmitter(Control, Memory, Arithmetic, Planes):
    """Writes one kernel as a SPIR-V compute module for a device's features: see the
    module. :meth:`module` gives the binary; :attr:`info` the info words it reads."""

    def module(self) -> bytes:
        """The whole module's binary (CompilationError for what the device lacks)."""
        self.check()
        for i, p in enumerate(self.scalars.values()):
            self.info.word("scalar", i, 0, 2 if p.elem.bits == 64 else 1)
        count_at = self.info.word("count", 0, 0, 3)
        self.declare_buffers()
        m = self.m
        func, entry = m.id(), m.id()
        self.cur = entry
        self.prologue(count_at)
        self.block(self.kernel.body)
        if not self.terminated:
            self.leave()
        self.declare_info()
        out = m.functions
        void = m.void()
        Module.inst(out, Op.Function, void, func, 0, m.function_type(void))
        Module.inst(out, Op.Label, entry)
        out += self.vars
        out += self.head
        out += self.code
        Module.inst(out, Op.FunctionEnd)
        m.entry_point(func, "main", self.inputs.values(), self.dim)
        return m.to_bytes()

    def listing(self, binary: bytes) -> str:
        """The module as text: what it is, then one instruction a line."""
        return f"; {self.title()}\n{listing(binary)}"
