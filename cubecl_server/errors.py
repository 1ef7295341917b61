"""The errors cubecl-server raises: one type per thing a caller may want to catch."""

from __future__ import annotations

__all__ = [
    "CubeclError", "KernelSyntaxError", "CompilationError", "StoreError",
    "PluginError", "BackendNotFound", "BackendUnavailable", "ArtifactRejected",
    "TaintedBufferError", "UnreadFailuresError", "ClientClosedError", "LaunchError",
]


class CubeclError(Exception):
    """Base class of every error cubecl-server raises on purpose."""


class KernelSyntaxError(CubeclError):
    """A kernel uses something outside the kernel language, or mixes types.

    ``file`` and ``line`` point at the offending construct in the kernel's source;
    ``function`` names the kernel or helper it is in, where known.
    """

    def __init__(self, message: str, file: str, line: int, *,
                 function: str | None = None) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.message = message
        self.file = file
        self.line = line
        self.function = function


class CompilationError(CubeclError):
    """A backend could not compile a kernel: unsupported instruction, failed
    validation, or its compiler's own failure.

    ``log`` is what the backend's compiler said (OpenCL build log, spirv-val or NVRTC output),
    kept whole so the person reading it sees the line that failed.
    """

    def __init__(self, message: str, *, kernel: str, backend: str, log: str = "") -> None:
        text = f"[{backend}] kernel {kernel!r}: {message}"
        if log:
            text += "\n--- backend log ---\n" + log.rstrip()
        super().__init__(text)
        self.message = message
        self.kernel = kernel
        self.backend = backend
        self.log = log


class StoreError(CubeclError):
    """The persistent store cannot be used (raised only where a caller asked for it,
    such as the cache CLI; the compile path degrades instead of raising)."""


class PluginError(CubeclError):
    """A plugin failed to import or register (raised in strict mode, or on use)."""


class BackendNotFound(PluginError, LookupError):
    """No installed plugin provides the backend asked for."""


class BackendUnavailable(CubeclError):
    """The backend is installed but cannot run here (no device, missing driver)."""


class ArtifactRejected(CubeclError):
    """A backend's ``CompilationTarget.load`` refused a stored artifact (a driver
    rejecting a binary); the loader purges it and compiles the kernel again."""


class TaintedBufferError(CubeclError):
    """A read met a buffer that the work meant to write it left unwritten.

    The message shows the chain from this buffer back to the root failure: which
    kernel, which launch, and what the backend said; ``root`` is that failure's
    exception (also this error's ``__cause__``).
    """

    def __init__(self, message: str, root: BaseException | None) -> None:
        super().__init__(message)
        self.root = root


class UnreadFailuresError(CubeclError):
    """``sync`` found failed work whose outputs nobody read and nobody can read any
    more (freed or overwritten): reported here so no failure is lost silently."""


class ClientClosedError(CubeclError, RuntimeError):
    """A call on a client after its ``close()``: its memory is gone; make another
    client (``cubecl_server.client()`` makes the process's shared one anew)."""


class LaunchError(CubeclError, ValueError):
    """A launch the device cannot run as asked: a cube larger than its limit, or more
    shared memory than it has. Raised at the launch, before anything compiles."""
