"""Compile-only mode: the ``cuda`` backend on a machine without a GPU.

The core's ``create_client`` needs ``Runtime.create_server``, which needs a device.
:class:`CompileOnlyServer` stands where the server would: it names an architecture
(``CUBECL_CUDA_ARCH``, default ``sm_90``) and declares ``device_present=False``, and
the descriptor's factories make for it the real ArtifactCompiler (NVRTC for that
architecture) and a :class:`~cubecl_cuda.artifact.CompileOnlyTarget`. So everything
up to finalize, the store included, runs as on a GPU of that architecture; only
memory and launches are refused (``BackendUnavailable``).

The plugin's descriptor names it as its ``compile_only_server``, so
``cubecl_server.client.create_client("cuda", compile_only=True)`` builds a client on
it with the same parts, loader and store as any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from cubecl_cuda.artifact import default_arch, parse_arch
from cubecl_cuda.capabilities import compile_only_capabilities
from cubecl_cuda.runtime import NO_DEVICE
from cubecl_cuda.storage import ALIGNMENT, CudaStorageId
from cubecl_cuda.tma import arch_has_tma
from cubecl_server.backend import (
    BackendUnavailable,
    Binding,
    CubeCount,
    CubeDim,
    DeviceInfo,
    DeviceKind,
)

__all__ = ["CompileOnlyServer"]


def _refuse(what: str) -> NoReturn:
    raise BackendUnavailable(f"{NO_DEVICE}: cuda is compile-only here ({what} needs a GPU)")


class _NoStorage:
    """Storage of a server without a device: every allocation is refused."""

    alignment = ALIGNMENT

    def alloc(self, size: int) -> CudaStorageId:
        """Refused: there is no device memory."""
        _refuse("allocating memory")

    def dealloc(self, id: CudaStorageId) -> None:
        """Nothing was ever allocated."""
        raise KeyError(f"compile-only storage: no allocation {id!r}")

    def resource(self, id: CudaStorageId) -> Any:
        """Nothing was ever allocated."""
        raise KeyError(f"compile-only storage: no allocation {id!r}")


class CompileOnlyServer:
    """The server of a machine without a GPU, for one architecture: compiling works,
    memory and launches raise ``BackendUnavailable``."""

    backend = "cuda"

    def __init__(self, arch: str | None = None) -> None:
        self.arch = parse_arch(arch) if arch else default_arch()
        self.device = DeviceInfo("cuda", 0, f"compile-only ({self.arch}, no GPU)",
                                 DeviceKind.VIRTUAL, vendor="NVIDIA")
        self.capabilities = dataclasses.replace(compile_only_capabilities(),
                                                tma=arch_has_tma(self.arch))
        self.storage = _NoStorage()

    def read(self, binding: Binding) -> np.ndarray:
        """Refused."""
        _refuse("reading a buffer")

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Refused."""
        _refuse("writing a buffer")

    def launch(self, kernel: Any, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Refused."""
        _refuse("launching a kernel")

    def sync(self) -> None:
        """Nothing was launched, so there is nothing to wait for."""
