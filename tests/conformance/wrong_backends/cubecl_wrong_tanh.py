"""Backend ``wrong_tanh``: the cpu backend, except that ``tanh`` loses the sign of a
zero (``tanh(x) + 0.0``, so ``tanh(-0.0)`` is ``+0.0``), as the Vulkan backend's own
math library once had it."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_tanh"


class WrongTanhCompiler(RewritingCompiler):
    """``tanh`` of a signed zero is ``+0.0`` (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """Each ``tanh(x)`` as ``tanh(x) + 0.0``."""
        def unsign(node: Any) -> Any:
            if isinstance(node, ir.Math) and node.fn is ir.MathFn.TANH:
                zero = ir.Const(0.0, ir.elem_of(node.type))
                return ir.Binary(ir.BinOp.ADD, node, zero, node.type)
            return node

        return rewrite(kernel, unsign)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: ``tanh(-0.0)`` is ``+0.0``."""
    return [cpu_descriptor(NAME, compiler=WrongTanhCompiler)]
