"""Writing SPIR-V function bodies into a :class:`~cubecl_vulkan.spirv.Module`: ids,
types and constants by the IR's element types, instructions, blocks, the structured
control flow SPIR-V requires (a selection with its merge block, a loop with its
header, continue and merge blocks).

Nothing here knows a kernel: the emitter (:mod:`cubecl_vulkan.emitter`) is written
on it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from cubecl_server import ir
from cubecl_vulkan.spirv import Module, Op, Storage

__all__ = ["Builder"]

Elem = ir.Elem

_FLOAT_CMP = {ir.BinOp.EQ: Op.FOrdEqual, ir.BinOp.NE: Op.FUnordNotEqual,
              ir.BinOp.LT: Op.FOrdLessThan, ir.BinOp.LE: Op.FOrdLessThanEqual,
              ir.BinOp.GT: Op.FOrdGreaterThan, ir.BinOp.GE: Op.FOrdGreaterThanEqual}
_SIGNED_CMP = {ir.BinOp.EQ: Op.IEqual, ir.BinOp.NE: Op.INotEqual,
               ir.BinOp.LT: Op.SLessThan, ir.BinOp.LE: Op.SLessThanEqual,
               ir.BinOp.GT: Op.SGreaterThan, ir.BinOp.GE: Op.SGreaterThanEqual}
_UNSIGNED_CMP = {ir.BinOp.EQ: Op.IEqual, ir.BinOp.NE: Op.INotEqual,
                 ir.BinOp.LT: Op.ULessThan, ir.BinOp.LE: Op.ULessThanEqual,
                 ir.BinOp.GT: Op.UGreaterThan, ir.BinOp.GE: Op.UGreaterThanEqual}


def _float_words(value: float, elem: Elem) -> tuple[int, ...]:
    """The literal words of a float constant (one past the type's range is infinite)."""
    fmt = {Elem.F64: ("<d", "<II"), Elem.F32: ("<f", "<I"), Elem.F16: ("<e", "<H")}[elem]
    try:
        return struct.unpack(fmt[1], struct.pack(fmt[0], value))
    except OverflowError:
        return struct.unpack(fmt[1], struct.pack(fmt[0], math.copysign(math.inf, value)))


class Builder:
    """The function being written into :attr:`m`: its instructions (:attr:`code`), its
    variables (:attr:`vars`, which go in its first block), the current block."""

    def __init__(self, module: Module) -> None:
        self.m = module
        self.code: list[int] = []
        self.vars: list[int] = []
        self.cur = 0
        """The current block's label."""
        self.terminated = False
        """Whether the current block has ended (a branch or a return written)."""
        self.loops: list[tuple[int, int]] = []
        """The merge and continue blocks of each loop around the current block."""
        self._types: dict[Elem, int] = {}

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
        """A GLSL.std.450 instruction giving a ``t``."""
        return self.val(Op.ExtInst, self.ty(t), self.m.glsl, inst, *args)

    def sel(self, cond: int, a: int, b: int, t: Elem) -> int:
        """``cond ? a : b``, both evaluated."""
        return self.val(Op.Select, self.ty(t), cond, a, b)

    def cmp(self, op: ir.BinOp, a: int, b: int, t: Elem) -> int:
        """A comparison of two values of ``t``, a bool (a float ``!=`` holds for NaN)."""
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
        """A variable of the function (declared in its first block)."""
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

    def leave(self) -> None:
        """Return from the function."""
        self.op(Op.Return)
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

    def loop(self, cond: Callable[[], int], body: Callable[[], None],
             advance: Callable[[], None] | None = None, unroll: bool = False) -> None:
        """``while cond(): body()``, ``advance()`` after each iteration (a ``continue``
        goes there); a ``break`` leaves."""
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
        if advance is not None:
            advance()
        self.op(Op.Branch, header)
        self.label(merge)
