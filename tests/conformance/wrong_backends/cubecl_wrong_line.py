"""Backend ``wrong_line``: the cpu backend, except that a line load drops the last
element of the line: it reads 0 there (and wherever an element equals the last one)."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_line"


def _drop_last(load: ir.Load, t: ir.Line) -> ir.Expr:
    """``select(x != line(x[last]), x, line(0))`` of the loaded line ``x``."""
    last = ir.LineFill(ir.LineElement(load, t.size - 1, t.elem), t)
    keep = ir.Binary(ir.BinOp.NE, load, last, ir.Line(ir.Elem.BOOL, t.size))
    zero = ir.LineFill(ir.Const(False if t.elem is ir.Elem.BOOL else 0, t.elem), t)
    return ir.Select(keep, load, zero, t)


class WrongLineCompiler(RewritingCompiler):
    """Every line load loses its last element (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """Each ``Load`` of a line, with its last element read as 0."""
        def drop(node: Any) -> Any:
            if isinstance(node, ir.Load) and isinstance(node.type, ir.Line):
                return _drop_last(node, node.type)
            return node

        return rewrite(kernel, drop)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: line loads drop their last element."""
    return [cpu_descriptor(NAME, compiler=WrongLineCompiler)]
