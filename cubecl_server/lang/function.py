"""``@kernel``: a function of the kernel language, made launchable on any backend."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError, LaunchError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.lang.ircache import cached_kernel, not_compiled
from cubecl_server.lang.reads import Reads
from cubecl_server.lang.signature import LINE_SIZE, KernelSignature, kernel_signature
from cubecl_server.lang.source import (
    KernelSource,
    hide_frontend_frames,
    load_source,
    raises_at_kernel_line,
)
from cubecl_server.lang.structs import flatten

if TYPE_CHECKING:
    from cubecl_server.client import ComputeClient
    from cubecl_server.kernel import CubeCount, CubeDim

__all__ = ["KernelFunction", "kernel"]

_UNCHECKED = ExecutionMode.UNCHECKED  # a module global: reading an Enum member costs a call


class KernelFunction:
    """A function written in the kernel language, ready to launch on any backend.

    Made by :func:`kernel`. Its IR is built once per set of comptime values, on the
    first launch that needs it, or read from the environment's store where a process
    before built it from the same everything (:mod:`.ircache`); later launches reuse
    the ids made then.
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
            # The source only places errors: kernel_signature reads it if there is one.
            self._signature = kernel_signature(self.fn, self._source)
        return self._signature

    @raises_at_kernel_line
    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The id of this kernel specialised with ``comptime`` (parsing it if new).

        Unknown, missing (defaults count) and ill-typed comptime values raise
        ``TypeError`` naming the parameter, before anything is parsed.
        """
        comptime = self._hashable(comptime)
        key = tuple(sorted(comptime.items()))
        kid = self._ids.get(key)
        if kid is None:
            sig = self.signature
            bound = sig.bind_comptime(comptime)
            with self._lock:
                kid = self._ids.get(key)
                if kid is None:
                    sizes = sig.bind_line_sizes(comptime.get(LINE_SIZE))
                    kernel, stored = cached_kernel(self.fn, sig, bound, sizes,
                                                   lambda reads: self._parse(comptime, reads))
                    kid = self._ids[key] = KernelId.of(
                        kernel, None if stored is None
                        else functools.partial(self._not_compiled, key, stored))
        return kid

    def _not_compiled(self, key: tuple[tuple[str, Any], ...], stored: str, backend: str,
                      error: Exception) -> None:
        """A kernel from the IR cache (under ``stored``) that ``backend`` could not
        compile: purged there and forgotten here, so that the next process, and the
        next client of this one, parse it (a client that launched it keeps its plan,
        and the failure, for these comptime values)."""
        if not_compiled(stored, backend, error):
            with self._lock:
                self._ids.pop(key, None)

    def _parse(self, comptime: dict[str, Any], reads: Reads) -> tuple[ir.Kernel, str]:
        """Run the frontend: the kernel, and the source text it parsed."""
        # Read once for every comptime set; a failure raises here as parse_kernel
        # would raise it.
        # Imported here: a kernel the IR cache holds is never parsed (see lang/__init__).
        from cubecl_server.lang.frontend import parse_kernel

        source = self._load_source()
        return parse_kernel(self.fn, comptime, source=source, signature=self.signature,
                            reads=reads), source.text

    def first_use(self, comptime: dict[str, Any],
                  test: Callable[[object], bool]) -> ir.SourceLoc | None:
        """Where this kernel, with ``comptime``, first uses what ``test`` picks out of
        its IR nodes (the file and line of the statement), or None: for the message of
        a launch the device cannot run."""
        from cubecl_server.lang.frontend import first_use

        return first_use(self.fn, self._hashable(comptime), test, source=self._load_source(),
                         signature=self.signature)

    @raises_at_kernel_line
    def ir(self, **comptime: Any) -> ir.Kernel:
        """The IR of this kernel with the given comptime values."""
        return self.kernel_id(comptime).ir

    def launch(self, client: ComputeClient, cube_count: CubeCount | int | tuple[int, ...],
               cube_dim: CubeDim | int | tuple[int, ...], *args: Any, **comptime: Any) -> None:
        """Run the kernel on ``client``'s device with ``args`` in parameter order and
        comptime values as keyword arguments; the geometry may be given as ints or
        tuples (``k.launch(c, CubeCount.cover(n, 256), 256, ...)``).

        ``line_size`` sets the line size of the kernel's line arrays: one int for all,
        or a dict by parameter name. In unchecked mode a line array's buffer must hold
        whole lines (``LaunchError`` otherwise): only checked mode has a last, partial
        line.
        """
        # As raises_at_kernel_line does, without the wrapper's call on every launch.
        try:
            sig = self._signature
            if sig is None:
                sig = self.signature
            if sig.inputs:
                args = flatten(self.__name__, sig.inputs, sig.structs, args)
            if comptime:
                comptime = self._hashable(comptime)
            if client.mode is _UNCHECKED and sig.lines:
                self._check_whole_lines(args, comptime)
            client.launch(self, cube_count, cube_dim, args, comptime)
        except KernelSyntaxError as exc:
            hide_frontend_frames(exc)
            raise

    def _hashable(self, comptime: dict[str, Any]) -> dict[str, Any]:
        """``comptime`` with a ``line_size`` mapping as sorted pairs, so that the values
        key the kernel's ids and the client's plans; a ``line_size`` that is neither an
        int nor a mapping is refused here (``2.0`` would otherwise key as ``2``)."""
        sizes = comptime.get(LINE_SIZE)
        if isinstance(sizes, Mapping):
            return {**comptime, LINE_SIZE: tuple(sorted((str(k), v) for k, v in sizes.items()))}
        if sizes is not None and (type(sizes) is not int):
            self.signature.bind_line_sizes(sizes)
        return comptime

    def _check_whole_lines(self, args: tuple[Any, ...], comptime: dict[str, Any]) -> None:
        """Raise ``LaunchError`` for a line array whose buffer ends in a partial line."""
        sizes = self.signature.bind_line_sizes(comptime.get(LINE_SIZE))
        for p, a in zip(self.signature.params, args, strict=False):
            line, n = sizes.get(p.name, 1), getattr(a, "size", None)
            if line > 1 and isinstance(n, int) and n % line:
                raise LaunchError(
                    f"kernel {self.__name__!r}: line array {p.name!r} holds {n} elements, "
                    f"not a whole number of lines of {line}; unchecked mode has no partial "
                    "lines: pad the buffer to a multiple of the line size, or launch in "
                    "checked mode")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"kernel {self.__name__!r} cannot be called directly; use "
                        f"{self.__name__}.launch(client, CubeCount(...), CubeDim(...), ...)")

    def __repr__(self) -> str:
        return f"<kernel {self.__qualname__}>"


def kernel(fn: Callable[..., Any]) -> KernelFunction:
    """Decorator: make ``fn``, written in the kernel language, a launchable kernel."""
    return KernelFunction(fn)
