"""End to end on PoCL: kernels launched through an opencl client, checked against NumPy
on fresh random data."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_COUNT_X,
    CUBE_DIM_X,
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    CubeCount,
    CubeDim,
    bool_,
    ceil,
    clamp,
    cos,
    erf,
    exp,
    f32,
    f64,
    floor,
    fma,
    i32,
    i64,
    isinf,
    isnan,
    kernel,
    log,
    pow,
    rsqrt,
    select,
    sin,
    sqrt,
    tanh,
    u32,
    u64,
)

from .irkit import POS, UNIT, E, binop, c, guarded, launch, load, make, v

B = ir.BinOp

# ---------------------------------------------------------------- elementwise, 2-D


@kernel
def axpby(x: Array[f32], y: Array[f32], out: Array[f32], a: f32, b: f32) -> None:
    """out = a x + b y."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a * x[i] + b * y[i]


@pytest.mark.parametrize("n", [1, 255, 256, 100_003])
def test_elementwise(client: ComputeClient, rng: np.random.Generator, n: int) -> None:
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    a, b = np.float32(rng.uniform(-2, 2)), np.float32(rng.uniform(-2, 2))
    hx, hy, ho = client.create(x), client.create(y), client.empty(n, np.float32)
    axpby.launch(client, CubeCount(-(-n // 256)), CubeDim(256), hx, hy, ho, a, b)
    np.testing.assert_allclose(client.read(ho), a * x + b * y, rtol=1e-6, atol=1e-6)


@kernel
def grid_ids(out: Array[u32], width: u32, height: u32) -> None:
    """Each unit writes a code of its builtins at its (x, y) cell."""
    x = ABSOLUTE_POS_X
    y = ABSOLUTE_POS_Y
    if x < width and y < height:
        check = (CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X == x) and (CUBE_POS_Y * 4 + UNIT_POS_Y == y)
        out[y * width + x] = select(check, UNIT_POS + 1000 * CUBE_COUNT_X, u32(0))


def test_two_dimensional_grid(client: ComputeClient) -> None:
    w, h = 37, 21
    ho = client.empty(w * h, np.uint32)
    count = CubeCount(-(-w // 8), -(-h // 4))
    grid_ids.launch(client, count, CubeDim(8, 4), ho, w, h)
    ys, xs = np.mgrid[0:h, 0:w]
    expected = (xs % 8) + (ys % 4) * 8 + 1000 * count.x
    np.testing.assert_array_equal(client.read(ho).reshape(h, w), expected)


def test_demo_transpose(client: ComputeClient, rng: np.random.Generator) -> None:
    from cubecl_server.demo import transpose

    rows, cols = 45, 67
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    hs, hd = client.create(src), client.empty((cols, rows), np.float32)
    transpose.launch(client, CubeCount(-(-cols // 16), -(-rows // 16)), CubeDim(16, 16),
                     hs, hd, rows, cols)
    np.testing.assert_array_equal(client.read(hd), src.T)


# ---------------------------------------------------------------- control flow


@kernel
def collatz(seeds: Array[i32], steps: Array[i32], limit: i32) -> None:
    """Steps of the Collatz sequence, with while, break, continue and an early return."""
    i = ABSOLUTE_POS
    if i >= len(seeds):
        return
    n = seeds[i]
    count = 0
    while True:
        if n == 1:
            break
        count += 1
        if count >= limit:
            count = -1
            break
        if n % 2 == 0:
            n = n // 2
            continue
        n = 3 * n + 1
    down = 0
    for k in range(10, 0, -3):
        down += k
    steps[i] = count * 100 + down


def _collatz(n: int, limit: int) -> int:
    count = 0
    while n != 1:
        count += 1
        if count >= limit:
            return -1
        n = n // 2 if n % 2 == 0 else 3 * n + 1
    return count


def test_loops_and_branches(client: ComputeClient, rng: np.random.Generator) -> None:
    seeds = rng.integers(1, 10_000, 500, dtype=np.int32)
    hs, ho = client.create(seeds), client.empty(500, np.int32)
    collatz.launch(client, CubeCount(8), CubeDim(64), hs, ho, 60)
    expected = [_collatz(int(s), 60) * 100 + (10 + 7 + 4 + 1) for s in seeds]
    np.testing.assert_array_equal(client.read(ho), expected)


# ---------------------------------------------------------------- math


@kernel
def math_f32(x: Array[f32], y: Array[f32], out: Array[f32]) -> None:
    """Every math function of f32, one column each."""
    i = ABSOLUTE_POS
    n = len(x)
    if i < n:
        a = x[i]
        b = y[i]
        out[0 * n + i] = exp(a)
        out[1 * n + i] = log(a)
        out[2 * n + i] = sqrt(a)
        out[3 * n + i] = rsqrt(a)
        out[4 * n + i] = sin(a)
        out[5 * n + i] = cos(a)
        out[6 * n + i] = tanh(a)
        out[7 * n + i] = erf(a)
        out[8 * n + i] = abs(a)
        out[9 * n + i] = floor(a)
        out[10 * n + i] = ceil(a)
        out[11 * n + i] = pow(a, b)
        out[12 * n + i] = fma(a, b, a)
        out[13 * n + i] = min(a, b)
        out[14 * n + i] = max(a, b)
        out[15 * n + i] = clamp(a, -0.5, 0.5)
        out[16 * n + i] = select(isnan(a), 1.0, 0.0) + select(isinf(a), 2.0, 0.0)
        out[17 * n + i] = a / b
        out[18 * n + i] = a % b
        out[19 * n + i] = -a


@kernel
def math_f64(x: Array[f64], y: Array[f64], out: Array[f64]) -> None:
    """Math functions of f64."""
    i = ABSOLUTE_POS
    n = len(x)
    if i < n:
        a = x[i]
        b = y[i]
        out[0 * n + i] = exp(a)
        out[1 * n + i] = log(a)
        out[2 * n + i] = sqrt(a)
        out[3 * n + i] = tanh(a)
        out[4 * n + i] = erf(a)
        out[5 * n + i] = pow(a, b)
        out[6 * n + i] = min(a, b)
        out[7 * n + i] = a / b
        out[8 * n + i] = a % b
        out[9 * n + i] = floor(a) + ceil(b)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.array([math.erf(float(t)) for t in x])


_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, 1e-30, 3e38]


def _operands(rng: np.random.Generator, dtype: type, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = (rng.standard_normal(n) * 4).astype(dtype)
    y = (rng.standard_normal(n) * 2).astype(dtype)
    k = len(_SPECIAL)
    x[:k * k] = np.repeat(np.array(_SPECIAL, dtype), k)
    y[:k * k] = np.tile(np.array(_SPECIAL, dtype), k)
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math(client: ComputeClient, rng: np.random.Generator, dtype: type) -> None:
    n = 1000
    x, y = _operands(rng, dtype, n)
    fn, cols = (math_f32, 20) if dtype is np.float32 else (math_f64, 10)
    hx, hy, ho = client.create(x), client.create(y), client.empty(cols * n, dtype)
    fn.launch(client, CubeCount(-(-n // 128)), CubeDim(128), hx, hy, ho)
    got = client.read(ho).reshape(cols, n)
    with np.errstate(all="ignore"):
        if dtype is np.float32:
            expected = [np.exp(x), np.log(x), np.sqrt(x), 1 / np.sqrt(x), np.sin(x), np.cos(x),
                        np.tanh(x), _erf(x), np.abs(x), np.floor(x), np.ceil(x), np.power(x, y),
                        x * y + x, np.fmin(x, y), np.fmax(x, y),
                        np.fmin(np.fmax(x, dtype(-0.5)), dtype(0.5)),
                        np.isnan(x) * 1.0 + np.isinf(x) * 2.0, x / y, np.fmod(x, y), -x]
        else:
            expected = [np.exp(x), np.log(x), np.sqrt(x), np.tanh(x), _erf(x), np.power(x, y),
                        np.fmin(x, y), x / y, np.fmod(x, y), np.floor(x) + np.ceil(y)]
    rtol = 4e-6 if dtype is np.float32 else 1e-13
    for col, want in enumerate(expected):
        want = np.asarray(want, dtype)
        np.testing.assert_allclose(got[col], want, rtol=rtol, atol=rtol,
                                   equal_nan=True, err_msg=f"column {col}")


# ---------------------------------------------------------------- integers


def _int_kernel(t: type) -> object:
    @kernel
    def int_ops(a: Array[t], b: Array[t], out: Array[t]) -> None:  # type: ignore[valid-type]
        """Every integer operator, one column each."""
        i = ABSOLUTE_POS
        n = len(a)
        if i < n:
            x = a[i]
            y = b[i]
            out[0 * n + i] = x + y
            out[1 * n + i] = x - y
            out[2 * n + i] = x * y
            out[3 * n + i] = x // y
            out[4 * n + i] = x % y
            out[5 * n + i] = x & y
            out[6 * n + i] = x | y
            out[7 * n + i] = x ^ y
            out[8 * n + i] = x << y
            out[9 * n + i] = x >> y
            out[10 * n + i] = -x
            out[11 * n + i] = ~x
            out[12 * n + i] = abs(x)
            out[13 * n + i] = min(x, y)
            out[14 * n + i] = max(x, y)
            out[15 * n + i] = clamp(x, t(10), t(1000))  # t: a closure variable
    return int_ops


_INT_KERNELS = {np.int32: _int_kernel(i32), np.int64: _int_kernel(i64),
                np.uint32: _int_kernel(u32), np.uint64: _int_kernel(u64)}


def _wrap(values: list[int], bits: int, signed: bool) -> np.ndarray:
    m = (1 << bits) - 1
    out = [(x & m) - ((1 << bits) if signed and (x & m) >> (bits - 1) else 0) for x in values]
    return np.array(out, dtype=f"{'i' if signed else 'u'}{bits // 8}")


def _tdiv(x: int, y: int) -> int:
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64],
                         ids=["i32", "i64", "u32", "u64"])
def test_integer_ops(client: ComputeClient, rng: np.random.Generator, dtype: type) -> None:
    info = np.iinfo(dtype)
    bits, signed = info.bits, info.min < 0
    edges = sorted({0, 1, 2, 31, 32, 33, 63, 64, info.max, info.max - 1, info.min, info.min + 1}
                   | ({-1, -2, -31, -64} if signed else set()))
    k = len(edges)
    n = k * k + 300
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[:k * k] = np.repeat(np.array(edges, dtype), k)
    y[:k * k] = np.tile(np.array(edges, dtype), k)
    hx, hy, ho = client.create(x), client.create(y), client.empty(16 * n, dtype)
    _INT_KERNELS[dtype].launch(client, CubeCount(-(-n // 64)), CubeDim(64), hx, hy, ho)
    got = client.read(ho).reshape(16, n)
    xs, ys = [int(t) for t in x], [int(t) for t in y]
    pairs = list(zip(xs, ys, strict=True))
    columns = [
        [a + b for a, b in pairs], [a - b for a, b in pairs], [a * b for a, b in pairs],
        [_tdiv(a, b) for a, b in pairs],
        [a - _tdiv(a, b) * b if b else 0 for a, b in pairs],
        [a & b for a, b in pairs], [a | b for a, b in pairs], [a ^ b for a, b in pairs],
        [a << (b % bits) for a, b in pairs], [a >> (b % bits) for a, b in pairs],
        [-a for a in xs], [~a for a in xs], [abs(a) for a in xs],
        [min(a, b) for a, b in pairs], [max(a, b) for a, b in pairs],
        [min(max(a, 10), 1000) for a in xs],
    ]
    for col, want in enumerate(columns):
        np.testing.assert_array_equal(got[col], _wrap(want, bits, signed), err_msg=f"column {col}")


@kernel
def casts(x: Array[f32], w: Array[i64], to_i32: Array[i32], to_u32: Array[u32],
          narrow: Array[i32], to_f32: Array[f32]) -> None:
    """Float to int (saturating), int to int (wrapping), int to float."""
    i = ABSOLUTE_POS
    if i < len(x):
        to_i32[i] = i32(x[i])
        to_u32[i] = u32(x[i])
        narrow[i] = i32(w[i])
        to_f32[i] = f32(w[i]) + f32(u32(w[i]))


def test_casts(client: ComputeClient, rng: np.random.Generator) -> None:
    n = 64
    x = (rng.standard_normal(n) * 1e10).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, -1.5, 2.9, 3e9, -3e9, 4.5e9]
    w = rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    hs = [client.create(x), client.create(w), client.empty(n, np.int32), client.empty(n, np.uint32),
          client.empty(n, np.int32), client.empty(n, np.float32)]
    casts.launch(client, CubeCount(1), CubeDim(64), *hs)
    clean = np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf).astype(np.float64)
    np.testing.assert_array_equal(client.read(hs[2]), np.clip(np.trunc(clean), -2**31, 2**31 - 1))
    np.testing.assert_array_equal(client.read(hs[3]), np.clip(np.trunc(clean), 0, 2**32 - 1))
    np.testing.assert_array_equal(client.read(hs[4]), w.astype(np.int32))
    np.testing.assert_array_equal(client.read(hs[5]),
                                  w.astype(np.float32) + w.astype(np.uint32).astype(np.float32))


# ---------------------------------------------------------------- bounds checking


@kernel
def shifted_copy(a: Array[f32], out: Array[f32], shift: i32, extra: u32) -> None:
    """out[i] = a[i + shift], run on more units than out has."""
    i = ABSOLUTE_POS
    if i < len(out) + extra:
        out[i] = a[i32(i) + shift]


@pytest.mark.parametrize("shift", [-5, 0, 7])
def test_checked_mode_bounds(client: ComputeClient, rng: np.random.Generator, shift: int) -> None:
    n = 50
    a = rng.standard_normal(n, dtype=np.float32)
    ha, ho = client.create(a), client.create(np.full(n, -1, np.float32))
    guard = client.create(np.full(64, 7, np.float32))  # next to ``ho`` in the pool's page
    shifted_copy.launch(client, CubeCount(2), CubeDim(64), ha, ho, shift, 20)
    j = np.arange(n) + shift
    expected = np.where((j >= 0) & (j < n), a[np.clip(j, 0, n - 1)], 0)
    np.testing.assert_array_equal(client.read(ho), expected)
    np.testing.assert_array_equal(client.read(guard), np.full(64, 7, np.float32))


def test_unchecked_mode(monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> None:
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", "unchecked")
    reload_config()
    unchecked = create_client("opencl")
    assert unchecked.mode is ExecutionMode.UNCHECKED
    n = 1000
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    hx, hy, ho = unchecked.create(x), unchecked.create(y), unchecked.empty(n, np.float32)
    axpby.launch(unchecked, CubeCount(4), CubeDim(256), hx, hy, ho, np.float32(2), np.float32(1))
    np.testing.assert_allclose(unchecked.read(ho), 2 * x + y, rtol=1e-6)


# ---------------------------------------------------------------- IR the language cannot yet say


def test_shape_stride_and_bool_arrays(client: ComputeClient, rng: np.random.Generator) -> None:
    # out[i] = m[i] ? shape[1] * 1000 + stride[0] : stride[2] (1 past the rank)
    k = make("shape_stride", [("a", E.F32, True), ("m", E.BOOL, True), ("out", E.U32, True),
                              ("flip", E.BOOL, True)], guarded("out", (
        ir.Store("out", POS, ir.Select(
            load("m", POS, E.BOOL),
            binop(B.ADD, binop(B.MUL, ir.Shape("a", 1), ir.Const(1000, E.U32)), ir.Stride("a", 0)),
            ir.Stride("a", 2), E.U32)),
        ir.Store("flip", POS, ir.Unary(ir.UnOp.NOT, load("m", POS, E.BOOL), E.BOOL)),
    )))
    m = rng.random(40) < 0.5
    ha, hm = client.create(np.zeros((4, 10), np.float32)), client.create(m)
    ho, hf = client.empty(40, np.uint32), client.empty(40, np.bool_)
    launch(client, k, CubeCount(1), CubeDim(64), [ha, hm, ho, hf])
    np.testing.assert_array_equal(client.read(ho), np.where(m, 10 * 1000 + 10, 1))
    np.testing.assert_array_equal(client.read(hf), ~m)


def test_shared_memory_and_barrier(client: ComputeClient, rng: np.random.Generator) -> None:
    # Each cube reverses its 64 elements through shared memory.
    u = ir.Binary(B.SUB, c(63, E.U32), UNIT, E.U32)
    k = make("reverse_tiles", [("a", E.I32, True), ("out", E.I32, True)], (
        ir.Store("tile", UNIT, load("a", POS, E.I32)),
        ir.Barrier(),
        ir.Store("out", POS, load("tile", u, E.I32)),
    ), shared=[("tile", E.I32, 64)])
    a = rng.integers(-1000, 1000, 256, dtype=np.int32)
    ha, ho = client.create(a), client.empty(256, np.int32)
    launch(client, k, CubeCount(4), CubeDim(64), [ha, ho])
    np.testing.assert_array_equal(client.read(ho), a.reshape(4, 64)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("elem", [E.I32, E.U32, E.I64, E.U64], ids=lambda e: e.value)
def test_atomics(client: ComputeClient, rng: np.random.Generator, elem: ir.Elem) -> None:
    # Histogram-style adds into 8 bins (global) and a per-cube max via shared memory.
    dtype = np.dtype(elem.numpy_name)
    val = load("vals", POS, elem)
    nbins = c(8, E.U32)
    k = make(f"atomics_{elem.value}", [("vals", elem, True), ("bins", elem, True),
                                      ("best", elem, True), ("old", elem, True)], (
        ir.AtomicStmt(ir.AtomicOp.ADD, "bins", binop(B.REM, POS, nbins), val, None, None),
        ir.AtomicStmt(ir.AtomicOp.MAX, "top", c(0, E.U32), val, None, None),
        ir.AtomicStmt(ir.AtomicOp.EXCHANGE, "old", POS, val, None, "prev"),
        ir.Barrier(),
        ir.If(binop(B.EQ, UNIT, c(0, E.U32)),
              (ir.Store("best", ir.Builtin(ir.BuiltinName.CUBE_POS),
                        load("top", c(0, E.U32), elem)),), ()),
        ir.AtomicStmt(ir.AtomicOp.COMPARE_EXCHANGE, "old", POS, c(5, elem), v("prev", elem),
                      None),
        # Out of range in checked mode: nothing happens.
        ir.AtomicStmt(ir.AtomicOp.ADD, "bins", c(1000, E.U32), val, None, None),
    ), locals_=[("prev", elem)], shared=[("top", elem, 1)])
    n = 256
    vals = rng.integers(0, 100, n).astype(dtype)
    old = np.full(n, 3, dtype)
    hv, hb = client.create(vals), client.create(np.zeros(8, dtype))
    hbest, hold = client.empty(4, dtype), client.create(old)
    launch(client, k, CubeCount(4), CubeDim(64), [hv, hb, hbest, hold])
    expected_bins = np.array([vals[i::8].sum() for i in range(8)], dtype)
    np.testing.assert_array_equal(client.read(hb), expected_bins)
    # Shared memory starts at zero, and every value is >= 0.
    np.testing.assert_array_equal(client.read(hbest), vals.reshape(4, 64).max(axis=1))
    # exchange put vals in and returned the 3 that was there; compare_exchange then
    # stored 5 where the element equals that 3, that is where vals is 3.
    np.testing.assert_array_equal(client.read(hold), np.where(vals == 3, 5, vals).astype(dtype))


def test_f32_atomic_add_on_shared(client: ComputeClient) -> None:
    k = make("atomics_f32_shared", [("out", E.F32, True)], (
        ir.AtomicStmt(ir.AtomicOp.ADD, "acc", c(0, E.U32), c(-0.5, E.F32), None, None),
        ir.Barrier(),
        ir.If(binop(B.LT, UNIT, c(1, E.U32)), (ir.Store("out", UNIT, load("acc", UNIT, E.F32)),),
              ()),
    ), shared=[("acc", E.F32, 1)])
    ho = client.empty(1, np.float32)
    launch(client, k, CubeCount(1), CubeDim(64), [ho])
    np.testing.assert_array_equal(client.read(ho), [-32.0])


def test_float_atomics_other_than_add_max_min_are_refused(client: ComputeClient) -> None:
    """The IR has atomic add, max and min alone on floats: the core's check refuses the
    rest."""
    k = make("atomics_f32_xor", [("out", E.F32, True)], (
        ir.AtomicStmt(ir.AtomicOp.XOR, "out", c(0, E.U32), ir.Cast(UNIT, E.F32), None, None),
    ))
    with pytest.raises(CompilationError) as info:
        launch(client, k, CubeCount(1), CubeDim(64), [client.empty(1, np.float32)])
    assert info.value.backend == "opencl"
    assert info.value.message == ("atomic xor is on i32, u32, i64, u64 elements, but 'out' "
                                  "holds f32, in `atomic_xor(out, 0:u32, f32(UNIT_POS))`")


@kernel
def masked_fill(out: Array[f32], on: bool_, value: f32) -> None:
    """out = value where ``on``, else -value: a bool scalar parameter."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = select(on, value, -value)


@pytest.mark.parametrize("on", [True, False])
def test_bool_scalar(client: ComputeClient, on: bool) -> None:
    ho = client.empty(10, np.float32)
    masked_fill.launch(client, CubeCount(1), CubeDim(16), ho, on, 1.5)
    np.testing.assert_array_equal(client.read(ho), np.full(10, 1.5 if on else -1.5))
