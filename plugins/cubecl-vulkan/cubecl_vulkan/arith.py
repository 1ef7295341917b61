"""Values and their arithmetic: constants, locals, builtins, operators, math functions,
conversions, selects and lines, each as SPIR-V spells it.

A line is a tuple of its elements' ids: every operation on lines applies the scalar
one to each element, so lines of 8 and 16 need no vector type. The core IR leaves
nothing to decide (:mod:`cubecl_server.lowering.passes`): only
:mod:`cubecl_vulkan.native`'s functions remain (f16 computed in f32).
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_vulkan.interface import Interface, Val
from cubecl_vulkan.native import GLSL_MATH
from cubecl_vulkan.spirv import GLSL, Deco, Op

__all__ = ["Arithmetic"]

Elem = ir.Elem
M = ir.MathFn
BinOp = ir.BinOp

_FLOAT_OPS = {BinOp.ADD: Op.FAdd, BinOp.SUB: Op.FSub, BinOp.MUL: Op.FMul, BinOp.DIV: Op.FDiv}
_INT_OPS = {BinOp.ADD: Op.IAdd, BinOp.SUB: Op.ISub, BinOp.MUL: Op.IMul,
            BinOp.BITAND: Op.BitwiseAnd, BinOp.BITOR: Op.BitwiseOr, BinOp.BITXOR: Op.BitwiseXor,
            BinOp.SHL: Op.ShiftLeftLogical}
_SIGNED_OPS = {BinOp.IDIV: Op.SDiv, BinOp.REM: Op.SRem, BinOp.SHR: Op.ShiftRightArithmetic}
_UNSIGNED_OPS = {BinOp.IDIV: Op.UDiv, BinOp.REM: Op.UMod, BinOp.SHR: Op.ShiftRightLogical}


class Arithmetic(Interface):
    """The value operations of the emitter."""

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
        """The operator (each element's, for lines)."""
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        t = ir.elem_of(e.lhs.type)
        if isinstance(a, tuple):
            assert isinstance(b, tuple)
            return tuple(self._binop(e.op, t, x, y) for x, y in zip(a, b, strict=True))
        assert isinstance(b, int)
        return self._binop(e.op, t, a, b)

    def _binop(self, op: ir.BinOp, t: Elem, a: int, b: int) -> int:
        if op.is_comparison:
            return self.cmp(op, a, b, t)
        if op is BinOp.AND or op is BinOp.OR:
            return self.logic(Op.LogicalAnd if op is BinOp.AND else Op.LogicalOr, a, b)
        if t.is_float:
            # NoContraction: each IR operation is rounded on its own. Without it Mesa
            # fuses and reassociates ((1 + x) - 1 becomes x), which the math library's
            # error-free steps rely on not happening.
            r = self.val(_FLOAT_OPS[op], self.ty(t), a, b)
            self.m.decorate(r, Deco.NoContraction)
            return r
        opcode = _INT_OPS.get(op) or (_SIGNED_OPS if t.is_signed else _UNSIGNED_OPS)[op]
        return self.val(opcode, self.ty(t), a, b)

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
        """A native math function (each element's, for lines)."""
        args = [self.expr(a) for a in e.args]
        t = ir.elem_of(e.args[0].type)
        lines = [a for a in args if isinstance(a, tuple)]  # all of them, or none
        if lines:
            return tuple(self._math(e.fn, t, list(col)) for col in zip(*lines, strict=True))
        return self._math(e.fn, t, [a for a in args if isinstance(a, int)])

    def _math(self, fn: M, t: Elem, xs: list[int]) -> int:
        if t.is_int:
            return self._int_math(fn, t, xs)
        match fn:
            case M.ISNAN:
                return self.val(Op.IsNan, self.m.bool(), xs[0])
            case M.ISINF:
                return self.val(Op.IsInf, self.m.bool(), xs[0])
            case M.ABS:
                return self.ext(GLSL.FAbs, t, xs[0])
            case M.FMA:
                return self.ext(GLSL.Fma, t, *xs)
        inst = GLSL_MATH[fn]  # the core IR holds native functions only
        if t is not Elem.F16:
            return self.ext(inst, t, *xs)
        f32, f16 = self.ty(Elem.F32), self.ty(Elem.F16)
        wide = [self.val(Op.FConvert, f32, x) for x in xs]
        return self.val(Op.FConvert, f16, self.ext(inst, Elem.F32, *wide))

    def _int_math(self, fn: M, t: Elem, xs: list[int]) -> int:
        """SPIR-V's integer functions, on 32 bits (the others are the passes'): the bit
        counts on the bits as u32, as Vulkan has them; ``FindILsb`` and ``FindUMsb``
        give -1 for 0, which the spellings below turn into the IR's results."""
        tid, u32 = self.ty(t), self.ty(Elem.U32)
        if fn is M.MUL_HI:
            pair = self.m.type(Op.TypeStruct, tid, tid)
            full = self.val(Op.SMulExtended if t.is_signed else Op.UMulExtended, pair, *xs)
            return self.val(Op.CompositeExtract, tid, full, 1)
        if fn is M.REVERSE_BITS:
            return self.val(Op.BitReverse, tid, xs[0])
        x = xs[0] if t is Elem.U32 else self.val(Op.Bitcast, u32, xs[0])
        match fn:
            case M.COUNT_ONES:
                return self.val(Op.BitCount, u32, x)
            case M.LEADING_ZEROS:  # 31 - (-1) wraps to 32
                return self.val(Op.ISub, u32, self.u(31), self.ext(GLSL.FindUMsb, Elem.U32, x))
            case M.TRAILING_ZEROS:  # -1 is the largest u32
                return self.ext(GLSL.UMin, Elem.U32, self.ext(GLSL.FindILsb, Elem.U32, x),
                                self.u(32))
        assert fn is M.FIND_FIRST_SET, fn  # -1 + 1 is 0
        return self.val(Op.IAdd, u32, self.ext(GLSL.FindILsb, Elem.U32, x), self.u(1))

    def expr_cast(self, e: ir.Cast) -> Val:
        """C's conversions (each element's, for a line)."""
        x = self.expr(e.x)
        src, dst = ir.elem_of(e.x.type), ir.elem_of(e.type)
        if isinstance(x, tuple):
            return tuple(self.cast(v, src, dst) for v in x)
        return self.cast(x, src, dst)

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

    def expr_line_fill(self, e: ir.LineFill) -> tuple[int, ...]:
        """The element, ``size`` times."""
        return (self.scalar(e.x),) * e.type.size

    def expr_line_element(self, e: ir.LineElement) -> int:
        """One of the line's elements."""
        x = self.expr(e.x)
        assert isinstance(x, tuple)
        return x[e.index]

    def expr_line_make(self, e: ir.LineMake) -> tuple[int, ...]:
        """The line of its elements."""
        return tuple(self.scalar(x) for x in e.parts)
