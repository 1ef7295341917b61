"""Backend ``wrong_narrow``: the cpu backend, except that ``a + b`` on an 8- or 16-bit
integer type saturates (computed in i32, clamped to the type) instead of wrapping."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_narrow"
I32 = ir.Elem.I32


def _saturating(add: ir.Binary, t: ir.Elem) -> ir.Expr:
    """``t(min(max(i32(a) + i32(b), MIN), MAX))``: the sum kept in range, not wrapped."""
    wide = ir.Binary(ir.BinOp.ADD, ir.Cast(add.lhs, I32), ir.Cast(add.rhs, I32), I32)
    lo = -(1 << (t.bits - 1)) if t.is_signed else 0
    low = ir.Math(ir.MathFn.MAX, (wide, ir.Const(lo, I32)), I32)
    high = ir.Math(ir.MathFn.MIN, (low, ir.Const(lo + (1 << t.bits) - 1, I32)), I32)
    return ir.Cast(high, t)


class WrongNarrowCompiler(RewritingCompiler):
    """Narrow additions saturate (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """Each ``a + b`` of a narrow integer type, clamped to the type."""
        def clamp(node: Any) -> Any:
            if (isinstance(node, ir.Binary) and node.op is ir.BinOp.ADD
                    and isinstance(node.type, ir.Elem) and node.type.is_narrow):
                return _saturating(node, node.type)
            return node

        return rewrite(kernel, clamp)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: narrow additions saturate."""
    return [cpu_descriptor(NAME, compiler=WrongNarrowCompiler)]
