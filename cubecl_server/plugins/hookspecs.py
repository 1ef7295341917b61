"""The hooks of cubecl-server, and the markers to implement them.

A plugin is a module (or any object) whose functions are decorated with
``@hookimpl`` (:mod:`cubecl_server.backend`) and named after the specifications
below. The owner of a backend implements one: ``cubecl_server_register_backends``,
whose descriptors carry the backend's factories; the core answers the three
compile-path hooks from them. A plugin implements a compile-path hook only to
replace part of another plugin's backend.

The docstrings here are the one text of each hook: ``docs/hooks.md`` shows them as
they are, and ``tests/plugins/test_plugins.py`` fails when the two differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord
    from cubecl_server.compiler.store import ArtifactStore
    from cubecl_server.device import Capabilities
    from cubecl_server.plugins.descriptor import BackendDescriptor
    from cubecl_server.server import ComputeServer

__all__ = [
    "PROJECT", "hookspec", "hookimpl",
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

    The one hook the owner of a backend implements: its ``BackendDescriptor``
    carries the factories of the backend's parts (runtime, Compiler,
    ArtifactCompiler, CompilationTarget), which the core calls where the
    compile-path hooks below are not answered by another plugin.

    Called once per process, at plugin discovery (the first backend lookup), for
    each plugin on its own, in precedence order. Return a list of
    ``BackendDescriptor`` (possibly empty). If it raises, or returns anything else,
    the plugin is listed as broken and none of its hooks is used. A backend name a
    plugin earlier in precedence already provided is dropped and reported as broken
    (``backend 'x' already provided by plugin ...``); the plugin's other backends
    still count. No factory is called here.
    """


@hookspec(firstresult=True)
def cubecl_server_compiler(
    descriptor: BackendDescriptor, capabilities: Capabilities
) -> Compiler | None:
    """The ``Compiler`` (IR to the backend's own source) of ``descriptor``'s backend.

    Called when a client of the backend is created, with the capabilities of its
    device, before the ArtifactCompiler is asked for; ``cubecl-server backends``
    also asks once per backend, with ``device_present=False`` capabilities, so that
    a plugin that breaks here is listed as broken without a device. Return a
    Compiler to replace the owner's, or None to leave it to the next plugin; the
    core answers last, with ``descriptor.compiler(capabilities)``.
    """


@hookspec(firstresult=True)
def cubecl_server_artifact_compiler(
    descriptor: BackendDescriptor, compiler: Compiler, server: ComputeServer
) -> ArtifactCompiler | None:
    """The ``ArtifactCompiler`` (lower, source, finalize; any thread) of
    ``descriptor``'s backend on ``server``.

    Called once per server, when its client is created. ``compiler`` is what
    ``cubecl_server_compiler`` resolved, so a replacement of this half can reuse
    the owner's Compiler. Return an ArtifactCompiler, or None to leave it to the
    next plugin; the core answers last, with
    ``descriptor.artifact_compiler(compiler, server)``.
    """


@hookspec(firstresult=True)
def cubecl_server_compilation_target(
    descriptor: BackendDescriptor, server: ComputeServer, store: ArtifactStore | None
) -> CompilationTarget | None:
    """The ``CompilationTarget`` (the store, and load on the server's context) of
    ``descriptor``'s backend on ``server``.

    Called once per server, after the ArtifactCompiler. ``store`` is the one the
    core opened for the backend and that ArtifactCompiler's variant (None when
    caching is off or nothing is durable); a target normally keeps it as its
    ``store``. Return a CompilationTarget, or None to leave it to the next plugin;
    the core answers last, with ``descriptor.target(server, store)``.
    """


@hookspec
def cubecl_server_compilation_record(record: CompilationRecord) -> None:
    """Observe what was kept of one kernel's trip through the compile path.

    Called for every plugin, each time a compilation recording closes (one kernel
    compiled, loaded from the store or rekeyed: its stages and timings). The
    return value is ignored; an exception is logged as a warning naming the hook
    and does not fail the launch.
    """


@hookspec
def cubecl_server_compilation_batch_record(record: CompilationBatchRecord) -> None:
    """Observe a batch of kernels obtained together (a single compile is a batch of one).

    Called for every plugin, after the ``cubecl_server_compilation_record`` calls of
    the batch's kernels. The return value is ignored; an exception is logged as a
    warning naming the hook and does not fail the launch.
    """
