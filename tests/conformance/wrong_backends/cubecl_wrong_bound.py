"""Backend ``wrong_bound``: the cpu backend, except that ``ABSOLUTE_POS < n`` is
lowered as ``ABSOLUTE_POS <= n``: one unit past every bound runs, which a store past
the end of an array hides and a side effect (an atomic, a store into a longer array)
shows."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_bound"


class WrongBoundCompiler(RewritingCompiler):
    """``i < n`` is ``i <= n`` for the unit's position (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """Every ``pos < bound``, with ``pos`` the position or a local holding it, made
        ``pos <= bound``."""
        pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
        aliases = {s.name for s in kernel.body if isinstance(s, ir.Assign) and s.value == pos}

        def is_pos(e: ir.Expr) -> bool:
            return e == pos or (isinstance(e, ir.Var) and e.name in aliases)

        def loosen(node: Any) -> Any:
            if (isinstance(node, ir.Binary) and node.op is ir.BinOp.LT
                    and is_pos(node.lhs)):
                return ir.Binary(ir.BinOp.LE, node.lhs, node.rhs, node.type)
            return node

        return rewrite(kernel, loosen)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: one unit past every bound."""
    return [cpu_descriptor(NAME, compiler=WrongBoundCompiler)]
