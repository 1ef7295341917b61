"""The hooks a cubecl-server plugin implements, and the markers to implement them.

A plugin is a module (or any object) whose functions are decorated with
``@cubecl_server.hookimpl`` and named after the specifications below. The core
registers its own ``cpu`` backend through these same hooks. ``docs/hooks.md``
documents each one with its exact signature; a test keeps the two in step.

Precedence of ``firstresult`` hooks: external plugins before built-in ones, and
among external plugins in order of entry-point name; the first implementation that
returns something other than None wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord
    from cubecl_server.compiler.store import StoreNames
    from cubecl_server.runtime import BackendDescriptor
    from cubecl_server.server import ComputeServer

__all__ = [
    "PROJECT", "hookspec", "hookimpl",
    "cubecl_server_compile_only_server",
    "cubecl_server_register_backends", "cubecl_server_compiler",
    "cubecl_server_artifact_compiler", "cubecl_server_compilation_target",
    "cubecl_server_compilation_record", "cubecl_server_compilation_batch_record",
]

PROJECT = "cubecl_server"
"""The pluggy project name, which is also the entry-point group plugins register in."""

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks a function of this module as a hook specification."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin's function as the implementation of the hook it is named after."""


@hookspec
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """Hand the core the descriptor of every backend this plugin provides.

    Called once per process, at plugin discovery (the first backend lookup), for
    each plugin on its own. Return a list of ``BackendDescriptor`` (possibly empty).
    If it raises, the plugin is listed as broken and none of its hooks is used.
    A backend name another plugin already provided (earlier in precedence) is
    dropped and reported as broken; the plugin's other backends still count.
    """


@hookspec(firstresult=True)
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """The ``Compiler`` (IR to the backend's source) for the backend named ``backend``.

    Called when the core needs that backend's Compiler, before it asks for the
    ArtifactCompiler. Return None when the backend is not yours; the first non-None
    result in precedence order is used.
    """


@hookspec(firstresult=True)
def cubecl_server_artifact_compiler(
    backend: str, compiler: Compiler, server: ComputeServer
) -> ArtifactCompiler | None:
    """The ``ArtifactCompiler`` (lower, source, finalize) for ``backend`` on ``server``.

    Called once per server, when its kernel loader is created. ``compiler`` is the
    Compiler the ``cubecl_server_compiler`` hook resolved for this backend, so a
    plugin replacing this half can reuse it. Return None when the backend is not
    yours.
    """


@hookspec(firstresult=True)
def cubecl_server_compilation_target(
    backend: str, server: ComputeServer, store_names: StoreNames, variant: str
) -> CompilationTarget | None:
    """The ``CompilationTarget`` (store and load) for ``backend`` on ``server``.

    Called once per server, after the ArtifactCompiler is resolved; ``variant`` is
    that ArtifactCompiler's variant and ``store_names`` the backend descriptor's,
    which together name the store the target should open. Return None when the
    backend is not yours.
    """


@hookspec(firstresult=True)
def cubecl_server_compile_only_server(backend: str) -> ComputeServer | None:
    """A server for ``backend`` that compiles without a device, or None.

    Called by ``create_client(backend, compile_only=True)`` - what the conformance
    suite does when the backend's runtime has no device here (CUDA on a machine
    without a GPU). The server declares ``Capabilities(device_present=False)``;
    memory and launches may refuse with ``BackendUnavailable``, and everything up to
    finalize (the store included) runs as on a real device of the server's
    variant. Return None when the backend is not yours or has no such mode.
    """


@hookspec
def cubecl_server_compilation_record(record: CompilationRecord) -> None:
    """Observe what was kept of one kernel's trip through the compile path.

    Called for every plugin, each time a compilation recording closes (one miss
    compiled, loaded from the store or rekeyed). The return value is ignored; an
    exception is logged as a warning and does not fail the launch.
    """


@hookspec
def cubecl_server_compilation_batch_record(record: CompilationBatchRecord) -> None:
    """Observe a batch of kernels obtained together (a single compile is a batch of one).

    Called for every plugin, after the ``cubecl_server_compilation_record`` calls of
    the batch's kernels. The return value is ignored; an exception is logged as a
    warning and does not fail the launch.
    """
