"""A loaded kernel's launcher: its arguments as PyOpenCL sets them, and the function,
generated once per kernel at load, that sets them and enqueues a launch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
import pyopencl as cl

from cubecl_server.backend import Binding

from .compiler import ArrayArg, ScalarArg

__all__ = ["Enqueue", "make_enqueue", "scalar_arg_dtypes"]


def scalar_arg_dtypes(arrays: Sequence[ArrayArg],
                      scalars: Sequence[ScalarArg]) -> list[np.dtype | None]:
    """The kernel's arguments as PyOpenCL's ``set_scalar_arg_dtypes`` wants them
    (None for a buffer), in the order :mod:`cubecl_opencl.compiler` declares them."""
    out: list[np.dtype | None] = []
    for a in arrays:
        out += [None, np.dtype(np.uint64), np.dtype(np.uint32)]
        out += [np.dtype(np.uint32)] * (2 * a.dims + a.length + a.rank)
    # A bool is packed as one byte (struct "?"), which is the kernel's uchar.
    out += [np.dtype(s.elem.numpy_name) for s in scalars]
    return out


@lru_cache(maxsize=1024)
def _shape_args(shape: tuple[int, ...], view: tuple[int, ...] | None,
                dims: int) -> tuple[int, ...]:
    """Shape and stride (in elements: a view's ``view``, else C order) per axis below
    ``dims``; 1 past the rank.

    Cached: a program launches the same few shapes over and over.
    """
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    if view is not None:
        strides = list(view)
    out: list[int] = []
    for d in range(dims):
        out += (shape[d], strides[d]) if d < len(shape) else (1, 1)
    return tuple(out)


Enqueue = Callable[[cl.CommandQueue, tuple[int, ...], tuple[int, ...], Sequence[Binding],
                    Sequence[np.generic]], object]
"""A kernel's launcher: ``(queue, global_size, local_size, arrays, scalars)``."""


def make_enqueue(kernel: cl.Kernel, arrays: Sequence[ArrayArg], scalars: int) -> Enqueue:
    """A launcher specialised to the kernel's argument list, made once at load.

    A kernel's arguments stay set between enqueues (an enqueue takes the values set
    at that moment), so the launcher sets them only when the launch's are not the
    last one's: other bindings (the client binds a buffer as one ``Binding`` for its
    life) or other scalar objects. A launch repeating its arguments is then one
    ``clEnqueueNDRangeKernel``; another sets them all in one call of PyOpenCL's
    ``set_args`` (generated for the dtypes the kernel was given at load), the
    bindings unpacked one per array parameter, byte offsets and sizes turned into
    element counts with a shift, the shapes and strides the kernel reads added: no
    per-launch list, loop or layout lookup.
    """
    names = [f"b{i}" for i in range(len(arrays))] + [f"s{i}" for i in range(scalars)]
    parts: list[str] = []
    for b, a in zip(names, arrays, strict=False):
        shift = (a.elem.bits // 8).bit_length() - 1  # element sizes are powers of two
        parts += [f"{b}.resource", f"{b}.offset >> {shift}", f"{b}.size >> {shift}"]
        if a.length:
            parts.append(f"{b}.length")
        if a.rank:
            parts.append(f"len({b}.shape)")
        if a.dims:
            parts.append(f"*_shape_args({b}.shape, {b}.strides, {a.dims})")
    parts += names[len(arrays):]
    unpack = "".join(f"    {', '.join(group)}, = {what}\n"
                     for group, what in ((names[:len(arrays)], "arrays"),
                                         (names[len(arrays):], "scalars")) if group)
    same = " and ".join(f"{n} is _last[{i}]" for i, n in enumerate(names)) or "True"
    src = (f"def enqueue(queue, global_size, local_size, arrays, scalars):\n{unpack}"
           f"    if not ({same}):\n"
           f"        _knl.set_args({', '.join(parts)})\n"
           f"        _last[:] = ({''.join(n + ', ' for n in names)})\n"
           "    return _enqueue(queue, _knl, global_size, local_size)\n")
    namespace: dict[str, object] = {"_knl": kernel, "_shape_args": _shape_args,
                                    "_enqueue": cl.enqueue_nd_range_kernel,
                                    "_last": [None] * len(names)}
    exec(compile(src, f"<opencl launcher {kernel.function_name}>", "exec"), namespace)
    return namespace["enqueue"]  # type: ignore[return-value]
