"""cubecl-cuda: the CUDA backend of cubecl-server (IR -> CUDA C++ -> NVRTC -> CuPy).

Without a GPU the backend cannot launch (``cubecl-server backends`` lists it as
``unavailable (no CUDA device)``), but everything up to finalize runs: see
:func:`compile_only_compiler` (an ArtifactCompiler), :class:`CompileOnlyTarget`,
:class:`CompileOnlyServer` (what ``create_client("cuda", compile_only=True)`` builds
on: a server whose compile path is real and whose memory and launches are refused) and
:func:`compile_only_capabilities`, none of which needs a device.

The names below load their modules on first use: discovery imports this package in
every process, which must not pay for NVRTC's bindings or the lowering unless the
``cuda`` backend is used. (No import of them here, not even for type checkers: those
modules read this package's names, and the import graph has no cycle.)
"""

from __future__ import annotations

from cubecl_server.backend.compiling import StoreNames
from cubecl_server.backend.support import lazy_attributes

__all__ = [
    "BACKEND", "STORE_NAMES",
    "ENV_ARCH", "CompileOnlyTarget", "CudaArtifactCompiler", "CudaCompiler",
    "compile_only_archs", "compile_only_compiler",
    "CompileOnlyServer", "compile_only_capabilities",
]

BACKEND = "cuda"
"""The backend name the plugin registers."""

STORE_NAMES = StoreNames(kernels="cuda-cubin", sources="cuda-source")
"""The names of the cuda store's two maps: cubin and PTX by kernel, and by source."""

__getattr__, __dir__ = lazy_attributes(__name__, {
    "ENV_ARCH": "cubecl_cuda.artifact",
    "CompileOnlyTarget": "cubecl_cuda.artifact",
    "CudaArtifactCompiler": "cubecl_cuda.artifact",
    "compile_only_archs": "cubecl_cuda.artifact",
    "compile_only_compiler": "cubecl_cuda.artifact",
    "compile_only_capabilities": "cubecl_cuda.capabilities",
    "CompileOnlyServer": "cubecl_cuda.compile_only",
    "CudaCompiler": "cubecl_cuda.compiler",
})
