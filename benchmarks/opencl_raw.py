"""What a PyOpenCL user writes instead of cubecl-server: hand-written OpenCL C kernels
(saxpy; the row reduction and the tiled matrix product of :mod:`benchmarks.kernels`,
the same algorithms), built and called directly with PyOpenCL. The raw floor of the
hot path, the peer of the first-result figure and of the generated kernels'
throughput."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SAXPY_CL", "REDUCE_CL", "MATMUL_CL", "LOCAL_SIZE", "RawSaxpy", "RawProgram",
           "pyopencl_available"]

SAXPY_CL = """
__kernel void saxpy(__global const float *x, __global const float *y,
                    __global float *out, const float alpha, const unsigned int n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

LOCAL_SIZE = 256
"""Work-group size, the cube dim our saxpy is launched with."""

REDUCE_CL = """
__kernel void reduce_rows(__global const float *x, __global float *out, const uint cols) {
    __local float tile[256];
    uint t = get_local_id(0);
    uint row = get_group_id(0);
    float acc = 0.0f;
    for (uint j = t; j < cols; j += 256) acc += x[row * cols + j];
    tile[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = 128; step > 0; step /= 2) {
        if (t < step) tile[t] += tile[t + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) out[row] = tile[0];
}
"""

MATMUL_CL = """
__kernel void matmul(__global const float *a, __global const float *b, __global float *c,
                     const uint n) {
    __local float ta[256];
    __local float tb[256];
    uint tx = get_local_id(0), ty = get_local_id(1);
    uint col = get_group_id(0) * 16 + tx, row = get_group_id(1) * 16 + ty;
    float acc = 0.0f;
    for (uint t = 0; t < n; t += 16) {
        ta[ty * 16 + tx] = a[row * n + t + tx];
        tb[ty * 16 + tx] = b[(t + ty) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < 16; k++) acc += ta[ty * 16 + k] * tb[k * 16 + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = acc;
}
"""


def pyopencl_available() -> str | None:
    """None when PyOpenCL imports and sees a device; otherwise why not."""
    try:
        import pyopencl as cl
    except ImportError as e:
        return f"PyOpenCL is not installed ({e})"
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:
        return f"PyOpenCL finds no platform ({e})"
    return None if devices else "PyOpenCL finds no device"


@dataclass
class RawSaxpy:
    """A built saxpy program, its queue and three buffers of ``n`` floats."""

    queue: Any
    kernel: Any
    buffers: tuple[Any, Any, Any]
    n: int

    @classmethod
    def build(cls, x: np.ndarray, y: np.ndarray) -> RawSaxpy:
        """Context on the first device, program built from source, buffers holding x, y."""
        import pyopencl as cl

        device = cl.get_platforms()[0].get_devices()[0]
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
        program = cl.Program(ctx, SAXPY_CL).build()
        flags = cl.mem_flags
        bx = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
        by = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=y)
        bo = cl.Buffer(ctx, flags.WRITE_ONLY, size=x.nbytes)
        # As PyOpenCL's documentation advises for speed: the kernel retrieved once
        # (each ``program.saxpy`` makes a new one), its scalar types declared.
        kernel = program.saxpy
        kernel.set_scalar_arg_dtypes([None, None, None, np.float32, np.uint32])
        return cls(queue, kernel, (bx, by, bo), len(x))

    def launch(self, alpha: np.float32) -> None:
        """Enqueue one saxpy and wait for it."""
        self.enqueue(alpha)
        self.queue.finish()

    def enqueue(self, alpha: np.float32) -> None:
        """Enqueue one saxpy (no wait)."""
        groups = -(-self.n // LOCAL_SIZE)
        self.kernel(self.queue, (groups * LOCAL_SIZE,), (LOCAL_SIZE,), *self.buffers,
                    alpha, np.uint32(self.n))

    def enqueue_set(self, alpha: np.float32) -> Any:
        """A launcher of saxpy with its arguments set once, here: what is left of a
        launch is ``clEnqueueNDRangeKernel`` alone (the driver's floor)."""
        import pyopencl as cl

        kernel = self.kernel.clone()
        kernel.set_scalar_arg_dtypes([None, None, None, np.float32, np.uint32])
        kernel.set_args(*self.buffers, alpha, np.uint32(self.n))
        groups = -(-self.n // LOCAL_SIZE)
        size, local = (groups * LOCAL_SIZE,), (LOCAL_SIZE,)
        queue = self.queue
        return lambda: cl.enqueue_nd_range_kernel(queue, kernel, size, local)

    def result(self) -> np.ndarray:
        """The output buffer, read back."""
        import pyopencl as cl

        out = np.empty(self.n, np.float32)
        cl.enqueue_copy(self.queue, out, self.buffers[2])
        return out


@dataclass
class RawProgram:
    """A hand-written kernel built with PyOpenCL on the first device, with its queue."""

    context: Any
    queue: Any
    kernel: Any

    @classmethod
    def build(cls, source: str, name: str) -> RawProgram:
        """Build ``source`` and take its kernel ``name``."""
        import pyopencl as cl

        ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
        return cls(ctx, cl.CommandQueue(ctx), getattr(cl.Program(ctx, source).build(), name))

    def buffer(self, data: np.ndarray | int) -> Any:
        """A buffer holding ``data``, or of ``data`` bytes."""
        import pyopencl as cl

        flags = cl.mem_flags
        if isinstance(data, int):
            return cl.Buffer(self.context, flags.READ_WRITE, size=data)
        return cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=data)

    def run(self, global_size: tuple[int, ...], local_size: tuple[int, ...], *args: Any) -> None:
        """Enqueue the kernel and wait for it."""
        self.kernel(self.queue, global_size, local_size, *args)
        self.queue.finish()

    def read(self, buffer: Any, shape: tuple[int, ...]) -> np.ndarray:
        """``buffer`` read back as float32 of ``shape``."""
        import pyopencl as cl

        out = np.empty(shape, np.float32)
        cl.enqueue_copy(self.queue, out, buffer)
        return out
