"""Values turned into others: C's conversions between the IR's element types as SPIR-V
spells them."""

from __future__ import annotations

from cubecl_server import ir
from cubecl_vulkan.builder import Builder
from cubecl_vulkan.spirv import GLSL, Op

__all__ = ["UNSIGNED", "Values"]

Elem = ir.Elem

UNSIGNED = {Elem.I32: Elem.U32, Elem.U32: Elem.U32, Elem.I64: Elem.U64, Elem.U64: Elem.U64,
            Elem.I8: Elem.U8, Elem.U8: Elem.U8, Elem.I16: Elem.U16, Elem.U16: Elem.U16}
"""The unsigned integer type of each integer type's width."""


class Values(Builder):
    """A :class:`~cubecl_vulkan.builder.Builder` that also converts values."""

    def cast(self, x: int, src: Elem, dst: Elem) -> int:
        """``x`` converted from ``src`` to ``dst`` (``docs/ir.md``'s rules; to and from
        f16 through f32 for 64-bit integers, which SPIR-V does not convert directly)."""
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
        wide = self.val(Op.UConvert, self.ty(UNSIGNED[dst]), x)
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
