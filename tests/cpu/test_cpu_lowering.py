"""The cpu backend's lowering: hand-built IR kernels run as NumPy code, against NumPy.

Every test draws fresh random data; the seed is in each assertion message.
"""

from __future__ import annotations

import ast
import math
import secrets
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.backends.cpu import support
from cubecl_server.backends.cpu.compiler import PLANE_SIZE, CpuCompiler
from cubecl_server.backends.cpu.validate import define_entry, validated_module
from cubecl_server.client import create_client
from cubecl_server.conformance.kernels import IrKernel
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeDim

E = ir.Elem
B = ir.BinOp
CHECKED, UNCHECKED = ExecutionMode.CHECKED, ExecutionMode.UNCHECKED
INTS = (E.I32, E.I64, E.U32, E.U64)
FLOATS = (E.F16, E.F32, E.F64)


# ---------------------------------------------------------------- terse IR


def c(value: int | float | bool, t: E) -> ir.Const:
    return ir.Const(value, t)


def u(value: int) -> ir.Const:
    return ir.Const(value, E.U32)


def v(name: str, t: E) -> ir.Var:
    return ir.Var(name, t)


def bi(name: str) -> ir.Builtin:
    return ir.Builtin(ir.BuiltinName[name])


POS = bi("ABSOLUTE_POS")
UNIT = bi("UNIT_POS")


def op(o: B, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    boolean = o.is_comparison or o in (B.AND, B.OR)
    return ir.Binary(o, a, b, E.BOOL if boolean else a.type)


def ld(array: str, index: ir.Expr, t: E) -> ir.Load:
    return ir.Load(array, index, t)


def st(array: str, index: ir.Expr, value: ir.Expr) -> ir.Store:
    return ir.Store(array, index, value)


def if_(cond: ir.Expr, then: Sequence[ir.Stmt], orelse: Sequence[ir.Stmt] = ()) -> ir.If:
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
    run = _loaded(source(k, dim, mode))
    run(list(arrays), [a.shape for a in arrays], [(1,)] * len(arrays), list(scalars),
        count, dim)


def _loaded(text: str) -> Any:
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
        info = np.iinfo(t.numpy_name)
        return self.gen.integers(info.min, info.max, n, dtype=t.numpy_name, endpoint=True)


@pytest.fixture
def rng() -> Seeded:
    return Seeded()


def edge_values(t: E, rng: Seeded, n_random: int = 40) -> np.ndarray:
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
    vals = edge_values(t, rng)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.ravel(), b.ravel()


# ---------------------------------------------------------------- references


def wrap(x: int, t: E) -> int:
    x &= (1 << t.bits) - 1
    return x - (1 << t.bits) if t.is_signed and x >= 1 << (t.bits - 1) else x


def c_int_binop(o: B, x: int, y: int, t: E) -> int | bool:
    """C semantics of an integer operator (wrapping; division by zero gives 0)."""
    if o in (B.IDIV, B.REM):
        if y == 0:
            return 0
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return wrap(q if o is B.IDIV else x - q * y, t)
    shift = y & (t.bits - 1)
    simple: dict[B, Callable[[], int | bool]] = {
        B.ADD: lambda: wrap(x + y, t), B.SUB: lambda: wrap(x - y, t),
        B.MUL: lambda: wrap(x * y, t), B.BITAND: lambda: wrap(x & y, t),
        B.BITOR: lambda: wrap(x | y, t), B.BITXOR: lambda: wrap(x ^ y, t),
        B.SHL: lambda: wrap(x << shift, t), B.SHR: lambda: wrap(x >> shift, t),
        B.EQ: lambda: x == y, B.NE: lambda: x != y, B.LT: lambda: x < y,
        B.LE: lambda: x <= y, B.GT: lambda: x > y, B.GE: lambda: x >= y,
    }
    return simple[o]()


def float_binop(o: B, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return {
        B.ADD: np.add, B.SUB: np.subtract, B.MUL: np.multiply, B.DIV: np.divide,
        B.IDIV: lambda x, y: np.trunc(x / y), B.REM: np.fmod, B.EQ: np.equal,
        B.NE: np.not_equal, B.LT: np.less, B.LE: np.less_equal, B.GT: np.greater,
        B.GE: np.greater_equal,
    }[o](a, b)


def run_binary(o: B, t: E, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out_t = E.BOOL if o.is_comparison or o in (B.AND, B.OR) else t
    out = np.zeros(a.shape[0], out_t.numpy_name)
    k = kern([guarded("out", st("out", POS, op(o, ld("a", POS, t), ld("b", POS, t))))],
             [("a", f"{t.value}[]"), ("b", f"{t.value}[]"), ("out", f"{out_t.value}[]")])
    launch(k, [a, b, out])
    return out


INT_OPS = [B.ADD, B.SUB, B.MUL, B.IDIV, B.REM, B.BITAND, B.BITOR, B.BITXOR, B.SHL, B.SHR,
           B.EQ, B.NE, B.LT, B.LE, B.GT, B.GE]
FLOAT_OPS = [B.ADD, B.SUB, B.MUL, B.DIV, B.REM, B.EQ, B.NE, B.LT, B.LE, B.GT, B.GE]


# ---------------------------------------------------------------- operators


@pytest.mark.parametrize("t", INTS, ids=lambda t: t.value)
@pytest.mark.parametrize("o", INT_OPS, ids=lambda o: o.name)
def test_integer_binops_follow_c(o: B, t: E, rng: Seeded) -> None:
    a, b = pairs(t, rng)
    got = run_binary(o, t, a, b)
    want = [c_int_binop(o, int(x), int(y), t) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, got.dtype), err_msg=f"{o} {t} {rng}")


@pytest.mark.parametrize("t", FLOATS, ids=lambda t: t.value)
@pytest.mark.parametrize("o", FLOAT_OPS, ids=lambda o: o.name)
def test_float_binops_stay_in_type(o: B, t: E, rng: Seeded) -> None:
    a, b = pairs(t, rng)
    got = run_binary(o, t, a, b)
    with np.errstate(all="ignore"):
        want = float_binop(o, a, b)
    assert got.dtype == want.dtype, (o, t)
    np.testing.assert_array_equal(got, want, err_msg=f"{o} {t} {rng}")


@pytest.mark.parametrize("o", [B.AND, B.OR, B.EQ, B.NE, B.BITAND, B.BITOR, B.BITXOR])
def test_bool_binops(o: B) -> None:
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    got = run_binary(o, E.BOOL, a, b)
    want = {B.AND: a & b, B.OR: a | b, B.EQ: a == b, B.NE: a != b, B.BITAND: a & b,
            B.BITOR: a | b, B.BITXOR: a ^ b}[o]
    np.testing.assert_array_equal(got, want)


def run_unary(k_expr: Callable[[ir.Expr], ir.Expr], t: E, out_t: E,
              *inputs: np.ndarray) -> np.ndarray:
    names = ["a", "b", "c"][:len(inputs)]
    out = np.zeros(inputs[0].shape[0], out_t.numpy_name)
    loads = [ld(n, POS, t) for n in names]
    k = kern([guarded("out", st("out", POS, k_expr(*loads)))],
             [*((n, f"{t.value}[]") for n in names), ("out", f"{out_t.value}[]")])
    launch(k, [*inputs, out])
    return out


@pytest.mark.parametrize("t", INTS + FLOATS, ids=lambda t: t.value)
def test_negation(t: E, rng: Seeded) -> None:
    a = edge_values(t, rng)
    got = run_unary(lambda x: ir.Unary(ir.UnOp.NEG, x, t), t, t, a)
    want = (np.array([wrap(-int(x), t) for x in a], a.dtype) if t.is_int else -a)
    np.testing.assert_array_equal(got, want, err_msg=str(rng))


@pytest.mark.parametrize("t", INTS, ids=lambda t: t.value)
def test_bitnot(t: E, rng: Seeded) -> None:
    a = edge_values(t, rng)
    got = run_unary(lambda x: ir.Unary(ir.UnOp.BITNOT, x, t), t, t, a)
    np.testing.assert_array_equal(got, np.array([wrap(~int(x), t) for x in a], a.dtype))


def test_not_and_bitnot_on_bool() -> None:
    a = np.array([True, False, True])
    for o in (ir.UnOp.NOT, ir.UnOp.BITNOT):
        got = run_unary(lambda x, o=o: ir.Unary(o, x, E.BOOL), E.BOOL, E.BOOL, a)
        np.testing.assert_array_equal(got, ~a)


FLOAT_FNS: dict[ir.MathFn, Callable[..., np.ndarray]] = {
    ir.MathFn.EXP: np.exp, ir.MathFn.LOG: np.log, ir.MathFn.SQRT: np.sqrt,
    ir.MathFn.SIN: np.sin, ir.MathFn.COS: np.cos, ir.MathFn.TANH: np.tanh,
    ir.MathFn.FLOOR: np.floor, ir.MathFn.CEIL: np.ceil, ir.MathFn.ABS: np.abs,
    ir.MathFn.RSQRT: lambda x: x.dtype.type(1) / np.sqrt(x),
    ir.MathFn.POW: np.power, ir.MathFn.FMA: lambda a, b, c: a * b + c,
    ir.MathFn.MIN: np.fmin, ir.MathFn.MAX: np.fmax,
    ir.MathFn.CLAMP: lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi),
    ir.MathFn.ISNAN: np.isnan, ir.MathFn.ISINF: np.isinf,
}


@pytest.mark.parametrize("t", FLOATS, ids=lambda t: t.value)
@pytest.mark.parametrize("fn", list(FLOAT_FNS), ids=lambda f: f.name)
def test_float_math(fn: ir.MathFn, t: E, rng: Seeded) -> None:
    arity = {ir.MathFn.POW: 2, ir.MathFn.MIN: 2, ir.MathFn.MAX: 2, ir.MathFn.FMA: 3,
             ir.MathFn.CLAMP: 3}.get(fn, 1)
    inputs = [rng.gen.permutation(edge_values(t, rng)) for _ in range(arity)]
    out_t = E.BOOL if fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF) else t
    got = run_unary(lambda *xs: ir.Math(fn, xs, out_t), t, out_t, *inputs)
    with np.errstate(all="ignore"):
        want = FLOAT_FNS[fn](*inputs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=f"{fn} {t} {rng}")


@pytest.mark.parametrize("t", INTS, ids=lambda t: t.value)
def test_integer_math(t: E, rng: Seeded) -> None:
    a, b = pairs(t, rng)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    x = rng.gen.permutation(a)
    cases = [
        (ir.MathFn.ABS, [a], [wrap(abs(int(y)), t) for y in a]),
        (ir.MathFn.MIN, [a, b], np.minimum(a, b)),
        (ir.MathFn.MAX, [a, b], np.maximum(a, b)),
        (ir.MathFn.CLAMP, [x, lo, hi], np.minimum(np.maximum(x, lo), hi)),
    ]
    for fn, inputs, want in cases:
        got = run_unary(lambda *xs, fn=fn: ir.Math(fn, xs, t), t, t, *inputs)
        np.testing.assert_array_equal(got, np.array(want, t.numpy_name),
                                      err_msg=f"{fn} {t} {rng}")


def test_erf_accuracy(rng: Seeded) -> None:
    x = np.concatenate([[0.0, -0.0, 1e-300, 5e-324, 0.5, 5.99, 6.0, 7.0, -3.0, np.inf,
                         -np.inf, np.nan], rng.gen.standard_normal(3000) * 3])
    ref = np.array([math.erf(y) for y in x])
    got64 = run_unary(lambda y: ir.Math(ir.MathFn.ERF, (y,), E.F64), E.F64, E.F64, x)
    finite = ~np.isnan(x)
    np.testing.assert_allclose(got64[finite], ref[finite], rtol=1e-14, atol=0,
                               err_msg=str(rng))
    assert np.isnan(got64[~finite]).all() and math.copysign(1, got64[1]) < 0
    x32 = x.astype(np.float32)
    got32 = run_unary(lambda y: ir.Math(ir.MathFn.ERF, (y,), E.F32), E.F32, E.F32, x32)
    ref32 = np.array([math.erf(float(y)) for y in x32])
    assert got32.dtype == np.float32
    err = np.abs(got32[finite] - ref32[finite]) / np.maximum(np.abs(ref32[finite]), 1e-38)
    assert err.max() < 4.8e-7, str(rng)  # docs/ir.md's budget: 4 ulp


def test_erf_f16() -> None:
    x = np.linspace(-4, 4, 801).astype(np.float16)
    got = run_unary(lambda y: ir.Math(ir.MathFn.ERF, (y,), E.F16), E.F16, E.F16, x)
    want = np.array([math.erf(float(y)) for y in x]).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_edge_cases_raise_no_numpy_warning() -> None:
    a = np.array([np.nan, np.inf, -np.inf, 3e38, 0.0], np.float32)
    z = np.zeros(5, np.int32)
    out_i, out_f = np.zeros(5, np.int32), np.zeros(5, np.float32)
    x = ld("a", POS, E.F32)
    k = kern([guarded("out_i",
                      st("out_i", POS, op(B.ADD, ir.Cast(x, E.I32),
                                          op(B.IDIV, c(7, E.I32), ld("z", POS, E.I32)))),
                      st("out_f", POS, op(B.ADD, op(B.MUL, x, x),
                                          ir.Math(ir.MathFn.LOG, (x,), E.F32))))],
             [("a", "f32[]"), ("z", "i32[]"), ("out_i", "i32[]"), ("out_f", "f32[]")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch(k, [a, z, out_i, out_f])
    assert np.isnan(out_f[0]) and out_f[3] == np.inf



def test_a_launch_leaves_the_callers_error_setting_as_it_was_on_each_thread() -> None:
    x = ld("a", POS, E.F32)
    k = kern([guarded("out", st("out", POS, op(B.MUL, x, x)))],
             [("a", "f32[]"), ("out", "f32[]")])
    run = _loaded(source(k, (64, 1, 1), ExecutionMode.CHECKED))

    def launch_under_raise(errors: list[BaseException]) -> None:
        a, out = np.array([3e38, 2.0], np.float32), np.zeros(2, np.float32)
        try:
            with np.errstate(over="raise"):
                run([a, out], [(2,), (2,)], [(1,), (1,)], [], (1, 1, 1), (64, 1, 1))
                assert np.geterr()["over"] == "raise"
                with pytest.raises(FloatingPointError):
                    _ = a * a  # the caller's setting still holds here
            assert out.tolist() == [np.inf, 4.0]
        except BaseException as e:  # handed to the main thread
            errors.append(e)

    errors: list[BaseException] = []
    launch_under_raise(errors)
    other = threading.Thread(target=launch_under_raise, args=(errors,))
    other.start()
    other.join()
    assert errors == []

# ---------------------------------------------------------------- casts and select


@pytest.mark.parametrize("src", [*INTS, *FLOATS, E.BOOL], ids=lambda t: t.value)
@pytest.mark.parametrize("dst", [*INTS, *FLOATS, E.BOOL], ids=lambda t: t.value)
def test_casts(src: E, dst: E, rng: Seeded) -> None:
    if src is E.BOOL:
        a = np.array([True, False, True])
    elif src.is_float:
        # C leaves float->int undefined out of range and for NaN: test in range.
        hi = 1000.0 if dst.is_int or src is E.F16 else 1e30
        lo = 0.0 if dst in (E.U32, E.U64) else -hi
        a = np.concatenate([[0.0, 2.7, 3.9, lo], rng.gen.uniform(lo, hi, 50)])
        if not dst.is_int:
            a = np.concatenate([a, [np.nan, np.inf, -2.7, -0.0]])
        a = a.astype(src.numpy_name)
    else:
        a = edge_values(src, rng)
    got = run_unary(lambda x: ir.Cast(x, dst), src, dst, a)
    with np.errstate(over="ignore"):  # ints and f64 past the f16 range become inf
        want = cast_reference(a, src, dst)
    np.testing.assert_array_equal(got, want, err_msg=f"{src}->{dst} {rng}")


def cast_reference(a: np.ndarray, src: E, dst: E) -> np.ndarray:
    """C conversions: to bool is ``!= 0``, float to int truncates, ints wrap."""
    if dst is E.BOOL:
        return np.array([bool(x) for x in a])
    if src.is_float and dst.is_int:
        return np.array([math.trunc(float(x)) for x in a], dst.numpy_name)
    if dst.is_int:
        return np.array([wrap(int(x), dst) for x in a], dst.numpy_name)
    return a.astype(dst.numpy_name)


def test_typed_constants_keep_f32_and_wrap_ints() -> None:
    a = np.array([1.5, 2.0], np.float32)
    got = run_unary(lambda x: op(B.MUL, x, c(0.1, E.F32)), E.F32, E.F32, a)
    np.testing.assert_array_equal(got, a * np.float32(0.1))
    b = np.array([1, 2], np.uint32)
    got = run_unary(lambda x: op(B.ADD, x, c(-1, E.U32)), E.U32, E.U32, b)
    np.testing.assert_array_equal(got, [0, 1])


def test_select_per_lane_and_uniform(rng: Seeded) -> None:
    a = rng.gen.standard_normal(300).astype(np.float32)
    got = run_unary(lambda x: ir.Select(op(B.GT, x, c(0.0, E.F32)), x, c(-1.0, E.F32),
                                        E.F32), E.F32, E.F32, a)
    np.testing.assert_array_equal(got, np.where(a > 0, a, np.float32(-1)), str(rng))
    got = run_unary(lambda x: ir.Select(c(True, E.BOOL), c(2.0, E.F32), x, E.F32),
                    E.F32, E.F32, a)
    np.testing.assert_array_equal(got, np.full(300, 2, np.float32))


# ---------------------------------------------------------------- control flow


def test_if_else_divergence(rng: Seeded) -> None:
    n = 1000
    a = rng.gen.standard_normal(n).astype(np.float32)
    out, flag = np.zeros(n, np.float32), np.zeros(n, np.int32)
    x = ld("a", POS, E.F32)
    body = [
        ir.Assign("i", POS),
        if_(op(B.LT, v("i", E.U32), ir.Len("a")), [
            ir.Assign("y", x),
            if_(op(B.GT, x, c(0.0, E.F32)),
                [ir.Assign("y", op(B.MUL, x, c(2.0, E.F32))),
                 if_(op(B.GT, x, c(1.0, E.F32)), [ir.Assign("f", c(2, E.I32))],
                     [ir.Assign("f", c(1, E.I32))])],
                [ir.Assign("y", ir.Unary(ir.UnOp.NEG, x, E.F32))]),
            st("out", v("i", E.U32), v("y", E.F32)),
            st("flag", v("i", E.U32), v("f", E.I32)),
        ]),
    ]
    k = kern(body, [("a", "f32[]"), ("out", "f32[]"), ("flag", "i32[]")],
             [("i", E.U32), ("y", E.F32), ("f", E.I32)])
    launch(k, [a, out, flag])
    np.testing.assert_array_equal(out, np.where(a > 0, a * 2, -a), str(rng))
    # f is never assigned on the a <= 0 path: it reads as the zero it started as.
    np.testing.assert_array_equal(flag, np.select([a > 1, a > 0], [2, 1], 0), str(rng))


@pytest.mark.parametrize("t", [E.I32, E.U32], ids=lambda t: t.value)
@pytest.mark.parametrize("step", [1, 3, -1, -2])
def test_for_per_lane_bounds(step: int, t: E, rng: Seeded) -> None:
    n = 200
    lo = rng.gen.integers(0, 20, n).astype(t.numpy_name)
    hi = rng.gen.integers(0, 20, n).astype(t.numpy_name)
    total, last = np.zeros(n, t.numpy_name), np.zeros(n, t.numpy_name)
    body = [guarded("total",
                    ir.Assign("i", c(99, t)),
                    ir.For("i", ld("lo", POS, t), ld("hi", POS, t), c(step, t), (
                        ir.Assign("acc", op(B.ADD, v("acc", t), op(B.MUL, v("i", t), v("i", t)))),
                    )),
                    st("total", POS, v("acc", t)), st("last", POS, v("i", t)))]
    k = kern(body, [("lo", f"{t.value}[]"), ("hi", f"{t.value}[]"), ("total", f"{t.value}[]"),
                    ("last", f"{t.value}[]")], [("i", t), ("acc", t)])
    launch(k, [lo, hi, total, last])
    for j in range(n):
        r = range(int(lo[j]), int(hi[j]), step)
        assert total[j] == sum(i * i for i in r), (j, rng)
        assert last[j] == (r[-1] if len(r) else 99), (j, rng)


def test_uniform_for_loop_with_scalar_bound(rng: Seeded) -> None:
    n, reps = 100, int(rng.gen.integers(0, 9))
    a = rng.gen.integers(0, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    body = [guarded("out",
                    ir.For("i", c(0, E.I32), v("reps", E.I32), c(1, E.I32), (
                        ir.Assign("acc", op(B.ADD, v("acc", E.I32), ld("a", POS, E.I32))),
                    ), unroll=True),
                    st("out", POS, v("acc", E.I32)))]
    k = kern(body, [("a", "i32[]"), ("out", "i32[]"), ("reps", "i32")],
             [("i", E.I32), ("acc", E.I32)])
    launch(k, [a, out], [np.int32(reps)])
    np.testing.assert_array_equal(out, a * reps, str(rng))


def test_while_break_continue(rng: Seeded) -> None:
    n = 300
    start = rng.gen.integers(1, 60, n).astype(np.uint32)
    limit = rng.gen.integers(0, 40, n).astype(np.uint32)
    steps, odd = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    U = E.U32
    x, s_ = v("x", U), v("s", U)
    body = [guarded("steps",
                    ir.Assign("x", ld("start", POS, U)),
                    ir.While(op(B.NE, x, u(1)), (
                        if_(op(B.GE, s_, ld("limit", POS, U)), [ir.Break()]),
                        ir.Assign("s", op(B.ADD, s_, u(1))),
                        if_(op(B.EQ, op(B.REM, x, u(2)), u(0)),
                            [ir.Assign("x", op(B.IDIV, x, u(2))), ir.Continue()]),
                        ir.Assign("x", op(B.ADD, op(B.MUL, x, u(3)), u(1))),
                        ir.Assign("o", op(B.ADD, v("o", U), u(1))),
                    )),
                    st("steps", POS, s_), st("odd", POS, v("o", U)))]
    k = kern(body, [("start", "u32[]"), ("limit", "u32[]"), ("steps", "u32[]"),
                    ("odd", "u32[]")], [("x", U), ("s", U), ("o", U)])
    launch(k, [start, limit, steps, odd])
    for j in range(n):
        xx, s, o = int(start[j]), 0, 0
        while xx != 1:
            if s >= limit[j]:
                break
            s += 1
            if xx % 2 == 0:
                xx //= 2
                continue
            xx, o = 3 * xx + 1, o + 1
        assert (steps[j], odd[j]) == (s, o), (j, rng)


def test_return_at_top_level_and_inside_loops(rng: Seeded) -> None:
    n = 500
    r = rng.gen.integers(-3, 12, n).astype(np.int32)
    out = np.full(n, -5, np.int32)
    i32 = E.I32
    body = [
        if_(op(B.GE, POS, ir.Len("out")), [ir.Return()]),
        ir.Assign("x", ld("r", POS, i32)),
        if_(op(B.LT, v("x", i32), c(0, i32)), [ir.Return()]),
        ir.For("i", c(0, i32), c(10, i32), c(1, i32), (
            ir.While(c(True, E.BOOL), (
                if_(op(B.EQ, v("i", i32), v("x", i32)), [st("out", POS, v("i", i32)), ir.Return()]),
                ir.Break(),
            )),
        )),
        st("out", POS, c(99, i32)),
    ]
    k = kern(body, [("r", "i32[]"), ("out", "i32[]")], [("x", i32), ("i", i32)])
    launch(k, [r, out], count=(n // 64 + 2, 1, 1))
    want = np.where(r < 0, -5, np.where(r < 10, r, 99))
    np.testing.assert_array_equal(out, want, str(rng))


def test_every_lane_returning_skips_the_rest() -> None:
    out = np.zeros(10, np.int32)
    k = kern([if_(op(B.LT, POS, u(1000)), [ir.Return()]), st("out", POS, c(1, E.I32))],
             [("out", "i32[]")])
    launch(k, [out])
    assert not out.any()


# ---------------------------------------------------------------- memory


def guarded_buffer(n: int, dtype: str, fill: float) -> tuple[np.ndarray, np.ndarray]:
    """A buffer with 8 sentinel elements either side, and the view in between."""
    big = np.full(n + 16, fill, dtype)
    return big, big[8:8 + n]


@pytest.mark.parametrize("t", [E.U32, E.I32, E.I64], ids=lambda t: t.value)
def test_checked_reads_zero_and_drops_writes_outside(t: E, rng: Seeded) -> None:
    n = 300
    idx = rng.gen.integers(-40 if t.is_signed else 0, n + 40, n).astype(t.numpy_name)
    big_a, a = guarded_buffer(n, "float32", 7.0)
    a[:] = rng.gen.standard_normal(n)
    big_o, out = guarded_buffer(n, "float32", -3.0)
    got = np.zeros(n, np.float32)
    i = ld("idx", POS, t)
    k = kern([guarded("got", st("got", POS, ld("a", i, E.F32)),
                      st("out", i, ir.Cast(POS, E.F32)))],
             [("idx", f"{t.value}[]"), ("a", "f32[]"), ("out", "f32[]"), ("got", "f32[]")])
    launch(k, [idx, a, out, got])
    inside = (idx >= 0) & (idx < n)
    np.testing.assert_array_equal(got, np.where(inside, a[np.where(inside, idx, 0)], 0),
                                  str(rng))
    assert (big_o[:8] == -3).all() and (big_o[-8:] == -3).all(), str(rng)
    want = np.full(n, -3.0, np.float32)
    want[idx[inside]] = np.flatnonzero(inside)  # the last lane wins
    np.testing.assert_array_equal(out, want, str(rng))
    assert (big_a[:8] == 7).all()


def test_checked_uniform_index_and_bool_reads() -> None:
    flags = np.array([True, True])
    out = np.ones(4, bool)
    got = np.zeros(4, np.float32)
    k = kern([guarded("out", st("out", POS, ld("flags", op(B.ADD, POS, u(1)), E.BOOL)),
                      st("got", POS, ld("vals", u(5), E.F32)))],
             [("flags", "bool[]"), ("vals", "f32[]"), ("out", "bool[]"), ("got", "f32[]")])
    launch(k, [flags, np.ones(3, np.float32), out, got], count=(1, 1, 1))
    np.testing.assert_array_equal(out, [True, False, False, False])
    assert not got.any()


def test_store_to_one_address_last_active_lane_wins() -> None:
    out = np.zeros(2, np.uint32)
    k = kern([if_(op(B.EQ, op(B.REM, POS, u(3)), u(1)), [st("out", u(0), POS)]),
              st("out", u(7), POS)], [("out", "u32[]")])
    launch(k, [out], count=(2, 1, 1))
    assert out[0] == max(p for p in range(128) if p % 3 == 1)


def test_unchecked_mode_skips_checks_but_masks_inactive_lanes(rng: Seeded) -> None:
    n = 1000
    a = rng.gen.standard_normal(n).astype(np.float32)
    idx = rng.gen.permutation(n).astype(np.uint32)
    out, out2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    i = ld("idx", POS, E.U32)
    k = kern([guarded("out", st("out", POS, ld("a", i, E.F32)),
                      st("out2", i, ld("a", POS, E.F32)))],
             [("idx", "u32[]"), ("a", "f32[]"), ("out", "f32[]"), ("out2", "f32[]")])
    assert "buffer_len(a)" in source(k)  # checked mode's test, written by the passes
    assert "buffer_len" not in source(k, mode=UNCHECKED)
    launch(k, [idx, a, out, out2], count=(n // 64 + 3, 1, 1), mode=UNCHECKED)
    np.testing.assert_array_equal(out, a[idx], str(rng))
    want = np.zeros(n, np.float32)
    want[idx] = a
    np.testing.assert_array_equal(out2, want, str(rng))
    bad = np.full(n, n + 5, np.uint32)
    with pytest.raises(IndexError):
        launch(k, [bad, a, out, out2], mode=UNCHECKED)


def test_loaded_value_survives_a_store_to_its_source() -> None:
    a = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    k = kern([guarded("a", ir.Assign("x", ld("a", POS, E.F32)), st("a", POS, c(-1.0, E.F32)),
                      st("out", POS, v("x", E.F32)))],
             [("a", "f32[]"), ("out", "f32[]")], [("x", E.F32)])
    launch(k, [a, out])
    np.testing.assert_array_equal(out, np.arange(100))
    assert (a == -1).all()


def test_len_shape_stride() -> None:
    out = np.zeros(6, np.uint32)
    k = kern([if_(op(B.EQ, POS, u(0)), [
        st("out", u(0), ir.Len("m")), st("out", u(1), ir.Shape("m", 0)),
        st("out", u(2), ir.Shape("m", 1)), st("out", u(3), ir.Shape("m", 2)),
        st("out", u(4), ir.Stride("m", 0)), st("out", u(5), ir.Stride("m", 2))])],
        [("m", "f32[]"), ("out", "u32[]")])
    code = compile(source(k), "<cpu>", "exec")
    ns: dict[str, Any] = {}
    exec(code, ns)
    ns["run"]([np.zeros(12, np.float32), out], [(3, 4), (6,)], [(4, 1), (1,)], [],
              (1, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(out, [12, 3, 4, 1, 4, 1])


# ---------------------------------------------------------------- the launch grid


AXES = ("X", "Y", "Z")


@pytest.mark.parametrize("count,dim", [((3, 1, 1), (5, 1, 1)), ((3, 2, 1), (4, 3, 1)),
                                       ((2, 3, 2), (3, 2, 4))])
def test_builtins_per_axis(count: tuple[int, int, int], dim: tuple[int, int, int]) -> None:
    names = [f"{kind}_{a}" for kind in ("UNIT_POS", "CUBE_POS", "ABSOLUTE_POS") for a in AXES]
    names += ["UNIT_POS", "CUBE_POS", "CUBE_DIM", "CUBE_COUNT", "CUBE_DIM_Y", "CUBE_COUNT_Z",
              "PLANE_DIM", "UNIT_POS_PLANE"]
    total = math.prod(count) * math.prod(dim)
    outs = [np.zeros(total, np.uint32) for _ in names]
    # Indexed by the linear ABSOLUTE_POS computed by hand from its definition.
    lin = op(B.ADD, op(B.MUL, bi("CUBE_POS"), bi("CUBE_DIM")), UNIT)
    k = kern([st(f"o{j}", lin, bi(nm)) for j, nm in enumerate(names)],
             [(f"o{j}", "u32[]") for j in range(len(names))])
    launch(k, outs, count=count, dim=dim)
    cz, cy, cx, uz, uy, ux = np.meshgrid(*(np.arange(s) for s in (*count[::-1], *dim[::-1])),
                                         indexing="ij")
    cube = cx + cy * count[0] + cz * count[0] * count[1]
    unit = ux + uy * dim[0] + uz * dim[0] * dim[1]
    want = {"UNIT_POS_X": ux, "UNIT_POS_Y": uy, "UNIT_POS_Z": uz, "CUBE_POS_X": cx,
            "CUBE_POS_Y": cy, "CUBE_POS_Z": cz, "ABSOLUTE_POS_X": cx * dim[0] + ux,
            "ABSOLUTE_POS_Y": cy * dim[1] + uy, "ABSOLUTE_POS_Z": cz * dim[2] + uz,
            "UNIT_POS": unit, "CUBE_POS": cube, "CUBE_DIM": np.full_like(ux, math.prod(dim)),
            "CUBE_COUNT": np.full_like(ux, math.prod(count)),
            "CUBE_DIM_Y": np.full_like(ux, dim[1]), "CUBE_COUNT_Z": np.full_like(ux, count[2]),
            "PLANE_DIM": np.full_like(ux, PLANE_SIZE), "UNIT_POS_PLANE": unit % PLANE_SIZE}
    where = (cube * math.prod(dim) + unit).ravel()
    for nm, got in zip(names, outs, strict=True):
        exp = np.zeros(total, np.uint32)
        exp[where] = want[nm].ravel()
        np.testing.assert_array_equal(got, exp, err_msg=nm)
    # And the linear ABSOLUTE_POS is that same index.
    pos = np.zeros(total, np.uint32)
    launch(kern([st("p", POS, POS)], [("p", "u32[]")]), [pos], count=count, dim=dim)
    np.testing.assert_array_equal(pos, np.arange(total))


def test_size_not_multiple_of_cube_dim(rng: Seeded) -> None:
    n = 1000
    a = rng.gen.standard_normal(n).astype(np.float32)
    b = rng.gen.standard_normal(n).astype(np.float32)
    big, out = guarded_buffer(n, "float32", 9.0)
    x = op(B.ADD, op(B.MUL, ld("a", POS, E.F32), v("alpha", E.F32)), ld("b", POS, E.F32))
    k = kern([guarded("out", st("out", POS, x))],
             [("a", "f32[]"), ("b", "f32[]"), ("out", "f32[]"), ("alpha", "f32")])
    for mode in (CHECKED, UNCHECKED):
        out[:] = 0
        launch(k, [a, b, out], [np.float32(1.5)], dim=(64, 1, 1), mode=mode)
        np.testing.assert_array_equal(out, a * np.float32(1.5) + b, str(rng))
        assert (big[:8] == 9).all() and (big[-8:] == 9).all()


def reduction_kernel(t: E, size: int) -> ir.Kernel:
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


@pytest.mark.parametrize("t", [E.I64, E.F64], ids=lambda t: t.value)
def test_shared_memory_tree_reduction(t: E, rng: Seeded) -> None:
    n, size = 1000, 128
    a = (rng.gen.integers(-1000, 1000, n) if t.is_int
         else rng.gen.standard_normal(n)).astype(t.numpy_name)
    cubes = -(-n // size)
    out = np.zeros(cubes, t.numpy_name)
    launch(reduction_kernel(t, size), [a, out], count=(cubes, 1, 1), dim=(size, 1, 1))
    padded = np.zeros(cubes * size, a.dtype)
    padded[:n] = a
    np.testing.assert_allclose(out, padded.reshape(cubes, size).sum(axis=1), rtol=1e-12,
                               err_msg=str(rng))


def test_shared_checked_bounds_are_per_cube() -> None:
    out = np.full(8, -1, np.int32)
    k = kern([st("sh", UNIT, ir.Cast(UNIT, E.I32)),
              st("sh", op(B.ADD, UNIT, u(4)), c(77, E.I32)),  # outside the cube's 4: dropped
              st("sh", u(4), c(55, E.I32)),  # a uniform index outside: dropped too
              st("out", POS, op(B.ADD, ld("sh", op(B.ADD, UNIT, u(2)), E.I32),
                                ld("sh", u(4), E.I32)))],
             [("out", "i32[]")], shared=[("sh", E.I32, 4)])
    launch(k, [out], count=(2, 1, 1), dim=(4, 1, 1))
    np.testing.assert_array_equal(out, [2, 3, 0, 0, 2, 3, 0, 0])


@pytest.mark.parametrize("shared", [False, True], ids=["global", "shared"])
def test_atomic_on_a_uniform_index(shared: bool) -> None:
    out = np.zeros(3, np.uint32)
    old = np.zeros(128, np.uint32)
    target = "sh" if shared else "out"
    body = [ir.AtomicStmt(ir.AtomicOp.ADD, target, u(1), u(2), None, "r"),
            ir.AtomicStmt(ir.AtomicOp.ADD, target, u(3), u(5), None, None),  # outside: dropped
            st("old", POS, v("r", E.U32))]
    if shared:
        body += [ir.Barrier(), if_(op(B.EQ, UNIT, u(0)),
                                   [st("out", bi("CUBE_POS"), ld("sh", u(1), E.U32))])]
    k = kern(body, [("out", "u32[]"), ("old", "u32[]")], [("r", E.U32)],
             [("sh", E.U32, 3)] if shared else ())
    launch(k, [out, old], count=(2, 1, 1), dim=(64, 1, 1))
    if shared:  # each cube counts in its own shared array, from 0
        np.testing.assert_array_equal(out, [128, 128, 0])
        np.testing.assert_array_equal(old, np.tile(np.arange(64) * 2, 2))
    else:
        np.testing.assert_array_equal(out, [0, 256, 0])
        np.testing.assert_array_equal(old, np.arange(128) * 2)


# ---------------------------------------------------------------- atomics


def sequential_atomic(o: ir.AtomicOp, mem: np.ndarray, idx: np.ndarray, val: np.ndarray,
                      cmp: np.ndarray, active: np.ndarray) -> np.ndarray:
    """The reference: active lanes one after another in lane order."""
    old = np.zeros(idx.shape[0], mem.dtype)
    with np.errstate(all="ignore"):
        for lane in np.flatnonzero(active):
            i = idx[lane]
            if not 0 <= i < mem.shape[0]:
                continue
            cur = mem[i]
            old[lane] = cur
            mem[i] = {
                ir.AtomicOp.ADD: lambda: cur + val[lane],  # noqa: B023
                ir.AtomicOp.SUB: lambda: cur - val[lane],  # noqa: B023
                ir.AtomicOp.MAX: lambda: max(cur, val[lane]),  # noqa: B023
                ir.AtomicOp.MIN: lambda: min(cur, val[lane]),  # noqa: B023
                ir.AtomicOp.AND: lambda: cur & val[lane],  # noqa: B023
                ir.AtomicOp.OR: lambda: cur | val[lane],  # noqa: B023
                ir.AtomicOp.XOR: lambda: cur ^ val[lane],  # noqa: B023
                ir.AtomicOp.EXCHANGE: lambda: val[lane],  # noqa: B023
                ir.AtomicOp.COMPARE_EXCHANGE:
                    lambda: val[lane] if cur == cmp[lane] else cur,  # noqa: B023
            }[o]()
    return old


@pytest.mark.parametrize("keep_old", [True, False], ids=["old", "no-old"])
@pytest.mark.parametrize("addresses", [5, 700], ids=["few-hot", "many"])
@pytest.mark.parametrize(("o", "t"), [
    pytest.param(o, t, id=f"{o.name}-{t.value}") for o in ir.AtomicOp
    for t in (E.U32, E.I64, E.F32)
    if not (t.is_float and o in (ir.AtomicOp.AND, ir.AtomicOp.OR, ir.AtomicOp.XOR))])
def test_atomics_match_a_sequential_order(o: ir.AtomicOp, t: E, addresses: int,
                                          keep_old: bool, rng: Seeded) -> None:
    n = 2048
    idx = rng.gen.integers(0, addresses + 3, n).astype(np.uint32)  # some lanes outside
    if t.is_float:
        val = rng.gen.integers(-8, 8, n).astype(np.float32) * np.float32(0.375)
        cmp = rng.gen.integers(-2, 2, n).astype(np.float32) * np.float32(0.375)
        mem = rng.gen.integers(-2, 2, addresses).astype(np.float32) * np.float32(0.375)
    else:
        val = rng.ints(t, n)
        cmp = rng.gen.integers(0, 3, n).astype(t.numpy_name)
        mem = rng.gen.integers(0, 3, addresses).astype(t.numpy_name)
    active = np.arange(n) % 3 != 0
    old = np.zeros(n, t.numpy_name)
    body = [if_(op(B.NE, op(B.REM, POS, u(3)), u(0)), [
        ir.AtomicStmt(o, "mem", ld("idx", POS, E.U32), ld("val", POS, t),
                      ld("cmp", POS, t) if o is ir.AtomicOp.COMPARE_EXCHANGE else None,
                      "r" if keep_old else None),
        st("old", POS, v("r", t))])]
    k = kern(body, [("mem", f"{t.value}[]"), ("idx", "u32[]"), ("val", f"{t.value}[]"),
                    ("cmp", f"{t.value}[]"), ("old", f"{t.value}[]")], [("r", t)])
    want_mem = mem.copy()
    want_old = sequential_atomic(o, want_mem, idx, val, cmp, active)
    launch(k, [mem, idx, val, cmp, old], count=(n // 64, 1, 1))
    np.testing.assert_array_equal(mem, want_mem, f"{o} {t} {rng}")
    np.testing.assert_array_equal(old, want_old if keep_old else 0, f"{o} {t} {rng}")


def test_histogram_in_shared_memory(rng: Seeded) -> None:
    n, bins, dim = 5000, 16, 256
    data = rng.gen.integers(0, bins, n).astype(np.uint32)
    hist = np.zeros(bins, np.uint32)
    cubes = -(-n // dim)
    body = [
        if_(op(B.LT, UNIT, u(bins)), [st("local", UNIT, u(0))]),
        ir.Barrier(),
        if_(op(B.LT, POS, ir.Len("data")),
            [ir.AtomicStmt(ir.AtomicOp.ADD, "local", ld("data", POS, E.U32), u(1), None, None)]),
        ir.Barrier(),
        if_(op(B.LT, UNIT, u(bins)),
            [ir.AtomicStmt(ir.AtomicOp.ADD, "hist", UNIT, ld("local", UNIT, E.U32), None,
                           None)]),
    ]
    k = kern(body, [("data", "u32[]"), ("hist", "u32[]")], shared=[("local", E.U32, bins)])
    launch(k, [data, hist], count=(cubes, 1, 1), dim=(dim, 1, 1))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=bins), str(rng))


# ---------------------------------------------------------------- planes


def test_plane_ops_over_active_lanes(rng: Seeded) -> None:
    dim, cubes = 80, 3  # planes of 32, 32 and a short one of 16 in each cube
    n = dim * cubes
    a = rng.gen.integers(-100, 100, n).astype(np.int32)
    f = rng.gen.standard_normal(n).astype(np.float32)
    sums, maxes = np.zeros(n, np.int32), np.full(n, -9, np.float32)
    bcast, uni = np.zeros(n, np.int32), np.zeros(n, np.int32)
    lane3 = u(3)
    body = [
        st("bcast", POS, ir.PlaneOp(ir.PlaneFn.BROADCAST, ld("a", POS, E.I32), lane3, E.I32)),
        st("uni", POS, ir.PlaneOp(ir.PlaneFn.SUM, c(2, E.I32), None, E.I32)),
        if_(op(B.GT, ld("a", POS, E.I32), c(0, E.I32)), [
            st("sums", POS, ir.PlaneOp(ir.PlaneFn.SUM, ld("a", POS, E.I32), None, E.I32)),
            st("maxes", POS, ir.PlaneOp(ir.PlaneFn.MAX, ld("f", POS, E.F32), None, E.F32)),
        ]),
    ]
    k = kern(body, [("a", "i32[]"), ("f", "f32[]"), ("sums", "i32[]"), ("maxes", "f32[]"),
                    ("bcast", "i32[]"), ("uni", "i32[]")])
    launch(k, [a, f, sums, maxes, bcast, uni], count=(cubes, 1, 1), dim=(dim, 1, 1))
    for lane in range(n):
        cube, unit = divmod(lane, dim)
        first = cube * dim + unit // PLANE_SIZE * PLANE_SIZE
        plane = np.arange(first, min(first + PLANE_SIZE, (cube + 1) * dim))
        active = plane[a[plane] > 0]
        assert bcast[lane] == a[first + 3], (lane, rng)
        assert uni[lane] == 2 * plane.size, lane
        if a[lane] > 0:
            assert sums[lane] == a[active].sum(), (lane, rng)
            assert maxes[lane] == f[active].max(), (lane, rng)
        else:
            assert sums[lane] == 0 and maxes[lane] == -9, lane


# ---------------------------------------------------------------- chunks


def test_several_chunks(monkeypatch: pytest.MonkeyPatch, rng: Seeded) -> None:
    monkeypatch.setattr(support, "MAX_LANES", 256)
    n, size = 5000, 64
    a = rng.gen.integers(-1000, 1000, n).astype(np.int64)
    cubes = -(-n // size)
    out = np.zeros(cubes, np.int64)
    launch(reduction_kernel(E.I64, size), [a, out], count=(cubes, 1, 1), dim=(size, 1, 1))
    padded = np.zeros(cubes * size, np.int64)
    padded[:n] = a
    np.testing.assert_array_equal(out, padded.reshape(cubes, size).sum(axis=1), str(rng))
    cp = np.zeros(cubes * size, np.uint32)
    launch(kern([st("cp", POS, bi("CUBE_POS"))], [("cp", "u32[]")]), [cp], dim=(size, 1, 1))
    np.testing.assert_array_equal(cp, np.arange(cp.size) // size)


def test_a_launch_bigger_than_one_chunk(rng: Seeded) -> None:
    n = support.MAX_LANES * 2 + 1000
    a = rng.gen.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k = kern([guarded("out", st("out", POS, op(B.MUL, ld("a", POS, E.F32), c(3.0, E.F32))))],
             [("a", "f32[]"), ("out", "f32[]")])
    launch(k, [a, out], dim=(256, 1, 1))
    np.testing.assert_array_equal(out, a * np.float32(3), str(rng))


# ---------------------------------------------------------------- the artifact


def test_source_imports_only_numpy_and_support() -> None:
    src = source(reduction_kernel(E.F32, 64))
    tree = ast.parse(src)
    imports = [ast.unparse(n) for n in ast.walk(tree)
               if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import numpy as np",
                       "from cubecl_server.backends.cpu import support as _s"]
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert funcs == ["run"]
    assert "# tile[UNIT_POS] = a[ABSOLUTE_POS]" in src  # a comment per core IR statement


def test_validated_source_runs_in_a_namespace_without_builtins() -> None:
    run = _loaded(source(reduction_kernel(E.F32, 64)))
    assert run.run.__globals__["__builtins__"] == {}
    a, out = np.ones(64, np.float32), np.zeros(1, np.float32)
    run([a, out], [(64,), (1,)], [(1,), (1,)], [], (1, 1, 1), (64, 1, 1))
    assert out[0] == 64


def test_wrong_cube_dim_is_refused() -> None:
    ns: dict[str, Any] = {}
    exec(compile(source(reduction_kernel(E.F32, 64)), "<cpu>", "exec"), ns)
    with pytest.raises(ValueError, match="cube dim"):
        ns["run"]([np.ones(4, np.float32), np.ones(1, np.float32)], [(4,), (1,)],
                  [(1,), (1,)], [], (1, 1, 1), (32, 1, 1))


@pytest.mark.parametrize("body,params,local,message", [
    ([st("out", POS, op(B.DIV, v("n", E.I32), v("n", E.I32)))], [("out", "i32[]"), ("n", "i32")],
     [], "'/' takes floats, not i32, in `(n / n)`"),
    ([st("nowhere", POS, c(1, E.I32))], [("out", "i32[]")], [],
     "'nowhere' is not an array parameter, a shared array or a local array, in "
     "`nowhere[ABSOLUTE_POS] = 1:i32`"),
    ([ir.Break()], [("out", "i32[]")], [], "`break` outside a loop, in `break`"),
    ([ir.Assign("ghost", c(1, E.I32))], [("out", "i32[]")], [],
     "'ghost' is not a declared local: only declared locals are assigned, in `ghost = 1:i32`"),
    ([ir.Assign("x", c(1.0, E.F32))], [("out", "i32[]")], [("x", E.I32)],
     "the value is f32, but local 'x' is i32, in `x = 1.0:f32`"),
    ([st("out", POS, ir.Math(ir.MathFn.EXP, (c(1, E.I32),), E.I32))], [("out", "i32[]")], [],
     "'exp' takes floats, not i32, in `exp(1:i32)`"),
])
def test_ill_typed_ir_is_refused_before_lowering(body: list[ir.Stmt],
                                                 params: list[tuple[str, str]],
                                                 local: list[tuple[str, E]],
                                                 message: str) -> None:
    """The loader checks the IR (cubecl_server.ir_check) before the cpu backend lowers it."""
    k = kern(body, params, local, name="bad")
    with pytest.raises(CompilationError) as err:
        create_client("cpu").prepare(IrKernel(k), CubeDim(64))  # type: ignore[arg-type]
    assert err.value.kernel == "bad" and err.value.backend == "cpu"
    assert err.value.message == message


def test_a_local_holds_a_view_only_while_nothing_writes_memory(rng: Seeded) -> None:
    """A checked load's local (the checked pass's) reads the array in place: nothing
    is stored before the statement that reads it. A local read after a store to the
    array it came from holds a copy, so it keeps the value it was assigned."""
    n = 256
    a = rng.gen.standard_normal(n).astype(np.float32)
    k = kern([st("out", POS, op(B.ADD, ld("a", POS, E.F32), ld("b", POS, E.F32)))],
             [("a", "f32[]"), ("b", "f32[]"), ("out", "f32[]")])
    assert "_s.view_pos(p_a, g)" in source(k) and "load_pos" not in source(k)
    x = v("x", E.F32)
    k = kern([ir.Assign("x", ld("a", POS, E.F32)), st("a", POS, c(7.0, E.F32)),
              st("out", POS, x)], [("a", "f32[]"), ("out", "f32[]")], local=[("x", E.F32)])
    assert "_s.load_pos(p_a, g)" in source(k), "the store to a comes before x is read"
    arr, out = a.copy(), np.zeros(n, np.float32)
    launch(k, [arr, out])
    np.testing.assert_array_equal(out, a, str(rng))
    assert (arr == 7.0).all()
