"""cubecl-cuda: the CUDA backend of cubecl-server (IR -> CUDA C++ -> NVRTC -> CuPy).

Without a GPU the backend cannot launch (``cubecl-server backends`` lists it as
``unavailable (no CUDA device)``), but everything up to finalize runs: see
:func:`compile_only_compiler` (an ArtifactCompiler), :class:`CompileOnlyTarget`,
:class:`CompileOnlyServer` (what ``create_client("cuda", compile_only=True)`` builds
on: a server whose compile path is real and whose memory and launches are refused) and
:func:`compile_only_capabilities`, none of which needs a device.
"""

from cubecl_cuda.artifact import (
    ENV_ARCH,
    CompileOnlyTarget,
    CudaArtifactCompiler,
    compile_only_archs,
    compile_only_compiler,
)
from cubecl_cuda.capabilities import compile_only_capabilities
from cubecl_cuda.compile_only import CompileOnlyServer
from cubecl_cuda.compiler import CudaCompiler

__all__ = [
    "ENV_ARCH", "CompileOnlyTarget", "CudaArtifactCompiler", "CudaCompiler",
    "compile_only_archs", "compile_only_compiler",
    "CompileOnlyServer", "compile_only_capabilities",
]
