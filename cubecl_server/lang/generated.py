"""The source a backend generates for a kernel, for a person to read.

:func:`source_of` runs a client's compile path up to its first step only: the kernel
is parsed for its comptime values, checked as the loader checks it, and lowered by the
backend's ``ArtifactCompiler``. Nothing is built (no OpenCL build, Vulkan pipeline or NVRTC),
stored or loaded, so it shows what the backend made of a kernel even when building that
fails. ``cubecl-server source`` prints it from the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cubecl_server import ir
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import CompilationError
from cubecl_server.ir_check import check_kernel
from cubecl_server.kernel import CubeDim, Launchable
from cubecl_server.validation import check_launch

if TYPE_CHECKING:
    from cubecl_server.client import ComputeClient

__all__ = ["source_of"]


def _cube_dim(value: object) -> CubeDim:
    """``value`` as a CubeDim: one already, an int (``64``) or a tuple of 1 to 3 ints
    (``(16, 16)``); TypeError or ValueError naming ``cube_dim`` otherwise."""
    if isinstance(value, CubeDim):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return CubeDim(value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3:
        return CubeDim(*value)
    raise TypeError(f"cube_dim must be a CubeDim, an int or a tuple of 1 to 3 ints, got "
                    f"{value!r} ({type(value).__name__})")


def source_of(client: ComputeClient, kernel: Launchable,
              cube_dim: CubeDim | int | tuple[int, ...], /, *, core: bool = False,
              **comptime: Any) -> str:
    """The source ``client``'s backend generates for ``kernel`` (a ``@kernel``
    function) in cubes of ``cube_dim`` with the ``comptime`` values: OpenCL C, a SPIR-V listing,
    CUDA C++ or NumPy Python, as its Compiler wrote it; with ``core``, the kernel in the
    core IR its emitter received (``docs/ir.md``, "The core IR"), as text.

    Raises KernelSyntaxError for a kernel outside the language, TypeError for a wrong
    comptime value or argument, LaunchError for a cube dim (or a type, a line size...)
    the device cannot run, and CompilationError when the backend cannot lower it
    (or, for ``core``, tells no core IR).
    """
    kernel_id = getattr(kernel, "kernel_id", None)
    if not callable(kernel_id):
        raise TypeError(f"source_of() takes a @kernel function, got {kernel!r} "
                        f"({type(kernel).__name__})")
    dim = _cube_dim(cube_dim)
    kid = kernel_id(comptime)
    backend = client.backend
    # What a launch and the loader check before lowering: the device's limits (a cube
    # it cannot run would print a source it never gets), and the IR itself.
    check_launch(kid.ir, dim, client.capabilities)
    check_kernel(kid.ir, backend)
    ac = client.loader.artifact_compiler
    recording = CompilationRecording(False, kid.name, backend, ac.variant)
    compiled = ac.lower(kid.ir, dim, client.mode, recording)
    if not core:
        return compiled.source
    if compiled.core is None:
        raise CompilationError("the backend's Compiler tells no core IR (its CompiledKernel "
                               "has no `core`)", kernel=kid.name, backend=backend)
    return ir.format_kernel(compiled.core) + "\n"
