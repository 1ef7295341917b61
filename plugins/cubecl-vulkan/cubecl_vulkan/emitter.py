"""The ``vulkan`` backend's lowering: an IR kernel written straight to a SPIR-V 1.3
compute module, on the core's :class:`~cubecl_server.backend.StructuredEmitter`.

The module's interface is the one :class:`~cubecl_vulkan.compiler.ShaderLayout`
records (the info words at binding 0, array ``i`` at binding ``1 + i``, the cube dim
as the work-group size). What the IR leaves to a target is decided as the core's
C-family emitter decides it (``cubecl_server/lowering/cfamily.py``), which the backend
used through GLSL before: checked loads and stores, integer division by 0, shift
amounts modulo the width, ``fmin``/``fmax``'s NaN rules, the f32 compare-exchange loop
for atomic max/min, subgroup operations. The folded grid is this backend's own
(:meth:`SpirvEmitter._prologue`).

Values are SPIR-V ids; a line is a tuple of its elements' ids (every line operation
applies the scalar one to each element, so lines of 8 and 16 need no vector type).
Control flow is structured as SPIR-V requires: an ``If`` is a selection with a merge
block, a loop a header, a continue block and a merge block; ``and``/``or`` whose right
side loads or reaches a plane operation branch around it (a phi joins the values), as
does a checked load. Every expression's type is checked against the device's
features before anything is written.

The math functions the driver lacks or computes too loosely are functions of the
module (:mod:`cubecl_vulkan.mathlib`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cubecl_server import ir
from cubecl_server.backend import (
    CubeDim,
    ExecutionMode,
    InfoWords,
    StructuredEmitter,
    metadata_kind,
)
from cubecl_vulkan.mathlib import MathLib
from cubecl_vulkan.spirv import (
    GLSL,
    BuiltIn,
    Cap,
    Deco,
    Module,
    Op,
    Scope,
    Sem,
    Storage,
    listing,
)

if TYPE_CHECKING:
    from cubecl_vulkan.compiler import ShaderFeatures

__all__ = ["SpirvEmitter", "SPEC_FOLDED", "SPEC_SURPLUS", "INFO_LIMIT"]

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
M = ir.MathFn
Val = int | tuple[int, ...]
"""A value: its SPIR-V id, or a line's elements' ids."""

_NATIVE = {M.EXP: GLSL.Exp, M.LOG: GLSL.Log, M.SQRT: GLSL.Sqrt, M.RSQRT: GLSL.InverseSqrt,
           M.SIN: GLSL.Sin, M.COS: GLSL.Cos, M.FLOOR: GLSL.Floor, M.CEIL: GLSL.Ceil,
           M.TAN: GLSL.Tan, M.EXP2: GLSL.Exp2, M.ROUND: GLSL.RoundEven, M.TRUNC: GLSL.Trunc}
"""GLSL.std.450's where it has the IR's meaning, accurately enough (measured on
lavapipe: within 3e-7 relative)."""
_EXACT_F64 = frozenset({M.SQRT, M.RSQRT, M.FLOOR, M.CEIL, M.ROUND, M.TRUNC})
"""Of those, the ones GLSL.std.450 has for f64."""

_FLOAT_CMP = {ir.BinOp.EQ: Op.FOrdEqual, ir.BinOp.NE: Op.FUnordNotEqual,
              ir.BinOp.LT: Op.FOrdLessThan, ir.BinOp.LE: Op.FOrdLessThanEqual,
              ir.BinOp.GT: Op.FOrdGreaterThan, ir.BinOp.GE: Op.FOrdGreaterThanEqual}
_SIGNED_CMP = {ir.BinOp.EQ: Op.IEqual, ir.BinOp.NE: Op.INotEqual,
               ir.BinOp.LT: Op.SLessThan, ir.BinOp.LE: Op.SLessThanEqual,
               ir.BinOp.GT: Op.SGreaterThan, ir.BinOp.GE: Op.SGreaterThanEqual}
_UNSIGNED_CMP = {ir.BinOp.EQ: Op.IEqual, ir.BinOp.NE: Op.INotEqual,
                 ir.BinOp.LT: Op.ULessThan, ir.BinOp.LE: Op.ULessThanEqual,
                 ir.BinOp.GT: Op.UGreaterThan, ir.BinOp.GE: Op.UGreaterThanEqual}
_FLOAT_OPS = {ir.BinOp.ADD: Op.FAdd, ir.BinOp.SUB: Op.FSub, ir.BinOp.MUL: Op.FMul,
              ir.BinOp.DIV: Op.FDiv}
_INT_OPS = {ir.BinOp.ADD: Op.IAdd, ir.BinOp.SUB: Op.ISub, ir.BinOp.MUL: Op.IMul,
            ir.BinOp.BITAND: Op.BitwiseAnd, ir.BinOp.BITOR: Op.BitwiseOr,
            ir.BinOp.BITXOR: Op.BitwiseXor}
_UNSIGNED = {Elem.I32: Elem.U32, Elem.U32: Elem.U32, Elem.I64: Elem.U64, Elem.U64: Elem.U64,
             Elem.I8: Elem.U8, Elem.U8: Elem.U8, Elem.I16: Elem.U16, Elem.U16: Elem.U16}
_ATOMIC_INT = {ir.AtomicOp.ADD: Op.AtomicIAdd, ir.AtomicOp.SUB: Op.AtomicISub,
               ir.AtomicOp.AND: Op.AtomicAnd, ir.AtomicOp.OR: Op.AtomicOr,
               ir.AtomicOp.XOR: Op.AtomicXor, ir.AtomicOp.EXCHANGE: Op.AtomicExchange}
_PLANE_ARITH = {  # fn -> (float op, signed op, unsigned op, group operation)
    ir.PlaneFn.SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd, Op.GroupNonUniformIAdd, 0),
    ir.PlaneFn.INCLUSIVE_SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd,
                               Op.GroupNonUniformIAdd, 1),
    ir.PlaneFn.EXCLUSIVE_SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd,
                               Op.GroupNonUniformIAdd, 2),
    ir.PlaneFn.PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul, Op.GroupNonUniformIMul, 0),
    ir.PlaneFn.INCLUSIVE_PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul,
                                Op.GroupNonUniformIMul, 1),
    ir.PlaneFn.EXCLUSIVE_PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul,
                                Op.GroupNonUniformIMul, 2),
    ir.PlaneFn.MAX: (Op.GroupNonUniformFMax, Op.GroupNonUniformSMax, Op.GroupNonUniformUMax, 0),
    ir.PlaneFn.MIN: (Op.GroupNonUniformFMin, Op.GroupNonUniformSMin, Op.GroupNonUniformUMin, 0),
}


@dataclass(frozen=True)
class _Array:
    """An array as the body reaches it: its variable, element type and storage class."""

    name: str
    var: int
    elem: Elem
    storage: int
    size: int | None  # None for a parameter (its length is an info word)
    index: int = 0  # a parameter's position among the arrays


def _describe(e: ir.Expr) -> str:
    return f"`{ir.format_expr(e)}`"


def _float_words(value: float, elem: Elem) -> tuple[int, ...]:
    if elem is Elem.F64:
        return struct.unpack("<II", struct.pack("<d", value))
    if elem is Elem.F32:
        try:
            return struct.unpack("<I", struct.pack("<f", value))
        except OverflowError:
            return struct.unpack("<I", struct.pack("<f", math.copysign(math.inf, value)))
    try:
        return struct.unpack("<H", struct.pack("<e", value))
    except OverflowError:
        return struct.unpack("<H", struct.pack("<e", math.copysign(math.inf, value)))


class SpirvEmitter(StructuredEmitter):
    """Writes one kernel as a SPIR-V compute module for a device's features: see the
    module. :meth:`module` gives the binary; :attr:`info` the info words it reads."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode,
                 features: ShaderFeatures) -> None:
        super().__init__(kernel, cube_dim, mode, "vulkan")
        self.f = features
        self.m = Module()
        self.info = InfoWords()
        self.written = kernel.written_arrays
        self.code: list[int] = []
        self.vars: list[int] = []
        self.head: list[int] = []
        """The info words' loads, after the variables of the entry block: they dominate
        every use, and each word is loaded once."""
        self._words: dict[int, int] = {}
        self.cur = 0
        self.terminated = False
        self.loops: list[tuple[int, int]] = []
        self.inputs: dict[int, int] = {}
        self.arrays_v: dict[str, _Array] = {}
        self.bit_views: dict[str, int] = {}
        """The u32 view of each f32 array atomic max/min act on (its variable)."""
        self.used_builtins: set[B] = set()
        self._types: dict[Elem, int] = {}
        self.local_vars: dict[str, Val] = {}
        self.params_v: dict[str, int] = {}
        self.builtins: dict[B, int] = {}
        self._decorated: set[int] = set()
        self._meta = self.m.id()  # declared once the number of info words is known
        self.functions: dict[str, int] = {}
        self.lib = MathLib(self)

    # ------------------------------------------------------------ checks

    def _check(self) -> None:
        """Refuse what the device cannot run, naming the feature or limit."""
        total, f = math.prod(self.dim), self.f
        if total > f.max_invocations:
            self.fail(f"cube dim {self.dim} has {total} units; the device allows "
                      f"{f.max_invocations} (maxComputeWorkGroupInvocations)")
        for axis, (d, m) in enumerate(zip(self.dim, f.max_workgroup_size,
                                          strict=False)):
            if d > m:
                self.fail(f"cube dim {self.dim}: axis {'xyz'[axis]} exceeds the device's "
                          f"maxComputeWorkGroupSize {tuple(f.max_workgroup_size)}")
        if self.shared_bytes > f.max_shared_bytes:
            self.fail(f"shared arrays take {self.shared_bytes} bytes; the device allows "
                      f"{f.max_shared_bytes} (maxComputeSharedMemorySize)")
        seen: set[tuple[Elem, bool]] = set()

        def use(t: ir.Type, memory: bool, what: Callable[[], str]) -> None:
            elem = ir.elem_of(t)
            if (elem, memory) not in seen:
                seen.add((elem, memory))
                self._use(elem, what(), memory)

        k = self.kernel
        for p in k.params:
            use(p.elem, p.array, lambda p=p: f"parameter {p.name!r}")
        for loc in k.locals:
            use(loc.elem, False, lambda loc=loc: f"local {loc.name!r}")
        for sh in k.shared:
            use(sh.elem, True, lambda sh=sh: f"shared array {sh.name!r}")
        for la in k.local_arrays:
            use(la.elem, True, lambda la=la: f"local array {la.name!r}")
        # One walk of the body: the types it computes with, the builtins it reads (made
        # in the prologue), the f32 arrays atomic max/min act on (viewed as u32 too).
        for n in ir.walk(k.body):
            t = getattr(n, "type", None)
            if t is not None:
                use(t, False, lambda n=n: _describe(n))
            if isinstance(n, ir.Builtin):
                self.used_builtins.add(n.name)
            elif (isinstance(n, ir.AtomicStmt) and n.op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN)
                  and n.array in self.arrays and self.arrays[n.array].elem is Elem.F32):
                self.bit_views[n.array] = 0

    def _use(self, elem: Elem, what: str, memory: bool) -> None:
        f = self.f
        if elem is Elem.F64 and not f.float64:
            self.fail(f"{what} is f64, but the device lacks shaderFloat64")
        if elem in (Elem.I64, Elem.U64) and not f.int64:
            self.fail(f"{what} is {elem.value}, but the device lacks shaderInt64")
        if elem is Elem.F16 and not f.float16:
            self.fail(f"{what} is f16, but the device lacks shaderFloat16 with "
                      "16-bit storage")
        if elem.is_narrow and elem.bits == 8 and not f.bool_storage:
            self.fail(f"{what} is {elem.value}, but the device lacks shaderInt8 with "
                      "storageBuffer8BitAccess")
        if elem.is_narrow and elem.bits == 16 and not f.int16:
            self.fail(f"{what} is {elem.value}, but the device lacks shaderInt16 with "
                      "storageBuffer16BitAccess")
        if elem is Elem.BOOL and memory and not f.bool_storage:
            self.fail(f"{what} holds bool, which needs storageBuffer8BitAccess")

    # ------------------------------------------------------------ types and constants

    def ty(self, t: Elem) -> int:
        """The SPIR-V type of a value of ``t``."""
        found = self._types.get(t)
        if found is None:
            m = self.m
            found = self._types[t] = (m.bool() if t is Elem.BOOL else m.float(t.bits)
                                      if t.is_float else m.int(t.bits, t.is_signed))
        return found

    def mty(self, t: Elem) -> int:
        """The SPIR-V type of an array element of ``t`` (a bool is a byte)."""
        return self.m.int(8, False) if t is Elem.BOOL else self.ty(t)

    def c(self, value: float | bool, t: Elem) -> int:
        """The constant ``value`` of ``t`` (an integer wraps into its range)."""
        if t is Elem.BOOL:
            return self.m.boolean(bool(value))
        if t.is_float:
            return self.m.constant(self.ty(t), *_float_words(float(value), t))
        v = int(value) & ((1 << t.bits) - 1)
        if t.bits < 32 and t.is_signed and v >> (t.bits - 1):
            v |= (1 << 32) - (1 << t.bits)  # SPIR-V sign-extends a narrow signed literal
        words = (v,) if t.bits <= 32 else (v & 0xFFFFFFFF, v >> 32)
        return self.m.constant(self.ty(t), *words)

    def u(self, value: int) -> int:
        """A u32 constant."""
        return self.c(value, Elem.U32)

    def zero(self, t: Elem) -> int:
        """0 of ``t``."""
        return self.c(0, t)

    # ------------------------------------------------------------ instructions

    def op(self, opcode: int, *operands: int) -> None:
        """An instruction without a result."""
        Module.inst(self.code, opcode, *operands)

    def val(self, opcode: int, rtype: int, *operands: int) -> int:
        """An instruction with a result of type ``rtype``; its id."""
        r = self.m.id()
        Module.inst(self.code, opcode, rtype, r, *operands)
        return r

    def ext(self, inst: int, t: Elem, *args: int) -> int:
        """A GLSL.std.450 instruction."""
        return self.val(Op.ExtInst, self.ty(t), self.m.glsl, inst, *args)

    def sel(self, cond: int, a: int, b: int, t: Elem) -> int:
        """``cond ? a : b``."""
        return self.val(Op.Select, self.ty(t), cond, a, b)

    def cmp(self, op: ir.BinOp, a: int, b: int, t: Elem) -> int:
        """A comparison of two values of ``t``, a bool."""
        if t is Elem.BOOL:
            opcode = Op.LogicalEqual if op is ir.BinOp.EQ else Op.LogicalNotEqual
        elif t.is_float:
            opcode = _FLOAT_CMP[op]
        else:
            opcode = (_SIGNED_CMP if t.is_signed else _UNSIGNED_CMP)[op]
        return self.val(opcode, self.m.bool(), a, b)

    def logic(self, opcode: int, *args: int) -> int:
        """A logical operation on bools."""
        return self.val(opcode, self.m.bool(), *args)

    def local(self, type_id: int, init: int | None = None) -> int:
        """A variable of the entry point (declared in its first block)."""
        v = self.m.id()
        ptr = self.m.pointer(Storage.Function, type_id)
        Module.inst(self.vars, Op.Variable, ptr, v, Storage.Function,
                    *(() if init is None else (init,)))
        return v

    def load(self, type_id: int, ptr: int) -> int:
        """``*ptr``."""
        return self.val(Op.Load, type_id, ptr)

    def store(self, ptr: int, value: int) -> None:
        """``*ptr = value``."""
        self.op(Op.Store, ptr, value)

    # ------------------------------------------------------------ control flow

    def label(self, lab: int) -> None:
        """Start block ``lab``."""
        self.op(Op.Label, lab)
        self.cur = lab
        self.terminated = False

    def jump(self, target: int) -> None:
        """End the current block with a branch to ``target`` (unless it has ended)."""
        if not self.terminated:
            self.op(Op.Branch, target)
            self.terminated = True

    def if_(self, cond: int, then: Callable[[], None],
            orelse: Callable[[], None] | None = None) -> None:
        """A selection: ``then()`` where ``cond`` holds, else ``orelse()``."""
        m = self.m
        then_l, merge = m.id(), m.id()
        else_l = m.id() if orelse is not None else merge
        self.op(Op.SelectionMerge, merge, 0)
        self.op(Op.BranchConditional, cond, then_l, else_l)
        self.label(then_l)
        then()
        ended = self.terminated
        self.jump(merge)
        if orelse is not None:
            self.label(else_l)
            orelse()
            ended = ended and self.terminated
            self.jump(merge)
        else:
            ended = False
        self.label(merge)
        if ended:  # both sides jumped away: nothing reaches the merge block
            self.op(Op.Unreachable)
            self.terminated = True

    def guarded(self, cond: int, t: int, compute: Callable[[], int], otherwise: int) -> int:
        """``compute()`` where ``cond`` holds, else ``otherwise``; ``compute`` runs only
        there (a load, an atomic, a right side of ``and``)."""
        m = self.m
        before, then_l, merge = self.cur, m.id(), m.id()
        self.op(Op.SelectionMerge, merge, 0)
        self.op(Op.BranchConditional, cond, then_l, merge)
        self.label(then_l)
        value = compute()
        end = self.cur
        self.jump(merge)
        self.label(merge)
        return self.val(Op.Phi, t, value, end, otherwise, before)

    def loop(self, cond: Callable[[], int], body: Callable[[], None],
             advance: Callable[[], None], unroll: bool = False) -> None:
        """``while cond(): body()``, ``advance()`` after each iteration (a ``continue``
        goes there); ``break`` leaves."""
        m = self.m
        header, check, body_l, cont, merge = (m.id() for _ in range(5))
        self.jump(header)
        self.label(header)
        self.op(Op.LoopMerge, merge, cont, 1 if unroll else 0)
        self.op(Op.Branch, check)
        self.label(check)
        self.op(Op.BranchConditional, cond(), body_l, merge)
        self.label(body_l)
        self.loops.append((merge, cont))
        body()
        self.loops.pop()
        self.jump(cont)
        self.label(cont)
        advance()
        self.op(Op.Branch, header)
        self.label(merge)

    def function(self, key: str, ret: Elem, params: tuple[Elem, ...],
                 body: Callable[[list[int]], int]) -> int:
        """The id of helper function ``key`` of ``params`` giving ``ret``, written the
        first time: ``body`` gets the parameters' ids and gives the returned value (it
        may also return earlier)."""
        found = self.functions.get(key)
        if found is not None:
            return found
        m = self.m
        fid = self.functions[key] = m.id()
        saved = (self.code, self.vars, self.cur, self.terminated, self.loops)
        self.code, self.vars, self.loops = [], [], []
        ret_t, types = self.ty(ret), [self.ty(p) for p in params]
        head: list[int] = []
        Module.inst(head, Op.Function, ret_t, fid, 0, m.function_type(ret_t, *types))
        ids = [m.id() for _ in params]
        for pid, pt in zip(ids, types, strict=True):
            Module.inst(head, Op.FunctionParameter, pt, pid)
        entry = m.id()
        Module.inst(head, Op.Label, entry)
        self.cur, self.terminated = entry, False
        value = body(ids)
        if not self.terminated:
            self.op(Op.ReturnValue, value)
        m.functions += head + self.vars + self.code
        Module.inst(m.functions, Op.FunctionEnd)
        self.code, self.vars, self.cur, self.terminated, self.loops = saved
        return fid

    # ------------------------------------------------------------ the module

    def module(self) -> bytes:
        """The whole module's binary (CompilationError for what the device lacks)."""
        self._check()
        for i, p in enumerate(self.scalars.values()):
            self.info.word("scalar", i, 0, 2 if p.elem.bits == 64 else 1)
        count_at = self.info.word("count", 0, 0, 3)
        self._declare_buffers()
        m = self.m
        func, entry = m.id(), m.id()
        self.cur = entry
        self._prologue(count_at)
        self.block(self.kernel.body)
        if not self.terminated:
            self.op(Op.Return)
        self._declare_info()
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

    def _declare_info(self) -> None:
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

    def _declare_buffers(self) -> None:
        m = self.m
        u32 = self.ty(Elem.U32)
        for i, p in enumerate(self.arrays.values()):
            if p.elem is Elem.BOOL or p.elem.bits == 8:
                m.capability(Cap.StorageBuffer8BitAccess)
            elif p.elem.bits == 16:  # f16, i16, u16
                m.capability(Cap.StorageBuffer16BitAccess)
            var = self._block(self.mty(p.elem), max(1, p.elem.bits // 8), i + 1,
                              p.name in self.written)
            self.arrays_v[p.name] = _Array(p.name, var, p.elem, Storage.StorageBuffer, None, i)
            if p.name in self.bit_views:  # the same buffer as u32, for the compare-exchange
                self.bit_views[p.name] = self._block(u32, 4, i + 1, True)
        for sh in self.kernel.shared:
            t = m.array(self.mty(sh.elem), sh.size)
            var = m.variable(m.pointer(Storage.Workgroup, t), Storage.Workgroup)
            self.arrays_v[sh.name] = _Array(sh.name, var, sh.elem, Storage.Workgroup, sh.size)

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

    def _prologue(self, count_at: int) -> None:
        """The cube from a dispatch maybe folded, the builtins the body reads, the
        scalars, locals and arrays.

        Whether the dispatch is folded, and whether folding added work groups past the
        count (which leave at once, whole), are specialization constants
        (:data:`SPEC_FOLDED`, :data:`SPEC_SURPLUS`): the driver drops the arithmetic
        and the guard of the pipeline where they are false, the one most launches use.
        """
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
        self.if_(self.logic(Op.LogicalAnd, surplus, self.cmp(ir.BinOp.GE, cube, total,
                                                              Elem.U32)),
                 lambda: self.stmt_return(ir.Return()))
        self.builtins.update({
            B.CUBE_POS: cube, B.CUBE_COUNT_X: cx, B.CUBE_COUNT_Y: cy, B.CUBE_COUNT_Z: cz,
            B.CUBE_POS_X: self.sel(folded, self.val(Op.UMod, u32, cube, cx), gx, Elem.U32),
            B.CUBE_POS_Y: self.sel(folded, self.val(Op.UMod, u32, self.val(
                Op.UDiv, u32, cube, cx), cy), gy, Elem.U32),
            B.CUBE_POS_Z: self.sel(folded, self.val(Op.UDiv, u32, cube, cxy), gz, Elem.U32),
            B.CUBE_COUNT: total})
        if self.zeroed:
            self.used_builtins.add(B.UNIT_POS)
        for name in sorted(self.used_builtins, key=lambda n: n.value):
            self.builtin(name)
        for i, p in enumerate(self.scalars.values()):
            self.params_v[p.name] = self._scalar(p.elem, self.info.word("scalar", i))
        for loc in self.kernel.locals:
            t = ir.elem_of(loc.elem)
            tid = self.ty(t)
            init = m.null(tid)
            self.local_vars[loc.name] = (
                tuple(self.local(tid, init) for _ in range(loc.elem.size))
                if isinstance(loc.elem, ir.Line) else self.local(tid, init))
        for la in self.kernel.local_arrays:
            arr = m.array(self.mty(la.elem), la.size)
            var = self.local(arr, m.null(arr))  # every element 0 at the start
            self.arrays_v[la.name] = _Array(la.name, var, la.elem, Storage.Function, la.size)
        if self.zeroed:
            self._zero_shared()

    def _scalar(self, elem: Elem, at: int) -> int:
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

    def _zero_shared(self) -> None:
        """Shared memory starts at zero: the cube's units clear it together, then wait."""
        u32 = self.ty(Elem.U32)
        cleared = [sh for sh in self.kernel.shared if sh.name in self.zeroed]
        largest = max(sh.size for sh in cleared)
        z = self.local(u32)
        self.store(z, self.builtins[B.UNIT_POS])

        def body() -> None:
            at = self.load(u32, z)
            for sh in cleared:
                a = self.arrays_v[sh.name]

                def clear(a: _Array = a, at: int = at) -> None:
                    self.store(self._ptr(a, at), self._to_memory(self.zero(a.elem), a.elem))

                if sh.size < largest:
                    self.if_(self.cmp(ir.BinOp.LT, at, self.u(sh.size), Elem.U32), clear)
                else:
                    clear()

        def advance() -> None:
            self.store(z, self.val(Op.IAdd, u32, self.load(u32, z), self.u(math.prod(self.dim))))

        self.loop(lambda: self.cmp(ir.BinOp.LT, self.load(u32, z), self.u(largest), Elem.U32),
                  body, advance)
        self._barrier()

    # ------------------------------------------------------------ builtins

    def _subgroups(self, what: str) -> None:
        if not self.f.subgroups:
            self.fail(f"{what} needs subgroup operations (basic, arithmetic, shuffle, vote and "
                      "ballot in compute shaders), which the device lacks")
        self.m.capability(Cap.GroupNonUniform)

    def builtin(self, name: B) -> int:
        """A builtin's value (those the body reads are made in the prologue)."""
        found = self.builtins.get(name)
        if found is not None:
            return found
        u32 = self.ty(Elem.U32)
        dims = (*self.dim, math.prod(self.dim))
        match name:
            case B.CUBE_DIM_X | B.CUBE_DIM_Y | B.CUBE_DIM_Z | B.CUBE_DIM:
                return self.u(dims[(B.CUBE_DIM_X, B.CUBE_DIM_Y, B.CUBE_DIM_Z, B.CUBE_DIM).index(
                    name)])
            case B.UNIT_POS_X | B.UNIT_POS_Y | B.UNIT_POS_Z:
                ids = self._input(BuiltIn.LocalInvocationId, self.m.vector(u32, 3))
                value = self.val(Op.CompositeExtract, u32, ids, "XYZ".index(name.value[-1]))
            case B.UNIT_POS:
                value = self._input(BuiltIn.LocalInvocationIndex, u32)
            case B.PLANE_DIM:
                self._subgroups(name.value)
                value = self._input(BuiltIn.SubgroupSize, u32)
            case B.UNIT_POS_PLANE:
                self._subgroups(name.value)
                value = self._input(BuiltIn.SubgroupLocalInvocationId, u32)
            case B.ABSOLUTE_POS:
                value = self.val(Op.IAdd, u32, self.val(
                    Op.IMul, u32, self.builtin(B.CUBE_POS), self.u(dims[3])),
                    self.builtin(B.UNIT_POS))
            case _:  # ABSOLUTE_POS_X, _Y, _Z
                axis = name.value[-1]
                value = self.val(Op.IAdd, u32, self.val(
                    Op.IMul, u32, self.builtin(B["CUBE_POS_" + axis]),
                    self.u(dims["XYZ".index(axis)])), self.builtin(B["UNIT_POS_" + axis]))
        self.builtins[name] = value
        return value

    # ------------------------------------------------------------ memory

    def array(self, name: str) -> _Array:
        """The parameter, shared or local array called ``name``."""
        return self.arrays_v[name]

    def _ptr(self, a: _Array, index: int) -> int:
        """A pointer to element ``index`` (a u32) of ``a``."""
        ptr = self.m.pointer(a.storage, self.mty(a.elem))
        if a.size is None:
            return self.val(Op.AccessChain, ptr, a.var, self.u(0), index)
        return self.val(Op.AccessChain, ptr, a.var, index)

    def _to_memory(self, x: int, elem: Elem) -> int:
        if elem is not Elem.BOOL:
            return x
        u8 = self.mty(Elem.BOOL)
        return self.val(Op.Select, u8, x, self.m.constant(u8, 1), self.m.constant(u8, 0))

    def _from_memory(self, x: int, elem: Elem) -> int:
        if elem is not Elem.BOOL:
            return x
        return self.val(Op.INotEqual, self.m.bool(), x, self.m.constant(self.mty(elem), 0))

    def _read(self, a: _Array, index: int) -> int:
        """Element ``index`` (a u32) of ``a`` as a value."""
        return self._from_memory(self.load(self.mty(a.elem), self._ptr(a, index)), a.elem)

    def _unsigned(self, index: int, t: Elem) -> tuple[int, Elem]:
        """An index as the unsigned type of its width (a negative one is then outside)."""
        ut = _UNSIGNED[t]
        return (index if ut is t else self.val(Op.Bitcast, self.ty(ut), index)), ut

    def _index(self, index: ir.Expr) -> tuple[int, Elem]:
        """An index's value as the unsigned type of its width, and that type."""
        t = index.type
        assert isinstance(t, Elem)
        return self._unsigned(self.scalar(index), t)

    def _u32(self, index: int, ut: Elem) -> int:
        """An unsigned index as u32 (a 64-bit one is inside, so it fits)."""
        return index if ut is Elem.U32 else self.val(Op.UConvert, self.ty(Elem.U32), index)

    def bound(self, a: _Array, ut: Elem) -> int:
        """``a``'s length in elements, as unsigned ``ut``."""
        if a.size is not None:
            return self.c(a.size, ut)
        n = self.meta(self.info.word("buffer_len", a.index))
        return n if ut is Elem.U32 else self.val(Op.UConvert, self.ty(ut), n)

    def _inside(self, a: _Array, index: ir.Expr) -> tuple[int, Elem, int]:
        """The unsigned index, its type, and whether it is inside ``a``."""
        i, ut = self._index(index)
        return i, ut, self.cmp(ir.BinOp.LT, i, self.bound(a, ut), ut)

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """Emit ``stmts`` until control leaves (a jump, or an ``If`` whose sides both do)."""
        for s in stmts:
            if self.terminated:
                return
            self.stmt(s)

    def stmt_assign(self, s: ir.Assign) -> None:
        """A store to the local's variable (each element's, for a line)."""
        value, var = self.expr(s.value), self.local_vars[s.name]
        if isinstance(var, tuple):
            assert isinstance(value, tuple)
            for v, x in zip(var, value, strict=True):
                self.store(v, x)
        else:
            assert isinstance(value, int)
            self.store(var, value)

    def stmt_store(self, s: ir.Store) -> None:
        """The value first, then stored (checked: only where the index is inside; a
        line element by element, each checked)."""
        a = self.array(s.array)
        value = self.expr(s.value)
        if isinstance(value, tuple):
            self._store_line(a, s.index, value)
            return
        v = self._to_memory(value, a.elem)
        if not self.needs_check(s):  # unchecked mode, or proven inside (lowering.bounds)
            i, ut = self._index(s.index)
            self.store(self._ptr(a, self._u32(i, ut)), v)
            return
        i, ut, inside = self._inside(a, s.index)
        self.if_(inside, lambda: self.store(self._ptr(a, self._u32(i, ut)), v))

    def _line_slots(self, a: _Array, index: ir.Expr,
                    size: int) -> tuple[Elem, list[tuple[int, int | None]]]:
        """The unsigned index type, and per element of line ``index``: its position (of
        that type) and, checked, whether it is inside (the last line may be partial)."""
        i, ut = self._index(index)
        t = self.ty(ut)
        base = self.val(Op.IMul, t, i, self.c(size, ut))
        whole = n = 0
        if self.checked:
            n = self.bound(a, ut)
            whole = self.cmp(ir.BinOp.LE, i, self.val(Op.UDiv, t, n, self.c(size, ut)), ut)
        slots: list[tuple[int, int | None]] = []
        for k in range(size):
            j = self.val(Op.IAdd, t, base, self.c(k, ut))
            ok = (self.logic(Op.LogicalAnd, whole, self.cmp(ir.BinOp.LT, j, n, ut))
                  if self.checked else None)
            slots.append((j, ok))
        return ut, slots

    def _store_line(self, a: _Array, index: ir.Expr, value: tuple[int, ...]) -> None:
        ut, slots = self._line_slots(a, index, len(value))
        for (j, ok), x in zip(slots, value, strict=True):
            v = self._to_memory(x, a.elem)
            if ok is None:
                self.store(self._ptr(a, self._u32(j, ut)), v)
            else:
                self.if_(ok, lambda j=j, v=v: self.store(self._ptr(a, self._u32(j, ut)), v))

    def stmt_if(self, s: ir.If) -> None:
        """A selection."""
        cond = self.expr(s.cond)
        assert isinstance(cond, int)
        self.if_(cond, lambda: self.block(s.then),
                 (lambda: self.block(s.orelse)) if s.orelse else None)

    def stmt_while(self, s: ir.While) -> None:
        """A loop testing ``cond`` before every iteration."""
        self.loop(lambda: self.scalar(s.cond), lambda: self.block(s.body), lambda: None)

    def stmt_for(self, s: ir.For) -> None:
        """Python's ``range``: the bounds evaluated once, a counter of our own; a step
        longer than 1 moves only while the distance left exceeds it, else jumps to
        ``stop`` (so the counter never wraps into extra iterations)."""
        t = self.locals[s.var].elem
        assert isinstance(t, Elem)
        step, tid = int(s.step.value), self.ty(t)
        start, stop = self.expr(s.start), self.expr(s.stop)
        assert isinstance(start, int) and isinstance(stop, int)
        k = self.local(tid)
        self.store(k, start)
        var = self.local_vars[s.var]
        assert isinstance(var, int)

        def cond() -> int:
            return self.cmp(ir.BinOp.LT if step > 0 else ir.BinOp.GT, self.load(tid, k), stop, t)

        def body() -> None:
            self.store(var, self.load(tid, k))
            self.block(s.body)

        def advance() -> None:
            now = self.load(tid, k)
            nxt = self.val(Op.IAdd, tid, now, self.c(step, t))
            if abs(step) != 1:
                far, near = (stop, now) if step > 0 else (now, stop)
                ut = _UNSIGNED[t]
                if t.is_signed:
                    far = self.val(Op.Bitcast, self.ty(ut), far)
                    near = self.val(Op.Bitcast, self.ty(ut), near)
                left = self.val(Op.ISub, self.ty(ut), far, near)
                nxt = self.sel(self.cmp(ir.BinOp.GT, left, self.c(abs(step), ut), ut), nxt,
                               stop, t)
            self.store(k, nxt)

        self.loop(cond, body, advance, s.unroll)

    def stmt_break(self, s: ir.Break) -> None:
        """A branch to the innermost loop's merge block."""
        self.jump(self.loops[-1][0])

    def stmt_continue(self, s: ir.Continue) -> None:
        """A branch to the innermost loop's continue block."""
        self.jump(self.loops[-1][1])

    def stmt_return(self, s: ir.Return) -> None:
        """This unit's work ends."""
        self.op(Op.Return)
        self.terminated = True

    def stmt_barrier(self, s: ir.Barrier) -> None:
        """GLSL's ``groupMemoryBarrier(); barrier();``."""
        self._barrier()

    def stmt_sync_plane(self, s: ir.SyncPlane) -> None:
        """``OpControlBarrier`` of the subgroup, fencing workgroup and storage memory."""
        self._subgroups("sync_plane")
        sub = self.u(Scope.Subgroup)
        self.op(Op.ControlBarrier, sub, sub, self.u(Sem.AcquireRelease | Sem.UniformMemory
                                                     | Sem.WorkgroupMemory))

    def _barrier(self) -> None:
        wg = self.u(Scope.Workgroup)
        self.op(Op.MemoryBarrier, wg, self.u(Sem.AcquireRelease | Sem.UniformMemory
                                             | Sem.WorkgroupMemory | Sem.ImageMemory))
        self.op(Op.ControlBarrier, wg, wg, self.u(Sem.AcquireRelease | Sem.WorkgroupMemory))

    def stmt_atomic(self, s: ir.AtomicStmt) -> None:
        """The atomic; checked: operands first, then only where the index is inside (the
        old value reads 0 outside)."""
        a = self.array(s.array)
        operands = [self.scalar(x) for x in (s.compare, s.value) if x is not None]
        t = a.elem
        self._atomic_features(s.op, a)
        if not self.needs_check(s):
            i, ut = self._index(s.index)
            old = self._atomic(s.op, a, self._u32(i, ut), operands)
        else:
            i, ut, inside = self._inside(a, s.index)
            old = self.guarded(inside, self.ty(t), lambda: self._atomic(
                s.op, a, self._u32(i, ut), operands), self.zero(t))
        if s.result is not None:
            var = self.local_vars[s.result]
            assert isinstance(var, int)
            self.store(var, old)

    def _atomic_features(self, op: ir.AtomicOp, a: _Array) -> None:
        t, f = a.elem, self.f
        if t is Elem.F32 and op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN):
            if a.storage == Storage.Workgroup:
                self.fail(f"atomic {op.value} on the f32 shared array {a.name!r}: the vulkan "
                          "backend has it on global arrays only")
        elif t in (Elem.I64, Elem.U64):
            if not f.int64_atomics:
                self.fail(f"atomic {op.value} on {t.value} needs the device's "
                          "shaderBufferInt64Atomics/shaderSharedInt64Atomics")
            self.m.capability(Cap.Int64Atomics)
        elif t is Elem.F32:
            if not f.float32_atomic_add:
                self.fail(f"atomic {op.value} on f32 needs VK_EXT_shader_atomic_float")
            self.m.capability(Cap.AtomicFloat32AddEXT)

    def _atomic(self, op: ir.AtomicOp, a: _Array, index: int, operands: list[int]) -> int:
        t = a.elem
        tid = self.ty(t)
        ptr = self._ptr(a, index)
        scope = self.u(Scope.Workgroup if a.storage == Storage.Workgroup else Scope.Device)
        relaxed = self.u(Sem.Relaxed)
        if t is Elem.F32 and op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN):
            return self._atomic_fminmax(op, a, index, operands[-1])
        if t is Elem.F32:
            return self.val(Op.AtomicFAddEXT, tid, ptr, scope, relaxed, operands[-1])
        if op is ir.AtomicOp.COMPARE_EXCHANGE:
            return self.val(Op.AtomicCompareExchange, tid, ptr, scope, relaxed, relaxed,
                            operands[1], operands[0])
        if op in (ir.AtomicOp.MAX, ir.AtomicOp.MIN):
            signed = t.is_signed
            opcode = ((Op.AtomicSMax if signed else Op.AtomicUMax) if op is ir.AtomicOp.MAX
                      else (Op.AtomicSMin if signed else Op.AtomicUMin))
        else:
            opcode = _ATOMIC_INT[op]
        return self.val(opcode, tid, ptr, scope, relaxed, operands[-1])

    def _atomic_fminmax(self, op: ir.AtomicOp, a: _Array, index: int, value: int) -> int:
        """``fmax``/``fmin`` into an f32 element by compare-exchange on its bits (a u32
        view of the buffer), with C's NaN rules; the first exchange checks a plain read,
        and where the element already holds the result nothing is written."""
        m, u32, f32 = self.m, self.ty(Elem.U32), self.ty(Elem.F32)
        fn = M.MAX if op is ir.AtomicOp.MAX else M.MIN
        ptr = self.val(Op.AccessChain, m.pointer(Storage.StorageBuffer, u32),
                       self.bit_views[a.name], self.u(0), index)
        old, want, done = self.local(u32), self.local(u32), self.local(m.bool())

        def combine(bits: int) -> int:
            f = self._fminmax(fn, self.val(Op.Bitcast, f32, bits), value, Elem.F32)
            return self.val(Op.Bitcast, u32, f)

        first = self.load(u32, ptr)
        self.store(old, first)
        self.store(want, combine(first))
        self.store(done, m.boolean(False))

        def body() -> None:
            o, w = self.load(u32, old), self.load(u32, want)
            seen = self.val(Op.AtomicCompareExchange, u32, ptr, self.u(Scope.Device),
                            self.u(0), self.u(0), w, o)
            ok = self.cmp(ir.BinOp.EQ, seen, o, Elem.U32)
            again = combine(seen)
            self.store(old, self.sel(ok, o, seen, Elem.U32))
            self.store(want, again)
            self.store(done, self.logic(Op.LogicalOr, ok,
                                        self.cmp(ir.BinOp.EQ, again, seen, Elem.U32)))

        self.loop(lambda: self.logic(Op.LogicalNot, self.load(m.bool(), done)), body,
                  lambda: None)
        return self.val(Op.Bitcast, f32, self.load(u32, old))

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> Val:  # type: ignore[override]
        """The id of ``e``'s value (a tuple of ids for a line)."""
        return super().expr(e)  # type: ignore[return-value]

    def scalar(self, e: ir.Expr) -> int:
        """The id of a scalar expression's value."""
        v = self.expr(e)
        assert isinstance(v, int)
        return v

    def expr_const(self, e: ir.Const) -> int:
        """A constant."""
        return self.c(e.value, e.type)

    def expr_var(self, e: ir.Var) -> Val:
        """A load of the local's variable, or the scalar parameter's value."""
        var = self.local_vars.get(e.name)
        if var is None:
            return self.params_v[e.name]
        tid = self.ty(ir.elem_of(e.type))
        if isinstance(var, tuple):
            return tuple(self.load(tid, v) for v in var)
        return self.load(tid, var)

    def expr_builtin(self, e: ir.Builtin) -> int:
        """A builtin, made in the prologue."""
        return self.builtin(e.name)

    def expr_binary(self, e: ir.Binary) -> Val:
        """Operators with the IR's meaning; ``and``/``or`` short-circuit where the right
        side loads or reaches a plane operation."""
        if e.op is ir.BinOp.AND or e.op is ir.BinOp.OR:
            return self._logical(e)
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        t = ir.elem_of(e.lhs.type)
        known = int(e.rhs.value) if isinstance(e.rhs, ir.Const) and t.is_int else None
        if isinstance(a, tuple):
            assert isinstance(b, tuple)
            return tuple(self._binop(e.op, t, x, y, known) for x, y in zip(a, b, strict=True))
        assert isinstance(b, int)
        return self._binop(e.op, t, a, b, known)

    def _logical(self, e: ir.Binary) -> int:
        a = self.scalar(e.lhs)
        is_and = e.op is ir.BinOp.AND
        if not any(isinstance(n, (ir.Load, ir.PlaneOp)) for n in ir.walk(e.rhs)):
            return self.logic(Op.LogicalAnd if is_and else Op.LogicalOr, a, self.scalar(e.rhs))
        go = a if is_and else self.logic(Op.LogicalNot, a)
        return self.guarded(go, self.m.bool(), lambda: self.scalar(e.rhs), a)

    def _binop(self, op: ir.BinOp, t: Elem, a: int, b: int, known: int | None) -> int:
        if op.is_comparison:
            return self.cmp(op, a, b, t)
        tid = self.ty(t)
        if t.is_float:
            if op is ir.BinOp.REM:
                return self.lib.call("fmod", t, [a, b])
            return self.val(_FLOAT_OPS[op], tid, a, b)
        if op in _INT_OPS:
            return self.val(_INT_OPS[op], tid, a, b)
        if op is ir.BinOp.SHL or op is ir.BinOp.SHR:
            amount = self.val(Op.BitwiseAnd, tid, b, self.c(t.bits - 1, t))
            opcode = (Op.ShiftLeftLogical if op is ir.BinOp.SHL else
                      Op.ShiftRightArithmetic if t.is_signed else Op.ShiftRightLogical)
            return self.val(opcode, tid, a, amount)
        idiv = op is ir.BinOp.IDIV
        opcode = ((Op.SDiv if idiv else Op.SRem) if t.is_signed
                  else (Op.UDiv if idiv else Op.UMod))
        if known is not None and known not in (0, -1) and (t.is_signed or known > 0):
            return self.val(opcode, tid, a, b)  # cannot trap
        # By 0: 0; by -1: a negation that wraps (MIN // -1 == MIN), remainder 0.
        zero, one = self.zero(t), self.c(1, t)
        by0 = self.cmp(ir.BinOp.EQ, b, zero, t)
        if not t.is_signed:
            q = self.val(opcode, tid, a, self.sel(by0, one, b, t))
            return self.sel(by0, zero, q, t)
        by_m1 = self.cmp(ir.BinOp.EQ, b, self.c(-1, t), t)
        d = self.sel(self.logic(Op.LogicalOr, by0, by_m1), one, b, t)
        q = self.val(opcode, tid, a, d)
        special = self.val(Op.SNegate, tid, a) if idiv else zero
        return self.sel(by0, zero, self.sel(by_m1, special, q, t), t)

    def expr_unary(self, e: ir.Unary) -> Val:
        """``-`` (wrapping on integers), ``not``, ``~``."""
        x = self.expr(e.x)
        t = ir.elem_of(e.type)
        tid = self.ty(t)
        opcode = (Op.LogicalNot if e.op is ir.UnOp.NOT else Op.Not if e.op is ir.UnOp.BITNOT
                  else Op.FNegate if t.is_float else Op.SNegate)
        if isinstance(x, tuple):
            return tuple(self.val(opcode, tid, v) for v in x)
        return self.val(opcode, tid, x)

    def expr_math(self, e: ir.Math) -> Val:
        """Math functions (each element's, for lines)."""
        args = [self.expr(a) for a in e.args]
        t = ir.elem_of(e.args[0].type)
        lines = [a for a in args if isinstance(a, tuple)]  # all of them, or none
        if lines:
            return tuple(self._math(e.fn, t, list(col)) for col in zip(*lines, strict=True))
        return self._math(e.fn, t, [a for a in args if isinstance(a, int)])

    def _math(self, fn: M, t: Elem, xs: list[int]) -> int:
        if fn in (M.MIN, M.MAX):
            return self._minmax(fn, t, xs[0], xs[1])
        if fn is M.CLAMP:
            return self._minmax(M.MIN, t, self._minmax(M.MAX, t, xs[0], xs[1]), xs[2])
        if fn is M.SIGN:
            one, zero = self.c(1, t), self.zero(t)
            rest = xs[0] if not t.is_signed and t.is_int else self.sel(
                self.cmp(ir.BinOp.LT, xs[0], zero, t), self.c(-1, t), xs[0], t)
            return self.sel(self.cmp(ir.BinOp.GT, xs[0], zero, t), one, rest, t)
        if t.is_int:
            return self._int_math(fn, t, xs)
        return self._float_math(fn, t, xs)

    def _minmax(self, fn: M, t: Elem, a: int, b: int) -> int:
        if t.is_float:
            return self._fminmax(fn, a, b, t)
        pick = self.cmp(ir.BinOp.LT, b, a, t) if fn is M.MIN else self.cmp(ir.BinOp.LT, a, b, t)
        return self.sel(pick, b, a, t)

    def _fminmax(self, fn: M, a: int, b: int, t: Elem) -> int:
        """``fmin``/``fmax``: a NaN operand gives the other."""
        r = self.ext(GLSL.FMin if fn is M.MIN else GLSL.FMax, t, a, b)
        r = self.sel(self.val(Op.IsNan, self.m.bool(), b), a, r, t)
        return self.sel(self.val(Op.IsNan, self.m.bool(), a), b, r, t)

    def _float_math(self, fn: M, t: Elem, xs: list[int]) -> int:
        bool_t = self.m.bool()
        match fn:
            case M.ISNAN:
                return self.val(Op.IsNan, bool_t, xs[0])
            case M.ISINF:
                return self.val(Op.IsInf, bool_t, xs[0])
            case M.ABS:
                return self.ext(GLSL.FAbs, t, xs[0])
            case M.FMA:
                return self.ext(GLSL.Fma, t, *xs)
            case M.COPYSIGN:
                return self._copysign(t, xs[0], xs[1])
            case M.HYPOT:
                return self._hypot(t, xs[0], xs[1])
            case M.RHYPOT:
                return self.val(Op.FDiv, self.ty(t), self.c(1, t), self._hypot(t, xs[0], xs[1]))
            case M.POWI:
                return self.lib.call("pow", t, [xs[0], self.cast(xs[1], Elem.I32, t)])
        inst = _NATIVE.get(fn)
        if inst is None or (t is Elem.F64 and fn not in _EXACT_F64):
            return self.lib.call(fn.value, t, xs)
        if t is not Elem.F16:
            return self.ext(inst, t, *xs)
        f32, f16 = self.ty(Elem.F32), self.ty(Elem.F16)
        wide = [self.val(Op.FConvert, f32, x) for x in xs]
        return self.val(Op.FConvert, f16, self.ext(inst, Elem.F32, *wide))

    def _copysign(self, t: Elem, x: int, y: int) -> int:
        """``|x|`` with ``y``'s sign bit, on the bits (of the high word, for f64)."""
        if t is Elem.F16:  # exactly, through f32
            f32 = self.ty(Elem.F32)
            r = self._copysign(Elem.F32, self.val(Op.FConvert, f32, x),
                               self.val(Op.FConvert, f32, y))
            return self.val(Op.FConvert, self.ty(Elem.F16), r)
        u32 = self.ty(Elem.U32)
        tid = self.ty(t)
        if t is Elem.F32:
            xb, yb = (self.val(Op.Bitcast, u32, v) for v in (x, y))
        else:
            pair = self.m.vector(u32, 2)
            xv, yv = (self.val(Op.Bitcast, pair, v) for v in (x, y))
            xb, yb = (self.val(Op.CompositeExtract, u32, v, 1) for v in (xv, yv))
        bits = self.val(Op.BitwiseOr, u32,
                        self.val(Op.BitwiseAnd, u32, xb, self.u(0x7FFFFFFF)),
                        self.val(Op.BitwiseAnd, u32, yb, self.u(0x80000000)))
        if t is Elem.F32:
            return self.val(Op.Bitcast, tid, bits)
        lo = self.val(Op.CompositeExtract, u32, xv, 0)
        both = self.val(Op.CompositeConstruct, self.m.vector(u32, 2), lo, bits)
        return self.val(Op.Bitcast, tid, both)

    def _hypot(self, t: Elem, x: int, y: int) -> int:
        """``m sqrt(1 + (n/m)^2)`` with ``m``, ``n`` the larger and smaller magnitude (no
        overflow or underflow on the way); an infinity wins over a NaN."""
        if t is Elem.F16:
            f32 = self.ty(Elem.F32)
            r = self._hypot(Elem.F32, self.val(Op.FConvert, f32, x), self.val(Op.FConvert, f32, y))
            return self.val(Op.FConvert, self.ty(Elem.F16), r)
        tid, bool_t = self.ty(t), self.m.bool()
        a, b = self.ext(GLSL.FAbs, t, x), self.ext(GLSL.FAbs, t, y)
        big, small = self.ext(GLSL.FMax, t, a, b), self.ext(GLSL.FMin, t, a, b)
        safe = self.sel(self.cmp(ir.BinOp.EQ, big, self.zero(t), t), self.c(1, t), big, t)
        q = self.val(Op.FDiv, tid, small, safe)
        r = self.val(Op.FMul, tid, big, self.ext(GLSL.Sqrt, t, self.val(
            Op.FAdd, tid, self.c(1, t), self.val(Op.FMul, tid, q, q))))
        r = self.sel(self.cmp(ir.BinOp.EQ, big, self.zero(t), t), self.zero(t), r, t)
        nan = self.logic(Op.LogicalOr, self.val(Op.IsNan, bool_t, a), self.val(Op.IsNan, bool_t, b))
        r = self.sel(nan, self.val(Op.FAdd, tid, a, b), r, t)
        inf = self.logic(Op.LogicalOr, self.val(Op.IsInf, bool_t, a), self.val(Op.IsInf, bool_t, b))
        return self.sel(inf, self.c(math.inf, t), r, t)

    def _int_math(self, fn: M, t: Elem, xs: list[int]) -> int:
        tid, u32 = self.ty(t), self.ty(Elem.U32)
        x = xs[0]
        match fn:
            case M.ABS:
                if not t.is_signed:
                    return x
                neg = self.cmp(ir.BinOp.LT, x, self.zero(t), t)
                return self.sel(neg, self.val(Op.SNegate, tid, x), x, t)
            case M.MUL_HI:
                return self._mul_hi(t, x, xs[1])
            case M.SATURATING_ADD | M.SATURATING_SUB:
                return self._saturating(fn is M.SATURATING_ADD, t, x, xs[1])
        if t.bits == 64:
            lo, hi = self._halves(x)
            zero = self.u(0)
            match fn:
                case M.COUNT_ONES:
                    return self.val(Op.IAdd, u32, self.val(Op.BitCount, u32, lo),
                                    self.val(Op.BitCount, u32, hi))
                case M.REVERSE_BITS:
                    pair = self.val(Op.CompositeConstruct, self.m.vector(u32, 2),
                                    self.val(Op.BitReverse, u32, hi),
                                    self.val(Op.BitReverse, u32, lo))
                    return self.val(Op.Bitcast, tid, pair)
                case M.LEADING_ZEROS:
                    return self.sel(self.cmp(ir.BinOp.NE, hi, zero, Elem.U32), self._lz32(hi),
                                    self.val(Op.IAdd, u32, self._lz32(lo), self.u(32)), Elem.U32)
                case M.TRAILING_ZEROS:
                    return self.sel(self.cmp(ir.BinOp.NE, lo, zero, Elem.U32), self._tz32(lo),
                                    self.val(Op.IAdd, u32, self._tz32(hi), self.u(32)), Elem.U32)
            # FIND_FIRST_SET: 1 + the lowest set bit's index, 0 for 0
            low = self.val(Op.IAdd, u32, self.ext(GLSL.FindILsb, Elem.U32, lo), self.u(1))
            high = self.val(Op.IAdd, u32, self.ext(GLSL.FindILsb, Elem.U32, hi), self.u(33))
            high = self.sel(self.cmp(ir.BinOp.NE, hi, zero, Elem.U32), high, zero, Elem.U32)
            return self.sel(self.cmp(ir.BinOp.NE, lo, zero, Elem.U32), low, high, Elem.U32)
        ux = x if t is Elem.U32 else self.val(Op.Bitcast, u32, x)
        match fn:
            case M.COUNT_ONES:
                return self.val(Op.BitCount, u32, ux)
            case M.REVERSE_BITS:
                return self.val(Op.BitReverse, tid, x)
            case M.LEADING_ZEROS:
                return self._lz32(ux)
            case M.TRAILING_ZEROS:
                return self._tz32(ux)
        # FindILsb gives -1 (all ones) for 0: plus 1 is 0.
        return self.val(Op.IAdd, u32, self.ext(GLSL.FindILsb, Elem.U32, ux), self.u(1))

    def _halves(self, x: int) -> tuple[int, int]:
        u32 = self.ty(Elem.U32)
        pair = self.val(Op.Bitcast, self.m.vector(u32, 2), x)
        return (self.val(Op.CompositeExtract, u32, pair, 0),
                self.val(Op.CompositeExtract, u32, pair, 1))

    def _lz32(self, ux: int) -> int:
        u32 = self.ty(Elem.U32)
        msb = self.ext(GLSL.FindUMsb, Elem.U32, ux)
        return self.sel(self.cmp(ir.BinOp.EQ, ux, self.u(0), Elem.U32), self.u(32),
                        self.val(Op.ISub, u32, self.u(31), msb), Elem.U32)

    def _tz32(self, ux: int) -> int:
        return self.sel(self.cmp(ir.BinOp.EQ, ux, self.u(0), Elem.U32), self.u(32),
                        self.ext(GLSL.FindILsb, Elem.U32, ux), Elem.U32)

    def _mul_hi(self, t: Elem, a: int, b: int) -> int:
        """The high half of the full product: the extended multiply on 32 bits; on 64,
        from half-width products (schoolbook), corrected for each negative operand."""
        tid = self.ty(t)
        if t.bits == 32:
            pair = self.m.type(Op.TypeStruct, tid, tid)
            full = self.val(Op.SMulExtended if t.is_signed else Op.UMulExtended, pair, a, b)
            return self.val(Op.CompositeExtract, tid, full, 1)
        u = Elem.U64
        ut = self.ty(u)
        x = self.val(Op.Bitcast, ut, a) if t.is_signed else a
        y = self.val(Op.Bitcast, ut, b) if t.is_signed else b
        mask, half = self.c((1 << 32) - 1, u), self.c(32, u)

        def v(opcode: int, p: int, q: int) -> int:
            return self.val(opcode, ut, p, q)

        xl, xh = v(Op.BitwiseAnd, x, mask), v(Op.ShiftRightLogical, x, half)
        yl, yh = v(Op.BitwiseAnd, y, mask), v(Op.ShiftRightLogical, y, half)
        w = v(Op.IMul, xl, yl)
        w = v(Op.IAdd, v(Op.IMul, xh, yl), v(Op.ShiftRightLogical, w, half))
        w1, w2 = v(Op.BitwiseAnd, w, mask), v(Op.ShiftRightLogical, w, half)
        w = v(Op.IAdd, v(Op.IMul, xl, yh), w1)
        hi = v(Op.IAdd, v(Op.IAdd, v(Op.IMul, xh, yh), w2), v(Op.ShiftRightLogical, w, half))
        if not t.is_signed:
            return hi
        zero = self.zero(t)
        hi = self.sel(self.cmp(ir.BinOp.LT, a, zero, t), v(Op.ISub, hi, y), hi, u)
        hi = self.sel(self.cmp(ir.BinOp.LT, b, zero, t), v(Op.ISub, hi, x), hi, u)
        return self.val(Op.Bitcast, tid, hi)

    def _saturating(self, add: bool, t: Elem, a: int, b: int) -> int:
        """``a + b`` or ``a - b`` clamped to ``t``'s range."""
        tid = self.ty(t)
        lo = self.c(-(1 << (t.bits - 1)) if t.is_signed else 0, t)
        hi = self.c((1 << (t.bits - 1)) - 1 if t.is_signed else (1 << t.bits) - 1, t)
        r = self.val(Op.IAdd if add else Op.ISub, tid, a, b)
        if not t.is_signed:
            if add:
                return self.sel(self.cmp(ir.BinOp.LT, r, a, t), hi, r, t)
            return self.sel(self.cmp(ir.BinOp.LT, a, b, t), lo, r, t)
        zero = self.zero(t)
        an, bn, rn = (self.cmp(ir.BinOp.LT, v, zero, t) for v in (a, b, r))
        same = self.logic(Op.LogicalEqual if add else Op.LogicalNotEqual, an, bn)
        over = self.logic(Op.LogicalAnd, same, self.logic(Op.LogicalNotEqual, rn, an))
        return self.sel(over, self.sel(an, lo, hi, t), r, t)

    def expr_cast(self, e: ir.Cast) -> Val:
        """C's conversions (each element's, for a line)."""
        x = self.expr(e.x)
        src, dst = ir.elem_of(e.x.type), ir.elem_of(e.type)
        if isinstance(x, tuple):
            return tuple(self.cast(v, src, dst) for v in x)
        return self.cast(x, src, dst)

    def cast(self, x: int, src: Elem, dst: Elem) -> int:
        """``x`` converted from ``src`` to ``dst`` (``docs/ir.md``'s rules; to and from
        f16 through f32 for 64-bit integers and bools)."""
        if src is dst:
            return x
        tid = self.ty(dst)
        if dst is Elem.BOOL:
            return self.cmp(ir.BinOp.NE, x, self.zero(src), src)
        if src is Elem.BOOL:
            return self.sel(x, self.c(1, dst), self.zero(dst), dst)
        if src is Elem.F64 and dst is Elem.F16:
            return self._f64_to_f16(x)
        if dst is Elem.F16 and src.is_int and src.bits == 64:
            return self.val(Op.FConvert, tid, self.cast(x, src, Elem.F32))
        if src is Elem.F16 and dst.is_int and dst.bits == 64:
            return self.cast(self.val(Op.FConvert, self.ty(Elem.F32), x), Elem.F32, dst)
        if src.is_float and dst.is_float:
            return self.val(Op.FConvert, tid, x)
        if src.is_float:
            return self.val(Op.ConvertFToS if dst.is_signed else Op.ConvertFToU, tid, x)
        if dst.is_float:
            return self.val(Op.ConvertSToF if src.is_signed else Op.ConvertUToF, tid, x)
        if src.bits == dst.bits:
            return self.val(Op.Bitcast, tid, x)
        if src.bits < dst.bits and src.is_signed:  # sign-extends
            return self.val(Op.SConvert, tid, x)
        # zero-extends or truncates, into the unsigned type of dst's width
        wide = self.val(Op.UConvert, self.ty(_UNSIGNED[dst]), x)
        return wide if not dst.is_signed else self.val(Op.Bitcast, tid, wide)

    def _f64_to_f16(self, x: int) -> int:
        """f64 to f16 rounded once: to f32 rounding to odd (truncated, the last bit set
        where inexact), whose extra bits then round to nearest as from the f64."""
        f32, u32, f64 = self.ty(Elem.F32), self.ty(Elem.U32), self.ty(Elem.F64)
        f = self.val(Op.FConvert, f32, x)
        back = self.val(Op.FConvert, f64, f)
        inexact = self.logic(Op.LogicalAnd, self.cmp(ir.BinOp.NE, back, x, Elem.F64),
                             self.logic(Op.LogicalNot, self.val(Op.IsInf, self.m.bool(), f)))
        bits = self.val(Op.Bitcast, u32, f)
        over = self.cmp(ir.BinOp.GT, self.ext(GLSL.FAbs, Elem.F64, back),
                        self.ext(GLSL.FAbs, Elem.F64, x), Elem.F64)
        bits = self.sel(over, self.val(Op.ISub, u32, bits, self.u(1)), bits, Elem.U32)
        odd = self.val(Op.Bitcast, f32, self.val(Op.BitwiseOr, u32, bits, self.u(1)))
        return self.val(Op.FConvert, self.ty(Elem.F16), self.sel(inexact, odd, f, Elem.F32))

    def expr_bitcast(self, e: ir.Bitcast) -> int:
        """The bits as another type of their width."""
        x = self.scalar(e.x)
        if e.x.type is e.type:
            return x
        return self.val(Op.Bitcast, self.ty(e.type), x)

    def expr_select(self, e: ir.Select) -> Val:
        """Both sides evaluated, then chosen (per element by a line of bools)."""
        c, a, b = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
        t = ir.elem_of(e.type)
        if isinstance(a, tuple):
            assert isinstance(b, tuple)
            cs = c if isinstance(c, tuple) else (c,) * len(a)
            return tuple(self.sel(ck, x, y, t) for ck, x, y in zip(cs, a, b, strict=True))
        assert isinstance(c, int) and isinstance(b, int)
        return self.sel(c, a, b, t)

    def expr_load(self, e: ir.Load) -> Val:
        """An element (a line's elements); checked: 0 outside, the load not made."""
        a = self.array(e.array)
        if isinstance(e.type, ir.Line):
            ut, slots = self._line_slots(a, e.index, e.type.size)
            out = []
            for j, ok in slots:
                if ok is None:
                    out.append(self._read(a, self._u32(j, ut)))
                else:
                    out.append(self.guarded(ok, self.ty(a.elem), lambda j=j: self._read(
                        a, self._u32(j, ut)), self.zero(a.elem)))
            return tuple(out)
        if not self.needs_check(e):
            i, ut = self._index(e.index)
            return self._read(a, self._u32(i, ut))
        i, ut, inside = self._inside(a, e.index)
        return self.guarded(inside, self.ty(a.elem), lambda: self._read(a, self._u32(i, ut)),
                            self.zero(a.elem))

    def expr_metadata(self, e: ir.Len | ir.BufferLen | ir.Rank | ir.Shape | ir.Stride) -> int:
        """An info word; a line array's length in lines (the last one maybe partial)."""
        index = list(self.arrays).index(e.array)
        kind = metadata_kind(e)
        value = self.meta(self.info.word(kind, index, getattr(e, "dim", 0)))
        line = self.arrays[e.array].line
        if isinstance(e, ir.Len) and line > 1:
            u32 = self.ty(Elem.U32)
            whole = self.val(Op.UDiv, u32, value, self.u(line))
            part = self.cmp(ir.BinOp.NE, self.val(Op.UMod, u32, value, self.u(line)),
                            self.u(0), Elem.U32)
            return self.val(Op.IAdd, u32, whole, self.sel(part, self.u(1), self.u(0), Elem.U32))
        return value

    def expr_plane(self, e: ir.PlaneOp) -> int:
        """A subgroup operation; a broadcast and a shuffle by ``OpGroupNonUniformShuffle``
        (its lane may vary per unit), a lane past the plane reading 0."""
        fn, t = e.fn, e.type
        self._subgroups(f"plane_{fn.value}")
        if (t is Elem.F16 or t.bits == 64) and not self.f.subgroup_extended_types:
            self.fail(f"plane_{fn.value} of {t.value} needs shaderSubgroupExtendedTypes")
        v = self.scalar(e.value)
        tid, sub, m = self.ty(t), self.u(Scope.Subgroup), self.m
        if fn in _PLANE_ARITH:
            m.capability(Cap.GroupNonUniformArithmetic)
            fop, sop, uop, group = _PLANE_ARITH[fn]
            opcode = fop if t.is_float else sop if t.is_signed else uop
            return self.val(opcode, tid, sub, group, v)
        if fn in (ir.PlaneFn.ALL, ir.PlaneFn.ANY):
            m.capability(Cap.GroupNonUniformVote)
            opcode = Op.GroupNonUniformAll if fn is ir.PlaneFn.ALL else Op.GroupNonUniformAny
            return self.val(opcode, tid, sub, v)
        if fn is ir.PlaneFn.BALLOT:
            m.capability(Cap.GroupNonUniformBallot)
            u32 = self.ty(Elem.U32)
            mask = self.val(Op.GroupNonUniformBallot, m.vector(u32, 4), sub, v)
            return self.val(Op.CompositeExtract, u32, mask, 0)
        m.capability(Cap.GroupNonUniformShuffle)
        assert e.lane is not None
        lane_t = e.lane.type
        assert isinstance(lane_t, Elem)
        lane = self.cast(self.scalar(e.lane), lane_t, Elem.U32)
        if fn is ir.PlaneFn.SHUFFLE_XOR:
            return self.val(Op.GroupNonUniformShuffleXor, tid, sub, v, lane)
        inside = self.cmp(ir.BinOp.LT, lane, self._input(BuiltIn.SubgroupSize, self.ty(Elem.U32)),
                          Elem.U32)
        got = self.val(Op.GroupNonUniformShuffle, tid, sub, v,
                       self.sel(inside, lane, self.u(0), Elem.U32))
        return self.sel(inside, got, self.zero(t), t)

    def expr_line_fill(self, e: ir.LineFill) -> tuple[int, ...]:
        """The element, ``size`` times."""
        return (self.scalar(e.x),) * e.type.size

    def expr_line_element(self, e: ir.LineElement) -> int:
        """One of the line's elements."""
        x = self.expr(e.x)
        assert isinstance(x, tuple)
        return x[e.index]

    def expr_line_reduce(self, e: ir.LineReduce) -> int:
        """The elements folded with the scalar ``+``, ``min`` or ``max``."""
        x = self.expr(e.x)
        assert isinstance(x, tuple)
        t = e.type
        acc = x[0]
        for v in x[1:]:
            if e.fn is ir.ReduceFn.SUM:
                acc = self.val(Op.FAdd if t.is_float else Op.IAdd, self.ty(t), acc, v)
            else:
                acc = self._minmax(M.MIN if e.fn is ir.ReduceFn.MIN else M.MAX, t, acc, v)
        return acc
