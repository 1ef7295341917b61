"""What the tests of the cpu backend's lowering share: IR written tersely, and a
kernel lowered, loaded as a stored artifact is (validated, run without builtins) and
run on NumPy arrays; fresh random data whose seed each failure names."""

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
INTS = (E.I32, E.I64, E.U32, E.U64)
FLOATS = (E.F16, E.F32, E.F64)


def c(value: int | float | bool, t: E) -> ir.Const:
    """A constant of type ``t``."""
    return ir.Const(value, t)


def u(value: int) -> ir.Const:
    """A u32 constant."""
    return ir.Const(value, E.U32)


def v(name: str, t: E) -> ir.Var:
    """A variable of type ``t``."""
    return ir.Var(name, t)


def bi(name: str) -> ir.Builtin:
    """The builtin named ``name`` (``ABSOLUTE_POS``...)."""
    return ir.Builtin(ir.BuiltinName[name])


POS = bi("ABSOLUTE_POS")
UNIT = bi("UNIT_POS")


def op(o: B, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    """The binary operation ``a o b``, bool-typed for comparisons and logic."""
    boolean = o.is_comparison or o in (B.AND, B.OR)
    return ir.Binary(o, a, b, E.BOOL if boolean else a.type)


def ld(array: str, index: ir.Expr, t: E) -> ir.Load:
    """The load ``array[index]`` of type ``t``."""
    return ir.Load(array, index, t)


def st(array: str, index: ir.Expr, value: ir.Expr) -> ir.Store:
    """The store ``array[index] = value``."""
    return ir.Store(array, index, value)


def if_(cond: ir.Expr, then: Sequence[ir.Stmt], orelse: Sequence[ir.Stmt] = ()) -> ir.If:
    """``if cond: then else: orelse``."""
    return ir.If(cond, tuple(then), tuple(orelse))


def guarded(array: str, *body: ir.Stmt) -> ir.If:
    """``if ABSOLUTE_POS < len(array): body``."""
    return if_(op(B.LT, POS, ir.Len(array)), body)


def kern(body: Sequence[ir.Stmt], params: Sequence[tuple[str, str]],
         local: Sequence[tuple[str, E]] = (),
         shared: Sequence[tuple[str, E, int]] = (), name: str = "k") -> ir.Kernel:
    """A kernel; a param spec is ``"f32"`` for a scalar, ``"f32[]"`` for an array."""
    ps = tuple(ir.Param(n, E(spec.rstrip("[]")), spec.endswith("[]")) for n, spec in params)
    return ir.Kernel(name, ps, tuple(ir.Local(n, t) for n, t in local),
                     tuple(ir.SharedArray(n, t, size) for n, t, size in shared), tuple(body))


def source(k: ir.Kernel, dim: tuple[int, int, int] = (64, 1, 1),
           mode: ExecutionMode = CHECKED) -> str:
    """The Python source the cpu Compiler writes for ``k``."""
    compiled = CpuCompiler().compile(k, CubeDim(*dim), mode)
    assert compiled.entry_point == "run" and compiled.extension == "py"
    assert compiled.name == k.name
    return compiled.source


def launch(k: ir.Kernel, arrays: Sequence[np.ndarray], scalars: Sequence[Any] = (),
           count: tuple[int, int, int] | None = None, dim: tuple[int, int, int] = (64, 1, 1),
           mode: ExecutionMode = CHECKED) -> None:
    """Lower, load the source as a stored artifact is loaded (validated, then run
    without builtins), and run it.

    Without ``count``, enough cubes along x to cover the first array.
    """
    if count is None:
        count = (max(1, -(-arrays[0].shape[0] // (dim[0] * dim[1] * dim[2]))), 1, 1)
    run = load_source(source(k, dim, mode))
    run(list(arrays), [a.shape for a in arrays], [(1,)] * len(arrays), list(scalars),
        count, dim)


def load_source(text: str) -> Any:
    """The entry point of generated source, through the artifact validator."""
    return define_entry(validated_module(text.encode(), "<cpu>"), "<cpu>", "cubecl_cpu_test")


class Seeded:
    """A fresh random generator that remembers its seed for failure messages."""

    def __init__(self) -> None:
        self.seed = secrets.randbits(64)
        self.gen = np.random.default_rng(self.seed)

    def __str__(self) -> str:
        return f"seed={self.seed}"

    def ints(self, t: E, n: int) -> np.ndarray:
        """``n`` random integers over the whole range of ``t``."""
        info = np.iinfo(t.numpy_name)
        return self.gen.integers(info.min, info.max, n, dtype=t.numpy_name, endpoint=True)


def edge_values(t: E, rng: Seeded, n_random: int = 40) -> np.ndarray:
    """The edge values of ``t`` (zeros, ones, extremes, NaN and infinities for floats)
    and ``n_random`` random ones."""
    if t.is_float:
        fi = np.finfo(t.numpy_name)
        edges = [0.0, -0.0, 1.0, -1.0, 2.5, -7.0, 0.5, 3.0, np.nan, np.inf, -np.inf,
                 float(fi.tiny), float(fi.max)]
        rand = rng.gen.standard_normal(n_random) * 10
        return np.concatenate([edges, rand]).astype(t.numpy_name)
    info = np.iinfo(t.numpy_name)
    edges = [0, 1, 2, 7, 3, info.max, info.max - 1]
    if t.is_signed:
        edges += [-1, -2, -7, info.min, info.min + 1]
    return np.concatenate([np.array(edges, t.numpy_name), rng.ints(t, n_random)])


def pairs(t: E, rng: Seeded) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of :func:`edge_values`, as two flat arrays."""
    vals = edge_values(t, rng)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.ravel(), b.ravel()


def reduction_kernel(t: E, size: int) -> ir.Kernel:
    """A tree reduction of each cube's ``size`` elements of ``a`` in shared memory, its
    sum in ``out[CUBE_POS]``."""
    s = v("s", E.U32)
    tile = lambda i: ld("tile", i, t)  # noqa: E731
    body = [
        st("tile", UNIT, ld("a", POS, t)),
        ir.Barrier(),
        ir.Assign("s", u(size // 2)),
        ir.While(op(B.GT, s, u(0)), (
            if_(op(B.LT, UNIT, s),
                [st("tile", UNIT, op(B.ADD, tile(UNIT), tile(op(B.ADD, UNIT, s))))]),
            ir.Barrier(),
            ir.Assign("s", op(B.SHR, s, u(1))),
        )),
        if_(op(B.EQ, UNIT, u(0)), [st("out", bi("CUBE_POS"), tile(u(0)))]),
    ]
    return kern(body, [("a", f"{t.value}[]"), ("out", f"{t.value}[]")], [("s", E.U32)],
                [("tile", t, size)])
