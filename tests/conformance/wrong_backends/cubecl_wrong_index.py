"""Backend ``wrong_index``: the cpu backend, except that a signed index below 0 counts
from the end of a global array (as Python's ``a[-1]``) instead of reading 0 and
dropping the store in checked mode."""

from __future__ import annotations

import dataclasses
from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_index"


def _python_index(array: str, index: ir.Expr) -> ir.Expr:
    """``index + len(array)`` where ``index < 0``: Python's negative indexing."""
    t = index.type
    negative = ir.Binary(ir.BinOp.LT, index, ir.Const(0, t), ir.Elem.BOOL)
    wrapped = ir.Binary(ir.BinOp.ADD, index, ir.Cast(ir.Len(array), t), t)
    return ir.Select(negative, wrapped, index, t)


class WrongIndexCompiler(RewritingCompiler):
    """Negative indices of global arrays wrap to the end (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """Every load and store of a global array at a signed index, Python's way."""
        arrays = {p.name for p in kernel.params if p.array}

        def wrap(node: Any) -> Any:
            if (isinstance(node, (ir.Load, ir.Store)) and node.array in arrays
                    and node.index.type.is_signed):
                return dataclasses.replace(node, index=_python_index(node.array, node.index))
            return node

        return rewrite(kernel, wrap)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: negative indices wrap."""
    return [cpu_descriptor(NAME, compiler=WrongIndexCompiler)]
