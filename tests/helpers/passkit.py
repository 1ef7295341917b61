"""What the tests of the lowering passes share: IR written tersely, and a kernel run
on the cpu backend as one pass (or the whole pipeline, for a target described by a
``Native``) leaves it.

The cpu backend is the reference: a kernel's result there is what the IR means. A
pass is right when the kernel it returns computes the same on the cpu backend as the
kernel it was given, at the values where the rule it writes matters.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.validate import define_entry, validated_module
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeDim

E = ir.Elem
B = ir.BinOp
CHECKED, UNCHECKED = ExecutionMode.CHECKED, ExecutionMode.UNCHECKED
POS = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)


def c(value: int | float | bool, t: E) -> ir.Const:
    """A constant."""
    return ir.Const(value, t)


def v(name: str, t: ir.Type) -> ir.Var:
    """A local or scalar parameter."""
    return ir.Var(name, t)


def op(o: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    """``a o b``, bool for a comparison or ``and``/``or``."""
    boolean = o.is_comparison or o in (B.AND, B.OR)
    return ir.Binary(o, a, b, E.BOOL if boolean else a.type)


def ld(array: str, index: ir.Expr, t: ir.Type) -> ir.Load:
    """``array[index]``."""
    return ir.Load(array, index, t)


def kern(body: Sequence[ir.Stmt], params: Sequence[tuple[str, str]],
         local: Sequence[tuple[str, ir.Type]] = (),
         shared: Sequence[tuple[str, E, int]] = ()) -> ir.Kernel:
    """A kernel; a param spec is ``"f32"`` for a scalar, ``"f32[]"`` for an array,
    ``"f32[4]"`` for a line array of 4."""
    ps = []
    for n, spec in params:
        elem, _, rest = spec.partition("[")
        line = int(rest[:-1]) if rest[:-1] else 1
        ps.append(ir.Param(n, E(elem), bool(rest), line))
    return ir.Kernel("k", tuple(ps), tuple(ir.Local(n, t) for n, t in local),
                     tuple(ir.SharedArray(n, t, size) for n, t, size in shared), tuple(body))


Grid = int | tuple[int, int, int]


def _axes(g: Grid) -> tuple[int, int, int]:
    return (g, 1, 1) if isinstance(g, int) else g


def run(k: ir.Kernel, arrays: Sequence[np.ndarray], scalars: Sequence[Any] = (),
        count: Grid | None = None, dim: Grid = 64, mode: ExecutionMode = CHECKED) -> None:
    """Run ``k`` on the cpu backend (its source validated as a stored artifact is),
    over enough cubes of ``dim`` to cover the first array without ``count``."""
    d = _axes(dim)
    if count is None:
        count = max(1, -(-arrays[0].shape[0] // (d[0] * d[1] * d[2])))
    compiled = CpuCompiler().compile(k, CubeDim(*d), mode)
    entry = define_entry(validated_module(compiled.source.encode(), "<cpu>"), "<cpu>",
                         "cubecl_pass_test")
    entry(list(arrays), [a.shape for a in arrays], [(1,)] * len(arrays), list(scalars),
          _axes(count), d)


def same_results(original: ir.Kernel, lowered: ir.Kernel, inputs: Sequence[np.ndarray],
                 outputs: Sequence[np.ndarray], scalars: Sequence[Any] = (),
                 count: Grid | None = None, dim: Grid = 64,
                 mode: ExecutionMode = CHECKED) -> list[np.ndarray]:
    """The outputs of ``original`` run in ``mode`` and of ``lowered`` (a pass's output,
    whose rules are explicit) run unchecked, on copies of the same arrays: asserted
    equal bit for bit. Returns the original's outputs."""
    want = [o.copy() for o in outputs]
    got = [o.copy() for o in outputs]
    run(original, [*(i.copy() for i in inputs), *want], scalars, count, dim, mode)
    run(lowered, [*(i.copy() for i in inputs), *got], scalars, count, dim, UNCHECKED)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
    return want


def nodes(k: ir.Kernel, kind: type | tuple[type, ...]) -> list[Any]:
    """The nodes of ``k``'s body of ``kind``."""
    return [n for n in ir.walk(k.body) if isinstance(n, kind)]


class Seeded:
    """A fresh random generator that remembers its seed for failure messages."""

    def __init__(self) -> None:
        self.seed = secrets.randbits(64)
        self.gen = np.random.default_rng(self.seed)

    def __str__(self) -> str:
        return f"seed={self.seed}"
