"""Kernels the vulkan tests launch, in a module so fresh processes can import them too."""

from __future__ import annotations

from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_COUNT,
    CUBE_DIM,
    CUBE_POS,
    UNIT_POS,
    Array,
    Comptime,
    bool_,
    ceil,
    clamp,
    cos,
    erf,
    exp,
    f16,
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
    max,
    min,
    pow,
    rsqrt,
    sin,
    sqrt,
    tanh,
    u32,
    u64,
)


@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    """out = alpha * x + y."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@kernel
def grid_2d(a: Array[f32], out: Array[u32], rows: u32, cols: u32) -> None:
    """A 2-D launch: out[r, c] = r * 1000 + c + (a[r, c] > 0), and the linear ids."""
    c = ABSOLUTE_POS_X
    r = ABSOLUTE_POS_Y
    if r < rows and c < cols:
        flag = u32(1) if a[r * cols + c] > 0.0 else u32(0)
        out[r * cols + c] = r * 1000 + c + flag


@kernel
def linear_ids(out: Array[u32]) -> None:
    """out[ABSOLUTE_POS] encodes CUBE_POS, UNIT_POS and the launch's sizes."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = CUBE_POS * 100000 + UNIT_POS * 100 + CUBE_DIM + CUBE_COUNT * 0


@kernel
def loops(x: Array[i32], out: Array[i32], n: i32) -> None:
    """for with negative step, while with break/continue, early return."""
    i = ABSOLUTE_POS
    if i >= len(out):
        return
    v = x[i]
    acc = 0
    for k in range(n, 0, -2):
        if k % 3 == 0:
            continue
        acc += k * v
    j = 0
    while True:
        j += 1
        if j > 50:
            break
        if j % 2 == 1:
            continue
        acc -= j
    if v < 0:
        out[i] = -1
        return
    out[i] = acc


@kernel
def math_f32(x: Array[f32], y: Array[f32], out: Array[f32]) -> None:
    """Every float math function, one per output row."""
    i = ABSOLUTE_POS
    n = len(x)
    if i < n:
        a = x[i]
        b = y[i]
        out[0 * n + i] = exp(a)
        out[1 * n + i] = log(abs(a))
        out[2 * n + i] = sqrt(abs(a))
        out[3 * n + i] = rsqrt(abs(a) + 0.5)
        out[4 * n + i] = sin(a)
        out[5 * n + i] = cos(a)
        out[6 * n + i] = tanh(a)
        out[7 * n + i] = erf(a)
        out[8 * n + i] = floor(a)
        out[9 * n + i] = ceil(a)
        out[10 * n + i] = pow(abs(a), b)
        out[11 * n + i] = fma(a, b, 1.5)
        out[12 * n + i] = min(a, b)
        out[13 * n + i] = max(a, b)
        out[14 * n + i] = clamp(a, -0.5, 0.5)
        out[15 * n + i] = f32(1.0) if isnan(b) else f32(0.0)
        out[16 * n + i] = f32(1.0) if isinf(b) else f32(0.0)
        out[17 * n + i] = a % b
        out[18 * n + i] = pow(a, 3.0)


@kernel
def int_ops(a: Array[i32], b: Array[i32], out: Array[i32]) -> None:
    """Wrapping arithmetic, truncating division, shifts, bit operations."""
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
        out[5 * n + i] = x << y
        out[6 * n + i] = x >> y
        out[7 * n + i] = (x & y) ^ (x | 7)
        out[8 * n + i] = ~x
        out[9 * n + i] = -x
        out[10 * n + i] = min(x, y)
        out[11 * n + i] = max(x, y)
        out[12 * n + i] = abs(x)
        out[13 * n + i] = i32(u32(x) >> u32(y))
        out[14 * n + i] = i32(u32(x) // u32(y))


@kernel
def wide_ops(a: Array[i64], b: Array[u64], c: Array[f64], out_i: Array[i64],
             out_u: Array[u64], out_f: Array[f64], s: i64, d: f64) -> None:
    """64-bit integers and doubles, with 64-bit scalars."""
    i = ABSOLUTE_POS
    if i < len(a):
        out_i[i] = a[i] * s + a[i] // 3
        out_u[i] = (b[i] >> u64(7)) + b[i] * u64(3)
        out_f[i] = c[i] * d + sqrt(abs(c[i])) + exp(c[i] * 0.001)


@kernel
def math_f64(x: Array[f64], y: Array[f64], out: Array[f64]) -> None:
    """The f64 functions GLSL.std.450 lacks, all in one module (their functions shared)."""
    i = ABSOLUTE_POS
    n = len(x)
    if i < n:
        a = x[i]
        out[0 * n + i] = exp(a)
        out[1 * n + i] = log(a)
        out[2 * n + i] = sin(a)
        out[3 * n + i] = cos(a)
        out[4 * n + i] = tanh(a)
        out[5 * n + i] = erf(a)
        out[6 * n + i] = pow(a, y[i])


@kernel
def half_and_bool(h: Array[f16], flags: Array[bool_], out_h: Array[f16],
                  out_b: Array[bool_], k: f16, on: bool_) -> None:
    """f16 arithmetic and bool arrays (8-bit storage)."""
    i = ABSOLUTE_POS
    if i < len(h):
        out_h[i] = h[i] * k + f16(1.0)
        out_b[i] = (flags[i] and on) or h[i] > f16(0.0)


@kernel
def gather(src: Array[f32], idx: Array[i32], out: Array[f32]) -> None:
    """out[i] = src[idx[i]]; checked mode reads 0 outside src, drops stores outside out."""
    i = ABSOLUTE_POS
    out[i] = src[idx[i]] + 1.0


@kernel
def add_const(a: Array[i32], out: Array[i32], *, C: Comptime[int]) -> None:
    """out = a + C: every comptime value is a distinct kernel."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] + C


def pow_only(dtype: type) -> object:
    """out = pow(x, y) for f32 or f64 arrays."""
    import numpy as np

    if dtype is np.float32:
        @kernel
        def pow_f32(x: Array[f32], y: Array[f32], out: Array[f32]) -> None:
            i = ABSOLUTE_POS
            if i < len(x):
                out[i] = pow(x[i], y[i])
        return pow_f32

    @kernel
    def pow_f64(x: Array[f64], y: Array[f64], out: Array[f64]) -> None:
        i = ABSOLUTE_POS
        if i < len(x):
            out[i] = pow(x[i], y[i])
    return pow_f64
