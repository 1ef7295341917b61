"""The example backend's plugin: the descriptor of its parts, the one hook it implements."""

from __future__ import annotations

from cubecl_example.runtime import ExampleRuntime
from cubecl_server.backend import (
    BackendDescriptor,
    backend_compiler,
    backend_descriptor,
    hookimpl,
)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``example`` backend: its own runtime, server and storage, running the cpu
    backend's compile path (NumPy source, stored as the artifact and validated before
    it runs) under a store of its own."""
    return [BackendDescriptor(
        name="example", package="cubecl_example", runtime=ExampleRuntime,
        compiler=lambda capabilities: backend_compiler("cpu", capabilities),
        artifact_compiler=lambda compiler, server:
            backend_descriptor("cpu").artifact_compiler(compiler, server),
        target=lambda server, store: backend_descriptor("cpu").target(server, store),
    )]
