"""The example backend's plugin: the descriptor of its parts, the one hook it implements."""

from __future__ import annotations

from cubecl_example.compiler import ExampleArtifactCompiler, ExampleTarget
from cubecl_example.runtime import ExampleRuntime
from cubecl_server.backend import BackendDescriptor, backend_compiler, hookimpl


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``example`` backend: the cpu backend's lowering to NumPy source, and its
    own runtime, storage, artifacts (code objects) and store."""
    return [BackendDescriptor(
        name="example", package="cubecl_example", runtime=ExampleRuntime,
        compiler=lambda capabilities: backend_compiler("cpu", capabilities),
        artifact_compiler=lambda compiler, server: ExampleArtifactCompiler(compiler),
        target=lambda server, store: ExampleTarget(store),
    )]
