"""``@kernel``: a function of the kernel language, made launchable on any backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.id import KernelId
from cubecl_server.lang.frontend import parse_kernel
from cubecl_server.lang.signature import KernelSignature, kernel_signature
from cubecl_server.lang.source import KernelSource, load_source, raises_at_kernel_line

if TYPE_CHECKING:
    from cubecl_server.client import ComputeClient
    from cubecl_server.kernel import CubeCount, CubeDim

__all__ = ["KernelFunction", "kernel"]


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
            source = self._source = load_source(self.fn)
        return source

    @property
    def signature(self) -> KernelSignature:
        """The kernel's parameters: runtime ones in order, and comptime ones."""
        if self._signature is None:
            try:
                source = self._load_source()
            except KernelSyntaxError:
                # kernel_signature reads what it can without the source.
                self._signature = kernel_signature(self.fn)
            else:
                self._signature = kernel_signature(self.fn, source)
        return self._signature

    @raises_at_kernel_line
    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The id of this kernel specialised with ``comptime`` (parsing it if new).

        Unknown, missing (defaults count) and ill-typed comptime values raise
        ``TypeError`` naming the parameter, before anything is parsed.
        """
        key = tuple(sorted(comptime.items()))
        kid = self._ids.get(key)
        if kid is None:
            self.signature.bind_comptime(comptime)
            with self._lock:
                kid = self._ids.get(key)
                if kid is None:
                    # Read once for every comptime set; a failure raises here as
                    # parse_kernel would raise it.
                    source = self._load_source()
                    kid = self._ids[key] = KernelId.of(parse_kernel(
                        self.fn, comptime, source=source, signature=self.signature))
        return kid

    @raises_at_kernel_line
    def ir(self, **comptime: Any) -> ir.Kernel:
        """The IR of this kernel with the given comptime values."""
        return self.kernel_id(comptime).ir

    @raises_at_kernel_line
    def launch(self, client: ComputeClient, cube_count: CubeCount | int | tuple[int, ...],
               cube_dim: CubeDim | int | tuple[int, ...], *args: Any, **comptime: Any) -> None:
        """Run the kernel on ``client``'s device with ``args`` in parameter order and
        comptime values as keyword arguments; the geometry may be given as ints or
        tuples (``k.launch(c, CubeCount.cover(n, 256), 256, ...)``)."""
        client.launch(self, cube_count, cube_dim, args, comptime)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel {self.__name__!r} cannot be called directly; use "
                        f"{self.__name__}.launch(client, CubeCount(...), CubeDim(...), ...)")

    def __repr__(self) -> str:
        return f"<kernel {self.__qualname__}>"


def kernel(fn: Callable[..., Any]) -> KernelFunction:
    """Decorator: make ``fn``, written in the kernel language, a launchable kernel."""
    return KernelFunction(fn)
