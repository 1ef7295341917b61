"""Hand-built IR for the tests, and a launch of it that bypasses the kernel language."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.id import KernelId
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import Handle

E = ir.Elem
U32 = E.U32
POS = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
UNIT = ir.Builtin(ir.BuiltinName.UNIT_POS)


def c(value: int | float | bool, elem: ir.Elem) -> ir.Const:
    """A typed constant."""
    return ir.Const(value, elem)


def v(name: str, elem: ir.Elem) -> ir.Var:
    """A variable."""
    return ir.Var(name, elem)


def load(array: str, index: ir.Expr, elem: ir.Elem) -> ir.Load:
    """``array[index]``."""
    return ir.Load(array, index, elem)


def binop(op: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    """``a op b`` (comparisons typed bool)."""
    t = E.BOOL if op.is_comparison else a.type
    return ir.Binary(op, a, b, t)


def guarded(out: str, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``if ABSOLUTE_POS < len(out): body``."""
    return (ir.If(binop(ir.BinOp.LT, POS, ir.Len(out)), body, ()),)


def make(name: str, params: Sequence[tuple[str, ir.Elem, bool]], body: tuple[ir.Stmt, ...],
         locals_: Sequence[tuple[str, ir.Elem]] = (),
         shared: Sequence[tuple[str, ir.Elem, int]] = ()) -> ir.Kernel:
    """An IR kernel."""
    return ir.Kernel(name, tuple(ir.Param(n, e, a) for n, e, a in params),
                     tuple(ir.Local(n, e) for n, e in locals_),
                     tuple(ir.SharedArray(n, e, s) for n, e, s in shared), body)


def launch(client: ComputeClient, kernel: ir.Kernel, count: CubeCount, dim: CubeDim,
           arrays: Sequence[Handle], scalars: Sequence[Any] = ()) -> None:
    """Obtain and launch an IR kernel on ``client`` as a kernel function's launch would."""
    aid = ArtifactId(KernelId.of(kernel), dim, client.mode)
    loaded = client.loader.get(aid)
    values = [np.dtype(p.elem.numpy_name).type(s)
              for p, s in zip([p for p in kernel.params if not p.array], scalars, strict=True)]
    client.server.launch(loaded, count, dim, [h.binding() for h in arrays], values)
