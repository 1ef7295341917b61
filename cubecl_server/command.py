"""One unit of work against the device, and what a backend supplies for it.

The client turns every request that reaches the device into a command - a
:class:`Launch`, a :class:`Write` from the host, a :class:`Fill` or a :class:`Copy`
on the device, a :class:`Sync` - and :func:`execute` carries it out on a server.
What a backend must supply per command is the server contract
(:class:`~cubecl_server.server.ComputeServer`): ``launch`` for a launch, ``write``
for a write, ``sync`` for a sync. ``fill`` and ``copy`` are optional
(:class:`FillCopy`): a server without them gets a fill as a write of the repeated
value and a copy through the host. A launch may return a
:class:`~cubecl_server.device_events.DeviceEvent` completed when it has run, which
the client keeps on the buffers the launch writes (a read then waits for exactly
that work where the backend can).

Commands are recorded in order by a deferred client (``ExecutionPolicy.DEFERRED``)
and executed together; a backend that records several commands before it submits
them (the vulkan backend's one command buffer per submit) gets them that way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.server import Binding, ComputeServer

__all__ = ["Command", "Copy", "Fill", "FillCopy", "Launch", "Sync", "Write", "execute",
           "nbytes"]


@dataclass(frozen=True, slots=True)
class Launch:
    """Run a loaded kernel over ``count`` cubes of ``dim`` units with its array and
    scalar arguments, each in the order of the kernel's parameters of that kind."""

    kernel: Any
    count: CubeCount
    dim: CubeDim
    arrays: tuple[Binding, ...]
    scalars: tuple[np.generic, ...]


@dataclass(frozen=True, slots=True)
class Write:
    """Overwrite a binding with host data (flat, contiguous, the binding's dtype)."""

    binding: Binding
    data: np.ndarray


@dataclass(frozen=True, slots=True)
class Fill:
    """Set every element of a binding to ``value`` (a scalar of its element type)."""

    binding: Binding
    value: np.generic


@dataclass(frozen=True, slots=True)
class Copy:
    """Copy ``src``'s bytes into ``dst`` (the same size) on the device."""

    src: Binding
    dst: Binding


@dataclass(frozen=True, slots=True)
class Sync:
    """Wait until every command before it has finished."""


Command = Launch | Write | Fill | Copy | Sync
"""Every kind of command a client hands a server."""


@runtime_checkable
class FillCopy(Protocol):
    """What a server implements to fill and copy on the device itself (optional)."""

    def fill(self, binding: Binding, value: np.generic) -> None:
        """Set every element of ``binding`` to ``value``, after the work before it."""
        ...

    def copy(self, src: Binding, dst: Binding) -> None:
        """Copy ``src`` into ``dst`` (equal sizes), after the work before it."""
        ...


def execute(server: ComputeServer, command: Command) -> Any:
    """Carry out ``command`` on ``server``; what the server's call returned (a launch's
    event, or None)."""
    kind = type(command)
    if kind is Launch:
        return server.launch(command.kernel, command.count, command.dim,  # type: ignore[union-attr]
                             command.arrays, command.scalars)  # type: ignore[union-attr]
    if kind is Write:
        return server.write(command.binding, command.data)  # type: ignore[union-attr]
    if kind is Sync:
        return server.sync()
    native = isinstance(server, FillCopy)
    if kind is Fill:
        b, value = command.binding, command.value  # type: ignore[union-attr]
        if native:
            return server.fill(b, value)  # type: ignore[attr-defined]
        count = b.size // (b.elem.bits // 8)
        return server.write(b, np.full(count, value, dtype=b.elem.numpy_name))
    if kind is Copy:
        src, dst = command.src, command.dst  # type: ignore[union-attr]
        if src.size != dst.size:
            raise ValueError(f"cannot copy {src.size} bytes into a binding of {dst.size}")
        if native:
            return server.copy(src, dst)  # type: ignore[attr-defined]
        data = server.read(src).view(np.uint8)
        return server.write(dst, data.view(dst.elem.numpy_name))
    raise TypeError(f"not a command: {command!r}")


def nbytes(command: Command) -> int:
    """The minimum memory traffic of ``command``: each array a launch binds counted
    once, the bytes a write, fill or copy touches (a copy reads and writes them)."""
    kind = type(command)
    if kind is Launch:
        return sum(b.size for b in command.arrays)  # type: ignore[union-attr]
    if kind is Write or kind is Fill:
        return command.binding.size  # type: ignore[union-attr]
    if kind is Copy:
        return 2 * command.src.size  # type: ignore[union-attr]
    return 0
