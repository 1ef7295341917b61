"""The launch-grid builtins a target lacks, derived from those it has
(``docs/ir.md``, "BuiltinName"), each computed once at the top of the kernel.

The cube dim is known when a kernel is lowered, so ``CUBE_DIM*`` are constants, and
so is the position along an axis of one unit (0), on every target; the
linearised names come from the per-axis ones, x fastest; ``ABSOLUTE_POS_*`` from the
cube's position and dim; ``UNIT_POS_PLANE`` from ``UNIT_POS`` and ``PLANE_DIM``.
"""

from __future__ import annotations

import dataclasses

from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes.build import V, const
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter, is_trivial

__all__ = ["derive_builtins"]

B = ir.BuiltinName
E = ir.Elem


class _Builtins(Rewriter):
    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim, native: Native,
                 backend: str) -> None:
        super().__init__(kernel)
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.native = native
        self.backend = backend
        self.derived: dict[B, ir.Expr] = {}
        self.prelude: list[ir.Stmt] = []

    def get(self, n: B) -> V:
        """Builtin ``n``: a constant where the cube dim tells it, itself where native,
        else its local (derived once)."""
        dims = {B.CUBE_DIM_X: self.dim[0], B.CUBE_DIM_Y: self.dim[1],
                B.CUBE_DIM_Z: self.dim[2], B.CUBE_DIM: self.dim[0] * self.dim[1] * self.dim[2]}
        if n in dims:
            return const(dims[n], E.U32)
        if n.value[:-1] == "UNIT_POS_" and dims[B["CUBE_DIM_" + n.value[-1]]] == 1:
            return const(0, E.U32)  # the only position along an axis of one unit
        if n in self.native.builtins:
            return V(ir.Builtin(n))
        found = self.derived.get(n)
        if found is None:
            value = self.derive(n).e
            if not is_trivial(value):  # else read where it is used, as it is
                var = self.fresh(E.U32, n.value.lower())
                self.prelude.append(ir.Assign(var.name, value))
                value = var
            found = self.derived[n] = value
        return V(found)

    def derive(self, n: B) -> V:
        g = self.get
        match n:
            case B.UNIT_POS:
                return (g(B.UNIT_POS_X) + g(B.UNIT_POS_Y) * g(B.CUBE_DIM_X)
                        + g(B.UNIT_POS_Z) * (g(B.CUBE_DIM_X) * g(B.CUBE_DIM_Y)))
            case B.CUBE_POS:
                return g(B.CUBE_POS_X) + g(B.CUBE_COUNT_X) * (
                    g(B.CUBE_POS_Y) + g(B.CUBE_COUNT_Y) * g(B.CUBE_POS_Z))
            case B.CUBE_COUNT:
                return g(B.CUBE_COUNT_X) * g(B.CUBE_COUNT_Y) * g(B.CUBE_COUNT_Z)
            case B.ABSOLUTE_POS:
                return g(B.CUBE_POS) * g(B.CUBE_DIM) + g(B.UNIT_POS)
            case B.ABSOLUTE_POS_X | B.ABSOLUTE_POS_Y | B.ABSOLUTE_POS_Z:
                axis = n.value[-1]
                return g(B["CUBE_POS_" + axis]) * g(B["CUBE_DIM_" + axis]) + g(
                    B["UNIT_POS_" + axis])
            case B.UNIT_POS_PLANE:
                return g(B.UNIT_POS) % g(B.PLANE_DIM)
        raise CompilationError(f"{n.value} is neither native to the {self.backend} backend "
                               "nor derivable from what is", kernel=self.kernel.name,
                               backend=self.backend)

    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Builtin):
            found = self.get(e.name).e
            return e if found == e else found
        return super().expr(e)

    def run(self) -> ir.Kernel:
        k = super().run()
        return dataclasses.replace(k, body=(*self.prelude, *k.body))


def derive_builtins(kernel: ir.Kernel, cube_dim: CubeDim, native: Native,
                    backend: str) -> ir.Kernel:
    """``kernel`` reading only the builtins ``native`` has (see the module)."""
    if not any(isinstance(n, ir.Builtin) for n in ir.walk(kernel.body)):
        return kernel
    return _Builtins(kernel, cube_dim, native, backend).run()
