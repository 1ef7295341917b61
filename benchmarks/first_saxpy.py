"""Group 3's saxpy, in a module of its own as a program that launches one kernel holds
it: it imports the kernel language alone, as the peers' programs import their API alone
(the demo module also defines the tuned kernels, whose autotune no first launch needs).
"""

from __future__ import annotations

from cubecl_server.lang import ABSOLUTE_POS, Array, f32, kernel

__all__ = ["saxpy"]


@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    """out = alpha * x + y, one unit per element (``demo.saxpy``, written out again)."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]
