"""The example backend's plugin: the descriptor of its parts, the one hook it implements.

Discovery imports this module in every process, whichever backend it uses, so it
imports nothing of the backend: the factories do, when an example client is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend import BackendDescriptor, backend_descriptor, hookimpl

if TYPE_CHECKING:
    from cubecl_example.runtime import ExampleRuntime


def _runtime() -> ExampleRuntime:
    """The host as the example device."""
    from cubecl_example.runtime import ExampleRuntime

    return ExampleRuntime()


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``example`` backend: its own runtime, server and storage, running the cpu
    backend's compile path (NumPy source, stored as the artifact and validated before
    it runs) under a store of its own."""
    return [BackendDescriptor(
        contract=1, name="example", package="cubecl_example", runtime=_runtime,
        compiler=lambda capabilities: backend_descriptor("cpu").compiler(capabilities),
        artifact_compiler=lambda compiler, server:
            backend_descriptor("cpu").artifact_compiler(compiler, server),
        target=lambda server, store: backend_descriptor("cpu").target(server, store),
    )]
