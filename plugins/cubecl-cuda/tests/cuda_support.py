"""What the cuda backend's tests share: the architectures the compile-only tests
compile for, and whether this machine has ptxas and a GPU."""

from __future__ import annotations

import pytest
from cubecl_cuda.ptxas import ptxas_path
from cubecl_cuda.runtime import CudaRuntime

from cubecl_server.errors import BackendUnavailable

ARCHS = ("sm_80", "sm_90")
"""What the compile-only tests compile for (the issue asks for at least these)."""

requires_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="no ptxas on PATH")


def gpu_present() -> bool:
    """Whether CUDA sees a GPU here (the device check's machines)."""
    try:
        return bool(CudaRuntime().devices())
    except BackendUnavailable:
        return False


without_gpu = pytest.mark.skipif(gpu_present(), reason="a GPU is here: the test asserts "
                                 "what a machine without one does")
