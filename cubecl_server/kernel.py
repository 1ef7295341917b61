"""Kernels: launch geometry, and the compiled kernel a launch produces."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cubecl_server import ir
from cubecl_server.id import KernelId

if TYPE_CHECKING:
    from cubecl_server.client import ComputeClient
    from cubecl_server.lang.frontend import KernelSignature
    from cubecl_server.lang.source import KernelSource

__all__ = ["CubeCount", "CubeDim", "CompiledKernel", "KernelFunction", "kernel"]


@dataclass(frozen=True)
class CubeCount:
    """How many cubes (work groups, blocks) a launch runs, per axis."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            v = getattr(self, axis)
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"CubeCount.{axis} must be a non-negative int, got {v!r}")

    @property
    def total(self) -> int:
        """The number of cubes in all."""
        return self.x * self.y * self.z


@dataclass(frozen=True)
class CubeDim:
    """How many units (threads, work items) one cube has, per axis."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            v = getattr(self, axis)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"CubeDim.{axis} must be a positive int, got {v!r}")

    @property
    def total(self) -> int:
        """The number of units in one cube."""
        return self.x * self.y * self.z


@dataclass(frozen=True)
class CompiledKernel:
    """What a kernel becomes once a backend's ``Compiler`` has seen it.

    ``source`` is the text the backend finalizes (OpenCL C, GLSL, CUDA C++, NumPy
    Python); ``repr`` is the backend's own representation, kept for finalize.
    """

    name: str
    entry_point: str
    source: str
    extension: str
    repr: Any = None


class KernelFunction:
    """A function written in the kernel language, ready to launch on any backend.

    Made by :func:`kernel`. Its IR is built once per set of comptime values, on the
    first launch that needs it; later launches reuse the ids made then.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._signature: KernelSignature | None = None
        self._source: KernelSource | None = None
        self._ids: dict[tuple[tuple[str, Any], ...], KernelId] = {}
        self._lock = threading.Lock()

    def _load_source(self) -> KernelSource:
        """The kernel's parsed definition, read from its file on first use; raises
        KernelSyntaxError (and keeps nothing) when it cannot be read."""
        source = self._source
        if source is None:
            from cubecl_server.lang.source import load_source

            source = self._source = load_source(self.fn)
        return source

    @property
    def signature(self) -> KernelSignature:
        """The kernel's parameters: runtime ones in order, and comptime ones."""
        if self._signature is None:
            # Imported on first use: the launch geometry here is needed by every
            # server, the kernel language only by whoever defines kernels.
            from cubecl_server.errors import KernelSyntaxError
            from cubecl_server.lang.frontend import kernel_signature

            try:
                source = self._load_source()
            except KernelSyntaxError:
                # kernel_signature reads what it can without the source.
                self._signature = kernel_signature(self.fn)
            else:
                self._signature = kernel_signature(self.fn, source)
        return self._signature

    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The id of this kernel specialised with ``comptime`` (parsing it if new)."""
        key = tuple(sorted(comptime.items()))
        kid = self._ids.get(key)
        if kid is None:
            from cubecl_server.lang.frontend import parse_kernel

            with self._lock:
                kid = self._ids.get(key)
                if kid is None:
                    # Read once for every comptime set; a failure raises here as
                    # parse_kernel would raise it.
                    source = self._load_source()
                    kid = self._ids[key] = KernelId.of(parse_kernel(
                        self.fn, comptime, source=source, signature=self.signature))
        return kid

    def ir(self, **comptime: Any) -> ir.Kernel:
        """The IR of this kernel with the given comptime values."""
        return self.kernel_id(comptime).ir

    def launch(self, client: ComputeClient, cube_count: CubeCount, cube_dim: CubeDim,
               *args: Any, **comptime: Any) -> None:
        """Run the kernel on ``client``'s device with ``args`` in parameter order and
        comptime values as keyword arguments."""
        client.launch(self, cube_count, cube_dim, args, comptime)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel {self.__name__!r} cannot be called directly; use "
                        f"{self.__name__}.launch(client, CubeCount(...), CubeDim(...), ...)")

    def __repr__(self) -> str:
        return f"<kernel {self.__qualname__}>"


def kernel(fn: Callable[..., Any]) -> KernelFunction:
    """Decorator: make ``fn``, written in the kernel language, a launchable kernel."""
    return KernelFunction(fn)
