"""The ``c`` backend's descriptor, whose factories import the backend's parts when used."""

# Discovery imports this module in every process, whichever backend it uses: the parts
# (and the C-family emitter and the passes they import) wait until a c client wants them.
from types import ModuleType

import cubecl_server.backend as cb


def _backend() -> ModuleType:
    from . import backend

    return backend


@cb.hookimpl
def cubecl_server_register_backends() -> list[cb.BackendDescriptor]:
    """The ``c`` backend."""
    return [cb.BackendDescriptor(
        contract=1, name="c", package="cubecl_c", runtime=lambda: _backend().CRuntime(),
        compiler=lambda capabilities: _backend().CCompiler(),
        artifact_compiler=lambda compiler, server: _backend().CArtifactCompiler(compiler),
        target=lambda server, store: _backend().CTarget(store))]
