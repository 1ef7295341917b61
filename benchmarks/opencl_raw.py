"""What a PyOpenCL user writes instead of cubecl-server: a hand-written saxpy kernel, built
and called directly with PyOpenCL. The raw floor of the hot path and the peer of the
first-result figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SAXPY_CL", "LOCAL_SIZE", "RawSaxpy", "pyopencl_available"]

SAXPY_CL = """
__kernel void saxpy(__global const float *x, __global const float *y,
                    __global float *out, const float alpha, const unsigned int n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

LOCAL_SIZE = 256
"""Work-group size, the cube dim our saxpy is launched with."""


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
        return cls(queue, program.saxpy, (bx, by, bo), len(x))

    def launch(self, alpha: np.float32) -> None:
        """Enqueue one saxpy and wait for it."""
        groups = -(-self.n // LOCAL_SIZE)
        self.kernel(self.queue, (groups * LOCAL_SIZE,), (LOCAL_SIZE,), *self.buffers,
                    alpha, np.uint32(self.n))
        self.queue.finish()

    def result(self) -> np.ndarray:
        """The output buffer, read back."""
        import pyopencl as cl

        out = np.empty(self.n, np.float32)
        cl.enqueue_copy(self.queue, out, self.buffers[2])
        return out
