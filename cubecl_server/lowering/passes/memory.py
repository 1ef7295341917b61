"""What arrays hold before the kernel writes them.

- Shared arrays start at zero in every cube (``docs/ir.md``): unless the target's do
  by themselves, the units of the cube clear them together, then meet at a barrier -
  only the arrays :func:`~cubecl_server.lowering.passes.zeroing.shared_to_zero` says a unit
  may read before its own unit wrote it.
- Local arrays start at zero in every unit: unless the target's do, each unit clears
  its own first.
"""

from __future__ import annotations

import dataclasses

from cubecl_server import ir
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes.build import V, const
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter
from cubecl_server.lowering.passes.zeroing import shared_to_zero

__all__ = ["clear_arrays"]

E = ir.Elem


def clear_arrays(kernel: ir.Kernel, cube_dim: CubeDim, native: Native) -> ir.Kernel:
    """``kernel`` clearing the shared and local arrays its target does not clear."""
    rw = Rewriter(kernel)  # for its fresh locals
    prelude: list[ir.Stmt] = []
    if not native.zeroed_local_arrays:
        for la in kernel.local_arrays:
            z = rw.fresh(E.U32, "z")
            prelude.append(ir.For(z.name, const(0, E.U32).e, const(la.size, E.U32).e,
                                  ir.Const(1, E.U32),
                                  (ir.Store(la.name, z, const(0, la.elem).e),)))
    cleared = (() if native.zeroed_shared else
               [sh for sh in kernel.shared if sh.name in shared_to_zero(kernel, cube_dim)])
    if cleared:
        largest = max(sh.size for sh in cleared)
        z = rw.fresh(E.U32, "z")
        stores = tuple(
            ir.Store(sh.name, z, const(0, sh.elem).e) if sh.size == largest else
            ir.If((V(z) < sh.size).e, (ir.Store(sh.name, z, const(0, sh.elem).e),), ())
            for sh in cleared)
        prelude += [ir.For(z.name, ir.Builtin(ir.BuiltinName.UNIT_POS),
                           const(largest, E.U32).e, ir.Const(cube_dim.total, E.U32), stores),
                    ir.Barrier()]
    if not prelude:
        return kernel
    return dataclasses.replace(kernel, locals=(*kernel.locals, *rw.new_locals),
                               body=(*prelude, *kernel.body))
