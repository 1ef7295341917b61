"""What a plugin hands the core for one backend: its runtime and the factories of its parts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Annotations only: registering a backend must not import the compile path.
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.compiler.store import ArtifactStore, StoreNames
    from cubecl_server.device import Capabilities, DeviceInfo
    from cubecl_server.server import ComputeServer

__all__ = ["CONTRACT_VERSION", "Runtime", "BackendDescriptor"]

CONTRACT_VERSION = 1
"""The version of the backend contract this core implements (the descriptor, the
contracts of ``cubecl_server.backend`` and what the core hands them). A plugin states
the version it was built for in ``BackendDescriptor.contract``; one built for another
is listed by ``cubecl-server backends`` as incompatible, with the reason, and never
reaches a launch. It changes only when a change to the contract would break a plugin
written against the previous one."""


class Runtime(Protocol):
    """A backend's entry to its devices: lists them and creates a server for one."""

    name: str

    def devices(self) -> list[DeviceInfo]:
        """Every device this runtime can use here.

        Raise ``BackendUnavailable`` with the reason (no driver, no device) when
        there is none; an empty list means the same without a reason.
        """
        ...

    def create_server(self, device: int) -> ComputeServer:
        """A server for ``devices()[device]``."""
        ...


@dataclass(frozen=True, kw_only=True)
class BackendDescriptor:
    """What a plugin hands the core for one backend it provides.

    Every factory is called lazily: ``runtime`` the first time a client of the
    backend is made (or ``cubecl-server backends`` lists its devices), the others
    once per server, in the order ``compiler``, ``artifact_compiler``, ``target``,
    unless a plugin answers the matching hook first (``docs/hooks.md``). The
    server they are given is one ``runtime`` made, or ``compile_only_server``.
    """

    name: str
    """The backend's name: what ``cubecl_server.client(name)`` selects."""
    contract: int
    """The version of the backend contract the plugin was built for, as a literal
    (``contract=1``); a core implementing another (``CONTRACT_VERSION``) lists the
    backend as incompatible instead of running it."""
    package: str
    """The import package whose source files (with its distribution's version) make
    up the backend's half of the build id: a change to them gives new cache keys."""
    runtime: Callable[[], Runtime]
    """Makes the runtime that lists the devices and creates their servers."""
    compiler: Callable[[Capabilities], Compiler]
    """Makes the Compiler (IR to source) for a device with these capabilities."""
    artifact_compiler: Callable[[Compiler, ComputeServer], ArtifactCompiler[Any, Any]]
    """Makes the ArtifactCompiler for a server, around the Compiler resolved for it."""
    target: Callable[[ComputeServer, ArtifactStore | None], CompilationTarget]
    """Makes the CompilationTarget for a server, given the store the core opened for
    it (None when caching is off)."""
    compile_only_server: Callable[[], ComputeServer] | None = None
    """Makes a server that compiles without a device (``device_present=False``), for
    ``create_client(name, compile_only=True)``; None: the backend has no such mode."""
    store_names: StoreNames | None = None
    """The names of the two maps of the backend's store; None: ``<name>-kernels``
    and ``<name>-sources``."""

