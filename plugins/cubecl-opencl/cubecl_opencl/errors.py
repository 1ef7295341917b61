"""OpenCL status codes as cubecl-server errors: :class:`DriverError` named after the code."""

from __future__ import annotations

from functools import cache

import pyopencl as cl

from cubecl_server.backend.support import DriverError, code_names, driver_error

from . import BACKEND

__all__ = ["status_names", "cl_error", "is_out_of_memory", "OUT_OF_MEMORY"]

OUT_OF_MEMORY = frozenset({
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY, cl.status_code.INVALID_BUFFER_SIZE,
})
"""Status codes that mean the device (or host) has no room for an allocation."""


@cache
def status_names() -> dict[int, str]:
    """Every status code PyOpenCL knows, by value, spelled as the C API does (``CL_*``)."""
    # pyopencl.status_code names them without the CL_ prefix (INVALID_VALUE).
    return {code: f"CL_{name}" for code, name in code_names(cl.status_code, "").items()}


def cl_error(call: str, err: cl.Error) -> DriverError:
    """The :class:`DriverError` for a PyOpenCL error raised by ``call``."""
    # str(err) is PyOpenCL's own message ("clEnqueueNDRangeKernel failed: ..."),
    # which carries build logs and the like; the code's name comes from ours.
    return driver_error(BACKEND, err.routine or call, err.code, status_names(), str(err))


def is_out_of_memory(err: cl.Error) -> bool:
    """Whether a PyOpenCL error says an allocation did not fit."""
    return err.code in OUT_OF_MEMORY
