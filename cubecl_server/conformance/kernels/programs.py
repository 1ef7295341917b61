"""The kernel set as programs write it (``test_kernels.py``) - saxpy, the 2-D
transpose and the tiled matmul are the demo's own (:mod:`cubecl_server.demo`) - with
the kernels of the compile path (``scale``, ``add_const``) and of bad input (f64, IR
no backend compiles)."""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.demo import matmul, saxpy, transpose
from cubecl_server.id import KernelId
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_POS,
    UNIT_POS,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    KernelFunction,
    f32,
    i32,
    kernel,
    u32,
)

from .operations import scalar

__all__ = [
    "scale", "add_const", "saxpy", "transpose", "reduce_sum", "matmul", "histogram",
    "softmax", "scan", "collatz", "collatz_reference", "comptime_poly", "unrolled_sum",
    "cube_fn_kernel", "shape_stride", "transpose_shape", "atomic_kernel", "atomic_cas",
    "plane_kernel", "f64_kernel", "IrKernel", "uncompilable",
]


@kernel
def scale(a: Array[f32], out: Array[f32], k: f32) -> None:
    """out = a * k."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * k


@kernel
def add_const(a: Array[i32], out: Array[i32], *, C: Comptime[int]) -> None:
    """out = a + C: every comptime value is a distinct kernel."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] + C


# ---------------------------------------------------------------- the kernel set


@kernel
def reduce_sum(a: Array[f32], out: Array[f32], *, BLOCK: Comptime[int]) -> None:
    """Reduction: each cube sums its BLOCK elements in shared memory, with barriers."""
    s = cl.shared(f32, BLOCK)
    i = ABSOLUTE_POS
    v = 0.0
    if i < len(a):
        v = a[i]
    s[UNIT_POS] = v
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = s[UNIT_POS] + s[UNIT_POS + stride]
        cl.sync_cube()
        stride = stride // 2
    if UNIT_POS == 0:
        out[CUBE_POS] = s[0]


@kernel
def histogram(data: Array[u32], bins: Array[u32]) -> None:
    """Histogram: every unit adds one to its value's bin, atomically."""
    i = ABSOLUTE_POS
    if i < len(data):
        cl.atomic_add(bins, data[i], u32(1))


@kernel
def softmax(a: Array[f32], out: Array[f32], cols: u32, *, BLOCK: Comptime[int]) -> None:
    """Two-pass row softmax: one cube per row, max then sum of exponentials, each
    reduced in shared memory."""
    s = cl.shared(f32, BLOCK)
    base = CUBE_POS * cols
    m = -3.0e38
    for j in range(UNIT_POS, cols, BLOCK):
        m = max(m, a[base + j])
    s[UNIT_POS] = m
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = max(s[UNIT_POS], s[UNIT_POS + stride])
        cl.sync_cube()
        stride = stride // 2
    row_max = s[0]
    cl.sync_cube()
    total = 0.0
    for j in range(UNIT_POS, cols, BLOCK):
        total += cl.exp(a[base + j] - row_max)
    s[UNIT_POS] = total
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = s[UNIT_POS] + s[UNIT_POS + stride]
        cl.sync_cube()
        stride = stride // 2
    row_sum = s[0]
    for j in range(UNIT_POS, cols, BLOCK):
        out[base + j] = cl.exp(a[base + j] - row_max) / row_sum


@kernel
def collatz(x: Array[u32], steps: Array[u32]) -> None:
    """steps[i] = the Collatz steps from x[i] to 1, at most 200: a loop whose trip
    count differs from unit to unit, with a branch inside (u32 arithmetic wraps)."""
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        n = u32(0)
        while v != u32(1) and n < u32(200):
            if v % u32(2) == u32(0):
                v = v // u32(2)
            else:
                v = u32(3) * v + u32(1)
            n += u32(1)
        steps[i] = n


def collatz_reference(x: np.ndarray) -> np.ndarray:
    """What :func:`collatz` gives, in NumPy (``x`` a u32 array)."""
    v, n = x.astype(np.uint64), np.zeros(x.shape, np.uint32)
    for _ in range(200):
        live = v != 1
        if not live.any():
            break
        n += live
        v = np.where(live, np.where(v % 2 == 0, v // 2, (3 * v + 1) & 0xFFFFFFFF), v)
    return n


@kernel
def scan(a: Array[i32], out: Array[i32], *, BLOCK: Comptime[int]) -> None:
    """Inclusive prefix sum within each cube (Hillis-Steele in shared memory)."""
    s = cl.shared(i32, BLOCK)
    i = ABSOLUTE_POS
    v = 0
    if i < len(a):
        v = a[i]
    s[UNIT_POS] = v
    cl.sync_cube()
    offset = u32(1)
    while offset < BLOCK:
        x = s[UNIT_POS]
        if UNIT_POS >= offset:
            x = x + s[UNIT_POS - offset]
        cl.sync_cube()
        s[UNIT_POS] = x
        cl.sync_cube()
        offset = offset * 2
    if i < len(out):
        out[i] = s[UNIT_POS]


@kernel
def comptime_poly(a: Array[f32], out: Array[f32], *, POWER: Comptime[int],
                  NEGATE: Comptime[bool], SCALE: Comptime[float] = 1.0) -> None:
    """Comptime variants: out = (+-) SCALE * a**POWER, the branch and loop baked in."""
    i = ABSOLUTE_POS
    if i < len(out):
        x = a[i]
        acc = 1.0
        for _ in range(POWER):
            acc = acc * x
        if NEGATE:
            acc = -acc
        out[i] = acc * SCALE


@kernel
def unrolled_sum(a: Array[f32], out: Array[f32], *, N: Comptime[int]) -> None:
    """out[i] = a[i*N] + ... + a[i*N+N-1], the loop unrolled."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = 0.0
        for j in range(u32(N), unroll=True):
            acc += a[i * N + j]
        out[i] = acc


@cache
def cube_fn_kernel() -> KernelFunction:
    """A kernel calling two ``@cube_fn`` helpers (one calling the other)."""
    @cl.cube_fn
    def square(x: f32) -> f32:
        return x * x

    @cl.cube_fn
    def poly(x: f32, c: f32) -> f32:
        return square(x) + c * x

    def uses_cube_fn(a: Array[f32], out: Array[f32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = poly(a[i], 3.0) + 1.0
    return kernel(uses_cube_fn)


@kernel
def shape_stride(a: Array[f32], out: Array[u32]) -> None:
    """out = [a.shape[0], a.shape[1], a.stride[0], a.stride[1], len(a)]."""
    if ABSOLUTE_POS == 0:
        out[0] = a.shape[0]
        out[1] = a.shape[1]
        out[2] = a.stride[0]
        out[3] = a.stride[1]
        out[4] = len(a)


@kernel
def transpose_shape(a: Array[f32], out: Array[f32]) -> None:
    """2-D transpose reading the extents and strides from the arrays themselves."""
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < a.shape[0] and c < a.shape[1]:
        out[c * out.stride[0] + r * out.stride[1]] = a[r * a.stride[0] + c * a.stride[1]]


@cache
def atomic_kernel(op: str, elem: ir.Elem) -> KernelFunction:
    """Every unit applies ``atomic_<op>(acc, i % slots, v[i])`` and keeps the old value."""
    T = scalar(elem)
    f = getattr(cl, f"atomic_{op}")

    def atomic_rmw(acc: Array[T], v: Array[T], old: Array[T], slots: u32) -> None:
        i = ABSOLUTE_POS
        if i < len(v):
            old[i] = f(acc, i % slots, v[i])
    return kernel(atomic_rmw)


@cache
def atomic_cas(elem: ir.Elem) -> KernelFunction:
    """Every unit tries ``atomic_compare_exchange(acc, 0, 0, i + 1)``: one wins."""
    T = scalar(elem)

    def cas(acc: Array[T], old: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(old):
            old[i] = cl.atomic_compare_exchange(acc, 0, T(0), T(i + 1))
    return kernel(cas)


@kernel
def plane_kernel(a: Array[f32], sums: Array[f32], maxes: Array[f32], first: Array[f32],
                 lanes: Array[u32], dims: Array[u32]) -> None:
    """Plane operations: sum, max, the value of lane 0, the lane and the plane size."""
    i = ABSOLUTE_POS
    x = a[i]
    sums[i] = cl.plane_sum(x)
    maxes[i] = cl.plane_max(x)
    first[i] = cl.plane_broadcast(x, u32(0))
    lanes[i] = cl.UNIT_POS_PLANE
    dims[i] = cl.PLANE_DIM


# ---------------------------------------------------------------- bad input


@kernel
def f64_kernel(a: Array[cl.f64], out: Array[cl.f64]) -> None:
    """An f64 kernel: what a backend without f64 must refuse with CompilationError."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * 2.0


@dataclass(frozen=True)
class _Signature:
    """The signature of a kernel given as IR: no comptime parameters."""

    name: str

    def bind_comptime(self, values: dict[str, Any]) -> tuple[()]:
        """Refuse every comptime value, as a kernel without comptime parameters does."""
        if values:
            raise TypeError(f"kernel {self.name!r} has no comptime parameters, got "
                            f"{', '.join(values)}")
        return ()


class IrKernel:
    """A kernel given directly as IR, launchable like a ``@kernel`` function (used for
    IR the kernel language would never produce)."""

    def __init__(self, k: ir.Kernel) -> None:
        self.ir_kernel = k
        self.__name__ = k.name
        self.signature = _Signature(k.name)
        self._id = KernelId.of(k)

    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The kernel's id; ``TypeError`` for any comptime value (it has none)."""
        self.signature.bind_comptime(comptime)
        return self._id

    def launch(self, client: Any, cube_count: CubeCount, cube_dim: CubeDim,
               *args: Any) -> None:
        """Run it on ``client``, as ``KernelFunction.launch`` does."""
        client.launch(self, cube_count, cube_dim, args, {})


def uncompilable(name: str = "reads_a_missing_array") -> IrKernel:
    """A kernel no backend can compile: it loads from an array it does not have."""
    body = (ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS),
                     ir.Load("missing", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), ir.Elem.F32)),)
    return IrKernel(ir.Kernel(name, (ir.Param("a", ir.Elem.F32, True),
                                     ir.Param("out", ir.Elem.F32, True)), (), (), body))
