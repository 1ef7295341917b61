"""CUDA status codes to the core's DriverError, from the errors CuPy raises.

CuPy exposes no table of ``cudaError*``/``CUresult`` constants to hand
:func:`cubecl_server.driver.code_names`; its exceptions carry the code (``status``)
and start their message with the code's name (``cudaErrorIllegalAddress: ...``),
which is where the names here come from.
"""

from __future__ import annotations

from cupy_backends.cuda.api.driver import CUDADriverError
from cupy_backends.cuda.api.runtime import CUDARuntimeError

from cubecl_server.backend.support import DriverError, driver_error

__all__ = ["CudaError", "cuda_error", "status_name", "MODULE_REJECTED"]

CudaError = (CUDARuntimeError, CUDADriverError)
"""The exception types CuPy raises for a failed CUDA call."""

MODULE_REJECTED = frozenset({
    200,  # CUDA_ERROR_INVALID_IMAGE
    209,  # CUDA_ERROR_NO_BINARY_FOR_GPU
    218,  # CUDA_ERROR_INVALID_PTX
    221,  # CUDA_ERROR_JIT_COMPILER_NOT_FOUND
    222,  # CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    300,  # CUDA_ERROR_INVALID_SOURCE
    500,  # CUDA_ERROR_NOT_FOUND (no such entry point in the module)
})
"""``CUresult`` codes that mean the driver refuses a module image, not that the
device failed: the artifact is bad for this driver (purge it and compile again)."""


def status_name(exc: CUDARuntimeError | CUDADriverError) -> str:
    """The code's name as CUDA spells it, from CuPy's message."""
    head = str(exc).split(":", 1)[0].strip()
    return head if head and " " not in head else "unknown status"


def cuda_error(call: str, exc: CUDARuntimeError | CUDADriverError) -> DriverError:
    """The core's error for a CUDA call that CuPy reported failing."""
    code = int(exc.status)
    detail = str(exc).split(":", 1)[1].strip() if ":" in str(exc) else ""
    return driver_error("cuda", call, code, {code: status_name(exc)}, detail)
