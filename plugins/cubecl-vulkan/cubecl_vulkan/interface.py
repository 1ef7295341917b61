"""The shader's interface and the top of its entry point: the info words (a uniform
block at binding 0), the arrays (storage buffers at bindings ``1 + i``, shared arrays
in workgroup memory), the input built-ins, and the prologue that maps a dispatch,
maybe folded, back to cubes.

The folded grid is this backend's own: the launch's cube count is in the info words,
and two specialization constants (:data:`SPEC_FOLDED`, :data:`SPEC_SURPLUS`) say
whether the work groups are that count folded onto other axes and whether folding
added groups past it (which leave at once, whole); the driver drops the arithmetic
and the guard where they are false, the pipeline most launches use. The prologue
gives the cube's position and the count, linear and per axis, as the native
``CUBE_POS*`` and ``CUBE_COUNT*``; every other grid builtin but the unit's own
position arrives derived from them by the core's passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubecl_server import ir
from cubecl_server.backend import CubeDim
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backend.lowering import InfoWords, StructuredEmitter
from cubecl_vulkan.checks import check_device
from cubecl_vulkan.convert import Values
from cubecl_vulkan.native import ShaderFeatures, native_for
from cubecl_vulkan.spirv import BuiltIn, Cap, Deco, Module, Op, Storage

__all__ = ["Array", "Interface", "SPEC_FOLDED", "SPEC_SURPLUS", "INFO_LIMIT", "Val"]

SPEC_FOLDED = 0
"""SpecId of the bool that says the dispatch's work groups are the cube count folded
onto other axes (cube positions are then derived from the linear cube)."""
SPEC_SURPLUS = 1
"""SpecId of the bool that says the folded dispatch has work groups past the cube
count (each leaves at once)."""
INFO_LIMIT = 16384
"""Bytes of info words a kernel may read: ``maxUniformBufferRange``'s guaranteed
minimum."""

Elem = ir.Elem
B = ir.BuiltinName
Val = int | tuple[int, ...]
"""A value: its SPIR-V id, or a line's elements' ids."""


@dataclass(frozen=True)
class Array:
    """An array as the body reaches it: its variable, element type and storage class."""

    name: str
    var: int
    elem: Elem
    storage: int
    size: int | None
    """None for a parameter (its length is an info word)."""


class Interface(Values, StructuredEmitter):
    """The emitter's state and the shader's interface (see the module); the op
    families (:mod:`cubecl_vulkan.control`, :mod:`~cubecl_vulkan.memory`,
    :mod:`~cubecl_vulkan.arith`, :mod:`~cubecl_vulkan.planes`) write the body on it."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
                 features: ShaderFeatures) -> None:
        StructuredEmitter.__init__(self, kernel, cube_dim, mode, "vulkan",
                                   native_for(features))
        Values.__init__(self, Module())
        self.f = features
        self.info = InfoWords()
        self.written = self.kernel.written_arrays
        self.head: list[int] = []
        """The info words' loads, after the variables of the entry block: they dominate
        every use, and each word is loaded once."""
        self._words: dict[int, int] = {}
        self.inputs: dict[int, int] = {}
        self.arrays_v: dict[str, Array] = {}
        self.bit_views: dict[str, int] = {}
        """The u32 view of each f32 array a compare-exchange acts on the bits of (its
        variable): the core IR's loop for a float atomic the device lacks."""
        self.local_vars: dict[str, Val] = {}
        self.params_v: dict[str, int] = {}
        self.builtins: dict[B, int] = {}
        self._decorated: set[int] = set()
        self._meta = self.m.id()  # declared once the number of info words is known
        self.used_builtins: set[B] = set()
        """The builtins the body reads, made in the prologue (so each dominates its uses)."""
        for n in ir.walk(self.kernel.body):
            if isinstance(n, ir.Builtin):
                self.used_builtins.add(n.name)
            elif (isinstance(n, ir.AtomicStmt) and n.value.type is Elem.U32
                  and n.array in self.arrays and self.arrays[n.array].elem is Elem.F32):
                self.bit_views[n.array] = 0

    def check(self) -> None:
        """Refuse what the device cannot run (:func:`~cubecl_vulkan.checks.check_device`)."""
        check_device(self.kernel, self.dim, self.f, self.fail)

    def array(self, name: str) -> Array:
        """The parameter, shared or local array called ``name``."""
        return self.arrays_v[name]

    # ------------------------------------------------------------ declarations

    def _runtime_array(self, elem_type: int, stride: int) -> int:
        rt = self.m.type(Op.TypeRuntimeArray, elem_type)
        if rt not in self._decorated:
            self._decorated.add(rt)
            self.m.decorate(rt, Deco.ArrayStride, stride)
        return rt

    def _block(self, elem_type: int, stride: int, binding: int, writable: bool) -> int:
        m = self.m
        st = m.struct(self._runtime_array(elem_type, stride))
        m.decorate(st, Deco.Block)
        m.member_decorate(st, 0, Deco.Offset, 0)
        if not writable:
            m.member_decorate(st, 0, Deco.NonWritable)
        var = m.variable(m.pointer(Storage.StorageBuffer, st), Storage.StorageBuffer)
        m.decorate(var, Deco.DescriptorSet, 0)
        m.decorate(var, Deco.Binding, binding)
        return var

    def declare_info(self) -> None:
        """The info words as a uniform block of ``uvec4`` (std140's array stride is 16
        bytes): drivers load a uniform at a launch-constant address once for the whole
        subgroup, where a storage buffer may cost a gather per unit."""
        m, u32 = self.m, self.ty(Elem.U32)
        size = 16 * max(1, -(-self.info.words // 4))
        if size > INFO_LIMIT:
            self.fail(f"the kernel reads {self.info.words} info words (lengths, shapes, "
                      f"strides, scalars); a uniform block holds {INFO_LIMIT // 4} on every "
                      "Vulkan device")
        words = m.array(m.vector(u32, 4), size // 16)
        m.decorate(words, Deco.ArrayStride, 16)
        st = m.struct(words)
        m.decorate(st, Deco.Block)
        m.member_decorate(st, 0, Deco.Offset, 0)
        m.variable(m.pointer(Storage.Uniform, st), Storage.Uniform, self._meta)
        m.decorate(self._meta, Deco.DescriptorSet, 0)
        m.decorate(self._meta, Deco.Binding, 0)

    def declare_buffers(self) -> None:
        """The array parameters' storage buffers (an f32 one a compare-exchange acts on
        a second time, as u32, at the same binding) and the shared arrays."""
        m = self.m
        for i, p in enumerate(self.arrays.values()):
            if p.elem is Elem.BOOL or p.elem.bits == 8:
                m.capability(Cap.StorageBuffer8BitAccess)
            elif p.elem.bits == 16:  # f16, i16, u16
                m.capability(Cap.StorageBuffer16BitAccess)
            var = self._block(self.mty(p.elem), max(1, p.elem.bits // 8), i + 1,
                              p.name in self.written)
            self.arrays_v[p.name] = Array(p.name, var, p.elem, Storage.StorageBuffer, None)
            if p.name in self.bit_views:
                self.bit_views[p.name] = self._block(self.ty(Elem.U32), 4, i + 1, True)
        for sh in self.kernel.shared:
            t = m.array(self.mty(sh.elem), sh.size)
            var = m.variable(m.pointer(Storage.Workgroup, t), Storage.Workgroup)
            self.arrays_v[sh.name] = Array(sh.name, var, sh.elem, Storage.Workgroup, sh.size)

    def _input(self, builtin: int, type_id: int) -> int:
        """The value of an input built-in (its variable declared once)."""
        var = self.inputs.get(builtin)
        if var is None:
            m = self.m
            var = self.inputs[builtin] = m.variable(m.pointer(Storage.Input, type_id),
                                                    Storage.Input)
            m.decorate(var, Deco.BuiltIn, builtin)
        return self.load(type_id, var)

    def meta(self, word: int) -> int:
        """Info word ``word``, a u32 (loaded at the top of the entry point)."""
        found = self._words.get(word)
        if found is None:
            m, u32 = self.m, self.ty(Elem.U32)
            ptr, found = m.id(), m.id()
            Module.inst(self.head, Op.AccessChain, m.pointer(Storage.Uniform, u32), ptr,
                        self._meta, self.u(0), self.u(word // 4), self.u(word % 4))
            Module.inst(self.head, Op.Load, u32, found, ptr)
            self._words[word] = found
        return found

    # ------------------------------------------------------------ the prologue

    def prologue(self, count_at: int) -> None:
        """The cube from a dispatch maybe folded (see the module), the builtins the body
        reads, the scalars, and the locals and local arrays (all starting at 0)."""
        m, u32 = self.m, self.ty(Elem.U32)
        uvec3 = m.vector(u32, 3)
        wg = self._input(BuiltIn.WorkgroupId, uvec3)
        ng = self._input(BuiltIn.NumWorkgroups, uvec3)
        gx, gy, gz = (self.val(Op.CompositeExtract, u32, wg, k) for k in range(3))
        nx, ny = (self.val(Op.CompositeExtract, u32, ng, k) for k in range(2))
        cube = self.val(Op.IAdd, u32, gx, self.val(Op.IMul, u32, nx, self.val(
            Op.IAdd, u32, gy, self.val(Op.IMul, u32, ny, gz))))
        cx, cy, cz = (self.meta(count_at + k) for k in range(3))
        cxy = self.val(Op.IMul, u32, cx, cy)
        total = self.val(Op.IMul, u32, cxy, cz)
        folded, surplus = m.spec_false(SPEC_FOLDED), m.spec_false(SPEC_SURPLUS)
        self.if_(self.logic(Op.LogicalAnd, surplus,
                            self.cmp(ir.BinOp.GE, cube, total, Elem.U32)), self.leave)
        # The linear cube and the count are native too: the guard needs both, and a
        # CUBE_POS derived from the counts in the info words (the same value) made
        # lavapipe's saxpy twice as slow, its addresses no longer seen as consecutive.
        self.builtins.update({
            B.CUBE_POS: cube, B.CUBE_COUNT: total,
            B.CUBE_COUNT_X: cx, B.CUBE_COUNT_Y: cy, B.CUBE_COUNT_Z: cz,
            B.CUBE_POS_X: self.sel(folded, self.val(Op.UMod, u32, cube, cx), gx, Elem.U32),
            B.CUBE_POS_Y: self.sel(folded, self.val(Op.UMod, u32, self.val(
                Op.UDiv, u32, cube, cx), cy), gy, Elem.U32),
            B.CUBE_POS_Z: self.sel(folded, self.val(Op.UDiv, u32, cube, cxy), gz, Elem.U32)})
        # Made here, in the entry block, so each dominates every use.
        for name in sorted(self.used_builtins, key=lambda n: n.value):
            self.builtin(name)
        for i, p in enumerate(self.scalars.values()):
            self.params_v[p.name] = self._scalar(p.elem, self.info.word("scalar", i))
        for loc in self.kernel.locals:
            tid = self.ty(ir.elem_of(loc.elem))
            self.local_vars[loc.name] = (
                tuple(self.local(tid, m.null(tid)) for _ in range(loc.elem.size))
                if isinstance(loc.elem, ir.Line) else self.local(tid, m.null(tid)))
        for la in self.kernel.local_arrays:
            arr = m.array(self.mty(la.elem), la.size)
            var = self.local(arr, m.null(arr))  # Native.zeroed_local_arrays
            self.arrays_v[la.name] = Array(la.name, var, la.elem, Storage.Function, la.size)

    def _scalar(self, elem: Elem, at: int) -> int:
        """A scalar parameter from its info words."""
        w = self.meta(at)
        match elem:
            case Elem.U32:
                return w
            case Elem.I32 | Elem.F32:
                return self.val(Op.Bitcast, self.ty(elem), w)
            case Elem.BOOL:
                return self.cmp(ir.BinOp.NE, w, self.u(0), Elem.U32)
            case Elem.F16:
                pair = self.val(Op.Bitcast, self.m.vector(self.ty(Elem.F16), 2), w)
                return self.val(Op.CompositeExtract, self.ty(Elem.F16), pair, 0)
            case Elem.I8 | Elem.U8 | Elem.I16 | Elem.U16:  # the word's low bits
                return self.cast(w, Elem.U32, elem)
        u32 = self.ty(Elem.U32)
        both = self.val(Op.CompositeConstruct, self.m.vector(u32, 2), w, self.meta(at + 1))
        return self.val(Op.Bitcast, self.ty(elem), both)

    # ------------------------------------------------------------ builtins

    def subgroups(self, what: str) -> None:
        """Refuse ``what`` where the device has no subgroup operations."""
        if not self.f.subgroups:
            self.fail(f"{what} needs subgroup operations (basic, arithmetic, shuffle, vote and "
                      "ballot in compute shaders), which the device lacks")
        self.m.capability(Cap.GroupNonUniform)

    def builtin(self, name: B) -> int:
        """A native builtin's value (those the body reads are made in the prologue)."""
        found = self.builtins.get(name)
        if found is not None:
            return found
        u32 = self.ty(Elem.U32)
        match name:
            case B.UNIT_POS_X | B.UNIT_POS_Y | B.UNIT_POS_Z:
                ids = self._input(BuiltIn.LocalInvocationId, self.m.vector(u32, 3))
                value = self.val(Op.CompositeExtract, u32, ids, "XYZ".index(name.value[-1]))
            case B.UNIT_POS:
                value = self._input(BuiltIn.LocalInvocationIndex, u32)
            case B.PLANE_DIM:
                self.subgroups(name.value)
                value = self._input(BuiltIn.SubgroupSize, u32)
            case B.UNIT_POS_PLANE:
                self.subgroups(name.value)
                value = self._input(BuiltIn.SubgroupLocalInvocationId, u32)
            case _:  # the passes derive the others (Native.builtins)
                raise AssertionError(f"{name.value} is not native to the vulkan backend")
        self.builtins[name] = value
        return value

    # ------------------------------------------------------------ values

    def expr(self, e: ir.Expr) -> Val:  # type: ignore[override]
        """The id of ``e``'s value (a tuple of ids for a line)."""
        return super().expr(e)  # type: ignore[return-value]

    def scalar(self, e: ir.Expr) -> int:
        """The id of a scalar expression's value."""
        v = self.expr(e)
        assert isinstance(v, int)
        return v
