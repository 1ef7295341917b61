"""The math functions past the first ones (tan, asin ... hypot), f32 atomic max/min and
local arrays, past what the conformance suite asks: the f64 functions written here
over the whole double range against the host's libm (through NumPy), the f32 ones
written here over wide ranges, and the corners of the generated module (a plane
operation in a local array's index, a 64-bit index into the atomics, shared arrays).

This module does not use ``from __future__ import annotations``: its kernel factory
annotates with a closure variable (``Array[T]``), read from the evaluated annotation.
"""

from collections.abc import Callable

import numpy as np
import pytest
from cubecl_vulkan.compiler import ShaderFeatures, VulkanCompiler
from vk_support import run

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.client import ComputeClient
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.lang import ABSOLUTE_POS, Array, KernelFunction, f32, f64, kernel

E, B = ir.Elem, ir.BuiltinName
POS = ir.Builtin(B.ABSOLUTE_POS)

FNS = ("tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "log2", "exp2", "log1p",
       "expm1", "hypot")
REF: dict[str, Callable[..., np.ndarray]] = {
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "log2": np.log2, "exp2": np.exp2,
    "log1p": np.log1p, "expm1": np.expm1, "hypot": np.hypot,
}
# f32: the functions written here (tan and exp2 are GLSL.std.450's), to about 4 ulp.
OWN_F32 = ("asin", "acos", "atan", "atan2", "sinh", "cosh", "log2", "log1p", "expm1",
           "hypot")
RTOL = {np.float32: 5e-7, np.float64: 2e-15}  # the suite asks for 2e-6 and 1e-12
# Results this small are compared to an absolute tolerance: subnormal ones keep fewer
# bits, and a device may flush f32 ones to zero.
TINY = {np.float32: 1.2e-38, np.float64: 1e-300}
SUBNORMAL = {np.float32: 1.2e-38, np.float64: 1e-320}


def _math_more(T: object) -> KernelFunction:
    def more(x: Array[T], y: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        n = len(x)
        if i < n:
            a = x[i]
            b = y[i]
            out[0 * n + i] = cl.tan(a)
            out[1 * n + i] = cl.asin(a)
            out[2 * n + i] = cl.acos(a)
            out[3 * n + i] = cl.atan(a)
            out[4 * n + i] = cl.atan2(a, b)
            out[5 * n + i] = cl.sinh(a)
            out[6 * n + i] = cl.cosh(a)
            out[7 * n + i] = cl.log2(a)
            out[8 * n + i] = cl.exp2(a)
            out[9 * n + i] = cl.log1p(a)
            out[10 * n + i] = cl.expm1(a)
            out[11 * n + i] = cl.hypot(a, b)
    return kernel(more)


MORE = {np.float32: _math_more(f32), np.float64: _math_more(f64)}


def _inputs(dtype: type, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Special values, magnitudes over the type's exponents (both signs), the dense
    parts near 0 and +-1, and the worst cases of the trigonometric reduction."""
    n = 4000
    lo, hi = (-310, 308) if dtype is np.float64 else (-37, 38)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.nan, np.inf, -np.inf, 1e-7, -1e-7,
               88.0, 88.7, 89.4, 89.5, -17.4, -88.0, 127.5, 128.0]
    if dtype is np.float64:
        special += [709.0, 709.78, 710.4, 710.5, -37.0, 1023.5, 1024.0, -1074.0, -1075.0,
                    5e-324, 1.7976931348623157e308, 6381956970095103.0 * 2.0 ** 797,
                    5706116302872737.0 * 2.0 ** -1, 1e6 * np.pi, 103993.0, 2.0 ** 60]
    signs = rng.choice([-1.0, 1.0], n)
    x = np.concatenate([special, signs * 10.0 ** rng.uniform(lo, hi, n),
                        rng.uniform(-100, 100, n), rng.uniform(-1, 1, n),
                        signs * (1 - 10.0 ** rng.uniform(-15, 0, n)),
                        rng.uniform(-1100, 1100, n // 4)])
    y = np.concatenate([rng.permutation(x[len(special):]), x[:len(special)]])
    with np.errstate(over="ignore"):
        return x.astype(dtype), y.astype(dtype)


def _check(fn: str, dtype: type, args: tuple[np.ndarray, ...], got: np.ndarray) -> None:
    wide = [a.astype(np.float64) for a in args]
    with np.errstate(all="ignore"):
        want = REF[fn](*wide).astype(dtype)
        ok = ((got == want) & (np.signbit(got) == np.signbit(want))
              | (np.isnan(got) & np.isnan(want))
              | np.isclose(got, want, rtol=RTOL[dtype], atol=0)
              | ((np.abs(want) < TINY[dtype]) & (np.abs(got - want) < SUBNORMAL[dtype])))
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (f"{fn} on {np.dtype(dtype).name}: {bad.size} wrong, e.g. at "
                           f"{[tuple(a[bad[:3]]) for a in args]} got {got[bad[:3]]!r} "
                           f"want {want[bad[:3]]!r}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_over_wide_ranges(shared_client: ComputeClient, dtype: type) -> None:
    c = shared_client
    if dtype is np.float64 and not c.capabilities.f64:
        pytest.skip("the device has no f64")
    x, y = _inputs(dtype, np.random.default_rng())
    n = len(x)
    out = c.empty(len(FNS) * n, dtype)
    MORE[dtype].launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(x), c.create(y), out)
    got = c.read(out).reshape(len(FNS), n)
    for fn, row in zip(FNS, got, strict=True):
        if dtype is np.float32 and fn not in OWN_F32:
            continue
        _check(fn, dtype, (x, y) if fn in ("atan2", "hypot") else (x,), row)


def test_atomic_fmax_fmin_with_a_64_bit_index(shared_client: ComputeClient) -> None:
    c = shared_client
    if not c.capabilities.int64:
        pytest.skip("the device has no 64-bit integers")
    slots = 5
    index = ir.Cast(ir.Binary(ir.BinOp.REM, POS, ir.Const(slots, E.U32), E.U32), E.U64)
    v = ir.Load("v", POS, E.F32)
    body = (ir.If(ir.Binary(ir.BinOp.LT, POS, ir.Len("v"), E.BOOL), then=(
        ir.AtomicStmt(ir.AtomicOp.MAX, "hi", index, v, None, None),
        ir.AtomicStmt(ir.AtomicOp.MIN, "lo", index, v, None, "old"),
        ir.Store("olds", POS, ir.Var("old", E.F32)),
    ), orelse=()),)
    k = ir.Kernel("fminmax64", (ir.Param("v", E.F32, True), ir.Param("hi", E.F32, True),
                                ir.Param("lo", E.F32, True), ir.Param("olds", E.F32, True)),
                  (ir.Local("old", E.F32),), (), body)
    rng = np.random.default_rng()
    n = 1000
    vals = rng.uniform(-1e3, 1e3, n).astype(np.float32)
    vals[rng.choice(n, 20, replace=False)] = np.nan
    init = np.array([np.nan, 0.0, -0.5, 7.0, -1e30], np.float32)
    hi, lo, olds = c.create(init), c.create(init), c.empty(n, np.float32)
    run(c, k, -(-n // 64), 64, [c.create(vals), hi, lo, olds])
    per_slot = [np.concatenate([[init[s]], vals[s::slots]]) for s in range(slots)]
    np.testing.assert_array_equal(c.read(hi), [np.fmax.reduce(p) for p in per_slot])
    np.testing.assert_array_equal(c.read(lo), [np.fmin.reduce(p) for p in per_slot])
    # Every old value of the min is one the slot held: its initial value or a value
    # some unit brought.
    got = c.read(olds)
    for s in range(slots):
        held = set(per_slot[s][~np.isnan(per_slot[s])].tolist())
        olds_s = got[s::slots]
        assert all(o in held for o in olds_s[~np.isnan(olds_s)].tolist())


def _local_array_kernel() -> ir.Kernel:
    """acc[j] = x[i] (j + 1) for j < 4; out3[i] = acc[3] and out5[i] = acc[5] (0: outside),
    both indices the broadcast of lane 1's value, so a plane operation in the index."""
    x, j = ir.Load("x", POS, E.F32), ir.Var("j", E.U32)
    lane = ir.Builtin(B.UNIT_POS_PLANE)

    def index(k: int) -> ir.PlaneOp:
        return ir.PlaneOp(ir.PlaneFn.BROADCAST, ir.Binary(ir.BinOp.ADD, lane, ir.Const(k, E.U32),
                                                          E.U32), ir.Const(1, E.U32), E.U32)

    body = (
        ir.For("j", ir.Const(0, E.U32), ir.Const(4, E.U32), ir.Const(1, E.U32), body=(
            ir.Store("acc", j, ir.Binary(ir.BinOp.MUL, x, ir.Cast(
                ir.Binary(ir.BinOp.ADD, j, ir.Const(1, E.U32), E.U32), E.F32), E.F32)),)),
        ir.Store("out3", POS, ir.Load("acc", index(2), E.F32)),
        ir.Store("out5", POS, ir.Load("acc", index(4), E.F32)),
    )
    return ir.Kernel("local_plane_index", (ir.Param("x", E.F32, True),
                                           ir.Param("out3", E.F32, True),
                                           ir.Param("out5", E.F32, True)),
                     (ir.Local("j", E.U32),), (), body,
                     local_arrays=(ir.LocalArray("acc", E.F32, 4),))


def test_local_array_index_holding_a_plane_operation(shared_client: ComputeClient) -> None:
    c = shared_client
    size = c.capabilities.plane_size
    if size is None or size < 2 or c.mode is not ExecutionMode.CHECKED:
        pytest.skip("needs planes of 2 units or more, and checked mode")
    k = _local_array_kernel()
    n = 256  # whole cubes: every unit of every plane takes part in the broadcast
    x = np.random.default_rng().uniform(-10, 10, n).astype(np.float32)
    out3, out5 = c.empty(n, np.float32), c.empty(n, np.float32)
    run(c, k, n // 64, 64, [c.create(x), out3, out5])
    np.testing.assert_array_equal(c.read(out3), x * np.float32(4))
    np.testing.assert_array_equal(c.read(out5), np.zeros(n, np.float32))


def test_atomic_fmax_on_a_shared_array_is_refused() -> None:
    body = (ir.AtomicStmt(ir.AtomicOp.MAX, "sh", ir.Const(0, E.U32),
                          ir.Load("x", POS, E.F32), None, None),)
    k = ir.Kernel("shared_fmax", (ir.Param("x", E.F32, True),), (),
                  (ir.SharedArray("sh", E.F32, 4),), body)
    compiler = VulkanCompiler(ShaderFeatures(subgroups=True))
    with pytest.raises(CompilationError, match="shared array 'sh'"):
        compiler.compile(k, CubeDim(64), ExecutionMode.CHECKED)
